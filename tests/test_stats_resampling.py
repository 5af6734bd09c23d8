"""Resampling tests and intervals: kernels, determinism, chunk independence, degenerate
cases, one-sided alternatives and p-value modes, checked against plain per-pair code."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import special
from scipy import stats as sps

from irsim.exact import Exact
from irsim.sampling.permutations import topic_permutations
from irsim.sampling.signs import sign_flips, sign_patterns
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices
from irsim.stats import (
    mean_ci,
    paired_bootstrap,
    paired_t,
    randomisation_test,
    randomised_tukey_hsd,
    tukey_hsd,
    unpaired_bootstrap,
)
from irsim.stats.bootstrap import count_t
from irsim.stats.ci import bootstrap_ci
from irsim.stats.resample import (
    paired_bootstrap_replicates,
    paired_ratio,
    studentized_t,
    unpaired_parts,
    unpaired_replicates,
    unpaired_weights,
)
from irsim.stats.ties import count_extreme

ALTERNATIVES = ("two-sided", "greater", "less")


def _matrix(shared_data, name: str, systems: int | None = None) -> np.ndarray:
    m = pd.read_csv(shared_data / "urbano" / f"{name}.csv").to_numpy(np.float64).T
    return m if systems is None else m[:systems]


def _all_pairs(m: np.ndarray):
    i, j = np.triu_indices(len(m), 1)
    return m[i], m[j]


@pytest.fixture(scope="module")
def p10(shared_data):
    """adhoc8 P@10 (discrete), 40 systems: 780 pairs, plus degenerate rows."""
    x, y = _all_pairs(_matrix(shared_data, "adhoc8_p10", 40))
    n = x.shape[1]
    const = np.full((1, n), 0.1)
    x = np.concatenate([x, y[:1], y[:1] + const, y[:1] + np.r_[np.full(n - 1, 0.1), 0.2]])
    y = np.concatenate([y, y[:1], y[:1], y[:1]])
    return x, y


# -- paired bootstrap -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["adhoc8_ap", "adhoc8_p10", "adhoc5_rr", "web2012_err20"])
def test_batched_paired_counts_equal_kernels(shared_data, name):
    """The batched counter (p = s2/s1^2, then count_t) equals resample.py's t* kernel +
    count, every alternative, including constant differences (all 0, all 0.1) and
    near-constant ones; with s1 from per-system sums (Exact.parts, as the discpower study
    computes it) as well."""
    x, y = _all_pairs(_matrix(shared_data, name, 60))
    z = x - y
    n = z.shape[1]
    z = np.concatenate([z, np.zeros((1, n)), np.full((1, n), 0.1),
                        np.r_[np.full(n - 1, 0.1), 0.2][None]])
    w = z - z.mean(axis=1, keepdims=True)
    t = studentized_t(z)
    counts = bootstrap_counts(3, "test", n, 0, 500)
    t_star, _ = paired_bootstrap_replicates(w, counts)
    ct = np.ascontiguousarray(counts.T)
    s1 = w @ ct
    p = paired_ratio(w, w * w, ct, s1)
    for alt in ALTERNATIVES:
        np.testing.assert_array_equal(count_t(p, t, n, alt, s1),
                                      count_extreme(t_star, t, alt, 1.0))
    # s1 from per-system sums: exact parts whose pair differences are exact (x[i], y[j])
    m = _matrix(shared_data, name, 60)
    i, j = np.triu_indices(len(m), 1)
    parts = Exact(m, l1=2 * n).parts(ct)
    zz = m[i] - m[j]
    mz = zz.mean(axis=1, keepdims=True)
    sums = sum(p[i] - p[j] for p in parts) - n * mz
    ww = zz - mz
    np.testing.assert_array_equal(
        count_t(paired_ratio(ww, ww * ww, ct, sums), studentized_t(zz), n),
        count_extreme(paired_bootstrap_replicates(ww, counts)[0], studentized_t(zz),
                      "two-sided", 1.0))


def test_paired_bootstrap_matches_per_pair_loop(p10):
    x, y = p10
    B, seed = 600, 4
    r = paired_bootstrap(x, y, B=B, seed=seed, study="s")
    idx = bootstrap_indices(seed, "s", x.shape[1], 0, B)
    for p in range(0, len(x), 37):
        z = x[p] - y[p]
        w = (z - z.mean())[idx]
        sd = w.std(axis=1, ddof=1)
        const = sd <= np.sqrt(1e-12 * (w * w).mean(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = np.where(const, 0.0, w.mean(axis=1) / (sd / np.sqrt(len(z))))
        t_obs = studentized_t(z)
        thr = abs(t_obs) - 1e-9 * max(abs(t_obs), 1.0)
        assert r.count[p] == np.count_nonzero(np.abs(ts) >= thr)
    # constant differences: t = 0, every resample counts
    assert r.count[-3] == B and r.count[-2] == B and float(r.statistic[-2]) == 0.0


def test_paired_bootstrap_direction_against_scipy_and_a_loop(p10):
    """x - y, not y - x: the statistic is scipy's paired t of (x, y) with its sign, and the
    one-sided counts are the resamples of the centred differences on the named side of it
    (ties within 1e-9 max(|t|, 1)), from a loop over explicitly drawn resample indices."""
    x, y = p10
    B, seed = 400, 9
    g = paired_bootstrap(x, y, B=B, seed=seed, study="d", alternative="greater")
    le = paired_bootstrap(x, y, B=B, seed=seed, study="d", alternative="less")
    idx = bootstrap_indices(seed, "d", x.shape[1], 0, B)
    rows = list(range(0, len(x) - 3, 29))
    t_ref = sps.ttest_rel(x[rows], y[rows], axis=1).statistic
    np.testing.assert_allclose(np.asarray(g.statistic)[rows], t_ref, rtol=1e-12, atol=1e-12)
    for k, p in enumerate(rows):
        z = x[p] - y[p]
        w = (z - z.mean())[idx]
        sd = w.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = np.where(sd > 0, w.mean(axis=1) / (sd / np.sqrt(len(z))), 0.0)
        tol = 1e-9 * max(abs(t_ref[k]), 1.0)
        assert g.count[p] == np.count_nonzero(ts >= t_ref[k] - tol), p
        assert le.count[p] == np.count_nonzero(ts <= t_ref[k] + tol), p


@pytest.mark.slow
def test_paired_bootstrap_chunking_and_subsets(p10):
    x, y = p10
    ref = paired_bootstrap(x, y, B=1100, seed=2)
    small = paired_bootstrap(x, y, B=1100, seed=2, memory_budget=1)
    np.testing.assert_array_equal(ref.count, small.count)
    sub = paired_bootstrap(x[5:9], y[5:9], B=1100, seed=2)
    np.testing.assert_array_equal(sub.count, ref.count[5:9])
    one = paired_bootstrap(x[7], y[7], B=1100, seed=2)
    assert one.count.shape == () and int(one.count) == ref.count[7]
    other = paired_bootstrap(x, y, B=1100, seed=3)
    assert not np.array_equal(other.count, ref.count)


@pytest.mark.slow
def test_pvalue_modes_and_alternatives(p10):
    x, y = p10
    c = paired_bootstrap(x, y, B=500, seed=1)
    p = paired_bootstrap(x, y, B=500, seed=1, pvalue_mode="plus_one")
    np.testing.assert_array_equal(c.pvalue, c.count / 500)
    np.testing.assert_array_equal(p.pvalue, (c.count + 1) / 501)
    g = paired_bootstrap(x, y, B=500, seed=1, alternative="greater")
    le = paired_bootstrap(x, y, B=500, seed=1, alternative="less")
    swapped = paired_bootstrap(y, x, B=500, seed=1, alternative="greater")
    np.testing.assert_array_equal(le.count, swapped.count)
    # one-sided counts never exceed the two-sided count by more than the other tail
    assert (g.count + le.count >= c.count).all()


def test_paired_bootstrap_shift_statistic(p10):
    x, y = p10
    B = 400
    r = paired_bootstrap(x, y, statistic="mean", B=B, seed=6)
    counts = bootstrap_counts(6, "stats/paired_bootstrap", x.shape[1], 0, B)
    z = x - y
    means = z @ counts.T / z.shape[1]  # the bootstrap means, centred by their own mean
    want = count_extreme(means - means.mean(1, keepdims=True), z.mean(1), "two-sided",
                         np.abs(z).mean(1))
    np.testing.assert_array_equal(r.count, want)
    # many chunks (the mean count per topic is summed in a first pass): the same counts
    chunked = paired_bootstrap(x, y, statistic="mean", B=B, seed=6, memory_budget=1)
    np.testing.assert_array_equal(chunked.count, want)
    # pairs with equal means (0 in exact arithmetic): every resample counts
    equal = np.round(z.sum(1) * 1e6) == 0
    assert equal.sum() > 5 and (r.count[equal] == B).all()


# -- unpaired bootstrap -----------------------------------------------------------------


@pytest.mark.parametrize("summary", ["mean", "gmean", "worst"])
def test_unpaired_bootstrap_matches_naive(p10, summary):
    x, y = p10[0][:60], p10[1][:60, :40]  # m != n
    k = 5
    B, seed = 300, 9
    r = unpaired_bootstrap(x, y, summary=summary, k=k, B=B, seed=seed, study="u")
    chunked = unpaired_bootstrap(x, y, summary=summary, k=k, B=B, seed=seed, study="u",
                                 memory_budget=1)
    np.testing.assert_array_equal(r.count, chunked.count)
    n, m = x.shape[1], y.shape[1]
    idx = bootstrap_indices(seed, "u", n + m, 0, B)

    def stat(v):
        if summary == "mean":
            return v.mean(-1)
        if summary == "gmean":
            return np.exp(np.log(v + 1e-5).mean(-1))
        return np.sort(v, axis=-1)[..., :k].mean(-1)

    for p in range(0, 60, 7):
        v = np.concatenate([x[p], y[p]])
        d = stat(v[idx[:, :n]]) - stat(v[idx[:, n:]])
        obs = np.array([stat(x[p]) - stat(y[p])])
        scale = abs(stat(x[p])) + abs(stat(y[p]))
        for alt in ALTERNATIVES:
            one = unpaired_bootstrap(x[p], y[p], summary=summary, k=k, B=B, seed=seed,
                                     study="u", alternative=alt)
            assert int(one.count) == int(count_extreme(d[None], obs, alt, scale)[0])
        assert r.count[p] == int(count_extreme(d[None], obs, "two-sided", scale)[0])


@pytest.mark.parametrize("summary", ["mean", "gmean"])
def test_unpaired_kernels_per_row_and_per_system(p10, summary):
    """The weights give each row's parts; per-system parts (x's weights beside y's, one
    GEMM per system, as the discpower study computes them) give the same replicates, and
    both equal the gather of the definition."""
    s = p10[0][:12]
    n, B = s.shape[1], 250
    idx = bootstrap_indices(4, "u", 2 * n, 0, B)
    first = np.stack([np.bincount(r, minlength=2 * n) for r in idx[:, :n]]).astype(float)
    second = np.stack([np.bincount(r, minlength=2 * n) for r in idx[:, n:]]).astype(float)
    w, div = unpaired_weights(first, second, n, summary)
    vals = np.log(s + 1e-5) if summary == "gmean" else s
    a, b = np.triu_indices(len(s), 1)
    per_row = unpaired_replicates(unpaired_parts(vals[a], w[:n], div),
                                  unpaired_parts(vals[b], w[n:], div), summary)
    parts = unpaired_parts(vals, np.concatenate([w[:n], w[n:]], axis=1),
                           np.concatenate([div, div]))
    h = parts.shape[1] // 2
    per_system = unpaired_replicates(parts[a, :h], parts[b, h:], summary)
    v = np.concatenate([s[a], s[b]], axis=1)
    g = v[:, idx]  # (pairs, B, 2n)

    def stat(u):
        return np.exp(np.log(u + 1e-5).mean(-1)) if summary == "gmean" else u.mean(-1)

    want = stat(g[..., :n]) - stat(g[..., n:])
    np.testing.assert_allclose(per_row, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(per_system, want, rtol=0, atol=1e-12)


# -- randomisation ----------------------------------------------------------------------


def test_exact_randomisation_brute_force(p10):
    x, y = p10
    z = (x - y)[::40, :9]
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=9)))
    sums = np.round((z @ signs.T) * 1e6)  # discrete scores: exact in units of 1e-6
    obs = np.round(z.sum(1) * 1e6)[:, None]
    want = {"two-sided": (np.abs(sums) >= np.abs(obs)).sum(1),
            "greater": (sums >= obs).sum(1), "less": (sums <= obs).sum(1)}
    for alt in ALTERNATIVES:
        r = randomisation_test(z, method="exact", alternative=alt)
        np.testing.assert_array_equal(r.count, want[alt])
        assert r.n_resamples == 512


def test_sign_patterns_cover_all_vectors():
    s = sign_patterns(5)
    assert len({tuple(r) for r in s.tolist()}) == 32
    np.testing.assert_array_equal(np.concatenate([sign_patterns(5, 0, 7),
                                                  sign_patterns(5, 7, 32)]), s)


@pytest.mark.slow
def test_monte_carlo_randomisation(p10):
    x, y = p10
    B = 4000
    r = randomisation_test(x, y, B=B, seed=5, study="r")
    np.testing.assert_array_equal(
        r.count, randomisation_test(x, y, B=B, seed=5, study="r", memory_budget=1).count)
    z = x - y
    s = sign_flips(5, "r", z.shape[1], 0, B)
    for alt in ALTERNATIVES:
        want = count_extreme(z @ s.T, z.sum(1), alt, np.abs(z).sum(1))
        got = randomisation_test(x, y, B=B, seed=5, study="r", alternative=alt)
        np.testing.assert_array_equal(got.count, want)
    equal = np.round(z.sum(1) * 1e6) == 0  # equal means: every sign vector counts
    assert equal.sum() > 5 and (r.count[equal] == B).all()
    # close to the exact p-value on 14 topics
    ex = randomisation_test(z[:50, :14], method="exact")
    mc = randomisation_test(z[:50, :14], method="monte_carlo", B=20000, seed=1)
    se = np.sqrt(ex.pvalue * (1 - ex.pvalue) / 20000)
    assert (np.abs(mc.pvalue - ex.pvalue) <= 5 * se + 1e-12).all()


# -- ANOVA, Tukey -----------------------------------------------------------------------


def test_tukey_two_systems_is_paired_t(p10):
    x, y = p10
    scores = np.stack([x[:30], y[:30]], axis=1)  # 30 problems x 2 systems x topics
    r = tukey_hsd(scores)
    # scipy's studentized range integrates to ~1e-11 absolute
    np.testing.assert_allclose(r.pvalue[:, 0], paired_t(x[:30], y[:30]).pvalue, rtol=1e-7,
                               atol=1e-10)


def test_tukey_formula(shared_data):
    m = _matrix(shared_data, "adhoc8_ap", 6)
    k, n = m.shape
    resid = m - m.mean(1, keepdims=True) - m.mean(0, keepdims=True) + m.mean()
    mse = (resid**2).sum() / ((k - 1) * (n - 1))
    r = tukey_hsd(m)
    for p, (i, j) in enumerate(zip(r.first, r.second, strict=True)):
        q = abs(m[i].mean() - m[j].mean()) / np.sqrt(mse / n)
        assert r.pvalue[p] == pytest.approx(
            sps.studentized_range.sf(q, k, (k - 1) * (n - 1)), rel=1e-9)


def test_randomised_tukey(shared_data):
    m = _matrix(shared_data, "adhoc8_ap", 12)
    B = 1000
    r = randomised_tukey_hsd(m, B=B, seed=2, study="rt")
    again = randomised_tukey_hsd(m, B=B, seed=2, study="rt", memory_budget=1)
    np.testing.assert_array_equal(r.count, again.count)
    perm = topic_permutations(2, "rt", 12, m.shape[1], 0, B)
    pm = m.T[np.arange(m.shape[1])[None, :, None], perm].mean(1)
    ranges = pm.max(1) - pm.min(1)
    tol = 1e-9 * np.maximum(np.abs(r.statistic), np.abs(m.mean(1)).max())
    want = (ranges[None, :] >= (np.abs(r.statistic) - tol)[:, None]).sum(1)
    np.testing.assert_array_equal(r.count, want)
    # the family-wise p-values are never below the per-pair randomisation p-values
    single = randomisation_test(m[r.first], m[r.second], B=B, seed=2)
    assert np.mean(r.pvalue >= single.pvalue) > 0.95


def test_randomised_tukey_two_systems_is_randomisation(p10):
    """With two systems, permuting a topic's scores is flipping the sign of its difference."""
    x, y = p10
    B = 20000
    for p in (3, 100, 400):
        rt = randomised_tukey_hsd(np.stack([x[p], y[p]]), B=B, seed=1)
        rn = randomisation_test(x[p], y[p], B=B, seed=2)
        se = np.sqrt(max(rn.pvalue * (1 - rn.pvalue), 1e-4) / B)
        assert abs(float(rt.pvalue[0]) - float(rn.pvalue)) <= 6 * se


