"""Record the golden tables: ``python tests/golden/record.py [case ...]``.

Writes ``tests/golden/<case>/<table>.parquet`` for every case of :mod:`cases` (or the named
ones). Run only to (re)record on purpose: the golden test exists to catch any change.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pyarrow.parquet as pq  # noqa: E402
from conftest import SHARED_DATA  # noqa: E402

from golden.cases import CASES  # noqa: E402


def tables_of(overrides: list[str]) -> dict:
    """The tables of one case, computed as the CLI computes them (no report).
    ``IRSIM_GOLDEN_BLAS_THREADS`` (e.g. ``null``: BLAS's own count, ``OPENBLAS_NUM_THREADS``)
    overrides ``engine.blas_threads`` (default 1), so that .ci/run's legs with several
    threads really run the kernels with several threads."""
    import os

    from irsim.runner import compose_config, run

    threads = os.environ.get("IRSIM_GOLDEN_BLAS_THREADS")
    extra = [f"engine.blas_threads={threads}"] if threads else []
    cfg = compose_config([o.replace("{data}", str(SHARED_DATA)) for o in overrides]
                         + ["quiet=true", *extra])
    with tempfile.TemporaryDirectory() as tmp:
        return run(cfg, tmp, report=False)


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        t0 = time.perf_counter()
        tables = tables_of(CASES[name])
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for tname, table in tables.items():
            pq.write_table(table, out / f"{tname}.parquet", compression="zstd")
        print(f"{name}: {sorted(tables)} in {time.perf_counter() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
