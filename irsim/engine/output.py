"""Write result tables into a run directory atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from irsim import rundir
from irsim import tables as registry
from irsim.errors import InputError
from irsim.rundir import atomic_write

__all__ = ["write_tables", "read_tables", "clear_report", "write_manifest"]


def write_tables(tables: dict[str, pa.Table], run_dir: str | os.PathLike) -> dict[str, Path]:
    """Write each table to ``<run_dir>/results/<name>.parquet``.

    Every table is first checked against its schema in :mod:`irsim.tables`
    (:func:`irsim.tables.check`): an unregistered name raises :class:`KeyError`, a schema
    mismatch :class:`ValueError` or :class:`TypeError`, and nothing is written. Optional
    columns (filled by only some studies of a table, e.g. ``swap_summary``'s) may be absent.

    All files are first written into a temporary directory inside `run_dir` and then moved
    into place, so a failure never leaves a partial set of new tables behind. Pages carry
    CRC checksums, which :func:`read_tables` verifies (a corrupt data page behind an intact
    footer is an error, not silently wrong numbers). Tables of an
    earlier run in `run_dir` that this call does not write are removed: ``results/`` then
    holds exactly `tables` of irsim's. Only tables irsim recorded as its own
    (:mod:`irsim.rundir`) are ever removed: a user's Parquet file there stays; a symlinked
    ``results/`` is refused.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> t = registry.table("per_topic", {"metric": ["AP"] * 2, "system": ["r1", "r2"],
    ...                                  "topic": ["401"] * 2, "value": [0.5, 0.25]})
    >>> paths = write_tables({"per_topic": t}, d)
    >>> read_tables(d)["per_topic"].num_rows
    2
    >>> _ = write_tables({}, d)  # per_topic is not part of this run: removed
    >>> sorted(read_tables(d))
    []
    >>> _ = write_tables({"per_topic": t}, d)
    >>> write_tables({"per_topic": t.drop_columns(["value"])}, d)
    Traceback (most recent call last):
    ...
    ValueError: table 'per_topic': the table lacks column(s) ['value']
    """
    for name, table in tables.items():
        # studies still build swap_summary with their own subset of its columns; once they
        # build it with irsim.tables.table, the check can be strict
        registry.check(name, table)
    run_dir = Path(run_dir)
    results = run_dir / "results"
    for path in (run_dir, results):
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a directory", file=path)
    rundir.check_links(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".results-", dir=run_dir))
    try:
        for name, table in tables.items():
            with open(tmp / f"{name}.parquet", "wb") as f:
                pq.write_table(table, f, write_page_checksum=True)
                f.flush()
                os.fsync(f.fileno())
        results.mkdir(exist_ok=True)
        new = {f"results/{name}.parquet" for name in tables}
        rundir.record(run_dir, new)  # recorded as irsim's before they exist
        out = {}
        for name in tables:
            dest = results / f"{name}.parquet"
            os.replace(tmp / f"{name}.parquet", dest)
            out[name] = dest
        # an earlier run's tables (only those irsim wrote)
        rundir.remove_owned(run_dir, {f for f in rundir.owned(run_dir)
                                      if f.startswith("results/") and f not in new})
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def clear_report(run_dir: str | os.PathLike) -> None:
    """Remove ``report.md`` and the PNG plots of an earlier run from `run_dir`, so that a
    new report leaves none of the old plots behind: only those irsim recorded as its own
    (:mod:`irsim.rundir`); a user's plot or notes stay.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for name in ("report.md", "old.png", "mine.png", "notes.txt"):
    ...     _ = (d / name).write_text("x")
    >>> rundir.record(d, ["report.md", "old.png"])
    >>> clear_report(d)
    >>> sorted(p.name for p in d.iterdir() if p.name != rundir.OWNED)
    ['mine.png', 'notes.txt']
    """
    run_dir = Path(run_dir)
    rundir.remove_owned(run_dir, {f for f in rundir.owned(run_dir)
                                  if f == "report.md" or ("/" not in f and f.endswith(".png"))})


def read_tables(run_dir: str | os.PathLike) -> dict[str, pa.Table]:
    """Read every ``results/*.parquet`` of a run directory; a file that is not a readable
    Parquet table (torn, corrupt footer, a data page failing its CRC) raises
    :class:`InputError` naming it.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "results").mkdir()
    >>> _ = (d / "results" / "asl.parquet").write_bytes(b"PAR1 garbage")
    >>> read_tables(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: .../results/asl.parquet: not a readable Parquet table (...)
    """
    results = Path(run_dir) / "results"
    out = {}
    for path in sorted(results.glob("*.parquet")):
        try:
            out[path.stem] = pq.read_table(path, page_checksum_verification=True)
        except Exception as err:  # noqa: BLE001 - ArrowInvalid, OSError, ...: all one line
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise InputError(f"not a readable Parquet table ({first})", file=path) from None
    return out


def write_manifest(run_dir: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write ``<run_dir>/manifest.json`` atomically (both doors: :func:`irsim.runner.run`,
    :meth:`irsim.api.Result.report`); `record` is an :func:`irsim.provenance.manifest` with
    the written tables' ``table_sha256``."""
    import json

    path = Path(run_dir) / "manifest.json"
    text = json.dumps(record, indent=2, default=str).encode()
    atomic_write(path, lambda f: f.write(text))
    return path
