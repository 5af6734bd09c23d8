"""Parametric margins of simulated runs, selected by AIC as simIReff does (Urbano & Nagler, SIGIR
2018).

Continuous metrics (AP, nDCG@k, ERR@k) choose per run among simIReff's ``effContFit``
families (the CRAN release used by Urbano, Lima & Hanjalic, SIGIR 2019):

- ``truncnorm`` (simIReff's ``norm``): N(mu, sigma) truncated to [0, 1], maximum likelihood
  with ``sigma >= 0.05`` (:data:`TRUNCNORM_MIN_SD`), fitted to the scores as they are. When
  the likelihood has no finite maximum (it keeps rising as ``mu -> -inf`` or ``+inf``: an
  exponential-like run, common on the Web metrics with their many zeros) the family is not a
  candidate, as in simIReff, whose fit fails there (R's truncated-normal mass ``pnorm(b) -
  pnorm(a)`` rounds to 0 on the optimiser's way out and ``optim`` stops on the non-finite
  likelihood);
- ``beta``: Beta(a, b) by maximum likelihood with ``a, b >= 1`` (:func:`beta_mle`), fitted to
  the scores moved into ``[BETA_CAP, 1 - BETA_CAP]`` (simIReff's ``cap``, 1e-6);
- ``kernel`` (simIReff's ``nks``): a Gaussian kernel density (``ks::kde``) with bandwidth
  :func:`bw_dpik` (``ks::hpi``, i.e. KernSmooth's ``dpik``), truncated to [0, 1] as a whole
  (divided by its mass there); its degrees of freedom ``mean(K_h(0) / f(x_i))`` with the
  untruncated density ``f``.

- ``bks`` (simIReff's fourth family, on request: :data:`CONTINUOUS_SIMIREFF`): Chen's (1999)
  beta-kernel density of the R package bde, ``f(x) = mean_i dbeta(X_i, x / b + 1, (1 - x) / b
  + 1)`` on the scores ``X_i`` capped to [1e-6, 1 - 1e-6], bandwidth bde's default ``b =
  n^(-2/5)``; its likelihood is taken at the scores of the density divided by its integral,
  its degrees of freedom ``mean(K_b(X_i) / f(X_i))`` (simIReff's ``effCont_bks``), and its cdf,
  as bde's ``distribution`` and ``quantile`` sample it, is the trapezoid rule on the 101 knots
  ``0, 0.01, ..., 1`` (:data:`BKS_KNOTS`) joined linearly. Urbano, Lima & Hanjalic (SIGIR
  2019) fitted it; without it irsim's Web nDCG@20 and TREC AP margins give the sign and
  Wilcoxon tests more power than the paper (docs/studies/test_errors.md).

``normal`` (censored at 0 and 1, fitted to ``[EPS, 1 - EPS]``) is not a simIReff
family: :func:`fit_continuous` fits it on request, the default selection leaves it out.

Discrete metrics live on their own support ``v_0 < v_1 < ... < v_K`` (P@k: ``j / k``; RR:
``0`` and ``1 / r`` for ``r = R, ..., 1``); the families model the index ``j``:

- ``bbinom``: beta-binomial(K, a, b) by maximum likelihood with ``a, b >= 1`` (simIReff's
  ``effDisc_bbinom``: ``lower = 1``);
- ``dks``: a discrete Gaussian kernel on the index (bandwidth ``bw.nrd0`` of the indices),
  normalised over the support; degrees of freedom the trace of the smoother as above;
- ``categorical``: the observed frequencies of the support's values (degrees of freedom: the
  distinct values observed - 1). Kernels on the index smear RR's mass from rank 1 (index K)
  to ranks 2, 3, ... (values 1/2, 1/3): RR runs are mostly categorical by AIC, with their
  observed means.

The family with the smallest ``AIC = 2 df - 2 loglik`` is kept. Every selected margin is then
tabulated as a piecewise-linear cdf (:class:`~irsim.simulate.margins.tabulated.Margins`: continuous
margins on :data:`GRID` knots denser at 0 and 1, discrete ones as step functions on the
support), so sampling, exact means and the transformation to a target mean are one vectorised
code path. :func:`transform_to_mean` is simIReff's ``effTransform``: the cdf composed with a
beta cdf, ``F_T = pbeta(F, a, b)`` (here ``Beta(a, 1)`` or ``Beta(1, b)``), solved so that the
tabulated margin's mean equals the target exactly (to 1e-12).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> fit = select_continuous(rng.beta(2.0, 5.0, 400))
>>> fit.family
'beta'
>>> [round(p, 1) for p in fit.params]
[2.2, 5.5]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize
from scipy import stats as sps
from scipy.special import betaln, digamma, gammaln, ndtr, polygamma

from irsim.errors import InputError
from irsim.simulate.margins.support import Support
from irsim.simulate.margins.tabulated import Margins

__all__ = [
    "BETA_CAP",
    "BKS_KNOTS",
    "CONTINUOUS",
    "CONTINUOUS_SIMIREFF",
    "CONTINUOUS_ALL",
    "DISCRETE",
    "EPS",
    "EXPONENT_MAX",
    "GRID",
    "MarginFit",
    "MARGINS_VERSION",
    "TRUNCNORM_MIN_SD",
    "beta_mle",
    "bw_dpik",
    "bw_nrd0",
    "continuous_cdf",
    "discrete_pmf",
    "fit_continuous",
    "fit_discrete",
    "fit_run_margins",
    "select_continuous",
    "select_discrete",
    "power_mean",
    "power_uniform",
    "tabulate",
    "transform_to_mean",
    "truncexp_var",
]

#: Continuous families selected by default: simIReff's ``norm`` (the normal truncated to
#: [0, 1], sd >= :data:`TRUNCNORM_MIN_SD`), ``beta`` (shapes >= 1, scores capped to
#: [:data:`BETA_CAP`, 1 - :data:`BETA_CAP`]) and ``nks`` (``kernel``: a Gaussian kernel density
#: with KernSmooth's ``dpik`` bandwidth, truncated to [0, 1] as a whole). simIReff's fourth
#: family, ``bks`` (Chen's beta kernel, R package bde), is in :data:`CONTINUOUS_SIMIREFF`.
CONTINUOUS = ("truncnorm", "beta", "kernel")
#: simIReff's four continuous families, as ``effContFitAndSelect`` tries them: the default ones
#: and ``bks`` (what ``experiment=urbano2019`` fits).
CONTINUOUS_SIMIREFF = (*CONTINUOUS, "bks")
#: Every continuous family :func:`fit_continuous` knows (``normal``: censored at 0 and 1, not in
#: simIReff, fitted only on request).
CONTINUOUS_ALL = ("normal", *CONTINUOUS_SIMIREFF)
#: The knots of bde's cached density and distribution (``seq(0, 1, 0.01)``): the ``bks``
#: margin's cdf is piecewise linear between them.
BKS_KNOTS = np.linspace(0.0, 1.0, 101)
#: Discrete families on a metric's own support.
DISCRETE = ("bbinom", "dks", "categorical")
#: The censored ``normal`` family is fit on ``[EPS, 1 - EPS]``.
EPS = 1e-4
#: simIReff's ``cap``: the beta family is fit to (and its likelihood taken at) scores moved
#: into ``[BETA_CAP, 1 - BETA_CAP]``.
BETA_CAP = 1e-6
#: Smallest sd of the truncated normal (simIReff's ``effCont_norm``: ``lower = .05``).
TRUNCNORM_MIN_SD = 0.05
#: Version of the margin families and their fitting rules (part of the fit cache key).
MARGINS_VERSION = "simireff-1"
#: Knots of a tabulated continuous margin on [0, 1] (cosine-spaced: denser at 0 and 1).
GRID = np.concatenate([[0.0], 0.5 - 0.5 * np.cos(np.pi * np.arange(1, 2048) / 2048), [1.0]])


@dataclass(frozen=True)
class MarginFit:
    """One fitted family of one run.

    Attributes
    ----------
    family : str
    params : tuple of float
        ``normal``/``truncnorm``: (mu, sigma); ``beta``/``bbinom``: (a, b);
        ``kernel``/``dks``: (bandwidth,); ``bks``: (bandwidth, then the cdf at
        :data:`BKS_KNOTS`); ``categorical``: ().
    loglik : float
    df : float
        Parameters (effective ones for the kernels).
    data : ndarray
        The fitted points (kernels need them): scores for continuous families, indices on
        the support for discrete ones.
    K : int
        Largest index of the discrete support (0 for continuous families).
    """

    family: str
    params: tuple[float, ...]
    loglik: float
    df: float
    data: np.ndarray
    K: int = 0

    @property
    def aic(self) -> float:
        """``2 df - 2 loglik`` (inf when the family does not apply)."""
        return 2.0 * self.df - 2.0 * self.loglik


def bw_nrd0(x: ArrayLike) -> float:
    """R's ``bw.nrd0``: ``0.9 min(sd, IQR / 1.34) n^(-1/5)`` with R's fallbacks for a
    zero spread.

    Examples
    --------
    >>> round(bw_nrd0([0.1, 0.2, 0.4, 0.8]), 6)
    0.165428
    >>> round(bw_nrd0([0.5, 0.5]), 6)   # zero spread: |x_1| is the scale
    0.391748
    """
    x = np.asarray(x, np.float64)
    hi = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    q75, q25 = np.quantile(x, [0.75, 0.25])  # R's default quantile type 7 = numpy's linear
    lo = min(hi, float(q75 - q25) / 1.34)
    if not lo:
        lo = hi or abs(float(x[0])) or 1.0
    return 0.9 * lo * len(x) ** -0.2


def bw_dpik(x: ArrayLike) -> float:
    """KernSmooth's ``dpik`` (level 2, ``scalest = "minim"``, normal kernel), the bandwidth
    ``ks::kde`` uses by default in one dimension (``ks::hpi``): Wand & Jones' two-stage direct
    plug-in. On the data standardised by ``s = min(sd, IQR / 1.349)``,

    - ``g1 = (2 sqrt(2)^9 / (7 n))^(1/9)`` (normal-scale ``psi8``),
      ``psi6 = n^-2 sum_ij phi_g1^(6)(x_i - x_j)``;
    - ``g2 = (-3 sqrt(2 / pi) / (psi6 n))^(1/7)``, ``psi4 = n^-2 sum_ij phi_g2^(4)(x_i - x_j)``;
    - ``h = s (4 pi)^(-1/10) (psi4 n)^(-1/5)``.

    The double sums are exact (``dpik`` bins the data on 401 points first: a relative
    difference below 1e-3 on IR scores).

    Examples
    --------
    >>> round(bw_dpik([0.1, 0.2, 0.25, 0.4, 0.45, 0.6, 0.8]), 6)
    0.196116
    """
    x = np.asarray(x, np.float64)
    n = len(x)
    q75, q25 = np.quantile(x, [0.75, 0.25])
    scale = min(float(x.std(ddof=1)), float(q75 - q25) / 1.349) if n > 1 else 0.0
    if not scale > 0:
        raise InputError("the dpik bandwidth needs scores with a positive spread")
    z = (x - x.mean()) / scale
    d = (z[:, None] - z[None, :]).ravel()

    def psi(r: int, g: float) -> float:
        u = d / g
        poly = (u**4 - 6 * u**2 + 3) if r == 4 else (u**6 - 15 * u**4 + 45 * u**2 - 15)
        return float((poly * np.exp(-0.5 * u * u)).sum()) / (math.sqrt(2 * math.pi)
                                                             * g ** (r + 1) * n * n)

    g1 = (2.0 * math.sqrt(2.0) ** 9 / (7.0 * n)) ** (1 / 9)
    psi6 = psi(6, g1)
    g2 = (-3.0 * math.sqrt(2.0 / math.pi) / (psi6 * n)) ** (1 / 7)
    psi4 = psi(4, g2)
    return scale * (4.0 * math.pi) ** -0.1 * (psi4 * n) ** -0.2


# ----------------------------------------------------------------------------- continuous


def _clip(x: ArrayLike) -> np.ndarray:
    return np.clip(np.asarray(x, np.float64), EPS, 1.0 - EPS)


def _truncnorm_nll(p: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log-likelihood of N(mu, sigma) truncated to [0, 1] and its gradient in
    ``(mu, log sigma)``."""
    mu, sigma = float(p[0]), math.exp(float(p[1]))
    n = len(x)
    a, b = -mu / sigma, (1.0 - mu) / sigma
    # the mass of [a, b] from the nearer tail (no cancellation when mu is far outside)
    mass = float(ndtr(b) - ndtr(a)) if a <= 0 else float(ndtr(-a) - ndtr(-b))
    if not mass > 0:
        return 1e300, np.zeros(2)
    z = (x - mu) / sigma
    pa, pb = sps.norm.pdf(a), sps.norm.pdf(b)
    f = 0.5 * float((z * z).sum()) + n * (math.log(sigma * math.sqrt(2 * math.pi))
                                          + math.log(mass))
    g_mu = -float(z.sum()) / sigma + n * (pa - pb) / (sigma * mass)
    g_ls = -float((z * z).sum()) + n + n * (a * pa - b * pb) / mass
    return f, np.array([g_mu, g_ls])


