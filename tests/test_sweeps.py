"""Sweeps: a Hydra multirun runs all its jobs on one Ray instance; `irsim collect` merges
them into one partitioned dataset with the sweep parameters as columns."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from irsim.collect import collect
from irsim.errors import InputError


def irsim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


@pytest.mark.ray
@pytest.mark.slow
def test_multirun_shares_one_ray_instance_and_collects(tmp_path):
    sweep = tmp_path / "sweep"
    r = irsim("-m", "engine=ray", "engine.num_cpus=2", "engine.workers=2",
              "experiment.B=250,500", "experiment.tests=[paired_bootstrap]", "quiet=true",
              f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    manifests = [json.loads((sweep / j / "manifest.json").read_text()) for j in ("0", "1")]
    addresses = {m["run"]["ray"]["gcs_address"] for m in manifests}
    assert len(addresses) == 1  # both jobs ran on the same Ray instance
    assert all(m["engine"] == "ray" and m["run"]["ray"]["workers"] == 2 for m in manifests)
    # the same job on engine=local gives the same table
    local = tmp_path / "local"
    r = irsim("experiment.B=500", "experiment.tests=[paired_bootstrap]", "quiet=true",
              f"hydra.run.dir={local}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = collect(sweep)
    asl = ds.dataset(out["asl"], partitioning="hive").to_table().to_pandas()
    asl["experiment.B"] = asl["experiment.B"].astype(str)  # hive discovery infers ints
    assert sorted(asl["experiment.B"].unique()) == ["250", "500"]
    assert len(asl) == 2 * 4 * 190
    import pandas as pd

    ref = pd.read_parquet(local / "results" / "asl.parquet")
    mine = (asl[asl["experiment.B"] == "500"][list(ref.columns)]
            .sort_values(["metric", "system_a", "system_b"]).reset_index(drop=True))
    ref = ref.sort_values(["metric", "system_a", "system_b"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, ref)


@pytest.mark.ray
@pytest.mark.slow
def test_hydra_ray_launcher_sweep(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    sweep = tmp_path / "sweep"
    r = irsim("-m", "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
              "+hydra.launcher.ray.init.include_dashboard=false",
              "+hydra.launcher.ray.remote.num_cpus=0",  # job drivers hold no CPU
              "engine=ray", "engine.workers=2", "collection=synthetic_scores",
              "collection.systems=12", "seed=1,2", "experiment.B=250", "quiet=true",
              f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = collect(sweep)
    dp = ds.dataset(out["discpower"], partitioning="hive").to_table().to_pandas()
    assert sorted(dp["seed"].astype(str).unique()) == ["1", "2"]
    assert set(dp.pairs) == {66}


@pytest.mark.slow
def test_collect_merges_jobs_with_parameters(tmp_path):
    from irsim.runner import compose_config, run

    sweep = tmp_path / "sw"
    for job, (b, metric) in enumerate([(100, "[AP]"), (200, "[AP]"), (100, "[RR]")]):
        d = sweep / str(job)
        run(compose_config([f"experiment.B={b}", f"metrics={metric}", "quiet=true"]), d)
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(
            f"- experiment.B={b}\n- metrics={metric}\n- hydra.verbose=false\n")
    out = collect(sweep, tmp_path / "merged")
    dp = ds.dataset(out["discpower"], partitioning="hive").to_table().to_pandas()
    dp["experiment.B"] = dp["experiment.B"].astype(str)
    assert len(dp) == 3 * 2 * 2  # jobs x tests x alphas
    assert set(zip(dp["experiment.B"], dp["metrics"], dp["metric"], strict=True)) == {
        ("100", "AP", "AP"), ("200", "AP", "AP"), ("100", "RR", "RR")}  # a list of one: its item
    assert "hydra.verbose" not in dp.columns
    with pytest.raises(InputError, match="no job with results"):
        collect(tmp_path / "merged")


@pytest.mark.slow
def test_collect_refuses_an_incomplete_sweep(tmp_path):
    """A sweep of 3 jobs of which one never finished, and one never started: refused with
    one line naming them, unless --partial."""
    from irsim.cli import main
    from irsim.runner import compose_config, run

    sweep = tmp_path / "sw"
    for job, b in enumerate([100, 200]):
        d = sweep / str(job)
        run(compose_config([f"experiment.B={b}", "metrics=[AP]", "quiet=true",
                            "experiment.tests=[paired_bootstrap]"]), d)
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(f"- experiment.B={b}\n")
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task: ['experiment.B=100,200,300', 'quiet=true']\n")
    with pytest.raises(InputError, match=r"incomplete sweep: 2 of 3 jobs finished"):
        collect(sweep)
    (sweep / "1" / "manifest.json").unlink()  # job 1 was killed before it finished
    with pytest.raises(InputError, match=r"1 of 3 jobs finished \(unfinished: 1\)"):
        collect(sweep)
    out = collect(sweep, partial=True)
    dp = ds.dataset(out["discpower"], partitioning="hive").to_table().to_pandas()
    assert set(dp["job"].astype(str)) == {"0"}
    with pytest.raises(SystemExit) as exc:
        main(["collect", str(sweep)])
    assert exc.value.code == 2
    main(["collect", str(sweep), str(tmp_path / "out"), "--partial"])
    assert (tmp_path / "out" / "discpower").is_dir()


def test_jobs_install_the_distribution():
    """jobs/ install the distribution of this checkout, irsim-metaeval (`pip install irsim`
    is another project), and tell every node and client about Ray's token authentication."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    name = tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"]
    assert name == "irsim-metaeval"
    texts = {p.name: p.read_text() for p in (root / "jobs").iterdir() if p.is_file()}
    for fname, text in texts.items():
        for m in re.finditer(r"pip install ([^\s`'\"]+)", text):
            target = m.group(1)
            assert target != "irsim" and not target.startswith("irsim=="), (fname, target)
    assert "irsim-metaeval" in texts["rayjob.yaml"] and "irsim-metaeval" in texts["cluster.yaml"]
    import yaml

    job = yaml.safe_load(texts["rayjob.yaml"])["spec"]
    pods = [job["submitterPodTemplate"], job["rayClusterSpec"]["headGroupSpec"]["template"],
            *[g["template"] for g in job["rayClusterSpec"]["workerGroupSpecs"]]]
    for pod in pods:
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token" and "RAY_AUTH_TOKEN" in env
    cluster = yaml.safe_load(texts["cluster.yaml"])
    starts = cluster["head_start_ray_commands"] + cluster["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token" in c for c in starts if "ray start" in c)
    assert "~/.ray/auth_token" in cluster["file_mounts"]
