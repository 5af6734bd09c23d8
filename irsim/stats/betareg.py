"""Beta regression of a score matrix in [0, 1]: the bounded-outcome model of the designs with
many factors (issue 45), beside the ANOVA (:mod:`irsim.stats.factorial`) and the linear mixed
model (:mod:`irsim.stats.varcomp`).

Model (Ferrari & Cribari-Neto 2004): each score ``y_str`` of system ``s``, topic ``t`` (and
replicate ``r``) is Beta with mean ``mu_st`` and one precision ``phi``, ``Var y = mu (1 - mu) /
(1 + phi)``, and

    logit(mu_st) = intercept + system_s + topic_t

with system *and topic* fixed effects: the topics are blocks, as in the two-way ANOVA (which
removes the topic means before it compares systems); replicates of a cell are further
observations of the same mean. Why a beta model with a logit link rather than a GLMM: a
metric in [0, 1] is a continuous proportion, not a count of successes out of a known number
of trials (a binomial GLMM needs the trials; AP has none), and its variance shrinks at the
ends of the interval (a topic where every system scores near 0 varies little): the beta
family has exactly that mean-variance relation, the logit link keeps every fitted mean inside
(0, 1) and makes system effects additive on the log-odds scale, where a difference at the
floor counts as much as one in the middle. The linear models of the ANOVA ignore both.

Scores at exactly 0 or 1 (AP and P@10 reach them often; the beta density does not) are
squeezed into the open interval by Smithson & Verkuilen's (2006) transform ``y' = (y (n - 1)
+ 1/2) / n``, ``n`` the number of observations, applied to every score (so a fit does not
jump when one score reaches 0); the system means are mapped back to the score scale by the
inverse transform. A system or topic whose every score is 0 (or every score 1) is refused:
its effect's maximum-likelihood estimate is at -inf (+inf) without the squeeze, and with it
the estimate is set by ``n`` alone.

The fit is maximum likelihood from Ferrari & Cribari-Neto's start (OLS of ``logit y``) by
Newton steps on the analytic observed information where it is positive definite and Fisher
scoring steps (their expected information) where it is not, each step halved until the
likelihood does not fall, to a relative step of 1e-10 (8-20 iterations on TREC matrices;
statsmodels' own Newton from its start diverges on them, its BFGS stops ~1e-7 short); the
precision is fitted as ``log phi`` (statsmodels' ``BetaModel`` parameter
``precision``). Every quantity is a sum over cells of the (systems, topics) table (a
replicate only adds to its cell's sums), so an iteration costs a few array operations on that
table and one solve of ``1 + (systems - 1) + (topics - 1) + 1`` unknowns. Standard errors are
the inverse of the observed information (statsmodels' default, ``cov_type="oim"``) or of the
expected one (``information="expected"``; ``cov_type="eim"``).

With topic fixed effects the number of parameters grows with the topics (an incidental
parameter problem in the topic direction only): each topic effect is estimated from
``systems x replicates`` observations, so with tens of systems the bias this puts in ``phi``
is small; the system effects are the quantities of interest and have ``topics x replicates``
observations each.

References
----------
Ferrari & Cribari-Neto. Beta regression for modelling rates and proportions. J. Applied
Statistics 31(7), 2004. Smithson & Verkuilen. A better lemon squeezer? Maximum-likelihood
regression with beta-distributed dependent variables. Psych. Methods 11(1), 2006.

Examples
--------
Three systems on six topics, the third better:

>>> x = np.array([[0.20, 0.35, 0.10, 0.50, 0.05, 0.30],
...               [0.25, 0.30, 0.12, 0.55, 0.08, 0.28],
...               [0.45, 0.60, 0.30, 0.75, 0.20, 0.55]])
>>> fit = beta_regression(x)
>>> fit.effect.round(2).tolist()
[-0.37, -0.3, 0.68]
>>> fit.means.round(3).tolist()
[0.25, 0.263, 0.475]
>>> pairs = fit.pairs()
>>> pairs.first.tolist(), pairs.second.tolist(), pairs.significant(0.05)
([0, 0, 1], [1, 2, 2], 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from irsim.errors import ConfigError, InputError, IrsimError
from irsim.stats.multiple import adjust

__all__ = ["BetaRegression", "BetaPairs", "beta_regression", "squeeze_scores"]

#: The information matrices a fit may take its standard errors from.
INFORMATION = ("observed", "expected")


def squeeze_scores(y: np.ndarray, n: int | None = None) -> np.ndarray:
    """Smithson & Verkuilen's (2006) ``(y (n - 1) + 1/2) / n``: [0, 1] into (0, 1).

    Parameters
    ----------
    y : array_like
        Scores in [0, 1].
    n : int, optional
        The sample size (default: ``y.size``).

    Examples
    --------
    >>> squeeze_scores(np.array([0.0, 0.5, 1.0])).tolist()
    [0.16666666666666666, 0.5, 0.8333333333333334]
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.size if n is None else int(n)
    return (y * (n - 1) + 0.5) / n