def _beta_mle(s1: float, s2: float, m: float, v: float) -> tuple[float, float]:
    """Beta MLE from ``mean(log x)``, ``mean(log(1 - x))``: Newton on the score equations
    ``psi(a) - psi(a + b) = s1``, ``psi(b) - psi(a + b) = s2`` in ``log a, log b`` (start:
    the method of moments), halving steps that do not reduce the residual."""
    common = max(m * (1 - m) / max(v, 1e-300) - 1.0, 1e-3)
    p = np.log([max(m * common, 1e-3), max((1 - m) * common, 1e-3)])

    def resid(q: np.ndarray) -> np.ndarray:
        a, b = np.exp(q)
        return np.array([digamma(a) - digamma(a + b) - s1, digamma(b) - digamma(a + b) - s2])

    r = resid(p)
    for _ in range(200):
        a, b = np.exp(p)
        t, ta, tb = polygamma(1, a + b), polygamma(1, a), polygamma(1, b)
        J = np.array([[(ta - t) * a, -t * b], [-t * a, (tb - t) * b]])
        step = np.linalg.solve(J, -r)
        lam = 1.0
        while lam > 1e-6:
            q = p + lam * np.clip(step, -3.0, 3.0)
            rq = resid(q)
            if np.abs(rq).max() < np.abs(r).max():
                break
            lam *= 0.5
        else:
            break
        p, r = q, rq
        if np.abs(r).max() < 1e-14:
            break
    a, b = np.exp(p)
    return float(a), float(b)


