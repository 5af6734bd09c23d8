"""The tables of ``experiment=factorial`` from its scores and the kernel's p-values: the
ANOVA with effect sizes, the REML components, every pair under every (design, model,
method) and the count of significant pairs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from irsim.errors import InputError
from irsim.experiments.factorial.simulation import truth_rates
from irsim.stats.betareg import beta_regression
from irsim.stats.factorial import anova_table, design_tukey, effect_sizes
from irsim.stats.multiple import adjust
from irsim.stats.ties import TIE_RTOL, score_tolerance, snap_zero
from irsim.stats.ttest import paired_t
from irsim.stats.varcomp import variance_components
from irsim.tables import spec, table

__all__ = ["tables", "tukey_decisions", "DECISION_RTOL"]

#: Relative tolerance of a Tukey decision: a difference within it of the interval's
#: half-width is not significant, so the decision never hangs on the last bit of a float.
DECISION_RTOL = TIE_RTOL


def tukey_decisions(diff: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Pairs whose simultaneous interval excludes 0: ``|diff|`` above the half-width by more
    than :data:`DECISION_RTOL` of the larger of the two.

    Examples
    --------
    >>> d = np.array([0.3, 0.1, -0.3, 0.2 + 1e-17])
    >>> tukey_decisions(d, d - 0.2, d + 0.2).tolist()
    [True, False, True, False]
    """
    half = (high - low) / 2.0
    size = np.abs(diff)
    return size - half > DECISION_RTOL * np.maximum(size, half)


