"""Aggregating per-topic scores into one score per system.

``mean``
    Arithmetic mean (MAP, mean nDCG ...).
``gmean``
    Geometric mean as Sakai uses it (GMAP, G-Q): ``exp(mean(log(x + 1e-5)))``.
``gmean_trec``
    trec_eval's ``gm_map``: ``exp(mean(log(max(x, 1e-5))))``.
``logit_mean``
    L-MAP (Cormack & Lynam 2006): ``mean(logit(clip(x, eps, 1 - eps)))``, on the logit
    scale (the paper gives no eps; ``eps=1e-5`` by default, configurable).
"""

from __future__ import annotations

import numpy as np

from irsim.errors import ConfigError, unknown_name

__all__ = ["aggregate", "AGGREGATES"]

AGGREGATES = ("mean", "gmean", "gmean_trec", "logit_mean")
_GM_EPS = 1e-5


def aggregate(values: np.ndarray, how: str = "mean", axis: int = -1, *,
              eps: float = 1e-5) -> np.ndarray:
    """Aggregate per-topic scores along ``axis``.

    Parameters
    ----------
    values : array_like
        Per-topic scores, topics along ``axis`` (e.g. a ScoreMatrix's values).
    how : {"mean", "gmean", "gmean_trec", "logit_mean"}
    axis : int, default -1
    eps : float, default 1e-5
        Clamp of ``logit_mean``: scores are clipped to ``[eps, 1 - eps]``.

    Returns
    -------
    ndarray
        ``values`` with ``axis`` removed.

    Examples
    --------
    >>> x = np.array([[0.0, 0.25, 1.0], [0.2, 0.2, 0.2]])
    >>> aggregate(x, "mean").round(4).tolist()
    [0.4167, 0.2]
    >>> aggregate(x, "gmean").round(4).tolist()
    [0.0136, 0.2]
    >>> aggregate(x, "gmean_trec").round(4).tolist()
    [0.0136, 0.2]
    >>> aggregate(x, "logit_mean", eps=0.01).round(4).tolist()
    [-0.3662, -1.3863]
    """
    x = np.asarray(values, dtype=np.float64)
    if how not in AGGREGATES:
        raise unknown_name("aggregate", str(how), AGGREGATES)
    if x.ndim == 0 or x.shape[axis] == 0:
        raise ConfigError("aggregate needs at least one topic")
    if how == "mean":
        return x.mean(axis=axis)
    if how == "gmean":
        return np.exp(np.log(x + _GM_EPS).mean(axis=axis))
    if how == "gmean_trec":
        return np.exp(np.log(np.maximum(x, _GM_EPS)).mean(axis=axis))
    if not 0 < eps < 0.5:
        raise ConfigError(f"eps must be in (0, 0.5), got {eps}")
    c = np.clip(x, eps, 1 - eps)
    return np.log(c / (1 - c)).mean(axis=axis)
