"""Prediction-powered inference: a proxy labels everything, people label a sample.

A cheap proxy (an LLM, a crowd, an automatic judge) gives a prediction ``f`` on every unit;
people give the gold value ``y`` on a sample of ``n`` of them. Prediction-powered inference
(PPI; Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, Science 2023) estimates the mean of
``y`` as the proxy's mean corrected by the mean *rectifier* ``y - f`` on the labelled
sample; PPI++ (Angelopoulos, Duchi and Zrnic 2023) weights the proxy by a power-tuning
``lam`` (``lam = 0``: gold only; ``lam = 1``: PPI):

    ``theta_hat(lam) = lam * mean(f over the unlabelled) + mean(y - lam * f over the sample)``

Two sampling models:

``population="infinite"`` (ppi-python's ``ppi_mean_ci``, the papers' model)
    Labelled and unlabelled units are independent draws from an infinite population:
    ``var = lam^2 var(f_unlabelled) / N + var(y - lam f) / n`` (``ddof=0``), a normal
    interval; the tuned ``lam`` is ppi-python's (``cov(y, f) / ((1 + n/N) var(f))``
    clipped to [0, 1], the variance of ``f`` over both sets).
``population="finite"`` (what an evaluation collection is)
    The units are a finite population of ``N`` (the collection's topics, or its pool of
    (topic, document) pairs), the proxy labels *all* of them (the sample included) and the
    sample is drawn without replacement. The proxy's mean over the population is then known
    exactly and contributes no variance; the rectifier's sample mean has the design variance
    of simple random sampling without replacement,
    ``var = (1 - n/N) s^2(y - lam f) / n`` (``ddof=1``; the survey-sampling *difference
    estimator*, with a tuned ``lam`` the *regression estimator*). The tuned weight
    minimises that variance: ``lam = s(y, f) / s^2(f)``, clipped to [0, 1] as PPI++ does.
    With ``n = N`` the variance is 0: the gold mean is known.

Stratified PPI (:func:`stratified`) adds strata (by proxy grade, by topic, by the
proxy's topic score) with a tuned ``lam`` per stratum (Fisch et al. 2024) and
``var = sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h``; :func:`neyman_allocation` spreads a budget
over strata in proportion to ``N_h S_h`` (Neyman 1934).

Every function here works on *sample moments* (:class:`Moments`: the sums of ``y``,
``f``, their squares and products over each sample), so the study kernels compute those
sums once per trial for every system and pair (one sparse product each) and these
functions turn them into estimates for many trials and items at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.stats.ci import CIResult, ConfidenceInterval
from irsim.stats.ties import TIE_RTOL

__all__ = ["Moments", "ppi_mean", "finite_ppi", "tuned_lambda", "stratified",
           "neyman_allocation", "PPI_METHODS"]

#: The estimators of a mean from a proxy and a gold sample, by name.
PPI_METHODS = ("proxy", "gold", "ppi", "ppi_pp", "stratified")


@dataclass(frozen=True)
class Moments:
    """Sums over a sample of gold values ``y`` and proxy values ``f`` (any shape, e.g.
    ``(trials, items)``): ``n``, ``sum y``, ``sum y^2``, ``sum f``, ``sum f^2``,
    ``sum y f``.

    Examples
    --------
    >>> m = Moments.of(np.array([1., 2, 4]), np.array([1., 1, 3]))
    >>> float(m.var_y), float(m.cov), float(m.var_f)
    (2.333333333333334, 1.666666666666667, 1.333333333333333)
    """

    n: np.ndarray
    sy: np.ndarray
    syy: np.ndarray
    sf: np.ndarray
    sff: np.ndarray
    syf: np.ndarray

    @classmethod
    def of(cls, y: np.ndarray, f: np.ndarray, axis: int = 0) -> Moments:
        """The moments of the values along `axis`."""
        y, f = np.asarray(y, np.float64), np.asarray(f, np.float64)
        return cls(np.asarray(y.shape[axis], np.float64), y.sum(axis), (y * y).sum(axis),
                   f.sum(axis), (f * f).sum(axis), (y * f).sum(axis))

    def _centred(self, sxy: np.ndarray, sx: np.ndarray, sy: np.ndarray, sxx: np.ndarray,
                 syy: np.ndarray) -> np.ndarray:
        """``(sum xy - sum x sum y / n) / (n - 1)``, 0 where it is within the tie rule's
        tolerance of the raw second moments (``TIE_RTOL * sqrt(sum x^2 sum y^2)``): a
        variance that is 0 in exact arithmetic (a constant sample) is 0 on every CPU, not
        the rounding error of two large sums."""
        with np.errstate(invalid="ignore", divide="ignore"):
            c = (sxy - sx * sy / self.n) / (self.n - 1)
            scale = np.sqrt(np.abs(sxx * syy)) / (self.n - 1)
        return np.where(np.abs(c) <= TIE_RTOL * scale, 0.0, c)

    @property
    def mean_y(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sy / self.n

    @property
    def mean_f(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sf / self.n

    @property
    def var_y(self) -> np.ndarray:
        """Sample variance of ``y`` (ddof=1), never below 0."""
        return np.maximum(self._centred(self.syy, self.sy, self.sy, self.syy, self.syy), 0.0)

    @property
    def var_f(self) -> np.ndarray:
        """Sample variance of ``f`` (ddof=1), never below 0."""
        return np.maximum(self._centred(self.sff, self.sf, self.sf, self.sff, self.sff), 0.0)

    @property
    def cov(self) -> np.ndarray:
        """Sample covariance of ``y`` and ``f`` (ddof=1)."""
        return self._centred(self.syf, self.sy, self.sf, self.syy, self.sff)

    def rectifier(self, lam: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Mean and sample variance (ddof=1) of ``y - lam f``."""
        lam = np.asarray(lam, np.float64)
        mean = self.mean_y - lam * self.mean_f
        vy, cov, vf = self.var_y, self.cov, self.var_f
        var = vy - 2.0 * lam * cov + lam * lam * vf
        # y - lam f constant on the sample: 0, by the tie rule (not a rounding residue)
        scale = vy + 2.0 * np.abs(lam * cov) + lam * lam * vf
        return mean, np.where(var <= TIE_RTOL * scale, 0.0, var)


