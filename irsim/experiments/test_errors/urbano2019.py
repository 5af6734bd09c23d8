"""``design=urbano2019`` of experiment=test_errors (issue 13): Type I, II and III errors as
Urbano, Lima & Hanjalic (SIGIR 2019) ran them, on generators of :mod:`irsim.simulate`
(margins and copulas selected by AIC, fitted to every collection of a metric and pooled):
:class:`UrbanoStudy`, its data :class:`UrbanoData` and the generators' tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count
from irsim.engine.session import Engine
from irsim.errors import ConfigError, param
from irsim.experiments.test_errors.common import Design, TrialTests, trial_block_bytes
from irsim.kit.common import (
    aligned_block,
    check_memory,
    check_positive_int,
    check_study_memory,
    unit_ranges,
)
from irsim.params import document, option
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import clopper_pearson
from irsim.stats.typems import TypeMFields, TypeMRecord, TypeMRows
from irsim.tables import table as build_table

if TYPE_CHECKING:  # the urbano2019 design's modules load pyvinecopulib: imported when used
    from irsim.experiments import Shards
    from irsim.experiments.test_errors import Config
    from irsim.simulate.designs import PooledMetric, UrbanoTrials

__all__ = ["Urbano2019", "UrbanoStudy", "UrbanoData", "urbano_data", "families_table",
           "models_table", "TAILS", "URBANO_STREAM", "MC_UNIT", "URBANO_SHARD_ITEMS",
           "URBANO_SHARD_REPLICATES"]

#: Tails of the urbano2019 design by alternative.
TAILS = {"two-sided": "two-sided", "greater": "one-sided"}
URBANO_STREAM = "test_errors/urbano2019"
#: Trials of design=urbano2019 that share one set of Monte Carlo resamples (16 replicate
#: blocks; the resamples are keyed by this unit, so the tables do not depend on sharding).
#: Drawing 10^6 bootstrap samples costs as much as testing ~500 trials on them; shared by
#: 4,000 trials (x the kinds), drawing is a small part of the cost.
MC_UNIT = 16 * REPLICATE_BLOCK
#: Default trials per shard of design=urbano2019: one Monte Carlo unit.
URBANO_SHARD_REPLICATES = MC_UNIT
#: Default configurations per shard of design=urbano2019: one (metric, size) with all its
#: kinds (Type I and ten deltas). With every configuration in one shard, the first trial
#: blocks of the full design would each take ~85 minutes however large the cluster
#: (bench/bench_scale.py; docs/guides/cluster.md).
URBANO_SHARD_ITEMS = 11


@document
@dataclass
class Urbano2019(Design):
    """``experiment/design=urbano2019``: Urbano, Lima & Hanjalic's design (SIGIR 2019) on the
    generators of :mod:`irsim.simulate` (margins and copulas selected by AIC, fitted to every
    collection of a metric and pooled: several collections are read together); tables
    ``type_1``, ``type_2``, ``type_3``, ``test_errors_families``, ``test_errors_models``. The
    study's ``deltas`` > 0 are the Type II/III differences, Type I is always run;
    ``alternatives`` ``two-sided`` and ``greater`` (one-sided).
    """

    NAME: ClassVar[str] = "urbano2019"
    POOLS: ClassVar[bool] = True

    name: str = option("urbano2019", "``urbano2019``.")
    power_trials: int = option(
        0, "Trials per (metric, n, delta) of Type II/III (0: ``trials``; the paper ran a tenth "
        "of the Type I trials).")
    fit_cache: str | None = option(
        None, "Directory of fitted generators, keyed by the data and the fitting options (a "
        "rerun or a sweep skips fitting); None: fit every time.", tables=False)
    fit_threads: int = option(
        1, "Threads fitting the copula selections, one selection per thread (results do not "
        "depend on it).", tables=False)
    margin_families: list[str] = option(
        ["truncnorm", "beta", "kernel"], "Margin families of the continuous metrics (AP, "
        "nDCG@k, ERR@k), one selected per run by AIC: ``truncnorm``, ``beta``, ``kernel`` "
        "(simIReff's ``norm``, ``beta``, ``nks``) and ``bks`` (simIReff's beta kernel, Chen "
        "1999; :data:`irsim.simulate.margins.CONTINUOUS_SIMIREFF`). The paper fitted all four "
        "(the ``urbano2019`` preset does): without ``bks`` the sign and Wilcoxon tests get up "
        "to .09 more power than the paper on nDCG@20 and AP.", tables="data")
    fit_cache_verify: int = option(
        0, "Pairs refitted (margins and copula) to check each model read from ``fit_cache`` "
        "against the data; a model that differs is refused (the cache trusts its directory: "
        "its checksum catches damage, not a forgery); 0: none.", tables=False)

    def make(self, config: Config, data: Any, *, seed: int, shards: Shards,
             engine: Engine | None = None) -> tuple[UrbanoStudy, UrbanoData]:
        """:class:`UrbanoStudy` and its data: the generators of every (metric, collection),
        their copulas selected on `engine` (None: in process), pooled per metric
        (:func:`urbano_data`)."""
        from irsim.simulate.margins import CONTINUOUS_SIMIREFF

        fams = list(self.margin_families or [])
        if not fams or any(f not in CONTINUOUS_SIMIREFF for f in fams):
            raise ConfigError(f"{param('margin_families', 'experiment.design')} must be some "
                              f"of {list(CONTINUOUS_SIMIREFF)}, got {fams}")
        items, replicates = shards.get(URBANO_SHARD_ITEMS, URBANO_SHARD_REPLICATES)
        # Type I is always run: delta 0 is not a Type II delta
        deltas = tuple(d for d in (float(x) for x in config.deltas) if d != 0.0)
        tests = TrialTests.from_config(config, seed=seed, shard_items=items,
                                       shard_replicates=replicates)
        study = UrbanoStudy(tests, int(self.power_trials) or tests.config.trials, deltas)
        # refused before the copulas are fitted: the shard's block of trials; the partial
        # results once the pools are known
        check_memory(trial_block_bytes(tests.config.sizes), "a block of test_errors trials",
                     param("sizes"))
        pools = urbano_data(config, data, seed, study.deltas, engine)
        return check_study_memory(study, pools, f"{param('trials')} or {param('sizes')}",
                                  extra=trial_block_bytes(tests.config.sizes)), pools


@dataclass(frozen=True)
class UrbanoData:
    """The pooled generators of every metric (:class:`irsim.simulate.designs.PooledMetric`),
    what ``design=urbano2019`` reads.

    Attributes
    ----------
    pools : tuple of PooledMetric
    deltas : tuple of float
        The Type II/III differences (> 0).
    """

    pools: tuple[PooledMetric, ...]
    deltas: tuple[float, ...]
    #: What the fit of these models did (:func:`~irsim.simulate.fit_engine.fit_pair_copula_models`'s
    #: ``info``: engine, shards, workers, seconds); None when built from models directly.
    fit_run: ClassVar[dict | None] = None

    @property
    def fit_seconds(self) -> float:
        """Time spent fitting the models of this process (0 for models from the cache; not
        a dataclass field: it is not part of the data digest)."""
        return float(sum(m.fit_seconds for p in self.pools for m in p.models))

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in pool order."""
        return tuple(p.metric for p in self.pools)

    @cached_property
    def generators(self) -> tuple[tuple[UrbanoTrials, ...], ...]:
        """The generator of every (metric, kind) (:class:`~irsim.simulate.designs.UrbanoTrials`),
        built once per data object: kind 0 Type I, kind ``k >= 1`` the Type II/III trials of
        delta ``k - 1``; what :class:`UrbanoStudy` draws its trials through (the kinds of a
        metric share their draws)."""
        from irsim.simulate.designs import UrbanoTrials

        return tuple((UrbanoTrials(pool), *(UrbanoTrials(pool, d)
                                            for d in range(len(self.deltas))))
                     for pool in self.pools)

    def describe(self) -> dict:
        """Summary for the manifest: collections, runs, pairs and the fitting time."""
        return {
            "metrics": list(self.metrics),
            "collections": {p.metric: [m.name for m in p.models] for p in self.pools},
            "runs_kept": {p.metric: int(p.runs.sum()) for p in self.pools},
            "copulas": {p.metric: sum(len(m.copulas) for m in p.models) for p in self.pools},
            "topics": "simulated",
            "source": "generators fitted per collection (see test_errors_models)",
            "deltas": list(self.deltas),
            "fit_seconds": round(self.fit_seconds, 3),
            "fit_cached": all(m.cached for p in self.pools for m in p.models),
            "fit_run": self.fit_run,
        }


