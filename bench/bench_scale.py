"""Scale model of engine=ray: measured costs of irsim's engine on a simulated cluster,
projected to 8, 64 and 512 nodes of 64 cores running the full Urbano 2019 design.

    nice python bench/bench_scale.py           # ~2 min on 2 cores
    nice python bench/bench_scale.py --quick   # ~1 min: fewer shards, smaller B
    # on a real cluster (3 network namespaces, `ray start` each: jobs/cluster_harness.py;
    # the bench runs on its head node, the model checked against a run on that cluster)
    sudo python jobs/cluster_harness.py --nodes 3 -- \
        python bench/bench_scale.py --quick --address {address}

**What is measured** (one run, this machine):

- the Urbano 2019 kernel's cost per core (``UrbanoStudy.kernel``, CPU time, 1 BLAS thread, a
  generator fitted to 10 runs of TREC-8 ad hoc AP, every test of the paper, both tails, 19
  alphas, Type I and Type II trials in equal numbers as in the full design), per topic set
  size n, as ``T = units x (a + u B) + trials x (w + v B)`` (``units``: the (metric, n, Monte
  Carlo unit of 4,000 trials) groups a shard draws resamples for). Per trial: the slope
  between shards of 500 and 2,000 trials at B = 16,384 and 131,072, **extrapolated linearly
  in B** to B = 10^6 (the Monte Carlo tests' GEMMs run in cache-resident blocks of 8,192
  resamples: linear in B; the other tests and the generator do not depend on B). Per unit:
  a shard of 2 trials at B = 16,384 and at B = 10^6 itself (drawing 10^6 resamples is
  memory-bound, ~20% worse than linear from 131,072), less its trials. The default run checks
  the model on a shard of 500 trials at B = 10^6 (n = 25); ``--quick`` uses B = 8,192 and
  65,536 and extrapolates the draws too;
- the driver's cost per shard of ``run_study(engine="ray")`` on a ``ray.cluster_utils.Cluster``
  (3 nodes of 1 CPU, all on 127.0.0.1) with checkpoints, many small shards whose kernel
  replays a real Urbano partial result (so the driver, not the kernel, is what runs): the
  time the driver's loop is busy per shard (its wall time minus the time ``ray.wait`` sleeps,
  an upper bound on this shared 2-core machine; the driver thread's CPU time is printed as
  the lower bound), for 1 and 165 configurations per shard;
- how that cost grows with the number of workers: ``RayPool.run`` with its actor list
  repeated to ``--slots`` entries (3 real actors, thousands of in-flight shards), against 3;
- the Accumulator's merge rate (shards/s, MB/s), bytes per shard through the object store
  (pickle protocol 5, as Ray serialises), the checkpoint store's write rate (files/s, MB/s,
  with its fsyncs), plan + resume check per shard, and actor start cost (``RayPool`` until
  its actors answer).

**The model.** The full design is 5 metrics x 3 sizes x (1 + 10 deltas) = 165
configurations (``engine.shard_items`` counts them), trials 1,667,000 (Type I) and 167,000
(Type II/III) each, B = 10^6; a plan of ``shard_items x shard_replicates`` has
``ceil(165 / shard_items) x ceil(1,667,000 / shard_replicates)`` shards (replicate blocks past
167,000 hold no trials for the Type II/III configurations: with ``shard_items`` < 11 such
shards are empty, but they are still planned, sent and merged). On ``nodes x 64`` cores, with
``workers`` actors (``engine.workers``, default one per core)::

    wall     = startup + max(compute, shards x d)
    compute  = greedy schedule of the shards' kernel times on the workers, in plan order
               (>= total compute / workers, >= the longest shard)
    kernel   = sum over the shard's (metric, n) groups of
               units x (a_n + u_n B) + trials x (w_n + v_n B)              (measured, above)
    d        = d_1 + d_c x (configurations per shard - 1) + d_w x workers  (measured, above:
               d_1, d_c from the two run_study runs, d_w from the dispatch-loop runs)
    startup  = shards x (plan + resume check) + put(data) + workers x actor creation
               + one actor's start + data x nodes used / bandwidth         (bandwidth assumed)
    busy     = shards x d / max(compute, shards x d)   (the driver's busy share of the run)

The driver saturates where ``shards x d`` reaches ``compute`` (``d`` grows with the workers,
so past some size more nodes make a run slower). The recommended plan: among
``engine.shard_items`` in {1, 11, 165+} x ``engine.shard_replicates`` from 250 to 64,000 x
``engine.workers`` from 512 to all cores (powers of 2), those that keep the driver at most 50%
busy and are within 10% of the shortest wall time; of these the one with the fewest shards
(then the most workers). Two what-ifs show what engine changes would buy: a plan without the
empty shards, and a driver whose cost per shard does not grow with the workers (``d_w = 0``).
The greedy schedule is optimistic by at most one shard per actor at the end (``in_flight``
= 2 queues a shard behind a running one); copula fitting (once per data set; ``fit_cache``)
is not part of the projection.
"""

from __future__ import annotations

import argparse
import heapq
import logging
import math
import os
import pickle
import platform
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from irsim.engine.base import Shard, shard_grid
from irsim.engine.checkpoint import CheckpointStore
from irsim.engine.partials import Accumulator
from irsim.experiments.test_errors import URBANO_SHARD_ITEMS, URBANO_SHARD_REPLICATES

DEFAULT_DATA = Path(os.environ.get("IRSIM_TEST_DATA",
                                   Path(__file__).resolve().parents[2] / "shared" / "data"))
