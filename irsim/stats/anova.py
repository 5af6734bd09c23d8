"""Two-way ANOVA without replication, Tukey HSD with topic blocking, randomised Tukey HSD.

Scores are a ``(..., systems, topics)`` matrix: systems are the treatment, topics the
blocks. The multiple-comparison tests return one p-value per system pair ``(i, j)``,
``i < j``, in :func:`numpy.triu_indices` order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.sampling.permutations import topic_permutations
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_alternative,
    data_iv,
    monte_carlo_iv,
)
from irsim.stats.resample import tukey_ranges
from irsim.stats.ties import tie_tolerance

__all__ = [
    "AnovaResult",
    "TukeyHSDResult",
    "anova_two_way",
    "tukey_hsd",
    "randomised_tukey_hsd",
    "studentized_ranges",
]


@dataclass(frozen=True)
class AnovaResult:
    """Two-way ANOVA without replication (systems x topics).

    Attributes
    ----------
    statistic : ndarray
        F for the system effect, ``MS_systems / MS_error``.
    pvalue : ndarray
        Its p-value.
    df_systems, df_topics, df_error : int
    ms_systems, ms_topics, ms_error : ndarray
    f_topics, pvalue_topics : ndarray
        F and p-value of the topic (block) effect.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    df_systems: int
    df_topics: int
    df_error: int
    ms_systems: np.ndarray
    ms_topics: np.ndarray
    ms_error: np.ndarray
    f_topics: np.ndarray
    pvalue_topics: np.ndarray