def beta_mle(x: ArrayLike, bounded: bool = True) -> tuple[float, float]:
    """Beta MLE of scores in (0, 1) with both shapes at least 1 (simIReff's ``effCont_beta``:
    ``lower = 1``: a unimodal or monotone density, finite at 0 and 1); ``bounded=False``: the
    unconstrained MLE.

    The beta log-likelihood is concave in ``(a, b)`` (an exponential family in ``log x``,
    ``log(1 - x)``), so when the unconstrained MLE breaks a bound the constrained one lies on
    a face: ``a = 1`` gives ``b = -1 / mean(log(1 - x))`` in closed form (the score equation
    ``psi(1 + b) - psi(b) = 1 / b``), ``b = 1`` gives ``a = -1 / mean(log x)``; the better
    of the two faces (each clamped to the bound) is kept.

    Examples
    --------
    >>> x = np.array([0.01, 0.02, 0.05, 0.1, 0.3])     # unconstrained: a < 1
    >>> [round(v, 4) for v in beta_mle(x, False)], [round(v, 4) for v in beta_mle(x)]
    ([0.8098, 7.5396], [1.0, 9.1982])
    """
    x = np.asarray(x, np.float64)
    s1, s2 = float(np.log(x).mean()), float(np.log1p(-x).mean())
    a, b = _beta_mle(s1, s2, float(x.mean()), float(x.var()))
    if not bounded or (a >= 1.0 and b >= 1.0):
        return a, b
    faces = [(1.0, max(1.0, -1.0 / s2)), (max(1.0, -1.0 / s1), 1.0)]
    ll = [float(sps.beta.logpdf(x, fa, fb).sum()) for fa, fb in faces]
    return faces[int(np.argmax(ll))]


