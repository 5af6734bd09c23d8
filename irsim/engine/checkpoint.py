"""Shard checkpoints in the run directory, so an interrupted run recomputes only what is
missing, and the run-directory lock that keeps two runs out of one directory.

Every checkpoint carries its identity: the study's fingerprint (parameters, data digest, irsim
version), the shard's coordinates and a sha256 checksum of its arrays. A file is reused only
when all three match; anything else (another configuration's shard, a shard copied over
another's name, an empty, truncated or garbage file) is removed and recomputed, never reused
and never an error. Files are written to a temporary name, fsynced and renamed, so a crash
leaves either the old state or the complete new file.

A checkpoint holds what a resume needs, exactly and compactly: the engine saves a shard after
merging it, keeping of its top-k lists only the entries at least as good as their row's bar
(the worst held value at its last selection: the others can never be selected again;
:meth:`irsim.engine.partials.Accumulator.needed`), and a top-k list is stored without empty
slots, its indices as offsets in the narrowest unsigned type. discpower on adhoc8 AP at
B = 4000 (250 replicates per shard, 48 shards): 1,059,034,944 bytes of whole shards;
148,165,843 keeping exactly the entries in the top k right after each merge (derived by
hashing, 5 s of an 11 s study at B = 5000); 162,703,921 keeping those at least as good as
the bar (one comparison per entry), with identical tables. The files are written by a
helper thread (:class:`irsim.engine.runner.CheckpointWriter`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from irsim.engine.base import Partial, Shard
from irsim.engine.partials import Kind, decode, encode
from irsim.errors import InputError
from irsim.rundir import atomic_write

__all__ = ["CheckpointStore", "fingerprint_of", "checksum", "run_dir_lock"]

log = logging.getLogger(__name__)

#: keys of a checkpoint file that hold its identity (never a field's array)
_META = ("__fingerprint__", "__shard__", "__checksum__")


def _irsim_version() -> str:
    from irsim import provenance

    # the version string and the code itself (issue 29: an edit keeps the version string)
    return f"{provenance.VERSION}+{provenance.code_digest()}"


def fingerprint_of(params: Mapping[str, Any], data_digest: str,
                   version: str | None = None) -> str:
    """sha256 of the study parameters (JSON, sorted keys), the data digest and the irsim
    version (default: the running one, with the digest of its source:
    :func:`irsim.provenance.code_digest`), so that checkpoints never cross any of the three.

    Examples
    --------
    >>> fingerprint_of({"B": 10}, "abc") == fingerprint_of({"B": 10}, "abc")
    True
    >>> fingerprint_of({"B": 10}, "abc") == fingerprint_of({"B": 11}, "abc")
    False
    >>> fingerprint_of({"B": 10}, "abc", "1.0") == fingerprint_of({"B": 10}, "abc", "1.1")
    False
    """
    version = _irsim_version() if version is None else version
    blob = (json.dumps(dict(params), sort_keys=True, default=str) + "|" + data_digest + "|"
            + version)
    return hashlib.sha256(blob.encode()).hexdigest()


def checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of `arrays` (sorted by name).

    Examples
    --------
    >>> a = {"x": np.arange(3), "y": np.zeros(2)}
    >>> checksum(a) == checksum({"y": np.zeros(2), "x": np.arange(3)})
    True
    >>> checksum(a) == checksum({"x": np.arange(3), "y": np.ones(2)})
    False
    """
    h = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\x1f{arr.dtype.str}\x1f{arr.shape}\x1e".encode())
        h.update(arr.reshape(-1).view(np.uint8))  # the bytes, without a copy
    return h.hexdigest()