@dataclass(frozen=True)
class BetaPairs:
    """All-pairs Wald tests of system differences on the logit scale.

    Attributes
    ----------
    first, second : ndarray of int, shape (pairs,)
        The pairs ``first < second`` (:func:`numpy.triu_indices` order).
    diff : ndarray, shape (pairs,)
        ``system_first - system_second`` (log odds ratio of the two systems' means).
    se : ndarray, shape (pairs,)
        Its standard error, ``sqrt(C_ff + C_ss - 2 C_fs)`` from the fit's covariance.
    z, pvalue : ndarray, shape (pairs,)
        Wald statistic ``diff / se`` and its two-sided normal p-value.
    adjusted : ndarray, shape (pairs,)
        ``pvalue`` adjusted over the pairs (:func:`irsim.stats.multiple.adjust`).
    correction : str
    """

    first: np.ndarray
    second: np.ndarray
    diff: np.ndarray
    se: np.ndarray
    z: np.ndarray
    pvalue: np.ndarray
    adjusted: np.ndarray
    correction: str

    def significant(self, alpha: float = 0.05) -> int:
        """Number of pairs with adjusted p-value ``<= alpha``."""
        return int((self.adjusted <= float(alpha)).sum())


@dataclass(frozen=True)
class BetaRegression:
    """Maximum-likelihood beta regression with system and topic fixed effects.

    Attributes
    ----------
    coef : ndarray, shape (k,)
        Mean model on the logit scale in treatment coding, in the order of statsmodels'
        ``C(system) + C(topic)``: intercept (system 0 on topic 0), systems ``1..S-1``
        (difference to system 0), topics ``1..T-1``.
    log_phi : float
        ``log phi`` (statsmodels' ``precision`` parameter).
    cov : ndarray, shape (k + 1, k + 1)
        Covariance of ``(coef, log_phi)``: the inverse of the observed (or expected)
        information.
    effect, se : ndarray, shape (systems,)
        System effects on the logit scale as deviations from their average over systems (sum
        to zero), and their standard errors.
    phi : float
        The precision: ``Var y = mu (1 - mu) / (1 + phi)``.
    loglik : float
        Log-likelihood at the fit (of the squeezed scores when ``squeezed``).
    means : ndarray, shape (systems,)
        Each system's fitted mean averaged over topics, on the score scale (the squeeze
        undone).
    fitted : ndarray, shape (systems, topics)
        Fitted means ``mu_st`` (of the squeezed scores when ``squeezed``).
    n : int
        Observations.
    squeezed : bool
    information : str
    iterations : int
    """

    coef: np.ndarray
    log_phi: float
    cov: np.ndarray
    effect: np.ndarray
    se: np.ndarray
    phi: float
    loglik: float
    means: np.ndarray
    fitted: np.ndarray
    n: int
    squeezed: bool
    information: str
    iterations: int

    def pairs(self, correction: str = "holm") -> BetaPairs:
        """Wald tests of every system difference, p-values adjusted over the pairs.

        Parameters
        ----------
        correction : {"holm", "bonferroni", "bh", "by", "none"}
            :func:`irsim.stats.multiple.adjust`.

        Examples
        --------
        >>> x = np.array([[0.2, 0.3, 0.1, 0.5], [0.4, 0.6, 0.3, 0.7], [0.2, 0.4, 0.1, 0.6]])
        >>> p = beta_regression(x).pairs("none")
        >>> bool(p.pvalue[0] < 0.05), p.correction
        (True, 'none')
        """
        s = len(self.effect)
        c = _system_cov(self.cov, s)
        first, second = np.triu_indices(s, 1)
        b = np.concatenate([[0.0], self.coef[1:s]])
        diff = b[first] - b[second]
        se = np.sqrt(c[first, first] + c[second, second] - 2.0 * c[first, second])
        z = diff / se
        p = 2.0 * sps.norm.sf(np.abs(z))
        return BetaPairs(first, second, diff, se, z, p, adjust(p, correction), correction)


