"""engine=ray: shards run on a pool of Ray actors with the same numpy kernels as local.

The study's data goes into the object store once (``ray.put``); each actor receives the
reference at construction and reads the arrays zero-copy. Work is submitted with a bounded
number of shards in flight per actor and results are yielded as they arrive
(``ray.wait(num_returns=1)``), so the reducer streams and memory stays bounded. A shard lost
with its actor or node is retried on a surviving actor (a replacement actor gets shards only
once it has answered a ping, so a lost node never hangs the run), so a killed actor or node
changes nothing: every shard is a pure function of (study, shard, data). The pool's methods
follow Ray's ``ActorPool``: submit, next ready, retry, ping. The Ray instance itself (started
or joined, its processes, its watchdog) is :mod:`irsim.engine.supervision`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from irsim.engine.base import Partial, Shard, Study
from irsim.engine.supervision import (
    RayInstance,
    Watchdog,
    kept_count,
    loopback_only,
    object_store_for_limit,
    release_kept,
)
from irsim.errors import ConfigError, param, python_door

__all__ = ["ray_partials", "RayPool", "loopback_only", "kept_count",
           "release_kept", "object_store_for_limit", "Watchdog"]

log = logging.getLogger(__name__)

#: seconds to wait for a TCP connection to ``engine.address`` before giving up
CONNECT_TIMEOUT = 10.0

#: seconds a replacement actor gets to start before the run goes on without it
REPLACEMENT_TIMEOUT = 60.0


def _check_count(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{param(key, 'engine')} must be an integer >= {low}, got {value!r}")
    return value



@dataclass(frozen=True)
class _Task:
    """A pending call running `shard` (on the actor of its slot)."""

    shard: Shard


@dataclass(frozen=True)
class _Ping:
    """A pending ping of a replacement actor: it gets shards once it answers, and is given
    up at `deadline` (``time.monotonic()``)."""

    deadline: float


@dataclass
class _Schedule:
    """The state of one :meth:`RayPool.run`: shards to submit (the next last), pending calls
    (reference -> (task or ping, actor slot, actor)), retries per shard, shards in flight per
    slot and which slots take shards."""

    queue: list[Shard]
    slots: int
    pending: dict[Any, tuple[_Task | _Ping, int, Any]] = field(default_factory=dict)
    failures: dict[int, int] = field(default_factory=dict)
    load: list[int] = field(init=False)
    ready: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        self.load = [0] * self.slots
        self.ready = [True] * self.slots  # the first actors are placed by the CPU check

    def tasks_left(self) -> bool:
        """Whether shards remain to run (queued or pending; pings do not count)."""
        return bool(self.queue) or any(isinstance(t, _Task) for t, _, _ in
                                       self.pending.values())

    def pings(self) -> list[tuple[Any, _Ping, int]]:
        return [(ref, t, i) for ref, (t, i, _) in self.pending.items() if isinstance(t, _Ping)]


class RayPool:
    """A pool of shard-running actors on a (started or joined) Ray cluster.

    Parameters
    ----------
    study : Study
    data : object
        Put in the object store once.
    workers : int, optional
        Number of actors; default the cluster's CPUs.
    address : str, optional
        ``None`` starts a local Ray instance (bound to 127.0.0.1); ``"auto"`` or
        ``"ray://host:port"`` joins a running cluster.
    num_cpus : int, optional
        CPUs of a locally started instance.
    in_flight : int
        Shards queued per actor.
    max_retries : int
        How often a shard is retried when its actor dies.
    keep_alive : bool
        Leave a Ray instance this pool started running after :meth:`shutdown` (it stops
        at interpreter exit), so the jobs of a sweep share one instance.
    blas_threads : int, optional
        BLAS threads inside each actor (default 1: parallelism comes from actors).
    """

    def __init__(self, study: Study, data: Any, *, workers: int | None = None,
                 address: str | None = None, num_cpus: int | None = None, in_flight: int = 2,
                 max_retries: int = 3, cpus_per_worker: float = 1.0,
                 keep_alive: bool = False, blas_threads: int | None = 1):
        workers = None if workers is None else _check_count("workers", workers, 1)
        num_cpus = None if num_cpus is None else _check_count("num_cpus", num_cpus, 1)
        self.in_flight = _check_count("in_flight", in_flight, 1)
        self.max_retries = _check_count("max_retries", max_retries, 0)
        if address is not None and not isinstance(address, str):
            raise ConfigError(f"engine.address must be a string, got {address!r}")
        if address:  # one line within seconds: nobody answers, or this machine is no node
            from irsim.engine.reach import check_driver

            check_driver(address, CONNECT_TIMEOUT)
        self.instance = RayInstance(address, num_cpus, keep_alive)
        self.ray = ray = self.instance.ray
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.workers = int(workers) if workers else max(1, int(cpus // cpus_per_worker))
        self.cpus_per_worker = cpus_per_worker
        self._check_cpus(cpus)
        # a dead actor is replaced by run() (a fresh actor per lost one, each shard retried at
        # most max_retries times), not restarted by Ray
        self._actor_cls = ray.remote(_ShardActor).options(
            num_cpus=cpus_per_worker, max_restarts=0, max_task_retries=0)
        self.study = study
        self.blas_threads = blas_threads
        self.data_ref = ray.put(data)
        self.actors: list[Any] = [self._new_actor() for _ in range(self.workers)]
        if self.instance.watchdog is not None:  # the workers the actors started in
            ray.get([a.pid.remote() for a in self.actors])
            self.instance.watch()
        alive = [n for n in ray.nodes() if n.get("Alive")]
        #: where the work ran, for the manifest
        self.cluster = {"gcs_address": ray.get_runtime_context().gcs_address,
                        "nodes": len(alive), "cpus": cpus, "workers": self.workers}

    def _check_cpus(self, cpus: int) -> None:
        """Refuse more actors than the cluster has CPUs for (they would wait forever). The
        message suggests a larger ``engine.num_cpus`` only where it helps and can be given:
        an instance this pool started locally, from the command line (a study function takes
        ``workers`` but no ``num_cpus``)."""
        need = self.workers * self.cpus_per_worker
        if need <= cpus:
            return
        self.shutdown()
        hint = (f" or a larger {param('num_cpus', 'engine')}"
                if self.instance.local and not python_door() else "")
        raise ConfigError(
            f"{param('workers', 'engine')}={self.workers} needs {need:g} CPUs but the Ray "
            f"cluster has {cpus}; use fewer workers (null = one per CPU){hint}")

    def _new_actor(self) -> Any:
        # the reference travels inside a list: the actor fetches it itself (zero-copy)
        return self._actor_cls.remote(self.study, [self.data_ref], self.blas_threads)

    def _room_for_actor(self) -> bool:
        """Whether the live nodes have a CPU for one more actor besides the live ones (a
        replacement that can never be scheduled would hang the run)."""
        cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in self.ray.nodes()
                   if n.get("Alive"))
        live = sum(a is not None for a in self.actors)
        return cpus - live * self.cpus_per_worker >= self.cpus_per_worker

    def run(self, shards: list[Shard], hints: Callable[[Shard], dict] | None = None
            ) -> Iterator[tuple[Shard, Partial]]:
        """Yield ``(shard, partial)`` as shards finish (completion order).

        `hints` (e.g. :meth:`irsim.engine.partials.Accumulator.hints` of the merge) is
        asked for each shard as it is submitted; the actor drops from its partial what they
        say the merge can never use (:func:`irsim.engine.partials.prefilter`), so that less
        is shipped and merged. Exact: a hint stays true while the merge goes on.

        A shard whose actor died (killed, its node lost) or whose result was lost with its
        node is retried, at most `max_retries` times, on a surviving actor. A fresh actor
        replaces a lost one when the live nodes seem to have a CPU for it; it receives shards
        only once it has answered a ping, and is given up after :data:`REPLACEMENT_TIMEOUT`
        seconds (a node lost but not yet declared dead looks like room for an actor that
        can never start: waiting on it would hang the run). When no actor is left the run
        fails with one message.
        """
        s = _Schedule(list(reversed(shards)), len(self.actors))
        self._fill(s, hints)
        while s.tasks_left():
            ready = self._next_ready(s)
            if ready is None:  # nothing finished within a second
                self._expire_pings(s)
            else:
                ref, (task, i, actor) = ready
                if isinstance(task, _Ping):
                    self._pinged(s, ref, i, actor)
                else:
                    partial = self._result(s, ref, task.shard, i, actor)
                    if partial is not None:
                        self._fill(s, hints)
                        yield task.shard, partial
                        continue
            self._fill(s, hints)

    def _submit(self, s: _Schedule, i: int, hints: Callable[[Shard], dict] | None) -> None:
        """Submit the next queued shard to the actor of slot `i` (its hint first)."""
        shard = s.queue.pop()
        actor = self.actors[i]
        hint = hints(shard) if hints is not None else None
        if hint:  # an actor runs one caller's calls in order: the hint comes first
            actor.hint.remote(shard, hint)
        s.pending[actor.run.remote(shard)] = (_Task(shard), i, actor)
        s.load[i] += 1

    def _fill(self, s: _Schedule, hints: Callable[[Shard], dict] | None) -> None:
        """Give queued shards to ready actors, least loaded first, up to ``in_flight``."""
        while s.queue:
            usable = [j for j, a in enumerate(self.actors)
                      if a is not None and s.ready[j] and s.load[j] < self.in_flight]
            if not usable:
                return
            self._submit(s, min(usable, key=s.load.__getitem__), hints)

    def _next_ready(self, s: _Schedule) -> tuple[Any, tuple[_Task | _Ping, int, Any]] | None:
        """The next finished call (its reference and what it was), or None after a second
        without one. Fails when shards are queued but nobody can run them."""
        if not s.pending:
            self._check_alive()
            raise RuntimeError("no Ray worker can run the remaining shards; rerun to "
                               "resume from the saved shards")
        done, _ = self.ray.wait(list(s.pending), num_returns=1, timeout=1.0)
        if not done:
            return None
        return done[0], s.pending.pop(done[0])

    def _result(self, s: _Schedule, ref: Any, shard: Shard, i: int, actor: Any
                ) -> Partial | None:
        """The partial of a finished shard, or None when it was lost and queued again."""
        from ray.exceptions import ObjectLostError, RayActorError

        s.load[i] -= 1
        try:
            return self.ray.get(ref)
        except (RayActorError, ObjectLostError) as err:
            # the actor died, or its node did after the shard finished (the result lived in
            # that node's object store): either way the shard is computed again
            self._retry(s, shard, err)
            if self.actors[i] is actor and isinstance(err, RayActorError):
                self._replace(s, i)
            self._check_alive()
            return None

    def _retry(self, s: _Schedule, shard: Shard, err: Exception) -> None:
        """Queue a lost shard again, unless it was lost ``max_retries`` times already."""
        s.failures[shard.index] = s.failures.get(shard.index, 0) + 1
        if s.failures[shard.index] > self.max_retries:
            raise err
        log.warning("shard %s lost (%s); retrying", shard.name, type(err).__name__)
        s.queue.append(shard)

    def _replace(self, s: _Schedule, i: int) -> None:
        """Slot `i` lost its actor: a fresh one, pinged, if there seems to be room."""
        self.actors[i], s.ready[i] = None, False
        if self._room_for_actor():
            self.actors[i] = actor = self._new_actor()
            ping = _Ping(time.monotonic() + REPLACEMENT_TIMEOUT)
            s.pending[actor.pid.remote()] = (ping, i, actor)

    def _pinged(self, s: _Schedule, ref: Any, i: int, actor: Any) -> None:
        """A replacement answered its ping (it now takes shards) or died trying."""
        from ray.exceptions import ObjectLostError, RayActorError

        try:
            self.ray.get(ref)
            s.ready[i] = True
        except (RayActorError, ObjectLostError):
            if self.actors[i] is actor:
                self.actors[i] = None
            self._check_alive()

    def _expire_pings(self, s: _Schedule) -> None:
        """Give up replacements that did not answer within :data:`REPLACEMENT_TIMEOUT`."""
        now = time.monotonic()
        for ref, ping, i in s.pings():
            if now > ping.deadline:
                log.warning("a replacement Ray worker did not start within %g s; going on "
                            "without it", REPLACEMENT_TIMEOUT)
                del s.pending[ref]
                self._kill(self.actors[i])
                self.actors[i] = None
        self._check_alive()

    def _check_alive(self) -> None:
        if all(a is None for a in self.actors):
            raise RuntimeError("every Ray worker was lost (nodes gone?); rerun to resume "
                               "from the saved shards")

    def worker_stats(self) -> dict[str, float]:
        """Seconds the live actors spent in shards: ``worker_seconds`` (wall) and
        ``worker_cpu_seconds`` (a ratio well below 1: the workers waited for a CPU)."""
        live = [a for a in self.actors if a is not None]
        try:
            stats = self.ray.get([a.stats.remote() for a in live], timeout=10)
        except Exception:  # noqa: BLE001 - diagnostics only
            return {}
        return {"worker_seconds": round(sum(s[0] for s in stats), 4),
                "worker_cpu_seconds": round(sum(s[1] for s in stats), 4)}

    def _kill(self, actor: Any) -> None:
        # after Ray was shut down (e.g. by the run's engine session before this pool's
        # generator is finalised), a Ray call would start a new instance: nothing to kill
        if actor is None or not self.ray.is_initialized():
            return
        try:
            self.ray.kill(actor)
        except Exception:  # already gone
            pass

    def shutdown(self) -> None:
        """Kill the actors; shut Ray down if this pool started it (and was not asked to keep
        it)."""
        for a in getattr(self, "actors", []):
            self._kill(a)
        self.actors = []
        self.instance.close()


class _ShardActor:
    def __init__(self, study: Study, data: Any, blas_threads: int | None = 1):
        import ray

        self.study = study
        self.data = ray.get(data[0]) if isinstance(data, list) else data
        self._fields: Any = None
        self._hints: dict[Shard, dict] = {}  # for the shards about to run
        self.seconds = self.cpu_seconds = 0.0  # in shards: wall time, this thread's CPU
        if blas_threads is not None:  # this actor's own process
            from threadpoolctl import threadpool_limits

            self._limits = threadpool_limits(limits=int(blas_threads), user_api="blas")

    def hint(self, shard: Shard, hints: dict) -> None:
        """What the merge can never use of `shard` (sent just before :meth:`run`)."""
        self._hints[shard] = hints

    def run(self, shard: Shard) -> Partial:
        t, c = time.perf_counter(), time.thread_time()
        hints = self._hints.pop(shard, None)  # (taken first: a failing kernel leaves none)
        part = self.study.kernel(shard, self.data)
        if hints:  # drop what the merge can never use (exact), before shipping
            from irsim.engine.partials import prefilter

            if self._fields is None:
                self._fields = self.study.fields(self.data)
            part = prefilter(self._fields, part, hints)
        self.seconds += time.perf_counter() - t
        self.cpu_seconds += time.thread_time() - c
        return part

    def stats(self) -> tuple[float, float]:
        """Seconds spent in shards so far: wall time and CPU time."""
        return self.seconds, self.cpu_seconds

    def pid(self) -> int:
        import os

        return os.getpid()


def ray_partials(study: Study, data: Any, shards: list[Shard], *,
                 info: dict | None = None, hints: Callable[[Shard], dict] | None = None,
                 **options: Any) -> Iterator[tuple[Shard, Partial]]:
    """The ``engine=ray`` stream of partial results used by :func:`irsim.engine.run_study`.

    Options: ``address``, ``workers``, ``num_cpus``, ``in_flight``, ``max_retries``,
    ``cpus_per_worker``, ``keep_alive`` (see :class:`RayPool`); :func:`irsim.engine.run_study`
    checks them (:func:`irsim.engine.config.check_options`). `info` (a dict) receives the
    cluster description; `hints` see :meth:`RayPool.run`.
    """
    if not shards:
        return
    pool = RayPool(study, data, **{k: v for k, v in options.items() if v is not None})
    if info is not None:
        info["ray"] = dict(pool.cluster)
    try:
        yield from pool.run(shards, hints)
        if info is not None:
            info["ray"].update(pool.worker_stats())
    finally:
        pool.shutdown()
