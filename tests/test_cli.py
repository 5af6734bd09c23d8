"""The CLI contract: main job, evaluate, report, bad input (one line, exit 2, no results)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA

from irsim.runner import compose_config, run


def irsim(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_main_job_writes_contracted_outputs(tmp_path):
    cfg = compose_config(["experiment.B=200", "quiet=true"])
    tables = run(cfg, tmp_path)
    assert set(tables) == {"asl", "discpower"}
    asl = pq.read_table(tmp_path / "results" / "asl.parquet")
    assert asl.column_names == ["metric", "test", "system_a", "system_b", "diff", "asl",
                                 "asl_adjusted"]
    assert asl.num_rows == 4 * 2 * 190  # metrics x tests x pairs of 20 runs
    dp = pq.read_table(tmp_path / "results" / "discpower.parquet")
    assert dp.column_names[:7] == ["metric", "test", "alpha", "pairs", "significant",
                                   "sensitivity", "estimated_diff"]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["engine"] == "local"
    assert manifest["shards"] >= 1 and "numpy" in manifest["versions"]
    assert manifest["config"]["experiment"]["B"] == 200
    report = (tmp_path / "report.md").read_text()
    assert "Discriminative power" in report and "asl_curve_paired_bootstrap.png" in report
    assert (tmp_path / "asl_curve_paired_bootstrap.png").stat().st_size > 10_000
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.slow
def test_same_seed_same_tables(tmp_path):
    a = run(compose_config(["experiment.B=250", "quiet=true", "seed=3"]), tmp_path / "a")
    b = run(compose_config(["experiment.B=250", "quiet=true", "seed=3",
                            "engine.shard_items=1", "engine.shard_replicates=1"]),
            tmp_path / "b")
    c = run(compose_config(["experiment.B=250", "quiet=true", "seed=4"]), tmp_path / "c")
    assert a["asl"].to_pydict() == b["asl"].to_pydict()
    assert a["asl"].to_pydict() != c["asl"].to_pydict()


@pytest.mark.slow
def test_console_script_on_a_real_matrix(tmp_path):
    out = tmp_path / "run"
    r = irsim("collection=matrix", f"collection.path={SHARED_DATA}/urbano/adhoc5_ap.csv",
              "collection.metric=AP", "experiment.B=200", "quiet=true",
              f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dp = pd.read_parquet(out / "results" / "discpower.parquet")
    assert set(dp.pairs) == {61 * 60 // 2}


@pytest.mark.slow
def test_named_collection_from_registry(tmp_path):
    cfg = compose_config(["collection=adhoc7", f"data_dir={SHARED_DATA}", "offline=true",
                          "metrics=[AP,RR]", "experiment.B=100", "quiet=true",
                          "experiment.tests=[paired_bootstrap]"])
    tables = run(cfg, tmp_path)
    dp = tables["discpower"].to_pandas()
    assert sorted(set(dp.metric)) == ["AP", "RR"] and set(dp.pairs) == {103 * 102 // 2}


@pytest.mark.slow
def test_evaluate_writes_trec_eval_per_topic(tmp_path):
    out = tmp_path / "ev"
    r = irsim("evaluate", "collection=trec",
              f"collection.runs={SHARED_DATA}/trec_eval/results.test",
              f"collection.qrels={SHARED_DATA}/trec_eval/qrels.test",
              "metrics=[AP,P@10]", "quiet=true", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(out / "results" / "per_topic.parquet")
    # trec_eval 10.0 (out.test.aq): map 301 0.0324, 302 0.5306, 303 0.0201 ... P_10 301 0.2000
    expected = {}
    for line in (SHARED_DATA / "trec_eval" / "out.test.aq").read_text().splitlines():
        name, topic, value = line.split()
        if name in ("map", "P_10") and topic != "all":
            expected[("AP" if name == "map" else "P@10", topic)] = float(value)
    got = {(m, t): v for m, t, v in zip(df.metric, df.topic, df.value, strict=True)}
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=5e-5)


@pytest.mark.parametrize("args,needle", [
    (["collection=matrix", "collection.path=/no/such/file.csv", "collection.metric=AP"],
     "/no/such/file.csv: file not found"),
    # issue 31: a relative path found nowhere names both places irsim looked
    (["collection=matrix", "collection.path=ap.csv", "collection.metric=AP",
      "data_dir=/srv/no-data"],
     "ap.csv: file not found: looked in the working directory ({cwd}/ap.csv) and in the "
     "data directory (/srv/no-data/ap.csv)"),
    (["experiment.B=0"], "experiment.B must be an integer >= 1"),
    (["experiment.alpha=[0.05,1.5]"], "inside (0, 1)"),
    (["metrics=[AP,nDGC@10]"], "unknown metric 'nDGC' (did you mean 'nDCG'"),
    (["experiment.tests=[paired_bootstrp]"], "did you mean 'paired_bootstrap'"),
])
@pytest.mark.slow
def test_bad_input_one_line_exit_2_no_results(tmp_path, args, needle):
    out = tmp_path / "bad"
    r = irsim(*args, "quiet=true", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("irsim: error: "), r.stderr
    assert needle.format(cwd=tmp_path) in lines[0]
    assert "Traceback" not in r.stderr
    assert not (out / "results").exists() and not (out / "manifest.json").exists()


@pytest.mark.slow
def test_bad_run_file_names_file_and_line(tmp_path):
    run_file = tmp_path / "bad.run"
    run_file.write_text("301 Q0 d1 1 2.5 tag\n301 Q0 d2 2 abc tag\n")
    r = irsim("evaluate", "collection=trec", f"collection.runs={run_file}",
              f"collection.qrels={SHARED_DATA}/trec_eval/qrels.test", "quiet=true",
              f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path)
    assert r.returncode == 2
    assert f"{run_file}:2:" in r.stderr and "score" in r.stderr


@pytest.mark.slow
def test_report_command_rebuilds_report(tmp_path):
    run(compose_config(["experiment.B=100", "quiet=true"]), tmp_path)
    (tmp_path / "report.md").unlink()
    r = irsim("report", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "Discriminative power" in (tmp_path / "report.md").read_text()
    r = irsim("report", str(tmp_path / "nope"))
    assert r.returncode == 2 and "not a run directory" in r.stderr


@pytest.mark.slow
def test_list_names_everything():
    r = irsim("list")
    assert r.returncode == 0, r.stderr
    for needle in ("experiments:", "discpower", "collections:", "adhoc8", "metrics:",
                   "nDCG_orig", "tests:", "randomised_tukey_hsd", "ci_methods:",
                   "studentised_logit", "engines:"):
        assert needle in r.stdout
    r = irsim("list", "metrcs")
    assert r.returncode == 2 and "did you mean 'metrics'" in r.stderr


# ------------------------------------------------------------ run-directory reliability (#16)
@pytest.mark.slow
def test_rerun_with_another_config_leaves_nothing_stale(tmp_path):
    """A run owns its directory: a second run with another configuration replaces every
    table, plot, report and manifest of the first (none of the first survive)."""
    first = ["experiment.B=100", "quiet=true", "experiment.tests=[paired_bootstrap]",
             "experiment.stability=true", "experiment.swap=true", "experiment.rankcorr=true"]
    run(compose_config(first), tmp_path)
    old_tables = {p.stem for p in (tmp_path / "results").glob("*.parquet")}
    old_pngs = {p.name for p in tmp_path.glob("*.png")}
    assert {"stability", "rankcorr"} <= old_tables and "mr_pt_curves.png" in old_pngs
    tables = run(compose_config(["experiment.B=120", "quiet=true", "seed=1",
                                 "experiment.tests=[paired_bootstrap]"]), tmp_path)
    assert {p.stem for p in (tmp_path / "results").glob("*.parquet")} == set(tables) == {
        "asl", "discpower"}
    report = (tmp_path / "report.md").read_text()
    pngs = {p.name for p in tmp_path.glob("*.png")}
    assert pngs and all(f"({name})" in report for name in pngs)  # only the new report's
    assert "mr_pt_curves.png" not in pngs
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["seed"] == 1 and manifest["config"]["experiment"]["B"] == 120
    assert not (tmp_path / "checkpoints").exists()
    # irsim report rebuilds from the new tables only
    r = irsim("report", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "Stability" not in (tmp_path / "report.md").read_text()


def _start(args, cwd):
    return subprocess.Popen([sys.executable, "-m", "irsim", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_shards(run_dir, proc, n=3, timeout=120):
    import time

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if len(list((run_dir / "checkpoints").rglob("*.npz"))) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no checkpoint appeared")


LONG = ["experiment.B=40000", "engine.shard_replicates=250", "quiet=true",
        "experiment.estimated_diff=false",
        "experiment.tests=[paired_bootstrap]"]


@pytest.mark.slow
def test_concurrent_run_refused_then_kill9_resume_is_exact(tmp_path):
    """The issue's repro: a second run into a busy directory is refused (one line, exit 2,
    nothing of it written); the first is killed with -9; the rerun resumes and its tables
    equal a fresh run's."""
    import signal

    out = tmp_path / "X"
    first = _start([*LONG, "seed=0", f"hydra.run.dir={out}"], tmp_path)
    try:
        _wait_for_shards(out, first)
        first.send_signal(signal.SIGSTOP)  # still running (and locking) however fast it is
        hydra_cfg = (out / ".hydra" / "config.yaml").read_text()
        second = irsim(*LONG, "seed=1", f"hydra.run.dir={out}", cwd=tmp_path)
        assert second.returncode == 2, second.stderr
        lines = [ln for ln in second.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "in use by another irsim run" in lines[0], second.stderr
        assert (out / ".hydra" / "config.yaml").read_text() == hydra_cfg  # untouched
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    assert not (out / "results").exists()
    done = len(list((out / "checkpoints").rglob("*.npz")))
    r = irsim(*LONG, "seed=0", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run"]["shards_resumed"] == done > 0
    fresh = irsim(*LONG, "seed=0", f"hydra.run.dir={tmp_path / 'fresh'}", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    for name in ("asl", "discpower"):
        a = pd.read_parquet(out / "results" / f"{name}.parquet")
        b = pd.read_parquet(tmp_path / "fresh" / "results" / f"{name}.parquet")
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("engine", ["local", pytest.param("ray", marks=pytest.mark.ray)])
@pytest.mark.slow
def test_ctrl_c_one_line_with_resume_hint(tmp_path, engine):
    import signal

    out = tmp_path / "run"
    # 480 shards: the run is still computing when the signal arrives, even on a busy machine
    args = [*(a for a in LONG if not a.startswith("experiment.B=")), "experiment.B=120000"]
    proc = _start([*args, f"engine={engine}", f"hydra.run.dir={out}"], tmp_path)
    _wait_for_shards(out, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("irsim: error: interrupted") and f"hydra.run.dir={out}" in \
        lines[0]
    assert not (out / "results").exists() and not (out / "manifest.json").exists()
    r = irsim(*args, f"engine={engine}", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "manifest.json").read_text())["run"]["shards_resumed"] >= 3


# ------------------------------------------------------------- where the results go (#19)
@pytest.mark.slow
def test_run_dir_printed_last_and_a_complete_run_is_not_recomputed(tmp_path):
    out = tmp_path / "run"
    args = ["experiment.B=100", "quiet=true", "experiment.tests=[paired_bootstrap]",
            f"hydra.run.dir={out}"]
    r = irsim(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [f"irsim: results in {out}"]  # quiet: that line only, and last
    # the answer on stdout: the summary table's headline column, as in results/
    dp = pq.read_table(out / "results" / "discpower.parquet").to_pandas()
    head = r.stdout.split("discpower: sensitivity by alpha (test=paired_bootstrap)\n")[1]
    lines = [ln.split() for ln in head.splitlines() if ln.strip()]
    assert lines[0] == ["metric", "alpha=0.01", "alpha=0.05"]
    want = dp.pivot(index="metric", columns="alpha", values="sensitivity")
    assert [r[0] for r in lines[1:]] == list(dict.fromkeys(dp.metric))
    assert [[float(v) for v in r[1:]] for r in lines[1:]] == [
        [float(f"{want.loc[m, a]:.4g}") for a in (0.01, 0.05)] for m in dict.fromkeys(
            dp.metric)]
    first = json.loads((out / "manifest.json").read_text())
    asl = (out / "results" / "asl.parquet").read_bytes()
    # the same study again (another engine option and quiet: same fingerprint): complete
    r = irsim(*args, "engine.blas_threads=1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[-1] == f"irsim: results in {out}"
    assert "discpower: sensitivity by alpha (test=paired_bootstrap)" in r.stdout  # reused
    assert lines[0] == f"irsim: {out} is complete: it holds the finished results of this " \
                       f"study (same parameters, seed, data and irsim version); not " \
                       f"recomputed (--force recomputes them)"
    assert json.loads((out / "manifest.json").read_text())["created"] == first["created"]
    assert (out / "results" / "asl.parquet").read_bytes() == asl
    # --force recomputes: a new manifest, the same tables
    import time

    time.sleep(1.1)
    r = irsim(*args, "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "is complete" not in r.stderr
    again = json.loads((out / "manifest.json").read_text())
    assert again["created"] != first["created"] and again["fingerprint"] == first["fingerprint"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "results" / "asl.parquet"),
                                  pq.read_table(pa_buffer(asl)).to_pandas())
    # another seed into the same directory is another study: recomputed
    r = irsim(*args, "seed=5", cwd=tmp_path)
    assert r.returncode == 0 and "is complete" not in r.stderr
    assert json.loads((out / "manifest.json").read_text())["seed"] == 5


def pa_buffer(data: bytes):
    import pyarrow as pa

    return pa.BufferReader(data)


@pytest.mark.slow
def test_not_quiet_progress_and_logs_on_separate_lines(tmp_path):
    out = tmp_path / "run"
    r = irsim("experiment.B=100", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"irsim: results in {out}"
    # log lines start a line of their own (never glued to a progress bar)
    for line in (r.stdout + r.stderr).replace("\r", "\n").splitlines():
        if "[irsim" in line:
            assert line.startswith("[20"), line


@pytest.mark.slow
def test_evaluate_prints_trec_eval_summary_and_writes_report(tmp_path):
    out = tmp_path / "ev"
    r = irsim("evaluate", "collection=trec",
              f"collection.runs={SHARED_DATA}/trec_eval/results.test",
              f"collection.qrels={SHARED_DATA}/trec_eval/qrels.test",
              "collection.run_names=tag",  # named by its tag, as trec_eval's runid
              "metrics=[AP,P@10]", "quiet=true", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # trec_eval 10.0 (out.test.aq): map all 0.1785, P_10 all 0.3000 (run STANDARD)
    expected = {}
    for line in (SHARED_DATA / "trec_eval" / "out.test.aq").read_text().splitlines():
        name, topic, value = line.split()
        if name in ("map", "P_10", "runid") and topic == "all":
            expected[name] = value
    lines = r.stdout.strip().splitlines()
    assert lines[1].split() == ["system", "AP", "P@10"]
    assert lines[2].split() == [expected["runid"], expected["map"], expected["P_10"]]
    report = (out / "report.md").read_text()
    assert "## Mean per system and metric" in report
    assert f"| {expected['runid']} | {expected['map']} | 0.3 |" in report
    assert r.stderr.strip().splitlines()[-1] == f"irsim: results in {out}"


_HEAD = """
import os, sys
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray
ray.init(address="local", num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


@pytest.mark.ray
def test_ray_token_authentication_failure_is_one_line(tmp_path):
    """A cluster with token authentication (RAY_AUTH_MODE=token) and a client with a wrong
    token, or none: one line naming the fix, exit 2, within seconds (Ray would retry
    forever)."""
    import os
    import time

    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "a" * 32}
    head = subprocess.Popen([sys.executable, "-c", _HEAD], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    try:
        address = head.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), address
        for client in ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "b" * 32},
                       {"RAY_AUTH_MODE": "disabled"}):
            env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "irsim", "engine=ray",
                                f"engine.address={address}", "experiment.B=100",
                                f"hydra.run.dir={tmp_path / 'run'}"],
                               capture_output=True, text=True, timeout=120, cwd=tmp_path,
                               env={**env, **client})
            assert time.monotonic() - t0 < 60
            assert r.returncode == 2, r.stderr
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1, r.stderr
            assert lines[0].startswith(f"irsim: error: config: engine.address='{address}': "
                                       f"the Ray cluster refused this client's "
                                       f"authentication token")
            assert "RAY_AUTH_TOKEN" in lines[0] and "ray get-auth-token" in lines[0]
            assert not (tmp_path / "run" / "results").exists()
    finally:
        head.stdin.close()
        head.wait(timeout=60)


@pytest.mark.slow
def test_no_ray_cluster_at_the_address_is_one_line(tmp_path):
    import time

    t0 = time.monotonic()
    r = irsim("engine=ray", "engine.address=127.0.0.1:9", "experiment.B=100",
              f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert time.monotonic() - t0 < 60
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no Ray cluster reachable at 127.0.0.1:9" in lines[0], r.stderr


@pytest.mark.parametrize("args,needle", [
    (["+foo=1"], "unknown config key 'foo'; valid: collection, data_dir, engine, experiment, "
                 "metrics, offline, quiet, seed"),
    (["++foo=1"], "unknown config key 'foo'; valid: collection, data_dir"),
    (["+engine.x=1"], "unknown config key 'engine.x'"),
    (["engine=ray", "+engine.x=1"], "unknown config key 'engine.x'"),
    (["engine.workerz=2"], "unknown config key 'engine.workerz'"),
    (["engine=ray", "engine.workerz=2"], "'engine.workerz' (did you mean 'engine.workers'"),
    (["+collection.x=1"], "unknown config key 'collection.x'"),
    (["collection.runz=3"], "'collection.runz' (did you mean 'collection.runs'"),
    # a key of another kind of collection: refused, not ignored
    (["collection=trec", "collection.systems=3"], "unknown config key 'collection.systems'"),
    (["collection=adhoc8", "+collection.qrels=q.txt"], "unknown config key 'collection.qrels'"),
    (["experiment=test_errors", "+experiment.design.zz=1"],
     "unknown parameter of experiment/design=shift 'experiment.design.zz'"),
])
@pytest.mark.slow
def test_refused_key_one_line_exit_2_no_run_dir(tmp_path, args, needle):
    """Every node is typed: an unknown or added key is refused by Hydra / OmegaConf (issue
    26), in one line naming the key and the valid keys of its node, before the run directory
    is made."""
    out = tmp_path / "bad"
    r = irsim(*args, "quiet=true", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("irsim: error: config: "), r.stderr
    assert needle in lines[0] and "; valid: " in lines[0]
    assert not out.exists()


def test_every_node_is_typed_and_refuses_added_keys(tmp_path):
    """Top level, engine, collection (one dataclass per kind) and experiment are typed
    nodes whose defaults are the YAML's; a key added with + reaches OmegaConf's refusal in
    irsim.conf.check_keys, also on the path of a sweep's job (runner.run)."""
    from dataclasses import asdict

    import yaml
    from omegaconf import OmegaConf

    from irsim.conf import check_keys
    from irsim.conf.schema import COLLECTIONS, IrsimConfig
    from irsim.errors import ConfigError

    cfg = compose_config([])
    assert OmegaConf.get_type(cfg) is IrsimConfig
    conf = Path(__file__).parents[1] / "irsim" / "conf" / "collection"
    for path in sorted(conf.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        node = compose_config([f"collection={path.stem}", "seed=7"]).collection
        assert OmegaConf.get_type(node) is COLLECTIONS[raw["kind"]], path.name
        want = {**asdict(COLLECTIONS[raw["kind"]]()),
                **{k: v for k, v in raw.items() if k != "defaults"}}
        got = OmegaConf.to_container(node, resolve=True)
        if raw.get("seed") == "${seed}":
            want["seed"] = 7
        assert got == want, path.name
    for args, key in [(["+foo=1"], "'foo'"), (["+collection.x=1"], "'collection.x'"),
                      (["engine=ray", "+engine.x=1"], "'engine.x'"),
                      (["+experiment.BB=1"], "'experiment.BB'")]:
        with pytest.raises(ConfigError, match=key):
            check_keys(compose_config([*args, "experiment.B=100"]))
        with pytest.raises(ConfigError, match=key):
            run(compose_config([*args, "experiment.B=100", "quiet=true"]), tmp_path / "r")
        assert not (tmp_path / "r" / "results").exists()


def test_executor_options_one_check():
    """run_study's engine_options are checked once, against the engine's config fields and
    the executor-only options, in the vocabulary of the config's check."""
    from irsim.engine.config import check_options
    from irsim.errors import ConfigError

    check_options("ray", {"address": None, "workers": 2, "num_cpus": 2, "in_flight": 2,
                          "max_retries": 3, "blas_threads": 1, "cpus_per_worker": 1.0,
                          "keep_alive": True})
    check_options("local", {"blas_threads": None})
    with pytest.raises(ConfigError, match=r"unknown option of engine=local 'workers'; "
                                          r"valid: blas_threads$"):
        check_options("local", {"workers": 2})
    with pytest.raises(ConfigError, match=r"'worker' \(did you mean 'workers'"):
        check_options("ray", {"worker": 2})
    with pytest.raises(ConfigError, match="'shard_items'"):  # the planner's, not the actors'
        check_options("ray", {"shard_items": 2})


def test_help_and_list_name_the_compare_command():
    r = irsim("--help")
    assert r.returncode == 0 and "irsim compare A B [C ...] [key=value ...]" in r.stdout
    r = irsim("list")
    assert r.returncode == 0
    assert "irsim compare <systems> ... [key=value ...]   (irsim compare --help)" in r.stdout


def test_compare_help_is_its_own_short_help():
    from irsim.api import config_parameters
    from irsim.catalog import override_value
    from irsim.experiments import get

    r = irsim("compare", "--help")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == "usage: irsim compare A B [C ...] [key=value ...]"
    assert "== Config ==" not in r.stdout and len(lines) < 35  # not Hydra's 60+ lines
    for p in config_parameters(get("compare").config):  # every option with its default
        if p.name != "systems":
            assert f"  experiment.{p.name}={override_value(p.default)} " in r.stdout, p.name
    assert irsim("compare", "-h").stdout == r.stdout


@pytest.mark.slow
def test_compare_command_prints_the_difference_and_a_multirun_names_its_sweep(tmp_path):
    from irsim.cli import sweep_lines

    scores = pd.read_csv(SHARED_DATA / "urbano" / "adhoc8_ap.csv")
    r = irsim("compare", "run2", "run3", "collection=matrix",
              f"collection.path={SHARED_DATA}/urbano/adhoc8_ap.csv", "collection.metric=AP",
              "experiment.B=200", "quiet=true", f"hydra.run.dir={tmp_path / 'cmp'}")
    assert r.returncode == 0, r.stderr
    d = scores.run2 - scores.run3
    assert r.stdout.splitlines()[1].startswith(f"diff={d.mean():.4g}  ci_lo=")
    assert r.stdout.splitlines()[1].endswith(f"effect_size={d.mean() / d.std():.4g}")
    # a sweep ends by naming its folder and the two commands that read all its jobs
    sweep = tmp_path / "sweep"
    r = irsim("-m", "experiment.B=50,60", "experiment.tests=[t]", "quiet=true",
              f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-3:] == sweep_lines(sweep)
    assert irsim("report", str(sweep)).returncode == 0 and (sweep / "sweep.md").is_file()
