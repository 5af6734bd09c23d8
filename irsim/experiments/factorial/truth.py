"""Known truth for the factorial study: simulated collections with known system effects and
an interaction variance, the decisions of each design and model on them (family-wise error,
power, directional errors), and Ferro & Sanderson's split-half consistency.

The generator (:func:`simulate_design`) is the additive normal model that every design of
:mod:`irsim.stats.factorial` assumes::

    x[b, s, t, r] = effects[s] + topic[b, t] + inter[b, s, t] + e[b, s, t, r]
                    (+ rep[b, r] + topic_rep[b, t, r] + sys_rep[b, s, r] when crossed)

It is the latent model of the project's :func:`irsim.data.synthetic.synthetic_scores`
(system effect + topic effect + system x topic noise, optionally clipped to [0, 1]) with a
replicate axis added; that generator itself is not used because it has no replicates and
draws one matrix per call (a Python loop over systems), where the known-truth trials need
many thousands of collections in one vectorised draw. The fitted generators of
:mod:`irsim.simulate` reproduce real collections' margins and copulas but have no
controllable system effects with an interaction variance. The default ``link="identity"``
keeps the model of the ANOVA exactly true, so an error rate away from its nominal value is
the design's or the model's doing and not the link's; ``link="clip"`` (synthetic_scores'
``clip``) bounds the scores to [0, 1] to see what a bounded metric does. The truth does not
change with the link: the clip is increasing, so systems with equal effects have the same
score distribution and the order of unequal effects is the order of their mean scores.

Trial ``b`` is drawn in blocks of :data:`irsim.rng.REPLICATE_BLOCK` trials from
``rng_for(seed, stream, b // REPLICATE_BLOCK)`` (:func:`irsim.rng.blocked_draws`), so any
split of ``[lo, hi)`` gives the same trials; the replicated draws are the first draws of
the crossed ones (common random numbers across settings of the standard deviations).

References
----------
Voorhees, Samarov & Soboroff. Using replicates in information retrieval evaluation. ACM
TOIS 36(2), 2017. Ferro & Sanderson. How do you test a test? A multifaceted examination of
significance tests. WSDM 2022. Tukey. The problem of multiple comparisons, 1953. Holm. A
simple sequentially rejective multiple test procedure. Scand. J. Statist. 6, 1979.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as sps
from scipy.integrate import IntegrationWarning

from irsim.errors import ConfigError, InputError, unknown_name
from irsim.kit.common import MEMORY_BUDGET, auto_block
from irsim.rng import blocked_draws, check_seed
from irsim.stats.binomial import wilson
from irsim.stats.factorial import anova_table
from irsim.stats.multiple import reject
from irsim.stats.ttest import paired_t

__all__ = ["REPLICATE_KINDS", "LINKS", "METHODS", "simulate_design", "Decisions",
           "tukey_calls", "decisions", "ErrorCounts", "count_errors", "error_rates", "run_trials",
           "SplitHalf", "halves_agreement", "split_half_agreement"]

#: How replicates relate across cells: fresh within each cell, or the same for every cell.
REPLICATE_KINDS = ("replicated", "crossed")
#: From the latent additive model to scores.
LINKS = ("identity", "clip")
#: Every method :func:`decisions` knows: ``(design, model)`` of a Tukey HSD, or the paired
#: t-test with Holm over all pairs. ``two_way`` and ``paired_t_holm`` see replicate 0 only.
METHODS = {
    "two_way": ("two_way", "fixed"),
    "replicated_fixed": ("replicated", "fixed"),
    "replicated_mixed": ("replicated", "mixed"),
    "crossed_fixed": ("crossed", "fixed"),
    "crossed_mixed": ("crossed", "mixed"),
    "paired_t_holm": None,
}
_STREAM = "factorial/truth"
_SPLIT = "factorial/split_half"


# ----------------------------------------------------------------------------- simulation


def _count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _sd(name: str, value: object) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def _trials(trials: object) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in trials)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ConfigError(f"trials must be a pair (lo, hi) of integers, got {trials!r}") from None
    if not 0 <= lo <= hi:
        raise ConfigError(f"trials must satisfy 0 <= lo <= hi, got {trials!r}")
    return lo, hi


def _effects(effects: object) -> np.ndarray:
    e = np.asarray(effects, dtype=np.float64)
    if e.ndim != 1 or len(e) < 2 or not np.isfinite(e).all():
        raise ConfigError(f"effects must be finite, one per system (>= 2 systems), got "
                          f"shape {e.shape}")
    return e


def simulate_design(trials: tuple[int, int], *, effects: object, topics: int,
                    replicates: int, sd_topic: float, sd_interaction: float,
                    sd_residual: float, sd_replicate: float = 0.0,
                    sd_topic_replicate: float = 0.0, sd_system_replicate: float = 0.0,
                    replicate: str = "replicated", link: str = "identity", seed: int = 0,
                    stream: str = _STREAM) -> np.ndarray:
    """Simulated collections ``lo .. hi - 1`` with known system effects (the module
    docstring gives the model and why it is this one).

    Parameters
    ----------
    trials : (int, int)
        ``(lo, hi)``: the trials to draw; the same trial for any split of the range.
    effects : array_like, shape (systems,)
        The known system means (latent scale). Equal values are the true null pairs.
    topics, replicates : int
        ``topics >= 2``, ``replicates >= 1``.
    sd_topic, sd_interaction, sd_residual : float
        Standard deviations (>= 0) of the topic effect, the system x topic interaction and
        the noise within a cell (independent across replicates).
    sd_replicate, sd_topic_replicate, sd_system_replicate : float
        ``replicate="crossed"`` only: the replicate effect shared by every system and topic,
        the topic x replicate and the system x replicate effects (a shard that is easier for
        every run, or for one topic, or that suits one run).
    replicate : {"replicated", "crossed"}
    link : {"identity", "clip"}
        ``clip``: scores clipped to [0, 1].
    seed : int
    stream : str
        Name of the random stream (:func:`irsim.rng.rng_for`).

    Returns
    -------
    ndarray, shape (hi - lo, systems, topics, replicates)

    Examples
    --------
    >>> x = simulate_design((0, 300), effects=[0.3, 0.3, 0.4], topics=20, replicates=2,
    ...                     sd_topic=0.1, sd_interaction=0.05, sd_residual=0.02, seed=1)
    >>> x.shape
    (300, 3, 20, 2)
    >>> bool((simulate_design((290, 300), effects=[0.3, 0.3, 0.4], topics=20, replicates=2,
    ...      sd_topic=0.1, sd_interaction=0.05, sd_residual=0.02, seed=1) == x[290:]).all())
    True
    >>> x.mean(axis=(0, 2, 3)).round(2).tolist()
    [0.3, 0.3, 0.4]
    """
    lo, hi = _trials(trials)
    e = _effects(effects)
    t = _count("topics", topics, 2)
    r = _count("replicates", replicates, 1)
    sds = {k: _sd(k, v) for k, v in (
        ("sd_topic", sd_topic), ("sd_interaction", sd_interaction),
        ("sd_residual", sd_residual), ("sd_replicate", sd_replicate),
        ("sd_topic_replicate", sd_topic_replicate),
        ("sd_system_replicate", sd_system_replicate))}
    if replicate not in REPLICATE_KINDS:
        raise unknown_name("replicate", str(replicate), REPLICATE_KINDS)
    if link not in LINKS:
        raise unknown_name("link", str(link), LINKS)
    crossed = replicate == "crossed"
    if not crossed and any(sds[k] for k in ("sd_replicate", "sd_topic_replicate",
                                            "sd_system_replicate")):
        raise ConfigError("sd_replicate, sd_topic_replicate and sd_system_replicate need "
                          "replicate='crossed' (a replicate that is the same for every cell)")
    s = len(e)

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        z = rng.standard_normal
        x = (e[:, None, None] + sds["sd_topic"] * z((m, 1, t, 1))
             + sds["sd_interaction"] * z((m, s, t, 1)) + sds["sd_residual"] * z((m, s, t, r)))
        if crossed:
            x += (sds["sd_replicate"] * z((m, 1, 1, r))
                  + sds["sd_topic_replicate"] * z((m, 1, t, r))
                  + sds["sd_system_replicate"] * z((m, s, 1, r)))
        return x

    x = blocked_draws(check_seed(seed), stream, (), lo, hi, draw)
    return np.clip(x, 0.0, 1.0) if link == "clip" else x


# ----------------------------------------------------------------------------- decisions


@lru_cache(maxsize=4096)
def _q_crit(level: float, k: int, df: float) -> float:
    """The studentized range quantile (about 0.1 s a call: cached)."""
    return float(sps.studentized_range.ppf(level, k, df))


#: Ratio of the geometric grid of degrees of freedom that brackets a Tukey critical value.
_GRID = 2.0 ** 0.125


def _tukey_significant(q: np.ndarray, df: np.ndarray, level: float, k: int) -> np.ndarray:
    """``q > q_crit(level, k, df)`` per problem, exactly, with few quantile evaluations.

    The critical value falls as ``df`` grows. A few distinct ``df`` (every fixed model, the
    mixed replicated model) are evaluated directly; many (Satterthwaite's, one per trial)
    are bracketed between the critical values at the geometric grid points around each
    ``df`` (cached), and only a ``q`` between the two gets its own p-value (``q > crit``
    is ``P(Q >= q) < 1 - level``). A NaN ``df`` or ``q`` (an error combination that is not
    positive) is never significant.
    """
    df = np.asarray(df, dtype=np.float64).reshape(q.shape[:-1])
    ok = np.isfinite(df) & (df > 0)
    uniq = np.unique(df[ok])
    if len(uniq) <= 8:
        crit = np.full(df.shape, np.nan)
        for d in uniq:
            crit[df == d] = _q_crit(level, k, float(d))
        with np.errstate(invalid="ignore"):
            return q > crit[..., None]
    idx = np.where(ok, np.floor(np.log(np.where(ok, df, 1.0)) / np.log(_GRID)), 0).astype(int)
    steps = np.unique(idx[ok])
    at = {int(i): _q_crit(level, k, float(_GRID ** i)) for i in np.r_[steps, steps + 1]}
    upper = np.where(ok, np.vectorize(at.get, otypes=[float])(idx), np.nan)
    lower = np.where(ok, np.vectorize(at.get, otypes=[float])(idx + 1), np.nan)
    with np.errstate(invalid="ignore"):
        sig = q > upper[..., None]
        unsure = (q > lower[..., None]) & ~sig
    if unsure.any():  # the p-value (about 10 ms each) where the bracket cannot tell
        dfs = np.broadcast_to(df[..., None], q.shape)[unsure]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IntegrationWarning)
            sig[unsure] = sps.studentized_range.sf(q[unsure], k, dfs) < 1.0 - level
    return sig


def _calls(diff: np.ndarray, sig: np.ndarray) -> np.ndarray:
    return (np.sign(diff) * sig).astype(np.int8)


def tukey_calls(x: np.ndarray, design: str, model: str, alpha: float,
                first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tukey HSD calls of every pair and the ANOVA's p-value of the system effect.

    The test of :func:`irsim.stats.factorial.design_tukey` at ``level = 1 - alpha`` (a pair
    is significant when its simultaneous interval excludes 0), with its critical values
    computed once per distinct error df (:func:`_tukey_significant`) instead of once per
    problem.

    Returns
    -------
    calls : ndarray of int8, shape (..., pairs)
        ``+1``: significant, ``first`` better; ``-1``: significant, ``second`` better; 0.
    pvalue : ndarray, shape (...)
        The ANOVA F test of the system effect under the design's model.

    Examples
    --------
    >>> from irsim.stats.factorial import design_tukey
    >>> x = np.random.default_rng(0).normal(size=(6, 4, 10)) + np.array([0, 0, 1, 2.0])[:, None]
    >>> f, s = np.triu_indices(4, 1)
    >>> c, p = tukey_calls(x, "two_way", "fixed", 0.05, f, s)
    >>> d = design_tukey(x, "two_way", level=0.95, pvalues=False)
    >>> bool((c != 0).tolist() == ((d.low > 0) | (d.high < 0)).tolist())
    True
    """
    tab = anova_table(x, design, model=model)
    k = tab.shape[0]
    means = x.mean(axis=tuple(range(x.ndim - len(tab.shape) + 1, x.ndim)))
    diff = means[..., first] - means[..., second]
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(tab.ms_error[..., 0] / (tab.n / k))[..., None]
        q = np.abs(diff) / se
    sig = _tukey_significant(q, tab.df_error[..., 0], 1.0 - alpha, k)
    return _calls(diff, sig), tab.pvalue[..., 0]


def _holm_calls(x: np.ndarray, alpha: float, first: np.ndarray, second: np.ndarray
                ) -> np.ndarray:
    r = paired_t(x[..., first, :], x[..., second, :])
    return _calls(r.mean, reject(r.pvalue, alpha, "holm", axis=-1))


@dataclass(frozen=True)
class Decisions:
    """Which pairs each method calls significant, and in which direction.

    Attributes
    ----------
    methods : tuple of str
    first, second : ndarray of int, shape (pairs,)
        The pairs (:func:`numpy.triu_indices` order).
    calls : ndarray of int8, shape (trials, methods, pairs)
        ``+1``: significant with ``first`` the better; ``-1``: significant with ``second``
        the better; 0: not significant.
    alpha : float
    """

    methods: tuple[str, ...]
    first: np.ndarray
    second: np.ndarray
    calls: np.ndarray
    alpha: float


def _methods(methods: object, replicates: int, crossed: bool) -> tuple[str, ...]:
    if methods is None:
        methods = [m for m in METHODS if (replicates >= 2 or METHODS[m] is None
                                         or METHODS[m][0] == "two_way")
                   and (crossed or not m.startswith("crossed"))]
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    for m in methods:
        if m not in METHODS:
            raise unknown_name("method", str(m), tuple(METHODS))
        if replicates < 2 and METHODS[m] is not None and METHODS[m][0] != "two_way":
            raise ConfigError(f"method {m!r} needs replicates >= 2, got {replicates}")
    if not methods or len(set(methods)) != len(methods):
        raise ConfigError(f"methods must be non-empty and unique, got {methods!r}")
    return methods


def _alpha(alpha: object) -> float:
    try:
        a = float(alpha)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"alpha must be a number in (0, 1), got {alpha!r}") from None
    if not 0.0 < a < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
    return a


