"""Simulated assessors: a grade-confusion model fitted from two qrels, and its draws.

The model (:func:`fit_assessor_model`) is the conditional distribution of another
assessor's grade given the reference's grade, ``P(b | a)``, estimated from the (topic,
passage) pairs both judged:

- **pooled**: one ``L x L`` matrix over all topics,
  ``P(b | a) = (C[a, b] + prior) / (C[a, .] + L prior)`` with ``C`` the pooled confusion
  counts and ``prior`` the Dirichlet pseudo-count of every cell (``prior = 1``: add-one
  smoothing, so no grade is impossible; ``prior = 0``: the raw conditional shares, a row
  without data then falls back to the uniform distribution);
- **depth bins** (optional): the rows are conditioned as well on a bin of the passage's
  rank depth ``s`` (the best rank any run gave it, :func:`depth_bins`), each bin's row
  shrunk towards the pooled row with ``L prior`` pseudo-observations:
  ``P(b | s, a) = (C[s, a, b] + L prior P(b | a)) / (C[s, a, .] + L prior)``;
- **per topic** (hierarchical): the other assessor's row on topic ``t`` is a draw from a
  Dirichlet centred on the pooled (or bin) row with concentration ``alpha_a``, so the
  topic's counts are Dirichlet-multinomial; its posterior mean is
  ``P_t(b | s, a) = (C_t[s, a, b] + alpha_a P(b | s, a)) / (C_t[s, a, .] + alpha_a)``.
  ``alpha_a`` (one per reference grade: how much topics differ in that row) is either
  given or estimated by maximising the Dirichlet-multinomial marginal likelihood of the
  topics' counts (:func:`estimate_concentration`: a small ``alpha`` means topics disagree
  in their own way, a large one that they share the pooled row). A grade, bin or topic
  without joint judgments takes the pooled (bin) row.

A simulated assessor relabels the reference's judgments: every judged passage gets a grade
drawn independently from its row (:func:`draw_grades`: one uniform per passage, compared
with the row's cumulative probabilities; no loop over passages or trials). The uniforms come
from :func:`irsim.rng.blocked_draws`, so trial ``i`` is the same however the trials are split
into shards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from irsim.errors import ConfigError, InputError
from irsim.rng import blocked_draws

__all__ = ["AssessorModel", "fit_assessor_model", "estimate_concentration", "depth_bins",
           "draw_grades", "simulate_grades", "CONCENTRATION_GRID"]

#: Concentrations tried by :func:`estimate_concentration` (log-spaced, 0.01 .. 1e5).
CONCENTRATION_GRID = 10.0 ** np.linspace(-2.0, 5.0, 281)


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
    topic_counts, topic_probs : ndarray (T, D, L, L) or None
        Per-topic (and depth-bin) counts and posterior-mean conditionals (None for the
        pooled model).
    depth_edges : tuple of int
        Upper edges of the depth bins (empty: no depth bins, ``D = 1``).
    bin_counts, bin_probs : ndarray (D, L, L)
        Counts and conditionals per depth bin (``D = 1``: the pooled ones).
    concentration : ndarray (L,) or None
        ``alpha_a`` of the per-topic model, per reference grade.
    """

    scale: np.ndarray
    counts: np.ndarray
    probs: np.ndarray
    prior: float
    topics: tuple[str, ...] = ()
    topic_counts: np.ndarray | None = None
    topic_probs: np.ndarray | None = None
    depth_edges: tuple[int, ...] = ()
    bin_counts: np.ndarray | None = None
    bin_probs: np.ndarray | None = None
    concentration: np.ndarray | None = None

    @property
    def per_topic(self) -> bool:
        return self.topic_probs is not None

    @property
    def bins(self) -> int:
        """Number of depth bins (1 without depth)."""
        return len(self.depth_edges) + 1

    def rows(self, grades: np.ndarray, topics: np.ndarray | None = None,
             bins: np.ndarray | None = None) -> np.ndarray:
        """The conditional row of every passage, shape (n, L): by its reference grade, its
        depth bin (required with depth bins) and, for a per-topic model, its topic (a topic
        outside the model: the pooled or bin row).

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
        if self.bins > 1:
            if bins is None:
                raise ConfigError("a depth-bin assessor model needs the passages' depth bins")
            b = np.asarray(bins, np.int64)
        else:
            b = np.zeros(len(g), np.int64)
        table = self.bin_probs if self.bin_probs is not None else self.probs[None]
        out = table[b, idx]
        if not self.per_topic or topics is None:
            return out
        names = np.asarray(self.topics, dtype=str)  # sorted (np.unique in the fit)
        want = np.asarray(topics, dtype=object).astype(str)
        tc = np.minimum(np.searchsorted(names, want), len(names) - 1)
        known = names[tc] == want
        out[known] = self.topic_probs[tc[known], b[known], idx[known]]
        return out


def _smooth(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows of ``counts + prior`` normalised (a row summing to 0: uniform)."""
    num = counts + prior
    tot = num.sum(axis=-1, keepdims=True)
    L = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, num / np.where(tot > 0, tot, 1.0), 1.0 / L)


