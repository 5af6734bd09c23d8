"""Tests written to kill the mutants that a mutmut run (setup.cfg, README "Mutation testing")
left alive in the stats and metrics kernels: changed comparisons, cut-offs, bin edges, rounding,
ddof and argument order. Every expected value comes from scipy or from the method's definition
written out here (literal tolerances, own loops); nothing is imported from the module under test
but the function being checked.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from irsim.errors import ConfigError
from irsim.stats.kendall import concordance, pair_signs, tau_b, tau_b_matrix, ties, z0_test
from irsim.stats.randomisation import randomisation_test
from irsim.stats.sign import sign_test
from irsim.stats.ties import count_extreme, score_tolerance, snap_zero, tie_tolerance
from irsim.stats.ttest import paired_t
from irsim.stats.wilcoxon import wilcoxon

# ---------------------------------------------------------------------------------------------
# Kendall's tau-b (irsim.stats.kendall) against scipy.stats.kendalltau


def test_tau_b_matrix_equals_scipy_with_ties_and_orientation():
    """Every pair of rows, discrete scores (many ties), against scipy's tau-b; the matrix is
    symmetric and its diagonal is 1 (a row with ties still has tau-b 1 with itself)."""
    rng = np.random.default_rng(18)
    x = rng.integers(0, 4, size=(6, 9)).astype(float)
    x[5] = np.arange(9.0)[::-1]  # a strictly decreasing ranking: tau-b with itself 1
    got = tau_b_matrix(x)
    for i, j in itertools.product(range(6), repeat=2):
        want = sps.kendalltau(x[i], x[j]).statistic
        assert got[i, j] == pytest.approx(want, abs=1e-14), (i, j)


def test_tau_b_from_pair_signs_equals_scipy():
    """The batched path of discpower: signs of item-pair differences per sample (columns),
    concordance sums and tie counts, then tau-b; every sample against scipy."""
    rng = np.random.default_rng(12)
    k, samples = 7, 40
    x = rng.integers(0, 4, size=(k, samples)).astype(float)
    y = rng.integers(0, 4, size=(k, samples)).astype(float)
    a, b = np.triu_indices(k, 1)
    s1, s2 = pair_signs(x[a] - x[b]), pair_signs(y[a] - y[b])
    assert s1.dtype == np.int8 and set(np.unique(s1).tolist()) <= {-1, 0, 1}
    conc = concordance(s1, s2)
    t1, t2 = ties(s1), ties(s2)
    want_conc = [sum(np.sign(x[i, j] - x[m, j]) * np.sign(y[i, j] - y[m, j])
                     for i, m in zip(a, b, strict=True)) for j in range(samples)]
    want_t1 = [sum(x[i, j] == x[m, j] for i, m in zip(a, b, strict=True))
               for j in range(samples)]
    assert conc.tolist() == want_conc and t1.tolist() == want_t1
    assert conc.dtype == np.int64 and t1.dtype == np.int64
    got = tau_b(conc, t1, t2, k)
    for j in range(samples):
        want = sps.kendalltau(x[:, j], y[:, j]).statistic
        if np.isnan(want):
            assert np.isnan(got[j])
        else:
            assert got[j] == pytest.approx(want, abs=1e-14), j


def test_tau_b_all_tied_ranking_is_nan():
    x = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    got = tau_b_matrix(x)
    assert np.isnan(got[0, 1]) and np.isnan(got[1, 1]) and got[0, 0] == 1.0
    assert np.isnan(sps.kendalltau(x[0], x[1]).statistic)


@pytest.mark.parametrize("k", [3, 5, 12, 30])
def test_z0_equals_scipy_asymptotic_kendall_without_ties(k):
    """Sakai's Z0 (tau over its null SD sqrt(2(2k+5)/(9k(k-1)))) is scipy's asymptotic
    Kendall test when there are no ties: same two-sided p-value."""
    rng = np.random.default_rng(k)
    a, b = rng.permutation(k).astype(float), rng.permutation(k).astype(float)
    res = sps.kendalltau(a, b, method="asymptotic")
    z0, p = z0_test(float(res.statistic), k)
    assert p == pytest.approx(res.pvalue, rel=1e-12, abs=1e-300)
    assert z0 == pytest.approx(sps.norm.isf(res.pvalue / 2), rel=1e-9)
    # the sign of tau does not matter (two-sided)
    assert z0_test(-float(res.statistic), k) == pytest.approx((z0, p), rel=1e-15)


def test_z0_degenerate_inputs():
    assert all(math.isnan(v) for v in z0_test(0.5, 1))
    assert all(math.isnan(v) for v in z0_test(float("nan"), 10))
    z0, p = z0_test(0.0, 2)  # k = 2 is the smallest defined size
    assert (z0, p) == (0.0, 1.0)


# ---------------------------------------------------------------------------------------------
# Tie rules (irsim.stats.ties): the tolerance is 1e-9 relative (METHODS.md section 2), written
# out here as a literal.

RTOL = 1e-9


def test_score_tolerance_uses_largest_absolute_score():
    assert score_tolerance(np.array([[0.5, -3.0], [2.0, 1.0]])) == pytest.approx(3.0 * RTOL,
                                                                                   rel=1e-15)
    assert score_tolerance(np.zeros((0, 3))) == 0.0


def test_snap_zero_boundary_is_inclusive():
    tol = 0.25  # a binary fraction: |d| == tol is exact
    d = np.array([0.25, -0.25, 0.2500001, -0.26, 0.0, 0.1])
    assert snap_zero(d.copy(), tol).tolist() == [0.0, 0.0, 0.2500001, -0.26, 0.0, 0.0]
    per = np.array([0.5, 0.0, 0.3, 0.3, 0.0, 0.0])  # elementwise tolerances
    assert snap_zero(d.copy(), per).tolist() == [0.0, -0.25, 0.0, 0.0, 0.0, 0.1]


def test_tie_tolerance_is_relative_with_floor():
    obs = np.array([-4.0, 0.5, 0.0])
    assert tie_tolerance(obs, np.array([1.0, 1.0, 2.0])).tolist() == pytest.approx(
        [4 * RTOL, 1 * RTOL, 2 * RTOL], rel=1e-15)
    assert tie_tolerance(obs).tolist() == pytest.approx([4 * RTOL, 0.5 * RTOL, 0.0], rel=1e-15)


@pytest.mark.parametrize("obs", [1.0, -1.0, 3.0])
def test_count_extreme_directions_ties_and_tolerance(obs):
    """Counts from the definitions: two-sided |r| >= |obs|, greater r >= obs, less r <= obs,
    a replicate within 1e-9 |obs| of the boundary counts, one 3e-9 |obs| beyond does not."""
    a = abs(obs)
    inside, outside = 0.5 * RTOL * a, 3 * RTOL * a
    r = np.array([obs, obs - inside, obs + inside, obs - outside, obs + outside,
                  -obs, -obs + np.sign(obs) * outside, 0.0, 10 * obs, -10 * obs])
    want = {
        "two-sided": sum(abs(v) >= a - RTOL * a for v in r),
        "greater": sum(v >= obs - RTOL * a for v in r),
        "less": sum(v <= obs + RTOL * a for v in r),
    }
    for alt, n in want.items():
        assert int(count_extreme(r[None], np.array([obs]), alt)[0]) == n, alt
    # explicit values for obs = 1: the boundary cases are counted by hand
    if obs == 1.0:
        assert [int(count_extreme(r[None], np.array([obs]), alt)[0])
                for alt in ("two-sided", "greater", "less")] == [7, 5, 8]


def test_count_extreme_scale_floor_for_zero_statistics():
    """An observed 0 with scale s: replicates within 1e-9 s of 0 tie with it."""
    r = np.array([[0.4e-9, -0.4e-9, 2e-9, -2e-9, 0.0]])
    obs = np.array([0.0])
    assert int(count_extreme(r, obs, "two-sided", scale=1.0)[0]) == 5
    assert int(count_extreme(r, obs, "greater", scale=1.0)[0]) == 4
    assert int(count_extreme(r, obs, "less", scale=1.0)[0]) == 4
    assert int(count_extreme(r, obs, "greater")[0]) == 3  # no floor: exact comparison
    assert int(count_extreme(r, obs, "less")[0]) == 3


def test_count_extreme_keeps_leading_axes():
    """Replicates of shape (a, b, B) and observed (a, b): counts per (a, b) cell (a loop)."""
    rng = np.random.default_rng(3)
    r = rng.normal(size=(2, 3, 7))
    obs = rng.normal(size=(2, 3))
    got = count_extreme(r, obs, "greater")
    want = [[sum(v >= obs[i, j] - RTOL * abs(obs[i, j]) for v in r[i, j]) for j in range(3)]
            for i in range(2)]
    assert got.shape == (2, 3) and got.tolist() == want


# ---------------------------------------------------------------------------------------------
# Kendall: two items, and no warnings for an all-tied ranking


def test_tau_b_two_items_equals_scipy():
    x = np.array([[1.0, 2.0], [2.0, 1.0], [0.0, 5.0]])
    got = tau_b_matrix(x)
    for i, j in itertools.product(range(3), repeat=2):
        assert got[i, j] == sps.kendalltau(x[i], x[j]).statistic, (i, j)


def test_tau_b_all_tied_ranking_gives_nan_without_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tau_b_matrix(np.array([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]]))
    assert np.isnan(got[1]).all() and got[0, 0] == 1.0


# ---------------------------------------------------------------------------------------------
# Sign test (irsim.stats.sign) against scipy.stats.binomtest



def test_sign_default_threshold_is_zero():
    """Without a threshold only exact zeros are ties (differences well below 1 count)."""
    z = np.array([[0.3, -0.2, 0.01, 0.0, 0.4, 0.25, -0.05, 0.6, 0.02]])
    r = sign_test(z)
    k, m = int((z > 0).sum()), int((z != 0).sum())
    assert (int(r.statistic[0]), int(r.n[0])) == (k, m) == (6, 8)
    assert float(r.pvalue[0]) == pytest.approx(sps.binomtest(k, m).pvalue, rel=1e-12)


@pytest.mark.parametrize("alt", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("z", [[0.0, 0.3, 0.0], [0.0, -0.3, 0.0], [0.1, 0.2, -0.3, 0.0]])
def test_sign_small_counts_equal_binomtest(alt, z):
    """One or a few untied topics (m = 1: the one-sided p is 0.5 or 1)."""
    z = np.array([z])
    k, m = int((z > 0).sum()), int((z != 0).sum())
    r = sign_test(z, alternative=alt)
    assert float(r.pvalue[0]) == pytest.approx(sps.binomtest(k, m, alternative=alt).pvalue,
                                               rel=1e-12)


def test_sign_all_ties_and_integer_results():
    r = sign_test(np.array([[0.0, 0.0, 0.0], [0.004, -0.002, 0.0]]), threshold=0.01,
                  alternative="greater")
    assert r.pvalue.tolist() == [1.0, 1.0]
    assert r.n.tolist() == [0, 0] and r.statistic.tolist() == [0, 0]
    assert r.n.dtype.kind == "i" and r.statistic.dtype.kind == "i"
    with pytest.raises(ConfigError, match="threshold must be a number >= 0, got 'x'"):
        sign_test(np.array([[0.1, 0.2]]), threshold="x")


# ---------------------------------------------------------------------------------------------
# Paired t (irsim.stats.ttest) against scipy.stats.ttest_rel



def test_paired_t_default_interval_is_95_percent():
    rng = np.random.default_rng(5)
    x, y = rng.uniform(size=12), rng.uniform(size=12)
    ci = paired_t(x, y).confidence_interval()
    want = sps.ttest_rel(x, y).confidence_interval()
    assert (float(ci.low), float(ci.high)) == pytest.approx((want.low, want.high), rel=1e-12)


def test_paired_t_zero_variance_without_warnings():
    """Constant differences: t = +-inf, p = 0 (nonzero mean) or NaN (all zero), as scipy,
    and no RuntimeWarning."""
    import warnings

    z = np.array([[0.1] * 5, [-0.2] * 5, [0.0] * 5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = paired_t(z)
    assert r.statistic[0] == np.inf and r.statistic[1] == -np.inf and np.isnan(r.statistic[2])
    assert r.pvalue[:2].tolist() == [0.0, 0.0] and np.isnan(r.pvalue[2])


# ---------------------------------------------------------------------------------------------
# Wilcoxon exact p-values against a brute-force enumeration of the 2^m sign patterns



def enumerated_wilcoxon(z: np.ndarray, alternative: str) -> float:
    """Exact p of W+ (average ranks of |z| over the nonzero differences) by enumerating every
    sign pattern; two-sided: 2 min(P(W >= w), P(W <= w)), capped at 1."""
    nz = z[z != 0]
    ranks = sps.rankdata(np.abs(nz))
    w = ranks[nz > 0].sum()
    signs = np.array(list(itertools.product([0, 1], repeat=len(nz))))
    dist = signs @ ranks
    ge, le = np.mean(dist >= w - 1e-9), np.mean(dist <= w + 1e-9)
    return {"greater": ge, "less": le}.get(alternative, min(1.0, 2 * min(ge, le)))


@pytest.mark.parametrize("alt", ["two-sided", "greater", "less"])
def test_wilcoxon_exact_in_many_chunks_equals_enumeration(alt):
    """Rows with different rank multisets (ties, zeros) and a memory budget of two rows per
    chunk: every row's exact p equals the enumeration."""
    rng = np.random.default_rng(8)
    z = rng.integers(-3, 4, size=(12, 8)).astype(float) / 10
    z[0] = [0.0, 0.0, 0.1, 0.2, -0.3, 0.4, 0.5, 0.6]  # zeros first: sorted ranks start at 0
    z[1] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2]
    r = wilcoxon(z, method="exact", alternative=alt, memory_budget=2 * 40 * 73)
    want = [enumerated_wilcoxon(row, alt) if (row != 0).any() else 1.0 for row in z]
    np.testing.assert_allclose(r.pvalue, want, rtol=1e-12, atol=1e-15)
    r1 = wilcoxon(z, method="exact", alternative=alt)  # one chunk: the same numbers
    np.testing.assert_array_equal(r.pvalue, r1.pvalue)