def truncexp_var(mean: float) -> float:
    """Variance of the exponential distribution truncated to [0, 1] with the given mean (the
    density ``prop. to exp(-lam x)``, ``lam > 0`` below a mean of 1/2, ``< 0`` above; the
    uniform at 1/2). The truncated normal is an exponential family in ``(x, x^2)`` whose
    ``mu -> -inf`` (``+inf``) limit is this distribution: a sample whose variance reaches it
    at its mean has no finite truncated-normal MLE.

    Examples
    --------
    >>> round(truncexp_var(0.5), 12) == round(1 / 12, 12)
    True
    >>> round(truncexp_var(0.1), 6), round(truncexp_var(0.9), 6)
    (0.009964, 0.009964)
    """
    m = min(float(mean), 1.0 - float(mean))
    if not 0.0 < m < 0.5:
        return 0.0 if m <= 0.0 else 1.0 / 12.0

    def mean_of(lam: float) -> float:  # 1/lam - 1/(e^lam - 1), decreasing in lam > 0
        return 1.0 / lam - 1.0 / math.expm1(lam)

    lam = optimize.brentq(lambda v: mean_of(v) - m, 1e-9, 1.0 / m + 50.0, xtol=1e-14,
                          rtol=1e-15)
    e = math.exp(-lam)  # variance 1/lam^2 - e^lam / (e^lam - 1)^2, in the stable form
    return 1.0 / (lam * lam) - e / (1.0 - e) ** 2


