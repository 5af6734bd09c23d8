"""Engine guarantees: identical tables for local and Ray (1, 2 workers, a 3-node cluster),
after an actor is killed, and after an interrupted run resumes from checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import urbano_matrix

from irsim.engine import run_study
from irsim.engine.partials import encode
from irsim.engine.ray_executor import RayPool
from irsim.engine.runner import reducer_of
from irsim.experiments.discpower import DiscPower

STUDY = DiscPower.of(B=750, seed=4, shard_items=256, shard_replicates=250)


@pytest.fixture(scope="module")
def matrix():
    return urbano_matrix("adhoc6_ap", "AP", systems=40)  # 780 pairs -> 4 x 3 = 12 shards


@pytest.fixture(scope="module")
def local_tables(matrix):
    tables, info = run_study(STUDY, matrix)
    assert info["shards"] == 12
    return tables


def assert_same(a, b):
    assert set(a) == set(b)
    for name in a:
        assert a[name].to_pydict() == b[name].to_pydict(), name



@pytest.mark.ray
@pytest.mark.parametrize("workers", [1, 2])
def test_ray_equals_local(ray_local, matrix, local_tables, workers):
    tables, info = run_study(STUDY, matrix, engine="ray", engine_options={"workers": workers})
    assert info["engine"] == "ray"
    assert_same(tables, local_tables)


@pytest.mark.ray
def test_killed_actor_changes_nothing(ray_local, matrix, local_tables):
    study = STUDY
    reducer = reducer_of(study, matrix)
    pool = RayPool(study, matrix, workers=2, in_flight=3)
    killed = False
    seen = 0
    try:
        for shard, part in pool.run(study.plan(matrix)):
            reducer.combine(shard, part)
            seen += 1
            if not killed:  # kill one actor by handle while it still has queued shards
                ray_local.kill(pool.actors[0], no_restart=True)
                killed = True
    finally:
        pool.shutdown()
    assert killed and seen == 12
    assert_same(reducer.finalize(), local_tables)


@pytest.mark.ray
@pytest.mark.slow
def test_three_node_cluster_equals_local(matrix, local_tables):
    import ray
    from ray.cluster_utils import Cluster

    # conftest binds every node to 127.0.0.1 (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0)
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 3
        tables, _ = run_study(STUDY, matrix, engine="ray", engine_options={"workers": 3})
        assert_same(tables, local_tables)
    finally:
        ray.shutdown()
        cluster.shutdown()


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_resume_recomputes_only_missing_shards(tmp_path, matrix, local_tables):
    calls = []

    class Counting(DiscPower):
        def kernel(self, shard, data):
            calls.append(shard.index)
            return super().kernel(shard, data)

    study = Counting.of(B=750, seed=4, shard_items=256, shard_replicates=250)

    def stop_after_5(done, total):
        if done == 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_study(study, matrix, checkpoint_dir=tmp_path, progress=stop_after_5)
    assert len(calls) == 5
    calls.clear()
    tables, info = run_study(study, matrix, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 5 and info["shards_computed"] == 7
    assert len(calls) == 7
    assert_same(tables, local_tables)
    # a changed study (other seed) must not reuse the checkpoints
    calls.clear()
    other = Counting.of(B=750, seed=5, shard_items=256, shard_replicates=250)
    _, info = run_study(other, matrix, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 0 and len(calls) == 12


def test_checkpoint_round_trip_is_exact(tmp_path, matrix):
    from irsim.engine.checkpoint import CheckpointStore

    fields = STUDY.fields(matrix)
    store = CheckpointStore(tmp_path, "x", "fp", fields=fields)
    shard = STUDY.plan(matrix)[3]
    part = STUDY.kernel(shard, matrix)
    store.save(shard, part)
    back = store.load(shard)
    assert set(back) == set(part)
    assert isinstance(back["paired_top_0"], tuple) and len(back["paired_top_0"]) == 3
    want, got = encode(fields, part), encode(fields, back)
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_array_equal(got[k], want[k])


# ----------------------------------------------------------------- checkpoint identity (#16)
def _interrupted_run(study, matrix, directory, after=5):
    def stop(done, total):
        if done == after:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_study(study, matrix, checkpoint_dir=directory, progress=stop)


def _counting(seed=4):
    calls = []

    class Counting(DiscPower):
        def kernel(self, shard, data):
            calls.append(shard.index)
            return super().kernel(shard, data)

    return Counting.of(B=750, seed=seed, shard_items=256, shard_replicates=250), calls


def _shard_files(directory):
    return sorted((directory / STUDY.name).glob("*.npz"))


@pytest.mark.slow
def test_other_configurations_shards_are_never_reused(tmp_path, matrix):
    """Two runs sharing one directory (seed 4, then seed 5): the seed-5 stamp is current, but
    the seed-4 shard files beside it carry their own fingerprint and are recomputed."""
    a, _ = _counting(seed=4)
    _interrupted_run(a, matrix, tmp_path / "a")
    b, calls = _counting(seed=5)
    _interrupted_run(b, matrix, tmp_path / "b", after=1)
    for f in _shard_files(tmp_path / "a"):  # seed 4's shards under seed 5's directory
        (tmp_path / "b" / STUDY.name / f.name).write_bytes(f.read_bytes())
    calls.clear()
    tables, info = run_study(b, matrix, checkpoint_dir=tmp_path / "b")
    fresh, _ = run_study(DiscPower.of(B=750, seed=5, shard_items=256, shard_replicates=250),
                         matrix)
    assert_same(tables, fresh)
    # b's own shard 0 was overwritten by a's: nothing of a is reused, all 12 recomputed
    assert info["shards_resumed"] == 0 and len(calls) == 12


def test_shard_copied_over_another_name_is_recomputed(tmp_path, matrix, local_tables):
    study, calls = _counting()
    _interrupted_run(study, matrix, tmp_path)
    files = _shard_files(tmp_path)
    files[1].write_bytes(files[0].read_bytes())  # shard 0's file under shard 1's name
    calls.clear()
    tables, info = run_study(study, matrix, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 4 and len(calls) == 8
    assert_same(tables, local_tables)


def test_checkpoint_of_another_irsim_version_is_recomputed(tmp_path, matrix, monkeypatch):
    from irsim import provenance

    study, calls = _counting()
    _interrupted_run(study, matrix, tmp_path)
    monkeypatch.setattr(provenance, "VERSION", provenance.VERSION + ".other")
    calls.clear()
    _, info = run_study(study, matrix, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 0 and len(calls) == 12


def _tamper_checksum(path):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    name = next(k for k in arrays if not k.startswith("__") and arrays[k].size
                and arrays[k].dtype.kind in "iuf")
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] += 1
    np.savez(path, **arrays)


def _drop_identity(path):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if not k.startswith("__")}
    np.savez(path, **arrays)


TORN = {
    "empty": lambda p: p.write_bytes(b""),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "zip-garbage": lambda p: p.write_bytes(b"PK\x03\x04" + b"\x00garbage" * 40),
    "random-bytes": lambda p: p.write_bytes(np.random.default_rng(0).bytes(4096)),
    "npy-not-npz": lambda p: np.save(open(p, "wb"), np.arange(5)),  # noqa: SIM115
    "no-identity": _drop_identity,
    "checksum-mismatch": _tamper_checksum,
    "a-directory": lambda p: (p.unlink(), p.mkdir()),
}


@pytest.mark.parametrize("damage", list(TORN))
def test_torn_or_foreign_checkpoint_is_recomputed(tmp_path, matrix, local_tables, damage):
    study, calls = _counting()
    _interrupted_run(study, matrix, tmp_path)
    files = _shard_files(tmp_path)
    TORN[damage](files[2])
    calls.clear()
    tables, info = run_study(study, matrix, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 4 and len(calls) == 8
    assert_same(tables, local_tables)
    assert not list((tmp_path / STUDY.name).glob("*.tmp"))


def test_failed_save_leaves_old_file_and_no_temp(tmp_path, matrix, monkeypatch):
    import errno

    from irsim.engine.checkpoint import CheckpointStore

    fields = STUDY.fields(matrix)
    store = CheckpointStore(tmp_path, "x", "fp", fields=fields)
    shard = STUDY.plan(matrix)[0]
    part = STUDY.kernel(shard, matrix)
    store.save(shard, part)
    before = (tmp_path / "x" / f"{shard.name}.npz").read_bytes()

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(OSError):
        store.save(shard, part)
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["fingerprint",
                                                                  f"{shard.name}.npz"]
    assert (tmp_path / "x" / f"{shard.name}.npz").read_bytes() == before


def test_run_dir_lock_refuses_a_second_holder(tmp_path):
    import subprocess
    import sys

    from irsim.engine.checkpoint import run_dir_lock
    from irsim.errors import InputError

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom irsim.engine.checkpoint import "
         "run_dir_lock\nwith run_dir_lock(sys.argv[1]):\n print('held', flush=True)\n "
         "time.sleep(60)\n", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match="in use by another irsim run"):
            with run_dir_lock(tmp_path):
                pass
    finally:
        holder.kill()
        holder.wait()
    with run_dir_lock(tmp_path):  # released by the kernel when the holder died (kill -9)
        pass


# ------------------------------------------------------------------ Ray on loopback only (#16)
LISTENERS = """
import json, os
from pathlib import Path
from irsim.engine.ray_executor import RayPool
from irsim.experiments.discpower import DiscPower
from irsim.data.matrix import ScoreMatrix
import numpy as np

assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


def tree(root):  # this process and its descendants, from /proc
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    pids, grew = {root}, True
    while grew:
        new = {p for p, pp in parent.items() if pp in pids} - pids
        pids |= new
        grew = bool(new)
    return pids


def socket_inodes(pids):
    out = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    out.add(target[8:-1])
        except OSError:
            continue
    return out


def ip(hex_addr):
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return ".".join(str(b) for b in raw[::-1])
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
    import ipaddress
    addr = ipaddress.IPv6Address(b"".join(words))
    return str(addr.ipv4_mapped or addr)


values = np.random.default_rng(0).uniform(size=(1, 6, 25))
matrix = ScoreMatrix(values, ["AP"], [f"s{i}" for i in range(6)], [str(t) for t in range(25)])
pool = RayPool(DiscPower.of(B=250, seed=1), matrix, workers=1, num_cpus=1)
try:
    inodes = socket_inodes(tree(os.getpid()))
    listen = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                listen.append(ip(cols[1].split(":")[0]))
    print(json.dumps({"gcs": pool.cluster["gcs_address"], "listen": listen}))
finally:
    pool.shutdown()
"""


@pytest.mark.ray
def test_local_ray_instance_listens_on_loopback_only():
    """A Ray instance irsim starts (engine=ray, no address) listens on 127.0.0.1 only, without
    the RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 that this conftest sets for the tests' own Ray.
    Every listening TCP socket of the driver and its descendants is read from /proc."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    r = subprocess.run([sys.executable, "-c", LISTENERS], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["gcs"].startswith("127.0.0.1:"), out
    assert len(out["listen"]) >= 3, out  # GCS, raylet, workers: really inspected
    loopback = {"127.0.0.1", "::1"}  # ::ffff:127.0.0.1 is read as 127.0.0.1
    assert set(out["listen"]) <= loopback, out


