"""Equality with scipy.stats on hundreds of real system pairs (Urbano's TREC matrices)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from irsim.stats import (
    bootstrap_ci,
    mean_acceleration,
    paired_t,
    randomisation_test,
    sign_test,
    wilcoxon,
)

ALTERNATIVES = ("two-sided", "greater", "less")


def _pairs(shared_data, name: str, count: int, seed: int = 0):
    """`count` random system pairs of an Urbano matrix: x, y of shape (count, topics)."""
    m = pd.read_csv(shared_data / "urbano" / f"{name}.csv").to_numpy(np.float64).T
    first, second = np.triu_indices(len(m), 1)
    pick = np.random.default_rng(seed).choice(len(first), count, replace=False)
    return m[first[pick]], m[second[pick]]


@pytest.fixture(scope="module")
def ap_pairs(shared_data):
    return _pairs(shared_data, "adhoc8_ap", 400)


@pytest.fixture(scope="module")
def p10_pairs(shared_data):
    """Discrete scores: many ties and zero differences."""
    return _pairs(shared_data, "adhoc7_p10", 300, seed=1)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_paired_t_equals_ttest_rel(ap_pairs, alternative):
    x, y = ap_pairs
    r = paired_t(x, y, alternative=alternative)
    s = sps.ttest_rel(x, y, axis=-1, alternative=alternative)
    np.testing.assert_allclose(r.statistic, s.statistic, rtol=1e-12)
    np.testing.assert_allclose(r.pvalue, s.pvalue, rtol=1e-10, atol=1e-300)
    for level in (0.9, 0.95):
        ci, sci = r.confidence_interval(level), s.confidence_interval(level)
        np.testing.assert_allclose(ci.low, sci.low, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(ci.high, sci.high, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("correction", [False, True])
@pytest.mark.parametrize("data", ["ap_pairs", "p10_pairs"])
def test_wilcoxon_approx_equals_scipy(request, data, alternative, correction):
    x, y = request.getfixturevalue(data)
    r = wilcoxon(x, y, method="approx", correction=correction, alternative=alternative)
    s = sps.wilcoxon(x, y, method="asymptotic", correction=correction,
                     alternative=alternative, axis=-1)
    ok = r.n > 0
    np.testing.assert_allclose(r.pvalue[ok], s.pvalue[ok], rtol=1e-10)
    stat = np.minimum(r.statistic, r.r_minus) if alternative == "two-sided" else r.statistic
    np.testing.assert_array_equal(stat[ok], s.statistic[ok])


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_wilcoxon_exact_equals_scipy(ap_pairs, alternative):
    """Untied, zero-free pairs: the classical exact distribution (n = 20 topics)."""
    x, y = ap_pairs[0][:, :20], ap_pairs[1][:, :20]
    z = np.abs(x - y)
    untied = (np.sort(z, axis=-1)[:, 1:] != np.sort(z, axis=-1)[:, :-1]).all(axis=-1)
    untied &= (z > 0).all(axis=-1)
    assert untied.sum() > 200
    r = wilcoxon(x[untied], y[untied], method="exact", alternative=alternative)
    s = sps.wilcoxon(x[untied], y[untied], method="exact", alternative=alternative, axis=-1)
    assert r.exact.all()
    np.testing.assert_allclose(r.pvalue, s.pvalue, rtol=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.slow
def test_wilcoxon_exact_with_ties_equals_permutation(p10_pairs, alternative):
    """With ties and zeros our exact distribution is the sign-flip distribution of W+,
    as scipy's exhaustive permutation method (n = 9 topics)."""
    x, y = p10_pairs[0][:60, :9], p10_pairs[1][:60, :9]
    r = wilcoxon(x, y, method="exact", alternative=alternative)
    s = sps.wilcoxon(x, y, method=sps.PermutationMethod(n_resamples=np.inf),
                     alternative=alternative, axis=-1)
    ok = r.n > 0
    np.testing.assert_allclose(r.pvalue[ok], s.pvalue[ok], rtol=1e-12)


