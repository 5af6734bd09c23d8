"""Fixed- and random-effects meta-analysis (inverse-variance weights; DerSimonian-Laird).

Cormack & Lynam (2006) propose to treat every topic as a separate experiment and combine
the per-topic effects ``d_i`` (e.g. ``logit(AP_x) - logit(AP_y)``) with their standard
errors ``sigma_i`` by meta-analysis (METHODS.md section 5):

- fixed effect: ``d = sum w_i d_i / sum w_i``, ``w_i = 1/sigma_i^2``,
  ``se = 1/sqrt(sum w_i)``;
- random effects (DerSimonian & Laird 1986): Cochran's ``Q = sum w_i (d_i - d_fixed)^2``,
  ``tau^2 = max(0, (Q - (k-1)) / (sum w - sum w^2 / sum w))``, then the fixed-effect
  formulas with ``w_i* = 1/(sigma_i^2 + tau^2)``.

Both are batched: arrays ``(..., k)`` in, ``(...)`` out. Entries with a non-finite effect
or a standard error that is not finite and positive are left out (``k`` counts the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from irsim.errors import InputError
from irsim.stats._validation import check_alternative, check_confidence_level
from irsim.stats.ci import ConfidenceInterval

__all__ = ["MetaResult", "fixed_effect", "random_effects", "meta_analysis"]


@dataclass(frozen=True)
class MetaResult:
    """A combined effect per row.

    Attributes
    ----------
    effect, standard_error : ndarray
    confidence_interval : ConfidenceInterval
        ``effect -+ z standard_error``.
    statistic : ndarray
        ``z = effect / standard_error``.
    pvalue : ndarray
        Normal p-value of ``z`` for the `alternative`.
    tau2 : ndarray
        Between-topic variance (0 for the fixed-effect model).
    q : ndarray
        Cochran's Q (heterogeneity) around the fixed-effect estimate.
    i2 : ndarray
        ``max(0, (Q - (k-1)) / Q)``.
    k : ndarray of int
        Effects combined.
    model : str
        ``"fixed"`` or ``"random"``.

    Examples
    --------
    >>> r = random_effects([[0.2, 0.5, 0.1], [0.0, 0.1, -0.1]], [[0.1, 0.2, 0.1]] * 2)
    >>> r.effect.shape, r.k.tolist(), r.model
    ((2,), [3, 3], 'random')
    """

    effect: np.ndarray
    standard_error: np.ndarray
    confidence_interval: ConfidenceInterval
    statistic: np.ndarray
    pvalue: np.ndarray
    tau2: np.ndarray
    q: np.ndarray
    i2: np.ndarray
    k: np.ndarray
    model: str


def _iv(d: object, se: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.asarray(d, np.float64)
    se = np.asarray(se, np.float64)
    if d.shape != se.shape:
        raise InputError(f"effects and standard errors differ in shape: {d.shape} vs "
                         f"{se.shape}")
    if d.ndim == 0:
        raise InputError("effects must have at least one axis (the studies/topics)")
    valid = np.isfinite(d) & np.isfinite(se) & (se > 0)
    return d, se, valid


def _combine(d: np.ndarray, var: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(valid, 1.0 / np.where(valid, var, 1.0), 0.0)
        sw = w.sum(axis=-1)
        effect = (w * np.where(valid, d, 0.0)).sum(axis=-1) / sw
        se = 1.0 / np.sqrt(sw)
    return effect, se, w, sw


def _result(effect, se, tau2, q, k, model, level, alternative) -> MetaResult:
    with np.errstate(divide="ignore", invalid="ignore"):
        z = effect / se
        df = k - 1.0
        i2 = np.where(q > 0, np.maximum(0.0, (q - df) / q), 0.0)
    if alternative == "two-sided":
        p = 2.0 * special.ndtr(-np.abs(z))
        zq = special.ndtri(0.5 + level / 2.0)
        low, high = effect - zq * se, effect + zq * se
    else:
        zq = special.ndtri(level)
        if alternative == "greater":
            p = special.ndtr(-z)
            low, high = effect - zq * se, np.full_like(effect, np.inf)
        else:
            p = special.ndtr(z)
            low, high = np.full_like(effect, -np.inf), effect + zq * se
    def out(a: np.ndarray) -> np.ndarray:
        return np.asarray(a)[()]

    return MetaResult(out(effect), out(se), ConfidenceInterval(out(low), out(high)), out(z),
                      out(p), out(tau2), out(q), out(i2), out(k.astype(np.int64)), model)


def fixed_effect(d: object, se: object, *, confidence_level: float = 0.95,
                 alternative: str = "two-sided") -> MetaResult:
    """Inverse-variance fixed-effect combination of effects `d` with standard errors `se`.

    Parameters
    ----------
    d, se : array_like, shape (..., k)
        Per-study (per-topic) effects and their standard errors.
    confidence_level : float
    alternative : {"two-sided", "greater", "less"}
        For the p-value (``greater``: the effect is positive) and one-sided intervals.

    Returns
    -------
    MetaResult

    Examples
    --------
    Weights ``1/0.1^2 = 100`` and ``1/0.2^2 = 25``: ``(100 * 0.2 + 25 * 0.5) / 125 = 0.26``,
    standard error ``1/sqrt(125)``.

    >>> r = fixed_effect([0.2, 0.5], [0.1, 0.2])
    >>> bool(np.isclose(r.effect, 0.26)), bool(np.isclose(r.standard_error, 125**-0.5))
    (True, True)
    """
    level = check_confidence_level(confidence_level)
    alternative = check_alternative(alternative)
    d, se, valid = _iv(d, se)
    effect, s, w, _ = _combine(d, se**2, valid)
    with np.errstate(invalid="ignore"):
        q = (w * np.where(valid, d - effect[..., None], 0.0) ** 2).sum(axis=-1)
    k = valid.sum(axis=-1)
    return _result(effect, s, np.zeros_like(effect), q, k, "fixed", level, alternative)


def random_effects(d: object, se: object, *, confidence_level: float = 0.95,
                   alternative: str = "two-sided") -> MetaResult:
    """DerSimonian-Laird random-effects combination (see the module docstring).

    Examples
    --------
    Weights 100, 100, 25, fixed effect ``110/225 = 22/45``, ``Q = 290/9``,
    ``sum w - sum w^2 / sum w = 400/3``: ``tau^2 = (290/9 - 2) / (400/3) = 17/75``, and the
    random effect weights by ``1/(sigma_i^2 + 17/75)``.

    >>> r = random_effects([0.1, 0.9, 0.4], [0.1, 0.1, 0.2])
    >>> w = 1 / (np.array([0.1, 0.1, 0.2]) ** 2 + 17 / 75)
    >>> bool(np.isclose(r.tau2, 17 / 75)), bool(np.isclose(r.effect, w @ [0.1, 0.9, 0.4] / w.sum()))
    (True, True)
    >>> float(random_effects([0.3, 0.3], [0.1, 0.2]).tau2)   # no heterogeneity
    0.0
    """
    level = check_confidence_level(confidence_level)
    alternative = check_alternative(alternative)
    d, se, valid = _iv(d, se)
    fe, _, w, sw = _combine(d, se**2, valid)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (w * np.where(valid, d - fe[..., None], 0.0) ** 2).sum(axis=-1)
        k = valid.sum(axis=-1)
        c = sw - (w**2).sum(axis=-1) / sw
        tau2 = np.where((k > 1) & (c > 0), np.maximum(0.0, (q - (k - 1)) / c), 0.0)
    effect, s, _, _ = _combine(d, se**2 + tau2[..., None], valid)
    return _result(effect, s, tau2, q, k, "random", level, alternative)


def meta_analysis(d: object, se: object, *, model: str = "random", **options) -> MetaResult:
    """:func:`fixed_effect` (``model="fixed"``) or :func:`random_effects` (``"random"``).

    Examples
    --------
    >>> meta_analysis([0.2, 0.5], [0.1, 0.2], model="fixed").model
    'fixed'
    """
    from irsim.stats._validation import check_choice

    model = check_choice("meta-analysis model", model, ("fixed", "random"))
    return (fixed_effect if model == "fixed" else random_effects)(d, se, **options)
