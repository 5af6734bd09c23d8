"""PNG plots from result tables (matplotlib, Agg backend, no global state changed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

__all__ = ["asl_curves"]


def asl_curves(asl: pa.Table, out_dir: Path) -> list[Path]:
    """One figure per test: ASL of every pair, sorted, one line per metric (Sakai 2006,
    Figs. 7-8). Returns the PNG paths."""
    df = asl.to_pandas()
    paths = []
    for test, rows in df.groupby("test", sort=False):
        fig = Figure(figsize=(7, 4.2), dpi=120)
        ax = fig.subplots()
        for metric, part in rows.groupby("metric", sort=False):
            y = np.sort(part["asl"].to_numpy())
            ax.plot(np.arange(1, len(y) + 1), y, label=str(metric), linewidth=1.4)
        for alpha, style in ((0.05, "--"), (0.01, ":")):
            ax.axhline(alpha, color="grey", linestyle=style, linewidth=0.8)
            ax.annotate(f"α={alpha}", (1, alpha), textcoords="offset points", xytext=(2, 2),
                        fontsize=8, color="grey")
        ax.set_xlabel("system pairs sorted by ASL")
        ax.set_ylabel("achieved significance level (ASL)")
        ax.set_title(f"ASL curves: {test.replace('_', ' ')} test")
        ax.set_ylim(0, 1.0)
        ax.legend(title="metric", fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"asl_curve_{test}.png"
        fig.savefig(path)
        paths.append(path)
    return paths