# ------------------------------------------------ issue 16: k above a shard's replicates
def test_k_above_a_shards_replicates_resumes_equal_to_an_unsharded_run(tmp_path):
    """alpha=0.5, B=2000: every pair keeps its k=1000 largest replicates, four times a
    shard's 250 (this once failed in topk_rows). Sharded, interrupted and resumed from the
    compact checkpoints (top-k entries that can no longer be selected are not stored), the
    tables equal an unsharded run's."""
    from irsim.engine.partials import NO_INDEX, decode

    m = urbano_matrix("adhoc6_ap", "AP", systems=12)
    kw = dict(B=2000, alpha=(0.5,), seed=3, shard_items=256)
    whole, _ = run_study(DiscPower.of(**kw, shard_replicates=2000), m)
    sharded = DiscPower.of(**kw, shard_replicates=250)
    _interrupted_run(sharded, m, tmp_path, after=5)
    files = sorted((tmp_path / sharded.name).glob("*.npz"))
    assert len(files) == 5
    fields = sharded.fields(m)
    kept = 0
    for f in files:
        with np.load(f) as z:
            part = decode(fields, {k: z[k] for k in z.files if not k.startswith("__")})
        kept += int((part["paired_top_0"][1] != NO_INDEX).sum())
    assert kept < 5 * 66 * 250  # the fifth shard (1250 > k replicates) drops the beaten
    tables, info = run_study(sharded, m, checkpoint_dir=tmp_path)
    assert info["shards_resumed"] == 5 and info["shards_computed"] == 3
    assert_same(tables, whole)
    (tmp_path / sharded.name / files[0].name).unlink()  # resume once more, one shard lost
    tables, info = run_study(sharded, m, checkpoint_dir=tmp_path)
    assert info["shards_computed"] == 1
    assert_same(tables, whole)


