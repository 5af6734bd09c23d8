"""Simulated assessors: a grade-confusion model fitted from two qrels, and its draws.

The model (:func:`fit_assessor_model`) is the conditional distribution of another
assessor's grade given the reference's grade, ``P(b | a)``, estimated from the (topic,
passage) pairs both judged:

- **pooled** (the default): one ``L x L`` matrix over all topics,
  ``P(b | a) = (C[a, b] + prior) / (C[a, .] + L prior)`` with ``C`` the pooled confusion
  counts and ``prior`` the Dirichlet pseudo-count of every cell (``prior = 1``: add-one
  smoothing, so no grade is impossible; ``prior = 0``: the raw conditional shares, a row
  without data then falls back to the uniform distribution);
- **per topic**: one matrix per topic, each row shrunk towards the pooled row with
  ``L prior`` pseudo-observations: ``P_t(b | a) = (C_t[a, b] + L prior P(b | a)) /
  (C_t[a, .] + L prior)``; a grade (or a topic) without joint judgments takes the pooled
  row.

A simulated assessor relabels the reference's judgments: every judged passage gets a grade
drawn independently from the row of its reference grade (:func:`draw_grades`: one
uniform per passage, compared with the row's cumulative probabilities; no loop over
passages or trials). The uniforms come from :func:`irsim.rng.blocked_draws`, so trial ``i``
is the same however the trials are split into shards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError, InputError
from irsim.rng import blocked_draws

__all__ = ["AssessorModel", "fit_assessor_model", "draw_grades", "simulate_grades"]


@dataclass(frozen=True)
class AssessorModel:
    """A fitted assessor model.

    Attributes
    ----------
    scale : ndarray of int (L,)
        The grades, in order.
    counts : ndarray of int (L, L)
        Pooled confusion counts (rows: reference grade, columns: the other's grade).
    probs : ndarray (L, L)
        Pooled conditional probabilities ``P(other grade | reference grade)``.
    prior : float
        Dirichlet pseudo-count per cell.
    topics : tuple of str
        Topics of the per-topic model (empty for the pooled model).
    topic_counts, topic_probs : ndarray (T, L, L) or None
        Per-topic counts and smoothed conditionals (None for the pooled model).
    """

    scale: np.ndarray
    counts: np.ndarray
    probs: np.ndarray
    prior: float
    topics: tuple[str, ...] = ()
    topic_counts: np.ndarray | None = None
    topic_probs: np.ndarray | None = None

    @property
    def per_topic(self) -> bool:
        return self.topic_probs is not None

    def rows(self, grades: np.ndarray, topics: np.ndarray | None = None) -> np.ndarray:
        """The conditional row of every passage, shape (n, L): by its reference grade and,
        for a per-topic model, its topic (a topic outside the model: the pooled row).

        Examples
        --------
        >>> m = fit_assessor_model([0, 1, 1], [0, 1, 0], [0, 1], prior=0.0)
        >>> m.rows(np.array([1, 0])).tolist()
        [[0.5, 0.5], [1.0, 0.0]]
        """
        g = np.asarray(grades, np.int64)
        idx = np.searchsorted(self.scale, g)
        idx = np.minimum(idx, len(self.scale) - 1)
        if (self.scale[idx] != g).any():
            bad = int(g[self.scale[idx] != g][0])
            raise InputError(f"grade {bad} is outside the model's scale "
                             f"{self.scale.tolist()}")
        if not self.per_topic or topics is None:
            return self.probs[idx]
        pos = {t: i for i, t in enumerate(self.topics)}
        tc = np.array([pos.get(t, -1) for t in np.asarray(topics, dtype=object).tolist()],
                      dtype=np.int64)
        out = self.probs[idx]
        known = tc >= 0
        out[known] = self.topic_probs[tc[known], idx[known]]
        return out


def _smooth(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows of ``counts + prior`` normalised (a row summing to 0: uniform)."""
    num = counts + prior
    tot = num.sum(axis=-1, keepdims=True)
    L = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, num / np.where(tot > 0, tot, 1.0), 1.0 / L)


