"""jobs/: the `ray job submit` entry point on an existing (simulated 2-node) cluster, and the
cluster templates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

JOBS = Path(__file__).resolve().parents[1] / "jobs"


@pytest.mark.ray
@pytest.mark.slow
def test_job_entry_point_runs_on_existing_cluster(tmp_path):
    from ray.cluster_utils import Cluster

    from irsim.runner import compose_config, run

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        env = dict(os.environ, RAY_ADDRESS=cluster.address)  # what `ray job submit` sets
        out = tmp_path / "job"
        r = subprocess.run(
            [sys.executable, str(JOBS / "irsim_job.py"), "collection=synthetic_scores",
             "experiment.B=500", "engine.shard_items=256", "quiet=true",
             f"hydra.run.dir={out}"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    finally:
        cluster.shutdown()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"] == "ray" and manifest["run"]["ray"]["nodes"] == 2
    assert manifest["config"]["engine"]["address"] == "auto"
    local = run(compose_config(["collection=synthetic_scores", "experiment.B=500",
                                "quiet=true"]), tmp_path / "local")
    import pyarrow.parquet as pq

    assert pq.read_table(out / "results" / "asl.parquet").to_pydict() == \
        local["asl"].to_pydict()


def test_templates_are_valid_and_call_the_entry_point():
    rayjob = yaml.safe_load((JOBS / "rayjob.yaml").read_text())
    assert rayjob["kind"] == "RayJob" and rayjob["apiVersion"] == "ray.io/v1"
    assert "jobs/irsim_job.py" in rayjob["spec"]["entrypoint"]
    assert rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] >= 1
    cluster = yaml.safe_load((JOBS / "cluster.yaml").read_text())
    assert cluster["provider"]["type"] == "local"
    assert any("pip install" in c for c in cluster["setup_commands"])
    sweep = (JOBS / "sweep.sh").read_text()
    assert "irsim -m" in sweep and "irsim collect" in sweep
    r = subprocess.run(["bash", "-n", str(JOBS / "sweep.sh")], capture_output=True)
    assert r.returncode == 0, r.stderr


def test_job_arguments():
    sys.path.insert(0, str(JOBS))
    try:
        from irsim_job import job_arguments
    finally:
        sys.path.remove(str(JOBS))
    assert job_arguments([]) == ["engine=ray", "engine.address=auto"]
    assert job_arguments(["engine=local"]) == ["engine=local"]
    # the arguments compose into a valid config either way
    from irsim.runner import compose_config

    assert compose_config(job_arguments(["experiment.B=7"])).engine.address == "auto"
    assert compose_config(job_arguments(["engine=local"])).engine.name == "local"
