"""Confidence intervals for AP under corpus resampling, validated on split corpora
(Cormack & Lynam, "Statistical precision of information retrieval evaluation", SIGIR 2006;
METHODS.md section 5).

For every run x topic the corpus is resampled ``B`` times (every document ``k ~ Poisson(1)``
copies: :mod:`irsim.sampling.corpus`) and AP* computed in closed form
(:mod:`irsim.stats.corpus_ap`). Intervals at level ``1 - alpha``: ``normal`` (Cormack &
Lynam's linear ``AP +- z sd``), ``logit`` (``logit(AP) +- z sd(logit AP*)``) and ``bca``
(:func:`irsim.stats.bootstrap_ci`; BCa acceleration from the jackknife over documents), and
each again with the small-R correction (``<method>_small_r``: silver bullets for AP near 0,
lead balloons for AP near 1).

Split-corpus validation: documents go to half A or B by MD5 of the docno, every list and
the qrels are split accordingly (:func:`irsim.stats.corpus_ap.corpus_lists`), intervals are
built on one half and the AP of the other half counted above / within / below; the
parametric model predicts ``2 Phi(z/sqrt 2) - 1`` (0.834) within. Both directions, all
topics and those with ``R > 5`` (R of the half the interval comes from); lists where either
half has no relevant document are left out. A value equal to a bound counts as within, for
every method; ``logit`` intervals live on ``[eps, 1 - eps]`` (AP and its replicates are
clamped before the logit, ``eps`` = :data:`~irsim.stats.ci.LOGIT_EPS`), so the other half's
AP is clamped the same way before it is compared: an AP of 0 (or 1) on both halves (the
logit interval is then ``[eps, eps]``, or ``[1 - eps, 1 - eps]``) counts as within, as it
does for ``normal`` (:func:`classify`; ``corpus_split.normalised`` agrees). The small-R
corrected ``logit_small_r`` extends such intervals to 0 and 1 and is compared unclamped.

One split is one draw: all runs share each topic's split, so a split holds about as many
independent samples as topics, and its within share moves by a few points from split to
split. ``splits`` = K repeats the validation on K MD5 splits: split 0 is Cormack & Lynam's
unsalted rule, split ``k`` hashes ``split_salt(k) + docno``
(:func:`irsim.stats.corpus_ap.split_salt`; the salts are in the manifest). The summary
(``corpus_validation_summary``) gives, per method and subset, the mean over splits of each
split's share (both directions pooled), its sd over splits and a t interval (K - 1 degrees
of freedom, level ``1 - alpha``) for the mean over random splits of this collection. The
per-list tables (``corpus_split``) and the MAP validation are those of split 0.

MAP and L-MAP (mean logit AP) per run: ``bootstrap`` (sd of the corpus-bootstrap MAP*) and
``parametric`` (delta method from the per-topic logit sds), validated on the halves the
same way. Meta-analysis of ``d = logit(AP_x) - logit(AP_y)`` over topics for system pairs
(fixed effect and DerSimonian-Laird random effects, :mod:`irsim.stats.meta`), with
``sigma_d^2 = sd_x^2 + sd_y^2`` from the per-topic logit intervals.

Items are (split, run) pairs, split-major (item ``k * S + s``); shards are blocks of runs
of one split (``engine.shard_items``, default 4, rounded up to a multiple of 4), so the K
splits run in parallel; replicates are not split (an interval needs all ``B``). The shards
of split 0 also bootstrap the full corpus. Kernel units are blocks of 4 runs (all their
topics); the draws of a unit and replicate block of 32 are keyed by (seed, subset, unit,
block) with subset 0 for the full corpus and ``1 + 2k`` / ``2 + 2k`` for halves A / B of
split ``k``, so results do not depend on shard sizes or the executor, and split 0 draws as
a single split does. A shard's per-list and per-run arrays are placed into the whole
(:class:`~irsim.engine.partials.Slab`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import special
from scipy import stats as sps

from irsim.data.collection import DocCollection
from irsim.engine.base import Shard, block_ranges, shard_grid
from irsim.engine.partials import Slab
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.corpus_ci.tables import TABLE_SPECS
from irsim.kit.common import (
    aligned_block,
    check_choices,
    check_positive_int,
    check_study_memory,
    unit_ranges,
)
from irsim.params import Choice, Options, fingerprint, option
from irsim.registry import study
from irsim.sampling.corpus import CorpusSampler
from irsim.stats.ci import LOGIT_EPS, bootstrap_ci
from irsim.stats.corpus_ap import (
    CorpusLists,
    ListSet,
    average_precision,
    corpus_acceleration,
    corpus_lists,
    resampled_ap,
)
from irsim.stats.corpus_intervals import (
    logit_sd_from_interval,
    map_parametric,
    normalised_difference,
    replication_within,
    small_r_correct,
)
from irsim.stats.meta import fixed_effect, random_effects
from irsim.tables import table

__all__ = ["Config", "make", "CorpusCI", "SubsetFields", "METHODS", "RUN_UNIT",
           "CORPUS_BLOCK", "STREAM", "classify", "split_summary"]


class CorpusMethod(Choice):
    """An interval method (``<method>_small_r`` are added when the correction is on)."""

    normal = "normal"
    logit = "logit"
    bca = "bca"


METHODS = CorpusMethod.values()
#: Runs per kernel unit: draws are keyed per unit, shards are whole units.
RUN_UNIT = 4
#: Replicates per keyed draw block (small: the closed form runs in cache-sized pieces).
CORPUS_BLOCK = 32
#: Random stream of the Poisson draws.
STREAM = "corpus_ci/poisson"
def _small_r(method: str) -> str:
    """The tables' name of interval `method` with the small-R correction."""
    return f"{method}_small_r"