@dataclass(frozen=True)
class UrbanoStudy:
    """``design=urbano2019``: Type I, II and III errors as Urbano, Lima & Hanjalic (SIGIR
    2019) ran them: the shared parameters, checks, p-values and Bayesian decisions of its
    `tests` (:class:`~irsim.experiments.test_errors.common.TrialTests`, as design=shift's
    study); `deltas` are the Type II/III differences (> 0; may be empty).

    Items are the (metric, n, kind) configurations, kind 0 Type I and kind ``k >= 1`` delta
    ``k - 1``; replicates are trials (``tests.trials`` for Type I, `power_trials` for the
    others). A block of trials shares its uniforms across kinds (common random numbers).

    Examples
    --------
    >>> from irsim.simulate.designs import PooledMetric
    >>> from irsim.simulate.pair_copula_model import fit_pair_copula_model
    >>> from irsim.engine import run_study
    >>> rng = np.random.default_rng(0)
    >>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
    ...             + 0.08 * rng.standard_normal((8, 30)), 0, 1)
    >>> pool = PooledMetric.build("AP", [fit_pair_copula_model(x, metric="AP", name="toy")],
    ...                           (0.05,))
    >>> base = TrialTests.of(sizes=[20], alpha=[0.05], trials=250, tests=["t"], B=100)
    >>> study = UrbanoStudy(base, 250, deltas=(0.05,))
    >>> tables, _ = run_study(study, UrbanoData((pool,), (0.05,)))
    >>> sorted(tables)
    ['test_errors_families', 'test_errors_models', 'type_1', 'type_2', 'type_3', 'type_m_s']
    >>> tables["type_1"].column("trials").to_pylist()
    [250]
    """

    tests: TrialTests
    power_trials: int
    deltas: tuple[float, ...] = ()
    name: str = field(default="test_errors", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "deltas", tuple(float(d) for d in self.deltas))
        check_positive_int(self.power_trials, param("power_trials", "experiment.design"))
        for a in self.tests.config.alternatives:
            if a not in TAILS:
                raise ConfigError(f"{param('alternatives')}: design=urbano2019 runs "
                                  f"two-sided and greater (one-sided) tests, got {a!r}")
        if not all(math.isfinite(d) and d > 0 for d in self.deltas):
            raise ConfigError(f"{param('deltas')}: design=urbano2019 needs deltas > 0 (Type "
                              f"I is always run), got {list(self.deltas)}")

    @property
    def kinds(self) -> int:
        """Configurations per (metric, n): Type I and one per delta."""
        return 1 + len(self.deltas)

    def _configs(self, data: UrbanoData) -> int:
        if tuple(data.deltas) != self.deltas:
            raise ConfigError(f"the data were prepared for deltas {list(data.deltas)}, the "
                              f"study has {list(self.deltas)}")
        return len(data.pools) * len(self.tests.config.sizes) * self.kinds

    def layout(self, item: int) -> tuple[int, int, int]:
        """``(metric index, size index, kind)`` of configuration `item`."""
        nk, ns = self.kinds, len(self.tests.config.sizes)
        return item // (ns * nk), (item // nk) % ns, item % nk

    def _trials(self, kind: int) -> int:
        return self.tests.config.trials if kind == 0 else self.power_trials

    def plan(self, data: UrbanoData) -> list[Shard]:
        """Configuration blocks x trial blocks."""
        return shard_grid(self._configs(data), self.tests.shard_items,
                          max(self.tests.config.trials, self.power_trials),
                          aligned_block(self.tests.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables: those of its `tests` with the design's own
        (`design`, `power_trials`, its `deltas`)."""
        return {**self.tests.fingerprint(), "design": "urbano2019",
                "power_trials": self.power_trials, "deltas": self.deltas}

    def fields(self, data: UrbanoData) -> dict[str, Count]:
        """Per configuration: rejections in the true direction per (test, tail, alpha),
        two-sided rejections with the wrong sign per (test, alpha), and trials."""
        n, t = self._configs(data), self.tests
        tc = t.config
        return {"rejections": Count((n, len(tc.tests), len(tc.alternatives), len(tc.alpha)),
                                    along="items"),
                "wrong": Count((n, len(tc.tests), len(tc.alpha)), along="items"),
                "trials": Count((n,), along="items"),
                **TypeMFields(max(tc.trials, self.power_trials), n, len(tc.tests),
                              len(tc.alternatives), t.shard_items).fields(),
                **t.bayes_fields(n)}

    def kernel(self, shard: Shard, data: UrbanoData) -> Partial:
        """Counters of one shard (trials of a block are drawn once for every kind,
        :meth:`draws`, and scored by the generator of each kind, ``data.generators``)."""
        t = self.tests
        tc = t.config
        i0, i1 = shard.items
        self._configs(data)
        alphas = np.asarray(tc.alpha)
        rej = np.zeros((i1 - i0, len(tc.tests), len(tc.alternatives), len(alphas)), np.int64)
        wrong = np.zeros((i1 - i0, len(tc.tests), len(alphas)), np.int64)
        trials = np.zeros(i1 - i0, np.int64)
        record = TypeMRecord(shard, len(tc.tests), len(tc.alternatives), tc.alpha)
        bayes = np.zeros((i1 - i0, len(tc.bayes), len(DECISIONS)), np.int64)
        groups: dict[tuple[int, int], list[int]] = {}
        for item in range(i0, i1):
            mi, si, kind = self.layout(item)
            groups.setdefault((mi, si), []).append(kind)
        for (mi, si), kinds in groups.items():  # metrics x sizes
            gens, n = data.generators[mi], tc.sizes[si]
            mkey = study_key(data.pools[mi].metric)
            for u0, u1 in unit_ranges(*shard.reps, MC_UNIT):
                parts = []  # (row, kind, first trial row in the stack, trials)
                xs, ys = [], []
                for a, b in unit_ranges(u0, u1, REPLICATE_BLOCK):
                    u = None
                    for kind in kinds:  # Type I and the deltas: their generators share draws
                        stop = min(b, self._trials(kind))
                        if stop <= a:
                            continue
                        if u is None:
                            u = self.draws(gens[kind], data.pools[mi].metric, n, a, b)
                        trial = gens[kind].scores(u[: stop - a], n)
                        base, exp = trial[:, 0], trial[:, 1]
                        row = (mi * len(tc.sizes) + si) * self.kinds + kind - i0
                        trials[row] += stop - a
                        parts.append((row, kind, sum(len(v) for v in xs), stop - a, a))
                        xs.append(exp)
                        ys.append(base)
                if not parts:
                    continue
                # every trial of the unit (all kinds) at once: one call per test, so the
                # Monte Carlo resamples of the unit (keyed by it) are drawn once and serve
                # both tails
                exp, base = np.concatenate(xs), np.concatenate(ys)
                md = (exp - base).mean(axis=1)
                sign = np.sign(md)
                key = (mkey, u0 // MC_UNIT)
                for row, kind, r0, k, first in parts:
                    if kind:
                        record.diff(row + i0, first, md[r0:r0 + k])
                for ti, test in enumerate(tc.tests):
                    pv = t.pvalues(test, tc.alternatives, exp, base, key)
                    for row, kind, r0, k, first in parts:
                        if kind:
                            record.levels(row + i0, first, ti, pv[r0:r0 + k])
                    for ai, alt in enumerate(tc.alternatives):
                        hit = pv[:, ai, None] <= alphas[None, :]
                        for row, kind, r0, k, _ in parts:
                            h, sg = hit[r0:r0 + k], sign[r0:r0 + k, None]
                            if alt == "two-sided":
                                rej[row, ti, ai] += np.count_nonzero(
                                    h & (sg > 0) if kind else h, axis=0)
                                wrong[row, ti] += np.count_nonzero(h & (sg < 0), axis=0)
                            else:
                                rej[row, ti, ai] += np.count_nonzero(h, axis=0)
                for bi, name in enumerate(tc.bayes):  # every trial of the unit in one call
                    code = t.bayes_codes(name, exp, base, key)
                    for row, _, r0, k, _ in parts:
                        bayes[row, bi] += np.bincount(code[r0:r0 + k],
                                                      minlength=len(DECISIONS))
        out = {"rejections": rej, "wrong": wrong, "trials": trials, **record.partial()}
        if tc.bayes:
            out["bayes"] = bayes
        return out

    def draws(self, gen: UrbanoTrials, metric: str, n: int, a: int, b: int) -> np.ndarray:
        """Raw draws (:meth:`~irsim.simulate.designs.UrbanoTrials.draw`) of trials ``[a, b)``
        on `n` topics of `metric`: block ``k`` of
        :data:`~irsim.rng.REPLICATE_BLOCK` trials from the stream :data:`URBANO_STREAM` keyed
        by ``(study_key(metric), n, k)``."""
        return blocked_draws(self.tests.seed, URBANO_STREAM, (study_key(metric), n), a, b,
                             lambda rng, m: gen.draw(rng, m, n))

    def finalize(self, merged: dict[str, np.ndarray], data: UrbanoData
                 ) -> dict[str, pa.Table]:
        """``type_1``, ``type_2``, ``type_3`` with Clopper-Pearson bands, and the tables of
        the generators (families chosen, models)."""
        t = self.tests
        tc = t.config
        rej, wrong, counts = merged["rejections"], merged["wrong"], merged["trials"]
        rows: dict[int, dict[str, list]] = {k: {c: [] for c in (
            "metric", "n", "delta", "test", "tail", "alpha", "trials", "rejections")}
            for k in (1, 2, 3)}

        def add(k: int, metric: str, n: int, delta: float, test: str, tail: str,
                alpha: float, trials: int, hits: int) -> None:
            r = rows[k]
            for c, v in zip(("metric", "n", "delta", "test", "tail", "alpha", "trials",
                             "rejections"), (metric, n, delta, test, tail, alpha, trials,
                                             hits), strict=True):
                r[c].append(v)

        for item in range(len(counts)):
            mi, si, kind = self.layout(item)
            metric, n, k = data.pools[mi].metric, tc.sizes[si], int(counts[item])
            delta = 0.0 if kind == 0 else self.deltas[kind - 1]
            for ti, test in enumerate(tc.tests):
                for ai, alt in enumerate(tc.alternatives):
                    for li, alpha in enumerate(tc.alpha):
                        add(1 if kind == 0 else 2, metric, n, delta, test, TAILS[alt],
                            alpha, k, int(rej[item, ti, ai, li]))
                        if kind and alt == "two-sided":
                            add(3, metric, n, delta, test, "two-sided", alpha, k,
                                int(wrong[item, ti, li]))
        out = {}
        for k in (1, 2, 3):
            cols = rows[k]
            hits = np.asarray(cols["rejections"], np.int64)
            tr = np.asarray(cols["trials"], np.int64)
            lo, hi = clopper_pearson(hits, tr, tc.ci_level)
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = hits / tr
            if k == 1:
                del cols["delta"]
            out[f"type_{k}"] = build_table(f"type_{k}", {
                **cols, "trials": tr, "rejections": hits, "rate": rate, "ci_lo": lo,
                "ci_hi": hi})
        out["type_m_s"] = self._type_m_s(merged, data)
        if tc.bayes:
            keys = []
            for item in range(len(counts)):
                mi, si, kind = self.layout(item)
                keys.append({"metric": data.pools[mi].metric, "n": tc.sizes[si],
                             "delta": 0.0 if kind == 0 else self.deltas[kind - 1]})
            out["bayes_decisions"] = t.bayes_table(merged["bayes"], counts, keys)
        out["test_errors_families"] = families_table(data)
        out["test_errors_models"] = models_table(data)
        return out

    def _type_m_s(self, merged: dict[str, np.ndarray], data: UrbanoData) -> pa.Table:
        """Table ``type_m_s`` from the per-trial records of the Type II/III trials; the Type
        I configurations (delta = 0) give trials, significant and the Type I rate only."""
        t = self.tests
        tc = t.config
        rows = TypeMRows(tc.tests, tc.alpha, tc.ci_level)
        q, code = TypeMFields(max(tc.trials, self.power_trials), len(merged["trials"]),
                              len(tc.tests), len(tc.alternatives), t.shard_items).merged(merged)
        rej = merged["rejections"]
        for item in range(len(merged["trials"])):
            mi, si, kind = self.layout(item)
            delta, k = (0.0 if kind == 0 else self.deltas[kind - 1]), int(merged["trials"][item])
            for ti, test in enumerate(tc.tests):
                for ai, alt in enumerate(tc.alternatives):
                    keys = {"metric": data.pools[mi].metric, "n": tc.sizes[si], "delta": delta,
                            "test": test, "alternative": alt}
                    if kind == 0:
                        rows.add_null(keys, k, rej[item, ti, ai])
                    else:
                        rows.add(keys, q[:k, item], code[:k, item, ti, ai], delta)
        return rows.table()


def families_table(data: UrbanoData) -> pa.Table:
    """Counts per metric of the margin families (one per run) and copula families (one per
    pair; ``<family> <rotation>``) selected by AIC."""
    from collections import Counter

    rows = []
    for pool in data.pools:
        for kind, names in (("margin", [f for m in pool.models for f in m.margin_families]),
                            ("copula", [f for m in pool.models for f in m.copula_families])):
            counts = Counter(names)
            total = sum(counts.values())
            for fam, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                rows.append({"metric": pool.metric, "kind": kind, "family": fam,
                             "count": int(c), "share": c / total})
    return build_table("test_errors_families", rows)


def models_table(data: UrbanoData) -> pa.Table:
    """One row per (metric, collection): runs kept and dropped, pairs, support, and how far
    the fitted margins' means are from the observed ones."""
    rows = []
    for pool in data.pools:
        for m in pool.models:
            rows.append({"metric": pool.metric, "collection": m.name, "runs": len(m.runs),
                         "dropped": len(m.dropped), "pairs": len(m.copulas),
                         "support": m.support,
                         "mean_error_max": float(m.observed_error)})
    return build_table("test_errors_models", rows)


def urbano_data(config: Config, data: Any, seed: int, deltas: tuple[float, ...],
                 engine: Engine | None = None) -> UrbanoData:
    """Fit (or read from ``fit_cache``) a generator per (metric, collection) and pool them;
    the copula selections run as shards on `engine` (:mod:`irsim.simulate.fit_engine`)."""
    from irsim.data.sets import CollectionSet

    if isinstance(data, CollectionSet):
        parts = {m: data.of(m) for m in data.metrics}
    else:
        parts = {m: [("collection", data.select(metrics=[m]))] for m in data.metrics}
    design = config.design
    threads = check_positive_int(design.fit_threads, param("fit_threads", "experiment.design"))
    fits = [(metric, {"scores": matrix.metric(metric), "metric": metric, "name": cname,
                      "runs": tuple(matrix.systems), "seed": int(seed),
                      "drop_duplicates": bool(config.drop_duplicates),
                      "drop_bottom": float(config.drop_bottom), "cache_dir": design.fit_cache,
                      "continuous_families": tuple(design.margin_families),
                      "verify": int(design.fit_cache_verify)})
            for metric, cols in parts.items() for cname, matrix in cols]
    from irsim.simulate.designs import PooledMetric
    from irsim.simulate.fit_engine import fit_pair_copula_models

    fit: dict[str, Any] = {}
    models = fit_pair_copula_models([f for _, f in fits], engine=engine, threads=threads,
                                    info=fit)
    pools = [PooledMetric.build(metric, [m for (mt, _), m in zip(fits, models, strict=True)
                                         if mt == metric], deltas) for metric in parts]
    out = UrbanoData(tuple(pools), deltas)
    object.__setattr__(out, "fit_run", fit)  # not a field: not part of the data digest
    return out
