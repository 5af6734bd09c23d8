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
  preset sets it, and irsim's rule before issue 29.

:func:`kept_runs` is the step every caller runs: duplicates go first (:func:`duplicate_mask`,
when asked), then the bottom share of the runs left (:func:`bottom_mask`). :func:`check_drop`
is the one check of its parameters (share and rule) in irsim's error vocabulary. The callers
keep their defaults: the studies (:func:`irsim.kit.topicsets.kept_systems`: reliability,
error_rates, effort, discpower) keep duplicates and take their ``drop_rule``
(:data:`DEFAULT_RULE`); the pair simulator (:func:`irsim.simulate.pairs.fit_simulator`,
design=shift, multiple_testing) drops duplicates and applies ``"quantile"``; the collection
generator (:func:`irsim.simulate.pair_copula_model.prepare_runs`, design=urbano2019) drops
duplicates and takes its ``drop_rule`` (default ``"quantile"``, recorded in its cache key).

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
>>> x = np.array([[.1, .2], [.5, .6], [.1, .2], [.3, .3], [.9, .8]])
>>> kept_runs(x, drop_duplicates=True, drop_bottom=0.25).tolist()  # run 2 = run 0; 1 of 4
[False, True, False, True, True]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from irsim.errors import ConfigError, InputError, param
from irsim.params import Choice

__all__ = ["DUPLICATE_TOL", "RULES", "DEFAULT_RULE", "check_share", "check_rule", "check_drop",
           "bottom_count", "bottom_mask", "duplicate_mask", "kept_runs"]

#: Two systems are duplicates when their scores differ by at most this on every topic.
DUPLICATE_TOL = 1e-5


class DropRule(Choice):
    """A bottom-share rule (see the module docstring)."""

    quantile = "quantile"
    count = "count"


RULES = DropRule.values()
#: The studies' rule unless ``drop_rule`` says otherwise: the paper's (Urbano's code).
DEFAULT_RULE = DropRule.quantile


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
        raise ConfigError(f"{name} must be a number in [0, 1), got {value!r}") from None
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


def check_drop(drop_bottom: Any, drop_rule: Any = DEFAULT_RULE, *,
               keys: tuple[str, str] | None = None) -> tuple[float, str]:
    """The parameters of :func:`kept_runs`, checked: the share (:func:`check_share`, inside
    [0, 1)) and the rule (:func:`check_rule`, one of :data:`RULES`), in that order.

    Parameters
    ----------
    drop_bottom : float
        Share of the runs left out by mean.
    drop_rule : str
        ``"quantile"`` or ``"count"``.
    keys : (str, str), optional
        The parameters' names in the messages; default ``drop_bottom`` and ``drop_rule`` as
        the caller wrote them (:func:`irsim.errors.param`: ``experiment.drop_bottom`` on the
        command line, ``drop_bottom`` from Python).

    Returns
    -------
    (float, str)
        The share and the rule.

    Examples
    --------
    >>> check_drop(0.25), check_drop("0.1", "count")
    ((0.25, 'quantile'), (0.1, 'count'))
    >>> check_drop(0.1, "floor", keys=("drop_bottom", "drop_rule"))
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: drop_rule must be one of quantile, count; got 'floor'
    """
    share_key, rule_key = (None, None) if keys is None else keys
    return check_share(drop_bottom, share_key), check_rule(drop_rule, rule_key)


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


def kept_runs(scores: ArrayLike, *, drop_duplicates: bool = False, drop_bottom: float = 0.0,
              rule: str = DEFAULT_RULE, keys: tuple[str, str] | None = None) -> np.ndarray:
    """Mask of the runs (systems) kept: first, when `drop_duplicates`, a run equal to an
    earlier kept run on every topic (within :data:`DUPLICATE_TOL`, :func:`duplicate_mask`)
    goes; then the bottom `drop_bottom` share of the runs left by mean score
    (:func:`bottom_mask` with `rule`; the share and the quantile count only the runs left).

    Parameters
    ----------
    scores : array_like, shape (runs, topics)
        Per-topic scores of one metric.
    drop_duplicates : bool
        Leave out duplicate runs first.
    drop_bottom : float
        Share of the remaining runs left out by mean, in [0, 1).
    rule : {"quantile", "count"}
        See the module docstring; each caller passes its own (:data:`DEFAULT_RULE` here).
    keys : (str, str), optional
        Names of the share and rule parameters in error messages (:func:`check_drop`).

    Returns
    -------
    ndarray of bool, shape (runs,)

    Raises
    ------
    ConfigError
        A share outside [0, 1) or an unknown rule (:func:`check_drop`).
    InputError
        `scores` not two-dimensional.

    Examples
    --------
    >>> x = np.array([[.3, .3], [.1, .1], [.2, .2], [.4, .4], [.1, .1]])
    >>> kept_runs(x, drop_bottom=0.25).tolist()   # quartile 0.1: no mean below it
    [True, True, True, True, True]
    >>> kept_runs(x, drop_duplicates=True, drop_bottom=0.25).tolist()  # quartile of 4: .175
    [True, False, True, True, False]
    >>> kept_runs(x, drop_bottom=0.25, rule="count").tolist()   # floor(1.25): 1 goes
    [True, False, True, True, True]
    """
    x = np.asarray(scores, np.float64)
    if x.ndim != 2:
        raise InputError(f"scores must be a (runs, topics) matrix, got shape {x.shape}")
    share, rule = check_drop(drop_bottom, rule, keys=keys)
    keep = duplicate_mask(x) if drop_duplicates else np.ones(len(x), bool)
    return bottom_mask(x.mean(axis=1), share, rule=rule, keep=keep)
