"""Generalizability theory for test collections: G-study variance components and D-study
reliability (Bodoff & Li 2007; Urbano, Marrero & Martin, SIGIR 2013; Urbano, IRJ 2016;
METHODS.md section 8).

A systems x topics score matrix is a crossed design with one observation per cell. The
two-way ANOVA without replication (:func:`irsim.stats.anova.anova_two_way`) gives the mean
squares ``MS_s``, ``MS_t``, ``MS_e`` and the variance components are

- ``var_system = (MS_s - MS_e) / n_t``
- ``var_topic = (MS_t - MS_e) / n_s``
- ``var_residual = MS_e`` (system x topic interaction confounded with error),

with negative estimates set to 0 (and flagged). For a D-study with ``n'`` topics:

- ``E(rho^2) = var_system / (var_system + var_residual / n')`` (relative decisions: ranking
  systems),
- ``Phi = var_system / (var_system + (var_topic + var_residual) / n')`` (absolute scores).

Examples
--------
At the G-study's topics ``E(rho^2)`` is Cronbach's alpha with the topics as items (Hoyt):

>>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3],
...               [0.6, 0.2, 0.1, 0.3, 0.2, 0.3]])
>>> t = s.shape[1]
>>> alpha = t / (t - 1) * (1 - s.var(axis=0, ddof=1).sum() / s.sum(axis=1).var(ddof=1))
>>> bool(np.isclose(e_rho2(g_study(s)), alpha))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

from irsim.errors import ConfigError
from irsim.stats.anova import anova_two_way

__all__ = ["GStudy", "g_study", "e_rho2", "phi", "topics_for", "feldt_interval", "GStudy3",
           "g_study3", "d_study3", "g_study3_bootstrap", "COMPONENTS3", "DESIGNS3"]


@dataclass(frozen=True)
class GStudy:
    """Variance components of a systems x topics matrix (leading axes: independent problems).

    Attributes
    ----------
    systems, topics : int
        Size of the G-study.
    var_system, var_topic, var_residual : ndarray
        Variance components (negative estimates set to 0).
    negative_system, negative_topic : ndarray of bool
        Whether the raw estimate was negative.
    ms_system, ms_topic, ms_residual : ndarray
        Mean squares of the two-way ANOVA.
    """

    systems: int
    topics: int
    var_system: np.ndarray
    var_topic: np.ndarray
    var_residual: np.ndarray
    negative_system: np.ndarray
    negative_topic: np.ndarray
    ms_system: np.ndarray
    ms_topic: np.ndarray
    ms_residual: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """``var_system + var_topic + var_residual``."""
        return self.var_system + self.var_topic + self.var_residual


def g_study(scores: ArrayLike) -> GStudy:
    """Variance components of `scores`, shape ``(..., systems, topics)``.

    Examples
    --------
    >>> g = g_study(np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]))
    >>> float(g.var_system), float(g.var_topic), float(g.var_residual)
    (0.0, 1.0, 0.0)
    """
    r = anova_two_way(scores)
    s, t = r.df_systems + 1, r.df_topics + 1
    ms_s, ms_t, ms_e = (np.asarray(v, float) for v in (r.ms_systems, r.ms_topics, r.ms_error))
    raw_s = (ms_s - ms_e) / t
    raw_t = (ms_t - ms_e) / s
    return GStudy(s, t, np.maximum(raw_s, 0.0)[()], np.maximum(raw_t, 0.0)[()], ms_e[()],
                  (raw_s < 0)[()], (raw_t < 0)[()], ms_s[()], ms_t[()], ms_e[()])


def _topics(g: GStudy, topics: ArrayLike | None) -> np.ndarray:
    n = np.asarray(g.topics if topics is None else topics, float)
    if not (n > 0).all():
        raise ConfigError(f"topics must be positive, got {topics!r}")
    return n


def e_rho2(g: GStudy, topics: ArrayLike | None = None) -> np.ndarray:
    """Generalizability coefficient ``E(rho^2)`` with `topics` topics (default: the
    G-study's); broadcasts `topics` against the components. NaN when every component is 0.

    Examples
    --------
    Here ``MS_s = 1/24``, ``MS_e = 1/600``, so ``var_system = (1/24 - 1/600) / 3 = 1/75``
    and ``E(rho^2) = (1/75) / (1/75 + (1/600) / n')``: 8/9 and 80/81.

    >>> g = g_study(np.array([[0.2, 0.4, 0.3], [0.4, 0.6, 0.4]]))
    >>> bool(np.allclose(e_rho2(g, [1, 10]), [8 / 9, 80 / 81], rtol=1e-12))
    True
    """
    n = _topics(g, topics)
    with np.errstate(invalid="ignore", divide="ignore"):
        return g.var_system / (g.var_system + g.var_residual / n)


def phi(g: GStudy, topics: ArrayLike | None = None) -> np.ndarray:
    """Dependability index ``Phi`` with `topics` topics (default: the G-study's).

    Examples
    --------
    Here ``var_system = 1/75``, ``var_topic = (13/600 - 1/600) / 2 = 1/100``,
    ``var_residual = 1/600``, so ``Phi = 8 / (8 + 7 / n')``: 8/15 and 80/87.

    >>> g = g_study(np.array([[0.2, 0.4, 0.3], [0.4, 0.6, 0.4]]))
    >>> bool(np.allclose(phi(g, [1, 10]), [8 / 15, 80 / 87], rtol=1e-12))
    True
    """
    n = _topics(g, topics)
    with np.errstate(invalid="ignore", divide="ignore"):
        return g.var_system / (g.var_system + (g.var_topic + g.var_residual) / n)


def topics_for(target: ArrayLike, var_system: ArrayLike, var_error: ArrayLike) -> np.ndarray:
    """Smallest number of topics ``n >= 1`` with ``var_system / (var_system + var_error / n)
    >= target``: ``var_error = var_residual`` for ``E(rho^2)``, ``var_topic + var_residual``
    for ``Phi``. -1 where no n reaches it (``var_system = 0``).

    Examples
    --------
    >>> topics_for([0.8, 0.9], 0.001, 0.01).tolist()
    [40, 90]
    """
    t = np.asarray(target, float)
    if not ((t > 0) & (t < 1)).all():
        raise ConfigError(f"targets must be in (0, 1), got {target!r}")
    vs, ve, t = np.broadcast_arrays(np.asarray(var_system, float),
                                    np.asarray(var_error, float), t)
    with np.errstate(invalid="ignore", divide="ignore"):
        guess = np.ceil(t / (1.0 - t) * ve / vs)
    ok = np.isfinite(guess)
    n = np.where(ok, np.maximum(guess, 1.0), 1.0)
    # the closed form can miss by one in floating point: step to the exact smallest n
    for _ in range(2):
        with np.errstate(invalid="ignore", divide="ignore"):
            below = vs / (vs + ve / (n - 1.0)) >= t
            n = np.where(ok & (n > 1) & below, n - 1.0, n)
            short = vs / (vs + ve / n) < t
            n = np.where(ok & short, n + 1.0, n)
    return np.where(ok & (vs > 0), n, -1).astype(np.int64)


def feldt_interval(g: GStudy, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``level`` interval of ``E(rho^2)`` at the G-study's topics under the normal
    random-effects model (Feldt 1965; ICC(C,k) of McGraw & Wong 1996): ``F = MS_s / MS_e``
    times ``var_e / (var_e + n var_s)`` is F distributed with ``(s - 1, (s - 1)(n - 1))``
    degrees of freedom, so ``E(rho^2)`` lies in ``[1 - F_hi / F, 1 - F_lo / F]``.

    Examples
    --------
    Feldt's interval of Cronbach's alpha (topics as items), ``1 - (1 - alpha) F``:

    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4, 0.3],
    ...               [0.6, 0.2, 0.1, 0.3, 0.2, 0.3]])
    >>> t = s.shape[1]
    >>> alpha = t / (t - 1) * (1 - s.var(axis=0, ddof=1).sum() / s.sum(axis=1).var(ddof=1))
    >>> f = sps.f(2, 2 * (t - 1))
    >>> lo, hi = feldt_interval(g_study(s))
    >>> bool(np.allclose([lo, hi], [1 - (1 - alpha) * f.ppf(0.975),
    ...                             1 - (1 - alpha) * f.ppf(0.025)]))
    True
    """
    if not 0.0 < float(level) < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    df1, df2 = g.systems - 1, (g.systems - 1) * (g.topics - 1)
    a = (1.0 - float(level)) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        f = g.ms_system / g.ms_residual
        lo = 1.0 - sps.f.isf(a, df1, df2) / f
        hi = 1.0 - sps.f.ppf(a, df1, df2) / f
    return lo, hi


#: The seven variance components of a systems x topics x assessors design, in order.
COMPONENTS3 = ("system", "topic", "assessor", "system_topic", "system_assessor",
               "topic_assessor", "residual")


@dataclass(frozen=True)
class GStudy3:
    """Variance components of a systems x topics x assessors design (fully crossed, one
    observation per cell, all facets random; leading axes: independent problems).

    Attributes
    ----------
    systems, topics, assessors : int
        Size of the G-study.
    df : dict of str to int
        Degrees of freedom of each term of :data:`COMPONENTS3` (``residual``: the
        s x t x a interaction confounded with error).
    ms : dict of str to ndarray
        Mean squares of each term (0 for a term without degrees of freedom).
    var : dict of str to ndarray
        Variance components (negative estimates set to 0).
    negative : dict of str to ndarray of bool
        Whether the raw estimate was negative.
    """

    systems: int
    topics: int
    assessors: int
    df: dict
    ms: dict
    var: dict
    negative: dict

    @property
    def total(self) -> np.ndarray:
        """Sum of the (clipped) variance components."""
        return sum(self.var[c] for c in COMPONENTS3)


def g_study3(scores: ArrayLike) -> GStudy3:
    """Variance components of `scores`, shape ``(..., systems, topics, assessors)``, by the
    ANOVA (expected mean squares) estimators of the random-effects model (Brennan 2001,
    section 3.4):

    - ``residual = MS_sta``, ``system_topic = (MS_st - MS_sta) / n_a``,
      ``system_assessor = (MS_sa - MS_sta) / n_t``,
      ``topic_assessor = (MS_ta - MS_sta) / n_s``,
    - ``system = (MS_s - MS_st - MS_sa + MS_sta) / (n_t n_a)``, and likewise ``topic`` and
      ``assessor``.

    Every estimate comes from the mean squares; a negative one is then set to 0 (and
    flagged), as is usual. With one assessor the assessor terms have no degrees of freedom
    (mean square 0): ``system_topic`` is then the two-facet residual (the s x t interaction
    confounded with error) and ``system``, ``topic`` are :func:`g_study`'s.

    Examples
    --------
    An additive table (no interaction) has only main effects:

    >>> x = (np.array([0.0, 1.0])[:, None, None] + np.array([0.0, 2.0, 4.0])[None, :, None]
    ...      + np.array([0.0, 0.5])[None, None, :])
    >>> g = g_study3(x)
    >>> [round(float(g.var[c]), 6) for c in COMPONENTS3]
    [0.5, 4.0, 0.125, 0.0, 0.0, 0.0, 0.0]
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim < 3 or x.shape[-3] < 2 or x.shape[-2] < 2 or x.shape[-1] < 1:
        raise ConfigError(f"scores must be (..., systems, topics, assessors) with >= 2 "
                          f"systems and topics, got shape {x.shape}")
    s, t, a = x.shape[-3:]
    grand = x.mean(axis=(-3, -2, -1), keepdims=True)
    m_st = x.mean(axis=-1, keepdims=True)
    m_sa = x.mean(axis=-2, keepdims=True)
    m_ta = x.mean(axis=-3, keepdims=True)
    m_s = m_st.mean(axis=-2, keepdims=True)
    m_t = m_st.mean(axis=-3, keepdims=True)
    m_a = m_sa.mean(axis=-3, keepdims=True)
    eff = {"system": m_s - grand, "topic": m_t - grand, "assessor": m_a - grand,
           "system_topic": m_st - m_s - m_t + grand,
           "system_assessor": m_sa - m_s - m_a + grand,
           "topic_assessor": m_ta - m_t - m_a + grand,
           "residual": x - m_st - m_sa - m_ta + m_s + m_t + m_a - grand}
    # cells behind each effect's level: n / (levels of the effect)
    reps = {"system": t * a, "topic": s * a, "assessor": s * t, "system_topic": a,
            "system_assessor": t, "topic_assessor": s, "residual": 1}
    df = {"system": s - 1, "topic": t - 1, "assessor": a - 1,
          "system_topic": (s - 1) * (t - 1), "system_assessor": (s - 1) * (a - 1),
          "topic_assessor": (t - 1) * (a - 1), "residual": (s - 1) * (t - 1) * (a - 1)}
    ms = {}
    for c in COMPONENTS3:
        ss = reps[c] * (eff[c] ** 2).sum(axis=(-3, -2, -1))
        ms[c] = ss / df[c] if df[c] > 0 else np.zeros_like(ss)
    e = ms["residual"]
    raw = {"system": (ms["system"] - ms["system_topic"] - ms["system_assessor"] + e) / (t * a),
           "topic": (ms["topic"] - ms["system_topic"] - ms["topic_assessor"] + e) / (s * a),
           "assessor": (ms["assessor"] - ms["system_assessor"] - ms["topic_assessor"] + e)
           / (s * t),
           "system_topic": (ms["system_topic"] - e) / a,
           "system_assessor": (ms["system_assessor"] - e) / t,
           "topic_assessor": (ms["topic_assessor"] - e) / s,
           "residual": e}
    return GStudy3(s, t, a, df, {c: v[()] for c, v in ms.items()},
                   {c: np.maximum(v, 0.0)[()] for c, v in raw.items()},
                   {c: (v < 0)[()] for c, v in raw.items()})


#: D-study designs of :func:`d_study3`.
DESIGNS3 = ("crossed", "nested")


def d_study3(g: GStudy3, topics: ArrayLike, assessors: ArrayLike, *,
             design: str = "nested") -> tuple[np.ndarray, np.ndarray]:
    """``E(rho^2)`` and ``Phi`` of a collection with `topics` topics judged by `assessors`
    assessors each (broadcast against each other and the components; Brennan 2001, ch. 4).

    ``design="crossed"``: the same ``n_a`` assessors judge every topic (s x T x A)::

        rel. error = st / n_t + sa / n_a + res / (n_t n_a)
        abs. error = rel. error + t / n_t + a / n_a + ta / (n_t n_a)

    ``design="nested"``: every topic gets its own ``n_a`` assessors (s x (A:T), as TREC
    assigns topics to assessors); the assessor and its interactions with the topic are then
    one effect within topics::

        rel. error = st / n_t + (sa + res) / (n_t n_a)
        abs. error = rel. error + t / n_t + (a + ta) / (n_t n_a)

    ``E(rho^2) = system / (system + rel. error)``, ``Phi = system / (system + abs. error)``.

    Examples
    --------
    A new assessor per topic averages the assessor's interaction with the systems over the
    topics; the same assessor on every topic does not:

    >>> g = g_study3(np.random.default_rng(0).normal(size=(5, 8, 3))
    ...              + np.arange(5.0)[:, None, None] / 2)
    >>> r_c, _ = d_study3(g, 8, [1, 2, 3], design="crossed")
    >>> r_n, _ = d_study3(g, 8, [1, 2, 3], design="nested")
    >>> bool((np.diff(r_c) > 0).all() and (r_n >= r_c).all())
    True
    """
    if design not in DESIGNS3:
        raise ConfigError(f"design must be one of {', '.join(DESIGNS3)}, got {design!r}")
    nt = np.asarray(topics, dtype=np.float64)
    na = np.asarray(assessors, dtype=np.float64)
    if not ((nt > 0).all() and (na > 0).all()):
        raise ConfigError(f"topics and assessors must be positive, got {topics!r}, "
                          f"{assessors!r}")
    v = g.var
    if design == "crossed":
        rel = v["system_topic"] / nt + v["system_assessor"] / na + v["residual"] / (nt * na)
        ab = rel + v["topic"] / nt + v["assessor"] / na + v["topic_assessor"] / (nt * na)
    else:
        rel = v["system_topic"] / nt + (v["system_assessor"] + v["residual"]) / (nt * na)
        ab = rel + v["topic"] / nt + (v["assessor"] + v["topic_assessor"]) / (nt * na)
    with np.errstate(invalid="ignore", divide="ignore"):
        return v["system"] / (v["system"] + rel), v["system"] / (v["system"] + ab)


def g_study3_bootstrap(scores: ArrayLike, B: int, *, seed: int, study: str,
                       key: tuple[int, ...] = (), start: int = 0) -> GStudy3:
    """:func:`g_study3` of `B` bootstrap resamples of the topics (drawn with replacement,
    the same resample for every system and assessor: Brennan's *boot-t*), batched: the
    components have a leading replicate axis, shape ``(B, ...)``.

    Replicate ``i`` (from `start`) resamples the topics with row ``i`` of
    :func:`irsim.rng.blocked_draws` ``(seed, study, key)``, so any split of the replicates
    gives the same rows. Boot-t over-states the topic-related components by about a factor
    ``n_t / (n_t - 1)`` (Brennan 2001, section 6.2; not corrected): read the intervals as
    the sampling spread of the estimates, centred near the point estimates.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(4, 6, 2)) + np.arange(4.0)[:, None, None]
    >>> g = g_study3_bootstrap(x, 300, seed=1, study="demo")
    >>> g.var["system"].shape
    (300,)
    >>> h = g_study3_bootstrap(x, 100, seed=1, study="demo", start=200)
    >>> bool((h.var["system"] == g.var["system"][200:]).all())
    True
    """
    from irsim.rng import blocked_draws

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim < 3:
        raise ConfigError(f"scores must be (..., systems, topics, assessors), got shape "
                          f"{x.shape}")
    if isinstance(B, bool) or int(B) < 1:
        raise ConfigError(f"B must be a positive integer, got {B!r}")
    T = x.shape[-2]
    step = max(1, _BOOT_BYTES // (8 * max(1, x.size)))
    parts: list[GStudy3] = []
    for lo in range(start, start + int(B), step):  # memory blocks of replicates
        hi = min(start + int(B), lo + step)
        idx = blocked_draws(seed, study, tuple(key), lo, hi,
                            lambda rng, m: rng.integers(0, T, size=(m, T)))
        # x[..., idx, :] is (..., systems, reps, topics, assessors): reps to the front
        parts.append(g_study3(np.moveaxis(x[..., idx, :], -3, 0)))
    first = parts[0]

    def cat(field: str) -> dict:
        return {c: np.concatenate([np.broadcast_to(getattr(p, field)[c], (n,) + shape)
                                   for p, n in zip(parts, sizes, strict=True)])
                for c in COMPONENTS3}

    sizes = [min(step, start + int(B) - lo) for lo in range(start, start + int(B), step)]
    shape = x.shape[:-3]
    return GStudy3(first.systems, first.topics, first.assessors, first.df, cat("ms"),
                   cat("var"), cat("negative"))


#: Bytes of the resampled scores of one block of :func:`g_study3_bootstrap`.
_BOOT_BYTES = 32 * 2**20
