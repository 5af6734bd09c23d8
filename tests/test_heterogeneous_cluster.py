"""A heterogeneous Ray cluster (issue 25): worker nodes whose BLAS kernels differ give the
tables of engine=local for every study.

A ``ray.cluster_utils.Cluster`` (a head without CPUs, which holds the driver's objects, and one
1-CPU worker node per OpenBLAS core type of :data:`CORETYPES`) is started once for the module.
Each worker node's raylet, and so every worker process it starts, gets its own environment
(``Cluster.add_node(env_vars={"OPENBLAS_CORETYPE": ...})``, Ray's ``RayParams.env_vars``);
the environment of the test process is left alone. The test cannot pass vacuously:

* kernels: a probe task pinned to each worker node (``NodeAffinitySchedulingStrategy``) reports
  the ``architecture`` that threadpoolctl reads from every OpenBLAS loaded there (numpy's and
  scipy's); the nodes must report three different ones, Haswell's and SkylakeX's by name;
* spread: the engine's shard actors are replaced, for the test only, by a subclass
  (:func:`recording_actor`) that runs the same kernel and appends one line per shard (study,
  shard, node, OpenBLAS architecture of the process that ran it) to a file; every study run
  through the engine (test_errors design=urbano2019: the copula selections too) must have
  run shards on every worker node, each under that node's kernel, and the manifest must name
  this cluster (4 nodes, 3 CPUs, 3 workers).

Every study runs on small sizes (the configurations of tests/golden/cases.py and the studies'
own CLI tests, with smaller shards so that every node computes some) through the CLI's code
path (:func:`irsim.runner.run` of a composed config), once with engine=local in this process
and once with ``engine=ray engine.address=<cluster> engine.workers=3``. The tables are
compared by :func:`assert_same_tables`: integers and strings exactly, floats bit for bit
(:data:`FLOAT_ULPS` is the one place to loosen that).

What a failure can show: a value that depends on the kernel differs from engine=local only
when the shard that computes it ran on a node whose kernel differs from this process's (on an
AVX-512 machine without OPENBLAS_CORETYPE this process runs SkylakeX, like one node). Which
actor lands on which node is Ray's choice, so a difference confined to one shard (discpower's
top-k bootstrap replicates, error_rates' sd table) is caught in some runs only; the message
lists the shards each kernel ran. Differences spread over the shards (error_rates' and
coverage's counts, swap's largest set mean, found by every pair block) are caught every time.
Computations in the driver (the simulator fits of test_errors and multiple_testing) run on the
same kernel in both runs and are not tested here (tests/test_golden.py under each
OPENBLAS_CORETYPE is).

Skipped (with the reason) where the CPU cannot run OpenBLAS's SkylakeX kernels (no avx512f in
/proc/cpuinfo): OpenBLAS would then silently run another kernel on that node.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import SHARED_DATA

#: OpenBLAS core type of each worker node (one node each).
CORETYPES = ("Haswell", "SkylakeX", "Prescott")

#: Tolerance policy of :func:`assert_same_tables` for floating-point columns: the largest
#: distance in units in the last place (between same-signed finite values) still counted as
#: equal. 0 = bit for bit (-0.0 against 0.0 differs too; NaN equals only the same NaN).
FLOAT_ULPS = 0

#: Engine settings of the Ray runs: every worker node holds one actor.
WORKERS = len(CORETYPES)

#: Smallest shards of studies whose replicate blocks are aligned to the kernels' units (a
#: requested size is rounded up to one unit: 256 pairs, 250 replicates, 4 runs...).
SMALL = ["engine.shard_items=1", "engine.shard_replicates=1"]
#: Studies whose simulation checks split trials without alignment: 250 trials per shard.
SMALL_CHECK = ["engine.shard_items=1", "engine.shard_replicates=250"]

#: Case name -> command-line overrides ({data}: ../shared/data, {tmp}: the module's temporary
#: directory with two small Urbano CSVs). Small sizes: golden cases where they exist, shrunk
#: or widened (more systems, trials, sizes) so that each study has at least 3 shards. Where a
#: choice was free, the one whose shards gave different tables on different kernels before
#: issue 25's fix was taken (error_rates: 36 synthetic runs, not 40; swap: pair blocks that
#: each find the largest set mean; coverage: P@10 on TREC-8, not synthetic scores), so that
#: this test can fail.
CASES: dict[str, list[str]] = {
    "discpower": ["experiment=discpower", "experiment.B=1000", *SMALL],
    # 630 pairs: 3 pair blocks, each computing the largest set mean of every system
    "swap": ["experiment=swap", "collection.runs=36", "experiment.trials=500", *SMALL],
    "error_rates": ["experiment=error_rates", "collection.runs=36", "experiment.trials=20",
                    "experiment.test_B=200", "experiment.sd_samples=10", *SMALL],
    "effort": ["experiment=effort", "collection.runs=36", "experiment.trials=20", *SMALL],
    # P@10 (a grid metric: interval bounds that tie the true mean) of 129 TREC-8 runs
    "coverage": ["experiment=coverage", "collection=matrix",
                 "collection.path={data}/urbano/adhoc8_p10.csv", "collection.metric=P@10",
                 "experiment.sizes=[5,10,15,20,25,30]", "experiment.samples=100",
                 "experiment.B=200", *SMALL],
    "corpus_ci": ["experiment=corpus_ci", "experiment.B=300", "experiment.splits=1", *SMALL],
    "test_errors": ["experiment=test_errors", "collection=synthetic_scores",
                    "experiment.trials=300", "experiment.B=200", "experiment.sizes=[25,50]",
                    "experiment.deltas=[0.0,0.05]", "experiment.alpha=[0.01,0.05,0.1]",
                    *SMALL],
    # 14 + 14 runs (13 + 13 kept): 156 pair copulas, 3 selection shards of 64 pairs
    "test_errors_urbano2019": [
        "experiment=urbano2019", "collection.paths={{P@10: [{tmp}/adhoc5_p10.csv, "
        "{tmp}/adhoc6_p10.csv]}}", "metrics=[P@10]", "experiment.trials=250",
        "experiment.design.power_trials=250", "experiment.B=50", "experiment.sizes=[10,20]",
        "experiment.deltas=[0.05,0.1]", "experiment.tests=[t,sign]", *SMALL],
    "multiple_testing": [
        "experiment=multiple_testing", "collection=matrix",
        "collection.path={data}/urbano/adhoc8_ap.csv", "collection.metric=AP",
        "experiment.systems=[4]", "experiment.sizes=[8]", "experiment.share_null=[0.5]",
        "experiment.trials=750", "experiment.tests=[t,sign]", "seed=2", *SMALL],
    "topic_set_size": [
        "experiment=topic_set_size", "collection=matrix",
        "collection.paths={{AP: {data}/urbano/adhoc8_ap.csv, P@10: {data}/urbano/adhoc8_p10.csv}}",
        "experiment.min_diff=[0.1]", "experiment.m=[2,20]",
        "experiment.diff_variance=pairs_max", "experiment.check_trials=500", *SMALL_CHECK],
    "reliability": [
        "experiment=reliability", "collection=matrix",
        "collection.paths={{AP: {data}/urbano/adhoc8_ap.csv, P@10: {data}/urbano/adhoc8_p10.csv}}",
        "experiment.B=200", "seed=7", "experiment.drop_bottom=0.25", "experiment.max_topics=80",
        "experiment.targets=[0.9]", "experiment.check_trials=500",
        "experiment.check_topics=[10,20]", *SMALL_CHECK],
    # 4 systems on AP and P@10, three Monte Carlo tests: one shard per (metric, test), 6
    "compare": [
        "experiment=compare", "collection=matrix",
        "collection.paths={{AP: {data}/urbano/adhoc8_ap.csv, P@10: {data}/urbano/adhoc8_p10.csv}}",
        "experiment.systems=[run2,run3,run9,run12]",
        "experiment.tests=[t,wilcoxon,randomisation,paired_bootstrap,unpaired_bootstrap]",
        "experiment.B=500", "seed=3", *SMALL],
    # 8 DL 2019 runs, the NIST qrels and two assessors' (tests/test_assessors.py's SMALL)
    "assessors": [
        "experiment=assessors", "collection=trec",
        "collection.runs=[" + ",".join(f"{{data}}/dl19-assessors/runs/{r}.gz" for r in (
            "bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
            "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base")) + "]",
        "collection.qrels={{" + ", ".join(f"{q}: {{data}}/dl19-assessors/qrels/{q}.txt" for q in (
            "nist", "andrew-parry", "eugene-yang")) + "}}",
        "experiment.reference=nist", "experiment.B=40", "experiment.test_B=600",
        "experiment.metrics=[AP,P@10]", "experiment.tests=[t,randomisation]",
        "experiment.corrections=[none,holm]", "seed=3", *SMALL],
    # 20 synthetic runs on 3 shards: a randomised Tukey HSD per design and the Tukey
    # p-values per design and model, one shard each; the known truth in 2 trial shards and
    # the split halves of every design and model in 1
    "factorial": ["experiment=factorial", "metrics=[AP]", "experiment.shards=3",
                  "experiment.B=200", "experiment.pair_pvalues=true", "seed=3",
                  "experiment.truth_trials=500", "experiment.split_trials=40", *SMALL],
}

#: Studies the engine runs for a case beyond the case's own (design=urbano2019 selects its
#: pair copulas as shards on the run's engine first).
EXTRA_STUDIES = {"test_errors_urbano2019": 1}


# ------------------------------------------------------------------ the comparison policy
def _float_bits(values: np.ndarray) -> np.ndarray:
    """Floats as signed integers ordered like the floats (adjacent floats differ by 1)."""
    width = {2: np.int16, 4: np.int32, 8: np.int64}[values.dtype.itemsize]
    bits = np.ascontiguousarray(values).view(width).astype(np.int64)
    low = np.int64(np.iinfo(width).min)
    return np.where(bits < 0, low - bits, bits)


def _float_mismatch(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows where two float columns differ beyond :data:`FLOAT_ULPS`."""
    if FLOAT_ULPS == 0:
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
        return np.ascontiguousarray(x).view(width) != np.ascontiguousarray(y).view(width)
    finite = np.isfinite(x) & np.isfinite(y)
    far = np.abs(_float_bits(x) - _float_bits(y)) > FLOAT_ULPS
    same_special = ~finite & ((x == y) | (np.isnan(x) & np.isnan(y)))
    return np.where(finite, far, ~same_special)


