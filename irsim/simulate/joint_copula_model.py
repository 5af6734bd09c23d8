"""Whole simulated collections: m systems on n topics with known true means (multiple testing).

The pairwise generator of :mod:`irsim.simulate.pairs` ties two systems by a copula per
pair; the study of multiple comparisons needs *all* systems of a collection at once, with a
known set of true null hypotheses. This module fits such a model to a real score matrix
(one metric) and draws collections from it.

Margins
    As in ``experiment=test_errors``: :func:`irsim.simulate.pairs.fit_simulator` fits a
    :class:`~irsim.simulate.margins.Margins` per system (``kernel`` for continuous metrics,
    ``empirical`` for discrete ones; duplicates and a bottom share may be dropped); its
    pairwise copulas are not used.

Dependence across all systems (``dependence``)
    - ``gaussian`` (default): a Gaussian copula over the whole pool of systems. Its
      correlation matrix is the Pearson correlation of the *normal scores* of each system's
      observed scores (``Phi^-1(rank / (topics + 1))``, average ranks for ties; the
      semiparametric estimate of Genest, Ghoudi & Rivest 1995). With more systems than
      topics (TREC-8: 129 runs, 50 topics) that matrix is singular, so it is shrunk towards
      the equicorrelation matrix with the same mean correlation ``rbar`` (the identity if
      ``rbar < 0``): ``R(lambda) = (1 - lambda) R + lambda T`` with the smallest ``lambda``
      in [0, 1] whose smallest eigenvalue is at least ``min_eigenvalue`` (bisection; the
      smallest eigenvalue is concave in lambda). The mean correlation, which drives the
      dependence of the tests, is kept exactly; ``lambda`` is reported
      (:attr:`JointCopulaModel.shrinkage`).
    - ``vine``: a regular vine copula fitted with :mod:`pyvinecopulib`
      (``Vinecop.from_data`` on the pseudo-observations of the pool, average ranks for
      ties; families ``vine_families``, truncated at ``vine_truncation`` trees: above it the
      pair copulas are independence, which keeps the fit and the sampling tractable when
      systems far outnumber topics). A collection is sampled by the inverse Rosenblatt
      transform of uniforms drawn by irsim's own generators (so draws are deterministic).

Collections
    A trial draws ``m`` distinct systems of the pool uniformly (the first ``m`` of a random
    permutation: the systems of a collection of 10 are those of 5 plus 5 more, common random
    numbers across ``m``) and one latent sample of the copula for the whole pool on ``n``
    topics. The first ``m0`` systems drawn are the *true nulls*: each margin is shifted by a
    proportional-odds transform (:meth:`~irsim.simulate.margins.Margins.shift_for_mean`) to
    exactly the common true mean ``null_mean``; the other ``m1 = m - m0`` systems get the
    true means ``null_mean + spread * k / m1``, ``k = 1 .. m1`` (evenly spread above the null
    mean: every pair with a non-null system differs, by a known multiple of
    ``spread / m1``, and the range of true differences does not depend on ``m``). A system pair
    is a true null hypothesis exactly when both are nulls (``m0 (m0 - 1) / 2`` pairs).
    Equal means are the null of the t, randomisation and bootstrap tests; the sign and
    Wilcoxon tests have other nulls (a zero median, a symmetric distribution of the
    differences), which two different margins with the same mean need not satisfy. With
    ``shared`` null margins (:meth:`JointCopulaModel.scores`) all null systems take the
    margin of the first system drawn (each keeps its own dimension of the copula), so a
    null pair is exchangeable under the Gaussian copula and every test's null holds.
    Only systems whose margin can reach both ``null_mean`` and ``null_mean + spread`` are in
    the pool (a discrete margin cannot pass its largest score).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> scores = np.clip(rng.beta(2, 5, (8, 40)) + rng.normal(0, .05, (1, 40)), 0, 1)
>>> model = fit_joint_copula_model(scores, metric="AP")
>>> model.pool, model.dependence
(8, 'gaussian')
>>> shifts = collection_shifts(model, m=4, m0=2, null_mean=0.25, spread=0.1)
>>> x, s = model.sample(np.random.default_rng(1), trials=3, n=40, m=4, shifts=shifts)
>>> x.shape, s.shape
((3, 4, 40), (3, 4))
>>> model.true_means(s, shifts).round(6)[0].tolist()
[0.25, 0.25, 0.3, 0.35]
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_ndtr, ndtri
from scipy.stats import rankdata

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.exact import corrcoef
from irsim.params import Choice
from irsim.simulate.margins import Margins
from irsim.simulate.pairs import fit_simulator

__all__ = [
    "DEPENDENCE",
    "MIN_EIGENVALUE",
    "VINE_FAMILIES",
    "JointCollections",
    "JointCopulaModel",
    "collection_shifts",
    "eligible_systems",
    "fit_joint_copula_model",
    "normal_scores",
    "position_means",
    "null_pair_mask",
    "shrink_correlation",
    "true_null_count",
]

#: Dependence models of :func:`fit_joint_copula_model`.


class CopulaDependence(Choice):
    """The copula of a simulated collection: Gaussian or a vine."""

    gaussian = "gaussian"
    vine = "vine"


DEPENDENCE = CopulaDependence.values()
#: Default floor on the smallest eigenvalue of the Gaussian copula's correlation matrix.
MIN_EIGENVALUE = 0.01
#: Default pair-copula families of the vine (the independence copula is always allowed).
VINE_FAMILIES = ("gaussian", "clayton", "gumbel", "frank", "joe")


# ----------------------------------------------------------------------------- helpers


def normal_scores(scores: ArrayLike) -> np.ndarray:
    """Per row, ``Phi^-1(rank / (n + 1))`` of the scores (average ranks for ties).

    Examples
    --------
    >>> normal_scores(np.array([[0.1, 0.3, 0.2]])).round(4).tolist()
    [[-0.6745, 0.6745, 0.0]]
    """
    x = np.atleast_2d(np.asarray(scores, np.float64))
    return ndtri(rankdata(x, axis=1) / (x.shape[1] + 1.0))


def shrink_correlation(corr: ArrayLike, min_eigenvalue: float = MIN_EIGENVALUE
                       ) -> tuple[np.ndarray, float]:
    """The correlation matrix shrunk (as little as needed) to have its smallest eigenvalue
    at least `min_eigenvalue`, and the shrinkage ``lambda``.

    ``R(lambda) = (1 - lambda) R + lambda T`` with ``T`` the equicorrelation matrix of the
    mean off-diagonal correlation ``rbar`` of ``R`` (the identity when ``rbar < 0`` or
    ``1 - rbar < min_eigenvalue``), so ``R(lambda)`` keeps the mean correlation; ``lambda``
    is the smallest value in [0, 1] meeting the floor, to 1e-12, by bisection (the smallest
    eigenvalue of ``R(lambda)`` is concave in ``lambda``).

    Examples
    --------
    >>> r = np.array([[1.0, 0.9, 0.9], [0.9, 1.0, -0.2], [0.9, -0.2, 1.0]])
    >>> round(float(np.linalg.eigvalsh(r)[0]), 4)
    -0.3767
    >>> s, lam = shrink_correlation(r, 0.01)
    >>> round(float(np.linalg.eigvalsh(s)[0]), 6), round(lam, 4)
    (0.01, 0.4343)
    >>> round(float(s[np.triu_indices(3, 1)].mean() - r[np.triu_indices(3, 1)].mean()), 12)
    0.0
    """
    r = np.asarray(corr, np.float64)
    k = len(r)
    if r.ndim != 2 or r.shape != (k, k):
        raise InputError(f"a correlation matrix must be square, got shape {r.shape}")
    floor = float(min_eigenvalue)
    if not 0.0 < floor < 1.0:
        raise ConfigError(f"min_eigenvalue must be in (0, 1), got {min_eigenvalue}")
    if k < 2 or np.linalg.eigvalsh(r)[0] >= floor:
        return r.copy(), 0.0
    off = r[np.triu_indices(k, 1)]
    rbar = float(off.mean())
    if rbar < 0 or 1.0 - rbar < floor:
        target = np.eye(k)
    else:
        target = np.full((k, k), rbar)
        np.fill_diagonal(target, 1.0)

    def mix(lam: float) -> np.ndarray:
        out = (1.0 - lam) * r + lam * target
        np.fill_diagonal(out, 1.0)
        return out

    lo, hi = 0.0, 1.0
    while hi - lo > 1e-12:  # about 40 steps
        mid = 0.5 * (lo + hi)
        if np.linalg.eigvalsh(mix(mid))[0] >= floor:
            hi = mid
        else:
            lo = mid
    return mix(hi), hi


def true_null_count(m: int, share_null: float) -> int:
    """Systems sharing the null mean in a collection of `m`: ``floor(share_null m + 1/2)``.

    Examples
    --------
    >>> true_null_count(10, 0.5), true_null_count(5, 0.5), true_null_count(7, 1.0)
    (5, 3, 7)
    """
    return int(math.floor(float(share_null) * int(m) + 0.5))


def null_pair_mask(m: int, m0: int) -> np.ndarray:
    """For the pairs ``a < b`` of `m` systems (row-major :func:`numpy.triu_indices`), whether
    the pair is a true null hypothesis (both among the first `m0` systems).

    Examples
    --------
    >>> null_pair_mask(4, 2).tolist()
    [True, False, False, False, False, False]
    """
    a, b = np.triu_indices(int(m), 1)
    return b < int(m0)


def position_means(m: int, m0: int, null_mean: float, spread: float) -> np.ndarray:
    """True mean of each position of a collection: `null_mean` for the first `m0`, then
    ``null_mean + spread k / m1`` for ``k = 1 .. m1``.

    Examples
    --------
    >>> position_means(5, 2, 0.2, 0.1).round(6).tolist()
    [0.2, 0.2, 0.233333, 0.266667, 0.3]
    """
    m1 = int(m) - int(m0)
    extra = spread * np.arange(1, m1 + 1) / max(m1, 1)
    return np.concatenate([np.full(int(m0), float(null_mean)), null_mean + extra])


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class JointCopulaModel:
    """A fitted model of one metric's collection: margins of a pool of systems and one
    copula across all of them.

    Parameters
    ----------
    metric : str
    systems : tuple of str
        The pool (systems a collection draws from), in the order of `margins`.
    margins : Margins
    dependence : {"gaussian", "vine"}
    corr : ndarray, shape (pool, pool)
        Gaussian: the (shrunk) copula correlation; vine: the normal-score correlation of
        the pool (for diagnostics).
    shrinkage : float
        Gaussian: ``lambda`` of :func:`shrink_correlation` (0 for the vine).
    vine_json : str
        Vine: the fitted ``pyvinecopulib.Vinecop`` as JSON (rebuilt where it is sampled).
    dropped : tuple of str
        Systems of the source left out (duplicates, bottom share, unreachable means).
    null_mean : float
        Common true mean of the null systems the pool was chosen for (NaN: not chosen).
    spread : float
        Range of the non-null true means above `null_mean` the pool was chosen for.

    Examples
    --------
    >>> model = JointCopulaModel.normal([0.3, 0.3, 0.4], [0.1] * 3, 0.5)
    >>> model.corr.round(2).tolist()[0]
    [1.0, 0.5, 0.5]
    """

    metric: str
    systems: tuple[str, ...]
    margins: Margins
    dependence: str
    corr: np.ndarray
    shrinkage: float = 0.0
    vine_json: str = ""
    dropped: tuple[str, ...] = field(default=())
    null_mean: float = float("nan")
    spread: float = float("nan")

    def __post_init__(self) -> None:
        object.__setattr__(self, "systems", tuple(self.systems))
        object.__setattr__(self, "dropped", tuple(self.dropped))
        corr = np.ascontiguousarray(self.corr, np.float64)
        corr.setflags(write=False)
        object.__setattr__(self, "corr", corr)
        if self.dependence not in DEPENDENCE:
            raise unknown_name("dependence", str(self.dependence), DEPENDENCE)
        if len(self.systems) != self.margins.systems or corr.shape != (self.pool,) * 2:
            raise InputError(f"{len(self.systems)} systems, {self.margins.systems} margins "
                             f"and a correlation matrix of shape {corr.shape}")
        if self.dependence == "vine" and not self.vine_json:
            raise InputError("a vine model needs its fitted vine (vine_json)")

    @classmethod
    def normal(cls, means: ArrayLike, sds: ArrayLike, rho: float,
               metric: str = "normal") -> JointCopulaModel:
        """Normal margins (:func:`irsim.simulate.margins.normal_margins`) and a Gaussian
        copula of equal correlations `rho`: checks against normal theory."""
        from irsim.simulate.margins import normal_margins

        margins = normal_margins(means, sds)
        k = margins.systems
        corr = np.full((k, k), float(rho))
        np.fill_diagonal(corr, 1.0)
        return cls(metric, tuple(f"s{i}" for i in range(k)), margins, "gaussian", corr)

    @property
    def pool(self) -> int:
        """Systems a collection draws from."""
        return self.margins.systems

    @cached_property
    def _chol(self) -> np.ndarray:
        return np.linalg.cholesky(self.corr)

    @cached_property
    def _vine(self) -> Any:
        import pyvinecopulib as pv

        return pv.Vinecop.from_json(self.vine_json)

    def draw_width(self, n: int) -> int:
        """Random numbers per trial of :meth:`latent` (the pool's selection keys, then the
        latent sample on `n` topics)."""
        return self.pool * (1 + int(n))

    def draw(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """The raw random numbers of `trials` collections on `n` topics, shape
        ``(trials, draw_width(n))``: uniform selection keys, then standard normals
        (Gaussian) or uniforms (vine) of the latent sample."""
        keys = rng.random((trials, self.pool))
        if self.dependence == "gaussian":
            latent = rng.standard_normal((trials, self.pool * int(n)))
        else:
            latent = rng.random((trials, self.pool * int(n)))
        return np.concatenate([keys, latent], axis=1)

    def latent(self, draws: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """From raw draws: the order in which each trial picks systems (trials, pool) and
        the latent log-odds ``logit(U)`` of the copula sample (trials, pool, n)."""
        draws = np.asarray(draws, np.float64)
        t, k = len(draws), self.pool
        order = np.argsort(draws[:, :k], axis=1, kind="stable")
        raw = draws[:, k:].reshape(t * int(n), k)
        if self.dependence == "gaussian":
            z = raw @ self._chol.T  # (trials * topics, pool)
            logit = log_ndtr(z) - log_ndtr(-z)
        else:
            u = np.asarray(self._vine.inverse_rosenblatt(np.clip(raw, 1e-12, 1 - 1e-12)))
            logit = np.log(u) - np.log1p(-u)
        return order, np.ascontiguousarray(logit.reshape(t, int(n), k).transpose(0, 2, 1))

    def scores(self, order: np.ndarray, logit: np.ndarray, m: int, shifts: np.ndarray,
               *, m0: int = 0, shared: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Scores of collections of `m` systems, ``(trials, m, n)``, and the margins used
        ``(trials, m)`` (pool indices; position j has the true mean of position j).

        Parameters
        ----------
        order, logit : ndarray
            From :meth:`latent`.
        m : int
        shifts : ndarray, shape (pool, m)
            Proportional-odds shift of each system's margin at each position
            (:func:`collection_shifts`).
        m0 : int
            Null systems (the first `m0` positions).
        shared : bool
            Give every null position the margin of the system drawn first (each keeps its
            own copula dimension): null pairs are then exchangeable under a Gaussian copula,
            so even the sign and Wilcoxon nulls hold exactly (not just equal means).
        """
        systems = order[:, : int(m)]
        rows = np.arange(len(order))[:, None]
        lat = logit[rows, systems]  # (trials, m, n)
        margins = systems
        if shared and m0 > 1:
            margins = systems.copy()
            margins[:, : int(m0)] = systems[:, :1]
        theta = shifts[margins, np.arange(int(m))[None, :]]  # (trials, m)
        u = expit(lat + theta[:, :, None])
        return self.margins.quantile(margins[:, :, None], u), margins

    def sample(self, rng: np.random.Generator, trials: int, n: int, m: int,
               shifts: np.ndarray, *, m0: int = 0, shared: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
        """`trials` collections of `m` systems on `n` topics (see :meth:`scores`)."""
        order, logit = self.latent(self.draw(rng, trials, n), n)
        return self.scores(order, logit, m, shifts, m0=m0, shared=shared)

    def true_means(self, margins: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """Exact true mean of every system of sampled collections, from the margins
        :meth:`scores` returns (trials, m)."""
        m = margins.shape[1]
        theta = shifts[margins, np.arange(m)[None, :]]
        return self.margins.mean(theta.ravel(), margins.ravel()).reshape(margins.shape)

    def describe(self) -> dict:
        """Fit summary (for the fit table): pool, dropped, shrinkage, mean correlation."""
        k = self.pool
        off = self.corr[np.triu_indices(k, 1)]
        out = {"metric": self.metric, "margin": self.margins.kind,
               "support": self.margins.support or "", "dependence": self.dependence,
               "systems": k, "dropped": len(self.dropped),
               "null_mean": float(self.null_mean), "spread": float(self.spread),
               "shrinkage": float(self.shrinkage),
               "corr_mean": float(off.mean()) if len(off) else float("nan"),
               "min_eigenvalue": float(np.linalg.eigvalsh(self.corr)[0]),
               "vine_truncation": -1, "vine_loglik": float("nan")}
        if self.dependence == "vine":
            out["vine_truncation"] = int(self._vine.trunc_lvl)
            out["vine_loglik"] = float(json.loads(self.vine_json).get("loglik", float("nan")))
        return out


# ----------------------------------------------------------------------------- fitting


def eligible_systems(margins: Margins, null_mean: float, spread: float) -> np.ndarray:
    """Whether each margin can be shifted to the true means ``null_mean`` and
    ``null_mean + spread`` (and so to every mean between them).

    Examples
    --------
    >>> from irsim.simulate.margins import empirical_margins
    >>> m = empirical_margins(np.array([[0.0, 0.2, 0.4], [0.0, 0.1, 0.2]]))
    >>> eligible_systems(m, 0.15, 0.1).tolist()
    [True, False]
    """
    lo = margins.shift_for_mean(np.full(margins.systems, float(null_mean)))
    hi = margins.shift_for_mean(np.full(margins.systems, float(null_mean) + float(spread)))
    return np.isfinite(lo) & np.isfinite(hi)


def _subset(margins: Margins, keep: np.ndarray) -> Margins:
    return Margins(margins.x[keep], margins.F[keep], margins.kind, margins.support)


def fit_joint_copula_model(
    scores: ArrayLike,
    *,
    metric: str = "score",
    systems: Sequence[str] | None = None,
    margin: str = "auto",
    dependence: str = "gaussian",
    drop_duplicates: bool = True,
    drop_bottom: float = 0.0,
    null_mean: float | None = None,
    spread: float = 0.1,
    min_eigenvalue: float = MIN_EIGENVALUE,
    vine_truncation: int = 2,
    vine_families: Sequence[str] = VINE_FAMILIES,
) -> JointCopulaModel:
    """Fit margins and one copula across all systems of a (systems, topics) score matrix.

    Parameters
    ----------
    scores : array_like, shape (systems, topics)
        Per-topic scores in [0, 1] of one metric.
    metric : str
    systems : sequence of str, optional
        System ids (default ``s0, s1, ...``).
    margin : {"auto", "kernel", "empirical"}
        Margins, as :func:`irsim.simulate.margins.fit_margins`.
    dependence : {"gaussian", "vine"}
        The copula (see the module docstring).
    drop_duplicates, drop_bottom
        Systems left out, as :func:`irsim.simulate.pairs.fit_simulator`.
    null_mean : float, optional
        Common true mean of the null systems; default: the median of the systems' means
        minus ``spread / 2``. Systems whose margin cannot reach ``null_mean`` and
        ``null_mean + spread`` leave the pool.
    spread : float
        Range of the non-null systems' true means above `null_mean` (> 0).
    min_eigenvalue : float
        Gaussian: floor of the smallest eigenvalue of the copula correlation
        (:func:`shrink_correlation`).
    vine_truncation : int
        Vine: trees fitted (>= 1); higher trees are independence.
    vine_families : sequence of str
        Vine: pair-copula families (``pyvinecopulib.BicopFamily`` names).

    Returns
    -------
    JointCopulaModel
        With the null mean and spread its pool was chosen for.

    Examples
    --------
    >>> x = np.array([[0.1, 0.4, 0.3, 0.8], [0.2, 0.5, 0.2, 0.9], [0.3, 0.6, 0.1, 0.7]])
    >>> model = fit_joint_copula_model(x, spread=0.05)
    >>> model.systems, model.margins.kind
    (('s0', 's1', 's2'), 'empirical')
    """
    if dependence not in DEPENDENCE:
        raise unknown_name("dependence", str(dependence), DEPENDENCE)
    if not (math.isfinite(float(spread)) and float(spread) > 0):
        raise ConfigError(f"spread must be > 0, got {spread}")
    sim = fit_simulator(scores, metric=metric, systems=None if systems is None
                        else tuple(systems), margin=margin, drop_duplicates=drop_duplicates,
                        drop_bottom=drop_bottom)
    x = np.atleast_2d(np.asarray(scores, np.float64))
    names = tuple(systems) if systems is not None else tuple(f"s{i}" for i in range(len(x)))
    rows = np.array([names.index(s) for s in sim.systems])
    kept = x[rows]
    base = sim.margins.mean()
    center = float(np.median(base)) - 0.5 * float(spread) if null_mean is None \
        else float(null_mean)
    ok = eligible_systems(sim.margins, center, float(spread))
    if np.count_nonzero(ok) < 2:
        raise ConfigError(f"metric {metric}: fewer than 2 systems can be shifted to the null "
                          f"mean {center:.4g} and to {center + float(spread):.4g}; use a "
                          f"smaller spread or another null_mean")
    margins = _subset(sim.margins, ok)
    pool = tuple(s for s, k in zip(sim.systems, ok, strict=True) if k)
    dropped = sim.dropped + tuple(s for s, k in zip(sim.systems, ok, strict=True) if not k)
    kept = kept[ok]
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = corrcoef(normal_scores(kept))
    corr = np.nan_to_num(corr)  # a constant system: uncorrelated
    np.fill_diagonal(corr, 1.0)
    model_kw: dict[str, Any] = {}
    if dependence == "gaussian":
        corr, lam = shrink_correlation(corr, min_eigenvalue)
        model_kw["shrinkage"] = lam
    else:
        model_kw["vine_json"] = _fit_vine(kept, vine_truncation, vine_families)
    return JointCopulaModel(metric, pool, margins, dependence, corr, dropped=dropped,
                           null_mean=center, spread=float(spread), **model_kw)


def _fit_vine(kept: np.ndarray, truncation: int, families: Sequence[str]) -> str:
    """The vine of the pseudo-observations of the rows of `kept`, as JSON."""
    import pyvinecopulib as pv

    if isinstance(truncation, bool) or int(truncation) != truncation or int(truncation) < 1:
        raise ConfigError(f"vine_truncation must be an integer >= 1, got {truncation!r}")
    names = pv.BicopFamily.__members__
    fams = [pv.BicopFamily.indep]
    for f in families:
        if f not in names:
            raise unknown_name("vine family", str(f), tuple(names))
        if names[f] not in fams:
            fams.append(names[f])
    u = pv.to_pseudo_obs(np.asfortranarray(kept.T))
    controls = pv.FitControlsVinecop(family_set=fams, trunc_lvl=int(truncation),
                                     num_threads=1)
    return pv.Vinecop.from_data(u, controls=controls).to_json()


def collection_shifts(model: JointCopulaModel, m: int, m0: int, null_mean: float,
                      spread: float) -> np.ndarray:
    """Proportional-odds shift of every pool margin to the true mean of every position of
    a collection of `m` with `m0` nulls (:func:`position_means`), shape (pool, m).

    Examples
    --------
    >>> model = JointCopulaModel.normal([0.3, 0.35, 0.4], [0.05] * 3, 0.5)
    >>> th = collection_shifts(model, 3, 2, 0.35, 0.05)
    >>> model.margins.mean(th[:, 0]).round(9).tolist()   # every system at position 0
    [0.35, 0.35, 0.35]
    """
    targets = position_means(m, m0, null_mean, spread)
    k = model.pool
    theta = model.margins.shift_for_mean(np.repeat(targets[None, :], k, axis=0).ravel(),
                                         np.repeat(np.arange(k), len(targets)))
    theta = theta.reshape(k, len(targets))
    if not np.isfinite(theta).all():
        raise ConfigError(f"metric {model.metric}: a margin cannot reach a true mean in "
                          f"[{null_mean}, {null_mean + spread}]")
    return theta


@dataclass(frozen=True)
class JointCollections:
    """Collections of `m` systems with `m0` true nulls as a
    :class:`~irsim.simulate.base.Generator`: the draws of :meth:`JointCopulaModel.draw` (the
    pool's selection keys, then the latent sample; the same for every layout of the model),
    their latent sample (:meth:`latent`, also shared by the layouts) and the collections of
    this layout with the shifts of :func:`collection_shifts` (:meth:`collections`).
    ``experiment=multiple_testing`` draws its trials this way, one generator per (metric, m,
    m0, shared null margins) (``CollectionData.generators`` of the study).

    Parameters
    ----------
    model : JointCopulaModel
    m, m0 : int
        Systems per collection and true nulls among them (the first `m0` positions).
    shifts : ndarray, shape (pool, m)
        :func:`collection_shifts` of `model` at `null_mean` and `spread`.
    null_mean, spread : float
        The true means of the positions (:func:`position_means`).
    shared : bool
        Null positions share the margin of the system drawn first
        (:meth:`JointCopulaModel.scores`).

    Examples
    --------
    >>> model = JointCopulaModel.normal([0.3, 0.35, 0.4, 0.45], [0.05] * 4, 0.5)
    >>> gen = JointCollections.of(model, 3, 2, null_mean=0.35, spread=0.05)
    >>> gen.true_means.round(6).tolist(), gen.sample(np.random.default_rng(0), 5, 20).shape
    ([0.35, 0.35, 0.4], (5, 3, 20))
    >>> from irsim.simulate.base import Generator
    >>> isinstance(gen, Generator)
    True

    The exact true mean of every system drawn (each margin's own shift, within the 1e-10 of
    :meth:`~irsim.simulate.margins.Margins.shift_for_mean` of `true_means`):

    >>> x, means = gen.collections(gen.latent(gen.draw(np.random.default_rng(0), 5, 20), 20))
    >>> bool((x == gen.sample(np.random.default_rng(0), 5, 20)).all())
    True
    >>> bool(np.abs(means - gen.true_means).max() < 1e-9), means.shape
    (True, (5, 3))
    """

    model: JointCopulaModel
    m: int
    m0: int
    shifts: np.ndarray
    null_mean: float
    spread: float
    shared: bool = False

    @classmethod
    def of(cls, model: JointCopulaModel, m: int, m0: int, *, null_mean: float | None = None,
           spread: float | None = None, shared: bool = False) -> JointCollections:
        """Collections of `model` (default null mean and spread: the model's own)."""
        mu0 = float(model.null_mean if null_mean is None else null_mean)
        width = float(model.spread if spread is None else spread)
        return cls(model, int(m), int(m0), collection_shifts(model, m, m0, mu0, width), mu0,
                   width, bool(shared))

    @classmethod
    def fit(cls, scores: ArrayLike, *, m: int, share_null: float = 0.5, shared: bool = False,
            **options: Any) -> JointCollections:
        """:func:`fit_joint_copula_model` (keyword `options`), then collections of `m` with
        :func:`true_null_count` nulls at the model's null mean and spread."""
        model = fit_joint_copula_model(scores, **options)
        return cls.of(model, m, true_null_count(m, share_null), shared=shared)

    def draw(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """The raw random numbers of `trials` collections on `n` topics
        (:meth:`JointCopulaModel.draw`: they depend on the model only)."""
        return self.model.draw(rng, int(trials), int(n))

    def latent(self, draws: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The order in which each trial of `draws` picks systems and its latent log-odds
        (:meth:`JointCopulaModel.latent`: they depend on the model only, so a kernel computes
        them once for every layout)."""
        return self.model.latent(draws, int(n))

    def collections(self, latent: tuple[np.ndarray, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The collections of a :meth:`latent` sample, ``(trials, m, n)``, and the exact true
        mean of each system drawn, ``(trials, m)`` (:meth:`JointCopulaModel.true_means`: the
        mean of its margin under its own shift, which equals the position's
        :attr:`true_means` to the 1e-10 of the shift)."""
        order, logit = latent
        x, margins = self.model.scores(order, logit, self.m, self.shifts, m0=self.m0,
                                       shared=self.shared)
        return x, self.model.true_means(margins, self.shifts)

    def scores(self, draws: np.ndarray, n: int) -> np.ndarray:
        """The collections ``(trials, m, n)`` of the raw `draws` (row by row; as
        :meth:`collections`, without the true means)."""
        order, logit = self.latent(draws, n)
        return self.model.scores(order, logit, self.m, self.shifts, m0=self.m0,
                                 shared=self.shared)[0]

    def sample(self, rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
        """`trials` collections on `n` topics, shape ``(trials, m, n)``."""
        return self.scores(self.draw(rng, trials, n), n)

    @property
    def true_means(self) -> np.ndarray:
        """The true mean of each position (exact for every system drawn there, to the 1e-10
        of :meth:`~irsim.simulate.margins.Margins.shift_for_mean`)."""
        return position_means(self.m, self.m0, self.null_mean, self.spread)
