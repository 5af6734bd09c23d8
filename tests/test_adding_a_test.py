"""The guide "Adding a significance test" (docs/guides/development.md) followed end to end: a
toy test (a trimmed-mean paired t) is one function and one :func:`register_test`, and then
discpower, compare and test_errors run it by name with no other edit, their numbers checked
against scipy."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from scipy import stats as sps

import irsim
from irsim.errors import ConfigError
from irsim.stats.registry import TESTS, TestSpec, register_test

AP = SHARED_DATA / "urbano" / "adhoc8_ap.csv"


# -- the guide's module: the test's function and its result --------------------------------
@dataclass(frozen=True)
class TrimmedTResult:
    """Result of :func:`trimmed_t`: the statistic and p-value of every pair (row)."""

    statistic: np.ndarray
    pvalue: np.ndarray


def trimmed_t(x, y=None, *, alternative="two-sided", trim=0.1):
    """t test on the paired differences after dropping the ``trim`` share of them at each
    end (one batched call for all pairs)."""
    z = np.asarray(x, np.float64) if y is None else np.asarray(x, np.float64) - y
    n = z.shape[-1]
    cut = int(trim * n)
    z = np.sort(z, axis=-1)[..., cut:n - cut]
    k = z.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = z.mean(-1) / (z.std(-1, ddof=1) / np.sqrt(k))
    if alternative == "two-sided":
        p = 2.0 * sps.t.sf(np.abs(t), k - 1)
    elif alternative == "greater":
        p = sps.t.sf(t, k - 1)
    else:
        p = sps.t.cdf(t, k - 1)
    return TrimmedTResult(t, np.minimum(p, 1.0))


def _oracle(z, alternative="two-sided", trim=0.1):
    """scipy: ttest_1samp of the trimmed differences."""
    return sps.ttest_1samp(sps.trimboth(z, trim, axis=-1), 0.0, axis=-1,
                           alternative=alternative).pvalue


@pytest.fixture
def registered():
    """The guide's registration (undone after the test)."""
    spec = register_test(TestSpec(
        "trimmed_t", trimmed_t, "paired", False, "t test of the 10%-trimmed differences",
        options=(("trim", "trim"),), identical_pvalue=1.0))
    zero = register_test(TestSpec(
        "trimmed_t0", functools.partial(trimmed_t, trim=0.0), "paired", False,
        "trimmed t with nothing trimmed (the paired t test)", identical_pvalue=1.0))
    try:
        yield spec, zero
    finally:
        TESTS.pop(spec.name)
        TESTS.pop(zero.name)


def test_the_toy_test_is_scipys(registered):
    rng = np.random.default_rng(4)
    x, y = rng.normal(0.5, 0.1, (6, 30)), rng.normal(0.45, 0.1, (6, 30))
    for alt in ("two-sided", "greater", "less"):
        np.testing.assert_allclose(trimmed_t(x, y, alternative=alt).pvalue,
                                   _oracle(x - y, alt), rtol=1e-10)
    with pytest.raises(ValueError, match="registered already"):
        register_test(registered[0])


def test_discpower_and_compare_run_a_registered_test(registered):
    df = pd.read_csv(AP).iloc[:, :8]
    x = df.to_numpy().T  # systems x topics
    ia, ib = np.triu_indices(len(x), 1)
    want = _oracle(x[ia] - x[ib])
    res = irsim.discpower(df, tests=["trimmed_t", "t"], B=200, seed=0, correction="holm")
    asl = res.to_pandas("asl")
    got = asl[asl.test == "trimmed_t"]
    assert list(got.system_a) == list(df.columns[ia])
    np.testing.assert_allclose(got.asl, want, rtol=1e-10)
    summary = res.to_pandas("discpower")
    row = summary[(summary.test == "trimmed_t") & (summary.alpha == 0.05)].iloc[0]
    assert row.significant == int((want < 0.05).sum())
    assert pd.isna(row.estimated_diff)  # the toy defines no required difference
    # Holm over the pairs, as scipy.stats.false_discovery_control has no Holm: by hand
    order = np.argsort(want)
    holm = np.maximum.accumulate(np.minimum(want[order] * (len(want) - np.arange(len(want))),
                                            1.0))
    adjusted = np.empty_like(want)
    adjusted[order] = holm
    np.testing.assert_allclose(got.asl_adjusted, adjusted, rtol=1e-10)

    cmp = irsim.compare(df, tests=["trimmed_t"], correction="none", alpha=0.05).to_pandas(
        "comparison")
    first = cmp[(cmp.metric == cmp.metric.iloc[0])]
    a = [list(df.columns).index(s) for s in first.system_a]
    b = [list(df.columns).index(s) for s in first.system_b]
    np.testing.assert_allclose(first.p_value, _oracle(x[a] - x[b]), rtol=1e-10)
    assert first.B.isna().all()  # closed form: no Monte Carlo samples


def test_test_errors_runs_a_registered_test(registered):
    scores = pd.read_csv(AP).iloc[:, :12]
    res = irsim.test_errors(scores, metric="AP", trials=200, B=100, seed=1, sizes=[10],
                            tests=["t", "trimmed_t0", "trimmed_t"], deltas=[0.0, 0.05])
    t = res.to_pandas("test_errors")
    keys = ["metric", "n", "delta", "alpha", "alternative"]
    by = {name: t[t.test == name].sort_values(keys).reset_index(drop=True)
          for name in ("t", "trimmed_t0", "trimmed_t")}
    # nothing trimmed is the paired t test (scipy's ttest_rel): the same decisions, trial by trial
    assert len(by["t"]) > 0
    np.testing.assert_array_equal(by["trimmed_t0"].rate, by["t"].rate)
    power = by["trimmed_t"][(by["trimmed_t"].delta > 0) & (by["trimmed_t"].alpha == 0.05)]
    assert (power.rate > 0).all()


def test_a_study_refuses_a_test_of_another_kind(registered):
    df = pd.read_csv(AP).iloc[:, :6]
    with pytest.raises(ConfigError, match="trimmed_t"):
        irsim.compare(df, tests=["trimmed"])
    with pytest.raises(ConfigError, match="tukey_hsd"):
        irsim.test_errors(df, metric="AP", tests=["tukey_hsd"], trials=10)