def column_differences(got: pa.Table, want: pa.Table) -> list[str]:
    """One line per column of `want` whose values differ in `got` (the first differing row,
    both values, how many rows differ), by the policy of this module; empty when equal."""
    out = []
    for name in want.column_names:
        a, b = got.column(name).combine_chunks(), want.column(name).combine_chunks()
        nulls = np.asarray(a.is_null()) != np.asarray(b.is_null())
        if pa.types.is_floating(b.type) and a.type == b.type:
            x = a.fill_null(0).to_numpy(zero_copy_only=False)
            y = b.fill_null(0).to_numpy(zero_copy_only=False)
            differ = nulls | _float_mismatch(x, y)
        else:
            xs, ys = a.to_pylist(), b.to_pylist()
            differ = nulls | np.array([u != v for u, v in zip(xs, ys, strict=True)], bool)
        if differ.any():
            row = int(np.flatnonzero(differ)[0])
            out.append(f"{name}: {int(differ.sum())} of {len(differ)} rows differ, first row "
                       f"{row}: ray={a[row].as_py()!r} local={b[row].as_py()!r}")
    return out


def table_differences(got: dict[str, pa.Table], want: dict[str, pa.Table]) -> list[str]:
    """Every difference of two runs' tables (names, schemas, row counts, values), as lines
    ``table/column: ...``, in table order; empty when they are the same."""
    if sorted(got) != sorted(want):
        return [f"tables: ray={sorted(got)} local={sorted(want)}"]
    out = []
    for name in sorted(want):
        g, w = got[name], want[name]
        if g.schema.remove_metadata() != w.schema.remove_metadata():
            out.append(f"{name}: schema ray={g.schema} local={w.schema}")
        elif g.num_rows != w.num_rows:
            out.append(f"{name}: rows ray={g.num_rows} local={w.num_rows}")
        else:
            out += [f"{name}/{line}" for line in column_differences(g, w)]
    return out