# -- confidence intervals ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["percentile", "basic", "bca", "logit",
                                    "studentised_logit"])
def test_mean_ci_uses_shared_counts(shared_data, method):
    x = _matrix(shared_data, "adhoc8_ap")[:, :10]
    B = 700
    r = mean_ci(x, method=method, B=B, seed=3, key=(10,))
    chunked = mean_ci(x, method=method, B=B, seed=3, key=(10,), memory_budget=1)
    # same resamples; the GEMM's rounding may differ by an ulp with the block shape
    for side in ("low", "high"):
        np.testing.assert_allclose(getattr(chunked.confidence_interval, side),
                                   getattr(r.confidence_interval, side), rtol=1e-13)
    star = x @ (bootstrap_counts(3, "stats/ci", 10, 0, B, key=(10,)) / 10).T
    from irsim.stats import mean_acceleration

    acc = mean_acceleration(x) if method == "bca" else None
    ref = bootstrap_ci(x.mean(1), star, method=method, acceleration=acc, n=10)
    np.testing.assert_allclose(r.confidence_interval.low, ref.confidence_interval.low,
                               rtol=1e-12)
    np.testing.assert_allclose(r.confidence_interval.high, ref.confidence_interval.high,
                               rtol=1e-12)


def test_studentised_logit_is_parks_recipe():
    rng = np.random.default_rng(0)
    star = np.concatenate([rng.beta(2, 8, 995), [0.0, 0.0, 1.0, 0.0, 0.0]])
    r = bootstrap_ci(0.2, star, method="studentised_logit", n=10, confidence_level=0.9)
    kept = star[(star > 0) & (star < 1)]
    mu, sigma = sps.norm.fit(special.logit(kept))  # maximum likelihood
    q = sps.t.ppf(0.95, 9)
    assert float(r.confidence_interval.low) == pytest.approx(special.expit(mu - q * sigma))
    assert float(r.confidence_interval.high) == pytest.approx(special.expit(mu + q * sigma))


