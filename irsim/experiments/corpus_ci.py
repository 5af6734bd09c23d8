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
the qrels are split accordingly, intervals are built on one half and the AP of the other
half counted above / within / below; the parametric model predicts ``2 Phi(z/sqrt 2) - 1``
(0.834) within. Both directions, all topics and those with ``R > 5`` (R of the half the
interval comes from); lists where either half has no relevant document are left out.

MAP and L-MAP (mean logit AP) per run: ``bootstrap`` (sd of the corpus-bootstrap MAP*) and
``parametric`` (delta method from the per-topic logit sds), validated on the halves the
same way. Meta-analysis of ``d = logit(AP_x) - logit(AP_y)`` over topics for system pairs
(fixed effect and DerSimonian-Laird random effects, :mod:`irsim.stats.meta`), with
``sigma_d^2 = sd_x^2 + sd_y^2`` from the per-topic logit intervals.

Kernel units are blocks of 4 runs (all their topics); the draws of a unit and replicate
block of 32 are keyed by (seed, subset, unit, block), so results do not depend on shard
sizes or the executor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy import special

from irsim.data.collection import DocCollection
from irsim.engine.base import Partial, Shard, shard_grid
from irsim.errors import ConfigError, InputError, unknown_name
from irsim.experiments.common import aligned_block, check_choices, check_positive_int, unit_ranges
from irsim.sampling.corpus import CorpusSampler
from irsim.stats.ci import LOGIT_EPS, bootstrap_ci
from irsim.stats.corpus_ap import (
    ListSet,
    average_precision,
    corpus_acceleration,
    logit_sd_from_interval,
    map_parametric,
    replication_within,
    resampled_ap,
    small_r_correct,
)
from irsim.stats.meta import fixed_effect, random_effects

__all__ = [
    "CorpusLists",
    "CorpusCI",
    "METHODS",
    "RUN_UNIT",
    "CORPUS_BLOCK",
    "STREAM",
    "md5_half",
    "corpus_lists",
    "normalised_difference",
    "DESCRIPTION",
    "build",
    "report_sections",
]

#: Interval methods (``<method>_small_r`` are added when the correction is on).
METHODS = ("normal", "logit", "bca")
#: Runs per kernel unit: draws are keyed per unit, shards are whole units.
RUN_UNIT = 4
#: Replicates per keyed draw block (small: the closed form runs in cache-sized pieces).
CORPUS_BLOCK = 32
#: Random stream of the Poisson draws.
STREAM = "corpus_ci/poisson"
_SUBSETS = ("full", "A", "B")


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class CorpusLists:
    """The ranked lists of a document-level collection, for the full corpus and its halves.

    Lists are ordered run-major: list ``s * T + t`` is run ``systems[s]`` on topic
    ``topics[t]`` (empty if the run lacks the topic).

    Attributes
    ----------
    systems, topics : tuple of str
    full : ListSet
    half_a, half_b : ListSet or None
        The lists and qrels restricted to the documents of each half (None: no split).

    Examples
    --------
    >>> ls = ListSet(np.array([1]), np.array([0, 1, 1]), np.array([1, 2]), np.array([3, 3]))
    >>> CorpusLists(("run1",), ("401", "402"), ls).split
    False
    """

    systems: tuple[str, ...]
    topics: tuple[str, ...]
    full: ListSet
    half_a: ListSet | None = None
    half_b: ListSet | None = None

    @property
    def split(self) -> bool:
        """Whether the halves are present."""
        return self.half_a is not None and self.half_b is not None

    def describe(self) -> dict:
        """Summary for the manifest and the report header."""
        return {"metrics": ["AP"], "systems": len(self.systems), "topics": len(self.topics),
                "source": "ranked lists of the document-level collection (corpus resampling)",
                "split_corpus": self.split}


def md5_half(docnos: Sequence[str] | np.ndarray) -> np.ndarray:
    """True for documents of half A: the first bit of the MD5 digest of the docno (UTF-8)
    is 0 (Cormack & Lynam split TREC-6 "using an MD5 hash on the document identifier").

    Examples
    --------
    >>> md5_half(["FBIS3-1", "LA010189-0001", "d1-1", "d1-2"]).tolist()
    [True, True, False, True]
    """
    return np.fromiter((hashlib.md5(str(d).encode("utf-8")).digest()[0] < 128
                        for d in docnos), dtype=bool, count=len(docnos))


