"""Shard checkpoints in the run directory, so an interrupted run recomputes only what is
missing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from irsim.engine.base import Partial, Shard
from irsim.engine.partials import Kind, decode, encode

__all__ = ["CheckpointStore", "fingerprint_of"]


def fingerprint_of(params: Mapping[str, Any], data_digest: str) -> str:
    """sha256 of the study parameters (JSON, sorted keys) and the data digest.

    Examples
    --------
    >>> fingerprint_of({"B": 10}, "abc") == fingerprint_of({"B": 10}, "abc")
    True
    >>> fingerprint_of({"B": 10}, "abc") == fingerprint_of({"B": 11}, "abc")
    False
    """
    blob = json.dumps(dict(params), sort_keys=True, default=str) + "|" + data_digest
    return hashlib.sha256(blob.encode()).hexdigest()


class CheckpointStore:
    """One ``.npz`` per finished shard under ``<root>/<study>/``, written atomically.

    A ``fingerprint`` file ties the checkpoints to the study parameters and data; a
    mismatch discards them (the study changed, so they would be wrong).
    """

    def __init__(self, root: str | os.PathLike, study: str, fingerprint: str,
                 fields: Mapping[str, Kind] | None = None):
        self.dir = Path(root) / study
        self.fingerprint = fingerprint
        self.fields = fields
        stamp = self.dir / "fingerprint"
        if self.dir.exists() and (
            not stamp.exists() or stamp.read_text().strip() != fingerprint
        ):
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        stamp.write_text(fingerprint)

    def _path(self, shard: Shard) -> Path:
        return self.dir / f"{shard.name}.npz"

    def load(self, shard: Shard) -> Partial | None:
        """The saved partial of `shard`, or None."""
        path = self._path(shard)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            return arrays if self.fields is None else decode(self.fields, arrays)
        except (OSError, ValueError):  # a torn file from a crash: recompute it
            path.unlink(missing_ok=True)
            return None

    def save(self, shard: Shard, partial: Partial) -> None:
        """Write `partial` atomically (temp file + rename)."""
        path = self._path(shard)
        tmp = path.with_suffix(".tmp.npz")
        arrays = partial if self.fields is None else encode(self.fields, partial)
        np.savez(tmp, **arrays)
        os.replace(tmp, path)

    def clear(self) -> None:
        """Remove every checkpoint of this study."""
        shutil.rmtree(self.dir, ignore_errors=True)
