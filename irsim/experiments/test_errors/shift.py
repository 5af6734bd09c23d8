"""``experiment/design=shift`` of experiment=test_errors (the default): a Gaussian copula
per system pair and the baseline's margin shifted to every delta (:class:`Shift`, its
parameters and data preparation; :class:`TestErrors`, the study; :func:`fit_table`).

What both designs share (the checks of the tests, sizes, alphas and alternatives, the
p-values of a block of trials and the Bayesian decisions) is
:class:`~irsim.experiments.test_errors.common.TrialTests`: :class:`TestErrors` is one with
the deltas, :class:`~irsim.experiments.test_errors.urbano2019.UrbanoStudy` holds one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count, FixedPoint, Sum
from irsim.errors import ConfigError, param
from irsim.experiments.test_errors.common import (
    SHARD_ITEMS,
    SHARD_REPLICATES,
    Design,
    TrialTests,
    trial_block_bytes,
)
from irsim.kit.common import (
    aligned_block,
    check_study_memory,
    unit_ranges,
)
from irsim.params import document, option
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.simulate.margins.tabulated import MarginKind
from irsim.simulate.pairs import PairDependence, ShiftPairs, SimulationData, fit_simulator, prepare
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import clopper_pearson
from irsim.stats.typems import TypeMFields, TypeMRecord, TypeMRows
from irsim.tables import table as build_table

if TYPE_CHECKING:
    from irsim.engine.session import Engine
    from irsim.experiments import Shards

__all__ = ["Shift", "TestErrors", "fit_table", "TOPIC_STREAM", "DIFF_POINT", "SHARD_ITEMS",
           "SHARD_REPLICATES"]

TOPIC_STREAM = "test_errors/topics"
#: The trials' mean differences and their squares are summed in fixed point (each rounded
#: to 2^-32): exact, order-free sums.
DIFF_POINT = FixedPoint(32)


@document
@dataclass
class Shift(Design):
    """``experiment/design=shift`` (the default): per metric, a margin per system and a
    Gaussian copula per system pair fitted to the collection
    (:func:`irsim.simulate.pairs.fit_simulator`); a trial's experimental system gets the
    baseline's margin shifted so that its true mean exceeds the baseline's by exactly delta
    (tables ``test_errors``, ``test_errors_fit``). One study per collection.
    """

    NAME: ClassVar[str] = "shift"

    name: str = option("shift", "``shift``.")
    margin: MarginKind = option(
        MarginKind.auto, "Margins of the generator: ``auto`` is empirical for discrete metrics "
        "such as P@10 and RR, else kernel.", tables="data")
    dependence: PairDependence = option(
        PairDependence.pearson, "What each pair's Gaussian copula reproduces: the Pearson "
        "correlation (NORTA) or Kendall's tau.", tables="data")

    def make(self, config: Any, data: Any, *, seed: int, shards: Shards,
             engine: Engine | None = None) -> tuple[TestErrors, SimulationData]:
        """:class:`TestErrors` and its data: a simulator fit to every metric of `data`, the
        shifts of every delta and the eligible trial pairs
        (:func:`~irsim.simulate.pairs.prepare`)."""
        from irsim.data.sets import CollectionSet

        items, replicates = shards.get(SHARD_ITEMS, SHARD_REPLICATES)
        study = TestErrors.from_config(config, seed=seed, shard_items=items,
                                       shard_replicates=replicates)
        if isinstance(data, CollectionSet):
            raise ConfigError("several collections per metric are pooled by "
                              "experiment/design=urbano2019 only")
        sims, sources = [], []
        for metric in data.metrics:
            sim = fit_simulator(data.metric(metric), metric=metric, systems=data.systems,
                                margin=self.margin, dependence=self.dependence,
                                drop_duplicates=bool(config.drop_duplicates),
                                drop_bottom=float(config.drop_bottom))
            sims.append(sim)
            sources.append(data.select(metrics=[metric], systems=sim.systems).values[0])
        data = prepare(sims, tuple(study.config.deltas), sources)
        return check_study_memory(study, data, f"{param('trials')} or {param('sizes')}",
                                  extra=trial_block_bytes(study.config.sizes)), data


@dataclass(frozen=True)
class TestErrors(TrialTests):
    """The known-truth study of Type I error and power: the shared parameters, checks,
    p-values and Bayesian decisions of
    :class:`~irsim.experiments.test_errors.common.TrialTests` (its ``config``, ``seed``
    and shard sizes; shard items are (metric, n, delta) configurations) with the true
    differences of the Config's ``deltas`` (the data's must match).

    Examples
    --------
    >>> from irsim.simulate.pairs import TopicSimulator
    >>> from irsim.engine import run_study
    >>> sim = TopicSimulator.normal(means=[0.4, 0.5], sds=[0.1, 0.1], rho=[0.9])
    >>> data = prepare([sim], [0.0, 0.05])
    >>> study = TestErrors.of(sizes=[20], deltas=[0.0, 0.05], alpha=[0.05], trials=300,
    ...                       tests=["t", "sign"], B=200)
    >>> tables, _ = run_study(study, data)
    >>> t = tables["test_errors"].to_pandas()
    >>> t[["test", "delta", "trials"]].values.tolist()[:2]
    [['t', 0.0, 300], ['sign', 0.0, 300]]
    >>> power = t[(t.delta > 0) & (t.test == "t")].rate   # delta = 5 sd(z) / sqrt(n)
    >>> bool(power.iloc[0] > 0.95)
    True
    """

    __test__ = False  # not a pytest class

    name: str = field(default="test_errors", init=False)

    # -- plan ---------------------------------------------------------------------------
    def _configs(self, data: SimulationData) -> int:
        c = self.config
        if list(data.deltas) != c.deltas:
            raise ConfigError(f"the data were prepared for deltas {list(data.deltas)}, the "
                              f"study has {list(c.deltas)}")
        return len(data.simulators) * len(c.sizes) * len(c.deltas)

    def layout(self, item: int) -> tuple[int, int, int]:
        """``(metric index, size index, delta index)`` of configuration `item`."""
        nd, ns = len(self.config.deltas), len(self.config.sizes)
        return item // (ns * nd), (item // nd) % ns, item % nd

    def plan(self, data: SimulationData) -> list[Shard]:
        """Configuration blocks x trial blocks."""
        return shard_grid(self._configs(data), self.shard_items, self.config.trials,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fields(self, data: SimulationData) -> dict[str, Count | Sum]:
        """Per configuration: rejections per (test, alternative, alpha), trials, and the
        fixed-point sums of the trials' mean differences and their squares."""
        c = self.config
        n = self._configs(data)
        shape = (n, len(c.tests), len(c.alternatives), len(c.alpha))
        return {"rejections": Count(shape, along="items"),
                "trials": Count((n,), along="items"),
                "diff": Sum((n, 2), along="items", bits=DIFF_POINT.bits),
                **TypeMFields(c.trials, n, len(c.tests), len(c.alternatives),
                              self.shard_items).fields(),
                **self.bayes_fields(n)}

    # -- kernel -------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: SimulationData) -> Partial:
        """Rejection counters and summed mean differences of one shard (its trials drawn
        through the generators of ``data.generators``: :meth:`draws` once per block, scored
        by the generator of each delta)."""
        c = self.config
        self._configs(data)
        i0, i1 = shard.items
        alphas = np.asarray(c.alpha)
        rej = np.zeros((i1 - i0, len(c.tests), len(c.alternatives), len(alphas)),
                       np.int64)
        trials = np.zeros(i1 - i0, np.int64)
        diff = DIFF_POINT.zeros((i1 - i0, 2))  # fixed-point sums of mean(z), mean(z)^2
        record = TypeMRecord(shard, len(c.tests), len(c.alternatives), c.alpha)
        bayes = np.zeros((i1 - i0, len(c.bayes), len(DECISIONS)), np.int64)
        groups: dict[tuple[int, int], list[int]] = {}
        for item in range(i0, i1):
            mi, si, di = self.layout(item)
            groups.setdefault((mi, si), []).append(di)
        for (mi, si), dis in groups.items():  # loops over metrics and sizes
            gens, n = data.generators[mi], c.sizes[si]
            mkey = study_key(data.simulators[mi].metric)
            for a, b in unit_ranges(*shard.reps, REPLICATE_BLOCK):
                draws = self.draws(gens[dis[0]], data.simulators[mi].metric, n, a, b)
                key = (mkey, a // REPLICATE_BLOCK)
                for di in dis:  # loop over deltas: their generators share the draws
                    trial = gens[di].scores(draws, n)
                    y, x = trial[:, 0], trial[:, 1]
                    row = (mi * len(c.sizes) + si) * len(c.deltas) + di - i0
                    trials[row] += b - a
                    md = (x - y).mean(axis=1)
                    diff[row] += DIFF_POINT.sum(np.stack([md, md * md]))
                    if c.deltas[di] != 0.0:
                        record.diff(row + i0, a, md)
                    for ti, test in enumerate(c.tests):
                        p = self.pvalues(test, c.alternatives, x, y, key)
                        rej[row, ti] += np.count_nonzero(
                            p[:, :, None] <= alphas[None, None, :], axis=0)
                        if c.deltas[di] != 0.0:
                            record.levels(row + i0, a, ti, p)
                    for bi, name in enumerate(c.bayes):  # loop over the Bayesian tests
                        bayes[row, bi] += np.bincount(self.bayes_codes(name, x, y, key),
                                                      minlength=len(DECISIONS))
        out = {"rejections": rej, "trials": trials, "diff": diff, **record.partial()}
        if c.bayes:
            out["bayes"] = bayes
        return out

    def draws(self, gen: ShiftPairs, metric: str, n: int, a: int, b: int) -> np.ndarray:
        """Raw draws (:meth:`~irsim.simulate.pairs.ShiftPairs.draw`) of trials ``[a, b)``
        on `n` topics of `metric`: block ``k`` of
        :data:`~irsim.rng.REPLICATE_BLOCK` trials from the stream :data:`TOPIC_STREAM` keyed
        by ``(study_key(metric), n, k)``."""
        return blocked_draws(self.seed, TOPIC_STREAM, (study_key(metric), n), a, b,
                             lambda rng, m: gen.draw(rng, m, n))

    # -- reduce -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: SimulationData
                 ) -> dict[str, pa.Table]:
        """The rates with their Clopper-Pearson bands, one row per (metric, test,
        alternative, n, delta, alpha), and the generator's fit table."""
        c = self.config
        rej, counts, diff = merged["rejections"], merged["trials"], merged["diff"]
        cols: dict[str, list] = {k: [] for k in (
            "metric", "test", "alternative", "n", "delta", "alpha", "trials", "rejections")}
        mean_diff, mean_diff_se = [], []
        for item in range(len(counts)):
            mi, si, di = self.layout(item)
            k = counts[item]
            md = diff[item, 0] / max(k, 1)
            var = max(diff[item, 1] / max(k, 1) - md * md, 0.0)
            se = math.sqrt(var / (k - 1)) if k > 1 else float("nan")
            for ti, test in enumerate(c.tests):
                for ai, alt in enumerate(c.alternatives):
                    for li, alpha in enumerate(c.alpha):
                        cols["metric"].append(data.simulators[mi].metric)
                        cols["test"].append(test)
                        cols["alternative"].append(alt)
                        cols["n"].append(c.sizes[si])
                        cols["delta"].append(c.deltas[di])
                        cols["alpha"].append(alpha)
                        cols["trials"].append(int(k))
                        cols["rejections"].append(int(rej[item, ti, ai, li]))
                        mean_diff.append(md)
                        mean_diff_se.append(se)
        k = np.asarray(cols["rejections"], np.int64)
        t = np.asarray(cols["trials"], np.int64)
        lo, hi = clopper_pearson(k, t, c.ci_level)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = k / t
        table = build_table("test_errors", {
            **cols, "trials": t, "rejections": k, "rate": rate, "ci_lo": lo, "ci_hi": hi,
            "mean_diff": mean_diff, "mean_diff_se": mean_diff_se})
        out = {"test_errors": table, "test_errors_fit": fit_table(data),
               "type_m_s": self._type_m_s(merged, data)}
        if c.bayes:
            keys = []
            for item in range(len(counts)):
                mi, si, di = self.layout(item)
                keys.append({"metric": data.simulators[mi].metric, "n": c.sizes[si],
                             "delta": c.deltas[di]})
            out["bayes_decisions"] = self.bayes_table(merged["bayes"], counts, keys)
        return out

    def _type_m_s(self, merged: dict[str, np.ndarray], data: SimulationData) -> pa.Table:
        """Table ``type_m_s`` from the per-trial records (delta = 0: null Type S / M)."""
        c = self.config
        rows = TypeMRows(c.tests, c.alpha, c.ci_level)
        q, code = TypeMFields(c.trials, len(merged["trials"]), len(c.tests),
                              len(c.alternatives), self.shard_items).merged(merged)
        rej = merged["rejections"]
        for item in range(len(merged["trials"])):
            mi, si, di = self.layout(item)
            delta, k = c.deltas[di], int(merged["trials"][item])
            for ti, test in enumerate(c.tests):
                for ai, alt in enumerate(c.alternatives):
                    keys = {"metric": data.simulators[mi].metric, "n": c.sizes[si],
                            "delta": delta, "test": test, "alternative": alt}
                    if delta == 0.0:
                        rows.add_null(keys, k, rej[item, ti, ai])
                    else:
                        rows.add(keys, q[:k, item], code[:k, item, ti, ai], delta)
        return rows.table()


def fit_table(data: SimulationData) -> pa.Table:
    """One row per metric: how the generator was fit and how well it reproduces the
    source (KS distance of the margins, largest error of a margin's mean)."""
    rows = []
    for sim, diag in zip(data.simulators, data.diagnostics or [{}] * len(data.simulators),
                         strict=True):
        rows.append({
            "metric": sim.metric,
            "margin": sim.margins.kind,
            "support": sim.margins.support or "",
            "systems": len(sim.systems),
            "dropped": len(sim.dropped),
            "baselines": int(diag.get("baselines", -1)),
            "pairs": int(sim.pairs),
            "dependence": sim.dependence,
            "rho_min": float(sim.rho.min()),
            "rho_median": float(np.median(sim.rho)),
            "rho_max": float(sim.rho.max()),
            "ks_mean": float(diag.get("ks_mean", float("nan"))),
            "ks_max": float(diag.get("ks_max", float("nan"))),
            "mean_error_max": float(diag.get("mean_error_max", float("nan"))),
        })
    return build_table("test_errors_fit", rows)
