"""engine=ray: shards run on a pool of Ray actors with the same numpy kernels as local.

The study's data goes into the object store once (``ray.put``); each actor receives the
reference at construction and reads the arrays zero-copy. Work is submitted with a bounded
number of shards in flight per actor and results are yielded as they arrive
(``ray.wait(num_returns=1)``), so the reducer streams and memory stays bounded. Actors are
restartable and their tasks retried, so a killed actor changes nothing: every shard is a pure
function of (study, shard, data).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from irsim.engine.base import Partial, Shard, Study
from irsim.errors import ConfigError

__all__ = ["ray_partials", "RayPool"]

log = logging.getLogger(__name__)


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
        import ray

        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                kwargs["address"] = address
            else:  # always a new local instance, never a stale cluster found on this machine
                kwargs["address"] = "local"
                kwargs["num_cpus"] = num_cpus
                kwargs["_node_ip_address"] = "127.0.0.1"
            ray.init(**kwargs)
            self.started = not keep_alive
            if keep_alive:
                import atexit

                atexit.register(ray.shutdown)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = int(workers) if workers else max(1, int(cpus // cpus_per_worker))
        if self.workers < 1:
            raise ConfigError(f"engine.workers must be >= 1, got {workers}")
        self.in_flight = max(1, int(in_flight))
        self.max_retries = int(max_retries)
        self._actor_cls = ray.remote(_ShardActor).options(
            num_cpus=cpus_per_worker, max_restarts=-1, max_task_retries=max_retries)
        self.study = study
        self.blas_threads = blas_threads
        self.data_ref = ray.put(data)
        self.actors = [self._new_actor() for _ in range(self.workers)]
        alive = [n for n in ray.nodes() if n.get("Alive")]
        #: where the work ran, for the manifest
        self.cluster = {"gcs_address": ray.get_runtime_context().gcs_address,
                        "nodes": len(alive), "cpus": cpus, "workers": self.workers}

    def _new_actor(self) -> Any:
        return self._actor_cls.remote(self.study, self.data_ref, self.blas_threads)

    def run(self, shards: list[Shard]) -> Iterator[tuple[Shard, Partial]]:
        """Yield ``(shard, partial)`` as shards finish (completion order).

        A shard whose actor died (killed, node lost) is retried on a fresh actor, at most
        `max_retries` times.
        """
        ray = self.ray
        from ray.exceptions import RayActorError

        queue = list(reversed(shards))
        pending: dict[Any, tuple[Shard, int, Any]] = {}
        failures: dict[int, int] = {}

        def submit(i: int) -> None:
            shard = queue.pop()
            actor = self.actors[i]
            pending[actor.run.remote(shard)] = (shard, i, actor)

        for _ in range(self.in_flight):
            for i in range(len(self.actors)):
                if queue:
                    submit(i)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            shard, i, actor = pending.pop(ready[0])
            try:
                partial = ray.get(ready[0])
            except RayActorError:
                failures[shard.index] = failures.get(shard.index, 0) + 1
                if failures[shard.index] > self.max_retries:
                    raise
                log.warning("actor died running shard %s; retrying", shard.name)
                if self.actors[i] is actor:
                    self.actors[i] = self._new_actor()
                queue.append(shard)
                submit(i)
                continue
            if queue:
                submit(i)
            yield shard, partial

    def shutdown(self) -> None:
        """Kill the actors; shut Ray down if this pool started it."""
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # already gone
                pass
        self.actors = []
        if self.started:
            self.ray.shutdown()
            self.started = False


class _ShardActor:
    def __init__(self, study: Study, data: Any, blas_threads: int | None = 1):
        self.study = study
        self.data = data
        if blas_threads is not None:  # this actor's own process
            from threadpoolctl import threadpool_limits

            self._limits = threadpool_limits(limits=int(blas_threads), user_api="blas")

    def run(self, shard: Shard) -> Partial:
        return self.study.kernel(shard, self.data)

    def pid(self) -> int:
        import os

        return os.getpid()


def ray_partials(study: Study, data: Any, shards: list[Shard], *,
                 info: dict | None = None, **options: Any
                 ) -> Iterator[tuple[Shard, Partial]]:
    """The ``engine=ray`` stream of partial results used by :func:`irsim.engine.run_study`.

    Options: ``address``, ``workers``, ``num_cpus``, ``in_flight``, ``max_retries``,
    ``cpus_per_worker``, ``keep_alive`` (see :class:`RayPool`); unknown keys are rejected.
    `info` (a dict) receives the cluster description.
    """
    allowed = {"address", "workers", "num_cpus", "in_flight", "max_retries", "cpus_per_worker",
               "keep_alive", "blas_threads"}
    unknown = set(options) - allowed
    if unknown:
        raise ConfigError(f"unknown engine option(s) for engine=ray: {sorted(unknown)}; "
                          f"valid: {sorted(allowed)}")
    if not shards:
        return
    pool = RayPool(study, data, **{k: v for k, v in options.items() if v is not None})
    if info is not None:
        info["ray"] = dict(pool.cluster)
    try:
        yield from pool.run(shards)
    finally:
        pool.shutdown()
