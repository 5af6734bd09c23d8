"""Load the collection a config names: a ScoreMatrix of per-topic scores, or document-level
runs + qrels (whose metrics the caller computes: :func:`irsim.kit.loading.load_collection`)."""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["DocCollection", "load_score_matrix", "load_doc_collection", "wanted_metrics",
           "KINDS"]

KINDS = ("synthetic_trec", "synthetic_scores", "matrix", "trec")


@dataclass(frozen=True)
class DocCollection:
    """Document-level data: runs and graded qrels."""

    runs: Runs
    qrels: Qrels
    depth: int = 1000
    missing: str = "error"


log = logging.getLogger(__name__)

def _get(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    value = cfg.get(key, default) if hasattr(cfg, "get") else getattr(cfg, key, default)
    return default if value is None else value


def _local(spec: Any, data_dir: str | None, offline: bool, name: Any = None) -> Path:
    """A file given on the command line: relative to the working directory if it exists
    there, else resolved in the data directory (downloaded if it has a url); `name` is the
    collection's (for messages)."""
    from irsim.data.registry import resolve_file

    # lexists: a symlink here (even a looping or broken one) is the file meant; its reader
    # reports what is wrong with it
    if isinstance(spec, (str, os.PathLike)):
        here = Path(spec).expanduser()
        if os.path.lexists(here):
            return here
        if not here.is_absolute():  # neither here nor in the data directory: say both
            from irsim.data.registry import data_dir_from

            there = Path(data_dir_from(data_dir)) / here
            if not os.path.lexists(there):
                raise InputError(f"file not found: looked in the working directory "
                                 f"({Path.cwd() / here}) and in the data directory "
                                 f"({there})", file=str(spec))
    if hasattr(spec, "items"):
        spec = dict(spec.items())
    return resolve_file(spec, data_dir=data_dir, offline=offline,
                        collection=None if name is None else str(name))


def _files(spec: Any, data_dir: str | None, offline: bool, what: str,
           name: Any = None) -> list[Path]:
    if spec is None:
        raise ConfigError(f"collection.{what} is required for collection kind 'trec'")
    if isinstance(spec, str | os.PathLike):
        items = [spec]
    elif isinstance(spec, Sequence):  # a list (an OmegaConf ListConfig is one)
        items = list(spec)
    else:
        raise ConfigError(f"collection.{what} must be a file, a glob or a list of them, got "
                          f"{spec!r}")
    out: list[Path] = []
    for item in items:
        text = str(item)
        if any(ch in text for ch in "*?["):
            hits = sorted(glob.glob(os.path.expanduser(text)))
            if not hits and data_dir is not None:
                hits = sorted(glob.glob(str(Path(data_dir) / text)))
            if not hits:
                raise InputError(f"no files match collection.{what} pattern", file=text)
            dirs = [h for h in hits if os.path.isdir(h)]
            if dirs:  # runs/* beside an earlier run directory: files only, said once
                log.warning("collection.%s=%s: skipping %d director%s (%s)", what, text,
                            len(dirs), "y" if len(dirs) == 1 else "ies",
                            ", ".join(dirs[:3]) + (", ..." if len(dirs) > 3 else ""))
                hits = [h for h in hits if h not in dirs]
                if not hits:
                    raise InputError(f"collection.{what} pattern matches directories only",
                                     file=text)
            out.extend(Path(h) for h in hits)
        else:
            out.append(_local(item, data_dir, offline, name))
    return out


def load_doc_collection(
    cfg: Mapping[str, Any], *, data_dir: str | None = None, offline: bool = False
) -> DocCollection:
    """Runs and qrels of a ``trec`` or ``synthetic_trec`` collection config."""
    kind = _get(cfg, "kind")
    if kind == "synthetic_trec":
        import numpy as np

        from irsim.data.synthetic import synthetic_trec

        n_runs = int(_get(cfg, "runs", 20))
        quality = None
        if _get(cfg, "quality_low") is not None or _get(cfg, "quality_high") is not None:
            quality = np.linspace(float(_get(cfg, "quality_low", 0.0)),
                                  float(_get(cfg, "quality_high", 2.0)), n_runs)
        runs, qrels = synthetic_trec(
            runs=n_runs,
            topics=int(_get(cfg, "topics", 50)),
            docs_per_topic=int(_get(cfg, "docs_per_topic", 1000)),
            depth=int(_get(cfg, "depth", 1000)),
            relevant_rate=float(_get(cfg, "relevant_rate", 0.05)),
            quality=quality,
            quality_sd=float(_get(cfg, "quality_sd", 0.0)),
            topic_sd=float(_get(cfg, "topic_sd", 0.0)),
            seed=int(_get(cfg, "seed", 0)),
        )
        return DocCollection(runs, qrels, int(_get(cfg, "depth", 1000)), "error")
    if kind == "trec":
        from irsim.data.trec import read_qrels, read_runs

        run_files = _files(_get(cfg, "runs"), data_dir, offline, "runs", _get(cfg, "name"))
        qrels_files = _files(_get(cfg, "qrels"), data_dir, offline, "qrels",
                             _get(cfg, "name"))
        if len(qrels_files) != 1:
            raise ConfigError(f"collection.qrels must name one file, got {len(qrels_files)}")
        missing = _get(cfg, "missing", "error")
        if missing not in ("error", "zero", "drop"):
            raise unknown_name("collection.missing policy", str(missing),
                               ("error", "zero", "drop"))
        runs = read_runs(run_files, scores=str(_get(cfg, "scores", "float64")))
        return DocCollection(runs, read_qrels(qrels_files[0]), int(_get(cfg, "depth", 1000)),
                             missing)
    raise ConfigError(f"collection kind {kind!r} has no document-level data; use a 'trec' "
                      f"or 'synthetic_trec' collection")


def wanted_metrics(cfg: Mapping[str, Any], metrics: Sequence[str] | str | None
                   ) -> list[str] | None:
    """The metrics a collection of config `cfg` is loaded with: `metrics` (checked: an
    empty list or a repeated name is refused), else the collection's ``default_metrics``;
    None: all the metrics of a score matrix.

    Examples
    --------
    >>> wanted_metrics({"kind": "trec", "default_metrics": ["AP"]}, None)
    ['AP']
    >>> wanted_metrics({"kind": "matrix"}, ["AP", "AP"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: metrics lists 'AP' twice (each metric gives its own ...
    """
    kind = _get(cfg, "kind")
    if kind not in KINDS:
        raise unknown_name("collection kind", str(kind), KINDS)
    if metrics is not None:
        metrics = [str(m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
        if not metrics:
            raise ConfigError("metrics=[] lists no metric (leave it out for the collection's "
                              "default metrics)")
        repeated = sorted({m for m in metrics if metrics.count(m) > 1})
        if repeated:
            raise ConfigError(f"metrics lists {repeated[0]!r} twice (each metric gives its "
                              "own rows; remove the repeat)")
    wanted = list(metrics) if metrics else None
    if wanted is None and _get(cfg, "default_metrics") is not None:
        wanted = list(_get(cfg, "default_metrics"))
    return wanted


def load_score_matrix(cfg: Mapping[str, Any], *, metrics: Sequence[str] | None = None,
                      data_dir: str | None = None, offline: bool = False) -> ScoreMatrix:
    """The ScoreMatrix of a score-level collection config (``kind`` ``synthetic_scores`` or
    ``matrix``; a document-level collection is evaluated first:
    :func:`irsim.kit.loading.load_collection`).

    Parameters
    ----------
    cfg : mapping
        The ``collection`` node of the Hydra config (``conf/collection/*.yaml``).
    metrics : sequence of str, optional
        Metrics to keep; default (None) the collection's ``default_metrics`` (for a matrix:
        all its metrics). An empty list or a repeated name is refused.
    data_dir, offline
        Where named files are found or downloaded; never download when offline.

    Examples
    --------
    >>> m = load_score_matrix({"kind": "synthetic_scores", "systems": 4, "topics": 10})
    >>> m.shape
    (1, 4, 10)
    """
    wanted = wanted_metrics(cfg, metrics)
    kind = _get(cfg, "kind")
    if kind in ("trec", "synthetic_trec"):
        raise ConfigError(f"collection kind {kind!r} is document-level: its metrics are "
                          "computed from runs and qrels first (irsim.kit.loading."
                          "load_collection)")
    if kind == "synthetic_scores":
        from irsim.data.synthetic import synthetic_scores

        names = tuple(wanted) if wanted else ("synthetic",)
        matrix = synthetic_scores(
            systems=int(_get(cfg, "systems", 30)),
            topics=int(_get(cfg, "topics", 50)),
            metrics=names,
            seed=int(_get(cfg, "seed", 0)),
        ).matrix
        return matrix
    # kind == "matrix"
    from irsim.data.matrix_io import read_matrix

    paths = _get(cfg, "paths")
    path = _get(cfg, "path")
    if paths is None and path is None:
        raise ConfigError("collection=matrix needs collection.path (with collection.metric "
                          "for an Urbano CSV) or collection.paths={METRIC: file, ...}")
    if paths is not None:
        parts = [read_matrix(_local(spec, data_dir, offline, _get(cfg, "name")),
                             metric=str(name))
                 for name, spec in dict(paths).items()]
        matrix = ScoreMatrix.stack(parts)
    else:
        matrix = read_matrix(_local(path, data_dir, offline, _get(cfg, "name")),
                             metric=_get(cfg, "metric"))
    if wanted:
        matrix = matrix.select(metrics=wanted)
    return matrix
