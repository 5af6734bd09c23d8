"""Known-truth simulation: Type I error and power of paired significance tests.

Design (after Urbano, Lima & Hanjalic, SIGIR 2019): for each metric of a collection, a
:class:`~irsim.data.simulate.TopicSimulator` is fit to the score matrix (a margin per
system, a Gaussian copula per system pair). A *trial* picks an ordered pair of systems
``(baseline, other)`` uniformly; the copula of that pair ties two new systems on ``n`` new
topics: the baseline keeps the baseline's margin and the experimental system gets the
**same margin shifted** (proportional odds, :meth:`~irsim.data.simulate.Margins.mean`) so that
its true mean exceeds the baseline's by exactly ``delta``. With ``delta = 0`` the shift is 0,
the two systems are exchangeable and every test's null hypothesis holds exactly (Type I
error); with ``delta > 0`` the experimental system is stochastically larger (power).

Every test of :mod:`irsim.stats` (t, Wilcoxon, sign, randomisation, paired bootstrap) runs
on the same trials; the rejections at each alpha (``p <= alpha``) are integer counters.
Trials are drawn in blocks of :data:`~irsim.sampling.rng.REPLICATE_BLOCK` keyed by (metric,
topic set size, block); the same latent draws serve every ``delta`` (common random
numbers), and each block of trials has its own Monte Carlo resamples (keyed by block), so no
number depends on shard sizes, workers or the engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from irsim.data.simulate import TopicSimulator
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError, unknown_name
from irsim.experiments.common import (
    aligned_block,
    check_alphas,
    check_positive_int,
    unit_ranges,
)
from irsim.sampling.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.stats import get_test
from irsim.stats._validation import ALTERNATIVES, PVALUE_MODES
from irsim.stats.wilcoxon import WILCOXON_METHODS

__all__ = [
    "ALPHAS",
    "DELTAS",
    "TESTS",
    "SimulationData",
    "TestErrors",
    "clopper_pearson",
    "prepare",
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
class SimulationData:
    """What the kernel reads: one fitted simulator per metric, and per delta the shift of
    each baseline's margin.

    Attributes
    ----------
    simulators : tuple of TopicSimulator
    deltas : tuple of float
    thetas : tuple of ndarray, each (deltas, systems)
        Proportional-odds shift giving system s's margin the mean ``mean_s + delta``
        (NaN where unattainable).
    trial_pairs : tuple of ndarray, each (ordered pairs, 2)
        ``(baseline system, pair index)`` of every ordered pair whose baseline reaches all
        deltas; a trial draws one uniformly.
    diagnostics : tuple of dict
        Fit statistics per metric (for the ``test_errors_fit`` table).
    """

    simulators: tuple[TopicSimulator, ...]
    deltas: tuple[float, ...]
    thetas: tuple[np.ndarray, ...]
    trial_pairs: tuple[np.ndarray, ...]
    diagnostics: tuple[dict, ...] = field(default=())

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in simulator order."""
        return tuple(s.metric for s in self.simulators)

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {
            "metrics": list(self.metrics),
            "systems": int(self.simulators[0].margins.systems) if self.simulators else 0,
            "topics": "simulated",
            "source": "generator fitted to the collection (see test_errors_fit)",
            "deltas": list(self.deltas),
        }


