"""The intervals of average precision under corpus resampling (Cormack & Lynam, SIGIR
2006) after :mod:`irsim.stats.corpus_ap` has resampled it: the small-R correction (silver
bullets for AP = 0, lead balloons for AP = 1, with E(AP) by dynamic programming:
:func:`small_r_bounds`, :func:`small_r_correct`), the replication share ``2 Phi(z/sqrt 2)
- 1`` (:func:`replication_within`), the parametric (delta-method) MAP / L-MAP standard
errors (:func:`map_parametric`) and the normalised difference of the other half's AP to an
interval (:func:`normalised_difference`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.errors import ConfigError
from irsim.stats.corpus_ap import harmonic_numbers

__all__ = [
    "silver_bullet_share",
    "expected_ap_random_ranks",
    "small_r_bounds",
    "small_r_correct",
    "replication_within",
    "logit_sd_from_interval",
    "map_parametric",
    "normalised_difference",
]


# ----------------------------------------------------------------------------- small R


def silver_bullet_share(R: np.ndarray | int, alpha: float = 0.05) -> np.ndarray:
    """Upper confidence limit of the share of relevant documents a system could find but
    none of whose ``R`` sampled ones it found: the smallest ``u`` with ``(1-u)^R <=
    alpha``, i.e. ``u = 1 - alpha^(1/R)`` (also the lead-balloon share for AP = 1).

    Examples
    --------
    >>> u = float(silver_bullet_share(4, 0.05))
    >>> bool(np.isclose((1 - u) ** 4, 0.05))
    True
    """
    r = np.asarray(R, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(r > 0, 1.0 - alpha ** (1.0 / np.maximum(r, 1.0)), 1.0)


def expected_ap_random_ranks(R: int, n: int, random: np.ndarray, top: np.ndarray
                             ) -> np.ndarray:
    """E(AP) when `random` relevant documents sit at uniformly random distinct ranks of
    ``1..n`` and `top` more fill the best remaining ranks (AP over ``R``), by dynamic
    programming over ranks.

    The state after rank ``r`` is the number ``b`` of random documents among ranks
    ``1..r``; rank ``r+1`` holds one of the remaining ``random - b`` with probability
    ``(random - b)/(n - r)``; precision at a relevant rank is (random so far + top placed so
    far) / rank. Once ``r0 = top + random`` ranks are done every top document is placed,
    and the remaining ``m = random - b`` documents are uniform on the ``N = n - r0`` ranks
    left, which closes the sum: ``E = (m/N) [(top + b + 1) D + (m-1)/(N-1) (N - (r0+1) D)]``
    with ``D = H(n) - H(r0)``. So the loop runs over at most ``top + random`` ranks.
    Vectorised over the entries of `random` / `top`.

    Parameters
    ----------
    R : int
        Normaliser of AP (relevant documents of the topic).
    n : int
        Ranks available (``random + top <= n``).
    random, top : ndarray of int, same shape

    Returns
    -------
    ndarray
        E(AP) per entry.

    Examples
    --------
    One relevant document at a uniformly random rank of 4: E(1/rank) = H(4)/4.

    >>> float(expected_ap_random_ranks(1, 4, np.array([1]), np.array([0]))[0])
    0.5208333333333333
    >>> float(expected_ap_random_ranks(2, 5, np.array([0]), np.array([2]))[0])
    1.0
    """
    j = np.asarray(random, np.int64).ravel()
    t = np.asarray(top, np.int64).ravel()
    if (j + t > n).any() or (j < 0).any() or (t < 0).any():
        raise ConfigError(f"need 0 <= random + top <= n = {n}")
    width = int(j.max()) + 2 if len(j) else 2
    prob = np.zeros((len(j), width))
    prob[:, 0] = 1.0
    b = np.arange(width, dtype=np.float64)[None, :]
    jj, tt = j[:, None].astype(np.float64), t[:, None].astype(np.float64)
    total = np.zeros(len(j))
    r0 = int((j + t).max()) if len(j) else 0
    for r in range(1, r0 + 1):  # dynamic programming over the first ranks (not samples)
        before = r - 1 - b                         # non-random ranks above r
        p_rand = np.clip((jj - b) / (n - r + 1), 0.0, 1.0)
        placed_top = np.minimum(tt, np.maximum(before, 0.0))
        prec_rand = (b + 1.0 + placed_top) / r
        is_top = (before < tt) & (before >= 0)
        total += (prob * (p_rand * prec_rand + (1.0 - p_rand) * is_top)).sum(axis=1)
        moved = prob * p_rand
        prob = prob - moved
        prob[:, 1:] += moved[:, :-1]
    left = n - r0                                   # the tail, in closed form
    if left > 0:
        h = harmonic_numbers(n)
        d = h[n] - h[r0]
        m = np.maximum(jj - b, 0.0)
        pair = (m - 1.0) / (left - 1) * (left - (r0 + 1) * d) if left > 1 else 0.0 * m
        tail = m / left * ((tt + b + 1.0) * d + pair)
        total += (prob * tail).sum(axis=1)
    return total / R


def _silver_upper(R: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """E(AP) with Binomial(R, u) silver bullets at random ranks of 1..n (closed form of
    :func:`expected_ap_random_ranks` with ``top = 0``, mixed over the binomial):
    ``E[AP | j] = j/(n R) (H_n + (j-1)(n - H_n)/(n-1))``, so
    ``E[AP] = (u/n) (H_n + (R-1) u (n - H_n)/(n-1))``."""
    u = silver_bullet_share(R, alpha)
    nf = n.astype(np.float64)
    hn = harmonic_numbers(int(n.max()) if n.size else 1)[n]
    with np.errstate(divide="ignore", invalid="ignore"):
        second = np.where(n > 1, (R - 1) * u * (nf - hn) / (nf - 1.0), 0.0)
    return u / nf * (hn + second)


@lru_cache(maxsize=4096)
def _lead_lower(R: int, n: int, alpha: float) -> float:
    """E(AP) with Binomial(R, u) lead balloons at random ranks and the other relevant
    documents at the top (dynamic programming, mixed over the binomial)."""
    u = float(silver_bullet_share(R, alpha))
    j = np.arange(R + 1)
    pmf = sps.binom.pmf(j, R, u)
    keep = pmf > 1e-17 * pmf.max()
    e = expected_ap_random_ranks(R, n, j[keep], R - j[keep])
    return float((pmf[keep] * e).sum() / pmf[keep].sum())


def small_r_bounds(R: np.ndarray, length: np.ndarray, alpha: float = 0.05
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The silver-bullet upper limit (for AP = 0) and lead-balloon lower limit (AP = 1).

    ``u = 1 - alpha^(1/R)`` (:func:`silver_bullet_share`); a new corpus holds
    ``j ~ Binomial(R, u)`` such documents. Silver bullets (AP = 0): the system would rank
    them at uniformly random ranks of ``1..n``, the other relevant documents not at all.
    Lead balloons (AP = 1): the system ranks them at uniformly random ranks, the others at
    the top. The limits are the E(AP) of these worst cases
    (:func:`expected_ap_random_ranks`); ``n = max(L, R)``.

    Returns
    -------
    upper_if_zero, lower_if_one : ndarray

    Examples
    --------
    With ``R = 1`` (``u = 0.95``) the sampled relevant document is a silver bullet (or a
    lead balloon) with probability 0.95, at a uniform rank of 1..1000 (``E(AP) = H(1000) /
    1000``); otherwise AP is 0 (or 1):

    >>> up, low = small_r_bounds(np.array([1]), np.array([1000]))
    >>> h = sum(1 / k for k in range(1, 1001)) / 1000
    >>> bool(np.isclose(up[0], 0.95 * h)), bool(np.isclose(low[0], 0.05 + 0.95 * h))
    (True, True)
    """
    R = np.asarray(R, np.int64)
    n = np.maximum(np.asarray(length, np.int64), np.maximum(R, 1))
    upper = np.where(R > 0, _silver_upper(R, n, alpha), 0.0)
    lower = np.ones(R.shape)
    pairs = np.unique(np.stack([R.ravel(), n.ravel()], axis=1), axis=0)
    lookup = {(int(r), int(m)): (_lead_lower(int(r), int(m), float(alpha)) if r > 0 else 1.0)
              for r, m in pairs}
    lower.ravel()[:] = [lookup[(int(r), int(m))] for r, m in zip(R.ravel(), n.ravel(),
                                                                 strict=True)]
    return upper, lower


