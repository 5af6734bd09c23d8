"""The tie rule on rankings of means (issue 42): means equal in exact arithmetic are one value
(:func:`irsim.stats.ties.snap_ties`) before any study ranks them, so each study's Kendall
tau is scipy's on the exact rational means, and tau_AP with ties never depends on the order
of the systems.

Grid metrics (P@10: per-topic values k/10, 13 or 43 topics) make exact ties common, and their
float means split them: two multisets of tenths with the same rational sum have different
float sums (0.6 + 0.7 is not 0.5 + 0.8 in binary), so a plain comparison ranks tied systems
by an ulp. The oracles here compute the means as :class:`fractions.Fraction`s and hand them
to :func:`scipy.stats.kendalltau` (and spearmanr), or enumerate tau_AP's definition over
every order of the tied systems.
"""

from __future__ import annotations

import gzip
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import SHARED_DATA
from scipy import stats as sps

import irsim
from irsim.data.matrix import ScoreMatrix
from irsim.exact import exact_mean
from irsim.stats.kendall import rank_agreement, tau_ap
from irsim.stats.ties import TIE_RTOL, snap_ties

DL19 = SHARED_DATA / "dl19-assessors"


# -- grid scores and their exact means ---------------------------------------------------------
def grid(seed: int, systems: int, topics: int, effect: bool = False) -> np.ndarray:
    """P@10-like tenths as integers (systems, topics): every odd system is the even one
    before it with one tenth moved from one topic to another (the same rational mean, a
    different multiset of tenths). `effect`: the pairs' expected P@10 spread over .2-.8."""
    rng = np.random.default_rng(seed)
    if effect:
        p = np.repeat(np.linspace(0.2, 0.8, (systems + 1) // 2), 2)[:systems]
        k = rng.binomial(10, p[:, None], (systems, topics))
    else:
        k = rng.integers(0, 11, (systems, topics))
    for s in range(1, systems, 2):
        k[s] = k[s - 1]
        a, b = rng.choice(topics, 2, replace=False)
        if k[s, a] < 10 and k[s, b] > 0:
            k[s, a] += 1
            k[s, b] -= 1
    return k


def fraction_means(k: np.ndarray, counts: np.ndarray | None = None) -> list[Fraction]:
    """Exact means of tenths `k` (systems, topics), optionally weighted by topic counts."""
    T = k.shape[1]
    c = np.ones(T, np.int64) if counts is None else np.asarray(counts, np.int64)
    return [Fraction(int((row * c).sum()), 10 * int(c.sum())) for row in k]


def exact_tau(fx: list[Fraction], fy: list[Fraction]) -> float:
    """scipy's tau-b on exact rational means (object arrays: compared as Fractions)."""
    return float(sps.kendalltau(sps.rankdata(np.array(fx, dtype=object)),
                                sps.rankdata(np.array(fy, dtype=object))).statistic)


def splits_a_tie(floats: np.ndarray, exact: list[Fraction]) -> bool:
    """Whether two systems with equal exact means have different float means."""
    return any(exact[i] == exact[j] and floats[i] != floats[j]
               for i in range(len(exact)) for j in range(i + 1, len(exact)))


def tau_ap_definition(x: list, order: list[int]) -> float:
    """tau_AP of the ranking `order` (best first) against the scores `x` (Yilmaz et al.
    2008, a pair tied in x half correct), as loops."""
    n, total = len(order), 0.0
    for i in range(1, n):
        v = order[i]
        total += sum(1.0 if x[u] > x[v] else 0.5 if x[u] == x[v] else 0.0
                     for u in order[:i]) / i
    return 2.0 / (n - 1) * total - 1.0


def tied_orders(y: list) -> list[list[int]]:
    """Every strict order (best first) of the items that agrees with the scores `y`."""
    groups = [[i for i in range(len(y)) if y[i] == v] for v in sorted(set(y), reverse=True)]
    return [sum(map(list, combo), []) for combo in
            itertools.product(*(itertools.permutations(g) for g in groups))]


def tau_ap_mean_over_ties(x: list, y: list) -> float:
    """tau_AP's definition averaged over every order of the items tied in `y` (the
    half-credit of ties in `x` is the same average over `x`'s orders)."""
    return float(np.mean([tau_ap_definition(x, o) for o in tied_orders(y)]))


# -- snap_ties -------------------------------------------------------------------------------
def test_snap_ties_makes_the_issue_example_one_value():
    """8.2 / 13 from two multisets of 13 tenths: .6307692307692307 and .6307692307692309
    before, one value after."""
    rng = np.random.default_rng(0)
    seen: dict[float, np.ndarray] = {}
    while len(seen) < 2:  # multisets of 13 tenths summing to 82 tenths
        k = rng.multinomial(82, np.full(13, 1 / 13))
        if k.max() <= 10:
            seen.setdefault(float(exact_mean(k[None, :] / 10, axis=1)[0]), k)
    values = np.array(sorted(seen))
    assert values.tolist() == [0.6307692307692307, 0.6307692307692309]
    assert snap_ties(values).tolist() == [0.6307692307692307] * 2


def test_snap_ties_is_transitive_and_takes_the_smallest_member():
    chain = 0.5 + np.arange(5) * 0.6 * TIE_RTOL  # neighbours tie, the ends are 2.4e-9 apart
    assert snap_ties(chain[::-1]).tolist() == [0.5] * 5
    two = np.array([0.5, 0.5 + 3 * TIE_RTOL, 0.5 + 3.5 * TIE_RTOL])  # a gap, then a tie
    assert snap_ties(two).tolist() == [0.5, two[1], two[1]]
    # relative above 1 (scale is a floor), absolute near 0
    assert snap_ties(np.array([1000.0, 1000.0 + 5e-7]), scale=0.0).tolist() == [1000.0] * 2
    assert snap_ties(np.array([1e-12, 2e-12])).tolist() == [1e-12] * 2
    assert snap_ties(np.array([1e-12, 2e-12]), scale=0.0).tolist() == [1e-12, 2e-12]


def test_snap_ties_does_not_depend_on_the_order_and_is_idempotent():
    k = grid(32, 40, 43)
    means = exact_mean(k / 10, axis=1)
    exact = fraction_means(k)
    assert splits_a_tie(means, exact)
    snapped = snap_ties(means)
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = rng.permutation(len(means))
        assert snap_ties(means[p]).tobytes() == snapped[p].tobytes()
    assert snap_ties(snapped).tobytes() == snapped.tobytes()
    # equal exactly when the rational means are equal
    for i, j in itertools.combinations(range(len(exact)), 2):
        assert (snapped[i] == snapped[j]) == (exact[i] == exact[j])
    # along an axis: each column on its own
    two = np.stack([means, means[::-1]], axis=1)
    assert snap_ties(two, axis=0).tolist() == np.stack([snapped, snapped[::-1]], 1).tolist()


def test_snap_ties_leaves_well_separated_values_alone():
    rng = np.random.default_rng(2)
    v = np.cumsum(rng.uniform(1e-6, 1e-2, 500)) - 2.0  # gaps >= 1e-6, both signs
    rng.shuffle(v)
    assert snap_ties(v).tobytes() == v.tobytes()
    odd = np.array([np.nan, 1.0, np.inf, -np.inf, 1.0 + 1e-12, np.nan])
    np.testing.assert_array_equal(snap_ties(odd), [np.nan, 1.0, np.inf, -np.inf, 1.0, np.nan])


# -- tau_AP and ties --------------------------------------------------------------------------
def test_tau_ap_is_the_mean_over_the_orders_of_the_ties():
    rng = np.random.default_rng(4)
    for _ in range(60):
        n = int(rng.integers(2, 7))
        x, y = rng.integers(0, 3, n) / 3, rng.integers(0, 3, n) / 3
        want = tau_ap_mean_over_ties(x.tolist(), y.tolist())
        assert float(tau_ap(x, y)) == pytest.approx(want, abs=1e-12)
        p = rng.permutation(n)  # the order of the items: the same float
        assert float(tau_ap(x[p], y[p])) == float(tau_ap(x, y))
    # without ties: the definition itself
    x, y = rng.permutation(9) / 9, rng.permutation(9) / 9
    assert float(tau_ap(x, y)) == pytest.approx(
        tau_ap_definition(x.tolist(), list(np.argsort(-y))), abs=1e-12)


def test_tau_ap_with_every_system_tied_is_zero_in_any_order():
    rng = np.random.default_rng(5)
    y = np.full(7, 0.3)
    for _ in range(5):
        x = rng.uniform(size=7)
        assert float(tau_ap(x, y)) == 0.0 and float(tau_ap(y, x)) == 0.0
    # tied after the tie rule: 0.1 + 0.2 and 0.3
    assert float(tau_ap([0.5, 0.4], [0.1 + 0.2, 0.3])) == 0.0
    assert float(tau_ap([0.4, 0.5], [0.1 + 0.2, 0.3])) == 0.0


# -- assessors ------------------------------------------------------------------------------------
def test_rank_agreement_equals_scipy_on_exact_means_of_a_grid_metric():
    """assessors' rank_agreement (tau-b, Spearman, tau_AP and their bootstrap intervals) on
    P@10 over 43 topics: the observed values and every resample's as computed from exact
    rational means."""
    from irsim.sampling.topics import bootstrap_counts

    kx, ky = grid(86, 8, 43), np.roll(grid(241, 8, 43), 1, axis=0)  # other tied pairs
    x, y = kx / 10, ky / 10
    fx, fy = fraction_means(kx), fraction_means(ky)
    assert splits_a_tie(exact_mean(x, axis=1), fx) and splits_a_tie(exact_mean(y, axis=1), fy)
    B, seed = 60, 11
    r = rank_agreement(x, y, B=B, seed=seed, study="test/ties", key=(2,))
    assert r.tau_b == pytest.approx(exact_tau(fx, fy), abs=1e-12)
    assert r.spearman == pytest.approx(sps.spearmanr(np.array(fx, dtype=object).astype(float),
                                                     np.array(fy, dtype=object).astype(float)
                                                     ).statistic, abs=1e-12)
    assert r.tau_ap == pytest.approx(tau_ap_mean_over_ties(fx, fy), abs=1e-12)
    counts = bootstrap_counts(seed, "test/ties", 43, 0, B, key=(2,))
    taus, aps = [], []
    for c in counts:
        bx, by = fraction_means(kx, c), fraction_means(ky, c)
        taus.append(exact_tau(bx, by))
        aps.append(tau_ap_mean_over_ties(bx, by))
    taus = [t for t in taus if not math.isnan(t)]
    lo, hi = np.quantile(taus, [0.025, 0.975])
    assert r.tau_b_ci == pytest.approx((lo, hi), abs=1e-12)
    lo, hi = np.quantile(aps, [0.025, 0.975])
    assert r.tau_ap_ci == pytest.approx((lo, hi), abs=1e-12)


def test_simulated_assessors_tau_equals_scipy_on_exact_means():
    """The simulation's per-trial tau-b (trial_stats) on P@10 over 13 topics."""
    from irsim.experiments.assessors.simulation import trial_stats

    pairs = [(grid(s, 8, 13), np.roll(grid(s + 1000, 8, 13), 1, axis=0)) for s in (12, 36, 85)]
    xs = np.stack([kx for kx, _ in pairs]) / 10
    ys = np.stack([ky for _, ky in pairs]) / 10
    assert splits_a_tie(exact_mean(xs[0], axis=1), fraction_means(pairs[0][0]))
    out = trial_stats(xs, ys, alpha=0.05, corrections=["none"])
    want = [exact_tau(fraction_means(kx), fraction_means(ky)) for kx, ky in pairs]
    np.testing.assert_allclose(out[:, 0], want, rtol=0, atol=1e-12)


def _dl19_p10(qrels: dict[str, dict[str, int]], runs: list, topics: list[str]
              ) -> list[Fraction]:
    """Per-run exact mean of pytrec_eval's P_10 (relevance level 2) over `topics`."""
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qrels, {"P_10"}, relevance_level=2)
    out = []
    for run in runs:
        res = ev.evaluate(run)
        out.append(sum((Fraction(round(res[t]["P_10"] * 10), 10) if t in res else Fraction(0)
                        for t in topics), Fraction(0)) / len(topics))
    return out


def _read_qrels(path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in open(path):
        t, _, d, g = line.split()
        out.setdefault(t, {})[d] = int(g)
    return out


def test_dl19_nist_vs_eugene_yang_p10_tau_is_scipys_on_exact_means():
    """The issue's cell: 61 runs, P(rel=2)@10 on eugene-yang's 13 topics (three systems at
    8.2/13 came out as .6307692307692307 and one as .6307692307692309): tau-b .789859, not
    .790882. Oracle: pytrec_eval's P_10 per topic, exact means, scipy."""
    if not (DL19 / "qrels" / "nist.txt").is_file():
        pytest.skip(f"DL 2019 assessor data not found at {DL19}")
    files = sorted((DL19 / "runs").glob("*.gz"))
    nist, eu = _read_qrels(DL19 / "qrels" / "nist.txt"), _read_qrels(
        DL19 / "qrels" / "eugene-yang.txt")
    topics = sorted(eu)
    runs = []
    for f in files:
        run: dict[str, dict[str, float]] = {}
        with gzip.open(f, "rt") as fh:
            for line in fh:
                t, _, d, _, s, _ = line.split()
                if t in eu:
                    run.setdefault(t, {})[d] = float(s)
        runs.append(run)
    fx = _dl19_p10({t: nist[t] for t in topics}, runs, topics)
    fy = _dl19_p10({t: {**nist[t], **eu[t]} for t in topics}, runs, topics)  # unjudged=ref
    want = exact_tau(fx, fy)
    assert round(want, 6) == 0.789859
    res = irsim.assessors(runs=[str(f) for f in files],
                          qrels={"nist": str(DL19 / "qrels" / "nist.txt"),
                                 "eugene-yang": str(DL19 / "qrels" / "eugene-yang.txt")},
                          reference="nist", metrics=["P(rel=2)@10"], rel=2, depth=100,
                          unjudged="reference", tests=["t"], corrections=["none"], B=20,
                          seed=1)
    row = res.to_pandas("rank_agreement").iloc[0]
    assert row.tau_b == pytest.approx(want, abs=1e-12)
    # the system_means table is the ranking the tau is of: scipy on it gives the same tau,
    # and tied systems show one mean and one rank
    means = res.to_pandas("system_means")
    assert sps.kendalltau(means.reference_mean, means["mean"]).statistic == pytest.approx(
        want, abs=1e-12)
    tied = means[np.isclose(means["mean"], 8.2 / 13, rtol=0, atol=1e-12)]
    assert len(tied) == sum(v == Fraction(82, 130) for v in fy) and tied["mean"].nunique() == 1
    assert tied["rank"].nunique() == 1
    # tau_AP of the exact means, whatever the order of the systems
    xf, yf = np.array(fx, dtype=object).astype(float), np.array(fy, dtype=object).astype(float)
    p = np.random.default_rng(0).permutation(len(files))
    assert row.tau_ap == pytest.approx(float(tau_ap(xf, yf)), abs=1e-12)
    assert float(tau_ap(xf[p], yf[p])) == float(tau_ap(xf, yf))


# -- discpower, swap, reliability ---------------------------------------------------------------
def _matrix(ks: list[np.ndarray], names: list[str]) -> ScoreMatrix:
    S, T = ks[0].shape
    return ScoreMatrix(np.stack(ks) / 10, names, [f"s{i}" for i in range(S)],
                       [str(t) for t in range(T)])


def test_discpower_rankcorr_equals_scipy_on_exact_means():
    """discpower's tau between two metrics' rankings (observed and on every bootstrap
    sample of the paired test) on two P@10-like grids over 13 topics."""
    from irsim.experiments.discpower import PAIRED_STREAM
    from irsim.sampling.topics import bootstrap_counts

    kx, ky = grid(12, 8, 13), np.roll(grid(36, 8, 13), 1, axis=0)
    fx, fy = fraction_means(kx), fraction_means(ky)
    assert splits_a_tie((kx / 10).mean(axis=1), fx) and splits_a_tie(exact_mean(kx / 10, 1), fx)
    B, seed = 40, 3
    res = irsim.discpower(_matrix([kx, ky], ["P@10", "P@5"]), tests=["t"], B=B, seed=seed,
                          rankcorr=True)
    row = res.to_pandas("rankcorr").iloc[0]
    assert row.tau == pytest.approx(exact_tau(fx, fy), abs=1e-12)
    boot = [exact_tau(fraction_means(kx, c), fraction_means(ky, c))
            for c in bootstrap_counts(seed, PAIRED_STREAM, 13, 0, B)]
    boot = [t for t in boot if not math.isnan(t)]
    assert row.tau_boot_mean == pytest.approx(np.mean(boot), abs=1e-12)
    assert row.se_boot == pytest.approx(np.std(boot, ddof=1), abs=1e-12)


def test_swap_counts_follow_exact_means():
    """experiment=swap on P@10 over 43 topics: comparisons and swaps per absolute bin as a
    loop over trials and pairs on exact rational set means."""
    from irsim.experiments.swap import STREAM
    from irsim.sampling.subsets import subset_indices

    k = grid(86, 8, 43)
    trials, seed, size = 60, 4, 21
    res = irsim.swap(_matrix([k], ["P@10"]), sampling=["disjoint"], subset_sizes=[size],
                     trials=trials, seed=seed)
    rates = res.to_pandas("swap_rates")
    rates = rates[rates.bin_kind == "absolute"]
    idx = subset_indices("disjoint", seed, STREAM, 43, size, 0, trials)
    comps, swaps = np.zeros(21, np.int64), np.zeros(21, np.int64)
    width = Fraction(1, 100)
    for t in range(trials):
        c1, c2 = (np.bincount(idx[t, i], minlength=43) for i in (0, 1))
        m1, m2 = fraction_means(k, c1), fraction_means(k, c2)
        for a, b in itertools.combinations(range(len(k)), 2):
            d, d2 = m1[a] - m1[b], m2[a] - m2[b]
            j = min(math.floor(abs(d) / width), 20)
            comps[j] += 1
            swaps[j] += d * d2 < 0 or (d == 0) != (d2 == 0)
    assert swaps.sum() > 0 and comps[0] > 0  # exact ties on the first set
    np.testing.assert_array_equal(rates.comparisons.to_numpy(), comps)
    np.testing.assert_array_equal(rates.swaps.to_numpy(), swaps)


def test_reliability_check_tau_counts_exact_ties_of_the_true_means():
    """reliability's check: tau-b of every simulated ranking against the true ranking, whose
    ties are those of the exact rational means of the P@10 grid (13 topics)."""
    from irsim.experiments.reliability import CHECK_STREAM, true_means
    from irsim.rng import blocked_draws, study_key
    from irsim.stats.gtheory import g_study

    k = grid(1, 8, 13, effect=True)  # a system effect: var_system > 0
    x = k / 10
    exact = fraction_means(k)
    assert splits_a_tie(x.mean(axis=1), exact)
    trials, n, seed = 40, 10, 5
    res = irsim.reliability(ScoreMatrix(x[None], ["P@10"], [f"s{i}" for i in range(8)],
                                        [str(t) for t in range(13)]),
                            metric="P@10", B=10, seed=seed, check_trials=trials,
                            check_topics=[n])
    row = res.to_pandas("reliability_check").iloc[0]
    g = g_study(x)
    assert g.var_system > 0
    mu = true_means(x, float(g.var_system))
    truth = sps.rankdata(np.array(exact, dtype=object))  # the order of mu, exactly
    z = blocked_draws(seed, CHECK_STREAM, (study_key("P@10"), n), 0, trials,
                      lambda rng, m: rng.standard_normal((m, 9 * n)))
    taus = []
    for t in range(trials):
        sim = (mu[:, None] + math.sqrt(float(g.var_topic)) * z[t, :n][None, :]
               + math.sqrt(float(g.var_residual)) * z[t, n:].reshape(8, n))
        taus.append(sps.kendalltau(sim.mean(axis=1), truth).statistic)
    assert row.trials == trials
    assert row.tau_mean == pytest.approx(np.mean(taus), rel=1e-12)
