"""Report of the budget study: the planning answer in one sentence and its table, then per
proxy three figures against the gold judgments spent (coverage with the nominal line,
interval width, decision agreement with full gold judging), one panel per unit and
metric, one line per estimator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.experiments.budget.kernel import ESTIMATORS
from irsim.report import markdown_table, safe_name, save_figure

__all__ = ["sections", "recommendation", "budget_figure", "FIGURES"]

#: Figures of this report (one of each per proxy).
FIGURES = ("budget_coverage_<proxy>.png", "budget_width_<proxy>.png",
           "budget_agreement_<proxy>.png")

_COLOURS = dict(zip(ESTIMATORS, ("#868e96", "#1971c2", "#e8590c", "#2b8a3e", "#9c36b5"),
                    strict=True))
_WHAT = {"coverage": ("coverage of the intervals", "budget_intervals"),
         "width": ("mean width of the intervals", "budget_intervals"),
         "agreement": ("decision agreement with full gold", "budget_decisions")}


def recommendation(planning: pa.Table, target: float | None = None) -> str:
    """One sentence: which estimator to use at which budget on these data.

    Examples
    --------
    >>> t = pa.table({"proxy": ["llm", "llm"], "unit": ["topics", "topics"],
    ...               "metric": ["AP", "AP"], "estimator": ["gold", "ppi"],
    ...               "budget": [0.75, 0.5], "n": [32, 22], "judgments": [6000.0, 4100.0],
    ...               "cost_ratio": [1.0, 1.4], "recommended": [False, True]})
    >>> print(recommendation(t))  # doctest: +NORMALIZE_WHITESPACE
    With proxy llm: for AP, ppi on topics from budget 0.5 (22 units, 4100 gold judgments;
    gold alone needs 1.4 times as many for the same width).
    """
    df = planning.to_pandas()
    if df.empty:
        return "No estimator was studied."
    parts = []
    for proxy, g in df.groupby("proxy", sort=False):
        rec = g[g["recommended"]]
        said = []
        for _, r in rec.iterrows():
            ratio = (f"; gold alone needs {r['cost_ratio']:.2g} times as many for the same "
                     f"width" if np.isfinite(r["cost_ratio"]) and r["estimator"] != "gold"
                     else "")
            said.append(f"for {r['metric']}, {r['estimator']} on {r['unit']} from budget "
                        f"{r['budget']:g} ({int(r['n'])} units, {r['judgments']:.0f} gold "
                        f"judgments{ratio})")
        missing = [m for m in dict.fromkeys(g["metric"]) if m not in set(rec["metric"])]
        if missing:
            said.append(f"for {', '.join(missing)} no estimator met the targets at the "
                        f"budgets tried (honest intervals and decision agreement"
                        f"{'' if target is None else f' >= {target:g}'}): judge more, or "
                        f"all of it")
        parts.append(f"With proxy {proxy}: " + "; ".join(said) + ".")
    return " ".join(parts)


def budget_figure(tables: dict[str, pa.Table], out_dir: Path, proxy: str, what: str,
                  correction: str | None = None) -> Path:
    """One figure per proxy and quantity (`what`: coverage, width or agreement) against
    the gold judgments spent: a panel per unit and metric, a line per estimator (the
    proxy alone, which spends none, as a horizontal dashed line). Coverage: means solid,
    differences dotted, the nominal level labelled. Returns the PNG path.

    Examples
    --------
    >>> import tempfile
    >>> rows = [{"proxy": "p", "unit": "topics", "metric": "AP", "budget": b,
    ...          "judgments": j, "estimator": e, "target": t, "coverage": c,
    ...          "nominal": 0.95, "width": 0.1}
    ...         for b, j in ((0.2, 100.0), (0.5, 250.0)) for e in ("gold", "ppi")
    ...         for t, c in (("mean", 0.94), ("difference", 0.95))]
    >>> p = budget_figure({"budget_intervals": pa.Table.from_pylist(rows)},
    ...                   Path(tempfile.mkdtemp()), "p", "coverage")
    >>> p.name
    'budget_coverage_p.png'
    """
    label, name = _WHAT[what]
    df = tables[name].to_pandas()
    df = df[df["proxy"] == proxy]
    if what == "agreement":
        correction = correction or str(df["correction"].iloc[0])
        df = df[df["correction"] == correction]
    if what in ("coverage", "width"):
        df = df[(df["target"] == "mean") | (what == "coverage")]
    units = list(dict.fromkeys(df["unit"]))
    metrics = list(dict.fromkeys(df["metric"]))
    fig = Figure(figsize=(max(6.0, 3.0 * len(metrics)), 2.6 * len(units) + 0.9), dpi=120)
    axes = np.atleast_2d(fig.subplots(len(units), len(metrics), squeeze=False,
                                      sharey=what != "width"))
    for i, unit in enumerate(units):
        for k, metric in enumerate(metrics):
            ax = axes[i, k]
            cell = df[(df["unit"] == unit) & (df["metric"] == metric)]
            if cell.empty:
                ax.set_axis_off()
                ax.text(0.5, 0.5, f"{metric}: not linear in the labels,\nstudied by topics "
                        "only", ha="center", va="center", fontsize=8, transform=ax.transAxes)
                continue
            _panel(ax, cell, what)
            ax.set_title(f"{metric}, people judge {unit}", fontsize=9)
            ax.tick_params(labelsize=8)
            if i == len(units) - 1:
                ax.set_xlabel("gold judgments", fontsize=8)
            if k == 0:
                ax.set_ylabel(label, fontsize=8)
    handles = [ax.plot([], [], color=_COLOURS[e], label=e)[0] for e in ESTIMATORS
               if e in set(df["estimator"])]
    if what == "coverage":
        handles += [axes[0, 0].plot([], [], color="black", ls=":", label="differences")[0],
                    axes[0, 0].plot([], [], color="black", ls="-", label="means")[0]]
    ncol = min(len(handles), 4)
    legend_rows = -(-len(handles) // ncol)
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    title = {"agreement": f"{label} ({correction})"}.get(what, label)
    fig.suptitle(f"{title}: proxy {proxy}", fontsize=10)
    fig.tight_layout(rect=(0, (0.25 * legend_rows + 0.1) / fig.get_figheight(), 1, 1))
    return save_figure(fig, Path(out_dir) / f"budget_{what}_{safe_name(proxy)}.png")


def _panel(ax, cell: pd.DataFrame, what: str) -> None:
    for est in ESTIMATORS:
        rows = cell[cell["estimator"] == est]
        if rows.empty:
            continue
        styles = ((("mean", "-"), ("difference", ":")) if what == "coverage"
                  else ((None, "-"),))
        for target, ls in styles:
            r = rows if target is None else rows[rows["target"] == target]
            y = r[what].to_numpy(float)
            if est == "proxy":  # spends no gold judgments: the same in every budget
                ax.axhline(float(np.nanmean(y)), color=_COLOURS[est], ls="--" if ls == "-"
                           else ls, lw=1.2)
                continue
            ax.plot(r["judgments"], y, color=_COLOURS[est], ls=ls, marker="o",
                    ms=3 if len(r) > 1 else 5, lw=1.2)
    if what == "coverage":
        nominal = float(cell["nominal"].iloc[0])
        ax.axhline(nominal, color="black", lw=0.8)
        ax.annotate(f"nominal {nominal:g}", (0.02, nominal), xycoords=("axes fraction",
                                                                      "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=8)
        ax.set_ylim(max(0.0, min(0.5, float(np.nanmin(cell["coverage"])) - 0.05)), 1.01)
    elif what == "agreement":
        ax.set_ylim(0.0, 1.01)


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """The planning answer (a sentence and its table), then per proxy the coverage, width
    and decision-agreement figures with the tables' key rows.

    Examples
    --------
    >>> import tempfile
    >>> plan = pa.table({"proxy": ["p"], "unit": ["topics"], "metric": ["AP"],
    ...                  "estimator": ["ppi"], "budget": [0.5], "n": [5],
    ...                  "judgments": [50.0], "cost_ratio": [1.5], "recommended": [True]})
    >>> sections({"budget_planning": plan}, Path(tempfile.mkdtemp()))[0]
    '## Judging on a budget: which estimator, at which budget'
    """
    run_dir = Path(run_dir)
    out = ["## Judging on a budget: which estimator, at which budget", ""]
    plan = tables.get("budget_planning")
    if plan is None:
        return []
    out += [recommendation(plan), "",
            "The smallest budget at which each estimator's intervals (means and "
            "differences) are honest (coverage not significantly below the nominal level) "
            "and its significance decisions agree with full gold judging at the target "
            "rate; `cost_ratio`: gold judgments the gold-only estimator needs for the same "
            "width, per gold judgment spent.", "",
            markdown_table(plan, max_rows=80), ""]
    intervals = tables.get("budget_intervals")
    decisions = tables.get("budget_decisions")
    if intervals is None or decisions is None or not intervals.num_rows:
        return out
    for proxy in dict.fromkeys(intervals.column("proxy").to_pylist()):
        out += [f"### Proxy `{proxy}`", ""]
        for what in ("coverage", "width", "agreement"):
            p = budget_figure(tables, run_dir, proxy, what)
            out += [f"![{what} against budget, proxy {proxy}]({p.name})", ""]
    df = intervals.to_pandas()
    keep = df[df["target"] == "difference"][
        ["proxy", "unit", "metric", "budget", "estimator", "coverage", "coverage_low",
         "coverage_high", "width", "rmse"]]
    out += ["### Intervals for the pairwise differences", "",
            markdown_table(pa.Table.from_pandas(keep, preserve_index=False), max_rows=60), ""]
    return out