#: The paper's design (Urbano, Lima & Hanjalic 2019), as conf/experiment/urbano2019.yaml.
METRICS, SIZES = 5, (25, 50, 100)
DELTAS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1)
TYPE1_TRIALS, TYPE2_TRIALS, B_FULL = 1_667_000, 167_000, 1_000_000
KINDS = 1 + len(DELTAS)
ITEMS = METRICS * len(SIZES) * KINDS  # 165 configurations
#: irsim's default shard of design=urbano2019 (engine.shard_items x engine.shard_replicates)
DEFAULT_ITEMS, DEFAULT_REPS = URBANO_SHARD_ITEMS, URBANO_SHARD_REPLICATES
#: The collections of conf/experiment/urbano2019.yaml (for the size of the broadcast data).
FILES = [f"adhoc{k}_{m}" for m in ("ap", "p10", "rr") for k in (5, 6, 7, 8)] + [
    f"web{y}_{m}" for m in ("ndcg20", "err20") for y in (2010, 2011, 2012)]
NODE_CORES = 64
NODES = (8, 64, 512)
CANDIDATE_ITEMS = (1, 11, ITEMS)
CANDIDATE_REPS = (250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000)


# ----------------------------------------------------------------------------- helpers
def best(f, repeats: int = 1, clock=time.perf_counter) -> float:
    """Fastest of `repeats` calls of `f` (seconds on `clock`)."""
    out = math.inf
    for _ in range(repeats):
        t = clock()
        f()
        out = min(out, clock() - t)
    return out


def wire_bytes(obj) -> int:
    """Bytes of `obj` serialised as Ray does (pickle protocol 5, buffers out of band)."""
    buffers: list = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return len(head) + sum(memoryview(b.raw()).nbytes for b in buffers)


def fmt_s(sec: float) -> str:
    """Seconds as s / min / h."""
    if sec < 120:
        return f"{sec:.1f} s"
    if sec < 7200:
        return f"{sec / 60:.1f} min"
    return f"{sec / 3600:.1f} h"


def full_study(shard_items: int, shard_replicates: int):
    """The full design's UrbanoStudy (parameters of conf/experiment/urbano2019.yaml) and a
    stand-in for its data (plan and fields only read the number of metrics and the deltas)."""
    from irsim.experiments.test_errors import TestErrors, UrbanoStudy

    base = TestErrors.of(sizes=SIZES, alternatives=("two-sided", "greater"), trials=TYPE1_TRIALS,
                         B=B_FULL, wilcoxon_method="r", sign_threshold=0.01,
                         bootstrap_statistic="mean", shard_items=shard_items,
                         shard_replicates=shard_replicates)
    study = UrbanoStudy(base, TYPE2_TRIALS, deltas=DELTAS)
    return study, SimpleNamespace(pools=(None,) * METRICS, deltas=DELTAS)


