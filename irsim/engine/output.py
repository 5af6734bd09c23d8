"""Write result tables into a run directory atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from irsim import tables as registry

__all__ = ["write_tables", "read_tables"]


def write_tables(tables: dict[str, pa.Table], run_dir: str | os.PathLike) -> dict[str, Path]:
    """Write each table to ``<run_dir>/results/<name>.parquet``.

    Every table is first checked against its schema in :mod:`irsim.tables`
    (:func:`irsim.tables.check`): an unregistered name raises :class:`KeyError`, a schema
    mismatch :class:`ValueError` or :class:`TypeError`, and nothing is written. Optional
    columns (filled by only some studies of a table, e.g. ``swap_summary``'s) may be absent.

    All files are first written into a temporary directory inside `run_dir` and then moved
    into place, so a failure never leaves a partial set of new tables behind.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> t = registry.table("per_topic", {"metric": ["AP"] * 2, "system": ["r1", "r2"],
    ...                                  "topic": ["401"] * 2, "value": [0.5, 0.25]})
    >>> paths = write_tables({"per_topic": t}, d)
    >>> read_tables(d)["per_topic"].num_rows
    2
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
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".results-", dir=run_dir))
    try:
        for name, table in tables.items():
            pq.write_table(table, tmp / f"{name}.parquet")
        results = run_dir / "results"
        results.mkdir(exist_ok=True)
        out = {}
        for name in tables:
            dest = results / f"{name}.parquet"
            os.replace(tmp / f"{name}.parquet", dest)
            out[name] = dest
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_tables(run_dir: str | os.PathLike) -> dict[str, pa.Table]:
    """Read every ``results/*.parquet`` of a run directory."""
    results = Path(run_dir) / "results"
    return {p.stem: pq.read_table(p) for p in sorted(results.glob("*.parquet"))}