def _system_cov(cov: np.ndarray, systems: int) -> np.ndarray:
    """Covariance of the system coefficients ``(0, b_1, ..., b_{S-1})`` (system 0 is the
    reference: row and column 0 are zero)."""
    c = np.zeros((systems, systems))
    c[1:, 1:] = cov[1:systems, 1:systems]
    return c


class _Cells:
    """The (systems, topics) sufficient statistics of the scores and the design's algebra:
    ``X' u`` and ``X' diag(w) X`` for cell vectors, ``X`` the treatment-coded design of
    ``C(system) + C(topic)`` (replicates are rows of their cell)."""

    def __init__(self, y: np.ndarray):
        self.s, self.t, self.r = y.shape
        # scipy's scalar log, not numpy's: numpy's vectorised log rounds differently with
        # and without AVX-512, and the fit must give the same tables on every CPU
        self.log_y = special.xlogy(1.0, y).sum(axis=-1)
        self.log_1y = special.log1p(-y).sum(axis=-1)
        self.ystar = self.log_y - self.log_1y
        self.keep = np.r_[0, 2:self.s + 1, self.s + 2:self.s + self.t + 1]

    def xt(self, u: np.ndarray) -> np.ndarray:
        return np.r_[u.sum(), u.sum(axis=1), u.sum(axis=0)][self.keep]

    def xtwx(self, w: np.ndarray) -> np.ndarray:
        s, t = self.s, self.t
        g = np.zeros((1 + s + t, 1 + s + t))
        rows, cols = w.sum(axis=1), w.sum(axis=0)
        g[0, 0] = w.sum()
        g[0, 1:s + 1] = g[1:s + 1, 0] = rows
        g[0, s + 1:] = g[s + 1:, 0] = cols
        g[1:s + 1, s + 1:] = w
        g[s + 1:, 1:s + 1] = w.T
        i = np.arange(1 + s + t)
        g[i[1:s + 1], i[1:s + 1]] = rows
        g[i[s + 1:], i[s + 1:]] = cols
        return g[np.ix_(self.keep, self.keep)]

    def eta(self, coef: np.ndarray) -> np.ndarray:
        s = self.s
        bs = np.r_[0.0, coef[1:s]]
        bt = np.r_[0.0, coef[s:]]
        return coef[0] + bs[:, None] + bt[None, :]

    def loglik(self, params: np.ndarray) -> float:
        mu, phi = special.expit(self.eta(params[:-1])), math.exp(params[-1])
        a, b = mu * phi, (1.0 - mu) * phi
        return float((self.r * (special.gammaln(phi) - special.gammaln(a) - special.gammaln(b))
                      + (a - 1.0) * self.log_y + (b - 1.0) * self.log_1y).sum())

    def derivatives(self, params: np.ndarray, observed: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Score and information (observed or expected) in ``(coef, log phi)``."""
        mu, phi = special.expit(self.eta(params[:-1])), math.exp(params[-1])
        a, b, r = mu * phi, (1.0 - mu) * phi, self.r
        m1 = mu * (1.0 - mu)
        res = self.ystar - r * (special.digamma(a) - special.digamma(b))  # sum_r (y* - mu*)
        pa, pb = special.polygamma(1, a), special.polygamma(1, b)
        dphi = (mu * res + self.log_1y - r * special.digamma(b)
                + r * special.digamma(phi))
        score = np.r_[self.xt(phi * res * m1), phi * dphi.sum()]
        w_ee = r * phi ** 2 * (pa + pb) * m1 ** 2
        w_ep = r * phi * (mu * pa - (1.0 - mu) * pb) * m1
        i_pp = (r * (mu ** 2 * pa + (1.0 - mu) ** 2 * pb - special.polygamma(1, phi))).sum()
        i_tt = phi ** 2 * i_pp
        if observed:
            w_ee = w_ee - phi * res * m1 * (1.0 - 2.0 * mu)
            w_ep = w_ep - res * m1
            i_tt = i_tt - phi * dphi.sum()
        k = len(params)
        info = np.empty((k, k))
        info[:-1, :-1] = self.xtwx(w_ee)
        info[:-1, -1] = info[-1, :-1] = self.xt(phi * w_ep)
        info[-1, -1] = i_tt
        return score, info


def _check(scores: object, squeeze_zeros: bool, systems: object, topics: object
           ) -> np.ndarray:
    """`scores` as float64 ``(systems, topics, replicates)``, refused with one line."""
    # C order: the sums below run in memory order, so a layout would change the last bits
    x = np.ascontiguousarray(scores, dtype=np.float64)
    if x.ndim == 2:
        x = x[..., None]
    if x.ndim != 3:
        raise InputError(f"scores must be (systems, topics) or (systems, topics, "
                         f"replicates), got shape {np.shape(scores)}")
    names = {"system": systems, "topic": topics}
    for axis, kind in enumerate(("system", "topic")):
        if x.shape[axis] < 2:
            raise InputError(f"beta regression needs >= 2 {kind}s, got {x.shape[axis]}")
        if names[kind] is not None and len(names[kind]) != x.shape[axis]:
            raise InputError(f"{len(names[kind])} {kind} names for {x.shape[axis]} "
                             f"{kind}s")
    if not np.isfinite(x).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise InputError(f"{int((~np.isfinite(x)).sum())} missing or non-finite score(s), "
                         f"first at index {bad}; beta regression needs every cell (drop the "
                         f"system or topic, or impute)")
    if ((x < 0) | (x > 1)).any():
        bad = tuple(int(i) for i in np.argwhere((x < 0) | (x > 1))[0])
        raise InputError(f"score {float(x[bad])!r} at index {bad} is outside [0, 1]: beta "
                         f"regression is for metrics in [0, 1]")
    if not squeeze_zeros and ((x == 0) | (x == 1)).any():
        bad = tuple(int(i) for i in np.argwhere((x == 0) | (x == 1))[0])
        raise InputError(f"score {float(x[bad])!r} at index {bad} is at the bound and "
                         f"squeeze=False: the beta density needs (0, 1)")
    for axis, kind in enumerate(("system", "topic")):
        other = (1 - axis, 2)
        for value in (0.0, 1.0):
            flat = (x == value).all(axis=other)
            if flat.any():
                i = int(np.argmax(flat))
                name = "" if names[kind] is None else f" {names[kind][i]!r}"
                raise InputError(f"{kind} {i}{name} scores {value:g} everywhere: its "
                                 f"effect's estimate is at {'-' if value == 0 else '+'}"
                                 f"infinity on the logit scale; drop it")
    if (x == x.flat[0]).all():
        raise InputError("every score is the same: no variance to fit a precision to")
    return x


def _start(cells: _Cells, y: np.ndarray) -> np.ndarray:
    """Ferrari & Cribari-Neto's start: OLS of ``logit y`` on the design (the additive fit
    of the cell means, balanced) and ``phi`` from its residuals."""
    z = special.logit(y)
    cm = z.mean(axis=-1)
    fit = cm.mean(axis=1, keepdims=True) + cm.mean(axis=0, keepdims=True) - cm.mean()
    coef = np.r_[fit[0, 0], fit[1:, 0] - fit[0, 0], fit[0, 1:] - fit[0, 0]]
    mu = special.expit(fit)[..., None]
    n, k = y.size, len(coef)
    dof = max(n - k, 1)
    sigma2 = ((z - fit[..., None]) ** 2).sum() / dof * (mu * (1.0 - mu)) ** 2
    with np.errstate(divide="ignore"):
        phi = float(np.mean(np.broadcast_to(mu * (1.0 - mu) / sigma2, y.shape))) - 1.0
    return np.r_[coef, math.log(phi) if np.isfinite(phi) and phi > 0 else 0.0]


def _cholesky(a: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of `a` by elementwise operations (a loop over columns, no
    BLAS): LAPACK's factorisation goes through the BLAS kernel of the CPU, whose rounding
    differs between kernels, and the fit must give the same tables on every CPU. Raises
    :class:`numpy.linalg.LinAlgError` when `a` is not positive definite."""
    n = len(a)
    low = np.zeros_like(a)
    for j in range(n):
        d = a[j, j] - np.square(low[j, :j]).sum()
        if not d > 0.0:
            raise np.linalg.LinAlgError("not positive definite")
        low[j, j] = np.sqrt(d)
        low[j + 1:, j] = (a[j + 1:, j] - (low[j + 1:, :j] * low[j, :j]).sum(axis=1)) / low[j, j]
    return low


