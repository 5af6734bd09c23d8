"""The topic-set samplers and the swap / error-rate studies against a reference that shares
nothing with them: every pair of topic sets a scheme can draw, enumerated from the
definitions of METHODS.md section 4 with its exact probability.

- ``disjoint``: two disjoint sets without replacement (every ordered pair of disjoint
  ``c``-subsets equally likely);
- ``independent``: two ``c``-subsets drawn independently without replacement (every ordered
  pair of ``c``-subsets equally likely; they may overlap);
- ``replacement``: two independent samples of ``c`` topics with replacement (a multiset
  with counts ``k_1..k_n`` has probability ``c! / (k_1! ... k_n!) / n^c``);
- ``bootstrap``: ``replacement`` with ``c = n``.

On small collections (n = 3..6 topics) the enumeration is exhaustive, so the expected value
and the variance of every per-trial count are exact; the study's counts over T trials must lie
within 5 standard errors ``sqrt(T var)`` of ``T * mean`` (exactly equal when the variance is 0).
The loops below write out the bin layouts (absolute: width 0.01, 21 bins; relative: width
5%, 20 bins; the last bin open, a value on an edge in the upper bin), the tie rule (``|d| <=
1e-9 max|x|`` is a tie) and the swap rule (opposite signs, or one difference zero and the other
not) from METHODS.md; nothing is imported from the code under test but the sampler and the
studies themselves.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats as sps

from irsim.data.matrix import ScoreMatrix
from irsim.engine import run_study
from irsim.experiments import Shards
from irsim.experiments import error_rates as er_mod
from irsim.experiments import swap as swap_mod
from irsim.sampling.subsets import subset_indices

SE = 5.0  # standard errors allowed around an exact expectation
ABS = (0.01, 21)
REL = (0.05, 20)


# -- the reference sampler: exhaustive enumeration ----------------------------------------
def multiset_probability(ms: tuple[int, ...], n: int) -> float:
    """P(a sample of len(ms) topics with replacement from n, sorted, equals `ms`)."""
    c = len(ms)
    ways = math.factorial(c)
    for k in Counter(ms).values():
        ways //= math.factorial(k)
    return ways / n ** c


def configurations(scheme: str, n: int, c: int) -> list[tuple[tuple[int, ...],
                                                               tuple[int, ...], float]]:
    """Every (first set, second set, probability) of a trial; sets as sorted tuples."""
    out = []
    if scheme == "disjoint":
        total = math.comb(n, c) * math.comb(n - c, c)
        for a in itertools.combinations(range(n), c):
            rest = [t for t in range(n) if t not in a]
            for b in itertools.combinations(rest, c):
                out.append((a, b, 1.0 / total))
    elif scheme == "independent":
        subsets = list(itertools.combinations(range(n), c))
        for a in subsets:
            for b in subsets:
                out.append((a, b, 1.0 / len(subsets) ** 2))
    else:  # replacement, bootstrap
        ms = [(m, multiset_probability(m, n))
              for m in itertools.combinations_with_replacement(range(n), c)]
        for (a, pa), (b, pb) in itertools.product(ms, ms):
            out.append((a, b, pa * pb))
    assert math.isclose(sum(p for *_, p in out), 1.0, rel_tol=1e-12)
    return out


def test_enumeration_sizes_follow_the_definitions():
    assert len(configurations("disjoint", 6, 2)) == 15 * 6
    assert len(configurations("independent", 5, 2)) == 100
    assert len(configurations("replacement", 4, 2)) == 10 ** 2  # C(5, 2) multisets
    assert len(configurations("bootstrap", 3, 3)) == 10 ** 2
    # 0 shared topics always for disjoint; P(overlap >= 1) for independent = 1 - C(3,2)/C(5,2)
    ind = configurations("independent", 5, 2)
    assert sum(p for a, b, p in ind if set(a) & set(b)) == pytest.approx(1 - 3 / 10)


# -- the sampler against the enumeration ---------------------------------------------------
def assert_frequencies(seen: Counter, prob: dict, T: int) -> None:
    """Every outcome's count within 5 binomial SE of T p, none outside the enumeration, and
    Pearson's chi-square below its 1 - 1e-6 quantile."""
    assert set(seen) <= set(prob), set(seen) - set(prob)
    chi2 = 0.0
    for key, p in prob.items():
        k = seen.get(key, 0)
        assert abs(k - T * p) <= SE * math.sqrt(T * p * (1 - p)), (key, k, T * p)
        chi2 += (k - T * p) ** 2 / (T * p)
    assert chi2 < sps.chi2.isf(1e-6, len(prob) - 1)


