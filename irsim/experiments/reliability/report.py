"""Report of the reliability study: variance components, E(rho^2) and Phi with their
intervals, the topics needed per target and the D-study curve (generalizability theory)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, save_figure

__all__ = ["sections", "d_study_plot", "FIGURES"]

#: Figures of this report.
FIGURES = ("d_study.png",)


def d_study_plot(d_study: pa.Table, out_dir: Path, targets: list[float] | None = None
                 ) -> Path:
    """E(rho^2) (solid) and Phi (dashed) against the number of topics, one colour per metric,
    dotted horizontal lines at the targets. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 3, "topics": [1, 2, 3], "e_rho2": [0.2, 0.4, 0.5],
    ...               "phi": [0.1, 0.2, 0.3]})
    >>> d_study_plot(t, Path(tempfile.mkdtemp()), [0.8]).name
    'd_study.png'
    """
    df = d_study.to_pandas()
    fig = Figure(figsize=(7.5, 4.8), dpi=120)
    ax = fig.subplots()
    colours = [f"C{i}" for i in range(10)]
    for i, (metric, rows) in enumerate(df.groupby("metric", sort=False)):
        c = colours[i % len(colours)]
        ax.plot(rows["topics"], rows["e_rho2"], color=c, linewidth=1.5,
                label=f"{metric} E(rho^2)")
        ax.plot(rows["topics"], rows["phi"], color=c, linewidth=1.5, linestyle="--",
                label=f"{metric} Phi")
    for target in targets or []:
        ax.axhline(target, color="gray", linestyle=":", linewidth=0.9)
    ax.set_xlabel("topics")
    ax.set_ylabel("reliability")
    ax.set_ylim(0, 1)
    ax.set_xlim(0, float(df["topics"].max()))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", ncol=2)
    ax.set_title("D-study: E(rho^2) (solid) and Phi (dashed) against the number of topics")
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "d_study.png")


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The G-study table, the topics needed and the D-study figure.

    Examples
    --------
    >>> import tempfile
    >>> rel = pa.table({"metric": ["AP"], "systems": [10], "dropped": [0], "topics": [50],
    ...                 "pct_system": [5.0], "pct_topic": [70.0], "pct_residual": [25.0],
    ...                 "e_rho2": [0.9], "e_rho2_lo": [0.85], "e_rho2_hi": [0.93],
    ...                 "e_rho2_feldt_lo": [0.86], "e_rho2_feldt_hi": [0.94], "phi": [0.7],
    ...                 "phi_lo": [0.6], "phi_hi": [0.8]})
    >>> d = pa.table({"metric": ["AP"] * 2, "topics": [1, 2], "e_rho2": [0.2, 0.4],
    ...               "phi": [0.1, 0.2]})
    >>> lines = sections({"reliability": rel, "d_study": d}, Path(tempfile.mkdtemp()))
    >>> lines[0], lines[-2]
    ('## Test collection reliability (generalizability theory)', '![d_study](d_study.png)')
    """
    lines: list[str] = []
    if "reliability" not in tables:
        return lines
    rel = tables["reliability"]
    lines += ["## Test collection reliability (generalizability theory)", "",
              "G-study: the share of the score variance due to systems, topics and their "
              "interaction (residual). E(rho^2) is the reliability of the collection for "
              "ranking systems, Phi for their absolute scores (1 = perfectly reliable); "
              "`_lo`/`_hi`: percentile bootstrap over topics, `feldt`: exact interval under "
              "the normal model.", "",
              markdown_table(rel.select(["metric", "systems", "dropped", "topics",
                                         "pct_system", "pct_topic", "pct_residual", "e_rho2",
                                         "e_rho2_lo", "e_rho2_hi", "e_rho2_feldt_lo",
                                         "e_rho2_feldt_hi", "phi", "phi_lo", "phi_hi"])), ""]
    targets: list[float] = []
    if "reliability_topics" in tables:
        need = tables["reliability_topics"]
        targets = sorted(set(need.column("target").to_pylist()))
        lines += ["Topics needed for each target (D-study; `topics_lo`/`topics_hi`: bootstrap "
                  "interval of that number).", "", markdown_table(need, max_rows=60), ""]
    if "d_study" in tables:
        path = d_study_plot(tables["d_study"], Path(run_dir), targets)
        lines += ["The D-study curve: each indicator against the number of topics; dotted "
                  "lines: the targets.", "", *figure_lines([path])]
    if "reliability_check" in tables:
        lines += ["### Simulation check", "",
                  "Collections of each size simulated from a normal random-effects model "
                  "with this G-study's variance components (the truth known): the true "
                  "E(rho^2) and Phi against the mean (bias, sd) of their estimates, and the "
                  "realised agreement with the true system ordering: `corr2_mean`, the mean "
                  "squared correlation of simulated and true system means (what E(rho^2) "
                  "predicts), and `tau_mean`, Kendall's tau-b.", "",
                  markdown_table(tables["reliability_check"], max_rows=60), ""]
    return lines