def small_r_correct(
    ap: np.ndarray, low: np.ndarray, high: np.ndarray, R: np.ndarray, length: np.ndarray,
    alpha: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Widen intervals for AP near 0 or 1 (Cormack & Lynam's small-R correction).

    When AP is within the interval the AP = 0 model gives (``AP <= upper_if_zero``), the
    interval becomes the union with ``[0, upper_if_zero]``; likewise with
    ``[lower_if_one, 1]`` when ``AP >= lower_if_one``. Lead-balloon limits (dynamic
    programming) are computed only for lists that can qualify (``AP >= 1 - u``).

    Examples
    --------
    AP = 0 and AP = 1 get the union with the limits of :func:`small_r_bounds`; AP = 0.2 is
    left as it is:

    >>> lo, hi = small_r_correct(np.array([0.0, 0.2, 1.0]), np.array([0.0, 0.1, 1.0]),
    ...                          np.array([0.0, 0.3, 1.0]), np.array([4, 4, 4]),
    ...                          np.array([1000, 1000, 1000]))
    >>> up, low = small_r_bounds(np.array([4]), np.array([1000]))
    >>> lo.tolist() == [0.0, 0.1, low[0]], hi.tolist() == [up[0], 0.3, 1.0]
    (True, True)
    """
    ap = np.asarray(ap, np.float64)
    R = np.asarray(R, np.int64)
    length = np.asarray(length, np.int64)
    low = np.array(low, np.float64, copy=True)
    high = np.array(high, np.float64, copy=True)
    n = np.maximum(length, np.maximum(R, 1))
    upper = np.where(R > 0, _silver_upper(R, n, alpha), 0.0)
    near0 = ap <= upper
    low[near0] = np.minimum(low[near0], 0.0)
    high[near0] = np.maximum(high[near0], upper[near0])
    u = silver_bullet_share(R, alpha)
    maybe1 = np.flatnonzero((ap >= 1.0 - u) & (R > 0))
    if maybe1.size:
        _, lower = small_r_bounds(R[maybe1], length[maybe1], alpha)
        hit = maybe1[ap[maybe1] >= lower]
        low[hit] = np.minimum(low[hit], lower[ap[maybe1] >= lower])
        high[hit] = np.maximum(high[hit], 1.0)
    return low, high


# ----------------------------------------------------------------------------- summaries


def replication_within(confidence_level: float = 0.95) -> float:
    """Share of replications expected inside a normal interval ``est +- z sigma`` built
    from another, independent replication with the same sigma: ``2 Phi(z/sqrt 2) - 1``.

    Examples
    --------
    ``est' - est`` is normal with sd ``sigma sqrt 2``: ``P(chi2_1 <= z^2 / 2)``.

    >>> z = sps.norm.ppf(0.975)
    >>> bool(np.isclose(replication_within(0.95), sps.chi2.cdf(z**2 / 2, 1)))
    True
    """
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"confidence_level must be in (0, 1), got {confidence_level}")
    z = special.ndtri(0.5 + confidence_level / 2.0)
    return float(2.0 * special.ndtr(z / math.sqrt(2.0)) - 1.0)


def logit_sd_from_interval(low: np.ndarray, high: np.ndarray, confidence_level: float = 0.95,
                           eps: float = 1e-5) -> np.ndarray:
    """The logit-scale sd an interval implies: ``(logit(high) - logit(low)) / (2 z)``, limits
    clamped to ``[eps, 1 - eps]`` (for the logit interval itself this is its sd).

    Examples
    --------
    >>> lo, hi = special.expit(-1 - 1.96 * 0.5), special.expit(-1 + 1.96 * 0.5)
    >>> round(float(logit_sd_from_interval(lo, hi)), 3)
    0.5
    """
    z = special.ndtri(0.5 + confidence_level / 2.0)
    lo = special.logit(np.clip(low, eps, 1.0 - eps))
    hi = special.logit(np.clip(high, eps, 1.0 - eps))
    return (hi - lo) / (2.0 * z)


def map_parametric(ap: np.ndarray, sd_logit: np.ndarray, *, eps: float = 1e-5,
                   axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MAP and L-MAP with standard errors from per-topic logit-model sds (delta method).

    ``var(MAP) = sum_t sd_t^2 (AP_t - AP_t^2)^2 / n^2`` (``d AP / d logit(AP) = AP(1 -
    AP)``), ``var(L-MAP) = sum_t sd_t^2 / n^2``; AP clamped to ``[eps, 1 - eps]`` for the
    logit and the weight.

    Returns
    -------
    map, se_map, lmap, se_lmap : ndarray

    Examples
    --------
    ``AP(1 - AP)`` is 0.16 and 0.25; ``(logit 0.2 + logit 0.5) / 2 = -log 2``:

    >>> m, se, lm, sel = map_parametric(np.array([0.2, 0.5]), np.array([0.4, 0.2]))
    >>> want = [0.35, np.sqrt((0.4 * 0.16) ** 2 + (0.2 * 0.25) ** 2) / 2, -np.log(2),
    ...         np.sqrt(0.4**2 + 0.2**2) / 2]
    >>> bool(np.allclose([m, se, lm, sel], want))
    True
    """
    ap = np.asarray(ap, np.float64)
    sd = np.asarray(sd_logit, np.float64)
    n = ap.shape[axis]
    c = np.clip(ap, eps, 1.0 - eps)
    w = (c - c * c) ** 2
    se_map = np.sqrt((sd**2 * w).sum(axis=axis)) / n
    se_lmap = np.sqrt((sd**2).sum(axis=axis)) / n
    return ap.mean(axis=axis), se_map, special.logit(c).mean(axis=axis), se_lmap


def normalised_difference(ap_other: np.ndarray, ap: np.ndarray, low: np.ndarray,
                          high: np.ndarray) -> np.ndarray:
    """``AP_other - AP`` scaled so that the interval ``[low, high]`` maps to ``[-1, 1]`` with
    ``AP`` at 0 (Cormack & Lynam's Figures 1-2): ``d / (high - AP)`` above, ``d / (AP -
    low)`` below. ``AP`` is first clipped into the interval (a logit interval of AP = 0 does
    not contain 0), so ``|x| <= 1`` exactly when ``AP_other`` is within; ``+-inf`` beyond a
    zero-width side, 0 when equal.

    Examples
    --------
    >>> normalised_difference(np.array([0.5, 0.1, 0.3]), np.array([0.3] * 3),
    ...                       np.array([0.2] * 3), np.array([0.4] * 3)).round(3).tolist()
    [2.0, -2.0, 0.0]
    >>> normalised_difference(np.array([0.0]), np.array([0.0]), np.array([1e-5]),
    ...                       np.array([2e-5])).tolist()
    [-inf]
    """
    centre = np.clip(ap, low, high)
    d = ap_other - centre
    with np.errstate(divide="ignore", invalid="ignore"):
        up = d / (high - centre)
        down = d / (centre - low)
    return np.where(d > 0, up, np.where(d < 0, down, 0.0))
