"""Known-truth simulation: Type I error and power of paired significance tests.

Design (after Urbano, Lima & Hanjalic, SIGIR 2019): for each metric of a collection, a
:class:`~irsim.sampling.simulate.TopicSimulator` is fit to the score matrix (a margin per
system, a Gaussian copula per system pair). A *trial* picks an ordered pair of systems
``(baseline, other)`` uniformly; the copula of that pair ties two new systems on ``n`` new
topics: the baseline keeps the baseline's margin and the experimental system gets the
**same margin shifted** (proportional odds, :meth:`~irsim.sampling.simulate.Margins.mean`) so that
its true mean exceeds the baseline's by exactly ``delta``. With ``delta = 0`` the shift is 0,
the two systems are exchangeable and every test's null hypothesis holds exactly (Type I
error); with ``delta > 0`` the experimental system is stochastically larger (power).

Every test of :mod:`irsim.stats` (t, Wilcoxon, sign, randomisation, paired bootstrap) runs
on the same trials; the rejections at each alpha (``p <= alpha``) are integer counters.
Trials are drawn in blocks of :data:`~irsim.sampling.rng.REPLICATE_BLOCK` keyed by (metric,
topic set size, block); the same latent draws serve every ``delta`` (common random
numbers), and each block of trials has its own Monte Carlo resamples (keyed by block), so no
number depends on shard sizes, workers or the engine.

Items are the (metric, n, delta) configurations, replicates the trials. A kernel returns
three integer counters per configuration (:class:`~irsim.engine.partials.Count` along the
items): rejections per (test, alternative, alpha), trials, and the fixed-point sums of the
simulated mean differences and their squares; the generator's fit table is computed from
the data once, in :meth:`TestErrors.finalize`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.engine.partials import Count
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.common import (
    aligned_block,
    check_alphas,
    check_positive_int,
    unit_ranges,
)
from irsim.sampling.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.sampling.simulate import SimulationData, fit_simulator, prepare
from irsim.stats import get_test
from irsim.stats._validation import ALTERNATIVES, PVALUE_MODES
from irsim.stats.wilcoxon import WILCOXON_METHODS
from irsim.tables import table as build_table

__all__ = [
    "ALPHAS",
    "DATA",
    "DELTAS",
    "DESCRIPTION",
    "TESTS",
    "Config",
    "TestErrors",
    "clopper_pearson",
    "fit_table",
    "make",
]

DESCRIPTION = ("known-truth simulation: Type I error and power of the t, Wilcoxon, sign, "
               "randomisation and bootstrap tests on topics simulated from a real collection "
               "(Urbano et al. 2019)")
DATA = "matrix"
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
class Config:
    """Parameters of ``experiment=test_errors`` (``name`` names the experiment).

    Parameters
    ----------
    tests : list of str
        Paired tests of :mod:`irsim.stats` to evaluate: any of ``t``, ``wilcoxon``,
        ``sign``, ``randomisation``, ``paired_bootstrap``.
    sizes : list of int
        Topic set sizes n of the simulated pairs (each >= 2).
    deltas : list of float
        True differences in mean between the experimental and the baseline system
        (0: Type I error).
    alpha : list of float
        Significance levels; a test rejects when ``p <= alpha``.
    alternatives : list of str
        ``two-sided``, ``greater`` (the experimental system is better) and/or ``less``.
    trials : int
        Simulated system pairs per (metric, topic set size, delta).
    B : int
        Resamples of the Monte Carlo tests (randomisation, paired bootstrap).
    pvalue : {"count", "plus_one"}
        Monte Carlo p-value ``count/B`` (as in the papers) or ``(count+1)/(B+1)``.
    margin : {"auto", "kernel", "empirical"}
        Margins of the generator: ``auto`` is empirical for discrete metrics such as P@10
        and RR, else kernel.
    dependence : {"pearson", "kendall"}
        What each pair's Gaussian copula reproduces: the Pearson correlation (NORTA) or
        Kendall's tau.
    drop_duplicates : bool
        Leave out runs identical to another run.
    drop_bottom : float
        Leave out this share of the worst runs (Urbano et al.: 0.1).
    wilcoxon_method : str
        :func:`irsim.stats.wilcoxon` ``method``: ``auto``, ``exact``, ``approx`` or ``r``
        (R's defaults).
    sign_threshold : float
        Tie threshold of the sign test: differences with ``|d| <=`` it are ties
        (Urbano et al.: 0.01).
    bootstrap_statistic : {"t", "mean"}
        Paired bootstrap statistic: studentised (``t``, Sakai) or shift (``mean``, Urbano).
    ci_level : float
        Level of the binomial (Clopper-Pearson) bands of the rates.
    """

    name: str = "test_errors"
    tests: list[str] = field(default_factory=lambda: list(TESTS))
    sizes: list[int] = field(default_factory=lambda: [25, 50, 100])
    deltas: list[float] = field(default_factory=lambda: list(DELTAS))
    alpha: list[float] = field(default_factory=lambda: list(ALPHAS))
    alternatives: list[str] = field(default_factory=lambda: ["two-sided"])
    trials: int = 10000
    B: int = 1000
    pvalue: str = "count"
    margin: str = "auto"
    dependence: str = "pearson"
    drop_duplicates: bool = True
    drop_bottom: float = 0.0
    wilcoxon_method: str = "auto"
    sign_threshold: float = 0.0
    bootstrap_statistic: str = "t"
    ci_level: float = 0.95


def clopper_pearson(k: np.ndarray, n: np.ndarray, level: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) binomial confidence interval for ``k`` successes in ``n``.

    Examples
    --------
    >>> lo, hi = clopper_pearson(np.array([0, 5]), np.array([100, 100]))
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.0164], [0.0362, 0.1128])
    """
    k = np.asarray(k, np.float64)
    n = np.asarray(n, np.float64)
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, sps.beta.ppf(tail, k, n - k + 1), 0.0)
        hi = np.where(k < n, sps.beta.ppf(1.0 - tail, k + 1, n - k), 1.0)
    return lo, hi


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

    Examples
    --------
    >>> from irsim.sampling.simulate import TopicSimulator
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
    name: str = field(default="test_errors", init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
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
        check_positive_int(self.shard_items, param("shard_items", "engine"))
        check_positive_int(self.shard_replicates, param("shard_replicates", "engine"))
        if self.pvalue not in PVALUE_MODES:
            raise unknown_name(param("pvalue"), str(self.pvalue), PVALUE_MODES)
        if self.wilcoxon_method not in WILCOXON_METHODS:
            raise unknown_name(param("wilcoxon_method"), str(self.wilcoxon_method),
                               WILCOXON_METHODS)
        if self.bootstrap_statistic not in ("t", "mean"):
            raise unknown_name(param("bootstrap_statistic"), str(self.bootstrap_statistic),
                               ("t", "mean"))
        if not float(self.sign_threshold) >= 0:
            raise ConfigError(f"{param('sign_threshold')} must be >= 0, got "
                              f"{self.sign_threshold}")
        if not 0.0 < float(self.ci_level) < 1.0:
            raise ConfigError(f"{param('ci_level')} must be in (0, 1), got {self.ci_level}")

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
        """Parameters that determine the tables."""
        keys = ("sizes", "deltas", "alphas", "tests", "alternatives", "trials", "B", "seed",
                "pvalue", "wilcoxon_method", "sign_threshold", "bootstrap_statistic",
                "ci_level")
        return {k: getattr(self, k) for k in keys}

    def fields(self, data: SimulationData) -> dict[str, Count]:
        """Per configuration: rejections per (test, alternative, alpha), trials, and the
        fixed-point sums of the trials' mean differences and their squares."""
        n = self._configs(data)
        shape = (n, len(self.tests), len(self.alternatives), len(self.alphas))
        return {"rejections": Count(shape, along="items"),
                "trials": Count((n,), along="items"),
                "diff": Count((n, 2), along="items")}

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
                    for ti, test in enumerate(self.tests):
                        for ai, alt in enumerate(self.alternatives):
                            p = self.pvalues(test, alt, x, y, key)
                            rej[row, ti, ai] += np.count_nonzero(
                                p[:, None] <= alphas[None, :], axis=0)
        return {"rejections": rej, "trials": trials, "diff": diff}

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

    def pvalues(self, test: str, alternative: str, x: np.ndarray, y: np.ndarray,
                key: tuple[int, ...]) -> np.ndarray:
        """p-values of `test` for every trial (row) of ``x - y``; Monte Carlo tests draw
        their resamples from the stream ``test_errors/<test>`` keyed by `key`."""
        spec = get_test(test)
        options: dict = {"alternative": alternative}
        if test == "wilcoxon":
            options["method"] = self.wilcoxon_method
        elif test == "sign":
            options["threshold"] = float(self.sign_threshold)
        elif test == "paired_bootstrap":
            options["statistic"] = self.bootstrap_statistic
        if spec.monte_carlo:
            options.update(B=self.B, seed=self.seed, study=f"test_errors/{test}", key=key,
                           pvalue_mode=self.pvalue)
        return np.atleast_1d(spec.function(x, y, **options).pvalue)

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
        return {"test_errors": table, "test_errors_fit": fit_table(data)}


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


def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Shards
         ) -> tuple[TestErrors, SimulationData]:
    """The study and its data: a simulator fit to every metric of `data`, the shifts of
    every delta and the eligible trial pairs (:func:`prepare`).

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_scores
    >>> matrix = synthetic_scores(systems=6, topics=30, metrics=("AP",), seed=1).matrix
    >>> study, data = make(Config(sizes=[10], deltas=[0.0, 0.02], trials=250), matrix,
    ...                    seed=0, shards=Shards())
    >>> data.metrics, len(study.plan(data)), study.shard_items
    (('AP',), 1, 4096)
    """
    items, replicates = shards.get(SHARD_ITEMS, SHARD_REPLICATES)
    study = TestErrors(
        sizes=tuple(int(n) for n in config.sizes),
        deltas=tuple(float(d) for d in config.deltas),
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
    )
    sims, sources = [], []
    for metric in data.metrics:
        sim = fit_simulator(data.metric(metric), metric=metric, systems=data.systems,
                            margin=config.margin, dependence=config.dependence,
                            drop_duplicates=bool(config.drop_duplicates),
                            drop_bottom=float(config.drop_bottom))
        sims.append(sim)
        sources.append(data.select(metrics=[metric], systems=sim.systems).values[0])
    return study, prepare(sims, study.deltas, sources)