def fit_continuous(scores: ArrayLike, family: str) -> MarginFit:
    """Fit one continuous `family` to a run's scores (see the module docstring).

    Examples
    --------
    >>> x = np.array([0.2, 0.4, 0.6])
    >>> f = fit_continuous(x, "normal")
    >>> [round(p, 6) for p in f.params], f.df
    ([0.4, 0.163299], 2.0)
    """
    raw = np.asarray(scores, np.float64)
    n = len(raw)
    flat = bool(np.ptp(raw) == 0)
    if family == "normal":
        x = _clip(raw)
        mu, sigma = float(x.mean()), float(x.std())
        if flat:
            return MarginFit(family, (mu, 0.0), -math.inf, 2.0, x)
        ll = float(sps.norm.logpdf(x, mu, sigma).sum())
        return MarginFit(family, (mu, sigma), ll, 2.0, x)
    if family == "truncnorm":
        x = raw
        if flat:
            return MarginFit(family, (float(x[0]), TRUNCNORM_MIN_SD), -math.inf, 2.0, x)
        m0, s0 = float(x.mean()), max(float(x.std()), TRUNCNORM_MIN_SD)
        if float(x.var()) >= truncexp_var(m0):
            # no finite MLE: the likelihood rises towards mu -> -inf (or +inf), a truncated
            # exponential in the limit; simIReff's fit fails there (truncnorm's mass
            # pnorm(b) - pnorm(a) rounds to 0 on the optimiser's way out and optim stops on
            # the non-finite likelihood), so the family is not a candidate
            return MarginFit(family, (-math.inf if m0 < 0.5 else math.inf, math.inf),
                             -math.inf, 2.0, x)
        low = math.log(TRUNCNORM_MIN_SD)

        def scaled(q: np.ndarray) -> tuple[float, np.ndarray]:  # mu = m0 + s0 q0
            f, g = _truncnorm_nll(np.array([m0 + s0 * q[0], q[1]]), x)
            return f, np.array([g[0] * s0, g[1]])

        r = optimize.minimize(scaled, np.array([0.0, math.log(s0)]), jac=True,
                              method="L-BFGS-B",
                              bounds=[(-20.0 / s0, 20.0 / s0), (low, 6.0)],
                              options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
        q, f = r.x, float(r.fun)
        # polish: the score equations (mean and second moment matched) solved from there
        polish = optimize.root(lambda v: scaled(v)[1], q, method="hybr",
                               options={"xtol": 1e-14, "maxfev": 60})
        if polish.success and polish.x[1] >= low and scaled(polish.x)[0] <= f:
            q, f = polish.x, scaled(polish.x)[0]
        mu, sigma = m0 + s0 * float(q[0]), max(math.exp(float(q[1])), TRUNCNORM_MIN_SD)
        return MarginFit(family, (mu, sigma), -f, 2.0, x)
    if family == "beta":
        x = np.clip(raw, BETA_CAP, 1.0 - BETA_CAP)
        if flat:
            return MarginFit(family, (1.0, 1.0), -math.inf, 2.0, x)
        a, b = beta_mle(x)
        ll = float(sps.beta.logpdf(x, a, b).sum())
        return MarginFit(family, (a, b), ll, 2.0, x)
    if family == "kernel":
        x = raw
        q75, q25 = np.quantile(x, [0.75, 0.25])
        if flat or q75 == q25:
            # dpik's scale min(sd, IQR / 1.349) is 0: no bandwidth (R: ks::kde fails and
            # simIReff's try drops the family)
            return MarginFit(family, (0.0,), -math.inf, 1.0, x)
        h = bw_dpik(x)
        f = sps.norm.pdf((x[:, None] - x[None, :]) / h).mean(axis=1) / h
        mass = float((ndtr((1.0 - x) / h) - ndtr(-x / h)).mean())
        ll = float(np.log(f).sum()) - n * math.log(mass)
        df = float((1.0 / (h * math.sqrt(2 * math.pi)) / f).mean())
        return MarginFit(family, (h,), ll, df, x)
    if family == "bks":
        x = np.clip(raw, BETA_CAP, 1.0 - BETA_CAP)
        if flat:
            return MarginFit(family, (0.0,), -math.inf, 1.0, x)
        b = n ** -0.4
        f = _beta_kernel(x, x, b)
        k0 = sps.beta.pdf(x, x / b + 1.0, (1.0 - x) / b + 1.0)
        # the density's integral over [0, 1] (R: integrate), by Gauss-Legendre on 8 panels
        nodes, weights = np.polynomial.legendre.leggauss(64)
        edges = np.linspace(0.0, 1.0, 9)
        t = ((edges[:-1, None] + edges[1:, None]) + np.outer(np.diff(edges), nodes)) / 2.0
        mass = float((_beta_kernel(t.ravel(), x, b).reshape(t.shape) @ weights).sum() / 16.0)
        ll = float(np.log(_beta_kernel(raw, x, b) / mass).sum())
        fk = _beta_kernel(BKS_KNOTS, x, b)
        cdf = np.concatenate([[0.0], np.cumsum(np.diff(BKS_KNOTS) * (fk[1:] + fk[:-1]) / 2)])
        return MarginFit(family, (b, *(cdf / cdf[-1]).tolist()), ll, float((k0 / f).mean()), x)
    raise InputError(f"unknown continuous margin family {family!r}; known: {CONTINUOUS_ALL}")


def _beta_kernel(points: np.ndarray, data: np.ndarray, b: float) -> np.ndarray:
    """Chen's (1999) beta-kernel density of `data` (bandwidth `b`) at `points` in [0, 1]:
    ``mean_i dbeta(data_i, p / b + 1, (1 - p) / b + 1)`` (bde's ``Chen99Kernel``)."""
    p = np.asarray(points, np.float64)
    out = np.empty(len(p))
    for k in range(0, len(p), 512):  # blocks of points: the matrix stays small
        q = p[k:k + 512, None]
        out[k:k + 512] = sps.beta.pdf(data[None, :], q / b + 1.0, (1.0 - q) / b + 1.0
                                      ).mean(axis=1)
    return out


def select_continuous(scores: ArrayLike, families: tuple[str, ...] = CONTINUOUS
                      ) -> MarginFit:
    """The family of `families` with the smallest AIC for a run's scores (a run whose scores
    are all equal, where no family applies, gets the point mass: ``normal`` with sd 0).

    Examples
    --------
    >>> f = select_continuous(np.full(10, 0.25))
    >>> f.family, f.params
    ('normal', (0.25, 0.0))
    """
    fits = [fit_continuous(scores, f) for f in families]
    best = min(fits, key=lambda f: (f.aic, families.index(f.family)))
    if not math.isfinite(best.aic) and np.ptp(np.asarray(scores, np.float64)) == 0:
        return fit_continuous(scores, "normal")
    return best


def continuous_cdf(fit: MarginFit, x: ArrayLike) -> np.ndarray:
    """The fitted cdf at `x` in [0, 1] (``normal``: censored, so ``F(1) < 1`` before the atom
    at 1; the others are 0 at 0 and 1 at 1).

    Examples
    --------
    >>> f = fit_continuous(np.array([0.2, 0.4, 0.6]), "beta")
    >>> continuous_cdf(f, np.array([0.0, 1.0])).tolist()
    [0.0, 1.0]
    """
    x = np.asarray(x, np.float64)
    if fit.family == "normal":
        mu, sigma = fit.params
        return ndtr((x - mu) / sigma) if sigma > 0 else (x >= mu).astype(np.float64)
    if fit.family == "truncnorm":
        mu, sigma = fit.params
        return sps.truncnorm.cdf(x, -mu / sigma, (1.0 - mu) / sigma, loc=mu, scale=sigma)
    if fit.family == "beta":
        return sps.beta.cdf(x, *fit.params)
    if fit.family == "bks":
        return np.interp(x, BKS_KNOTS, np.asarray(fit.params[1:]))
    if fit.family == "kernel":
        (h,) = fit.params
        c = fit.data
        lo = ndtr(-c / h).mean()
        mass = ndtr((1.0 - c) / h).mean() - lo
        return np.clip((ndtr((x[..., None] - c) / h).mean(axis=-1) - lo) / mass, 0.0, 1.0)
    raise InputError(f"unknown continuous margin family {fit.family!r}")


# ----------------------------------------------------------------------------- discrete


def _bbinom_logpmf(j: np.ndarray, K: int, a: float, b: float) -> np.ndarray:
    return (gammaln(K + 1) - gammaln(j + 1) - gammaln(K - j + 1)
            + betaln(j + a, K - j + b) - betaln(a, b))


def _dks_matrix(K: int, h: float) -> np.ndarray:
    """Row i: the kernel at centre i over the support, normalised (shape (K+1, K+1))."""
    k = np.arange(K + 1)
    w = np.exp(-0.5 * ((k[:, None] - k[None, :]) / h) ** 2)
    return w / w.sum(axis=1, keepdims=True)


def fit_discrete(index: ArrayLike, K: int, family: str) -> MarginFit:
    """Fit one discrete `family` to a run's indices on a support ``0..K``.

    Examples
    --------
    >>> f = fit_discrete(np.array([1, 3, 4, 6, 2, 5]), 10, "bbinom")
    >>> f.family, f.df, f.loglik < 0
    ('bbinom', 2.0, True)
    """
    j = np.asarray(index, np.int64)
    n = len(j)
    if family == "bbinom":
        if np.ptp(j) == 0:
            return MarginFit(family, (1.0, 1.0), -math.inf, 2.0, j, K)

        def nll(p: np.ndarray) -> tuple[float, np.ndarray]:
            a, b = np.exp(p)
            f = -float(_bbinom_logpmf(j, K, a, b).sum())
            common = digamma(K + a + b)
            ga = (digamma(j + a) - common).sum() - n * (digamma(a) - digamma(a + b))
            gb = (digamma(K - j + b) - common).sum() - n * (digamma(b) - digamma(a + b))
            return f, -np.array([ga * a, gb * b])

        m = j.mean() / K
        v = j.var() / K**2
        common0 = max(m * (1 - m) / max(v, 1e-9) - 1, 0.1)
        start = np.log(np.clip([m * common0, (1 - m) * common0], 1.0, None))
        best = optimize.minimize(nll, start, jac=True, method="L-BFGS-B",
                                 bounds=[(0.0, 12.0)] * 2,  # simIReff: lower = c(1, 1)
                                 options={"ftol": 1e-14, "gtol": 1e-9, "maxiter": 2000})
        a, b = (float(v) for v in np.exp(best.x))
        return MarginFit(family, (a, b), -float(best.fun), 2.0, j, K)
    if family == "dks":
        h = bw_nrd0(j.astype(np.float64))
        W = _dks_matrix(K, h)
        pmf = W[j].mean(axis=0)
        ll = float(np.log(pmf[j]).sum())
        df = float((W[j, j] / (n * pmf[j])).sum())
        return MarginFit(family, (h,), ll, df, j, K)
    if family == "categorical":
        counts = np.bincount(j, minlength=K + 1)
        seen = counts[counts > 0]
        ll = float((seen * np.log(seen / n)).sum())
        return MarginFit(family, (), ll, float(len(seen) - 1), j, K)
    raise InputError(f"unknown discrete margin family {family!r}; known: {DISCRETE}")


def select_discrete(index: ArrayLike, K: int, families: tuple[str, ...] = DISCRETE
                    ) -> MarginFit:
    """The discrete family with the smallest AIC."""
    fits = [fit_discrete(index, K, f) for f in families]
    return min(fits, key=lambda f: (f.aic, families.index(f.family)))


def discrete_pmf(fit: MarginFit) -> np.ndarray:
    """The fitted probabilities of the indices ``0..K``."""
    if fit.family == "bbinom":
        return np.exp(_bbinom_logpmf(np.arange(fit.K + 1), fit.K, *fit.params))
    if fit.family == "dks":
        return _dks_matrix(fit.K, fit.params[0])[fit.data].mean(axis=0)
    if fit.family == "categorical":
        return np.bincount(fit.data, minlength=fit.K + 1) / len(fit.data)
    raise InputError(f"unknown discrete margin family {fit.family!r}")


# ----------------------------------------------------------------------------- tabulation


def tabulate(fits: list[MarginFit], support: Support | None = None) -> Margins:
    """The fitted margins of several runs as one :class:`Margins` (piecewise-linear cdfs):
    continuous on ``[0] + GRID + [1]`` (the first and last knot make the atoms of a
    censored normal), discrete as steps on the `support`.

    Examples
    --------
    >>> from irsim.simulate.margins import detect_support
    >>> s = detect_support(np.array([0.0, 0.5, 1.0]))
    >>> m = tabulate([fit_discrete(np.array([0, 1, 1, 2]), 2, "dks")], s)
    >>> round(float(m.mean()[0]), 12)
    0.5
    """
    if support is None:
        F = np.stack([continuous_cdf(f, GRID) for f in fits])
        F = np.maximum.accumulate(np.clip(F, 0.0, 1.0), axis=1)
        x = np.broadcast_to(np.concatenate([[0.0], GRID, [1.0]]), (len(fits), len(GRID) + 2))
        F = np.concatenate([np.zeros((len(fits), 1)), F, np.ones((len(fits), 1))], axis=1)
        return Margins(x, F, kind="fitted")
    pmf = np.stack([discrete_pmf(f) for f in fits])
    pmf = pmf / pmf.sum(axis=1, keepdims=True)
    cdf = np.minimum(np.cumsum(pmf, axis=1), 1.0)
    cdf[:, -1] = 1.0
    x = np.repeat(support.values, 2)[None, :].repeat(len(fits), axis=0)
    F = np.zeros_like(x)
    F[:, 1::2] = cdf
    F[:, 2::2] = cdf[:, :-1]
    return Margins(x, F, kind="fitted", support=support.name)


def fit_run_margins(scores: ArrayLike, support: Support | None = None,
                    continuous: tuple[str, ...] = CONTINUOUS
                    ) -> tuple[Margins, list[MarginFit]]:
    """Select a margin per run (row of `scores`) by AIC and tabulate them.

    Parameters
    ----------
    scores : array_like, shape (runs, topics)
    support : Support, optional
        The metric's discrete support (:func:`~irsim.simulate.margins.support.detect_support`
        of all its scores); None for a continuous metric.
    continuous : tuple of str
        The continuous families selected among (:data:`CONTINUOUS`, or
        :data:`CONTINUOUS_SIMIREFF` with ``bks``).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> m, fits = fit_run_margins(rng.beta(2, 5, (3, 60)))
    >>> m.systems, {f.family for f in fits} <= set(CONTINUOUS)
    (3, True)
    """
    x = np.asarray(scores, np.float64)
    if x.ndim != 2 or not np.isfinite(x).all() or x.min() < 0 or x.max() > 1:
        raise InputError("margins need a (runs, topics) matrix of finite scores in [0, 1]")
    if support is None:
        fits = [select_continuous(row, tuple(continuous)) for row in x]
    else:
        fits = [select_discrete(support.index(row), support.K) for row in x]
    return tabulate(fits, support), fits


#: Largest exponent of the effTransform power: ``a`` (or ``b``) of ``Beta(a, 1)`` (``Beta(1, b)``);
#: a target that needs more is unreachable (NaN).
EXPONENT_MAX = 1e6


#: Knots x rows of one block of :func:`power_mean` (a few arrays of this many floats stay in
#: the L2 cache).
_POWER_BLOCK = 16_384


def _segment_power_average(g0: np.ndarray, g1: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Average of ``g^c`` over a segment where ``g`` runs linearly from `g0` to `g1` (both in
    [0, 1]): ``(g1^(c+1) - g0^(c+1)) / ((c + 1)(g1 - g0))``, or Simpson's rule on a segment
    too short for that difference (relative length below 1e-4: error below 1e-16)."""
    lo, hi = np.minimum(g0, g1), np.maximum(g0, g1)
    span = hi - lo
    short = span <= 1e-4 * hi
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        exact = (hi ** (c + 1.0) - lo ** (c + 1.0)) / ((c + 1.0) * span)
        simpson = (lo ** c + 4.0 * (0.5 * (lo + hi)) ** c + hi ** c) / 6.0
    return np.where(short, simpson, exact)


def power_mean(margins: Margins, rows: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """Exact mean of each margin of `rows` after simIReff's ``effTransform`` with exponent
    `gamma` (see :func:`transform_to_mean`): the cdf becomes ``F^a``, ``a = e^gamma``, for
    ``gamma >= 0`` and ``1 - (1 - F)^b``, ``b = e^-gamma``, below 0 (``pbeta(F, a, 1)`` and
    ``pbeta(F, 1, b)``); the mean ``x_0 + integral (1 - F_T(x)) dx`` is closed-form, as ``F``
    is linear between the knots.

    Examples
    --------
    >>> from irsim.simulate.margins import grid_margins
    >>> m = grid_margins([0.0, 1.0], [0.0, 1.0])          # uniform on [0, 1]
    >>> power_mean(m, [0, 0, 0], [0.0, np.log(3.0), -np.log(3.0)]).round(12).tolist()
    [0.5, 0.75, 0.25]
    """
    rows = np.asarray(rows, np.int64)
    gamma = np.broadcast_to(np.asarray(gamma, np.float64), rows.shape)
    flat_rows, flat_gamma = rows.reshape(-1), gamma.reshape(-1)
    out = np.empty(len(flat_rows))
    # a block of rows at a time, so that the dozen elementwise passes below stay in cache
    # (1.6-2x faster on long knot grids). Each row is computed and summed on its own; only
    # numpy's choice of power loop may depend on the block's shape, which moved 1 of 20,000
    # effTransform exponents by an ulp (the urbano2019 preset's tables are unchanged)
    step = max(1, _POWER_BLOCK // max(1, margins.x.shape[-1]))
    for a in range(0, len(flat_rows), step):
        r, g = flat_rows[a:a + step], flat_gamma[a:a + step, None]
        x, F = margins.x[r], np.clip(margins.F[r], 0.0, 1.0)
        up = g >= 0
        c = np.exp(np.abs(g))
        # 1 - F_T = 1 - F^a (up) or (1 - F)^b (down), averaged over each segment
        avg = _segment_power_average(np.where(up, F[..., :-1], 1.0 - F[..., :-1]),
                                     np.where(up, F[..., 1:], 1.0 - F[..., 1:]), c)
        tail = np.where(up, 1.0 - avg, avg)
        dx = np.diff(x, axis=-1)
        out[a:a + step] = x[..., 0] + np.where(dx > 0, dx * tail, 0.0).sum(axis=-1)
    return out.reshape(rows.shape)


def power_uniform(u: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """``qbeta(u, a, b)`` of the effTransform with exponent `gamma` (broadcast): ``u^(1/a)``,
    ``a = e^gamma``, for ``gamma >= 0``; ``1 - (1 - u)^(1/b)``, ``b = e^-gamma``, below 0.
    ``Q(power_uniform(U, gamma))`` is a draw from the transformed margin.

    Examples
    --------
    >>> power_uniform([0.25, 0.25, 0.25], [0.0, np.log(2.0), -np.log(2.0)]).tolist()
    [0.25, 0.5, 0.1339745962155614]
    """
    u = np.asarray(u, np.float64)
    gamma = np.asarray(gamma, np.float64)
    with np.errstate(over="ignore", under="ignore"):
        return np.where(gamma >= 0, u ** np.exp(-np.abs(gamma)),
                        1.0 - (1.0 - u) ** np.exp(-np.abs(gamma)))


def transform_to_mean(margins: Margins, rows: ArrayLike, target: ArrayLike) -> np.ndarray:
    """simIReff's ``effTransform`` (Urbano & Nagler, SIGIR 2018): the exponent ``gamma`` of
    each margin in `rows` whose mean is `target` (to 1e-12), NaN where no exponent up to
    :data:`EXPONENT_MAX` reaches it (the target must lie strictly between the margin's
    smallest and largest score).

    effTransform composes the cdf with a beta cdf, ``F_T(x) = pbeta(F(x), a, b)``
    (``Q_T(p) = Q(qbeta(p, a, b))``), and minimises ``(mean - target)^2`` over ``a, b >= 1``
    from ``(1, 1)`` with L-BFGS-B. Its minimisers form a curve; from ``(1, 1)`` the optimiser
    moves the one parameter whose bound is not active (``a`` to raise the mean, ``b`` to
    lower it). irsim keeps the other at its bound 1 and solves the one-parameter equation
    exactly (Illinois regula falsi on ``log a`` or ``log b``, the mean is monotone in it):
    ``gamma = log a`` (``b = 1``) when the target is above the margin's mean,
    ``gamma = -log b`` (``a = 1``) below it, 0 at it. Draw with
    ``margins.quantile(rows, power_uniform(u, gamma))``; the mean is :func:`power_mean`.

    Examples
    --------
    >>> rng = np.random.default_rng(2)
    >>> m, _ = fit_run_margins(rng.beta(2, 5, (2, 50)))
    >>> gamma = transform_to_mean(m, [0, 1], [0.4, 0.1])
    >>> bool(gamma[0] > 0 > gamma[1])
    True
    >>> bool(np.abs(power_mean(m, [0, 1], gamma) - [0.4, 0.1]).max() < 1e-12)
    True
    """
    rows, target = np.broadcast_arrays(np.asarray(rows, np.int64),
                                       np.asarray(target, np.float64))
    rows, target = rows.ravel(), target.ravel()
    mean0 = power_mean(margins, rows, np.zeros(len(rows)))
    sign = np.where(target > mean0, 1.0, -1.0)
    top = math.log(EXPONENT_MAX)
    lo, hi = np.zeros(len(rows)), np.full(len(rows), top)
    f_lo = sign * (mean0 - target)                              # < 0 (or 0 at the mean)
    f_hi = sign * (power_mean(margins, rows, sign * hi) - target)
    gamma = np.full(len(rows), np.nan)
    gamma[target == mean0] = 0.0
    active = np.flatnonzero((f_lo < 0) & (f_hi > 0))
    lo, hi, f_lo, f_hi = lo[active], hi[active], f_lo[active], f_hi[active]
    side = np.zeros(len(active), np.int8)
    for _ in range(200):
        if len(active) == 0:
            break
        g = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        g = np.where((g > lo) & (g < hi), g, 0.5 * (lo + hi))
        fg = sign[active] * (power_mean(margins, rows[active], sign[active] * g)
                             - target[active])
        below = fg < 0
        f_hi = np.where(below & (side == -1), 0.5 * f_hi, f_hi)  # Illinois
        f_lo = np.where(~below & (side == 1), 0.5 * f_lo, f_lo)
        lo, f_lo = np.where(below, g, lo), np.where(below, fg, f_lo)
        hi, f_hi = np.where(below, hi, g), np.where(below, f_hi, fg)
        side = np.where(below, -1, 1).astype(np.int8)
        done = (np.abs(fg) <= 1e-14) | (hi - lo <= 1e-14)
        gamma[active[done]] = sign[active[done]] * g[done]
        keep = ~done
        active, lo, hi, f_lo, f_hi, side = (active[keep], lo[keep], hi[keep], f_lo[keep],
                                            f_hi[keep], side[keep])
    gamma[active] = sign[active] * 0.5 * (lo + hi)
    ok = np.abs(power_mean(margins, rows, np.nan_to_num(gamma)) - target) <= 1e-12
    return np.where(ok & np.isfinite(gamma), gamma, np.nan)