def test_cormack_lynam_intervals():
    rng = np.random.default_rng(1)
    star = np.clip(rng.normal(0.3, 0.08, (4, 2000)), 0, 1)
    star[0, :10] = 0.0
    hat = np.array([0.3, 0.31, 0.0, 1.0])
    lin = bootstrap_ci(hat, star, method="normal")
    sd = star.std(1, ddof=1)
    np.testing.assert_allclose(lin.confidence_interval.low, hat - 1.959963984540054 * sd)
    lg = bootstrap_ci(hat, star, method="logit", eps=1e-5)
    ls = special.logit(np.clip(star, 1e-5, 1 - 1e-5)).std(1, ddof=1)
    centre = special.logit(np.clip(hat, 1e-5, 1 - 1e-5))
    np.testing.assert_allclose(lg.confidence_interval.high,
                               special.expit(centre + 1.959963984540054 * ls))
    assert (lg.confidence_interval.low >= 0).all() and (lg.confidence_interval.high <= 1).all()


def test_ci_coverage_by_simulation():
    """Normal data, n = 20, 2000 independent samples: coverage within 4 binomial standard
    errors of its known value. t: exactly 0.95. normal (z quantile, sample sd): exactly
    P(|T_19| <= z_.975). percentile and BCa (symmetric data: no bias, no skew correction):
    to first order the z interval with the plug-in sd s sqrt((n-1)/n), i.e.
    P(|T_19| <= z_.975 sqrt(19/20))."""
    rng = np.random.default_rng(2)
    x = rng.normal(0.5, 0.2, (2000, 20))
    z = sps.norm.ppf(0.975)
    plug_in = 2 * sps.t.cdf(z * np.sqrt(19 / 20), 19) - 1
    for method, expected in [("t", 0.95), ("normal", 2 * sps.t.cdf(z, 19) - 1),
                             ("bca", plug_in), ("percentile", plug_in)]:
        ci = mean_ci(x, method=method, B=500, seed=1).confidence_interval
        cover = np.mean((ci.low <= 0.5) & (0.5 <= ci.high))
        se = np.sqrt(expected * (1 - expected) / len(x))
        assert abs(cover - expected) <= 4 * se, (method, cover, expected)


