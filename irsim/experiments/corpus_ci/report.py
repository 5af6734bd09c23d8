"""Report of the corpus-resampling CI study: interval widths, split-corpus validation over
repeated MD5 splits (the spread of the within share against the predicted line), MAP / L-MAP
intervals and the meta-analysis, with the plots of Cormack & Lynam (2006), Figures 1-3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import figure_lines, markdown_table, save_figure

__all__ = ["sections", "normalised_difference_plot", "map_interval_plot", "within_spread_plot",
           "FIGURES"]

#: Figures of this report.
FIGURES = ("corpus_normalised_diff.png", "corpus_within_splits.png",
           "corpus_map_intervals.png")

#: Normalised differences beyond this are drawn in the outermost bins.
CLIP = 4.0


def normalised_difference_plot(split: pa.Table, out_dir: Path, *,
                               direction: str = "A->B") -> list[Path]:
    """Histograms of the normalised ``AP_B - AP_A`` (interval from A mapped to [-1, 1]), one
    panel per method, all lists and ``R > 5`` overlaid; values beyond +-4 go to the edge
    bins. Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"direction": ["A->B"] * 4, "method": ["logit"] * 4,
    ...               "relevant": [2, 8, 9, 10], "normalised": [0.2, -0.5, 7.0, 1.5]})
    >>> [p.name for p in normalised_difference_plot(t, Path(tempfile.mkdtemp()))]
    ['corpus_normalised_diff.png']
    """
    df = split.to_pandas()
    df = df[df["direction"] == direction]
    if df.empty:
        return []
    methods = list(dict.fromkeys(df["method"]))
    cols = min(3, len(methods))
    rows = -(-len(methods) // cols)
    fig = Figure(figsize=(4.3 * cols, 3.3 * rows + 0.5), dpi=120)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    edges = np.linspace(-CLIP, CLIP, 33)
    for ax, method in zip(axes, methods, strict=False):
        part = df[df["method"] == method]
        v = np.clip(part["normalised"].to_numpy(np.float64), -CLIP + 1e-9, CLIP - 1e-9)
        big = part["relevant"].to_numpy() > 5
        ax.hist(v, bins=edges, color="tab:blue", alpha=0.45, label="all lists")
        ax.hist(v[big], bins=edges, histtype="step", color="tab:red", linewidth=1.3,
                label="R > 5")
        ax.axvline(-1, color="black", linestyle="--", linewidth=0.8)
        ax.axvline(1, color="black", linestyle="--", linewidth=0.8)
        label = method.replace("_small_r", " + small-R").replace("_", " ")
        within = f"{float(np.mean(np.abs(v) <= 1)):.1%} within" if len(v) else "no lists"
        ax.set_title(f"{label}: {within}", fontsize=10)
        ax.set_xlabel("normalised AP_B - AP_A (interval = [-1, 1])", fontsize=8)
        ax.set_ylabel("lists", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(methods):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Split-corpus validation ({direction}): where AP of the other half falls "
                 f"(edge bins hold |x| > {CLIP:g})", fontsize=11)
    fig.tight_layout()
    return [save_figure(fig, out_dir / "corpus_normalised_diff.png")]


def within_spread_plot(validation: pa.Table, summary: pa.Table, out_dir: Path
                       ) -> list[Path]:
    """The within share of every split per method (dots; both directions pooled), the mean
    over splits with its t interval (bar) and the predicted share (dashed line), one panel per
    subset. Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> v = pa.table({"split": [0, 0, 1, 1], "method": ["normal"] * 4,
    ...               "subset": ["A->B all", "B->A all"] * 2, "within": [0.8, 0.9, 0.7, 0.8],
    ...               "lists": [10, 10, 10, 10]})
    >>> s = pa.table({"method": ["normal"], "subset": ["all"], "splits": [2],
    ...               "within": [0.8], "within_lo": [0.16], "within_hi": [1.0],
    ...               "predicted_within": [0.834]})
    >>> [p.name for p in within_spread_plot(v, s, Path(tempfile.mkdtemp()))]
    ['corpus_within_splits.png']
    """
    val = validation.to_pandas()
    summ = summary.to_pandas()
    if val.empty or summ.empty:
        return []
    val = val.assign(label=val["subset"].str.split(" ", n=1).str[1],
                     count=val["within"] * val["lists"])
    per_split = val.groupby(["label", "method", "split"], sort=False)[["count", "lists"]].sum()
    per_split = (per_split["count"] / per_split["lists"]).rename("share").reset_index()
    labels = list(dict.fromkeys(summ["subset"]))
    methods = list(dict.fromkeys(summ["method"]))
    fig = Figure(figsize=(max(4.5, 0.85 * len(methods) + 1.5) * len(labels), 4.2), dpi=120)
    axes = np.atleast_1d(fig.subplots(1, len(labels), squeeze=False)).ravel()
    x = np.arange(len(methods))
    for ax, label in zip(axes, labels, strict=True):
        s = summ[summ["subset"] == label].set_index("method").reindex(methods)
        p = per_split[per_split["label"] == label]
        for i, m in enumerate(methods):
            dots = p.loc[p["method"] == m, "share"].to_numpy(np.float64)
            jitter = (np.arange(len(dots)) - (len(dots) - 1) / 2) * (0.3 / max(len(dots), 1))
            ax.plot(i + jitter, dots, "o", color="tab:blue", alpha=0.45, markersize=3.5,
                    label="one split" if i == 0 else None)
        mean = s["within"].to_numpy(np.float64)
        lo = s["within_lo"].to_numpy(np.float64)
        hi = s["within_hi"].to_numpy(np.float64)
        err = np.vstack([mean - lo, hi - mean])
        ax.errorbar(x, mean, yerr=np.where(np.isfinite(err), err, 0.0), fmt="s",
                    color="black", capsize=4, markersize=5,
                    label="mean over splits, t interval")
        pred = s["predicted_within"].dropna()
        if len(pred):
            ax.axhline(float(pred.iloc[0]), color="tab:red", linestyle="--", linewidth=1.0,
                       label=f"predicted {float(pred.iloc[0]):.3f}")
        ax.set_xticks(x)
        ax.set_xticklabels([m.replace("_small_r", "\n+ small-R") for m in methods],
                           fontsize=8)
        splits = int(s["splits"].max()) if len(s) else 0
        ax.set_title(f"subset {label}: {splits} splits", fontsize=10)
        ax.set_ylabel("share of the other half's AP within", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    fig.suptitle("Split-corpus validation over MD5 splits: within share per split, mean and "
                 "its t interval", fontsize=11)
    fig.tight_layout()
    return [save_figure(fig, out_dir / "corpus_within_splits.png")]


def map_interval_plot(map_split: pa.Table, out_dir: Path, *,
                      direction: str = "A->B") -> list[Path]:
    """MAP (parametric) and L-MAP (bootstrap) intervals from one half, runs sorted by the
    estimate: the interval as a bar, the half's value as x and the other half's as o
    (Cormack & Lynam's Figure 3). Returns the PNG paths.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"direction": ["A->B"] * 2, "system": ["a", "b"],
    ...               "measure": ["MAP", "L-MAP"], "method": ["parametric", "bootstrap"],
    ...               "estimate": [0.2, -1.5], "lo": [0.15, -1.8], "hi": [0.25, -1.2],
    ...               "other": [0.22, -1.0]})
    >>> [p.name for p in map_interval_plot(t, Path(tempfile.mkdtemp()))]
    ['corpus_map_intervals.png']
    """
    df = map_split.to_pandas()
    df = df[df["direction"] == direction]
    panels = [("MAP", "parametric"), ("L-MAP", "bootstrap")]
    fig = Figure(figsize=(11, 4.2), dpi=120)
    axes = fig.subplots(1, 2)
    drawn = False
    for ax, (measure, method) in zip(axes, panels, strict=True):
        part = df[(df["measure"] == measure) & (df["method"] == method)]
        part = part[np.isfinite(part["estimate"])].sort_values("estimate")
        if part.empty:
            ax.set_visible(False)
            continue
        drawn = True
        x = np.arange(len(part))
        inside = (part["other"] >= part["lo"]) & (part["other"] <= part["hi"])
        ax.vlines(x, part["lo"], part["hi"], color="grey", linewidth=1.2, label="interval")
        ax.plot(x, part["estimate"], "x", color="tab:blue", markersize=4, label="this half")
        ax.plot(x[inside], part["other"][inside], "o", mfc="none", color="tab:green",
                markersize=4, label="other half (inside)")
        ax.plot(x[~inside], part["other"][~inside], "o", mfc="none", color="tab:red",
                markersize=4, label="other half (outside)")
        ax.set_title(f"{measure} ({method}): {inside.mean():.0%} of the other half inside",
                     fontsize=10)
        ax.set_xlabel("run (sorted by the estimate)")
        # run names, not index numbers (thinned so that at most ~40 labels show)
        step = max(1, int(np.ceil(len(part) / 40)))
        ax.set_xticks(x[::step])
        ax.set_xticklabels([str(s) for s in part["system"].to_numpy()[::step]], rotation=90,
                           fontsize=8)
        ax.set_ylabel(measure + (" (logit units)" if measure == "L-MAP" else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    if not drawn:
        return []
    fig.suptitle(f"MAP / L-MAP intervals from one half of the corpus ({direction})",
                 fontsize=11)
    fig.tight_layout()
    return [save_figure(fig, out_dir / "corpus_map_intervals.png")]


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Interval widths, validation tables, MAP intervals, meta-analysis and the plots.

    Examples
    --------
    >>> import tempfile
    >>> ci = pa.table({"system": ["a", "a"], "topic": ["1", "2"], "ap": [0.2, 0.4],
    ...                "lo": [0.1, 0.3], "hi": [0.3, 0.5], "method": ["logit"] * 2,
    ...                "relevant": [3, 9]})
    >>> sections({"corpus_ci": ci}, Path(tempfile.mkdtemp()))[2]
    '1 runs x 2 topics with a relevant document (2 ranked lists; R from 3 to 9).'
    """
    run_dir = Path(run_dir)
    lines: list[str] = ["## Corpus-resampling confidence intervals for AP", ""]
    if "corpus_ci" in tables:
        ci = tables["corpus_ci"].to_pandas()
        first = ci[ci.method == ci.method.iloc[0]]
        lines += [f"{first.system.nunique()} runs x {first.topic.nunique()} topics with a "
                  f"relevant document ({len(first)} ranked lists; R from "
                  f"{int(first.relevant.min())} to {int(first.relevant.max())}).", ""]
        summ = ci.assign(width=ci.hi - ci.lo).groupby("method", sort=False).agg(
            lists=("ap", "size"), mean_ap=("ap", "mean"), mean_width=("width", "mean"))
        lines += ["Intervals per run x topic (`results/corpus_ci.parquet`) at the level "
                  "configured; `_small_r`: with the silver-bullet / lead-balloon correction. "
                  "Mean width by method:", "",
                  markdown_table(pa.Table.from_pandas(summ.reset_index())), ""]
    if "corpus_validation" in tables:
        lines += ["### Split-corpus validation", "",
                  "Intervals from one half of the corpus (documents split by MD5 of the "
                  "docno), AP of the other half above / within / below (a value equal to a "
                  "bound counts as within, for every method; `logit` compares the other "
                  "half's AP clamped to [1e-5, 1 - 1e-5], the scale of its interval). The "
                  "parametric model predicts `predicted_within` (2 Phi(z/sqrt 2) - 1 = 0.834 "
                  "at 95%) and equal shares above and below (Cormack & Lynam's Tables 1-2: "
                  "logit with the small-R correction 8.5% / 83.6% / 7.9%).", ""]
        summary = tables.get("corpus_validation_summary")
        if summary is not None and summary.num_rows:
            rel = summary.column("rel")[0].as_py()
            splits = int(max(summary.column("splits").to_pylist()))
            lines += [f"Relevant documents: grade >= {rel} (`experiment.rel`). "
                      f"{splits} MD5 split(s): split 0 is the paper's rule (first bit of "
                      "MD5(docno)), the others hash a salted docno (salts in manifest.json).",
                      "",
                      "One split is one draw, not evidence: all runs share each topic's "
                      "split, so a split holds about as many independent samples as topics "
                      "and its within share moves by a few points from split to split. Read "
                      "the mean over splits, its sd (`within_sd`) and its t interval "
                      "(`within_lo`, `within_hi`, level 1 - alpha): an interval method is off "
                      "when `predicted_within` lies outside that interval "
                      "(`results/corpus_validation_summary.parquet`; both directions pooled "
                      "per split).", "",
                      markdown_table(summary.select(
                          ["method", "subset", "splits", "within", "within_sd", "within_lo",
                           "within_hi", "above", "below", "predicted_within", "lists", "rel"]),
                          max_rows=40), ""]
            lines += figure_lines(within_spread_plot(tables["corpus_validation"], summary, run_dir))
            lines += ["Per split and direction (`results/corpus_validation.parquet`), first "
                      "rows:", ""]
        lines += [markdown_table(tables["corpus_validation"], max_rows=48), ""]
        for path in normalised_difference_plot(tables["corpus_split"], run_dir):
            lines += ["Where the other half's AP falls, split 0:", "", *figure_lines([path])]
    if "corpus_map_validation" in tables:
        lines += ["### MAP and L-MAP", "",
                  "Intervals for MAP and L-MAP (mean logit AP) by the corpus bootstrap and by "
                  "the parametric delta method, validated on the halves (the paper's Tables "
                  "3-4).", "", markdown_table(tables["corpus_map_validation"]), ""]
        lines += figure_lines(map_interval_plot(tables["corpus_map_split"], run_dir))
    if "corpus_meta" in tables:
        meta = tables["corpus_meta"]
        lines += ["### Meta-analysis of logit(AP_x) - logit(AP_y)", "",
                  "Per system pair, topics combined as separate experiments (fixed effect and "
                  "DerSimonian-Laird random effects); first rows:", "",
                  markdown_table(meta, max_rows=12), ""]
    return lines