@pytest.mark.parametrize("scheme,n,c", [("disjoint", 6, 2), ("independent", 5, 2),
                                        ("replacement", 4, 2), ("bootstrap", 3, 3),
                                        ("disjoint", 5, 1)])
def test_sampler_distribution_equals_the_definition(scheme, n, c):
    """Frequencies of every configuration over T trials: each within 5 binomial SE of T p,
    and Pearson's chi-square below its 1 - 1e-6 quantile; no configuration outside the
    enumeration (e.g. a repeated topic in a disjoint or independent set)."""
    conf = configurations(scheme, n, c)
    prob = {(a, b): p for a, b, p in conf}
    T = 20_000
    idx = subset_indices(scheme, 11, "ref", n, c, 0, T)
    seen = Counter((tuple(sorted(r[0].tolist())), tuple(sorted(r[1].tolist()))) for r in idx)
    assert_frequencies(seen, prob, T)


# -- the swap study against the enumeration ------------------------------------------------
def bin_of(width: float, count: int, v: float) -> int:
    """Bin ``floor(v / width)`` (an edge up to rounding belongs to the upper bin), the last
    bin open (a difference over a zero mean is infinitely large: the last bin)."""
    if v >= count * width:
        return count - 1
    return min(int(math.floor(v / width + 1e-9)), count - 1)


def trial_outcome(x: np.ndarray, q1, q2, tol: float):
    """Per-trial counts of one configuration: comparisons and swaps per absolute and
    relative bin (Sakai's Figure 1, all system pairs), unique topics, overlap, max mean."""
    s = x.shape[0]
    m1 = [sum(float(x[i, t]) for t in q1) / len(q1) for i in range(s)]
    m2 = [sum(float(x[i, t]) for t in q2) / len(q2) for i in range(s)]
    ca, sa = np.zeros(ABS[1]), np.zeros(ABS[1])
    cr, sr = np.zeros(REL[1]), np.zeros(REL[1])
    for a, b in itertools.combinations(range(s), 2):
        d, d2 = m1[a] - m1[b], m2[a] - m2[b]
        d = 0.0 if abs(d) <= tol else d
        d2 = 0.0 if abs(d2) <= tol else d2
        swap = (d > 0 and d2 < 0) or (d < 0 and d2 > 0) or ((d == 0) != (d2 == 0))
        small = min(m1[a], m1[b])
        rel = 0.0 if d == 0 else (abs(d) / small if small > 0 else math.inf)
        j, k = bin_of(*ABS, abs(d)), bin_of(*REL, rel)
        ca[j] += 1
        sa[j] += swap
        cr[k] += 1
        sr[k] += swap
    extra = np.array([len(set(q1)) + len(set(q2)), len(set(q1) & set(q2))], float)
    return np.concatenate([ca, sa, cr, sr, extra]), max(m1 + m2)


def expected(x: np.ndarray, scheme: str, c: int, outcome):
    n = x.shape[1]
    tol = 1e-9 * float(np.abs(x).max())
    rows, probs, best = [], [], -math.inf
    for a, b, p in configurations(scheme, n, c):
        v, mx = outcome(x, a, b, tol)
        rows.append(v)
        probs.append(p)
        best = max(best, mx)
    v, p = np.array(rows), np.array(probs)
    mean = p @ v
    var = p @ (v - mean) ** 2
    return mean, var, best


def assert_within(obs, mean, var, T, what):
    obs = np.asarray(obs, float)
    band = SE * np.sqrt(T * var) + 1e-9 * T
    bad = np.abs(obs - T * mean) > band
    assert not bad.any(), (what, np.flatnonzero(bad), obs[bad], (T * mean)[bad], band[bad])