def test_ci_one_sided_and_degenerate():
    x = np.array([[0.1, 0.4, 0.3, 0.2, 0.6], [0.3, 0.3, 0.3, 0.3, 0.3]])
    for method in ("normal", "t", "percentile", "basic", "bca", "studentised_logit"):
        two = mean_ci(x, method=method, confidence_level=0.9, B=400)
        less = mean_ci(x, method=method, confidence_level=0.95, alternative="less", B=400)
        greater = mean_ci(x, method=method, confidence_level=0.95, alternative="greater",
                          B=400)
        assert np.isneginf(less.confidence_interval.low).all()
        assert np.isposinf(greater.confidence_interval.high).all()
        if method not in ("bca", "studentised_logit"):
            np.testing.assert_allclose(less.confidence_interval.high,
                                       two.confidence_interval.high)
        # a constant sample gives the degenerate interval at its mean
        assert two.confidence_interval.low[1] == pytest.approx(0.3, abs=1e-12)
        assert two.confidence_interval.high[1] == pytest.approx(0.3, abs=1e-12)


def test_paired_bootstrap_refuses_two_topics_for_the_studentised_statistic():
    """On 2 topics the centred differences are (d, -d): every resample has t* = 0, so the
    studentised test would give ASL 0 to every pair; it is refused (issue 16, defect 6).
    The shift method (mean) is defined there: its resample means are d, -d and 0 with
    probabilities 1/4, 1/4, 1/2, so the two-sided ASL tends to P(|mean*| >= |d|) = 1/2."""
    from irsim.errors import InputError
    from irsim.stats import paired_bootstrap

    x, y = np.array([0.1, 0.5]), np.array([0.2, 0.3])
    with pytest.raises(InputError, match="at least 3 values"):
        paired_bootstrap(x, y)
    r = paired_bootstrap(x, y, statistic="mean", B=20_000, seed=3)
    assert abs(float(r.pvalue) - 0.5) < 4 * np.sqrt(0.25 / 20_000)


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.slow
def test_several_alternatives_in_one_pass_equal_the_definition(discrete):
    """randomisation_test and the shift bootstrap with several alternatives: every column
    equals the definition (the whole product z @ signs^T or w @ (counts / n)^T counted
    directly, written here) and the call with that alternative alone; shapes that are not
    multiples of the kernel's blocks (rows 64, draws 8192, lane counting 1024)."""
    rng = np.random.default_rng(11)
    alts = ("two-sided", "greater", "less")
    for rows, n, B in ((130, 25, 20000), (3, 50, 9000), (1, 10, 1024)):
        if discrete:  # P@10-like differences: exact ties with the observed sum are common
            z = (rng.integers(0, 11, (rows, n)) - rng.integers(0, 11, (rows, n))) / 10
        else:
            z = rng.normal(0.01, 0.2, (rows, n))
        r = randomisation_test(z, B=B, seed=3, key=(1,), alternative=alts,
                               method="monte_carlo")
        assert r.count.shape == r.pvalue.shape == (rows, 3)
        perm = z @ sign_flips(3, "stats/randomisation", n, 0, B, key=(1,)).T
        obs = z.sum(axis=1)[:, None]
        tol = 1e-9 * np.maximum(np.abs(obs), np.abs(z).sum(axis=1)[:, None])
        want = np.stack([(np.abs(perm) >= np.abs(obs) - tol).sum(axis=1),
                         (perm >= obs - tol).sum(axis=1),
                         (perm <= obs + tol).sum(axis=1)], axis=1)
        assert (r.count == want).all()
        for j, a in enumerate(alts):
            single = randomisation_test(z, B=B, seed=3, key=(1,), alternative=a,
                                        method="monte_carlo")
            assert (single.count == want[:, j]).all() and single.pvalue.shape == (rows,)
        b = paired_bootstrap(z, B=B, seed=3, statistic="mean", alternative=alts)
        means = z @ (bootstrap_counts(3, "stats/paired_bootstrap", n, 0, B) / n).T
        shift = means - means.mean(axis=1, keepdims=True)  # m* - mean(m*), as the paper
        obs = z.mean(axis=1)[:, None]
        tol = 1e-9 * np.maximum(np.abs(obs), np.abs(z).mean(axis=1)[:, None])
        want = np.stack([(np.abs(shift) >= np.abs(obs) - tol).sum(axis=1),
                         (shift >= obs - tol).sum(axis=1),
                         (shift <= obs + tol).sum(axis=1)], axis=1)
        assert (b.count == want).all()
        t = paired_bootstrap(z, B=B, seed=3, alternative=alts)
        for j, a in enumerate(alts):
            assert (paired_bootstrap(z, B=B, seed=3, alternative=a).count == t.count[:, j]).all()
    if discrete:
        assert (np.abs(perm) == np.abs(z.sum(axis=1))[:, None]).sum() > 0