@dataclass(frozen=True)
class TukeyHSDResult:
    """All pairwise comparisons of systems.

    Attributes
    ----------
    statistic : ndarray, shape (..., pairs)
        ``mean_i - mean_j`` for the pairs ``(first[p], second[p])``.
    pvalue : ndarray, shape (..., pairs)
        Family-wise adjusted p-values.
    first, second : ndarray of int, shape (pairs,)
        System indices of each pair (``first < second``).
    count : ndarray of int or None
        Randomised test: trials with range at least ``|mean_i - mean_j|``.
    n_resamples : int or None
        Randomised test: ``B``.
    ranges : ndarray or None
        Randomised test: the range of the means of every trial, sorted (the null
        distribution; :meth:`critical`).
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    first: np.ndarray
    second: np.ndarray
    count: np.ndarray | None = None
    n_resamples: int | None = None
    ranges: np.ndarray | None = None

    def critical(self, alpha: float = 0.05) -> float:
        """Randomised test: the half-width of the simultaneous ``1 - alpha`` intervals
        ``statistic +- critical``: the ``m``-th largest trial range, ``m = ceil(alpha B)``,
        so an interval excludes 0 exactly when fewer than ``alpha B`` trials reach
        ``|statistic|`` (``count / B < alpha``, up to the tie tolerance).

        Examples
        --------
        >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4],
        ...               [0.6, 0.2, 0.1, 0.3, 0.5]])
        >>> r = randomised_tukey_hsd(s, B=400, seed=1)
        >>> c = r.critical(0.05)
        >>> bool(((np.abs(r.statistic) > c) == (r.count < 0.05 * 400)).all())
        True
        """
        if self.ranges is None:
            raise ValueError("critical() needs a randomised Tukey HSD")
        b = len(self.ranges)
        m = max(int(np.ceil(float(alpha) * b - 1e-9)), 1)
        return float(self.ranges[b - m])


def _scores_iv(scores: object) -> np.ndarray:
    d = data_iv(scores, "scores", min_n=2)
    if len(d.lead) < 1 or d.lead[-1] < 2:
        raise InputError(f"scores must be (..., systems, topics) with >= 2 systems, got "
                         f"shape {d.lead + (d.n,)}")
    return d.values.reshape(d.lead + (d.n,))


def _two_sided_only(alternative: object, test: str) -> None:
    if check_alternative(alternative) != "two-sided":
        raise ConfigError(f"{test} compares all pairs by the range of the means and is "
                          f"two-sided only, got alternative={alternative!r}")


def _anova(a: np.ndarray) -> AnovaResult:
    k, n = a.shape[-2:]
    grand = a.mean(axis=(-2, -1), keepdims=True)
    sys_m = a.mean(axis=-1, keepdims=True)
    top_m = a.mean(axis=-2, keepdims=True)
    ss_sys = n * ((sys_m - grand) ** 2).sum(axis=(-2, -1))
    ss_top = k * ((top_m - grand) ** 2).sum(axis=(-2, -1))
    ss_err = ((a - sys_m - top_m + grand) ** 2).sum(axis=(-2, -1))
    df_s, df_t, df_e = k - 1, n - 1, (k - 1) * (n - 1)
    ms_s, ms_t, ms_e = ss_sys / df_s, ss_top / df_t, ss_err / df_e
    with np.errstate(divide="ignore", invalid="ignore"):
        f_s, f_t = ms_s / ms_e, ms_t / ms_e
    return AnovaResult(f_s[()], sps.f.sf(f_s, df_s, df_e)[()], df_s, df_t, df_e, ms_s[()],
                       ms_t[()], ms_e[()], f_t[()], sps.f.sf(f_t, df_t, df_e)[()])


def anova_two_way(scores: np.ndarray) -> AnovaResult:
    """Two-way ANOVA without replication: system effect with topics as blocks.

    Parameters
    ----------
    scores : array_like, shape (..., systems, topics)
        Leading axes are independent problems (e.g. metrics or topic subsets).

    Returns
    -------
    AnovaResult

    Examples
    --------
    With two systems the F test is the paired t test (``F = t^2``, the same p-value):

    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3]])
    >>> r, t = anova_two_way(s), sps.ttest_rel(s[0], s[1])
    >>> bool(np.isclose(r.statistic, t.statistic**2)), bool(np.isclose(r.pvalue, t.pvalue))
    (True, True)
    >>> r.df_systems, r.df_topics, r.df_error
    (1, 5, 5)
    """
    return _anova(_scores_iv(scores))


def studentized_ranges(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Tukey HSD's statistics without its p-values, batched over leading axes.

    For many score matrices at once (e.g. simulated collections) that are decided against
    a critical value of the studentized range instead of by p-values (each
    :data:`scipy.stats.studentized_range` p-value is a numerical integral).

    Parameters
    ----------
    scores : array_like, shape (..., systems, topics)

    Returns
    -------
    diff : ndarray, shape (..., pairs)
        ``mean_i - mean_j`` in :func:`numpy.triu_indices` order.
    q : ndarray, shape (..., pairs)
        ``|mean_i - mean_j| / sqrt(MS_error / n)``: the numbers :func:`tukey_hsd` turns into
        p-values (the same operations: the same floats); ``inf`` or NaN where
        ``MS_error = 0``.
    df_error : int
        ``(systems - 1)(topics - 1)``.

    Examples
    --------
    ``q >= studentized_range.ppf(1 - alpha, systems, df_error)`` is :func:`tukey_hsd`'s
    ``p <= alpha``:

    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3],
    ...               [0.6, 0.2, 0.1, 0.3, 0.5, 0.2]])
    >>> diff, q, df = studentized_ranges(s)
    >>> df, np.round(diff, 6).tolist()
    (10, [0.183333, 0.116667, -0.066667])
    >>> crit = sps.studentized_range.ppf(0.95, 3, df)
    >>> (q >= crit).tolist(), (tukey_hsd(s).pvalue <= 0.05).tolist()
    ([True, False, False], [True, False, False])
    """
    a = _scores_iv(scores)
    k, n = a.shape[-2:]
    res = _anova(a)
    means = a.mean(axis=-1)
    first, second = np.triu_indices(k, 1)
    diff = means[..., first] - means[..., second]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.abs(diff) / np.sqrt(np.asarray(res.ms_error)[..., None] / n)
    return diff, q, res.df_error


