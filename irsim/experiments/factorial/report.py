"""Report of ``experiment=factorial``: per metric, how many pairs each design calls
significant, the ANOVA terms with their effect sizes, the variance components, and three
figures (significant pairs per design, effect sizes with intervals, the interaction plot of
systems across shards)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from irsim.report import fmt, markdown_table, safe_name, save_figure

__all__ = ["sections", "FIGURES", "pairs_plot", "effects_plot", "interaction_plot",
           "truth_plot"]

FIGURES = ("factorial_pairs_<metric>.png", "factorial_effects_<metric>.png",
           "factorial_interaction_<metric>.png", "factorial_truth_<metric>.png")

#: Systems drawn in the interaction plot (spread evenly over the ranking of the whole
#: collection's means; all of them when there are at most this many).
INTERACTION_SYSTEMS = 12


def _label(design: str, model: object, method: str) -> str:
    return " / ".join(str(v) for v in (design, model, method) if v is not None and v == v)


def pairs_plot(df, metric: str, path: Path) -> Path:
    """Bars: the pairs each (design, model, method) calls significant. Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> df = pd.DataFrame({"design": ["two_way", "replicated"], "model": ["fixed", None],
    ...                    "method": ["tukey", "randomised_tukey"], "pairs": [6, 6],
    ...                    "significant": [2, 4]})
    >>> pairs_plot(df, "AP", Path(tempfile.mkdtemp()) / "p.png").name
    'p.png'
    """
    from matplotlib.figure import Figure

    labels = [_label(d, m, t) for d, m, t in zip(df.design, df.model, df.method, strict=True)]
    fig = Figure(figsize=(6.4, 0.3 * len(labels) + 1.4), dpi=110, layout="constrained")
    ax = fig.subplots()
    ys = np.arange(len(labels))[::-1]
    colours = [f"C{['two_way', 'replicated', 'crossed'].index(d) % 10}" if d in (
        "two_way", "replicated", "crossed") else "C3" for d in df.design]
    ax.barh(ys, df.significant, color=colours)
    for y, s in zip(ys, df.significant, strict=True):
        ax.text(s, y, f" {int(s)}", va="center", fontsize=8)
    ax.set_yticks(ys, labels, fontsize=8)
    total = int(df.pairs.iloc[0]) if len(df) else 0
    ax.set_xlim(0, max(total, 1) * 1.08)
    ax.set_xlabel(f"{metric}: significant pairs of {total}", fontsize=9)
    ax.set_title(f"{metric}: pairs called significant per design", fontsize=10)
    return save_figure(fig, path)


def effects_plot(df, metric: str, path: Path) -> Path:
    """Partial omega squared of every term but the residual, with its interval, one row per
    (design, model, term). Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> df = pd.DataFrame({"design": ["two_way"] * 2, "model": ["fixed"] * 2,
    ...                    "term": ["system", "topic"], "partial_omega2": [0.3, 0.6],
    ...                    "partial_omega2_lo": [0.2, 0.5], "partial_omega2_hi": [0.4, 0.7]})
    >>> effects_plot(df, "AP", Path(tempfile.mkdtemp()) / "e.png").name
    'e.png'
    """
    from matplotlib.figure import Figure

    df = df[df.term != "residual"]
    labels = [f"{d} / {m}: {t}" for d, m, t in zip(df.design, df.model, df.term, strict=True)]
    fig = Figure(figsize=(6.4, 0.24 * len(labels) + 1.4), dpi=110, layout="constrained")
    ax = fig.subplots()
    ys = np.arange(len(labels))[::-1]
    est = df.partial_omega2.to_numpy(float)
    lo = np.nan_to_num(est - df.partial_omega2_lo.to_numpy(float), nan=0.0).clip(0)
    hi = np.nan_to_num(df.partial_omega2_hi.to_numpy(float) - est, nan=0.0).clip(0)
    ax.errorbar(est, ys, xerr=[lo, hi], fmt="o", color="C0", capsize=3, markersize=4)
    ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel(f"{metric}: partial omega squared (noncentral-F interval)", fontsize=9)
    ax.set_title(f"{metric}: effect sizes per design and model", fontsize=10)
    return save_figure(fig, path)


def interaction_plot(df, metric: str, path: Path) -> Path:
    """Mean of each system on each replicate (lines; at most :data:`INTERACTION_SYSTEMS`,
    spread over the two-way table's ranking): crossing lines are the system x replicate
    interaction. Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> df = pd.DataFrame({"system": ["a", "a", "a", "b", "b", "b"],
    ...                    "replicate": [None, "0", "1", None, "0", "1"],
    ...                    "mean": [0.3, 0.2, 0.4, 0.2, 0.25, 0.15]})
    >>> interaction_plot(df, "AP", Path(tempfile.mkdtemp()) / "i.png").name
    'i.png'
    """
    from matplotlib.figure import Figure

    whole = df[df["replicate"].isna()].sort_values("mean", ascending=False)
    systems = list(whole.system)
    if len(systems) > INTERACTION_SYSTEMS:
        pick = np.linspace(0, len(systems) - 1, INTERACTION_SYSTEMS).round().astype(int)
        systems = [systems[i] for i in pick]
    part = df[df["replicate"].notna()]
    labels = list(dict.fromkeys(part["replicate"]))
    fig = Figure(figsize=(7.4, 4.2), dpi=110, layout="constrained")
    ax = fig.subplots()
    for i, s in enumerate(systems):
        rows = part[part.system == s].set_index("replicate").reindex(labels)
        ax.plot(range(len(labels)), rows["mean"], marker="o", ms=3, lw=1,
                color=f"C{i % 10}", label=str(s))
    ax.set_xticks(range(len(labels)), labels, fontsize=8,
                  rotation=0 if max(map(len, labels), default=0) < 4 else 30)
    ax.set_xlabel("replicate", fontsize=9)
    ax.set_ylabel(f"mean {metric}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(f"{metric}: systems across replicates (system x replicate interaction)",
                 fontsize=10)
    return save_figure(fig, path)


def truth_plot(df, metric: str, alpha: float | None, path: Path) -> Path:
    """Family-wise error against power of every method on the simulated collections, with
    their intervals; the level alpha marked. Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> df = pd.DataFrame({"method": ["two_way", "replicated_fixed"], "fwer": [0.04, 0.3],
    ...                    "fwer_lo": [0.03, 0.27], "fwer_hi": [0.05, 0.33],
    ...                    "power": [0.6, 0.9], "power_lo": [0.57, 0.88],
    ...                    "power_hi": [0.63, 0.92]})
    >>> truth_plot(df, "AP", 0.05, Path(tempfile.mkdtemp()) / "t.png").name
    't.png'
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=110, layout="constrained")
    ax = fig.subplots()
    for i, row in enumerate(df.itertuples()):
        ax.errorbar([row.fwer], [row.power],
                    xerr=[[max(row.fwer - row.fwer_lo, 0)], [max(row.fwer_hi - row.fwer, 0)]],
                    yerr=[[max(row.power - row.power_lo, 0)],
                          [max(row.power_hi - row.power, 0)]],
                    fmt="o", color=f"C{i % 10}", capsize=3, label=str(row.method))
    if alpha is not None:
        ax.axvline(alpha, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("family-wise error (simulated, known truth)", fontsize=9)
    ax.set_ylabel("power", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    ax.set_title(f"{metric}: error and power on collections like this one", fontsize=10)
    return save_figure(fig, path)


def _rate_text(df, name: str) -> list[str]:
    return [f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]" for v, lo, hi in zip(
        df[name], df[f"{name}_lo"], df[f"{name}_hi"], strict=True)]


