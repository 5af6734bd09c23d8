"""Topic set size design (Sakai, "Topic set size design", Information Retrieval Journal 19,
2016; METHODS.md section 8): how many topics the next collection needs.

Per metric, the variance is estimated from the collection as Sakai pools it: ``V_E``, the
residual mean square of the two-way ANOVA without replication (systems x topics,
:func:`irsim.stats.anova.anova_two_way`). The variance of a per-topic difference between two
systems is ``2 V_E`` by default (``diff_variance: residual``), or estimated directly from the
system pairs: the median (``pairs_median``) or the largest (``pairs_max``, the most variable
pair) of their sample variances of differences. (The *mean* over all pairs of those variances
equals ``2 V_E`` exactly, an identity the tests check.)

For every alpha, beta and minimum difference ``min_diff`` the study gives (:mod:`irsim.stats.
power`):

- ``paired_t``: the smallest n whose two-sided paired t test has power ``1 - beta`` against a
  true difference ``min_diff`` (noncentral t, variance of a difference as above);
- ``anova``: the smallest n (topics per system) whose one-way ANOVA over ``m`` systems has
  power ``1 - beta`` when the best and the worst system are ``min_diff`` apart (noncentral F,
  ``lambda = n min_diff^2 / (2 V_E)``), for each ``m``;
- ``ci``: the smallest n whose expected half-width of the ``1 - alpha`` t interval of a
  difference is at most ``min_diff`` (beta does not apply).

The design is deterministic: one shard per metric (``engine.shard_items`` metrics per shard)
computes the variances, and the reduction solves for n.

Simulation check (``check_trials > 0``; table ``topic_set_size_check``)
    Does a collection of the planned size deliver the planned power? For every metric, alpha,
    beta and min_diff of the paired t design, a known-truth generator fitted to the collection
    (:func:`irsim.simulate.pairs.fit_simulator`: per-system margins, a Gaussian copula per
    system pair, duplicates dropped; as ``experiment=test_errors``) simulates ``check_trials``
    pairs of systems on the planned n new topics through the generator of (metric,
    min_diff) (:class:`irsim.simulate.pairs.ShiftPairs`): a trial draws an ordered
    (baseline, pair) uniformly, both systems take the baseline's margin, the second shifted
    to a true mean difference of exactly ``min_diff``, tied by the pair's copula. The
    realised power is the share of two-sided paired t tests with ``p <= alpha``
    (Clopper-Pearson 95% band), beside the planned power and the realised mean variance of
    a difference. Trials are drawn in
    blocks of 250 keyed by (seed, metric, n, block) (stream :data:`CHECK_STREAM`): items are
    the check configurations (``engine.shard_items``), replicates the trials
    (``engine.shard_replicates``, default 10000, rounded up to a multiple of 250); the
    counters are integers (variances summed in fixed point, 2^-40), so tables do not depend
    on sharding. Planned sizes
    above :data:`CHECK_MAX_N` topics are not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, block_ranges
from irsim.engine.partials import Count, FixedPoint, Slab, Sum
from irsim.errors import ConfigError, param
from irsim.exact import gram as exact_gram
from irsim.experiments import Shards
from irsim.kit.common import (
    aligned_block,
    check_choices,
    check_listed,
    check_positive_int,
    check_systems_differ,
    resolve_metrics,
    select_metrics,
    unit_ranges,
)
from irsim.params import Choice, Options, fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.simulate.pairs import SimulationData, fit_simulator, prepare
from irsim.stats.anova import anova_two_way
from irsim.stats.power import (
    anova_n,
    anova_power,
    ci_half_width,
    ci_n,
    paired_t_n,
    paired_t_power,
)
from irsim.stats.ttest import paired_t
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, rate_columns, table
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["Config", "make", "TopicSetSize", "DESIGNS",
           "DIFF_VARIANCES", "CHECK_STREAM", "CheckData", "pair_variances"]


class SizeDesign(Choice):
    """A topic-set-size design (config names, ``design`` column)."""

    paired_t = "paired_t"
    anova = "anova"
    ci = "ci"


class DiffVariance(Choice):
    """An estimate of the variance of a per-topic difference."""

    residual = "residual"
    pairs_median = "pairs_median"
    pairs_max = "pairs_max"


DESIGNS = SizeDesign.values()
DIFF_VARIANCES = DiffVariance.values()
#: Random stream of the simulation check's trials.
CHECK_STREAM = "topic_set_size/check"
#: Default trials per shard of the simulation check.
CHECK_SHARD_TRIALS = 10_000
#: Per-trial variances are summed in fixed point (each rounded to 2^-40): exact for any
#: sharding.
VAR_POINT = FixedPoint(40)
#: Planned sizes above this are not simulated (trials 0 in the check table).
CHECK_MAX_N = 10_000


@dataclass
class Config(Options):
    """Parameters of ``experiment=topic_set_size`` (Sakai 2016)."""

    name: str = option("topic_set_size", "``topic_set_size``.")
    metrics: list[str] | None = option(
        None, "Metrics of the collection (default: all; the top-level ``metrics`` wins).")
    designs: list[SizeDesign] = option(
        list(DESIGNS), "``paired_t``, ``anova`` and/or ``ci``.")
    alpha: list[float] = option(
        [0.01, 0.05], "Significance levels (``ci``: intervals at ``1 - alpha``).", gt=0, lt=1)
    beta: list[float] = option(
        [0.1, 0.2], "Type II error rates: power ``1 - beta`` (not used by ``ci``).", gt=0, lt=1)
    min_diff: list[float] = option(
        [0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2], "Minimum detectable differences (``ci``: the "
        "largest acceptable half-width).", gt=0)
    m: list[int] = option(
        [2, 10, 50], "Systems compared by the one-way ANOVA.", ge=2)
    diff_variance: DiffVariance = option(
        DiffVariance.residual, "Variance of a per-topic difference for ``paired_t`` and ``ci``: "
        "``residual`` (``2 V_E``), ``pairs_median`` or ``pairs_max`` (over the system pairs).")
    check_trials: int = option(
        0, "Simulated trials per paired t configuration for the planned-vs-realised power check "
        "(0: no check).", ge=0)


@dataclass(frozen=True)
class CheckData:
    """The data of a run with the simulation check: the collection and the generator
    fitted to it (``simulation.generators[metric][min_diff]``: the
    :class:`~irsim.simulate.pairs.ShiftPairs` the check draws its trials through)."""

    matrix: ScoreMatrix
    simulation: SimulationData

    @property
    def metrics(self) -> tuple[str, ...]:
        """The collection's metrics."""
        return self.matrix.metrics

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {"metrics": list(self.matrix.metrics), "systems": len(self.matrix.systems),
                "topics": len(self.matrix.topics), "source": self.matrix.source,
                "simulation": "generator fitted to the collection (topic_set_size_check)"}



