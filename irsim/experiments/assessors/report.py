"""Report of the assessors study: agreement of labels (a kappa heatmap over all qrels),
of system rankings (system means under the reference against each other qrels, tau in the
title; a bump chart of the ranks under every qrels, the largest movers labelled), of
significance decisions (a stacked bar per test), and reliability with an assessor facet
(the G-study's variance components, D-study curves of E(rho^2) against topics for 1, 2, 3
assessors per topic)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from irsim.report import markdown_table, safe_name, save_figure

__all__ = ["sections", "kappa_heatmap", "means_panels", "decision_bars", "bump_chart",
           "dstudy_curves", "simulated_tau", "FIGURES"]

#: Figures of this report (the means and bump figures: one file per metric).
FIGURES = ("assessors_kappa.png", "assessors_means_<metric>.png",
           "assessors_bump_<metric>.png", "assessors_decisions.png", "assessors_dstudy.png",
           "assessors_simulated_tau.png")

#: Systems labelled in the bump chart (the largest movers).
BUMP_LABELS = 6
#: Assessors per topic drawn in the D-study figure.
DSTUDY_ASSESSORS = (1, 2, 3)

_CATEGORY_COLOURS = {"both": "#2b8a3e", "neither": "#adb5bd", "lost": "#e8590c",
                     "gained": "#1971c2", "opposite": "#c92a2a"}


def kappa_heatmap(labels: pa.Table, out_dir: Path, *, labels_kind: str = "binary",
                  statistic: str = "kappa") -> Path:
    """Mean per-topic agreement of every pair of qrels that share judged passages. When
    most pairs do (at least half of them), a lower-triangle heatmap with the value in each
    cell, its colours spanning the values (no diagonal of 1s); else one row per pair with
    its value and bootstrap interval (``low``..``high``, when the table has them), so no
    cell is empty. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"qrels_a": ["nist", "nist", "a"], "qrels_b": ["a", "b", "b"],
    ...               "labels": ["binary"] * 3, "statistic": ["kappa"] * 3,
    ...               "mean": [0.4, 0.3, 0.5]})
    >>> kappa_heatmap(t, Path(tempfile.mkdtemp())).name
    'assessors_kappa.png'
    """
    df = labels.to_pandas()
    df = df[(df["labels"] == labels_kind) & (df["statistic"] == statistic)]
    df = df[np.isfinite(df["mean"].to_numpy(float))]
    names = list(dict.fromkeys(q for pair in zip(df["qrels_a"], df["qrels_b"], strict=True)
                               for q in pair))
    n = len(names)
    title = f"mean per-topic {statistic} ({labels_kind} labels)"
    if n >= 3 and len(df) >= 0.5 * n * (n - 1) / 2:
        fig = _kappa_grid(df, names, title)
    else:
        fig = _kappa_rows(df, title)
    return save_figure(fig, Path(out_dir) / "assessors_kappa.png")


def _kappa_grid(df: pd.DataFrame, names: list[str], title: str) -> Figure:
    """The lower triangle of the pairs' means (row below column), values in the cells."""
    n = len(names)
    pos = {q: i for i, q in enumerate(names)}
    grid = np.full((n, n), np.nan)
    for a, b, v in zip(df["qrels_a"], df["qrels_b"], df["mean"], strict=True):
        i, j = sorted((pos[a], pos[b]))
        grid[j, i] = v
    grid = grid[1:, :-1]
    lo, hi = float(np.nanmin(grid)), float(np.nanmax(grid))
    if hi - lo < 1e-9:
        lo, hi = lo - 0.05, hi + 0.05
    cell = 0.5
    label = 0.075 * max(len(q) for q in names) + 0.4
    fig = Figure(figsize=(cell * (n - 1) + label + 1.4, cell * (n - 1) + label + 0.5),
                 dpi=110, layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=lo, vmax=hi)
    ax.set_xticks(range(n - 1), names[:-1], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n - 1), names[1:], fontsize=8)
    for i in range(n - 1):
        for j in range(i + 1):
            if not math.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}".replace("0.", "."), ha="center",
                        va="center", fontsize=8,
                        color="white" if grid[i, j] < lo + 0.55 * (hi - lo) else "black")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.colorbar(im, ax=ax, shrink=0.8).ax.tick_params(labelsize=8)
    ax.set_title(title + "; blank: no shared judgments", fontsize=9)
    return fig


