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
half has no relevant document are left out.

MAP and L-MAP (mean logit AP) per run: ``bootstrap`` (sd of the corpus-bootstrap MAP*) and
``parametric`` (delta method from the per-topic logit sds), validated on the halves the
same way. Meta-analysis of ``d = logit(AP_x) - logit(AP_y)`` over topics for system pairs
(fixed effect and DerSimonian-Laird random effects, :mod:`irsim.stats.meta`), with
``sigma_d^2 = sd_x^2 + sd_y^2`` from the per-topic logit intervals.

Shards are blocks of runs (``engine.shard_items``, default 4, rounded up to a multiple of
4); replicates are not split (an interval needs all ``B``). Kernel units are blocks of 4 runs
(all their topics); the draws of a unit and replicate block of 32 are keyed by (seed,
subset, unit, block), so results do not depend on shard sizes or the executor. A shard's
per-list and per-run arrays are placed into the whole (:class:`~irsim.engine.partials.Slab`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import special

from irsim.data.collection import DocCollection
from irsim.engine.base import Shard, shard_grid
from irsim.engine.partials import Slab
from irsim.errors import ConfigError, param, unknown_name
from irsim.experiments import Shards
from irsim.experiments.common import aligned_block, check_choices, check_positive_int, unit_ranges
from irsim.sampling.corpus import CorpusSampler
from irsim.stats.ci import LOGIT_EPS, bootstrap_ci
from irsim.stats.corpus_ap import (
    CorpusLists,
    ListSet,
    average_precision,
    corpus_acceleration,
    corpus_lists,
    logit_sd_from_interval,
    map_parametric,
    normalised_difference,
    replication_within,
    resampled_ap,
    small_r_correct,
)
from irsim.stats.meta import fixed_effect, random_effects
from irsim.tables import table

__all__ = ["DESCRIPTION", "DATA", "Config", "make", "CorpusCI", "METHODS", "RUN_UNIT",
           "CORPUS_BLOCK", "STREAM"]

DESCRIPTION = ("confidence intervals for AP under corpus resampling (closed form), small-R "
               "correction, split-corpus validation, MAP/L-MAP intervals, meta-analysis "
               "(Cormack & Lynam 2006)")
DATA = "docs"

#: Interval methods (``<method>_small_r`` are added when the correction is on).
METHODS = ("normal", "logit", "bca")
#: Runs per kernel unit: draws are keyed per unit, shards are whole units.
RUN_UNIT = 4
#: Replicates per keyed draw block (small: the closed form runs in cache-sized pieces).
CORPUS_BLOCK = 32
#: Random stream of the Poisson draws.
STREAM = "corpus_ci/poisson"
#: Corpus subsets (their index keys the draws) and the prefix of their fields.
_SUBSETS = ("full", "A", "B")
_PREFIX = {"full": "", "A": "A_", "B": "B_"}
#: Per-run fields of each subset: MAP and L-MAP with their two standard errors.
_RUN_KEYS = ("map", "map_se_boot", "map_se_par", "lmap", "lmap_se_boot", "lmap_se_par")


@dataclass
class Config:
    """Parameters of ``experiment=corpus_ci`` (Cormack & Lynam 2006).

    Parameters
    ----------
    B : int
        Corpus bootstrap replicates per run x topic (the paper: 2000; >= 2).
    alpha : float
        Intervals at level ``1 - alpha`` (0.05: z = 1.96, predicted within share 0.834).
    methods : str or list of str
        Any of ``normal`` (AP +- z sd), ``logit``, ``bca``.
    small_r : bool
        Also report every method with the small-R correction (``<method>_small_r``: silver
        bullets / lead balloons).
    validate : bool
        Split the corpus into halves A and B and count AP of one half in intervals from the
        other.
    r_threshold : int
        The "large R" validation subset is ``R > r_threshold`` (the paper: 5).
    rel : int
        Relevance threshold: grade >= `rel` is relevant.
    pairs : list of [str, str], optional
        System pairs for the meta-analysis, e.g. ``[[runA, runB], [runA, runC]]``; None:
        every pair.
    """

    name: str = "corpus_ci"
    B: int = 2000
    alpha: float = 0.05
    methods: Any = field(default_factory=lambda: list(METHODS))
    small_r: bool = True
    validate: bool = True
    r_threshold: int = 5
    rel: int = 1
    pairs: list[Any] | None = None


def make(config: Config, data: DocCollection, *, seed: int, shards: Shards
         ) -> tuple[CorpusCI, CorpusLists]:
    """The corpus-CI study of `config` and the ranked lists of `data` (runs and qrels) it
    reads: the full corpus and, with ``validate``, its two halves.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> study, lists = make(Config(B=100), DocCollection(runs, qrels, 40), seed=1,
    ...                     shards=Shards())
    >>> study.interval_names, lists.split, len(lists.full)
    (('normal', 'logit', 'bca', 'normal_small_r', 'logit_small_r', 'bca_small_r'), True, 12)
    """
    methods = check_choices(config.methods, METHODS, "CI method for experiment=corpus_ci",
                            param("methods"))
    B = check_positive_int(config.B, param("B"))
    if B < 2:
        raise ConfigError(f"{param('B')} must be >= 2")
    try:
        alpha = float(config.alpha)
    except (TypeError, ValueError):
        raise ConfigError(f"{param('alpha')} must be a number in (0, 1), got "
                          f"{config.alpha!r}") from None
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"{param('alpha')} must be inside (0, 1), got {alpha}")
    r_threshold = config.r_threshold
    if isinstance(r_threshold, bool) or int(r_threshold) != r_threshold:
        raise ConfigError(f"{param('r_threshold')} must be an integer, got {r_threshold!r}")
    pairs = None if config.pairs is None else tuple((str(a), str(b)) for a, b in config.pairs)
    shard_runs, _ = shards.get(RUN_UNIT, B)  # replicates are not split
    shard_runs = check_positive_int(shard_runs, param("shard_items", "engine"))
    validate = bool(config.validate)
    study = CorpusCI(B=B, alpha=alpha, methods=methods, small_r=bool(config.small_r),
                     validate=validate, r_threshold=int(r_threshold), pairs=pairs,
                     seed=int(seed), shard_items=shard_runs)
    lists = corpus_lists(data, rel=int(config.rel), split=validate)
    study.check(lists)
    return study, lists