def test_wilcoxon_r_mode(ap_pairs):
    """R: exact below 50 untied nonzero differences, else approximation + correction."""
    x, y = ap_pairs
    r = wilcoxon(x, y, method="r")
    s = sps.wilcoxon(x, y, method="asymptotic", correction=True, axis=-1)
    assert not r.exact.any()  # n = 50
    np.testing.assert_allclose(r.pvalue, s.pvalue, rtol=1e-10)
    short = wilcoxon(x[:, :30], y[:, :30], method="r")
    z = x[:, :30] - y[:, :30]
    srt = np.sort(np.abs(z), axis=-1)
    should = (srt[:, 1:] != srt[:, :-1]).all(axis=-1) & (z != 0).all(axis=-1)
    np.testing.assert_array_equal(short.exact, should)


@pytest.mark.parametrize("method", ["approx", "exact", "auto", "r"])
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
def test_wilcoxon_row_without_nonzero_differences_has_p_one(method, zero_method):
    """A pair whose differences are all 0 carries no evidence: p = 1 and not 'exact' (with
    pratt the zeros are ranked, so they are in n; scipy's approx gives NaN there). The row
    beside it (3 nonzero differences and 5 zeros) equals scipy's normal approximation."""
    z = np.zeros((2, 8))
    z[1, :3] = [0.1, -0.2, 0.3]
    r = wilcoxon(z, zero_method=zero_method, method=method)
    assert r.pvalue[0] == 1.0 and not r.exact[0]
    if method == "approx":
        want = sps.wilcoxon(z[1], zero_method=zero_method, method="asymptotic").pvalue
        assert r.pvalue[1] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("threshold", [0.0, 0.01])
def test_sign_test_equals_binomtest(p10_pairs, ap_pairs, alternative, threshold):
    for x, y in (p10_pairs, ap_pairs):
        r = sign_test(x, y, alternative=alternative, threshold=threshold)
        z = x - y
        for i in range(len(z)):
            k = int((z[i] > threshold).sum())
            m = k + int((z[i] < -threshold).sum())
            assert (int(r.statistic[i]), int(r.n[i])) == (k, m)
            if m:
                ref = sps.binomtest(k, m, 0.5, alternative=alternative).pvalue
                assert abs(r.pvalue[i] - ref) <= 1e-12 * max(ref, 1e-300) + 1e-15


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("data", ["ap_pairs", "p10_pairs"])
def test_exact_randomisation_equals_permutation_test(request, data, alternative):
    x, y = request.getfixturevalue(data)
    z = (x - y)[:200, :12]
    r = randomisation_test(z, method="exact", alternative=alternative)
    s = sps.permutation_test((z,), lambda v, axis: np.mean(v, axis=axis), vectorized=True,
                             permutation_type="samples", n_resamples=np.inf,
                             alternative=alternative, axis=-1)
    np.testing.assert_allclose(r.pvalue, s.pvalue, rtol=1e-12)