@pytest.mark.parametrize("alt", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_pratt_equals_scipy(alt, correction):
    """zero_method='pratt': zeros are ranked, then dropped from the sums (scipy's normal
    approximation with the tie correction)."""
    z = np.array([[0.0, 0.0, 0.1, -0.2, 0.3, 0.1, 0.4, -0.1, 0.5, 0.2, 0.0, 0.6],
                  [0.3, -0.1, 0.0, 0.2, 0.25, -0.3, 0.15, 0.05, 0.35, 0.0, 0.45, 0.1]])
    r = wilcoxon(z, zero_method="pratt", method="approx", correction=correction,
                 alternative=alt)
    for i, row in enumerate(z):
        ref = sps.wilcoxon(row, zero_method="pratt", method="approx", correction=correction,
                           alternative=alt)
        assert float(r.pvalue[i]) == pytest.approx(ref.pvalue, rel=1e-10)
        # scipy's two-sided z is that of min(W+, W-): the same magnitude
        zs = abs(float(r.zstatistic[i])) if alt == "two-sided" else float(r.zstatistic[i])
        assert zs == pytest.approx(abs(ref.zstatistic) if alt == "two-sided" else
                                   ref.zstatistic, rel=1e-10)
        ranks = sps.rankdata(np.abs(row))
        assert float(r.statistic[i]) == ranks[row > 0].sum()
        assert float(r.r_minus[i]) == ranks[row < 0].sum()
    assert r.n.tolist() == [12, 12]


def test_wilcoxon_smallest_memory_budget():
    """memory_budget = 1 byte is valid (one row per chunk): the same p-values."""
    rng = np.random.default_rng(2)
    z = rng.integers(-3, 4, size=(5, 9)).astype(float)
    a = wilcoxon(z, method="exact", memory_budget=1)
    b = wilcoxon(z, method="exact")
    np.testing.assert_array_equal(a.pvalue, b.pvalue)
    with pytest.raises(ConfigError, match="memory_budget"):
        wilcoxon(z, memory_budget=0)


# ---------------------------------------------------------------------------------------------
# Multiple-comparison corrections (irsim.stats.multiple) against statsmodels: small, fast
# families with ties, p exactly at alpha's boundaries, NaN members and any axis


@pytest.mark.parametrize("method", ["none", "bonferroni", "holm", "bh", "by"])
def test_adjust_and_reject_equal_statsmodels(method):
    from statsmodels.stats.multitest import multipletests

    from irsim.stats.multiple import adjust, reject

    sm = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}
    rng = np.random.default_rng(21)
    p = rng.choice([0.001, 0.01, 0.0125, 0.02, 0.025, 0.05, 0.2, 0.5, 1.0], size=(3, 6, 5))
    p[0, 0, :2] = np.nan
    p[1, 2, :] = [0.01, 0.01, 0.01, 0.05, 0.05]  # ties
    for axis in (-1, 0, 1):
        fam = np.moveaxis(p, axis, -1)
        got = np.moveaxis(adjust(p, method, axis=axis), axis, -1)
        for alpha in (0.01, 0.05, 0.25):
            rej = np.moveaxis(reject(p, alpha, method, axis=axis), axis, -1)
            for idx in np.ndindex(fam.shape[:-1]):
                f = fam[idx]
                ok = ~np.isnan(f)
                if method == "none":
                    want_adj, want_rej = f[ok], f[ok] <= alpha
                else:
                    want_rej, want_adj, *_ = multipletests(f[ok], alpha=alpha,
                                                           method=sm[method])
                np.testing.assert_array_equal(got[idx][ok], want_adj)
                np.testing.assert_array_equal(rej[idx][ok], want_rej)
                assert np.isnan(got[idx][~ok]).all() and not rej[idx][~ok].any()


