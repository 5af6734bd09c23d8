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
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["DocCollection", "load_score_matrix", "load_doc_collection", "wanted_metrics",
           "list_files", "KINDS"]

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


def _skip_dirs(hits: list[str], what: str, where: str) -> list[str]:
    """The files among `hits` (directories skipped, said once in a warning)."""
    dirs = [h for h in hits if os.path.isdir(h)]
    if dirs:  # runs/* beside an earlier run directory: files only, said once
        log.warning("%s=%s: skipping %d director%s (%s)", what, where, len(dirs),
                    "y" if len(dirs) == 1 else "ies",
                    ", ".join(dirs[:3]) + (", ..." if len(dirs) > 3 else ""))
    return [h for h in hits if h not in dirs]


def _directory_files(d: Path, what: str) -> list[Path]:
    """The files of directory `d`, sorted by name (hidden files left out, subdirectories
    skipped with a warning)."""
    entries = sorted(str(p) for p in d.iterdir() if not p.name.startswith("."))
    files = _skip_dirs(entries, what, str(d))
    if not files:
        raise InputError(f"{what}: the directory holds no files", file=d)
    return [Path(f) for f in files]


def list_files(spec: Any, what: str = "runs", *, data_dir: str | os.PathLike | None = None,
               offline: bool = False, collection: Any = None) -> list[Path]:
    """The files `spec` names, in order: every door that reads run or qrels files lists
    them here (``collection.runs``, ``irsim.evaluate``, ``runs=`` of the study functions,
    the assessors study).

    Parameters
    ----------
    spec : str, path-like, mapping or list of them
        A file; a directory (its files, sorted by name: hidden files and subdirectories left
        out); a glob pattern (its files, sorted; directories it matches are skipped with a
        warning); a registry entry ``{file, url, sha256}`` (downloaded once into the data
        directory unless `offline`); or a list of these.
    what : str
        What the files are, as the user gave them (``collection.runs``, ``runs``): named in
        messages.
    data_dir : str or path-like, optional
        Where a relative path or pattern not found in the working directory is looked up
        (the command line passes its data directory; None: the working directory only).
    offline, collection
        Never download; the collection named in a registry entry's messages.

    Returns
    -------
    list of Path

    Raises
    ------
    InputError
        A file, directory or pattern that names nothing (the message says where it looked),
        a directory without files, a pattern that matches directories only.
    ConfigError
        `spec` is missing or of another type.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for f in ("b.run", "a.run.gz", ".hidden"):
    ...     _ = (d / f).write_text("")
    >>> [p.name for p in list_files(d)]
    ['a.run.gz', 'b.run']
    >>> [p.name for p in list_files([str(d / "b*"), d / "a.run.gz"])]
    ['b.run', 'a.run.gz']
    """
    if spec is None:
        raise ConfigError(f"{what} is required: a file, a directory, a glob pattern or a list "
                          "of them")
    if isinstance(spec, str | os.PathLike) or (hasattr(spec, "items") and "file" in spec):
        items = [spec]
    elif isinstance(spec, Sequence):  # a list (an OmegaConf ListConfig is one)
        items = list(spec)
    else:
        raise ConfigError(f"{what} must be a file, a directory, a glob pattern or a list of "
                          f"them, got {spec!r}")
    out: list[Path] = []
    for item in items:
        if hasattr(item, "items"):  # a registry entry {file, url, sha256}
            out.append(_local(item, None if data_dir is None else str(data_dir), offline,
                              collection))
            continue
        here = Path(str(item)).expanduser()
        roots = [here] + ([Path(data_dir).expanduser() / here]
                          if data_dir is not None and not here.is_absolute() else [])
        if any(ch in str(item) for ch in "*?["):
            hits: list[str] = []
            for root in roots:
                hits = sorted(glob.glob(str(root)))
                if hits:
                    break
            if not hits:
                raise InputError(f"no files match the {what} pattern", file=str(item))
            files = _skip_dirs(hits, what, str(item))
            if not files:
                raise InputError(f"{what} pattern matches directories only", file=str(item))
            out.extend(Path(h) for h in files)
            continue
        # lexists: a symlink here (even a looping or broken one) is the file meant; its reader
        # reports what is wrong with it
        found = next((r for r in roots if os.path.lexists(r)), None)
        if found is None:
            looked = (f": looked in the working directory ({Path.cwd() / here}) and in the "
                      f"data directory ({roots[1]})" if len(roots) > 1 else "")
            raise InputError(f"{what} file not found{looked}", file=str(item))
        out.extend(_directory_files(found, what) if found.is_dir() else [found])
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
        from irsim.data.registry import data_dir_from
        from irsim.data.trec import read_qrels, read_runs

        where = {"data_dir": data_dir_from(data_dir), "offline": offline,
                 "collection": _get(cfg, "name")}
        run_files = list_files(_get(cfg, "runs"), "collection.runs", **where)
        qrels_files = list_files(_get(cfg, "qrels"), "collection.qrels", **where)
        if len(qrels_files) != 1:
            raise ConfigError(f"collection.qrels must name one file, got {len(qrels_files)}")
        missing = _get(cfg, "missing", "error")
        if missing not in ("error", "zero", "drop"):
            raise unknown_name("collection.missing policy", str(missing),
                               ("error", "zero", "drop"))
        runs = read_runs(run_files, scores=str(_get(cfg, "scores", "float64")),
                         run_names=str(_get(cfg, "run_names", DEFAULT_RUN_NAMES)))
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
