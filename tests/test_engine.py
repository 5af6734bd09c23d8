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