# 7 systems x 6 topics of a discrete metric (multiples of 0.1: exact ties, differences on bin
# edges, a system with mean 0 on some sets), and a continuous one
DISCRETE = np.array([
    [0.3, 0.5, 0.1, 0.0, 0.4, 0.2],
    [0.2, 0.5, 0.2, 0.1, 0.3, 0.2],
    [0.3, 0.4, 0.0, 0.0, 0.6, 0.1],
    [0.0, 0.1, 0.0, 0.2, 0.0, 0.1],
    [0.3, 0.5, 0.1, 0.0, 0.4, 0.3],
    # ties that need the tolerance: system 0 + 1e-6 on topic 1 (a difference far below any
    # bin, but not a tie), and system 0's values in another order (equal means in exact
    # arithmetic; in floating point the sums differ by rounding)
    [0.3, 0.5 + 1e-6, 0.1, 0.0, 0.4, 0.2],
    [0.3, 0.5, 0.2, 0.0, 0.4, 0.1],
])


def matrix(x: np.ndarray, metric: str = "P@10") -> ScoreMatrix:
    s, n = x.shape
    return ScoreMatrix(x[None].astype(float), [metric], [f"s{i}" for i in range(s)],
                       [str(t + 1) for t in range(n)])


@pytest.mark.parametrize("scheme,c", [("disjoint", 3), ("independent", 2),
                                      ("replacement", 3), ("disjoint", 1)])
def test_swap_counts_equal_the_exhaustive_expectation(scheme, c):
    T = 4000
    m = matrix(DISCRETE)
    study, data = swap_mod.make(swap_mod.Config(sampling=[scheme], subset_sizes=[c], trials=T),
                                m, seed=3, shards=Shards())
    tables, _ = run_study(study, data)
    rates = tables["swap_rates"].to_pandas()
    summ = tables["swap_summary"].to_pandas().iloc[0]
    mean, var, best = expected(DISCRETE, scheme, c, trial_outcome)
    a = rates[rates.bin_kind == "absolute"]
    r = rates[rates.bin_kind == "relative"]
    assert a.bin_lo.round(9).tolist() == [round(0.01 * j, 9) for j in range(21)]
    assert r.bin_lo.round(9).tolist() == [round(0.05 * j, 9) for j in range(20)]
    obs = np.concatenate([a.comparisons, a.swaps, r.comparisons, r.swaps,
                          [summ.mean_unique_topics * 2 * T, summ.mean_overlap * T]])
    assert_within(obs, mean, var, T, (scheme, c))
    assert summ.max_performance == pytest.approx(best, rel=1e-12)


def test_swap_bootstrap_counts_equal_the_exhaustive_expectation():
    x = DISCRETE[:, :4]  # bootstrap on 4 topics: 35^2 configurations
    T = 4000
    study, data = swap_mod.make(swap_mod.Config(sampling=["bootstrap"], trials=T),
                                matrix(x), seed=9, shards=Shards())
    tables, _ = run_study(study, data)
    rates = tables["swap_rates"].to_pandas()
    summ = tables["swap_summary"].to_pandas().iloc[0]
    mean, var, _ = expected(x, "bootstrap", 4, trial_outcome)
    a = rates[rates.bin_kind == "absolute"]
    r = rates[rates.bin_kind == "relative"]
    obs = np.concatenate([a.comparisons, a.swaps, r.comparisons, r.swaps,
                          [summ.mean_unique_topics * 2 * T, summ.mean_overlap * T]])
    assert_within(obs, mean, var, T, "bootstrap")


# -- the error-rate study against the enumeration ------------------------------------------
WINDOWS = ((0.01, 0.05), (0.0, 0.05))


