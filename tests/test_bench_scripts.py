"""The bench/ scripts stay importable (they are run by hand, not by the suite; an API change
must not break them silently)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = sorted((Path(__file__).resolve().parents[1] / "bench").glob("bench_*.py"))


def test_every_workload_has_a_script():
    names = {p.stem for p in BENCH}
    assert {"bench_metrics", "bench_stats", "bench_discpower", "bench_swap", "bench_ci",
            "bench_ray", "bench_test_errors"} <= names


@pytest.mark.parametrize("path", BENCH, ids=[p.stem for p in BENCH])
def test_bench_script_imports(path):
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # main() is guarded by __name__ == "__main__"
    assert callable(module.main)