@pytest.mark.parametrize("shard_replicates", [1000, 250])  # split: the lists merge
def test_unpaired_top_k_holds_the_replicates_of_a_direct_computation(shard_replicates):
    """alpha=0.9999: k = B, so the unpaired top-k list holds every replicate |d*|. Each must
    equal a direct computation (pooled scores resampled by the study's draws). When k
    reached a 1000-replicate chunk, topk_rows returned the kernel's reused buffer and later
    chunks overwrote the kept values (issue 16: wrong estimated differences at large B)."""
    from irsim.experiments.discpower import UNPAIRED_STREAM
    from irsim.kit.common import pair_index
    from irsim.sampling.topics import bootstrap_indices

    m = urbano_matrix("adhoc6_ap", "AP", systems=12)
    study = DiscPower.of(B=2000, alpha=(0.9999,), seed=3, shard_items=256,
                         shard_replicates=shard_replicates, tests=("unpaired_bootstrap",))
    reducer = reducer_of(study, m)
    for shard in study.plan(m):
        reducer.combine(shard, study.kernel(shard, m))
    val, rep = reducer.acc.result()["unpaired_top_0"]
    got = np.take_along_axis(val, np.argsort(rep, axis=1), axis=1)
    x, n = m.metric("AP"), len(m.topics)
    ia, ib = pair_index(12)
    pooled = np.concatenate([x[ia], x[ib]], axis=1)
    draw = bootstrap_indices(3, UNPAIRED_STREAM, 2 * n, 0, 2000)
    want = np.abs(pooled[:, draw[:, :n]].mean(-1) - pooled[:, draw[:, n:]].mean(-1))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


# ------------------------------------------------ issue 16: kill -9 of the driver
ORPHAN_DRIVER = r"""
import os, sys, time
import numpy as np
if os.environ.get("IRSIM_TEST_NO_WATCHDOG"):  # to see the test fail without the fix
    import irsim.engine.ray_executor as rx
    rx.Watchdog.__init__ = lambda self, before: setattr(self, "proc", None)
import subprocess
bystander = subprocess.Popen(["sleep", "120"])  # the driver's own child, not Ray's
from irsim.data.matrix import ScoreMatrix
from irsim.engine.ray_executor import RayPool
from irsim.experiments.discpower import DiscPower
values = np.random.default_rng(0).uniform(size=(1, 6, 25))
m = ScoreMatrix(values, ["AP"], [f"s{i}" for i in range(6)], [str(t) for t in range(25)])
pool = RayPool(DiscPower.of(B=250, seed=1), m, workers=1, num_cpus=1)
print("READY", bystander.pid, flush=True)
time.sleep(600)
"""


def _started(pid):
    """Start time of process `pid` (/proc/<pid>/stat field 22), None when it is gone."""
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _process_tree(root):
    """(pid, start time) of every descendant of `root`, read from /proc."""
    from pathlib import Path

    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [p for p, pp in parent.items() if pp == root]
    while todo:
        pid = todo.pop()
        out.append((pid, _started(pid)))
        todo += [p for p, pp in parent.items() if pp == pid]
    return [(p, s) for p, s in out if s is not None]


