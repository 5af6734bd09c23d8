"""Report of the coverage study: the Type I error table and Type I error against alpha
(Park 2011, Tables 1-3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, safe_name, save_figure

__all__ = ["sections", "coverage_plots", "FIGURES"]

#: Figures of this report (``<metric>`` with every non-alphanumeric character as ``_``).
FIGURES = ("coverage_<metric>.png",)

_STYLE = {
    "normal": ("tab:gray", "o"), "t": ("tab:brown", "v"), "percentile": ("tab:red", "s"),
    "basic": ("tab:purple", "D"), "bca": ("tab:orange", "^"),
    "studentised_logit": ("tab:blue", "P"),
}


def coverage_plots(coverage: pa.Table, out_dir: Path) -> list[Path]:
    """One figure per metric: a panel per sample size n, Type I error against alpha, one
    line per method, the diagonal (exact coverage) dashed. Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 4, "method": ["t", "t", "bca", "bca"],
    ...               "n": [5] * 4, "alpha": [0.05, 0.1] * 2,
    ...               "type1_error": [0.06, 0.11, 0.15, 0.2]})
    >>> [p.name for p in coverage_plots(t, Path(tempfile.mkdtemp()))]
    ['coverage_AP.png']
    """
    df = coverage.to_pandas()
    if "metric" not in df:
        df["metric"] = "metric"
    paths = []
    for metric, rows in df.groupby("metric", sort=False):
        sizes = sorted(rows["n"].unique())
        fig = Figure(figsize=(4.2 * len(sizes) + 0.6, 4.4), dpi=120)
        axes = np.atleast_1d(fig.subplots(1, len(sizes), sharey=True))
        top = max(0.6, float(rows["type1_error"].max()) * 1.05)
        for ax, n in zip(axes, sizes, strict=True):
            part = rows[rows["n"] == n]
            amax = float(part["alpha"].max())
            ax.plot([0, amax], [0, amax], color="black", linestyle="--", linewidth=0.9,
                    label="exact")
            for method, m in part.groupby("method", sort=False):
                m = m.sort_values("alpha")
                color, marker = _STYLE.get(str(method), ("black", "."))
                ax.plot(m["alpha"], m["type1_error"], color=color, marker=marker,
                        markersize=4, linewidth=1.3, label=str(method).replace("_", " "))
            ax.set_title(f"n = {n} topics")
            ax.set_xlabel("alpha (nominal Type I error)")
            ax.set_xlim(0, amax * 1.04)
            ax.set_ylim(0, top)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("observed Type I error")
        axes[-1].legend(fontsize=8, loc="upper left")
        fig.suptitle(f"CI coverage for the mean of {metric}: share of intervals missing the "
                     f"population mean")
        fig.tight_layout()
        paths.append(save_figure(fig, out_dir / f"coverage_{safe_name(str(metric))}.png"))
    return paths


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Type I error table (the smallest alpha) and the Type I error vs alpha plots.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "method": ["t", "t"], "n": [5, 5],
    ...               "alpha": [0.05, 0.1], "type1_error": [0.06, 0.11], "above": [0.03, 0.05],
    ...               "below": [0.03, 0.06], "intervals": [100, 100]})
    >>> lines = sections({"coverage": t}, Path(tempfile.mkdtemp()))
    >>> lines[0], lines[-2]
    ('## Coverage of confidence intervals', '![coverage_AP](coverage_AP.png)')
    """
    lines: list[str] = []
    if "coverage" not in tables:
        return lines
    cov = tables["coverage"]
    alpha0 = min(cov.column("alpha").to_pylist())
    head = cov.filter(pc.equal(cov.column("alpha"), alpha0)).select(
        ["metric", "method", "n", "alpha", "type1_error", "above", "below", "intervals"])
    lines += ["## Coverage of confidence intervals", "",
              f"Share of intervals that miss the population mean (Type I error) at alpha = "
              f"{alpha0:g}; `above`/`below`: the interval lies above/below the population "
              f"mean. An accurate method has Type I error close to alpha (Park 2011 on TREC "
              f"2004 Robust, alpha = 0.05, n = 5/10/20: percentile 0.181/0.108/0.070, BCa "
              f"0.170/0.093/0.059, studentised logit 0.055/0.054/0.047).", "",
              markdown_table(head, max_rows=60), ""]
    lines += ["Type I error against alpha, one panel per sample size; the dashed diagonal "
              "is an exact method.", ""]
    lines += figure_lines(coverage_plots(cov, Path(run_dir)))
    return lines