def _scipy_replay(x, B: int, seed: int):
    """The bootstrap means scipy.stats.bootstrap computes with rng=default_rng(seed):
    it draws ``rng.integers(0, n, (B, n))`` once and takes ``x[..., idx].mean(-1)``."""
    idx = np.random.default_rng(seed).integers(0, x.shape[-1], (B, x.shape[-1]))
    return x[..., idx].mean(axis=-1)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_bootstrap_intervals_equal_scipy(ap_pairs, method, alternative):
    """Given scipy's own resamples, percentile/basic/BCa limits equal scipy's.

    BCa's bias correction counts bootstrap means equal to the sample mean as ties (with
    TIE_RTOL). AP has 4 decimals, so such ties are exact in real arithmetic and frequent
    on 10 topics, but float sums give them a rounding-error sign. scipy is therefore run
    on the data in units of 1e-4 (integers, where float sums are exact and ties are
    ties), and its limits scaled back; the intervals are equivariant under scaling.
    """
    # 300 real samples: differences of pairs (50 topics) and one system's AP on 10 topics
    z = (ap_pairs[0] - ap_pairs[1])[:150]
    ap10 = ap_pairs[0][150:300, :10]
    B, seed = 999, 5
    for data in (z, ap10):
        star = _scipy_replay(data, B, seed)
        acc = mean_acceleration(data) if method == "bca" else None
        got = bootstrap_ci(data.mean(axis=-1), star, method=method, confidence_level=0.9,
                           alternative=alternative, acceleration=acc)
        scale = 1e4 if method == "bca" else 1.0
        units = np.round(data * scale) if method == "bca" else data
        ref = sps.bootstrap((units,), lambda v, axis: np.mean(v, axis=axis), axis=-1,
                            vectorized=True, n_resamples=B, confidence_level=0.9,
                            method=method.replace("bca", "BCa"), alternative=alternative,
                            rng=np.random.default_rng(seed))
        np.testing.assert_allclose(star * scale, ref.bootstrap_distribution, rtol=1e-12,
                                   atol=1e-12)
        for side in ("low", "high"):
            np.testing.assert_allclose(getattr(got.confidence_interval, side) * scale,
                                       getattr(ref.confidence_interval, side),
                                       rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got.standard_error * scale, ref.standard_error, rtol=1e-9)


# ------------------------------------------- issue 16: degenerate differences, as scipy
def _degenerate_rows(x, y):
    """Real pair differences plus rows scipy treats specially: constant non-zero (both
    signs, exactly and up to rounding), all zero, and identical systems."""
    z = x - y
    extra = np.array([[0.25] * z.shape[1], [-0.1] * z.shape[1], [0.0] * z.shape[1],
                      [0.1 + 0.2] * z.shape[1]])
    return np.concatenate([z, extra, (x[:3] - x[:3])])


def test_t_statistic_and_paired_t_follow_scipy_on_constant_differences(ap_pairs,
                                                                        p10_pairs):
    """Constant non-zero differences: t = +-inf and p = 0; all zero: NaN (scipy); every
    other row as scipy to rounding. The studies count NaN as never significant."""
    from irsim.stats.ttest import t_statistic

    for x, y in (ap_pairs, p10_pairs):
        z = _degenerate_rows(x, y)
        ref = sps.ttest_1samp(z, 0.0, axis=-1)
        t = t_statistic(z)
        p = 2.0 * sps.t.sf(np.abs(t), df=z.shape[1] - 1)
        assert np.array_equal(np.isnan(t), np.isnan(ref.statistic))
        # constant rows: scipy gives +-inf, or (its rounding of a constant row) |t| > 1e5
        huge = np.abs(ref.statistic) > 1e5
        assert huge.sum() >= 3 and np.isinf(t[huge]).all()
        assert np.array_equal(np.sign(t[huge]), np.sign(ref.statistic[huge]))
        assert (p[huge] == 0).all() and (ref.pvalue[huge] < 1e-10).all()
        rest = ~huge & ~np.isnan(t)
        np.testing.assert_allclose(t[rest], ref.statistic[rest], rtol=1e-9)
        np.testing.assert_allclose(p[rest], ref.pvalue[rest], rtol=1e-8, atol=1e-300)
        assert not (p[np.isnan(p)] < 0.05).any()  # NaN: never significant
        r = paired_t(z)  # the public test: the same rows
        np.testing.assert_allclose(r.statistic, ref.statistic, rtol=1e-12)
        np.testing.assert_allclose(r.pvalue, ref.pvalue, rtol=1e-10, atol=1e-300)
    n = 50
    t = t_statistic(np.array([[0.25] * n, [-0.1] * n, [0.0] * n]))
    assert t[0] == np.inf and t[1] == -np.inf and np.isnan(t[2])
    assert sps.ttest_rel(np.full(n, 0.5), np.full(n, 0.25)).pvalue == 0.0
