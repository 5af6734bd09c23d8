"""Report of the assessor-effort study (Sanderson & Zobel 2005, Section 4): error rate
against judging effort (Fig. 7) and the pool sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, save_figure

__all__ = ["sections", "effort_plot", "FIGURES"]

#: Figures of this report.
FIGURES = ("effort.png",)


def effort_plot(summary: pa.Table, out_dir: Path | str) -> list[Path]:
    """Error rate (all comparisons) against assessor effort (judged documents = topics x
    mean pool size), one line per metric and pool depth, one panel per scheme (the paper's
    Fig. 7, lower graph); the x axis is logarithmic.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "pool_depth": [100, 100],
    ...               "sampling": ["disjoint"] * 2, "subset_size": [5, 10],
    ...               "judged_per_topic": [300.0, 300.0], "effort": [1500.0, 3000.0],
    ...               "comparisons": [50, 50], "errors": [10, 5], "error_rate": [0.2, 0.1]})
    >>> [p.name for p in effort_plot(t, tempfile.mkdtemp())]
    ['effort.png']
    """
    out_dir = Path(out_dir)
    df = summary.to_pandas()
    schemes = list(dict.fromkeys(df.sampling))
    fig = Figure(figsize=(6.5 * len(schemes), 4.3), dpi=100)
    axes = np.atleast_1d(fig.subplots(1, len(schemes), squeeze=False)[0])
    for ax, scheme in zip(axes, schemes, strict=True):
        part = df[df.sampling == scheme]
        for (metric, depth), line in part.groupby(["metric", "pool_depth"], sort=False):
            line = line.sort_values("effort")
            ax.plot(line.effort, line.error_rate, marker="o", markersize=4,
                    label=f"{metric}, depth-{depth} pools")
            for _, row in line.iterrows():
                ax.annotate(f"{int(row.subset_size)}", (row.effort, row.error_rate),
                            textcoords="offset points", xytext=(3, 3), fontsize=8,
                            color="grey")
        ax.set_xscale("log")
        ax.margins(x=0.08, y=0.1)
        ax.set_xlabel("assessor effort: judged documents (topics x mean pool size)")
        ax.set_ylabel("error rate (all comparisons)")
        ax.set_ylim(0, float(part.error_rate.max()) * 1.12 if len(part) else None)
        ax.set_title(f"Error rate against effort, {scheme} topic sets\n"
                     "(labels: topics per set)", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return [save_figure(fig, out_dir / "effort.png")]


def sections(tables: dict[str, pa.Table], run_dir: Any) -> list[str]:
    """Markdown lines (and PNGs in `run_dir`) of the effort study.

    Examples
    --------
    >>> sections({}, ".")
    []
    """
    run_dir = Path(run_dir)
    lines: list[str] = []
    summ = tables.get("effort_summary")
    if summ is not None and summ.num_rows:
        lines += ["## Error rate against assessor effort", "",
                  "Qrels restricted to pools of the given depth (every pooled document "
                  "judged), metrics recomputed; effort = topics x mean judged documents per "
                  "topic.", "",
                  markdown_table(summ, max_rows=40), ""]
        lines += figure_lines(effort_plot(summ, run_dir))
    pools = tables.get("pools")
    if pools is not None and pools.num_rows:
        df = pools.to_pandas().groupby("pool_depth")[["judged", "relevant"]].agg(
            ["mean", "sum"]).reset_index()
        df.columns = ["pool_depth", "judged_mean", "judged_total", "relevant_mean",
                      "relevant_total"]
        lines += ["## Pools", "", markdown_table(pa.Table.from_pandas(df, preserve_index=False)),
                  ""]
    return lines
