"""The budget study's tables: their specs and how the trials' records become them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from irsim.experiments.budget.kernel import ESTIMATORS, Layout
from irsim.experiments.budget.prepare import BudgetData
from irsim.stats.decisions import CATEGORIES
from irsim.tables import Column, TableSpec, table

__all__ = ["TABLE_SPECS", "finalize_tables"]

_S, _F, _I, _B = pa.string(), pa.float64(), pa.int64(), pa.bool_()


def _c(name: str, typ: pa.DataType, meaning: str) -> Column:
    return Column(name, typ, meaning)


_KEYS = (
    _c("proxy", _S, "the proxy qrels (a qrels name, or `votes`: the automatic judge from "
                    "the runs)"),
    _c("unit", _S, "what people label: `topics` (whole topics, every metric) or "
                   "`judgments` ((topic, document) pairs of the pool, metrics linear in the "
                   "labels only)"),
    _c("metric", _S, "the metric"),
    _c("budget", _F, "the budget as given (`experiment.budgets`): a share of the unit's pool "
                     "(<= 1) or a number of gold judgments (> 1)"),
    _c("n", _I, "units people label: topics, or judgments"),
    _c("judgments", _F, "gold judgments this costs: `n` for the judgments unit; for the "
                        "topics unit `n` times the mean number of gold judgments of a topic "
                        "(0 for `proxy`)"),
    _c("estimator", _S, "`proxy` (the proxy's qrels alone), `gold` (the gold sample alone), "
                        "`ppi` (prediction-powered: the proxy corrected by the sample), "
                        "`ppi_pp` (PPI++: the proxy weighted by the tuned lambda), "
                        "`stratified` (PPI per stratum with a tuned lambda, Neyman "
                        "allocation from a pilot)"),
)

BUDGET_INTERVALS = TableSpec(
    "budget_intervals", ("budget",),
    "Confidence intervals for the full-gold system means and pairwise differences, per "
    "estimator and budget, over the trials: coverage with its Monte Carlo band, width, "
    "bias and RMSE.",
    (*_KEYS,
     _c("target", _S, "`mean` (each system's mean) or `difference` (every pair a - b)"),
     _c("trials", _I, "trials in which the estimator is defined (the stratified one needs 2 "
                      "units per stratum)"),
     _c("nominal", _F, "nominal coverage, 1 - `experiment.alpha`"),
     _c("coverage", _F, "share of intervals (over the trials and the systems or pairs) that "
                        "contain the full-gold value"),
     _c("coverage_low", _F, "lower end of the 95% Monte Carlo band of `coverage` (normal, "
                            "over the trials' coverage shares)"),
     _c("coverage_high", _F, "upper end of that band"),
     _c("honest", _B, "`coverage_high` >= `nominal` - `experiment.coverage_tolerance`: "
                      "the observed coverage is not significantly below the promise (up "
                      "to the tolerance)"),
     _c("width", _F, "mean width of the intervals"),
     _c("bias", _F, "mean of estimate - truth over the trials and items"),
     _c("abs_bias", _F, "`mean`: mean over the systems of |mean error over the trials| (a "
                        "systematic error cancels in `bias` but not here); `difference`: "
                        "NaN"),
     _c("rmse", _F, "root mean squared error over the trials and items")))

BUDGET_DECISIONS = TableSpec(
    "budget_decisions", ("budget",),
    "Significance decisions on every pair of systems from each estimator (a t test on its "
    "estimate and variance, with each correction), against the full-gold decisions (the "
    "paired t test on all topics under the gold qrels): mean counts per trial.",
    (*_KEYS,
     _c("correction", _S, "multiple-comparison correction over all pairs"),
     *(_c(cat, _F, {"both": "pairs significant under full gold and the estimate, same sign",
                    "neither": "pairs significant under neither",
                    "lost": "pairs significant under full gold only",
                    "gained": "pairs significant under the estimate only (false "
                              "discoveries with respect to full gold)",
                    "opposite": "pairs significant under both with opposite signs"}[cat])
       for cat in CATEGORIES),
     _c("agreement", _F, "(both + neither) / pairs: the share of decisions full gold "
                         "judging would also take"),
     _c("significant", _F, "pairs the estimate calls significant"),
     _c("reference", _I, "pairs full gold judging calls significant")))

BUDGET_RANKING = TableSpec(
    "budget_ranking", ("budget",),
    "How the systems' ranking by each estimate agrees with the full-gold ranking.",
    (*_KEYS,
     _c("tau_b", _F, "Kendall's tau-b with the full-gold means, mean over the trials"),
     _c("tau_b_p05", _F, "5th percentile of tau-b over the trials"),
     _c("tau_ap", _F, "tau_AP (Yilmaz et al. 2008) with the full-gold ranking as the "
                      "reference, mean over the trials")))

BUDGET_PLANNING = TableSpec(
    "budget_planning", ("budget",),
    "The planning answer: per proxy, metric, unit and estimator, the smallest budget whose "
    "intervals for the means and the differences are honest (up to "
    "`experiment.coverage_tolerance`) and whose decisions agree with "
    "full gold judging at `experiment.agreement_target` (first correction of "
    "`experiment.corrections`), and what it saves against gold judgments alone.",
    (_KEYS[0], _KEYS[1], _KEYS[2], _KEYS[6],
     _c("budget", _F, "the smallest such budget (NaN: none of the budgets)"),
     _c("n", _I, "its units (0 when none)"),
     _c("judgments", _F, "its gold judgments"),
     _c("coverage_mean", _F, "coverage of the means' intervals there"),
     _c("coverage_difference", _F, "coverage of the differences' intervals there"),
     _c("agreement", _F, "decision agreement there"),
     _c("width", _F, "mean width of the means' intervals there"),
     _c("gold_equivalent", _F, "gold judgments the gold-only estimator would need for the "
                               "same width (design variance (1 - n/N) S^2 / n)"),
     _c("cost_ratio", _F, "`gold_equivalent / judgments`: how many times the judgments "
                          "gold alone needs for the same precision"),
     _c("recommended", _B, "the estimator and unit with the fewest gold judgments that "
                           "meet the targets (among those, the narrowest intervals), per "
                           "proxy and metric")))

TABLE_SPECS = {s.name: s for s in (BUDGET_INTERVALS, BUDGET_DECISIONS, BUDGET_RANKING,
                                    BUDGET_PLANNING)}


def _band(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% normal band of the mean of `x` (NaN dropped)."""
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return np.nan, np.nan, np.nan
    m = float(x.mean())
    h = 1.959963984540054 * float(x.std(ddof=1)) / np.sqrt(len(x)) if len(x) > 1 else 0.0
    return m, m - h, m + h


