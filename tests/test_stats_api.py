"""Public API of irsim.stats: registry, result shapes, and bad arguments."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import irsim.stats as st
from irsim.errors import ConfigError, InputError

X = np.array([[0.5, 0.6, 0.7, 0.4, 0.3, 0.8], [0.2, 0.1, 0.4, 0.3, 0.5, 0.2]])
Y = np.array([[0.4, 0.5, 0.5, 0.45, 0.3, 0.6], [0.3, 0.1, 0.2, 0.3, 0.4, 0.1]])

PAIRED = ["t", "wilcoxon", "sign", "randomisation", "paired_bootstrap", "unpaired_bootstrap"]


def test_registry_names():
    assert set(st.TESTS) == {"paired_bootstrap", "unpaired_bootstrap", "t", "wilcoxon",
                             "sign", "randomisation", "tukey_hsd", "randomised_tukey_hsd"}
    assert tuple(st.CI_METHOD_SPECS) == ("normal", "t", "percentile", "basic", "bca",
                                         "logit", "studentised_logit")
    assert st.get_test("randomisation").monte_carlo
    assert not st.get_ci_method("t").bootstrap
    with pytest.raises(ConfigError, match="did you mean 'randomisation'"):
        st.get_test("randomization")
    with pytest.raises(ConfigError, match="unknown CI method"):
        st.get_ci_method("bcа")


@pytest.mark.parametrize("name", PAIRED)
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_paired_tests_shapes_and_frozen_results(name, alternative):
    spec = st.get_test(name)
    opts = {"B": 300} if spec.monte_carlo else {}
    r = spec.function(X, Y, alternative=alternative, **opts)
    assert r.pvalue.shape == (2,) and ((r.pvalue >= 0) & (r.pvalue <= 1)).all()
    one = spec.function(X[0], Y[0], alternative=alternative, **opts)
    assert np.ndim(one.pvalue) == 0 and float(one.pvalue) == pytest.approx(r.pvalue[0])
    many = spec.function(np.stack([X, X]), np.stack([Y, Y]), alternative=alternative, **opts)
    assert many.pvalue.shape == (2, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.pvalue = None


@pytest.mark.parametrize("name", ["tukey_hsd", "randomised_tukey_hsd"])
def test_all_pairs_tests(name):
    spec = st.get_test(name)
    scores = np.concatenate([X, Y])
    r = spec.function(scores, **({"B": 200} if spec.monte_carlo else {}))
    assert r.pvalue.shape == (6,) and r.first.tolist() == [0, 0, 0, 1, 1, 2]
    with pytest.raises(ConfigError, match="two-sided only"):
        spec.function(scores, alternative="greater")


@pytest.mark.parametrize("name", PAIRED)
def test_bad_data(name):
    f = st.get_test(name).function
    with pytest.raises(InputError, match="non-finite"):
        f(np.array([[0.1, np.nan, 0.3]]), np.array([[0.1, 0.2, 0.3]]))
    if name != "unpaired_bootstrap":
        with pytest.raises(InputError, match="same shape"):
            f(np.zeros((2, 5)), np.zeros((2, 4)))
    with pytest.raises(InputError):
        f(np.float64(0.3), np.float64(0.2))


@pytest.mark.parametrize("name", ["randomisation", "paired_bootstrap", "unpaired_bootstrap"])
def test_bad_monte_carlo_options(name):
    f = st.get_test(name).function
    with pytest.raises(ConfigError, match="unknown alternative 'two_sided'"):
        f(X, Y, alternative="two_sided")
    with pytest.raises(ConfigError, match="B must be >= 1"):
        f(X, Y, B=0)
    with pytest.raises(ConfigError, match="B must be an integer"):
        f(X, Y, B=10.5)
    with pytest.raises(ConfigError, match="seed must be >= 0"):
        f(X, Y, seed=-1)
    with pytest.raises(ConfigError, match="pvalue_mode"):
        f(X, Y, pvalue_mode="plus-one")
    with pytest.raises(ConfigError, match="memory_budget"):
        f(X, Y, memory_budget=0)


def test_bad_test_options():
    with pytest.raises(ConfigError, match="unknown wilcoxon method"):
        st.wilcoxon(X, Y, method="asymptotic")
    with pytest.raises(ConfigError, match="threshold must be >= 0"):
        st.sign_test(X, Y, threshold=-0.01)
    with pytest.raises(ConfigError, match="n = 41 > 40"):
        st.randomisation_test(np.ones(41), method="exact")
    with pytest.raises(ConfigError, match="needs k"):
        st.unpaired_bootstrap(X, Y, summary="worst")
    with pytest.raises(ConfigError, match="k must be in"):
        st.unpaired_bootstrap(X, Y, summary="worst", k=7)
    with pytest.raises(ConfigError, match="unknown unpaired bootstrap summary"):
        st.unpaired_bootstrap(X, Y, summary="median")
    with pytest.raises(InputError, match="at least 2 values"):
        st.paired_t(np.array([0.1]), np.array([0.2]))
    with pytest.raises(InputError, match=">= 2 systems"):
        st.tukey_hsd(np.array([[0.1, 0.2, 0.3]]))


def test_bad_ci_options():
    with pytest.raises(ConfigError, match="unknown CI method 'bc'"):
        st.mean_ci(X, method="bc")
    with pytest.raises(ConfigError, match="confidence_level must be in"):
        st.mean_ci(X, confidence_level=95)
    with pytest.raises(ConfigError, match="unknown bootstrap CI method 't'"):
        st.bootstrap_ci(0.3, np.ones(10), method="t")
    with pytest.raises(ConfigError, match="n must be"):
        st.bootstrap_ci(0.3, np.full(10, 0.3), method="studentised_logit")
    with pytest.raises(InputError, match="theta_hat has shape"):
        st.bootstrap_ci(np.zeros(3), np.ones((2, 10)))
