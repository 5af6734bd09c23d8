"""The Python door's data as irsim reads it: per-topic scores given as pandas DataFrames
(wide or long), dicts of them, pyarrow tables or :class:`~irsim.data.ScoreMatrix`; several
collections (``{metric: [collection, ...]}`` or ``{metric: {name: collection}}``); TREC
runs and qrels given as paths or :class:`~irsim.data.Runs` / :class:`~irsim.data.Qrels`.
The data kinds ``matrix`` and ``docs`` (:mod:`irsim.kit.loading`) read the study
functions' data with these; :mod:`irsim.api` re-exports the public ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from irsim.data.collection import DocCollection
from irsim.data.matrix import ScoreMatrix
from irsim.data.sets import CollectionList, CollectionSet
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["as_score_matrix", "as_collection_set", "as_collection_list", "as_doc_collection",
           "frame_to_matrix", "long_to_matrix", "is_pooled", "matrix_to_long"]


def frame_to_matrix(df: pd.DataFrame, metric: str, where: str) -> ScoreMatrix:
    """A wide DataFrame (rows = topics, columns = systems) of one metric."""
    if "topic" in df.columns:
        topics = [str(t) for t in df["topic"]]
        df = df.drop(columns="topic")
    elif isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1:
        topics = [str(i + 1) for i in range(len(df))]  # as an Urbano CSV without ids
    else:
        topics = [str(t) for t in df.index]
    if df.shape[1] < 1 or df.shape[0] < 1:
        raise InputError(f"no scores (shape {df.shape})", file=where)
    dup = df.columns[df.columns.duplicated()]
    if len(dup):
        raise InputError(f"duplicate column (system) name {dup[0]!r}", file=where)
    values = np.empty(df.shape, np.float64)
    for j, col in enumerate(df.columns):
        if df[col].dtype.kind in "cmMV" or isinstance(df[col].dtype, pd.CategoricalDtype):
            raise InputError(f"column {col!r} holds {df[col].dtype} values, not scores "
                             f"(real numbers)", file=where)
        try:
            values[:, j] = pd.to_numeric(df[col], errors="raise").to_numpy(np.float64)
        except (ValueError, TypeError):
            bad = pd.to_numeric(df[col], errors="coerce").isna() & df[col].notna()
            row = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
            raise InputError(f"non-numeric value {df[col].iloc[row]!r} in column {col!r} "
                             f"(topic {topics[row]})", file=where) from None
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"missing or infinite value in column {df.columns[j]!r} (topic "
                         f"{topics[i]})", file=where)
    return ScoreMatrix(values.T[None], [metric], [str(c) for c in df.columns], topics,
                       source=where)


def long_to_matrix(df: pd.DataFrame, where: str) -> ScoreMatrix:
    """A long DataFrame (system, topic, metric, value), e.g. from :func:`evaluate`."""
    dup = df.duplicated(["metric", "system", "topic"])
    if dup.any():
        r = df[dup].iloc[0]
        raise InputError(f"duplicate score for metric {r['metric']!r}, system "
                         f"{r['system']!r}, topic {r['topic']!r}", file=where)
    parts = []
    for metric, g in df.groupby("metric", sort=False):
        wide = g.pivot(index="topic", columns="system", values="value")
        # systems and topics in the order they first appear (pivot sorts them)
        wide = wide.reindex(index=pd.unique(g["topic"]), columns=pd.unique(g["system"]))
        if wide.isna().any().any():
            j = int(np.flatnonzero(wide.isna().any(axis=0).to_numpy())[0])
            raise InputError(f"metric {metric!r}: system {wide.columns[j]!r} lacks scores "
                             f"for some topics", file=where)
        wide.index = wide.index.astype(str)
        parts.append(frame_to_matrix(wide, str(metric), where))
    if not parts:
        raise InputError("no scores (empty table)", file=where)
    return ScoreMatrix.stack(parts)


def _one_metric(matrix: ScoreMatrix, metric: str | None) -> ScoreMatrix:
    """`matrix` restricted to `metric` (None: all of it); a metric it lacks is refused."""
    if metric is None:
        return matrix
    if str(metric) not in matrix.metrics:
        raise unknown_name("metric", str(metric), matrix.metrics)
    return matrix.select(metrics=[str(metric)])


def as_score_matrix(data: Any, metric: str | None = None) -> ScoreMatrix:
    """Per-topic scores in any accepted form as a :class:`~irsim.data.ScoreMatrix`.

    Parameters
    ----------
    data : DataFrame, dict of DataFrame, ScoreMatrix or pyarrow.Table
        Wide (rows = topics, columns = systems; a ``topic`` column or the index gives topic
        ids, a default RangeIndex gives ``"1".."n"`` as an Urbano CSV does) or long
        (columns ``system, topic, metric, value``).
    metric : str, optional
        Name of the metric of a wide DataFrame (default ``"score"``); for data holding
        several metrics (a long DataFrame, a ScoreMatrix), the one metric to keep (a name
        that is not there is refused).

    Examples
    --------
    >>> m = as_score_matrix(pd.DataFrame({"s1": [0.1, 0.3], "s2": [0.2, 0.4]}), "AP")
    >>> m.metrics, m.systems, m.topics
    (('AP',), ('s1', 's2'), ('1', '2'))
    >>> as_score_matrix(pd.DataFrame({"s1": [0.1, "x"]}), "AP")
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: DataFrame: non-numeric value 'x' in column 's1' (topic 2)
    >>> long = pd.DataFrame({"system": ["a", "b"] * 2, "topic": ["1"] * 4,
    ...                      "metric": ["AP", "AP", "RR", "RR"], "value": [0.1, 0.2, 1.0, 0.5]})
    >>> as_score_matrix(long, "RR").metrics
    ('RR',)
    >>> as_score_matrix(long, "nDCG@10")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown metric 'nDCG@10'; valid: AP, RR
    """
    if isinstance(data, ScoreMatrix):
        return _one_metric(data, metric)
    if isinstance(data, pa.Table):
        data = data.to_pandas()
    if isinstance(data, pd.DataFrame):
        if {"system", "topic", "metric", "value"} <= set(data.columns):
            return _one_metric(long_to_matrix(data, "DataFrame"), metric)
        return frame_to_matrix(data, metric or "score", "DataFrame")
    if isinstance(data, Mapping):
        if metric is not None:  # the one metric to keep
            if str(metric) not in {str(k) for k in data}:
                raise unknown_name("metric", str(metric), [str(k) for k in data])
            data = {k: v for k, v in data.items() if str(k) == str(metric)}
        if not data:
            raise InputError("no scores (empty dict)", file="dict")
        parts = []
        for name, frame in data.items():
            if not isinstance(frame, pd.DataFrame):
                raise InputError(f"value of {name!r} is {type(frame).__name__}, not a "
                                 f"DataFrame", file="dict")
            parts.append(frame_to_matrix(frame, str(name), f"dict[{name!r}]"))
        return ScoreMatrix.stack(parts)
    raise ConfigError(f"data must be a pandas DataFrame, a dict of DataFrames, a ScoreMatrix "
                      f"or runs=/qrels=, got {type(data).__name__}")


def is_pooled(data: Any) -> bool:
    """Whether `data` lists several collections for a metric (``{metric: [...]}`` or
    ``{metric: {name: ...}}``)."""
    return isinstance(data, Mapping) and any(
        isinstance(v, list | tuple | Mapping) for v in data.values())


def as_collection_set(data: Mapping[str, Any], metrics: Any = None) -> CollectionSet:
    """Several collections per metric, pooled by ``irsim.test_errors(design="urbano2019")``,
    as the :class:`~irsim.data.sets.CollectionSet` the command line's
    ``collection.paths={METRIC: [file, ...]}`` gives.

    Parameters
    ----------
    data : dict
        ``{metric: [collection, ...]}`` (named ``collection0``, ``collection1``, ... per
        metric) or ``{metric: {name: collection}}``; a collection is a wide DataFrame of the
        metric, a long DataFrame or a :class:`~irsim.data.ScoreMatrix` holding the metric; a
        lone collection (not in a list) is ``collection0``.
    metrics : list of str, optional
        The metrics to keep (each must be a key of `data`).

    Examples
    --------
    >>> a = pd.DataFrame({"s1": [0.1, 0.3], "s2": [0.2, 0.4]})
    >>> s = as_collection_set({"AP": [a, a], "P@10": {"trec8": a}})
    >>> [(name, m.metrics) for name, m in s.parts]
    [('collection0', ('AP',)), ('collection1', ('AP',)), ('trec8', ('P@10',))]
    >>> as_collection_set({"AP": [a]}, metrics=["RR"])
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: metrics: 'RR' is not a metric of the data (AP)
    """
    return CollectionSet(tuple((cname, matrix) for cname, _, matrix in
                               _collections_per_metric(data, metrics)))


def _collections_per_metric(data: Mapping[str, Any], metrics: Any
                            ) -> list[tuple[str, str, ScoreMatrix]]:
    """``(collection name, metric, one-metric ScoreMatrix)`` of every collection of every
    metric of ``{metric: [collection, ...] or {name: collection}}`` (positional ones named
    ``collection0``, ...), for the metrics asked for."""
    keys = [str(k) for k in data]
    wanted = [metrics] if isinstance(metrics, str) else metrics
    if wanted is not None:
        missing = [str(m) for m in wanted if str(m) not in keys]
        if missing or not list(wanted):
            raise ConfigError(f"metrics: {missing[0]!r} is not a metric of the data "
                              f"({', '.join(keys)})" if missing else
                              "metrics=[] lists no metric")
    out = []
    for metric, spec in data.items():
        metric = str(metric)
        if wanted is not None and metric not in [str(m) for m in wanted]:
            continue
        if isinstance(spec, Mapping):  # (name, where, collection)
            named = [(str(k), f"data[{metric!r}][{str(k)!r}]", v) for k, v in spec.items()]
        elif isinstance(spec, list | tuple):
            named = [(f"collection{i}", f"data[{metric!r}][{i}]", v)
                     for i, v in enumerate(spec)]
        else:
            named = [("collection0", f"data[{metric!r}]", spec)]
        if not named:
            raise InputError(f"no collection for metric {metric!r}", file="data")
        for cname, where, item in named:
            if isinstance(item, pd.DataFrame) and not (
                    {"system", "topic", "metric", "value"} <= set(item.columns)):
                matrix = frame_to_matrix(item, metric, where)
            elif isinstance(item, pd.DataFrame | ScoreMatrix | pa.Table):
                matrix = as_score_matrix(item)
                if metric not in matrix.metrics:
                    raise ConfigError(f"{where}: no metric {metric!r} (it has "
                                      f"{', '.join(matrix.metrics)})")
                matrix = matrix.select(metrics=[metric])
            else:
                raise ConfigError(f"{where} is {type(item).__name__}: a collection is a "
                                  f"DataFrame or a ScoreMatrix")
            out.append((cname, metric, matrix))
    return out


def as_collection_list(data: Mapping[str, Any], metrics: Any = None) -> CollectionList:
    """Several collections, each studied on its own by a study that does not pool them,
    as the :class:`~irsim.data.sets.CollectionList` the command line's
    ``collection.paths={METRIC: [file, ...]}`` gives: the collections of each metric are
    grouped by name (``{metric: {name: collection}}``) or by position (``{metric:
    [collection, ...]}``: ``collection0``, ``collection1``, ...); a collection's metrics must
    share its systems and topics.

    Examples
    --------
    >>> a = pd.DataFrame({"s1": [0.1, 0.3], "s2": [0.2, 0.4]})
    >>> s = as_collection_list({"AP": {"t7": a, "t8": a}, "P@10": {"t8": a}})
    >>> [(name, m.metrics) for name, m in s.parts]
    [('t7', ('AP',)), ('t8', ('AP', 'P@10'))]
    """
    groups: dict[str, list[ScoreMatrix]] = {}
    for cname, _, matrix in _collections_per_metric(data, metrics):
        groups.setdefault(cname, []).append(matrix)
    return CollectionList(tuple((n, ScoreMatrix.stack(ms)) for n, ms in groups.items()))


def as_doc_collection(runs: Any, qrels: Any, *, depth: int = 1000, missing: str = "error",
                      scores: str = "float64", run_names: str = DEFAULT_RUN_NAMES) -> DocCollection:
    """TREC runs and graded qrels given as paths (files, directories, glob patterns, lists:
    :func:`irsim.data.collection.list_files`) or as :class:`~irsim.data.Runs` /
    :class:`~irsim.data.Qrels` (run files' scores read as `scores`: ``float64`` as
    trec_eval 10.0, or ``float32`` as trec_eval <= 9.0.8 and pytrec_eval, see
    :func:`irsim.data.read_runs`; runs named by `run_names`, by ``file`` name or by ``tag``:
    :func:`irsim.data.trec.name_runs`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "q").write_text("1 0 d1 1\\n1 0 d2 0\\n")
    >>> _ = (d / "r").write_text("1 Q0 d1 1 2.0 r\\n1 Q0 d2 2 1.0 r\\n")
    >>> docs = as_doc_collection(d / "r", d / "q")
    >>> len(docs.runs), len(docs.qrels)
    (2, 2)
    """
    from irsim.data.collection import list_files
    from irsim.data.trec import read_qrels, read_runs
    from irsim.data.types import Qrels, Runs

    if runs is None or qrels is None:
        raise ConfigError("runs and qrels are both needed for document-level data")
    if not isinstance(runs, Runs):
        runs = read_runs(list_files(runs, "runs"), scores=scores, run_names=run_names)
    if not isinstance(qrels, Qrels):
        files = list_files(qrels, "qrels")
        if len(files) != 1:
            raise ConfigError(f"qrels must name one file, got {len(files)}")
        qrels = read_qrels(files[0])
    if missing not in ("error", "zero", "drop"):
        raise unknown_name("missing policy", str(missing), ("error", "zero", "drop"))
    return DocCollection(runs, qrels, int(depth), missing)


def matrix_to_long(matrix: ScoreMatrix) -> pa.Table:
    """Long table (metric, system, topic, value) of a score matrix, like ``trec_eval -q``.

    Examples
    --------
    >>> m = ScoreMatrix(np.array([[[0.5, 1.0]]]), ["AP"], ["run1"], ["401", "402"])
    >>> matrix_to_long(m).to_pylist()[1]
    {'metric': 'AP', 'system': 'run1', 'topic': '402', 'value': 1.0}
    """
    nm, ns, nt = matrix.shape
    return pa.table({
        "metric": pa.array(np.repeat(np.asarray(matrix.metrics, object), ns * nt), pa.string()),
        "system": pa.array(np.tile(np.repeat(np.asarray(matrix.systems, object), nt), nm),
                           pa.string()),
        "topic": pa.array(np.tile(np.asarray(matrix.topics, object), nm * ns), pa.string()),
        "value": pa.array(matrix.values.ravel(), pa.float64()),
    })