def finalize_tables(record: np.ndarray, errors: np.ndarray, data: BudgetData, *,
                    alpha: float, corrections: tuple[str, ...], agreement_target: float,
                    coverage_tolerance: float = 0.0
                    ) -> dict[str, pa.Table]:
    """The four tables from the trials' records (trials, configs, J, M, E, K) and the
    systems' summed errors (configs, J, M, E, S)."""
    lay = Layout(len(corrections))
    U, B = data.budgets.shape
    S = len(data.systems)
    P = S * (S - 1) // 2
    cost = data.topic_cost.mean()
    intervals, decisions, ranking = [], [], []
    for u, unit in enumerate(data.units):
        for b in range(B):
            n = int(data.budgets[u, b])
            c = u * B + b
            for j, proxy in enumerate(data.proxies):
                for m, metric in enumerate(data.metrics):
                    ref = data.ref_reject[m]
                    for e, est in enumerate(ESTIMATORS):
                        rec = record[:, c, j, m, e]
                        ok = rec[:, lay.DEFINED] == 1.0
                        if not ok.any():
                            continue
                        rec = rec[ok]
                        keys = {"proxy": proxy, "unit": unit, "metric": metric,
                                "budget": data.given[b], "n": 0 if est == "proxy" else n,
                                "judgments": 0.0 if est == "proxy" else (
                                    n * cost if unit == "topics" else float(n)),
                                "estimator": est}
                        for t, target in enumerate(("mean", "difference")):
                            cov, lo, hi = _band(rec[:, lay.stat(t, "coverage")])
                            intervals.append({
                                **keys, "target": target, "trials": int(ok.sum()),
                                "nominal": 1 - alpha, "coverage": cov, "coverage_low": lo,
                                "coverage_high": hi,
                                "honest": bool(hi >= 1 - alpha - coverage_tolerance - 1e-12),
                                "width": float(rec[:, lay.stat(t, "width")].mean()),
                                "bias": float(rec[:, lay.stat(t, "error")].mean()),
                                "abs_bias": (float(np.abs(errors[c, j, m, e]).mean()
                                                   / ok.sum()) if t == 0 else np.nan),
                                "rmse": float(np.sqrt(rec[:, lay.stat(t, "sq_error")]
                                                      .mean()))})
                        for k, corr in enumerate(corrections):
                            cats = rec[:, lay.decisions(k)]
                            row = dict(zip(CATEGORIES, cats.mean(axis=0).tolist(),
                                           strict=True))
                            decisions.append({
                                **keys, "correction": corr, **row,
                                "agreement": float(((cats[:, 0] + cats[:, 1]) / P).mean()),
                                "significant": float((cats[:, 0] + cats[:, 3] + cats[:, 4])
                                                     .mean()),
                                "reference": int(ref[k].sum())})
                        tb = rec[:, lay.TAU_B]
                        ranking.append({**keys, "tau_b": float(np.nanmean(tb)),
                                        "tau_b_p05": float(np.nanpercentile(tb, 5)),
                                        "tau_ap": float(rec[:, lay.TAU_AP].mean())})
    out = {"budget_intervals": table("budget_intervals", intervals or []),
           "budget_decisions": table("budget_decisions", decisions or []),
           "budget_ranking": table("budget_ranking", ranking or [])}
    out["budget_planning"] = table("budget_planning", _planning(
        intervals, decisions, data, corrections[0], agreement_target))
    return out