def untied(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(1, n + 1)) * rng.choice([-1, 1], size=n) / 100 + 0.001


@pytest.mark.parametrize("n,zeros,is_exact", [(50, 0, True), (51, 0, False), (52, 2, True),
                                              (53, 2, False)])
def test_wilcoxon_auto_cutoff_of_50_untied_ranks(n, zeros, is_exact):
    """method='auto' (documented): exact for at most 50 untied nonzero differences (zeros
    dropped), else the normal approximation: scipy's exact / approx on the nonzero ones."""
    z = untied(n, n)
    z[:zeros] = 0.0
    r = wilcoxon(z)
    assert bool(r.exact) is is_exact and int(r.n) == n - zeros
    ref = sps.wilcoxon(z[z != 0], method="exact" if is_exact else "approx")
    assert float(r.pvalue) == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("n,is_exact", [(13, True), (14, False)])
def test_wilcoxon_auto_cutoff_of_13_differences_with_ties(n, is_exact):
    """With ties: exact (the permutation distribution of the ranks) up to 13 differences."""
    rng = np.random.default_rng(n)
    z = rng.integers(1, 4, size=n) * rng.choice([-1, 1], size=n) / 10
    r = wilcoxon(z)
    assert bool(r.exact) is is_exact
    want = (enumerated_wilcoxon(z, "two-sided") if is_exact
            else sps.wilcoxon(z, method="approx").pvalue)
    assert float(r.pvalue) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("n,zeros,is_exact", [(49, 0, True), (50, 0, False), (20, 1, False)])