def prepare(simulators: Sequence[TopicSimulator], deltas: Sequence[float],
            sources: Sequence[np.ndarray] | None = None) -> SimulationData:
    """Shifts for every (delta, system) and the eligible ordered pairs of each metric.

    A system is a baseline only if its margin can be shifted to every ``mean + delta``
    (a discrete margin cannot pass its largest score). `sources` (the fitted rows of the
    score matrix per metric, optional) add fit diagnostics.

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.3, 0.4, 0.5], sds=[0.1] * 3, rho=[0.5] * 3)
    >>> data = prepare([sim], [0.0, 0.05])
    >>> data.thetas[0][0].tolist(), len(data.trial_pairs[0])   # 3 pairs x 2 orientations
    ([0.0, 0.0, 0.0], 6)
    >>> shifted = sim.margins.mean(data.thetas[0][1]) - sim.margins.mean()
    >>> shifted.round(12).tolist()
    [0.05, 0.05, 0.05]
    """
    deltas = tuple(float(d) for d in deltas)
    thetas, pairs, diags = [], [], []
    for i, sim in enumerate(simulators):
        m = sim.margins
        base = m.mean()
        theta = np.stack([np.zeros(m.systems) if d == 0.0 else m.shift_for_mean(base + d)
                          for d in deltas])
        ok = np.isfinite(theta).all(axis=0)
        p = np.arange(sim.pairs)
        ordered = np.concatenate([np.stack([sim.pair_a, p], axis=1),
                                  np.stack([sim.pair_b, p], axis=1)])
        order = np.lexsort((ordered[:, 0], ordered[:, 1]))
        ordered = ordered[order]
        ordered = ordered[ok[ordered[:, 0]]]
        if len(ordered) == 0:
            raise ConfigError(f"metric {sim.metric}: no system's margin can be shifted to "
                              f"its mean + {max(deltas)}; use smaller deltas")
        thetas.append(theta)
        pairs.append(np.ascontiguousarray(ordered, dtype=np.int64))
        diag = {"baselines": int(np.count_nonzero(ok))}
        if sources is not None:
            src = np.asarray(sources[i], np.float64)
            ks = m.ks_distance(src)
            diag.update(ks_mean=float(ks.mean()), ks_max=float(ks.max()),
                        mean_error_max=float(np.abs(base - src.mean(axis=1)).max()))
        diags.append(diag)
    return SimulationData(tuple(simulators), deltas, tuple(thetas), tuple(pairs),
                          tuple(diags))


