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
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from irsim.engine.base import Partial, Shard, Study
from irsim.errors import ConfigError, param

__all__ = ["ray_partials", "RayPool", "loopback_only", "check_address"]

log = logging.getLogger(__name__)

#: seconds to wait for a TCP connection to ``engine.address`` before giving up
CONNECT_TIMEOUT = 10.0


def loopback_only() -> None:
    """Make a Ray instance started by this process listen on 127.0.0.1 only.

    On Linux, Ray binds its GCS, raylet and agents to the machine's external address even with
    ``_node_ip_address="127.0.0.1"``, unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's
    local-only mode, the default on macOS and Windows). The variable is set for this process
    and the Ray processes it starts, and Ray's already imported constant is updated. A real
    multi-node cluster is joined with ``engine.address`` instead (and is never affected).
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray._private.ray_constants as constants

    constants.ENABLE_RAY_CLUSTER = False


def check_address(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast (within `timeout` seconds) when ``engine.address`` names a host:port that
    does not accept connections; Ray itself would retry for minutes. ``auto`` is left to Ray
    (it fails at once when no cluster runs on this machine).

    Examples
    --------
    >>> check_address("auto")
    >>> check_address("ray://nowhere", timeout=1)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: engine.address='ray://nowhere' must be 'auto', host:port or ray://host:port
    """
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"engine.address={address!r} must be 'auto', host:port or "
                          f"ray://host:port")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ConfigError(f"engine.address={address!r}: no Ray cluster reachable at "
                          f"{host}:{port} ({reason} after at most {timeout:g} s)") from None


@contextmanager
def _stderr_to_log() -> Iterator[None]:
    """Send what Ray's C++ core writes to file descriptor 2 while it starts or connects (e.g.
    a GCS retry warning per second) to this module's log instead of the console."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace").strip()
            if text:
                log.info("ray: %s", text)


def _check_count(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{param(key, 'engine')} must be an integer >= {low}, got {value!r}")
    return value


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
        in_flight = _check_count("in_flight", in_flight, 1)
        max_retries = _check_count("max_retries", max_retries, 0)
        if address is not None and not isinstance(address, str):
            raise ConfigError(f"engine.address must be a string, got {address!r}")
        if address:
            check_address(address)
        import ray

        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            if not address:
                loopback_only()  # the instance about to start, and its processes
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": logging.ERROR}
            if address:
                kwargs["address"] = address
            else:  # always a new local instance, never a stale cluster found on this machine
                kwargs["address"] = "local"
                kwargs["num_cpus"] = num_cpus
                kwargs["_node_ip_address"] = "127.0.0.1"
            try:
                with _stderr_to_log():
                    ray.init(**kwargs)
            except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
                first = (str(err).strip().splitlines() or [type(err).__name__])[0]
                where = f"engine.address={address!r}" if address else "a local Ray instance"
                raise ConfigError(f"{where}: Ray did not start ({first})") from None
            self.started = not keep_alive
            if keep_alive:
                import atexit

                atexit.register(ray.shutdown)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.workers = int(workers) if workers else max(1, int(cpus // cpus_per_worker))
        if self.workers * cpus_per_worker > cpus:
            # actors that can never be scheduled would wait forever
            self.shutdown()
            hint = f" or a larger {param('num_cpus', 'engine')}" if (
                not address and param("x", "engine") != "x") else ""
            raise ConfigError(
                f"{param('workers', 'engine')}={self.workers} needs "
                f"{self.workers * cpus_per_worker:g} CPUs but the Ray cluster has {cpus}; use "
                f"fewer workers (null = one per CPU){hint}")
        self.in_flight = in_flight
        self.max_retries = max_retries
        self.cpus_per_worker = cpus_per_worker
        # a dead actor is replaced by run() (a fresh actor per lost one, each shard retried at
        # most max_retries times), not restarted by Ray
        self._actor_cls = ray.remote(_ShardActor).options(
            num_cpus=cpus_per_worker, max_restarts=0, max_task_retries=0)
        self.study = study
        self.blas_threads = blas_threads
        self.data_ref = ray.put(data)
        self.actors = [self._new_actor() for _ in range(self.workers)]
        alive = [n for n in ray.nodes() if n.get("Alive")]
        #: where the work ran, for the manifest
        self.cluster = {"gcs_address": ray.get_runtime_context().gcs_address,
                        "nodes": len(alive), "cpus": cpus, "workers": self.workers}

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

    def run(self, shards: list[Shard]) -> Iterator[tuple[Shard, Partial]]:
        """Yield ``(shard, partial)`` as shards finish (completion order).

        A shard whose actor died (killed, its node lost) or whose result was lost with its
        node is retried, at most `max_retries` times, on a fresh actor when the live nodes
        have room for one, else on a surviving actor (the pool shrinks); when no actor is
        left the run fails with one message.
        """
        ray = self.ray
        from ray.exceptions import ObjectLostError, RayActorError

        queue = list(reversed(shards))
        pending: dict[Any, tuple[Shard, int, Any]] = {}
        failures: dict[int, int] = {}
        load = [0] * len(self.actors)

        def submit(i: int) -> None:
            shard = queue.pop()
            actor = self.actors[i]
            pending[actor.run.remote(shard)] = (shard, i, actor)
            load[i] += 1

        for _ in range(self.in_flight):
            for i in range(len(self.actors)):
                if queue:
                    submit(i)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            shard, i, actor = pending.pop(ready[0])
            load[i] -= 1
            try:
                partial = ray.get(ready[0])
            except (RayActorError, ObjectLostError) as err:
                # the actor died, or its node did after the shard finished (the result lived
                # in that node's object store): either way the shard is computed again
                failures[shard.index] = failures.get(shard.index, 0) + 1
                if failures[shard.index] > self.max_retries:
                    raise
                log.warning("shard %s lost (%s); retrying", shard.name, type(err).__name__)
                if self.actors[i] is actor and isinstance(err, RayActorError):
                    self.actors[i] = None
                    if self._room_for_actor():
                        self.actors[i] = self._new_actor()
                live = [j for j, a in enumerate(self.actors) if a is not None]
                if not live:
                    raise RuntimeError("every Ray worker was lost (nodes gone?); rerun "
                                       "to resume from the saved shards") from None
                queue.append(shard)
                submit(i if self.actors[i] is not None else min(live, key=load.__getitem__))
                continue
            if queue and self.actors[i] is not None:
                submit(i)
            elif queue:
                live = [j for j, a in enumerate(self.actors) if a is not None]
                submit(min(live, key=load.__getitem__))
            yield shard, partial

    def shutdown(self) -> None:
        """Kill the actors; shut Ray down if this pool started it."""
        for a in getattr(self, "actors", []):
            if a is None:
                continue
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
        import ray

        self.study = study
        self.data = ray.get(data[0]) if isinstance(data, list) else data
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
