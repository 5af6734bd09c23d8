"""The pair generator of the shift design: two systems of a collection tied by a Gaussian copula.

The model follows Urbano & Nagler (SIGIR 2018) and Urbano, Lima & Hanjalic (SIGIR 2019):
each system's per-topic scores have a *margin* (:mod:`irsim.simulate.margins`: ``kernel`` for
continuous metrics, ``empirical`` for discrete ones) and the scores of two systems on the same
topic are tied by a *copula*; new topics are drawn from the model, so the true means of the
systems, and hence the true difference between them, are known (``experiment=test_errors``
with ``design=shift``, ``experiment=topic_set_size``).

Dependence
    A Gaussian copula per pair of systems, with latent correlation ``rho`` chosen so that
    the simulated scores reproduce the observed dependence of the pair:

    - ``pearson`` (default): NORTA (Cario & Nelson 1997) - ``rho`` such that the Pearson
      correlation of the scores simulated with the two systems' fitted margins equals the
      observed one; computed with Mehler's expansion
      ``cov(rho) = sum_k rho^k a_k b_k`` over the Hermite coefficients of the two margins.
      It reproduces the variance of the per-topic differences, which drives the power of
      the paired tests (``|rho|`` is capped at :data:`MAX_RHO`);
    - ``kendall``: ``rho = sin(pi tau_b / 2)`` (margin-free; the Pearson correlation of
      the simulated scores is then typically lower than observed for AP).

True difference
    The experimental system's margin is the baseline's, shifted by a proportional-odds
    transform (:meth:`~irsim.simulate.margins.Margins.shift_for_mean`) to the baseline's mean
    + delta exactly.

Shifted pairs
    :func:`prepare` tabulates, for every metric, the shift of every system's margin to
    ``mean + delta`` for each delta, and the ordered pairs ``(baseline, pair)`` whose baseline
    reaches every delta (:class:`SimulationData`, what ``experiment=test_errors`` and
    ``experiment=topic_set_size``'s check read). :class:`ShiftPairs` is one (metric, delta)
    of it as a :class:`~irsim.simulate.base.Generator`; the studies draw their trials through
    :attr:`SimulationData.generators`, one per (metric, delta).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> scores = np.clip(rng.beta(2, 5, (6, 50)) + rng.normal(0, .05, (1, 50)), 0, 1)
>>> sim = fit_simulator(scores, metric="AP")
>>> sim.margins.kind, len(sim.pair_a)
('kernel', 15)
>>> xa, xb = sim.sample(np.random.default_rng(1), np.zeros(4, np.int64), 50)
>>> xa.shape, bool(((xa >= 0) & (xa <= 1)).all())
((4, 50), True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.exact import corrcoef
from irsim.params import Choice
from irsim.sampling.systems import kept_runs
from irsim.simulate.margins import (
    Margins,
    check_scores,
    fit_margins,
    latent_uniform,
    normal_margins,
)
from irsim.stats.kendall import tau_b_matrix

__all__ = [
    "DEPENDENCE",
    "HERMITE_TERMS",
    "MAX_RHO",
    "ShiftPairs",
    "SimulationData",
    "TopicSimulator",
    "fit_simulator",
    "norta_rho",
    "prepare",
]

#: Dependence targets of :func:`fit_simulator`.


class PairDependence(Choice):
    """The dependence a simulated pair keeps: Pearson's r or Kendall's tau."""

    pearson = "pearson"
    kendall = "kendall"


DEPENDENCE = PairDependence.values()
#: Hermite terms of the NORTA correlation series.
HERMITE_TERMS = 600
#: Largest latent correlation (the Hermite series converges slowly near 1).
MAX_RHO = 0.99


# ----------------------------------------------------------------------------- dependence


def _hermite_coefficients(margins: Margins, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """``a_k = E[f(Z) h_k(Z)]``, k = 1..terms, of ``f = Q o Phi`` (orthonormal Hermite
    ``h_k``), and ``Var f``, with each cdf segment replaced by its mid value (exact for
    step margins; the kernel's 1/512 bins make the error negligible).

    ``f`` is a step function of z with jumps ``dm_i`` at ``c_i = Phi^-1(F_i)``; as
    ``integral_a^b h_k phi = (psi_{k-1}(a) - psi_{k-1}(b))/sqrt(k)`` with
    ``psi_j = h_j phi``, ``a_k = sum_i dm_i psi_{k-1}(c_i) / sqrt(k)``.
    """
    x, F = margins.x, margins.F
    mid = 0.5 * (x[:, :-1] + x[:, 1:])
    pm = np.diff(F, axis=1)
    mean = (pm * mid).sum(axis=1)
    var = np.maximum((pm * mid * mid).sum(axis=1) - mean * mean, 0.0)
    # jump of f at interior knot i (between segments i-1 and i)
    dm = np.diff(mid, axis=1)
    f_in = F[:, 1:-1]
    inside = (f_in > 0.0) & (f_in < 1.0) & (dm != 0.0)
    c = ndtri(np.where(inside, f_in, 0.5))
    dm = np.where(inside, dm, 0.0)
    psi_prev = np.zeros_like(c)
    psi = np.exp(-0.5 * c * c) / math.sqrt(2.0 * math.pi)
    coef = np.empty((margins.systems, terms))
    for j in range(terms):  # recurrence over Hermite orders
        coef[:, j] = (dm * psi).sum(axis=1) / math.sqrt(j + 1.0)
        psi, psi_prev = (c * psi - math.sqrt(j) * psi_prev) / math.sqrt(j + 1.0), psi
    return coef, var


def norta_rho(margins: Margins, a: ArrayLike, b: ArrayLike, target: ArrayLike, *,
              terms: int = HERMITE_TERMS, max_rho: float = MAX_RHO) -> np.ndarray:
    """Latent Gaussian correlation for each pair ``(a, b)`` of margins such that the
    Pearson correlation of ``(Q_a(Phi(Z1)), Q_b(Phi(Z2)))`` equals `target` (NORTA),
    clipped to ``[-max_rho, max_rho]``.

    Mehler's formula gives ``cov(rho) = sum_k rho^k a_k b_k`` over the orthonormal
    Hermite coefficients of the two margins (:func:`_hermite_coefficients`); it increases
    with rho, and safeguarded Newton steps solve ``cov(rho) = target sd_a sd_b``.

    Examples
    --------
    >>> m = normal_margins([0.5, 0.5], [0.1, 0.1])   # normal margins: rho = target
    >>> norta_rho(m, [0], [1], [0.6]).round(4).tolist()
    [0.6]
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    coef, var = _hermite_coefficients(margins, terms)
    goal = np.asarray(target, np.float64) * np.sqrt(var[a] * var[b])
    prod = np.ascontiguousarray((coef[a] * coef[b]).T)  # (terms, pairs)

    def cov_and_slope(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        val = np.zeros_like(r)
        slope = np.zeros_like(r)
        for k in range(terms, 0, -1):  # Horner over the series and its derivative
            slope = slope * r + k * prod[k - 1]
            val = (val + prod[k - 1]) * r
        return val, slope

    edge = np.full(len(a), max_rho)
    top, _ = cov_and_slope(edge)
    bottom, _ = cov_and_slope(-edge)
    r = np.where(goal >= top, max_rho, -max_rho)
    active = np.flatnonzero((goal < top) & (goal > bottom))
    # safeguarded Newton on the others: keep a bracket, bisect when a step leaves it
    prod_all, goal_all = prod, goal
    lo, hi = -edge[active], edge[active]
    x = np.clip(np.asarray(target, np.float64) * np.ones(len(a)), -max_rho, max_rho)[active]
    for _ in range(100):
        if len(active) == 0:
            break
        prod, goal = prod_all[:, active], goal_all[active]
        val, slope = cov_and_slope(x)
        up = val < goal
        lo = np.where(up, x, lo)
        hi = np.where(up, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x - (val - goal) / slope
        new = np.where((step >= lo) & (step <= hi), step, 0.5 * (lo + hi))
        done = (np.abs(new - x) <= 1e-13) | (hi - lo <= 1e-13)
        r[active[done]] = new[done]
        keep = ~done
        active, x, lo, hi = active[keep], new[keep], lo[keep], hi[keep]
    r[active] = x
    return r


# ----------------------------------------------------------------------------- simulator


@dataclass(frozen=True)
class TopicSimulator:
    """A fitted model of one metric: system margins and a Gaussian copula per pair.

    Parameters
    ----------
    metric : str
    systems : tuple of str
        The systems modelled (after dropping duplicates / the bottom share).
    margins : Margins
        One per system, in the order of `systems`.
    pair_a, pair_b : ndarray of int64, shape (pairs,)
        Every pair ``a < b`` of systems.
    rho : ndarray, shape (pairs,)
        Latent correlation of each pair's Gaussian copula.
    observed : ndarray, shape (pairs,)
        The observed dependence `rho` reproduces (Pearson r or Kendall tau-b).
    dependence : {"pearson", "kendall"}
    dropped : tuple of str
        Systems of the source left out.

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.5, 0.5], sds=[0.1, 0.1], rho=[0.5])
    >>> xa, xb = sim.sample(np.random.default_rng(0), np.zeros(2000, np.int64), 50)
    >>> round(float(np.corrcoef(xa.ravel(), xb.ravel())[0, 1]), 1)
    0.5
    """

    metric: str
    systems: tuple[str, ...]
    margins: Margins
    pair_a: np.ndarray
    pair_b: np.ndarray
    rho: np.ndarray
    observed: np.ndarray
    dependence: str
    dropped: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("pair_a", "pair_b"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.int64))
        for name in ("rho", "observed"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.float64))
        object.__setattr__(self, "systems", tuple(self.systems))
        object.__setattr__(self, "dropped", tuple(self.dropped))
        if len(self.systems) != self.margins.systems:
            raise InputError(f"{len(self.systems)} systems but {self.margins.systems} "
                             f"margins")
        if not (len(self.pair_a) == len(self.pair_b) == len(self.rho)):
            raise InputError("pair_a, pair_b and rho must have the same length")
        if len(self.rho) and np.abs(self.rho).max() >= 1:
            raise InputError("copula correlations must lie inside (-1, 1)")

    @classmethod
    def normal(cls, means: ArrayLike, sds: ArrayLike, rho: ArrayLike,
               metric: str = "normal") -> TopicSimulator:
        """Normal margins (:func:`normal_margins`) and given latent correlations for the
        pairs ``a < b`` in row-major order: bivariate normal topics, for checks against
        normal theory."""
        margins = normal_margins(means, sds)
        a, b = np.triu_indices(margins.systems, 1)
        rho = np.broadcast_to(np.asarray(rho, np.float64), a.shape)
        names = tuple(f"s{i}" for i in range(margins.systems))
        return cls(metric, names, margins, a, b, rho, rho, "pearson")

    @property
    def pairs(self) -> int:
        """Number of (unordered) system pairs."""
        return len(self.rho)

    def correlate(self, pairs: np.ndarray, z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
        """``rho z1 + sqrt(1 - rho^2) z2`` with each trial's pair correlation."""
        r = self.rho[np.asarray(pairs, np.int64)][:, None]
        return r * z1 + np.sqrt(1.0 - r * r) * z2

    def scores(self, pairs: ArrayLike, z1: np.ndarray, z2: np.ndarray, *,
               margin_a: ArrayLike | None = None, margin_b: ArrayLike | None = None,
               theta_a: ArrayLike = 0.0, theta_b: ArrayLike = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
        """Scores of trials ``(trials, topics)`` from independent standard normals.

        Parameters
        ----------
        pairs : array_like of int, shape (trials,)
            The pair whose copula ties the two systems of each trial.
        z1, z2 : ndarray, shape (trials, topics)
            Independent standard normals.
        margin_a, margin_b : array_like of int, shape (trials,), optional
            Margins of the two systems (default: the pair's own systems). Passing the same
            margin twice gives exchangeable scores (a true null hypothesis).
        theta_a, theta_b : array_like, shape (trials,) or scalar
            Proportional-odds shifts of the two margins.

        Returns
        -------
        xa, xb : ndarray, shape (trials, topics)
        """
        pairs = np.asarray(pairs, np.int64)
        ma = self.pair_a[pairs] if margin_a is None else np.asarray(margin_a, np.int64)
        mb = self.pair_b[pairs] if margin_b is None else np.asarray(margin_b, np.int64)
        ta = np.broadcast_to(np.asarray(theta_a, np.float64), pairs.shape)[:, None]
        tb = np.broadcast_to(np.asarray(theta_b, np.float64), pairs.shape)[:, None]
        xa = self.margins.quantile(ma[:, None], latent_uniform(z1, ta))
        xb = self.margins.quantile(mb[:, None], latent_uniform(self.correlate(pairs, z1, z2),
                                                               tb))
        return xa, xb

    def sample(self, rng: np.random.Generator, pairs: ArrayLike, n: int, **options
               ) -> tuple[np.ndarray, np.ndarray]:
        """Draw `n` topics for each trial's pair (see :meth:`scores` for `options`)."""
        pairs = np.asarray(pairs, np.int64)
        z = rng.standard_normal((2, len(pairs), n))
        return self.scores(pairs, z[0], z[1], **options)


def fit_simulator(
    scores: ArrayLike,
    *,
    metric: str = "score",
    systems: tuple[str, ...] | None = None,
    margin: str = "auto",
    dependence: str = "pearson",
    drop_duplicates: bool = True,
    drop_bottom: float = 0.0,
) -> TopicSimulator:
    """Fit margins and pairwise Gaussian copulas to a (systems, topics) score matrix.

    Parameters
    ----------
    scores : array_like, shape (systems, topics)
        Per-topic scores in [0, 1] of one metric.
    metric : str
    systems : tuple of str, optional
        System ids (default ``s0, s1, ...``).
    margin : {"auto", "kernel", "empirical"}
        See :func:`fit_margins`.
    dependence : {"pearson", "kendall"}
        What the copula of each pair reproduces (see the module docstring).
    drop_duplicates : bool
        Leave out systems whose scores equal an earlier system's on every topic (within
        1e-5), as Urbano et al. do.
    drop_bottom : float
        Leave out this share of the systems left with the lowest mean (Urbano et al.: 0.1),
        by the quantile rule (:func:`irsim.sampling.systems.kept_runs`).

    Returns
    -------
    TopicSimulator

    Examples
    --------
    >>> x = np.array([[0.1, 0.4, 0.3, 0.8], [0.2, 0.5, 0.2, 0.9], [0.1, 0.4, 0.3, 0.8]])
    >>> sim = fit_simulator(x, drop_duplicates=True)
    >>> sim.systems, sim.dropped, sim.margins.kind
    (('s0', 's1'), ('s2',), 'empirical')
    """
    if dependence not in DEPENDENCE:
        raise unknown_name("dependence", str(dependence), DEPENDENCE)
    x = check_scores(scores)
    names = tuple(systems) if systems is not None else tuple(f"s{i}" for i in range(len(x)))
    if len(names) != len(x):
        raise InputError(f"{len(names)} system ids for {len(x)} rows of scores")
    keep = kept_runs(x, drop_duplicates=drop_duplicates, drop_bottom=drop_bottom,
                     rule="quantile", keys=("drop_bottom", "drop_rule"))
    if np.count_nonzero(keep) < 2:
        raise InputError(f"metric {metric}: fewer than 2 systems left to simulate")
    kept = x[keep]
    margins = fit_margins(kept, margin)
    a, b = np.triu_indices(len(kept), 1)
    if dependence == "kendall":
        observed = tau_b_matrix(kept)[a, b]
        rho = np.clip(np.sin(0.5 * np.pi * np.nan_to_num(observed)), -MAX_RHO, MAX_RHO)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            observed = corrcoef(kept)[a, b]
        rho = norta_rho(margins, a, b, np.nan_to_num(observed))
    return TopicSimulator(
        metric=metric,
        systems=tuple(n for n, k in zip(names, keep, strict=True) if k),
        margins=margins,
        pair_a=a,
        pair_b=b,
        rho=rho,
        observed=observed,
        dependence=dependence,
        dropped=tuple(n for n, k in zip(names, keep, strict=True) if not k),
    )


# ----------------------------------------------------------------------------- shifted pairs


@dataclass(frozen=True)
class SimulationData:
    """Known-truth trials of shifted pairs (what ``experiment=test_errors`` and
    ``experiment=topic_set_size``'s check read): one fitted simulator per metric, per delta
    the shift of each baseline's margin, and the generators of every (metric, delta)
    (:attr:`generators`).

    Attributes
    ----------
    simulators : tuple of TopicSimulator
    deltas : tuple of float
    thetas : tuple of ndarray, each (deltas, systems)
        Proportional-odds shift giving system s's margin the mean ``mean_s + delta``
        (NaN where unattainable).
    trial_pairs : tuple of ndarray, each (ordered pairs, 2)
        ``(baseline system, pair index)`` of every ordered pair whose baseline reaches all
        deltas; a trial draws one uniformly.
    diagnostics : tuple of dict
        Fit statistics per metric (for the ``test_errors_fit`` table).
    """

    simulators: tuple[TopicSimulator, ...]
    deltas: tuple[float, ...]
    thetas: tuple[np.ndarray, ...]
    trial_pairs: tuple[np.ndarray, ...]
    diagnostics: tuple[dict, ...] = field(default=())

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in simulator order."""
        return tuple(s.metric for s in self.simulators)

    @cached_property
    def generators(self) -> tuple[tuple[ShiftPairs, ...], ...]:
        """The generator of every (metric, delta) (:class:`ShiftPairs`), built once per
        data object: what the studies draw their trials through. The generators of a metric
        share their draws (:meth:`ShiftPairs.draw` depends on neither delta nor metric).

        Examples
        --------
        >>> sim = TopicSimulator.normal(means=[0.3, 0.4], sds=[0.1] * 2, rho=[0.5])
        >>> gens = prepare([sim], [0.0, 0.05]).generators
        >>> [round(float(np.diff(g.true_means)[0]), 9) for g in gens[0]]
        [0.0, 0.05]
        """
        return tuple(tuple(ShiftPairs.of(self, mi, di) for di in range(len(self.deltas)))
                     for mi in range(len(self.simulators)))

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {
            "metrics": list(self.metrics),
            "systems": int(self.simulators[0].margins.systems) if self.simulators else 0,
            "topics": "simulated",
            "source": "generator fitted to the collection (see test_errors_fit)",
            "deltas": list(self.deltas),
        }


def prepare(simulators: Sequence[TopicSimulator], deltas: Sequence[float],
            sources: Sequence[np.ndarray] | None = None) -> SimulationData:
    """Shifts for every (delta, system) and the eligible ordered pairs of each metric.

    A system is a baseline only if its margin can be shifted to every ``mean + delta``
    (a discrete margin cannot pass its largest score). `sources` (the fitted rows of the
    score matrix per metric, optional) add fit diagnostics.

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.3, 0.4, 0.5], sds=[0.1] * 3, rho=[0.5] * 3)
    >>> data = prepare([sim], [0.0, 0.05])
    >>> data.thetas[0][0].tolist(), len(data.trial_pairs[0])   # 3 pairs x 2 orientations
    ([0.0, 0.0, 0.0], 6)
    >>> shifted = sim.margins.mean(data.thetas[0][1]) - sim.margins.mean()
    >>> shifted.round(12).tolist()
    [0.05, 0.05, 0.05]
    """
    deltas = tuple(float(d) for d in deltas)
    thetas, pairs, diags = [], [], []
    for i, sim in enumerate(simulators):
        m = sim.margins
        base = m.mean()
        theta = np.stack([np.zeros(m.systems) if d == 0.0 else m.shift_for_mean(base + d)
                          for d in deltas])
        ok = np.isfinite(theta).all(axis=0)
        p = np.arange(sim.pairs)
        ordered = np.concatenate([np.stack([sim.pair_a, p], axis=1),
                                  np.stack([sim.pair_b, p], axis=1)])
        order = np.lexsort((ordered[:, 0], ordered[:, 1]))
        ordered = ordered[order]
        ordered = ordered[ok[ordered[:, 0]]]
        if len(ordered) == 0:
            raise ConfigError(f"metric {sim.metric}: no system's margin can be shifted to "
                              f"its mean + {max(deltas)}; use smaller deltas")
        thetas.append(theta)
        pairs.append(np.ascontiguousarray(ordered, dtype=np.int64))
        diag = {"baselines": int(np.count_nonzero(ok))}
        if sources is not None:
            src = np.asarray(sources[i], np.float64)
            ks = m.ks_distance(src)
            diag.update(ks_mean=float(ks.mean()), ks_max=float(ks.max()),
                        mean_error_max=float(np.abs(base - src.mean(axis=1)).max()))
        diags.append(diag)
    return SimulationData(tuple(simulators), deltas, tuple(thetas), tuple(pairs),
                          tuple(diags))


@dataclass(frozen=True)
class ShiftPairs:
    """One (metric, delta) of the shift design as a :class:`~irsim.simulate.base.Generator`.

    A trial draws an ordered pair ``(baseline, pair)`` uniformly among `trial_pairs`; the
    baseline's scores come from its margin, the experimental system's from the same margin
    shifted by ``theta[baseline]`` (true mean: the baseline's + `delta`), tied by the pair's
    Gaussian copula. Per trial :meth:`draw` takes one uniform (the pair), then ``2 n``
    standard normals, whatever the delta (the deltas of a metric share their draws), and
    :meth:`scores` turns them into scores; ``experiment=test_errors`` (``design=shift``) and
    ``experiment=topic_set_size``'s check draw their trials this way, one generator per
    (metric, delta) (:attr:`SimulationData.generators`).

    Parameters
    ----------
    simulator : TopicSimulator
    theta : ndarray, shape (systems,)
        Proportional-odds shift of each system's margin to its mean + `delta` (NaN where
        unattainable).
    trial_pairs : ndarray of int64, shape (ordered pairs, 2)
        ``(baseline system, pair index)`` of the eligible ordered pairs.
    delta : float

    Examples
    --------
    >>> sim = TopicSimulator.normal(means=[0.3, 0.4, 0.5], sds=[0.1] * 3, rho=[0.5] * 3)
    >>> gen = ShiftPairs.of(prepare([sim], [0.05]))
    >>> gen.true_means.round(3).tolist()   # every system a baseline twice
    [0.4, 0.45]
    >>> gen.sample(np.random.default_rng(0), 4, 10).shape
    (4, 2, 10)
    """

    simulator: TopicSimulator
    theta: np.ndarray
    trial_pairs: np.ndarray
    delta: float

    @classmethod
    def of(cls, data: SimulationData, metric: int = 0, delta: int = 0) -> ShiftPairs:
        """Metric `metric` at delta `delta` (indices) of prepared shifted pairs."""
        return cls(data.simulators[metric], data.thetas[metric][delta],
                   data.trial_pairs[metric], data.deltas[delta])

    @classmethod
    def fit(cls, scores: ArrayLike, *, delta: float = 0.0, **options: object) -> ShiftPairs:
        """:func:`fit_simulator` (keyword `options`) and :func:`prepare` at `delta`."""
        return cls.of(prepare([fit_simulator(scores, **options)], [delta]))

    @staticmethod
    def draw(rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """The raw draws of `trials` trials, shape ``(trials, 1 + 2 n)``: the pair's uniform,
        then the two rows of normals."""
        return np.concatenate([rng.random((trials, 1)), rng.standard_normal((trials, 2 * n))],
                              axis=1)

    def scores(self, draws: np.ndarray, n: int) -> np.ndarray:
        """Scores ``(trials, 2, n)`` (baseline, experimental) from raw draws :meth:`draw`
        (row by row)."""
        ordered = self.trial_pairs
        pick = np.minimum((draws[:, 0] * len(ordered)).astype(np.int64), len(ordered) - 1)
        base, pair = ordered[pick, 0], ordered[pick, 1]
        y, x = self.simulator.scores(pair, draws[:, 1:n + 1], draws[:, n + 1:], margin_a=base,
                                     margin_b=base, theta_b=self.theta[base])
        return np.stack([y, x], axis=1)

    def sample(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """`trials` trials on `n` topics, shape ``(trials, 2, n)``."""
        return self.scores(self.draw(rng, int(trials), int(n)), int(n))

    @property
    def true_means(self) -> np.ndarray:
        """Expected baseline and experimental score over the uniform choice of the ordered
        pair (the experimental one is the baseline's + `delta`)."""
        base = self.trial_pairs[:, 0]
        m = self.simulator.margins
        return np.array([m.mean(0.0, base).mean(), m.mean(self.theta[base], base).mean()])
