"""Tests written to kill the mutants that a mutmut run (setup.cfg; docs/guides/development.md,
"Mutation testing") left alive in the stats and metrics kernels: changed comparisons, cut-offs, bin
edges, rounding, ddof and argument order. Every expected value comes from scipy or from the method's
definition written out here (literal tolerances, own loops); nothing is imported from the module
under test but the function being checked.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
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


@pytest.mark.parametrize("method", ["none", "bonferroni",
                                    pytest.param("holm", marks=pytest.mark.mutation),
                                    "bh", "by"])
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


def test_corrections_refuse_bad_names_values_axes_and_alphas():
    """Each refusal is one typed error with its message: an unknown (or non-string) correction,
    p-values outside [0, 1] (0 and 1 themselves are p-values), a 0-d array, an axis outside
    [-ndim, ndim), alpha outside the open interval (0, 1)."""
    from irsim.stats.multiple import adjust, reject

    p = np.array([0.01, 0.04, 0.03])
    msg = (r"^config: unknown correction 'bonferoni' \(did you mean 'bonferroni'\?\); "
           r"valid: bh, bonferroni, by, holm, none$")
    with pytest.raises(ConfigError, match=msg):
        adjust(p, "bonferoni")
    with pytest.raises(ConfigError, match=r"unknown correction '3'"):
        reject(p, 0.05, 3)
    for bad in (-0.1, 1.5):
        with pytest.raises(InputError, match=rf"must lie in \[0, 1\] \(or be NaN\), got {bad}$"):
            adjust(np.array([0.2, bad, np.nan]), "holm")
    np.testing.assert_array_equal(adjust(np.array([0.0, 1.0]), "bonferroni"), [0.0, 1.0])
    with pytest.raises(InputError, match="^p-values must be an array with at least one dim"):
        adjust(np.float64(0.5), "holm")
    with pytest.raises(InputError, match="must be numbers, got"):
        adjust(["a", 0.1], "holm")
    q = np.array([[0.01, 0.5], [0.02, 0.03]])
    np.testing.assert_array_equal(adjust(q, "bonferroni", axis=-2), [[0.02, 1.0], [0.04, 0.06]])
    with pytest.raises(ConfigError, match="axis 2 is out of range for p-values of 2 dim"):
        adjust(q, "holm", axis=2)
    with pytest.raises(ConfigError, match="axis -3 is out of range"):
        reject(q, 0.05, "holm", axis=-3)
    with pytest.raises(ConfigError, match="axis must be an integer, got 0.5"):
        adjust(q, "holm", axis=0.5)
    for alpha in (0.0, 1.0, 1.5):
        with pytest.raises(ConfigError, match=rf"alpha must be in \(0, 1\), got {alpha}$"):
            reject(p, alpha, "holm")
    with pytest.raises(ConfigError, match="alpha must be a number in"):
        reject(p, "x", "holm")


def test_corrections_of_a_one_dimensional_integer_family_by_hand():
    """A 1-D family of Python ints (p = 0 or 1): float adjusted values, Bonferroni min(1, m p)
    and Holm / BH by hand; every correction of a single p-value leaves it as it is."""
    from irsim.stats.multiple import adjust, reject

    out = adjust([0, 1, 0], "none")
    assert out.dtype == np.float64 and out.tolist() == [0.0, 1.0, 0.0]
    p = np.array([0.01, 0.02, 0.03, 0.2])
    np.testing.assert_allclose(adjust(p, "bonferroni"), [0.04, 0.08, 0.12, 0.8], rtol=1e-15)
    np.testing.assert_allclose(adjust(p, "holm"), [0.04, 0.06, 0.06, 0.2], rtol=1e-15)
    np.testing.assert_allclose(adjust(p, "bh"), [0.04, 0.04, 0.04, 0.2], rtol=1e-15)
    for method in ("none", "bonferroni", "holm", "bh", "by"):
        assert adjust(np.array([0.3]), method).tolist() == [0.3]
        assert reject(np.array([0.05]), 0.05, method).tolist() == [True]


def test_corrections_with_nan_families_raise_no_warning():
    """Families with NaN members and a family of NaNs only: no RuntimeWarning (division by
    a family size of 0 or by m - i = 0 is intended), NaN stays NaN and is never rejected."""
    import warnings

    from irsim.stats.multiple import adjust, reject

    p = np.array([[0.01, np.nan, 0.04], [np.nan, np.nan, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("none", "bonferroni", "holm", "bh", "by"):
            a = adjust(p, method)
            r = reject(p, 0.05, method)
            assert np.isnan(a[1]).all() and np.isnan(a[0, 1]) and not r[1].any()
            assert not r[0, 1]


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


@pytest.mark.mutation
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
# Exact (irsim.exact): pieces on grids of 2^bits steps, products exact


@pytest.mark.parametrize("x", [[0.1, 0.7, 1.0 / 3], [1.0, 0.1, -1.0 / 3], [-0.75, 0.2, 0.0],
                               [3e-5, 1e-7, 2.5e-5], [1.0, 1e-30, -3e-17]])
def test_exact_pieces_and_products_from_the_definition(x):
    """The pieces add up to x exactly; piece i is an integer multiple of 2^(e - i bits)
    (e = frexp(max|x|)[1], bits = 53 - ceil(log2 l1)) of magnitude <= 2^bits steps; and
    products with count matrices equal the correctly rounded exact rational sum (Python
    fractions), the same for the counts in reverse order."""
    from fractions import Fraction

    from irsim.exact import Exact

    x = np.array(x)
    counts = np.random.default_rng(1).multinomial(len(x) * 50, [1 / len(x)] * len(x), size=20)
    l1 = len(x) * 50
    e = Exact(x, l1=l1)
    bits = 53 - math.ceil(math.log2(l1))
    assert e.bits == bits
    assert sum(Fraction(float(v)) for v in np.concatenate(e.pieces)) == sum(
        Fraction(float(v)) for v in x)
    top = math.frexp(float(np.abs(x).max()))[1]
    for i, p in enumerate(e.pieces):
        step = 2.0 ** (top - (i + 1) * bits)
        k = p / step
        assert (k == np.round(k)).all() and np.abs(k).max() <= 2 ** bits
    exact = [float(sum(Fraction(float(v)) * int(c) for v, c in zip(x, row, strict=True)))
             for row in counts]
    assert (e @ counts.T.astype(float)).tolist() == exact
    assert (Exact(x[::-1], l1=l1) @ counts[:, ::-1].T.astype(float)).tolist() == exact


def test_exact_of_zeros_and_bad_counts():
    from irsim.exact import Exact

    assert (Exact(np.zeros((2, 3)), l1=3) @ np.ones((3, 4))).tolist() == [[0.0] * 4] * 2
    with pytest.raises(ValueError, match="sums to more than l1"):
        Exact(np.ones((1, 3)), l1=2) @ np.ones((3, 1))


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
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


@pytest.mark.parametrize("k", [20, 100, 300, 600])
def test_unpaired_worst_k_statistic_of_long_rows(k):
    """The worst-k statistic of 1,000 scores is the mean of the k smallest (np.sort), for
    every k: a partition at the wrong index leaves other values in front for long rows."""
    from irsim.stats import unpaired_bootstrap

    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 1000))
    y = np.zeros((4, 1000))
    r = unpaired_bootstrap(x, y, summary="worst", k=k, B=4, seed=1)
    np.testing.assert_allclose(r.statistic, np.sort(x, axis=-1)[:, :k].mean(axis=-1),
                               rtol=1e-12)


@pytest.mark.filterwarnings("error")  # a = 0 divides by zero on purpose, without a warning
@pytest.mark.parametrize("t_obs", [-0.5, 0.5, 1.5, 1e-9])
def test_count_t_boundary_counts_as_extreme(t_obs):
    """count_t from the definition: replicate t* from p = (1 + (n-1)/t*^2)/n and the sign of
    s1; 'greater' counts t* >= t_obs - 1e-9 max(|t_obs|, 1), so a replicate exactly on that
    boundary counts and one 1e-6 beyond it does not ('less' mirrored, two-sided on |t*|);
    replicates 5e-10 inside / outside the band, and t_obs = 1e-9, where the band reaches 0
    exactly (a = 0: every t* >= 0 counts, including t* = 0)."""
    from irsim.stats.bootstrap import count_t

    n = 5
    a = t_obs - 1e-9 * max(abs(t_obs), 1.0)
    # a -+ 5e-10: outside / inside a band of twice the tolerance
    t = np.array([a, a - 1e-6, a + 1e-6, 0.0, 2.0, -2.0, -a, a - 5e-10, a + 5e-10])
    with np.errstate(divide="ignore"):
        p = (1 + (n - 1) / t ** 2) / n
    s1 = np.sign(t)
    got = int(count_t(p[None], np.array([t_obs]), n, "greater", s1[None])[0])
    assert got == int(np.sum(t >= a))
    # less: mirror (t* <= -t_obs + tol); evaluate with the mirrored replicates
    got = int(count_t(p[None], np.array([-t_obs]), n, "less", -s1[None])[0])
    assert got == int(np.sum(-t <= -a))
    a2 = abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0)
    t2 = np.array([a2, -a2, a2 - 1e-6, a2 + 1e-6, 0.0, a2 - 5e-10, -a2 + 5e-10])
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


# ---------------------------------------------------------------------------------------------
# Survivors of the 2026-11-24 (second part) run: ci, resample, metrics


def test_percentile_quantiles_bit_identical_to_numpy_linear():
    """The percentile interval uses numpy's linear quantile, bit for bit, including the
    interpolation fractions of exactly 0.5 and above (numpy's symmetric lerp)."""
    from irsim.stats.ci import bootstrap_ci

    rng = np.random.default_rng(7)
    for b in (3, 5, 21, 41):
        star = rng.uniform(0.1, 0.9, size=(4, b)) * np.array([[1.0], [3.0], [1e-3], [7.0]])
        for level in (0.5, 0.8, 0.9, 0.95):
            ci = bootstrap_ci(star.mean(axis=-1), star, method="percentile",
                              confidence_level=level).confidence_interval
            tail = (1 - level) / 2
            np.testing.assert_array_equal(ci.low, np.quantile(star, tail, axis=-1))
            np.testing.assert_array_equal(ci.high, np.quantile(star, 1 - tail, axis=-1))


def test_bca_counts_replicates_at_the_tie_tolerance_as_ties():
    """BCa's bias correction z0 = Phi^-1((#below + #within) / (2B)) where "within" is the
    closed band |theta* - theta_hat| <= 1e-9 max(|theta_hat|, sd(theta*)) (ties count half):
    replicates placed exactly on both edges of the band are ties. Interval: numpy's linear
    quantiles at Phi(z0 + (z0 -+ z)/(1 - a (z0 -+ z))) with a = 0."""
    from irsim.stats.ci import bootstrap_ci

    hat = 0.5
    tol = 1e-9 * 0.5  # sd(theta*) < 0.5 here
    # two replicates on the lower edge and one on the upper edge: ties, counted half each
    star = np.array([hat - tol, hat - tol, hat + tol, 0.3, 0.35, 0.42, 0.47, 0.55, 0.61, 0.66,
                     0.7, 0.2, 0.8])
    assert star.std(ddof=1) < 0.5
    b = len(star)
    below = np.sum(star < hat - 1e-6)
    within = np.sum(np.abs(star - hat) < 1e-6)
    assert (below, within) == (5, 3)
    z0 = sps.norm.ppf((below + within / 2) / b)
    z = sps.norm.ppf(0.975)
    p_lo, p_hi = sps.norm.cdf(z0 + (z0 - z)), sps.norm.cdf(z0 + (z0 + z))
    ci = bootstrap_ci(hat, star, method="bca").confidence_interval
    assert float(ci.low) == pytest.approx(np.quantile(star, p_lo), rel=1e-12)
    assert float(ci.high) == pytest.approx(np.quantile(star, p_hi), rel=1e-12)


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_studentised_logit_without_usable_replicates_is_the_estimate():
    """Every replicate 0 or 1: no logit fit is possible, the interval is [hat, hat]."""
    from irsim.stats.ci import bootstrap_ci

    star = np.array([[0.0, 1.0, 0.0, 0.0], [0.2, 0.3, 0.25, 0.35], [0.0, 1.0, 0.3, 0.0]])
    ci = bootstrap_ci(np.array([0.25, 0.275, 0.1]), star, method="studentised_logit",
                      n=4).confidence_interval
    assert (float(ci.low[0]), float(ci.high[0])) == (0.25, 0.25)
    # one usable replicate: mu = logit(0.3), sigma = 0, the interval is that replicate
    assert [float(ci.low[2]), float(ci.high[2])] == pytest.approx([0.3, 0.3], rel=1e-14)
    two = bootstrap_ci(0.3, np.array([0.2, 0.3, 0.4]), method="studentised_logit", n=2)
    lg = np.log(np.array([0.2, 0.3, 0.4]) / np.array([0.8, 0.7, 0.6]))
    q = sps.t.isf(0.025, 1)
    want = 1 / (1 + np.exp(-(lg.mean() + np.array([-q, q]) * lg.std(ddof=0))))
    got = two.confidence_interval
    assert [float(got.low), float(got.high)] == pytest.approx(want, rel=1e-12)
    assert float(two.estimate) == 0.3
    lg = np.log(star[1] / (1 - star[1]))
    q = sps.t.isf(0.025, 3)
    want = 1 / (1 + np.exp(-(lg.mean() + np.array([-q, q]) * lg.std(ddof=0))))
    assert [float(ci.low[1]), float(ci.high[1])] == pytest.approx(want, rel=1e-12)


def test_bootstrap_ci_refuses_eps_at_the_ends_and_names_the_bad_replicate():
    """eps must lie in the open interval (0, 0.5); a value outside [0, 1] under a logit
    method is named by its index (outside_unit_interval gives the first one)."""
    from irsim.stats.ci import bootstrap_ci, mean_ci, outside_unit_interval

    star = np.array([0.2, 0.3, 0.4])
    for eps in (0.0, 0.5):
        with pytest.raises(ConfigError, match=rf"eps must be in \(0, 0.5\), got {eps}"):
            bootstrap_ci(0.3, star, method="logit", eps=eps)
    assert outside_unit_interval(np.array([[0.0, 1.0], [0.5, 1.5]])) == (1, 1)
    assert outside_unit_interval(np.array([0.5, -0.1, 2.0])) == (1,)
    x = np.array([[0.12, 0.45, 0.30, 0.05, 0.61, 0.22, 0.38, 0.15]]) * 2
    with pytest.raises(InputError, match=r"x\[0, 4\] = 1.22"):
        mean_ci(x, method="logit")


@pytest.mark.parametrize("methods", [["normal"], ["t"], ["bca"], ["percentile", "bca"],
                                     ["basic"]])
def test_mean_interval_grid_single_methods_from_definitions(methods):
    """Each method alone: normal / t are mean -+ q sd/sqrt(n) (scipy's quantiles); BCa uses
    the jackknife acceleration of the mean, a = sum U^3 / (6 (sum U^2)^1.5), U = x - mean
    (Efron & Tibshirani 14.15), at z0 from the replicates below the mean."""
    from irsim.stats.ci import mean_interval_grid

    rng = np.random.default_rng(3)
    x = rng.uniform(size=(2, 9)) ** 2
    idx = rng.integers(0, 9, size=(400, 9))
    star = x[:, idx].mean(axis=-1)
    out = mean_interval_grid(x, star, [0.1], methods)
    assert sorted(out) == sorted(methods)
    n = x.shape[1]
    for r in range(2):
        mean, se = x[r].mean(), x[r].std(ddof=1) / math.sqrt(n)
        for m in methods:
            low, high = out[m][0][r, 0], out[m][1][r, 0]
            if m == "basic":  # 2 mean - the percentile limits (numpy's linear quantiles)
                qlo, qhi = np.quantile(star[r], [0.05, 0.95])
                assert (low, high) == pytest.approx((2 * mean - qhi, 2 * mean - qlo), rel=1e-12)
            elif m in ("normal", "t"):
                q = sps.norm.isf(0.05) if m == "normal" else sps.t.isf(0.05, n - 1)
                assert (low, high) == pytest.approx((mean - q * se, mean + q * se), rel=1e-12)
            elif m == "bca":
                u = x[r] - mean
                a = (u**3).sum() / (6 * (u**2).sum() ** 1.5)
                # a resample that permutes the sample has the mean itself: a tie, counted half
                below = np.sum(star[r] < mean - 1e-12)
                within = np.sum(np.abs(star[r] - mean) <= 1e-12)
                z0 = sps.norm.ppf((below + within / 2) / star.shape[1])
                z = sps.norm.ppf(0.95)
                p = [sps.norm.cdf(z0 + (z0 + s * z) / (1 - a * (z0 + s * z))) for s in (-1, 1)]
                want = np.quantile(star[r], p)
                assert (low, high) == pytest.approx(tuple(want), rel=1e-12)


@pytest.mark.filterwarnings("error")  # no RuntimeWarning from the 0/0 of an empty row
@pytest.mark.parametrize("method", ["auto", "exact", "approx"])
def test_wilcoxon_row_without_nonzero_differences(method):
    """A row of zero differences (zero_method='wilcox': no difference left) has p = 1
    (documented), W+ = 0 and is not counted as an exact test; the other row is scipy's."""
    z = np.array([[0.0] * 6, [0.3, -0.1, 0.2, 0.5, 0.4, -0.6]])
    r = wilcoxon(z, method=method)
    assert float(r.pvalue[0]) == 1.0 and not bool(r.exact[0])
    assert float(r.statistic[0]) == 0.0
    ref = sps.wilcoxon(z[1], method="exact" if method != "approx" else "approx")
    assert float(r.pvalue[1]) == pytest.approx(ref.pvalue, rel=1e-10)


def test_q_and_r_measure_with_beta_zero_are_ap_and_r_precision():
    """beta = 0 is allowed (Sakai): Q becomes AP and R-measure R-precision. Worked example of
    tests/test_metrics_ntcir.py: ranked grades [0, 2, 1], R = 3: AP = (1/2 + 2/3) / 3,
    R-precision = 2/3."""
    from irsim.data.types import Qrels, Runs
    from irsim.metrics import evaluate

    obj = lambda *s: np.array(s, dtype=object)  # noqa: E731
    qrels = Qrels(obj("t", "t", "t", "t"), obj("a", "b", "c", "z"), np.array([3, 2, 1, 0]))
    runs = Runs(("r",), np.zeros(3, np.int32), obj("t", "t", "t"), obj("z", "b", "c"),
                np.array([3.0, 2.0, 1.0]))
    m = evaluate(runs, qrels, ["Q(beta=0)", "R-measure(beta=0)"])
    np.testing.assert_allclose(m.values[:, 0, 0], [(1 / 2 + 2 / 3) / 3, 2 / 3], rtol=0,
                               atol=1e-15)


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_mean_acceleration_of_a_constant_row_and_of_integers():
    """a = 0 for a constant row (documented); integer input as its float values:
    x = (0, 0, 0, 1): U = x - 1/4, a = (3/8) / (6 (3/4)^1.5) = 1 / (6 sqrt 3)."""
    from irsim.stats.ci import mean_acceleration

    got = mean_acceleration(np.array([[0.4] * 4, [0.0, 0.0, 0.0, 1.0]]))
    assert got[0] == 0.0 and got[1] == pytest.approx(1 / (6 * math.sqrt(3)), rel=1e-14)
    assert float(mean_acceleration(np.array([0, 0, 0, 1]))) == pytest.approx(
        1 / (6 * math.sqrt(3)), rel=1e-14)


def test_mean_interval_grid_studentised_logit_from_the_definition():
    """Park's interval: ML normal fit (ddof 0) to the logits of the replicates, mu -+ t_{n-1}
    sigma (n = the sample size, not B), back-transformed."""
    from irsim.stats.ci import mean_interval_grid

    rng = np.random.default_rng(4)
    x = rng.uniform(0.05, 0.95, size=(2, 7))
    star = x[:, rng.integers(0, 7, size=(300, 7))].mean(axis=-1)
    out = mean_interval_grid(x, star, [0.05, 0.2], ["studentised_logit"])
    for r in range(2):
        lg = np.log(star[r] / (1 - star[r]))
        for j, alpha in enumerate((0.05, 0.2)):
            q = sps.t.isf(alpha / 2, 6)
            want = 1 / (1 + np.exp(-(lg.mean() + np.array([-q, q]) * lg.std(ddof=0))))
            got = [out["studentised_logit"][0][r, j], out["studentised_logit"][1][r, j]]
            assert got == pytest.approx(want, rel=1e-12)


def test_mean_ci_fields_two_topics_defaults_and_chunking():
    """estimate = mean, standard_error = sd/sqrt(n) (t) or sd(theta*) (bootstrap); n = 2 is
    enough (t interval as scipy's); the documented defaults B = 1000, seed = 0; a memory
    budget that splits the bootstrap into several chunks gives the same interval."""
    from irsim.stats import mean_ci

    x = np.array([[0.12, 0.45, 0.30, 0.05, 0.61, 0.22, 0.38, 0.15], [0.5, 0.1, 0.2, 0.2, 0.3,
                                                                      0.9, 0.4, 0.3]])
    r = mean_ci(x, method="t")
    np.testing.assert_allclose(r.estimate, x.mean(axis=1), rtol=1e-15)
    np.testing.assert_allclose(r.standard_error, x.std(axis=1, ddof=1) / math.sqrt(8),
                               rtol=1e-14)
    two = mean_ci(np.array([0.2, 0.5]), method="t").confidence_interval
    want = sps.t.interval(0.95, 1, loc=0.35, scale=sps.sem([0.2, 0.5]))
    assert (float(two.low), float(two.high)) == pytest.approx(want, rel=1e-12)
    b = mean_ci(x, method="percentile")
    assert (b.method, b.confidence_level, r.method, r.confidence_level) == (
        "percentile", 0.95, "t", 0.95)
    assert b.estimate.tolist() == x.mean(axis=1).tolist()
    assert np.all(b.standard_error > 0) and np.all(b.standard_error < x.std(axis=1))
    same = mean_ci(x, method="percentile", B=1000, seed=0)
    np.testing.assert_array_equal(b.confidence_interval.low, same.confidence_interval.low)
    np.testing.assert_array_equal(b.standard_error, same.standard_error)
    for budget in (8 * 8 * 100, 8 * 8 * 500):  # replicates of 8 topics: 10 or 2 chunks
        small = mean_ci(x, method="percentile", memory_budget=budget)
        np.testing.assert_allclose(small.confidence_interval.low, b.confidence_interval.low,
                                   rtol=1e-14)
        np.testing.assert_allclose(small.confidence_interval.high,
                                   b.confidence_interval.high, rtol=1e-14)


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_studentized_t_near_constant_rows_from_the_definition():
    """t = 0 only for a constant row: variance (ddof 1) at most 1e-12 of the mean square.
    z = (1, 1, 1 + d): var = d^2/3, mean square ~ 1; d = 2^-18 (var 4.8e-12) keeps its
    t = mean / sqrt(var/3) (scipy, to the cancellation of the sums: rel 1e-3),
    d = 2^-21 (var 7.6e-14) is constant."""
    from irsim.stats.resample import studentized_t

    big, tiny = 2.0**-18, 2.0**-21
    z = np.array([[1.0, 1.0, 1.0 + big], [1.0, 1.0, 1.0 + tiny], [1.0, 1.0, 1.0],
                  [0.0, 0.0, 0.0], [0.1, 0.1, 0.1]])
    t = studentized_t(z)
    assert t[0] == pytest.approx(sps.ttest_1samp(z[0], 0.0).statistic, rel=1e-3)
    assert t[1:].tolist() == [0.0] * 4  # constant rows (also exactly constant: 0/0, x/0)


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_paired_ratio_rule_between_tolerances_and_at_unit_sum():
    """The constant rule n s2 - s1^2 <= 1e-12 (n-1) s2 with n = 3: resample (2, 1, 0) of
    (1/2, 1/2 + f, -1 - f), f = 3 2^-22, has n s2 - s1^2 = 1.35e-12 s2 <= 2e-12 s2: constant
    (p = inf). A resample with s1 = 1 exactly and nonzero variance keeps p = s2 / s1^2; a row
    of zeros (0/0) gives p = inf, without a RuntimeWarning."""
    from fractions import Fraction

    from irsim.stats.resample import paired_ratio

    f = 3 * 2.0**-22
    w = np.array([[0.5, 0.5 + f, -1.0 - f], [0.75, -0.5, -0.25], [0.0, 0.0, 0.0]])
    ct = np.array([[2.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]).T
    got = paired_ratio(w, w * w, ct, w @ ct)
    wv = [Fraction(float(v)) for v in w[0]]
    e1 = 2 * wv[0] + wv[1]
    e2 = 2 * wv[0] ** 2 + wv[1] ** 2
    ratio = (3 * e2 - e1 * e1) / e2
    assert Fraction(1, 10**12) < ratio <= Fraction(2, 10**12)
    assert got[0, 0] == np.inf
    assert got[1, 0] == 1.375 and got[1, 1] == np.inf  # s1 = 2 (0.75) - 0.5 = 1; s1 = 0
    assert got[1, 2] == pytest.approx((0.25 + 2 * 0.0625) / (0.5 + 0.5) ** 2, rel=1e-15)
    assert got[2].tolist() == [np.inf] * 3  # a row of zeros: s1 = s2 = 0, t* = 0


def test_sample_differences_tie_band_scales_with_the_scores():
    """|d| <= 1e-9 max(|M(A)|, |M(B)|) is a tie: at scores 0.5 a difference of 8e-10 is
    kept (band 5e-10) and one of 1e-10 at 0.25 is snapped (band 2.5e-10)."""
    from irsim.stats.resample import sample_differences

    s = np.array([[0.5, 0.25, 4.0], [0.5 - 8e-10, 0.25 + 1e-10, 4.0 - 3e-9]])
    d, top = sample_differences(s, np.array([0]), np.array([1]))
    assert d[0, 0] == 0.5 - (0.5 - 8e-10) and d[0, 1] == 0.0 and d[0, 2] == 0.0
    assert top.tolist() == [[0.5, 0.25 + 1e-10, 4.0]]


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_andcg_with_a_log_base_below_two_by_hand():
    """AnDCG(b=1.5)@3 (Sakai's original discount log_b(r) beyond rank b): worked example of
    tests/test_metrics_ntcir.py, ranked grades [0, 2, 1], ideal [3, 2, 1]; a wrong-case
    name gets the registered spelling as a hint."""
    from irsim.data.types import Qrels, Runs
    from irsim.errors import ConfigError as CE
    from irsim.metrics import evaluate, parse_measure

    obj = lambda *s: np.array(s, dtype=object)  # noqa: E731
    qrels = Qrels(obj("t", "t", "t", "t"), obj("a", "b", "c", "z"), np.array([3, 2, 1, 0]))
    runs = Runs(("r",), np.zeros(3, np.int32), obj("t", "t", "t"), obj("z", "b", "c"),
                np.array([3.0, 2.0, 1.0]))
    d2, d3 = math.log(1.5) / math.log(2), math.log(1.5) / math.log(3)
    dcg = [0.0, 2 * d2, 2 * d2 + d3]
    ideal = [3.0, 3 + 2 * d2, 3 + 2 * d2 + d3]
    want = sum(a / b for a, b in zip(dcg, ideal, strict=True)) / 3
    m = evaluate(runs, qrels, ["AnDCG(b=1.5)@3"])
    assert float(m.values[0, 0, 0]) == pytest.approx(want, rel=1e-14)
    with pytest.raises(CE, match="did you mean 'nDCG_orig'"):
        parse_measure("NDCG_ORIG")


@pytest.mark.filterwarnings("error")  # the degenerate cases raise no RuntimeWarning
def test_bca_quantile_at_one_and_degenerate_distribution():
    """BCa from the definition where Phi(z0 + (z0 + z)) rounds to 1 (one replicate of 3,000
    above the estimate: the upper limit is the largest replicate, numpy's quantile at 1), and
    with every replicate below the estimate (z0 = inf, a 0 * inf in the formula): no bias
    correction is defined, the limits are NaN."""
    from irsim.stats.ci import bootstrap_ci

    rng = np.random.default_rng(5)
    star = np.sort(rng.uniform(0, 1, 3000))
    hat = (star[-1] + star[-2]) / 2
    z0, z = sps.norm.ppf(2999 / 3000), sps.norm.ppf(0.975)
    p = [sps.norm.cdf(z0 + (z0 - z)), sps.norm.cdf(z0 + (z0 + z))]
    assert p[1] == 1.0
    ci = bootstrap_ci(hat, star, method="bca").confidence_interval
    assert [float(ci.low), float(ci.high)] == pytest.approx(np.quantile(star, p), rel=1e-14)
    ci = bootstrap_ci(1.0, np.array([0.1, 0.2, 0.3, 0.25]), method="bca").confidence_interval
    assert np.isnan(ci.low) and np.isnan(ci.high)


def test_measure_refuses_malformed_gains_and_names_itself():
    """gains must be a non-empty {grade: gain} (or a tuple of (grade, gain) tuples): a tuple
    of numbers, a pair that is a list, an empty dict or tuple are refused with that message;
    the cut-off error names the measure."""
    from irsim.metrics.measures import Measure

    msg = r"^config: metric nDCG: gains must be a non-empty dict \{grade: gain\}"
    for g in [(1, 2), ((1, 2.0), [2, 3.0]), {}, ()]:
        with pytest.raises(ConfigError, match=msg):
            Measure("nDCG", 5, (("gains", g),))
    ok = Measure("nDCG", 5, (("gains", ((1, 2.0), (2, 5.0))),))
    assert ok.param("gains") == ((1, 2.0), (2, 5.0))
    with pytest.raises(ConfigError, match="^config: metric nDCG: cut-off must be a positive"):
        Measure("nDCG", 0)


@pytest.mark.parametrize("which", ["paired", "unpaired"])
def test_bootstrap_defaults_counts_and_stream_key(which):
    """Documented defaults B = 1000 and seed = 0 (the same result as passing them), integer
    counts with count / B = p (pvalue_mode 'count'), n_resamples = B; `key` selects another
    random stream (other replicates, so other counts for these data)."""
    from irsim.stats import paired_bootstrap, unpaired_bootstrap

    rng = np.random.default_rng(12)
    x = rng.uniform(size=(3, 12))
    y = rng.uniform(size=(3, 12)) * 0.9
    run = paired_bootstrap if which == "paired" else unpaired_bootstrap
    r = run(x, y)
    same = run(x, y, B=1000, seed=0)
    assert r.count.tolist() == same.count.tolist() and r.n_resamples == 1000
    assert r.count.dtype == np.int64
    np.testing.assert_array_equal(r.pvalue, r.count / 1000)
    other = run(x, y, key=(5,))
    assert other.count.tolist() != r.count.tolist()
    if which == "paired":  # the shift bootstrap's two passes over the samples both use key
        base = run(x, y, statistic="mean")
        assert run(x, y, statistic="mean", key=(5,)).count.tolist() != base.count.tolist()


def test_unpaired_worst_one_is_the_minimum():
    """k = 1 is allowed: the statistic is min(x) - min(y)."""
    from irsim.stats import unpaired_bootstrap

    x = np.array([[0.3, 0.1, 0.5, 0.9]])
    y = np.array([[0.4, 0.6, 0.05, 0.2]])
    r = unpaired_bootstrap(x, y, summary="worst", k=1, B=10)
    assert float(r.statistic[0]) == pytest.approx(0.1 - 0.05, rel=1e-15)


def test_logit_interval_with_two_replicates_and_a_wider_clamp():
    """logit: expit(logit(hat) -+ z sd(logit(clip(theta*, eps, 1 - eps)))) with ddof 1 (B = 2:
    the sd of the two logits) and the eps given (0.1 clamps 0.02 to 0.1)."""
    from irsim.stats.ci import bootstrap_ci

    z = sps.norm.ppf(0.975)
    lgt = lambda v: np.log(v / (1 - v))  # noqa: E731
    exp = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    star = np.array([0.3, 0.5])
    ci = bootstrap_ci(0.4, star, method="logit").confidence_interval
    sd = lgt(star).std(ddof=1)
    assert [float(ci.low), float(ci.high)] == pytest.approx(
        exp(lgt(0.4) + np.array([-z, z]) * sd), rel=1e-12)
    star = np.array([0.02, 0.5, 0.6])
    ci = bootstrap_ci(0.4, star, method="logit", eps=0.1).confidence_interval
    sd = lgt(np.array([0.1, 0.5, 0.6])).std(ddof=1)
    assert [float(ci.low), float(ci.high)] == pytest.approx(
        exp(lgt(0.4) + np.array([-z, z]) * sd), rel=1e-12)


def test_wilcoxon_approximation_for_tiny_samples_and_zero_deviation():
    """Normal approximation against scipy: one nonzero difference (variance 1/4 < 1) and a
    continuity-corrected statistic exactly at its mean (p = 1)."""
    for z, corr in (([0.3], False), ([0.3, -0.1], False), ([1.0, -1.0, 2.0, -2.0], True),
                    ([0.4, -0.1, 0.2], True)):
        r = wilcoxon(np.array(z), method="approx", correction=corr)
        ref = sps.wilcoxon(z, method="approx", correction=corr)
        assert float(r.pvalue) == pytest.approx(ref.pvalue, rel=1e-12), z


def test_randomisation_fields_defaults_and_exact_counts():
    """statistic = mean(z); defaults B = 10000, seed = 0; the exact enumeration's count is an
    integer, p = count / 2^n (scipy's permutation_test on the sign flips, exact)."""
    rng = np.random.default_rng(8)
    z = rng.normal(0.1, 1.0, size=(2, 9))
    r = randomisation_test(z, method="exact")
    np.testing.assert_allclose(r.statistic, z.mean(axis=1), rtol=1e-14)
    assert r.count.dtype == np.int64
    for row in range(2):
        ref = sps.permutation_test((z[row],), np.mean, permutation_type="samples",
                                   n_resamples=np.inf)
        assert float(r.pvalue[row]) == pytest.approx(ref.pvalue, rel=1e-12)
        assert int(r.count[row]) == round(ref.pvalue * 2**9)
    mc = randomisation_test(z, method="monte_carlo")
    same = randomisation_test(z, method="monte_carlo", B=10000, seed=0)
    assert mc.count.tolist() == same.count.tolist() and mc.n_resamples == 10000
    assert mc.count.dtype == np.int64


@pytest.mark.parametrize("cols", [2048, 2050])
def test_count_extremes_against_numpy_counts(cols):
    """Counts per row: greater t* >= obs - tol, less t* <= obs + tol, two-sided |t*| >= |obs|
    - tol, tol = 1e-9 max(|obs|, scale) (scale 0 by default); an observed 0 gives a = 0:
    every replicate counts once (zeros included). Both the word-popcount path (columns a
    multiple of 1024) and the plain count."""
    from irsim.stats.ties import count_extremes

    rng = np.random.default_rng(cols)
    r = np.round(rng.normal(size=(3, cols)), 1)
    r[:, :5] = [0.0, -5e-10, 5e-10, 1.0 - 5e-10, 1.0]
    obs = np.array([0.0, 1.0, -0.5])
    got = count_extremes(r, obs, ("greater", "less", "two-sided"))
    for i, o in enumerate(obs):
        tol = 1e-9 * abs(o)
        a = abs(o) - tol
        two = cols if a <= 0 else np.sum(r[i] >= a) + np.sum(r[i] <= -a)
        assert got[i].tolist() == [np.sum(r[i] >= o - tol), np.sum(r[i] <= o + tol), two]


def test_paired_ratio_near_constant_resample_with_unit_sum():
    """A resample in the near-constant screen (n s2 - s1^2 = 1e-10 s2, above the 1e-12 rule)
    whose sum s1 is exactly 1 keeps p = s2 / s1^2 = s2: only s1 = 0 or the rule give inf.
    w = (1/3 - 23 2^-24, 1 - 2 w0, -(w0 + w1)), resample (2, 1, 0)."""
    from fractions import Fraction

    from irsim.stats.resample import paired_ratio

    w0 = 1 / 3 - 23 * 2.0**-24
    w1 = 1 - 2 * w0
    w = np.array([[w0, w1, -(w0 + w1)]])
    ct = np.array([[2.0, 1.0, 0.0]]).T
    assert float((w @ ct)[0, 0]) == 1.0
    e2 = 2 * Fraction(w0) ** 2 + Fraction(w1) ** 2
    e1 = 2 * Fraction(w0) + Fraction(w1)
    assert Fraction(1, 10**12) < (3 * e2 - e1 * e1) / e2 < Fraction(1, 10**4)
    got = paired_ratio(w, w * w, ct, w @ ct)
    assert got[0, 0] == pytest.approx(float(e2 / (e1 * e1)), rel=1e-12)


def test_studentized_t_keeps_the_leading_shape():
    """Rows of any leading shape: (2, 3, 5) gives (2, 3) t statistics, as scipy's."""
    from irsim.stats.resample import studentized_t

    z = np.random.default_rng(6).normal(size=(2, 3, 5))
    t = studentized_t(z)
    assert t.shape == (2, 3)
    np.testing.assert_allclose(t, sps.ttest_1samp(z, 0.0, axis=-1).statistic, rtol=1e-12)


def test_tie_tolerance_of_an_infinite_statistic_is_the_floor():
    """1e-9 max(|obs|, scale), where an infinite observed statistic counts as 0 (the floor
    alone), so that no finite replicate is 'equal' to it."""
    from irsim.stats.ties import count_extreme

    got = tie_tolerance(np.array([np.inf, -np.inf, 2.0, 0.1]), np.array([0.5, 3.0, 1.0, 0.0]))
    assert got.tolist() == [1e-9 * 0.5, 1e-9 * 3.0, 1e-9 * 2.0, 1e-9 * 0.1]
    rep = np.array([[1e300, 5.0, -np.inf, np.inf]])
    assert int(count_extreme(rep, np.array([np.inf]), "greater", 1.0)[0]) == 1


def test_randomisation_tie_band_is_per_row():
    """The tie band of a row is 1e-9 max(|s_obs|, sum |z|) of that row: a sign pattern whose
    sum is 5e-8 below the observed one is not a tie for a row of size 1e-3, whatever the
    other rows hold (exact enumeration of the 4 patterns: only (+, +) reaches s_obs)."""
    z = np.array([[1e-3, 2.5e-8], [1000.0, 500.0]])
    r = randomisation_test(z, alternative="greater", method="exact")
    assert int(r.count[0]) == 1 and float(r.pvalue[0]) == 0.25
    assert int(r.count[1]) == 1


@pytest.mark.parametrize("summary", ["mean", "worst"])
def test_unpaired_bootstrap_of_constant_scores_has_p_one(summary):
    """x = y = a constant (0.1, sizes 3 and 4): every replicate equals the observed difference
    0 in exact arithmetic (the rounding of 0.1 sums is within the band 1e-9 (|M(x)| +
    |M(y)|)), so every alternative has p = 1."""
    from irsim.stats import unpaired_bootstrap

    x, y = np.full((1, 3), 0.1), np.full((1, 4), 0.1)
    for alt in ("two-sided", "greater", "less"):
        r = unpaired_bootstrap(x, y, summary=summary, k=2, alternative=alt, B=200)
        assert float(r.pvalue[0]) == 1.0, alt


def test_bca_tie_band_uses_the_bootstrap_sd_when_the_estimate_is_zero():
    """theta_hat = 0: the band is 1e-9 sd(theta*) (about 2e-10 here), so replicates at -+1e-12
    are ties with the estimate (counted half) rather than below / above it."""
    from irsim.stats.ci import bootstrap_ci

    star = np.array([-1e-12, -1e-12, 1e-12, -0.3, -0.2, -0.25, -0.1, 0.1, 0.15, 0.2, 0.3, 0.35,
                     -0.05])
    sd = star.std(ddof=1)
    assert sd > 0.1  # band > 1e-10, far wider than 1e-12
    b = len(star)
    below, within = np.sum(star < -1e-9 * sd), np.sum(np.abs(star) <= 1e-9 * sd)
    assert (below, within) == (5, 3)
    z0 = sps.norm.ppf((below + within / 2) / b)
    z = sps.norm.ppf(0.975)
    p = [sps.norm.cdf(z0 + (z0 - z)), sps.norm.cdf(z0 + (z0 + z))]
    ci = bootstrap_ci(0.0, star, method="bca").confidence_interval
    assert [float(ci.low), float(ci.high)] == pytest.approx(np.quantile(star, p), rel=1e-12)


def test_randomisation_of_zero_differences_has_p_one():
    """All differences 0: every sign pattern ties with the observed sum, p = 1 (two-sided,
    exact and Monte Carlo), not 2."""
    z = np.zeros((1, 6))
    for method in ("exact", "monte_carlo"):
        r = randomisation_test(z, method=method, B=200)
        assert float(r.pvalue[0]) == 1.0, method


def test_tukey_ranges_with_more_trials_than_two_memory_chunks():
    """100 topics x 200 systems: the trials are summed in memory chunks of about 200; 450
    trials span three chunks, each range is max - min of the permuted system means."""
    from irsim.stats.resample import tukey_ranges

    rng = np.random.default_rng(11)
    topics, systems, trials = 100, 200, 450
    st = rng.uniform(size=(topics, systems))
    perm = np.argsort(rng.uniform(size=(trials, topics, systems)), axis=-1).astype(np.int16)
    got = tukey_ranges(st, perm)
    means = st[np.arange(topics)[None, :, None], perm].mean(axis=1)  # (trials, systems)
    np.testing.assert_allclose(got, means.max(axis=1) - means.min(axis=1), rtol=1e-12)


@pytest.mark.parametrize("method", ["normal", "percentile", "basic", "bca", "logit",
                                    "studentised_logit"])
def test_bootstrap_ci_one_sided_is_the_two_sided_limit_at_twice_alpha(method):
    """scipy's convention: the 95% one-sided interval 'greater' is (low of the two-sided 90%
    interval, inf), 'less' is (-inf, its high); the result keeps method and level; a logit
    method refuses replicates outside [0, 1]."""
    from irsim.errors import InputError as IE
    from irsim.stats.ci import bootstrap_ci

    rng = np.random.default_rng(2)
    star = np.clip(0.3 + 0.08 * rng.standard_normal(500), 0.01, 0.99)
    kw = {"n": 20} if method == "studentised_logit" else {}
    two = bootstrap_ci(0.31, star, method=method, confidence_level=0.9, **kw)
    g = bootstrap_ci(0.31, star, method=method, alternative="greater", **kw)
    le = bootstrap_ci(0.31, star, method=method, alternative="less", **kw)
    assert float(g.confidence_interval.low) == pytest.approx(
        float(two.confidence_interval.low), rel=1e-12)
    assert float(le.confidence_interval.high) == pytest.approx(
        float(two.confidence_interval.high), rel=1e-12)
    assert float(g.confidence_interval.high) == np.inf
    assert float(le.confidence_interval.low) == -np.inf
    assert (g.method, g.confidence_level, two.confidence_level) == (method, 0.95, 0.9)
    if method in ("logit", "studentised_logit"):
        with pytest.raises(IE, match="needs values in"):
            bootstrap_ci(0.3, np.array([0.2, 1.5, 0.4]), method=method, **kw)


def test_t_statistic_zero_variance_rule_shapes_and_scalars():
    """t_statistic: scipy's t; constant rows +-inf (sign of the mean) or NaN (zeros); the
    rule 'variance (ddof 1) <= 1e-12 of the mean square' decides between: z = (1, 1, 1 + d)
    has variance d^2/3, d = 2^-19 (1.2e-12: kept, finite) and d = 1.5 2^-20 (6.8e-13: +inf).
    Leading axes are kept; a 1-D input gives a scalar."""
    from irsim.stats.ttest import t_statistic

    rng = np.random.default_rng(13)
    reg = rng.normal(0.2, 1.0, size=3)
    z = np.array([reg, [0.2] * 3, [-0.3] * 3, [0.0] * 3, [1.0, 1.0, 1.0 + 2.0**-19],
                  [1.0, 1.0, 1.0 + 1.5 * 2.0**-20]])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = t_statistic(z)
    assert t[0] == pytest.approx(sps.ttest_1samp(reg, 0.0).statistic, rel=1e-12)
    assert t[1] == np.inf and t[2] == -np.inf and np.isnan(t[3])
    big = sps.ttest_1samp(z[4], 0.0).statistic
    assert np.isfinite(t[4]) and t[4] == pytest.approx(big, rel=1e-2)
    assert t[5] == np.inf
    cube = rng.normal(size=(2, 3, 5))
    tc = t_statistic(cube)
    assert tc.shape == (2, 3)
    np.testing.assert_allclose(tc, sps.ttest_1samp(cube, 0.0, axis=-1).statistic, rtol=1e-12)
    one = t_statistic(reg)
    assert isinstance(one, np.floating) and one == pytest.approx(t[0], rel=1e-15)


def test_unpaired_bootstrap_observed_zero_up_to_rounding_counts_every_replicate():
    """Two orders of one multiset: the means are equal in exact arithmetic (5.6e-17 apart in
    floating point), so every replicate is at least as extreme and p = 1; the tie band of the
    observed difference has the score scale as its floor (without it, replicates that are 0
    in exact arithmetic but rounding noise in floats fall below 5.6e-17: p = 0.97)."""
    from irsim.stats import unpaired_bootstrap

    x = np.array([[0.1, 0.2, 0.3, 0.7, 0.05]])
    y = np.array([[0.1, 0.3, 0.05, 0.7, 0.2]])
    assert x.mean() - y.mean() != 0.0  # rounding noise, 0 in exact arithmetic
    r = unpaired_bootstrap(x, y, B=4000)
    assert r.count[0] == 4000 and r.pvalue[0] == 1.0