class _Rows:
    """Columns of one table, filled block by block (NaN becomes null)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cols: dict[str, list] = {c.name: [] for c in spec(name).columns}

    def add(self, n: int, **values: Any) -> None:
        for key, v in values.items():
            self.cols[key].append(np.broadcast_to(np.asarray(v, dtype=object if isinstance(
                v, str) or v is None else None), (n,)))

    def build(self) -> pa.Table:
        out = {}
        for c in spec(self.name).columns:
            parts = self.cols[c.name]
            v = np.concatenate(parts) if parts else np.array([])
            if pa.types.is_floating(c.type):
                v = v.astype(float)
                out[c.name] = pa.array(v, c.type, mask=np.isnan(v))
            else:
                out[c.name] = pa.array(v.tolist(), c.type)
        return table(self.name, out)


def _anova_rows(rows: _Rows, x: np.ndarray, metric: str, design: str, model: str,
                level: float) -> None:
    t = anova_table(x, design, model=model)
    e = effect_sizes(t, level=level)
    n = len(t.terms)
    rows.add(n, metric=metric, design=design, model=model, term=np.array(t.terms, object),
             df=t.df.astype(float), ss=t.ss, ms=t.ms, f=t.f, p_value=t.pvalue,
             error=np.array(t.error, object), df_error=t.df_error, omega2=e.omega2,
             partial_omega2=e.partial_omega2, partial_omega2_lo=e.partial_omega2_ci[0],
             partial_omega2_hi=e.partial_omega2_ci[1], partial_eta2=e.partial_eta2,
             partial_eta2_lo=e.partial_eta2_ci[0], partial_eta2_hi=e.partial_eta2_ci[1])


def _component_rows(rows: _Rows, x: np.ndarray, metric: str, design: str) -> None:
    v = variance_components(x, design)
    total = float(v.var.sum())
    n = len(v.components)
    rows.add(n, metric=metric, design=design, component=np.array(v.components, object),
             variance=v.var, anova_estimate=v.anova,
             share=v.var / total if total > 0 else np.full(n, np.nan),
             boundary=np.full(n, bool(v.boundary)))


def _pair_rows(rows: _Rows, names: tuple[np.ndarray, np.ndarray], metric: str, design: str,
               model: str | None, method: str, diff: np.ndarray, **cols: Any) -> None:
    rows.add(len(diff), metric=metric, design=design, model=model, method=method,
             system_a=names[0], system_b=names[1], diff=diff, **cols)


def tables(study: Any, merged: dict[str, np.ndarray], data: Any) -> dict[str, pa.Table]:
    """Every table of the study (see :mod:`irsim.experiments.factorial.tables`) from the
    kernel's merged fields (one row per job of ``study.jobs``)."""
    cfg, p = study.config, merged["p"]
    level = 1.0 - cfg.alpha
    job_row = {(j.metric, j.design, j.model, j.method): i for i, j in enumerate(study.jobs)}
    first, second = np.triu_indices(len(data.systems), 1)
    sys_names = np.array(data.systems, object)
    names = (sys_names[first], sys_names[second])
    nan = np.full(len(first), np.nan)
    anova, comps, pairs = (_Rows("factorial_anova"), _Rows("factorial_components"),
                           _Rows("factorial_pairs"))
    for k, metric in enumerate(data.metrics):
        for design in cfg.designs:
            x = data.scores(design, k)
            tol = score_tolerance(x)
            for model in cfg.models:
                _anova_rows(anova, x, metric, design, model, level)
                if "tukey" in cfg.methods:
                    r = design_tukey(x, design, model=model, level=level, pvalues=False)
                    row = job_row.get((k, design, model, "tukey"))
                    diff = snap_zero(r.statistic.copy(), tol)
                    _pair_rows(pairs, names, metric, design, model, "tukey", diff,
                               ci_lo=r.low, ci_hi=r.high, effect=r.effect,
                               p_value=nan if row is None else p[row],
                               significant=tukey_decisions(diff, r.low, r.high))
            _component_rows(comps, x, metric, design)
            if "randomised_tukey" in cfg.methods:
                means = x.reshape(x.shape[0], -1).mean(axis=1)
                diff = snap_zero(means[first] - means[second], tol)
                row = job_row[(k, design, None, "randomised_tukey")]
                pr = p[row]
                _pair_rows(pairs, names, metric, design, None, "randomised_tukey", diff,
                           ci_lo=merged["low"][row], ci_hi=merged["high"][row], effect=nan,
                           p_value=pr,
                           significant=pr < cfg.alpha)
        if "beta_holm" in cfg.methods:
            for design in [d for d in cfg.designs if d in BETA_DESIGNS]:
                _beta_rows(pairs, names, data.scores(design, k), metric, design, cfg.alpha)
        if "t_holm" in cfg.methods:
            _t_holm_rows(pairs, names, data.full[k], metric, (first, second), cfg.alpha)
    pair_table = pairs.build()
    return {"factorial_significant": _significant(pair_table, data),
            "factorial_anova": anova.build(), "factorial_components": comps.build(),
            "factorial_pairs": pair_table, "factorial_means": _means(data),
            "factorial_truth": _truth(study, merged, data),
            "factorial_split_half": _split_half(study, merged, data)}


def _truth(study: Any, merged: dict[str, np.ndarray], data: Any) -> pa.Table:
    rows = _Rows("factorial_truth")
    level = 1.0 - study.config.alpha
    for i, job in enumerate(study.jobs):
        if job.method != "truth":
            continue
        setting = study.truths[job.metric]
        tp = len(setting.systems) * (len(setting.systems) - 1) // 2
        counts = {k: merged[k][i][..., :tp] if merged[k][i].ndim == 2 else merged[k][i]
                  for k in ("fw", "detected", "wrong", "false", "trials")}
        r = truth_rates(setting, counts, level)
        n = len(r["method"])
        cols = {f"{name}{suffix}": r[f"{name}{'_' + old if old else ''}"]
                for name in ("fwer", "power", "type_s")
                for suffix, old in (("", ""), ("_lo", "low"), ("_hi", "high"))}
        rows.add(n, metric=data.metrics[job.metric], method=r["method"].astype(object),
                 systems=len(setting.systems), null_pairs=setting.null_pairs,
                 trials=r["trials"], alpha=study.config.alpha, **cols, **dict(setting.sd))
    return rows.build()