def tuned_lambda(m: Moments) -> np.ndarray:
    """The power-tuning weight of the finite-population estimator:
    ``s(y, f) / s^2(f)`` clipped to [0, 1] (1 where the proxy does not vary on the
    sample: the variance then does not depend on it)."""
    var_f = m.var_f
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(var_f > 0, m.cov / np.where(var_f > 0, var_f, 1.0), 1.0)
    return np.clip(lam, 0.0, 1.0)


def finite_ppi(m: Moments, pop_mean_f: np.ndarray, N: np.ndarray | float,
               lam: np.ndarray | float | None = 1.0) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """The finite-population PPI estimate of the mean of ``y`` over ``N`` units.

    Parameters
    ----------
    m : Moments
        Sums over a simple random sample without replacement of ``n`` of the ``N`` units.
    pop_mean_f : array_like
        The proxy's mean over all ``N`` units (the sample included).
    N : array_like
        Population size.
    lam : float, array or None
        Weight of the proxy: 0 is the gold-only mean, 1 PPI, None the tuned weight
        (:func:`tuned_lambda`).

    Returns
    -------
    estimate, variance, lam : ndarray
        ``lam * pop_mean_f + mean(y - lam f)``, its design variance
        ``(1 - n/N) s^2(y - lam f) / n`` and the weight used.

    Examples
    --------
    >>> y, f = np.array([0.5, 0.7, 0.2]), np.array([0.4, 0.8, 0.1])
    >>> est, var, lam = finite_ppi(Moments.of(y, f), pop_mean_f=0.45, N=6)
    >>> round(float(est), 6), round(float(var), 8)
    (0.483333, 0.00222222)
    """
    lam_v = tuned_lambda(m) if lam is None else np.broadcast_to(
        np.asarray(lam, np.float64), np.shape(m.sy))
    mean_r, var_r = m.rectifier(lam_v)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (1.0 - m.n / N) * var_r / m.n
    return lam_v * pop_mean_f + mean_r, np.maximum(var, 0.0), lam_v


