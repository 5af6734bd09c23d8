"""Data loading for experiment builders (one place that maps the config to data)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irsim.data.collection import DocCollection, load_collection, load_doc_collection
from irsim.data.matrix import ScoreMatrix
from irsim.errors import ConfigError

__all__ = ["CollectionSet", "metrics_arg", "score_matrix", "doc_collection", "engine_shards",
           "progress_bar", "POOLING_STUDIES"]

#: Studies (experiment name, design) that pool several collections per metric.
POOLING_STUDIES = {("test_errors", "urbano2019")}


@dataclass(frozen=True)
class CollectionSet:
    """Several collections per metric, pooled by a study: ``parts`` holds
    ``(collection name, one-metric ScoreMatrix)`` in the order given.

    Examples
    --------
    >>> import numpy as np
    >>> a = ScoreMatrix(np.zeros((1, 2, 3)), ["AP"], ["r1", "r2"], ["1", "2", "3"])
    >>> s = CollectionSet((("adhoc5", a), ("adhoc6", a)))
    >>> s.metrics, [n for n, _ in s.of("AP")]
    (('AP',), ['adhoc5', 'adhoc6'])
    """

    parts: tuple[tuple[str, ScoreMatrix], ...]

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics in order of first appearance."""
        return tuple(dict.fromkeys(m.metrics[0] for _, m in self.parts))

    def of(self, metric: str) -> list[tuple[str, ScoreMatrix]]:
        """The collections of `metric`."""
        return [(n, m) for n, m in self.parts if m.metrics[0] == metric]

    def describe(self) -> dict:
        """Summary for the manifest."""
        return {"metrics": list(self.metrics),
                "collections": {m: [n for n, _ in self.of(m)] for m in self.metrics}}


def _is_list(spec: Any) -> bool:
    return not isinstance(spec, (str, bytes)) and not hasattr(spec, "items") and \
        hasattr(spec, "__iter__")


def collection_set(cfg: Any) -> CollectionSet:
    """``collection.paths={METRIC: [file, ...], ...}`` (kind matrix) as a
    :class:`CollectionSet`: each file is one collection of that metric (named by the file's
    stem), read like a single ``paths`` entry."""
    from omegaconf import OmegaConf

    parts = []
    wanted = metrics_arg(cfg)
    for metric, specs in dict(cfg.collection.paths).items():
        if wanted and str(metric) not in wanted:
            continue
        for spec in (specs if _is_list(specs) else [specs]):
            one = OmegaConf.create({"kind": "matrix", "paths": {str(metric): spec}})
            matrix = load_collection(one, data_dir=cfg.get("data_dir"),
                                     offline=cfg.get("offline", False))
            file = spec.get("file") if hasattr(spec, "get") else spec
            parts.append((Path(str(file)).stem, matrix))
    if not parts:
        raise ConfigError("collection.paths lists no collection of the metrics asked for")
    return CollectionSet(tuple(parts))


def metrics_arg(cfg: Any) -> list[str] | None:
    """The top-level ``metrics`` list (None = the collection's default)."""
    metrics = cfg.get("metrics")
    if metrics is None:
        return None
    if isinstance(metrics, str):
        return [metrics]
    return [str(m) for m in metrics]


def progress_bar(cfg: Any, desc: str, unit: str = "chunk"):
    """``(bar, callback)``: a tqdm bar on stderr updated by ``callback(done, total)``, or
    ``(None, None)`` when ``quiet``. Close the bar when done."""
    if cfg.get("quiet", False):
        return None, None
    import sys

    from tqdm import tqdm

    bar = tqdm(total=None, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
               leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return bar, update


def score_matrix(cfg: Any) -> ScoreMatrix | CollectionSet:
    """The collection of `cfg` as a ScoreMatrix (metrics computed first for doc-level data,
    with a progress bar unless ``quiet``); a :class:`CollectionSet` when
    ``collection.paths`` lists several files for a metric (for the studies of
    :data:`POOLING_STUDIES`; any other study gets a ConfigError)."""
    paths = cfg.collection.get("paths") if cfg.collection.get("kind") == "matrix" else None
    if paths is not None and any(_is_list(v) for v in dict(paths).values()):
        exp = cfg.get("experiment") or {}
        study = (str(exp.get("name")), str(exp.get("design", "")))
        if study not in POOLING_STUDIES:
            raise ConfigError("collection.paths lists several files for a metric: only "
                              "experiment=test_errors with experiment.design=urbano2019 "
                              "pools collections; to run this study on each collection, "
                              "sweep them (irsim -m collection=matrix "
                              "collection.path=a.csv,b.csv collection.metric=AP, then "
                              "irsim report <sweep dir>)")
        return collection_set(cfg)
    bar, update = (progress_bar(cfg, "evaluate") if cfg.collection.get("kind") in
                   ("trec", "synthetic_trec") else (None, None))
    try:
        return load_collection(cfg.collection, metrics=metrics_arg(cfg),
                               data_dir=cfg.get("data_dir"), offline=cfg.get("offline", False),
                               progress=update)
    finally:
        if bar is not None:
            bar.close()


def doc_collection(cfg: Any) -> DocCollection:
    """The runs and qrels of a document-level collection (``trec`` / ``synthetic_trec``)."""
    return load_doc_collection(cfg.collection, data_dir=cfg.get("data_dir"),
                               offline=cfg.get("offline", False))


def engine_shards(cfg: Any) -> Any:
    """The requested shard sizes (``engine.shard_items``, ``engine.shard_replicates``)."""
    from irsim.kit.common import Shards

    eng = cfg.engine
    return Shards(eng.get("shard_items"), eng.get("shard_replicates"))
