"""Write result tables into a run directory atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["write_tables", "read_tables"]


def write_tables(tables: dict[str, pa.Table], run_dir: str | os.PathLike) -> dict[str, Path]:
    """Write each table to ``<run_dir>/results/<name>.parquet``.

    All files are first written into a temporary directory inside `run_dir` and then moved
    into place, so a failure never leaves a partial set of new tables behind.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> paths = write_tables({"t": pa.table({"a": [1, 2]})}, d)
    >>> read_tables(d)["t"].num_rows
    2
    """
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