def stratified(moments: list[Moments], pop_mean_f: np.ndarray, sizes: np.ndarray,
               tuned: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The stratified PPI estimate of the population mean and its design variance.

    Parameters
    ----------
    moments : list of Moments
        One per stratum ``h`` (its sample's sums, each of the same shape).
    pop_mean_f : ndarray, shape (H, ...)
        The proxy's mean over each stratum.
    sizes : ndarray, shape (H,)
        Stratum sizes ``N_h``.
    tuned : bool
        A tuned ``lam`` per stratum (:func:`tuned_lambda`); else ``lam = 1``.

    Returns
    -------
    estimate, variance : ndarray
        ``sum_h W_h theta_h`` and ``sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h`` with
        ``W_h = N_h / N``.

    Examples
    --------
    >>> y1, f1 = np.array([0.5, 0.7]), np.array([0.4, 0.8])
    >>> y2, f2 = np.array([0.1, 0.3, 0.2]), np.array([0.0, 0.2, 0.2])
    >>> est, var = stratified([Moments.of(y1, f1), Moments.of(y2, f2)],
    ...                       np.array([0.6, 0.1]), np.array([4, 6]), tuned=False)
    >>> round(float(est), 6), round(float(var), 8)
    (0.34, 0.001)
    """
    sizes = np.asarray(sizes, np.float64)
    W = sizes / sizes.sum()
    est = 0.0
    var = 0.0
    for h, m in enumerate(moments):  # strata (a handful), each vectorised over trials/items
        e, v, _ = finite_ppi(m, pop_mean_f[h], sizes[h], None if tuned else 1.0)
        est = est + W[h] * e
        var = var + W[h] ** 2 * v
    return np.asarray(est), np.asarray(var)


def neyman_allocation(n: np.ndarray | int, sizes: np.ndarray, sd: np.ndarray,
                      minimum: np.ndarray | int = 2) -> np.ndarray:
    """Integer Neyman allocation of `n` units over strata, many budgets at once.

    ``n_h`` proportional to ``N_h S_h``, at least ``minimum`` (or the whole stratum when it
    is smaller) and at most ``N_h``: strata that hit a bound are fixed there and the rest
    reallocated among the others until none does; integers by largest remainders.

    Parameters
    ----------
    n : int or ndarray, shape (R,)
        Units to allocate (per row).
    sizes : ndarray, shape (H,)
        Stratum sizes ``N_h``.
    sd : ndarray, shape (R, H) or (H,)
        Standard deviations ``S_h`` (estimated, e.g. from a pilot sample); a stratum with
        ``S_h = 0`` gets its minimum.
    minimum : int or ndarray, shape (R, H) or (H,)
        Lower bounds (e.g. a pilot already drawn).

    Returns
    -------
    ndarray of int64, shape (R, H)
        The allocation; each row sums to ``min(n, sum N_h)``.

    Examples
    --------
    >>> neyman_allocation(10, np.array([10, 10, 10]), np.array([1.0, 2.0, 7.0])).tolist()
    [[2, 2, 6]]
    >>> neyman_allocation(20, np.array([10, 10, 10]), np.array([1.0, 2.0, 7.0])).tolist()
    [[3, 7, 10]]
    """
    sizes = np.asarray(sizes, np.int64)
    H = len(sizes)
    sd = np.atleast_2d(np.asarray(sd, np.float64))
    R = max(sd.shape[0], np.size(n))
    sd = np.broadcast_to(sd, (R, H))
    total = np.minimum(np.broadcast_to(np.asarray(n, np.int64), (R,)), sizes.sum())
    lo = np.minimum(np.broadcast_to(np.asarray(minimum, np.int64), (R, H)), sizes)
    hi = np.broadcast_to(sizes, (R, H)).astype(np.float64)
    free = np.ones((R, H), bool)
    alloc = lo.astype(np.float64)
    for _ in range(2 * H + 1):  # bound-fixing passes (one stratum more at least per pass)
        fixed = np.where(free, 0.0, alloc).sum(axis=1)
        left = total - fixed
        w = np.where(free, sizes * sd, 0.0)
        wsum = w.sum(axis=1, keepdims=True)
        nfree = free.sum(axis=1, keepdims=True)
        share = np.where(wsum > 0, w / np.where(wsum > 0, wsum, 1.0),
                         free / np.maximum(nfree, 1))
        prop = share * left[:, None]
        new = np.where(free, np.clip(prop, lo, hi), alloc)
        over, under = free & (prop > hi), free & (prop < lo)
        alloc = new
        if not (over.any() or under.any()):
            break
        # fix the strata above their size first (what they cannot take goes to the
        # others, which may lift those below their minimum); only then those below
        hit = np.where(over.any(axis=1, keepdims=True), over, under)
        free = free & ~hit
    base = np.floor(alloc + 1e-9).astype(np.int64)
    short = total - base.sum(axis=1)
    rem = np.where(base < hi, alloc - base, -1.0)
    order = np.argsort(-rem, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(H)[None, :].repeat(R, 0), axis=1)
    return base + (rank < short[:, None]).astype(np.int64)


@dataclass(frozen=True)
class PPIResult(CIResult):
    """A PPI interval per column: :class:`~irsim.stats.ci.CIResult` plus the weight
    ``lam`` used."""

    lam: np.ndarray | float = 1.0


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, *,
             lam: float | None = 1.0, confidence_level: float = 0.9,
             population: str = "infinite", dist: str = "normal") -> PPIResult:
    """Prediction-powered interval for the mean of ``y`` (per column).

    Parameters
    ----------
    y : array_like, shape (n,) or (n, d)
        Gold values on the labelled sample.
    yhat : array_like, like `y`
        The proxy's predictions on the labelled sample.
    yhat_unlabeled : array_like, shape (N,) or (N, d)
        ``population="infinite"``: the proxy on the unlabelled units (a separate sample,
        as ppi-python's ``ppi_mean_ci``); ``"finite"``: the proxy on every unit of the
        finite population, the labelled ones included.
    lam : float or None
        Weight of the proxy (1: PPI; 0: the classical mean; None: tuned, PPI++).
    confidence_level : float
    population : {"infinite", "finite"}
        The sampling model (module docstring).
    dist : {"normal", "t"}
        Quantiles of the interval (ppi-python: normal; ``t``: Student's t with ``n - 1``
        degrees of freedom).

    Returns
    -------
    PPIResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> f_all = rng.uniform(size=1000)
    >>> idx = rng.choice(1000, 100, replace=False)
    >>> y = np.clip(f_all[idx] + rng.normal(0, 0.1, 100), 0, 1)
    >>> r = ppi_mean(y, f_all[idx], f_all, population="finite", lam=None)
    >>> float(r.lam) > 0.8, float(r.standard_error) < 0.011
    (True, True)
    """
    if population not in ("infinite", "finite"):
        raise ValueError(f"population must be 'infinite' or 'finite', got {population!r}")
    if dist not in ("normal", "t"):
        raise ValueError(f"dist must be 'normal' or 't', got {dist!r}")
    y, yhat = np.asarray(y, np.float64), np.asarray(yhat, np.float64)
    fu = np.asarray(yhat_unlabeled, np.float64)
    if y.shape != yhat.shape or y.ndim not in (1, 2) or fu.shape[1:] != y.shape[1:]:
        raise ValueError(f"y and yhat must have the same shape (n,) or (n, d) and "
                         f"yhat_unlabeled (N, ...) alike; got {y.shape}, {yhat.shape}, "
                         f"{fu.shape}")
    n, N = y.shape[0], fu.shape[0]
    if n < 2:
        raise ValueError("at least two labelled units are needed")
    if population == "finite":
        if n > N:
            raise ValueError(f"the sample ({n}) is larger than the population ({N})")
        est, var, lam_v = finite_ppi(Moments.of(y, yhat), fu.mean(axis=0), N, lam)
    else:
        if lam is None:  # ppi-python's tuning (its _calc_lam_glm for a mean), clipped
            theta = fu.mean(axis=0) + (y - yhat).mean(axis=0)
            gy, gf = y - theta, yhat - theta
            cov = 2.0 * ((gy - gy.mean(0)) * (gf - gf.mean(0))).sum(0) / n
            var_f = np.var(np.concatenate([gf, fu - theta]), axis=0, ddof=1)
            if y.ndim == 2:  # one weight for all coordinates (ppi-python's "overall")
                cov, var_f = cov.sum(), var_f.sum()
            lam_v = np.clip(cov / (2.0 * (1.0 + n / N) * var_f), 0.0, 1.0)
        else:
            lam_v = np.asarray(lam, np.float64)
        est = lam_v * fu.mean(axis=0) + (y - lam_v * yhat).mean(axis=0)
        var = (lam_v * fu).std(axis=0) ** 2 / N + (y - lam_v * yhat).std(axis=0) ** 2 / n
    se = np.sqrt(var)
    q = (sps.norm.ppf(0.5 + confidence_level / 2) if dist == "normal"
         else sps.t.ppf(0.5 + confidence_level / 2, n - 1))
    return PPIResult(ConfidenceInterval(est - q * se, est + q * se), est, se,
                     f"ppi ({population})", confidence_level, lam_v)