def assert_same_tables(got: dict[str, pa.Table], want: dict[str, pa.Table], where: str) -> None:
    """The tables of a Ray run (`got`) equal those of engine=local (`want`): integers and
    strings exactly, floats within :data:`FLOAT_ULPS` (0: bit for bit). The message lists
    every differing table and column, each with its first differing row."""
    diffs = table_differences(got, want)
    assert not diffs, f"{where}: engine=ray differs from engine=local:\n  " + "\n  ".join(diffs)


def test_comparison_catches_a_last_bit_change():
    """The policy at FLOAT_ULPS = 0: one ulp, -0.0 against 0.0, one integer, a null differ."""
    t = {"t": pa.table({"x": [0.1, 0.2], "n": [1, 2], "s": ["a", "b"]})}
    assert table_differences(t, t) == []
    cases = {"x": [0.1, np.nextafter(0.2, 1.0)], "n": [1, 3], "s": ["a", None]}
    for col, values in cases.items():
        u = {"t": t["t"].set_column(t["t"].column_names.index(col), col,
                                    pa.array(values, t["t"].column(col).type))}
        diffs = table_differences(u, t)
        assert len(diffs) == 1 and diffs[0].startswith(f"t/{col}: 1 of 2 rows differ, first "
                                                       f"row 1"), diffs
    zero = {"t": pa.table({"x": [0.0]})}
    assert table_differences({"t": pa.table({"x": [-0.0]})}, zero) != []
    with pytest.raises(AssertionError, match="t/x: 1 of 2 rows differ"):
        assert_same_tables({"t": pa.table({"x": [0.1, 0.3]})}, {"t": pa.table({"x": [0.1, 0.2]})},
                           "case")


