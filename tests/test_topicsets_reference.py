"""The topic-set machinery of irsim.kit.topicsets (shared by swap, error_rates and effort)
against references written here from the definitions (Sanderson & Zobel 2005; Voorhees &
Buckley 2002), on the cut-offs a mutation run of the module left open: p-values equal to a
window edge or to the full-set alpha, the rate of a bin with one comparison, a drop of
exactly one system, exactly two systems left, the default subset size of an odd topic count,
ties at zero below the score tolerance, more than one block of trials, tied differences in
the dependency ranking, and a Monte Carlo test's resampling options.

The integration test replays the study's topic-set draws (``subset_indices``, checked
against the schemes' definitions in tests/test_reference_sampler.py); every mean, bin, error,
exact sign-test p-value and counter is computed here with Python loops over pairs and
trials. The scores are multiples of 1/8 and the sets have 8 topics, so every mean and
difference is exact in binary floating point and the bins are those of exact arithmetic.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from irsim.data.matrix import ScoreMatrix
from irsim.errors import ConfigError
from irsim.kit.topicsets import (
    ERROR_STREAM,
    FULL_STREAM,
    PairErrors,
    check_schemes,
    check_sizes,
    compared_systems,
    in_window,
    kept_systems,
    rates,
    sampling_configs,
)
from irsim.sampling.subsets import subset_indices
from irsim.stats.randomisation import randomisation_test

# the bin layouts written out (width, bins; the last bin is open-ended)
ABS_BINS = (0.01, 21)
REL_BINS = (0.05, 20)
TIE_RTOL = 1e-9  # "difference = 0": |d| <= 1e-9 max |x|


def in_window_ref(p: float, lo: float, hi: float) -> bool:
    """lo < p <= hi; a window starting at 0 includes p = 0; NaN is in no window."""
    if math.isnan(p):
        return False
    return p <= hi and (p >= lo if lo == 0 else p > lo)


def test_in_window_on_the_edges():
    edges = (0.0, 0.0078125, 0.01, 0.03125, 0.05, 0.21875, 1.0)
    p = np.array([*edges, 0.02, 0.5, np.nextafter(0.05, 1), np.nextafter(0.01, 0), np.nan])
    for lo, hi in [(0.0, 0.05), (0.01, 0.05), (0.03125, 0.21875), (0.0, 1.0), (0.05, 1.0),
                   (0.0, 0.0078125)]:
        want = [in_window_ref(float(v), lo, hi) for v in p]
        assert in_window(p, lo, hi).tolist() == want, (lo, hi)
    # the edges themselves: hi is inside, lo > 0 is outside, lo = 0 is inside
    assert in_window(np.array([0.05, 0.01, 0.0]), 0.01, 0.05).tolist() == [True, False, False]
    assert in_window(np.array([0.05, 0.0]), 0.0, 0.05).tolist() == [True, True]


def test_rates_of_small_and_empty_bins_are_exact_and_quiet():
    hits, comps = np.array([1, 0, 0, 1, 3, 2]), np.array([1, 1, 0, 2, 4, 0])
    with np.errstate(all="raise"):
        got = rates(hits, comps)
    want = [h / c if c > 0 else math.nan for h, c in zip(hits, comps, strict=True)]
    assert [("nan" if math.isnan(v) else v) for v in got.tolist()] == [
        ("nan" if math.isnan(v) else v) for v in want]


def test_check_sizes_refuses_non_integers_and_names_the_parameter():
    assert check_sizes([1, np.int64(7)]) == (1, 7)
    for bad in (True, 2.5, 0, -3, "5"):
        with pytest.raises(ConfigError, match=r"experiment\.subset_sizes must hold integers"):
            check_sizes([5, bad])
    with pytest.raises(ConfigError, match=r"experiment\.subset_sizes lists 5 twice"):
        check_sizes([5, 10, 5])
    with pytest.raises(ConfigError, match=r"experiment\.sd_sizes lists 4 twice"):
        check_sizes([4, 4], "sd_sizes")


def test_check_schemes_names_the_parameter():
    assert check_schemes("replacement") == ("replacement",)
    with pytest.raises(ConfigError, match=r"experiment\.sampling lists 'disjoint' twice|"
                                          r"experiment\.sampling lists disjoint twice"):
        check_schemes(["disjoint", "bootstrap", "disjoint"])
    with pytest.raises(ConfigError, match=r"unknown experiment\.sampling scheme 'disjiont'"):
        check_schemes(["disjiont"])


def test_sampling_configs_default_size_bootstrap_and_the_sets_cut_off():
    """Default size floor(n / 2) (an odd n too); bootstrap has size n wherever it is listed
    and the schemes after it still run; disjoint needs sets * size <= n."""
    for n in (42, 43, 9):
        assert sampling_configs(["disjoint"], None, n) == (("disjoint", n // 2),)
        assert isinstance(sampling_configs(["replacement"], None, n)[0][1], int)
    assert sampling_configs(["bootstrap", "disjoint", "independent"], [4, 6], 20) == (
        ("bootstrap", 20), ("disjoint", 4), ("disjoint", 6), ("independent", 4),
        ("independent", 6))
    assert sampling_configs(["disjoint"], [14], 42, sets=3) == (("disjoint", 14),)
    for sets, size in ((3, 15), (2, 22), (4, 11)):  # sets * size > 42
        assert sets * size > 42
        with pytest.raises(ConfigError, match="subset_sizes"):
            sampling_configs(["disjoint"], [size], 42, sets=sets)
    with pytest.raises(ConfigError, match=r"experiment\.subset_sizes must list at least one"):
        sampling_configs(["disjoint"], [], 42)


def _matrix(x: np.ndarray) -> ScoreMatrix:
    s, n = x.shape
    return ScoreMatrix(x[None], ["AP"], [f"s{i}" for i in range(s)],
                       [str(t) for t in range(n)])


def test_kept_systems_drops_the_lowest_means_from_the_definition():
    """Rule "count": floor(share * systems) systems with the lowest mean go, the earlier one
    first among equal means; shares that drop exactly one system and none."""
    rng = np.random.default_rng(8)
    for s in (2, 3, 4, 5, 8, 10):
        for _ in range(20):
            x = rng.integers(0, 3, (s, 4)) / 4  # many equal means
            m = _matrix(x)
            means = [Fraction(int(v)) for v in (x * 4).sum(axis=1)]
            for share in (0.0, 1 / s, 0.25, 0.5, 0.7, 0.99):
                k = math.floor(share * s + 1e-9)
                order = sorted(range(s), key=lambda i: (means[i], i))
                want = sorted(order[k:])
                assert kept_systems(m, share, "AP", "count").tolist() == want, (x, share)


def _type7(values: list[Fraction], p: float) -> Fraction:
    """R's default quantile (type 7), exact: h = (n - 1) p, x[floor h] + frac(h) (x[...+1]
    - x[floor h]) on the sorted values."""
    v = sorted(values)
    h = (len(v) - 1) * Fraction(p)
    lo = math.floor(h)
    return v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def test_kept_systems_default_is_the_papers_quantile_rule():
    """The default rule (Urbano's code): a system goes when its mean is below R's type-7
    quantile of the means, computed here exactly in fractions; equal means stay or go
    together."""
    rng = np.random.default_rng(9)
    for s in (2, 3, 4, 5, 8, 10, 47):
        for _ in range(20):
            x = rng.integers(0, 3, (s, 4)) / 4
            m = _matrix(x)
            means = [Fraction(int(v), 4) for v in (x * 4).sum(axis=1)]
            for share in (0.0, 1 / s, 0.25, 0.5, 0.7, 0.99):
                q = _type7(means, share)
                want = [i for i in range(s) if means[i] >= q]
                assert kept_systems(m, share, "AP").tolist() == want, (x, share)


def test_compared_systems_accepts_two_and_refuses_one():
    m = _matrix(np.array([[0.5, 0.5], [0.25, 0.0], [1.0, 0.75], [0.0, 0.25]]))
    assert compared_systems(m, 0.5, "AP") == (0, 2)  # 4 systems, 2 left
    with pytest.raises(ConfigError, match=r"error rates need >= 2 systems, 1 left after "
                                          r"experiment\.drop_bottom=0\.75 "
                                          r"\(experiment\.drop_rule=quantile\)"):
        compared_systems(m, 0.75, "AP")
    with pytest.raises(ConfigError, match=r"1 left after .*drop_rule=count\)"):
        compared_systems(m, 0.75, "AP", "count")


@pytest.mark.parametrize("systems", [2, 3, 5, 23, 24])
def test_plan_covers_every_pair_once(systems):
    pairs = len(list(itertools.combinations(range(systems), 2)))
    for shard_items in (1, 256, 10_000):
        plan = PairErrors(configs=(("disjoint", 2),), trials=7).plan(systems, shard_items)
        covered = [i for sh in plan for i in range(*sh.items)]
        assert sorted(covered) == list(range(pairs))
        assert all(sh.reps == (0, 7) for sh in plan)


# -- the kernel against a loop over pairs and trials ------------------------------------------
def sign_p(z: np.ndarray) -> Fraction:
    """Exact two-sided sign test, zero differences dropped: min(1, 2 P(X <= min(k, m-k)))."""
    k, m = int((z > 0).sum()), int((z != 0).sum())
    if m == 0:
        return Fraction(1)
    tail = sum(math.comb(m, i) for i in range(min(k, m - k) + 1))
    return min(Fraction(1), Fraction(2 * tail, 2**m))


def bin_of(lay: tuple[float, int], v: float) -> int:
    width, count = lay
    if math.isinf(v):
        return count - 1
    return min(int(math.floor(v / width + 1e-9)), count - 1)


def rel_of(ma: float, mb: float, d: float) -> float:
    """|d| / min(ma, mb) with d the tie-snapped difference: 0 when d = 0."""
    if d == 0:
        return 0.0
    small = min(ma, mb)
    return abs(d) / small if small > 0 else math.inf


def in_win_exact(p: Fraction | float, lo: float, hi: float) -> bool:
    p = Fraction(p)
    return p <= Fraction(hi) and (p >= 0 if lo == 0 else p > Fraction(lo))


def kernel_reference(x, study: PairErrors, size: int, trials: int, windows, mc_p):
    """Counters of PairErrors.count for one metric and one disjoint configuration, from
    loops: per pair and trial, the means on both sets, the tie-snapped differences, the
    error rule (the order differs: the signs differ, a zero on one side only counts), the
    bins, the sign-test / randomisation p-value windows, the dependency ranks (trials sorted
    by |d| on the first set, earlier trial first among equal ones: |d| rounded to 12
    decimals, so differences that are equal in exact arithmetic but an ulp apart in floats
    tie) and the full-set
    significance at p <= full_alpha."""
    s, n = x.shape
    tol = TIE_RTOL * float(np.abs(x).max())
    idx = subset_indices("disjoint", study.seed, ERROR_STREAM, n, size, 0, trials)
    conds = [("none", 0.0, 1.0)] + [(t, lo, hi) for t in study.tests for lo, hi in windows]
    comps = np.zeros((len(conds), 2, 21), np.int64)
    errs = np.zeros_like(comps)
    dep = np.zeros(trials, np.int64)
    full_pairs = np.zeros((2, 21), np.int64)
    full_sig = np.zeros((len(study.tests), 2, 21), np.int64)
    edge_hits = 0
    pair_no = 0
    for a in range(s):
        for b in range(a + 1, s):
            snap = lambda v: 0.0 if abs(v) <= tol else v  # noqa: E731
            fa, fb = float(np.mean(x[a])), float(np.mean(x[b]))
            fd = snap(fa - fb)
            fbins = (bin_of(ABS_BINS, abs(fd)), bin_of(REL_BINS, rel_of(fa, fb, fd)))
            for kind in range(2):
                full_pairs[kind, fbins[kind]] += 1
            for ti, test in enumerate(study.tests):
                p = sign_p(x[a] - x[b]) if test == "sign" else mc_p[(FULL_STREAM, pair_no)]
                if Fraction(p) <= Fraction(study.full_alpha):
                    for kind in range(2):
                        full_sig[ti, kind, fbins[kind]] += 1
            ranked = []
            for i in range(trials):
                q1, q2 = idx[i, 0], idx[i, 1]
                ma, mb = float(np.mean(x[a, q1])), float(np.mean(x[b, q1]))
                d = snap(ma - mb)
                d2 = snap(float(np.mean(x[a, q2])) - float(np.mean(x[b, q2])))
                err = np.sign(d) != np.sign(d2)
                bins = (bin_of(ABS_BINS, abs(d)), bin_of(REL_BINS, rel_of(ma, mb, d)))
                for w, (test, lo, hi) in enumerate(conds):
                    if test == "sign":
                        p = sign_p(x[a, q1] - x[b, q1])
                        edge_hits += p in (Fraction(lo), Fraction(hi))
                    elif test != "none":
                        p = mc_p[(ERROR_STREAM, pair_no, i)]
                    if test != "none" and not in_win_exact(p, lo, hi):
                        continue
                    for kind in range(2):
                        comps[w, kind, bins[kind]] += 1
                        errs[w, kind, bins[kind]] += err
                ranked.append((round(abs(d), 12), i, err))  # ties in exact arithmetic
            for rank, (_, _, err) in enumerate(sorted(ranked)):
                dep[rank] += err
            pair_no += 1
    return comps, errs, dep, full_pairs, full_sig, edge_hits


def _scores() -> np.ndarray:
    """7 systems x 20 topics, multiples of 1/8 (exact means over 8 topics): many tied
    differences; system 4 scores 0 everywhere and system 5 is 0 but for 1e-12 on one topic
    (the pair (4, 5) is a tie below the tolerance on every set, and its smaller mean is 0);
    system 6 scores 1/8 on five topics, 0 elsewhere (on the full set, the pairs (4, 6) and
    (5, 6) have 5 non-zero differences of one sign: sign-test p = 2/32 = 0.0625)."""
    rng = np.random.default_rng(21)
    x = np.minimum(rng.integers(0, 5, (7, 20)) + np.array([[4], [3], [1], [2], [0], [0], [0]]),
                   8) / 8
    x[4] = 0.0
    x[5] = 0.0
    x[5, 3] = 1e-12
    x[6] = 0.0
    x[6, :5] = 1 / 8
    return x


def test_pair_errors_equal_the_loop_over_pairs_and_trials():
    """Two blocks of trials (260 > 250), sign-test windows whose edges are attainable exact
    p-values (2/64 = 0.03125, 2/256 = 0.0078125, 18/256 = 0.0703125) and a full-set alpha
    equal to one (2/32 = 0.0625), and the randomisation test (Monte Carlo: 2^20 > B) whose
    p-values come from irsim.stats.randomisation_test called here with the study's
    documented options (B = test_B, seed, stream ``error_rates/topics/randomisation`` or
    ``error_rates/full/randomisation``)."""
    x = _scores()
    size, trials, seed, test_b = 8, 260, 13, 40
    windows = ((0.0, 0.0078125), (0.0078125, 0.0703125), (0.03125, 1.0))
    study = PairErrors(configs=(("disjoint", size),), trials=trials,
                       tests=("sign", "randomisation"), windows=windows,
                       full_alpha=0.0625, test_B=test_b, seed=seed, extras=True)
    s, n = x.shape
    out = study.count((0, s * (s - 1) // 2), [np.ascontiguousarray(x)], n)

    idx = subset_indices("disjoint", seed, ERROR_STREAM, n, size, 0, trials)
    mc_p = {}
    pair_no = 0
    for a in range(s):
        for b in range(a + 1, s):
            z = x[a] - x[b]
            mc_p[(FULL_STREAM, pair_no)] = float(randomisation_test(
                z, B=test_b, seed=seed, study=f"{FULL_STREAM}/randomisation").pvalue)
            for i in range(trials):
                mc_p[(ERROR_STREAM, pair_no, i)] = float(randomisation_test(
                    z[idx[i, 0]], B=test_b, seed=seed,
                    study=f"{ERROR_STREAM}/randomisation").pvalue)
            pair_no += 1
    comps, errs, dep, full_pairs, full_sig, edge_hits = kernel_reference(
        x, study, size, trials, windows, mc_p)
    assert edge_hits > 0  # some first-set p-values sit exactly on a window edge
    assert full_sig[0].sum() > 0 and (full_pairs.sum(axis=1) > full_sig[0].sum(axis=1)).all()
    assert sign_p(x[4] - x[6]) == sign_p(x[5] - x[6]) == Fraction(study.full_alpha)
    for kind, name, nb in ((0, "absolute", 21), (1, "relative", 20)):
        np.testing.assert_array_equal(out[f"{name}_comparisons"][0, 0], comps[:, kind, :nb])
        np.testing.assert_array_equal(out[f"{name}_errors"][0, 0], errs[:, kind, :nb])
        np.testing.assert_array_equal(out[f"full_{name}_pairs"][0], full_pairs[kind, :nb])
        np.testing.assert_array_equal(out[f"full_{name}_significant"][0], full_sig[:, kind, :nb])
    np.testing.assert_array_equal(out["dependency_errors"][0, 0], dep)
    pairs = s * (s - 1) // 2
    assert out["dependency_pairs"].tolist() == [[pairs]]
    assert comps[0, 0].sum() == pairs * trials
    # the tie of (4, 5) is in the first relative bin (not the open last one) on every trial
    assert comps[0, 1, 0] >= trials and comps[0, 1, 19] < pairs * trials


def test_one_bottom_share_rule_serves_every_study():
    """irsim.sampling.systems is the one home of the rule: the kit's kept systems, the
    urbano2019 fit's prepared runs and the simulators' quantile rule, against direct
    references (sorted means; numpy's type-7 quantile)."""
    from irsim.sampling.systems import bottom_mask, duplicate_mask
    from irsim.simulate.pair_copula_model import prepare_runs
    from irsim.simulate.pairs import fit_simulator

    rng = np.random.default_rng(7)
    x = rng.random((47, 20))
    x[5] = x[2] + 1e-6  # a duplicate of run 2
    means = x.mean(axis=1)
    # count rule: floor(0.25 * 46) = 11 of the 46 non-duplicates, the lowest means
    keep = prepare_runs(x, drop_duplicates=True, drop_bottom=0.25, drop_rule="count")
    rest = [i for i in range(47) if i != 5]
    lowest = set(sorted(rest, key=lambda i: means[i])[:11])
    assert keep.tolist() == [i in rest and i not in lowest for i in range(47)]
    # quantile rule (the simulators): below the 0.25 quantile of the non-duplicates goes
    q = np.quantile(means[rest], 0.25)
    want = [i in rest and means[i] >= q for i in range(47)]
    assert bottom_mask(means, 0.25, rule="quantile", keep=duplicate_mask(x)).tolist() == want
    # the urbano2019 fit's default is the paper's (quantile) rule
    assert prepare_runs(x, drop_duplicates=True, drop_bottom=0.25).tolist() == want
    sim = fit_simulator(x, drop_duplicates=True, drop_bottom=0.25)
    # 46 runs: the count rule drops floor(11.5) = 11, the quantile rule the 12 below its
    # interpolated quantile (position 11.25)
    assert len(sim.systems) == sum(want) == 34 and len(sim.dropped) == 13
    assert sum(keep) == 35
