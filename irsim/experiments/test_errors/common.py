"""What both designs of experiment=test_errors share: the tests, deltas and alphas they run
by default, the shared parameters of a study with their checks, the p-values of a block of
trials and the Bayesian decisions (:class:`TrialTests`), and the table of the Bayesian
tests' decisions (``bayes_decisions``)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.engine.partials import Count
from irsim.errors import ConfigError, param
from irsim.kit.common import SimulatedTests, check_positive_int, normalised_tests
from irsim.params import Options, fingerprint, normalise
from irsim.rng import REPLICATE_BLOCK
from irsim.stats import get_test
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import clopper_pearson
from irsim.stats.registry import tests_of
from irsim.tables import table as build_table

if TYPE_CHECKING:
    from irsim.engine.session import Engine
    from irsim.experiments import Shards

__all__ = ["TESTS", "DELTAS", "ALPHAS", "SHARD_ITEMS", "SHARD_REPLICATES", "Design",
           "TrialTests", "bayes_decisions_table", "normalised_config"]

#: Tests this study runs by default: the paired tests of :data:`irsim.stats.TESTS` (it takes
#: any paired test registered, asked when it checks its options).
TESTS = tests_of("paired")
#: Default true differences (0: Type I error).
DELTAS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10)
#: Default significance levels (Urbano et al. 2019).
ALPHAS = (0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,
          0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1)
#: Default shard sizes of design=shift: (metric, n, delta) configurations x trials.
SHARD_ITEMS, SHARD_REPLICATES = 4096, 1000


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


@dataclass
class Design(Options):
    """A design of experiment=test_errors: one option of the config group
    ``experiment/design`` (``experiment/design=<name>`` on the command line, ``design=`` in
    Python), whose fields are the design's own parameters (``experiment.design.<key>``) and
    nothing else. A design knows its data preparation, whether it pools the collections of a
    metric and its study class (:meth:`make`); the study's ``make`` only calls it.

    Subclasses: :class:`~irsim.experiments.test_errors.shift.Shift` and
    :class:`~irsim.experiments.test_errors.urbano2019.Urbano2019`; each declares a field
    ``name`` (its option's name, what the manifest records).
    """

    #: Whether several collections of a metric are read pooled (one generator over all of
    #: them) rather than one study per collection.
    POOLS: ClassVar[bool] = False
    #: The option's name in the group (the default of its ``name`` field).
    NAME: ClassVar[str] = ""

    def __post_init__(self) -> None:
        normalise(self, "design.")
        name = getattr(self, "name", self.NAME)
        if name != self.NAME:
            raise ConfigError(f"design name {name!r} is not this design ({self.NAME}): select "
                              f"a design with experiment/design={name} (Python: "
                              f"design={name!r})")

    def make(self, config: Any, data: Any, *, seed: int, shards: Shards,
             engine: Engine | None = None) -> tuple[Any, Any]:
        """The study object and the data its kernel reads, from the study's `config` (the
        shared parameters) and this design's own."""
        raise NotImplementedError(f"{type(self).__name__} does not define make")



def normalised_config(c: Any) -> Any:
    """A test_errors ``Config`` checked beyond its fields' bounds (tests paired, listed;
    alphas listed once; alternatives and sizes not empty; deltas finite) and normalised
    (lists; deltas as floats; the Bayesian options as :class:`~irsim.kit.common.BayesRules` holds
    them)."""
    shared = normalised_tests(c, tests_of("paired"), "test for experiment=test_errors")
    if not c.alternatives:
        raise ConfigError(f"{param('alternatives')} must list at least one alternative")
    if not c.sizes:
        raise ConfigError(f"{param('sizes')} must list topic set sizes >= 2, got []")
    deltas = [float(d) for d in c.deltas]
    if not deltas or not all(math.isfinite(d) for d in deltas):
        raise ConfigError(f"{param('deltas')} must list finite numbers, got {list(c.deltas)}")
    return dataclasses.replace(c, **shared, deltas=deltas, alternatives=list(c.alternatives))


def trial_block_bytes(sizes: tuple[int, ...]) -> float:
    """Working memory of one block of :data:`~irsim.rng.REPLICATE_BLOCK` trials on the
    largest topic set: draws, scores of both systems, their differences and the tests'
    intermediates, about 8 float64 arrays of ``trials x 2 x n``.

    Examples
    --------
    >>> trial_block_bytes((25, 100)) / 2**20  # MiB
    3.0517578125
    """
    return 8.0 * 8 * REPLICATE_BLOCK * 2 * max(sizes)


