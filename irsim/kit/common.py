"""Pieces shared by the studies: system pairs, deterministic top-k, validation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from irsim.errors import ConfigError, param
from irsim.params import Options, document, option

__all__ = [
    "as_tuple",
    "select_metrics",
    "resolve_metrics",
    "PAIR_UNIT",
    "unit_ranges",
    "aligned_block",
    "pair_index",
    "round_sig",
    "check_choices",
    "check_unique",
    "check_listed",
    "check_resamples",
    "check_paired_bootstrap_topics",
    "check_positive_int",
    "auto_block",
    "MEMORY_BUDGET",
    "check_memory",
    "check_systems_differ",
    "Shards",
    "BAYES_OPTIONS",
    "BayesOptions",
    "BayesRules",
    "decision_codes",
    "normalised_tests",
    "SimulatedTests",
]


#: Kernels process items (system pairs...) in units of this many rows, aligned to global
#: multiples, and replicates in units of :data:`~irsim.rng.REPLICATE_BLOCK`. Every
#: BLAS call then sees the same operands whatever the shard size, so results are
#: bit-identical for any sharding (BLAS may round differently for different shapes).
PAIR_UNIT = 256


def unit_ranges(start: int, stop: int, unit: int) -> list[tuple[int, int]]:
    """Split ``[start, stop)`` at the global multiples of `unit`.

    Examples
    --------
    >>> unit_ranges(0, 600, 256)
    [(0, 256), (256, 512), (512, 600)]
    >>> unit_ranges(250, 500, 250)
    [(250, 500)]
    """
    edges = [start, *range((start // unit + 1) * unit, stop, unit), stop]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def aligned_block(requested: int, unit: int) -> int:
    """Round a requested shard size up to a whole number of units.

    Examples
    --------
    >>> aligned_block(1, 256), aligned_block(300, 256), aligned_block(512, 256)
    (256, 512, 512)
    """
    return max(1, -(-int(requested) // unit)) * unit


def pair_index(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """All system pairs ``(a, b)`` with ``a < b``, in row-major order.

    Examples
    --------
    >>> a, b = pair_index(4)
    >>> list(zip(a.tolist(), b.tolist()))
    [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    """
    a, b = np.triu_indices(n_systems, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def as_tuple(value: Any) -> tuple | None:
    """A parameter that may be a scalar or a list, as a tuple (None stays None).

    Examples
    --------
    >>> as_tuple("disjoint"), as_tuple([5, 10]), as_tuple(None)
    (('disjoint',), (5, 10), None)
    """
    if value is None:
        return None
    if isinstance(value, str | int | float):
        return (value,)
    return tuple(value)


def select_metrics(matrix: Any, metrics: Any) -> Any:
    """`matrix` (a ScoreMatrix) restricted to the study's own ``metrics`` parameter (None: all
    of them). Unknown names suggest the closest ones; an empty list or a repeated name is
    refused (:class:`~irsim.errors.ConfigError`).

    The command line's top-level ``metrics`` chooses what a collection loads; a study's
    ``metrics`` parameter (set by presets, whose ``# @package _global_`` cannot set the
    top-level key) then chooses among them; the top-level key wins when both are set.

    Examples
    --------
    >>> from irsim.data.matrix import ScoreMatrix
    >>> m = ScoreMatrix(np.zeros((2, 2, 2)), ["AP", "RR"], ["a", "b"], ["1", "2"])
    >>> select_metrics(m, ["RR"]).metrics, select_metrics(m, None).metrics
    (('RR',), ('AP', 'RR'))
    """
    if metrics is None:
        return matrix
    names = [str(m) for m in as_tuple(metrics)]
    if not names:
        raise ConfigError(f"{param('metrics')}=[] lists no metric (leave it out to use every "
                          "metric of the collection)")
    names = resolve_metrics(check_unique(names, param("metrics")), matrix.metrics)
    return matrix.select(metrics=list(names))


def resolve_metrics(requested: Sequence[str] | None, available: Sequence[str]
                    ) -> tuple[str, ...]:
    """The metrics a study uses: `requested` (all `available` when None), each checked.

    Examples
    --------
    >>> resolve_metrics(None, ("AP", "P@10"))
    ('AP', 'P@10')
    >>> resolve_metrics(["AP"], ("AP", "P@10"))
    ('AP',)
    """
    from irsim.errors import unknown_name

    names = tuple(requested) if requested is not None else tuple(available)
    for m in names:
        if m not in available:
            raise unknown_name("metric", m, available)
    return names


def round_sig(x: float, digits: int = 2) -> float:
    """Round to `digits` significant figures (NaN and 0 pass through).

    Examples
    --------
    >>> round_sig(0.08764), round_sig(0.1049), round_sig(0.0)
    (0.088, 0.1, 0.0)
    """
    if not math.isfinite(x) or x == 0:
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def check_unique(values: Sequence[Any], name: str) -> tuple:
    """`values` as a tuple, refusing a repeated value.

    Every value of a list parameter (significance levels, sizes, methods, tests, metrics)
    gets its own output rows, so a repeat would only duplicate rows; it is refused rather
    than silently dropped, since it is usually a typo for another value.

    Examples
    --------
    >>> check_unique([0.01, 0.05], "experiment.alpha")
    (0.01, 0.05)
    >>> check_unique([0.5, 0.5], "experiment.alpha")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.alpha lists 0.5 twice (each value gives ...
    """
    seen: set = set()
    for v in values:
        if v in seen:
            raise ConfigError(f"{name} lists {v!r} twice (each value gives its own rows; "
                              "remove the repeat)")
        seen.add(v)
    return tuple(values)


def check_listed(values: Sequence[Any], name: str, what: str) -> tuple:
    """`values` of a list parameter as a tuple: at least one, none repeated
    (:func:`check_unique`). Each value's bounds are the field's own (``option(..., gt=0,
    lt=1)``, checked by the ``Config``).

    Examples
    --------
    >>> check_listed([0.95, 0.9], "experiment.confidence", "confidence level")
    (0.95, 0.9)
    >>> check_listed([], "experiment.confidence", "confidence level")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.confidence must list at least one confidence \
level
    """
    if not values:
        raise ConfigError(f"{name} must list at least one {what}")
    return check_unique(values, name)


def check_resamples(B: int, alphas: Sequence[float], b_key: str = "experiment.B",
                    alpha_key: str = "experiment.alpha",
                    tests: Sequence[str] | None = None) -> int:
    """Refuse a number of resamples too small for the smallest significance level (the one
    rule of every study whose tests resample: discpower, compare, assessors, error_rates,
    test_errors, multiple_testing).

    An achieved significance level from `B` resamples is a multiple of ``1/B`` (count mode)
    or at least ``1/(B+1)`` (add-one mode), so it cannot resolve a level ``alpha < 1/B``:
    with count p-values ``ASL < alpha`` then means "no resample as extreme as the observed
    one", decided by a handful of draws (B=1: 88% of adhoc8's pairs "significant" at 0.01);
    with add-one p-values no pair can be significant. ``B * alpha >= 1`` for every alpha is
    required: ``B >= ceil(1 / min(alpha))``. With `tests` (names of
    :data:`irsim.stats.TESTS`) the rule applies only when one of them is a Monte Carlo test
    (a name outside the registry, e.g. a Bayesian test, is not).

    Examples
    --------
    >>> check_resamples(100, [0.01, 0.05])
    100
    >>> check_resamples(1, [0.05], tests=["t", "wilcoxon"])  # no test resamples
    1
    >>> check_resamples(1, [0.01, 0.05])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.B=1 is too small for experiment.alpha=0.01: ...
    """
    if tests is not None:
        from irsim.stats import TESTS

        if not any(t in TESTS and TESTS[t].monte_carlo for t in tests):
            return B
    low = min(alphas)
    need = math.ceil(1.0 / low - 1e-9)
    if B < need:
        raise ConfigError(
            f"{b_key}={B} is too small for {alpha_key}={low:g}: an achieved significance "
            f"level from B resamples moves in steps of 1/B, so a level of {low:g} needs "
            f"B >= {need} (B * alpha >= 1)")
    return B


def check_paired_bootstrap_topics(n_topics: int, key: str = "experiment.tests") -> int:
    """Refuse the paired bootstrap on fewer than 3 topics.

    With 2 topics the centred differences are ``(d, -d)``: every resample either repeats one
    of them (constant: ``t* = 0``) or holds both (mean 0: ``t* = 0``), so no replicate is
    ever as extreme as a non-zero observed ``t`` and the ASL of every pair is 0.

    Examples
    --------
    >>> check_paired_bootstrap_topics(3)
    3
    >>> check_paired_bootstrap_topics(2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.tests: paired_bootstrap needs at least 3 ...
    """
    if n_topics < 3:
        raise ConfigError(
            f"{key}: paired_bootstrap needs at least 3 topics, the collection has "
            f"{n_topics} (with 2, every resample of the centred differences (d, -d) has t* "
            "= 0, so every pair would get ASL 0)")
    return n_topics


def check_choices(values, valid: Sequence[str], kind: str, key: str) -> tuple[str, ...]:
    """Validate a non-empty list of distinct names against `valid` (closest-name
    suggestions).

    Examples
    --------
    >>> check_choices(["bca"], ("bca", "t"), "CI method", "experiment.methods")
    ('bca',)
    """
    from irsim.errors import unknown_name

    out = tuple(str(v) for v in ([values] if isinstance(values, str) else values))
    if not out:
        raise ConfigError(f"{key} must list at least one {kind}")
    for v in out:
        if v not in valid:
            raise unknown_name(kind, v, valid)
    return check_unique(out, key)


def check_positive_int(value: int, name: str) -> int:
    """Validate an integer >= 1 (B, trials, samples...)."""
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_systems_differ(scores: np.ndarray, metric: str, what: str) -> None:
    """Refuse scores (systems x topics) on which every system has the same score on every
    topic: no difference between systems exists, so `what` is undefined (an InputError
    instead of a table of NaN).

    Examples
    --------
    >>> check_systems_differ(np.array([[0.1, 0.2], [0.1, 0.3]]), "AP", "E(rho^2)")
    >>> check_systems_differ(np.array([[0.1, 0.2], [0.1, 0.2]]), "AP", "E(rho^2)")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: metric 'AP': every system has the same score on every topic ...
    """
    from irsim.errors import InputError

    x = np.asarray(scores)
    if x.shape[0] >= 2 and not (x != x[:1]).any():
        raise InputError(f"metric {metric!r}: every system has the same score on every topic "
                         f"(no difference between systems), so {what} is undefined")


def auto_block(budget_bytes: float, per_item_bytes: float, total: int) -> int:
    """Largest block of items whose working set fits the budget (at least 1).

    Examples
    --------
    >>> auto_block(1e6, 1e3, 10_000)
    1000
    >>> auto_block(10, 1e3, 50)
    1
    """
    return int(max(1, min(total, budget_bytes // max(per_item_bytes, 1.0))))


#: Working memory (bytes) one step of a study (a block of trials, of resamples, a table) may
#: need; a larger estimate is refused before anything is allocated (:func:`check_memory`).
MEMORY_BUDGET = 2 * 2**30


def check_memory(nbytes: float, what: str, lower: str, budget: float | None = None) -> None:
    """Refuse, with one :class:`~irsim.errors.ConfigError`, a step whose estimated working
    memory `nbytes` exceeds `budget` (default :data:`MEMORY_BUDGET`, read at each call): the
    message names `what` needs it, the estimate, the budget and the parameters to `lower`.

    Examples
    --------
    >>> check_memory(2**20, "the D-study table", "experiment.max_topics")
    >>> check_memory(3 * 2**30, "a table", "max_topics")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: a table would need about 3.0 GiB of memory, over the 2 ...
    """
    budget = MEMORY_BUDGET if budget is None else budget
    if nbytes > budget:
        raise ConfigError(f"{what} would need about {nbytes / 2**30:.1f} GiB of memory, over "
                          f"the {budget / 2**30:g} GiB budget: lower {lower}")


def fields_bytes(fields: Any) -> float:
    """Bytes the engine allocates for a study's typed fields (``study.fields(data)``,
    :mod:`irsim.engine.partials`) before any shard runs: int64/float64 words per element
    of each field's shape (a fixed-point :class:`~irsim.engine.partials.Sum`: one word; a
    :class:`~irsim.engine.partials.TopK`: ``rows x k`` values, indices and companions).

    Examples
    --------
    >>> from irsim.engine.partials import Count, Slab
    >>> fields_bytes({"n": Count((1000, 3)), "p": Slab((10, 5))})
    24410.0
    """
    total = 0.0
    for f in fields.values():
        if hasattr(f, "rows") and hasattr(f, "k"):  # TopK
            total += float(f.rows) * float(f.k) * 8 * (2 + int(getattr(f, "aux", 0)))
            continue
        shape = getattr(f, "shape", None)
        if shape is None:
            continue
        n = math.prod(float(x) for x in shape)
        per = np.dtype(getattr(f, "dtype", "int64")).itemsize if not hasattr(f, "bits") else 8
        flags = float(shape[0]) if shape and hasattr(f, "fill") else 0.0  # a Slab's "set"
        total += n * per + flags
    return total


def check_study_memory(study: Any, data: Any, lower: str, extra: float = 0.0) -> Any:
    """Refuse (:func:`check_memory`) a study whose partial results (:func:`fields_bytes` of
    ``study.fields(data)``) plus `extra` bytes of one shard's working memory would exceed
    the budget, before the engine allocates anything; `lower` names the parameters that size
    them. Returns `study`: each study's ``make`` ends with it.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from irsim.engine.partials import Count
    >>> big = SimpleNamespace(name="toy", fields=lambda d: {"n": Count((10**9, 99))})
    >>> check_study_memory(big, None, "experiment.trials")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment=toy (its partial results and one shard) ...
    """
    name = getattr(study, "name", type(study).__name__)
    check_memory(fields_bytes(study.fields(data)) + float(extra),
                 f"experiment={name} (its partial results and one shard)", lower)
    return study


@dataclass(frozen=True)
class Shards:
    """Requested shard sizes (``engine.shard_items`` x ``engine.shard_replicates``): items
    are what a study splits its work over (system pairs, runs, configurations), replicates
    its bootstrap samples or trials. None = the study's default. Shard sizes never change
    results."""

    items: int | None = None
    replicates: int | None = None

    def get(self, items_default: int, replicates_default: int) -> tuple[int, int]:
        """``(items, replicates)`` with the study's defaults filled in."""
        return (items_default if self.items is None else int(self.items),
                replicates_default if self.replicates is None else int(self.replicates))