#: Corpus subsets (fields: :class:`SubsetFields`); the draws of the full corpus are keyed by
#: subset 0, those of halves A / B of split k by 1 + 2k / 2 + 2k.
_SUBSETS = ("full", "A", "B")


@dataclass(frozen=True)
class SubsetFields:
    """The names of the fields of one corpus subset (the full corpus, or half ``A`` or
    ``B``): the one place they are spelt (the study's fields, its kernel and its tables ask
    it). Per list: AP, the bootstrap and logit-model sds, the limits of each interval
    (method names as in the tables, ``<method>_small_r`` included); per run: MAP and L-MAP
    with their bootstrap and parametric standard errors.

    Examples
    --------
    >>> f = SubsetFields("A")
    >>> f.ap, f.lo("bca_small_r"), f.run("lmap"), f.run("map", "boot")
    ('A_ap', 'A_lo_bca_small_r', 'A_lmap', 'A_map_se_boot')
    >>> full = SubsetFields("full")
    >>> full.per_list(["normal"])
    ('ap', 'se', 'sd_logit', 'lo_normal', 'hi_normal')
    >>> full.per_run()
    ('map', 'map_se_boot', 'map_se_par', 'lmap', 'lmap_se_boot', 'lmap_se_par')
    """

    subset: str

    @property
    def _prefix(self) -> str:
        return "" if self.subset == "full" else f"{self.subset}_"

    @property
    def ap(self) -> str:
        """Per list: AP."""
        return f"{self._prefix}ap"

    @property
    def se(self) -> str:
        """Per list: the bootstrap standard error of AP."""
        return f"{self._prefix}se"

    @property
    def sd_logit(self) -> str:
        """Per list: the logit-model sd of AP."""
        return f"{self._prefix}sd_logit"

    def lo(self, method: str) -> str:
        """Per list: the lower limit of interval `method`."""
        return f"{self._prefix}lo_{method}"

    def hi(self, method: str) -> str:
        """Per list: the upper limit of interval `method`."""
        return f"{self._prefix}hi_{method}"

    def run(self, measure: str, se: str | None = None) -> str:
        """Per run: `measure` (``map`` or ``lmap``), or its standard error `se` (``boot``
        or ``par``)."""
        return f"{self._prefix}{measure}" if se is None else f"{self._prefix}{measure}_se_{se}"

    def per_list(self, methods: Sequence[str]) -> tuple[str, ...]:
        """The per-list fields with the intervals of `methods`, in declaration order."""
        return (self.ap, self.se, self.sd_logit,
                *(name for m in methods for name in (self.lo(m), self.hi(m))))

    def per_run(self) -> tuple[str, ...]:
        """The per-run fields, in declaration order."""
        return tuple(self.run(measure, se) for measure in ("map", "lmap")
                     for se in (None, "boot", "par"))


