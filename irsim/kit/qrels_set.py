"""The data kind of the studies that compare qrels (assessors, budget): runs and several
named qrels of the same topics (``runs_qrels_set``), read from the command line's
``collection`` or the Python door's keywords."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irsim.data.collection import list_files
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.registry import data_kind

__all__ = ["AssessorInput", "read_assessor_runs", "load_from_config", "load_from_python",
           "check_qrels_name",
           "KIND"]


@dataclass(frozen=True)
class AssessorInput:
    """What the loaders read: runs and named qrels of the same topics.

    Attributes
    ----------
    runs : Runs
        One run per file, named by irsim's rule (:func:`irsim.data.trec.name_runs`): by
        file name unless ``run_names="tag"`` (four runs of DL19 share the tag
        ``mono-electra``).
    qrels : dict of str to Qrels
        The qrels by name, in the order given.
    depth : int
        Ranked lists are cut at this many documents.
    """

    runs: Runs
    qrels: dict[str, Qrels]
    depth: int = 1000

    def describe(self) -> dict:
        """What the manifest records about the data."""
        return {"kind": "runs_qrels_set", "run_names": list(self.runs.names),
                "run_files": list(self.runs.sources),
                "qrels_files": {n: q.source for n, q in self.qrels.items()},
                "depth": self.depth}


def _expand(spec: Any, what: str, data_dir: str | None = None) -> list[Path]:
    """Files of a path, a directory (its files), a glob pattern or a list of them
    (:func:`irsim.data.collection.list_files`)."""
    return list_files(spec, what, data_dir=data_dir)


def read_assessor_runs(spec: Any, *, scores: str = "float64", run_names: str = DEFAULT_RUN_NAMES,
                       data_dir: str | None = None) -> Runs:
    """Read run files (a directory, glob, file or list), one run per file named by irsim's
    rule (:func:`irsim.data.trec.name_runs`: by file name without ``.gz`` and a results
    extension, or by tag with ``run_names="tag"``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for f in ("a.txt", "b.txt"):  # the same tag in both files
    ...     _ = (d / f).write_text("1 Q0 x 1 1.0 same\\n")
    >>> read_assessor_runs(d).names
    ('a', 'b')
    """
    from irsim.data.trec import read_runs

    if isinstance(spec, Runs):
        return spec
    return read_runs(_expand(spec, "runs", data_dir), scores=scores, run_names=run_names)


def check_qrels_name(name: str, file: Any = None) -> str:
    """A qrels name as tables list it: not empty and without a comma (a table's ``levels``
    column joins the names of several qrels with commas, so ``a,b`` would read as two).

    Examples
    --------
    >>> check_qrels_name("nist")
    'nist'
    >>> check_qrels_name("a,b")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: qrels name 'a,b': a comma is not allowed in a qrels name ...
    """
    if not name.strip():
        raise ConfigError(f"qrels name {name!r}: a qrels needs a non-empty name")
    if "," in name:
        where = f" (file {file})" if file is not None else ""
        raise ConfigError(f"qrels name {name!r}{where}: a comma is not allowed in a qrels name "
                          f"(tables list several qrels joined by commas); rename it")
    return name


def _depth(value: Any) -> int:
    """The rank depth (trec_eval -M) of the runs: a positive integer; None is 1000."""
    if value is None:
        return 1000
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"depth must be a positive integer (trec_eval -M; None: 1000), "
                          f"got {value!r}")
    return int(value)


def _read_qrels_set(spec: Any, data_dir: str | None = None) -> dict[str, Qrels]:
    """Named qrels from a mapping (name -> path or Qrels) or from paths / globs / a
    directory (each file named by its stem)."""
    from irsim.data.trec import read_qrels

    if spec is None:
        raise ConfigError("qrels are required: a mapping of names to qrels files")
    if isinstance(spec, Mapping) or hasattr(spec, "items"):
        out = {}
        for name, value in dict(spec.items()).items():
            check_qrels_name(str(name))
            if isinstance(value, Qrels):
                out[str(name)] = Qrels(value.topic, value.docno, value.grade,
                                       source=value.source or str(name))
                continue
            files = _expand(value, "qrels", data_dir)
            if len(files) != 1:
                raise ConfigError(f"qrels {name!r} must name one file, got {len(files)}")
            out[str(name)] = read_qrels(files[0])
        if not out:
            raise ConfigError("qrels must name at least two qrels")
        return out
    from irsim.data.trec import file_stem

    out = {}
    for p in _expand(spec, "qrels", data_dir):
        name = check_qrels_name(file_stem(p), p)
        if name in out:
            raise InputError(f"two qrels files are named {name!r}", file=p)
        out[name] = read_qrels(p)
    return out


def load_from_config(cfg: Any, config: Any) -> AssessorInput:
    """The command line's data: ``collection.runs`` (a directory, glob, file or list) and
    ``collection.qrels`` (a mapping of names to files, or files / a glob named by their
    stems), relative paths also looked up in ``data_dir``."""
    col = cfg.collection
    if col.get("kind") != "trec":
        raise ConfigError(f"experiment={config.name} reads TREC runs and qrels: use "
                          "collection=trec "
                          "collection.runs=<dir or glob> +collection.qrels={name: file, ...}")
    from irsim.data.registry import data_dir_from

    data_dir = str(data_dir_from(cfg.get("data_dir")))
    if col.get("runs") is None:
        raise ConfigError("collection.runs is required (a directory, glob or list of run "
                          "files)")
    runs = read_assessor_runs(col.runs, scores=str(col.get("scores") or "float64"),
                              run_names=str(col.get("run_names") or DEFAULT_RUN_NAMES),
                              data_dir=data_dir)
    try:
        depth = _depth(col.get("depth"))
    except ConfigError as err:
        raise ConfigError(f"collection.{str(err).removeprefix('config: ')}") from None
    return AssessorInput(runs, _read_qrels_set(col.get("qrels"), data_dir), depth)


def load_from_python(data: Any, keywords: Mapping[str, Any], config: Any) -> AssessorInput:
    """The Python door's data: ``irsim.<study>(runs=..., qrels={...}, ...)``;
    `data` may be an :class:`AssessorInput` (then no keywords)."""
    if isinstance(data, AssessorInput):
        return data
    if data is not None:
        raise ConfigError(f"irsim.{config.name} takes its data as keywords: runs=<files or "
                          "Runs>, "
                          "qrels={name: file or Qrels, ...}")
    if keywords.get("runs") is None:
        raise ConfigError("runs is required (a directory, glob, list of run files or Runs)")
    runs = read_assessor_runs(keywords["runs"], scores=str(keywords.get("scores")
                                                            or "float64"),
                              run_names=str(keywords.get("run_names")
                                            or DEFAULT_RUN_NAMES))
    return AssessorInput(runs, _read_qrels_set(keywords.get("qrels")),
                         _depth(keywords.get("depth")))


KIND = data_kind("runs_qrels_set", description="runs and several qrels of the same topics",
                 from_config=load_from_config, from_python=load_from_python,
                 keywords={"runs": None, "qrels": None, "depth": 1000, "scores": "float64",
                           "run_names": DEFAULT_RUN_NAMES})
