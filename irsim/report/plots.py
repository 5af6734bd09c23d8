"""PNG plots from result tables (matplotlib, Agg backend, no global state changed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import save_figure

__all__ = ["asl_curves", "FIGURES"]

#: Figures drawn here (discpower's ASL curves; ``<test>`` as the ``asl`` table names it).
FIGURES = ("asl_curve_<test>.png",)




def _title(test: str) -> str:
    """A test's name in a plot title: its registered description (the test registry)."""
    from irsim.stats.registry import TESTS

    spec = TESTS.get(test)
    return spec.description if spec is not None else test.replace("_", " ")


def asl_curves(asl: pa.Table, out_dir: Path) -> list[Path]:
    """One figure per test: ASL of every pair, sorted, one line per metric (Sakai 2006,
    Figs. 7-8); the left panel shows the whole curve, the right one zooms into ASL <= 0.1
    where discriminative power is read. Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 3, "test": ["t"] * 3, "asl": [0.01, 0.3, 0.002]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in asl_curves(t, Path(d))]
    ['asl_curve_t.png']
    """
    df = asl.to_pandas()
    paths = []
    for test, rows in df.groupby("test", sort=False):
        fig = Figure(figsize=(10, 4.2), dpi=120)
        full, zoom = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1]})
        for metric, part in rows.groupby("metric", sort=False):
            y = np.sort(part["asl"].to_numpy())
            x = np.arange(1, len(y) + 1)
            for ax in (full, zoom):
                ax.plot(x, y, label=str(metric), linewidth=1.4)
        low = int(rows.groupby("metric", sort=False)["asl"].apply(
            lambda a: int((a <= 0.1).sum())).max())
        zoom.set_xlim(0, max(10, int(low * 1.1) + 1))
        for ax, top in ((full, 1.0), (zoom, 0.1)):
            for alpha, style in ((0.05, "--"), (0.01, ":")):
                ax.axhline(alpha, color="grey", linestyle=style, linewidth=0.8)
            ax.set_xlabel("system pairs sorted by ASL")
            ax.set_ylim(0, top)
            ax.grid(alpha=0.3)
        for alpha in (0.05, 0.01):
            zoom.annotate(f"α={alpha}", (0, alpha), xycoords=("axes fraction", "data"),
                          textcoords="offset points", xytext=(3, 2), fontsize=8,
                          color="grey")
        full.set_ylabel("achieved significance level (ASL)")
        full.set_title("all pairs", fontsize=9)
        zoom.set_title("zoom: ASL <= 0.1 (pairs left of where a curve crosses α are "
                       "significant)", fontsize=8)
        full.legend(title="metric", fontsize=8)
        fig.suptitle(f"ASL curves: {_title(str(test))}")
        fig.tight_layout()
        path = out_dir / f"asl_curve_{test}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths
