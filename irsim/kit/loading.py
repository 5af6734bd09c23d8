"""The data kinds ``matrix`` and ``docs``: each a :class:`~irsim.registry.DataKind` with its
two loaders, as every other kind (:func:`irsim.registry.data_kind`): the command line's
from the Hydra config (:func:`score_matrix`, :func:`doc_collection`), the Python door's from
the study function's data and keywords (:func:`matrix_from_python`,
:func:`docs_from_python`, over :mod:`irsim.data.convert`). Also the engine options of a
Hydra config."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from irsim.data.collection import (
    DocCollection,
    load_doc_collection,
    load_score_matrix,
    reader,
    wanted_metrics,
)
from irsim.data.convert import (
    as_collection_list,
    as_collection_set,
    as_doc_collection,
    as_score_matrix,
    is_pooled,
)
from irsim.data.matrix import ScoreMatrix
from irsim.data.sets import CollectionList, CollectionSet
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.errors import ConfigError
from irsim.registry import data_kind

__all__ = ["load_collection", "collection_list", "registered_paths",
           "group_specs", "several", "metrics_arg", "score_matrix", "doc_collection",
           "matrix_from_python", "docs_from_python", "MATRIX", "DOCS",
           "engine_shards", "progress_bar"]


def load_collection(cfg: Any, *, metrics: Sequence[str] | None = None,
                    data_dir: str | None = None, offline: bool = False,
                    progress: Any = None) -> ScoreMatrix:
    """The ScoreMatrix of a collection config (the ``collection`` node of the Hydra config):
    a score-level collection read (:func:`irsim.data.collection.load_score_matrix`), a
    document-level one (its reader's level is ``docs``: ``trec``, ``synthetic_trec``)
    evaluated (trec_eval-exact, :func:`irsim.metrics.evaluate`).

    Parameters
    ----------
    cfg : mapping
        ``kind`` is a registered collection kind (:func:`irsim.data.collection.readers`:
        ``matrix``, ``trec``, ``synthetic_trec``, ``synthetic_scores``, ``trec_eval``, ...);
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
    if reader(cfg.get("kind")).level != "docs":
        return load_score_matrix(cfg, metrics=metrics, data_dir=data_dir, offline=offline)
    from irsim.metrics import evaluate

    wanted = wanted_metrics(cfg, metrics)
    docs = load_doc_collection(cfg, data_dir=data_dir, offline=offline)
    if not wanted:
        raise ConfigError("metrics must list at least one metric for a document-level "
                          "collection")
    return evaluate(docs.runs, docs.qrels, wanted, depth=docs.depth, missing=docs.missing,
                    progress=progress)


def _is_file_spec(spec: Any) -> bool:
    return isinstance(spec, str | bytes) or (hasattr(spec, "items") and "file" in spec)


def _stem(spec: Any) -> str:
    file = spec.get("file") if hasattr(spec, "get") else spec
    return Path(str(file)).stem


def collection_name(specs: Mapping[str, Any]) -> str:
    """The name of a collection given by files (``{metric: file}``), the one rule of every
    path that names collections by their files (pooled or per collection, one metric or
    several): the common start of the files' stems, without a trailing metric token
    (``adhoc5_ap.csv`` for AP and ``adhoc5_p10.csv`` for P@10 are ``adhoc5``; so is
    ``adhoc5_ap.csv`` alone). Name collections explicitly (``{METRIC: {name: file}}``;
    Python: ``{metric: {name: DataFrame}}``) to choose other names; the Python door names
    unnamed DataFrames ``collection0``, ``collection1``, ...

    Examples
    --------
    >>> collection_name({"AP": "d/adhoc5_ap.csv", "P@10": "d/adhoc5_p10.csv"})
    'adhoc5'
    >>> collection_name({"nDCG@20": "web2010_ndcg20.csv"}), collection_name({"AP": "x.csv"})
    ('web2010', 'x')
    """
    stems = [_stem(v) for v in specs.values()]
    common = os.path.commonprefix(stems) if len(stems) > 1 else stems[0]
    name = common.rstrip("_-. ") or stems[0]
    if len(stems) == 1:
        token = "".join(ch for ch in str(next(iter(specs))).lower() if ch.isalnum())
        for sep in ("_", "-", "."):
            if token and name.lower().endswith(sep + token) and len(name) > len(token) + 1:
                return name[:-(len(token) + 1)]
    return name


def group_specs(paths: Any, key: str = "collection.paths") -> list[tuple[str, dict]]:
    """The collections of ``collection.paths`` when it lists several per metric:
    ``[(name, {metric: spec})]`` in order.

    Each metric maps either to a list (the i-th entry of every metric is collection i, named
    by its files, :func:`collection_name`: ``adhoc5_ap.csv`` and ``adhoc5_p10.csv`` are
    ``adhoc5``) or to a mapping of collection names to files (collections are grouped by
    name and may lack a metric).

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
        out.append((collection_name(specs), specs))
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
    (named by its file, :func:`collection_name`, or its name), read like a single ``paths``
    entry."""
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
            entries = [(collection_name({metric: spec}), spec) for spec in specs]
        elif several(specs):  # {name: file}
            entries = [(str(k), v) for k, v in dict(specs).items()]
        else:
            entries = [(collection_name({metric: specs}), specs)]
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
    bar, update = (progress_bar(cfg, "evaluate")
                   if reader(cfg.collection.get("kind")).level == "docs" else (None, None))
    try:
        return load_collection(cfg.collection, metrics=metrics_arg(cfg),
                               data_dir=cfg.get("data_dir"), offline=cfg.get("offline", False),
                               progress=update)
    finally:
        if bar is not None:
            bar.close()


def doc_collection(cfg: Any) -> DocCollection:
    """The runs and qrels of a document-level collection (a kind of level ``docs``)."""
    return load_doc_collection(cfg.collection, data_dir=cfg.get("data_dir"),
                               offline=cfg.get("offline", False))


def engine_shards(cfg: Any) -> Any:
    """The requested shard sizes (``engine.shard_items``, ``engine.shard_replicates``)."""
    from irsim.kit.common import Shards

    eng = cfg.engine
    return Shards(eng.get("shard_items"), eng.get("shard_replicates"))


def _pooled(config: Any) -> bool:
    """Whether the study of `config` (by its ``name``) reads several collections pooled."""
    from irsim.registry import get

    name = getattr(config, "name", None)
    return get(name).pooled(config) if isinstance(name, str) else False


def _metrics_keyword(keywords: Mapping[str, Any]) -> list[str] | None:
    metrics = keywords.get("metrics")
    return [metrics] if isinstance(metrics, str) else metrics


def docs_from_python(data: Any, keywords: Mapping[str, Any], config: Any) -> DocCollection:
    """The Python door's runs and qrels (data kind ``docs``): ``runs=`` and ``qrels=`` (named
    by ``run_names``, :func:`irsim.data.trec.name_runs`) or a positional
    :class:`~irsim.data.collection.DocCollection`.

    Examples
    --------
    >>> docs_from_python(None, {}, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: irsim.study needs data: ... or runs=/qrels=
    """
    runs, qrels = keywords.get("runs"), keywords.get("qrels")
    if runs is not None or qrels is not None:
        if data is not None:
            raise ConfigError("give the data either positionally or as runs=/qrels=")
        return as_doc_collection(runs, qrels, run_names=keywords.get("run_names")
                                 or DEFAULT_RUN_NAMES)
    name = getattr(config, "name", "study")
    if data is None:
        raise ConfigError(f"irsim.{name} needs data: a DataFrame, a dict of DataFrames, a "
                          "ScoreMatrix or runs=/qrels=")
    if not isinstance(data, DocCollection):
        raise ConfigError(f"irsim.{name} reads runs and qrels: pass runs= and qrels=")
    return data


def matrix_from_python(data: Any, keywords: Mapping[str, Any], config: Any
                       ) -> ScoreMatrix | CollectionSet | CollectionList:
    """The Python door's per-topic scores (data kind ``matrix``): `data` in any form
    :func:`irsim.data.convert.as_score_matrix` reads (``metric=`` names a wide DataFrame's
    metric), several collections (a :class:`~irsim.data.sets.CollectionSet` when the study
    pools them, else a :class:`~irsim.data.sets.CollectionList`), or ``runs=`` and
    ``qrels=`` evaluated on ``metrics`` (trec_eval-exact). ``metrics=`` keeps those metrics
    of the data unless it is a parameter of the study's ``Config``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = matrix_from_python(pd.DataFrame({"a": [0.1, 0.2]}), {"metric": "AP"}, None)
    >>> m.metrics, m.systems
    (('AP',), ('a',))
    """
    metrics = _metrics_keyword(keywords)
    if keywords.get("runs") is not None or keywords.get("qrels") is not None:
        docs = docs_from_python(data, keywords, config)
        if not metrics:
            raise ConfigError("metrics must list the measures to compute from runs and qrels")
        from irsim.metrics import evaluate

        return evaluate(docs.runs, docs.qrels, list(metrics), depth=docs.depth,
                        missing=docs.missing)
    if data is None:
        raise ConfigError(f"irsim.{getattr(config, 'name', 'study')} needs data: a "
                          "DataFrame, a dict of DataFrames, a ScoreMatrix")
    if is_pooled(data):
        if keywords.get("metric") is not None:
            raise ConfigError("metric names a single DataFrame; a dict names its metrics by "
                              "its keys")
        return (as_collection_set(data, metrics) if _pooled(config)
                else as_collection_list(data, metrics))
    matrix = as_score_matrix(data, keywords.get("metric"))
    if metrics is not None and not list(metrics):
        raise ConfigError("metrics=[] lists no metric (leave it out for every metric of the "
                          "data)")
    if metrics and not hasattr(config, "metrics"):
        matrix = matrix.select(metrics=[str(m) for m in metrics])
    return matrix


#: Keywords of the Python door for runs and qrels (``run_names``: file or tag).
_DOC_KEYWORDS = {"runs": None, "qrels": None, "run_names": DEFAULT_RUN_NAMES}

MATRIX = data_kind(
    "matrix", description="per-topic scores: systems x topics per metric",
    from_config=lambda cfg, config: score_matrix(cfg, _pooled(config)),
    from_python=matrix_from_python,
    keywords={**_DOC_KEYWORDS, "metric": None, "metrics": None})
DOCS = data_kind(
    "docs", description="runs and qrels (ranked documents and relevance judgments)",
    from_config=lambda cfg, config: doc_collection(cfg), from_python=docs_from_python,
    keywords=_DOC_KEYWORDS)