@pytest.mark.ray
def test_kill_9_of_the_driver_leaves_no_ray_process():
    """A driver running engine=ray on a Ray instance it started is killed with SIGKILL:
    within 20 s no process of that instance is left (GCS, raylet, workers, and the
    dashboard / runtime-env agents, which Ray alone leaves running for about a minute).
    The processes are the driver's descendants recorded before the kill (pid and start
    time); only they are checked, and any survivor is killed by pid after the check."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs Linux /proc")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    drv = subprocess.Popen([sys.executable, "-c", ORPHAN_DRIVER], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env=env,
                           start_new_session=True)
    procs, bystander = [], None
    try:
        ready, bystander = drv.stdout.readline().split()
        assert ready == "READY"
        bystander = (int(bystander), _started(int(bystander)))
        procs = [p for p in _process_tree(drv.pid) if p != bystander]
        assert len(procs) >= 5, procs  # GCS, raylet, agents, the actor's worker, watchdog
        os.kill(drv.pid, signal.SIGKILL)
        drv.wait(timeout=30)
        deadline = time.monotonic() + 20
        alive = procs
        while alive and time.monotonic() < deadline:
            time.sleep(0.5)
            alive = [(p, s) for p, s in alive if _started(p) == s]
        assert not alive, f"{len(alive)} of {len(procs)} Ray processes outlived the driver"
        # a child the driver started itself is not Ray's: the watchdog leaves it alone
        assert _started(bystander[0]) == bystander[1]
    finally:
        if drv.poll() is None:
            drv.kill()
        mine = [*procs, *([bystander] if bystander else [])]
        for pid, start in mine:  # only the processes this test started
            if _started(pid) == start:
                os.kill(pid, signal.SIGKILL)


# ------------------------------------------------ issue 16: a worker node lost mid-run
NODE_LOSS = r"""
import json, logging, sys
sys.path.insert(0, sys.argv[1])
import ray
from ray.cluster_utils import Cluster
from conftest import urbano_matrix
from irsim.engine import run_study
from irsim.experiments.discpower import DiscPower

lost = []
class Lost(logging.Handler):
    def emit(self, record):
        if "lost" in record.getMessage():
            lost.append(record.getMessage())
logging.getLogger("irsim.engine.ray_executor").addHandler(Lost())
class Slow(DiscPower):  # 1 s per shard: the node dies while it runs shards
    def kernel(self, shard, data):
        import time
        time.sleep(1.0)
        return super().kernel(shard, data)

study = Slow.of(B=750, seed=4, shard_items=256, shard_replicates=250)
matrix = urbano_matrix("adhoc6_ap", "AP", systems=40)
local, _ = run_study(DiscPower.of(B=750, seed=4, shard_items=256, shard_replicates=250), matrix)
# a head without CPUs (it holds the driver and the data) and two 1-CPU worker nodes
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0,
                                                       "include_dashboard": False})
try:
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    killed = []
    def kill_a_node(done, total):
        if done == 1 and not killed:  # the other shards are queued or running
            cluster.remove_node(workers[1], allow_graceful=False)
            killed.append(done)
    tables, _ = run_study(study, matrix, engine="ray",
                          engine_options={"workers": 2, "in_flight": 2},
                          progress=kill_a_node)
    same = all(tables[k].to_pydict() == local[k].to_pydict() for k in local)
    print("RESULT", json.dumps({"same": same and set(tables) == set(local),
                                "killed": bool(killed),
                                "lost": len(lost)}), flush=True)
finally:
    ray.shutdown()
    cluster.shutdown()