# ------------------------------------------------------------------ Bayesian decisions
#: The parameters of a study's Bayesian tests (issue 28), as every study's ``Config`` spells
#: them, with their defaults (``bayes``: none; :class:`BayesRules`).
BAYES_OPTIONS: dict[str, Any] = {"bayes_threshold": 3.0, "bayes_r": math.sqrt(2.0) / 2.0,
                                 "bayes_prob": 0.95, "bayes_rope": 0.01}


@dataclass
class BayesOptions(Options):
    """The options of the Bayesian tests, declared once: a study that decides pairs with
    them inherits these fields in its ``Config`` (``class Config(BayesOptions)``;
    :class:`BayesRules` checks them and holds the rules). Without a Bayesian test none of
    them enters a study's fingerprint (``only_with="bayes"``): such a run keeps the
    fingerprint it had before the options existed. The study's own remarks on a field
    (its tables, its posterior draws) go in its ``NOTES`` (:func:`irsim.params.parameters`).

    Examples
    --------
    >>> BayesOptions().bayes, BayesRules.of(BayesOptions(bayes=["jzs_bf"])).tests
    ([], ('jzs_bf',))
    """

    bayes: list[str] = option(
        [], "Bayesian tests of :data:`irsim.stats.registry.BAYES_TESTS` (``jzs_bf``, "
        "``t_posterior``, ``bayesian_bootstrap``) deciding the pairs the study tests; empty: "
        "none.", only_with="bayes")
    bayes_threshold: float = option(
        BAYES_OPTIONS["bayes_threshold"], "``jzs_bf``: Bayes factor threshold: better / "
        "worse when ``BF10 >=`` it, equivalent when ``BF10 <= 1 /`` it.", only_with="bayes",
        ge=1)
    bayes_r: float = option(
        BAYES_OPTIONS["bayes_r"], "``jzs_bf``: scale of the Cauchy prior on the standardised "
        "effect.", only_with="bayes", gt=0)
    bayes_prob: float = option(
        BAYES_OPTIONS["bayes_prob"], "``t_posterior``: mass of the HDI; ``bayesian_bootstrap``: "
        "posterior probability a decision needs.", only_with="bayes", gt=0, lt=1)
    bayes_rope: float = option(
        BAYES_OPTIONS["bayes_rope"], "``t_posterior``, ``bayesian_bootstrap``: half-width of the "
        "region of practical equivalence ``[-rope, rope]`` in the metric's units.",
        only_with="bayes", ge=0)


