"""The data kind of the studies that compare qrels (assessors, budget): runs and several
named qrels of the same topics (``runs_qrels_set``), read from the command line's
``collection`` or the Python door's keywords."""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError
from irsim.registry import data_kind

__all__ = ["AssessorInput", "read_assessor_runs", "load_from_config", "load_from_python",
           "KIND"]

_RUN_SUFFIXES = (".txt", ".run", ".runs", ".res", ".trec", ".tsv", ".tab")


@dataclass(frozen=True)
class AssessorInput:
    """What the loaders read: runs and named qrels of the same topics.

    Attributes
    ----------
    runs : Runs
        One run per file, named by the file name (not the run tag: two runs of DL19 share
        the tag ``mono-electra``).
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


def _run_name(p: Path) -> str:
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    stem, suffix = Path(name).stem, Path(name).suffix
    return stem if stem and suffix.lower() in _RUN_SUFFIXES else name


def _expand(spec: Any, what: str, data_dir: str | None = None) -> list[Path]:
    """Files of a path, a directory (its files), a glob pattern or a list of them; a
    relative path not found here is looked up in `data_dir`."""
    items = [spec] if isinstance(spec, str | os.PathLike) else list(spec)
    out: list[Path] = []
    for item in items:
        text = os.path.expanduser(str(item))
        roots = [text] + ([str(Path(data_dir) / text)]
                          if data_dir and not os.path.isabs(text) else [])
        hits: list[str] = []
        for root in roots:
            if any(ch in root for ch in "*?["):
                hits = sorted(h for h in glob.glob(root) if os.path.isfile(h))
            elif os.path.isdir(root):
                hits = sorted(str(p) for p in Path(root).iterdir()
                              if p.is_file() and not p.name.startswith("."))
            elif os.path.isfile(root):
                hits = [root]
            if hits:
                break
        if not hits:
            raise InputError(f"no {what} file found", file=text)
        out.extend(Path(h) for h in hits)
    return out


def read_assessor_runs(spec: Any, *, scores: str = "float64",
                       data_dir: str | None = None) -> Runs:
    """Read run files (a directory, glob, file or list), one run per file named by its file
    name without ``.gz`` and a results extension.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for f in ("a.txt", "b.txt"):  # the same tag in both files
    ...     _ = (d / f).write_text("1 Q0 x 1 1.0 same\\n")
    >>> read_assessor_runs(d).names
    ('a', 'b')
    """
    from irsim.data.trec import read_run

    if isinstance(spec, Runs):
        return spec
    files = _expand(spec, "run", data_dir)
    parts = [read_run(p, name=_run_name(p), scores=scores) for p in files]
    seen: dict[str, Path] = {}
    for p, r in zip(files, parts, strict=True):
        if r.names[0] in seen:
            raise InputError(f"run name {r.names[0]!r} is also used by {seen[r.names[0]]}",
                             file=p)
        seen[r.names[0]] = p
    counts = [len(r) for r in parts]
    return Runs(names=tuple(r.names[0] for r in parts),
                run=np.repeat(np.arange(len(parts), dtype=np.int32), counts),
                topic=np.concatenate([r.topic for r in parts]),
                docno=np.concatenate([r.docno for r in parts]),
                score=np.concatenate([r.score for r in parts]),
                sources=tuple(str(p) for p in files), precision=scores)


def _read_qrels_set(spec: Any, data_dir: str | None = None) -> dict[str, Qrels]:
    """Named qrels from a mapping (name -> path or Qrels) or from paths / globs / a
    directory (each file named by its stem)."""
    from irsim.data.trec import read_qrels

    if spec is None:
        raise ConfigError("qrels are required: a mapping of names to qrels files")
    if isinstance(spec, Mapping) or hasattr(spec, "items"):
        out = {}
        for name, value in dict(spec.items()).items():
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
    out = {}
    for p in _expand(spec, "qrels", data_dir):
        name = _run_name(p)
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
    data_dir = cfg.get("data_dir")
    data_dir = None if data_dir is None else str(data_dir)
    if col.get("runs") is None:
        raise ConfigError("collection.runs is required (a directory, glob or list of run "
                          "files)")
    runs = read_assessor_runs(col.runs, scores=str(col.get("scores") or "float64"),
                              data_dir=data_dir)
    return AssessorInput(runs, _read_qrels_set(col.get("qrels"), data_dir),
                         int(col.get("depth") or 1000))


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
                                                            or "float64"))
    return AssessorInput(runs, _read_qrels_set(keywords.get("qrels")),
                         int(keywords.get("depth") or 1000))


KIND = data_kind("runs_qrels_set", description="runs and several qrels of the same topics",
                 from_config=load_from_config, from_python=load_from_python,
                 keywords={"runs": None, "qrels": None, "depth": 1000, "scores": "float64"})