@dataclass
class Config(Options):
    """Parameters of ``experiment=corpus_ci`` (Cormack & Lynam 2006)."""

    name: str = option("corpus_ci", "``corpus_ci``.")
    B: int = option(2000, "Corpus bootstrap replicates per run x topic (the paper: 2000).", ge=2)
    alpha: float = option(
        0.05, "Intervals at level ``1 - alpha`` (0.05: z = 1.96, predicted within share 0.834).",
        gt=0, lt=1)
    methods: list[CorpusMethod] = option(
        list(METHODS), "Any of ``normal`` (AP +- z sd), ``logit``, ``bca``.")
    small_r: bool = option(
        True, "Also report every method with the small-R correction (``<method>_small_r``: silver "
        "bullets / lead balloons).")
    validate: bool = option(
        True, "Split the corpus into halves A and B and count AP of one half in intervals from "
        "the other.")
    splits: int = option(
        10, "MD5 splits validated: split 0 is the paper's unsalted rule, splits 1..K-1 "
        "hash a salted docno. One split is one draw; the summary gives the mean over splits with "
        "its spread and a t interval.", ge=1)
    r_threshold: int = option(
        5, 'The "large R" validation subset is ``R > r_threshold`` (the paper: 5).')
    rel: int = option(
        1, "Relevance threshold: grade >= `rel` is relevant (AP of graded collections such as "
        "TREC DL is customarily computed with ``rel = 2``).", tables="data")
    pairs: list[list[str]] | None = option(
        None, "System pairs for the meta-analysis, e.g. ``[[runA, runB], [runA, runC]]``; None: "
        "every pair.")



@study("corpus_ci", config=Config, data="docs", order=60,
       title="Corpus-resampling CIs",
       example=dict(overrides={"synthetic": ["experiment.B=300", "experiment.splits=1"]},
                    keywords=dict(B=50, splits=2), figures=["corpus_*"]),
       tables=TABLE_SPECS,
       description=("confidence intervals for AP under corpus resampling (closed form), small-R "
                    "correction, split-corpus validation over repeated MD5 splits, MAP/L-MAP "
                    "intervals, meta-analysis (Cormack & Lynam 2006)"),
       headlines={"corpus_validation_summary": (("method", "subset"), "within")},
       question=("How much would a run's AP change on another corpus like this one? "
                 "Corpus-resampling CIs validated on repeated split corpora (Cormack-Lynam "
                 "2006)"))
def make(config: Config, data: DocCollection, *, seed: int, shards: Shards
         ) -> tuple[CorpusCI, CorpusLists]:
    """The corpus-CI study of `config` and the ranked lists of `data` (runs and qrels) it
    reads: the full corpus and, with ``validate``, its two halves.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> study, lists = make(Config(B=100, splits=3), DocCollection(runs, qrels, 40), seed=1,
    ...                     shards=Shards())
    >>> study.interval_names, lists.splits, len(lists.full)
    (('normal', 'logit', 'bca', 'normal_small_r', 'logit_small_r', 'bca_small_r'), 3, 12)
    """
    methods = check_choices(config.methods, METHODS, "CI method for experiment=corpus_ci",
                            param("methods"))
    B, splits = config.B, config.splits
    r_threshold = config.r_threshold
    if isinstance(r_threshold, bool) or int(r_threshold) != r_threshold:
        raise ConfigError(f"{param('r_threshold')} must be an integer, got {r_threshold!r}")
    rel = config.rel
    if isinstance(rel, bool) or not isinstance(rel, int | np.integer):
        raise ConfigError(f"{param('rel')} must be an integer grade, got {rel!r}")
    pairs = None if config.pairs is None else [[str(a), str(b)] for a, b in config.pairs]
    shard_runs, _ = shards.get(RUN_UNIT, B)  # replicates are not split
    shard_runs = check_positive_int(shard_runs, param("shard_items", "engine"))
    validate = bool(config.validate)
    config = dataclasses.replace(config, methods=list(methods), small_r=bool(config.small_r),
                                 validate=validate, r_threshold=int(r_threshold), pairs=pairs)
    study = CorpusCI(config, seed=int(seed), shard_items=shard_runs)
    lists = corpus_lists(data, rel=int(rel), split=validate, splits=splits)
    study.check(lists)
    # one unit's AP* (RUN_UNIT runs x topics x B) and its sorted / transformed copies
    check_study_memory(study, lists, param("B"),
                       extra=3 * 8 * RUN_UNIT * len(lists.topics) * B)
    return study, lists