class ReplayStudy:
    """A study whose kernel returns the rows of a real Urbano partial result for its item
    range (no computation): the engine (plan, Ray pool, Accumulator, checkpoints) runs as
    for the full design, at the speed of the driver."""

    name = "scale_replay"

    def __init__(self, fields, rows, shard_items: int, shards: int, reps: int = 250):
        self._fields, self.rows = fields, rows
        self.shard_items, self.n_shards, self.reps = shard_items, shards, reps

    def plan(self, data):
        blocks = -(-ITEMS // self.shard_items)
        return shard_grid(ITEMS, self.shard_items, self.reps * -(-self.n_shards // blocks),
                          self.reps)[: self.n_shards]

    def kernel(self, shard, data):
        pick = np.arange(*shard.items) % len(self.rows["trials"])
        out = {k: np.take(v, pick, axis=0) for k, v in self.rows.items()
               if not k.startswith("tm_")}
        # the Type M records (irsim.stats.typems.TypeMFields): one pair of fields per item
        # block, (trials, configurations, ...) of this shard, filled from the real ones
        (i0, i1), (r0, r1) = shard.items, shard.reps
        for k, v in self.rows.items():
            if k.startswith("tm_"):
                out[f"{k.rsplit('_', 1)[0]}_{i0}"] = np.resize(v, (r1 - r0, i1 - i0,
                                                                   *v.shape[2:]))
        return out

    def fields(self, data):
        return self._fields

    def finalize(self, merged, data):
        return {}

    def fingerprint(self):
        return {"shard_items": self.shard_items, "shards": self.n_shards}


# ------------------------------------------------------------------------- measurements
def fit_data(data_dir: Path, runs: int):
    """A generator fitted to `runs` runs of TREC-8 ad hoc AP, pooled (one metric)."""
    import pandas as pd

    from irsim.simulate.designs import PooledMetric
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    df = pd.read_csv(data_dir / "urbano" / "adhoc8_ap.csv").iloc[:, :runs]
    model = fit_pair_copula_model(df.to_numpy(np.float64).T, metric="AP", name="adhoc8_ap",
                                  runs=tuple(df.columns))
    return model, PooledMetric.build("AP", [model], DELTAS[4:5])


def measure_kernel(pool, args) -> tuple[dict, dict, dict]:
    """Per n: (a, u, w, v) of ``T = units (a + u B) + trials (w + v B)``, the measured
    times, and a real partial result (rows of every field) for the replay study.

    Per trial: the slope between shards of R1 and R2 trials per kind, at B1 and B2, linear
    in B. Per unit (the resamples a shard draws for a Monte Carlo unit): a shard of one
    trial per kind at B1 and at ``args.Bu`` less its two trials, linear in B between them
    (drawing is memory-bound, a little worse than linear in B: it is measured at B = 10^6
    unless ``--quick``)."""
    from threadpoolctl import threadpool_limits

    from irsim.experiments.test_errors import TestErrors, UrbanoData, UrbanoStudy

    data = UrbanoData((pool,), DELTAS[4:5])
    coef, times, rows = {}, {}, {}

    def study_at(n: int, B: int):
        base = TestErrors.of(sizes=(n,), alternatives=("two-sided", "greater"),
                             trials=max(args.R1, args.R2), B=B, wilcoxon_method="r",
                             sign_threshold=0.01, bootstrap_statistic="mean")
        return UrbanoStudy(base, max(args.R1, args.R2), deltas=DELTAS[4:5])

    with threadpool_limits(limits=1, user_api="blas"):
        for n in SIZES:
            t = {}
            runs = {(args.B1, 1), (args.Bu, 1), (args.B1, args.R1), (args.B1, args.R2),
                    (args.B2, args.R1), (args.B2, args.R2)}
            for B in sorted({b for b, _ in runs}):
                study = study_at(n, B)
                for R in sorted(r for b, r in runs if b == B):  # R of each kind: 2 R trials
                    shard = Shard(0, (0, 2), (0, R))
                    t[B, R] = best(lambda s=study, sh=shard: s.kernel(sh, data), args.repeats,
                                   time.process_time)
                    if not rows:
                        rows = study.kernel(shard, data)
            s = {B: (t[B, args.R2] - t[B, args.R1]) / (2 * (args.R2 - args.R1))
                 for B in (args.B1, args.B2)}  # per trial
            v = max(0.0, (s[args.B2] - s[args.B1]) / (args.B2 - args.B1))
            w = max(0.0, s[args.B1] - v * args.B1)
            i = {B: max(0.0, t[B, 1] - 2 * (w + v * B)) for B in (args.B1, args.Bu)}  # per unit
            u = max(0.0, (i[args.Bu] - i[args.B1]) / (args.Bu - args.B1))
            coef[n] = (max(0.0, i[args.B1] - u * args.B1), u, w, v)
            times[n] = t
    return coef, times, rows


def kernel_time(coef: dict, n: int, units: float, trials: float, B: int = B_FULL) -> float:
    a, u, w, v = coef[n]
    return units * (a + u * B) + trials * (w + v * B)


@contextmanager
def joined_cluster(address: str):
    """A running cluster (``ray start``), this process its driver (run it on a node of the
    cluster: jobs/cluster_harness.py runs commands on its head node)."""
    import ray

    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield ray
    finally:
        ray.shutdown()


@contextmanager
def simulated_cluster(nodes: int):
    """A ``ray.cluster_utils.Cluster`` of `nodes` 1-CPU nodes on 127.0.0.1, with this
    process connected; shut down by handle."""
    from irsim.engine.ray_executor import loopback_only

    loopback_only()  # every node binds 127.0.0.1 only
    import ray
    from ray.cluster_utils import Cluster

    store = 256 * 2**20
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": store})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, object_store_memory=store)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.ERROR)
        yield ray
    finally:
        ray.shutdown()
        cluster.shutdown()


class DriverClock:
    """Times the driver's loop without touching the engine: every ``ray.wait`` call (wall
    and this thread's CPU) and the arrival of every shard. Busy per shard = the loop's wall
    time minus the time ``ray.wait`` slept, between the `first`-th and `last`-th shard."""

    def __init__(self, ray):
        self.ray, self.waits, self.arrivals = ray, [], []
        self._wait = ray.wait

    def __enter__(self):
        def wait(*a, **kw):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return self._wait(*a, **kw)
            finally:
                self.waits.append((t, time.perf_counter(), time.thread_time() - c))

        self.ray.wait = wait
        return self

    def __exit__(self, *exc):
        self.ray.wait = self._wait

    def arrived(self) -> None:
        self.arrivals.append((time.perf_counter(), time.thread_time()))

    def per_shard(self, first: int, last: int) -> tuple[float, float]:
        """(busy wall, driver-thread CPU) seconds per shard between two arrivals."""
        (t0, c0), (t1, c1) = self.arrivals[first], self.arrivals[last]
        idle = sum(e - s - c for s, e, c in self.waits if s >= t0 and e <= t1)
        k = last - first
        return (t1 - t0 - idle) / k, (c1 - c0) / k


def measure_engine(ray, fields, rows, shard_items: int, shards: int, tmp: Path, workers: int
                   ) -> dict:
    """run_study(engine="ray") with checkpoints on the cluster: driver cost per shard."""
    from irsim.engine import run_study

    study = ReplayStudy(fields, rows, shard_items, shards)
    saves: list[float] = []
    save = CheckpointStore.save

    def timed_save(self, *a, **kw):  # this process only, restored below
        t = time.perf_counter()
        try:
            return save(self, *a, **kw)
        finally:
            saves.append(time.perf_counter() - t)

    CheckpointStore.save = timed_save
    try:
        with DriverClock(ray) as clock:
            t = time.perf_counter()
            _, info = run_study(study, None, engine="ray",
                                engine_options={"workers": workers},
                                checkpoint_dir=tmp / f"ckpt{shard_items}",
                                progress=lambda done, total: done and clock.arrived())
            wall = time.perf_counter() - t
    finally:
        CheckpointStore.save = save
    first = min(10, shards // 4)
    busy, cpu = clock.per_shard(first, shards - 1)
    span = clock.arrivals[-1][0] - clock.arrivals[first][0]
    return {"busy": busy, "cpu": cpu, "rate": (shards - 1 - first) / span, "wall": wall,
            "shards": info["shards"], "save": float(np.mean(saves[first:]))}


def measure_slots(ray, fields, rows, slots: int, in_flight: int = 2) -> dict:
    """The engine's dispatch loop (RayPool.run) with `slots` actor slots, served by 3 real
    actors (the list is repeated): driver cost per shard with 2 x slots shards in flight."""
    from irsim.engine.ray_executor import RayPool

    pending = in_flight * slots
    shards = max(3 * pending, 300)
    study = ReplayStudy(fields, rows, 1, shards)
    pool = RayPool(study, None, workers=3, in_flight=in_flight)
    try:
        ray.get([a.pid.remote() for a in pool.actors])
        real = list(pool.actors)
        pool.actors = [real[i % len(real)] for i in range(slots)]
        acc = Accumulator(fields)
        with DriverClock(ray) as clock:
            for shard, part in pool.run(study.plan(None)):
                acc.combine(shard, part)
                clock.arrived()
        pool.actors = real
    finally:
        pool.shutdown()
    first = min(slots, shards // 4)
    last = max(first + 1, shards - pending - 1)  # the queue is empty after that
    busy, cpu = clock.per_shard(first, last)
    return {"busy": busy, "cpu": cpu, "pending": pending, "shards": shards}


def measure_actor_start(ray, pool_data, workers: int, extra: int = 0) -> dict:
    """RayPool with `workers` actors of the real UrbanoStudy until every actor answers; then
    the driver's cost of creating `extra` more actors the same way (the pool's own
    ``_new_actor``; they wait for a CPU, so none starts, and are killed)."""
    from irsim.engine.ray_executor import RayPool
    from irsim.experiments.test_errors import TestErrors, UrbanoStudy

    study = UrbanoStudy(TestErrors.of(sizes=(25,), trials=250, B=100, alpha=[0.05]), 250,
                        deltas=DELTAS[4:5])
    t = time.perf_counter()
    pool = RayPool(study, pool_data, workers=workers)
    created = time.perf_counter() - t
    more: list = []
    try:
        ray.get([a.pid.remote() for a in pool.actors])
        ready = time.perf_counter() - t
        t = time.perf_counter()
        more = [pool._new_actor() for _ in range(extra)]
        create = (time.perf_counter() - t) / max(extra, 1)
    finally:
        for actor in more:
            ray.kill(actor)
        pool.shutdown()
    return {"created": created, "ready": ready, "create": create}


def model_check(ray, pool, coef: dict, m: dict, workers: int, quick: bool) -> dict:
    """The model against a real run: UrbanoStudy (1 metric, n = 25 and 50, Type I + 1 delta,
    B = 8,192, 1 configuration x 1,000 trials per shard, some empty) on `workers` new
    actors, predicted and measured wall time (actor start included)."""
    from irsim.engine import run_study
    from irsim.experiments.test_errors import TestErrors, UrbanoData, UrbanoStudy

    trials, power, B, sizes = (3000 if quick else 6000), 1000, 8192, (25, 50)
    base = TestErrors.of(sizes=sizes, alternatives=("two-sided", "greater"), trials=trials, B=B,
                         wilcoxon_method="r", sign_threshold=0.01, bootstrap_statistic="mean",
                         shard_items=1, shard_replicates=1000)
    study = UrbanoStudy(base, power, deltas=DELTAS[4:5])
    data = UrbanoData((pool,), DELTAS[4:5])
    costs, shards = plan_costs(coef, 1, 1000, metrics=1, sizes=sizes, kinds=2,
                               trials=trials, power_trials=power, B=B)
    compute = makespan(costs, workers)
    driver = shards * (m["d_shard"](1) + m["d_worker"] * workers)
    startup = workers * m["create"] + m["ready"]
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    run_study(study, data, engine="ray", engine_options={"workers": workers})
    return {"measured": time.perf_counter() - t, "predicted": startup + max(compute, driver),
            "load": (load_before, os.getloadavg()[0]),
            "compute": compute, "driver": driver, "startup": startup, "shards": shards,
            "workers": workers}


def check_line(predicted: float, measured: float, load: tuple[float, float],
               cores: int) -> str:
    """Predicted against measured, the 25% goal, and the machine's load average seen before
    and after the measured run beside it (the model counts kernel CPU time on whole idle
    cores: above a load of one per core others share them, with the measured terms and the
    run alike, and the check says nothing of an idle machine).

    Examples
    --------
    >>> for part in check_line(10.0, 12.0, (0.4, 1.1), 2).split("; "):
    ...     print(part)
    predicted 10.0 s, measured 12.0 s: off by 20% (goal: within 25%, met)
    load average 0.4 before and 1.1 after the run, on 2 cores (quiet)
    >>> check_line(10.0, 15.0, (5.9, 6.3), 2).split(": ", 1)[1][:30]
    'off by 50% (goal: within 25%, '
    >>> check_line(10.0, 15.0, (5.9, 6.3), 2).split("(")[-1]
    'busy: other processes shared the cores, terms and run alike; not an idle-machine check)'
    """
    off = abs(measured - predicted) / predicted
    busy = max(load) > cores
    return (f"predicted {predicted:.1f} s, measured {measured:.1f} s: off by {off:.0%} (goal: "
            f"within 25%, {'met' if off <= 0.25 else 'not met'}); load average {load[0]:.1f} "
            f"before and {load[1]:.1f} after the run, on {cores} cores ("
            + ("busy: other processes shared the cores, terms and run alike; not an "
               "idle-machine check)" if busy else "quiet)"))


def check_real_run(pool_data) -> bool:
    """The real UrbanoStudy (small B) on the cluster gives engine=local's tables."""
    from irsim.engine import run_study
    from irsim.experiments.test_errors import TestErrors, UrbanoStudy

    base = TestErrors.of(sizes=(25,), alternatives=("two-sided", "greater"), trials=1000, B=200,
                         alpha=[0.01, 0.05], shard_items=1, shard_replicates=250)
    study = UrbanoStudy(base, 250, deltas=DELTAS[4:5])
    local, _ = run_study(study, pool_data)
    ray_tables, _ = run_study(study, pool_data, engine="ray", engine_options={"workers": 3})
    return all(local[k].equals(ray_tables[k]) for k in local) and set(local) == set(ray_tables)


def measure_merge(fields, rows, shard_items: int, count: int) -> tuple[float, int]:
    """Seconds per Accumulator.combine of a shard of `shard_items` configurations, bytes."""
    study = ReplayStudy(fields, rows, shard_items, count)
    shards = study.plan(None)
    parts = [study.kernel(s, None) for s in shards]
    acc = Accumulator(fields)

    def merge():
        for s, p in zip(shards, parts, strict=True):
            acc.combine(s, p)
            acc.needed(s, p)

    sec = best(merge, 2) / len(shards)
    return sec, wire_bytes(parts[0])


def measure_checkpoints(fields, rows, shard_items: int, count: int, tmp: Path
                        ) -> tuple[float, int, float]:
    """Seconds per CheckpointStore.save (fsyncs included), file bytes, seconds per resume
    check of a shard without a file."""
    study = ReplayStudy(fields, rows, shard_items, count)
    shards = study.plan(None)
    parts = [study.kernel(s, None) for s in shards]
    store = CheckpointStore(tmp / f"store{shard_items}", "bench", "0" * 64, fields=fields)
    t = time.perf_counter()
    for s, p in zip(shards, parts, strict=True):
        store.save(s, p)
    save = (time.perf_counter() - t) / len(shards)
    size = (store.dir / f"{shards[0].name}.npz").stat().st_size
    missing = [Shard(k, (0, 1), (10**9 + k, 10**9 + k + 1)) for k in range(count)]
    check = best(lambda: [store.load(s) for s in missing], 2) / count
    store.clear()
    return save, size, check


# ------------------------------------------------------------------------------ the model
def plan_costs(coef: dict, shard_items: int, shard_reps: int, *, metrics: int = METRICS,
               sizes: tuple[int, ...] = SIZES, kinds: int = KINDS, trials: int = TYPE1_TRIALS,
               power_trials: int = TYPE2_TRIALS, B: int = B_FULL) -> tuple[np.ndarray, int]:
    """Kernel seconds (one core) of every shard of an Urbano design's plan (default: the
    full design), in plan order, zero for shards without trials; and the number of shards.
    Follows ``UrbanoStudy.plan`` and ``kernel``: items are (metric, n, kind), kind 0 has
    `trials`, the others `power_trials`; a shard draws resamples once per (metric, n) group
    and Monte Carlo unit its trials touch."""
    from irsim.experiments.test_errors import MC_UNIT

    top_trials, items = max(trials, power_trials), metrics * len(sizes) * kinds
    r0 = np.arange(0, top_trials, shard_reps, dtype=np.int64)
    r1 = np.minimum(r0 + shard_reps, top_trials)
    blocks = [(i0, min(i0 + shard_items, items)) for i0 in range(0, items, shard_items)]
    cost = np.zeros((len(r0), len(blocks)))  # replicate blocks outer, as shard_grid
    for b, (i0, i1) in enumerate(blocks):
        groups: dict[int, list[int]] = {}
        for item in range(i0, i1):
            groups.setdefault(item // kinds, []).append(item % kinds)
        for g, ks in groups.items():
            limits = [trials if k == 0 else power_trials for k in ks]
            count = sum(np.clip(np.minimum(r1, t) - r0, 0, None) for t in limits)
            top = np.minimum(r1, max(limits))
            units = np.where(top > r0, (top - 1) // MC_UNIT - r0 // MC_UNIT + 1, 0)
            cost[:, b] += kernel_time(coef, sizes[g % len(sizes)], units, count, B)
    return cost.ravel(), cost.size


def makespan(costs: np.ndarray, cores: int) -> float:
    """Greedy list schedule of `costs` (plan order) on `cores`: each core takes the next
    shard when it is free."""
    costs = costs[costs > 0]
    if len(costs) <= cores:
        return float(costs.max(initial=0.0))
    heap = [0.0] * cores
    for c in costs.tolist():
        heapq.heapreplace(heap, heap[0] + c)
    return max(heap)


def project(m: dict, coef: dict, nodes: int, shard_items: int, shard_reps: int,
            cache: dict, workers: int | None = None) -> dict:
    """Wall time, driver busy share and the terms of the model for one plan on `nodes`
    (``m["skip_empty"]``: a plan without the shards that hold no trials); `workers`
    (``engine.workers``) default one per core, on ``ceil(workers / 64)`` nodes."""
    key = (shard_items, shard_reps)
    if key not in cache:
        cache[key] = plan_costs(coef, shard_items, shard_reps)
    costs, shards = cache[key]
    if m.get("skip_empty"):
        shards = int((costs > 0).sum())
    workers = workers or nodes * NODE_CORES
    used = -(-workers // NODE_CORES)  # the nodes that receive the data
    if (key, workers) not in cache:
        cache[key, workers] = makespan(costs, workers)
    compute = cache[key, workers]
    items = min(shard_items, ITEMS)
    d = m["d_shard"](items) + m["d_worker"] * workers
    driver = shards * d
    startup = (shards * m["plan_check"] + m["put"] + workers * m["create"] + m["ready"]
               + m["data_bytes"] * used / m["bandwidth"])
    return {"nodes": nodes, "workers": workers, "items": items, "reps": shard_reps,
            "shards": shards,
            "nonempty": int((costs > 0).sum()), "compute": compute, "driver": driver,
            "d": d, "startup": startup, "wall": startup + max(compute, driver),
            "busy": driver / max(compute, driver), "total": float(costs.sum())}


def recommend(m: dict, coef: dict, nodes: int, cache: dict, cap: bool = True) -> dict:
    """Among the candidate plans (shard sizes; with `cap` also ``engine.workers`` of 512 up
    to all cores, by powers of 2) that keep the driver at most 50% busy, those within 10% of
    the shortest wall time, and of these the one with the fewest shards (then the most
    workers); the least busy plan when none is at most 50% busy."""
    counts = [nodes * NODE_CORES]
    while cap and counts[-1] > 512:
        counts.append(counts[-1] // 2)
    options = [project(m, coef, nodes, si, sr, cache, w) for w in counts
               for si in CANDIDATE_ITEMS for sr in CANDIDATE_REPS]
    ok = [p for p in options if p["busy"] <= 0.5]
    if not ok:
        return min(options, key=lambda p: p["busy"])
    fastest = min(p["wall"] for p in ok)
    return min((p for p in ok if p["wall"] <= 1.1 * fastest),
               key=lambda p: (p["shards"], -p["workers"]))


def saturation(m: dict, coef: dict, shard_items: int, shard_reps: int, cache: dict) -> str:
    """The smallest node count (of 64 cores) at which the driver is 100% busy."""
    lo, hi = 1, 1
    while project(m, coef, hi, shard_items, shard_reps, cache)["busy"] < 1.0:
        lo, hi = hi, hi * 2
        if hi > 65536:
            return "> 65,536 nodes"
    if hi == 1:
        return "<= 1 node"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if project(m, coef, mid, shard_items, shard_reps, cache)["busy"] < 1.0:
            lo = mid
        else:
            hi = mid
    return f"{hi:,} nodes"


# ----------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer shards, smaller B (~1 min)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--nodes", type=int, default=3, help="simulated nodes (1 CPU each)")
    ap.add_argument("--address", default=None,
                    help="measure on this running cluster (HEAD:6379; run on one of its nodes) "
                         "instead of a simulated one")
    ap.add_argument("--shards", type=int, default=None, help="shards per engine run")
    ap.add_argument("--slots", type=int, default=None, help="actor slots of the dispatch run")
    ap.add_argument("--bandwidth", type=float, default=1.25e9,
                    help="bytes/s the head sends the data to the nodes with (assumed; "
                         "default 10 Gb/s, no relaying between nodes)")
    args = ap.parse_args()
    if args.nodes < 2:
        ap.error("--nodes must be at least 2 (the model needs actors on several nodes)")
    q = args.quick
    args.B1, args.B2 = (8192, 65536) if q else (16384, 131072)
    args.Bu = args.B2 if q else B_FULL
    args.R1, args.R2, args.repeats = (250, 750, 1) if q else (250, 1000, 1)
    shards = args.shards or (120 if q else 300)
    slots = args.slots or (256 if q else 1024)
    t_start = time.perf_counter()

    print(f"irsim scale model: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}, numpy "
          f"{np.__version__}, load average {os.getloadavg()[0]:.1f}{', --quick' if q else ''}")
    model, pool = fit_data(args.data, 10)
    from irsim.experiments.test_errors import UrbanoData

    pool_data = UrbanoData((pool,), DELTAS[4:5])
    per_run = wire_bytes(pool_data) / len(model.runs)
    runs_all = 0
    for name in FILES:
        with open(args.data / "urbano" / f"{name}.csv") as f:
            runs_all += len(f.readline().split(","))
    data_bytes = per_run * runs_all * 0.9  # drop_bottom = 0.1

    # -- kernel --------------------------------------------------------------------------
    coef, times, rows = measure_kernel(pool, args)
    print(f"\nkernel (UrbanoStudy.kernel, CPU time of 1 core, 5 tests x 2 tails x 19 alphas, "
          f"Type I + II trials): T = units (a + u B) + trials (w + v B); per trial from "
          f"{2 * args.R1} and {2 * args.R2} trials at B = {args.B1:,} and {args.B2:,}, per "
          f"unit from 2 trials at B = {args.B1:,} and {args.Bu:,}")
    print(f"{'n':>5}{'ms/trial B1':>13}{'ms/trial B2':>13}{'ms/trial 1e6':>14}"
          f"{'s/unit 1e6':>12}{'trials/s/core 1e6':>19}")
    for n in SIZES:
        a, u, w, v = coef[n]
        t = times[n]
        per = [(t[B, args.R2] - t[B, args.R1]) / (2 * (args.R2 - args.R1)) * 1e3
               for B in (args.B1, args.B2)]
        print(f"{n:>5}{per[0]:>13.3f}{per[1]:>13.3f}{(w + v * B_FULL) * 1e3:>14.2f}"
              f"{a + u * B_FULL:>12.2f}{1 / (w + v * B_FULL):>19.0f}")
    if not q:  # the extrapolation against one real shard at B = 10^6
        from threadpoolctl import threadpool_limits

        from irsim.experiments.test_errors import TestErrors, UrbanoStudy

        check = UrbanoStudy(TestErrors.of(sizes=(25,), alternatives=("two-sided", "greater"),
                                          trials=250, B=B_FULL, wilcoxon_method="r",
                                          sign_threshold=0.01, bootstrap_statistic="mean"),
                            250, deltas=DELTAS[4:5])
        with threadpool_limits(limits=1, user_api="blas"):
            real = best(lambda: check.kernel(Shard(0, (0, 2), (0, 250)), pool_data),
                        clock=time.process_time)
        print(f"check at B = 10^6, n = 25, 500 trials: measured {real:.2f} s, extrapolated "
              f"{kernel_time(coef, 25, 1, 500):.2f} s")

    # -- full-design fields, merge, bytes, checkpoints -----------------------------------
    def fields_at(shard_items: int) -> dict:
        """The full design's fields with item blocks of `shard_items` (the Type M records
        are one pair of fields per block)."""
        fstudy, fdata = full_study(shard_items, 250)
        return fstudy.fields(fdata)

    fields, fields_all = fields_at(1), fields_at(ITEMS)
    merge1, bytes1 = measure_merge(fields, rows, 1, 2000 if not q else 500)
    merge_all, bytes_all = measure_merge(fields_all, rows, ITEMS, 400 if not q else 100)
    with tempfile.TemporaryDirectory(prefix="irsim-scale-") as tmpname:
        tmp = Path(tmpname)
        save1, file1, check1 = measure_checkpoints(fields, rows, 1, 200 if not q else 60, tmp)
        save_all, file_all, _ = measure_checkpoints(fields_all, rows, ITEMS,
                                                    100 if not q else 30, tmp)
        t = time.perf_counter()
        pstudy, pdata = full_study(1, 4000)
        plan = pstudy.plan(pdata)
        plan_per = (time.perf_counter() - t) / len(plan)
        print(f"\npartials (full design: {ITEMS} configurations, 5 tests x 2 tails x 19 "
              f"alphas; 3 integer counters)")
        print(f"  bytes per shard through the object store: {bytes1:,} (1 configuration), "
              f"{bytes_all:,} ({ITEMS}); Ray inlines results under 100 KiB in the reply")
        print(f"  Accumulator merge (combine + needed): {1 / merge1:,.0f} shards/s "
              f"({bytes1 / merge1 / 1e6:,.1f} MB/s) of 1 configuration, {1 / merge_all:,.0f} "
              f"shards/s ({bytes_all / merge_all / 1e6:,.0f} MB/s) of {ITEMS}")
        print(f"  checkpoint store save (npz, sha256, 2 fsyncs, rename): {1 / save1:,.0f} "
              f"files/s ({file1:,} B each, {file1 / save1 / 1e6:.2f} MB/s) of 1 "
              f"configuration, {1 / save_all:,.0f} files/s ({file_all:,} B, "
              f"{file_all / save_all / 1e6:.1f} MB/s) of {ITEMS}")
        print(f"  plan + resume check: {plan_per * 1e6:.1f} + {check1 * 1e6:.1f} us per shard "
              f"(UrbanoStudy.plan of {len(plan):,} shards; CheckpointStore.load of a missing "
              f"file)")
        del plan

        # -- the simulated cluster -------------------------------------------------------
        where = (joined_cluster(args.address) if args.address
                 else simulated_cluster(args.nodes))
        with where as ray:
            alive = sum(1 for n in ray.nodes() if n.get("Alive"))
            cpus = int(ray.cluster_resources()["CPU"])
            put_rate = wire_bytes(pool_data) / best(lambda: ray.put(pool_data), 3)
            same = check_real_run(pool_data)
            start1 = measure_actor_start(ray, pool_data, 1)
            startn = measure_actor_start(ray, pool_data, cpus, extra=20 if q else 50)
            e1 = measure_engine(ray, fields, rows, 1, shards, tmp, cpus)
            e_all = measure_engine(ray, fields_all, rows, ITEMS, shards, tmp, cpus)
            s_lo = measure_slots(ray, fields, rows, cpus)
            s_hi = measure_slots(ray, fields, rows, slots)
            d_worker = max(0.0, (s_hi["busy"] - s_lo["busy"]) / (slots - cpus))
            slope = max(0.0, (e_all["busy"] - e1["busy"]) / (ITEMS - 1))
            m = {"d_shard": lambda items: e1["busy"] + slope * (items - 1),
                 "d_worker": d_worker, "plan_check": plan_per + check1,
                 "put": data_bytes / put_rate, "create": startn["create"],
                 "ready": start1["ready"], "data_bytes": data_bytes,
                 "bandwidth": args.bandwidth}
            check = model_check(ray, pool, coef, m, min(2, cpus), q)
        kind = (f"the cluster at {args.address}: {alive} nodes (ray start), {cpus} CPUs"
                if args.address else f"simulated cluster: {args.nodes} nodes x 1 CPU "
                f"(ray.cluster_utils.Cluster, 127.0.0.1)")
        print(f"\n{kind}, {cpus} actors; real UrbanoStudy (B = 200) on it equals "
              f"engine=local: {'yes' if same else 'NO'}")
        create = startn["create"]
        print(f"  actor start (RayPool until every actor answers): 1 actor {start1['ready']:.2f}"
              f" s; {cpus} actors {startn['ready']:.2f} s on {os.cpu_count()} cores; the "
              f"driver's part: {create * 1e3:.2f} ms per actor created, put of the data "
              f"{put_rate / 1e9:.2f} GB/s")
        for label, size, e in ((f"1 configuration ({bytes1:,} B)", bytes1, e1),
                               (f"{ITEMS} configurations ({bytes_all:,} B)", bytes_all, e_all)):
            print(f"  run_study, checkpoints on, {e['shards']} shards of {label}: "
                  f"{e['rate']:,.0f} shards/s ({e['rate'] * size / 1e6:.2f} MB/s) end to end; "
                  f"driver busy {e['busy'] * 1e3:.2f} ms"
                  f"/shard (checkpoint save {e['save'] * 1e3:.2f} ms; the driver thread's CPU "
                  f"{e['cpu'] * 1e3:.2f} ms)")
        print(f"  dispatch loop (RayPool.run, {cpus} actors behind {slots} slots, "
              f"{s_hi['pending']:,} shards in flight): {s_hi['busy'] * 1e3:.2f} ms/shard "
              f"against {s_lo['busy'] * 1e3:.2f} ms with {cpus} slots: "
              f"{d_worker * 1e6:.2f} us per worker per shard (ray.wait over every in-flight "
              f"shard, the least-loaded-actor scan)")

        print(f"  the model against a real run (UrbanoStudy, B = 8,192, {check['shards']} "
              f"shards, {check['workers']} new actors on {os.cpu_count()} cores): predicted "
              f"{check['predicted']:.1f} s (startup {check['startup']:.1f} + max(compute "
              f"{check['compute']:.1f}, driver {check['driver']:.2f})), measured "
              f"{check['measured']:.1f} s")
        print("  " + check_line(check["predicted"], check["measured"], check["load"],
                                os.cpu_count() or 1))

    # -- the model -----------------------------------------------------------------------
    trials_all = METRICS * len(SIZES) * (TYPE1_TRIALS + len(DELTAS) * TYPE2_TRIALS)
    cache: dict = {}
    default = project(m, coef, NODES[0], DEFAULT_ITEMS, DEFAULT_REPS, cache)
    print(f"\nfull design: {METRICS} metrics x {len(SIZES)} sizes x (1,667,000 + 10 x 167,000)"
          f" = {trials_all:,} trials, B = 10^6: {default['total'] / 3600:,.0f} core-hours of "
          f"kernel (shard_replicates = 4000); data ~{data_bytes / 1e6:,.0f} MB to every node "
          f"({runs_all:,} runs x {per_run / 1e3:.0f} kB, estimated)")
    print(f"driver cost per shard d = {e1['busy'] * 1e3:.2f} ms + {slope * 1e6:.2f} us x "
          f"(configurations - 1) + {d_worker * 1e6:.2f} us x workers")
    head = (f"{'nodes':>6}{'cores':>7}{'workers':>8}  {'shard_items x replicates':<25}"
            f"{'shards':>8}"
            f"{'non-empty':>11}{'compute':>10}{'driver':>10}{'busy':>7}{'startup':>10}"
            f"{'wall':>10}")
    print("\n" + head + "\n" + "-" * len(head))
    rec = {}
    for nodes in NODES:
        rec[nodes] = pick = recommend(m, coef, nodes, cache)
        for label, p in (("all in one", project(m, coef, nodes, ITEMS, DEFAULT_REPS, cache)),
                         ("default", project(m, coef, nodes, DEFAULT_ITEMS, DEFAULT_REPS,
                                             cache)),
                         ("recommended", pick)):
            size = f"{p['items']} x {p['reps']} ({label})"
            print(f"{nodes:>6}{nodes * NODE_CORES:>7}{p['workers']:>8}  {size:<25}"
                  f"{p['shards']:>8,}"
                  f"{p['nonempty']:>11,}{fmt_s(p['compute']):>10}{fmt_s(p['driver']):>10}"
                  f"{p['busy']:>7.0%}{fmt_s(p['startup']):>10}{fmt_s(p['wall']):>10}")
    print("\ndriver saturation (100% busy):")
    print(f"  default {DEFAULT_ITEMS} x {DEFAULT_REPS}: "
          f"{saturation(m, coef, DEFAULT_ITEMS, DEFAULT_REPS, cache)}")
    for nodes, p in rec.items():
        print(f"  {p['items']} x {p['reps']} (recommended for {nodes} nodes): "
              f"{saturation(m, coef, p['items'], p['reps'], cache)}")
    print("\nwhat if (not in irsim today; same measurements and rule, one worker per core):")
    whatifs = (("the plan left out shards without trials", {**m, "skip_empty": True}),
               ("+ the driver's cost per shard did not grow with workers",
                {**m, "skip_empty": True, "d_worker": 0.0}))
    for label, mm in whatifs:
        picks = [recommend(mm, coef, nodes, cache, cap=False) for nodes in NODES]
        print(f"  {label}: " + "; ".join(
            f"{p['nodes']} nodes {p['items']} x {p['reps']}: {fmt_s(p['wall'])} "
            f"({p['busy']:.0%})" for p in picks))
    print(f"\n(bench ran {time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
