"""Names of the tests and interval methods, as configs and result tables spell them.

Experiments look tests and methods up here (:func:`get_test`, :func:`get_ci_method`) and
``irsim list`` prints them; an unknown name raises a ConfigError that suggests close ones.

The Bayesian tests (:mod:`irsim.stats.bayes`) have their own registry,
:data:`BAYES_TESTS` (:func:`get_bayes_test`): they return decisions and posterior
quantities, not p-values, so they stay out of :data:`TESTS`, whose every entry the studies
call for a ``pvalue``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from irsim.errors import unknown_name
from irsim.stats.anova import randomised_tukey_hsd, tukey_hsd
from irsim.stats.bayes import bayes_t_posterior, bayesian_bootstrap, jzs_bayes_factor
from irsim.stats.bootstrap import paired_bootstrap, unpaired_bootstrap
from irsim.stats.ci import CI_METHODS
from irsim.stats.randomisation import randomisation_test
from irsim.stats.sign import sign_test
from irsim.stats.ttest import paired_t
from irsim.stats.wilcoxon import wilcoxon

__all__ = ["TestSpec", "CIMethodSpec", "TESTS", "SIMULTANEOUS", "CI_METHOD_SPECS", "get_test",
           "get_ci_method", "BayesTestSpec", "BAYES_TESTS", "get_bayes_test"]


@dataclass(frozen=True)
class TestSpec:
    """A significance test by config name.

    Attributes
    ----------
    name : str
    function : callable
        ``kind="paired"``: ``function(x, y, *, alternative, **options)`` with ``x, y`` of
        shape (pairs, topics). ``"unpaired"``: same call, topics may differ.
        ``"all_pairs"``: ``function(scores, **options)`` with scores (systems, topics),
        one p-value per system pair.
    kind : {"paired", "unpaired", "all_pairs"}
    monte_carlo : bool
        Takes ``B``, ``seed``, ``study``, ``pvalue_mode``, ``memory_budget``.
    description : str
    """

    __test__ = False  # not a pytest class

    name: str
    function: Callable
    kind: str
    monte_carlo: bool
    description: str


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


TESTS: dict[str, TestSpec] = {
    s.name: s
    for s in (
        TestSpec("t", paired_t, "paired", False, "paired t test"),
        TestSpec("wilcoxon", wilcoxon, "paired", False,
                 "Wilcoxon signed-rank test (exact, normal approximation, R mode)"),
        TestSpec("sign", sign_test, "paired", False, "sign test with a tie threshold"),
        TestSpec("randomisation", randomisation_test, "paired", True,
                 "randomisation (sign-flip permutation) test, Monte Carlo or exact"),
        TestSpec("paired_bootstrap", paired_bootstrap, "paired", True,
                 "Sakai's paired studentised bootstrap test"),
        TestSpec("unpaired_bootstrap", unpaired_bootstrap, "unpaired", True,
                 "Sakai's unpaired bootstrap test (mean, gmean, worst-k)"),
        TestSpec("tukey_hsd", tukey_hsd, "all_pairs", False,
                 "Tukey HSD with topic blocking (studentized range)"),
        TestSpec("randomised_tukey_hsd", randomised_tukey_hsd, "all_pairs", True,
                 "randomised Tukey HSD (per-topic permutations across systems)"),
    )
}

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
        The keyword options of its decision rule (``threshold``; ``rope``, ``prob``; ...).
    description : str
    """

    __test__ = False  # not a pytest class

    name: str
    function: Callable
    monte_carlo: bool
    rule: tuple[str, ...]
    description: str


#: The Bayesian tests, apart from :data:`TESTS` (they have no p-value: a study counts their
#: ``decision`` instead; experiment=test_errors does, ``experiment.bayes``).
BAYES_TESTS: dict[str, BayesTestSpec] = {
    s.name: s
    for s in (
        BayesTestSpec("jzs_bf", jzs_bayes_factor, False, ("r", "threshold"),
                      "JZS Bayes factor, paired design (Rouder et al. 2009), BF threshold"),
        BayesTestSpec("t_posterior", bayes_t_posterior, False, ("rope", "prob"),
                      "t posterior of the mean difference, HDI+ROPE rule (Kruschke 2018)"),
        BayesTestSpec("bayesian_bootstrap", bayesian_bootstrap, True, ("rope", "prob"),
                      "Bayesian bootstrap (Rubin 1981), posterior probability rule"),
    )
}

#: Tests of all pairs at once (kind ``all_pairs``): they control the family-wise error
#: themselves, so studies apply no multiple-comparison correction to them again.
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
