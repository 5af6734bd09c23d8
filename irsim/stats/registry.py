"""Names of the tests and interval methods, as configs and result tables spell them.

Experiments look tests and methods up here (:func:`get_test`, :func:`get_ci_method`) and
``irsim list`` prints them; an unknown name raises a ConfigError that suggests close ones.

The Bayesian tests (:mod:`irsim.stats.bayes`) have their own registry,
:data:`BAYES_TESTS` (:func:`get_bayes_test`): they return decisions and posterior
quantities, not p-values, so they stay out of :data:`TESTS`, whose every entry the studies
call for a ``pvalue``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from irsim.errors import unknown_name
from irsim.stats.anova import anova_two_way, randomised_tukey_hsd, tukey_hsd
from irsim.stats.bayes import bayes_t_posterior, bayesian_bootstrap, jzs_bayes_factor
from irsim.stats.bootstrap import paired_bootstrap, unpaired_bootstrap
from irsim.stats.ci import CI_METHODS
from irsim.stats.randomisation import randomisation_test
from irsim.stats.sign import sign_test
from irsim.stats.ttest import paired_t, t_statistic
from irsim.stats.wilcoxon import wilcoxon

__all__ = ["TestSpec", "CIMethodSpec", "TESTS", "SIMULTANEOUS", "CI_METHOD_SPECS", "get_test",
           "get_ci_method", "BayesTestSpec", "BAYES_TESTS", "get_bayes_test", "register_test",
           "tests_of", "legend_of", "position_of"]

#: Pairs per block of :meth:`TestSpec.pair_pvalues` (bounds memory; no result depends on it).
PAIR_BLOCK = 2048


@dataclass(frozen=True)
class TestSpec:
    """A significance test by config name, with what a study needs to know to run it.

    A study asks the spec, never the name: which study options the test takes
    (:attr:`options`, :meth:`keywords`), whether it resamples (:attr:`monte_carlo`,
    :attr:`closed_form`), whether it decides all pairs at once (:attr:`simultaneous`), its
    batched paths (:attr:`differences`, :attr:`batched`), the p-value of two identical runs
    (:attr:`identical_pvalue`), its name in figures (:attr:`legend`) and the difference it
    needs for significance
    (:attr:`required_difference`). A new test is one module and one :func:`register_test`
    (``docs/guides/development.md``, "Adding a significance test").

    Attributes
    ----------
    name : str
    function : callable
        ``kind="paired"``: ``function(x, y=None, *, alternative, **options)`` with ``x, y``
        of shape (pairs, topics) (`y` None: `x` holds the differences). ``"unpaired"``:
        same call, topics may differ. ``"all_pairs"``: ``function(scores, **options)``
        with scores (systems, topics), one p-value per system pair. The result has a
        ``pvalue`` array.
    kind : {"paired", "unpaired", "all_pairs"}
    monte_carlo : bool
        Takes ``B``, ``seed``, ``study``, ``key``, ``pvalue_mode`` (and ``memory_budget``).
    description : str
    options : tuple of (str, str)
        The study options the test takes, ``(field, keyword)``: a study's field (as its
        ``Config`` spells it: ``wilcoxon_method``) and the keyword of `function` it sets
        (``method``). A study without that field leaves the function's default.
    identical_pvalue : float or None
        The p-value reported where `function` gives NaN for a pair whose differences are
        all 0 (the t test: 1, no evidence of a difference, never significant); None: as
        the function gives it.
    differences : callable or None
        A faster batched path over the differences of many pairs,
        ``differences(z, **options)`` -> two-sided p-values of the rows of `z`, which the
        studies that test every pair of a matrix (discpower) call on blocks of pairs;
        None: ``function(z, **options).pvalue`` (:meth:`pvalues`).
    required_difference : callable or None
        ``required_difference(x, alphas)`` -> per alpha, the estimated difference of means
        required for ``p < alpha`` over the pairs of `x` (systems, topics), Sakai (2006);
        None: the test defines none (rank and sign statistics).
    batched : str or None
        The batched path a study may run the test on instead of `function`, by the name
        of its kernel: the resampling kernels of :mod:`irsim.stats.resample` that draw the
        resamples once for many pairs (``paired_bootstrap``, ``unpaired_bootstrap``,
        ``tukey_ranges``: discpower's kernel, multiple_testing's trials) and the
        studentized ranges of many collections at once (``studentized_range``:
        multiple_testing). None, or a path a study does not implement: the study calls
        `function` (a Monte Carlo test on each shard's pairs).
    legend : str
        Its short name in the legends of figures (default: its name).

    Examples
    --------
    >>> spec = get_test("wilcoxon")
    >>> spec.closed_form, spec.simultaneous, spec.options[0]
    (True, False, ('wilcoxon_method', 'method'))
    >>> from types import SimpleNamespace
    >>> spec.keywords(SimpleNamespace(wilcoxon_method="exact", sign_threshold=0.1))
    {'method': 'exact'}
    >>> get_test("randomisation").keywords(SimpleNamespace(B=99, seed=1, pvalue="count"),
    ...                                    stream="toy", key=(2,))["study"]
    'toy/randomisation'
    """

    __test__ = False  # not a pytest class

    name: str
    function: Callable
    kind: str
    monte_carlo: bool
    description: str
    options: tuple[tuple[str, str], ...] = ()
    identical_pvalue: float | None = None
    differences: Callable | None = None
    required_difference: Callable | None = None
    batched: str | None = None
    legend: str = ""

    @property
    def closed_form(self) -> bool:
        """Computed without resampling (not :attr:`monte_carlo`)."""
        return not self.monte_carlo

    @property
    def simultaneous(self) -> bool:
        """Decides all pairs at once (kind ``all_pairs``, the Tukey tests): it controls the
        family-wise error itself, so a study corrects its p-values no further."""
        return self.kind == "all_pairs"

    def keywords(self, source: Any, *, stream: str = "stats", key: tuple[int, ...] = ()
                 ) -> dict[str, Any]:
        """The keyword options of :attr:`function` as the study `source` sets them: each of
        :attr:`options` that `source` has and, for a Monte Carlo test, ``B``, ``seed``, the
        p-value rule (``source.pvalue``) and the random stream ``<stream>/<name>`` keyed by
        `key` (the alternative is the caller's)."""
        out = self.study_options(source)
        if self.monte_carlo:
            out.update(B=_field(source, "B"), seed=_field(source, "seed"),
                       study=f"{stream}/{self.name}", key=key,
                       pvalue_mode=_field(source, "pvalue"))
        return out

    def study_options(self, source: Any) -> dict[str, Any]:
        """The keywords of :attr:`options` that `source` sets (those of its fields)."""
        return {kw: _field(source, f) for f, kw in self.options if _has(source, f)}

    def pvalues(self, x: np.ndarray, y: np.ndarray | None = None, **options: Any
                ) -> np.ndarray:
        """The p-values of :attr:`function` (float64), with :attr:`identical_pvalue` where
        it gives NaN.

        Examples
        --------
        >>> x = np.array([[0.2, 0.4, 0.3], [0.1, 0.5, 0.6]])
        >>> get_test("t").pvalues(x, x.copy()).tolist()   # identical runs: p = 1, not NaN
        [1.0, 1.0]
        """
        res = self.function(x, **options) if y is None else self.function(x, y, **options)
        p = np.asarray(res.pvalue, np.float64)
        if self.identical_pvalue is not None:
            p = np.where(np.isnan(p), self.identical_pvalue, p)
        return p

    def difference_pvalues(self, z: np.ndarray, **options: Any) -> np.ndarray:
        """Two-sided p-values of the rows of differences `z` by the batched path
        (:attr:`differences`) or else :meth:`pvalues`."""
        if self.differences is not None:
            return np.asarray(self.differences(z, **options), np.float64)
        return self.pvalues(z, **options)


def _has(source: Any, name: str) -> bool:
    """Whether the study `source` sets `name`: an attribute of its own or a field of the
    normalised Config it holds (``source.config``)."""
    return hasattr(source, name) or hasattr(getattr(source, "config", None), name)


def _field(source: Any, name: str) -> Any:
    """The value of `name` for the study `source` (its own attribute first, then its
    Config's field)."""
    return getattr(source, name) if hasattr(source, name) else getattr(source.config, name)


def _t_differences(z: np.ndarray) -> np.ndarray:
    """Two-sided p of :func:`irsim.stats.ttest.t_statistic` (the bootstrap kernels'
    arithmetic; scipy's ``ttest_rel``), 1 for rows of zeros."""
    return np.nan_to_num(2.0 * sps.t.sf(np.abs(t_statistic(z)), df=z.shape[-1] - 1), nan=1.0)


def _t_required(x: np.ndarray, alphas: tuple[float, ...]) -> dict[float, float]:
    """``t(1 - alpha/2, n-1) sd / sqrt(n)``, max over the pairs of `x`."""
    k, n = x.shape
    ia, ib = np.triu_indices(k, 1)
    sd = np.empty(len(ia))
    for p0 in range(0, len(ia), PAIR_BLOCK):
        p1 = min(p0 + PAIR_BLOCK, len(ia))
        sd[p0:p1] = (x[ia[p0:p1]] - x[ib[p0:p1]]).std(axis=1, ddof=1)
    return {a: float((sps.t.isf(a / 2, df=n - 1) * sd / math.sqrt(n)).max()) for a in alphas}


def _tukey_required(x: np.ndarray, alphas: tuple[float, ...]) -> dict[float, float]:
    """The honestly significant difference ``q(1 - alpha; k, (k-1)(n-1)) sqrt(MS_error/n)``."""
    k, n = x.shape
    res = anova_two_way(x)
    se = math.sqrt(float(res.ms_error) / n)
    return {a: float(sps.studentized_range.isf(a, k, res.df_error)) * se for a in alphas}


_WILCOXON_OPTIONS = (("wilcoxon_method", "method"), ("wilcoxon_correction", "correction"),
                     ("wilcoxon_zero_method", "zero_method"))

TESTS: dict[str, TestSpec] = {
    s.name: s
    for s in (
        TestSpec("t", paired_t, "paired", False, "paired t test", identical_pvalue=1.0,
                 differences=_t_differences, required_difference=_t_required, legend="t test"),
        TestSpec("wilcoxon", wilcoxon, "paired", False,
                 "Wilcoxon signed-rank test (exact, normal approximation, R mode)",
                 options=_WILCOXON_OPTIONS, legend="Wilcoxon"),
        TestSpec("sign", sign_test, "paired", False, "sign test with a tie threshold",
                 options=(("sign_threshold", "threshold"),), legend="sign"),
        TestSpec("randomisation", randomisation_test, "paired", True,
                 "randomisation (sign-flip permutation) test, Monte Carlo or exact",
                 legend="randomisation"),
        TestSpec("paired_bootstrap", paired_bootstrap, "paired", True,
                 "Sakai's paired studentised bootstrap test",
                 options=(("bootstrap_statistic", "statistic"),), batched="paired_bootstrap",
                 legend="bootstrap"),
        TestSpec("unpaired_bootstrap", unpaired_bootstrap, "unpaired", True,
                 "Sakai's unpaired bootstrap test (mean, gmean, worst-k)",
                 batched="unpaired_bootstrap", legend="unpaired bootstrap"),
        TestSpec("tukey_hsd", tukey_hsd, "all_pairs", False,
                 "Tukey HSD with topic blocking (studentized range)",
                 required_difference=_tukey_required, batched="studentized_range",
                 legend="Tukey HSD"),
        TestSpec("randomised_tukey_hsd", randomised_tukey_hsd, "all_pairs", True,
                 "randomised Tukey HSD (per-topic permutations across systems)",
                 batched="tukey_ranges", legend="randomised Tukey HSD"),
    )
}


def register_test(spec: TestSpec) -> TestSpec:
    """Register `spec` in :data:`TESTS` under its name (a new name only): every study that
    runs tests of its kind then takes it by that name. Returns `spec`.

    Examples
    --------
    >>> register_test(TESTS["t"])
    Traceback (most recent call last):
    ...
    ValueError: a test named 't' is registered already
    """
    if spec.name in TESTS:
        raise ValueError(f"a test named {spec.name!r} is registered already")
    if spec.kind not in ("paired", "unpaired", "all_pairs"):
        raise ValueError(f"test {spec.name!r}: unknown kind {spec.kind!r}")
    TESTS[spec.name] = spec
    return spec


def tests_of(*kinds: str) -> tuple[str, ...]:
    """Names of the registered tests of these kinds (all: every test), in registration
    order: the tests a study offers, asked when it checks its options.

    Examples
    --------
    >>> tests_of("paired")
    ('t', 'wilcoxon', 'sign', 'randomisation', 'paired_bootstrap')
    >>> tests_of("all_pairs")
    ('tukey_hsd', 'randomised_tukey_hsd')
    """
    return tuple(n for n, s in TESTS.items() if not kinds or s.kind in kinds)


@dataclass(frozen=True)
class CIMethodSpec:
    """A confidence-interval method by config name (:func:`irsim.stats.ci.mean_ci`).

    Attributes
    ----------
    name : str
    bootstrap : bool
        Resamples (takes ``B``, ``seed``, ``study``).
    description : str
    """

    name: str
    bootstrap: bool
    description: str


@dataclass(frozen=True)
class BayesTestSpec:
    """A Bayesian test by config name (:mod:`irsim.stats.bayes`).

    Attributes
    ----------
    name : str
    function : callable
        ``function(x, y=None, **options)`` with ``x, y`` of shape (pairs, topics); the
        result has a ``decision`` array of :data:`irsim.stats.bayes.DECISIONS` (``better``,
        ``worse``, ``equivalent``, ``undecided``).
    monte_carlo : bool
        Takes ``B``, ``seed``, ``study``, ``key``, ``memory_budget``.
    rule : tuple of str
        The keyword options of its decision rule (``threshold``; ``rope``, ``prob``; ...),
        which a study passes from its rule of the same names
        (:class:`irsim.kit.common.BayesRules`).
    description : str
    label : str
        The rule as tables spell it: a format string over ``threshold``, ``r``, ``prob``,
        ``percent`` (``100 prob``), ``rope`` and ``B`` (posterior draws).
    legend : str
        Its short name in the legends of figures (default: its name).
    """

    __test__ = False  # not a pytest class

    name: str
    function: Callable
    monte_carlo: bool
    rule: tuple[str, ...]
    description: str
    label: str = ""
    legend: str = ""


#: The Bayesian tests, apart from :data:`TESTS` (they have no p-value: a study counts their
#: ``decision`` instead; experiment=test_errors does, ``experiment.bayes``).
BAYES_TESTS: dict[str, BayesTestSpec] = {
    s.name: s
    for s in (
        BayesTestSpec("jzs_bf", jzs_bayes_factor, False, ("r", "threshold"),
                      "JZS Bayes factor, paired design (Rouder et al. 2009), BF threshold",
                      "BF10 >= {threshold:g} (r={r:.4g})", "JZS Bayes factor"),
        BayesTestSpec("t_posterior", bayes_t_posterior, False, ("rope", "prob"),
                      "t posterior of the mean difference, HDI+ROPE rule (Kruschke 2018)",
                      "{percent:g}% HDI vs ROPE +-{rope:g}", "t posterior (HDI+ROPE)"),
        BayesTestSpec("bayesian_bootstrap", bayesian_bootstrap, True, ("rope", "prob"),
                      "Bayesian bootstrap (Rubin 1981), posterior probability rule",
                      "P >= {prob:g} (ROPE +-{rope:g}, B={B})", "Bayesian bootstrap"),
    )
}

#: Tests of all pairs at once (kind ``all_pairs``) among the built-in ones: they control the
#: family-wise error themselves, so studies apply no multiple-comparison correction to them
#: again. Studies ask a test's :attr:`TestSpec.simultaneous` (a test registered later is
#: not listed here).
SIMULTANEOUS: tuple[str, ...] = tuple(n for n, s in TESTS.items() if s.kind == "all_pairs")

_CI_DESCRIPTIONS = {
    "normal": "mean -+ z sd/sqrt(n)",
    "t": "mean -+ t(n-1) sd/sqrt(n)",
    "percentile": "bootstrap percentile interval",
    "basic": "basic (reverse percentile) bootstrap interval",
    "bca": "bias-corrected and accelerated bootstrap interval (jackknife acceleration)",
    "logit": "normal interval on logit of the bootstrap distribution (Cormack-Lynam)",
    "studentised_logit": "Park's studentised logit bootstrap interval",
}

CI_METHOD_SPECS: dict[str, CIMethodSpec] = {
    name: CIMethodSpec(name, name not in ("normal", "t"), _CI_DESCRIPTIONS[name])
    for name in CI_METHODS
}


def get_test(name: str) -> TestSpec:
    """The test registered as `name`.

    Examples
    --------
    >>> get_test("wilcoxon").kind
    'paired'
    >>> get_test("wilcoxn")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown test 'wilcoxn' (did you mean 'wilcoxon'?); valid: \
paired_bootstrap, randomisation, randomised_tukey_hsd, sign, t, tukey_hsd, unpaired_bootstrap, \
wilcoxon
    """
    try:
        return TESTS[name]
    except (KeyError, TypeError):
        raise unknown_name("test", str(name), TESTS) from None


def get_bayes_test(name: str) -> BayesTestSpec:
    """The Bayesian test registered as `name`.

    Examples
    --------
    >>> get_bayes_test("jzs_bf").rule
    ('r', 'threshold')
    >>> get_bayes_test("jzs")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown Bayesian test 'jzs' (did you mean 'jzs_bf'?); \
valid: bayesian_bootstrap, jzs_bf, t_posterior
    """
    try:
        return BAYES_TESTS[name]
    except (KeyError, TypeError):
        raise unknown_name("Bayesian test", str(name), BAYES_TESTS) from None


def legend_of(name: str) -> str:
    """The short name of test `name` (a significance or a Bayesian test) in the legends of
    figures: its registration's ``legend``, else its name.

    Examples
    --------
    >>> legend_of("paired_bootstrap"), legend_of("jzs_bf"), legend_of("toy")
    ('bootstrap', 'JZS Bayes factor', 'toy')
    """
    spec = TESTS.get(name) or BAYES_TESTS.get(name)
    return (spec.legend or spec.name) if spec is not None else str(name)


def position_of(name: str) -> int | None:
    """The position of test `name` in the registries (significance tests, then Bayesian
    tests, in registration order; None for an unregistered name): the one order of their
    colours in figures (:func:`irsim.report.colour_of`).

    Examples
    --------
    >>> position_of("t"), position_of("jzs_bf") == len(TESTS), position_of("toy")
    (0, True, None)
    """
    names = [*TESTS, *BAYES_TESTS]
    return names.index(name) if name in names else None


def get_ci_method(name: str) -> CIMethodSpec:
    """The CI method registered as `name`.

    Examples
    --------
    >>> get_ci_method("bca").bootstrap
    True
    """
    try:
        return CI_METHOD_SPECS[name]
    except (KeyError, TypeError):
        raise unknown_name("CI method", str(name), CI_METHOD_SPECS) from None