def _planning(intervals: list[dict], decisions: list[dict], data: BudgetData,
              correction: str, target: float) -> list[dict]:
    """The smallest budget meeting the targets, per (proxy, metric, unit, estimator)."""
    cov = {(r["proxy"], r["unit"], r["metric"], r["budget"], r["estimator"], r["target"]): r
           for r in intervals}
    agree = {(r["proxy"], r["unit"], r["metric"], r["budget"], r["estimator"]): r
             for r in decisions if r["correction"] == correction}
    rows = []
    for (proxy, unit, metric, budget, est, target_name), r in cov.items():
        if target_name != "mean":
            continue
        key = (proxy, unit, metric, budget, est)
        d = cov.get((*key, "difference"))
        a = agree.get(key)
        ok = (r["honest"] and d is not None and d["honest"] and a is not None
              and a["agreement"] >= target)
        g = cov.get((proxy, unit, metric, budget, "gold", "mean"))
        N = len(data.topics) if unit == "topics" else len(data.u_topic)
        n = r["n"]
        if g is not None and n > 0 and n < N and g["width"] > 0:
            rho = (r["width"] / g["width"]) ** 2
            n_g = 1.0 / (rho * (1.0 / n - 1.0 / N) + 1.0 / N)
            equiv = n_g * (r["judgments"] / n)
        else:
            equiv = np.nan
        rows.append({"proxy": proxy, "unit": unit, "metric": metric, "estimator": est,
                     "budget": budget, "n": n, "judgments": r["judgments"],
                     "coverage_mean": r["coverage"],
                     "coverage_difference": np.nan if d is None else d["coverage"],
                     "agreement": np.nan if a is None else a["agreement"],
                     "width": r["width"], "gold_equivalent": equiv,
                     "cost_ratio": (equiv / r["judgments"] if r["judgments"] > 0
                                    else np.nan), "ok": ok})
    best: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda x: (x["judgments"], x["budget"])):
        if not row.pop("ok"):
            continue
        k = (row["proxy"], row["unit"], row["metric"], row["estimator"])
        best.setdefault(k, row)
    out = []
    for proxy in data.proxies:
        for metric in data.metrics:
            found = []
            for unit in data.units:
                for est in ESTIMATORS:
                    k = (proxy, unit, metric, est)
                    if not any(r["proxy"] == proxy and r["unit"] == unit
                               and r["metric"] == metric and r["estimator"] == est
                               for r in rows):
                        continue
                    row = best.get(k) or {
                        "proxy": proxy, "unit": unit, "metric": metric, "estimator": est,
                        "budget": np.nan, "n": 0, "judgments": np.nan,
                        "coverage_mean": np.nan, "coverage_difference": np.nan,
                        "agreement": np.nan, "width": np.nan, "gold_equivalent": np.nan,
                        "cost_ratio": np.nan}
                    found.append(dict(row, recommended=False))
            met = [r for r in found if not np.isnan(r["judgments"])]
            if met:
                min(met, key=lambda r: (r["judgments"], r["width"],
                                        ESTIMATORS.index(r["estimator"])))["recommended"] = True
            out += found
    return out
