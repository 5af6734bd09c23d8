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

STUDY = DiscPower(B=750, seed=4, shard_items=256, shard_replicates=250)


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


def test_resume_recomputes_only_missing_shards(tmp_path, matrix, local_tables):
    calls = []

    class Counting(DiscPower):
        def kernel(self, shard, data):
            calls.append(shard.index)
            return super().kernel(shard, data)

    study = Counting(B=750, seed=4, shard_items=256, shard_replicates=250)

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
    other = Counting(B=750, seed=5, shard_items=256, shard_replicates=250)
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

    return Counting(B=750, seed=seed, shard_items=256, shard_replicates=250), calls


def _shard_files(directory):
    return sorted((directory / STUDY.name).glob("*.npz"))


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
    fresh, _ = run_study(DiscPower(B=750, seed=5, shard_items=256, shard_replicates=250),
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
    import irsim

    study, calls = _counting()
    _interrupted_run(study, matrix, tmp_path)
    monkeypatch.setattr(irsim, "__version__", irsim.__version__ + ".other")
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
pool = RayPool(DiscPower(B=250, seed=1), matrix, workers=1, num_cpus=1)
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