def test_wilcoxon_r_mode_cutoffs(n, zeros, is_exact):
    """method='r' (R's wilcox.test): exact below 50 differences without ties or zeros, else
    the corrected normal approximation."""
    z = untied(n, 3 * n)
    z[:zeros] = 0.0
    r = wilcoxon(z, method="r")
    assert bool(r.exact) is is_exact
    ref = (sps.wilcoxon(z, method="exact") if is_exact
           else sps.wilcoxon(z, method="approx", correction=True))
    assert float(r.pvalue) == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("alt,p", [("two-sided", 1.0), ("greater", 0.5), ("less", 1.0)])
def test_wilcoxon_exact_with_one_nonzero_difference(alt, p):
    r = wilcoxon(np.array([0.0, 0.3, 0.0]), method="exact", alternative=alt)
    assert bool(r.exact) and float(r.pvalue) == p


# ---------------------------------------------------------------------------------------------
# Randomisation test (irsim.stats.randomisation): the method choice and the exact limit n = 40



def sign_flip_count(k: np.ndarray) -> tuple[int, int]:
    """Exact counts of sign vectors s with sum(s k) >= sum(k) and |sum(s k)| >= |sum(k)| for
    integer k, by a dynamic programme over the possible sums (all 2^n vectors)."""
    off = int(np.abs(k).sum())
    dist = np.zeros(2 * off + 1, dtype=object)
    dist[off] = 1
    for v in np.abs(k).tolist():
        new = np.zeros_like(dist)
        new[v:] += dist[: len(dist) - v]
        new[: len(dist) - v] += dist[v:]
        dist = new
    obs = int(k.sum())
    sums = np.arange(-off, off + 1)
    return int(dist[sums >= obs].sum()), int(dist[np.abs(sums) >= abs(obs)].sum())