def _split_half(study: Any, merged: dict[str, np.ndarray], data: Any) -> pa.Table:
    from irsim.stats.binomial import wilson

    rows = _Rows("factorial_split_half")
    level = 1.0 - study.config.alpha
    pairs = len(data.systems) * (len(data.systems) - 1) // 2
    for i, job in enumerate(study.jobs):
        if job.method != "split_half":
            continue
        n = int(merged["trials"][i])
        cols = {}
        for name, k in (("system_agree", float(merged["system"][i])),
                        ("pair_agree", float(merged["pairs"][i]) / pairs)):
            lo, hi = wilson(np.asarray(k), np.asarray(n), level)
            cols.update({name: k / n, f"{name}_lo": float(lo), f"{name}_hi": float(hi)})
        rows.add(1, metric=data.metrics[job.metric], design=job.design, model=job.model,
                 trials=n, **cols)
    return rows.build()


def _means(data: Any) -> pa.Table:
    rows = _Rows("factorial_means")
    s, k = len(data.systems), data.replicated.shape[-1]
    empty = (data.relevant == 0).sum(axis=0)
    for m, metric in enumerate(data.metrics):
        rows.add(s, metric=metric, system=np.array(data.systems, object), replicate=None,
                 mean=data.full[m].mean(axis=1), empty_topics=0)
        per = data.replicated[m].mean(axis=1)  # (systems, replicates)
        rows.add(s * k, metric=metric, system=np.repeat(np.array(data.systems, object), k),
                 replicate=np.tile(np.array(data.replicates, object), s), mean=per.ravel(),
                 empty_topics=np.tile(empty, s))
    return rows.build()


def _t_holm_rows(rows: _Rows, names: tuple, x: np.ndarray, metric: str,
                 index: tuple[np.ndarray, np.ndarray], alpha: float) -> None:
    a, b = x[index[0]], x[index[1]]
    t = paired_t(a, b)
    d = snap_zero(a.mean(axis=1) - b.mean(axis=1), score_tolerance(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(t.sd > 0, t.mean / t.sd, np.nan)
    p = adjust(t.pvalue, "holm")
    nan = np.full(len(d), np.nan)
    _pair_rows(rows, names, metric, "two_way", None, "t_holm", d, ci_lo=nan, ci_hi=nan,
               effect=effect, p_value=p, significant=p < alpha)


#: The designs a beta regression fits: the whole collection, and the shards as further
#: observations of their cell (it has no replicate factor for the crossed design).
BETA_DESIGNS = ("two_way", "replicated")


def _beta_rows(rows: _Rows, names: tuple, x: np.ndarray, metric: str, design: str,
               alpha: float) -> None:
    # a topic where every run scores 0 (or 1) says nothing about the systems' differences
    # and its effect would be infinite: it is left out of the fit
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    keep = ~((flat == 0.0).all(axis=(0, 2)) | (flat == 1.0).all(axis=(0, 2)))
    try:
        fit = beta_regression(x[:, keep])
    except InputError as err:
        raise InputError(f"method beta_holm, {metric}, design {design}: {err} (or leave "
                         "beta_holm out of methods)") from None
    pr = fit.pairs("holm")
    d = snap_zero(fit.means[pr.first] - fit.means[pr.second], score_tolerance(x))
    nan = np.full(len(d), np.nan)
    _pair_rows(rows, names, metric, design, None, "beta_holm", d, ci_lo=nan, ci_hi=nan,
               effect=pr.diff, p_value=pr.adjusted, significant=pr.adjusted < alpha)


def _significant(pairs: pa.Table, data: Any) -> pa.Table:
    df = pairs.select(["metric", "design", "model", "method", "significant"]).to_pandas()
    df["model"] = df["model"].astype(object).where(df["model"].notna(), "")
    g = df.groupby(["metric", "design", "model", "method"], sort=False)["significant"]
    out = g.agg(["size", "sum"]).reset_index()
    reps = data.replicated.shape[-1]
    return table("factorial_significant", {
        "metric": out["metric"].tolist(), "design": out["design"].tolist(),
        "model": [m or None for m in out["model"]], "method": out["method"].tolist(),
        "replicates": [1 if d == "two_way" else reps for d in out["design"]],
        "pairs": out["size"].astype(int).tolist(), "significant": out["sum"].astype(int).tolist(),
        "share": (out["sum"] / out["size"]).astype(float).tolist()})