def tukey_hsd(scores: np.ndarray, *, alternative: str = "two-sided") -> TukeyHSDResult:
    """Tukey HSD test of all system pairs with topics as blocks.

    ``q_ij = |mean_i - mean_j| / sqrt(MS_error / n)`` from the two-way ANOVA without
    replication; ``p = P(Q >= q)`` for the studentized range with ``systems`` groups and
    ``(systems-1)(topics-1)`` degrees of freedom (:data:`scipy.stats.studentized_range`).

    Parameters
    ----------
    scores : array_like, shape (..., systems, topics)
    alternative : {"two-sided"}
        The range statistic is two-sided; other values raise ConfigError.

    Returns
    -------
    TukeyHSDResult

    Notes
    -----
    :data:`scipy.stats.studentized_range` integrates every p-value numerically (5-10 ms
    each, to about 1e-11 absolute); p-values are computed once per distinct ``q``, but
    129 systems (8256 pairs) still take about a minute. For many systems
    :func:`randomised_tukey_hsd` is far faster.

    Examples
    --------
    With two systems the studentized range is ``sqrt(2) |t|``: the paired t test's p-value.

    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3]])
    >>> r = tukey_hsd(s)
    >>> r.first.tolist(), r.second.tolist()
    ([0], [1])
    >>> bool(np.isclose(r.pvalue[0], sps.ttest_rel(s[0], s[1]).pvalue, rtol=1e-8))
    True
    """
    _two_sided_only(alternative, "tukey_hsd")
    diff, q, df_error = studentized_ranges(scores)
    k = np.shape(scores)[-2]
    first, second = np.triu_indices(k, 1)
    # scipy integrates each p-value numerically (~5-10 ms each): once per distinct q
    uq, inverse = np.unique(q, return_inverse=True)
    p = sps.studentized_range.sf(uq, k, df_error)[inverse.reshape(q.shape)]
    return TukeyHSDResult(diff, np.minimum(p, 1.0), first, second)


def randomised_tukey_hsd(
    scores: np.ndarray,
    *,
    alternative: str = "two-sided",
    B: int = 1000,
    seed: int = 0,
    study: str = "stats/randomised_tukey_hsd",
    key: tuple[int, ...] = (),
    pvalue_mode: str = "count",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> TukeyHSDResult:
    """Randomised Tukey HSD (Carterette; Sakai): one permutation null for all pairs.

    Each trial permutes every topic's scores across systems independently and records
    ``max_s mean_s - min_s mean_s`` of the permuted matrix; the p-value of pair ``(i, j)``
    is the share of trials whose range is at least ``|mean_i - mean_j|`` (ties within
    :func:`~irsim.stats.ties.tie_tolerance`).

    Parameters
    ----------
    scores : array_like, shape (systems, topics)
    alternative : {"two-sided"}
    B : int
        Trials.
    seed, study, key
        Random stream (:func:`irsim.sampling.permutations.topic_permutations`): trial b
        is the same for any chunking or memory budget.
    pvalue_mode : {"count", "plus_one"}
    memory_budget : int
        Bytes of one chunk of trials (a gather of ``trials x topics x systems``).

    Returns
    -------
    TukeyHSDResult

    Examples
    --------
    With two systems a trial flips the signs of the differences: the exact p-value is the
    share of the ``2^6`` sign patterns with ``|mean| >= |observed mean|``; 2,000 trials are
    within 3 binomial standard errors of it.

    >>> import itertools
    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3]])
    >>> d = s[0] - s[1]
    >>> flips = np.array(list(itertools.product([-1, 1], repeat=6))) @ d
    >>> exact = float(np.mean(np.abs(flips) >= abs(d.sum()) - 1e-12))
    >>> r = randomised_tukey_hsd(s, B=2000, seed=1)
    >>> exact, bool(abs(r.pvalue[0] - exact) < 3 * np.sqrt(exact * (1 - exact) / 2000))
    (0.0625, True)
    """
    _two_sided_only(alternative, "randomised_tukey_hsd")
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode=pvalue_mode,
                        memory_budget=memory_budget, key=key)
    a = _scores_iv(scores)
    if a.ndim != 2:
        raise InputError(f"scores must be (systems, topics), got shape {a.shape}")
    k, n = a.shape
    means = a.mean(axis=-1)
    first, second = np.triu_indices(k, 1)
    diff = means[first] - means[second]
    st = np.ascontiguousarray(a.T)  # (topics, systems)
    ranges = np.empty(mc.B)
    for start, stop in mc.replicate_chunks(3 * 8 * n * k):
        perm = topic_permutations(mc.seed, mc.study, k, n, start, stop, key=mc.key)
        ranges[start:stop] = tukey_ranges(st, perm)
    ranges.sort()
    thr = np.abs(diff) - tie_tolerance(diff, np.abs(means).max())
    count = (mc.B - np.searchsorted(ranges, thr, side="left")).astype(np.int64)
    return TukeyHSDResult(diff, mc.pvalue(count), first, second, count, mc.B, ranges)