def test_randomisation_exact_at_the_limit_n_40():
    """n = 40 is the largest exact enumeration (2^40 sign vectors): counts equal a dynamic
    programme over integer scores; n = 41 is refused."""
    k = np.random.default_rng(1).integers(-9, 12, size=40)
    z = k / 100.0
    ge, two = sign_flip_count(k)
    r = randomisation_test(z, method="exact", alternative="greater")
    assert r.exact and r.n_resamples == 2**40 and int(r.count) == ge
    r = randomisation_test(z, method="exact")
    assert int(r.count) == two
    with pytest.raises(ConfigError, match="n = 41 > 40"):
        randomisation_test(np.append(z, 0.1), method="exact")


def test_randomisation_method_choice():
    """monte_carlo is Monte Carlo even when 2^n <= B; auto is exact when 2^n <= B."""
    z = np.array([0.1, -0.2, 0.3, 0.05, 0.2])
    mc = randomisation_test(z, method="monte_carlo", B=1000, seed=3)
    assert not mc.exact and mc.n_resamples == 1000
    auto = randomisation_test(z, method="auto", B=32)
    assert auto.exact and auto.n_resamples == 32
    k = np.round(z * 100).astype(int)
    assert int(auto.count) == sign_flip_count(k)[1]
    assert not randomisation_test(z, method="auto", B=31).exact


# ---------------------------------------------------------------------------------------------
# exact_split (irsim.stats.resample): hi on a grid of 2^20 steps of the largest magnitude


@pytest.mark.parametrize("x", [[0.1, 0.7, 1.0 / 3], [1.0, 0.1, -1.0 / 3], [-0.75, 0.2, 0.0],
                               [3e-5, 1e-7, 2.5e-5]])
def test_exact_split_grid_from_the_definition(x):
    """hi + lo == x exactly; hi / step integers with step = 2^(e - 20), e = frexp(max|x|)[1]
    (so |hi / step| <= 2^20); |lo| <= step / 2; and hi @ counts equals the exact rational sum
    for bootstrap count matrices (Python fractions)."""
    from fractions import Fraction

    from irsim.stats.resample import exact_split

    x = np.array(x)
    hi, lo = exact_split(x)
    step = 2.0 ** (math.frexp(float(np.abs(x).max()))[1] - 20)
    assert (hi + lo == x).all()
    k = hi / step
    assert (k == np.round(k)).all() and np.abs(k).max() <= 2 ** 20
    assert np.abs(lo).max() <= step / 2
    counts = np.random.default_rng(1).multinomial(len(x) * 50, [1 / len(x)] * len(x), size=20)
    exact = [sum(Fraction(float(h)) * int(c) for h, c in zip(hi, row, strict=True))
             for row in counts]
    assert [Fraction(float(v)) for v in counts.astype(float) @ hi] == exact


def test_exact_split_of_zeros_and_empty():
    from irsim.stats.resample import exact_split

    hi, lo = exact_split(np.zeros(3))
    assert hi.tolist() == [0.0] * 3 and lo.tolist() == [0.0] * 3
    hi, lo = exact_split(np.zeros(0))
    assert hi.shape == lo.shape == (0,)


