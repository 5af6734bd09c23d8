"""Which systems a study keeps: duplicates and the bottom share by mean score.

The one home of the rule every study and generator applies before it compares or simulates
systems (discpower's and error_rates' ``drop_bottom``, effort, reliability, the design=urbano2019
fit, the pair and collection simulators). Two rules for the bottom share (a study's
``drop_rule``):

- ``"quantile"`` (:data:`DEFAULT_RULE`, the paper's rule): a system goes when its mean is
  below the ``share`` quantile of the means, ``mean < quantile(means, share)``, with R's
  default type-7 quantile (numpy's default ``method="linear"``), as Urbano's code does
  (julian-urbano/sigir2019-statistical and his reliability code); the default of every study
  that drops a bottom share (reliability, error_rates, effort) and of the pair and collection
  simulators (design=shift, multiple_testing);
- ``"count"``: ``floor(share * k)`` systems with the lowest means go (ties: the earlier
  system first), ``k`` the systems left after duplicates; Sanderson & Zobel (2005), whose
  preset sets it, and irsim's rule before issue 29. The design=urbano2019 fit
  (:func:`irsim.simulate.pair_copula_model.prepare_runs`) still calls :func:`bottom_mask` with its
  keyword default ``"count"`` (its cache key does not record a rule).

On 47 systems with share 0.25 the quantile rule keeps 35 (the 12 below the first quartile
go; ``0.25 * 46 = 11.5`` interpolates between the 12th and 13th lowest), the count rule 36
(``floor(11.75) = 11`` go).

Examples
--------
>>> means = np.array([0.3, 0.1, 0.2, 0.4])
>>> bottom_mask(means, 0.25).tolist(), bottom_mask(means, 0.5, rule="quantile").tolist()
([True, False, True, True], [True, False, False, True])
>>> k47 = np.arange(47.0)
>>> int(bottom_mask(k47, 0.25, rule="quantile").sum()), int(bottom_mask(k47, 0.25).sum())
(35, 36)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from irsim.errors import ConfigError, param

__all__ = ["DUPLICATE_TOL", "RULES", "DEFAULT_RULE", "check_share", "check_rule",
           "bottom_count", "bottom_mask", "duplicate_mask"]

#: Two systems are duplicates when their scores differ by at most this on every topic.
DUPLICATE_TOL = 1e-5

#: The bottom-share rules (see the module docstring).
RULES = ("quantile", "count")
#: The studies' rule unless ``drop_rule`` says otherwise: the paper's (Urbano's code).
DEFAULT_RULE = "quantile"


def check_share(value: Any, key: str | None = None) -> float:
    """The share of systems left out, inside [0, 1). `key` names the parameter in the
    message (default: ``drop_bottom`` as the caller wrote it, :func:`irsim.errors.param`).

    Examples
    --------
    >>> check_share(0.25)
    0.25
    >>> check_share(1.0, "drop_bottom")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: drop_bottom must be in [0, 1), got 1.0
    """
    name = param("drop_bottom") if key is None else key
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be in [0, 1), got {value!r}") from None
    if not 0.0 <= share < 1.0:
        raise ConfigError(f"{name} must be in [0, 1), got {value}")
    return share


def check_rule(value: Any, key: str | None = None) -> str:
    """A bottom-share rule, one of :data:`RULES`. `key` names the parameter in the message
    (default: ``drop_rule`` as the caller wrote it, :func:`irsim.errors.param`).

    Examples
    --------
    >>> check_rule("count")
    'count'
    >>> check_rule("floor", "drop_rule")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: drop_rule must be one of quantile, count; got 'floor'
    """
    name = param("drop_rule") if key is None else key
    if not isinstance(value, str) or value not in RULES:
        raise ConfigError(f"{name} must be one of {', '.join(RULES)}; got {value!r}")
    return value


def bottom_count(systems: int, share: float) -> int:
    """Systems the ``"count"`` rule leaves out of `systems`: ``floor(share * systems)``
    (with a 1e-9 guard, so that 0.3 * 10 is 3).

    Examples
    --------
    >>> bottom_count(10, 0.3), bottom_count(47, 0.25)
    (3, 11)
    """
    return int(math.floor(float(share) * int(systems) + 1e-9))


def bottom_mask(means: np.ndarray, share: float, *, rule: str = "count",
                keep: np.ndarray | None = None) -> np.ndarray:
    """Mask of the systems kept after leaving out the bottom `share` by mean.

    Parameters
    ----------
    means : ndarray, shape (systems,)
        Each system's mean score.
    share : float
        In [0, 1) (:func:`check_share`).
    rule : {"count", "quantile"}
        See the module docstring (studies pass their ``drop_rule``, default
        :data:`DEFAULT_RULE`; the keyword default ``"count"`` serves the design=urbano2019
        fit until its cache key records the rule).
    keep : ndarray of bool, optional
        Systems still in play (e.g. after :func:`duplicate_mask`); the others stay out and
        do not count.

    Returns
    -------
    ndarray of bool
    """
    means = np.asarray(means, np.float64)
    out = np.ones(len(means), bool) if keep is None else np.array(keep, bool)
    if share <= 0:
        return out
    idx = np.flatnonzero(out)
    if rule == "count":
        drop = bottom_count(len(idx), share)
        if drop:
            out[idx[np.argsort(means[idx], kind="stable")[:drop]]] = False
    elif rule == "quantile":
        out &= means >= np.quantile(means[idx], share)
    else:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    return out


def duplicate_mask(scores: np.ndarray, tol: float = DUPLICATE_TOL) -> np.ndarray:
    """Mask of the systems kept when duplicates go: a system equal (within `tol` on every
    topic) to an earlier kept system is a duplicate.

    Examples
    --------
    >>> x = np.array([[.1, .2], [.5, .6], [.1, .2], [.3, .3]])
    >>> duplicate_mask(x).tolist()
    [True, True, False, True]
    """
    x = np.asarray(scores, np.float64)
    keep = np.ones(len(x), bool)
    for i in range(len(x) - 1):  # preparation, O(systems^2 topics): not a kernel
        if keep[i]:
            keep[i + 1:] &= ~(np.abs(x[i + 1:] - x[i]) <= tol).all(axis=1)
    return keep
