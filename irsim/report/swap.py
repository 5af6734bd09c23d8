"""Report of the swap-rate study: the summary table (Sakai's Tables 1-5) and the swap-rate
curves (Sakai, topic sampling, Figs. 2-4) from the ``swap_rates`` table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from matplotlib.figure import Figure

__all__ = ["sections", "swap_rate_curves", "safe_name", "SCHEME_COLORS"]

#: One colour per sampling scheme, the same in every plot.
SCHEME_COLORS = {"disjoint": "tab:blue", "replacement": "tab:orange",
                 "independent": "tab:green", "bootstrap": "tab:red"}
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def safe_name(text: str) -> str:
    """A file-name-safe version of a metric name.

    Examples
    --------
    >>> safe_name("nDCG@10"), safe_name("AP(rel=2)")
    ('nDCG_10', 'AP_rel_2')
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "metric"


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
            for level in (0.05, 0.10, 0.20):
                ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
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
        path = out_dir / f"swap_rates_{safe_name(str(metric))}.png"
        fig.savefig(path)
        paths.append(path)
    return paths


def sections(tables: dict[str, pa.Table], run_dir: Any) -> list[str]:
    """Summary table and swap-rate curves for report.md (PNGs in `run_dir`).

    Examples
    --------
    >>> sections({}, ".")
    []
    """
    from irsim.report import markdown_table

    lines: list[str] = []
    if "swap_summary" in tables:
        summ = tables["swap_summary"]
        cols = ["metric", "sampling", "subset_size", "confidence", "required_diff",
                "max_performance", "relative_diff", "sensitivity", "mean_unique_topics",
                "mean_overlap"]
        lines += ["## Swap-rate summary", "",
                  "Per metric, sampling scheme and topic-set size c: the absolute difference "
                  "required for the confidence level (smallest bin from which every swap "
                  "rate is <= 1 - confidence; empty if no bin qualifies), the maximum "
                  "performance observed on any set, relative difference = required / max, "
                  "sensitivity = share of comparisons with |d| >= required (Sakai's columns "
                  "(i)-(iv)), and the mean number of distinct topics per set and shared by "
                  "the two sets of a trial.", "",
                  markdown_table(summ.select(cols), max_rows=60), ""]
    if "swap_rates" in tables:
        lines += ["## Swap-rate curves", "",
                  "Swap rate per bin of |d| on the first set (left: absolute bins of 0.01, the "
                  "last >= 0.20; right: relative to the smaller mean, 5% bins). The dotted "
                  "lines are the 5%, 10% and 20% swap rates of 95/90/80% confidence.", ""]
        for path in swap_rate_curves(tables["swap_rates"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
