"""Data loading for experiment builders (one place that maps the config to data)."""

from __future__ import annotations

from typing import Any

from irsim.data.collection import DocCollection, load_collection, load_doc_collection
from irsim.data.matrix import ScoreMatrix

__all__ = ["metrics_arg", "score_matrix", "doc_collection", "engine_shards", "progress_bar"]


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


def score_matrix(cfg: Any) -> ScoreMatrix:
    """The collection of `cfg` as a ScoreMatrix (metrics computed first for doc-level data,
    with a progress bar unless ``quiet``)."""
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
    from irsim.experiments import Shards

    eng = cfg.engine
    return Shards(eng.get("shard_items"), eng.get("shard_replicates"))