def _truth_lines(truth, split, metric: str, run_dir: Path) -> list[str]:
    lines: list[str] = []
    t = truth[truth.metric == metric] if truth is not None else None
    if t is not None and len(t):
        lines += [f"Known truth: {int(t.trials.iloc[0])} simulated collections with this "
                  f"collection's variance components, {int(t.systems.iloc[0])} systems, "
                  f"{int(t.null_pairs.iloc[0])} null pairs, tests at alpha "
                  f"{fmt(t.alpha.iloc[0])}:", "",
                  markdown_table(pa.table({"method": t.method.tolist(),
                                           "FWER": _rate_text(t, "fwer"),
                                           "power": _rate_text(t, "power"),
                                           "type S": _rate_text(t, "type_s")})), ""]
        name = f"factorial_truth_{safe_name(metric)}.png"
        truth_plot(t, metric, float(t.alpha.iloc[0]), run_dir / name)
        lines += [f"![{metric}]({name})", ""]
    s = split[split.metric == metric] if split is not None else None
    if s is not None and len(s):
        lines += [f"Split halves ({int(s.trials.iloc[0])} random splits of the topics): "
                  "how often both halves agree.", "",
                  markdown_table(pa.table({"design": s.design.tolist(),
                                           "model": s.model.tolist(),
                                           "system effect": _rate_text(s, "system_agree"),
                                           "pair decisions": _rate_text(s, "pair_agree")})),
                  ""]
    return lines


