"""Report of the topic set size study: the variance estimates, the topics needed and a figure
of n against the minimum difference (Sakai 2016)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, safe_name, save_figure

__all__ = ["sections", "topic_set_size_plots", "check_plot", "FIGURES"]

#: Figures of this report (``<metric>`` as :func:`irsim.report.safe_name` spells it).
FIGURES = ("topic_set_size_<metric>.png", "topic_set_size_check.png")

_TITLES = {"paired_t": "paired t test", "anova": "one-way ANOVA", "ci": "CI half-width"}


def _label(row: dict, design: str) -> str:
    parts = [f"alpha={row['alpha']:g}"]
    if design != "ci":
        parts.append(f"beta={row['beta']:g}")
    if design == "anova":
        parts.append(f"m={int(row['m'])}")
    return ", ".join(parts)


_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _colours(k: int) -> list:
    """`k` distinct colours: the default cycle up to 10, a sampled colour map beyond."""
    if k <= 10:
        return [f"C{i}" for i in range(k)]
    from matplotlib import colormaps

    return [colormaps["turbo"](v) for v in np.linspace(0.05, 0.95, k)]


def topic_set_size_plots(tss: pa.Table, out_dir: Path) -> list[Path]:
    """One figure per metric: a panel per design, topics needed (log scale) against the
    minimum difference, one line per alpha / beta / m (colour: alpha and beta; line style and
    marker: m; the legend under the panel). Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 4, "design": ["paired_t"] * 2 + ["ci"] * 2,
    ...               "alpha": [0.05] * 4, "beta": [0.2, 0.2, None, None], "m": [2] * 4,
    ...               "min_diff": [0.05, 0.1] * 2, "n": [100, 30, 80, 20]})
    >>> [p.name for p in topic_set_size_plots(t, Path(tempfile.mkdtemp()))]
    ['topic_set_size_AP.png']
    """
    df = tss.to_pandas()
    paths = []
    for metric, rows in df.groupby("metric", sort=False):
        designs = list(dict.fromkeys(rows["design"]))
        entries = max(rows[rows["design"] == d].groupby(
            ["alpha", "beta", "m"], dropna=False).ngroups for d in designs)
        legend_rows = -(-entries // 2) if entries > 4 else entries
        fig = Figure(figsize=(4.4 * len(designs) + 0.6, 4.4 + 0.16 * legend_rows), dpi=120)
        axes = np.atleast_1d(fig.subplots(1, len(designs), sharey=True))
        for ax, design in zip(axes, designs, strict=True):
            part = rows[rows["design"] == design]
            keys = ["alpha", "m"] if design == "ci" else ["alpha", "beta", "m"]
            levels = keys[:-1]  # colour: the (alpha, beta) pair; line style and marker: m
            pairs = sorted({tuple(r) for r in part[levels].itertuples(index=False)})
            colours = _colours(len(pairs))
            ms = sorted(part["m"].unique())
            for key, line in part.groupby(keys, sort=True, dropna=False):
                line = line.sort_values("min_diff")
                ok = line["n"].notna()
                k = ms.index(key[-1])
                ax.plot(line["min_diff"][ok], line["n"][ok], color=colours[pairs.index(
                        tuple(key[:-1]))],
                        linestyle=_STYLES[k % len(_STYLES)], marker=_MARKERS[k % len(_MARKERS)],
                        markersize=3.5, linewidth=1.2,
                        label=_label(line.iloc[0].to_dict(), design))
            ax.set_yscale("log")
            ax.set_title(_TITLES.get(design, design))
            ax.set_xlabel("half-width" if design == "ci" else "minimum difference")
            ax.grid(alpha=0.3, which="both")
            n_lines = len(ax.get_legend_handles_labels()[1])  # below the panel, off the data
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                      ncol=2 if n_lines > 4 else 1, frameon=False)
        axes[0].set_ylabel("topics needed")
        fig.suptitle(f"Topic set size design for {metric}")
        fig.tight_layout()
        paths.append(save_figure(fig, out_dir / f"topic_set_size_{safe_name(str(metric))}.png"))
    return paths


def check_plot(check: pa.Table, out_dir: Path) -> Path:
    """Planned (open marker) against realised power (filled, with its 95% band) per metric
    and minimum difference; one panel per (alpha, beta). Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "alpha": [0.05] * 2, "beta": [0.2] * 2,
    ...               "min_diff": [0.05, 0.1], "planned_power": [0.8, 0.81],
    ...               "realised_power": [0.82, 0.8], "ci_lo": [0.8, 0.78],
    ...               "ci_hi": [0.84, 0.82]})
    >>> check_plot(t, Path(tempfile.mkdtemp())).name
    'topic_set_size_check.png'
    """
    df = check.to_pandas()
    groups = list(df.groupby(["alpha", "beta"], sort=True))
    cols = min(2, len(groups))
    rows_ = -(-len(groups) // cols)
    fig = Figure(figsize=(4.6 * cols + 0.6, 3.6 * rows_ + 0.6), dpi=120)
    axes = np.atleast_1d(fig.subplots(rows_, cols, sharey=True, squeeze=False)).ravel()
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    axes = axes[:len(groups)]
    for ax, ((alpha, beta), part) in zip(axes, groups, strict=True):
        for i, (metric, rows) in enumerate(part.groupby("metric", sort=False)):
            rows = rows.sort_values("min_diff")
            c = f"C{i % 10}"
            ax.plot(rows["min_diff"], rows["planned_power"], color=c, marker="o",
                    fillstyle="none", linestyle=":", label=f"{metric} planned")
            err = np.vstack([rows["realised_power"] - rows["ci_lo"],
                             rows["ci_hi"] - rows["realised_power"]])
            ax.errorbar(rows["min_diff"], rows["realised_power"], yerr=err, color=c,
                        marker="o", capsize=3, label=f"{metric} realised")
        ax.axhline(1 - beta, color="gray", linewidth=0.9, linestyle="--")
        ax.set_title(f"alpha = {alpha:g}, beta = {beta:g}")
        ax.set_xlabel("minimum difference (true difference simulated)")
        ax.grid(alpha=0.3)
    for ax in axes[::cols]:
        ax.set_ylabel("power of the paired t test\nat the planned n")
    axes[-1].legend(fontsize=8)
    fig.suptitle("Planned against realised power on simulated collections of the planned size")
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "topic_set_size_check.png")


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The variance estimates, the topics needed at the most common setting (alpha = 0.05,
    beta = 0.2 where present) and the figures.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "design": ["paired_t"] * 2, "alpha": [0.05] * 2,
    ...               "beta": [0.2] * 2, "m": [2] * 2, "min_diff": [0.05, 0.1],
    ...               "n": [100, 30], "power": [0.8, 0.81], "half_width": [None, None],
    ...               "variance": [0.02] * 2, "v_e": [0.01] * 2, "systems": [10] * 2,
    ...               "topics": [50] * 2})
    >>> lines = sections({"topic_set_size": t}, Path(tempfile.mkdtemp()))
    >>> lines[0], lines[-2]
    ('## Topic set size design', '![topic_set_size_AP](topic_set_size_AP.png)')
    """
    lines: list[str] = []
    if "topic_set_size" not in tables:
        return lines
    tss = tables["topic_set_size"]
    df = tss.to_pandas()
    var = df.drop_duplicates(["metric", "design"])[["metric", "design", "variance", "v_e",
                                                    "systems", "topics"]]
    alpha0 = 0.05 if (df["alpha"] == 0.05).any() else float(df["alpha"].min())
    betas = df["beta"].dropna()
    beta0 = 0.2 if (betas == 0.2).any() else (float(betas.min()) if len(betas) else None)
    keep = pc.equal(tss.column("alpha"), alpha0)
    if beta0 is not None:
        keep = pc.and_(keep, pc.or_(pc.is_null(tss.column("beta")),
                                    pc.equal(tss.column("beta"), beta0)))
    head = tss.filter(keep).select(["metric", "design", "alpha", "beta", "m", "min_diff",
                                    "n", "power", "half_width"])
    lines += ["## Topic set size design", "",
              "How many topics a collection needs (Sakai 2016). The variance comes from this "
              "collection: V_E is the residual variance of the two-way ANOVA (systems x "
              "topics); `variance` is what each design uses (the variance of a per-topic "
              "difference for `paired_t` and `ci`).", "",
              markdown_table(pa.Table.from_pandas(var, preserve_index=False)), "",
              f"Topics needed at alpha = {alpha0:g}"
              + (f", beta = {beta0:g}" if beta0 is not None else "")
              + " (`paired_t`: power 1 - beta to detect `min_diff`; `anova`: the same for "
              "the range of m systems; `ci`: expected half-width <= `min_diff`). All "
              "settings are in `results/topic_set_size.parquet`.", "",
              markdown_table(head, max_rows=80), ""]
    lines += ["Topics needed against the minimum difference (log scale), one panel per "
              "design.", ""]
    lines += figure_lines(topic_set_size_plots(tss, Path(run_dir)))
    if "topic_set_size_check" in tables:
        check = tables["topic_set_size_check"]
        lines += ["### Simulation check: planned against realised power", "",
                  "Pairs of systems simulated on the planned number of new topics by a "
                  "generator fitted to this collection, with a true difference of exactly "
                  "`min_diff`: `realised_power` is the share of paired t tests that reject "
                  "(`ci_lo`/`ci_hi`: 95% Clopper-Pearson band). A plan is honest when the band "
                  "covers `planned_power`; `realised_var_diff` against `planned_var_diff` "
                  "shows why it is not.", "",
                  markdown_table(check.select(["metric", "alpha", "beta", "min_diff", "n",
                                               "planned_power", "realised_power", "ci_lo",
                                               "ci_hi", "planned_var_diff",
                                               "realised_var_diff", "trials"]),
                                 max_rows=80), ""]
        path = check_plot(check, Path(run_dir))
        lines += figure_lines([path])
    return lines
