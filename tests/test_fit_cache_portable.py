"""A fitted generator does not depend on the machine (issue 25): design=urbano2019 fitted on
one "machine" (OpenBLAS Prescott kernels, numpy without its AVX-512 paths) and on another
(the SkylakeX kernels, numpy's AVX-512 paths) gives the same tables, and a fit cache written
on the first and read on the second gives them too.

Each machine is a subprocess with its own environment (the BLAS kernel and numpy's SIMD
dispatch are fixed when numpy loads). Integers are compared exactly, floats within the bound
of tests/test_golden.py (docs/ARCHITECTURE.md, "Determinism").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import has_data
from test_golden import assert_golden

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not has_data(), reason="needs ../shared/data")]

AVX512 = "avx512f" in Path("/proc/cpuinfo").read_text()

#: The two machines: environment variables set for the subprocess.
MACHINE_A = {"OPENBLAS_CORETYPE": "Prescott",
             "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
MACHINE_B = {"OPENBLAS_CORETYPE": "SkylakeX" if AVX512 else "Haswell"}

SCRIPT = r"""
import json, sys
import numpy, threadpoolctl
import pyarrow.parquet as pq
from irsim.runner import compose_config, run
overrides, out = json.loads(sys.argv[1]), sys.argv[2]
tables = run(compose_config(overrides + ["quiet=true"]), out + "/run", report=False)
for name, table in tables.items():
    pq.write_table(table, f"{out}/{name}.parquet")
arch = [i.get("architecture") for i in threadpoolctl.threadpool_info()
        if i["internal_api"] == "openblas"]
simd = numpy._core._multiarray_umath.__cpu_features__
json.dump({"blas": arch[0] if arch else None, "avx512f": bool(simd.get("X86_V4"))},
          open(out + "/machine.json", "w"))
"""


def _machine(env: dict[str, str], overrides: list[str], out: Path) -> dict:
    out.mkdir(parents=True)
    full = {**os.environ, **env, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(overrides), str(out)],
                          env=full, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "machine.json").read_text())


def _tables(out: Path) -> dict:
    return {p.stem: pq.read_table(p) for p in sorted(out.glob("*.parquet"))}


def test_fit_and_fit_cache_are_the_same_on_two_machines(small_p10_pool, tmp_path):
    csvs = small_p10_pool
    base = ["experiment=urbano2019",
            f"collection.paths={{P@10: [{csvs}/adhoc5_p10.csv, {csvs}/adhoc6_p10.csv]}}",
            "metrics=[P@10]", "experiment.trials=250", "experiment.design.power_trials=250",
            "experiment.B=50", "experiment.sizes=[10]", "experiment.deltas=[0.05,0.1]",
            "experiment.tests=[t,sign]"]
    cache_a = tmp_path / "cache_a"
    a = _machine(MACHINE_A, [*base, f"experiment.design.fit_cache={cache_a}"], tmp_path / "a")
    b = _machine(MACHINE_B, [*base, f"experiment.design.fit_cache={tmp_path / 'cache_b'}"],
                 tmp_path / "b")
    b_reads_a = _machine(MACHINE_B, [*base, f"experiment.design.fit_cache={cache_a}"],
                         tmp_path / "b_reads_a")
    # the machines really differ (the test cannot pass vacuously)
    assert a["blas"].lower() in ("prescott", "katmai") and not a["avx512f"]
    assert b["blas"].lower() == MACHINE_B["OPENBLAS_CORETYPE"].lower()
    assert b["avx512f"] == AVX512 == b_reads_a["avx512f"]
    ta, tb, tc = (_tables(tmp_path / k) for k in ("a", "b", "b_reads_a"))
    assert sorted(ta) == sorted(tb) == sorted(tc)
    assert "test_errors_models" in ta and ta["type_2"].num_rows > 0
    for name in ta:
        assert_golden(tb[name], ta[name], f"fresh fit on B vs A: {name}")
        assert_golden(tc[name], ta[name], f"A's cache read on B vs A: {name}")
    # the cache keys do not name the machine, and B read A's cache instead of fitting
    assert sorted(p.name for p in cache_a.iterdir()) == sorted(
        p.name for p in (tmp_path / "cache_b").iterdir())

    def fit_run(k: str) -> dict:
        return json.loads((tmp_path / k / "run" / "manifest.json").read_text())[
            "collection"]["fit_run"]

    assert fit_run("a")["collections_fitted"] == fit_run("b")["collections_fitted"] == 2
    assert fit_run("b_reads_a")["collections_fitted"] == 0
    assert fit_run("b_reads_a")["collections_cached"] == 2