@dataclass(frozen=True)
class TestErrors:
    """The known-truth study of Type I error and power.

    Parameters
    ----------
    sizes : sequence of int
        Topic set sizes n.
    deltas : sequence of float
        True differences in mean (0 = Type I error); must match the data's.
    alphas : sequence of float
        Significance levels; a test rejects when ``p <= alpha``.
    tests : sequence of str
        Any of :data:`TESTS`.
    alternatives : sequence of str
        ``two-sided`` and/or ``greater`` (the experimental system is better) / ``less``.
    trials : int
        Simulated pairs per (metric, n, delta).
    B : int
        Resamples of the Monte Carlo tests (randomisation, paired bootstrap).
    seed : int
    pvalue : {"count", "plus_one"}
        Monte Carlo p-value ``count/B`` or ``(count+1)/(B+1)``.
    wilcoxon_method : str
        :func:`irsim.stats.wilcoxon` ``method`` (``r`` reproduces R's defaults).
    sign_threshold : float
        Tie threshold of the sign test (Urbano et al.: 0.01).
    bootstrap_statistic : {"t", "mean"}
        Studentised (Sakai) or shift (Urbano) paired bootstrap.
    ci_level : float
        Level of the Clopper-Pearson bands.
    shard_configs : int
        (metric, n, delta) configurations per shard.
    shard_trials : int
        Trials per shard (rounded up to a multiple of 250). No shard size changes a result.

    Examples
    --------
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
    shard_configs: int = 4096
    shard_trials: int = 1000
    name: str = field(default="test_errors", init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "tests", tuple(self.tests))
        if not self.tests:
            raise ConfigError("experiment.tests must list at least one test")
        for t in self.tests:
            if t not in TESTS:
                raise unknown_name("test for experiment=test_errors", t, TESTS)
        set_(self, "alternatives", tuple(self.alternatives))
        if not self.alternatives:
            raise ConfigError("experiment.alternatives must list at least one alternative")
        for a in self.alternatives:
            if a not in ALTERNATIVES:
                raise unknown_name("alternative", a, ALTERNATIVES)
        sizes = tuple(check_positive_int(n, "experiment.sizes") for n in self.sizes)
        if not sizes or min(sizes) < 2:
            raise ConfigError(f"experiment.sizes must list topic set sizes >= 2, got "
                              f"{list(self.sizes)}")
        set_(self, "sizes", sizes)
        deltas = tuple(float(d) for d in self.deltas)
        if not deltas or not all(math.isfinite(d) for d in deltas):
            raise ConfigError(f"experiment.deltas must list finite numbers, got "
                              f"{list(self.deltas)}")
        set_(self, "deltas", deltas)
        set_(self, "alphas", check_alphas(self.alphas))
        set_(self, "trials", check_positive_int(self.trials, "experiment.trials"))
        set_(self, "B", check_positive_int(self.B, "experiment.B"))
        check_positive_int(self.shard_configs, "engine.shard_pairs")
        check_positive_int(self.shard_trials, "engine.shard_replicates")
        if self.pvalue not in PVALUE_MODES:
            raise unknown_name("experiment.pvalue", str(self.pvalue), PVALUE_MODES)
        if self.wilcoxon_method not in WILCOXON_METHODS:
            raise unknown_name("experiment.wilcoxon_method", str(self.wilcoxon_method),
                               WILCOXON_METHODS)
        if self.bootstrap_statistic not in ("t", "mean"):
            raise unknown_name("experiment.bootstrap_statistic",
                               str(self.bootstrap_statistic), ("t", "mean"))
        if not float(self.sign_threshold) >= 0:
            raise ConfigError(f"experiment.sign_threshold must be >= 0, got "
                              f"{self.sign_threshold}")
        if not 0.0 < float(self.ci_level) < 1.0:
            raise ConfigError(f"experiment.ci_level must be in (0, 1), got {self.ci_level}")

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
        return shard_grid(self._configs(data), self.shard_configs, self.trials,
                          aligned_block(self.shard_trials, REPLICATE_BLOCK))

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        keys = ("sizes", "deltas", "alphas", "tests", "alternatives", "trials", "B", "seed",
                "pvalue", "wilcoxon_method", "sign_threshold", "bootstrap_statistic",
                "ci_level")
        return {k: getattr(self, k) for k in keys}

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

    def reducer(self, data: SimulationData) -> _TestErrorsReducer:
        """A fresh reducer for this study on `data`."""
        return _TestErrorsReducer(self, data)


class _TestErrorsReducer:
    """Integer counters per configuration; tables at the end."""

    def __init__(self, study: TestErrors, data: SimulationData):
        self.study = study
        self.data = data
        n = study._configs(data)
        self.rej = np.zeros((n, len(study.tests), len(study.alternatives),
                             len(study.alphas)), np.int64)
        self.trials = np.zeros(n, np.int64)
        self.diff = np.zeros((n, 2), np.int64)

    def combine(self, shard: Shard, partial: Partial) -> None:
        sl = slice(*shard.items)
        self.rej[sl] += partial["rejections"]
        self.trials[sl] += partial["trials"]
        self.diff[sl] += partial["diff"]

    def finalize(self) -> dict[str, pa.Table]:
        study, data = self.study, self.data
        cols: dict[str, list] = {k: [] for k in (
            "metric", "test", "alternative", "n", "delta", "alpha", "trials", "rejections")}
        mean_diff, mean_diff_se = [], []
        for item in range(len(self.trials)):
            mi, si, di = study.config(item)
            k = self.trials[item]
            md = self.diff[item, 0] / DIFF_SCALE / max(k, 1)
            var = max(self.diff[item, 1] / DIFF_SCALE / max(k, 1) - md * md, 0.0)
            se = math.sqrt(var / (k - 1)) if k > 1 else float("nan")
            for ti, test in enumerate(study.tests):
                for ai, alt in enumerate(study.alternatives):
                    for li, alpha in enumerate(study.alphas):
                        cols["metric"].append(data.simulators[mi].metric)
                        cols["test"].append(test)
                        cols["alternative"].append(alt)
                        cols["n"].append(study.sizes[si])
                        cols["delta"].append(study.deltas[di])
                        cols["alpha"].append(alpha)
                        cols["trials"].append(int(k))
                        cols["rejections"].append(int(self.rej[item, ti, ai, li]))
                        mean_diff.append(md)
                        mean_diff_se.append(se)
        k = np.asarray(cols["rejections"], np.int64)
        t = np.asarray(cols["trials"], np.int64)
        lo, hi = clopper_pearson(k, t, study.ci_level)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = k / t
        table = pa.table({
            "metric": pa.array(cols["metric"], pa.string()),
            "test": pa.array(cols["test"], pa.string()),
            "alternative": pa.array(cols["alternative"], pa.string()),
            "n": pa.array(cols["n"], pa.int64()),
            "delta": pa.array(cols["delta"], pa.float64()),
            "alpha": pa.array(cols["alpha"], pa.float64()),
            "trials": pa.array(t, pa.int64()),
            "rejections": pa.array(k, pa.int64()),
            "rate": pa.array(rate, pa.float64()),
            "ci_lo": pa.array(lo, pa.float64()),
            "ci_hi": pa.array(hi, pa.float64()),
            "mean_diff": pa.array(mean_diff, pa.float64()),
            "mean_diff_se": pa.array(mean_diff_se, pa.float64()),
        })
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
    return pa.Table.from_pylist(rows)


DESCRIPTION = ("known-truth simulation: Type I error and power of the t, Wilcoxon, sign, "
               "randomisation and bootstrap tests on topics simulated from a real collection "
               "(Urbano et al. 2019)")


def build(cfg) -> tuple[TestErrors, SimulationData]:
    """Fit a simulator to every metric of the configured collection; the study."""
    from irsim.data.simulate import fit_simulator
    from irsim.experiments.loading import engine_shards, score_matrix

    matrix = score_matrix(cfg)
    e = cfg.experiment
    deltas = tuple(float(d) for d in e.deltas)
    sims, sources = [], []
    for metric in matrix.metrics:
        sim = fit_simulator(matrix.metric(metric), metric=metric, systems=matrix.systems,
                            margin=e.get("margin", "auto"),
                            dependence=e.get("dependence", "pearson"),
                            drop_duplicates=bool(e.get("drop_duplicates", True)),
                            drop_bottom=float(e.get("drop_bottom", 0.0)))
        sims.append(sim)
        sources.append(matrix.select(metrics=[metric], systems=sim.systems).values[0])
    data = prepare(sims, deltas, sources)
    shard_configs, shard_trials = engine_shards(cfg).get(4096, 1000)
    study = TestErrors(
        sizes=tuple(int(n) for n in e.sizes),
        deltas=deltas,
        alphas=tuple(e.alpha),
        tests=tuple(e.tests),
        alternatives=tuple(e.get("alternatives", ["two-sided"])),
        trials=e.trials,
        B=e.B,
        seed=cfg.seed,
        pvalue=e.get("pvalue", "count"),
        wilcoxon_method=e.get("wilcoxon_method", "auto"),
        sign_threshold=float(e.get("sign_threshold", 0.0)),
        bootstrap_statistic=e.get("bootstrap_statistic", "t"),
        ci_level=float(e.get("ci_level", 0.95)),
        shard_configs=shard_configs,
        shard_trials=shard_trials,
    )
    return study, data


def report_sections(tables: dict, run_dir) -> list[str]:
    """Type I error and power tables (at alpha = 0.05 or the nearest level) and plots."""
    from irsim.report import markdown_table
    from irsim.report.test_errors import power_plots, summary_table, type1_plots

    lines: list[str] = []
    if "test_errors_fit" in tables:
        lines += ["## Generator", "",
                  "One simulator per metric, fit to the collection: margins (kernel: logit-"
                  "scale kernel density with the observed atoms at 0 and 1 and the observed "
                  "mean; empirical: the observed scores, for discrete metrics), a Gaussian "
                  "copula per system pair reproducing its Pearson correlation. ks_mean/ks_max: "
                  "KS distance between fitted and observed margins.", "",
                  markdown_table(tables["test_errors_fit"]), ""]
    if "test_errors" not in tables:
        return lines
    te = tables["test_errors"]
    type1, alpha = summary_table(te, delta=0.0)
    if type1 is not None:
        lines += ["## Type I error", "",
                  f"Share of trials with p <= alpha = {alpha} when the two systems are "
                  "exchangeable (delta = 0); 95% Clopper-Pearson interval in brackets. A "
                  "test is exact when alpha lies inside its interval.", "",
                  markdown_table(type1, max_rows=60), ""]
        for path in type1_plots(te, run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    power, alpha = summary_table(te, delta=None)
    if power is not None:
        lines += ["## Power", "",
                  f"Share of trials with p <= alpha = {alpha} when the experimental system's "
                  "true mean exceeds the baseline's by delta.", "",
                  markdown_table(power, max_rows=60), ""]
        for path in power_plots(te, run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
