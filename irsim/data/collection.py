"""Load the collection a config names: a ScoreMatrix of per-topic scores, or document-level
runs + qrels (whose metrics the caller computes: :func:`irsim.kit.loading.load_collection`).

Each ``kind`` of collection config is read by its registered reader
(:mod:`irsim.data.readers`); the built-in ones register here: ``matrix``, ``trec``,
``synthetic_trec``, ``synthetic_scores`` and ``trec_eval``. The loaders ask :func:`reader`
and name no kind.
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irsim.data.matrix import ScoreMatrix
from irsim.data.readers import (
    ENTRY_POINTS,
    READERS,
    CollectionConfig,
    Reader,
    _help,
    check_level,
    register_reader,
)
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["DocCollection", "load_score_matrix", "load_doc_collection", "wanted_metrics",
           "list_files", "readers", "reader", "MatrixCollection", "TrecCollection",
           "SyntheticTrecCollection", "SyntheticScoresCollection", "TrecEvalCollection"]


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


# --- the built-in readers: their typed configs (collection/base_<kind>) and load functions

@dataclass
class MatrixCollection(CollectionConfig):
    """Per-topic score matrices from files (``conf/collection/matrix.yaml``), one
    collection or several (``paths: {METRIC: [file, ...]}``, ``collections: [...]``)."""

    kind: str = "matrix"
    name: str = "matrix"
    path: Any = _help("one score matrix file (Urbano CSV with metric, or long CSV/Parquet)")
    metric: str | None = _help("the metric of an Urbano CSV given by path")
    paths: Any = _help("{METRIC: file | {file, url, sha256} | [file, ...] | {name: file}}")
    collections: Any = _help("registered score-matrix collections, each studied")


@dataclass
class TrecCollection(CollectionConfig):
    """TREC run files and qrels (``conf/collection/trec.yaml``)."""

    kind: str = "trec"
    name: str = "trec"
    runs: Any = _help("a directory, a glob, a file or a list of them")
    qrels: Any = _help("a qrels file, or {assessor: file} for several assessors")
    run_names: str = _help("runs named by file name (without .gz and a results extension) "
                           "or by tag: file | tag", "file")
    depth: int = _help("documents per ranked list irsim evaluates: 1000 is trec_eval "
                       "-M1000; a depth >= the longest list is trec_eval without -M", 1000)
    scores: str = _help("run scores ranked as float64 (trec_eval 10.0) or float32 "
                        "(trec_eval <= 9.0.8, pytrec_eval)", "float64")
    missing: str = _help("a topic in runs but not qrels (or the reverse): error | zero | "
                         "drop", "error")


@dataclass
class SyntheticTrecCollection(CollectionConfig):
    """A seeded document-level collection (``conf/collection/synthetic.yaml``)."""

    kind: str = "synthetic_trec"
    name: str = "synthetic"
    runs: int = 20
    topics: int = 50
    docs_per_topic: int = 1000
    depth: int = 1000
    quality_low: float | None = 0.5
    quality_high: float | None = 1.5
    quality_sd: float = 0.4
    topic_sd: float = 0.8
    relevant_rate: float = 0.05
    seed: int = 0


@dataclass
class SyntheticScoresCollection(CollectionConfig):
    """A seeded score-level collection (``conf/collection/synthetic_scores.yaml``)."""

    kind: str = "synthetic_scores"
    name: str = "synthetic_scores"
    systems: int = 30
    topics: int = 50
    seed: int = 0


@dataclass
class TrecEvalCollection(CollectionConfig):
    """Per-topic scores printed by ``trec_eval -q``, one file per run
    (``conf/collection/trec_eval.yaml``; :func:`irsim.data.trec_eval.read_trec_eval`)."""

    kind: str = "trec_eval"
    name: str = "trec_eval"
    runs: Any = _help("the trec_eval -q outputs, one file per run: a directory, a glob, a "
                      "file or a list of them")
    run_names: str = _help("runs named by file name (without .gz and a results extension) "
                           "or by the runid trec_eval prints: file | tag", "file")
    missing: str = _help("a topic printed for some runs but not others: error | zero "
                         "(trec_eval -c) | drop", "error")


def _where(cfg: Mapping[str, Any], data_dir: str | None, offline: bool) -> dict[str, Any]:
    from irsim.data.registry import data_dir_from

    return {"data_dir": data_dir_from(data_dir), "offline": offline,
            "collection": _get(cfg, "name")}


def _missing_policy(cfg: Mapping[str, Any]) -> str:
    missing = _get(cfg, "missing", "error")
    if missing not in ("error", "zero", "drop"):
        raise unknown_name("collection.missing policy", str(missing), ("error", "zero", "drop"))
    return str(missing)


def _load_synthetic_trec(cfg: Mapping[str, Any], **_: Any) -> DocCollection:
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


def _load_trec(cfg: Mapping[str, Any], *, data_dir: str | None = None, offline: bool = False,
               **_: Any) -> DocCollection:
    from irsim.data.trec import read_qrels, read_runs

    where = _where(cfg, data_dir, offline)
    run_files = list_files(_get(cfg, "runs"), "collection.runs", **where)
    qrels_files = list_files(_get(cfg, "qrels"), "collection.qrels", **where)
    if len(qrels_files) != 1:
        raise ConfigError(f"collection.qrels must name one file, got {len(qrels_files)}")
    missing = _missing_policy(cfg)
    runs = read_runs(run_files, scores=str(_get(cfg, "scores", "float64")),
                     run_names=str(_get(cfg, "run_names", DEFAULT_RUN_NAMES)))
    return DocCollection(runs, read_qrels(qrels_files[0]), int(_get(cfg, "depth", 1000)),
                         missing)


def _load_synthetic_scores(cfg: Mapping[str, Any], *, metrics: Sequence[str] | None = None,
                           **_: Any) -> ScoreMatrix:
    from irsim.data.synthetic import synthetic_scores

    return synthetic_scores(
        systems=int(_get(cfg, "systems", 30)),
        topics=int(_get(cfg, "topics", 50)),
        metrics=tuple(metrics) if metrics else ("synthetic",),
        seed=int(_get(cfg, "seed", 0)),
    ).matrix


def _load_matrix(cfg: Mapping[str, Any], *, data_dir: str | None = None,
                 offline: bool = False, **_: Any) -> ScoreMatrix:
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
        return ScoreMatrix.stack(parts)
    return read_matrix(_local(path, data_dir, offline, _get(cfg, "name")),
                       metric=_get(cfg, "metric"))


def _load_trec_eval(cfg: Mapping[str, Any], *, data_dir: str | None = None,
                    offline: bool = False, **_: Any) -> ScoreMatrix:
    from irsim.data.trec_eval import read_trec_eval

    files = list_files(_get(cfg, "runs"), "collection.runs", **_where(cfg, data_dir, offline))
    return read_trec_eval(files, run_names=str(_get(cfg, "run_names", DEFAULT_RUN_NAMES)),
                          missing=_missing_policy(cfg))


register_reader("matrix", config=MatrixCollection, level="matrix", load=_load_matrix,
                description="score matrices: Urbano-layout CSV (optional `topic` column) or "
                            "long CSV/Parquet (`system, topic, metric, value`)")
register_reader("trec", config=TrecCollection, level="docs", load=_load_trec,
                description="TREC run files and graded qrels, evaluated by irsim's "
                            "trec_eval-exact metrics")
register_reader("synthetic_trec", config=SyntheticTrecCollection, level="docs",
                load=_load_synthetic_trec,
                description="seeded document-level collection: graded qrels and runs of "
                            "controllable quality")
register_reader("synthetic_scores", config=SyntheticScoresCollection, level="matrix",
                load=_load_synthetic_scores,
                description="seeded score matrix with system effects, topic difficulty and "
                            "interaction noise")
register_reader("trec_eval", config=TrecEvalCollection, level="matrix", load=_load_trec_eval,
                description="`trec_eval -q` outputs, one file per run (trec_eval's measure "
                            "names read as irsim's: map is AP, P_10 is P@10)")

_LOADED_ENTRY_POINTS = False


def readers() -> dict[str, Reader]:
    """The registered collection readers by kind: the built-in ones, then those of the
    entry-point group ``irsim.collections`` (imported once, on first use) and any registered
    since.

    Examples
    --------
    >>> list(readers())[:5]
    ['matrix', 'trec', 'synthetic_trec', 'synthetic_scores', 'trec_eval']
    >>> readers()["trec_eval"].level
    'matrix'
    """
    global _LOADED_ENTRY_POINTS
    if not _LOADED_ENTRY_POINTS:
        import importlib
        from importlib.metadata import entry_points

        _LOADED_ENTRY_POINTS = True
        for ep in entry_points(group=ENTRY_POINTS):
            importlib.import_module(ep.value.split(":")[0].strip())
    return dict(READERS)


def reader(kind: Any) -> Reader:
    """The reader of collection kind `kind`; an unknown kind is refused with the closest.

    Examples
    --------
    >>> reader("trec").level
    'docs'
    >>> reader("trek")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown collection kind 'trek' (did you mean 'trec'?); ...
    """
    known = readers()
    if kind not in known:
        raise unknown_name("collection kind", str(kind), known)
    return known[kind]


def load_doc_collection(
    cfg: Mapping[str, Any], *, data_dir: str | None = None, offline: bool = False
) -> DocCollection:
    """Runs and qrels of a document-level collection config (a kind of level ``docs``:
    ``trec``, ``synthetic_trec``, ...; :func:`readers`)."""
    entry = reader(_get(cfg, "kind"))
    check_level(entry, "docs")
    return entry.load(cfg, metrics=None, data_dir=data_dir, offline=offline)


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
    reader(_get(cfg, "kind"))  # an unknown kind is refused first
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
    """The ScoreMatrix of a score-level collection config (a kind of level ``matrix``:
    ``matrix``, ``synthetic_scores``, ``trec_eval``, ...; a document-level collection is
    evaluated first: :func:`irsim.kit.loading.load_collection`).

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
    entry = reader(_get(cfg, "kind"))
    check_level(entry, "matrix")
    matrix = entry.load(cfg, metrics=wanted, data_dir=data_dir, offline=offline)
    if wanted and tuple(wanted) != matrix.metrics:
        matrix = matrix.select(metrics=wanted)
    return matrix
