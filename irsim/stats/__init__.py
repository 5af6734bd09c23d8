"""Batched significance tests and confidence intervals (METHODS.md sections 2 and 5).

Every test takes many pairs at once (arrays ``(..., topics)``), a keyword-only
``alternative`` and returns a frozen result dataclass (``statistic``, ``pvalue`` and
extras). Monte Carlo tests take ``B``, ``seed``, ``study``, ``pvalue_mode`` and
``memory_budget``; their draws come from :mod:`irsim.sampling` keyed by replicate block,
so no result depends on chunking. Config names: :data:`TESTS`, :data:`CI_METHOD_SPECS`.
The Bayesian tests (:mod:`irsim.stats.bayes`: JZS Bayes factor, t posterior with a ROPE,
Bayesian bootstrap) return decisions instead of p-values and have their own registry,
:data:`BAYES_TESTS`.

Examples
--------
>>> import numpy as np
>>> from irsim.stats import get_test
>>> x, y = np.array([[0.5, 0.6, 0.7, 0.4]]), np.array([[0.4, 0.5, 0.5, 0.45]])
>>> round(float(get_test("t").function(x, y).pvalue[0]), 4)
0.1881
"""

from irsim.stats.agreement import (
    AgreementCI,
    cohen_kappa,
    cohen_kappa_per_topic,
    confusion,
    fleiss_kappa,
    fleiss_kappa_labels,
    fleiss_kappa_per_topic,
    joint_labels,
    krippendorff_alpha,
    krippendorff_alpha_per_topic,
    mean_kappa_ci,
    pooled_kappa_ci,
)
from irsim.stats.anova import (
    AnovaResult,
    TukeyHSDResult,
    anova_two_way,
    randomised_tukey_hsd,
    tukey_hsd,
)
from irsim.stats.bayes import (
    DECISIONS,
    BayesFactorResult,
    BayesianBootstrapResult,
    TPosteriorResult,
    bayes_t_posterior,
    bayesian_bootstrap,
    jzs_bayes_factor,
    jzs_log_bf10,
)
from irsim.stats.bootstrap import BootstrapTestResult, paired_bootstrap, unpaired_bootstrap
from irsim.stats.ci import (
    CI_METHODS,
    CIResult,
    ConfidenceInterval,
    bootstrap_ci,
    mean_acceleration,
    mean_ci,
)
from irsim.stats.kendall import RankAgreement, rank_agreement, tau_ap
from irsim.stats.meta import MetaResult, fixed_effect, meta_analysis, random_effects
from irsim.stats.multiple import CORRECTIONS, adjust, reject
from irsim.stats.randomisation import RandomisationResult, randomisation_test
from irsim.stats.registry import (
    BAYES_TESTS,
    CI_METHOD_SPECS,
    TESTS,
    BayesTestSpec,
    CIMethodSpec,
    TestSpec,
    get_bayes_test,
    get_ci_method,
    get_test,
)
from irsim.stats.sign import SignTestResult, sign_test
from irsim.stats.ties import count_extreme, tie_tolerance
from irsim.stats.ttest import PairedTResult, paired_t
from irsim.stats.wilcoxon import WilcoxonResult, wilcoxon

__all__ = [
    "AgreementCI",
    "cohen_kappa",
    "cohen_kappa_per_topic",
    "confusion",
    "fleiss_kappa",
    "fleiss_kappa_labels",
    "fleiss_kappa_per_topic",
    "joint_labels",
    "krippendorff_alpha",
    "krippendorff_alpha_per_topic",
    "mean_kappa_ci",
    "pooled_kappa_ci",
    "tau_ap",
    "RankAgreement",
    "rank_agreement",
    "BAYES_TESTS",
    "BayesFactorResult",
    "BayesTestSpec",
    "BayesianBootstrapResult",
    "DECISIONS",
    "TPosteriorResult",
    "bayes_t_posterior",
    "bayesian_bootstrap",
    "get_bayes_test",
    "jzs_bayes_factor",
    "jzs_log_bf10",
    "CORRECTIONS",
    "adjust",
    "reject",
    "MetaResult",
    "fixed_effect",
    "meta_analysis",
    "random_effects",
    "AnovaResult",
    "BootstrapTestResult",
    "CIMethodSpec",
    "CIResult",
    "CI_METHODS",
    "CI_METHOD_SPECS",
    "ConfidenceInterval",
    "PairedTResult",
    "RandomisationResult",
    "SignTestResult",
    "TESTS",
    "TestSpec",
    "TukeyHSDResult",
    "WilcoxonResult",
    "anova_two_way",
    "bootstrap_ci",
    "count_extreme",
    "get_ci_method",
    "get_test",
    "mean_acceleration",
    "mean_ci",
    "paired_bootstrap",
    "paired_t",
    "randomisation_test",
    "randomised_tukey_hsd",
    "sign_test",
    "tie_tolerance",
    "tukey_hsd",
    "unpaired_bootstrap",
    "wilcoxon",
]