def _lists(group: np.ndarray, rank: np.ndarray, relevant: np.ndarray, n_lists: int,
           R: np.ndarray) -> ListSet:
    """A ListSet from rows (sorted by list, then rank) with 0-based ranks."""
    length = np.bincount(group, minlength=n_lists)
    hit = relevant
    starts = np.concatenate([[0], np.cumsum(np.bincount(group[hit], minlength=n_lists))])
    return ListSet(rank[hit] + 1, starts, R, length)


def corpus_lists(docs: DocCollection, *, rel: int = 1, split: bool = True) -> CorpusLists:
    """Rank every run's lists as trec_eval does and reduce them to :class:`ListSet`.

    Input is validated by :func:`irsim.metrics.evaluate` (duplicates, missing topics per
    ``docs.missing``, ...); its topic set is kept, minus topics without a relevant document
    (AP is undefined there). Ranking: score descending, ties by docno descending; lists
    cut at ``docs.depth``. Relevant: grade >= `rel`.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=2, topics=3, docs_per_topic=40, depth=30, seed=1)
    >>> cl = corpus_lists(DocCollection(runs, qrels, 30))
    >>> cl.systems, cl.topics, len(cl.full), int(cl.full.length.max())
    (('run1', 'run2'), ('1', '2', '3'), 6, 30)
    >>> bool((cl.half_a.length + cl.half_b.length == cl.full.length).all())
    True
    """
    from irsim.metrics import evaluate

    runs, qrels, depth = docs.runs, docs.qrels, docs.depth
    measure = "AP" if rel == 1 else f"AP(rel={rel})"
    matrix = evaluate(runs, qrels, [measure], depth=depth, missing=docs.missing)
    topics = np.asarray(matrix.topics, dtype=object)
    qtopic = pd.Categorical(np.asarray(qrels.topic, dtype=object), categories=topics).codes
    qgrade = np.asarray(qrels.grade, np.int64)
    is_rel = (qgrade >= rel) & (qtopic >= 0)
    R_topic = np.bincount(qtopic[is_rel], minlength=len(topics))
    keep_topic = R_topic > 0
    if not keep_topic.any():
        raise InputError("no topic has a relevant document: AP is undefined everywhere",
                         file=qrels.source or "qrels")
    remap = np.cumsum(keep_topic) - 1
    topics, R_topic = topics[keep_topic], R_topic[keep_topic]
    T, S = len(topics), len(runs.names)

    tcode = pd.Categorical(np.asarray(runs.topic, dtype=object), categories=topics).codes
    dcode, vocab = runs.docno_codes()
    run = np.asarray(runs.run, np.int64)
    score = np.asarray(runs.score, np.float64)
    rows = np.flatnonzero(tcode >= 0)
    run, tc, dc, score = run[rows], tcode[rows].astype(np.int64), dcode[rows], score[rows]
    order = np.lexsort((-dc, -score, tc, run))
    run, tc, dc = run[order], tc[order], dc[order]
    group = run * T + tc
    head = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    rank = np.arange(len(group)) - np.repeat(head, np.diff(np.append(head, len(group))))
    if depth is not None:
        cut = rank < depth
        group, rank, tc, dc = group[cut], rank[cut], tc[cut], dc[cut]

    # grades of the retrieved documents; relevant counts per topic (and per half)
    qdoc = np.asarray(qrels.docno, dtype=object)
    qd = pd.Index(vocab).get_indexer(qdoc)
    qt = np.where(qtopic >= 0, remap[np.maximum(qtopic, 0)], -1)
    qt[(qtopic >= 0) & ~keep_topic[np.maximum(qtopic, 0)]] = -1
    V = max(len(vocab), 1)
    ok = (qd >= 0) & (qt >= 0)
    qkey = qt[ok] * V + qd[ok]
    qorder = np.argsort(qkey)
    qkey, qrel = qkey[qorder], is_rel[ok][qorder]
    key = tc * V + dc
    pos = np.minimum(np.searchsorted(qkey, key), max(len(qkey) - 1, 0))
    relevant = (qkey[pos] == key) & qrel[pos] if len(qkey) else np.zeros(len(key), bool)

    n_lists = S * T
    full = _lists(group, rank, relevant, n_lists, np.tile(R_topic, S))
    if not split:
        return CorpusLists(tuple(runs.names), tuple(topics), full)

    in_a_vocab = md5_half(vocab)
    in_a_q = md5_half(qdoc)
    halves = []
    for want in (True, False):
        mine = in_a_vocab[dc] == want
        g = group[mine]
        hd = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]])) if len(g) else \
            np.zeros(0, np.int64)
        r = np.arange(len(g)) - np.repeat(hd, np.diff(np.append(hd, len(g))))
        rel_half = is_rel & (in_a_q == want) & (qt >= 0)
        R_half = np.bincount(qt[rel_half], minlength=T)
        halves.append(_lists(g, r, relevant[mine], n_lists, np.tile(R_half, S)))
    return CorpusLists(tuple(runs.names), tuple(topics), full, halves[0], halves[1])