def classify(value: np.ndarray, low: np.ndarray, high: np.ndarray, method: str = "normal"
             ) -> tuple[int, int, int]:
    """Counts of `value` above, within and below ``[low, high]``; a value equal to a bound
    is within. ``logit`` intervals live on ``[eps, 1 - eps]`` (AP and its replicates are
    clamped before the logit), so for ``method="logit"`` the value is clamped there first:
    an AP of 0 (1) is then at the bound of the interval ``[eps, eps]`` (``[1 - eps, 1 -
    eps]``) of an AP of 0 (1). (``logit_small_r`` needs no clamp: the correction extends
    those intervals to 0 and 1.)

    Examples
    --------
    AP 0 against the logit interval of AP 0, a value at a bound, one above:

    >>> v = np.array([0.0, 0.5, 0.7])
    >>> lo, hi = np.array([1e-5, 0.5, 0.5]), np.array([1e-5, 0.6, 0.6])
    >>> classify(v, lo, hi, "normal"), classify(v, lo, hi, "logit")
    ((1, 1, 1), (1, 2, 0))
    """
    if method == "logit":
        value = np.clip(value, LOGIT_EPS, 1.0 - LOGIT_EPS)
    above = int(np.count_nonzero(value > high))
    below = int(np.count_nonzero(value < low))
    return above, len(value) - above - below, below


