"""Report of the error-rate study (Sanderson & Zobel 2005): error rate against topic-set size
with the fitted exponential curves (Figs. 1-6, 9-12), the dependency artefact (Fig. 8) and
the standard deviation of the mean against sample size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, safe_name, save_figure

__all__ = [
    "sections",
    "error_rate_plots",
    "dependency_plot",
    "sd_plot",
    "PLOT_BINS",
    "FIGURES",
]

#: Figures of this report (``<metric>`` spelt by :func:`irsim.report.safe_name`).
FIGURES = ("error_rates_<metric>_<sampling>.png", "error_dependency_<metric>.png",
           "sd_by_size.png")

#: Bins drawn in the size plots (by lower edge), like the paper's figures "not all bins
#: were graphed, to remove clutter": every other 0.01 up to 0.10 (absolute) and every
#: other 5% up to 50% (relative).
PLOT_BINS = {"absolute": (0.0, 0.02, 0.04, 0.06, 0.08, 0.10),
             "relative": (0.0, 0.10, 0.20, 0.30, 0.40, 0.50)}


def _label(kind: str, lo: float, hi: float) -> str:
    if kind == "relative":
        return f"{lo * 100:.0f}%+" if not np.isfinite(hi) else f"{lo * 100:.0f}-{hi * 100:.0f}%"
    return f">= {lo:.2f}" if not np.isfinite(hi) else f"{lo:.2f}-{hi:.2f}"


def _condition_label(test: str, lo: float, hi: float) -> str:
    if test == "none":
        return "all comparisons (no test)"
    left = "0 <= p" if lo <= 0 else f"{lo:g} < p"
    return f"{test} test, {left} <= {hi:g}"


def error_rate_plots(errors: pa.Table, extrapolation: pa.Table | None, out_dir: Path | str, *,
                     min_comparisons: int = 1) -> list[Path]:
    """Error rate against topic-set size with the fitted ``exp(a + b size)`` curves drawn to
    the target size: one PNG per metric and sampling scheme, one panel per condition
    (no test, then each test with its first p window) and bin kind; one line per plotted
    bin (:data:`PLOT_BINS`; the legend of a bin kind under its column). Points with fewer
    than `min_comparisons` comparisons are not drawn.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "sampling": ["disjoint"] * 2,
    ...               "subset_size": [5, 10], "bin_kind": ["absolute"] * 2,
    ...               "bin_lo": [0.0, 0.0], "bin_hi": [0.01, 0.01], "test": ["none"] * 2,
    ...               "p_lo": [0.0, 0.0], "p_hi": [1.0, 1.0], "comparisons": [10, 10],
    ...               "errors": [4, 3], "error_rate": [0.4, 0.3]})
    >>> [p.name for p in error_rate_plots(t, None, tempfile.mkdtemp())]
    ['error_rates_AP_disjoint.png']
    """
    out_dir = Path(out_dir)
    df = errors.to_pandas()
    fits = extrapolation.to_pandas() if extrapolation is not None else pd.DataFrame()
    paths = []
    for (metric, scheme), rows in df.groupby(["metric", "sampling"], sort=False):
        conds = []
        for (test, lo, hi), _ in rows.groupby(["test", "p_lo", "p_hi"], sort=False):
            if test == "none" or all(c[0] != test for c in conds):
                conds.append((test, lo, hi))
        panels = [(c, kind) for c in conds for kind in ("absolute", "relative")]
        ncols = 2
        nrows = len(conds)
        height = 3.6 * nrows + 1.3  # + the legends under the bottom row
        fig = Figure(figsize=(11, height), dpi=100)
        axes = np.atleast_2d(fig.subplots(nrows, ncols, squeeze=False))
        for ax, ((test, lo, hi), kind) in zip(axes.ravel(), panels, strict=True):
            part = rows[(rows.test == test) & (rows.p_lo == lo) & (rows.p_hi == hi)
                        & (rows.bin_kind == kind)]
            fit_part = fits[(fits.metric == metric) & (fits.sampling == scheme)
                            & (fits.test == test) & (fits.p_lo == lo) & (fits.p_hi == hi)
                            & (fits.bin_kind == kind)] if len(fits) else fits
            max_size = float(rows.subset_size.max())
            if len(fit_part):
                max_size = max(max_size, float(fit_part.target_size.max()))
            cmap = _colors(len(PLOT_BINS[kind]))
            top = 0.0
            for j, bin_lo in enumerate(PLOT_BINS[kind]):
                line = part[np.isclose(part.bin_lo, bin_lo)].sort_values("subset_size")
                line = line[line.comparisons >= min_comparisons]
                if not len(line):
                    continue
                hi_edge = float(line.bin_hi.iloc[0])
                top = max(top, float(line.error_rate.max()))
                ax.plot(line.subset_size, line.error_rate, "o", color=cmap[j], markersize=4,
                        label=_label(kind, bin_lo, hi_edge))
                f = fit_part[np.isclose(fit_part.bin_lo, bin_lo)] if len(fit_part) else fit_part
                if len(f):
                    a, b = float(f.a.iloc[0]), float(f.b.iloc[0])
                    xs = np.linspace(float(line.subset_size.min()), max_size, 50)
                    ax.plot(xs, np.exp(a + b * xs), "--", color=cmap[j], linewidth=1)
            ax.axhline(0.05, color="grey", linestyle=":", linewidth=0.9)
            # scaled to the observed rates: a rising fit may leave the panel (rates > 1)
            ax.set_ylim(0, min(1.05, max(top, 0.05) * 1.15))
            ax.set_xlim(0, max_size + 2)
            ax.set_xlabel("topic set size")
            ax.set_ylabel("error rate")
            ax.set_title(f"{_condition_label(test, lo, hi)}; {kind} bins", fontsize=9)
            ax.grid(alpha=0.3)
        fig.suptitle(f"{metric}, {scheme} topic sets: error rates (points) and fitted "
                     f"exponential trends (dashed); dotted: 5%", fontsize=10)
        for col in range(ncols):  # one legend per bin kind, under its column, off the data
            seen: dict[str, Any] = {}
            for ax in axes[:, col]:
                for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                    seen.setdefault(lab, h)
            if seen:
                axes[-1, col].legend(list(seen.values()), list(seen), fontsize=8,
                                     title="|d| on first set", title_fontsize=8,
                                     ncol=min(len(seen), 4), loc="upper center",
                                     bbox_to_anchor=(0.5, -0.2), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / height))
        paths.append(save_figure(
            fig, out_dir / f"error_rates_{safe_name(str(metric))}_{scheme}.png"))
    return paths


def _colors(k: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(v) for v in np.linspace(0.0, 0.85, max(k, 1))]


def dependency_plot(dep: pa.Table, out_dir: Path | str) -> list[Path]:
    """Error rate by rank of the first-set ``|d|`` among a pair's trials (the paper's
    Fig. 8): one PNG per metric, one panel per scheme, one line per topic-set size.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "sampling": ["disjoint"] * 2,
    ...               "subset_size": [5, 5], "rank": [1, 2], "pairs": [3, 3],
    ...               "errors": [2, 1], "error_rate": [2 / 3, 1 / 3]})
    >>> [p.name for p in dependency_plot(t, tempfile.mkdtemp())]
    ['error_dependency_AP.png']
    """
    out_dir = Path(out_dir)
    df = dep.to_pandas()
    paths = []
    for metric, rows in df.groupby("metric", sort=False):
        schemes = list(dict.fromkeys(rows.sampling))
        fig = Figure(figsize=(5.5 * len(schemes), 4), dpi=100)
        axes = np.atleast_1d(fig.subplots(1, len(schemes), squeeze=False)[0])
        for ax, scheme in zip(axes, schemes, strict=True):
            part = rows[rows.sampling == scheme]
            sizes = sorted(part.subset_size.unique())
            cmap = _colors(len(sizes))
            for j, size in enumerate(sizes):
                line = part[part.subset_size == size].sort_values("rank")
                ax.plot(line["rank"], line.error_rate, color=cmap[j], linewidth=1.3,
                        label=f"c={size}")
            ax.set_xlabel("rank of |d| on the first set among a pair's trials")
            ax.set_ylabel("error rate")
            ax.set_ylim(0, None)
            ax.set_title(f"{metric}, {scheme}", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(save_figure(fig, out_dir / f"error_dependency_{safe_name(str(metric))}.png"))
    return paths


def sd_plot(sd: pa.Table, out_dir: Path | str) -> list[Path]:
    """Mean (over systems) standard deviation of a system's mean score against the sample
    size, one line per metric (the shaded band spans min..max over systems); the x ticks are
    the sampled sizes.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "sample_size": [5, 10], "samples": [10, 10],
    ...               "systems": [4, 4], "mean_sd": [0.05, 0.03], "min_sd": [0.04, 0.02],
    ...               "max_sd": [0.06, 0.04]})
    >>> [p.name for p in sd_plot(t, tempfile.mkdtemp())]
    ['sd_by_size.png']
    """
    from matplotlib.ticker import NullLocator

    out_dir = Path(out_dir)
    df = sd.to_pandas()
    fig = Figure(figsize=(6.5, 4.2), dpi=100)
    ax = fig.subplots()
    for metric, rows in df.groupby("metric", sort=False):
        rows = rows.sort_values("sample_size")
        (line,) = ax.plot(rows.sample_size, rows.mean_sd, marker="o", markersize=3,
                          label=str(metric))
        ax.fill_between(rows.sample_size, rows.min_sd, rows.max_sd, alpha=0.15,
                        color=line.get_color())
    sizes = sorted(int(v) for v in df["sample_size"].unique())
    ax.set_xlabel("topics per sample")
    ax.set_xticks(sizes)  # the sampled sizes, and only those
    ax.set_xticklabels([str(v) for v in sizes], fontsize=8 if len(sizes) <= 12 else 6,
                       rotation=0 if len(sizes) <= 12 else 90)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylabel("sd of a system's mean score")
    ax.set_ylim(0, None)
    ax.set_title("Standard deviation of the mean over random topic samples\n"
                 "(line: mean over systems; band: min..max)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [save_figure(fig, out_dir / "sd_by_size.png")]


def _focus(errors: pa.Table) -> pa.Table:
    """The unconditioned relative-bin rows of the largest size (a compact report table)."""
    df = errors.to_pandas()
    df = df[(df.test == "none") & (df.bin_kind == "relative") & (df.comparisons > 0)]
    if not len(df):
        return pa.table({})
    big = df.groupby(["metric", "sampling"]).subset_size.transform("max")
    df = df[df.subset_size == big]
    cols = ["metric", "sampling", "subset_size", "bin_lo", "bin_hi", "comparisons", "errors",
            "error_rate"]
    return pa.Table.from_pandas(df[cols], preserve_index=False)


def sections(tables: dict[str, pa.Table], run_dir: Any) -> list[str]:
    """Markdown lines (and PNGs in `run_dir`) of the error-rate study.

    Examples
    --------
    >>> sections({}, ".")
    []
    """
    run_dir = Path(run_dir)
    lines: list[str] = []
    errors = tables.get("error_rates")
    extra = tables.get("error_extrapolation")
    if errors is not None and errors.num_rows:
        lines += ["## Error rates by topic-set size", "",
                  "An error: the pair's order on the second topic set differs from its order "
                  "on the first. Rates per bin of the first-set difference and topic-set "
                  "size, for all comparisons and for those a test on the first set found "
                  "significant (p window). Dashed: least-squares fit of log(rate) = a + b "
                  "size, drawn to the target size (`error_extrapolation`).", "",
                  "Unconditioned rates at the largest size, relative bins:", "",
                  markdown_table(_focus(errors), max_rows=25), ""]
        lines += figure_lines(error_rate_plots(errors, extra, run_dir, min_comparisons=10))
    if extra is not None and extra.num_rows:
        df = extra.to_pandas()
        df = df[(df.test == "none") & (df.bin_kind == "relative")]
        cols = ["metric", "sampling", "bin_lo", "bin_hi", "a", "b", "r2", "target_size",
                "predicted_rate"]
        lines += ["## Extrapolated error rates", "",
                  "Fits of the unconditioned relative bins (all fits: "
                  "`results/error_extrapolation.parquet`).", "",
                  markdown_table(pa.Table.from_pandas(df[cols], preserve_index=False),
                                 max_rows=30), ""]
    full = tables.get("full_significance")
    if full is not None and full.num_rows:
        df = full.to_pandas()
        df = df[(df.bin_kind == "relative") & (df.pairs > 0)]
        wide = df.pivot_table(index=["bin_lo", "bin_hi"], columns=["metric", "test"],
                              values="share").reset_index()
        wide.columns = [c if isinstance(c, str) else
                        ("_".join(str(v) for v in c if v) or "bin") for c in wide.columns]
        lines += ["## Significant on the full topic set", "",
                  "Share of pairs a test finds significant (p <= alpha) on all topics, by "
                  "relative difference of the full-set means.", "",
                  markdown_table(pa.Table.from_pandas(wide, preserve_index=False),
                                 max_rows=25), ""]
    sd = tables.get("sd_by_size")
    if sd is not None and sd.num_rows:
        lines += ["## Standard deviation of the mean against sample size", "",
                  markdown_table(sd, max_rows=30), ""]
        lines += figure_lines(sd_plot(sd, run_dir))
    dep = tables.get("error_dependency")
    if dep is not None and dep.num_rows:
        lines += ["## Dependency artefact", "",
                  "Each pair's trials sorted by |d| on the first set; error rate by that "
                  "rank over all pairs. A rise on the right for large disjoint sets is the "
                  "artefact of drawing both sets from one small pool.", ""]
        lines += figure_lines(dependency_plot(dep, run_dir))
    return lines
