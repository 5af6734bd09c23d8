"""Which code computed a result: a digest of irsim's own source, and the run's manifest.

A study's fingerprint (:func:`irsim.engine.checkpoint.fingerprint_of`), which decides whether
checkpoints are reused on resume and whether a run directory is complete, covers the irsim
version *and* :func:`code_digest`: an edited or patched installation with the same version
string recomputes everything instead of mixing shards of two codes.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

try:
    #: The installed distribution's version (``irsim.__version__``).
    VERSION = version("irsim-metaeval")
except PackageNotFoundError:  # running from a source tree without installation
    VERSION = "0.0.0+unknown"

__all__ = ["code_digest", "source_digest", "file_sha256", "versions", "manifest",
           "table_digests"]

_CHUNK = 1 << 20


def source_digest(root: str | os.PathLike) -> str:
    """sha256 over every ``.py`` file under `root` (relative path and bytes, sorted by
    path; ``__pycache__`` left out).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.py").write_text("x = 1\\n")
    >>> before = source_digest(d)
    >>> _ = (d / "a.py").write_text("x = 2\\n")
    >>> source_digest(d) == before, len(before)
    (False, 64)
    """
    root = Path(root)
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    for path in files:
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@functools.cache
def _installed() -> str:
    return source_digest(Path(__file__).resolve().parent)


def code_digest() -> str:
    """:func:`source_digest` of the running ``irsim`` package (computed once per process).

    Examples
    --------
    >>> code_digest() == code_digest() and len(code_digest()) == 64
    True
    """
    return _installed()


def file_sha256(path: str | os.PathLike) -> str:
    """Lower-case hex sha256 of a file's bytes.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def versions() -> dict[str, str]:
    """Versions of irsim, Python and the libraries results depend on."""
    import importlib.metadata as md
    import platform

    out = {"irsim": VERSION, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "pyarrow", "pandas", "hydra-core", "ray", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def table_digests(paths: Mapping[str, str | os.PathLike]) -> dict[str, str]:
    """sha256 of each written table file (the manifest's ``table_sha256``, which
    :func:`irsim.runner.completed` verifies)."""
    return {name: file_sha256(path) for name, path in paths.items()}


def manifest(*, experiment: str, command: Any, seed: int, config: Mapping[str, Any],
             engine: str, collection: Mapping[str, Any], info: Mapping[str, Any],
             tables: Mapping[str, Any], timings: Mapping[str, float]) -> dict[str, Any]:
    """The manifest of a study run, the same keys from both doors (``manifest.json`` of the
    command line, :attr:`irsim.api.Result.manifest` of the Python functions).

    Parameters
    ----------
    experiment : str
        The study.
    command : list of str or str
        The command line (``sys.argv``) or the Python call (``irsim.<name>``).
    seed : int
    config : mapping
        The whole configuration (``experiment``, ``engine``, ``seed``, ``collection`` ...).
    engine : str
        ``local`` or ``ray``.
    collection : mapping
        What the data was (:func:`irsim.api.describe_data`).
    info : mapping
        The engine's run information (``fingerprint``, ``shards``, timings, Ray details).
    tables : mapping of str to pyarrow.Table
        The result tables (their row counts are recorded).
    timings : mapping
        Seconds of the run's phases.

    Examples
    --------
    >>> m = manifest(experiment="swap", command="irsim.swap", seed=0, config={}, engine="local",
    ...              collection={}, info={"fingerprint": "f", "shards": 2}, tables={},
    ...              timings={})
    >>> m["fingerprint"], m["shards"], m["irsim_source_sha256"] == code_digest()
    ('f', 2, True)
    """
    import time

    return {
        "irsim_version": VERSION,
        "irsim_source_sha256": code_digest(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
        "experiment": experiment,
        "seed": int(seed),
        "engine": engine,
        "config": dict(config),
        "fingerprint": info.get("fingerprint"),
        "shards": info.get("shards"),
        "run": dict(info),
        "collection": dict(collection),
        "tables": {k: t.num_rows for k, t in tables.items()},
        "versions": versions(),
        "timings": dict(timings),
    }

