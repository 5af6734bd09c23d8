"""Bayesian tests of paired differences for many pairs at once (issue 28).

- :func:`jzs_bayes_factor`: the JZS Bayes factor of a paired (one-sample) design, Rouder
  et al. (2009) eq. 1, Cauchy prior of scale ``r`` on the standardised effect; every row
  in one vectorised quadrature (:func:`jzs_log_bf10`).
- :func:`bayes_t_posterior`: the posterior of the mean difference under the
  noninformative normal model (a shifted, scaled t with ``n - 1`` df), its credible
  interval (the HDI), ``P(delta > 0)``, ``P(delta in ROPE)`` and Kruschke's (2018)
  HDI+ROPE decision.
- :func:`bayesian_bootstrap`: Rubin's (1981) Bayesian bootstrap posterior of the mean
  difference (Dirichlet(1, ..., 1) weights), ``P(delta > 0)`` and the posterior
  probability decision.

Every result has a ``decision`` array of the same four labels, :data:`DECISIONS`:
``better`` (the mean of ``x - y`` is credibly positive), ``worse``, ``equivalent`` and
``undecided``; the rule that makes them is each function's parameter (Bayes factor
threshold 3 or 10, posterior probability 0.95, ROPE half-width) and is documented there.
These are not p-value tests: they are registered in :data:`irsim.stats.registry.BAYES_TESTS`,
apart from the significance tests that the studies take.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.rng import REPLICATE_BLOCK, blocked_draws
from irsim.stats._validation import (
    DEFAULT_MEMORY_BUDGET,
    check_confidence_level,
    check_int,
    monte_carlo_iv,
    paired_iv,
    row_chunks,
)
from irsim.stats.ttest import t_statistic

__all__ = [
    "DECISIONS",
    "DEFAULT_R",
    "BayesFactorResult",
    "TPosteriorResult",
    "BayesianBootstrapResult",
    "jzs_log_bf10",
    "jzs_bayes_factor",
    "bayes_t_posterior",
    "bayesian_bootstrap",
]

#: Rows of one GEMM of the Bayesian bootstrap (a fixed shape: see bayesian_bootstrap).
_ROW_UNIT = 64

#: Labels of the ``decision`` arrays, in the order of their integer codes.
DECISIONS = ("better", "worse", "equivalent", "undecided")
_BETTER, _WORSE, _EQUIVALENT, _UNDECIDED = range(4)

#: Rouder et al.'s (2009) default scale of the Cauchy prior on the effect size ("medium").
DEFAULT_R = math.sqrt(2.0) / 2.0

#: Quadrature of :func:`jzs_log_bf10`: trapezoid rule in ``x = log g`` from ``_X_LO`` to
#: ``max(0, log((t^2 - 1) / (n r^2))) + _X_TAIL`` with steps of at most ``_H_MAX``, the
#: number of nodes rounded up to a multiple of ``_NODE_STEP`` (so a row's nodes depend on
#: that row alone, never on the others in the call).
_X_LO, _X_TAIL, _H_MAX, _NODE_STEP = -6.0, 40.0, 0.3, 32

#: |t| at or above this gives BF10 = +inf (t^2 would overflow; a t statistic this large
#: only comes from (nearly) constant differences).
_T_MAX = 1e150

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _labels(code: np.ndarray) -> np.ndarray:
    return np.asarray(DECISIONS, dtype=object)[code].astype(str)


def _check_positive(name: str, value: object, *, strict: bool = True) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (strict and v == 0):
        raise ConfigError(f"{name} must be {'> 0' if strict else '>= 0'} and finite, got {v}")
    return v


def _check_threshold(threshold: object) -> float:
    v = _check_positive("threshold", threshold)
    if v < 1.0:
        raise ConfigError(f"threshold must be >= 1 (BF10 >= threshold: different, "
                          f"BF10 <= 1/threshold: equivalent), got {v}")
    return v


def _check_prob(prob: object) -> float:
    try:
        return check_confidence_level(prob)
    except ConfigError:
        raise ConfigError(f"prob must be a probability in (0, 1), got {prob!r}") from None


# ------------------------------------------------------------------------------ JZS BF
@dataclass(frozen=True)
class BayesFactorResult:
    """Result of :func:`jzs_bayes_factor` (arrays of the pairs' leading shape).

    Attributes
    ----------
    bf10 : ndarray
        Bayes factor of H1 (effect ~ Cauchy(0, r)) against H0 (effect = 0); ``+inf`` for
        constant non-zero differences, NaN for all-zero differences.
    log_bf10 : ndarray
        Its natural logarithm (finite where ``bf10`` overflows).
    statistic : ndarray
        The one-sample t statistic of the differences (:func:`irsim.stats.ttest.t_statistic`).
    decision : ndarray of str
        :data:`DECISIONS`: ``better``/``worse`` if ``bf10 >= threshold`` (sign of the mean),
        ``equivalent`` if ``bf10 <= 1/threshold``, else ``undecided``.
    n : int
    r : float
    threshold : float
    """

    bf10: np.ndarray
    log_bf10: np.ndarray
    statistic: np.ndarray
    decision: np.ndarray
    n: int
    r: float
    threshold: float

    @property
    def bf01(self) -> np.ndarray:
        """``1 / bf10``: the evidence for the null."""
        with np.errstate(divide="ignore"):
            return 1.0 / self.bf10


def _jzs_rows(t2: np.ndarray, nu: np.ndarray, a: np.ndarray, lo: np.ndarray, h: np.ndarray,
              nodes: int) -> np.ndarray:
    """log BF10 of rows sharing a node count: trapezoid sums in ``x = log g``.

    The integrand of Rouder et al.'s eq. 1 times the Jacobian ``g``, over the null
    likelihood, in logs: ``-log sqrt(2 pi) - x/2 - exp(-x)/2 - log(q)/2 - (nu + 1)/2 *
    log(nu/(nu + t^2) + t^2/((nu + t^2) q))`` with ``q = 1 + n r^2 g``.
    """
    x = lo[:, None] + h[:, None] * np.arange(nodes, dtype=np.float64)
    e = np.exp(x)
    q = 1.0 + a[:, None] * e
    log_q = np.log1p(a[:, None] * e)
    one_minus_s = (nu / (nu + t2))[:, None]
    s = (t2 / (nu + t2))[:, None]
    phi = np.log(one_minus_s + s / q)
    phi *= -0.5 * (nu + 1.0)[:, None]
    phi -= 0.5 * x
    phi -= 0.5 / e
    phi -= 0.5 * log_q
    top = phi.max(axis=1)
    np.exp(phi - top[:, None], out=phi)
    return top + np.log(phi.sum(axis=1)) + np.log(h) - _LOG_SQRT_2PI


def jzs_log_bf10(t: object, n: object, r: float = DEFAULT_R, *,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET) -> np.ndarray:
    """Natural log of the JZS Bayes factor BF10 of one-sample t statistics `t` on `n`
    observations (Rouder et al. 2009, eq. 1), for every element at once.

    ``BF10 = int_0^inf (1 + n g r^2)^(-1/2) (1 + t^2/((1 + n g r^2) nu))^(-(nu+1)/2)
    (2 pi)^(-1/2) g^(-3/2) exp(-1/(2g)) dg / (1 + t^2/nu)^(-(nu+1)/2)``, ``nu = n - 1``.

    Parameters
    ----------
    t : array_like
        t statistics (their sign is irrelevant); ``+-inf`` gives ``+inf``, NaN gives NaN.
    n : int or array_like of int
        Observations per statistic (>= 2), broadcast against `t`.
    r : float
        Scale of the Cauchy prior on the standardised effect (> 0).
    memory_budget : int
        Bytes of the (rows, nodes) work arrays.

    Returns
    -------
    ndarray of float64, the broadcast shape of `t` and `n` (a float for scalars)

    Notes
    -----
    One vectorised quadrature over all elements (no per-element ``scipy.integrate.quad``):
    the trapezoid rule in ``x = log g`` on ``[-6, max(0, log((t^2 - 1)/(n r^2))) + 40]``
    with a step of at most 0.3. The integrand in ``x`` is analytic in a strip around the
    real axis and decays double-exponentially to the left (the prior's ``exp(-1/(2g))``)
    and at least like ``exp(-x)`` past the likelihood's mode ``g = (t^2 - 1)/(n r^2)``, so
    the rule converges geometrically: relative error below 1e-11 against adaptive
    ``scipy.integrate.quad`` for n = 2 .. 1000, |t| = 0 .. 1e8, r = 0.1 .. 2 (tests).
    The sum is taken in logs, so a BF10 of 1e1000 still has its logarithm.

    Examples
    --------
    The sleep data (Student 1908), paired, t = -4.0621 on n = 10: the BayesFactor R
    package prints 17.25888 (``ttestBF(..., paired = TRUE)``).

    >>> round(float(np.exp(jzs_log_bf10(-4.062127683382037, 10))), 5)
    17.25888
    >>> np.exp(jzs_log_bf10([0.0, 2.0, np.inf], 20)).round(4).tolist()
    [0.2323, 1.2058, inf]
    """
    r = _check_positive("r", r)
    memory_budget = check_int("memory_budget", memory_budget, 1)
    try:
        ta = np.asarray(t, dtype=np.float64)
        na = np.asarray(n)
    except (TypeError, ValueError) as exc:
        raise InputError(f"t and n must be numeric arrays ({exc})") from None
    if na.dtype.kind not in "iuf" or not np.all(np.isfinite(na)) or np.any(na != np.round(na)):
        raise InputError(f"n must hold integers, got {n!r}")
    if np.any(na < 2):
        raise InputError(f"n must be >= 2 (n - 1 degrees of freedom), got min {na.min()}")
    ta, na = np.broadcast_arrays(ta, na.astype(np.float64))
    shape = ta.shape
    tf, nf = np.abs(ta.ravel()), na.ravel()
    out = np.full(tf.shape, np.nan)
    out[tf >= _T_MAX] = np.inf
    ok = np.flatnonzero(tf < _T_MAX)  # NaN compares False: stays NaN
    if ok.size:
        t2, nu = tf[ok] ** 2, nf[ok] - 1.0
        a = nf[ok] * r * r
        with np.errstate(divide="ignore"):
            mode = np.log(np.maximum(t2 - 1.0, 0.0) / a)
        hi = np.maximum(mode, 0.0) + _X_TAIL
        need = np.ceil((hi - _X_LO) / _H_MAX).astype(np.int64) + 1
        nodes = -(-need // _NODE_STEP) * _NODE_STEP
        for k in np.unique(nodes):
            idx = np.flatnonzero(nodes == k)
            h = (hi[idx] - _X_LO) / (k - 1)
            lo = np.full(idx.size, _X_LO)
            for rows in row_chunks(idx.size, 48 * int(k), memory_budget):
                sel = idx[rows]
                out[ok[sel]] = _jzs_rows(t2[sel], nu[sel], a[sel], lo[rows], h[rows], int(k))
    out = out.reshape(shape)
    return out[()] if out.ndim == 0 else out


def jzs_bayes_factor(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    r: float = DEFAULT_R,
    threshold: float = 3.0,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> BayesFactorResult:
    """JZS Bayes factor of ``mean(x - y) = 0`` for every pair (row) at once.

    The paired design of Rouder et al. (2009): the differences are normal with unknown
    variance (Jeffreys prior), H0: effect size ``delta = 0``, H1: ``delta ~ Cauchy(0, r)``.
    BF10 depends on the data through the one-sample t statistic and n only
    (:func:`jzs_log_bf10`).

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Per-topic scores of the two systems of each pair; if `y` is None, `x` holds the
        differences. n >= 2.
    r : float
        Cauchy prior scale (default ``sqrt(2)/2``, "medium"; 1 is Rouder et al.'s
        original JZS, 0.5 expects small effects).
    threshold : float
        Decision rule (>= 1; Jeffreys' 3 "substantial" or 10 "strong"): ``better`` /
        ``worse`` (by the sign of the mean difference) if ``BF10 >= threshold``,
        ``equivalent`` if ``BF10 <= 1/threshold`` (evidence for the null), else
        ``undecided``.
    memory_budget : int
        Bytes of the quadrature's work arrays.

    Returns
    -------
    BayesFactorResult
        A row of constant non-zero differences has ``t = +-inf`` and ``BF10 = +inf``
        (better/worse); a row of zeros ``t = NaN``, ``BF10 = NaN`` and ``undecided``,
        as :func:`irsim.stats.ttest.paired_t` gives p = NaN (never significant).

    Examples
    --------
    >>> x = np.array([0.7, 0.3, 0.2, 0.6, 0.4, 0.4, 0.0, 0.7, 0.1, 0.5])
    >>> y = np.array([0.5, 0.1, 0.0, 0.2, 0.4, 0.3, 0.0, 0.5, 0.3, 0.5])
    >>> b = jzs_bayes_factor(x, y)
    >>> round(float(b.statistic), 4), round(float(b.bf10), 4), str(b.decision)
    (2.0913, 1.4304, 'undecided')
    >>> z = np.array([[0.1, 0.3, 0.2, 0.4, 0.2], [0.1, -0.1, 0.05, -0.05, 0.0]])
    >>> b = jzs_bayes_factor(z, threshold=3)
    >>> b.bf10.round(3).tolist(), b.decision.tolist()
    ([7.451, 0.397], ['better', 'undecided'])
    """
    r = _check_positive("r", r)
    threshold = _check_threshold(threshold)
    d = paired_iv(x, y, min_n=2)
    n = d.n
    t = np.atleast_1d(t_statistic(d.values))
    log_bf = np.atleast_1d(jzs_log_bf10(t, n, r, memory_budget=memory_budget))
    log_bf = np.where(np.isnan(t), np.nan, log_bf)
    with np.errstate(over="ignore"):
        bf = np.exp(log_bf)
    log_k = math.log(threshold)
    code = np.full(t.shape, _UNDECIDED, np.int64)
    code[log_bf >= log_k] = np.where(t[log_bf >= log_k] > 0, _BETTER, _WORSE)
    code[log_bf <= -log_k] = _EQUIVALENT  # threshold 1: BF10 = 1 exactly counts as null
    return BayesFactorResult(d.out(bf), d.out(log_bf), d.out(t), d.out(_labels(code)), n, r,
                             threshold)


# ---------------------------------------------------------------------- t posterior
@dataclass(frozen=True)
class TPosteriorResult:
    """Result of :func:`bayes_t_posterior` (arrays of the pairs' leading shape).

    Attributes
    ----------
    mean : ndarray
        Posterior mean (and mode, median) of the mean difference: ``mean(z)``.
    scale : ndarray
        Scale of the t posterior, ``sd(z)/sqrt(n)`` (0 for constant differences).
    low, high : ndarray
        The ``prob`` highest-density (= equal-tailed, the posterior is symmetric) interval.
    prob_positive : ndarray
        ``P(delta > 0 | z)``.
    prob_rope : ndarray
        ``P(-rope <= delta <= rope | z)``.
    decision : ndarray of str
        Kruschke's HDI+ROPE rule (:func:`bayes_t_posterior`).
    df : int
        ``n - 1``.
    rope, prob : float
    """

    mean: np.ndarray
    scale: np.ndarray
    low: np.ndarray
    high: np.ndarray
    prob_positive: np.ndarray
    prob_rope: np.ndarray
    decision: np.ndarray
    df: int
    rope: float
    prob: float


def _hdi_rope(low: np.ndarray, high: np.ndarray, rope: float) -> np.ndarray:
    code = np.full(low.shape, _UNDECIDED, np.int64)
    code[low > rope] = _BETTER
    code[high < -rope] = _WORSE
    code[(low >= -rope) & (high <= rope)] = _EQUIVALENT
    return code


def bayes_t_posterior(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    rope: float = 0.0,
    prob: float = 0.95,
) -> TPosteriorResult:
    """Posterior of the mean difference ``delta`` under the noninformative normal model,
    for every pair (row) at once, with Kruschke's (2018) HDI+ROPE decision.

    Differences ``z_i ~ N(delta, sigma^2)`` with the prior ``p(delta, sigma^2) ∝
    1/sigma^2``: the marginal posterior of ``delta`` is ``mean(z) + sd(z)/sqrt(n) * T``
    with ``T`` Student's t on ``n - 1`` df (Gelman et al., BDA3 section 3.2). The HDI is
    the equal-tailed interval ``mean -+ t_{(1+prob)/2, n-1} * sd/sqrt(n)``, numerically the
    t confidence interval.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores of the two systems of each pair (or differences in `x`), n >= 2.
    rope : float
        Half-width of the region of practical equivalence ``[-rope, rope]`` (>= 0), in the
        units of the scores (e.g. 0.01 AP).
    prob : float
        Mass of the HDI, in (0, 1).

    Returns
    -------
    TPosteriorResult
        ``decision``, with ``[low, high]`` the HDI: ``better`` if ``low > rope``,
        ``worse`` if ``high < -rope`` (the HDI excludes the ROPE on one side),
        ``equivalent`` if ``-rope <= low`` and ``high <= rope`` (the HDI inside the
        closed ROPE), else ``undecided``. With ``rope = 0`` nothing is equivalent except a
        row of zeros, and better/worse are the two-sided t test at ``alpha = 1 - prob``
        with its direction. Constant differences ``c`` (``sd = 0``, or below the t
        test's :data:`~irsim.stats.resample.ZERO_VAR_RTOL`) have the point posterior at
        ``c``: HDI ``[c, c]``, ``P(delta > 0) = [c > 0]``, ``P(ROPE) = [|c| <= rope]``.

    Examples
    --------
    >>> x = np.array([0.7, 0.3, 0.2, 0.6, 0.4, 0.4, 0.0, 0.7, 0.1, 0.5])
    >>> y = np.array([0.5, 0.1, 0.0, 0.2, 0.4, 0.3, 0.0, 0.5, 0.3, 0.5])
    >>> p = bayes_t_posterior(x, y, rope=0.02)
    >>> round(float(p.low), 4), round(float(p.high), 4), round(float(p.prob_positive), 4)
    (-0.009, 0.229, 0.967)
    >>> round(float(p.prob_rope), 4), str(p.decision)
    (0.0429, 'undecided')
    >>> bayes_t_posterior(x - y, prob=0.9).decision.item()
    'better'
    """
    rope = _check_positive("rope", rope, strict=False)
    prob = _check_prob(prob)
    d = paired_iv(x, y, min_n=2)
    z, n = d.values, d.n
    mean = z.mean(axis=-1)
    t = np.atleast_1d(t_statistic(z))
    constant = ~np.isfinite(t)
    scale = np.where(constant, 0.0, z.std(axis=-1, ddof=1) / math.sqrt(n))
    df = n - 1
    half = float(sps.t.ppf(0.5 + prob / 2.0, df)) * scale
    low, high = mean - half, mean + half
    safe = np.where(constant, 1.0, scale)
    p_pos = np.where(constant, (mean > 0).astype(np.float64), sps.t.cdf(mean / safe, df))
    # P(-rope <= delta <= rope): difference of survival functions on the far side of the
    # mean keeps the precision of small tails
    up, dn = (rope - mean) / safe, (-rope - mean) / safe
    p_rope = np.where(mean >= 0, sps.t.cdf(up, df) - sps.t.cdf(dn, df),
                      sps.t.sf(dn, df) - sps.t.sf(up, df))
    p_rope = np.where(constant, (np.abs(mean) <= rope).astype(np.float64),
                      np.clip(p_rope, 0.0, 1.0))
    code = _hdi_rope(low, high, rope)
    return TPosteriorResult(d.out(mean), d.out(scale), d.out(low), d.out(high), d.out(p_pos),
                            d.out(p_rope), d.out(_labels(code)), df, rope, prob)


# -------------------------------------------------------------- Bayesian bootstrap
@dataclass(frozen=True)
class BayesianBootstrapResult:
    """Result of :func:`bayesian_bootstrap` (arrays of the pairs' leading shape).

    Attributes
    ----------
    mean : ndarray
        Monte Carlo posterior mean of ``delta`` (the average of the B weighted means).
    sd : ndarray
        Monte Carlo posterior standard deviation (ddof=1 over the B draws).
    prob_positive : ndarray
        Share of draws with ``delta > 0``.
    prob_negative : ndarray
        Share of draws with ``delta < 0``.
    prob_rope : ndarray
        Share of draws with ``-rope <= delta <= rope``.
    prob_better, prob_worse : ndarray
        Shares of draws with ``delta > rope`` and ``delta < -rope`` (with
        ``prob_rope``, they sum to 1).
    decision : ndarray of str
        Posterior probability rule (:func:`bayesian_bootstrap`).
    n_resamples : int
        ``B``.
    rope, prob : float
    """

    mean: np.ndarray
    sd: np.ndarray
    prob_positive: np.ndarray
    prob_negative: np.ndarray
    prob_rope: np.ndarray
    prob_better: np.ndarray
    prob_worse: np.ndarray
    decision: np.ndarray
    n_resamples: int
    rope: float
    prob: float


def dirichlet_weights(seed: int, study: str, n: int, start: int, stop: int, *,
                      key: tuple[int, ...] = ()) -> np.ndarray:
    """Dirichlet(1, ..., 1) weights of Bayesian bootstrap draws ``start:stop`` over `n`
    topics: normalised standard exponentials, drawn in blocks of
    :data:`~irsim.rng.REPLICATE_BLOCK` keyed by ``(n, *key, block)`` (as
    :func:`irsim.sampling.topics.bootstrap_indices`), so draw ``b`` is the same however
    the draws are chunked.

    Returns
    -------
    ndarray of float64, shape (stop - start, n); rows sum to 1 (to rounding)

    Examples
    --------
    >>> w = dirichlet_weights(0, "demo", 4, 0, 3)
    >>> w.shape, np.allclose(w.sum(axis=1), 1.0)
    ((3, 4), True)
    >>> bool((dirichlet_weights(0, "demo", 4, 250, 260)
    ...       == dirichlet_weights(0, "demo", 4, 0, 500)[250:260]).all())
    True
    """

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        e = rng.standard_exponential((m, n))
        return e / e.sum(axis=1, keepdims=True)

    return blocked_draws(seed, study, (n, *key), start, stop, draw)


def bayesian_bootstrap(
    x: np.ndarray,
    y: np.ndarray | None = None,
    *,
    rope: float = 0.0,
    prob: float = 0.95,
    B: int = 4000,
    seed: int = 0,
    study: str = "stats/bayesian_bootstrap",
    key: tuple[int, ...] = (),
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> BayesianBootstrapResult:
    """Rubin's (1981) Bayesian bootstrap of the mean difference for every pair (row).

    Each draw ``b`` puts Dirichlet(1, ..., 1) weights ``w_b`` on the n topics and gives
    the posterior draw ``delta_b = sum_i w_bi z_i``; one set of weights serves every pair
    (as the bootstrap tests share their samples), and the draws of a chunk are one GEMM
    ``(z - mean(z)) @ W.T``. The weights come from :func:`dirichlet_weights` in fixed
    blocks, so no result depends on the chunking or the memory budget.

    Parameters
    ----------
    x, y : array_like, shape (..., n)
        Scores of the two systems of each pair (or differences in `x`), n >= 2.
    rope : float
        Half-width of the region of practical equivalence (>= 0).
    prob : float
        Posterior probability of the decision rule, in (0, 1).
    B : int
        Posterior draws.
    seed, study, key
        Random stream of the weights (shared by all pairs with the same n).
    memory_budget : int
        Bytes for one chunk of weights and draws.

    Returns
    -------
    BayesianBootstrapResult
        ``decision``: ``better`` if ``P(delta > rope) >= prob``, ``worse`` if
        ``P(delta < -rope) >= prob``, ``equivalent`` if ``P(-rope <= delta <= rope) >=
        prob``, else ``undecided`` (the shares of the B draws; with ``rope = 0``,
        ``better`` is ``P(delta > 0) >= prob``; for ``prob < 1/2`` the largest share that
        reaches `prob` decides). A row of constant differences ``c`` has
        every draw equal to ``c`` exactly.

    Notes
    -----
    The posterior mean of ``delta`` is ``mean(z)`` and its variance ``sum (z_i -
    mean(z))^2 / (n (n + 1))`` (Dirichlet moments); the Monte Carlo ``mean`` and ``sd``
    estimate them (tests).

    Examples
    --------
    >>> x = np.array([0.7, 0.3, 0.2, 0.6, 0.4, 0.4, 0.0, 0.7, 0.1, 0.5])
    >>> y = np.array([0.5, 0.1, 0.0, 0.2, 0.4, 0.3, 0.0, 0.5, 0.3, 0.5])
    >>> b = bayesian_bootstrap(x, y, B=4000, seed=1)
    >>> round(float(b.mean), 3), round(float(b.sd), 3), round(float(b.prob_positive), 3)
    (0.111, 0.047, 0.989)
    >>> str(b.decision), str(bayesian_bootstrap(x, y, rope=0.05, seed=1).decision)
    ('better', 'undecided')
    """
    rope = _check_positive("rope", rope, strict=False)
    prob = _check_prob(prob)
    mc = monte_carlo_iv(B=B, seed=seed, study=study, pvalue_mode="count",
                        memory_budget=memory_budget, key=key)
    d = paired_iv(x, y, min_n=2)
    z, n = d.values, d.n
    zbar = z.mean(axis=-1)
    w = z - zbar[:, None]
    rows = len(z)
    s1 = np.zeros(rows)
    s2 = np.zeros(rows)
    above = np.zeros(rows, np.int64)
    below = np.zeros(rows, np.int64)
    pos = np.zeros(rows, np.int64)
    neg = np.zeros(rows, np.int64)
    # delta_b - mean(z) = w . w_b; compare with the thresholds moved by -mean(z)
    hi_rope, lo_rope = rope - zbar, -rope - zbar
    # GEMMs of a fixed shape (64 rows x one block of 250 draws), their sums added in block
    # order: the floats do not depend on the memory budget (the chunks below group whole
    # blocks), and the counts compare each draw with its threshold
    for start, stop in mc.replicate_chunks(8 * n + 8 * rows):
        weights = dirichlet_weights(mc.seed, mc.study, n, start, stop, key=mc.key)
        wt = np.ascontiguousarray(weights.T)
        for r0 in range(0, rows, _ROW_UNIT):
            rs = slice(r0, min(rows, r0 + _ROW_UNIT))
            for b0 in range(0, stop - start, REPLICATE_BLOCK):
                dev = w[rs] @ wt[:, b0:b0 + REPLICATE_BLOCK]  # delta_b - mean(z)
                s1[rs] += dev.sum(axis=1)
                s2[rs] += (dev * dev).sum(axis=1)
                above[rs] += np.count_nonzero(dev > hi_rope[rs, None], axis=1)
                below[rs] += np.count_nonzero(dev < lo_rope[rs, None], axis=1)
                pos[rs] += np.count_nonzero(dev > -zbar[rs, None], axis=1)
                neg[rs] += np.count_nonzero(dev < -zbar[rs, None], axis=1)
    B = mc.B
    mean = zbar + s1 / B
    var = (s2 - s1 * s1 / B) / (B - 1) if B > 1 else np.zeros(rows)
    sd = np.sqrt(np.maximum(var, 0.0))
    inside = B - above - below
    code = np.full(rows, _UNDECIDED, np.int64)
    # the three shares sum to 1: with prob > 1/2 at most one reaches it; below 1/2 the
    # largest share decides (ties: better, worse, equivalent in this order)
    for c, share in ((_EQUIVALENT, inside), (_WORSE, below), (_BETTER, above)):
        win = (share >= prob * B) & (share >= np.maximum.reduce([inside, below, above]))
        code[win] = c
    return BayesianBootstrapResult(d.out(mean), d.out(sd), d.out(pos / B), d.out(neg / B),
                                   d.out(inside / B), d.out(above / B), d.out(below / B),
                                   d.out(_labels(code)), B, rope, prob)
