"""ANOVA tables of balanced factorial designs with systems, topics and replicates or
collections; effect sizes with noncentral-F intervals.

Four designs (:data:`DESIGNS`), each a balanced array whose axes are its factors:

``two_way``, scores ``(..., systems, topics)``
    One observation per cell: system, topic, residual (the system x topic interaction
    confounded with error). :func:`irsim.stats.anova.anova_two_way` is this design's table
    (the same SS to rounding; that module keeps its own two lines of arithmetic so the
    studies built on it stay bit-identical).
``replicated``, scores ``(..., systems, topics, replicates)``
    ``k`` replicates within each cell that are *not* matched across cells (repeated runs,
    a fresh sample per cell): system, topic, system:topic, residual within cells
    (Voorhees, Samarov & Soboroff 2017's model; their shards are analysed this way).
``crossed``, scores ``(..., systems, topics, replicates)``
    Replicates crossed with systems and topics: replicate ``r`` is the same thing for every
    run and topic (the same document shard, the same assessor's qrels): system, topic,
    replicate, system:topic, system:replicate, topic:replicate, residual (the three-way
    interaction confounded with error), the full factorial of Ferro & Silvello 2016.
``nested``, scores ``(..., systems, collections, topics)``
    Several collections of the same systems, topics nested in collection (topic ``j`` of
    collection ``c`` is its own topic): system, collection, system:collection,
    topic(collection), residual (system x topic(collection)).

Models (``model=``): ``"fixed"`` tests every term against the residual mean square, as
``anova_lm`` on the OLS with every term does and as Voorhees et al. and Ferro & Silvello
test; ``"mixed"`` takes systems fixed and every other factor random (the unrestricted mixed
model that REML fits, :mod:`irsim.stats.varcomp`) and tests each term against the
combination of mean squares with the same expectation but the term's own component
(Satterthwaite's degrees of freedom when that combination has more than one mean square, a
quasi-F; NaN where that combination is not positive). Under ``mixed`` the system effect of
the replicated design is tested against system:topic: the two-way ANOVA of the cell means.

Every computation is a balanced decomposition: each crossed effect is an inclusion-exclusion
of marginal means; a nested term is the sum of its crossed pieces. Leading axes are
independent problems (metrics, simulated collections).

References
----------
Voorhees, Samarov & Soboroff. Using replicates in information retrieval evaluation. ACM
TOIS 36(2), 2017. Ferro & Silvello. A general linear mixed models approach to study system
component effects. SIGIR 2016. Olejnik & Algina. Generalized eta and omega squared
statistics. Psych. Methods 8(4), 2003. Steiger. Beyond the F test: effect size confidence
intervals. Psych. Methods 9(2), 2004. Smithson. Confidence Intervals. Sage, 2003. Sakai.
Statistical reform in information retrieval? SIGIR Forum 48(1), 2014.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=(3, 5, 2)) + np.arange(3.0)[:, None, None]
>>> t = anova_table(x, "replicated")
>>> t.terms
('system', 'topic', 'system:topic', 'residual')
>>> t.df.tolist()
[2, 4, 8, 15]
>>> bool(t.pvalue[..., 0] < 0.01)
True
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats as sps
from scipy.integrate import IntegrationWarning

from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["DESIGNS", "MODELS", "BLOCKS", "Design", "design_of", "AnovaTable", "anova_table",
           "ems_matrix", "EffectSizes", "effect_sizes", "noncentrality_interval",
           "DesignTukey", "design_tukey", "randomised_design_tukey"]

#: The designs of :func:`anova_table`.
DESIGNS = ("two_way", "replicated", "crossed", "nested")
#: The models: every term against the residual, or systems fixed and the rest random.
MODELS = ("fixed", "mixed")


@dataclass(frozen=True)
class Design:
    """A balanced design: its axes and terms.

    Attributes
    ----------
    name : str
    axes : tuple of str
        The factors, one per trailing axis of the scores (``system`` first).
    terms : tuple of str
        Term names in table order (``residual`` last).
    pieces : tuple of tuple of frozenset of int
        Per term, the crossed effects (sets of axes) whose sums of squares it adds up.
    factors : tuple of frozenset of str
        Per term, the factors it involves (for the expected mean squares).
    """

    name: str
    axes: tuple[str, ...]
    terms: tuple[str, ...]
    pieces: tuple[tuple[frozenset, ...], ...]
    factors: tuple[frozenset, ...]


def _f(*a: int) -> frozenset:
    return frozenset(a)


_STR = ("system", "topic", "replicate")
_SPECS = {
    "two_way": (("system", "topic"),
                (("system", (_f(0),)), ("topic", (_f(1),)), ("residual", (_f(0, 1),)))),
    "replicated": (_STR, (("system", (_f(0),)), ("topic", (_f(1),)),
                          ("system:topic", (_f(0, 1),)),
                          ("residual", (_f(2), _f(0, 2), _f(1, 2), _f(0, 1, 2))))),
    "crossed": (_STR, (("system", (_f(0),)), ("topic", (_f(1),)), ("replicate", (_f(2),)),
                       ("system:topic", (_f(0, 1),)), ("system:replicate", (_f(0, 2),)),
                       ("topic:replicate", (_f(1, 2),)), ("residual", (_f(0, 1, 2),)))),
    "nested": (("system", "collection", "topic"),
               (("system", (_f(0),)), ("collection", (_f(1),)),
                ("system:collection", (_f(0, 1),)), ("topic(collection)", (_f(2), _f(1, 2))),
                ("residual", (_f(0, 2), _f(0, 1, 2))))),
}


def design_of(name: str) -> Design:
    """The :class:`Design` called `name` (one of :data:`DESIGNS`).

    Examples
    --------
    >>> d = design_of("nested")
    >>> d.axes, d.terms[-2]
    (('system', 'collection', 'topic'), 'topic(collection)')
    """
    if not isinstance(name, str) or name not in _SPECS:
        raise unknown_name("design", str(name), DESIGNS)
    axes, spec = _SPECS[name]
    terms = tuple(t for t, _ in spec)
    pieces = tuple(p for _, p in spec)
    factors = tuple(frozenset(axes[a] for piece in p for a in piece) for p in pieces)
    if name in ("replicated", "two_way"):  # the residual is within cells: every factor
        factors = factors[:-1] + (frozenset(axes),)
    return Design(name, axes, terms, pieces, factors)


def check_scores(scores: object, design: Design) -> np.ndarray:
    """`scores` as float64 ``(..., *design.axes)``, refused with one line when a cell is
    missing (NaN), a factor has one level, or replicates are identical.

    Examples
    --------
    >>> try:
    ...     check_scores([[1.0, 2.0], [3.0, float("nan")]], design_of("two_way"))
    ... except InputError as e:
    ...     print(str(e)[:62])
    unbalanced design: 1 missing or non-finite cell(s), first at i
    """
    x = np.asarray(scores, dtype=np.float64)
    f = len(design.axes)
    if x.ndim < f:
        raise InputError(f"scores must be (..., {', '.join(design.axes)}) for design "
                         f"{design.name!r}, got shape {x.shape}")
    for name, n in zip(design.axes, x.shape[-f:], strict=True):
        if n < 2:
            raise InputError(f"factor {name!r} has {n} level(s); design {design.name!r} "
                             f"needs >= 2 (drop the factor: a smaller design)")
    if not np.isfinite(x).all():
        bad = np.argwhere(~np.isfinite(x))[0]
        raise InputError(f"unbalanced design: {int((~np.isfinite(x)).sum())} missing or "
                         f"non-finite cell(s), first at index {tuple(int(i) for i in bad)}; "
                         f"the tables need every cell (drop the system or topic, or impute)")
    if design.name in ("replicated", "crossed"):
        same = (x == x[..., :1]).all(axis=(-3, -2, -1))
        if same.any():
            where = "" if same.ndim == 0 else f" (problem {np.argwhere(same)[0].tolist()})"
            raise InputError(f"the {x.shape[-1]} replicates are identical{where}: zero "
                             f"residual variance, no F test; use design='two_way' on one")
    return x


def _crossed_ss(x: np.ndarray, f: int) -> dict[frozenset, np.ndarray]:
    """SS of every crossed effect of the last `f` axes (inclusion-exclusion of means)."""
    axes = tuple(range(x.ndim - f, x.ndim))
    means = {}
    for r in range(f + 1):
        for keep in combinations(range(f), r):
            drop = tuple(axes[i] for i in range(f) if i not in keep)
            means[frozenset(keep)] = x.mean(axis=drop, keepdims=True) if drop else x
    n_cells = int(np.prod(x.shape[-f:]))
    ss = {}
    for keep in means:
        if not keep:
            continue
        eff = sum((-1) ** (len(keep) - len(u)) * means[frozenset(u)]
                  for r in range(len(keep) + 1) for u in combinations(sorted(keep), r))
        levels = int(np.prod([x.shape[axes[i]] for i in keep]))
        ss[keep] = (n_cells // levels) * (eff ** 2).sum(axis=axes)
    return ss


@dataclass(frozen=True)
class AnovaTable:
    """An ANOVA table, one column per term (leading axes: independent problems).

    Attributes
    ----------
    design : str
    model : {"fixed", "mixed"}
    terms : tuple of str
        ``residual`` last.
    shape : tuple of int
        Levels of each factor of the design (``Design.axes`` order).
    ss, ms : ndarray, shape (..., terms)
    df : ndarray of int, shape (terms,)
    f, pvalue : ndarray, shape (..., terms)
        NaN for the residual.
    ms_error, df_error : ndarray, shape (..., terms)
        Each term's error mean square (a combination of mean squares under ``mixed``) and
        its degrees of freedom (Satterthwaite's where it combines several).
    error : tuple of str
        Each term's error term, e.g. ``"residual"`` or ``"system:topic + ... - residual"``.
    """

    design: str
    model: str
    terms: tuple[str, ...]
    shape: tuple[int, ...]
    ss: np.ndarray
    df: np.ndarray
    ms: np.ndarray
    f: np.ndarray
    pvalue: np.ndarray
    ms_error: np.ndarray
    df_error: np.ndarray
    error: tuple[str, ...]

    @property
    def n(self) -> int:
        """Observations per problem."""
        return int(np.prod(self.shape))

    def column(self, name: str, term: str) -> np.ndarray:
        """One attribute (``ss``, ``df``, ``ms``, ``f``, ``pvalue``, ...) of one term.

        Examples
        --------
        >>> t = anova_table(np.array([[1.0, 2.0, 4.0], [2.0, 2.5, 5.0]]), "two_way")
        >>> float(t.column("df", "residual"))
        2.0
        """
        if term not in self.terms:
            raise unknown_name("term", term, self.terms)
        return np.asarray(getattr(self, name), dtype=float)[..., self.terms.index(term)]


def ems_matrix(design: Design, shape: tuple[int, ...]) -> np.ndarray:
    """Expected mean squares of the unrestricted mixed model: ``A[i, j]`` is the
    coefficient of term ``j``'s variance (or, for ``system``, its fixed effect) in
    ``E[MS_i]``: ``N / levels(j)`` when term ``j``'s factors include term ``i``'s.

    Examples
    --------
    Replicated design, 3 systems x 4 topics x 2 replicates: ``E[MS_system] = var_e + 2
    var_st + 8 theta_s``, ``E[MS_topic] = var_e + 2 var_st + 6 var_t``:

    >>> ems_matrix(design_of("replicated"), (3, 4, 2)).tolist()
    [[8.0, 0.0, 2.0, 1.0], [0.0, 6.0, 2.0, 1.0], [0.0, 0.0, 2.0, 1.0], [0.0, 0.0, 0.0, 1.0]]
    """
    n = int(np.prod(shape))
    size = dict(zip(design.axes, shape, strict=True))
    a = np.zeros((len(design.terms),) * 2)
    for i, fi in enumerate(design.factors):
        for j, fj in enumerate(design.factors):
            if fi <= fj:
                a[i, j] = n / np.prod([size[x] for x in fj])
    return a


def _error_weights(design: Design, shape: tuple[int, ...], model: str) -> np.ndarray:
    """Row ``i``: the weights of the mean squares that make term ``i``'s error."""
    k = len(design.terms)
    w = np.zeros((k, k))
    if model == "fixed":
        w[:-1, -1] = 1.0
        return w
    a = ems_matrix(design, shape)
    rnd = list(range(1, k))  # every term but system is random
    inv = np.linalg.inv(a[np.ix_(rnd, rnd)])
    for i in range(k - 1):
        target = a[i, rnd].copy()
        if i > 0:
            target[rnd.index(i)] = 0.0
        w[i, rnd] = target @ inv
    w[np.abs(w) < 1e-12] = 0.0
    return w


def _error_names(design: Design, w: np.ndarray) -> tuple[str, ...]:
    out = []
    for row in w:
        parts = [("- " if c < 0 else "+ ") + (f"{abs(c):g} " if abs(abs(c) - 1) > 1e-9
                                              else "") + design.terms[j]
                 for j, c in enumerate(row) if c]
        out.append(" ".join(parts).removeprefix("+ ") if parts else "")
    return tuple(out)


def anova_table(scores: object, design: str = "two_way", *, model: str = "fixed"
                ) -> AnovaTable:
    """The ANOVA table of a balanced design: SS, df, MS, F, p per term.

    Parameters
    ----------
    scores : array_like, shape (..., *design axes)
        See the module docstring for each design's axes; leading axes are independent
        problems. Every cell must be present (finite).
    design : {"two_way", "replicated", "crossed", "nested"}
    model : {"fixed", "mixed"}
        ``fixed``: every term's F against the residual mean square (statsmodels
        ``anova_lm`` on the OLS with every term); ``mixed``: systems fixed, every other
        factor random, each term against the mean squares of its expected mean square
        without its own component (Satterthwaite df for a quasi-F).

    Returns
    -------
    AnovaTable

    Raises
    ------
    InputError
        Missing cells, a factor with one level, identical replicates.

    Examples
    --------
    The two-way design is :func:`irsim.stats.anova.anova_two_way`:

    >>> from irsim.stats.anova import anova_two_way
    >>> s = np.array([[0.7, 0.3, 0.2, 0.6], [0.5, 0.1, 0.0, 0.2], [0.6, 0.2, 0.1, 0.3]])
    >>> t, r = anova_table(s, "two_way"), anova_two_way(s)
    >>> bool(np.isclose(t.f[0], r.statistic)), bool(np.isclose(t.ms[2], r.ms_error))
    (True, True)

    Under the mixed model the system effect of replicated data is tested against the
    system x topic interaction: the two-way ANOVA of the cell means.

    >>> x = np.random.default_rng(1).normal(size=(3, 4, 2))
    >>> m = anova_table(x, "replicated", model="mixed")
    >>> m.error[0], bool(np.isclose(m.f[0], anova_two_way(x.mean(-1)).statistic))
    ('system:topic', True)
    """
    d = design_of(design)
    if model not in MODELS:
        raise unknown_name("model", str(model), MODELS)
    x = check_scores(scores, d)
    f = len(d.axes)
    shape = x.shape[-f:]
    crossed = _crossed_ss(x, f)
    sizes = [n - 1 for n in shape]
    df = np.array([sum(int(np.prod([sizes[a] for a in piece])) for piece in p)
                   for p in d.pieces])
    ss = np.stack([sum(crossed[piece] for piece in p) for p in d.pieces], axis=-1)
    ms = ss / df
    w = _error_weights(d, shape, model)
    ms_err = ms @ w.T
    df_err = _satterthwaite(ms, df, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        # a quasi-F's error combination can be <= 0: no test there (NaN)
        fstat = np.where(ms_err > 0, ms / ms_err, np.nan)
    fstat[..., -1] = np.nan
    p = sps.f.sf(fstat, df, df_err)
    return AnovaTable(d.name, model, d.terms, tuple(shape), ss, df, ms, fstat, p, ms_err,
                      df_err, _error_names(d, w))


def _satterthwaite(ms: np.ndarray, df: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per term, the df of its error combination ``sum_j w_j MS_j``: ``df_j`` for one
    mean square, Satterthwaite's ``(sum w MS)^2 / sum (w MS)^2 / df`` otherwise."""
    out = np.empty(ms.shape)
    for i, row in enumerate(w):
        used = np.flatnonzero(row)
        if len(used) == 0:
            out[..., i] = np.nan
        elif len(used) == 1 and row[used[0]] == 1.0:
            out[..., i] = df[used[0]]
        else:
            parts = ms[..., used] * row[used]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[..., i] = parts.sum(-1) ** 2 / (parts ** 2 / df[used]).sum(-1)
    return out


def noncentrality_interval(f: object, df1: object, df2: object, *, level: float = 0.95
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval of the noncentrality ``lambda`` of an observed F by inverting
    the noncentral F (Steiger & Fouladi 1997; Steiger 2004): ``low`` solves
    ``ncf.cdf(F; df1, df2, low) = 1 - a/2`` and ``high`` solves ``= a/2`` (``a = 1 -
    level``), each 0 when even ``lambda = 0`` puts ``F`` below that quantile. Batched
    bisection on ``log(1 + lambda)`` (60 steps, to about 1e-12 relative).

    Examples
    --------
    >>> lo, hi = noncentrality_interval(10.0, 2, 30)
    >>> bool(np.isclose(sps.ncf.cdf(10.0, 2, 30, lo), 0.975)), bool(
    ...     np.isclose(sps.ncf.cdf(10.0, 2, 30, hi), 0.025))
    (True, True)
    """
    if not 0.0 < float(level) < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    f, df1, df2 = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (f, df1, df2)))
    a = (1.0 - float(level)) / 2.0
    ok = np.isfinite(f) & (f >= 0) & np.isfinite(df2)
    fs = np.where(ok, f, 1.0)
    d2 = np.where(ok, df2, 1.0)

    def solve(target: float) -> np.ndarray:
        at0 = sps.f.cdf(fs, df1, d2)  # cdf at lambda = 0: the largest
        hi = np.maximum(10.0, 4.0 * df1 * fs + 100.0)
        for _ in range(60):  # the cdf falls with lambda: grow hi until below target
            short = sps.ncf.cdf(fs, df1, d2, hi) > target
            if not short.any():
                break
            hi = np.where(short, hi * 4.0, hi)
        lo_u, hi_u = np.zeros_like(fs), np.log1p(hi)
        for _ in range(60):
            mid = (lo_u + hi_u) / 2.0
            above = sps.ncf.cdf(fs, df1, d2, np.expm1(mid)) > target
            lo_u, hi_u = np.where(above, mid, lo_u), np.where(above, hi_u, mid)
        return np.where(at0 <= target, 0.0, np.expm1((lo_u + hi_u) / 2.0))

    low, high = solve(1.0 - a), solve(a)
    return np.where(ok, low, np.nan)[()], np.where(ok, high, np.nan)[()]


@dataclass(frozen=True)
class EffectSizes:
    """Effect sizes of each term of an :class:`AnovaTable` (the residual column NaN).

    Attributes
    ----------
    terms : tuple of str
    omega2, partial_omega2, partial_eta2 : ndarray, shape (..., terms)
        Point estimates (omega squared may be negative: an effect smaller than chance).
    partial_eta2_ci, partial_omega2_ci : tuple of ndarray
        ``(low, high)`` from the noncentrality interval (:func:`noncentrality_interval`).
    level : float
    """

    terms: tuple[str, ...]
    omega2: np.ndarray
    partial_omega2: np.ndarray
    partial_eta2: np.ndarray
    partial_eta2_ci: tuple[np.ndarray, np.ndarray]
    partial_omega2_ci: tuple[np.ndarray, np.ndarray]
    level: float


def effect_sizes(table: AnovaTable, *, level: float = 0.95) -> EffectSizes:
    """Omega squared, partial omega squared and partial eta squared of every term, with
    confidence intervals of the partial measures (Sakai 2014: report them beside p).

    With ``MS_e`` the term's error mean square (the residual under ``fixed``), ``N`` the
    observations and ``SS_T`` the total sum of squares (Olejnik & Algina 2003):

    - ``omega2 = (SS - df MS_e) / (SS_T + MS_e)``,
    - ``partial_omega2 = (SS - df MS_e) / (SS + (N - df) MS_e) = df (F - 1) / (df (F - 1)
      + N)`` (Ferro & Silvello 2016's omega squared of a factor),
    - ``partial_eta2 = df F / (df F + df_e)`` (``SS / (SS + SS_e)`` with one error term).

    Intervals: the ``level`` interval ``[l, h]`` of the noncentrality ``lambda`` of ``F``
    (:func:`noncentrality_interval`), mapped by ``lambda / (lambda + df + df_e + 1)`` for
    partial eta squared (Smithson 2003; MBESS's ``ci.pvaf``) and ``lambda / (lambda + N)``
    for partial omega squared (Steiger 2004). Both maps increase with ``lambda``, so the
    intervals keep the level.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(4, 6)) + np.arange(4.0)[:, None]
    >>> e = effect_sizes(anova_table(x, "two_way"))
    >>> lo, hi = e.partial_eta2_ci
    >>> bool(lo[0] < e.partial_eta2[0] < hi[0]), bool(e.omega2[0] < e.partial_eta2[0])
    (True, True)
    """
    t = table
    df = t.df.astype(float)
    n = float(t.n)
    ss_total = t.ss.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = t.ss - df * t.ms_error
        omega2 = excess / (ss_total + t.ms_error)
        p_omega2 = excess / (t.ss + (n - df) * t.ms_error)
        p_eta2 = df * t.f / (df * t.f + t.df_error)
    lo, hi = noncentrality_interval(t.f, df, t.df_error, level=level)
    eta_ci = tuple(v / (v + df + t.df_error + 1.0) for v in (lo, hi))
    omega_ci = tuple(v / (v + n) for v in (lo, hi))
    nan_res = [omega2, p_omega2, p_eta2, *eta_ci, *omega_ci]
    for v in nan_res:
        v[..., -1] = np.nan
    return EffectSizes(t.terms, omega2, p_omega2, p_eta2, eta_ci, omega_ci, float(level))


@dataclass(frozen=True)
class DesignTukey:
    """All system pairs under a design's model (leading axes: independent problems).

    Attributes
    ----------
    statistic : ndarray, shape (..., pairs)
        ``mean_i - mean_j`` for the pairs ``(first[p], second[p])``, ``first < second``
        (:func:`numpy.triu_indices` order).
    pvalue : ndarray, shape (..., pairs)
        Family-wise adjusted p-values.
    first, second : ndarray of int, shape (pairs,)
    low, high : ndarray, shape (..., pairs)
        Simultaneous ``level`` intervals of ``mean_i - mean_j`` (the randomised test:
        ``+-`` the ``1 - level`` critical range of its permutation null,
        :meth:`irsim.stats.anova.TukeyHSDResult.critical`).
    ms_error, df_error : ndarray
        The system term's error mean square and degrees of freedom.
    level : float
    effect : ndarray, shape (..., pairs)
        Sakai's standardised effect of each pair, ``(mean_i - mean_j) / sqrt(MS_e)``
        (his ``ES_E``, the residual of the two-way ANOVA for the two-way design; NaN for
        the randomised test).
    count : ndarray of int or None
        Randomised test: trials with range at least ``|mean_i - mean_j|``.
    n_resamples : int or None
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    first: np.ndarray
    second: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ms_error: np.ndarray
    df_error: np.ndarray
    level: float
    effect: np.ndarray
    count: np.ndarray | None = None
    n_resamples: int | None = None

    def significant(self, alpha: float | None = None) -> np.ndarray:
        """Number of pairs called significant, per problem: with `alpha`, ``p <= alpha``;
        without, the intervals that exclude 0 (for the randomised test: fewer than
        ``(1 - level) B`` trials reach the difference)."""
        if alpha is None and not np.isnan(self.low).all():
            return ((self.low > 0) | (self.high < 0)).sum(axis=-1)
        a = 1.0 - self.level if alpha is None else float(alpha)
        return (self.pvalue <= a).sum(axis=-1)


def _system_means(x: np.ndarray, f: int) -> np.ndarray:
    return x.mean(axis=tuple(range(x.ndim - f + 1, x.ndim)))


def design_tukey(scores: object, design: str = "replicated", *, model: str = "fixed",
                 level: float = 0.95, pvalues: bool = True) -> DesignTukey:
    """Tukey HSD of all system pairs with the design's error term for the system effect.

    ``q_ij = |mean_i - mean_j| / sqrt(MS_e / m)`` (``m`` observations per system mean,
    ``MS_e`` the system term's error mean square of :func:`anova_table` under `model`),
    ``p = P(Q >= q)`` for the studentized range with ``systems`` groups and the error's
    degrees of freedom (:data:`scipy.stats.studentized_range`; Satterthwaite's, not an
    integer, for a quasi-F), and simultaneous intervals ``diff +- q_level sqrt(MS_e / m)``.

    Under ``fixed`` with replicates the error is the within-cell residual (Voorhees et
    al. 2017's test with replicates); under ``mixed`` it is system:topic (replicated), the
    quasi-F combination (crossed) or system:collection (nested). The two-way design is
    :func:`irsim.stats.anova.tukey_hsd`.

    Each p-value is a numerical integral (:data:`scipy.stats.studentized_range`, about 5 ms
    per distinct ``q``: 20-30 s for 61 systems); with ``pvalues=False`` they are NaN and
    only the intervals (one quantile) are computed, which is all
    :meth:`DesignTukey.significant` needs at the interval's level.

    Examples
    --------
    >>> from irsim.stats.anova import tukey_hsd
    >>> s = np.array([[0.7, 0.3, 0.2, 0.6, 0.4], [0.5, 0.1, 0.0, 0.2, 0.4],
    ...               [0.6, 0.2, 0.1, 0.3, 0.5]])
    >>> r = design_tukey(s, "two_way")
    >>> bool(np.allclose(r.pvalue, tukey_hsd(s).pvalue)), r.significant().tolist()
    (True, 1)
    >>> bool(((r.low > 0) | (r.high < 0)).sum() == r.significant())
    True
    """
    t = anova_table(scores, design, model=model)
    if not 0.0 < float(level) < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    x = np.asarray(scores, dtype=np.float64)
    k = t.shape[0]
    means = _system_means(x, len(t.shape))
    first, second = np.triu_indices(k, 1)
    diff = means[..., first] - means[..., second]
    mse, dfe = t.ms_error[..., 0], t.df_error[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(mse / (t.n / k))[..., None]
        q = np.abs(diff) / se
    p = np.full(q.shape, np.nan)
    flat_q, flat_p = q.reshape(-1, q.shape[-1]), p.reshape(-1, q.shape[-1])
    flat_df = np.ravel(dfe)
    for i in range(len(flat_q)) if pvalues else ():
        uq, inv = np.unique(flat_q[i], return_inverse=True)
        with warnings.catch_warnings():  # far in the tail quad warns; the sf is ~0 there
            warnings.simplefilter("ignore", IntegrationWarning)
            flat_p[i] = np.minimum(sps.studentized_range.sf(uq, k, flat_df[i]), 1.0)[inv]
    crit = sps.studentized_range.ppf(float(level), k, dfe)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = diff / np.sqrt(mse)[..., None]
    return DesignTukey(diff, p, first, second, diff - crit * se, diff + crit * se, mse[()],
                       dfe[()], float(level), effect)


#: The blocks a randomised design Tukey HSD permutes systems within.
BLOCKS = ("topic", "topic_replicate")


def randomised_design_tukey(scores: object, design: str = "replicated", *,
                            blocks: str = "topic", B: int = 1000, seed: int = 0,
                            study: str = "stats/randomised_design_tukey",
                            key: tuple[int, ...] = (), pvalue_mode: str = "count",
                            memory_budget: int | None = None, level: float = 0.95
                            ) -> DesignTukey:
    """Randomised Tukey HSD of a design: :func:`irsim.stats.anova.randomised_tukey_hsd`
    with the design's blocks, one permutation null for all pairs.

    Systems are exchangeable within a block under the null; each trial permutes every
    block's systems independently (the same streams, so any chunking gives the same
    trials). Blocks:

    - ``"topic"``: a topic's cells move whole (with their replicates): the test of the
      cell means (``two_way``: the topics; ``nested``: the topics of every collection);
    - ``"topic_replicate"`` (``crossed`` only): every (topic, replicate) is its own block,
      the replicate being the same shard or assessor for every system.

    The simultaneous ``level`` intervals are ``mean_i - mean_j +-`` the critical range of
    the permutation null (:meth:`irsim.stats.anova.TukeyHSDResult.critical`): one excludes 0
    exactly when the pair's p-value is below ``1 - level``.

    Examples
    --------
    Moving a topic's cells whole is the randomised test of the cell means:

    >>> from irsim.stats.anova import randomised_tukey_hsd
    >>> x = np.random.default_rng(0).normal(size=(3, 6, 2)) + np.arange(3.0)[:, None, None]
    >>> r = randomised_design_tukey(x, "replicated", B=200, seed=1, study="demo")
    >>> h = randomised_tukey_hsd(x.mean(-1), B=200, seed=1, study="demo")
    >>> bool((r.count == h.count).all())
    True
    >>> c = randomised_design_tukey(x, "crossed", blocks="topic_replicate", B=200, seed=1)
    >>> c.count.shape, int(c.significant(0.05)) >= 1
    ((3,), True)
    """
    from irsim.stats._validation import DEFAULT_MEMORY_BUDGET
    from irsim.stats.anova import randomised_tukey_hsd

    d = design_of(design)
    if blocks not in BLOCKS:
        raise unknown_name("blocks", str(blocks), BLOCKS)
    if blocks == "topic_replicate" and d.name != "crossed":
        raise ConfigError(f"blocks='topic_replicate' needs replicates crossed with systems "
                          f"(design='crossed'), got design={d.name!r}")
    x = check_scores(scores, d)
    if x.ndim != len(d.axes):
        raise InputError(f"scores must be ({', '.join(d.axes)}) (one problem), got shape "
                         f"{x.shape}")
    if d.name in ("replicated", "crossed") and blocks == "topic":
        mat = x.mean(axis=-1)
    else:
        mat = x.reshape(x.shape[0], -1)
    r = randomised_tukey_hsd(mat, B=B, seed=seed, study=study, key=key,
                             pvalue_mode=pvalue_mode,
                             memory_budget=memory_budget or DEFAULT_MEMORY_BUDGET)
    crit = r.critical(1.0 - float(level))
    nan = np.full(r.statistic.shape, np.nan)
    return DesignTukey(r.statistic, r.pvalue, r.first, r.second, r.statistic - crit,
                       r.statistic + crit, np.nan, np.nan, float(level), nan, r.count,
                       r.n_resamples)