def _loop_counts(lhs, draws, obs, alternatives, scale):
    """The definition, one row and one replicate at a time: ``r = sum_i lhs[i] d[i]``,
    counted against ``obs`` with the tie tolerance ``1e-9 max(|obs|, scale)``."""
    out = np.zeros((len(lhs), len(alternatives)), np.int64)
    for r in range(len(lhs)):
        tol = 1e-9 * max(abs(obs[r]), scale[r])
        for d in draws:
            rep = float(np.dot(lhs[r], d))
            for j, alt in enumerate(alternatives):
                if alt == "greater":
                    out[r, j] += rep >= obs[r] - tol
                elif alt == "less":
                    out[r, j] += rep <= obs[r] + tol
                else:
                    out[r, j] += abs(rep) >= abs(obs[r]) - tol
    return out


ALTERNATIVE_SETS = (("two-sided", "greater"), ("greater", "two-sided"), ("two-sided",),
                    ("less",), ("less", "two-sided", "greater"), ("greater", "less"))


@pytest.mark.parametrize("alternatives", ALTERNATIVE_SETS)
def test_resampled_counts_equal_a_direct_loop(alternatives):
    """The kernel (rows grouped by the sign of obs, shared comparisons, blocks of 128 x 1024
    compared in cache) against the definition, replicate by replicate: sign flips of
    dyadic differences (every sum exact: replicates tie the observed sum exactly, on both
    sides of 0), observed 0 (two-sided: every replicate), observed within the tolerance of 0
    and observed exactly at a replicate; rows and draws that are not multiples of the
    blocks."""
    from irsim.stats.resample import resampled_counts

    rng = np.random.default_rng(30)
    rows, n, B = 150, 12, 1500
    z = rng.integers(-4, 5, (rows, n)) / 8.0
    z[0] = 0.0  # obs 0 and scale 0: every replicate ties
    z[1] = np.r_[0.25, -0.25, np.zeros(n - 2)]  # obs 0, a <= 0
    z[2, :] = 0.125  # constant: obs = 12 x 0.125
    signs = sign_flips(4, "test", n, 0, B)
    obs = z.sum(axis=1)
    obs[3] += 1e-12  # inside the tolerance of the observed sum: still ties
    obs[4] = -obs[4] - 1e-12
    scale = np.abs(z).sum(axis=1)
    got = resampled_counts(z, signs, obs, alternatives, scale)
    want = _loop_counts(z, signs, obs, alternatives, scale)
    np.testing.assert_array_equal(got, want)
    # exact ties at the observed value occur on both signs of obs, in both tails
    perm = z @ signs.T
    tie = perm == obs[:, None]
    assert tie[obs > 0].any() and tie[obs < 0].any()
    assert (-perm == obs[:, None])[obs < 0].any()
    if "two-sided" in alternatives:
        assert (got[:2, alternatives.index("two-sided")] == B).all()
    assert np.getbufsize() == 8192  # the ufunc buffer size is restored