# ----------------------------------------------------------------------------- helpers


def normalised_difference(ap_other: np.ndarray, ap: np.ndarray, low: np.ndarray,
                          high: np.ndarray) -> np.ndarray:
    """``AP_other - AP`` scaled so that the interval ``[low, high]`` maps to ``[-1, 1]`` with
    ``AP`` at 0 (Cormack & Lynam's Figures 1-2): ``d / (high - AP)`` above, ``d / (AP -
    low)`` below. ``AP`` is first clipped into the interval (a logit interval of AP = 0 does
    not contain 0), so ``|x| <= 1`` exactly when ``AP_other`` is within; ``+-inf`` beyond a
    zero-width side, 0 when equal.

    Examples
    --------
    >>> normalised_difference(np.array([0.5, 0.1, 0.3]), np.array([0.3] * 3),
    ...                       np.array([0.2] * 3), np.array([0.4] * 3)).round(3).tolist()
    [2.0, -2.0, 0.0]
    >>> normalised_difference(np.array([0.0]), np.array([0.0]), np.array([1e-5]),
    ...                       np.array([2e-5])).tolist()
    [-inf]
    """
    centre = np.clip(ap, low, high)
    d = ap_other - centre
    with np.errstate(divide="ignore", invalid="ignore"):
        up = d / (high - centre)
        down = d / (centre - low)
    return np.where(d > 0, up, np.where(d < 0, down, 0.0))


