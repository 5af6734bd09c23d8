"""Batched resampling kernels shared by the tests in :mod:`irsim.stats` and the studies.

All kernels take many pairs (or systems) at once and a block of resamples given as a count
matrix ``(B, n)`` (how often each topic is drawn in each resample), usually transposed to
``ct = counts.T``, so a block of resampled sums is one GEMM. They hold no randomness (draws
come from :mod:`irsim.sampling`) and no tie rules (counting is :mod:`irsim.stats.ties` and
:func:`irsim.stats.bootstrap.count_t`).

- Paired bootstrap (Sakai 2006): :func:`paired_bootstrap_replicates` (``t*`` itself, the
  plain definition) and :func:`paired_ratio` (``s2 / s1^2``, which orders and counts
  replicates as ``|t*|`` does at one division per replicate; the batched path of
  :func:`irsim.stats.paired_bootstrap` and of the discpower study). :class:`irsim.exact.Exact` lets
  a caller with many pairs of few systems compute ``s1`` exactly from per-system sums.
- Unpaired bootstrap: :func:`unpaired_weights` turns the draws into weights so that
  per-row (or per-system) GEMMs give the parts of every replicate, and
  :func:`unpaired_replicates` combines the parts of the two sides.
- :func:`sample_differences`: pair differences of resampled system scores, exact ties at 0.
- :func:`tukey_ranges`: null ranges of randomised Tukey HSD.
- :func:`resampled_counts`: linear statistics ``lhs @ draw`` (sign-flip sums, shifted
  bootstrap means) counted against the observed ones for several alternatives at once, in
  cache-resident blocks (the randomisation test and the shift bootstrap).
"""

from __future__ import annotations

import numpy as np

from irsim.exact import Exact
from irsim.stats.ties import TIE_RTOL, snap_zero, tie_tolerance

__all__ = [
    "ZERO_VAR_RTOL",
    "GMEAN_EPS",
    "studentized_t",
    "log_scores",
    "gmean_scores",
    "paired_bootstrap_replicates",
    "paired_ratio",
    "unpaired_weights",
    "unpaired_parts",
    "unpaired_replicates",
    "sample_differences",
    "tukey_ranges",
    "tukey_ranges_batched",
    "TUKEY_GEMM_MAX_SYSTEMS",
    "resampled_counts",
    "BLOCK_ROWS",
    "BLOCK_COLS",
]

#: A resample whose variance is below this share of its mean square counts as constant
#: (t* = 0). GEMM sums carry ~n*eps relative error, far below it; real score differences,
#: far above it.
ZERO_VAR_RTOL = 1e-12

#: The constant of Sakai's geometric mean ``exp(mean(log(x + 1e-5)))``.
GMEAN_EPS = 1e-5

#: Resamples whose variance is below this share of their mean square get their sum of
#: differences recomputed directly before the constant-resample rule (see paired_ratio).
_NEAR_CONSTANT = 1e-4

#: Rows x replicates of one GEMM of :func:`resampled_counts`, chosen by measurement (one
#: core, n = 50, L2 of 2 MiB per core): its product (768 KiB), its masks (96 KiB per
#: comparison) and the draws (n x 1024, and BLAS's packed copy) stay in a core's L2 cache
#: while every comparison reads the product; 128 rows (issue 30, session 9: a 1 MiB
#: product) were 2-4% slower in the same runs, wider blocks of draws (64 x 8192, 4 MiB,
#: before issue 30) are compared from L3, at about 3x the cost per comparison. At most
#: 2,040 columns keep the word sums of the masks (255 words per byte lane; wider blocks are
#: counted with ``np.count_nonzero``, slower).
BLOCK_ROWS, BLOCK_COLS = 96, 1024

#: Bytes of one gather of randomised Tukey HSD trials (trials x topics x systems).
_TUKEY_BYTES = 32 * 2**20