# ------------------------------------------------------------------- output tables

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    _spec("topic_set_size", ("topic_set_size",), "Topics a collection needs (Sakai 2016): per "
          "metric, design, alpha, beta, m and minimum difference.", [
              METRIC,
              _c("design", _S, "`paired_t` (power of the paired t test), `anova` (power of a "
                 "one-way ANOVA over m systems) or `ci` (expected half-width of the CI of a "
                 "difference)"),
              _c("alpha", _F, "significance level (`ci`: the interval's level is 1 - alpha)"),
              _c("beta", _F, "Type II error rate, power 1 - beta (null for `ci`)"),
              _c("min_diff", _F, "minimum difference to detect (`ci`: largest acceptable "
                 "expected half-width)"),
              _c("m", _I, "systems compared (2 for `paired_t` and `ci`)"),
              _c("n", _I, "topics needed: the smallest n reaching the target (null: the "
                 "variance is 0, or more than 10^8 topics)"),
              _c("power", _F, "power at n (null for `ci`)"),
              _c("half_width", _F, "expected CI half-width at n (`ci` only)"),
              _c("variance", _F, "variance the design uses: of a per-topic difference "
                 "(`paired_t`, `ci`: `experiment.diff_variance`) or V_E (`anova`)"),
              _c("v_e", _F, "residual variance V_E (MS_error of the two-way ANOVA, systems x "
                 "topics)"),
              _c("systems", _I, "systems of the collection"),
              _c("topics", _I, "topics of the collection"),
          ]),
    _spec("topic_set_size_check", ("topic_set_size",), "Planned against realised power of the "
          "paired t test at the planned n, on collections simulated from a generator fitted "
          "to the collection: per metric, alpha, beta and minimum difference.", [
              METRIC,
              _c("alpha", _F, "significance level"),
              _c("beta", _F, "planned Type II error rate"),
              _c("min_diff", _F, "true difference of the simulated pairs"),
              _c("n", _I, "planned topics (the `paired_t` row of `topic_set_size`)"),
              _c("planned_power", _F, "power at n by the noncentral t with the planned "
                 "variance"),
              _c("planned_var_diff", _F, "variance of a per-topic difference the plan used"),
              _c("trials", _I, "simulated system pairs (0: n above 10,000, not simulated)"),
              _c("rejections", _I, "trials whose two-sided paired t test has p <= alpha"),
              *rate_columns("realised_power", "rejections / trials", stem="ci", level="95%",
                            kind="Clopper-Pearson"),
              _c("realised_var_diff", _F, "mean over trials of the sample variance of the "
                 "simulated per-topic differences"),
              _c("systems", _I, "systems the generator models (duplicates dropped)"),
              _c("pairs", _I, "ordered (baseline, pair) combinations a trial draws from"),
          ], "only with `experiment.check_trials` > 0"),
)