document(BayesOptions)


def decision_codes(decision: np.ndarray) -> np.ndarray:
    """Indices in :data:`irsim.stats.bayes.DECISIONS` of an array of decision labels.

    Examples
    --------
    >>> decision_codes(np.array(["worse", "better", "undecided"])).tolist()
    [1, 0, 3]
    """
    from irsim.stats.bayes import DECISIONS

    labels = np.asarray(DECISIONS)
    flat = np.asarray(decision).reshape(-1)
    hit = flat[:, None] == labels[None, :]
    if not hit.any(axis=1).all():
        raise ValueError(f"unknown decision labels in {np.unique(flat)}")
    return hit.argmax(axis=1).reshape(np.shape(decision))


@dataclass(frozen=True)
class BayesRules:
    """The Bayesian tests a study runs (``experiment.bayes``) and their decision rules: the
    one definition of the options ``bayes``, ``bayes_threshold``, ``bayes_r``,
    ``bayes_prob`` and ``bayes_rope`` shared by test_errors, discpower, multiple_testing and
    assessors (the tests' names checked, rule labels, the batched calls; the fields, their
    help and their bounds are :class:`BayesOptions`', checked by the ``Config``).

    Parameters
    ----------
    tests : tuple of str
        Names of :data:`irsim.stats.registry.BAYES_TESTS` (``jzs_bf``, ``t_posterior``,
        ``bayesian_bootstrap``), each at most once; empty: none.
    threshold : float
        ``jzs_bf``: better / worse when ``BF10 >= threshold``, equivalent when ``BF10 <=
        1 / threshold`` (>= 1).
    r : float
        ``jzs_bf``: scale of the Cauchy prior on the standardised effect (> 0).
    prob : float
        ``t_posterior``: mass of the HDI; ``bayesian_bootstrap``: the posterior probability
        a decision needs; in (0, 1).
    rope : float
        ``t_posterior``, ``bayesian_bootstrap``: half-width of the region of practical
        equivalence (>= 0), in the metric's units.

    Examples
    --------
    >>> rules = BayesRules(("jzs_bf", "t_posterior"))
    >>> rules.rule("jzs_bf", 1000), rules.rule("t_posterior", 1000)
    ('BF10 >= 3 (r=0.7071)', '95% HDI vs ROPE +-0.01')
    >>> z = np.array([[0.1, 0.3, 0.2, 0.4, 0.2], [0.1, -0.1, 0.05, -0.05, 0.0]])
    >>> rules.codes("jzs_bf", z).tolist()      # better, undecided
    [0, 3]
    >>> BayesRules(("jzs",))
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown Bayesian test in experiment.bayes 'jzs' (did you \
mean 'jzs_bf'?); valid: bayesian_bootstrap, jzs_bf, t_posterior
    """

    tests: tuple[str, ...] = ()
    threshold: float = BAYES_OPTIONS["bayes_threshold"]
    r: float = BAYES_OPTIONS["bayes_r"]
    prob: float = BAYES_OPTIONS["bayes_prob"]
    rope: float = BAYES_OPTIONS["bayes_rope"]

    def __post_init__(self) -> None:
        from irsim.errors import unknown_name
        from irsim.stats.registry import BAYES_TESTS

        set_ = object.__setattr__
        tests = (self.tests,) if isinstance(self.tests, str) else tuple(self.tests)
        set_(self, "tests", tuple(str(t) for t in tests))
        for b in self.tests:
            if b not in BAYES_TESTS:
                raise unknown_name(f"Bayesian test in {param('bayes')}", b, BAYES_TESTS)
        if len(set(self.tests)) != len(self.tests):
            raise ConfigError(f"{param('bayes')} lists a test twice: {list(self.tests)}")
        for attr in ("threshold", "r", "prob", "rope"):  # bounds: BayesOptions' fields
            set_(self, attr, float(getattr(self, attr)))

    @classmethod
    def of(cls, obj: Any) -> BayesRules:
        """The rules of an object with the attributes ``bayes``, ``bayes_threshold``,
        ``bayes_r``, ``bayes_prob`` and ``bayes_rope`` (a study's ``Config`` or study),
        checked."""
        return cls(obj.bayes or (),
                   *(getattr(obj, k) for k in BAYES_OPTIONS))

    def options(self) -> dict[str, Any]:
        """``{bayes: ..., bayes_threshold: ..., ...}``, normalised (as a study stores them).
        """
        return {"bayes": self.tests, "bayes_threshold": self.threshold, "bayes_r": self.r,
                "bayes_prob": self.prob, "bayes_rope": self.rope}

    def rule(self, name: str, B: int) -> str:
        """The decision rule of Bayesian test `name` as the tables spell it (`B`: the
        Bayesian bootstrap's posterior draws; :attr:`irsim.stats.registry.BayesTestSpec.label`).
        """
        from irsim.stats.registry import get_bayes_test

        return get_bayes_test(name).label.format(
            threshold=self.threshold, r=self.r, prob=self.prob, percent=100 * self.prob,
            rope=self.rope, B=B)

    def decide(self, name: str, x: np.ndarray, y: np.ndarray | None = None, *, B: int = 1000,
               seed: int = 0, study: str = "stats/bayesian_bootstrap",
               key: tuple[int, ...] = ()) -> Any:
        """The result of Bayesian test `name` (:mod:`irsim.stats.bayes`) for every pair
        (row) of ``x - y`` (or of the differences `x`), one batched call with this rule; a
        Monte Carlo test draws `B` posterior draws from the stream `study` keyed by `key`
        (and `seed`)."""
        from irsim.stats.registry import get_bayes_test

        spec = get_bayes_test(name)
        opts: dict[str, Any] = {k: getattr(self, k) for k in spec.rule}
        if spec.monte_carlo:
            opts.update(B=B, seed=seed, study=study, key=key)
        return spec.function(x, y, **opts)

    def codes(self, name: str, x: np.ndarray, y: np.ndarray | None = None, **mc: Any
              ) -> np.ndarray:
        """Decision codes (indices of :data:`irsim.stats.bayes.DECISIONS`) of
        :meth:`decide`, the leading shape of `x` (at least 1-d)."""
        return decision_codes(np.atleast_1d(self.decide(name, x, y, **mc).decision))




