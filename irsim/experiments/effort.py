"""Assessor effort against error rate (Sanderson & Zobel 2005, Section 4; METHODS.md
section 4).

From document-level data (runs + qrels): for each (metric, pool depth k) the qrels are
restricted to the depth-k pool of the runs (:mod:`irsim.sampling.pooling`: every pooled
document judged, grades kept, everything else unjudged), the metric is recomputed, and the
unconditioned error rates of :class:`~irsim.experiments.error_rates.ErrorRates` are measured
for each topic-set size. Effort = topics x mean judged (pooled) documents per topic, so MAP
on depth-100 pools and P@10 on depth-10 pools can be compared per unit of judging effort
(the paper's Fig. 7). A depth of ``null`` keeps the full qrels (effort = judgments per topic).

Pooling and evaluation run once when the study is built; the trials run as shards of the
error-rate kernel (pair blocks), so the results are the same for any sharding and engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.collection import DocCollection
from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard
from irsim.errors import ConfigError
from irsim.experiments.common import check_positive_int
from irsim.experiments.error_rates import ErrorRates
from irsim.experiments.swap import as_tuple, check_schemes, check_sizes
from irsim.sampling.pooling import pool_runs, pooled_qrels

__all__ = ["Effort", "EffortData", "effort_data", "DEFAULT_POOLS", "pool_label"]

#: The paper's comparison: MAP on depth-100 pools, P@10 on depth-10 pools.
DEFAULT_POOLS = (("AP", 100), ("P@10", 10))


def pool_label(metric: str, depth: int | None) -> str:
    """Name of a (metric, pool depth) series in the derived score matrix.

    Examples
    --------
    >>> pool_label("AP", 100), pool_label("P@10", None)
    ('AP|depth=100', 'P@10|depth=all')
    """
    return f"{metric}|depth={'all' if depth is None else int(depth)}"


@dataclass(frozen=True)
class EffortData:
    """Scores recomputed on pooled qrels, and the pools' sizes.

    Attributes
    ----------
    matrix : ScoreMatrix
        One "metric" per (metric, depth) series, named by :func:`pool_label`.
    series : tuple of (str, int or None)
        (metric, depth) of each matrix metric.
    judged : ndarray, shape (series, topics)
        Judged documents per topic (pool size; all judgments for depth None).
    relevant : ndarray, shape (series, topics)
        Relevant (grade >= 1) judged documents per topic.
    """

    matrix: ScoreMatrix
    series: tuple[tuple[str, int | None], ...]
    judged: np.ndarray
    relevant: np.ndarray


def _check_pools(pools: Any) -> tuple[tuple[str, int | None], ...]:
    out = []
    for p in pools or ():
        if hasattr(p, "get"):
            metric, depth = p.get("metric"), p.get("depth")
        else:
            try:
                metric, depth = p
            except (TypeError, ValueError):
                raise ConfigError(f"experiment.pools entries need a metric and a depth, got "
                                  f"{p!r}") from None
        if not isinstance(metric, str) or not metric:
            raise ConfigError(f"experiment.pools: metric must be a name, got {metric!r}")
        if depth is not None:
            depth = check_positive_int(depth, "experiment.pools depth")
        out.append((metric, depth))
    if not out:
        raise ConfigError("experiment.pools must list at least one {metric, depth}")
    return tuple(dict.fromkeys(out))


def effort_data(docs: DocCollection, pools: Sequence[tuple[str, int | None]]) -> EffortData:
    """Pool the runs, restrict the qrels, recompute each metric.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> runs, qrels = synthetic_trec(runs=4, topics=6, docs_per_topic=60, depth=50, seed=1)
    >>> data = effort_data(DocCollection(runs, qrels, 50), [("AP", 20), ("P@10", 10)])
    >>> data.matrix.metrics, data.matrix.shape
    (('AP|depth=20', 'P@10|depth=10'), (2, 4, 6))
    >>> bool((data.judged[0] >= data.judged[1]).all())   # deeper pools judge more
    True
    """
    from irsim.metrics import evaluate

    pools = _check_pools(pools)
    parts, judged, relevant = [], [], []
    for metric, depth in pools:
        if depth is None:
            qrels = docs.qrels
        else:
            qrels = pooled_qrels(docs.qrels, pool_runs(docs.runs, depth))
        m = evaluate(docs.runs, qrels, [metric], depth=docs.depth, missing=docs.missing)
        parts.append(ScoreMatrix(m.values, [pool_label(metric, depth)], m.systems, m.topics,
                                 source=m.source))
        topic = np.asarray(qrels.topic, dtype=object)
        pos = {t: i for i, t in enumerate(m.topics)}
        idx = np.array([pos.get(t, -1) for t in topic.tolist()], dtype=np.int64)
        ok = idx >= 0
        judged.append(np.bincount(idx[ok], minlength=len(m.topics)))
        rel = np.asarray(qrels.grade)[ok] >= 1
        relevant.append(np.bincount(idx[ok][rel], minlength=len(m.topics)))
    matrix = ScoreMatrix.stack(parts)
    # stack aligns every part to the first one's systems and topics; so must the counts
    order = [[p.topics.index(t) for t in matrix.topics] for p in parts]
    judged_a = np.array([j[o] for j, o in zip(judged, order, strict=True)], dtype=np.int64)
    rel_a = np.array([r[o] for r, o in zip(relevant, order, strict=True)], dtype=np.int64)
    return EffortData(matrix, pools, judged_a, rel_a)


@dataclass(frozen=True)
class Effort:
    """The assessor-effort study: error rates of metrics on pooled qrels, per unit of effort.

    Parameters
    ----------
    pools : sequence of (metric, depth)
        Series to compare (depth None: the full qrels). Used by :func:`effort_data`; the
        study itself reads the derived :class:`EffortData`.
    sampling : sequence of str
        Topic-set schemes.
    subset_sizes : sequence of int
        Topic-set sizes.
    trials : int
        Repetitions per pair.
    drop_bottom : float
        Share of systems with the lowest mean (first series) left out.
    seed : int
    shard_pairs : int

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> from irsim.engine import run_study
    >>> runs, qrels = synthetic_trec(runs=5, topics=12, docs_per_topic=80, depth=60, seed=3,
    ...                              quality_sd=0.4)
    >>> data = effort_data(DocCollection(runs, qrels, 60), DEFAULT_POOLS)
    >>> tables, _ = run_study(Effort(subset_sizes=(3, 6), trials=10), data)
    >>> tables["effort_summary"].column("comparisons").to_pylist()   # 10 pairs x 10 trials
    [100, 100, 100, 100]
    """

    pools: tuple[tuple[str, int | None], ...] = DEFAULT_POOLS
    sampling: tuple[str, ...] = ("disjoint",)
    subset_sizes: tuple[int, ...] = (5, 10, 15, 20, 25)
    trials: int = 50
    drop_bottom: float = 0.0
    seed: int = 0
    shard_pairs: int = 4096
    name: str = field(default="effort", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools", _check_pools(self.pools))
        object.__setattr__(self, "sampling", check_schemes(self.sampling))
        object.__setattr__(self, "subset_sizes", check_sizes(self.subset_sizes))
        _ = self.inner  # validates the rest

    @property
    def inner(self) -> ErrorRates:
        """The unconditioned error-rate study run on the derived score matrix."""
        return ErrorRates(
            metrics=tuple(pool_label(m, d) for m, d in self.pools), sampling=self.sampling,
            subset_sizes=self.subset_sizes, trials=self.trials, tests=(), windows=(),
            drop_bottom=self.drop_bottom, target_sizes=(), sd_sizes=(), seed=self.seed,
            shard_pairs=self.shard_pairs)

    def _check(self, data: EffortData) -> None:
        if tuple(data.series) != self.pools:
            raise ConfigError(f"effort data holds series {data.series}, the study expects "
                              f"{self.pools}")

    def plan(self, data: EffortData) -> list[Shard]:
        """Pair blocks (all trials in each), as the error-rate study."""
        self._check(data)
        return self.inner.plan(data.matrix)

    def kernel(self, shard: Shard, data: EffortData) -> Partial:
        """Error-rate counters of one block of pairs."""
        return self.inner.kernel(shard, data.matrix)

    def fingerprint(self) -> dict:
        """Parameters that determine the tables."""
        return {"pools": self.pools, **self.inner.fingerprint()}

    def reducer(self, data: EffortData) -> _EffortReducer:
        """A fresh reducer for this study on `data`."""
        return _EffortReducer(self, data)


class _EffortReducer:
    def __init__(self, study: Effort, data: EffortData):
        self.study = study
        self.data = data
        self.inner = study.inner.reducer(data.matrix)

    def combine(self, shard: Shard, partial: Partial) -> None:
        self.inner.combine(shard, partial)

    def finalize(self) -> dict[str, pa.Table]:
        data = self.data
        er = self.inner.finalize()["error_rates"].to_pandas()
        er = er[er.test == "none"]
        label = {pool_label(m, d): (m, d) for m, d in data.series}
        per_topic = {pool_label(m, d): float(data.judged[i].mean())
                     for i, (m, d) in enumerate(data.series)}
        er = er.assign(
            pool_depth=[label[x][1] for x in er.metric],
            judged_per_topic=[per_topic[x] for x in er.metric],
            metric=[label[x][0] for x in er.metric],
        )
        er["effort"] = er.subset_size * er.judged_per_topic
        binned_cols = ["metric", "pool_depth", "sampling", "subset_size", "judged_per_topic",
                       "effort", "bin_kind", "bin_lo", "bin_hi", "comparisons", "errors",
                       "error_rate"]
        absolute = er[er.bin_kind == "absolute"]
        keys = ["metric", "pool_depth", "sampling", "subset_size", "judged_per_topic", "effort"]
        summ = absolute.groupby(keys, sort=False, dropna=False)[["comparisons", "errors"]].sum()
        summ = summ.reset_index()
        summ["error_rate"] = summ.errors / summ.comparisons.where(summ.comparisons > 0)
        pool_rows = {"pool_depth": [], "metric": [], "topic": [], "judged": [], "relevant": []}
        for i, (metric, depth) in enumerate(data.series):
            nt = len(data.matrix.topics)
            pool_rows["pool_depth"] += [depth] * nt
            pool_rows["metric"] += [metric] * nt
            pool_rows["topic"] += list(data.matrix.topics)
            pool_rows["judged"] += data.judged[i].tolist()
            pool_rows["relevant"] += data.relevant[i].tolist()
        return {
            "effort": _table(er[binned_cols], EFFORT_SCHEMA),
            "effort_summary": _table(summ[keys + ["comparisons", "errors", "error_rate"]],
                                     SUMMARY_SCHEMA),
            "pools": pa.table(pool_rows, schema=POOLS_SCHEMA),
        }


def _table(df: Any, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(df.reset_index(drop=True), schema=schema, preserve_index=False)


EFFORT_SCHEMA = pa.schema([
    ("metric", pa.string()), ("pool_depth", pa.int64()), ("sampling", pa.string()),
    ("subset_size", pa.int64()), ("judged_per_topic", pa.float64()), ("effort", pa.float64()),
    ("bin_kind", pa.string()), ("bin_lo", pa.float64()), ("bin_hi", pa.float64()),
    ("comparisons", pa.int64()), ("errors", pa.int64()), ("error_rate", pa.float64()),
])
SUMMARY_SCHEMA = pa.schema([
    ("metric", pa.string()), ("pool_depth", pa.int64()), ("sampling", pa.string()),
    ("subset_size", pa.int64()), ("judged_per_topic", pa.float64()), ("effort", pa.float64()),
    ("comparisons", pa.int64()), ("errors", pa.int64()), ("error_rate", pa.float64()),
])
POOLS_SCHEMA = pa.schema([
    ("pool_depth", pa.int64()), ("metric", pa.string()), ("topic", pa.string()),
    ("judged", pa.int64()), ("relevant", pa.int64()),
])


DESCRIPTION = ("assessor effort: error rates of metrics recomputed on depth-k pools (MAP at "
               "depth 100 vs P@10 at depth 10) against judged documents (Sanderson-Zobel)")


def build(cfg: Any) -> tuple[Effort, EffortData]:
    """Pool the configured document-level collection and set up the study."""
    from irsim.experiments.loading import doc_collection, engine_shards

    e = cfg.experiment
    pools = e.get("pools")
    pools = DEFAULT_POOLS if pools is None else pools
    shard_pairs, _ = engine_shards(cfg).get(4096, 1000)
    study = Effort(
        pools=_check_pools(pools),
        sampling=as_tuple(e.get("sampling", ("disjoint",))),
        subset_sizes=as_tuple(e.get("subset_sizes", (5, 10, 15, 20, 25))),
        trials=e.get("trials", 50),
        drop_bottom=e.get("drop_bottom", 0.0),
        seed=cfg.seed,
        shard_pairs=shard_pairs,
    )
    data = effort_data(doc_collection(cfg), study.pools)
    study.plan(data)  # validate sizes against the collection before the run starts
    return study, data


def report_sections(tables: dict, run_dir: Any) -> list[str]:
    """Effort table and plot for report.md."""
    from irsim.report.error_rates import effort_sections

    return effort_sections(tables, run_dir)
