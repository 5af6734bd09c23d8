"""Report of the multiple-testing study: FWER, FDR and power of the corrections against the
number of systems, the table and a short reading guide."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, save_figure, type_m_s
from irsim.stats.registry import SIMULTANEOUS, legend_of

__all__ = ["FIGURES", "sections", "rates_plot", "bayes_sections", "bayes_plot"]

#: The PNGs the report draws (one per metric and test, and with ``experiment.bayes`` one per
#: metric; non-alphanumerics become ``_``).
FIGURES = ("multiple_testing_<metric>_<test>.png", "bayes_multiple_testing_<metric>.png")

#: Panels of a figure: (column, y-axis label).
_PANELS = (("fwer", "family-wise error rate"), ("fdr", "false discovery rate"),
           ("power", "per-pair power"))
_MARKERS = ("o", "s", "^", "D", "v", "P")


def rates_plot(rows: pa.Table, out_dir: Path, name: str, title: str,
               simultaneous: bool = False) -> Path:
    """FWER, FDR and power against m: one column of panels per share_null, a block of three
    rows (the rates) per n; one line per correction (colour and marker; its points nudged
    sideways so that equal rates stay visible), Wilson bands shaded, the level dotted; the x
    ticks are the sampled m. A `simultaneous` test (Tukey HSD: every correction's rows are
    its own decisions) gets one line, labelled ``simultaneous``. The legend (one entry per
    correction) stands under the title. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"correction": ["none", "none", "holm", "holm"], "m": [5, 10, 5, 10],
    ...               "n": [25] * 4, "share_null": [1.0] * 4, "alpha": [0.05] * 4,
    ...               "fwer": [0.3, 0.6, 0.04, 0.04], "fwer_lo": [0.2, 0.5, 0.02, 0.02],
    ...               "fwer_hi": [0.4, 0.7, 0.06, 0.06], "fdr": [0.3, 0.6, 0.04, 0.04],
    ...               "fdr_lo": [0.2, 0.5, 0.02, 0.02], "fdr_hi": [0.4, 0.7, 0.06, 0.06],
    ...               "power": [float("nan")] * 4, "power_lo": [float("nan")] * 4,
    ...               "power_hi": [float("nan")] * 4})
    >>> rates_plot(t, Path(tempfile.mkdtemp()), "x", "AP, t test").name
    'x.png'
    """
    df = rows.to_pandas()
    sizes = sorted(df["n"].unique())
    corrections = list(dict.fromkeys(df["correction"]))
    if simultaneous:  # the rows of all corrections are equal: draw them once
        df = df[df["correction"] == corrections[0]].assign(correction="simultaneous")
        corrections = ["simultaneous"]
    shares = sorted(df["share_null"].unique(), reverse=True)
    alpha = float(df["alpha"].iloc[0])
    ms = sorted(int(m) for m in df["m"].unique())
    ncol_legend = min(len(corrections), 5)
    legend_rows = -(-len(corrections) // ncol_legend)
    nrows, ncols = len(_PANELS) * len(sizes), len(shares)
    width = max(3.4 * ncols + 1.2, 7.5)
    top = 0.6 + 0.22 * legend_rows  # inches above the panels: title and legend
    height = 2.2 * nrows + top + 0.3
    fig = Figure(figsize=(width, height), dpi=110)
    axes = np.atleast_2d(fig.subplots(nrows, ncols, squeeze=False))
    # the points of correction ci sit at m * nudge[ci] (log axis): equal rates stay apart
    span = np.log(ms[-1] / ms[0]) if len(ms) > 1 else 1.0
    nudge = np.exp(0.012 * span * (np.arange(len(corrections)) - (len(corrections) - 1) / 2))
    handles: dict[str, object] = {}
    for b, n in enumerate(sizes):
        for j, share in enumerate(shares):
            for i, (col, label) in enumerate(_PANELS):
                ax = axes[b * len(_PANELS) + i, j]
                drawn = False
                for ci, corr in enumerate(corrections):
                    part = df[(df.n == n) & (df.correction == corr) & (df.share_null == share)]
                    part = part.sort_values("m")
                    if part[col].isna().all():
                        continue
                    drawn = True
                    colour = f"C{ci % 10}"
                    x = part["m"].to_numpy(np.float64) * nudge[ci]
                    (line,) = ax.plot(x, part[col], color=colour,
                                      marker=_MARKERS[ci % len(_MARKERS)], markersize=4,
                                      linestyle="-", linewidth=1.1, label=corr)
                    handles.setdefault(corr, line)
                    ax.fill_between(x, part[f"{col}_lo"], part[f"{col}_hi"], color=colour,
                                    alpha=0.10, linewidth=0)
                if not drawn:
                    ax.text(0.5, 0.5, "undefined: no true difference" if col == "power"
                            else "no rows", ha="center", va="center", fontsize=8,
                            color="grey", transform=ax.transAxes)
                if col != "power":
                    ax.axhline(alpha, color="grey", linestyle=":", linewidth=0.9)
                ax.set_ylim(0, 1)
                ax.set_xscale("log")
                ax.set_xlim(ms[0] / 1.25, ms[-1] * 1.25)
                ax.set_xticks(ms)
                ax.set_xticklabels([str(m) for m in ms])
                ax.minorticks_off()
                ax.tick_params(labelsize=8)
                ax.grid(alpha=0.3)
                if i == 0:
                    ax.set_title(f"n = {n} topics, share_null = {share:g}", fontsize=9)
                if i == len(_PANELS) - 1 and b == len(sizes) - 1:
                    ax.set_xlabel("systems per collection (m)", fontsize=8)
                if j == 0:
                    ax.set_ylabel(label, fontsize=8)
    labels = [c for c in corrections if c in handles]
    legend = fig.legend([handles[c] for c in labels], labels, loc="upper center",
                        bbox_to_anchor=(0.5, 1 - 0.55 / height), ncol=ncol_legend,
                        fontsize=8, frameon=False)
    fig.suptitle(f"{title}\nFWER, FDR and power against m (alpha = {alpha:g}, dotted)",
                 fontsize=11, y=1 - 0.08 / height)
    fig.tight_layout(rect=(0, 0, 1, 1 - top / height), h_pad=0.6)
    fig.draw_without_rendering()  # the panels' top row right under the legend
    below = legend.get_window_extent().y0 / fig.bbox.height
    fig.subplots_adjust(top=below - 0.4 / height)
    return save_figure(fig, Path(out_dir) / f"{name}.png")


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The reading guide, one figure per metric and test, the table and the generator fit.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "correction": ["none", "holm"],
    ...               "test": ["t"] * 2, "m": [5, 5], "n": [25, 25],
    ...               "share_null": [1.0, 1.0], "null_systems": [5, 5], "alpha": [0.05] * 2,
    ...               "trials": [100, 100], "familywise_errors": [30, 4],
    ...               "fwer": [0.3, 0.04], "fwer_lo": [0.2, 0.02], "fwer_hi": [0.4, 0.1],
    ...               "fdr": [0.3, 0.04], "fdr_lo": [0.2, 0.02], "fdr_hi": [0.4, 0.1],
    ...               "power": [float("nan")] * 2, "power_lo": [float("nan")] * 2,
    ...               "power_hi": [float("nan")] * 2, "mean_rejections": [0.5, 0.05]})
    >>> lines = sections({"multiple_testing": t}, Path(tempfile.mkdtemp()))
    >>> lines[0], [x for x in lines if x.startswith("![")]
    ('## Multiple comparisons against known truth', \
['![multiple_testing_AP_t](multiple_testing_AP_t.png)'])
    """
    lines: list[str] = []
    if "multiple_testing" not in tables:
        return lines
    table = tables["multiple_testing"]
    lines += [
        "## Multiple comparisons against known truth", "",
        "Each trial simulates a whole collection of m systems on n topics from a generator "
        "fitted to the collection; `null_systems` of them share exactly the same true mean "
        "(their pairs are the true null hypotheses), the others have known, larger means. "
        "Every test runs on all m(m-1)/2 pairs and each correction adjusts that family.", "",
        "How to read it:", "",
        "- **fwer** (share of collections with at least one true null declared significant) "
        "is what Bonferroni and Holm promise to keep at or below alpha; read it where "
        "`share_null` = 1 (no true difference at all: then FWER = FDR). Without a correction "
        "it grows quickly with m.",
        "- **fdr** (mean share of false discoveries among the pairs declared significant, 0 "
        "when none is) is what BH and BY promise to keep at or below alpha.",
        "- **power** is the mean share of truly different pairs detected; the price of a "
        "correction is the drop in power against `none`.",
        "- A rate whose band (`_lo`, `_hi`: Wilson, conservative for fdr and power) lies "
        "above alpha breaks the promise beyond Monte Carlo error. Monte Carlo tests with "
        "`experiment.pvalue=count` can give p = 0, which no correction can tame: use "
        "`plus_one` (and B well above the number of pairs / alpha).",
        "- `tukey_hsd` and `randomised_tukey_hsd` are simultaneous tests of all pairs: they "
        "control the fwer themselves, so no correction is applied again and the rows of "
        "every correction hold the same decisions (one line, `simultaneous`, in their "
        "figure). Compare their fwer and power with the paired tests under `holm` or "
        "`bonferroni`. They assume systems exchangeable within a topic: with unequal "
        "correlations between runs their fwer can exceed alpha even when all means are "
        "equal.", ""]
    metrics = list(dict.fromkeys(table.column("metric").to_pylist()))
    tests = list(dict.fromkeys(table.column("test").to_pylist()))
    alphas = sorted(set(table.column("alpha").to_pylist()))
    first_alpha = 0.05 if 0.05 in alphas else alphas[0]
    for metric in metrics:
        for test in tests:
            mask = pc.and_(pc.and_(pc.equal(table["metric"], metric),
                                   pc.equal(table["test"], test)),
                           pc.equal(table["alpha"], first_alpha))
            rows = table.filter(mask)
            if rows.num_rows == 0:
                continue
            safe = "".join(c if c.isalnum() else "_"
                           for c in f"multiple_testing_{metric}_{test}")
            simultaneous = test in SIMULTANEOUS
            path = rates_plot(rows, Path(run_dir), safe,
                              f"{metric}, {test}" + (" (simultaneous)" if simultaneous else ""),
                              simultaneous=simultaneous)
            lines += figure_lines([path])
    lines += ["The table (first rows; all of them in `results/multiple_testing.parquet`):", "",
              markdown_table(table.select(
                  ["metric", "correction", "test", "m", "n", "share_null", "alpha", "trials",
                   "fwer", "fwer_hi", "fdr", "fdr_hi", "power", "mean_rejections"]),
                  max_rows=80), ""]
    if "multiple_testing_fit" in tables:
        lines += ["### The generator", "",
                  "Margins per system and one copula across all systems of the pool; "
                  "`shrinkage`: weight of the equicorrelation target that makes the "
                  "normal-score correlation positive definite.", "",
                  markdown_table(tables["multiple_testing_fit"]), ""]
    return (lines + type_m_s.sections(tables, run_dir, figures=False)
            + bayes_sections(tables, run_dir))