def _anova_summary(df) -> pa.Table:
    keep = df[df.term != "residual"]
    return pa.table({
        "design": keep.design.tolist(), "model": keep.model.tolist(),
        "term": keep.term.tolist(), "df": [fmt(v) for v in keep.df],
        "F": [fmt(v) for v in keep.f], "p": [fmt(v) for v in keep.p_value],
        "error": keep.error.tolist(),
        "partial omega2 [interval]": [
            f"{fmt(e)} [{fmt(lo)}, {fmt(hi)}]" for e, lo, hi in zip(
                keep.partial_omega2, keep.partial_omega2_lo, keep.partial_omega2_hi,
                strict=True)]})


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Per metric: the significant pairs per design, the ANOVA terms with effect sizes, the
    variance components and the three figures.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"], "design": ["two_way"], "model": ["fixed"],
    ...               "method": ["tukey"], "replicates": [1], "pairs": [3],
    ...               "significant": [1], "share": [1 / 3]})
    >>> sections({"factorial_significant": t}, Path(tempfile.mkdtemp()))[0]
    '## Designs with many factors'
    """
    if "factorial_significant" not in tables:
        return []
    sig = tables["factorial_significant"].to_pandas()
    get = {n: tables[n].to_pandas() for n in (
        "factorial_anova", "factorial_components", "factorial_means", "factorial_truth",
        "factorial_split_half") if n in tables}
    lines = ["## Designs with many factors", "",
             "Pairs of systems each design, model and method calls significant on the same "
             "runs: `two_way` is the whole collection (one score per system and topic), "
             "`replicated` and `crossed` use the document shards as replicates (Voorhees, "
             "Samarov & Soboroff 2017). Under `fixed` every term is tested against the "
             "residual; under `mixed` the system effect is tested against the interaction it "
             "generalises over, which is what a claim about other topics and shards needs.",
             ""]
    for metric, part in sig.groupby("metric", sort=False):
        m, safe = str(metric), safe_name(str(metric))
        lines += [f"### {m}", "", markdown_table(pa.Table.from_pandas(
            part.drop(columns="metric"), preserve_index=False)), ""]
        figs = [(f"factorial_pairs_{safe}.png", pairs_plot, part)]
        if "factorial_anova" in get:
            a = get["factorial_anova"][get["factorial_anova"].metric == metric]
            lines += [markdown_table(_anova_summary(a), max_rows=60), ""]
            figs.append((f"factorial_effects_{safe}.png", effects_plot, a))
        if "factorial_components" in get:
            c = get["factorial_components"]
            c = c[c.metric == metric].drop(columns="metric")
            lines += ["REML variance components (mixed model):", "",
                      markdown_table(pa.Table.from_pandas(c, preserve_index=False)), ""]
        if "factorial_means" in get:
            mm = get["factorial_means"]
            figs.append((f"factorial_interaction_{safe}.png", interaction_plot,
                         mm[mm.metric == metric]))
        for name, draw, frame in figs:
            draw(frame, m, run_dir / name)
            lines += [f"![{m}]({name})", ""]
        lines += _truth_lines(get.get("factorial_truth"), get.get("factorial_split_half"), m,
                              run_dir)
    return lines
