"""Read the per-topic output of ``trec_eval -q`` (one file per run) into a ScoreMatrix.

Each line is ``measure <whitespace> topic <whitespace> value``, as trec_eval 9 and 10 print
them. The ``all`` rows (means over topics) are dropped: a study computes its own. A measure
irsim computes is renamed to irsim's name (:data:`TREC_EVAL_NAMES`: ``map`` is ``AP``,
``P_10`` is ``P@10``, ``ndcg_cut_10`` is ``nDCG@10``, ``recip_rank`` is ``RR``); any other
keeps trec_eval's name (``bpref``, ``recall_100``, ``num_rel_ret``). ``relstring`` and
``runid`` hold no number and are not scores; ``runid`` names the run when runs are named by
tag.

Examples
--------
>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "bm25.txt").write_text("map\\t301\\t0.25\\nP_10\\t301\\t0.4\\n"
...                                 "map\\t302\\t0.5\\nP_10\\t302\\t0.6\\nmap\\tall\\t0.375\\n")
>>> m = read_trec_eval([d / "bm25.txt"])
>>> m.metrics, m.systems, m.topics, m.values[0, 0].tolist()
(('AP', 'P@10'), ('bm25',), ('301', '302'), [0.25, 0.5])
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from irsim.data.matrix import ScoreMatrix
from irsim.data.trec import DEFAULT_RUN_NAMES, _chunks, _open, name_runs
from irsim.errors import ConfigError, InputError

__all__ = ["read_trec_eval", "irsim_name", "TREC_EVAL_NAMES"]

#: trec_eval's measure names (without a cut-off) -> irsim's (the one table: the metric
#: parser's hints, :func:`irsim.metrics.measures.parse_measure`, use it too). A cut-off
#: ``_k`` becomes ``@k``.
TREC_EVAL_NAMES = {"map": "AP", "map_cut": "AP", "P": "P", "recip_rank": "RR", "ndcg": "nDCG",
                   "ndcg_cut": "nDCG", "Rprec": "Rprec", "success": "Success"}

#: Measures trec_eval prints that hold no number.
NOT_SCORES = ("relstring", "runid")

_NAME = re.compile(r"([A-Za-z_]+?)(?:_([0-9]+))?")


def irsim_name(measure: str) -> str:
    """irsim's name of trec_eval's `measure` (:data:`TREC_EVAL_NAMES`); another measure
    keeps its name.

    Examples
    --------
    >>> [irsim_name(m) for m in ("map", "P_10", "ndcg_cut_10", "recip_rank", "bpref")]
    ['AP', 'P@10', 'nDCG@10', 'RR', 'bpref']
    """
    m = _NAME.fullmatch(measure)
    name = TREC_EVAL_NAMES.get(m.group(1)) if m else None
    if name is None:
        return measure
    return f"{name}@{m.group(2)}" if m.group(2) else name


def _read_one(path: str | PathLike) -> tuple[dict[tuple[str, str], float], set[str]]:
    """``({(irsim measure, topic): value}, run ids)`` of one ``trec_eval -q`` output."""
    p, blocks = _open(path)
    cells: dict[tuple[str, str], float] = {}
    seen: dict[tuple[str, str], int] = {}
    tags: set[str] = set()
    for text, before, _ in _chunks(blocks):
        for i, raw in enumerate(text.split(b"\n")):
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            where = {"file": p, "line": before + i + 1}
            parts = line.split()
            if len(parts) != 3:
                raise InputError(f"expected 3 fields (measure, topic, value) as trec_eval -q "
                                 f"prints them, got {len(parts)}: {line[:80]!r}", **where)
            measure, topic, value = parts
            if measure == "runid":
                tags.add(value)
                continue
            if topic == "all" or measure in NOT_SCORES:
                continue
            try:
                x = float(value)
            except ValueError:
                x = math.nan
            if not math.isfinite(x):
                raise InputError(f"{measure} of topic {topic}: value {value!r} is not a "
                                 "finite number", **where)
            key = (irsim_name(measure), topic)
            if key in seen:
                again = (f"{measure} (read as {key[0]})" if key[0] != measure else measure)
                raise InputError(f"{again} of topic {topic} is also on line {seen[key]}",
                                 **where)
            seen[key] = where["line"]
            cells[key] = x
    if not cells:
        raise InputError("no per-topic value: is it the output of trec_eval -q?", file=p)
    return cells, tags


def read_trec_eval(paths: Sequence[str | PathLike], *, run_names: str = DEFAULT_RUN_NAMES,
                   missing: str = "error") -> ScoreMatrix:
    """The per-topic scores in `paths`, ``trec_eval -q`` outputs of one run each.

    Parameters
    ----------
    paths : sequence of str or path-like
        One file per run (``.gz`` accepted), in the order of the matrix's systems.
    run_names : {"file", "tag"}
        A run is named by its file name without ``.gz`` and a results extension, or by the
        ``runid`` trec_eval prints (irsim's one naming rule,
        :func:`irsim.data.trec.name_runs`).
    missing : {"error", "zero", "drop"}
        A (measure, topic) one run has and another lacks (trec_eval -q prints a topic only
        for runs that retrieved documents for it): an error naming the file, 0 (as
        ``trec_eval -c`` counts it), or the topic left out.

    Returns
    -------
    ScoreMatrix
        Metrics in the order of the first file, topics sorted as trec_eval sorts them.

    Raises
    ------
    InputError
        A line that is not ``measure topic value`` or whose value is no finite number, a
        (measure, topic) given twice in a file (naming the file and the line), a file with
        no per-topic value, a value missing (``missing="error"``), two runs of one name.
    """
    if missing not in ("error", "zero", "drop"):
        raise ConfigError(f"missing must be error, zero or drop, got {missing!r}")
    paths = [Path(p) for p in paths]
    if not paths:
        raise ConfigError("read_trec_eval needs at least one file")
    read = [_read_one(p) for p in paths]
    names = name_runs(paths, [tags for _, tags in read], by=run_names)
    metrics = list(dict.fromkeys(m for cells, _ in read for m, _ in cells))
    topics = sorted({t for cells, _ in read for _, t in cells})
    values = np.full((len(metrics), len(paths), len(topics)), np.nan)
    mi = {m: i for i, m in enumerate(metrics)}
    ti = {t: i for i, t in enumerate(topics)}
    for s, (cells, _) in enumerate(read):
        for (m, t), x in cells.items():
            values[mi[m], s, ti[t]] = x
    holes = np.isnan(values)
    if holes.any():
        if missing == "error":
            m, s, t = (int(v[0]) for v in np.nonzero(holes))
            raise InputError(f"no {metrics[m]} for topic {topics[t]}, which another run has "
                             f"({int(holes.sum())} values missing in all): set "
                             "collection.missing=zero (0, as trec_eval -c) or drop (leave "
                             "such topics out)", file=paths[s])
        if missing == "zero":
            values[holes] = 0.0
        else:
            keep = ~holes.any(axis=(0, 1))
            if not keep.any():
                raise InputError("no topic has a value of every measure for every run "
                                 "(missing=drop)", file=paths[0])
            values, topics = values[:, :, keep], [t for t, k in zip(topics, keep, strict=True) if k]
    return ScoreMatrix(values, metrics, names, topics,
                       source=str(paths[0].parent if len(paths) > 1 else paths[0]))