class CheckpointStore:
    """One ``.npz`` per finished shard under ``<root>/<study>/``.

    A ``fingerprint`` file names the study's fingerprint; a directory of another fingerprint
    is discarded as a whole. Each file also carries its own identity (fingerprint, shard
    coordinates, checksum), checked on every load.
    """

    def __init__(self, root: str | os.PathLike, study: str, fingerprint: str,
                 fields: Mapping[str, Kind] | None = None):
        self.dir = Path(root) / study
        self.fingerprint = fingerprint
        self.fields = fields
        stamp = self.dir / "fingerprint"
        try:
            same = stamp.read_text().strip() == fingerprint
        except (OSError, UnicodeDecodeError):
            same = False
        if self.dir.exists() and not same:
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob("*.tmp"):  # half-written files of a crash
            stale.unlink(missing_ok=True)
        if not same:
            atomic_write(stamp, lambda f: f.write(fingerprint.encode()))

    def _path(self, shard: Shard) -> Path:
        return self.dir / f"{shard.name}.npz"

    @staticmethod
    def _coordinates(shard: Shard) -> np.ndarray:
        extra = [shard.part] if shard.part else []  # a composite study's part
        return np.array([shard.index, *shard.items, *shard.reps, *extra], np.int64)

    def load(self, shard: Shard) -> Partial | None:
        """The saved partial of `shard`, or None (absent, or not provably this shard of this
        study: the file is then removed)."""
        path = self._path(shard)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = {k: arrays.pop(k) for k in _META}
            problem = None
            if str(meta["__fingerprint__"]) != self.fingerprint:
                problem = "another configuration"
            elif not np.array_equal(meta["__shard__"], self._coordinates(shard)):
                problem = "another shard"
            elif str(meta["__checksum__"]) != checksum(arrays):
                problem = "checksum mismatch"
            if problem is None:
                return arrays if self.fields is None else decode(self.fields, arrays)
        except Exception as err:  # noqa: BLE001 - empty, torn, garbage: all recomputed
            problem = f"unreadable ({type(err).__name__})"
        log.warning("checkpoint %s: %s; recomputing the shard", path, problem)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        return None

    def save(self, shard: Shard, partial: Partial) -> None:
        """Write `partial` with its identity: temp file, fsync, rename."""
        arrays = dict(partial if self.fields is None else encode(self.fields, partial))
        if any(k in arrays for k in _META):
            raise ValueError(f"field names {_META} are reserved")
        meta = {"__fingerprint__": np.array(self.fingerprint),
                "__shard__": self._coordinates(shard),
                "__checksum__": np.array(checksum(arrays))}
        atomic_write(self._path(shard), lambda f: np.savez(f, **arrays, **meta))

    def clear(self) -> None:
        """Remove every checkpoint of this study."""
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------------ run-directory lock
_held: dict[str, list[Any]] = {}  # resolved path -> [fd, depth] of locks this process holds
_held_guard = threading.Lock()


@contextmanager
def run_dir_lock(run_dir: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on `run_dir` (created if needed) for the block.

    The lock is ``flock`` on the directory itself: no lock file is left behind, and the
    kernel releases it when the holder exits, even on ``kill -9``. Re-entrant within one
    process. A directory locked by another process raises :class:`irsim.errors.InputError`
    at once (no waiting).

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with run_dir_lock(d), run_dir_lock(d):  # re-entrant
    ...     pass
    """
    import fcntl

    path = Path(run_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError("the run directory is a file", file=path) from None
    except OSError as err:
        raise InputError(f"cannot create the run directory: {err.strerror}",
                         file=path) from None
    if not path.is_dir():
        raise InputError("the run directory is a file", file=path)
    key = str(path.resolve())
    with _held_guard:
        entry = _held.get(key)
        if entry is not None:
            entry[1] += 1
    if entry is None:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InputError("run directory in use by another irsim run (wait for it "
                                 "or choose another hydra.run.dir)", file=path) from None
            raise
        with _held_guard:
            _held[key] = entry = [fd, 1]
    try:
        yield path
    finally:
        with _held_guard:
            entry[1] -= 1
            release = entry[1] == 0
            if release:
                del _held[key]
        if release:
            os.close(entry[0])  # closing the descriptor drops the flock
