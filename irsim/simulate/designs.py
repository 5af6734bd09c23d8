"""Trial designs of Urbano, Lima & Hanjalic (SIGIR 2019) over pooled collections of a metric.

A :class:`PooledMetric` holds the fitted generators (:class:`~irsim.simulate.pair_copula_model.
PairCopulaModel`) of every collection of one metric. A trial draws its uniforms from a
caller-keyed stream (``3 + 2 n`` per trial: three choices and the copula's ``u1, w`` per
topic), so it is a function of (seed, metric, n, trial) only.

Type I (:meth:`PooledMetric.type1`)
    A collection with probability proportional to its number of (kept) runs, then two
    distinct runs ``(i, j)`` uniformly (ordered); ``n`` pseudo-observations from the pair's
    copula; **both** columns through run ``i``'s margin: the baseline ``x = Q_i(u_i)`` and the
    experimental ``y = Q_i(u_j)`` have the same true mean (the copula need not be
    exchangeable, so ``y - x`` need not be symmetric).

Type II / III (:meth:`PooledMetric.type2`), as the paper's code runs it (R/02-margins_transform.R,
R/12-type_2.R)
    Per delta and collection of ``k`` runs, the baselines are the runs left after dropping the
    ``round(k / 4)`` highest fitted means (R's ``round``: half to even; at least one); the
    candidates of a baseline are the 10 other runs whose fitted mean is closest to its mean +
    delta (``order(abs(mu - mu_b - delta))``: ties by position), each transformed to mean
    exactly ``mean_b + delta`` by simIReff's ``effTransform``
    (:func:`~irsim.simulate.margins.transform_to_mean`); a candidate whose transformation
    fails is left out (not replaced by the next closest), and a baseline left without any is
    no baseline. A trial draws a collection with probability proportional to its number of
    baselines (at this delta), a baseline uniformly, one of its candidates uniformly, and the
    pair's copula (fitted to ``(u_min, u_max)`` by position: swapped when the experimental run
    comes first) couples the baseline's margin and the transformed experimental margin.
Examples
--------
>>> from irsim.simulate.pair_copula_model import fit_pair_copula_model
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((1, 40))
>>> scores = np.clip(0.3 + 0.1 * z + 0.08 * rng.standard_normal((12, 40)), 0, 1)
>>> pool = PooledMetric.build("AP", [fit_pair_copula_model(scores, metric="AP", name="toy")],
...                           deltas=(0.02,))
>>> u = rng.random((5, 3 + 2 * 30))
>>> x, y = pool.type1(u, 30)
>>> x.shape, bool(((x >= 0) & (x <= 1)).all())
((5, 30), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from irsim.errors import ConfigError
from irsim.simulate import copulas as cop
from irsim.simulate.margins import Margins, power_mean, power_uniform, transform_to_mean
from irsim.simulate.pair_copula_model import PairCopulaModel, fit_pair_copula_model

__all__ = ["CANDIDATES", "TOP_SHARE", "PooledMetric", "UrbanoTrials", "baseline_mask",
           "candidate_order", "pool_margins"]

#: Runs that are no baselines: the ``round(TOP_SHARE k)`` highest fitted means of ``k``.
TOP_SHARE = 0.25
#: Experimental runs are tried among this many runs closest to baseline + delta.
CANDIDATES = 10


def baseline_mask(means: ArrayLike) -> np.ndarray:
    """The baselines of a collection with fitted run means `means`: every run but the
    ``round(TOP_SHARE k)`` highest means (R's ``order(mu, decreasing = TRUE)[-1:-round(k / 4)]``:
    ``round`` half to even, ties by position, at least one run dropped).

    Examples
    --------
    >>> baseline_mask([0.3, 0.1, 0.5, 0.2, 0.4, 0.6]).tolist()   # round(1.5) = 2 dropped
    [True, True, False, True, True, False]
    >>> int(baseline_mask(np.linspace(0, 1, 37)).sum())          # round(9.25) = 9 of 37
    28
    """
    mu = np.asarray(means, np.float64)
    drop = max(1, int(np.round(TOP_SHARE * len(mu))))
    out = np.ones(len(mu), bool)
    out[np.argsort(-mu, kind="stable")[:drop]] = False
    return out


def candidate_order(means: ArrayLike, baselines: ArrayLike, delta: float) -> np.ndarray:
    """The candidate experimental runs of each baseline (positions into `means`, shape
    ``(baselines, min(CANDIDATES, k - 1))``): the other runs by ``|mu - mu_b - delta|``, ties
    by position (R's ``order``), the closest first.

    Examples
    --------
    >>> candidate_order([0.10, 0.20, 0.12, 0.30, 0.16], [0, 2], 0.05)[:, :3].tolist()
    [[4, 2, 1], [4, 1, 0]]
    """
    mu = np.asarray(means, np.float64)
    base = np.asarray(baselines, np.int64)
    dist = np.abs(mu[None, :] - mu[base][:, None] - delta)
    dist[np.arange(len(base)), base] = np.inf  # not the baseline itself
    return np.argsort(dist, axis=1, kind="stable")[:, :min(CANDIDATES, len(mu) - 1)]


def pool_margins(margins: Sequence[Margins]) -> Margins:
    """Several :class:`Margins` as one (rows concatenated; shorter knot rows padded with
    their last knot at cdf 1, which changes no margin).

    Examples
    --------
    >>> from irsim.simulate.margins import empirical_margins
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
    models : tuple of PairCopulaModel
    margins : Margins
        Every kept run of every collection (collection by collection).
    offsets : ndarray of int64
        First row of each collection in `margins` (and a last entry: the total).
    deltas : tuple of float
    baselines : tuple (per delta) of tuple (per collection) of ndarray
        Global margin rows of the baselines with at least one transformed candidate.
    candidates, exponents : like `baselines`, each (baselines, CANDIDATES)
        The candidate experimental runs (global rows) whose transformation succeeded, the
        closest first, and the effTransform exponent of each
        (:func:`~irsim.simulate.margins.transform_to_mean`).
    counts : like `baselines`
        Candidates of each baseline (1 to ``CANDIDATES``); the first ``counts`` entries of a
        row are valid.
    """

    metric: str
    models: tuple[PairCopulaModel, ...]
    margins: Margins
    offsets: np.ndarray
    deltas: tuple[float, ...]
    baselines: tuple[tuple[np.ndarray, ...], ...]
    candidates: tuple[tuple[np.ndarray, ...], ...]
    exponents: tuple[tuple[np.ndarray, ...], ...]
    counts: tuple[tuple[np.ndarray, ...], ...] = ()

    @classmethod
    def build(cls, metric: str, models: Sequence[PairCopulaModel],
              deltas: Sequence[float] = ()) -> PooledMetric:
        """Pool `models` and tabulate the Type II/III candidates of every delta."""
        models = tuple(models)
        margins = pool_margins([m.margins for m in models])
        sizes = np.array([len(m.runs) for m in models], np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        means = margins.mean()
        bases, cands, exps, counts = [], [], [], []
        for d in deltas:
            b_d, c_d, e_d, n_d = [], [], [], []
            for c in range(len(models)):
                rows = np.arange(offsets[c], offsets[c + 1])
                mu = means[rows]
                base = np.flatnonzero(baseline_mask(mu))
                order = candidate_order(mu, base, d)
                target = np.repeat((mu[base] + d)[:, None], order.shape[1], axis=1)
                gamma = transform_to_mean(margins, rows[order], target).reshape(order.shape)
                ok = np.isfinite(gamma)
                first = np.argsort(~ok, axis=1, kind="stable")  # successes first, in order
                count = ok.sum(axis=1)
                has = count > 0
                width = CANDIDATES
                near = np.zeros((int(has.sum()), width), np.int64)
                expo = np.full((int(has.sum()), width), np.nan)
                w = order.shape[1]
                near[:, :w] = np.where(np.take_along_axis(ok, first, 1),
                                       rows[np.take_along_axis(order, first, 1)], 0)[has]
                expo[:, :w] = np.take_along_axis(gamma, first, 1)[has]
                b_d.append(rows[base[has]])
                c_d.append(near)
                e_d.append(expo)
                n_d.append(count[has].astype(np.int64))
            if sum(len(b) for b in b_d) == 0:
                raise ConfigError(f"metric {metric}: no margin of any collection can be moved "
                                  f"to a baseline's mean + {d}; use smaller deltas")
            bases.append(tuple(b_d))
            cands.append(tuple(c_d))
            exps.append(tuple(e_d))
            counts.append(tuple(n_d))
        return cls(metric, models, margins, offsets, tuple(float(d) for d in deltas),
                   tuple(bases), tuple(cands), tuple(exps), tuple(counts))

    @property
    def runs(self) -> np.ndarray:
        """Kept runs per collection."""
        return np.diff(self.offsets)

    def _collection(self, u: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Collection of each trial, with probability proportional to `weights` (default:
        its runs)."""
        wt = self.runs if weights is None else np.asarray(weights)
        w = np.cumsum(wt) / wt.sum()
        return np.minimum(np.searchsorted(w, u, side="right"), len(self.models) - 1)

    def baseline_counts(self, delta_index: int) -> np.ndarray:
        """Baselines (with a transformed candidate) of each collection at delta
        `delta_index`: the Type II collection weights (R: ``sapply(effs_e, length)``)."""
        return np.array([len(b) for b in self.baselines[delta_index]], np.int64)

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
        nbase = self.baseline_counts(delta_index)
        c = self._collection(u[:, 0], nbase)
        nb = nbase[c]
        kb = np.minimum((u[:, 1] * nb).astype(np.int64), nb - 1)
        ncand = np.empty(len(c), np.int64)
        gb = np.empty(len(c), np.int64)
        ge = np.empty(len(c), np.int64)
        gamma = np.empty(len(c))
        for k in range(len(self.models)):  # a handful of collections
            sel = c == k
            ncand[sel] = self.counts[delta_index][k][kb[sel]]
        ke = np.minimum((u[:, 2] * ncand).astype(np.int64), ncand - 1)
        for k in range(len(self.models)):
            sel = c == k
            gb[sel] = self.baselines[delta_index][k][kb[sel]]
            ge[sel] = self.candidates[delta_index][k][kb[sel], ke[sel]]
            gamma[sel] = self.exponents[delta_index][k][kb[sel], ke[sel]]
        off = self.offsets[c]
        ub, ue = self._uniforms(c, gb - off, ge - off, u[:, 3:3 + n], u[:, 3 + n:3 + 2 * n])
        x = self.margins.quantile(gb[:, None], ub)
        y = self.margins.quantile(ge[:, None], power_uniform(ue, gamma[:, None]))
        return x, y


@dataclass(frozen=True)
class UrbanoTrials:
    """Type I (`delta_index` None) or Type II/III trials of a :class:`PooledMetric` as a
    :class:`~irsim.simulate.base.Generator`: :meth:`draw` takes ``3 + 2 n`` uniforms per
    trial (the same for every kind) and :meth:`scores` turns them into (baseline,
    experimental) scores. ``design=urbano2019`` draws its trials this way, one generator per
    (metric, kind) (``UrbanoData.generators`` of :mod:`irsim.experiments.test_errors`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 40))
    ...             + 0.08 * rng.standard_normal((8, 40)), 0, 1)
    >>> gen = UrbanoTrials.fit(x, metric="AP", name="toy", delta=0.02)
    >>> gen.sample(rng, 4, 30).shape, round(float(np.diff(gen.true_means)[0]), 9)
    ((4, 2, 30), 0.02)
    >>> from irsim.simulate.base import Generator
    >>> isinstance(gen, Generator)
    True
    """

    pool: PooledMetric
    delta_index: int | None = None

    @classmethod
    def fit(cls, scores: ArrayLike, *, delta: float | None = None, metric: str = "score",
            name: str = "collection", **options: Any) -> UrbanoTrials:
        """:func:`~irsim.simulate.pair_copula_model.fit_pair_copula_model` of one collection
        (keyword `options`), pooled alone; Type I trials, or Type II/III at `delta`."""
        model = fit_pair_copula_model(scores, metric=metric, name=name, **options)
        pool = PooledMetric.build(metric, [model], () if delta is None else (delta,))
        return cls(pool, None if delta is None else 0)

    @staticmethod
    def draw(rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """The uniforms of `trials` trials, shape ``(trials, 3 + 2 n)`` (the same for Type
        I and every delta: the kinds of a pool share their draws)."""
        return rng.random((trials, 3 + 2 * n))

    def scores(self, draws: np.ndarray, n: int) -> np.ndarray:
        """Scores ``(trials, 2, n)`` (baseline, experimental) of the trials of the uniforms
        `draws` (:meth:`draw`; row by row): :meth:`PooledMetric.type1` or
        :meth:`PooledMetric.type2`."""
        if self.delta_index is None:
            x, y = self.pool.type1(draws, int(n))
        else:
            x, y = self.pool.type2(draws, int(n), self.delta_index)
        return np.stack([x, y], axis=1)

    def sample(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """`trials` trials on `n` topics, shape ``(trials, 2, n)`` (baseline, experimental)."""
        return self.scores(self.draw(rng, int(trials), int(n)), int(n))

    @property
    def true_means(self) -> np.ndarray:
        """Expected baseline and experimental score over the trial's choices: Type I, the
        mean of every pooled run's margin twice (a collection in proportion to its runs, then
        a run uniformly); Type II/III, collections in proportion to their baselines, a
        baseline uniformly, one of its candidates uniformly (transformed mean:
        :func:`~irsim.simulate.margins.power_mean`)."""
        pool = self.pool
        if self.delta_index is None:
            mu = float(pool.margins.mean().mean())
            return np.array([mu, mu])
        d = self.delta_index
        weights = pool.baseline_counts(d) / pool.baseline_counts(d).sum()
        means = pool.margins.mean()
        base = np.zeros(len(pool.models))
        exp = np.zeros(len(pool.models))
        for c in range(len(pool.models)):  # a handful of collections
            count = pool.counts[d][c]
            valid = np.arange(CANDIDATES)[None, :] < count[:, None]
            rows = np.where(valid, pool.candidates[d][c], 0)
            gamma = np.where(valid, pool.exponents[d][c], 0.0)
            moved = np.where(valid, power_mean(pool.margins, rows, gamma), 0.0)
            base[c] = means[pool.baselines[d][c]].mean()
            exp[c] = (moved.sum(axis=1) / count).mean()
        return np.array([weights @ base, weights @ exp])
