"""Data loading for experiment builders (one place that maps the config to data)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irsim.data.collection import (
    DocCollection,
    load_doc_collection,
    load_score_matrix,
    wanted_metrics,
)
from irsim.data.matrix import ScoreMatrix
from irsim.errors import ConfigError

__all__ = ["load_collection", "CollectionSet", "CollectionList", "collection_list",
           "registered_paths",
           "group_specs", "several", "metrics_arg", "score_matrix", "doc_collection",
           "engine_shards", "progress_bar"]


def load_collection(cfg: Any, *, metrics: Sequence[str] | None = None,
                    data_dir: str | None = None, offline: bool = False,
                    progress: Any = None) -> ScoreMatrix:
    """The ScoreMatrix of a collection config (the ``collection`` node of the Hydra config):
    a score-level collection read (:func:`irsim.data.collection.load_score_matrix`), a
    document-level one (``trec``, ``synthetic_trec``) evaluated (trec_eval-exact,
    :func:`irsim.metrics.evaluate`).

    Parameters
    ----------
    cfg : mapping
        ``kind`` is one of ``synthetic_trec``, ``synthetic_scores``, ``matrix``, ``trec``;
        see ``conf/collection/*.yaml``.
    metrics : sequence of str, optional
        Metrics to keep (matrix) or compute (document level); default (None) the
        collection's ``default_metrics`` (for a matrix: all its metrics). An empty list or a
        repeated name is refused.
    data_dir, offline
        Where named files are found or downloaded; never download when offline.
    progress : callable, optional
        ``progress(done, total)`` while metrics are computed (document-level collections).

    Examples
    --------
    >>> m = load_collection({"kind": "synthetic_trec", "runs": 4, "topics": 5},
    ...                     metrics=["AP", "P@10"])
    >>> m.metrics, m.shape
    (('AP', 'P@10'), (2, 4, 5))
    """
    if cfg.get("kind") not in ("trec", "synthetic_trec"):
        return load_score_matrix(cfg, metrics=metrics, data_dir=data_dir, offline=offline)
    from irsim.metrics import evaluate

    wanted = wanted_metrics(cfg, metrics)
    docs = load_doc_collection(cfg, data_dir=data_dir, offline=offline)
    if not wanted:
        raise ConfigError("metrics must list at least one metric for a document-level "
                          "collection")
    return evaluate(docs.runs, docs.qrels, wanted, depth=docs.depth, missing=docs.missing,
                    progress=progress)


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


@dataclass(frozen=True)
class CollectionList:
    """Several collections, each studied on its own by a study that does not pool them
    (``collection.paths={METRIC: [file, ...]}``): ``parts`` holds ``(collection name,
    ScoreMatrix of its metrics)`` in order. The study runs once per collection
    (:class:`irsim.engine.composite.PerCollection`), its tables gain a first column
    ``collection``.

    Examples
    --------
    >>> import numpy as np
    >>> a = ScoreMatrix(np.zeros((1, 2, 3)), ["AP"], ["r1", "r2"], ["1", "2", "3"])
    >>> CollectionList((("adhoc5", a), ("adhoc6", a))).names
    ('adhoc5', 'adhoc6')
    """

    parts: tuple[tuple[str, ScoreMatrix], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The collections, in order."""
        return tuple(n for n, _ in self.parts)


def _is_file_spec(spec: Any) -> bool:
    return isinstance(spec, str | bytes) or (hasattr(spec, "items") and "file" in spec)


def _stem(spec: Any) -> str:
    file = spec.get("file") if hasattr(spec, "get") else spec
    return Path(str(file)).stem


def group_specs(paths: Any, key: str = "collection.paths") -> list[tuple[str, dict]]:
    """The collections of ``collection.paths`` when it lists several per metric:
    ``[(name, {metric: spec})]`` in order.

    Each metric maps either to a list (the i-th entry of every metric is collection i, named
    by the common start of its file stems: ``adhoc5_ap.csv`` and ``adhoc5_p10.csv`` are
    ``adhoc5``; one metric: the stem) or to a mapping of collection names to files
    (collections are grouped by name and may lack a metric).

    Examples
    --------
    >>> group_specs({"AP": ["d/adhoc5_ap.csv", "d/adhoc6_ap.csv"],
    ...              "P@10": ["d/adhoc5_p10.csv", "d/adhoc6_p10.csv"]})[1]
    ('adhoc6', {'AP': 'd/adhoc6_ap.csv', 'P@10': 'd/adhoc6_p10.csv'})
    >>> [n for n, _ in group_specs({"AP": {"t5": "a.csv", "t6": "b.csv"}, "RR": {"t6": "c"}})]
    ['t5', 't6']
    >>> group_specs({"AP": ["a.csv", "b.csv"], "RR": ["c.csv"]})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: collection.paths lists 2 files for AP but 1 for RR: ...
    """
    named = {str(m): v for m, v in dict(paths).items()
             if hasattr(v, "items") and not _is_file_spec(v)}
    listed = {str(m): list(v) if _is_list(v) else [v] for m, v in dict(paths).items()
              if str(m) not in named}
    if named and listed:
        first = next(iter(listed))
        raise ConfigError(f"{key} names the collections of {next(iter(named))} but not those "
                          f"of {first}: give every metric a list of files or every metric a "
                          f"mapping {{name: file}}")
    if named:
        groups: dict[str, dict] = {}
        for metric, specs in named.items():
            for cname, spec in dict(specs).items():
                if not _is_file_spec(spec):
                    raise ConfigError(f"{key}.{metric}.{cname} must be a file (or "
                                      f"{{file: ..., url: ..., sha256: ...}})")
                groups.setdefault(str(cname), {})[metric] = spec
        return list(groups.items())
    sizes = {m: len(v) for m, v in listed.items()}
    if len(set(sizes.values())) > 1:
        m1 = max(sizes, key=sizes.get)
        m2 = next(m for m, n in sizes.items() if n != sizes[m1])
        n1, n2 = sizes[m1], sizes[m2]
        raise ConfigError(f"{key} lists {n1} files for {m1} but {n2} for {m2}: the i-th file "
                          f"of every metric is collection i, so every metric needs as many "
                          f"(or name them: {key}={{{m1}: {{name: file, ...}}, ...}})")
    out = []
    for i in range(next(iter(sizes.values()))):
        specs = {m: v[i] for m, v in listed.items()}
        stems = [_stem(v) for v in specs.values()]
        common = os.path.commonprefix(stems) if len(stems) > 1 else stems[0]
        name = common.rstrip("_-. ") or stems[0]
        out.append((name, specs))
    names = [n for n, _ in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{key}: two collections would be named {repeated[0]!r} (from their "
                          f"file names): name them, {key}={{METRIC: {{name: file, ...}}}}")
    return out


def registered_paths(names: Any, key: str = "collection.collections") -> list[tuple[str, dict]]:
    """``[(name, {metric: file spec})]`` of registered score-matrix collections
    (``conf/collection/<name>.yaml`` of kind ``matrix`` with ``paths``), in the order given.

    Examples
    --------
    >>> [(n, sorted(p)) for n, p in registered_paths(["adhoc8"])]
    [('adhoc8', ['AP', 'P@10', 'RR'])]
    >>> registered_paths(["adhoc9"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown collection.collections entry 'adhoc9' (did you ...
    """
    import importlib.resources as resources

    import yaml

    from irsim.errors import unknown_name

    root = resources.files("irsim.conf") / "collection"
    configs = {p.name[:-5]: yaml.safe_load(p.read_text(encoding="utf-8")) or {}
               for p in sorted(root.iterdir(), key=lambda p: p.name)
               if p.name.endswith(".yaml")}
    matrices = [n for n, c in configs.items()
                if c.get("kind") == "matrix" and isinstance(c.get("paths"), dict)]
    out = []
    for name in ([names] if isinstance(names, str) else list(names)):
        name = str(name)
        if name not in configs:
            raise unknown_name(f"{key} entry", name, configs)
        if name not in matrices:
            raise ConfigError(f"{key}: {name!r} is not a registered score-matrix collection "
                              f"(kind matrix with paths: {', '.join(matrices)})")
        out.append((name, dict(configs[name]["paths"])))
    if not out:
        raise ConfigError(f"{key} lists no collection")
    names_seen = [n for n, _ in out]
    repeated = sorted({n for n in names_seen if names_seen.count(n) > 1})
    if repeated:
        raise ConfigError(f"{key} lists {repeated[0]!r} twice")
    return out


def _groups(cfg: Any) -> list[tuple[str, dict]]:
    """The collections of a matrix collection config listing several: registered ones
    (``collection.collections``) or files (``collection.paths``, :func:`group_specs`)."""
    if cfg.collection.get("collections"):
        if cfg.collection.get("paths") or cfg.collection.get("path"):
            raise ConfigError("collection.collections names registered collections: leave "
                              "collection.path and collection.paths out")
        return registered_paths(cfg.collection.collections)
    return group_specs(cfg.collection.paths)


def collection_list(cfg: Any) -> CollectionList:
    """``collection.paths`` listing several collections per metric, or
    ``collection.collections`` naming registered ones (kind matrix), for a study that runs on
    each collection (:func:`group_specs` groups the files); the top-level ``metrics`` keeps
    those metrics (a collection with none of them is left out)."""
    from omegaconf import OmegaConf

    wanted = metrics_arg(cfg)
    parts = []
    for name, specs in _groups(cfg):
        keep = {m: s for m, s in specs.items() if not wanted or m in wanted}
        if not keep:
            continue
        one = OmegaConf.create({"kind": "matrix", "paths": keep})
        matrix = load_collection(one, metrics=[m for m in wanted if m in keep] if wanted
                                 else None, data_dir=cfg.get("data_dir"),
                                 offline=cfg.get("offline", False))
        parts.append((name, matrix))
    if not parts:
        raise ConfigError("collection.paths lists no collection of the metrics asked for")
    return CollectionList(tuple(parts))


def _is_list(spec: Any) -> bool:
    return not isinstance(spec, (str, bytes)) and not hasattr(spec, "items") and \
        hasattr(spec, "__iter__")


def several(spec: Any) -> bool:
    """Whether a ``collection.paths`` entry lists several collections (a list of files or a
    mapping of collection names to files) rather than one file spec."""
    return _is_list(spec) or (hasattr(spec, "items") and not _is_file_spec(spec))


def collection_set(cfg: Any) -> CollectionSet:
    """``collection.paths={METRIC: [file, ...], ...}`` or ``{METRIC: {name: file, ...}}``
    (kind matrix) as a :class:`CollectionSet`: each file is one collection of that metric
    (named by the file's stem, or its name), read like a single ``paths`` entry."""
    from omegaconf import OmegaConf

    parts = []
    wanted = metrics_arg(cfg)
    if cfg.collection.get("collections"):  # registered collections: pooled per metric
        by_metric: dict[str, dict] = {}
        for cname, specs in _groups(cfg):
            for metric, spec in specs.items():
                by_metric.setdefault(str(metric), {})[cname] = spec
        paths: Any = by_metric
    else:
        paths = dict(cfg.collection.paths)
    for metric, specs in paths.items():
        if wanted and str(metric) not in wanted:
            continue
        if _is_list(specs):
            entries = [(_stem(spec), spec) for spec in specs]
        elif several(specs):  # {name: file}
            entries = [(str(k), v) for k, v in dict(specs).items()]
        else:
            entries = [(_stem(specs), specs)]
        for name, spec in entries:
            one = OmegaConf.create({"kind": "matrix", "paths": {str(metric): spec}})
            matrix = load_collection(one, data_dir=cfg.get("data_dir"),
                                     offline=cfg.get("offline", False))
            parts.append((name, matrix))
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


def score_matrix(cfg: Any, pooled: bool = False) -> ScoreMatrix | CollectionSet:
    """The collection of `cfg` as a ScoreMatrix (metrics computed first for doc-level data,
    with a progress bar unless ``quiet``). When ``collection.paths`` lists several
    collections per metric: a :class:`CollectionSet` when the study reads them `pooled`
    (its registration says so for its config), else a :class:`CollectionList` (the study
    runs on each)."""
    matrix = cfg.collection.get("kind") == "matrix"
    paths = cfg.collection.get("paths") if matrix else None
    if (matrix and cfg.collection.get("collections")) or (
            paths is not None and any(several(v) for v in dict(paths).values())):
        return collection_set(cfg) if pooled else collection_list(cfg)
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
