"""Report of the swap-rate study: the summary table (Sakai's Tables 1-5) and the swap-rate
curves (Sakai, topic sampling, Figs. 2-4) from the ``swap_rates`` table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import figure_lines, fmt, markdown_table, safe_name, save_figure

__all__ = ["sections", "swap_rate_curves", "SCHEME_COLORS", "FIGURES",
           "required_diff_cells", "reference_lines"]

#: Figures of this report (``<metric>`` as :func:`irsim.report.safe_name` spells it:
#: ``P@10`` -> ``P_10``).
FIGURES = ("swap_rates_<metric>.png",)

#: One colour per sampling scheme, the same in every plot.
SCHEME_COLORS = {"disjoint": "tab:blue", "replacement": "tab:orange",
                 "independent": "tab:green", "bootstrap": "tab:red"}
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def swap_rate_curves(rates: pa.Table, out_dir: Path | str) -> list[Path]:
    """One PNG per metric: swap rate against the bin of |d| on the first set, absolute bins
    (left) and relative bins (right), one line per sampling scheme (colour) and topic-set
    size (line style and marker). Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "sampling": ["disjoint"] * 2,
    ...               "subset_size": [10, 10], "bin_kind": ["absolute", "relative"],
    ...               "bin_lo": [0.0, 0.0], "bin_hi": [0.01, 0.05], "comparisons": [5, 5],
    ...               "swaps": [2, 2], "swap_rate": [0.4, 0.4]})
    >>> [p.name for p in swap_rate_curves(t, tempfile.mkdtemp())]
    ['swap_rates_AP.png']
    """
    out_dir = Path(out_dir)
    df = rates.to_pandas()
    paths = []
    for metric, rows in df.groupby("metric", sort=False):
        fig = Figure(figsize=(11, 4.4), dpi=110)
        axes = fig.subplots(1, 2)
        sizes = sorted(rows["subset_size"].unique())
        for ax, kind in zip(axes, ("absolute", "relative"), strict=True):
            part = rows[rows["bin_kind"] == kind]
            for (scheme, size), line in part.groupby(["sampling", "subset_size"], sort=False):
                line = line.sort_values("bin_lo")
                keep = line["comparisons"].to_numpy() > 0
                x = line["bin_lo"].to_numpy()[keep]
                if kind == "relative":
                    x = x * 100
                j = sizes.index(size)
                ax.plot(x, line["swap_rate"].to_numpy()[keep],
                        color=SCHEME_COLORS.get(scheme, "black"),
                        linestyle=_STYLES[j % len(_STYLES)],
                        marker=_MARKERS[j % len(_MARKERS)], markersize=3.5, linewidth=1.3,
                        label=f"{scheme}, c={size}")
            reference_lines(ax)
            if kind == "absolute":
                ax.set_xlabel("|d| on the first set (bin lower edge; last bin >= 0.20)")
                ax.set_xlim(-0.005, 0.205)
            else:
                ax.set_xlabel("|d| relative to the smaller mean, % (bin lower edge)")
                ax.set_xlim(-2, 97)
            ax.set_ylabel("swap rate")
            ax.set_ylim(0, None)
            ax.set_title(f"{metric}: {kind} bins", fontsize=10)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8, title="sampling", title_fontsize=8)
        fig.tight_layout()
        paths.append(save_figure(fig, out_dir / f"swap_rates_{safe_name(str(metric))}.png"))
    return paths


def reference_lines(ax: Any, levels: tuple[float, ...] = (0.05, 0.10, 0.20)) -> None:
    """Dotted horizontal lines at the swap rates of 95/90/80% confidence, each labelled
    (``5%``, ``10%``, ``20%``) at the right edge of the panel."""
    for level in levels:
        ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
        ax.annotate(f"{level:.0%}", (1, level), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(-2, 2), ha="right", va="bottom",
                    fontsize=8, color="grey")


def required_diff_cells(summary: pa.Table, rates: pa.Table | None) -> list[str]:
    """``required_diff`` of every summary row as the report prints it: a value that is the
    lower edge of the open last bin (``bin_hi`` = inf in `rates`) is only a lower bound
    (``>= 0.2``); a missing one is an em dash.

    Examples
    --------
    >>> summ = pa.table({"metric": ["AP", "AP"], "sampling": ["disjoint"] * 2,
    ...                  "subset_size": [10, 10], "required_diff": [0.2, 0.05]})
    >>> rates = pa.table({"metric": ["AP"] * 2, "sampling": ["disjoint"] * 2,
    ...                   "subset_size": [10, 10], "bin_kind": ["absolute"] * 2,
    ...                   "bin_lo": [0.19, 0.2], "bin_hi": [0.2, float("inf")]})
    >>> required_diff_cells(summ, rates)
    ['>= 0.2', '0.05']
    """
    import math

    open_lo: dict[tuple, float] = {}
    if rates is not None and {"bin_kind", "bin_hi"} <= set(rates.column_names):
        for r in rates.to_pylist():
            if r["bin_kind"] == "absolute" and math.isinf(r["bin_hi"]):
                open_lo[(r["metric"], r["sampling"], r["subset_size"])] = r["bin_lo"]
    cells = []
    for r in summary.to_pylist():
        value = r["required_diff"]
        lo = open_lo.get((r["metric"], r["sampling"], r["subset_size"]))
        bound = value is not None and lo is not None and math.isclose(value, lo)
        cells.append(f">= {fmt(value)}" if bound else fmt(value))
    return cells


def sections(tables: dict[str, pa.Table], run_dir: Any) -> list[str]:
    """Summary table and swap-rate curves for report.md (PNGs in `run_dir`).

    Examples
    --------
    >>> sections({}, ".")
    []
    """
    lines: list[str] = []
    if "swap_summary" in tables:
        summ = tables["swap_summary"]
        cols = ["metric", "sampling", "subset_size", "confidence", "required_diff",
                "max_performance", "relative_diff", "sensitivity", "mean_unique_topics",
                "mean_overlap"]
        shown = summ.select(cols).set_column(
            cols.index("required_diff"), "required_diff",
            pa.array(required_diff_cells(summ, tables.get("swap_rates")), pa.string()))
        lines += ["## Swap-rate summary", "",
                  "Per metric, sampling scheme and topic-set size c: the absolute difference "
                  "required for the confidence level (smallest bin from which every swap "
                  "rate is <= 1 - confidence; \u2014 if no bin qualifies; `>= 0.2`: only the "
                  "open last bin, |d| >= 0.20, qualifies, so the difference required is at "
                  "least that and may be larger), the maximum "
                  "performance observed on any set, relative difference = required / max, "
                  "sensitivity = share of comparisons with |d| >= required (Sakai's columns "
                  "(i)-(iv)), and the mean number of distinct topics per set and shared by "
                  "the two sets of a trial.", "",
                  markdown_table(shown, max_rows=60), ""]
    if "swap_rates" in tables:
        lines += ["## Swap-rate curves", "",
                  "Swap rate per bin of |d| on the first set (left: absolute bins of 0.01, the "
                  "last >= 0.20; right: relative to the smaller mean, 5% bins). The dotted "
                  "lines, labelled, are the 5%, 10% and 20% swap rates of 95/90/80% "
                  "confidence.", ""]
        lines += figure_lines(swap_rate_curves(tables["swap_rates"], run_dir))
    return lines
