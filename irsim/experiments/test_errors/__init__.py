"""Known-truth simulation: Type I error and power of paired significance tests.

Design (after Urbano, Lima & Hanjalic, SIGIR 2019): for each metric of a collection, a
:class:`~irsim.simulate.topics.TopicSimulator` is fit to the score matrix (a margin per
system, a Gaussian copula per system pair). A *trial* picks an ordered pair of systems
``(baseline, other)`` uniformly; the copula of that pair ties two new systems on ``n`` new
topics: the baseline keeps the baseline's margin and the experimental system gets the
**same margin shifted** (proportional odds, :meth:`~irsim.simulate.topics.Margins.mean`) so that
its true mean exceeds the baseline's by exactly ``delta``. With ``delta = 0`` the shift is 0,
the two systems are exchangeable and every test's null hypothesis holds exactly (Type I
error); with ``delta > 0`` the experimental system is stochastically larger (power).

Every test of :mod:`irsim.stats` (t, Wilcoxon, sign, randomisation, paired bootstrap) runs
on the same trials; the rejections at each alpha (``p <= alpha``) are integer counters.
Trials are drawn in blocks of :data:`~irsim.rng.REPLICATE_BLOCK` keyed by (metric,
topic set size, block); the same latent draws serve every ``delta`` (common random
numbers), and each block of trials has its own Monte Carlo resamples (keyed by block), so no
number depends on shard sizes, workers or the engine.

Items are the (metric, n, delta) configurations, replicates the trials. A kernel returns
three integer counters per configuration (:class:`~irsim.engine.partials.Count` along the
items): rejections per (test, alternative, alpha), trials, and the fixed-point sums of the
simulated mean differences and their squares; the generator's fit table is computed from
the data once, in :meth:`TestErrors.finalize`.

``design=urbano2019`` (:class:`UrbanoStudy`, issue 13) runs the paper's own design instead:
generators of :mod:`irsim.simulate` (margins and copulas selected by AIC, fitted to every
collection of a metric and pooled), Type I trials through the first run's margin, Type II/III
trials with the experimental margin moved to baseline + delta; tables ``type_1``, ``type_2``,
``type_3``, ``test_errors_families`` and ``test_errors_models``. The default
``design=shift`` is the design above, unchanged.

Both designs also write table ``type_m_s`` (issue 28): Gelman and Carlin's Type S rate and
exaggeration ratio of the significant trials (:mod:`irsim.stats.typems`). A kernel records, per
(trial, configuration with delta != 0), the trial's mean difference in fixed point and, per
(test, alternative), the number of alphas at which it is significant
(:func:`~irsim.stats.typems.type_m_fields`: integer counters along the trials, each cell
written by the one shard that owns it); :meth:`TestErrors.finalize` computes the table from
these records (exact sums, order statistics and closed-form bootstrap intervals), so it does
not depend on shard sizes, workers or the engine either.

With ``bayes`` set (issue 28), both designs also run the Bayesian tests of
:data:`irsim.stats.registry.BAYES_TESTS` on the same trials (one batched call per test and
block of trials) and count their decisions (better / worse / equivalent / undecided) per
configuration, an integer :class:`~irsim.engine.partials.Count`; table ``bayes_decisions``
turns them into known-truth error rates. The Bayesian bootstrap draws its Dirichlet weights
from the stream ``test_errors/bayesian_bootstrap`` keyed by the same trial-block coordinates
as the Monte Carlo tests, so these counts do not depend on sharding either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count
from irsim.engine.session import Engine
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.kit.common import (
    BAYES_OPTIONS,
    BayesOptions,
    BayesRules,
    aligned_block,
    check_alphas,
    check_positive_int,
    check_simulated_tests,
    unit_ranges,
)
from irsim.kit.tables import TYPE_M_S
from irsim.params import fingerprint, option
from irsim.registry import study
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.simulate.topics import SimulationData, fit_simulator, prepare
from irsim.stats import get_test
from irsim.stats._validation import ALTERNATIVES
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import clopper_pearson
from irsim.stats.typems import TypeMRecord, TypeMRows, merged_records, type_m_fields
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import METRIC
from irsim.tables import STR as _S
from irsim.tables import column as _c
from irsim.tables import table as build_table
from irsim.tables import table_spec as _spec

if TYPE_CHECKING:  # the urbano2019 design's modules load pyvinecopulib: imported when used
    from irsim.simulate.designs import PooledMetric

__all__ = [
    "ALPHAS",
    "DELTAS",
    "TESTS",
    "Config",
    "TestErrors",
    "UrbanoData",
    "UrbanoStudy",
    "fit_table",
    "make",
]

#: Tests this study runs, by config name (the paired tests of :mod:`irsim.stats`).
TESTS = ("t", "wilcoxon", "sign", "randomisation", "paired_bootstrap")
#: Default true differences (0: Type I error).
DELTAS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10)
#: Default significance levels (Urbano et al. 2019).
ALPHAS = (0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,
          0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1)
TOPIC_STREAM = "test_errors/topics"
#: Fixed-point scale of the summed mean differences (integer, order-free sums).
DIFF_SCALE = 2.0**32
#: Default shard sizes: (metric, n, delta) configurations x trials.
SHARD_ITEMS, SHARD_REPLICATES = 4096, 1000


@dataclass
class Config(BayesOptions):
    """Parameters of ``experiment=test_errors`` (``name`` names the experiment)."""

    NOTES = {  # on the Bayesian options it inherits (irsim.params.parameters)
        "bayes": (
            "They run on the same trials (table ``bayes_decisions``); the Bayesian bootstrap "
            "uses ``B`` posterior draws."),
    }

    name: str = option("test_errors", "``test_errors``.")
    tests: list[str] = option(
        list(TESTS), "Paired tests of :mod:`irsim.stats` to evaluate: any of ``t``, ``wilcoxon``, "
        "``sign``, ``randomisation``, ``paired_bootstrap``.")
    sizes: list[int] = option(
        [25, 50, 100], "Topic set sizes n of the simulated pairs (each >= 2).")
    deltas: list[float] = option(
        list(DELTAS), "True differences in mean between the experimental and the baseline system "
        "(0: Type I error).")
    alpha: list[float] = option(
        list(ALPHAS), "Significance levels; a test rejects when ``p <= alpha``.")
    alternatives: list[str] = option(
        ["two-sided"], "``two-sided``, ``greater`` (the experimental system is better) and/or "
        "``less``.")
    trials: int = option(10000, "Simulated system pairs per (metric, topic set size, delta).")
    B: int = option(1000, "Resamples of the Monte Carlo tests (randomisation, paired bootstrap).")
    pvalue: str = option(
        "count", "Monte Carlo p-value ``count/B`` (as in the papers) or ``(count+1)/(B+1)``.",
        kind='{"count", "plus_one"}')
    margin: str = option(
        "auto", "Margins of the generator: ``auto`` is empirical for discrete metrics such as "
        "P@10 and RR, else kernel.", kind='{"auto", "kernel", "empirical"}', tables="data")
    dependence: str = option(
        "pearson", "What each pair's Gaussian copula reproduces: the Pearson correlation (NORTA) "
        "or Kendall's tau.", kind='{"pearson", "kendall"}', tables="data")
    drop_duplicates: bool = option(True, "Leave out runs identical to another run.", tables="data")
    drop_bottom: float = option(
        0.0, "Leave out this share of the worst runs (Urbano et al.: 0.1).", tables="data")
    wilcoxon_method: str = option(
        "auto", ":func:`irsim.stats.wilcoxon` ``method``: ``auto``, ``exact``, ``approx`` or "
        "``r`` (R's defaults).")
    sign_threshold: float = option(
        0.0, "Tie threshold of the sign test: differences with ``|d| <=`` it are ties (Urbano et "
        "al.: 0.01).")
    bootstrap_statistic: str = option(
        "t", "Paired bootstrap statistic: studentised (``t``, Sakai) or shift (``mean``, Urbano).",
        kind='{"t", "mean"}')
    ci_level: float = option(0.95, "Level of the binomial (Clopper-Pearson) bands of the rates.")
    design: str = option(
        "shift", "``shift``: the pair's Gaussian copula and a shifted copy of the baseline's "
        "margin (tables ``test_errors``, ``test_errors_fit``). ``urbano2019``: Urbano, Lima & "
        "Hanjalic's design (:mod:`irsim.simulate`: margins and copulas selected by AIC; tables "
        "``type_1``, ``type_2``, ``type_3``, ``test_errors_families``, ``test_errors_models``); "
        "``deltas`` > 0 are the Type II/III differences, Type I is always run; ``alternatives`` "
        "``two-sided`` and ``greater`` (one-sided); ``margin`` and ``dependence`` do not apply.",
        kind='{"shift", "urbano2019"}')
    power_trials: int = option(
        0, "``urbano2019``: trials per (metric, n, delta) of Type II/III (0: ``trials``; the "
        "paper ran a tenth of the Type I trials).")
    fit_cache: str | None = option(
        None, "``urbano2019``: directory of fitted generators, keyed by the data and the fitting "
        "options (a rerun or a sweep skips fitting); None: fit every time.", tables=False)
    fit_threads: int = option(
        1, "``urbano2019``: threads of each copula selection (results do not depend on it).",
        tables=False)



@dataclass(frozen=True)
class TestErrors:
    """The known-truth study of Type I error and power (parameters as in :class:`Config`;
    ``alphas`` is its ``alpha``).

    Parameters
    ----------
    sizes, deltas, alphas, tests, alternatives, trials, B, pvalue, wilcoxon_method,
    sign_threshold, bootstrap_statistic, ci_level
        See :class:`Config`; ``deltas`` must match the data's.
    seed : int
    shard_items : int
        (metric, n, delta) configurations per shard.
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). No shard size changes a result.
    bayes, bayes_threshold, bayes_r, bayes_prob, bayes_rope
        Bayesian tests and their decision rules (:class:`Config`).

    Examples
    --------
    >>> from irsim.simulate.topics import TopicSimulator
    >>> from irsim.engine import run_study
    >>> sim = TopicSimulator.normal(means=[0.4, 0.5], sds=[0.1, 0.1], rho=[0.9])
    >>> data = prepare([sim], [0.0, 0.05])
    >>> study = TestErrors(sizes=(20,), deltas=(0.0, 0.05), alphas=(0.05,), trials=300,
    ...                    tests=("t", "sign"), B=200)
    >>> tables, _ = run_study(study, data)
    >>> t = tables["test_errors"].to_pandas()
    >>> t[["test", "delta", "trials"]].values.tolist()[:2]
    [['t', 0.0, 300], ['sign', 0.0, 300]]
    >>> power = t[(t.delta > 0) & (t.test == "t")].rate   # delta = 5 sd(z) / sqrt(n)
    >>> bool(power.iloc[0] > 0.95)
    True
    """

    __test__ = False  # not a pytest class

    sizes: tuple[int, ...] = (25, 50, 100)
    deltas: tuple[float, ...] = DELTAS
    alphas: tuple[float, ...] = ALPHAS
    tests: tuple[str, ...] = TESTS
    alternatives: tuple[str, ...] = ("two-sided",)
    trials: int = 10000
    B: int = 1000
    seed: int = 0
    pvalue: str = "count"
    wilcoxon_method: str = "auto"
    sign_threshold: float = 0.0
    bootstrap_statistic: str = "t"
    ci_level: float = 0.95
    shard_items: int = SHARD_ITEMS
    shard_replicates: int = SHARD_REPLICATES
    bayes: tuple[str, ...] = ()
    bayes_threshold: float = BAYES_OPTIONS["bayes_threshold"]
    bayes_r: float = BAYES_OPTIONS["bayes_r"]
    bayes_prob: float = BAYES_OPTIONS["bayes_prob"]
    bayes_rope: float = BAYES_OPTIONS["bayes_rope"]
    name: str = field(default="test_errors", init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        self._check_bayes()
        set_(self, "tests", tuple(self.tests))
        if not self.tests:
            raise ConfigError(f"{param('tests')} must list at least one test")
        for t in self.tests:
            if t not in TESTS:
                raise unknown_name("test for experiment=test_errors", t, TESTS)
        set_(self, "alternatives", tuple(self.alternatives))
        if not self.alternatives:
            raise ConfigError(f"{param('alternatives')} must list at least one alternative")
        for a in self.alternatives:
            if a not in ALTERNATIVES:
                raise unknown_name("alternative", a, ALTERNATIVES)
        sizes = tuple(check_positive_int(n, param("sizes")) for n in self.sizes)
        if not sizes or min(sizes) < 2:
            raise ConfigError(f"{param('sizes')} must list topic set sizes >= 2, got "
                              f"{list(self.sizes)}")
        set_(self, "sizes", sizes)
        deltas = tuple(float(d) for d in self.deltas)
        if not deltas or not all(math.isfinite(d) for d in deltas):
            raise ConfigError(f"{param('deltas')} must list finite numbers, got "
                              f"{list(self.deltas)}")
        set_(self, "deltas", deltas)
        set_(self, "alphas", check_alphas(self.alphas, param("alpha")))
        set_(self, "trials", check_positive_int(self.trials, param("trials")))
        set_(self, "B", check_positive_int(self.B, param("B")))
        check_simulated_tests(self)

    def _check_bayes(self) -> None:
        for k, v in BayesRules.of(self).options().items():  # checked, normalised
            object.__setattr__(self, k, v)

    @property
    def bayes_rules(self) -> BayesRules:
        """The Bayesian tests and their rules (:class:`~irsim.kit.common.BayesRules`)."""
        return BayesRules.of(self)

    def bayes_rule(self, name: str) -> str:
        """The decision rule of Bayesian test `name` as table ``bayes_decisions`` spells it.

        Examples
        --------
        >>> s = TestErrors(bayes=("jzs_bf", "t_posterior"))
        >>> s.bayes_rule("jzs_bf"), s.bayes_rule("t_posterior")
        ('BF10 >= 3 (r=0.7071)', '95% HDI vs ROPE +-0.01')
        """
        return self.bayes_rules.rule(name, self.B)

    def bayes_codes(self, name: str, x: np.ndarray, y: np.ndarray,
                    key: tuple[int, ...]) -> np.ndarray:
        """Decision codes (indices of :data:`irsim.stats.bayes.DECISIONS`) of Bayesian test
        `name` for every trial (row) of ``x - y``, one batched call. The Bayesian bootstrap
        draws its weights from the stream ``test_errors/bayesian_bootstrap`` keyed by `key`
        (the trial block's coordinates, as the Monte Carlo tests)."""
        return self.bayes_rules.codes(name, x, y, B=self.B, seed=self.seed,
                                      study=f"test_errors/{name}", key=key)

    def bayes_table(self, counts: np.ndarray, trials: np.ndarray, keys: list[dict]) -> pa.Table:
        """Table ``bayes_decisions`` from the decision counts (configurations, tests, 4)
        and the trials per configuration; `keys` gives each configuration's metric, n and
        delta."""
        return bayes_decisions_table(counts, trials, keys, self.bayes,
                                     [self.bayes_rule(b) for b in self.bayes], self.ci_level)

    # -- plan ---------------------------------------------------------------------------
    def _configs(self, data: SimulationData) -> int:
        if tuple(data.deltas) != self.deltas:
            raise ConfigError(f"the data were prepared for deltas {list(data.deltas)}, the "
                              f"study has {list(self.deltas)}")
        return len(data.simulators) * len(self.sizes) * len(self.deltas)

    def config(self, item: int) -> tuple[int, int, int]:
        """``(metric index, size index, delta index)`` of configuration `item`."""
        nd, ns = len(self.deltas), len(self.sizes)
        return item // (ns * nd), (item // nd) % ns, item % nd

    def plan(self, data: SimulationData) -> list[Shard]:
        """Configuration blocks x trial blocks."""
        return shard_grid(self._configs(data), self.shard_items, self.trials,
                          aligned_block(self.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; the urbano2019 design's generators through the
        data; `design` and `power_trials` apply to :class:`UrbanoStudy`, which adds them)."""
        return fingerprint(self, Config, renamed={"alpha": "alphas", "design": None,
                                                  "power_trials": None})

    def fields(self, data: SimulationData) -> dict[str, Count]:
        """Per configuration: rejections per (test, alternative, alpha), trials, and the
        fixed-point sums of the trials' mean differences and their squares."""
        n = self._configs(data)
        shape = (n, len(self.tests), len(self.alternatives), len(self.alphas))
        return {"rejections": Count(shape, along="items"),
                "trials": Count((n,), along="items"),
                "diff": Count((n, 2), along="items"),
                **type_m_fields(self.trials, n, len(self.tests), len(self.alternatives),
                                self.shard_items),
                **self.bayes_fields(n)}

    def bayes_fields(self, configs: int) -> dict[str, Count]:
        """``bayes``: decisions per (configuration, Bayesian test, decision), if any."""
        if not self.bayes:
            return {}
        return {"bayes": Count((configs, len(self.bayes), len(DECISIONS)), along="items")}

    # -- kernel -------------------------------------------------------------------------
    def kernel(self, shard: Shard, data: SimulationData) -> Partial:
        """Rejection counters and summed mean differences of one shard."""
        self._configs(data)
        i0, i1 = shard.items
        alphas = np.asarray(self.alphas)
        rej = np.zeros((i1 - i0, len(self.tests), len(self.alternatives), len(alphas)),
                       np.int64)
        trials = np.zeros(i1 - i0, np.int64)
        diff = np.zeros((i1 - i0, 2), np.int64)  # fixed-point sums of mean(z), mean(z)^2
        record = TypeMRecord(shard, len(self.tests), len(self.alternatives), self.alphas)
        bayes = np.zeros((i1 - i0, len(self.bayes), len(DECISIONS)), np.int64)
        groups: dict[tuple[int, int], list[int]] = {}
        for item in range(i0, i1):
            mi, si, di = self.config(item)
            groups.setdefault((mi, si), []).append(di)
        for (mi, si), dis in groups.items():  # loops over metrics and sizes
            sim, n = data.simulators[mi], self.sizes[si]
            mkey = study_key(sim.metric)
            for a, b in unit_ranges(*shard.reps, REPLICATE_BLOCK):
                base, pair, z1, z2 = self._latent(data, mi, n, a, b)
                key = (mkey, a // REPLICATE_BLOCK)
                for di in dis:  # loop over deltas
                    theta = data.thetas[mi][di, base]
                    y, x = sim.scores(pair, z1, z2, margin_a=base, margin_b=base,
                                      theta_b=theta)
                    row = (mi * len(self.sizes) + si) * len(self.deltas) + di - i0
                    trials[row] += b - a
                    md = (x - y).mean(axis=1)
                    diff[row, 0] += int(np.round(md * DIFF_SCALE).astype(np.int64).sum())
                    diff[row, 1] += int(np.round(md * md * DIFF_SCALE).astype(np.int64).sum())
                    if self.deltas[di] != 0.0:
                        record.diff(row + i0, a, md)
                    for ti, test in enumerate(self.tests):
                        p = self.pvalues(test, self.alternatives, x, y, key)
                        rej[row, ti] += np.count_nonzero(
                            p[:, :, None] <= alphas[None, None, :], axis=0)
                        if self.deltas[di] != 0.0:
                            record.levels(row + i0, a, ti, p)
                    for bi, name in enumerate(self.bayes):  # loop over the Bayesian tests
                        bayes[row, bi] += np.bincount(self.bayes_codes(name, x, y, key),
                                                      minlength=len(DECISIONS))
        out = {"rejections": rej, "trials": trials, "diff": diff, **record.partial()}
        if self.bayes:
            out["bayes"] = bayes
        return out

    def _latent(self, data: SimulationData, mi: int, n: int, a: int, b: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Trials ``[a, b)``: baseline system, pair and two (trials, n) normals."""
        sim = data.simulators[mi]
        ordered = data.trial_pairs[mi]

        def draw(rng: np.random.Generator, m: int) -> np.ndarray:
            return np.concatenate([rng.random((m, 1)), rng.standard_normal((m, 2 * n))],
                                  axis=1)

        block = blocked_draws(self.seed, TOPIC_STREAM, (study_key(sim.metric), n), a, b,
                              draw)
        pick = np.minimum((block[:, 0] * len(ordered)).astype(np.int64), len(ordered) - 1)
        base, pair = ordered[pick, 0], ordered[pick, 1]
        return base, pair, block[:, 1 : n + 1], block[:, n + 1 :]

    def pvalues(self, test: str, alternatives: tuple[str, ...], x: np.ndarray,
                y: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
        """p-values of `test` for every trial (row) of ``x - y`` and alternative: shape
        (trials, alternatives). Monte Carlo tests draw their resamples from the stream
        ``test_errors/<test>`` keyed by `key`, once for all alternatives."""
        spec = get_test(test)
        options: dict = {}
        if test == "wilcoxon":
            options["method"] = self.wilcoxon_method
        elif test == "sign":
            options["threshold"] = float(self.sign_threshold)
        elif test == "paired_bootstrap":
            options["statistic"] = self.bootstrap_statistic
        if spec.monte_carlo:
            options.update(B=self.B, seed=self.seed, study=f"test_errors/{test}", key=key,
                           pvalue_mode=self.pvalue)
            p = spec.function(x, y, alternative=tuple(alternatives), **options).pvalue
            return np.asarray(p).reshape(len(x), len(alternatives))
        return np.stack([np.atleast_1d(spec.function(x, y, alternative=alt, **options).pvalue)
                         for alt in alternatives], axis=1)

    # -- reduce -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: SimulationData
                 ) -> dict[str, pa.Table]:
        """The rates with their Clopper-Pearson bands, one row per (metric, test,
        alternative, n, delta, alpha), and the generator's fit table."""
        rej, counts, diff = merged["rejections"], merged["trials"], merged["diff"]
        cols: dict[str, list] = {k: [] for k in (
            "metric", "test", "alternative", "n", "delta", "alpha", "trials", "rejections")}
        mean_diff, mean_diff_se = [], []
        for item in range(len(counts)):
            mi, si, di = self.config(item)
            k = counts[item]
            md = diff[item, 0] / DIFF_SCALE / max(k, 1)
            var = max(diff[item, 1] / DIFF_SCALE / max(k, 1) - md * md, 0.0)
            se = math.sqrt(var / (k - 1)) if k > 1 else float("nan")
            for ti, test in enumerate(self.tests):
                for ai, alt in enumerate(self.alternatives):
                    for li, alpha in enumerate(self.alphas):
                        cols["metric"].append(data.simulators[mi].metric)
                        cols["test"].append(test)
                        cols["alternative"].append(alt)
                        cols["n"].append(self.sizes[si])
                        cols["delta"].append(self.deltas[di])
                        cols["alpha"].append(alpha)
                        cols["trials"].append(int(k))
                        cols["rejections"].append(int(rej[item, ti, ai, li]))
                        mean_diff.append(md)
                        mean_diff_se.append(se)
        k = np.asarray(cols["rejections"], np.int64)
        t = np.asarray(cols["trials"], np.int64)
        lo, hi = clopper_pearson(k, t, self.ci_level)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = k / t
        table = build_table("test_errors", {
            **cols, "trials": t, "rejections": k, "rate": rate, "ci_lo": lo, "ci_hi": hi,
            "mean_diff": mean_diff, "mean_diff_se": mean_diff_se})
        out = {"test_errors": table, "test_errors_fit": fit_table(data),
               "type_m_s": self._type_m_s(merged, data)}
        if self.bayes:
            keys = []
            for item in range(len(counts)):
                mi, si, di = self.config(item)
                keys.append({"metric": data.simulators[mi].metric, "n": self.sizes[si],
                             "delta": self.deltas[di]})
            out["bayes_decisions"] = self.bayes_table(merged["bayes"], counts, keys)
        return out

    def _type_m_s(self, merged: dict[str, np.ndarray], data: SimulationData) -> pa.Table:
        """Table ``type_m_s`` from the per-trial records (delta = 0: null Type S / M)."""
        rows = TypeMRows(self.tests, self.alphas, self.ci_level)
        q, code = merged_records(merged, len(merged["trials"]), self.shard_items)
        rej = merged["rejections"]
        for item in range(len(merged["trials"])):
            mi, si, di = self.config(item)
            delta, k = self.deltas[di], int(merged["trials"][item])
            for ti, test in enumerate(self.tests):
                for ai, alt in enumerate(self.alternatives):
                    keys = {"metric": data.simulators[mi].metric, "n": self.sizes[si],
                            "delta": delta, "test": test, "alternative": alt}
                    if delta == 0.0:
                        rows.add_null(keys, k, rej[item, ti, ai])
                    else:
                        rows.add(keys, q[:k, item], code[:k, item, ti, ai], delta)
        return rows.table()


def bayes_decisions_table(counts: np.ndarray, trials: np.ndarray, keys: list[dict],
                          tests: tuple[str, ...], rules: list[str], ci_level: float
                          ) -> pa.Table:
    """Table ``bayes_decisions``: one row per (configuration, Bayesian test) from the integer
    decision counts.

    Parameters
    ----------
    counts : ndarray of int, shape (configurations, tests, 4)
        Trials per decision, in the order of :data:`irsim.stats.bayes.DECISIONS`.
    trials : ndarray of int, shape (configurations,)
    keys : list of dict
        ``metric``, ``n`` and ``delta`` of each configuration.
    tests, rules : sequences of str
        The Bayesian tests and their rules (:meth:`TestErrors.bayes_rule`).
    ci_level : float
        Level of the Clopper-Pearson intervals.

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> t = bayes_decisions_table(np.array([[[3, 1, 80, 16]], [[40, 2, 8, 50]]]),
    ...                           np.array([100, 100]),
    ...                           [{"metric": "AP", "n": 25, "delta": 0.0},
    ...                            {"metric": "AP", "n": 25, "delta": 0.02}],
    ...                           ("jzs_bf",), ["BF10 >= 3"], 0.95).to_pandas()
    >>> t[["delta", "different_rate", "power", "wrong_sign_rate", "equivalent_rate"]
    ...   ].values.tolist()
    [[0.0, 0.04, nan, nan, 0.8], [0.02, 0.42, 0.4, 0.02, 0.08]]
    """
    cols: dict[str, list] = {c: [] for c in ("metric", "n", "delta", "test", "rule", "trials",
                                             "better", "worse", "equivalent", "undecided")}
    right, wrong = [], []
    for item, key in enumerate(keys):
        k, delta = int(trials[item]), float(key["delta"])
        for bi, test in enumerate(tests):
            better, worse, equivalent, undecided = (int(v) for v in counts[item, bi])
            for c, v in (("metric", key["metric"]), ("n", int(key["n"])), ("delta", delta),
                         ("test", test), ("rule", rules[bi]), ("trials", k),
                         ("better", better), ("worse", worse), ("equivalent", equivalent),
                         ("undecided", undecided)):
                cols[c].append(v)
            right.append(better if delta > 0 else worse if delta < 0 else -1)
            wrong.append(worse if delta > 0 else better if delta < 0 else -1)
    trials_ = np.asarray(cols["trials"], np.int64)
    out: dict[str, Any] = dict(cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, hits in (("different", np.asarray(cols["better"]) + np.asarray(cols["worse"])),
                           ("power", np.asarray(right, np.int64)),
                           ("wrong_sign", np.asarray(wrong, np.int64)),
                           ("equivalent", np.asarray(cols["equivalent"], np.int64))):
            known = hits >= 0
            h = np.where(known, hits, 0)
            lo, hi = clopper_pearson(h, trials_, ci_level)
            rate = h / trials_
            stem = "power" if name == "power" else f"{name}_rate"
            lo_name = "power_lo" if name == "power" else f"{name}_lo"
            hi_name = "power_hi" if name == "power" else f"{name}_hi"
            for c, v in ((stem, rate), (lo_name, lo), (hi_name, hi)):
                out[c] = pa.array(np.where(known, v, np.nan), pa.float64(), mask=~known)
    return build_table("bayes_decisions", out)


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

# ----------------------------------------------------------------------------- urbano2019

#: Designs of the study.
DESIGNS = ("shift", "urbano2019")
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
    #: What the fit of these models did (:func:`~irsim.simulate.fit_engine.fit_collections`'s
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
    2019) ran them (parameters as in :class:`TestErrors`, whose checks and p-values it uses;
    its ``deltas`` are not used); `deltas` are the Type II/III differences (> 0; may be empty).

    Items are the (metric, n, kind) configurations, kind 0 Type I and kind ``k >= 1`` delta
    ``k - 1``; replicates are trials (``tests.trials`` for Type I, `power_trials` for the
    others). A block of trials shares its uniforms across kinds (common random numbers).

    Examples
    --------
    >>> from irsim.simulate.designs import PooledMetric
    >>> from irsim.simulate.fitting import fit_collection
    >>> from irsim.engine import run_study
    >>> rng = np.random.default_rng(0)
    >>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
    ...             + 0.08 * rng.standard_normal((8, 30)), 0, 1)
    >>> pool = PooledMetric.build("AP", [fit_collection(x, metric="AP", name="toy")], (0.05,))
    >>> base = TestErrors(sizes=(20,), alphas=(0.05,), trials=250, tests=("t",), B=100)
    >>> study = UrbanoStudy(base, 250, deltas=(0.05,))
    >>> tables, _ = run_study(study, UrbanoData((pool,), (0.05,)))
    >>> sorted(tables)
    ['test_errors_families', 'test_errors_models', 'type_1', 'type_2', 'type_3', 'type_m_s']
    >>> tables["type_1"].column("trials").to_pylist()
    [250]
    """

    tests: TestErrors
    power_trials: int
    deltas: tuple[float, ...] = ()
    name: str = field(default="test_errors", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "deltas", tuple(float(d) for d in self.deltas))
        check_positive_int(self.power_trials, param("power_trials"))
        for a in self.tests.alternatives:
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
        return len(data.pools) * len(self.tests.sizes) * self.kinds

    def config(self, item: int) -> tuple[int, int, int]:
        """``(metric index, size index, kind)`` of configuration `item`."""
        nk, ns = self.kinds, len(self.tests.sizes)
        return item // (ns * nk), (item // nk) % ns, item % nk

    def _trials(self, kind: int) -> int:
        return self.tests.trials if kind == 0 else self.power_trials

    def plan(self, data: UrbanoData) -> list[Shard]:
        """Configuration blocks x trial blocks."""
        return shard_grid(self._configs(data), self.tests.shard_items,
                          max(self.tests.trials, self.power_trials),
                          aligned_block(self.tests.shard_replicates, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables: those of its :class:`TestErrors` with the
        design's own (`design`, `power_trials`, its `deltas`)."""
        return {**self.tests.fingerprint(), "design": "urbano2019",
                "power_trials": self.power_trials, "deltas": self.deltas}

    def fields(self, data: UrbanoData) -> dict[str, Count]:
        """Per configuration: rejections in the true direction per (test, tail, alpha),
        two-sided rejections with the wrong sign per (test, alpha), and trials."""
        n, t = self._configs(data), self.tests
        return {"rejections": Count((n, len(t.tests), len(t.alternatives), len(t.alphas)),
                                    along="items"),
                "wrong": Count((n, len(t.tests), len(t.alphas)), along="items"),
                "trials": Count((n,), along="items"),
                **type_m_fields(max(t.trials, self.power_trials), n, len(t.tests),
                                len(t.alternatives), t.shard_items),
                **t.bayes_fields(n)}

    def kernel(self, shard: Shard, data: UrbanoData) -> Partial:
        """Counters of one shard (trials of a block are drawn once for every kind)."""
        t = self.tests
        i0, i1 = shard.items
        self._configs(data)
        alphas = np.asarray(t.alphas)
        rej = np.zeros((i1 - i0, len(t.tests), len(t.alternatives), len(alphas)), np.int64)
        wrong = np.zeros((i1 - i0, len(t.tests), len(alphas)), np.int64)
        trials = np.zeros(i1 - i0, np.int64)
        record = TypeMRecord(shard, len(t.tests), len(t.alternatives), t.alphas)
        bayes = np.zeros((i1 - i0, len(t.bayes), len(DECISIONS)), np.int64)
        groups: dict[tuple[int, int], list[int]] = {}
        for item in range(i0, i1):
            mi, si, kind = self.config(item)
            groups.setdefault((mi, si), []).append(kind)
        for (mi, si), kinds in groups.items():  # metrics x sizes
            pool, n = data.pools[mi], t.sizes[si]
            mkey = study_key(pool.metric)
            for u0, u1 in unit_ranges(*shard.reps, MC_UNIT):
                parts = []  # (row, kind, first trial row in the stack, trials)
                xs, ys = [], []
                for a, b in unit_ranges(u0, u1, REPLICATE_BLOCK):
                    u = None
                    for kind in kinds:  # Type I and the deltas
                        stop = min(b, self._trials(kind))
                        if stop <= a:
                            continue
                        if u is None:
                            u = blocked_draws(t.seed, URBANO_STREAM, (mkey, n), a, b,
                                              lambda rng, m, n=n: rng.random((m, 3 + 2 * n)))
                        uu = u[: stop - a]
                        base, exp = (pool.type1(uu, n) if kind == 0
                                     else pool.type2(uu, n, kind - 1))
                        row = (mi * len(t.sizes) + si) * self.kinds + kind - i0
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
                for ti, test in enumerate(t.tests):
                    pv = t.pvalues(test, t.alternatives, exp, base, key)
                    for row, kind, r0, k, first in parts:
                        if kind:
                            record.levels(row + i0, first, ti, pv[r0:r0 + k])
                    for ai, alt in enumerate(t.alternatives):
                        hit = pv[:, ai, None] <= alphas[None, :]
                        for row, kind, r0, k, _ in parts:
                            h, sg = hit[r0:r0 + k], sign[r0:r0 + k, None]
                            if alt == "two-sided":
                                rej[row, ti, ai] += np.count_nonzero(
                                    h & (sg > 0) if kind else h, axis=0)
                                wrong[row, ti] += np.count_nonzero(h & (sg < 0), axis=0)
                            else:
                                rej[row, ti, ai] += np.count_nonzero(h, axis=0)
                for bi, name in enumerate(t.bayes):  # every trial of the unit in one call
                    code = t.bayes_codes(name, exp, base, key)
                    for row, _, r0, k, _ in parts:
                        bayes[row, bi] += np.bincount(code[r0:r0 + k],
                                                      minlength=len(DECISIONS))
        out = {"rejections": rej, "wrong": wrong, "trials": trials, **record.partial()}
        if t.bayes:
            out["bayes"] = bayes
        return out

    def finalize(self, merged: dict[str, np.ndarray], data: UrbanoData
                 ) -> dict[str, pa.Table]:
        """``type_1``, ``type_2``, ``type_3`` with Clopper-Pearson bands, and the tables of
        the generators (families chosen, models)."""
        t = self.tests
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
            mi, si, kind = self.config(item)
            metric, n, k = data.pools[mi].metric, t.sizes[si], int(counts[item])
            delta = 0.0 if kind == 0 else self.deltas[kind - 1]
            for ti, test in enumerate(t.tests):
                for ai, alt in enumerate(t.alternatives):
                    for li, alpha in enumerate(t.alphas):
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
            lo, hi = clopper_pearson(hits, tr, t.ci_level)
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = hits / tr
            if k == 1:
                del cols["delta"]
            out[f"type_{k}"] = build_table(f"type_{k}", {
                **cols, "trials": tr, "rejections": hits, "rate": rate, "ci_lo": lo,
                "ci_hi": hi})
        out["type_m_s"] = self._type_m_s(merged, data)
        if t.bayes:
            keys = []
            for item in range(len(counts)):
                mi, si, kind = self.config(item)
                keys.append({"metric": data.pools[mi].metric, "n": t.sizes[si],
                             "delta": 0.0 if kind == 0 else self.deltas[kind - 1]})
            out["bayes_decisions"] = t.bayes_table(merged["bayes"], counts, keys)
        out["test_errors_families"] = families_table(data)
        out["test_errors_models"] = models_table(data)
        return out

    def _type_m_s(self, merged: dict[str, np.ndarray], data: UrbanoData) -> pa.Table:
        """Table ``type_m_s`` from the per-trial records of the Type II/III trials; the Type
        I configurations (delta = 0) give trials, significant and the Type I rate only."""
        t = self.tests
        rows = TypeMRows(t.tests, t.alphas, t.ci_level)
        q, code = merged_records(merged, len(merged["trials"]), t.shard_items)
        rej = merged["rejections"]
        for item in range(len(merged["trials"])):
            mi, si, kind = self.config(item)
            delta, k = (0.0 if kind == 0 else self.deltas[kind - 1]), int(merged["trials"][item])
            for ti, test in enumerate(t.tests):
                for ai, alt in enumerate(t.alternatives):
                    keys = {"metric": data.pools[mi].metric, "n": t.sizes[si], "delta": delta,
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


def _urbano_data(config: Config, data: Any, seed: int, deltas: tuple[float, ...],
                 engine: Engine | None = None) -> UrbanoData:
    """Fit (or read from ``fit_cache``) a generator per (metric, collection) and pool them;
    the copula selections run as shards on `engine` (:mod:`irsim.simulate.fit_engine`)."""
    from irsim.kit.loading import CollectionSet

    if isinstance(data, CollectionSet):
        parts = {m: data.of(m) for m in data.metrics}
    else:
        parts = {m: [("collection", data.select(metrics=[m]))] for m in data.metrics}
    threads = check_positive_int(config.fit_threads, param("fit_threads"))
    fits = [(metric, {"scores": matrix.metric(metric), "metric": metric, "name": cname,
                      "runs": tuple(matrix.systems), "seed": int(seed),
                      "drop_duplicates": bool(config.drop_duplicates),
                      "drop_bottom": float(config.drop_bottom), "cache_dir": config.fit_cache})
            for metric, cols in parts.items() for cname, matrix in cols]
    from irsim.simulate.designs import PooledMetric
    from irsim.simulate.fit_engine import fit_collections

    fit: dict[str, Any] = {}
    models = fit_collections([f for _, f in fits], engine=engine, threads=threads, info=fit)
    pools = [PooledMetric.build(metric, [m for (mt, _), m in zip(fits, models, strict=True)
                                         if mt == metric], deltas) for metric in parts]
    out = UrbanoData(tuple(pools), deltas)
    object.__setattr__(out, "fit_run", fit)  # not a field: not part of the data digest
    return out



def _pools_collections(config: Config) -> bool:
    """``design=urbano2019`` pools several collections of a metric (one generator per
    metric over all of them); ``design=shift`` runs on each collection."""
    return str(config.design) == "urbano2019"



# ------------------------------------------------------------------- output tables
_URBANO = "only with `experiment.design=urbano2019`"  # issue 13

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    _spec("test_errors", ("test_errors",), "Type I error and power of paired tests on "
          "simulated topics: per metric, test, alternative, n, delta and alpha.", [
              _c("metric", _S, "metric whose collection the generator was fit to"),
              _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap`"),
              _c("alternative", _S, "`two-sided`, `greater` (experimental system better) or "
                 "`less`"),
              _c("n", _I, "topics per trial"),
              _c("delta", _F, "true difference experimental - baseline mean (0: Type I error)"),
              _c("alpha", _F, "significance level: the test rejects when p <= alpha"),
              _c("trials", _I, "simulated pairs"),
              _c("rejections", _I, "trials with p <= alpha"),
              _c("rate", _F, "rejections / trials: Type I error (delta = 0) or power"),
              _c("ci_lo", _F, "Clopper-Pearson lower limit of rate (`experiment.ci_level`)"),
              _c("ci_hi", _F, "Clopper-Pearson upper limit of rate"),
              _c("mean_diff", _F, "mean over trials of the simulated mean difference "
                 "(should be delta)"),
              _c("mean_diff_se", _F, "standard error of mean_diff"),
          ]),
    _spec("test_errors_fit", ("test_errors",), "One row per metric: how the generator was fit "
          "and how closely it reproduces the collection.", [
              METRIC,
              _c("margin", _S, "margin kind: `kernel` or `empirical`"),
              _c("support", _S, "discrete support detected (e.g. `grid 1/10`); empty if none"),
              _c("systems", _I, "systems modelled"),
              _c("dropped", _I, "systems left out (duplicates, `experiment.drop_bottom`)"),
              _c("baselines", _I, "systems whose margin can be shifted to every delta"),
              _c("pairs", _I, "system pairs, one Gaussian copula each"),
              _c("dependence", _S, "dependence the copulas reproduce: `pearson` or `kendall`"),
              _c("rho_min", _F, "smallest latent copula correlation"),
              _c("rho_median", _F, "median latent copula correlation"),
              _c("rho_max", _F, "largest latent copula correlation"),
              _c("ks_mean", _F, "mean over systems of the KS distance between fitted and "
                 "observed margin"),
              _c("ks_max", _F, "largest such KS distance"),
              _c("mean_error_max", _F, "largest |fitted - observed| mean score of a system"),
          ]),
    *[_spec(f"type_{k}", ("test_errors",), title, [
        METRIC,
        _c("n", _I, "topics per trial"),
        *([] if k == 1 else [_c("delta", _F, "true difference: experimental - baseline "
                                            "mean")]),
        _c("test", _S, "`t`, `wilcoxon`, `sign`, `randomisation` or `paired_bootstrap`"),
        _c("tail", _S, "`two-sided` or `one-sided` (H1: experimental better)"),
        _c("alpha", _F, "significance level: the test rejects when p <= alpha"),
        _c("trials", _I, "simulated pairs"),
        _c("rejections", _I, what),
        _c("rate", _F, "rejections / trials: " + rate),
        _c("ci_lo", _F, "Clopper-Pearson lower limit of rate (`experiment.ci_level`)"),
        _c("ci_hi", _F, "Clopper-Pearson upper limit of rate"),
    ], when=_URBANO) for k, title, what, rate in (
        (1, "Type I error rates (design=urbano2019): both runs of a trial through the first "
            "run's margin, per metric, n, test, tail and alpha.",
         "trials with p <= alpha", "Type I error rate (should be alpha)"),
        (2, "Power (design=urbano2019): experimental margin moved to baseline mean + delta, per "
            "metric, n, delta, test, tail and alpha.",
         "trials significant with the true sign (p <= alpha, mean difference > 0)",
         "power = 1 - Type II error rate"),
        (3, "Type III error rates (design=urbano2019): two-sided tests significant with the "
            "wrong sign, per metric, n, delta, test and alpha.",
         "trials with p <= alpha and mean difference < 0", "Type III error rate"))],
    _spec("test_errors_families", ("test_errors",), "Families selected by AIC "
          "(design=urbano2019): counts per metric of the margins (one per run) and copulas "
          "(one per pair of runs) over its pooled collections.", [
              METRIC,
              _c("kind", _S, "`margin` or `copula`"),
              _c("family", _S, "margin: `truncnorm`, `beta`, `kernel`, `bbinom`, `dks`, "
                 "`categorical` (`normal`, censored, only when asked for); copula: "
                 "pyvinecopulib family and rotation (`Clayton 90`)"),
              _c("count", _I, "runs (margin) or pairs (copula) with this family"),
              _c("share", _F, "count / runs or pairs of the metric"),
          ], when=_URBANO),
    _spec("test_errors_models", ("test_errors",), "One row per (metric, collection) of "
          "design=urbano2019: the data the generator was fitted to.", [
              METRIC,
              _c("collection", _S, "collection (file stem in `collection.paths`, or the name given "
                 "it there)"),
              _c("runs", _I, "runs kept (after duplicates and `experiment.drop_bottom`)"),
              _c("dropped", _I, "runs left out"),
              _c("pairs", _I, "pairs of runs, one copula each"),
              _c("support", _S, "`continuous` or the discrete support (`grid 1/10`, "
                 "`reciprocal 1/1000`)"),
              _c("mean_error_max", _F, "largest |fitted margin mean - observed mean| of a run"),
          ], when=_URBANO),
    TYPE_M_S,
    _spec("bayes_decisions", ("test_errors",), "Decisions of the Bayesian tests of "
          "`experiment.bayes` (irsim.stats.bayes) on the same simulated trials as the "
          "significance tests, one row per metric, n, delta and Bayesian test: how many trials "
          "each rule called better, worse, equivalent or undecided, and the error rates these "
          "counts give under the known truth, with Clopper-Pearson intervals "
          "(`experiment.ci_level`). `better` means the experimental system's mean is credibly "
          "higher than the baseline's.", [
              METRIC,
              _c("n", _I, "topics per trial"),
              _c("delta", _F, "true difference experimental - baseline mean (0: both systems "
                 "have the same true mean; design=urbano2019: its Type I trials)"),
              _c("test", _S, "`jzs_bf` (JZS Bayes factor), `t_posterior` (t posterior, "
                 "HDI+ROPE) or `bayesian_bootstrap` (posterior probability)"),
              _c("rule", _S, "the decision rule and its parameters, e.g. `BF10 >= 3 "
                 "(r=0.707)`, `95% HDI vs ROPE +-0.01`, `P >= 0.95 (ROPE +-0.01, B=1000)`"),
              _c("trials", _I, "simulated trials of the configuration"),
              _c("better", _I, "trials decided `better` (experimental credibly higher)"),
              _c("worse", _I, "trials decided `worse` (experimental credibly lower)"),
              _c("equivalent", _I, "trials decided `equivalent` (jzs_bf: BF10 <= "
                 "1/threshold; otherwise the posterior inside the ROPE)"),
              _c("undecided", _I, "trials with none of the three decisions"),
              _c("different_rate", _F, "(better + worse) / trials: with delta = 0 the false "
                 "\"different\" rate, the counterpart of a test's Type I error rate"),
              _c("different_lo", _F, "Clopper-Pearson lower limit of different_rate"),
              _c("different_hi", _F, "Clopper-Pearson upper limit of different_rate"),
              _c("power", _F, "trials decided in the true direction (better if delta > 0, "
                 "worse if delta < 0) / trials; null when delta = 0"),
              _c("power_lo", _F, "Clopper-Pearson lower limit of power"),
              _c("power_hi", _F, "Clopper-Pearson upper limit of power"),
              _c("wrong_sign_rate", _F, "trials decided in the wrong direction (worse if "
                 "delta > 0, better if delta < 0) / trials; null when delta = 0"),
              _c("wrong_sign_lo", _F, "Clopper-Pearson lower limit of wrong_sign_rate"),
              _c("wrong_sign_hi", _F, "Clopper-Pearson upper limit of wrong_sign_rate"),
              _c("equivalent_rate", _F, "equivalent / trials: a correct decision when |delta| "
                 "is inside the ROPE (`experiment.bayes_rope`; for jzs_bf when delta = 0), an "
                 "error when it is outside"),
              _c("equivalent_lo", _F, "Clopper-Pearson lower limit of equivalent_rate"),
              _c("equivalent_hi", _F, "Clopper-Pearson upper limit of equivalent_rate"),
          ], when="only with `experiment.bayes` set (not empty)"),
)


@study("test_errors", config=Config, data="matrix", order=70,
       tables=TABLE_SPECS,
       pools=_pools_collections, report="irsim.experiments.test_errors.report",
       description=("known-truth simulation: Type I error and power of the t, Wilcoxon, sign, "
                    "randomisation and bootstrap tests on topics simulated from a real collection "
                    "(Urbano et al. 2019)"),
       headlines={"test_errors": (
           ("metric", "test", "alternative", "n", "delta", "alpha"), "rate")},
       question=("True Type I error and power of every test, on topics simulated to look like "
                 "a real collection; Type I, II and III errors as Urbano et al. (2019) ran "
                 "them"))
def make(config: Config, data: Any, *, seed: int, shards: Shards, engine: Engine | None = None
         ) -> tuple[TestErrors | UrbanoStudy, SimulationData | UrbanoData]:
    """The study and its data: a simulator fit to every metric of `data`, the shifts of
    every delta and the eligible trial pairs (:func:`prepare`); ``design=urbano2019``: the
    generators of every (metric, collection), their copulas selected on `engine` (None: in
    process).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> matrix = synthetic_scores(systems=6, topics=30, metrics=("AP",), seed=1).matrix
    >>> study, data = make(Config(sizes=[10], deltas=[0.0, 0.02], trials=250), matrix,
    ...                    seed=0, shards=Shards())
    >>> data.metrics, len(study.plan(data)), study.shard_items
    (('AP',), 1, 4096)
    """
    urbano = config.design == "urbano2019"
    items, replicates = shards.get(URBANO_SHARD_ITEMS if urbano else SHARD_ITEMS,
                                   URBANO_SHARD_REPLICATES if urbano else SHARD_REPLICATES)
    deltas = tuple(float(d) for d in config.deltas)
    if config.design == "urbano2019":  # Type I is always run: delta 0 is not a Type II delta
        deltas = tuple(d for d in deltas if d != 0.0)
    study = TestErrors(
        sizes=tuple(int(n) for n in config.sizes),
        deltas=(0.0,) if config.design == "urbano2019" else deltas,
        alphas=tuple(config.alpha),
        tests=tuple(config.tests),
        alternatives=tuple(config.alternatives),
        trials=config.trials,
        B=config.B,
        seed=int(seed),
        pvalue=config.pvalue,
        wilcoxon_method=config.wilcoxon_method,
        sign_threshold=float(config.sign_threshold),
        bootstrap_statistic=config.bootstrap_statistic,
        ci_level=float(config.ci_level),
        shard_items=items,
        shard_replicates=replicates,
        bayes=tuple(config.bayes),
        bayes_threshold=config.bayes_threshold,
        bayes_r=config.bayes_r,
        bayes_prob=config.bayes_prob,
        bayes_rope=config.bayes_rope,
    )
    if config.design not in DESIGNS:
        raise unknown_name(param("design"), str(config.design), DESIGNS)
    if config.design == "urbano2019":
        power = int(config.power_trials) or study.trials
        urbano = UrbanoStudy(study, power, deltas)
        return urbano, _urbano_data(config, data, seed, urbano.deltas, engine)
    from irsim.kit.loading import CollectionSet

    if isinstance(data, CollectionSet):
        raise ConfigError("several collections per metric are pooled by design=urbano2019 "
                          "only")
    sims, sources = [], []
    for metric in data.metrics:
        sim = fit_simulator(data.metric(metric), metric=metric, systems=data.systems,
                            margin=config.margin, dependence=config.dependence,
                            drop_duplicates=bool(config.drop_duplicates),
                            drop_bottom=float(config.drop_bottom))
        sims.append(sim)
        sources.append(data.select(metrics=[metric], systems=sim.systems).values[0])
    return study, prepare(sims, study.deltas, sources)