def _classify(value: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[int, int, int]:
    above = int(np.count_nonzero(value > high))
    below = int(np.count_nonzero(value < low))
    return above, len(value) - above - below, below


@dataclass(frozen=True)
class CorpusCI:
    """The corpus-resampling CI study (Cormack & Lynam 2006).

    Parameters
    ----------
    B, alpha, methods, small_r, validate, r_threshold, pairs
        As :class:`Config`, checked and normalised by :func:`make` (tuples; `pairs` as
        ``(system, system)`` tuples).
    seed : int
    shard_items : int
        Runs per shard (rounded up to a multiple of 4); does not change any result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> from irsim.engine import run_study
    >>> runs, qrels = synthetic_trec(runs=3, topics=4, docs_per_topic=60, depth=40, seed=2)
    >>> study, lists = make(Config(B=100), DocCollection(runs, qrels, 40), seed=1,
    ...                     shards=Shards())
    >>> tables, _ = run_study(study, lists)
    >>> tables["corpus_ci"].column_names[:6]
    ['system', 'topic', 'ap', 'lo', 'hi', 'method']
    >>> tables["corpus_ci"].num_rows        # 12 lists x 6 methods
    72
    """

    B: int
    alpha: float
    methods: tuple[str, ...]
    small_r: bool
    validate: bool
    r_threshold: int
    pairs: tuple[tuple[str, str], ...] | None
    seed: int
    shard_items: int
    name: str = field(default="corpus_ci", init=False)

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
                    raise unknown_name(f"system in {param('pairs')}", s, data.systems)
            out.append((names[x], names[y]))
        arr = np.array(out, np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def check(self, data: CorpusLists) -> None:
        """Refuse data the parameters do not fit (halves missing, unknown systems)."""
        if self.validate and not data.split:
            raise ConfigError(f"{param('validate')} needs the split halves of the corpus")
        self._pairs(data)

    def plan(self, data: CorpusLists) -> list[Shard]:
        """Blocks of whole 4-run units (no replicate split: intervals need all of B)."""
        self.check(data)
        return shard_grid(len(data.systems), aligned_block(self.shard_items, RUN_UNIT), 0, 1)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {k: getattr(self, k) for k in ("B", "alpha", "methods", "small_r", "validate",
                                             "r_threshold", "pairs", "seed")}

    def _subsets(self) -> tuple[str, ...]:
        return _SUBSETS if self.validate else _SUBSETS[:1]

    def fields(self, data: CorpusLists) -> dict[str, Slab]:
        """Per subset (full corpus, halves A and B): per-list AP, standard errors and
        interval limits (``[A_|B_]lo_<method>``...), and per-run MAP / L-MAP."""
        S, T = len(data.systems), len(data.topics)
        per_list = Slab((S * T,), along="items", per=T)
        per_run = Slab((S,), along="items")
        list_keys = ["ap", "se", "sd_logit", *(f"{side}_{m}" for m in self.interval_names
                                               for side in ("lo", "hi"))]
        out: dict[str, Slab] = {}
        for subset in self._subsets():
            prefix = _PREFIX[subset]
            out.update({prefix + k: per_list for k in list_keys})
            out.update({prefix + k: per_run for k in _RUN_KEYS})
        return out

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
            return {k: nan for k in _RUN_KEYS}
        m, se_map, lm, se_lmap = map_parametric(a, sd, eps=LOGIT_EPS)
        out["map"], out["map_se_par"], out["lmap"], out["lmap_se_par"] = m, se_map, lm, se_lmap
        map_star = s.mean(axis=1)
        lmap_star = special.logit(np.clip(s, LOGIT_EPS, 1.0 - LOGIT_EPS)).mean(axis=1)
        out["map_se_boot"] = bootstrap_ci(m, map_star, method="normal").standard_error
        out["lmap_se_boot"] = bootstrap_ci(lm, lmap_star, method="normal").standard_error
        return {k: np.asarray(v, np.float64).reshape(-1) for k, v in out.items()}

    def kernel(self, shard: Shard, data: CorpusLists) -> dict[str, np.ndarray]:
        """Per-list intervals (full corpus and halves) and per-run means of some units."""
        units = [self._unit(data, u) for u in unit_ranges(*shard.items, RUN_UNIT)]
        return {key: np.concatenate([u[key] for u in units]) for key in units[0]}

    def _unit(self, data: CorpusLists, runs: tuple[int, int]) -> dict[str, np.ndarray]:
        T = len(data.topics)
        r0, r1 = runs
        unit = r0 // RUN_UNIT
        out: dict[str, np.ndarray] = {}
        sets = {"full": data.full, "A": data.half_a, "B": data.half_b}
        valid_both = None
        if self.validate:
            ra = data.half_a.relevant[:T]
            rb = data.half_b.relevant[:T]
            valid_both = (ra > 0) & (rb > 0)
        for name in self._subsets():
            ls = sets[name].take(r0 * T, r1 * T)
            ap = average_precision(ls)
            star = self._bootstrap(ls, _SUBSETS.index(name), unit)
            iv = self._intervals(ls, ap, star)
            prefix = _PREFIX[name]
            out[f"{prefix}ap"] = ap
            for k, v in iv.items():
                out[f"{prefix}{k}"] = v
            mask = np.ones(T, bool) if name == "full" else valid_both
            for k, v in self._means(ap, star, iv["sd_logit"], r1 - r0, mask).items():
                out[f"{prefix}{k}"] = v
        return out

    # -- tables -------------------------------------------------------------------------
    def finalize(self, merged: dict[str, np.ndarray], data: CorpusLists
                 ) -> dict[str, pa.Table]:
        """``corpus_ci``, ``corpus_map``; with validation ``corpus_validation``,
        ``corpus_split``, ``corpus_map_validation``, ``corpus_map_split``; with pairs
        ``corpus_meta``."""
        tables = {"corpus_ci": self._corpus_ci(merged, data)}
        maps, map_validation, map_split = self._map_tables(merged, data)
        tables["corpus_map"] = maps
        if self.validate:
            tables["corpus_validation"], tables["corpus_split"] = self._validation(merged, data)
            tables["corpus_map_validation"] = map_validation
            tables["corpus_map_split"] = map_split
        if len(data.systems) > 1 and (self.pairs is None or self.pairs):
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
        return pa.concat_tables([table("corpus_ci", {
            "system": sys_, "topic": top, "ap": L["ap"], "lo": L[f"lo_{m}"],
            "hi": L[f"hi_{m}"], "method": [m] * len(sys_), "relevant": data.full.relevant,
            "se": L["se"], "sd_logit": L["sd_logit"],
        }) for m in self.interval_names])

    def _validation(self, L: dict[str, np.ndarray], data: CorpusLists
                    ) -> tuple[pa.Table, pa.Table]:
        sys_, top = self._ids(data)
        predicted = replication_within(self.level)
        rows, split = [], []
        for src, dst in (("A", "B"), ("B", "A")):
            r_src = (data.half_a if src == "A" else data.half_b).relevant
            r_dst = (data.half_b if src == "A" else data.half_a).relevant
            usable = (r_src > 0) & (r_dst > 0)
            ap_src, ap_dst = L[f"{src}_ap"], L[f"{dst}_ap"]
            for m in self.interval_names:
                lo, hi = L[f"{src}_lo_{m}"], L[f"{src}_hi_{m}"]
                base = m.removesuffix("_small_r")
                pred = predicted if base in ("normal", "logit") else None
                for label, sel in (("all", usable), (f"R>{self.r_threshold}",
                                                     usable & (r_src > self.r_threshold))):
                    above, within, below = _classify(ap_dst[sel], lo[sel], hi[sel])
                    n = int(sel.sum())
                    rows.append({"method": m, "subset": f"{src}->{dst} {label}",
                                 "above": above / n if n else None,
                                 "within": within / n if n else None,
                                 "below": below / n if n else None,
                                 "predicted_within": pred, "lists": n})
                idx = np.flatnonzero(usable)
                split.append(table("corpus_split", {
                    "direction": [f"{src}->{dst}"] * len(idx), "system": sys_[idx],
                    "topic": top[idx], "relevant": r_src[idx], "ap_ci": ap_src[idx],
                    "ap_other": ap_dst[idx], "method": [m] * len(idx), "lo": lo[idx],
                    "hi": hi[idx],
                    "normalised": normalised_difference(ap_dst[idx], ap_src[idx], lo[idx],
                                                        hi[idx]),
                }))
        return table("corpus_validation", rows), pa.concat_tables(split)

    def _map_tables(self, R: dict[str, np.ndarray], data: CorpusLists
                    ) -> tuple[pa.Table, pa.Table | None, pa.Table | None]:
        """MAP / L-MAP intervals; with validation also their counts and per-run values."""
        z = float(special.ndtri(0.5 + self.level / 2.0))
        kinds = [(measure, key, method, se_key) for measure, key in (("MAP", "map"),
                                                                     ("L-MAP", "lmap"))
                 for method, se_key in (("bootstrap", "se_boot"), ("parametric", "se_par"))]
        names = list(data.systems)
        S = len(names)
        maps = pa.concat_tables([table("corpus_map", {
            "system": names, "measure": [measure] * S, "estimate": R[key],
            "lo": R[key] - z * R[f"{key}_{se_key}"], "hi": R[key] + z * R[f"{key}_{se_key}"],
            "method": [method] * S, "se": R[f"{key}_{se_key}"],
        }) for measure, key, method, se_key in kinds])
        if not self.validate:
            return maps, None, None
        predicted = replication_within(self.level)
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
        lg = special.logit(np.clip(L["ap"], LOGIT_EPS, 1.0 - LOGIT_EPS)).reshape(S, T)
        sd = L["sd_logit"].reshape(S, T)
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