def fit_assessor_model(reference: np.ndarray, other: np.ndarray, scale: np.ndarray | list,
                       *, topics: np.ndarray | None = None, per_topic: bool = False,
                       prior: float = 1.0) -> AssessorModel:
    """Fit ``P(other grade | reference grade)`` from jointly judged passages.

    Parameters
    ----------
    reference, other : array_like of int (n,)
        The two assessors' grades of the same passages.
    scale : array_like of int
        The grade scale (every grade must be on it).
    topics : array_like (n,), optional
        Topic of every passage (required with ``per_topic``).
    per_topic : bool
        Fit one matrix per topic, shrunk towards the pooled one (module docstring).
    prior : float
        Dirichlet pseudo-count per cell (>= 0; 1 = add-one smoothing).

    Returns
    -------
    AssessorModel

    Examples
    --------
    >>> m = fit_assessor_model([0, 0, 1, 1, 1], [0, 1, 1, 1, 0], [0, 1], prior=1.0)
    >>> m.counts.tolist()
    [[1, 1], [1, 2]]
    >>> m.probs.round(3).tolist()  # (1+1)/(2+2), (1+1)/(3+2), (2+1)/(3+2)
    [[0.5, 0.5], [0.4, 0.6]]
    """
    a = np.asarray(reference, np.int64)
    b = np.asarray(other, np.int64)
    sc = np.unique(np.asarray(scale, np.int64))
    if a.shape != b.shape or a.ndim != 1:
        raise InputError("the two assessors' grades must be 1-d arrays of the same length")
    if len(a) == 0:
        raise InputError("the assessor model needs at least one passage judged by both")
    if isinstance(prior, bool) or not np.isfinite(prior) or prior < 0:
        raise ConfigError(f"the prior must be a number >= 0, got {prior!r}")
    L = len(sc)
    ia, ib = np.searchsorted(sc, a), np.searchsorted(sc, b)
    for g, i in ((a, ia), (b, ib)):
        i_c = np.minimum(i, L - 1)
        if (sc[i_c] != g).any():
            raise InputError(f"grade {int(g[sc[i_c] != g][0])} is outside the scale "
                             f"{sc.tolist()}")
    counts = np.bincount(ia * L + ib, minlength=L * L).reshape(L, L)
    probs = _smooth(counts.astype(np.float64), float(prior))
    if not per_topic:
        return AssessorModel(sc, counts, probs, float(prior))
    if topics is None:
        raise ConfigError("a per-topic assessor model needs the topics of the passages")
    tid, code = np.unique(np.asarray(topics, dtype=object).astype(str), return_inverse=True)
    T = len(tid)
    tc = np.bincount(code * L * L + ia * L + ib, minlength=T * L * L).reshape(T, L, L)
    # rows shrunk towards the pooled row with L * prior pseudo-observations
    tp = _smooth(tc.astype(np.float64), L * float(prior) * probs[None])
    if prior == 0:  # no shrinkage: a row without data takes the pooled row
        empty = tc.sum(axis=-1) == 0
        tp[empty] = np.broadcast_to(probs, tp.shape)[empty]
    return AssessorModel(sc, counts, probs, float(prior), tuple(tid.tolist()), tc, tp)


def draw_grades(rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Categorical draws: for every passage (column of `u`) the position on the scale whose
    cumulative probability first exceeds the uniform.

    Parameters
    ----------
    rows : ndarray (n, L)
        Each passage's conditional distribution.
    u : ndarray (trials, n)
        Uniforms in [0, 1).

    Returns
    -------
    ndarray of int (trials, n)
        Positions on the scale (0 .. L-1).

    Examples
    --------
    >>> rows = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
    >>> draw_grades(rows, np.array([[0.1, 0.1], [0.2, 0.9], [0.69, 0.0], [0.7, 0.5]])).tolist()
    [[0, 2], [1, 2], [1, 2], [2, 2]]
    """
    cum = np.cumsum(rows, axis=-1)[:, :-1]  # the last category takes the rest
    return (u[:, :, None] >= cum[None, :, :]).sum(axis=-1, dtype=np.int64)


def simulate_grades(model: AssessorModel, grades: np.ndarray, seed: int, study: str,
                    start: int, stop: int, *, topics: np.ndarray | None = None,
                    key: tuple[int, ...] = ()) -> np.ndarray:
    """Grades of trials ``start:stop`` of simulated assessors relabelling `grades`.

    Trial ``i`` uses row ``i`` of :func:`irsim.rng.blocked_draws` (one uniform per
    passage), so it does not depend on how the trials are split.

    Returns
    -------
    ndarray of int (stop - start, n)
        Grades on the model's scale.

    Examples
    --------
    >>> m = fit_assessor_model([0, 1, 1, 1], [0, 1, 1, 0], [0, 1])
    >>> g = np.array([0, 1, 1, 0, 1])
    >>> whole = simulate_grades(m, g, 1, "demo", 0, 300)
    >>> parts = np.concatenate([simulate_grades(m, g, 1, "demo", a, b)
    ...                         for a, b in [(0, 7), (7, 300)]])
    >>> bool((whole == parts).all()), whole.shape
    (True, (300, 5))
    """
    rows = model.rows(grades, topics)
    n = len(rows)
    u = blocked_draws(seed, study, tuple(key), start, stop, lambda rng, m: rng.random((m, n)))
    return model.scale[draw_grades(rows, u)]