def _bayes_view(table: pa.Table) -> tuple[pa.Table, float | None]:
    """The Bayesian rows and the significance tests' uncorrected rows at the level nearest
    0.05 (the per-comparison counterparts of a Bayesian decision)."""
    import pandas as pd

    df = table.to_pandas()
    tests = df[(df["method"] == "test") & (df["correction"] == "none")]
    alpha = None
    if not tests.empty:
        levels = sorted(tests["alpha"].unique())
        alpha = float(min(levels, key=lambda a: abs(a - 0.05)))
        tests = tests[tests["alpha"] == alpha]
    view = pd.concat([df[df["method"] == "bayes"], tests])
    return pa.Table.from_pandas(view, preserve_index=False), alpha


def bayes_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Markdown of table ``bayes_multiple_testing`` (``experiment.bayes``): the Bayesian
    rules' per-comparison error rates beside the uncorrected significance tests, and one
    figure per metric.

    Examples
    --------
    >>> bayes_sections({}, Path("."))
    []
    """
    bt = tables.get("bayes_multiple_testing")
    if bt is None or not bt.num_rows:
        return []
    view, alpha = _bayes_view(bt)
    beside = (f" Beside them, every significance test without a correction at alpha = "
              f"{alpha:g} (all corrections and levels: the parquet file)." if alpha else "")
    lines = ["## Bayesian decisions against known truth", "",
             "The Bayesian tests of `experiment.bayes` decide every pair of every simulated "
             "collection (no correction: one decision per pair)." + beside, "",
             "How to read it:", "",
             "- **false_different_rate**: share of the true-null comparisons (equal true "
             "means) decided better or worse, the counterpart of a test's per-comparison Type "
             "I error; **fwer**: share of collections with at least one.",
             "- **power**: share of the comparisons with a true difference decided in the "
             "true direction; **wrong_sign_rate**: decided in the wrong one.",
             "- **equivalent_inside_rate** (Bayesian rows): share of the comparisons with "
             "|true difference| <= `experiment.bayes_rope` (the true nulls included) decided "
             "equivalent, a correct call; **equivalent_outside_rate** is the share of the "
             "others decided equivalent, an error.", "",
             markdown_table(view.select(
                 ["metric", "n", "m", "share_null", "test", "rule", "false_different_rate",
                  "fwer", "power", "wrong_sign_rate", "equivalent_inside_rate",
                  "equivalent_outside_rate"]), max_rows=80), ""]
    lines += figure_lines(bayes_plot(view, Path(run_dir)))
    return lines


def bayes_plot(view: pa.Table, out_dir: Path) -> list[Path]:
    """``bayes_multiple_testing_<metric>.png``: against m, one row of panels per n: the
    false "different" rate where every system ties (the largest share_null) and the power
    where some differ (the smallest share_null below 1), one line per Bayesian test and
    uncorrected significance test."""
    df = view.to_pandas()
    paths = []
    for metric in dict.fromkeys(df["metric"]):
        cell = df[df["metric"] == metric]
        sizes = sorted(cell["n"].unique())
        shares = sorted(cell["share_null"].unique())
        live = [h for h in shares if h < 1.0]
        panels = [("false_different_rate", max(shares), "false \"different\" rate")]
        if live:
            panels.append(("power", min(live), "power"))
        fig = Figure(figsize=(4.2 * len(panels), 1.1 + 2.6 * len(sizes)))
        axes = np.asarray(fig.subplots(len(sizes), len(panels), squeeze=False))
        series = list(dict.fromkeys(zip(cell["method"], cell["test"], strict=True)))
        for i, n in enumerate(sizes):
            for j, (col, share, label) in enumerate(panels):
                ax = axes[i, j]
                for k, (method, test) in enumerate(series):
                    r = cell[(cell["n"] == n) & (cell["share_null"] == share)
                             & (cell["method"] == method) & (cell["test"] == test)]
                    r = r.sort_values("m")
                    name = legend_of(test) if method == "bayes" else (
                        f"{test} (p <= {float(r['alpha'].iloc[0]):g})" if len(r) else test)
                    ax.plot(r["m"], r[col], marker=_MARKERS[k % len(_MARKERS)],
                            linestyle="--" if method == "test" else "-",
                            color=f"C{k % 10}", label=name if i == j == 0 else None,
                            markersize=5)
                ax.set_title(f"n = {n}, share_null = {share:g}", fontsize=9)
                ax.set_ylabel(label)
                ms = sorted(cell["m"].unique())
                ax.set_xticks(ms)
                if i == len(sizes) - 1:
                    ax.set_xlabel("systems per collection (m)")
        height = fig.get_figheight()
        fig.legend(loc="upper center", ncol=2, fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 1 - 0.05 / height))
        rows = -(-len(series) // 2)
        fig.subplots_adjust(top=1 - (0.3 + 0.2 * rows) / height, hspace=0.45, wspace=0.3)
        safe = "".join(c if c.isalnum() else "_" for c in f"bayes_multiple_testing_{metric}")
        paths.append(save_figure(fig, out_dir / f"{safe}.png"))
    return paths