def test_resampled_counts_shift_draws_equal_the_caller_centred_draws_and_a_loop():
    """center / divisor (the shift bootstrap: counts kept as uint8, centred and divided block
    by block) count exactly as the float64 draws ``(counts - cbar) / n`` built by the caller,
    and as the replicate-by-replicate definition; the counts of the whole product counted at
    once (:func:`irsim.stats.ties.count_extremes`) agree too (blocking does not matter)."""
    from irsim.stats.resample import BLOCK_COLS, BLOCK_ROWS, resampled_counts
    from irsim.stats.ties import count_extremes

    rng = np.random.default_rng(31)
    n, B = 20, 2 * BLOCK_COLS + 77
    rows = 137  # two blocks of rows, the second partial
    assert BLOCK_ROWS < rows < 2 * BLOCK_ROWS
    z = (rng.integers(0, 11, (rows, n)) - rng.integers(0, 11, (rows, n))) / 10
    counts = bootstrap_counts(8, "test", n, 0, B)
    cbar = counts.mean(axis=0)
    draws = (counts - cbar) / n
    obs, scale = z.mean(axis=1), np.abs(z).mean(axis=1)
    alts = ("two-sided", "greater", "less")
    got = resampled_counts(z, counts.astype(np.uint8), obs, alts, scale, center=cbar,
                           divisor=n)
    np.testing.assert_array_equal(got, resampled_counts(z, draws, obs, alts, scale))
    np.testing.assert_array_equal(got, count_extremes(z @ draws.T, obs, alts, scale))
    np.testing.assert_array_equal(got[:20], _loop_counts(z[:20], draws, obs[:20], alts,
                                                         scale[:20]))
    assert (got > 0).all() and (got < B).any()