def _classify(value: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[int, int, int]:
    above = int(np.count_nonzero(value > high))
    below = int(np.count_nonzero(value < low))
    return above, len(value) - above - below, below


# ----------------------------------------------------------------------------- study


@dataclass(frozen=True)
class CorpusCI:
    """The corpus-resampling CI study (Cormack & Lynam 2006).

    Parameters
    ----------
    B : int
        Corpus bootstrap replicates (the paper: 2000).
    alpha : float
        Intervals at level ``1 - alpha`` (0.05: z = 1.96).
    methods : sequence of str
        Any of ``normal``, ``logit``, ``bca``.
    small_r : bool
        Also report every method with the small-R correction (``<method>_small_r``).
    validate : bool
        Split-corpus validation (needs the halves in the data).
    r_threshold : int
        The "large R" validation subset is ``R > r_threshold`` (the paper: 5).
    pairs : sequence of (str, str), optional
        System pairs for the meta-analysis; None: every pair.
    seed : int
    shard_runs : int
        Runs per shard (rounded up to a multiple of 4); does not change any result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> from irsim.engine import run_study
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> data = corpus_lists(DocCollection(runs, qrels, 40))
    >>> tables, _ = run_study(CorpusCI(B=100, seed=1), data)
    >>> tables["corpus_ci"].column_names[:6]
    ['system', 'topic', 'ap', 'lo', 'hi', 'method']
    >>> tables["corpus_ci"].num_rows        # 12 lists x 6 methods
    72
    """

    B: int = 2000
    alpha: float = 0.05
    methods: tuple[str, ...] = METHODS
    small_r: bool = True
    validate: bool = True
    r_threshold: int = 5
    pairs: tuple[tuple[str, str], ...] | None = None
    seed: int = 0
    shard_runs: int = 4
    name: str = field(default="corpus_ci", init=False)

    def __post_init__(self) -> None:
        methods = check_choices(self.methods, METHODS, "CI method for experiment=corpus_ci",
                                "experiment.methods")
        object.__setattr__(self, "methods", methods)
        object.__setattr__(self, "B", check_positive_int(self.B, "experiment.B"))
        if self.B < 2:
            raise ConfigError("experiment.B must be >= 2")
        try:
            alpha = float(self.alpha)
        except (TypeError, ValueError):
            raise ConfigError(f"experiment.alpha must be a number in (0, 1), got "
                              f"{self.alpha!r}") from None
        if not 0.0 < alpha < 1.0:
            raise ConfigError(f"experiment.alpha must be inside (0, 1), got {alpha}")
        object.__setattr__(self, "alpha", alpha)
        if isinstance(self.r_threshold, bool) or int(self.r_threshold) != self.r_threshold:
            raise ConfigError(f"experiment.r_threshold must be an integer, got "
                              f"{self.r_threshold!r}")
        object.__setattr__(self, "r_threshold", int(self.r_threshold))
        if self.pairs is not None:
            pairs = tuple((str(a), str(b)) for a, b in self.pairs)
            object.__setattr__(self, "pairs", pairs)
        check_positive_int(self.shard_runs, "engine.shard_pairs")

    @property
    def interval_names(self) -> tuple[str, ...]:
        """Method names in the tables (with the ``_small_r`` variants)."""
        extra = tuple(f"{m}_small_r" for m in self.methods) if self.small_r else ()
        return self.methods + extra

    @property
    def level(self) -> float:
        """The confidence level ``1 - alpha``."""
        return 1.0 - self.alpha

    # -- plan ---------------------------------------------------------------------------
    def _pairs(self, data: CorpusLists) -> tuple[np.ndarray, np.ndarray]:
        names = {s: i for i, s in enumerate(data.systems)}
        if self.pairs is None:
            a, b = np.triu_indices(len(data.systems), 1)
            return a.astype(np.int64), b.astype(np.int64)
        out = []
        for x, y in self.pairs:
            for s in (x, y):
                if s not in names:
                    raise unknown_name("system in experiment.pairs", s, data.systems)
            out.append((names[x], names[y]))
        arr = np.array(out, np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def plan(self, data: CorpusLists) -> list[Shard]:
        """Blocks of whole 4-run units (no replicate split: intervals need all of B)."""
        if self.validate and not data.split:
            raise ConfigError("experiment.validate needs the split halves of the corpus")
        self._pairs(data)
        return shard_grid(len(data.systems), aligned_block(self.shard_runs, RUN_UNIT), 0, 1)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in ("B", "alpha", "methods", "small_r", "validate",
                                             "r_threshold", "pairs", "seed")}

    # -- kernel -------------------------------------------------------------------------
    def _bootstrap(self, lists: ListSet, subset: int, unit: int) -> np.ndarray:
        """(N, B) AP* of the lists of one unit."""
        sampler = CorpusSampler(lists.gaps(), lists.missing())
        star = np.empty((len(lists), self.B))
        for b0 in range(0, self.B, CORPUS_BLOCK):  # replicate blocks (cache-sized)
            b1 = min(self.B, b0 + CORPUS_BLOCK)
            draws = sampler.draws(self.seed, STREAM, b0, b1, key=(subset, unit),
                                  block=CORPUS_BLOCK)
            star[:, b0:b1] = resampled_ap(lists, draws).T
        return star

    def _intervals(self, lists: ListSet, ap: np.ndarray, star: np.ndarray
                   ) -> dict[str, np.ndarray]:
        """Per list: every interval, the bootstrap sd and the logit-model sd."""
        out: dict[str, np.ndarray] = {}
        acc = corpus_acceleration(lists) if "bca" in self.methods else None
        for m in dict.fromkeys((*self.methods, "logit")):
            res = bootstrap_ci(ap, star, method=m, confidence_level=self.level,
                               acceleration=acc if m == "bca" else None)
            lo = np.asarray(res.confidence_interval.low, np.float64).reshape(-1)
            hi = np.asarray(res.confidence_interval.high, np.float64).reshape(-1)
            if m in self.methods:
                out[f"lo_{m}"], out[f"hi_{m}"] = lo, hi
            out["se"] = np.asarray(res.standard_error, np.float64).reshape(-1)
            if self.small_r:
                clo, chi = small_r_correct(ap, lo, hi, lists.relevant, lists.length,
                                           self.alpha)
                if m in self.methods:
                    out[f"lo_{m}_small_r"], out[f"hi_{m}_small_r"] = clo, chi
                if m == "logit":
                    lo, hi = clo, chi
            if m == "logit":
                out["sd_logit"] = logit_sd_from_interval(lo, hi, self.level, LOGIT_EPS)
        return out

    def _means(self, ap: np.ndarray, star: np.ndarray, sd_logit: np.ndarray, runs: int,
               mask: np.ndarray) -> dict[str, np.ndarray]:
        """Per run: MAP and L-MAP with bootstrap and parametric standard errors, over the
        topics in `mask`."""
        T = len(mask)
        a = ap.reshape(runs, T)[:, mask]
        s = star.reshape(runs, T, -1)[:, mask]
        sd = sd_logit.reshape(runs, T)[:, mask]
        out: dict[str, np.ndarray] = {}
        if not mask.any():
            nan = np.full(runs, np.nan)
            return {k: nan for k in ("map", "map_se_boot", "map_se_par", "lmap",
                                     "lmap_se_boot", "lmap_se_par")}
        m, se_map, lm, se_lmap = map_parametric(a, sd, eps=LOGIT_EPS)
        out["map"], out["map_se_par"], out["lmap"], out["lmap_se_par"] = m, se_map, lm, se_lmap
        map_star = s.mean(axis=1)
        lmap_star = special.logit(np.clip(s, LOGIT_EPS, 1.0 - LOGIT_EPS)).mean(axis=1)
        out["map_se_boot"] = bootstrap_ci(m, map_star, method="normal").standard_error
        out["lmap_se_boot"] = bootstrap_ci(lm, lmap_star, method="normal").standard_error
        return {k: np.asarray(v, np.float64).reshape(-1) for k, v in out.items()}

    def kernel(self, shard: Shard, data: CorpusLists) -> Partial:
        """Per-list intervals (full corpus and halves) and per-run means of some units."""
        units = [self._unit(data, u) for u in unit_ranges(*shard.items, RUN_UNIT)]
        return {key: np.concatenate([u[key] for u in units]) for key in units[0]}

    def _unit(self, data: CorpusLists, runs: tuple[int, int]) -> Partial:
        T = len(data.topics)
        r0, r1 = runs
        unit = r0 // RUN_UNIT
        out: Partial = {}
        subsets = [("full", data.full)]
        if self.validate:
            subsets += [("A", data.half_a), ("B", data.half_b)]
        valid_both = None
        if self.validate:
            ra = data.half_a.relevant[:T]
            rb = data.half_b.relevant[:T]
            valid_both = (ra > 0) & (rb > 0)
        for name, ls_all in subsets:
            sid = _SUBSETS.index(name)
            ls = ls_all.take(r0 * T, r1 * T)
            ap = average_precision(ls)
            star = self._bootstrap(ls, sid, unit)
            iv = self._intervals(ls, ap, star)
            prefix = "" if name == "full" else f"{name}_"
            out[f"{prefix}ap"] = ap
            for k, v in iv.items():
                out[f"{prefix}{k}"] = v
            mask = np.ones(T, bool) if name == "full" else valid_both
            for k, v in self._means(ap, star, iv["sd_logit"], r1 - r0, mask).items():
                out[f"run_{prefix}{k}"] = v
        return out

    def reducer(self, data: CorpusLists) -> _CorpusReducer:
        """A fresh reducer."""
        return _CorpusReducer(self, data)


class _CorpusReducer:
    """Per-list and per-run arrays placed by shard; tables and counts at the end."""

    def __init__(self, study: CorpusCI, data: CorpusLists):
        self.study = study
        self.data = data
        self.lists: dict[str, np.ndarray] = {}
        self.runs: dict[str, np.ndarray] = {}

    def combine(self, shard: Shard, partial: Partial) -> None:
        T = len(self.data.topics)
        S = len(self.data.systems)
        r0, r1 = shard.items
        for key, arr in partial.items():
            if key.startswith("run_"):
                dest = self.runs.setdefault(key[4:], np.full(S, np.nan))
                dest[r0:r1] = arr
            else:
                dest = self.lists.setdefault(key, np.full(S * T, np.nan))
                dest[r0 * T:r1 * T] = arr

    # -- tables -------------------------------------------------------------------------
    def _ids(self) -> tuple[np.ndarray, np.ndarray]:
        S, T = len(self.data.systems), len(self.data.topics)
        sys_ = np.repeat(np.asarray(self.data.systems, dtype=object), T)
        top = np.tile(np.asarray(self.data.topics, dtype=object), S)
        return sys_, top

    def _corpus_ci(self) -> pa.Table:
        sys_, top = self._ids()
        L = self.lists
        parts = []
        for m in self.study.interval_names:
            parts.append(pa.table({
                "system": pa.array(sys_, pa.string()), "topic": pa.array(top, pa.string()),
                "ap": pa.array(L["ap"], pa.float64()),
                "lo": pa.array(L[f"lo_{m}"], pa.float64()),
                "hi": pa.array(L[f"hi_{m}"], pa.float64()),
                "method": pa.array([m] * len(sys_), pa.string()),
                "relevant": pa.array(self.data.full.relevant, pa.int64()),
                "se": pa.array(L["se"], pa.float64()),
                "sd_logit": pa.array(L["sd_logit"], pa.float64()),
            }))
        return pa.concat_tables(parts)

    def _validation(self) -> tuple[pa.Table, pa.Table]:
        s, data, L = self.study, self.data, self.lists
        sys_, top = self._ids()
        predicted = replication_within(s.level)
        rows, split = [], []
        for src, dst in (("A", "B"), ("B", "A")):
            r_src = (data.half_a if src == "A" else data.half_b).relevant
            r_dst = (data.half_b if src == "A" else data.half_a).relevant
            usable = (r_src > 0) & (r_dst > 0)
            ap_src, ap_dst = L[f"{src}_ap"], L[f"{dst}_ap"]
            for m in s.interval_names:
                lo, hi = L[f"{src}_lo_{m}"], L[f"{src}_hi_{m}"]
                base = m.removesuffix("_small_r")
                pred = predicted if base in ("normal", "logit") else None
                for label, sel in (("all", usable), (f"R>{s.r_threshold}",
                                                     usable & (r_src > s.r_threshold))):
                    above, within, below = _classify(ap_dst[sel], lo[sel], hi[sel])
                    n = int(sel.sum())
                    rows.append({"method": m, "subset": f"{src}->{dst} {label}",
                                 "above": above / n if n else None,
                                 "within": within / n if n else None,
                                 "below": below / n if n else None,
                                 "predicted_within": pred, "lists": n})
                idx = np.flatnonzero(usable)
                split.append(pa.table({
                    "direction": pa.array([f"{src}->{dst}"] * len(idx), pa.string()),
                    "system": pa.array(sys_[idx], pa.string()),
                    "topic": pa.array(top[idx], pa.string()),
                    "relevant": pa.array(r_src[idx], pa.int64()),
                    "ap_ci": pa.array(ap_src[idx], pa.float64()),
                    "ap_other": pa.array(ap_dst[idx], pa.float64()),
                    "method": pa.array([m] * len(idx), pa.string()),
                    "lo": pa.array(lo[idx], pa.float64()),
                    "hi": pa.array(hi[idx], pa.float64()),
                    "normalised": pa.array(normalised_difference(ap_dst[idx], ap_src[idx],
                                                                 lo[idx], hi[idx]),
                                           pa.float64()),
                }))
        schema = pa.schema([("method", pa.string()), ("subset", pa.string()),
                            ("above", pa.float64()), ("within", pa.float64()),
                            ("below", pa.float64()), ("predicted_within", pa.float64()),
                            ("lists", pa.int64())])
        return pa.Table.from_pylist(rows, schema=schema), pa.concat_tables(split)

    def _map_tables(self) -> tuple[pa.Table, pa.Table | None, pa.Table | None]:
        """MAP / L-MAP intervals; with validation also their counts and per-run values."""
        s, R = self.study, self.runs
        z = float(special.ndtri(0.5 + s.level / 2.0))
        kinds = [(measure, key, method, se_key) for measure, key in (("MAP", "map"),
                                                                     ("L-MAP", "lmap"))
                 for method, se_key in (("bootstrap", "se_boot"), ("parametric", "se_par"))]
        names = list(self.data.systems)
        S = len(names)
        parts = []
        for measure, key, method, se_key in kinds:
            est, se = R[key], R[f"{key}_{se_key}"]
            parts.append(pa.table({
                "system": pa.array(names, pa.string()),
                "measure": pa.array([measure] * S, pa.string()),
                "estimate": pa.array(est, pa.float64()),
                "lo": pa.array(est - z * se, pa.float64()),
                "hi": pa.array(est + z * se, pa.float64()),
                "method": pa.array([method] * S, pa.string()),
                "se": pa.array(se, pa.float64()),
            }))
        maps = pa.concat_tables(parts)
        if not s.validate:
            return maps, None, None
        predicted = replication_within(s.level)
        rows, halves = [], []
        for src, dst in (("A", "B"), ("B", "A")):
            for measure, key, method, se_key in kinds:
                est, se, other = R[f"{src}_{key}"], R[f"{src}_{key}_{se_key}"], R[f"{dst}_{key}"]
                ok = np.isfinite(est) & np.isfinite(other)
                above, within, below = _classify(other[ok], (est - z * se)[ok],
                                                 (est + z * se)[ok])
                n = int(ok.sum())
                rows.append({"measure": measure, "method": method, "subset": f"{src}->{dst}",
                             "above": above / n if n else None,
                             "within": within / n if n else None,
                             "below": below / n if n else None,
                             "predicted_within": predicted, "systems": n})
                halves.append(pa.table({
                    "direction": pa.array([f"{src}->{dst}"] * S, pa.string()),
                    "system": pa.array(names, pa.string()),
                    "measure": pa.array([measure] * S, pa.string()),
                    "method": pa.array([method] * S, pa.string()),
                    "estimate": pa.array(est, pa.float64()),
                    "lo": pa.array(est - z * se, pa.float64()),
                    "hi": pa.array(est + z * se, pa.float64()),
                    "other": pa.array(other, pa.float64()),
                }))
        schema = pa.schema([("measure", pa.string()), ("method", pa.string()),
                            ("subset", pa.string()), ("above", pa.float64()),
                            ("within", pa.float64()), ("below", pa.float64()),
                            ("predicted_within", pa.float64()), ("systems", pa.int64())])
        return maps, pa.Table.from_pylist(rows, schema=schema), pa.concat_tables(halves)

    def _meta(self) -> pa.Table:
        """Per system pair: fixed- and random-effects combination over topics."""
        s, data, L = self.study, self.data, self.lists
        S, T = len(data.systems), len(data.topics)
        ia, ib = s._pairs(data)
        lg = special.logit(np.clip(L["ap"], LOGIT_EPS, 1.0 - LOGIT_EPS)).reshape(S, T)
        sd = L["sd_logit"].reshape(S, T)
        d = lg[ia] - lg[ib]
        se = np.sqrt(sd[ia] ** 2 + sd[ib] ** 2)
        names = np.asarray(data.systems, dtype=object)
        results = [("fixed", fixed_effect(d, se, confidence_level=s.level)),
                   ("random", random_effects(d, se, confidence_level=s.level))]

        def pairwise(get) -> np.ndarray:  # rows: pair-major, fixed then random
            return np.stack([np.atleast_1d(get(r)) for _, r in results], axis=1).reshape(-1)

        cols = {
            "system_a": pa.array(np.repeat(names[ia], 2), pa.string()),
            "system_b": pa.array(np.repeat(names[ib], 2), pa.string()),
            "model": pa.array(np.tile(np.array(["fixed", "random"], dtype=object), len(ia)),
                              pa.string()),
        }
        for key, get in (("effect", lambda r: r.effect), ("se", lambda r: r.standard_error),
                         ("lo", lambda r: r.confidence_interval.low),
                         ("hi", lambda r: r.confidence_interval.high),
                         ("z", lambda r: r.statistic), ("p_value", lambda r: r.pvalue),
                         ("tau2", lambda r: r.tau2), ("q", lambda r: r.q),
                         ("i2", lambda r: r.i2)):
            cols[key] = pa.array(pairwise(get), pa.float64())
        cols["topics"] = pa.array(pairwise(lambda r: r.k), pa.int64())
        return pa.table(cols)

    def finalize(self) -> dict[str, pa.Table]:
        tables = {"corpus_ci": self._corpus_ci()}
        maps, map_validation, map_split = self._map_tables()
        tables["corpus_map"] = maps
        if self.study.validate:
            tables["corpus_validation"], tables["corpus_split"] = self._validation()
            tables["corpus_map_validation"] = map_validation
            tables["corpus_map_split"] = map_split
        if len(self.data.systems) > 1 and (self.study.pairs is None or self.study.pairs):
            tables["corpus_meta"] = self._meta()
        return tables


# ----------------------------------------------------------------------------- CLI hooks


DESCRIPTION = ("confidence intervals for AP under corpus resampling (closed form), small-R "
               "correction, split-corpus validation, MAP/L-MAP intervals, meta-analysis "
               "(Cormack & Lynam 2006)")


def build(cfg: Any) -> tuple[CorpusCI, CorpusLists]:
    """The study of the ``experiment`` config node on a document-level collection."""
    from irsim.experiments.loading import doc_collection

    e = cfg.experiment
    validate = bool(e.get("validate", True))
    data = corpus_lists(doc_collection(cfg), rel=int(e.get("rel", 1)), split=validate)
    pairs = e.get("pairs")
    methods = e.get("methods", METHODS)
    study = CorpusCI(
        B=e.get("B", 2000),
        alpha=e.get("alpha", 0.05),
        methods=(methods,) if isinstance(methods, str) else tuple(methods),
        small_r=bool(e.get("small_r", True)),
        validate=validate,
        r_threshold=e.get("r_threshold", 5),
        pairs=None if pairs is None else tuple(tuple(p) for p in pairs),
        seed=cfg.seed,
        shard_runs=int(e.get("shard_runs", RUN_UNIT)),
    )
    return study, data


def report_sections(tables: dict, run_dir) -> list[str]:
    """Validation tables, MAP intervals, meta-analysis and the plots for report.md."""
    from pathlib import Path

    from irsim.report import markdown_table
    from irsim.report.corpus_ci import map_interval_plot, normalised_difference_plot

    run_dir = Path(run_dir)
    lines: list[str] = ["## Corpus-resampling confidence intervals for AP", ""]
    if "corpus_ci" in tables:
        ci = tables["corpus_ci"].to_pandas()
        first = ci[ci.method == ci.method.iloc[0]]
        lines += [f"{first.system.nunique()} runs x {first.topic.nunique()} topics with a "
                  f"relevant document ({len(first)} ranked lists; R from "
                  f"{int(first.relevant.min())} to {int(first.relevant.max())}).", ""]
        summ = ci.assign(width=ci.hi - ci.lo).groupby("method", sort=False).agg(
            lists=("ap", "size"), mean_ap=("ap", "mean"), mean_width=("width", "mean"))
        lines += ["Intervals per run x topic (`results/corpus_ci.parquet`) at the level "
                  "configured; `_small_r`: with the silver-bullet / lead-balloon correction. "
                  "Mean width by method:", "",
                  markdown_table(pa.Table.from_pandas(summ.reset_index())), ""]
    if "corpus_validation" in tables:
        lines += ["### Split-corpus validation", "",
                  "Intervals from one half of the corpus (documents split by MD5 of the "
                  "docno), AP of the other half above / within / below. The parametric model "
                  "predicts `predicted_within` (2 Phi(z/sqrt 2) - 1 = 0.834 at 95%) and equal "
                  "shares above and below (Cormack & Lynam's Tables 1-2: logit with the "
                  "small-R correction 8.5% / 83.6% / 7.9%).", "",
                  markdown_table(tables["corpus_validation"], max_rows=60), ""]
        for path in normalised_difference_plot(tables["corpus_split"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    if "corpus_map_validation" in tables:
        lines += ["### MAP and L-MAP", "",
                  "Intervals for MAP and L-MAP (mean logit AP) by the corpus bootstrap and by "
                  "the parametric delta method, validated on the halves (the paper's Tables "
                  "3-4).", "", markdown_table(tables["corpus_map_validation"]), ""]
        for path in map_interval_plot(tables["corpus_map_split"], run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    if "corpus_meta" in tables:
        meta = tables["corpus_meta"]
        lines += ["### Meta-analysis of logit(AP_x) - logit(AP_y)", "",
                  "Per system pair, topics combined as separate experiments (fixed effect and "
                  "DerSimonian-Laird random effects); first rows:", "",
                  markdown_table(meta, max_rows=12), ""]
    return lines