def _cho_solve(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``low low' x = b`` (a vector or a matrix of columns) by substitution,
    elementwise as :func:`_cholesky`."""
    n = len(low)
    b = np.asarray(b, dtype=np.float64)
    y = b.reshape(n, -1).copy()
    for i in range(n):
        y[i] = (y[i] - (low[i, :i, None] * y[:i]).sum(axis=0)) / low[i, i]
    for i in range(n - 1, -1, -1):
        y[i] = (y[i] - (low[i + 1:, i, None] * y[i + 1:]).sum(axis=0)) / low[i, i]
    return y.reshape(b.shape)


def _maximise(cells: _Cells, params: np.ndarray, max_iter: int) -> tuple[np.ndarray, int]:
    """Newton steps on the observed information where it is positive definite, Fisher
    scoring (the expected information, always positive definite) where it is not; each step
    halved until the likelihood does not fall."""
    ll = cells.loglik(params)
    for it in range(1, max_iter + 1):
        score, info = cells.derivatives(params, observed=True)
        try:
            step = _cho_solve(_cholesky(info), score)
        except np.linalg.LinAlgError:
            score, info = cells.derivatives(params, observed=False)
            step = _cho_solve(_cholesky(info), score)
        for _ in range(60):
            new = params + step
            with np.errstate(over="ignore", invalid="ignore"):  # a step too far: NaN, halve
                new_ll = cells.loglik(new)
            if np.isfinite(new_ll) and new_ll >= ll - 1e-12 * abs(ll):
                break
            step = step / 2.0
        else:
            raise IrsimError("beta regression: no step increases the likelihood "
                             f"(iteration {it}); the data may be degenerate")
        params, ll = new, new_ll
        if np.max(np.abs(step)) < 1e-10 * (1.0 + np.max(np.abs(params))):
            return params, it
    raise IrsimError(f"beta regression did not converge in {max_iter} iterations")


def beta_regression(scores: object, *, squeeze: bool = True, information: str = "observed",
                    systems: object = None, topics: object = None, max_iter: int = 200
                    ) -> BetaRegression:
    """Beta regression (logit mean, one precision) with system and topic fixed effects.

    Parameters
    ----------
    scores : array_like, shape (systems, topics) or (systems, topics, replicates)
        Scores in [0, 1]; replicates are further observations of their cell's mean.
    squeeze : bool
        Map every score by ``(y (n - 1) + 1/2) / n`` (Smithson & Verkuilen 2006) so scores at
        0 or 1 can be fitted; with False a score at 0 or 1 is refused.
    information : {"observed", "expected"}
        Standard errors from the inverse observed information (statsmodels' default) or the
        expected (Fisher) information of Ferrari & Cribari-Neto.
    systems, topics : sequence of str, optional
        Names used in messages.
    max_iter : int
        Iterations before giving up (:class:`irsim.errors.IrsimError`).

    Returns
    -------
    BetaRegression

    Raises
    ------
    irsim.errors.InputError
        A score that is NaN or outside [0, 1], fewer than two systems or topics, or a system
        or topic that scores 0 (or 1) everywhere, with one line naming it.

    Examples
    --------
    >>> x = np.array([[0.2, 0.3, 0.1, 0.5], [0.4, 0.6, 0.3, 0.7], [0.2, 0.4, 0.1, 0.6]])
    >>> fit = beta_regression(x)
    >>> round(fit.phi, 1), fit.effect.round(3).tolist()
    (369.7, [-0.404, 0.575, -0.172])
    >>> beta_regression([[0.0, 0.0], [0.3, 0.5]], systems=["bm25", "dense"])
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: system 0 'bm25' scores 0 everywhere: its effect's estimate is \
at -infinity on the logit scale; drop it
    """
    if information not in INFORMATION:
        raise ConfigError(f"information must be one of {', '.join(INFORMATION)}, got "
                          f"{information!r}")
    x = _check(scores, squeeze, systems, topics)
    n = x.size
    y = squeeze_scores(x, n) if squeeze else x
    cells = _Cells(y)
    params, iterations = _maximise(cells, _start(cells, y), int(max_iter))
    _, info = cells.derivatives(params, observed=information == "observed")
    cov = _cho_solve(_cholesky(info), np.eye(len(info)))
    cov = (cov + cov.T) / 2.0
    s = cells.s
    coef = params[:-1]
    b = np.r_[0.0, coef[1:s]]
    c = _system_cov(cov, s)
    # var(b_i - mean b) = c_ii - 2 mean_j c_ij + mean c (no matrix product: see _cholesky)
    row = c.mean(axis=1)
    se = np.sqrt(np.maximum(np.diagonal(c) - 2.0 * row + row.mean(), 0.0))
    fitted = special.expit(cells.eta(coef))
    means = fitted.mean(axis=1)
    if squeeze:
        means = (means * n - 0.5) / (n - 1)
    return BetaRegression(coef, float(params[-1]), cov, b - b.mean(), se,
                          math.exp(params[-1]), cells.loglik(params), means, fitted, n,
                          bool(squeeze), information, iterations)