def test_paired_bootstrap_shift_keeps_counts_or_draws_them_twice():
    """The shift bootstrap keeps the count matrix (uint8 for n < 256, uint16 above) when n B
    fits the memory budget, else draws it again for the second pass: the same counts,
    equal to the definition (bootstrap means centred by their mean, counted directly)."""
    rng = np.random.default_rng(32)
    alts = ("two-sided", "greater")
    for n, B in ((300, 700), (7, 3000)):
        z = (rng.integers(0, 5, (9, n)) - 2) / 4.0 + rng.normal(0, 0.01, (9, 1))
        kept = paired_bootstrap(z, B=B, seed=2, statistic="mean", alternative=alts)
        again = paired_bootstrap(z, B=B, seed=2, statistic="mean", alternative=alts,
                                 memory_budget=n * B - 1)
        np.testing.assert_array_equal(kept.count, again.count)
        means = z @ bootstrap_counts(2, "stats/paired_bootstrap", n, 0, B).T / n
        shift = means - means.mean(axis=1, keepdims=True)
        obs = z.mean(axis=1)[:, None]
        tol = 1e-9 * np.maximum(np.abs(obs), np.abs(z).mean(axis=1)[:, None])
        want = np.stack([(np.abs(shift) >= np.abs(obs) - tol).sum(axis=1),
                         (shift >= obs - tol).sum(axis=1)], axis=1)
        np.testing.assert_array_equal(kept.count, want)


def test_row_counts_equal_count_nonzero():
    from irsim.stats.ties import row_counts

    rng = np.random.default_rng(0)
    for shape in ((5, 1024), (3, 8192), (2, 1000), (4, 2048 + 8)):
        m = rng.random(shape) < rng.random((shape[0], 1))
        m[0] = True  # a full row: 8 lanes of 128 ones per group, no carry
        assert (row_counts(m) == m.sum(axis=1)).all()
        assert (row_counts(np.asfortranarray(m)) == m.sum(axis=1)).all()


def test_alternatives_are_checked():
    from irsim.errors import ConfigError

    with pytest.raises(ConfigError, match="alternative"):
        randomisation_test(np.ones((1, 5)), alternative=("two-sided", "both"))
    with pytest.raises(ConfigError, match="alternative"):
        paired_bootstrap(np.ones((1, 5)), alternative=())