def error_outcome(x: np.ndarray, q1, q2, tol: float):
    """Per trial, for the conditions none / t in (0.01, 0.05] / t in [0, 0.05] (scipy's
    paired t on the first set): comparisons and errors per absolute and relative bin."""
    s = x.shape[0]
    m1 = [sum(float(x[i, t]) for t in q1) / len(q1) for i in range(s)]
    m2 = [sum(float(x[i, t]) for t in q2) / len(q2) for i in range(s)]
    out = np.zeros((3, 2, 2, 21))  # condition, kind, (comparisons, errors), bin
    for a, b in itertools.combinations(range(s), 2):
        d, d2 = m1[a] - m1[b], m2[a] - m2[b]
        d = 0.0 if abs(d) <= tol else d
        d2 = 0.0 if abs(d2) <= tol else d2
        err = (d > 0 and d2 < 0) or (d < 0 and d2 > 0) or ((d == 0) != (d2 == 0))
        small = min(m1[a], m1[b])
        rel = 0.0 if d == 0 else (abs(d) / small if small > 0 else math.inf)
        bins = (bin_of(*ABS, abs(d)), bin_of(*REL, rel))
        z = np.array([x[a, t] - x[b, t] for t in q1])
        p = float(sps.ttest_rel(z, np.zeros_like(z)).pvalue)
        conds = [True] + [(not math.isnan(p)) and p <= hi and (p >= lo if lo == 0 else p > lo)
                          for lo, hi in WINDOWS]
        for w, ok in enumerate(conds):
            if ok:
                for kind in range(2):
                    out[w, kind, 0, bins[kind]] += 1
                    out[w, kind, 1, bins[kind]] += err
    return out.ravel(), 0.0


@pytest.mark.filterwarnings("ignore:Precision loss occurred")  # scipy, constant differences
@pytest.mark.parametrize("scheme,c", [("disjoint", 3),
                                      pytest.param("replacement", 3, marks=pytest.mark.slow)])
def test_error_rates_equal_the_exhaustive_expectation(scheme, c):
    rng = np.random.default_rng(40)
    x = np.round(rng.uniform(0.05, 0.6, size=(4, 7)), 4)
    T = 3000
    study, data = er_mod.make(er_mod.Config(
        sampling=[scheme], subset_sizes=[c], trials=T, tests=["t"],
        windows=[list(w) for w in WINDOWS], drop_bottom=0.0, sd_sizes=[2], sd_samples=2),
        matrix(x, "AP"), seed=4, shards=Shards())
    tables, _ = run_study(study, data)
    er = tables["error_rates"].to_pandas()
    mean, var, _ = expected(x, scheme, c, error_outcome)
    shape = (3, 2, 2, 21)
    mean, var = mean.reshape(shape), var.reshape(shape)
    conds = [("none", 0.0, 1.0)] + [("t", lo, hi) for lo, hi in WINDOWS]
    for w, (test, lo, hi) in enumerate(conds):
        for kind, (name, nb) in enumerate((("absolute", 21), ("relative", 20))):
            rows = er[(er.test == test) & (er.p_lo == lo) & (er.p_hi == hi)
                      & (er.bin_kind == name)]
            assert len(rows) == nb
            obs = np.concatenate([rows.comparisons, rows.errors])
            mu = np.concatenate([mean[w, kind, 0, :nb], mean[w, kind, 1, :nb]])
            va = np.concatenate([var[w, kind, 0, :nb], var[w, kind, 1, :nb]])
            assert_within(obs, mu, va, T, (test, lo, name))
    # the conditioning is not vacuous: some trials fall in each window
    assert mean[1].sum() > 0 and mean[2].sum() > mean[1].sum()


# -- discpower's resampling draws (tests/test_sakai2006.py replays them) against the definitions
@pytest.mark.parametrize("n", [3, 4])
def test_bootstrap_indices_are_n_draws_with_replacement(n):
    """Each bootstrap sample: n topics drawn with replacement (multinomial probabilities of
    the multiset of drawn topics, enumerated)."""
    from irsim.sampling.topics import bootstrap_indices

    T = 20_000
    idx = bootstrap_indices(5, "ref", n, 0, T)
    assert idx.shape == (T, n)
    prob = {m: multiset_probability(m, n)
            for m in itertools.combinations_with_replacement(range(n), n)}
    assert_frequencies(Counter(tuple(sorted(r.tolist())) for r in idx), prob, T)


def test_topic_permutations_are_independent_uniform_per_topic():
    """Per trial and topic a uniform permutation of the systems, independent across topics:
    the 3! x 3! joint outcomes of two topics are equally likely."""
    from irsim.sampling.permutations import topic_permutations

    T = 18_000
    perm = topic_permutations(6, "ref", 3, 2, 0, T)
    assert perm.shape == (T, 2, 3)
    perms = list(itertools.permutations(range(3)))
    prob = {(a, b): 1 / 36 for a in perms for b in perms}
    assert_frequencies(Counter((tuple(r[0].tolist()), tuple(r[1].tolist())) for r in perm),
                       prob, T)