# ------------------------------------------------------------------ the cluster
def avx512f() -> bool | None:
    """Whether the CPU has avx512f (None: no /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return any(line.startswith("flags") and "avx512f" in line.split()
               for line in text.splitlines())


def openblas_probe() -> Any:
    """A function returning the architecture of every OpenBLAS loaded in its process
    (numpy's and scipy's, both loaded first). Made by a function, so that Ray ships it by
    value (the workers cannot import this test module)."""

    def architectures() -> list[str]:
        import numpy  # noqa: F401  (loads numpy's OpenBLAS)
        import scipy.linalg  # noqa: F401  (loads scipy's)
        from threadpoolctl import threadpool_info

        return sorted(str(i.get("architecture")) for i in threadpool_info()
                      if i.get("internal_api") == "openblas")

    return architectures


def local_kernel() -> str:
    """OPENBLAS_CORETYPE of this process and the architectures of its OpenBLAS libraries."""
    import os

    return (f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
            f"{sorted(set(openblas_probe()()))}")


def recording_actor(log_path: str) -> type:
    """The engine's shard actor, recording where each shard ran: one JSON line per shard
    (study, shard index, node id, OPENBLAS_CORETYPE and OpenBLAS architectures of the
    process) appended to `log_path`. Defined in a function, so Ray ships it by value."""
    from irsim.engine.ray_executor import _ShardActor

    architectures = openblas_probe()

    class RecordingActor(_ShardActor):
        def run(self, shard):
            import os

            import ray

            partial = super().run(shard)
            line = json.dumps({"study": self.study.name, "shard": shard.index,
                               "node": ray.get_runtime_context().get_node_id(),
                               "coretype": os.environ.get("OPENBLAS_CORETYPE"),
                               "arch": architectures(), "pid": os.getpid()})
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            return partial

    return RecordingActor


@dataclass
class Hetero:
    address: str
    coretype: dict[str, str]  # worker node id -> OPENBLAS_CORETYPE
    arch: dict[str, list[str]]  # worker node id -> OpenBLAS architectures found there


def _probe_nodes(address: str, nodes: list[str]) -> dict[str, dict[str, Any]]:
    """What a task pinned to each node sees: its node id, OPENBLAS_CORETYPE, architectures."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    architectures = openblas_probe()

    @ray.remote(num_cpus=1)
    def probe() -> dict[str, Any]:
        import os

        return {"node": ray.get_runtime_context().get_node_id(),
                "coretype": os.environ.get("OPENBLAS_CORETYPE"),
                "arch": architectures()}

    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    try:
        alive = [n for n in ray.nodes() if n["Alive"]]
        assert len(alive) == len(nodes) + 1, alive  # the head and the worker nodes
        assert all(n["NodeManagerAddress"] == "127.0.0.1" for n in alive), alive
        refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False))
                .remote() for n in nodes]
        return dict(zip(nodes, ray.get(refs, timeout=120), strict=True))
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def hetero():
    """The module's cluster: a 0-CPU head and one 1-CPU worker node per core type, their
    kernels checked; shut down (by handle) after the module."""
    has = avx512f()
    if has is None:
        pytest.skip("needs Linux /proc/cpuinfo to tell whether the CPU runs SkylakeX kernels")
    if not has:
        pytest.skip("this CPU has no avx512f: OpenBLAS cannot run its SkylakeX kernels here, "
                    "so a Haswell/SkylakeX/Prescott cluster cannot be simulated")
    if not openblas_probe()():
        pytest.skip("numpy and scipy use no OpenBLAS here: OPENBLAS_CORETYPE chooses nothing")
    import ray
    from ray.cluster_utils import Cluster

    from irsim.engine.ray_executor import loopback_only

    loopback_only()  # conftest does it too: every node listens on 127.0.0.1 only
    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        coretype = {}
        for core in CORETYPES:
            node = cluster.add_node(num_cpus=1, env_vars={"OPENBLAS_CORETYPE": core})
            coretype[node.node_id] = core
        cluster.wait_for_nodes()
        seen = _probe_nodes(cluster.address, list(coretype))
        for node, core in coretype.items():
            assert seen[node]["node"] == node and seen[node]["coretype"] == core, seen
            # numpy's and scipy's OpenBLAS both found, on one kernel
            assert seen[node]["arch"] and len(set(seen[node]["arch"])) == 1, seen
        arch = {node: seen[node]["arch"] for node in coretype}
        kernels = {core: arch[node][0] for node, core in coretype.items()}
        # the nodes really run different kernels, the requested ones where OpenBLAS names them
        # (OpenBLAS calls its Prescott kernels "Katmai"); an OpenBLAS built without
        # DYNAMIC_ARCH ignores OPENBLAS_CORETYPE and fails here: the test would prove nothing
        assert len(set(kernels.values())) == len(CORETYPES), (
            f"the worker nodes do not run {len(CORETYPES)} different OpenBLAS kernels: "
            f"{kernels}")
        assert kernels["Haswell"].lower() == "haswell", kernels
        assert kernels["SkylakeX"].lower() == "skylakex", kernels
        print(f"\ncluster up in {time.perf_counter() - t0:.1f}s; kernels {kernels}")
        yield Hetero(cluster.address, coretype, arch)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