@dataclass(frozen=True)
class TrialTests(SimulatedTests):
    """What both designs' studies share: the normalised test_errors ``Config`` they hold
    (its tests, sizes, alphas, alternatives, trials, resamples, the tests' options and the
    Bayesian ones), the seed and the shard sizes, with the p-values of a block of trials
    (:meth:`pvalues`) and the Bayesian decisions (:meth:`bayes_codes`, :meth:`bayes_table`).
    :class:`~irsim.experiments.test_errors.shift.TestErrors` (design=shift) is one (the
    Config's ``deltas`` its true differences);
    :class:`~irsim.experiments.test_errors.urbano2019.UrbanoStudy` (design=urbano2019)
    holds one.

    Parameters
    ----------
    config : Config
        The study's parameters, normalised and checked by the design's ``make`` (or
        :meth:`from_config`; :meth:`of` builds one from keywords).
    seed : int
    shard_items : int
        Configurations per shard.
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). No shard size changes a result.

    Examples
    --------
    >>> t = TrialTests.of(sizes=[10], alpha=[0.05], tests=["t", "sign"])
    >>> rng = np.random.default_rng(1)
    >>> x, y = rng.normal(0.5, 0.1, (3, 10)), rng.normal(0.4, 0.1, (3, 10))
    >>> t.pvalues("t", ("two-sided", "greater"), x, y, key=(0,)).shape   # trials x alternatives
    (3, 2)
    >>> TrialTests.of(tests=["t", "wilcox"])
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown test for experiment=test_errors 'wilcox' (did \
you mean 'wilcoxon'?); valid: paired_bootstrap, randomisation, sign, t, wilcoxon
    """

    config: Any
    seed: int = 0
    shard_items: int = SHARD_ITEMS
    shard_replicates: int = SHARD_REPLICATES

    @classmethod
    def from_config(cls, config: Any, *, seed: int, shard_items: int,
                    shard_replicates: int) -> Any:
        """The study of a test_errors `config`, its shared parameters checked beyond their
        fields' bounds and normalised (:func:`normalised_config`), with these shard sizes;
        ``B * alpha >= 1`` for every alpha when a Monte Carlo test runs (both designs; the
        knobs named: :meth:`~irsim.kit.common.SimulatedTests.check_resamples`).

        Examples
        --------
        >>> TrialTests.of(tests=["t", "randomisation"], B=200)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        irsim.errors.ConfigError: config: experiment.B=200 is too small for \
experiment.alpha=0.001: ...
        >>> TrialTests.of(tests=["t", "randomisation"], B=200, alpha=[0.005, 0.05]).config.B
        200
        >>> TrialTests.of(tests=["t", "sign"], B=200).config.alpha[0]   # no Monte Carlo test
        0.001
        """
        return cls(normalised_config(config), seed=int(seed),
                   shard_items=check_positive_int(shard_items,
                                                  param("shard_items", "engine")),
                   shard_replicates=check_positive_int(shard_replicates,
                                                       param("shard_replicates", "engine"))
                   ).check_resamples()  # a Monte Carlo p-value moves in steps of 1/B

    @classmethod
    def of(cls, *, seed: int = 0, shard_items: int = SHARD_ITEMS,
           shard_replicates: int = SHARD_REPLICATES, **params: Any) -> Any:
        """The study of ``Config(**params)`` (:meth:`from_config`): the short way to build
        one in Python."""
        from irsim.experiments.test_errors import Config

        return cls.from_config(Config(**params), seed=seed, shard_items=shard_items,
                               shard_replicates=shard_replicates)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from the ``Config``,
        :func:`irsim.params.fingerprint`) but the design, whose study adds what it needs of
        it."""
        from irsim.experiments.test_errors import Config

        out = fingerprint(self, Config)
        del out["design"]
        return out

    def pvalues(self, test: str, alternatives: tuple[str, ...], x: np.ndarray,
                y: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
        """p-values of `test` for every trial (row) of ``x - y`` and alternative: shape
        (trials, alternatives). Monte Carlo tests draw their resamples from the stream
        ``test_errors/<test>`` keyed by `key`, once for all alternatives."""
        spec = get_test(test)
        options = self.test_options(test, "test_errors", key)
        if spec.monte_carlo:
            p = spec.function(x, y, alternative=tuple(alternatives), **options).pvalue
            return np.asarray(p).reshape(len(x), len(alternatives))
        return np.stack([np.atleast_1d(spec.function(x, y, alternative=alt, **options).pvalue)
                         for alt in alternatives], axis=1)

    def bayes_rule(self, name: str) -> str:
        """The decision rule of Bayesian test `name` as table ``bayes_decisions`` spells it.

        Examples
        --------
        >>> s = TrialTests.of(bayes=["jzs_bf", "t_posterior"])
        >>> s.bayes_rule("jzs_bf"), s.bayes_rule("t_posterior")
        ('BF10 >= 3 (r=0.7071)', '95% HDI vs ROPE +-0.01')
        """
        return self.bayes_rules.rule(name, self.config.B)

    def bayes_codes(self, name: str, x: np.ndarray, y: np.ndarray,
                    key: tuple[int, ...]) -> np.ndarray:
        """Decision codes (indices of :data:`irsim.stats.bayes.DECISIONS`) of Bayesian test
        `name` for every trial (row) of ``x - y``, one batched call. The Bayesian bootstrap
        draws its weights from the stream ``test_errors/bayesian_bootstrap`` keyed by `key`
        (the trial block's coordinates, as the Monte Carlo tests)."""
        return self.bayes_rules.codes(name, x, y, B=self.config.B, seed=self.seed,
                                      study=f"test_errors/{name}", key=key)

    def bayes_fields(self, configs: int) -> dict[str, Count]:
        """``bayes``: decisions per (configuration, Bayesian test, decision), if any."""
        if not self.config.bayes:
            return {}
        return {"bayes": Count((configs, len(self.config.bayes), len(DECISIONS)), along="items")}

    def bayes_table(self, counts: np.ndarray, trials: np.ndarray, keys: list[dict]) -> pa.Table:
        """Table ``bayes_decisions`` from the decision counts (configurations, tests, 4)
        and the trials per configuration; `keys` gives each configuration's metric, n and
        delta."""
        bayes = self.config.bayes
        return bayes_decisions_table(counts, trials, keys, bayes,
                                     [self.bayes_rule(b) for b in bayes], self.config.ci_level)