def split_summary(shares: np.ndarray, confidence_level: float
                  ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean over splits of per-split shares, their sd and the t interval of the mean.

    Parameters
    ----------
    shares : ndarray, shape (K, ...)
        One value per split (NaN: the split had no list; left out).
    confidence_level : float

    Returns
    -------
    splits, mean, sd, lo, hi
        Splits used (per entry, an array), mean, sd (``ddof=1``; NaN with fewer than two
        splits) and ``mean -+ t_{m-1} sd / sqrt(m)`` (NaN with fewer than two).

    Examples
    --------
    >>> m, mean, sd, lo, hi = split_summary(np.array([0.8, 0.9, 0.85]), 0.95)
    >>> int(m), round(float(mean), 3), round(float(sd), 3), round(float(lo), 3)
    (3, 0.85, 0.05, 0.726)
    """
    x = np.asarray(shares, np.float64)
    ok = np.isfinite(x)
    m = ok.sum(axis=0)
    filled = np.where(ok, x, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(m > 0, filled.sum(axis=0) / np.maximum(m, 1), np.nan)
        dev = np.where(ok, x - mean, 0.0)
        sd = np.where(m > 1, np.sqrt((dev ** 2).sum(axis=0) / np.maximum(m - 1, 1)), np.nan)
        t = sps.t.ppf(0.5 + confidence_level / 2.0, np.maximum(m - 1, 1))
        half = np.where(m > 1, t * sd / np.sqrt(np.maximum(m, 1)), np.nan)
    return m, mean, sd, mean - half, mean + half


@dataclass(frozen=True)
class CorpusCI:
    """The corpus-resampling CI study (Cormack & Lynam 2006).

    Parameters
    ----------
    config : Config
        The study's parameters (``B``, ``alpha``, ``methods``, ``small_r``, ``validate``,
        ``splits``, ``r_threshold``, ``pairs``), normalised and checked by :func:`make`.
    seed : int
    shard_items : int
        Runs per shard (rounded up to a multiple of 4); does not change any result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> from irsim.engine import run_study
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> study, lists = make(Config(B=100, splits=2), DocCollection(runs, qrels, 40), seed=1,
    ...                     shards=Shards())
    >>> tables, info = run_study(study, lists)
    >>> tables["corpus_ci"].column_names[:6]
    ['system', 'topic', 'ap', 'lo', 'hi', 'method']
    >>> tables["corpus_ci"].num_rows        # 12 lists x 6 methods
    72
    >>> info["shards"], tables["corpus_validation"].num_rows  # 2 splits x 6 methods x 4
    (2, 48)
    """

    config: Config
    seed: int
    shard_items: int
    name: str = field(default="corpus_ci", init=False)

    @property
    def interval_names(self) -> tuple[str, ...]:
        """Method names in the tables (with the ``_small_r`` variants)."""
        methods = tuple(str(m) for m in self.config.methods)
        extra = tuple(_small_r(m) for m in methods) if self.config.small_r else ()
        return methods + extra

    @property
    def level(self) -> float:
        """The confidence level ``1 - alpha``."""
        return 1.0 - self.config.alpha

    # -- plan ---------------------------------------------------------------------------
    def _pairs(self, data: CorpusLists) -> tuple[np.ndarray, np.ndarray]:
        names = {s: i for i, s in enumerate(data.systems)}
        if self.config.pairs is None:
            a, b = np.triu_indices(len(data.systems), 1)
            return a.astype(np.int64), b.astype(np.int64)
        out = []
        for x, y in self.config.pairs:
            for s in (x, y):
                if s not in names:
                    raise unknown_name(f"system in {param('pairs')}", s, data.systems)
            out.append((names[x], names[y]))
        arr = np.array(out, np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def check(self, data: CorpusLists) -> None:
        """Refuse data the parameters do not fit (halves missing, unknown systems)."""
        if self.config.validate and not data.split:
            raise ConfigError(f"{param('validate')} needs the split halves of the corpus")
        if self.config.validate and data.splits < self.config.splits:
            raise ConfigError(f"{param('splits')} = {self.config.splits} needs as many split "
                              f"halves of the corpus; the data hold {data.splits}")
        self._pairs(data)

    @property
    def _k(self) -> int:
        """Splits computed (1 without validation: the full corpus only)."""
        return self.config.splits if self.config.validate else 1

    def plan(self, data: CorpusLists) -> list[Shard]:
        """Per split, blocks of whole 4-run units (items ``k * S + run``; no replicate split:
        intervals need all of B)."""
        self.check(data)
        S = len(data.systems)
        block = aligned_block(self.shard_items, RUN_UNIT)
        if self._k == 1:
            return shard_grid(S, block, 0, 1)
        ranges = [(k * S + a, k * S + b) for k in range(self._k)
                  for a, b in block_ranges(S, block)]
        return [Shard(i, it, (0, 0)) for i, it in enumerate(ranges)]

    def fingerprint(self) -> dict:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`)."""
        return fingerprint(self, Config)

    def _subsets(self, split: int = 0) -> tuple[str, ...]:
        if not self.config.validate:
            return _SUBSETS[:1]
        return _SUBSETS if split == 0 else _SUBSETS[1:]

    def fields(self, data: CorpusLists) -> dict[str, Slab]:
        """Per subset (full corpus, halves A and B): per-list AP, standard errors and
        interval limits (``[A_|B_]lo_<method>``...), and per-run MAP / L-MAP. The halves'
        per-list arrays hold every split (split-major: ``(k * S + s) * T + t``); the per-run
        arrays are those of split 0 (and the full corpus), filled by the shards of split 0."""
        S, T = len(data.systems), len(data.topics)
        per_run = Slab((S,), along="items")
        out: dict[str, Slab] = {}
        for subset in self._subsets():
            f = SubsetFields(subset)
            k = 1 if subset == "full" else self._k
            per_list = Slab((k * S * T,), along="items", per=T)
            out.update({name: per_list for name in f.per_list(self.interval_names)})
            out.update({name: per_run for name in f.per_run()})
        return out

    # -- kernel -------------------------------------------------------------------------
    def _bootstrap(self, lists: ListSet, subset: int, unit: int) -> np.ndarray:
        """(N, B) AP* of the lists of one unit."""
        sampler = CorpusSampler(lists.gaps(), lists.missing())
        star = np.empty((len(lists), self.config.B))
        for b0 in range(0, self.config.B, CORPUS_BLOCK):  # replicate blocks (cache-sized)
            b1 = min(self.config.B, b0 + CORPUS_BLOCK)
            draws = sampler.draws(self.seed, STREAM, b0, b1, key=(subset, unit),
                                  block=CORPUS_BLOCK)
            star[:, b0:b1] = resampled_ap(lists, draws).T
        return star

    def _intervals(self, lists: ListSet, ap: np.ndarray, star: np.ndarray, f: SubsetFields
                   ) -> dict[str, np.ndarray]:
        """Per list: every interval, the bootstrap sd and the logit-model sd (fields of
        subset `f`)."""
        out: dict[str, np.ndarray] = {}
        acc = corpus_acceleration(lists) if "bca" in self.config.methods else None
        for m in dict.fromkeys((*self.config.methods, "logit")):
            res = bootstrap_ci(ap, star, method=m, confidence_level=self.level,
                               acceleration=acc if m == "bca" else None)
            lo = np.asarray(res.confidence_interval.low, np.float64).reshape(-1)
            hi = np.asarray(res.confidence_interval.high, np.float64).reshape(-1)
            if m in self.config.methods:
                out[f.lo(m)], out[f.hi(m)] = lo, hi
            out[f.se] = np.asarray(res.standard_error, np.float64).reshape(-1)
            if self.config.small_r:
                clo, chi = small_r_correct(ap, lo, hi, lists.relevant, lists.length,
                                           self.config.alpha)
                if m in self.config.methods:
                    out[f.lo(_small_r(m))], out[f.hi(_small_r(m))] = clo, chi
                if m == "logit":
                    lo, hi = clo, chi
            if m == "logit":
                out[f.sd_logit] = logit_sd_from_interval(lo, hi, self.level, LOGIT_EPS)
        return out

    def _means(self, ap: np.ndarray, star: np.ndarray, sd_logit: np.ndarray, runs: int,
               mask: np.ndarray, f: SubsetFields) -> dict[str, np.ndarray]:
        """Per run: MAP and L-MAP with bootstrap and parametric standard errors, over the
        topics in `mask` (fields of subset `f`)."""
        T = len(mask)
        a = ap.reshape(runs, T)[:, mask]
        s = star.reshape(runs, T, -1)[:, mask]
        sd = sd_logit.reshape(runs, T)[:, mask]
        out: dict[str, np.ndarray] = {}
        if not mask.any():
            nan = np.full(runs, np.nan)
            return {name: nan for name in f.per_run()}
        m, se_map, lm, se_lmap = map_parametric(a, sd, eps=LOGIT_EPS)
        out[f.run("map")], out[f.run("map", "par")] = m, se_map
        out[f.run("lmap")], out[f.run("lmap", "par")] = lm, se_lmap
        map_star = s.mean(axis=1)
        lmap_star = special.logit(np.clip(s, LOGIT_EPS, 1.0 - LOGIT_EPS)).mean(axis=1)
        out[f.run("map", "boot")] = bootstrap_ci(m, map_star, method="normal").standard_error
        out[f.run("lmap", "boot")] = bootstrap_ci(lm, lmap_star,
                                                  method="normal").standard_error
        return {k: np.asarray(v, np.float64).reshape(-1) for k, v in out.items()}

    def kernel(self, shard: Shard, data: CorpusLists) -> dict[str, np.ndarray]:
        """Per-list intervals (full corpus on split 0, halves of the shard's split) and
        per-run means (split 0) of some units of one split."""
        S = len(data.systems)
        split = shard.items[0] // S
        r0, r1 = shard.items[0] - split * S, shard.items[1] - split * S
        units = [self._unit(data, u, split) for u in unit_ranges(r0, r1, RUN_UNIT)]
        return {key: np.concatenate([u[key] for u in units]) for key in units[0]}

    def _unit(self, data: CorpusLists, runs: tuple[int, int], split: int
              ) -> dict[str, np.ndarray]:
        T = len(data.topics)
        r0, r1 = runs
        unit = r0 // RUN_UNIT
        out: dict[str, np.ndarray] = {}
        sets = {"full": data.full}
        key = {"full": 0, "A": 1 + 2 * split, "B": 2 + 2 * split}
        valid_both = None
        if self.config.validate:
            half_a, half_b = data.halves[split]
            sets.update(A=half_a, B=half_b)
            valid_both = (half_a.relevant[:T] > 0) & (half_b.relevant[:T] > 0)
        for name in self._subsets(split):
            ls = sets[name].take(r0 * T, r1 * T)
            ap = average_precision(ls)
            star = self._bootstrap(ls, key[name], unit)
            f = SubsetFields(name)
            iv = self._intervals(ls, ap, star, f)
            out[f.ap] = ap
            out.update(iv)
            if split == 0:  # MAP / L-MAP: split 0 (and the full corpus)
                mask = np.ones(T, bool) if name == "full" else valid_both
                out.update(self._means(ap, star, iv[f.sd_logit], r1 - r0, mask, f))
        return out

    # -- tables -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: CorpusLists
                 ) -> dict[str, pa.Table]:
        """``corpus_ci``, ``corpus_map``; with validation ``corpus_validation``,
        ``corpus_validation_summary``, ``corpus_split``, ``corpus_map_validation``,
        ``corpus_map_split``; with pairs ``corpus_meta``."""
        tables = {"corpus_ci": self._corpus_ci(merged, data)}
        maps, map_validation, map_split = self._map_tables(merged, data)
        tables["corpus_map"] = maps
        if self.config.validate:
            (tables["corpus_validation"], tables["corpus_validation_summary"],
             tables["corpus_split"]) = self._validation(merged, data)
            tables["corpus_map_validation"] = map_validation
            tables["corpus_map_split"] = map_split
        if len(data.systems) > 1 and (self.config.pairs is None or self.config.pairs):
            tables["corpus_meta"] = self._meta(merged, data)
        return tables

    @staticmethod
    def _ids(data: CorpusLists) -> tuple[np.ndarray, np.ndarray]:
        S, T = len(data.systems), len(data.topics)
        sys_ = np.repeat(np.asarray(data.systems, dtype=object), T)
        top = np.tile(np.asarray(data.topics, dtype=object), S)
        return sys_, top

    def _corpus_ci(self, L: dict[str, np.ndarray], data: CorpusLists) -> pa.Table:
        sys_, top = self._ids(data)
        f = SubsetFields("full")
        return pa.concat_tables([table("corpus_ci", {
            "system": sys_, "topic": top, "ap": L[f.ap], "lo": L[f.lo(m)],
            "hi": L[f.hi(m)], "method": [m] * len(sys_), "relevant": data.full.relevant,
            "se": L[f.se], "sd_logit": L[f.sd_logit],
        }) for m in self.interval_names])

    def _validation(self, L: dict[str, np.ndarray], data: CorpusLists
                    ) -> tuple[pa.Table, pa.Table, pa.Table]:
        """Per split, method, direction and subset the shares above / within / below; their
        summary over splits; the per-list table of split 0."""
        sys_, top = self._ids(data)
        n_lists = len(sys_)
        predicted = replication_within(self.level)
        labels = ("all", f"R>{self.config.r_threshold}")
        names = self.interval_names
        # counts[k, method, label, (above, within, below)] and lists[k, method, label],
        # both directions added
        counts = np.zeros((self._k, len(names), len(labels), 3), np.int64)
        rows, split = [], []
        for k in range(self._k):
            half = dict(zip("AB", data.halves[k], strict=True))
            part = slice(k * n_lists, (k + 1) * n_lists)
            for src, dst in (("A", "B"), ("B", "A")):
                r_src, r_dst = half[src].relevant, half[dst].relevant
                usable = (r_src > 0) & (r_dst > 0)
                fs = SubsetFields(src)
                ap_src, ap_dst = L[fs.ap][part], L[SubsetFields(dst).ap][part]
                for j, m in enumerate(names):
                    lo, hi = L[fs.lo(m)][part], L[fs.hi(m)][part]
                    base = m.removesuffix("_small_r")
                    pred = predicted if base in ("normal", "logit") else None
                    for i, sel in enumerate((usable, usable & (r_src > self.config.r_threshold))):
                        c = classify(ap_dst[sel], lo[sel], hi[sel], m)
                        counts[k, j, i] += c
                        n = int(sel.sum())
                        above, within, below = c
                        rows.append({"split": k, "method": m,
                                     "subset": f"{src}->{dst} {labels[i]}",
                                     "above": above / n if n else None,
                                     "within": within / n if n else None,
                                     "below": below / n if n else None,
                                     "predicted_within": pred, "lists": n})
                    if k:
                        continue
                    idx = np.flatnonzero(usable)
                    other = ap_dst[idx]
                    if m == "logit":  # compared on the interval's scale (see classify)
                        other = np.clip(other, LOGIT_EPS, 1.0 - LOGIT_EPS)
                    split.append(table("corpus_split", {
                        "direction": [f"{src}->{dst}"] * len(idx), "system": sys_[idx],
                        "topic": top[idx], "relevant": r_src[idx], "ap_ci": ap_src[idx],
                        "ap_other": ap_dst[idx], "method": [m] * len(idx), "lo": lo[idx],
                        "hi": hi[idx],
                        "normalised": normalised_difference(other, ap_src[idx], lo[idx],
                                                            hi[idx]),
                    }))
        return (table("corpus_validation", rows), self._summary(counts, labels, data.rel),
                pa.concat_tables(split))

    def _summary(self, counts: np.ndarray, labels: tuple[str, ...], rel: int) -> pa.Table:
        """``corpus_validation_summary``: per method and subset, the shares of each split
        (directions pooled) summarised over splits."""
        lists = counts.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(lists[..., None] > 0, counts / lists[..., None], np.nan)
        cols: dict[str, Any] = {}
        for c, what in enumerate(("above", "within", "below")):
            m, mean, sd, lo, hi = split_summary(shares[..., c], self.level)
            cols[what], cols[f"{what}_sd"] = mean, sd
            cols[f"{what}_lo"], cols[f"{what}_hi"] = lo, hi
            cols["splits"] = m
        M, G = lists.shape[1:]
        names = np.repeat(np.asarray(self.interval_names, dtype=object), G)
        predicted = replication_within(self.level)
        pred = [predicted if n.removesuffix("_small_r") in ("normal", "logit") else None
                for n in names]

        def flat(key: str) -> list:
            return [None if not np.isfinite(v) else float(v) for v in cols[key].reshape(-1)]

        return table("corpus_validation_summary", {
            "method": names, "subset": list(labels) * M,
            "splits": cols["splits"].reshape(-1).astype(np.int64),
            **{key: flat(key) for key in ("within", "within_sd", "within_lo", "within_hi",
                                          "above", "above_sd", "above_lo", "above_hi",
                                          "below", "below_sd", "below_lo", "below_hi")},
            "predicted_within": pred, "lists": lists.sum(axis=0).reshape(-1),
            "rel": [int(rel)] * (M * G),
        })

    def _map_tables(self, R: dict[str, np.ndarray], data: CorpusLists
                    ) -> tuple[pa.Table, pa.Table | None, pa.Table | None]:
        """MAP / L-MAP intervals; with validation also their counts and per-run values."""
        z = float(special.ndtri(0.5 + self.level / 2.0))
        kinds = [(measure, key, method, se) for measure, key in (("MAP", "map"),
                                                                 ("L-MAP", "lmap"))
                 for method, se in (("bootstrap", "boot"), ("parametric", "par"))]
        names = list(data.systems)
        S = len(names)
        f = SubsetFields("full")
        maps = pa.concat_tables([table("corpus_map", {
            "system": names, "measure": [measure] * S, "estimate": R[f.run(key)],
            "lo": R[f.run(key)] - z * R[f.run(key, se)],
            "hi": R[f.run(key)] + z * R[f.run(key, se)],
            "method": [method] * S, "se": R[f.run(key, se)],
        }) for measure, key, method, se in kinds])
        if not self.config.validate:
            return maps, None, None
        predicted = replication_within(self.level)
        rows, halves = [], []
        for src, dst in (("A", "B"), ("B", "A")):
            fs, fd = SubsetFields(src), SubsetFields(dst)
            for measure, key, method, se_kind in kinds:
                est, se, other = R[fs.run(key)], R[fs.run(key, se_kind)], R[fd.run(key)]
                ok = np.isfinite(est) & np.isfinite(other)
                above, within, below = classify(other[ok], (est - z * se)[ok],
                                                (est + z * se)[ok])
                n = int(ok.sum())
                rows.append({"measure": measure, "method": method, "subset": f"{src}->{dst}",
                             "above": above / n if n else None,
                             "within": within / n if n else None,
                             "below": below / n if n else None,
                             "predicted_within": predicted, "systems": n})
                halves.append(table("corpus_map_split", {
                    "direction": [f"{src}->{dst}"] * S, "system": names,
                    "measure": [measure] * S, "method": [method] * S, "estimate": est,
                    "lo": est - z * se, "hi": est + z * se, "other": other,
                }))
        return maps, table("corpus_map_validation", rows), pa.concat_tables(halves)

    def _meta(self, L: dict[str, np.ndarray], data: CorpusLists) -> pa.Table:
        """Per system pair: fixed- and random-effects combination over topics."""
        S, T = len(data.systems), len(data.topics)
        ia, ib = self._pairs(data)
        f = SubsetFields("full")
        lg = special.logit(np.clip(L[f.ap], LOGIT_EPS, 1.0 - LOGIT_EPS)).reshape(S, T)
        sd = L[f.sd_logit].reshape(S, T)
        d = lg[ia] - lg[ib]
        se = np.sqrt(sd[ia] ** 2 + sd[ib] ** 2)
        names = np.asarray(data.systems, dtype=object)
        results = [fixed_effect(d, se, confidence_level=self.level),
                   random_effects(d, se, confidence_level=self.level)]

        def pairwise(get) -> np.ndarray:  # rows: pair-major, fixed then random
            return np.stack([np.atleast_1d(get(r)) for r in results], axis=1).reshape(-1)

        cols: dict[str, Any] = {
            "system_a": np.repeat(names[ia], 2), "system_b": np.repeat(names[ib], 2),
            "model": np.tile(np.array(["fixed", "random"], dtype=object), len(ia)),
        }
        for key, get in (("effect", lambda r: r.effect), ("se", lambda r: r.standard_error),
                         ("lo", lambda r: r.confidence_interval.low),
                         ("hi", lambda r: r.confidence_interval.high),
                         ("z", lambda r: r.statistic), ("p_value", lambda r: r.pvalue),
                         ("tau2", lambda r: r.tau2), ("q", lambda r: r.q),
                         ("i2", lambda r: r.i2)):
            cols[key] = pairwise(get)
        cols["topics"] = pairwise(lambda r: r.k)
        return table("corpus_meta", cols)
