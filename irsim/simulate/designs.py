"""Trial designs of Urbano, Lima & Hanjalic (SIGIR 2019) over pooled collections of a metric.

A :class:`PooledMetric` holds the fitted generators (:class:`~irsim.simulate.fitting.
CollectionModel`) of every collection of one metric. A trial draws its uniforms from a
caller-keyed stream (``3 + 2 n`` per trial: three choices and the copula's ``u1, w`` per
topic), so it is a function of (seed, metric, n, trial) only.

Type I (:meth:`PooledMetric.type1`)
    A collection with probability proportional to its number of (kept) runs, then two
    distinct runs ``(i, j)`` uniformly (ordered); ``n`` pseudo-observations from the pair's
    copula; **both** columns through run ``i``'s margin: the baseline ``x = Q_i(u_i)`` and the
    experimental ``y = Q_i(u_j)`` have the same true mean (the copula need not be
    exchangeable, so ``y - x`` need not be symmetric).

Type II / III (:meth:`PooledMetric.type2`)
    A collection as above; a baseline uniformly among its bottom 75% of runs by mean
    (``floor(0.75 runs)`` lowest means); the experimental run uniformly among the 10 runs
    closest in mean to ``mean_b + delta`` (the baseline excluded; ties by index; runs whose
    margin cannot reach the target - a margin cannot pass its largest score - are skipped
    for the next closest), its margin
    transformed (:func:`~irsim.simulate.margins.transform_to_mean`) to mean exactly
    ``mean_b + delta``; the pair's copula.

Examples
--------
>>> from irsim.simulate.fitting import fit_collection
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((1, 40))
>>> scores = np.clip(0.3 + 0.1 * z + 0.08 * rng.standard_normal((12, 40)), 0, 1)
>>> pool = PooledMetric.build("AP", [fit_collection(scores, metric="AP", name="toy")],
...                           deltas=(0.02,))
>>> u = rng.random((5, 3 + 2 * 30))
>>> x, y = pool.type1(u, 30)
>>> x.shape, bool(((x >= 0) & (x <= 1)).all())
((5, 30), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from irsim.errors import ConfigError
from irsim.simulate import copulas as cop
from irsim.simulate.fitting import CollectionModel
from irsim.simulate.margins import transform_to_mean
from irsim.simulate.topics import Margins

__all__ = ["BASELINE_SHARE", "CANDIDATES", "PooledMetric", "pool_margins"]

#: Baselines are drawn among this share of the runs with the lowest means.
BASELINE_SHARE = 0.75
#: Experimental runs are drawn among this many runs closest to baseline + delta.
CANDIDATES = 10


def pool_margins(margins: Sequence[Margins]) -> Margins:
    """Several :class:`Margins` as one (rows concatenated; shorter knot rows padded with
    their last knot at cdf 1, which changes no margin).

    Examples
    --------
    >>> from irsim.simulate.topics import empirical_margins
    >>> m = pool_margins([empirical_margins([[0.2, 0.4]]), empirical_margins([[0.5, 0.5, 0.5]])])
    >>> m.mean().round(12).tolist()
    [0.3, 0.5]
    """
    width = max(m.x.shape[1] for m in margins)
    xs, fs = [], []
    for m in margins:
        pad = width - m.x.shape[1]
        xs.append(np.concatenate([m.x, np.repeat(m.x[:, -1:], pad, axis=1)], axis=1))
        fs.append(np.concatenate([m.F, np.ones((m.systems, pad))], axis=1))
    supports = {m.support for m in margins}
    return Margins(np.concatenate(xs), np.concatenate(fs), kind="fitted",
                   support=supports.pop() if len(supports) == 1 else None)


@dataclass(frozen=True)
class PooledMetric:
    """The generators of one metric over several collections, with the Type II candidates.

    Attributes
    ----------
    metric : str
    models : tuple of CollectionModel
    margins : Margins
        Every kept run of every collection (collection by collection).
    offsets : ndarray of int64
        First row of each collection in `margins` (and a last entry: the total).
    deltas : tuple of float
    baselines : tuple (per delta) of tuple (per collection) of ndarray
        Global margin rows of the eligible baselines.
    candidates, thetas : like `baselines`, each (baselines, CANDIDATES)
        The candidate experimental runs (global rows) and the shift of each candidate's
        margin to the baseline's mean + delta.
    counts : like `baselines`
        Candidates of each baseline: ``CANDIDATES`` (or all other runs of a small
        collection) unless fewer margins can reach the target (a margin cannot pass its
        largest score); the first ``counts`` entries of a row are valid.
    """

    metric: str
    models: tuple[CollectionModel, ...]
    margins: Margins
    offsets: np.ndarray
    deltas: tuple[float, ...]
    baselines: tuple[tuple[np.ndarray, ...], ...]
    candidates: tuple[tuple[np.ndarray, ...], ...]
    thetas: tuple[tuple[np.ndarray, ...], ...]
    counts: tuple[tuple[np.ndarray, ...], ...] = ()

    @classmethod
    def build(cls, metric: str, models: Sequence[CollectionModel],
              deltas: Sequence[float] = ()) -> PooledMetric:
        """Pool `models` and tabulate the Type II/III candidates of every delta."""
        models = tuple(models)
        margins = pool_margins([m.margins for m in models])
        sizes = np.array([len(m.runs) for m in models], np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        means = margins.mean()
        bases, cands, thetas, counts = [], [], [], []
        for d in deltas:
            b_d, c_d, t_d, n_d = [], [], [], []
            for c, m in enumerate(models):
                rows = np.arange(offsets[c], offsets[c + 1])
                mu = means[rows]
                nb = max(1, int(np.floor(BASELINE_SHARE * len(rows) + 1e-9)))
                base = rows[np.argsort(mu, kind="stable")[:nb]]
                k = min(CANDIDATES, len(rows) - 1)
                target = means[base] + d
                dist = np.abs(mu[None, :] - target[:, None])
                dist[np.arange(nb), base - offsets[c]] = np.inf  # not the baseline itself
                order = rows[np.argsort(dist, axis=1, kind="stable")[:, : len(rows) - 1]]
                near, theta, count = _reachable(margins, order, target, k)
                if (count == 0).any():
                    raise ConfigError(f"metric {metric}, collection {m.name}: no margin can "
                                      f"be moved to baseline mean + {d}; use smaller deltas")
                b_d.append(base)
                c_d.append(near)
                t_d.append(theta)
                n_d.append(count)
            bases.append(tuple(b_d))
            cands.append(tuple(c_d))
            thetas.append(tuple(t_d))
            counts.append(tuple(n_d))
        return cls(metric, models, margins, offsets, tuple(float(d) for d in deltas),
                   tuple(bases), tuple(cands), tuple(thetas), tuple(counts))

    @property
    def runs(self) -> np.ndarray:
        """Kept runs per collection."""
        return np.diff(self.offsets)

    def _collection(self, u: np.ndarray) -> np.ndarray:
        """Collection of each trial, with probability proportional to its runs."""
        w = np.cumsum(self.runs) / self.runs.sum()
        return np.minimum(np.searchsorted(w, u, side="right"), len(self.models) - 1)

    def _uniforms(self, c: np.ndarray, i: np.ndarray, j: np.ndarray, u1: np.ndarray,
                  w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copula uniforms ``(u_i, u_j)`` of each trial's ordered pair (local run indices of
        collection `c`): the copula of ``{i, j}`` was fitted to ``(u_min, u_max)``."""
        ui = np.empty_like(u1)
        uj = np.empty_like(u1)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        key = c.astype(np.int64) * (1 << 42) + lo.astype(np.int64) * (1 << 21) + hi
        uniq, inverse = np.unique(key, return_inverse=True)
        for g, k in enumerate(uniq.tolist()):  # one C++ call per distinct pair copula
            rows = np.flatnonzero(inverse == g)
            cc, a, b = k >> 42, (k >> 21) & ((1 << 21) - 1), k & ((1 << 21) - 1)
            model = self.models[cc]
            second = cop.sample_pair(model.copula(model.pair(a, b)), u1[rows], w[rows])
            swap = (i[rows] > j[rows])[:, None]
            ui[rows] = np.where(swap, second, u1[rows])
            uj[rows] = np.where(swap, u1[rows], second)
        return ui, uj

    def type1(self, u: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Baseline and experimental scores ``(trials, n)`` of Type I trials from uniforms
        `u` of shape ``(trials, 3 + 2 n)``."""
        c = self._collection(u[:, 0])
        r = self.runs[c]
        i = np.minimum((u[:, 1] * r).astype(np.int64), r - 1)
        j = np.minimum((u[:, 2] * (r - 1)).astype(np.int64), r - 2)
        j = j + (j >= i)
        ui, uj = self._uniforms(c, i, j, u[:, 3:3 + n], u[:, 3 + n:3 + 2 * n])
        rows = (self.offsets[c] + i)[:, None]
        return self.margins.quantile(rows, ui), self.margins.quantile(rows, uj)

    def type2(self, u: np.ndarray, n: int, delta_index: int
              ) -> tuple[np.ndarray, np.ndarray]:
        """Baseline and experimental scores ``(trials, n)`` of Type II/III trials of delta
        `delta_index` (experimental true mean = baseline's + delta, exactly)."""
        c = self._collection(u[:, 0])
        bases = self.baselines[delta_index]
        nb = np.array([len(bases[k]) for k in range(len(self.models))])[c]
        kb = np.minimum((u[:, 1] * nb).astype(np.int64), nb - 1)
        ncand = np.empty(len(c), np.int64)
        gb = np.empty(len(c), np.int64)
        ge = np.empty(len(c), np.int64)
        theta = np.empty(len(c))
        for k in range(len(self.models)):  # a handful of collections
            sel = c == k
            ncand[sel] = self.counts[delta_index][k][kb[sel]]
        ke = np.minimum((u[:, 2] * ncand).astype(np.int64), ncand - 1)
        for k in range(len(self.models)):
            sel = c == k
            gb[sel] = bases[k][kb[sel]]
            ge[sel] = self.candidates[delta_index][k][kb[sel], ke[sel]]
            theta[sel] = self.thetas[delta_index][k][kb[sel], ke[sel]]
        off = self.offsets[c]
        ub, ue = self._uniforms(c, gb - off, ge - off, u[:, 3:3 + n], u[:, 3 + n:3 + 2 * n])
        x = self.margins.quantile(gb[:, None], ub)
        y = self.margins.quantile(ge[:, None], _shifted(ue, theta[:, None]))
        return x, y


def _reachable(margins: Margins, order: np.ndarray, target: np.ndarray, k: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `order` (runs by distance to the row's `target`), the first `k` runs whose
    margin can be moved to the target (a margin cannot pass its largest score), their shifts
    (NaN past the end of a short row) and how many there are."""
    rows = len(order)
    take = np.zeros((rows, order.shape[1]), bool)
    theta_all = np.full(order.shape, np.nan)
    done = np.zeros(rows, np.int64)
    start = 0
    while start < order.shape[1] and (done < k).any():  # rarely more than one round
        need = np.maximum(k - done, 0)
        width = int(need.max())
        cols = np.arange(start, min(start + width, order.shape[1]))
        sel = (cols[None, :] - start) < need[:, None]
        r, c = np.nonzero(sel)
        th = transform_to_mean(margins, order[r, cols[c]], target[r])
        theta_all[r, cols[c]] = th
        ok = np.isfinite(th)
        take[r[ok], cols[c][ok]] = True
        done += np.bincount(r[ok], minlength=rows)
        start += width
    near = np.zeros((rows, k), np.int64)
    theta = np.full((rows, k), np.nan)
    count = np.zeros(rows, np.int64)
    for i in range(rows):  # baselines of one collection (fit time)
        idx = np.flatnonzero(take[i])[:k]
        near[i, : len(idx)] = order[i, idx]
        theta[i, : len(idx)] = theta_all[i, idx]
        count[i] = len(idx)
    return near, theta, count


def _shifted(u: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``expit(logit(u) + theta)``: a uniform through the proportional-odds shift (so that
    ``Q(_shifted(U, theta))`` has the cdf ``expit(logit F - theta)``)."""
    from scipy.special import expit, logit

    with np.errstate(divide="ignore"):
        return expit(logit(u) + theta)