"""


@pytest.mark.ray
@pytest.mark.slow
def test_killed_worker_node_changes_nothing():
    """A worker node of a 3-node ray.cluster_utils.Cluster (a 0-CPU head and two 1-CPU
    workers) is killed after the first shard: its running shards are lost and retried on
    the surviving node, and the tables equal engine=local. The replacement actor that the
    lost node's CPU seems to allow never starts; the run goes on without it (it once hung
    the suite here). Run in a subprocess with a time limit, so it can never hang."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    tests = str(Path(__file__).resolve().parent)
    r = subprocess.run([sys.executable, "-c", NODE_LOSS, tests], capture_output=True,
                       text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    result = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert result, r.stdout[-3000:] + r.stderr[-3000:]
    out = json.loads(result[-1].removeprefix("RESULT "))
    assert out["killed"] and out["lost"] >= 1, out  # a shard really was lost and retried
    assert out["same"], out


@pytest.mark.parametrize("threads", [None, 2])
def test_blas_threads_change_no_table(matrix, local_tables, threads):
    """engine=local runs its kernels with one BLAS thread by default (issue 30); BLAS's own
    threading (None) and 2 threads give the same tables to the bit (exact count-matrix
    products), and the limit is held only while the shards run."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    kernel = STUDY.kernel

    class Recording(DiscPower):
        def kernel(self, shard, data):
            seen.append(blas_threads())
            return kernel(shard, data)

    study = Recording.of(B=750, seed=4, shard_items=256, shard_replicates=250)
    tables, _ = run_study(study, matrix)  # the default
    assert_same(tables, local_tables)
    assert seen and all(t == [1] * len(t) for t in seen)
    seen.clear()
    tables, _ = run_study(study, matrix, engine_options={"blas_threads": threads})
    assert_same(tables, local_tables)
    assert seen and all(t == (before if threads is None else [threads] * len(t)) for t in seen)
    assert blas_threads() == before


def test_a_preparation_step_gets_the_sessions_progress_bar():
    """A step run on the session without a bar of its own (test_errors' copula fitting) is
    drawn by the session's bar factory, named after the step, updated to every shard and
    closed at its end; a step given its own progress callback is left alone."""
    from irsim.engine.session import Engine
    from irsim.simulate.fit_engine import fit_pair_copula_models
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    calls: list[tuple[str, list, list]] = []

    class Bar:
        closed = False

        def close(self):
            self.closed = True

    def bars(desc):
        updates, bar = [], Bar()
        calls.append((desc, updates, [bar]))
        return bar, lambda done, total: updates.append((done, total))

    rng = np.random.default_rng(0)
    x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
                + 0.05 * rng.standard_normal((7, 30)), 0, 1)
    with Engine("local", bars=bars) as session:
        (model,) = fit_pair_copula_models([{"scores": x, "metric": "AP", "name": "a"}],
                                          engine=session, shard_pairs=4)
        own = []
        session.run(_Ones(), None, progress=lambda d, t: own.append((d, t)))
    assert model.copulas == fit_pair_copula_model(x, metric="AP", name="a").copulas
    assert [c[0] for c in calls] == ["copula_fits"]  # the step with a bar of its own: none
    desc, updates, (bar,) = calls[0]
    shards = -(-len(model.copulas) // 4)  # 4 pairs a shard
    assert shards >= 3 and updates[-1] == (shards, shards)
    assert [d for d, _ in updates] == list(range(shards + 1))
    assert bar.closed and own[-1] == (1, 1)


class _Ones:
    name = "ones"

    def plan(self, data):
        from irsim.engine.base import Shard

        return [Shard(0, (0, 3), (0, 0))]

    def kernel(self, shard, data):
        return {"n": np.ones(3, np.int64)}

    def fields(self, data):
        from irsim.engine.partials import Count

        return {"n": Count((3,), along="items")}

    def finalize(self, merged, data):
        return {"n": merged["n"]}

    def fingerprint(self):
        return {}


@pytest.mark.ray
def test_too_many_workers_are_refused_in_each_doors_words(matrix):
    """More actors than CPUs: the command line is told of engine.num_cpus, which it can set
    (tests/test_bad_inputs.py); a study function takes workers but no num_cpus, so its
    message names only what it accepts (irsim.errors.python_door)."""
    import irsim
    from irsim.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        irsim.discpower(matrix, B=250, seed=1, engine="ray", workers=1000)
    message = str(err.value)
    assert message.startswith("workers=1000 needs 1000 CPUs but the Ray cluster has ")
    assert message.endswith("; use fewer workers (null = one per CPU)")
    with pytest.raises(ConfigError) as err:
        RayPool(STUDY, matrix, workers=1000, num_cpus=1)
    assert str(err.value).endswith("use fewer workers (null = one per CPU) or a larger "
                                   "engine.num_cpus")