@study("topic_set_size", config=Config, data="matrix", order=80,
       title="Topic set size",
       example=dict(overrides={"synthetic": [], "checked": ["experiment.check_trials=20"]},
                    keywords=dict(check_trials=20),
                    figures=["topic_set_size_AP.png", "topic_set_size_check.png"]),
       tables=TABLE_SPECS,
       description=("topic set size design: topics needed for a paired t test, a one-way "
                    "ANOVA over m systems or a CI half-width, from the collection's variance "
                    "(Sakai 2016)"),
       headlines={
           "topic_set_size": (("metric", "design", "alpha", "beta", "min_diff", "m"), "n"),
           "topic_set_size_check": (("metric", "alpha", "beta", "min_diff"), "realised_power")},
       question=("How many topics does a paired t test, an ANOVA over m systems or a CI need, "
                 "and does the plan deliver its power on simulated collections? (Sakai 2016)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[TopicSetSize, ScoreMatrix | CheckData]:
    """The topic set size study of `config` on the metrics it selects from `data` (with the
    simulation check, the data also carry the generator fitted to each metric).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=4, topics=40, seed=1).matrix
    >>> study, data = make(Config(min_diff=[0.05]), m, seed=0, shards=Shards())
    >>> study.config.designs, len(study.plan(data))
    (['paired_t', 'anova', 'ci'], 1)
    >>> Config(beta=[1.5])  # a field's bounds: checked by the Config in both doors
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.beta must be inside (0, 1), got 1.5
    """
    matrix = select_metrics(data, config.metrics)
    check_choices(config.designs, DESIGNS, "design for experiment=topic_set_size",
                            param("designs"))
    alphas = check_listed(config.alpha, param("alpha"), "significance level")
    betas = check_listed(config.beta, param("beta"), "Type II error rate")
    diffs = check_listed(config.min_diff, param("min_diff"), "difference")
    check_listed(config.m, param("m"), "system count")
    (variance,) = check_choices([config.diff_variance], DIFF_VARIANCES,
                                "diff_variance for experiment=topic_set_size",
                                param("diff_variance"))
    if len(matrix.systems) < 2 or len(matrix.topics) < 2:
        raise ConfigError("topic set size design needs >= 2 systems and >= 2 topics, got "
                          f"{len(matrix.systems)} x {len(matrix.topics)}")
    trials = config.check_trials
    for m in matrix.metrics:  # the variance of a difference would be 0: no n applies
        check_systems_differ(matrix.metric(m), m, "the topic set size")
    items, reps = shards.get(1, CHECK_SHARD_TRIALS)
    items = check_positive_int(items, param("shard_items", "engine"))
    reps = check_positive_int(reps, param("shard_replicates", "engine"))
    check_n: tuple[int, ...] = ()
    if trials:
        v_d = {m: variances(matrix.metric(m), variance)[1] for m in matrix.metrics}
        check_n = tuple(int(paired_t_n(d, v_d[m], alpha=a, beta=b))
                        for m in matrix.metrics for a in alphas for b in betas for d in diffs)
    study = TopicSetSize(config, metrics=tuple(matrix.metrics), shard_items=items,
                         check_n=check_n, seed=int(seed),
                         shard_replicates=aligned_block(reps, REPLICATE_BLOCK))
    if not trials:
        return study, matrix
    sims = [fit_simulator(matrix.metric(m), metric=m, systems=matrix.systems)
            for m in matrix.metrics]
    sources = [matrix.select(metrics=[m], systems=sim.systems).values[0]
               for m, sim in zip(matrix.metrics, sims, strict=True)]
    return study, CheckData(matrix, prepare(sims, diffs, sources))


def variances(scores: np.ndarray, diff_variance: str = "residual"
              ) -> tuple[float, float, np.ndarray]:
    """``(V_E, variance of a per-topic difference, [V_E, median, max pair variance])`` of a
    ``(systems, topics)`` matrix.

    Examples
    --------
    >>> x = np.array([[0.1, 0.5, 0.3], [0.2, 0.2, 0.6], [0.4, 0.4, 0.1]])
    >>> v_e, v_d, _ = variances(x)
    >>> round(v_e, 4), round(v_d, 4), round(variances(x, "pairs_max")[1], 4)
    (0.0544, 0.1089, 0.1633)
    """
    pv = pair_variances(scores)
    v_e = float(anova_two_way(scores).ms_error)
    row = np.array([v_e, float(np.median(pv)), float(pv.max())])
    v_d = {"residual": 2.0 * v_e, "pairs_median": row[1], "pairs_max": row[2]}[diff_variance]
    return v_e, float(v_d), row


def pair_variances(scores: np.ndarray) -> np.ndarray:
    """Sample variances (ddof 1) of the per-topic differences of every system pair
    ``a < b`` (:func:`numpy.triu_indices` order) of a ``(systems, topics)`` matrix, from the
    Gram matrix of the two-way residuals (``d_ab - mean(d_ab) = e_a - e_b``).

    Examples
    --------
    >>> x = np.array([[0.1, 0.5, 0.3], [0.2, 0.2, 0.6], [0.4, 0.4, 0.1]])
    >>> pair_variances(x).round(4).tolist()
    [0.0933, 0.07, 0.1633]
    >>> [round(float(np.var(x[a] - x[b], ddof=1)), 4) for a, b in [(0, 1), (0, 2), (1, 2)]]
    [0.0933, 0.07, 0.1633]
    """
    x = np.asarray(scores, float)
    e = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    gram = exact_gram(e)  # fixed-order sums: the same sizes on every machine
    sq = np.diag(gram)
    a, b = np.triu_indices(x.shape[0], k=1)
    return np.maximum(sq[a] + sq[b] - 2.0 * gram[a, b], 0.0) / (x.shape[1] - 1)


@dataclass(frozen=True)
class TopicSetSize:
    """The topic set size study (Sakai 2016).

    Parameters
    ----------
    config : Config
        The study's parameters (``designs``, ``alpha``, ``beta``, ``min_diff``, ``m``,
        ``diff_variance``, ``check_trials``), normalised and checked by :func:`make`.
    metrics : tuple of str
        The data's metrics :func:`make` selected.
    shard_items : int
        Metrics (check configurations) per shard; does not change any result.
    check_n : tuple of int
        Planned n of every check configuration (metric x alpha x beta x min_diff).
    shard_replicates : int
        Check trials per shard (a multiple of 250); does not change any result.
    seed : int

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=4, topics=40, seed=1).matrix
    >>> study, data = make(Config(min_diff=[0.05], alpha=[0.05], beta=[0.2], m=[4]), m,
    ...                    seed=0, shards=Shards())
    >>> t = run_study(study, data)[0]["topic_set_size"]
    >>> t.column("design").to_pylist(), t.num_rows
    (['paired_t', 'anova', 'ci'], 3)
    """

    config: Config
    metrics: tuple[str, ...]
    shard_items: int
    check_n: tuple[int, ...] = ()
    shard_replicates: int = CHECK_SHARD_TRIALS
    seed: int = 0
    name: str = field(default="topic_set_size", init=False)

    def _matrix(self, data: ScoreMatrix | CheckData) -> ScoreMatrix:
        return data.matrix if isinstance(data, CheckData) else data

    def _metrics(self, data: ScoreMatrix | CheckData) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    def _check_item(self, c: int) -> tuple[int, int, int, int]:
        """(metric, alpha, beta, min_diff) indices of check configuration `c`."""
        rest, di = divmod(c, len(self.config.min_diff))
        rest, bi = divmod(rest, len(self.config.beta))
        mi, ai = divmod(rest, len(self.config.alpha))
        return mi, ai, bi, di

    def plan(self, data: ScoreMatrix | CheckData) -> list[Shard]:
        """Items: the metrics (variances; no replicates), then the check configurations
        (metric x alpha x beta x min_diff) x blocks of trials."""
        n_met = len(self._metrics(data))
        shards = [Shard(i, block, (0, 0))
                  for i, block in enumerate(block_ranges(n_met, self.shard_items))]
        for reps in block_ranges(self.config.check_trials, self.shard_replicates):
            for a, b in block_ranges(len(self.check_n), self.shard_items):
                shards.append(Shard(len(shards), (n_met + a, n_met + b), reps))
        return shards

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`)."""
        return fingerprint(self, Config, derived={"check_n": self.check_n,
                                                  "metrics": self.metrics})

    def fields(self, data: ScoreMatrix | CheckData) -> dict[str, Slab | Count | Sum]:
        """Per metric: ``V_E``, the median and the largest pair variance of differences;
        per check configuration: trials, rejections and the summed variance of the
        simulated differences (rows after the metrics)."""
        rows = len(self._metrics(data)) + len(self.check_n)
        return {"variances": Slab((rows, 3)),
                "trials": Count((rows,), along="items"),
                "rejections": Count((rows,), along="items"),
                "var_sum": Sum((rows,), along="items", bits=VAR_POINT.bits)}

    def kernel(self, shard: Shard, data: ScoreMatrix | CheckData) -> dict[str, np.ndarray]:
        """The variance estimates of the shard's metrics, or the check's counters (trials
        drawn through the generator of each (metric, min_diff), ``data.simulation.generators``)."""
        metrics = self._metrics(data)
        matrix = self._matrix(data)
        k0, k1 = shard.items
        if k0 < len(metrics):
            out = [variances(matrix.metric(metrics[k]))[2] for k in range(k0, k1)]
            return {"variances": np.asarray(out, float).reshape(-1, 3)}
        trials = np.zeros(k1 - k0, np.int64)
        rejections = np.zeros(k1 - k0, np.int64)
        var_sum = VAR_POINT.zeros(k1 - k0)
        for row, c in enumerate(range(k0 - len(metrics), k1 - len(metrics))):
            n = self.check_n[c]
            if not 2 <= n <= CHECK_MAX_N:
                continue
            mi, ai, _, di = self._check_item(c)
            gen = data.simulation.generators[mi][di]
            mkey = study_key(data.simulation.simulators[mi].metric)
            for a, b in unit_ranges(*shard.reps, REPLICATE_BLOCK):
                block = blocked_draws(self.seed, CHECK_STREAM, (mkey, n), a, b,
                                      lambda rng, m, g=gen, n=n: g.draw(rng, m, n))
                trial = gen.scores(block, n)
                y, x = trial[:, 0], trial[:, 1]
                p = paired_t(x, y).pvalue
                trials[row] += b - a
                rejections[row] += int(np.count_nonzero(p <= self.config.alpha[ai]))
                var_sum[row] += VAR_POINT.sum(np.var(x - y, axis=1, ddof=1))
        return {"trials": trials, "rejections": rejections, "var_sum": var_sum}

    def finalize(self, merged: dict[str, np.ndarray], data: ScoreMatrix | CheckData
                 ) -> dict[str, pa.Table]:
        """The ``topic_set_size`` table (one row per metric, design, alpha, beta, m and
        minimum difference) and, with the check, ``topic_set_size_check``."""
        rows: list[dict] = []
        matrix = self._matrix(data)
        n_sys, n_top = len(matrix.systems), len(matrix.topics)
        metrics = self._metrics(data)
        for k, metric in enumerate(metrics):
            v_e, p_med, p_max = (float(v) for v in merged["variances"][k])
            v_d = {"residual": 2.0 * v_e, "pairs_median": p_med,
                    "pairs_max": p_max}[self.config.diff_variance]
            for design in self.config.designs:
                rows += self._rows(metric, design, v_e, v_d, n_sys, n_top)
        tables = {"topic_set_size": table("topic_set_size", rows)}
        if self.config.check_trials:
            tables["topic_set_size_check"] = self._check_table(merged, data)
        return tables

    def _check_table(self, merged: dict[str, np.ndarray], data: CheckData) -> pa.Table:
        """Planned against realised power of every paired t configuration."""
        metrics = self._metrics(data)
        planned = [variances(data.matrix.metric(m), self.config.diff_variance)[1] for m in metrics]
        rows = []
        for c, n in enumerate(self.check_n):
            mi, ai, bi, di = self._check_item(c)
            r = len(metrics) + c
            v_d = planned[mi]
            c = self.config
            alpha, beta, diff = c.alpha[ai], c.beta[bi], c.min_diff[di]
            done, k = int(merged["trials"][r]), int(merged["rejections"][r])
            ci = sps.binomtest(k, done).proportion_ci(0.95, "exact") if done else None
            sim = data.simulation.simulators[mi]
            rows.append({
                "metric": metrics[mi], "alpha": alpha, "beta": beta, "min_diff": diff,
                "n": n if n > 0 else None,
                "planned_power": float(paired_t_power(n, diff, v_d, alpha=alpha))
                if n > 0 else None,
                "planned_var_diff": v_d, "trials": done, "rejections": k,
                "realised_power": k / done if done else None,
                "ci_lo": float(ci.low) if ci else None, "ci_hi": float(ci.high) if ci else None,
                "realised_var_diff": float(merged["var_sum"][r]) / done if done
                else None,
                "systems": len(sim.systems),
                "pairs": int(len(data.simulation.trial_pairs[mi])),
            })
        return table("topic_set_size_check", rows)

    def _rows(self, metric: str, design: str, v_e: float, v_d: float, n_sys: int,
              n_top: int) -> list[dict]:
        var = v_e if design == "anova" else v_d
        betas: tuple[float | None, ...] = (None,) if design == "ci" else self.config.beta
        ms = self.config.m if design == "anova" else (2,)
        grid = [(a, b, m, d) for a in self.config.alpha for b in betas for m in ms
                for d in self.config.min_diff]
        a, b, m, d = (np.array([g[i] if g[i] is not None else np.nan for g in grid], float)
                      for i in range(4))
        usable = var > 0 and np.isfinite(var)
        v = var if usable else 1.0
        if design == "paired_t":
            n = paired_t_n(d, v, alpha=a, beta=b)
            achieved = paired_t_power(np.maximum(n, 2), d, v, alpha=a)
        elif design == "anova":
            n = anova_n(m, d, v, alpha=a, beta=b)
            achieved = anova_power(np.maximum(n, 2), m, d, v, alpha=a)
        else:
            n = ci_n(d, v, alpha=a)
            achieved = ci_half_width(np.maximum(n, 2), v, alpha=a)
        rows = []
        for i, (alpha, beta, mm, diff) in enumerate(grid):
            found = usable and n[i] > 0
            rows.append({
                "metric": metric, "design": design, "alpha": alpha, "beta": beta,
                "min_diff": diff, "m": mm, "n": int(n[i]) if found else None,
                "power": float(achieved[i]) if found and design != "ci" else None,
                "half_width": float(achieved[i]) if found and design == "ci" else None,
                "variance": var, "v_e": v_e, "systems": n_sys, "topics": n_top,
            })
        return rows