def _kappa_rows(df: pd.DataFrame, title: str) -> Figure:
    """One row per pair: its mean as a dot with the value, its interval as a bar."""
    df = df.sort_values("mean", ascending=False)
    rows = len(df)
    fig = Figure(figsize=(7.0, min(max(0.26 * rows + 1.2, 2.6), 16.0)), dpi=110,
                 layout="constrained")
    ax = fig.subplots()
    y = np.arange(rows)
    mean = df["mean"].to_numpy(float)
    if {"low", "high"} <= set(df.columns):
        low, high = df["low"].to_numpy(float), df["high"].to_numpy(float)
        ok = np.isfinite(low) & np.isfinite(high)
        ax.hlines(y[ok], low[ok], high[ok], color="#74c0fc", linewidth=2.5,
                  label="bootstrap interval")
    ax.plot(mean, y, "o", color="#1864ab", markersize=4, label="mean over topics")
    for yi, v in zip(y, mean, strict=True):
        ax.annotate(f"{v:.2f}", (v, yi), xytext=(0, 4), textcoords="offset points",
                    ha="center", fontsize=8)
    ax.set_yticks(y, [f"{a} – {b}" for a, b in zip(df["qrels_a"], df["qrels_b"], strict=True)],
                  fontsize=8)
    ax.set_ylim(rows - 0.4, -0.8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("agreement (1 = identical labels)", fontsize=8)
    ax.set_title(title + f": the {rows} pairs with shared judgments", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def means_panels(means: pa.Table, ranks: pa.Table, out_dir: Path, metric: str) -> Path:
    """System means under the reference (x) against each other qrels (y) for one metric:
    one panel per qrels, Kendall's tau-b in its title. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> m = pa.table({"qrels": ["a"] * 3, "metric": ["AP"] * 3, "system": ["s", "t", "u"],
    ...               "reference_mean": [0.1, 0.2, 0.3], "mean": [0.1, 0.3, 0.2]})
    >>> r = pa.table({"qrels": ["a"], "metric": ["AP"], "tau_b": [0.333]})
    >>> means_panels(m, r, Path(tempfile.mkdtemp()), "AP").name
    'assessors_means_AP.png'
    """
    df = means.to_pandas()
    df = df[df["metric"] == metric]
    tau = {q: t for q, m, t in zip(*(ranks.column(c).to_pylist()
                                     for c in ("qrels", "metric", "tau_b")), strict=True)
           if m == metric}
    qrels = list(dict.fromkeys(df["qrels"]))
    cols = min(4 if len(qrels) <= 16 else 6, len(qrels))
    rows = math.ceil(len(qrels) / cols)
    fig = Figure(figsize=(2.6 * cols + 0.6, 2.4 * rows + 0.4), dpi=110)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    lo = float(min(df["reference_mean"].min(), df["mean"].min()))
    hi = float(max(df["reference_mean"].max(), df["mean"].max()))
    for ax, q in zip(axes, qrels, strict=False):
        part = df[df["qrels"] == q]
        ax.plot([lo, hi], [lo, hi], color="gray", linewidth=0.7, linestyle=":")
        ax.scatter(part["reference_mean"], part["mean"], s=9)
        ax.set_title(f"{q}: tau = {tau.get(q, float('nan')):.3f}", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.yaxis.set_major_locator(MaxNLocator(4))
    for ax in axes[len(qrels):]:
        ax.set_visible(False)
    fig.supxlabel(f"{metric} under the reference", fontsize=8)
    fig.supylabel(f"{metric} under the other qrels", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / f"assessors_means_{safe_name(metric)}.png")


def decision_bars(decisions: pa.Table, out_dir: Path) -> Path:
    """Shares of system pairs in each decision category (both, neither, lost, gained,
    opposite), averaged over the other qrels, one stacked bar per test, correction and
    metric. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> d = pa.table({"qrels": ["a"], "metric": ["AP"], "test": ["t"], "correction": ["none"],
    ...               "pairs": [10], "both": [3], "neither": [5], "lost": [1], "gained": [1],
    ...               "opposite": [0]})
    >>> decision_bars(d, Path(tempfile.mkdtemp())).name
    'assessors_decisions.png'
    """
    df = decisions.to_pandas()
    cats = list(_CATEGORY_COLOURS)
    for c in cats:
        df[c] = df[c] / df["pairs"]
    g = df.groupby(["metric", "test", "correction"], sort=False)[cats].mean()
    labels = [f"{m}, {t}, {c}" for m, t, c in g.index]
    rows = len(g)
    fig = Figure(figsize=(7.5, min(max(0.32 * rows + 1.6, 2.6), 16.0)), dpi=110,
                 layout="constrained")
    ax = fig.subplots()
    left = np.zeros(rows)
    y = np.arange(rows)
    for c in cats:
        share = g[c].to_numpy()
        ax.barh(y, share, left=left, color=_CATEGORY_COLOURS[c], label=c, height=0.7)
        for yi, x0, v in zip(y, left, share, strict=True):
            if v >= 0.08:  # the share written in its segment when there is room
                ax.text(x0 + v / 2, yi, f"{v:.0%}", ha="center", va="center", fontsize=8,
                        color="black" if c == "neither" else "white")
        left += share
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("share of system pairs (mean over the other qrels)", fontsize=8)
    ax.set_title("significance decisions against the reference's (metric, test, "
                 "correction)", fontsize=9)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, ncol=5, loc="outside lower center")
    return save_figure(fig, Path(out_dir) / "assessors_decisions.png")


def bump_chart(means: pa.Table, out_dir: Path, metric: str, *, ranks: pa.Table | None = None,
               labels: int = BUMP_LABELS) -> Path:
    """Rank of every system under the reference (first column) and under each other qrels
    (one column each, on the qrels' topics) for one metric, one line per system; the
    `labels` systems with the largest rank move (``|move|`` against the reference on the
    same topics, over all qrels; ties: the better reference rank) are coloured and named
    with that move. The reference column ranks on the topics of the qrels with the most
    topics (from `ranks`, the ``rank_agreement`` table; without it, the first qrels'); a
    qrels on fewer topics shows their number in its label. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> m = pa.table({"qrels": ["a"] * 3 + ["b"] * 3, "metric": ["AP"] * 6,
    ...               "system": ["s", "t", "u"] * 2, "reference_rank": [1, 2, 3] * 2,
    ...               "rank": [1, 3, 2, 2, 1, 3], "move": [0, -1, 1, -1, 1, 0]})
    >>> bump_chart(m, Path(tempfile.mkdtemp()), "AP").name
    'assessors_bump_AP.png'
    """
    df = means.to_pandas()
    df = df[df["metric"] == metric]
    qrels = list(dict.fromkeys(df["qrels"]))
    systems = list(dict.fromkeys(df["system"]))
    topics: dict[str, int] = {}
    if ranks is not None and "topics" in ranks.column_names:
        topics = {q: int(t) for q, m, t in zip(*(ranks.column(c).to_pylist() for c in
                                                 ("qrels", "metric", "topics")), strict=True)
                  if m == metric}
    widest = max(qrels, key=lambda q: topics.get(q, 0))
    part = df[df["qrels"] == widest].set_index("system")
    ref = part["reference_rank"]
    most = topics.get(widest)
    names = ["reference"] + [f"{q} ({topics[q]})" if q in topics and topics[q] < (most or 0)
                             else q for q in qrels]
    grid = df.pivot(index="system", columns="qrels", values="rank").loc[systems, qrels]
    rank = np.column_stack([ref.loc[systems].to_numpy(), grid.to_numpy()]).astype(float)
    moves = df.assign(abs_move=df["move"].abs()).groupby("system")["abs_move"].max()
    order = sorted(systems, key=lambda s: (-int(moves[s]), int(ref[s]), s))
    movers = [s for s in order[:labels] if moves[s] > 0]
    x = np.arange(rank.shape[1])
    n = len(systems)
    fig = Figure(figsize=(max(6.0, 0.32 * len(x) + 4.0), max(4.0, 0.09 * n + 2.5)), dpi=120)
    ax = fig.subplots()
    colours = [f"C{i}" for i in range(10)]
    for i, s in enumerate(systems):
        if s not in movers:
            ax.plot(x, rank[i], color="#ced4da", linewidth=0.6, zorder=1)
    gap = max(1.0, n / 30.0)  # labels at least this many ranks apart
    last, placed = -np.inf, {}
    for s in sorted(movers, key=lambda s: rank[systems.index(s), -1]):
        last = placed[s] = max(rank[systems.index(s), -1], last + gap)
    for k, s in enumerate(movers):
        i = systems.index(s)
        ax.plot(x, rank[i], color=colours[k % 10], linewidth=1.6, marker="o", markersize=2.5,
                zorder=3)
        ax.annotate(f"{s} (±{int(moves[s])})", (x[-1], rank[i, -1]),
                    xytext=(x[-1] + 0.4, placed[s]), textcoords="data", va="center",
                    fontsize=8, color=colours[k % 10], annotation_clip=False)
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize=8)
    ax.set_ylim(n + 0.5, 0.5)
    ax.set_ylabel("rank (1 = best)", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlim(-0.3, x[-1] + 0.3)
    ax.set_title(f"{metric}: system ranks under each qrels; labelled: the {len(movers)} "
                 "largest moves\nagainst the reference on the same topics (±)", fontsize=9)
    fig.tight_layout()
    room = 0.3 + 0.065 * max((len(f"{s} (±{int(moves[s])})") for s in movers), default=0)
    fig.subplots_adjust(right=max(0.6, 1.0 - room / fig.get_figwidth()))
    return save_figure(fig, Path(out_dir) / f"assessors_bump_{safe_name(metric)}.png")


def dstudy_curves(dstudy: pa.Table, gstudy: pa.Table | None, out_dir: Path, *,
                  assessors: tuple[int, ...] = DSTUDY_ASSESSORS) -> Path:
    """E(rho^2) against topics for 1, 2, 3 assessors per topic (solid: a new assessor per
    topic, nested; dashed: the same assessors on every topic, crossed), one panel per
    metric; a dotted line at the G-study's topics. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> d = pa.table({"metric": ["AP"] * 8, "design": ["nested"] * 4 + ["crossed"] * 4,
    ...               "topics": [1, 1, 2, 2] * 2, "assessors": [1, 2] * 4,
    ...               "e_rho2": [0.5, 0.6, 0.7, 0.75, 0.45, 0.55, 0.65, 0.7]})
    >>> dstudy_curves(d, None, Path(tempfile.mkdtemp())).name
    'assessors_dstudy.png'
    """
    df = dstudy.to_pandas()
    df = df[df["assessors"].isin(assessors)]
    metrics = list(dict.fromkeys(df["metric"]))
    observed = None
    if gstudy is not None and gstudy.num_rows:
        observed = int(gstudy.column("topics")[0].as_py())
    cols = min(2, len(metrics))
    rows = math.ceil(len(metrics) / cols)
    fig = Figure(figsize=(3.4 * cols + 1.8, 2.7 * rows + 0.3), dpi=120, layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    styles = {"nested": "-", "crossed": "--"}
    for ax, metric in zip(axes, metrics, strict=False):
        part = df[df["metric"] == metric]
        for design, style in styles.items():
            for k, na in enumerate(assessors):
                line = part[(part["design"] == design) & (part["assessors"] == na)]
                if line.empty:
                    continue
                ax.plot(line["topics"], line["e_rho2"], color=f"C{k}", linestyle=style,
                        linewidth=1.2, label=f"{na} per topic, {design}")
        if observed is not None:
            ax.axvline(observed, color="gray", linestyle=":", linewidth=0.8)
        ax.set_title(metric, fontsize=9)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.tick_params(which="both", labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right upper", fontsize=8,
               title="assessors", title_fontsize=8)
    note = f" (dotted: the G-study's {observed})" if observed else ""
    fig.supxlabel("topics, log scale" + note, fontsize=8)
    fig.supylabel("E(rho^2)", fontsize=8)
    return save_figure(fig, Path(out_dir) / "assessors_dstudy.png")


def simulated_tau(planning: pa.Table, out_dir: Path, *, target: float | None = None
                  ) -> Path:
    """The simulated tau-b distribution against topics: median and 5-95% band, one panel
    per metric, the target as a labelled dotted line. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 2, "correction": ["none"] * 2, "topics": [5, 10],
    ...               "tau_q05": [0.5, 0.7], "tau_q50": [0.7, 0.85], "tau_q95": [0.8, 0.9]})
    >>> simulated_tau(t, Path(tempfile.mkdtemp()), target=0.9).name
    'assessors_simulated_tau.png'
    """
    df = planning.to_pandas()
    df = df[df["correction"] == df["correction"].iloc[0]]
    metrics = list(dict.fromkeys(df["metric"]))
    cols = min(2, len(metrics))
    rows = math.ceil(len(metrics) / cols)
    fig = Figure(figsize=(3.6 * cols + 0.6, 2.6 * rows + 0.7), dpi=110, layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False, sharey=True)).ravel()
    for ax, metric in zip(axes, metrics, strict=False):
        part = df[df["metric"] == metric].sort_values("topics")
        ax.fill_between(part["topics"], part["tau_q05"], part["tau_q95"], color="C0",
                        alpha=0.25, linewidth=0)
        ax.plot(part["topics"], part["tau_q50"], color="C0", marker="o", markersize=3,
                linewidth=1.2)
        if target is not None:
            ax.axhline(target, color="#c92a2a", linestyle=":", linewidth=1.0)
            ax.annotate(f"target {target:g}", (0.02, target), xycoords=("axes fraction", "data"),
                        xytext=(0, 2), textcoords="offset points", fontsize=8,
                        color="#c92a2a", va="bottom")
        ax.set_title(metric, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    fig.supxlabel("topics", fontsize=8)
    fig.supylabel("tau-b, simulated assessor vs reference", fontsize=8)
    fig.suptitle("simulated assessors: median (line) and 5-95% (band) of tau-b", fontsize=9)
    return save_figure(fig, Path(out_dir) / "assessors_simulated_tau.png")


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Label agreement with the reference, rank agreement and decision agreement, with
    their figures.

    Examples
    --------
    >>> import tempfile
    >>> lab = pa.table({"qrels_a": ["nist"], "qrels_b": ["a"], "labels": ["binary"],
    ...                 "statistic": ["kappa"], "topics": [3], "items": [30], "mean": [0.4],
    ...                 "low": [0.2], "high": [0.6], "pooled": [0.41]})
    >>> means = pa.table({"qrels": ["a"] * 2, "metric": ["AP"] * 2, "system": ["s", "t"],
    ...                   "reference_mean": [0.1, 0.2], "mean": [0.1, 0.3],
    ...                   "reference_rank": [2, 1], "rank": [2, 1], "move": [0, 0]})
    >>> ranks = pa.table({"qrels": ["a"], "metric": ["AP"], "topics": [3], "tau_b": [1.0],
    ...                   "tau_b_low": [1.0], "tau_b_high": [1.0], "tau_ap": [1.0],
    ...                   "top1": [True], "top_k_overlap": [1.0], "max_move": [0],
    ...                   "max_mover": ["s"]})
    >>> dec = pa.table({"qrels": ["a"], "metric": ["AP"], "test": ["t"],
    ...                 "correction": ["none"], "pairs": [1], "both": [1], "neither": [0],
    ...                 "lost": [0], "gained": [0], "opposite": [0], "agreement": [1.0],
    ...                 "power_reference": [1.0], "power": [1.0]})
    >>> out = sections({"label_agreement": lab, "system_means": means, "rank_agreement": ranks,
    ...                 "decision_agreement": dec}, Path(tempfile.mkdtemp()))
    >>> out[0]
    '## Whose judgments? Agreement with the reference'
    """
    run_dir = Path(run_dir)
    out = ["## Whose judgments? Agreement with the reference", ""]
    for part in (_label_section, _rank_section, _decision_section, _gstudy_section,
                 _dstudy_section, _simulation_sections, _swap_section):
        out += part(tables, run_dir)
    return out


def _label_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The label agreement table and the kappa heatmap."""
    lab = tables.get("label_agreement")
    if lab is None or not lab.num_rows:
        return []
    df = lab.to_pandas()
    keep = df[df["statistic"].isin(["kappa", "kappa_quadratic", "alpha_ordinal"])]
    cols = [c for c in ("qrels_a", "qrels_b", "labels", "statistic", "topics", "items",
                        "mean", "low", "high", "pooled") if c in keep]
    kappa_heatmap(lab, run_dir)
    return ["### Labels", "",
            "Mean over topics of each per-topic statistic on the passages both judged "
            "(bootstrap-over-topics interval `low`-`high`), and pooled over topics.", "",
            markdown_table(pa.Table.from_pandas(keep[cols], preserve_index=False),
                           max_rows=60), "",
            "![kappa heatmap](assessors_kappa.png)", ""]


def _rank_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The rank agreement table, the system means and the bump charts per metric."""
    ranks = tables.get("rank_agreement")
    if ranks is None or not ranks.num_rows:
        return []
    cols = [c for c in ("qrels", "metric", "topics", "tau_b", "tau_b_low", "tau_b_high",
                        "tau_ap", "top1", "top_k_overlap", "max_move", "max_mover")
            if c in ranks.column_names]
    out = ["### Rankings", "",
           "Kendall's tau-b and tau_AP between the system rankings under the reference "
           "and under each qrels (on the qrels' topics), top-1 / top-k agreement and the "
           "system that moves most.", "",
           markdown_table(ranks.select(cols), max_rows=80), ""]
    means = tables.get("system_means")
    if means is not None:
        for metric in dict.fromkeys(means.column("metric").to_pylist()):
            p = means_panels(means, ranks, run_dir, metric)
            b = bump_chart(means, run_dir, metric, ranks=ranks)
            out += [f"![system means {metric}]({p.name})", "",
                    f"![system ranks {metric}]({b.name})", ""]
    return out


def _decision_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The decision agreement summary over the qrels and its bars."""
    dec = tables.get("decision_agreement")
    if dec is None or not dec.num_rows:
        return []
    df = dec.to_pandas()
    summary = df.groupby(["metric", "test", "correction"], sort=False)[
        ["agreement", "power_reference", "power"]].mean().reset_index()
    shares = df.assign(**{c: df[c] / df["pairs"] for c in ("lost", "gained", "opposite")}
                       ).groupby(["metric", "test", "correction"], sort=False)[
        ["lost", "gained", "opposite"]].mean().reset_index(drop=True)
    summary = pd.concat([summary, shares], axis=1)
    decision_bars(dec, run_dir)
    return ["### Significance decisions", "",
            "Share of system pairs whose decision agrees (significant under both with the "
            "same sign, or under neither), is lost, gained or flips sign, averaged over "
            "the qrels compared; discriminative power under the reference and under the "
            "other qrels.", "",
            markdown_table(pa.Table.from_pandas(summary, preserve_index=False),
                           max_rows=60), "",
            "![decision agreement](assessors_decisions.png)", ""]


def _gstudy_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The G-study's variance components' shares."""
    gs = tables.get("assessor_gstudy")
    if gs is None or not gs.num_rows:
        return []
    df = gs.to_pandas()
    first = df.iloc[0]
    shares = df.pivot(index="component", columns="metric", values="share")
    shares = shares.loc[list(dict.fromkeys(df["component"])),
                        list(dict.fromkeys(df["metric"]))].reset_index()
    out = ["### Reliability with an assessor facet", "",
           f"G-study of {first['systems']} systems x {first['topics']} topics x "
           f"{first['assessors']} assessors ({first['levels']}): each variance "
           "component's share of the total (ANOVA estimators; a negative estimate is "
           "set to 0).", "",
           markdown_table(pa.Table.from_pandas(shares, preserve_index=False)), ""]
    negative = df[df["negative"]]
    if len(negative):
        out += ["Negative estimates set to 0: " + ", ".join(
            f"{m} {c}" for m, c in zip(negative["metric"], negative["component"],
                                       strict=True)) + ".", ""]
    return out


def _dstudy_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The D-study: E(rho^2) with more topics against more assessors per topic."""
    ds = tables.get("assessor_dstudy")
    if ds is None or not ds.num_rows:
        return []
    gs = tables.get("assessor_gstudy")
    df = ds.to_pandas()
    sizes = sorted({t for t in (10, 25, 50, 100) if t <= df["topics"].max()}
                   | ({int(gs.column("topics")[0].as_py())}
                      if gs is not None and gs.num_rows else set()))
    keep = df[(df["design"] == "nested") & df["topics"].isin(sizes)
              & df["assessors"].isin(DSTUDY_ASSESSORS)]
    wide = keep.pivot_table(index=["metric", "topics"], columns="assessors",
                            values="e_rho2", sort=False)
    wide.columns = [f"E(rho^2), {a} per topic" for a in wide.columns]
    dstudy_curves(ds, gs, run_dir)
    return ["D-study (a new assessor per topic, as TREC assigns them): E(rho^2) with "
            "more topics against more assessors per topic.", "",
            markdown_table(pa.Table.from_pandas(wide.reset_index(), preserve_index=False),
                           max_rows=60), "",
            "![D-study](assessors_dstudy.png)", ""]


def _swap_section(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The swap rates per qrels."""
    sw = tables.get("assessor_swap")
    if sw is None or not sw.num_rows:
        return []
    cols = ["qrels", "metric", "topics", "subset_size", "swap_rate", "required_diff",
            "sensitivity"]
    return ["### Swap rates per qrels", "",
            "How often two disjoint halves of a qrels' own topics order a pair of systems "
            "differently (Voorhees and Buckley 2002), and the absolute difference from "
            "which every bin's swap rate is <= 5%.", "",
            markdown_table(sw.select(cols), max_rows=120), ""]


def _simulation_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Known truth by simulation: the validation summary, the planning answer and the tau
    distribution against topics."""
    plan = tables.get("assessor_planning")
    if plan is None or not plan.num_rows:
        return []
    out = ["### Known truth by simulation", ""]
    ans = tables.get("assessor_planning_answer")
    target = None
    if ans is not None and ans.num_rows:
        df = ans.to_pandas()
        target = float(df["tau_target"].iloc[0])
        out += [f"Simulated assessors (P(grade | reference grade), per topic and rank-depth "
                f"bin as configured, fitted from {df['qrels'].iloc[0]}: `assessor_model`): "
                f"the fewest topics with which tau-b >= "
                f"{target:g} (decision agreement of the t test >= "
                f"{df['agreement_target'].iloc[0]:g}) with probability "
                f"{df['probability'].iloc[0]:g}; sizes beyond the collection's topics "
                f"resample them with replacement (topic bootstrap); -1: more topics than the "
                f"largest size tried.", "",
                markdown_table(ans, max_rows=40), ""]
    agr = tables.get("simulated_agreement")
    if agr is not None and agr.num_rows:
        df = agr.to_pandas()
        df = df[df["statistic"].isin(["tau_b", "kappa", "kappa_binary", "agreement"])]
        cols = ["metric", "correction", "statistic", "observed", "mean", "q05", "q95",
                "observed_quantile"]
        out += ["Observed (reference vs the fitted qrels) against the simulated "
                "distribution on all topics (mean, 5% and 95% quantiles, the share of "
                "trials at or below the observed value): the model's validation (with "
                "`simulate_relabel=judged` the observed value should lie inside q05-q95).",
                "",
                markdown_table(pa.Table.from_pandas(df[cols], preserve_index=False),
                               max_rows=60), ""]
    simulated_tau(plan, run_dir, target=target)
    out += ["![simulated tau](assessors_simulated_tau.png)", ""]
    return out
