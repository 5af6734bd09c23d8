"""Plots of the coverage study: Type I error against alpha (Park 2011, Tables 1-3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

__all__ = ["coverage_plots"]

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
        safe = "".join(ch if ch.isalnum() else "_" for ch in str(metric))
        path = out_dir / f"coverage_{safe}.png"
        fig.savefig(path)
        paths.append(path)
    return paths