def normalised_tests(config: Any, valid: Sequence[str], what: str) -> dict[str, Any]:
    """The fields of a known-truth study's ``Config`` that :class:`SimulatedTests` reads,
    checked beyond their bounds (the bounds are the fields' own) and normalised, as keyword
    arguments of :func:`dataclasses.replace`: ``tests`` (at least one, each of `valid`,
    named as `what`), ``alpha`` (at least one, none repeated) and the Bayesian options
    (:meth:`BayesRules.options`; ``bayes`` as a list).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(tests=["t"], alpha=[0.05], bayes=["jzs_bf"], **BAYES_OPTIONS)
    >>> out = normalised_tests(c, ("t", "sign"), "test for experiment=toy")
    >>> out["tests"], out["alpha"], out["bayes"], out["bayes_rope"]
    (['t'], [0.05], ['jzs_bf'], 0.01)
    >>> normalised_tests(SimpleNamespace(**{**vars(c), "tests": ["wilcox"]}), ("t", "sign"),
    ...                  "test for experiment=toy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown test for experiment=toy 'wilcox'...
    """
    from irsim.errors import unknown_name

    tests = [str(t) for t in config.tests]
    if not tests:
        raise ConfigError(f"{param('tests')} must list at least one test")
    for t in tests:
        if t not in valid:
            raise unknown_name(what, t, valid)
    rules = BayesRules.of(config).options()
    return {"tests": tests,
            "alpha": list(check_listed(config.alpha, param("alpha"), "significance level")),
            **rules, "bayes": list(rules["bayes"])}