def decisions(x: object, *, alpha: float = 0.05, methods: object = None,
              crossed: bool = False) -> Decisions:
    """The pairs each method calls significant on every simulated collection.

    Methods (:data:`METHODS`): Tukey HSD of the two-way design on replicate 0 (the system x
    topic table a user without replicates has); Tukey HSD of the replicated design under the
    fixed model (Voorhees et al.: error = within cells) and the mixed model (error =
    system:topic); of the crossed design under both models; and the paired t-test over all
    pairs with Holm's correction on replicate 0 (what the other irsim studies use).

    The truth is the system means over the population of topics *and replicates*: with
    crossed replicates, replicate 0 carries its system x replicate effects (one shard, one
    assessor favouring a run), which the methods on replicate 0 cannot tell from a system
    difference; their family-wise error then exceeds alpha by design.

    Parameters
    ----------
    x : array_like, shape (trials, systems, topics, replicates)
        From :func:`simulate_design`.
    alpha : float
    methods : sequence of str, optional
        Default: every method the data allow (the crossed ones when `crossed`; only
        ``two_way`` and ``paired_t_holm`` with one replicate).
    crossed : bool
        Whether the replicates are crossed (only picks the default methods).

    Returns
    -------
    Decisions

    Examples
    --------
    >>> x = simulate_design((0, 50), effects=[0.0, 0.0, 0.5], topics=25, replicates=3,
    ...                     sd_topic=0.2, sd_interaction=0.1, sd_residual=0.1, seed=0)
    >>> d = decisions(x, alpha=0.05)
    >>> d.methods
    ('two_way', 'replicated_fixed', 'replicated_mixed', 'paired_t_holm')
    >>> d.calls.shape, (d.first.tolist(), d.second.tolist())
    ((50, 4, 3), ([0, 0, 1], [1, 2, 2]))
    >>> (d.calls[:, :, 1:] == -1).mean(axis=(0, 2)).tolist()  # system 2 found better
    [1.0, 1.0, 1.0, 1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 4:
        raise InputError(f"x must be (trials, systems, topics, replicates), got shape "
                         f"{x.shape}")
    a = _alpha(alpha)
    names = _methods(methods, x.shape[-1], bool(crossed))
    first, second = np.triu_indices(x.shape[1], 1)
    calls = np.empty((x.shape[0], len(names), len(first)), dtype=np.int8)
    for j, m in enumerate(names):
        if METHODS[m] is None:
            calls[:, j] = _holm_calls(x[..., 0], a, first, second)
        elif METHODS[m][0] == "two_way":
            calls[:, j] = tukey_calls(x[..., 0], "two_way", "fixed", a, first, second)[0]
        else:
            calls[:, j] = tukey_calls(x, *METHODS[m], a, first, second)[0]
    return Decisions(names, first, second, calls, a)


# ----------------------------------------------------------------------------- error rates


@dataclass(frozen=True)
class ErrorCounts:
    """Counts of the decisions against the truth: a mergeable partial (``a + b``).

    Attributes
    ----------
    methods : tuple of str
    null : ndarray of bool, shape (pairs,)
        Pairs whose true effects are equal.
    direction : ndarray of int8, shape (pairs,)
        The true sign of ``effects[first] - effects[second]`` (0 for a null pair).
    trials : int
    familywise : ndarray of int, shape (methods,)
        Trials with at least one null pair called significant.
    detected : ndarray of int, shape (methods, pairs)
        Trials where a different pair was called significant with its true sign.
    wrong : ndarray of int, shape (methods, pairs)
        Trials where a different pair was called significant with the wrong sign.
    false : ndarray of int, shape (methods, pairs)
        Trials where a null pair was called significant.
    """

    methods: tuple[str, ...]
    null: np.ndarray
    direction: np.ndarray
    trials: int
    familywise: np.ndarray
    detected: np.ndarray
    wrong: np.ndarray
    false: np.ndarray

    def __add__(self, other: ErrorCounts) -> ErrorCounts:
        if other.methods != self.methods or not np.array_equal(other.direction,
                                                                self.direction):
            raise ConfigError("error counts of different methods or truths cannot be merged")
        return ErrorCounts(self.methods, self.null, self.direction,
                           self.trials + other.trials, self.familywise + other.familywise,
                           self.detected + other.detected, self.wrong + other.wrong,
                           self.false + other.false)


def count_errors(d: Decisions, effects: object) -> ErrorCounts:
    """Count each method's errors and detections against the known `effects`.

    Examples
    --------
    >>> d = Decisions(("m",), np.array([0, 0, 1]), np.array([1, 2, 2]),
    ...               np.array([[[1, -1, 0]], [[0, 1, 1]]], dtype=np.int8), 0.05)
    >>> c = count_errors(d, [0.0, 0.0, 1.0])
    >>> c.familywise.tolist(), c.detected.tolist(), c.wrong.tolist()
    ([1], [[0, 1, 0]], [[0, 1, 1]])
    """
    e = _effects(effects)
    if len(e) <= int(d.second.max(initial=0)):
        raise ConfigError(f"effects has {len(e)} systems; the decisions have more")
    direction = np.sign(e[d.first] - e[d.second]).astype(np.int8)
    null = direction == 0
    sig = d.calls != 0
    false = sig & null
    diff = ~null
    detected = (d.calls == direction) & sig & diff
    wrong = (d.calls == -direction) & sig & diff
    return ErrorCounts(d.methods, null, direction, int(d.calls.shape[0]),
                       false.any(axis=-1).sum(axis=0), detected.sum(axis=0),
                       wrong.sum(axis=0), false.sum(axis=0))


def error_rates(counts: ErrorCounts, *, level: float = 0.95) -> dict[str, np.ndarray]:
    """Family-wise error, power and directional errors of each method, with Wilson intervals.

    ``fwer``: share of trials with >= 1 null pair called significant (NaN without null
    pairs). ``power``: mean over trials of the share of truly different pairs called
    significant with the right sign (the per-pair power averaged over pairs; ``pair_power``
    per pair). ``type_s``: the same share with the wrong sign. The intervals of ``power``
    and ``type_s`` are Wilson's on the sum of per-trial shares over the trials (pairs of one
    trial are not independent, so trials are the unit).

    Returns
    -------
    dict of ndarray
        ``method``, ``trials``, ``fwer``, ``fwer_low``, ``fwer_high``, ``power``,
        ``power_low``, ``power_high``, ``type_s``, ``type_s_low``, ``type_s_high``, shape
        (methods,), and ``pair_power``, shape (methods, pairs).

    Examples
    --------
    >>> d = Decisions(("m",), np.array([0, 0, 1]), np.array([1, 2, 2]),
    ...               np.array([[[1, -1, 0]], [[0, 1, 1]]], dtype=np.int8), 0.05)
    >>> r = error_rates(count_errors(d, [0.0, 0.0, 1.0]))
    >>> r["fwer"].tolist(), r["power"].tolist(), r["type_s"].tolist()
    ([0.5], [0.25], [0.5])
    """
    c = counts
    n = np.full(len(c.methods), c.trials)
    nd = int((~c.null).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        fw = c.familywise.astype(float) if c.null.any() else np.full(len(n), np.nan)
        det = c.detected.sum(axis=-1) / nd if nd else np.full(len(n), np.nan)
        wr = c.wrong.sum(axis=-1) / nd if nd else np.full(len(n), np.nan)
        pair_power = np.where(c.null, np.nan, c.detected / c.trials)
    out: dict[str, np.ndarray] = {"method": np.array(c.methods), "trials": n}
    for name, k in (("fwer", fw), ("power", det), ("type_s", wr)):
        lo, hi = wilson(k, n, level)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = k / n
        out[f"{name}_low"], out[f"{name}_high"] = lo, hi
    out["pair_power"] = pair_power
    return out


def run_trials(trials: tuple[int, int], *, alpha: float = 0.05, methods: object = None,
               budget: float | None = None, **model: object) -> ErrorCounts:
    """Simulate trials ``[lo, hi)`` and count each method's errors, in chunks of trials
    that fit the memory `budget` (:data:`irsim.kit.common.MEMORY_BUDGET`).

    Parameters
    ----------
    trials : (int, int)
    alpha : float
    methods : sequence of str, optional
        See :func:`decisions`.
    budget : float, optional
        Working memory per chunk, bytes.
    **model
        The keywords of :func:`simulate_design` (``effects``, ``topics``, ...).

    Examples
    --------
    >>> c = run_trials((0, 400), effects=[0.0, 0.0, 0.0], topics=10, replicates=2,
    ...                sd_topic=0.1, sd_interaction=0.1, sd_residual=0.1, seed=3)
    >>> r = error_rates(c)
    >>> for m, f in zip(r["method"], r["fwer"]):
    ...     print(m, round(float(f), 4))
    two_way 0.05
    replicated_fixed 0.3175
    replicated_mixed 0.06
    paired_t_holm 0.0425
    """
    lo, hi = _trials(trials)
    e = _effects(model.get("effects"))
    topics = _count("topics", model.get("topics"), 2)
    reps = _count("replicates", model.get("replicates"), 1)
    crossed = model.get("replicate", "replicated") == "crossed"
    names = _methods(methods, reps, crossed)
    pairs = len(e) * (len(e) - 1) // 2
    # the cells, their copies in the ANOVA, and the paired differences (pairs x topics)
    per_trial = 8.0 * (6 * len(e) * topics * reps + 4 * pairs * topics)
    step = auto_block(MEMORY_BUDGET if budget is None else budget, per_trial, max(hi - lo, 1))
    total = None
    for a in range(lo, hi, step):
        x = simulate_design((a, min(a + step, hi)), **model)  # type: ignore[arg-type]
        c = count_errors(decisions(x, alpha=alpha, methods=names, crossed=crossed), e)
        total = c if total is None else total + c
    if total is None:
        raise ConfigError(f"trials {trials!r} is empty")
    return total


# ----------------------------------------------------------------------------- split half


@dataclass(frozen=True)
class SplitHalf:
    """Per trial, whether two halves of a collection reach the same conclusions.

    Attributes
    ----------
    system_agree : ndarray of bool, shape (trials,)
        Both halves find the system effect significant, or neither does.
    pair_agree : ndarray, shape (trials,)
        Share of pairs with the same Tukey decision in both halves (significant in the
        same direction, or not significant).
    """

    system_agree: np.ndarray
    pair_agree: np.ndarray

    def summary(self, level: float = 0.95) -> dict[str, float]:
        """Shares over the trials with Wilson intervals (the pair share's on the sum of
        per-trial shares).

        Examples
        --------
        >>> s = SplitHalf(np.array([True, False]), np.array([1.0, 0.5])).summary()
        >>> float(s["system_agree"]), float(s["pair_agree"])
        (0.5, 0.75)
        """
        n = len(self.system_agree)
        out: dict[str, float] = {"trials": float(n)}
        for name, k in (("system_agree", self.system_agree.sum()),
                        ("pair_agree", self.pair_agree.sum())):
            lo, hi = wilson(np.asarray(float(k)), np.asarray(n), level)
            out[name] = float(k / n)
            out[f"{name}_low"], out[f"{name}_high"] = float(lo), float(hi)
        return out


def _check_split_input(x: object, design: str) -> tuple[np.ndarray, int]:
    dims = {"two_way": 2, "replicated": 3, "crossed": 3, "nested": 3}
    if design not in dims:
        raise unknown_name("design", str(design), tuple(dims))
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != dims[design]:
        raise InputError(f"x must have {dims[design]} axes for design {design!r} (one "
                         f"collection), got shape {a.shape}")
    return a, (a.ndim - 1 if design == "nested" else 1)


def halves_agreement(x: object, first: np.ndarray, second: np.ndarray, *,
                     design: str = "two_way", model: str = "fixed", alpha: float = 0.05
                     ) -> SplitHalf:
    """Agreement of the ANOVA and Tukey decisions of given halves of one collection.

    Parameters
    ----------
    x : array_like
        One collection: ``(systems, topics)`` (two_way), ``(systems, topics, replicates)``
        (replicated, crossed) or ``(systems, collections, topics)`` (nested).
    first, second : ndarray of int, shape (trials, half) or, nested, (trials, collections,
    half)
        Topic indices of each half, per trial (per collection when nested).
    design, model : str
        See :func:`irsim.stats.factorial.anova_table`.
    alpha : float

    Examples
    --------
    Two copies of the same topics agree on everything:

    >>> x = np.random.default_rng(0).normal(size=(4, 10))
    >>> xx = np.concatenate([x, x], axis=1)
    >>> h = np.arange(10)[None]
    >>> s = halves_agreement(xx, h, h + 10)
    >>> bool(s.system_agree.all()), s.pair_agree.tolist()
    (True, [1.0])
    """
    a, axis = _check_split_input(x, design)
    al = _alpha(alpha)
    k = a.shape[0]
    f, s = np.triu_indices(k, 1)
    results = []
    for idx in (np.asarray(first), np.asarray(second)):
        if axis == 1:  # (trials, half) -> (trials, systems, half[, replicates])
            half = np.moveaxis(a[:, idx], 1, 0)
        else:  # nested: topics of each collection, (trials, collections, half)
            half = np.take_along_axis(a[None], idx[:, None], axis=-1)
        results.append(tukey_calls(half, design, model, al, f, s))
    (ca, pa), (cb, pb) = results
    return SplitHalf((pa <= al) == (pb <= al), (ca == cb).mean(axis=-1))


def split_half_agreement(x: object, *, trials: tuple[int, int], design: str = "two_way",
                         model: str = "fixed", alpha: float = 0.05, seed: int = 0,
                         stream: str = _SPLIT) -> SplitHalf:
    """Ferro & Sanderson's consistency: split the topics at random into two halves, run the
    ANOVA and Tukey HSD on each, and see whether they agree (:func:`halves_agreement`).

    Trial ``b`` draws its split in blocks of :data:`irsim.rng.REPLICATE_BLOCK` from
    ``rng_for(seed, stream, block)``: the same split for any partition of the trials. With
    an odd number of topics one topic (a different one per trial) is left out; nested
    designs split the topics of every collection, independently.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(5, 40)) + np.array([0.0, 0.0, 0.1, 0.5, 1.0])[:, None]
    >>> s = split_half_agreement(x, trials=(0, 200), seed=1)
    >>> float(s.system_agree.mean()), round(float(s.pair_agree.mean()), 2)
    (0.6, 0.78)
    >>> p = split_half_agreement(x, trials=(100, 200), seed=1)
    >>> bool((p.pair_agree == s.pair_agree[100:]).all())
    True
    """
    a, axis = _check_split_input(x, design)
    lo, hi = _trials(trials)
    n_topics = a.shape[axis]
    half = n_topics // 2
    if half < 2:
        raise InputError(f"{n_topics} topics cannot be split into two halves of >= 2")
    lead = (a.shape[1],) if design == "nested" else ()

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        return np.argsort(rng.random((m, *lead, n_topics)), axis=-1)

    perm = blocked_draws(check_seed(seed), stream, (), lo, hi, draw)
    return halves_agreement(a, perm[..., :half], perm[..., half:2 * half], design=design,
                            model=model, alpha=alpha)