def depth_bins(best_rank: np.ndarray, edges: tuple[int, ...] | list[int]) -> np.ndarray:
    """The depth bin of every passage from the best rank any run gave it: bin ``k`` holds
    ranks ``edges[k-1] + 1 .. edges[k]``; the last bin the ranks beyond the last edge and
    the passages no run retrieved (rank ``inf``, or any value > the last edge).

    Examples
    --------
    >>> depth_bins(np.array([1, 10, 11, 100, 101, np.inf]), [10, 100]).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    return np.searchsorted(np.asarray(edges, np.float64), np.asarray(best_rank, np.float64),
                           side="left").astype(np.int64)


def estimate_concentration(topic_counts: np.ndarray, mean: np.ndarray,
                           grid: np.ndarray = CONCENTRATION_GRID) -> np.ndarray:
    """Maximum-likelihood concentration per reference grade of the Dirichlet-multinomial
    whose mean is `mean`.

    Every topic's (and bin's) row ``C_t[s, a, :]`` is taken as Dirichlet-multinomial with
    mean ``mean[s, a]`` and concentration ``alpha_a``; the log marginal likelihood summed
    over topics and bins is evaluated on `grid` (all grid points, topics, bins and grades at
    once) and the best grid point is kept per grade.

    Parameters
    ----------
    topic_counts : ndarray (T, D, L, L)
    mean : ndarray (D, L, L)
    grid : ndarray (G,)

    Returns
    -------
    ndarray (L,)
        ``alpha_a`` (a grade without joint judgments: the largest grid point).

    Examples
    --------
    Topics that all follow the mean give a large concentration; topics that each stick to
    one grade a small one:

    >>> same = np.tile(np.array([[[[5, 5], [5, 5]]]]), (6, 1, 1, 1))
    >>> mean = np.full((1, 2, 2), 0.5)
    >>> float(estimate_concentration(same, mean)[0]) > 1000
    True
    >>> apart = np.array([[[[10, 0], [10, 0]]]], np.int64).repeat(6, axis=0)
    >>> apart[::2] = apart[::2, :, :, ::-1]
    >>> float(estimate_concentration(apart, mean)[0]) < 0.1
    True
    """
    c = np.asarray(topic_counts, np.float64)[None]  # (1, T, D, L, L)
    m = np.asarray(mean, np.float64)[None, None]  # (1, 1, D, L, L)
    a = np.asarray(grid, np.float64)[:, None, None, None, None]  # (G, 1, 1, 1, 1)
    am = a * m
    pos = m > 0  # a zero mean cell has zero counts: its terms vanish
    with np.errstate(divide="ignore", invalid="ignore"):
        cell = np.where(pos, gammaln(c + np.where(pos, am, 1.0)) - gammaln(np.where(pos, am, 1.0)),
                        0.0).sum(axis=-1)  # (G, T, D, L)
    n = c.sum(axis=-1)
    a4 = a[..., 0]
    ll = (gammaln(a4) - gammaln(n + a4) + cell) * (n > 0)
    total = ll.sum(axis=(1, 2))  # (G, L)
    best = np.asarray(grid)[np.argmax(total, axis=0)]
    empty = np.asarray(topic_counts).sum(axis=(0, 1, 3)) == 0
    return np.where(empty, np.asarray(grid)[-1], best)


def fit_assessor_model(reference: np.ndarray, other: np.ndarray, scale: np.ndarray | list,
                       *, topics: np.ndarray | None = None, per_topic: bool = False,
                       prior: float = 1.0, concentration: float | None = None,
                       bins: np.ndarray | None = None,
                       depth_edges: tuple[int, ...] | list[int] = ()) -> AssessorModel:
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
        Fit one matrix per topic, the posterior mean of a Dirichlet centred on the pooled
        (bin) row (module docstring).
    prior : float
        Dirichlet pseudo-count per cell (>= 0; 1 = add-one smoothing).
    concentration : float, optional
        ``alpha`` of the per-topic model (the same for every grade; > 0). None: estimated per
        reference grade (:func:`estimate_concentration`).
    bins : array_like of int (n,), optional
        Depth bin of every passage (0 .. len(depth_edges); required with `depth_edges`).
    depth_edges : sequence of int
        Upper edges of the depth bins (:func:`depth_bins`); empty: no depth bins.

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
    >>> d = fit_assessor_model([1, 1, 1, 1], [1, 1, 0, 0], [0, 1], prior=0.0,
    ...                        bins=[0, 0, 1, 1], depth_edges=[10])
    >>> d.bin_probs[:, 1].tolist()  # the reference's grade 1: kept at the top, not below
    [[0.0, 1.0], [1.0, 0.0]]
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
    if concentration is not None and (isinstance(concentration, bool)
                                      or not np.isfinite(concentration) or concentration <= 0):
        raise ConfigError(f"the concentration must be a number > 0, got {concentration!r}")
    edges = tuple(int(e) for e in depth_edges)
    if edges and (edges[0] < 1 or bool(np.any(np.diff(edges) <= 0))):
        raise ConfigError(f"the depth bin edges must be increasing ranks >= 1, got {list(edges)}")
    L, D = len(sc), len(edges) + 1
    ia, ib = np.searchsorted(sc, a), np.searchsorted(sc, b)
    for g, i in ((a, ia), (b, ib)):
        i_c = np.minimum(i, L - 1)
        if (sc[i_c] != g).any():
            raise InputError(f"grade {int(g[sc[i_c] != g][0])} is outside the scale "
                             f"{sc.tolist()}")
    if edges:
        if bins is None:
            raise ConfigError("a depth-bin assessor model needs the passages' depth bins")
        s = np.asarray(bins, np.int64)
        if s.shape != a.shape or s.min() < 0 or s.max() >= D:
            raise InputError(f"the depth bins must be {len(a)} integers in 0 .. {D - 1}")
    else:
        s = np.zeros(len(a), np.int64)
    counts = np.bincount(ia * L + ib, minlength=L * L).reshape(L, L)
    probs = _smooth(counts.astype(np.float64), float(prior))
    bin_counts = np.bincount((s * L + ia) * L + ib, minlength=D * L * L).reshape(D, L, L)
    if edges:  # each bin's rows shrunk towards the pooled row
        bin_probs = _smooth(bin_counts.astype(np.float64), L * float(prior) * probs[None])
        if prior == 0:
            empty = bin_counts.sum(axis=-1) == 0
            bin_probs[empty] = np.broadcast_to(probs, bin_probs.shape)[empty]
    else:
        bin_probs = probs[None].copy()
    if not per_topic:
        return AssessorModel(sc, counts, probs, float(prior), depth_edges=edges,
                             bin_counts=bin_counts, bin_probs=bin_probs)
    if topics is None:
        raise ConfigError("a per-topic assessor model needs the topics of the passages")
    tid, code = np.unique(np.asarray(topics, dtype=object).astype(str), return_inverse=True)
    T = len(tid)
    tc = np.bincount(((code * D + s) * L + ia) * L + ib,
                     minlength=T * D * L * L).reshape(T, D, L, L)
    alpha = (np.full(L, float(concentration)) if concentration is not None
             else estimate_concentration(tc, bin_probs))
    al = alpha[None, None, :, None]
    n = tc.sum(axis=-1, keepdims=True)
    tp = (tc + al * bin_probs[None]) / (n + al)
    return AssessorModel(sc, counts, probs, float(prior), tuple(tid.tolist()), tc, tp,
                         edges, bin_counts, bin_probs, alpha)


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
                    bins: np.ndarray | None = None, key: tuple[int, ...] = ()) -> np.ndarray:
    """Grades of trials ``start:stop`` of simulated assessors relabelling `grades`.

    Trial ``i`` uses row ``i`` of :func:`irsim.rng.blocked_draws` (one uniform per
    passage), so it does not depend on how the trials are split; `topics` and `bins` pick
    each passage's row (:meth:`AssessorModel.rows`), `key` extends the stream's key (an
    independent assessor per key).

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
    rows = model.rows(grades, topics, bins)
    n = len(rows)
    u = blocked_draws(seed, study, tuple(key), start, stop, lambda rng, m: rng.random((m, n)))
    return model.scale[draw_grades(rows, u)]
