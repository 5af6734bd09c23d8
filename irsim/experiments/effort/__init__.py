"""Assessor effort against error rate (Sanderson & Zobel 2005, Section 4; METHODS.md
section 4).

From document-level data (runs + qrels): for each (metric, pool depth k) the qrels are
restricted to the depth-k pool of the runs (:mod:`irsim.sampling.pooling`: every pooled
document judged, grades kept, everything else unjudged), the metric is recomputed, and the
unconditioned error rates of the error-rate kernel
(:class:`~irsim.kit.topicsets.PairErrors`, as the ``error_rates`` study) are
measured for each topic-set size. Effort = topics x mean judged (pooled) documents per
topic, so MAP on depth-100 pools and P@10 on depth-10 pools can be compared per unit of
judging effort (the paper's Fig. 7). A depth of ``null`` keeps the full qrels (effort =
judgments per topic).

Pooling and evaluation run once, in :func:`make`; the trials run as shards of the
error-rate kernel (pair blocks, integer counters), so the results are the same for any
sharding and engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from irsim.data.collection import DocCollection
from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Partial, Shard
from irsim.engine.partials import Kind
from irsim.errors import ConfigError, param
from irsim.experiments import Shards
from irsim.kit.common import check_positive_int, check_study_memory, check_unique
from irsim.kit.topicsets import (
    PairErrors,
    PairErrorsStudy,
    check_drop,
    check_schemes,
    check_set_memory,
    check_sizes,
    compared_systems,
    sampling_configs,
)
from irsim.params import Options, option
from irsim.registry import study
from irsim.sampling.pooling import pool_runs, pooled_qrels
from irsim.sampling.systems import DEFAULT_RULE, DropRule
from irsim.tables import ERRORS, SAMPLING, SUBSET, schema, table
from irsim.tables import FLOAT as _F
from irsim.tables import INT as _I
from irsim.tables import STR as _S
from irsim.tables import bin_columns as _bins
from irsim.tables import column as _c
from irsim.tables import table_spec as _spec

__all__ = ["Config", "Effort", "EffortData", "effort_data", "make", "DEFAULT_POOLS",
           "pool_label"]

#: The paper's comparison: MAP on depth-100 pools, P@10 on depth-10 pools.
DEFAULT_POOLS = (("AP", 100), ("P@10", 10))
#: Default shard size: system pairs per shard (every shard holds all trials of its pairs).
SHARD_ITEMS = 4096


@dataclass
class Config(Options):
    """Parameters of ``experiment=effort`` (needs a document-level collection: synthetic or
    trec).
    """

    name: str = option("effort", "``effort``.")
    pools: list[Any] | None = option(
        [{"metric": m, "depth": d} for m, d in DEFAULT_POOLS], "The (metric, pool depth) series "
        "compared, e.g. ``[{metric: AP, depth: 100}, {metric: P@10, depth: 10}]`` (the default; "
        "null also means it); depth null keeps the full qrels. From Python, ``(metric, depth)`` "
        "pairs work too.", kind="list of {metric, depth}, optional")
    sampling: list[str] = option(
        ["disjoint"], "Topic-set schemes: ``disjoint``, ``replacement``, ``independent``.",
        tables="data")
    subset_sizes: list[int] = option([5, 10, 15, 20, 25], "Topic-set sizes.",
        tables="data")
    trials: int = option(50, "Repetitions per pair, each a new pair of topic sets.",
                         tables="data", ge=1)
    drop_bottom: float = option(
        0.0, "Share of systems with the lowest mean (of the first series) left out.",
        tables="data", ge=0, lt=1)
    drop_rule: DropRule = option(
        DEFAULT_RULE, "How ``drop_bottom`` leaves systems out: ``quantile`` (those whose mean is "
        "below the ``drop_bottom`` quantile of the means, R's type 7, as Urbano's code) or "
        "``count`` (the ``floor(drop_bottom * systems)`` lowest means; Sanderson & Zobel 2005).",
        tables="data")


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
                if isinstance(p, str):
                    raise TypeError(p)
                metric, depth = p
            except (TypeError, ValueError):
                raise ConfigError(f"{param('pools')} entries need a metric and a depth, got "
                                  f"{p!r}") from None
        if not isinstance(metric, str) or not metric:
            raise ConfigError(f"{param('pools')}: metric must be a name, got {metric!r}")
        if depth is not None and not isinstance(depth, int | np.integer):
            raise ConfigError(f"{param('pools')} depth must be an integer >= 1, got {depth!r}")
        if depth is not None:
            depth = check_positive_int(depth, f"{param('pools')} depth")
        out.append((metric, depth))
    if not out:
        raise ConfigError(f"{param('pools')} must list at least one {{metric, depth}}")
    return check_unique(out, param("pools"))


def effort_data(docs: DocCollection, pools: Sequence[Any]) -> EffortData:
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
class Effort(PairErrorsStudy):
    """The assessor-effort study: error rates of metrics on pooled qrels, per unit of effort
    (made by :func:`make`).

    Parameters
    ----------
    config : Config
        The study's parameters, normalised by :func:`make` (``pools``: the series of the data,
        :func:`effort_data`, in matrix order, as ``[metric, depth]`` pairs).
    systems : tuple of int
        Indices of the systems compared (after ``drop_bottom``).
    errors : PairErrors
        The unconditioned error-rate kernel (configurations, trials, seed).
    shard_items : int
        Pairs per shard (rounded up to a multiple of 256); changes no result.

    Examples
    --------
    >>> from irsim.data.synthetic import synthetic_trec
    >>> from irsim.engine import run_study
    >>> runs, qrels = synthetic_trec(runs=5, topics=12, docs_per_topic=80, depth=60, seed=3,
    ...                              quality_sd=0.4)
    >>> study, data = make(Config(subset_sizes=[3, 6], trials=10),
    ...                    DocCollection(runs, qrels, 60), seed=0, shards=Shards())
    >>> tables, _ = run_study(study, data)
    >>> tables["effort_summary"].column("comparisons").to_pylist()   # 10 pairs x 10 trials
    [100, 100, 100, 100]
    """

    config: Config
    systems: tuple[int, ...]
    errors: PairErrors
    shard_items: int = SHARD_ITEMS
    name: str = field(default="effort", init=False)
    CONFIG: ClassVar[type] = Config

    @property
    def pools(self) -> tuple[tuple[str, int | None], ...]:
        """The (metric, depth) series, in matrix order."""
        return tuple((m, d) for m, d in self.config.pools)

    @property
    def labels(self) -> tuple[str, ...]:
        """The metrics of the derived score matrix (:func:`pool_label`)."""
        return tuple(pool_label(m, d) for m, d in self.pools)

    def plan(self, data: EffortData) -> list[Shard]:
        """Pair blocks (all trials in each), as the error-rate study."""
        if tuple(data.series) != self.pools:
            raise ConfigError(f"effort data holds series {data.series}, the study expects "
                              f"{self.pools}")
        return self.plan_pairs()

    def fields(self, data: EffortData) -> dict[str, Kind]:
        """The error-rate counters (integers)."""
        return self.errors.fields(len(self.pools))

    def kernel(self, shard: Shard, data: EffortData) -> Partial:
        """Error-rate counters of one block of pairs."""
        keep = np.asarray(self.systems)
        xs = [np.ascontiguousarray(data.matrix.metric(m)[keep]) for m in self.labels]
        return self.errors.count(shard.items, xs, len(data.matrix.topics))

    def finalize(self, merged: dict[str, Any], data: EffortData) -> dict[str, pa.Table]:
        """``effort`` (per bin), ``effort_summary`` (all bins) and ``pools``."""
        er = pd.DataFrame(self.errors.rate_columns(merged, self.labels))
        label = {pool_label(m, d): (m, d) for m, d in data.series}
        per_topic = {pool_label(m, d): float(data.judged[i].mean())
                     for i, (m, d) in enumerate(data.series)}
        er = er.assign(
            pool_depth=[label[x][1] for x in er.metric],
            judged_per_topic=[per_topic[x] for x in er.metric],
            metric=[label[x][0] for x in er.metric],
        )
        er["effort"] = er.subset_size * er.judged_per_topic
        absolute = er[er.bin_kind == "absolute"]
        keys = ["metric", "pool_depth", "sampling", "subset_size", "judged_per_topic", "effort"]
        summ = absolute.groupby(keys, sort=False, dropna=False)[["comparisons", "errors"]].sum()
        summ = summ.reset_index()
        summ["error_rate"] = summ.errors / summ.comparisons.where(summ.comparisons > 0)
        pool_rows: dict[str, list] = {"pool_depth": [], "metric": [], "topic": [], "judged": [],
                                      "relevant": []}
        nt = len(data.matrix.topics)
        for i, (metric, depth) in enumerate(data.series):
            pool_rows["pool_depth"] += [depth] * nt
            pool_rows["metric"] += [metric] * nt
            pool_rows["topic"] += list(data.matrix.topics)
            pool_rows["judged"] += data.judged[i].tolist()
            pool_rows["relevant"] += data.relevant[i].tolist()
        return {"effort": table("effort", er[list(schema("effort").names)]),
                "effort_summary": table("effort_summary", summ),
                "pools": table("pools", pool_rows)}



# ------------------------------------------------------------------- output tables

#: The tables this study writes (schemas: :mod:`irsim.tables`).
TABLE_SPECS = (
    _spec("effort", ("effort",), "Unconditioned error rates of metrics recomputed on depth-k "
          "pools, per difference bin, with the judging effort.", [
              _c("metric", _S, "metric recomputed on the pooled qrels"),
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              SAMPLING, SUBSET,
              _c("judged_per_topic", _F, "mean judged documents per topic (pool size)"),
              _c("effort", _F, "subset_size x judged_per_topic"),
              *_bins(), *ERRORS[:2],
              _c("error_rate", _F, "errors / comparisons (null for an empty bin)"),
          ]),
    _spec("effort_summary", ("effort",), "Error rate over all difference bins against effort, "
          "per metric, pool depth, sampling and size.", [
              _c("metric", _S, "metric recomputed on the pooled qrels"),
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              SAMPLING, SUBSET,
              _c("judged_per_topic", _F, "mean judged documents per topic (pool size)"),
              _c("effort", _F, "subset_size x judged_per_topic"),
              _c("comparisons", _I, "pair x trial comparisons"),
              _c("errors", _I, "comparisons whose order differs on the second set"),
              _c("error_rate", _F, "errors / comparisons (null without comparisons)"),
          ]),
    _spec("pools", ("effort",), "Judged and relevant documents per metric, pool depth and "
          "topic.", [
              _c("pool_depth", _I, "pool depth k (null: the full qrels)"),
              _c("metric", _S, "metric evaluated on these pools"),
              _c("topic", _S, "topic"),
              _c("judged", _I, "judged documents of the topic (pool size; all judgments when "
                 "pool_depth is null)"),
              _c("relevant", _I, "judged documents with grade >= 1"),
          ]),
)


@study("effort", config=Config, data="docs", order=40,
       title="Assessor effort",
       example=dict(overrides={"synthetic": ["experiment.trials=20"]},
                    keywords=dict(pools=[{"metric": "AP", "depth": 20},
                                         {"metric": "AP", "depth": 50}],
                                  subset_sizes=[3, 5], trials=5),
                    figures=["effort.png"]),
       tables=TABLE_SPECS,
       description=("assessor effort: error rates of metrics recomputed on depth-k pools (MAP at "
                    "depth 100 vs P@10 at depth 10) against judged documents (Sanderson-Zobel)"),
       headlines={"effort_summary": (
           ("metric", "pool_depth", "sampling", "subset_size"), "error_rate")},
       question=("For the same judging effort, deep pools on few topics or shallow pools on "
                 "many? (Sanderson-Zobel 2005)"))
def make(config: Config, data: DocCollection, *, seed: int, shards: Shards
         ) -> tuple[Effort, EffortData]:
    """Pool the runs of `data`, recompute the metrics (:func:`effort_data`) and set up the
    study, validated."""
    pools = _check_pools(DEFAULT_POOLS if config.pools is None else config.pools)
    schemes = check_schemes(config.sampling)
    sizes = check_sizes(config.subset_sizes, required=True)
    trials = config.trials
    drop_bottom, drop_rule = check_drop(config.drop_bottom, config.drop_rule)
    items, _ = shards.get(SHARD_ITEMS, 1000)
    check_positive_int(items, param("shard_items", "engine"))
    derived = effort_data(data, pools)
    n = len(derived.matrix.topics)
    if n < 2:
        raise ConfigError(f"error rates need >= 2 topics, got {n}")
    check_set_memory(n, "effort's error rates")
    errors = PairErrors(configs=sampling_configs(schemes, sizes, n), trials=trials,
                        seed=int(seed), extras=False)
    systems = compared_systems(derived.matrix, drop_bottom, derived.matrix.metrics[0],
                               drop_rule)
    config = dataclasses.replace(config, pools=[[m, d] for m, d in pools])
    study = Effort(config, systems=systems, errors=errors, shard_items=items)
    return check_study_memory(study, derived, param("trials"),
                              extra=errors.working_bytes(len(systems))), derived