def test_paired_ratio_near_constant_resamples_from_the_definition():
    """p = s2 / s1^2 per resample (t*^2 = (n-1) / (n p - 1)), and p = inf (t* = 0) where s1 = 0
    or the resample is constant: n s2 - s1^2 <= 1e-12 (n-1) s2 (METHODS.md: a resample with
    zero variance has t* = 0). Resamples with a tiny but nonzero variance keep their finite p;
    expected values in exact rational arithmetic."""
    from fractions import Fraction

    from irsim.stats.resample import paired_ratio

    e = 2.0 ** -17  # dyadic values: the centred rows sum to 0 exactly
    f = 2.0 ** -20  # resample (2, 1, 0): n s2 - s1^2 = 2.4e-12 s2, just above 1e-12 (n-1) s2
    w = np.array([[0.5, 0.5 + e, -1.0 - e], [0.25, -0.5, 0.25], [0.5, 0.5 + f, -1.0 - f]])
    ct = np.array([[3, 0, 0], [2, 1, 0], [1, 2, 0], [1, 1, 1], [0, 0, 3], [0, 2, 1],
                   [2, 0, 2]], dtype=float).T  # (n, B)
    s1 = w @ ct
    got = paired_ratio(w, w * w, ct, s1.copy())
    n = 3
    for i in range(3):
        for b in range(ct.shape[1]):
            wv = [Fraction(float(v)) for v in w[i]]
            c = [int(v) for v in ct[:, b]]
            e1 = sum(x * k for x, k in zip(wv, c, strict=True))
            e2 = sum(x * x * k for x, k in zip(wv, c, strict=True))
            const = e1 == 0 or n * e2 - e1 * e1 <= Fraction(1e-12) * (n - 1) * e2
            if const:
                assert got[i, b] == np.inf, (i, b)
            else:
                assert got[i, b] == pytest.approx(float(e2 / (e1 * e1)), rel=1e-9), (i, b)
    assert np.isfinite(got[0, 1]) and np.isfinite(got[0, 2])  # nearly constant, not constant
    assert np.isfinite(got[2, 1])


def test_studentized_t_shapes_and_scalar():
    """Along the last axis for any leading shape (scipy's ttest_1samp), a float for 1-D."""
    from irsim.stats.resample import studentized_t

    z = np.random.default_rng(4).normal(size=(2, 3, 6))
    t = studentized_t(z)
    assert t.shape == (2, 3)
    np.testing.assert_allclose(t, sps.ttest_1samp(z, 0.0, axis=-1).statistic, rtol=1e-10)
    one = studentized_t(z[0, 0])
    assert np.ndim(one) == 0 and not isinstance(one, np.ndarray)


@pytest.mark.parametrize("alt", ["two-sided", "greater", "less"])
def test_wilcoxon_pratt_exact_equals_enumeration(alt):
    """Pratt with the exact distribution: ranks of |z| with the zeros, then every sign pattern
    of the nonzero differences' ranks (zeros carry no sign)."""
    z = np.array([0.0, 0.0, 0.1, -0.2, 0.3, 0.1, 0.4, -0.1, 0.5, 0.0])
    ranks = sps.rankdata(np.abs(z))
    nz = z != 0
    w = ranks[nz & (z > 0)].sum()
    dist = np.array(list(itertools.product([0, 1], repeat=int(nz.sum())))) @ ranks[nz]
    ge, le = np.mean(dist >= w - 1e-9), np.mean(dist <= w + 1e-9)
    want = {"greater": ge, "less": le}.get(alt, min(1.0, 2 * min(ge, le)))
    r = wilcoxon(z, zero_method="pratt", method="exact", alternative=alt)
    assert float(r.pvalue) == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Unpaired bootstrap with the area of the worst k topics (Sakai 2006): mean of the k smallest


def test_unpaired_worst_k_statistic_and_replicates_from_the_definition():
    """The observed statistic is mean(k smallest x) - mean(k smallest y) (np.sort), and the
    two-sided ASL is within 4 binomial SE of Sakai's unpaired bootstrap written out here
    (pool x and y, draw n + m with replacement, the same statistic on both parts)."""
    from irsim.stats import unpaired_bootstrap

    rng = np.random.default_rng(30)
    k, n = 5, 30
    x = rng.uniform(0, 1, (2, n)) ** 2
    y = np.stack([rng.uniform(0, 1, n) ** 2, rng.uniform(0.1, 1, n) ** 3])
    B = 2000
    r = unpaired_bootstrap(x, y, summary="worst", k=k, B=B, seed=2)

    def worst(a):
        return np.sort(a, axis=-1)[..., :k].mean(axis=-1)

    np.testing.assert_allclose(r.statistic, worst(x) - worst(y), rtol=1e-12)
    ref_rng = np.random.default_rng(77)
    Bref = 20_000
    for row in range(2):
        v = np.concatenate([x[row], y[row]])
        s = v[ref_rng.integers(0, 2 * n, size=(Bref, 2 * n))]
        d = worst(s[:, :n]) - worst(s[:, n:])
        obs = worst(x[row]) - worst(y[row])
        ref = float(np.mean(np.abs(d) >= abs(obs) - 1e-12))
        se = math.sqrt(max(ref * (1 - ref), 1 / Bref) * (1 / B + 1 / Bref))
        assert abs(float(r.pvalue[row]) - ref) <= 4 * se, (row, float(r.pvalue[row]), ref)


