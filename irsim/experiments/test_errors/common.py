"""What both designs of experiment=test_errors share: the tests, deltas and alphas they run
by default, the shared parameters of a study with their checks, the p-values of a block of
trials and the Bayesian decisions (:class:`TrialTests`), and the table of the Bayesian
tests' decisions (``bayes_decisions``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.engine.partials import Count
from irsim.errors import ConfigError, param, unknown_name
from irsim.kit.common import (
    SimulatedTestFields,
    check_alphas,
    check_positive_int,
    simulated_test_options,
)
from irsim.params import Options, fingerprint, normalise
from irsim.rng import REPLICATE_BLOCK
from irsim.stats import get_test
from irsim.stats._validation import ALTERNATIVES
from irsim.stats.bayes import DECISIONS
from irsim.stats.binomial import clopper_pearson
from irsim.stats.registry import tests_of
from irsim.tables import table as build_table

if TYPE_CHECKING:
    from irsim.engine.session import Engine
    from irsim.experiments import Shards

__all__ = ["TESTS", "DELTAS", "ALPHAS", "SHARD_ITEMS", "SHARD_REPLICATES", "Design",
           "TrialTests", "bayes_decisions_table"]

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
class TrialTests(SimulatedTestFields):
    """What both designs' studies share (parameters as in the test_errors ``Config``;
    ``alphas`` is its ``alpha``): the tests, sizes, alphas, alternatives and trials with
    their checks, the p-values of a block of trials (:meth:`pvalues`) and the Bayesian
    decisions (:meth:`bayes_codes`, :meth:`bayes_table`).
    :class:`~irsim.experiments.test_errors.shift.TestErrors` (design=shift) is one with the
    deltas; :class:`~irsim.experiments.test_errors.urbano2019.UrbanoStudy`
    (design=urbano2019) holds one.

    Parameters
    ----------
    sizes, alphas, tests, alternatives
        See the ``Config``.
    trials, B, seed, pvalue, wilcoxon_method, sign_threshold, bootstrap_statistic, ci_level
        Keyword-only (:class:`~irsim.kit.common.SimulatedTestFields`); ``trials`` defaults
        to 10000.
    shard_items : int
        Configurations per shard.
    shard_replicates : int
        Trials per shard (rounded up to a multiple of 250). No shard size changes a result.
    bayes, bayes_threshold, bayes_r, bayes_prob, bayes_rope
        Bayesian tests and their decision rules (:class:`~irsim.kit.common.BayesFields`).

    Examples
    --------
    >>> t = TrialTests(sizes=(10,), alphas=(0.05,), tests=("t", "sign"))
    >>> rng = np.random.default_rng(1)
    >>> x, y = rng.normal(0.5, 0.1, (3, 10)), rng.normal(0.4, 0.1, (3, 10))
    >>> t.pvalues("t", ("two-sided", "greater"), x, y, key=(0,)).shape   # trials x alternatives
    (3, 2)
    >>> TrialTests(tests=("t", "wilcox"))
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown test for experiment=test_errors 'wilcox' (did \
you mean 'wilcoxon'?); valid: paired_bootstrap, randomisation, sign, t, wilcoxon
    """

    sizes: tuple[int, ...] = (25, 50, 100)
    alphas: tuple[float, ...] = ALPHAS
    tests: tuple[str, ...] = TESTS
    alternatives: tuple[str, ...] = ("two-sided",)
    trials: int = field(default=10000, kw_only=True)
    shard_items: int = SHARD_ITEMS
    shard_replicates: int = SHARD_REPLICATES
    #: Fields of the ``Config`` this object does not hold (for :meth:`fingerprint`): the
    #: design (the design's study adds what it needs of it) and the deltas (held by
    #: design=shift's study only).
    NOT_HELD: ClassVar[tuple[str, ...]] = ("design", "deltas")

    def __post_init__(self) -> None:
        self._check_bayes()
        self._check_trials()
        self._check_levels()

    def _check_trials(self) -> None:
        """Check the shared parameters and store them normalised (tuples, ints)."""
        set_ = object.__setattr__
        set_(self, "tests", tuple(self.tests))
        if not self.tests:
            raise ConfigError(f"{param('tests')} must list at least one test")
        valid = tests_of("paired")
        for t in self.tests:
            if t not in valid:
                raise unknown_name("test for experiment=test_errors", t, valid)
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

    def _check_levels(self) -> None:
        """Check the alphas, trials, resamples and the simulated tests' options (after
        the design's own checks, in the order the messages have always come)."""
        object.__setattr__(self, "alphas", check_alphas(self.alphas, param("alpha")))
        self._check_simulated()

    @classmethod
    def of(cls, config: Any, *, seed: int, shard_items: int, shard_replicates: int,
           **extra: Any) -> Any:
        """The object of `config`'s shared parameters (a test_errors ``Config``) with these
        shard sizes and the `extra` fields of a subclass (what both designs' ``make`` build
        first: it checks them)."""
        return cls(
            sizes=tuple(int(n) for n in config.sizes),
            alphas=tuple(config.alpha),
            tests=tuple(config.tests),
            alternatives=tuple(config.alternatives),
            seed=int(seed),
            shard_items=shard_items,
            shard_replicates=shard_replicates,
            **simulated_test_options(config),
            **extra,
        )

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from the ``Config``,
        :func:`irsim.params.fingerprint`; the fields of :attr:`NOT_HELD` are left to the
        design's study)."""
        from irsim.experiments.test_errors import Config

        return fingerprint(self, Config, renamed={"alpha": "alphas",
                                                  **dict.fromkeys(self.NOT_HELD)})

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
        >>> s = TrialTests(bayes=("jzs_bf", "t_posterior"))
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

    def bayes_fields(self, configs: int) -> dict[str, Count]:
        """``bayes``: decisions per (configuration, Bayesian test, decision), if any."""
        if not self.bayes:
            return {}
        return {"bayes": Count((configs, len(self.bayes), len(DECISIONS)), along="items")}

    def bayes_table(self, counts: np.ndarray, trials: np.ndarray, keys: list[dict]) -> pa.Table:
        """Table ``bayes_decisions`` from the decision counts (configurations, tests, 4)
        and the trials per configuration; `keys` gives each configuration's metric, n and
        delta."""
        return bayes_decisions_table(counts, trials, keys, self.bayes,
                                     [self.bayes_rule(b) for b in self.bayes], self.ci_level)