def _t_from_sums(s1: np.ndarray, s2: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Studentised t and mean from sums of x and x^2 over n values."""
    mean = s1 / n
    meansq = s2 / n
    var = (s2 - n * mean * mean) / (n - 1)
    constant = var <= ZERO_VAR_RTOL * meansq
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    t[constant] = 0.0
    return t, mean


def studentized_t(z: np.ndarray) -> np.ndarray:
    """One-sample t statistic ``mean(z) / (sd(z) / sqrt(n))`` along the last axis.

    ``sd`` has ddof=1; a constant row has t = 0 (the convention of Sakai's test, where a
    zero-variance sample carries no evidence).

    Examples
    --------
    >>> round(float(studentized_t(np.array([0.1, 0.3, 0.2, 0.4]))), 6)
    3.872983
    >>> float(studentized_t(np.array([0.2, 0.2, 0.2])))
    0.0
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[-1]
    t, _ = _t_from_sums(np.atleast_1d(z.sum(-1)), np.atleast_1d((z * z).sum(-1)), n)
    return t.reshape(z.shape[:-1]) if z.ndim > 1 else t[0]


def log_scores(x: np.ndarray) -> np.ndarray:
    """Per-topic ``log(x + 1e-5)`` (Sakai's AG scores; the logs of the geometric mean).

    Examples
    --------
    >>> np.round(log_scores(np.array([0.0, 1.0])), 4).tolist()
    [-11.5129, 0.0]
    """
    return np.log(np.asarray(x, np.float64) + GMEAN_EPS)


def gmean_scores(x: np.ndarray) -> np.ndarray:
    """Sakai's geometric mean ``exp(mean(log(x + 1e-5)))`` along the last axis.

    Examples
    --------
    >>> round(float(gmean_scores(np.array([0.1, 0.4]))), 6)
    0.200012
    """
    return np.exp(log_scores(x).mean(axis=-1))


# ------------------------------------------------------------------------ paired bootstrap
def paired_bootstrap_replicates(
    w: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Studentised bootstrap replicates of many centred difference vectors.

    The plain definition; :func:`paired_ratio` counts the same replicates without forming
    ``t*``.

    Parameters
    ----------
    w : ndarray, shape (pairs, n)
        Per-topic differences, usually centred (``w = z - mean(z)``, Sakai 2006), so that
        the replicates follow the null hypothesis.
    counts : ndarray, shape (B, n)
        Resample count matrix (row sums n).

    Returns
    -------
    t_star : ndarray, shape (pairs, B)
        ``mean(w*b) / (sd(w*b)/sqrt(n))``; 0 for a constant resample.
    mean_star : ndarray, shape (pairs, B)
        ``mean(w*b)``.

    Examples
    --------
    >>> w = np.array([[0.1, -0.1, 0.3, -0.3]])
    >>> c = np.array([[1., 1., 1., 1.], [2., 0., 2., 0.], [4., 0., 0., 0.]])
    >>> t, m = paired_bootstrap_replicates(w, c)
    >>> np.round(m, 3).tolist(), np.round(t, 4).tolist()
    ([[0.0, 0.2, 0.1]], [[0.0, 3.4641, 0.0]])
    """
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[-1]
    ct = np.ascontiguousarray(np.asarray(counts, dtype=np.float64).T)
    s1 = Exact(w, l1=n).right(ct)
    s2 = Exact(w * w, l1=n).right(ct)
    return _t_from_sums(s1, s2, n)


def paired_ratio(w: np.ndarray, w_sq: np.ndarray, ct: np.ndarray, s1: np.ndarray
                 ) -> np.ndarray:
    """``p = s2 / s1^2`` of the paired studentised bootstrap for a block of pairs x
    resamples: the smaller `p`, the larger ``|t(w*b)|``.

    With ``s1``, ``s2`` the resampled sums of ``w`` and ``w^2``,
    ``t*^2 = (n-1) s1^2 / (n s2 - s1^2) = (n-1) / (n p - 1)``: one division per replicate
    orders and counts replicates as ``|t*|`` does (:func:`irsim.stats.bootstrap.count_t`).
    ``t* = 0`` (``s1 = 0``, or a constant resample: variance at most
    :data:`ZERO_VAR_RTOL` of the mean square, i.e. ``n s2 - s1^2 <= rtol (n-1) s2``) gives
    ``p = inf``.

    ``s2`` is an exact product (:class:`irsim.exact.Exact`: the same on every machine);
    ``s1`` comes in precomputed (exactly, e.g. ``Exact(w, n) @ ct``, or from per-system
    sums, see :meth:`irsim.exact.Exact.parts`). Where the variance is within 1e-4 of the mean square
    (rare: nearly constant resamples, where rounding could decide "constant"), ``s1`` and
    ``s2`` are recomputed exactly from ``w`` so that the rule sees exact sums whatever way
    the caller computed ``s1``.

    Parameters
    ----------
    w : ndarray, shape (pairs, n)
        Centred differences.
    w_sq : ndarray, shape (pairs, n), or Exact
        Their squares (or their split, :class:`irsim.exact.Exact` with ``l1 = n``).
    ct : ndarray, shape (n, B)
        Transposed count matrix of the resamples.
    s1 : ndarray, shape (pairs, B)
        ``w @ ct`` (modified in place where recomputed: its signs stay those of ``t*``).

    Returns
    -------
    ndarray, shape (pairs, B)

    Examples
    --------
    >>> w = np.array([[0.1, -0.1, 0.3, -0.3]])
    >>> ct = np.array([[1., 1., 1., 1.], [2., 0., 2., 0.], [4., 0., 0., 0.]]).T
    >>> p = paired_ratio(w, w * w, ct, w @ ct)
    >>> with np.errstate(divide="ignore"):
    ...     np.round(np.sqrt(3 / (4 * p - 1)), 4).tolist()   # |t*|
    [[0.0, 3.4641, 0.0]]
    """
    n = ct.shape[0]
    l1 = float(ct.sum(axis=0).max()) if ct.size else 1.0  # counts: n for bootstrap draws
    ex_sq = w_sq if isinstance(w_sq, Exact) else Exact(w_sq, l1=l1)
    p = ex_sq.right(ct)  # s2 (exact), then s2 / s1^2 in place
    with np.errstate(divide="ignore", invalid="ignore"):
        p /= s1 * s1
    # nearly constant: n s2 - s1^2 <= c s2 with c = 1e-4 (n-1), i.e. p <= 1 / (n - c);
    # 0/0 (a resample of zeros) is NaN: min() propagates it, and NaN > x is False
    c = _NEAR_CONSTANT * (n - 1)
    limit = 1.0 / (n - c) * (1 + 1e-6)
    if not p.min() > limit:
        pos, b = np.nonzero(~(p > limit))
        cols = ct[:, b].T
        s2 = ex_sq.take(pos).rowdot(cols)
        s1[pos, b] = Exact(np.asarray(w)[pos], l1=l1).rowdot(cols)
        sq = s1[pos, b] * s1[pos, b]
        const = (s2 * n - sq <= s2 * (ZERO_VAR_RTOL * (n - 1))) | (sq == 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            p[pos, b] = np.where(const, np.inf, s2 / sq)
    return p


# ---------------------------------------------------------------------- unpaired bootstrap
def unpaired_weights(first: np.ndarray, second: np.ndarray, n: int, summary: str
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Integer weights and divisors that turn per-row products into unpaired bootstrap
    replicates (:func:`unpaired_parts`).

    Resample ``b`` of the unpaired test draws ``n + m`` positions of ``v = concat(x, y)``;
    ``first`` / ``second`` count the positions of its first n and last m draws. Positions
    ``< n`` are x's topics, the others y's, so with ``w`` the weights of the positions,
    ``M(x*b)`` needs ``x @ w[:n] + y @ w[n:]``: a row's parts depend on the row alone. Many
    pairs of few systems compute them once per system (``scores @ concat([w[:n], w[n:]],
    axis=1)`` when ``n == m``) instead of once per pair.

    Parameters
    ----------
    first, second : ndarray, shape (B, n + m)
    n : int
        Topics of x.
    summary : {"mean", "gmean"}
        ``mean``: one block of B columns, ``(m first - n second) / (n m)``; ``gmean`` (the
        parts are sums of ``log(v + 1e-5)``): two blocks, ``first / n`` and ``second / m``.

    Returns
    -------
    w : ndarray, shape (n + m, B) for ``mean``, (n + m, 2B) for ``gmean``
        The integer numerators, C-contiguous, so ``w[:n]`` (x's positions) and ``w[n:]``
        (y's) are too.
    div : ndarray, shape (B,) or (2B,)
        The divisor of each column.

    Notes
    -----
    The parts are exact sums of scores times integers, divided once
    (:func:`unpaired_parts`): the same floats on every machine.

    Examples
    --------
    >>> first = np.array([[1., 0., 0., 1.]])   # x* = (x1, y2)
    >>> second = np.array([[1., 1., 0., 0.]])  # y* = (x1, x2)
    >>> w, div = unpaired_weights(first, second, 2, "mean")
    >>> w.tolist(), div.tolist()
    ([[0.0], [-2.0], [0.0], [2.0]], [4.0])
    """
    m = first.shape[1] - n
    b = first.shape[0]
    if summary == "mean":
        w = first * m
        w -= second * n
        return np.ascontiguousarray(w.T), np.full(b, float(n * m))
    return (np.ascontiguousarray(np.concatenate([first.T, second.T], axis=1)),
            np.concatenate([np.full(b, float(n)), np.full(b, float(m))]))


def unpaired_parts(values: np.ndarray, w: np.ndarray, div: np.ndarray) -> np.ndarray:
    """``values @ w / div``, the sums exact (:class:`irsim.exact.Exact`).

    Examples
    --------
    >>> first = np.array([[1., 0., 0., 1.]])
    >>> second = np.array([[1., 1., 0., 0.]])
    >>> w, div = unpaired_weights(first, second, 2, "mean")
    >>> unpaired_parts(np.array([[0.1, 0.3]]), w[:2], div).tolist()
    [[-0.15]]
    """
    l1 = float(np.abs(w).sum(axis=0).max()) if w.size else 1.0
    out = Exact(values, l1=l1).right(w)
    out /= div
    return out


def unpaired_replicates(px: np.ndarray, py: np.ndarray, summary: str) -> np.ndarray:
    """Unpaired bootstrap replicates ``M(x*b) - M(y*b)`` from the parts of both sides.

    Parameters
    ----------
    px : ndarray, shape (pairs, B) or (pairs, 2B)
        ``unpaired_parts(x, w[:n], div)`` (:func:`unpaired_weights`) for every pair's x
        (``mean``: scores; ``gmean``: ``log(x + 1e-5)``).
    py : ndarray, same shape
        ``unpaired_parts(y, w[n:], div)``.
    summary : {"mean", "gmean"}

    Returns
    -------
    ndarray, shape (pairs, B)

    Examples
    --------
    >>> x, y = np.array([[0.1, 0.3]]), np.array([[0.2, 0.0]])
    >>> first = np.array([[1., 0., 0., 1.]])          # x* = (0.1, 0.0)
    >>> second = np.array([[1., 1., 0., 0.]])         # y* = (0.1, 0.3)
    >>> w, div = unpaired_weights(first, second, 2, "mean")
    >>> px, py = unpaired_parts(x, w[:2], div), unpaired_parts(y, w[2:], div)
    >>> np.round(unpaired_replicates(px, py, "mean"), 6).tolist()
    [[-0.15]]
    """
    if summary == "mean":
        return px + py
    r = px.shape[1] // 2
    gx = np.exp(px[:, :r] + py[:, :r])
    gy = np.exp(px[:, r:] + py[:, r:])
    return np.subtract(gx, gy, out=gx)


# --------------------------------------------------------------------- resampled systems
def sample_differences(s: np.ndarray, ia: np.ndarray, ib: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Pair differences of per-sample system scores, exact ties set to 0.

    Parameters
    ----------
    s : ndarray, shape (systems, samples)
        ``M(X, Q*b)`` of every system on every sample.
    ia, ib : ndarray of int, shape (pairs,)
        The two systems of each pair.

    Returns
    -------
    d : ndarray, shape (pairs, samples)
        ``M(A, Q*b) - M(B, Q*b)``, 0 where ``|d| <= TIE_RTOL * max(|M(A)|, |M(B)|)`` (a
        difference that is 0 in exact arithmetic comes out of a GEMM as rounding noise).
    top : ndarray, shape (pairs, samples)
        ``max(M(A, Q*b), M(B, Q*b))``.

    Examples
    --------
    >>> s = np.array([[0.3, 0.1 + 0.2], [0.1 + 0.2, 0.25]])
    >>> d, top = sample_differences(s, np.array([0]), np.array([1]))
    >>> np.round(d, 12).tolist(), np.round(top, 12).tolist()
    ([[0.0, 0.05]], [[0.3, 0.3]])
    """
    sa, sb = s[ia], s[ib]
    d = snap_zero(sa - sb, TIE_RTOL * np.maximum(np.abs(sa), np.abs(sb)))
    return d, np.maximum(sa, sb)


def tukey_ranges(st: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``max - min`` of the system means of permuted score matrices (randomised Tukey HSD).

    Parameters
    ----------
    st : ndarray, shape (topics, systems)
        Scores, transposed.
    perm : ndarray of int, shape (trials, topics, systems)
        Per-topic permutations of the systems
        (:func:`~irsim.sampling.permutations.topic_permutations`).

    Returns
    -------
    ndarray, shape (trials,)
        Equal, trial by trial, to :func:`irsim.stats.randomised_tukey_hsd`'s null ranges.

    Examples
    --------
    >>> st = np.array([[0.1, 0.5], [0.2, 0.4]])
    >>> perm = np.array([[[0, 1], [0, 1]], [[1, 0], [0, 1]]])
    >>> np.round(tukey_ranges(st, perm), 6).tolist()
    [0.3, 0.1]
    """
    topic = np.arange(st.shape[0])[None, :, None]
    per = max(1, _TUKEY_BYTES // max(1, 8 * st.size))
    out = np.empty(len(perm))
    for a in range(0, len(perm), per):  # memory chunks of trials (the sums are per trial)
        pm = st[topic, perm[a:a + per]].mean(axis=1)
        out[a:a + per] = pm.max(axis=-1) - pm.min(axis=-1)
    return out


#: :func:`tukey_ranges_batched`: up to this many systems the permuted means of all
#: collections are one GEMM with a 0/1 matrix (m times the additions of a gather, but
#: BLAS-fast); above, a gather (the faster one on one core; the same counts).
TUKEY_GEMM_MAX_SYSTEMS = 24


def tukey_ranges_batched(x: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """:func:`tukey_ranges` of many collections under the same permutations.

    Parameters
    ----------
    x : ndarray, shape (collections, systems, topics)
    perm : ndarray of int, shape (trials, topics, systems)

    Returns
    -------
    ndarray, shape (collections, trials)
        Equal to ``tukey_ranges(x[c].T, perm)`` up to the rounding of a sum in another order
        (far inside :func:`~irsim.stats.ties.tie_tolerance`: counts against it are equal).

    Examples
    --------
    >>> x = np.array([[[0.1, 0.2], [0.5, 0.4]], [[0.3, 0.3], [0.0, 0.6]]])
    >>> perm = np.array([[[0, 1], [0, 1]], [[1, 0], [0, 1]]])
    >>> np.round(tukey_ranges_batched(x, perm), 6).tolist()
    [[0.3, 0.1], [0.0, 0.3]]
    >>> [np.round(tukey_ranges(c.T, perm), 6).tolist() for c in x]
    [[0.3, 0.1], [0.0, 0.3]]
    """
    t, m, n = x.shape
    b = len(perm)
    flat = np.ascontiguousarray(x.transpose(0, 2, 1)).reshape(t, n * m)  # (collections, n m)
    # permutation k, topic j, system s: the score of system perm[k, j, s] on topic j
    index = (np.arange(n, dtype=np.intp)[:, None] * m + perm).reshape(-1)
    out = np.empty((t, b))
    if m <= TUKEY_GEMM_MAX_SYSTEMS:
        ones = np.zeros((n * m, b * m))
        ones[index, np.tile(np.arange(m), n * b) + np.repeat(np.arange(b) * m, n * m)] = 1.0
        per = max(1, _TUKEY_BYTES // (8 * b * m))
        for a in range(0, t, per):
            pm = (flat[a:a + per] @ ones).reshape(-1, b, m) / n
            out[a:a + per] = pm.max(axis=-1) - pm.min(axis=-1)
        return out
    per = max(1, _TUKEY_BYTES // (8 * n * m * b))
    for a in range(0, t, per):
        g = np.take(flat[a:a + per], index, axis=1)
        pm = g.reshape(-1, b, n, m).sum(axis=2) / n  # means over topics
        out[a:a + per] = pm.max(axis=-1) - pm.min(axis=-1)
    return out


def resampled_counts(lhs: np.ndarray, draws: np.ndarray, observed: np.ndarray,
                     alternatives: tuple[str, ...], scale: np.ndarray | float = 0.0, *,
                     center: np.ndarray | None = None, divisor: float | None = None
                     ) -> np.ndarray:
    """Per row of `lhs`, the replicates ``lhs[r] @ draws[b]`` at least as extreme as
    ``observed[r]``, for every alternative, over all draws ``b``.

    Parameters
    ----------
    lhs : ndarray, shape (rows, n)
        E.g. the differences (randomisation: ``draws`` are sign vectors, or the counts of
        bootstrap samples with `center` and `divisor`: the shift bootstrap).
    draws : ndarray, shape (B, n)
        Any real dtype (e.g. small integers: counts kept as ``uint8``).
    observed : ndarray, shape (rows,)
    alternatives : tuple of str
        Counted as :func:`irsim.stats.ties.count_extremes` (ties within the tie tolerance,
        with `scale` as its floor).
    scale : ndarray of shape (rows,) or float
    center : ndarray, shape (n,), optional
        Subtracted from every draw (in float64, block by block) before the product.
    divisor : float, optional
        Every (centred) draw is divided by it: the draws used are exactly
        ``(draws - center) / divisor`` computed elementwise in float64, without materialising
        them for all B.

    Returns
    -------
    ndarray of int64, shape (rows, len(alternatives))

    Notes
    -----
    With ``tol`` the tie tolerance, every count is one of four threshold counts of the
    replicates ``r``: ``r >= obs - tol`` (greater), ``r <= obs + tol`` (less) and, for
    ``a = |obs| - tol > 0``, ``r >= a`` plus ``r <= -a`` (two-sided; every replicate when
    ``a <= 0``). Where ``obs >= 0``, ``a`` *is* ``obs - tol`` (the same float), and where
    ``obs < 0``, ``-a`` is ``obs + tol`` (negation is exact in floating point), so the
    two-sided count shares a comparison with the one-sided ones: rows are grouped by the sign
    of ``obs`` and each group makes only the comparisons it needs (two instead of three per
    replicate for two-sided plus one one-sided alternative and ``obs >= 0``).

    One GEMM per block of :data:`BLOCK_ROWS` rows x :data:`BLOCK_COLS` draws into a
    reused buffer (the draws centred, divided and transposed to contiguous once per column
    block, in place), compared while it is in cache into a reused boolean buffer, whose rows
    are summed as machine words of eight booleans into byte lanes (one uint64 per row and
    comparison; the bytes are summed once per column block). Every buffer, view and block
    is built once per call, so a block costs one GEMM, one ufunc call per comparison and
    one reduction. The counts do not depend on the blocking or on the grouping of rows (an
    entry of the product is the same dot product in any block, and a rounding difference
    is inside the tie tolerance).

    Examples
    --------
    >>> z = np.array([[0.3, -0.1, 0.2]])
    >>> signs = np.array([[1, 1, 1], [-1, 1, 1], [1, -1, -1], [-1, -1, -1.0]])
    >>> resampled_counts(z, signs, z.sum(axis=1), ("two-sided", "greater"),
    ...                  np.abs(z).sum(axis=1)).tolist()    # sums 0.4, -0.2, 0.2, -0.4
    [[2, 1]]
    """
    lhs = np.asarray(lhs, np.float64)
    rows, total = len(lhs), len(draws)
    obs = np.asarray(observed, np.float64).reshape(rows)
    tol = np.broadcast_to(tie_tolerance(obs, np.asarray(scale, np.float64)), (rows,))
    a = np.abs(obs) - tol
    positive, spread = obs >= 0, a > 0
    # the four threshold counts (greater, less, and the two halves of two-sided), by key:
    # (comparison is ">=", threshold)
    rules = {"ge": (True, obs - tol), "le": (False, obs + tol), "ge_a": (True, a),
             "le_a": (False, -a)}
    counts: dict[str, np.ndarray] = {k: np.zeros(rows, np.int64) for k in rules}
    # rows of one sign of obs and one case of a > 0 form a group with its comparisons; its
    # blocks of BLOCK_ROWS rows are "steps", and every (step, comparison, row) has one
    # slot (a row of the count accumulators)
    groups: list[tuple[np.ndarray, list[str], list[tuple[int, np.ndarray, list, int]]]] = []
    slots = 0
    for pos in (True, False):
        for wide in (True, False):
            idx = np.flatnonzero((positive == pos) & (spread == wide))
            keys = set()
            for alt in alternatives:
                if alt in ("greater", "less"):
                    keys.add("ge" if alt == "greater" else "le")
                elif wide:  # two-sided: where obs >= 0, a = obs - tol; else -a = obs + tol
                    keys.update(("ge", "le_a") if pos else ("ge_a", "le"))
            if len(idx) and keys:
                keys_ = sorted(keys)
                sub = np.ascontiguousarray(lhs[idx])
                thr = [rules[k][1][idx][:, None] for k in keys_]
                ufuncs = [np.greater_equal if rules[k][0] else np.less_equal for k in keys_]
                steps = []
                for r0 in range(0, len(idx), BLOCK_ROWS):
                    ops = [(u, t[r0:r0 + BLOCK_ROWS]) for u, t in zip(ufuncs, thr, strict=True)]
                    steps.append((r0, sub[r0:r0 + BLOCK_ROWS], ops, slots))
                    slots += len(keys_) * len(sub[r0:r0 + BLOCK_ROWS])
                groups.append((idx, keys_, steps))
    if slots:
        tally = _Tally(groups, slots, lhs.shape[1], min(BLOCK_ROWS, rows),
                       min(BLOCK_COLS, total))
        for c0 in range(0, total, BLOCK_COLS):
            tally.add(draws[c0:c0 + BLOCK_COLS], center, divisor)
        found = tally.counts()
        for idx, keys_, steps in groups:
            for j, key in enumerate(keys_):
                counts[key][idx] = np.concatenate(
                    [found[s + j * len(sub):s + (j + 1) * len(sub)] for _, sub, _, s in steps])
    out = np.empty((rows, len(alternatives)), np.int64)
    for j, alt in enumerate(alternatives):
        if alt in ("greater", "less"):
            out[:, j] = counts["ge" if alt == "greater" else "le"]
        else:
            both = np.where(positive, counts["ge"] + counts["le_a"],
                            counts["ge_a"] + counts["le"])
            out[:, j] = np.where(spread, both, total)
    return out


class _Tally:
    """The comparisons of :func:`resampled_counts`, block of draws by block of draws.

    Every buffer is allocated once: the draws of a block (transposed, float64), the product
    of a step (at most ``BLOCK_ROWS x BLOCK_COLS`` floats) and its masks (one per
    comparison), with their views per block width. A mask row of ``width`` booleans is
    summed as ``width / 8`` machine words into one uint64 per slot (each of its 8 byte lanes
    counts at most ``width / 8 <= 255`` entries, so no lane carries into the next); after
    every block the lanes are added to an int64 accumulator of ``(slots, 8)``.
    """

    def __init__(self, groups: list, slots: int, n: int, rows: int, width: int) -> None:
        self.groups, self.n = groups, n
        k = max(len(keys) for _, keys, _ in groups)
        self.prod_buf = np.empty(rows * width)
        self.mask_buf = np.empty(k * rows * width, np.bool_)
        self.draws_buf = np.empty(n * width)
        self.lanes = np.zeros(slots, np.uint64)
        self.bytes = np.zeros((slots, 8), np.int64)
        self.plain = np.zeros(slots, np.int64)  # widths that are not whole words
        self.steps: dict[int, list] = {}

    def _steps(self, width: int) -> list:
        """Per step: its rows, product, comparisons with their masks, and where its masks
        are counted (words and lanes, or ``None`` and the plain count's rows)."""
        if width not in self.steps:
            words_ok = width % 8 == 0 and width // 8 <= 255
            steps = []
            for _, keys, group_steps in self.groups:
                k = len(keys)
                for _, sub, ops, s in group_steps:
                    h = len(sub)
                    prod = self.prod_buf[:h * width].reshape(h, width)
                    mask = self.mask_buf[:k * h * width].reshape(k, h, width)
                    compares = [(u, t, mask[j]) for j, (u, t) in enumerate(ops)]
                    flat = mask.reshape(k * h, width)
                    if words_ok:
                        count = (flat.view(np.uint64), self.lanes[s:s + k * h])
                    else:
                        count = (None, (flat, slice(s, s + k * h)))
                    steps.append((sub, prod, compares, count))
            self.steps[width] = steps
        return self.steps[width]

    def add(self, draws: np.ndarray, center: np.ndarray | None, divisor: float | None
            ) -> None:
        """Count one block of draws (shape (width, n)): ``(draws - center) / divisor``,
        elementwise in float64."""
        width = len(draws)
        block_t = self.draws_buf[:self.n * width].reshape(self.n, width)
        np.copyto(block_t, np.asarray(draws).T)  # to float64 (exact for integer draws)
        if center is not None:
            np.subtract(block_t, np.asarray(center, np.float64)[:, None], out=block_t)
        if divisor is not None:
            np.divide(block_t, divisor, out=block_t)
        with np.errstate():  # restores the ufunc buffer size on exit
            # a row of the product is compared with its threshold (a broadcast column) in
            # place only if the ufunc buffer is at most a row long; else numpy copies
            # both through its buffer, 3-4x slower
            np.setbufsize(max(16, min(np.getbufsize(), width // 16 * 16)))
            words = False
            for sub, prod, compares, (w, lanes) in self._steps(width):
                np.matmul(sub, block_t, out=prod)
                for compare, thr, mask in compares:  # every comparison while in cache
                    compare(prod, thr, out=mask)
                if w is not None:  # words of 8 booleans, summed lane by lane
                    np.add.reduce(w, axis=1, out=lanes)
                    words = True
                else:
                    flat, rows = lanes
                    self.plain[rows] += np.count_nonzero(flat, axis=1)
            if words:
                np.add(self.bytes, self.lanes.view(np.uint8).reshape(-1, 8), out=self.bytes)

    def counts(self) -> np.ndarray:
        """The count of every slot so far."""
        return self.bytes.sum(axis=1) + self.plain