class SimulatedTests:
    """What a known-truth study that runs the paired tests on simulated topics (test_errors'
    :class:`~irsim.experiments.test_errors.common.TrialTests`,
    :class:`~irsim.experiments.multiple_testing.MultipleTesting`) derives from the
    normalised ``Config`` it holds (``self.config``: its ``tests``, ``alpha``, ``B``, the
    tests' options and the Bayesian ones, :func:`normalised_tests`) and its ``seed``: the
    Bayesian rules, the rule ``B * alpha >= 1`` and the options of each test.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> @dataclass(frozen=True)
    ... class Study(SimulatedTests):
    ...     config: Any
    ...     seed: int = 0
    >>> c = SimpleNamespace(tests=["randomisation"], alpha=[0.05], B=99, pvalue="count",
    ...                     sign_threshold=0.01, bayes=[], **BAYES_OPTIONS)
    >>> Study(c).test_options("sign", "toy", (0,))
    {'threshold': 0.01}
    >>> o = Study(c, seed=3).test_options("randomisation", "toy", (3,))
    >>> o["B"], o["seed"], o["key"], o["study"], o["pvalue_mode"]
    (99, 3, (3,), 'toy/randomisation', 'count')
    >>> Study(SimpleNamespace(**{**vars(c), "alpha": [0.001]})).check_resamples()
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: experiment.B=99 is too small for experiment.alpha=0.001...
    """

    config: Any
    seed: int

    @property
    def bayes_rules(self) -> BayesRules:
        """The Bayesian tests and their rules (:class:`BayesRules`)."""
        return BayesRules.of(self.config)

    def check_resamples(self) -> Any:
        """Refuse ``B`` too small for the smallest ``alpha`` when one of the ``tests`` is a
        Monte Carlo test (:func:`check_resamples`, the knobs named); returns the study."""
        c = self.config
        check_resamples(c.B, c.alpha, param("B"), param("alpha"), tests=c.tests)
        return self

    def test_options(self, test: str, stream: str, key: tuple[int, ...]) -> dict[str, Any]:
        """The keyword options of paired test `test` (:func:`irsim.stats.get_test`) as the
        study sets them: Wilcoxon's method, the sign test's tie threshold, the bootstrap
        statistic and, for a Monte Carlo test, ``B``, the seed, the p-value rule and the
        random stream ``<stream>/<test>`` keyed by `key` (the alternative is the caller's)."""
        from irsim.stats import get_test

        return get_test(test).keywords(self, stream=stream, key=key)