@pytest.mark.parametrize("t_obs", [-0.5, 0.5, 1.5])
def test_count_t_boundary_counts_as_extreme(t_obs):
    """count_t from the definition: replicate t* from p = (1 + (n-1)/t*^2)/n and the sign of
    s1; 'greater' counts t* >= t_obs - 1e-9 max(|t_obs|, 1), so a replicate exactly on that
    boundary counts and one 1e-6 beyond it does not ('less' mirrored, two-sided on |t*|)."""
    from irsim.stats.bootstrap import count_t

    n = 5
    a = t_obs - 1e-9 * max(abs(t_obs), 1.0)
    t = np.array([a, a - 1e-6, a + 1e-6, 0.0, 2.0, -2.0, -a])
    with np.errstate(divide="ignore"):
        p = (1 + (n - 1) / t ** 2) / n
    s1 = np.sign(t)
    got = int(count_t(p[None], np.array([t_obs]), n, "greater", s1[None])[0])
    assert got == int(np.sum(t >= a))
    # less: mirror (t* <= -t_obs + tol); evaluate with the mirrored replicates
    got = int(count_t(p[None], np.array([-t_obs]), n, "less", -s1[None])[0])
    assert got == int(np.sum(-t <= -a))
    a2 = abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0)
    t2 = np.array([a2, -a2, a2 - 1e-6, a2 + 1e-6, 0.0])
    with np.errstate(divide="ignore"):
        p2 = (1 + (n - 1) / t2 ** 2) / n
    assert int(count_t(p2[None], np.array([t_obs]), n)[0]) == int(np.sum(np.abs(t2) >= a2))


# ---------------------------------------------------------------------------------------------
# discpower's kernels of irsim.stats.resample: pair differences with the tie rule, and the
# randomised Tukey HSD null ranges, against loops


def test_sample_differences_loop():
    from irsim.stats.resample import sample_differences

    rng = np.random.default_rng(9)
    s = np.round(rng.uniform(size=(4, 6)), 1)
    s[2] = s[0] + 1e-12 * s[0]  # equal to system 0 up to rounding: a tie
    ia, ib = np.triu_indices(4, 1)
    d, top = sample_differences(s, ia, ib)
    for p, (a, b) in enumerate(zip(ia, ib, strict=True)):
        for j in range(6):
            want = s[a, j] - s[b, j]
            if abs(want) <= 1e-9 * max(abs(s[a, j]), abs(s[b, j])):
                want = 0.0
            assert d[p, j] == want and top[p, j] == max(s[a, j], s[b, j]), (p, j)
    assert (d[1] == 0).all()  # the pair (0, 2)


def test_tukey_ranges_loop():
    """Trial by trial: permute each topic's scores across systems, then max - min of the
    system means (a loop over trials, topics and systems), with more trials than one chunk."""
    from irsim.stats.resample import tukey_ranges

    rng = np.random.default_rng(10)
    topics, systems, trials = 7, 4, 300
    st = rng.uniform(size=(topics, systems))
    perm = np.array([[rng.permutation(systems) for _ in range(topics)]
                     for _ in range(trials)])
    got = tukey_ranges(st, perm)
    for b in range(trials):
        means = [sum(st[t, perm[b, t, s]] for t in range(topics)) / topics
                 for s in range(systems)]
        assert got[b] == pytest.approx(max(means) - min(means), rel=1e-12, abs=1e-15), b


# ---------------------------------------------------------------------------------------------
# Confidence intervals (irsim.stats.ci) from their definitions (Efron & Tibshirani ch. 13)


def test_mean_ci_normal_and_t_from_their_definitions():
    """normal: mean +- z_{0.975} sd/sqrt(n) (sd with ddof 1); t: the t quantile on n - 1
    degrees of freedom (scipy); at least 2 topics."""
    from irsim.errors import InputError
    from irsim.stats import mean_ci

    x = np.array([[0.12, 0.45, 0.30, 0.05, 0.61, 0.22, 0.38, 0.15]])
    n = x.shape[1]
    se = x[0].std(ddof=1) / math.sqrt(n)
    for method, q in (("normal", sps.norm.isf(0.025)), ("t", sps.t.isf(0.025, n - 1))):
        ci = mean_ci(x, method=method).confidence_interval
        assert (float(ci.low[0]), float(ci.high[0])) == pytest.approx(
            (x.mean() - q * se, x.mean() + q * se), rel=1e-12), method
    with pytest.raises(InputError):
        mean_ci(np.array([[0.3]]), method="t")


