"""Which code computed a result: a digest of irsim's own source.

A study's fingerprint (:func:`irsim.engine.checkpoint.fingerprint_of`), which decides whether
checkpoints are reused on resume and whether a run directory is complete, covers the irsim
version *and* :func:`code_digest`: an edited or patched installation with the same version
string recomputes everything instead of mixing shards of two codes.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

__all__ = ["code_digest", "source_digest", "file_sha256"]

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
    import irsim

    return source_digest(Path(irsim.__file__).resolve().parent)


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