# ------------------------------------------------------------------ the studies
def run_case(overrides: list[str], run_dir: Path) -> tuple[dict[str, pa.Table], dict]:
    """The tables and manifest of one run, computed as the CLI computes them (no report)."""
    from irsim.runner import compose_config, run

    tables = run(compose_config([*overrides, "quiet=true"]), run_dir, report=False)
    return tables, json.loads((run_dir / "manifest.json").read_text())


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_study_on_mixed_kernels_equals_local(case, hetero, small_p10_pool, tmp_path,
                                             monkeypatch):
    """Every study's tables on the mixed-kernel cluster equal engine=local's, and its shards
    ran on every worker node, each under that node's kernel."""
    from irsim.engine import ray_executor

    overrides = [o.format(data=SHARED_DATA, tmp=small_p10_pool) for o in CASES[case]]
    t0 = time.perf_counter()
    local, _ = run_case([*overrides, "engine=local"], tmp_path / "local")
    t_local = time.perf_counter() - t0

    log = tmp_path / "shards.jsonl"
    monkeypatch.setattr(ray_executor, "_ShardActor", recording_actor(str(log)))
    t0 = time.perf_counter()
    remote, manifest = run_case([*overrides, "engine=ray", f"engine.address={hetero.address}",
                                 f"engine.workers={WORKERS}"], tmp_path / "ray")
    t_ray = time.perf_counter() - t0

    # the run was this cluster's: the head and every worker node, one actor per CPU
    cluster = manifest["run"]["ray"]
    assert cluster["gcs_address"] == hetero.address, cluster
    assert (cluster["nodes"], cluster["cpus"], cluster["workers"]) == (
        len(CORETYPES) + 1, WORKERS, WORKERS), cluster
    # every study the engine ran spread its shards over every worker node, and each shard
    # ran under its node's kernel
    records = [json.loads(line) for line in log.read_text().splitlines()]
    by_study: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_study[r["study"]].append(r)
        assert r["coretype"] == hetero.coretype[r["node"]], r
        assert r["arch"] == hetero.arch[r["node"]], r
    assert len(by_study) == 1 + EXTRA_STUDIES.get(case, 0), sorted(by_study)
    assert manifest["shards"] in [len(rs) for rs in by_study.values()], (
        manifest["shards"], {s: len(rs) for s, rs in by_study.items()})
    spread = {s: {hetero.coretype[r["node"]] for r in rs} for s, rs in by_study.items()}
    for study, cores in spread.items():
        assert cores == set(CORETYPES), f"{study}: shards ran on {sorted(cores)} only"
    placed = {s: {core: sorted(r["shard"] for r in rs if hetero.coretype[r["node"]] == core)
                  for core in CORETYPES} for s, rs in by_study.items()}
    print(f"\n{case}: shards per kernel {placed}; local {t_local:.1f}s, ray {t_ray:.1f}s")

    assert_same_tables(remote, local, f"{case} (shards per OPENBLAS_CORETYPE: {placed}; "
                                      f"engine=local: {local_kernel()})")