def test_bootstrap_normal_and_logit_intervals_from_their_definitions():
    """normal: hat +- z sd(theta*) (ddof 1); logit: expit(logit(hat) +- z sd(logit(theta*)))
    with theta* clipped to [eps, 1 - eps]; a replicate equal to 1 stays finite; with B = 2
    the sd is that of the two replicates, with B = 1 the interval is the estimate."""
    from scipy import special

    from irsim.stats.ci import LOGIT_EPS, interval_grid_from_distribution

    z = sps.norm.isf(0.025)
    star = np.array([[0.2, 0.35, 0.3, 0.5, 1.0, 0.25], [0.4, 0.45, 0.0, 0.5, 0.3, 0.6]])
    hat = np.array([0.33, 0.41])
    lim, se = interval_grid_from_distribution(hat, star, ["normal", "logit"], [0.95])
    sd = star.std(axis=1, ddof=1)
    np.testing.assert_allclose(se, sd, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lim["normal"][0][:, 0], hat - z * sd, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lim["normal"][1][:, 0], hat + z * sd, rtol=1e-12, atol=1e-14)
    lsd = special.logit(np.clip(star, LOGIT_EPS, 1 - LOGIT_EPS)).std(axis=1, ddof=1)
    centre = special.logit(hat)
    np.testing.assert_allclose(lim["logit"][0][:, 0], special.expit(centre - z * lsd),
                               rtol=1e-12)
    np.testing.assert_allclose(lim["logit"][1][:, 0], special.expit(centre + z * lsd),
                               rtol=1e-12)
    assert np.isfinite(lim["logit"][0]).all() and np.isfinite(lim["logit"][1]).all()
    two, se2 = interval_grid_from_distribution(hat[:1], star[:1, :2], ["normal"], [0.95])
    assert float(se2[0]) == pytest.approx(star[0, :2].std(ddof=1), rel=1e-12)
    one, se1 = interval_grid_from_distribution(hat[:1], star[:1, :1], ["normal", "logit"],
                                               [0.95])
    assert float(se1[0]) == 0.0
    for m in ("normal", "logit"):
        assert float(one[m][0][0, 0]) == pytest.approx(0.33, rel=1e-12)
        assert float(one[m][1][0, 0]) == pytest.approx(0.33, rel=1e-12)


def test_mean_interval_grid_normal_t_and_percentile_from_definitions():
    """The coverage study's grid: mean +- z or t_{n-1} quantile x sd/sqrt(n) at every level,
    and the percentile interval = numpy's linear-interpolation quantiles of the bootstrap
    means, for several rows and levels."""
    from irsim.stats.ci import mean_interval_grid

    rng = np.random.default_rng(0)
    x = rng.random((3, 8))
    star = x[:, rng.integers(0, 8, (500, 8))].mean(axis=-1)
    alphas = np.array([0.05, 0.5, 0.1])
    out = mean_interval_grid(x, star, alphas, ["normal", "t", "percentile"])
    n = x.shape[1]
    se = x.std(axis=1, ddof=1) / math.sqrt(n)
    for m, q in (("normal", sps.norm.isf(alphas / 2)), ("t", sps.t.isf(alphas / 2, n - 1))):
        np.testing.assert_allclose(out[m][0], x.mean(1)[:, None] - q * se[:, None], rtol=1e-12)
        np.testing.assert_allclose(out[m][1], x.mean(1)[:, None] + q * se[:, None], rtol=1e-12)
    for j, a in enumerate(alphas):
        np.testing.assert_allclose(out["percentile"][0][:, j],
                                   np.quantile(star, a / 2, axis=1), rtol=1e-12)
        np.testing.assert_allclose(out["percentile"][1][:, j],
                                   np.quantile(star, 1 - a / 2, axis=1), rtol=1e-12)


def test_bootstrap_ci_percentile_one_level_equals_numpy_quantiles():
    """One quantile per row (a single confidence level): numpy's linear interpolation."""
    from irsim.stats import bootstrap_ci

    rng = np.random.default_rng(5)
    star = rng.normal(0.4, 0.05, (3, 401))
    hat = star.mean(axis=1)
    for level in (0.9, 0.5):
        ci = bootstrap_ci(hat, star, method="percentile", confidence_level=level)
        a = (1 - level) / 2
        np.testing.assert_allclose(ci.confidence_interval.low, np.quantile(star, a, axis=1),
                                   rtol=1e-12)
        np.testing.assert_allclose(ci.confidence_interval.high,
                                   np.quantile(star, 1 - a, axis=1), rtol=1e-12)
        assert np.shape(ci.confidence_interval.low) == (3,)


def test_studentised_logit_rows_with_zeros_and_ones():
    """Park's studentised logit (METHODS.md section 5) per row: drop the bootstrap means equal
    to 0 or 1, fit a normal to the logits by maximum likelihood (scipy.stats.norm.fit), bounds
    expit(mu -+ t_{0.025, n-1} sigma); several rows with dropped replicates at once."""
    from scipy import special

    from irsim.stats.ci import interval_grid_from_distribution

    rng = np.random.default_rng(6)
    star = rng.uniform(0.05, 0.6, (3, 50))
    star[0, :4] = 0.0
    star[1, :7] = 1.0
    star[1, 7:9] = 0.0
    n = 8
    hat = star.mean(axis=1)
    lim, _ = interval_grid_from_distribution(hat, star, ["studentised_logit"], [0.95], n=n)
    q = sps.t.isf(0.025, n - 1)
    for i in range(3):
        keep = star[i][(star[i] > 0) & (star[i] < 1)]
        mu, sigma = sps.norm.fit(special.logit(keep))
        assert float(lim["studentised_logit"][0][i, 0]) == pytest.approx(
            special.expit(mu - q * sigma), rel=1e-10)
        assert float(lim["studentised_logit"][1][i, 0]) == pytest.approx(
            special.expit(mu + q * sigma), rel=1e-10)
