"""Test collection reliability by generalizability theory (Bodoff & Li 2007; Urbano, Marrero &
Martin, "On the measurement of test collection reliability", SIGIR 2013; Urbano, IRJ 2016;
METHODS.md section 8).

Per metric, the G-study (:func:`irsim.stats.gtheory.g_study`): the two-way ANOVA of the
systems x topics matrix gives the variance components of system, topic and system x topic
(residual), in absolute terms and as percentages of their sum. With the G-study's topics, the
generalizability coefficient ``E(rho^2)`` (how reliably the collection ranks systems) and
the dependability index ``Phi`` (how reliably it measures absolute scores), each with a
percentile bootstrap interval over topics, and ``E(rho^2)`` also with Feldt's exact interval
under the normal model. The D-study: both indicators for 1 .. ``max_topics`` topics
(table ``d_study``) and the topics needed for each target (``reliability_topics``, with the
bootstrap quantiles of that number).

``drop_bottom`` leaves out the bottom share of runs by the metric's mean before the analysis
(Urbano 2016 drops the bottom 25%). ``drop_rule`` says how (:mod:`irsim.sampling.systems`):
``"quantile"`` (default, the rule of Urbano's code) drops the runs whose mean is below the
``drop_bottom`` quantile of the means (R's type 7), ``"count"`` drops
``floor(drop_bottom * systems)`` runs (ties: the earlier run first; irsim before issue 29).
On 47 runs with ``drop_bottom=0.25`` the first keeps 35, the second 36.

Bootstrap: resample ``b`` draws ``topics`` topics with replacement (stream
:data:`BOOT_STREAM`, replicate ``b``, shared by all metrics, as Sakai shares bootstrap
samples); the variance components of the resampled matrix give ``E(rho^2)*`` and
``Phi*``. Shards are metrics (``engine.shard_items`` per shard) with all their resamples, so
tables are identical for any sharding.

Simulation check (``check_trials > 0``; table ``reliability_check``)
    A known-truth model fitted to the G-study: the normal random-effects model
    ``x_st = mu_s + t_t + e_st`` with ``t ~ N(0, var_topic)``, ``e ~ N(0, var_residual)`` and
    true system means ``mu_s`` the observed means shrunk towards the grand mean so that their
    variance (ddof 1) is ``var_system`` exactly. (The margin/copula generator of
    :mod:`irsim.simulate.pairs` models pairs of systems, not whole collections.) For every
    size in ``check_topics``, ``check_trials`` collections of that many new topics are
    simulated; each gets its own G-study. The table sets the true ``E(rho^2)`` and ``Phi`` of
    that size beside the mean (bias, sd) of their estimates (Urbano 2016's question) and the
    realised agreement with the truth: the squared Pearson correlation and Kendall's tau-b
    between the simulated and the true system means. Trials come in blocks of 250 keyed by
    (seed, metric, size, block) (stream :data:`CHECK_STREAM`); items are the (metric, size)
    configurations, replicates the trials (``engine.shard_replicates``, default 1000); the
    partial results are integer counts and fixed-point sums (2^-40), exact for any sharding.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard, block_ranges
from irsim.engine.partials import Count, FixedPoint, Slab, Sum
from irsim.errors import ConfigError, param
from irsim.experiments import Shards
from irsim.kit.common import (
    aligned_block,
    check_listed,
    check_memory,
    check_positive_int,
    check_study_memory,
    check_systems_differ,
    resolve_metrics,
    select_metrics,
    unit_ranges,
)
from irsim.kit.topicsets import check_drop, kept_systems
from irsim.params import Options, fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.sampling.systems import DEFAULT_RULE, DropRule
from irsim.sampling.topics import bootstrap_indices
from irsim.stats.gtheory import GStudy, e_rho2, feldt_interval, g_study, phi, topics_for
from irsim.stats.kendall import concordance, pair_signs, tau_b, ties
from irsim.stats.ties import snap_ties
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC, table
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["Config", "make", "Reliability", "BOOT_STREAM", "CHECK_STREAM",
           "INDICATORS", "true_means"]


#: Random stream of the topic resamples.
BOOT_STREAM = "reliability/topics"
#: Random stream of the simulation check's collections.
CHECK_STREAM = "reliability/check"
#: Default trials per shard of the simulation check.
CHECK_SHARD_TRIALS = 1000
#: The check's quantities per configuration: their sums and sums of squares over the trials
#: (axis 1 of field ``check_sums``: 0 the value, 1 its square) give ``reliability_check``.
_CHECKED = ("e_rho2", "phi", "corr2", "tau")
#: Per-trial values are summed in fixed point (each rounded to 2^-40): exact for any sharding.
CHECK_POINT = FixedPoint(40)
#: Reliability indicators (``indicator`` column).
INDICATORS = ("e_rho2", "phi")
#: Bytes a ``d_study`` row takes while the table is built (rows of Python values, then
#: Arrow; measured peak about 450).
_ROW_BYTES = 450
#: Default bytes of the resampled matrices the bootstrap holds at once (``memory_budget``).
_BOOT_BUDGET = 64 * 2**20


def boot_block(B: int, cells: int, budget: int = _BOOT_BUDGET) -> int:
    """Resamples the bootstrap computes at once on a matrix of `cells` scores: as many as
    `budget` allows, in whole blocks of 250 (at least one), at most `B`.

    Examples
    --------
    >>> boot_block(1000, 50 * 100), boot_block(1000, 3 * 400_000), boot_block(20, 10**6)
    (1000, 250, 20)
    """
    step = max(REPLICATE_BLOCK, int(budget // (8 * cells * 2)))
    return min(B, -(-step // REPLICATE_BLOCK) * REPLICATE_BLOCK)


def block_bytes(reps: int, systems: int, topics: int) -> int:
    """Working memory of a G-study on `reps` (systems, topics) matrices at once: the
    resampled or simulated scores with the ANOVA's temporaries (about 5 float64 copies) and
    the random draws, made in whole blocks of 250 (measured: 30 kB per topic for 250
    resamples of 3 systems, against 32 kB here).

    Examples
    --------
    >>> [round(block_bytes(reps, 3, 400_000) / 2**30, 2) for reps in (250, 20)]
    [11.92, 1.64]
    """
    return 8 * int(topics) * (REPLICATE_BLOCK + 5 * int(systems) * int(reps))


@dataclass
class Config(Options):
    """Parameters of ``experiment=reliability`` (generalizability theory)."""

    name: str = option("reliability", "``reliability``.")
    metrics: list[str] | None = option(
        None, "Metrics of the collection (default: all; the top-level ``metrics`` wins).")
    drop_bottom: float = option(
        0.0, "Share of runs left out, the worst by the metric's mean (0: none; Urbano 2016: "
        "0.25).", ge=0, lt=1)
    drop_rule: DropRule = option(
        DEFAULT_RULE, "How ``drop_bottom`` leaves runs out: ``quantile`` (the runs whose mean is "
        "below the ``drop_bottom`` quantile of the means, R's type 7, as Urbano's code) or "
        "``count`` (the ``floor(drop_bottom * runs)`` lowest means).")
    targets: list[float] = option(
        [0.8, 0.9, 0.95], "Target values of E(rho^2) and Phi for the topics-needed table.",
        gt=0, lt=1)
    max_topics: int = option(200, "The D-study curve covers 1 .. max_topics topics.", ge=1)
    B: int = option(1000, "Bootstrap resamples of the topics.", ge=2)
    ci_level: float = option(0.95, "Level of the intervals.", gt=0, lt=1)
    check_trials: int = option(
        0, "Simulated collections per size for the simulation check (0: no check).", ge=0)
    check_topics: list[int] = option(
        [25, 50, 100], "Topic set sizes of the simulation check.", ge=2)



# ------------------------------------------------------------------- output tables

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    _spec("reliability", ("reliability",), "G-study of a collection (generalizability theory): "
          "variance components and reliability per metric.", [
              METRIC,
              _c("systems", _I, "systems in the G-study (after `experiment.drop_bottom`)"),
              _c("dropped", _I, "systems left out by `experiment.drop_bottom`"),
              _c("topics", _I, "topics in the G-study"),
              _c("var_system", _F, "system variance component (MS_s - MS_e) / topics (negative "
                 "estimates set to 0)"),
              _c("var_topic", _F, "topic variance component (MS_t - MS_e) / systems (negative "
                 "estimates set to 0)"),
              _c("var_residual", _F, "system x topic (residual) variance component MS_e"),
              _c("pct_system", _F, "var_system as a percentage of the total variance"),
              _c("pct_topic", _F, "var_topic as a percentage of the total variance"),
              _c("pct_residual", _F, "var_residual as a percentage of the total variance"),
              _c("negative", _S, "components whose raw estimate was negative (`system`, "
                 "`topic`, both comma-separated, or empty)"),
              _c("e_rho2", _F, "generalizability coefficient E(rho^2) with the G-study's "
                 "topics"),
              _c("e_rho2_lo", _F, "percentile bootstrap (over topics) lower limit of e_rho2 "
                 "(`experiment.ci_level`)"),
              _c("e_rho2_hi", _F, "percentile bootstrap upper limit of e_rho2"),
              _c("e_rho2_feldt_lo", _F, "Feldt (exact F, normal model) lower limit of e_rho2"),
              _c("e_rho2_feldt_hi", _F, "Feldt upper limit of e_rho2"),
              _c("phi", _F, "dependability index Phi with the G-study's topics"),
              _c("phi_lo", _F, "percentile bootstrap lower limit of phi"),
              _c("phi_hi", _F, "percentile bootstrap upper limit of phi"),
              _c("B", _I, "bootstrap resamples of the topics"),
          ]),
    _spec("d_study", ("reliability",), "D-study curve: E(rho^2) and Phi per metric against the "
          "number of topics.", [
              METRIC,
              _c("topics", _I, "topics of the hypothetical collection"),
              _c("e_rho2", _F, "E(rho^2) with that many topics"),
              _c("phi", _F, "Phi with that many topics"),
          ]),
    _spec("reliability_topics", ("reliability",), "Topics needed for a target reliability: "
          "per metric, indicator and target.", [
              METRIC,
              _c("indicator", _S, "`e_rho2` or `phi`"),
              _c("target", _F, "target value of the indicator (`experiment.targets`)"),
              _c("topics", _I, "smallest number of topics reaching it (null: var_system = 0)"),
              _c("topics_lo", _I, "lower `experiment.ci_level` bootstrap quantile of the "
                 "topics needed (resamples over topics; null: not reachable)"),
              _c("topics_hi", _I, "the same, upper quantile"),
          ]),
    _spec("reliability_check", ("reliability",), "Simulation check of the reliability "
          "indicators: per metric and topic set size, the true E(rho^2) and Phi of a normal "
          "random-effects model fitted to the G-study against their estimates and the realised "
          "agreement of simulated and true system orderings.", [
              METRIC,
              _c("topics", _I, "topics of each simulated collection (`experiment.check_topics`)"),
              _c("trials", _I, "simulated collections"),
              _c("true_e_rho2", _F, "E(rho^2) of the model with that many topics"),
              _c("e_rho2_mean", _F, "mean over trials of the estimated E(rho^2)"),
              _c("e_rho2_bias", _F, "e_rho2_mean - true_e_rho2"),
              _c("e_rho2_sd", _F, "standard deviation over trials of the estimate (its Monte "
                 "Carlo standard error is e_rho2_sd / sqrt(trials))"),
              _c("true_phi", _F, "Phi of the model with that many topics"),
              _c("phi_mean", _F, "mean over trials of the estimated Phi"),
              _c("phi_bias", _F, "phi_mean - true_phi"),
              _c("phi_sd", _F, "standard deviation over trials of the estimate"),
              _c("corr2_mean", _F, "mean squared Pearson correlation between simulated and "
                 "true system means (the realised counterpart of E(rho^2))"),
              _c("corr2_se", _F, "Monte Carlo standard error of corr2_mean"),
              _c("tau_mean", _F, "mean Kendall tau-b between the simulated and the true "
                 "system ordering"),
              _c("tau_se", _F, "Monte Carlo standard error of tau_mean"),
          ], "only with `experiment.check_trials` > 0"),
)


@study("reliability", config=Config, data="matrix", order=90,
       title="Collection reliability",
       example=dict(overrides={"synthetic": [],
                                "checked": ["experiment.check_trials=20",
                                            "experiment.check_topics=[10,25]"]},
                    keywords=dict(B=50, max_topics=60),
                    figures=["d_study.png"]),
       tables=TABLE_SPECS,
       description=("test collection reliability (generalizability theory): variance components, "
                    "E(rho^2) and Phi with CIs, D-study and topics for a target (Urbano 2013)"),
       headlines={"reliability": (("metric",), "e_rho2"),
                  "reliability_topics": (("metric", "indicator", "target"), "topics")},
       question=("How reliable is a collection (variance components, E(rho^2), Phi), how many "
                 "topics would make it reliable enough, and do the indicators predict the true"
                 " ordering? (Urbano et al. 2013; Urbano 2016)"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[Reliability, ScoreMatrix]:
    """The reliability study of `config` on the metrics it selects from `data`.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> m = synthetic_scores(systems=6, topics=30, seed=1).matrix
    >>> study, data = make(Config(B=50), m, seed=0, shards=Shards())
    >>> study.config.targets, len(study.plan(data))
    ([0.8, 0.9, 0.95], 1)
    >>> make(Config(drop_bottom=0.9), m, seed=0, shards=Shards())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.drop_bottom=0.9 leaves 1 system ...
    """
    matrix = select_metrics(data, config.metrics)
    drop, rule = check_drop(config.drop_bottom, config.drop_rule)
    check_listed(config.targets, param("targets"), "target")
    max_topics, B = config.max_topics, config.B
    if len(matrix.topics) < 2:
        raise ConfigError(f"reliability needs >= 2 topics, got {len(matrix.topics)}")
    n_topics, widest = len(matrix.topics), 0
    for m in matrix.metrics:  # the G-study's components would be 0 / 0
        kept = kept_systems(matrix, drop, m, rule)
        if len(kept) < 2:
            raise ConfigError(f"{param('drop_bottom')}={drop} leaves {len(kept)} system of "
                              f"{len(matrix.systems)} on {m} ({param('drop_rule')}={rule}): "
                              f"the G-study needs >= 2")
        check_systems_differ(matrix.metric(m)[kept], m, "the G-study (E(rho^2), Phi)")
        widest = max(widest, len(kept))
    reps = boot_block(B, widest * n_topics)
    check_memory(block_bytes(reps, widest, n_topics),
                 f"the bootstrap ({reps} resamples of {widest} systems x {n_topics} topics at "
                 f"once)", f"{param('B')} or the number of topics")
    check_memory(_ROW_BYTES * max_topics * len(matrix.metrics),
                 f"the D-study table ({max_topics} sizes x {len(matrix.metrics)} metrics)",
                 param("max_topics"))
    trials, sizes = config.check_trials, config.check_topics
    if trials and not sizes:
        raise ConfigError(f"{param('check_topics')} must list at least one size")
    if trials:  # collections are drawn 250 at a time
        check_memory(block_bytes(REPLICATE_BLOCK, widest + 1, max(sizes)),
                     f"the simulation check ({REPLICATE_BLOCK} collections of {widest} systems x "
                     f"{max(sizes)} topics at once)",
                     f"{param('check_topics')} (collections are drawn 250 at a time)")
    items, reps = shards.get(1, CHECK_SHARD_TRIALS)
    items = check_positive_int(items, param("shard_items", "engine"))
    reps = check_positive_int(reps, param("shard_replicates", "engine"))
    config = dataclasses.replace(config, drop_bottom=drop, drop_rule=rule)
    study = Reliability(config, metrics=tuple(matrix.metrics), seed=int(seed),
                        shard_items=items, shard_replicates=aligned_block(reps, REPLICATE_BLOCK))
    check_study_memory(study, matrix, f"{param('B')} or {param('check_trials')}")
    return study, matrix


def true_means(scores: np.ndarray, var_system: float) -> np.ndarray:
    """System means of `scores` (systems, topics) shrunk towards their grand mean so that
    their variance (ddof 1) is `var_system` (the check's known truth). Means equal in exact
    arithmetic are made equal first (:func:`irsim.stats.ties.snap_ties`), so the true
    ranking ties them and the realised tau-b counts them as ties.

    Examples
    --------
    >>> mu = true_means(np.array([[0.2, 0.4], [0.5, 0.7], [0.3, 0.3]]), 0.01)
    >>> round(float(np.var(mu, ddof=1)), 6), round(float(mu.mean()), 6)
    (0.01, 0.4)
    """
    means = snap_ties(np.asarray(scores, float).mean(axis=1))  # tied systems stay tied
    spread = float(np.var(means, ddof=1))
    scale = np.sqrt(var_system / spread) if spread > 0 else 0.0
    return means.mean() + scale * (means - means.mean())


def _quantiles(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the rows of `values` (NumPy's linear quantiles)."""
    a = (1.0 - level) / 2.0
    q = np.quantile(values, [a, 1.0 - a], axis=-1)
    return q[0], q[1]


@dataclass(frozen=True)
class Reliability:
    """The reliability study (generalizability theory).

    Parameters
    ----------
    config : Config
        The study's parameters (``drop_bottom``, ``drop_rule``, ``targets``, ``max_topics``,
        ``B``, ``ci_level``, the simulation check's ``check_trials`` and ``check_topics``),
        normalised and checked by :func:`make`.
    metrics : tuple of str
        The data's metrics :func:`make` selected.
    seed : int
    shard_items : int
        Metrics (check configurations) per shard; does not change any result.
    shard_replicates : int
        Check trials per shard (a multiple of 250); does not change any result.
    memory_budget : int
        Approximate bytes of the resampled matrices held at once.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> from irsim.engine import run_study
    >>> m = synthetic_scores(systems=6, topics=30, seed=1).matrix
    >>> study, data = make(Config(B=50, max_topics=10), m, seed=0, shards=Shards())
    >>> tables, _ = run_study(study, data)
    >>> sorted(tables), tables["d_study"].num_rows
    (['d_study', 'reliability', 'reliability_topics'], 10)
    """

    config: Config
    metrics: tuple[str, ...]
    seed: int
    shard_items: int
    shard_replicates: int = CHECK_SHARD_TRIALS
    memory_budget: int = _BOOT_BUDGET
    name: str = field(default="reliability", init=False)

    def _metrics(self, data: ScoreMatrix) -> tuple[str, ...]:
        return resolve_metrics(self.metrics, data.metrics)

    @property
    def check_topics(self) -> tuple[int, ...]:
        """The topic set sizes of the simulation check; none without one (``check_trials``
        0)."""
        return tuple(self.config.check_topics) if self.config.check_trials else ()

    def scores(self, data: ScoreMatrix, metric: str) -> np.ndarray:
        """The (systems, topics) matrix of `metric` after ``drop_bottom`` (``drop_rule``)."""
        c = self.config
        return data.metric(metric)[kept_systems(data, c.drop_bottom, metric, c.drop_rule)]

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """Items: the metrics (each with all its resamples), then the check configurations
        (metric x size) x blocks of trials."""
        n_met = len(self._metrics(data))
        shards = [Shard(i, block, (0, 0))
                  for i, block in enumerate(block_ranges(n_met, self.shard_items))]
        configs = n_met * len(self.check_topics)
        for reps in block_ranges(self.config.check_trials, self.shard_replicates):
            for a, b in block_ranges(configs, self.shard_items):
                shards.append(Shard(len(shards), (n_met + a, n_met + b), reps))
        return shards

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`)."""
        return fingerprint(self, Config, derived={"metrics": self.metrics,
                                                  "check_topics": self.check_topics})

    def fields(self, data: ScoreMatrix) -> dict[str, Slab | Count | Sum]:
        """Per metric and resample: the bootstrap variance components (system, topic,
        residual); per check configuration (rows after the metrics): trials and sums."""
        n_met = len(self._metrics(data))
        rows = n_met + n_met * len(self.check_topics)
        return {"boot": Slab((rows, self.config.B, 3)),
                "check_trials": Count((rows,), along="items"),
                "check_sums": Sum((rows, len(_CHECKED), 2), along="items",
                                  bits=CHECK_POINT.bits)}

    def kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, Any]:
        """Variance components of every topic resample of the shard's metrics, or the
        check's counters."""
        metrics = self._metrics(data)
        if shard.items[0] >= len(metrics):
            return self._check_kernel(shard, data)
        n = len(data.topics)
        out = []
        for k in range(*shard.items):
            x = self.scores(data, metrics[k])
            comps = np.empty((self.config.B, 3))
            step = boot_block(self.config.B, x.size, self.memory_budget) or 1
            for a in range(0, self.config.B, step):
                b = min(self.config.B, a + step)
                idx = bootstrap_indices(self.seed, BOOT_STREAM, n, a, b)  # (reps, n)
                g = g_study(x[:, idx].transpose(1, 0, 2))  # (reps, systems, topics)
                comps[a:b] = np.stack([g.var_system, g.var_topic, g.var_residual], axis=-1)
            out.append(comps)
        return {"boot": np.stack(out)}

    def _check_kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, Any]:
        """Sums of the estimates and of the realised agreement over the shard's trials."""
        metrics = self._metrics(data)
        k0, k1 = shard.items
        trials = np.zeros(k1 - k0, np.int64)
        sums = CHECK_POINT.zeros((k1 - k0, len(_CHECKED), 2))
        for row, c in enumerate(range(k0 - len(metrics), k1 - len(metrics))):
            mi, si = divmod(c, len(self.check_topics))
            x = self.scores(data, metrics[mi])
            g = g_study(x)
            mu = true_means(x, float(g.var_system))
            k, n = len(mu), self.check_topics[si]
            a_idx, b_idx = np.triu_indices(k, 1)
            s_true = pair_signs(mu[a_idx] - mu[b_idx])[:, None]
            sd_t, sd_e = np.sqrt(float(g.var_topic)), np.sqrt(float(g.var_residual))

            def draw(rng: np.random.Generator, m: int, k: int = k, n: int = n) -> np.ndarray:
                return rng.standard_normal((m, (k + 1) * n))

            for a, b in unit_ranges(*shard.reps, REPLICATE_BLOCK):
                z = blocked_draws(self.seed, CHECK_STREAM, (study_key(metrics[mi]), n), a, b,
                                  draw)
                m = b - a
                sim = (mu[None, :, None] + sd_t * z[:, None, :n]
                       + sd_e * z[:, n:].reshape(m, k, n))
                est = g_study(sim)
                means = snap_ties(sim.mean(axis=2))  # the tie rule over the systems
                dm = means - means.mean(axis=1, keepdims=True)
                dmu = mu - mu.mean()
                with np.errstate(invalid="ignore", divide="ignore"):
                    corr = ((dm * dmu).sum(axis=1)  # fixed order: no BLAS
                            / np.sqrt((dm * dm).sum(axis=1) * (dmu * dmu).sum()))
                s_sim = pair_signs(means[:, a_idx] - means[:, b_idx]).T  # (pairs, m)
                tau = tau_b(concordance(s_sim, s_true), ties(s_sim),
                            np.full(m, ties(s_true)[0]), k)
                r2, ph = e_rho2(est), phi(est)
                c2 = corr * corr
                values = np.stack([r2, r2 * r2, ph, ph * ph, c2, c2 * c2, tau, tau * tau])
                trials[row] += m
                sums[row] += CHECK_POINT.sum(np.nan_to_num(values).reshape(len(_CHECKED), 2, m))
        return {"check_trials": trials, "check_sums": sums}

    def _check_table(self, merged: dict[str, np.ndarray], data: ScoreMatrix) -> pa.Table:
        """True against estimated and realised reliability per metric and size."""
        metrics = self._metrics(data)
        rows = []
        for c in range(len(metrics) * len(self.check_topics)):
            mi, si = divmod(c, len(self.check_topics))
            g: GStudy = g_study(self.scores(data, metrics[mi]))
            n = self.check_topics[si]
            r = len(metrics) + c
            done = int(merged["check_trials"][r])
            mean, mean_sq = (dict(zip(_CHECKED, (float(v) / done for v in moment), strict=True))
                             for moment in merged["check_sums"][r].T)
            true_r, true_p = float(e_rho2(g, n)), float(phi(g, n))

            def sd(name: str, mean: dict = mean, mean_sq: dict = mean_sq, done: int = done
                   ) -> float:
                var = max(mean_sq[name] - mean[name] ** 2, 0.0) * done / max(done - 1, 1)
                return float(np.sqrt(var))

            rows.append({
                "metric": metrics[mi], "topics": n, "trials": done,
                "true_e_rho2": true_r, "e_rho2_mean": mean["e_rho2"],
                "e_rho2_bias": mean["e_rho2"] - true_r,
                "e_rho2_sd": sd("e_rho2"),
                "true_phi": true_p, "phi_mean": mean["phi"], "phi_bias": mean["phi"] - true_p,
                "phi_sd": sd("phi"),
                "corr2_mean": mean["corr2"], "corr2_se": sd("corr2") / np.sqrt(done),
                "tau_mean": mean["tau"], "tau_se": sd("tau") / np.sqrt(done),
            })
        return table("reliability_check", rows)

    def finalize(self, merged: dict[str, np.ndarray], data: ScoreMatrix
                 ) -> dict[str, pa.Table]:
        """The ``reliability``, ``d_study`` and ``reliability_topics`` tables."""
        rel, dst, need = [], [], []
        n_sys = len(data.systems)
        sizes = np.arange(1, self.config.max_topics + 1)
        for k, metric in enumerate(self._metrics(data)):
            x = self.scores(data, metric)
            g = g_study(x)
            boot = merged["boot"][k]
            bs, bt, be = boot[:, 0], boot[:, 1], boot[:, 2]
            with np.errstate(invalid="ignore", divide="ignore"):
                r_star = bs / (bs + be / g.topics)
                p_star = bs / (bs + (bt + be) / g.topics)
            r_lo, r_hi = _quantiles(r_star, self.config.ci_level)
            p_lo, p_hi = _quantiles(p_star, self.config.ci_level)
            f_lo, f_hi = feldt_interval(g, level=self.config.ci_level)
            total = float(g.total)
            pct = [100.0 * float(v) / total if total > 0 else float("nan")
                   for v in (g.var_system, g.var_topic, g.var_residual)]
            negative = [name for name, flag in (("system", g.negative_system),
                                                ("topic", g.negative_topic)) if bool(flag)]
            rel.append({
                "metric": metric, "systems": g.systems, "dropped": n_sys - g.systems,
                "topics": g.topics, "var_system": float(g.var_system),
                "var_topic": float(g.var_topic), "var_residual": float(g.var_residual),
                "pct_system": pct[0], "pct_topic": pct[1], "pct_residual": pct[2],
                "negative": ",".join(negative), "e_rho2": float(e_rho2(g)),
                "e_rho2_lo": float(r_lo), "e_rho2_hi": float(r_hi),
                "e_rho2_feldt_lo": float(f_lo), "e_rho2_feldt_hi": float(f_hi),
                "phi": float(phi(g)), "phi_lo": float(p_lo), "phi_hi": float(p_hi),
                "B": self.config.B,
            })
            er, ph = e_rho2(g, sizes), phi(g, sizes)
            dst += [{"metric": metric, "topics": int(t), "e_rho2": float(a), "phi": float(b)}
                    for t, a, b in zip(sizes, er, ph, strict=True)]
            a = (1.0 - self.config.ci_level) / 2.0
            for indicator, error, boot_error in (("e_rho2", g.var_residual, be),
                                                 ("phi", g.var_topic + g.var_residual,
                                                  bt + be)):
                for target in self.config.targets:
                    n_need = int(topics_for(target, g.var_system, error))
                    star = topics_for(target, bs, boot_error).astype(float)
                    star[star < 0] = np.inf
                    lo = np.quantile(star, a, method="lower")
                    hi = np.quantile(star, 1.0 - a, method="higher")
                    need.append({
                        "metric": metric, "indicator": indicator, "target": target,
                        "topics": n_need if n_need > 0 else None,
                        "topics_lo": int(lo) if np.isfinite(lo) else None,
                        "topics_hi": int(hi) if np.isfinite(hi) else None,
                    })
        tables = {"reliability": table("reliability", rel), "d_study": table("d_study", dst),
                  "reliability_topics": table("reliability_topics", need)}
        if self.config.check_trials:
            tables["reliability_check"] = self._check_table(merged, data)
        return tables
