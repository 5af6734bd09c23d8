"""engine=ray: shards run on a pool of Ray actors with the same numpy kernels as local.

The study's data goes into the object store once (``ray.put``); each actor receives the
reference at construction and reads the arrays zero-copy. Work is submitted with a bounded
number of shards in flight per actor and results are yielded as they arrive
(``ray.wait(num_returns=1)``), so the reducer streams and memory stays bounded. A shard lost
with its actor or node is retried on a surviving actor (a replacement actor gets shards only
once it has started, so a lost node never hangs the run), so a killed actor or node changes
nothing: every shard is a pure function of (study, shard, data). A Ray instance started here
listens on 127.0.0.1 only and has a :class:`Watchdog` that ends its processes when the driver
dies, even by ``kill -9``.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from irsim.engine.base import Partial, Shard, Study
from irsim.errors import ConfigError, param

__all__ = ["ray_partials", "RayPool", "loopback_only", "check_address", "kept_count",
           "release_kept"]

log = logging.getLogger(__name__)

#: seconds to wait for a TCP connection to ``engine.address`` before giving up
CONNECT_TIMEOUT = 10.0

#: seconds a replacement actor gets to start before the run goes on without it
REPLACEMENT_TIMEOUT = 60.0


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


def _first_sentence(message: str, limit: int = 200) -> str:
    """The first sentence of Ray's first line of `message`, at most `limit` characters.

    Examples
    --------
    >>> _first_sentence("Raylet is terminated. Termination is unexpected.\\n  [state-dump] ...")
    'Raylet is terminated'
    """
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    first = line.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= limit else first[:limit - 3] + "..."


class RayEventsToLog:
    """Ray's cluster events on the driver's console as one irsim warning each.

    Ray's driver prints every error the cluster publishes (a raylet that died, a node marked
    dead) to stdout, whatever ``log_to_driver`` says, with up to hundreds of lines of the
    dead raylet's log (``[state-dump]``). While installed, such a message becomes one
    warning of this module's logger: its first sentence and where Ray's full logs are (each
    node's ``<temp dir>/session_latest/logs``; the dead raylet's in its ``raylet.out``);
    the same sentence is said once. Ray's other output (task output, with ``log_to_driver``)
    is left to Ray. :meth:`restore` puts Ray's printer back.
    """

    def __init__(self) -> None:
        import ray._private.worker as ray_worker

        self._module = ray_worker
        self._original = ray_worker.print_to_stdstream
        self._seen: set[str] = set()
        node = getattr(ray_worker, "_global_node", None)
        try:
            self.logs = node.get_logs_dir_path() if node is not None else None
        except Exception:  # noqa: BLE001 - diagnostics only
            self.logs = None
        ray_worker.print_to_stdstream = self._print

    def _print(self, data: dict, ignore_prefix: bool) -> None:
        if data.get("pid") != "raylet":
            self._original(data, ignore_prefix)
            return
        for message in data.get("lines", []):
            first = _first_sentence(str(message))
            if first and first not in self._seen:
                self._seen.add(first)
                where = (f"{self.logs} on this node, <temp dir>/session_latest/logs on the "
                         f"others") if self.logs else "each node's session_latest/logs"
                log.warning("Ray: %s (Ray's full logs: %s)", first, where)

    def restore(self) -> None:
        if self._module.print_to_stdstream == self._print:
            self._module.print_to_stdstream = self._original


#: The watchdog of a Ray instance irsim starts: it reads ``pid starttime`` lines from its
#: stdin, a pipe whose write end only the driver holds. EOF means the driver is gone (also
#: after ``kill -9``); it then gives the listed processes GRACE seconds to exit and SIGKILLs
#: those still running, each identified by pid and start time (never by name).
_WATCHDOG = r"""
import os, signal, sys, time
GRACE = float(sys.argv[1])
def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None
targets = []
for line in sys.stdin:
    pid, start = line.split()
    targets.append((int(pid), start))
deadline = time.monotonic() + GRACE
while time.monotonic() < deadline:
    targets = [(pid, st) for pid, st in targets if started(pid) == st]
    if not targets:
        break
    time.sleep(0.1)
for pid, st in targets:
    if started(pid) == st:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""

#: Seconds the Ray processes get to exit by themselves once the driver is gone. Ray's own
#: fate sharing ends the GCS, the raylet and the workers at once; its dashboard and
#: runtime-env agents notice within ~2 s but then wait 60 s on a call to the dead GCS
#: (``publish_error_to_driver``), which the watchdog cuts short.
WATCHDOG_GRACE = 2.0


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every process (Linux /proc)."""
    from pathlib import Path

    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(entry.name)] = (int(fields[1]), fields[19])
    return out


def descendants(pid: int, roots: set[tuple[int, str]] | None = None
                ) -> list[tuple[int, str]]:
    """``(pid, start time)`` of every descendant of `pid` (children, grandchildren...);
    with `roots`, only the children of `pid` in `roots` and their descendants."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    todo = [c for c in children.get(pid, []) if roots is None or (c, table[c][1]) in roots]
    out = []
    while todo:
        p = todo.pop()
        out.append((p, table[p][1]))
        todo.extend(children.get(p, []))
    return out


class Watchdog:
    """Ends the processes of a Ray instance irsim started when the driver dies (even by
    ``kill -9``), instead of leaving Ray's agents orphaned for a minute or more.

    A small process (own session: a Ctrl-C of the terminal does not reach it) reads the
    driver's Ray processes (pid and start time) from a pipe; when the pipe closes (the
    driver exited, crashed or was killed) it waits :data:`WATCHDOG_GRACE` seconds and
    SIGKILLs those still running. Linux only (reads /proc); elsewhere it does nothing.

    Only processes the Ray instance started are handed over: the driver's children that
    did not exist before Ray started (`before`: the children then, from :meth:`children`),
    and their descendants; any other child of the driver (a notebook's own subprocesses,
    say) is never touched.
    """

    def __init__(self, before: set[tuple[int, str]]) -> None:
        import subprocess

        self.proc = None
        self.roots: set[tuple[int, str]] = set()
        if not os.path.isdir("/proc/self"):
            return
        self.roots = {c for c in self.children() if c not in before}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(WATCHDOG_GRACE)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            text=True)
        self.watch()

    def watch(self) -> None:
        """Hand the driver's current descendants (but the watchdog) to the watchdog."""
        if self.proc is None or self.proc.stdin is None:
            return
        lines = "".join(f"{pid} {start}\n"
                        for pid, start in descendants(os.getpid(), self.roots)
                        if pid != self.proc.pid)
        try:
            self.proc.stdin.write(lines)
            self.proc.stdin.flush()
        except OSError:  # the watchdog is gone: nothing to do
            pass

    @staticmethod
    def children() -> set[tuple[int, str]]:
        """``(pid, start time)`` of this process's children now (empty without /proc)."""
        if not os.path.isdir("/proc/self"):
            return set()
        me = os.getpid()
        return {(pid, start) for pid, (parent, start) in _process_table().items()
                if parent == me}

    def close(self) -> None:
        """Release the watchdog (it ends what is left of the instance, then exits)."""
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc = None


#: Watchdogs of instances kept alive for the process (``keep_alive``): collected only by
#: :func:`release_kept`.
_KEPT: list[Watchdog | None] = []


def kept_count() -> int:
    """Ray instances kept alive so far (``keep_alive``): a mark for :func:`release_kept`."""
    return len(_KEPT)


def release_kept(since: int) -> None:
    """End what was kept alive after mark `since` (:func:`kept_count`): ``ray.shutdown()``
    of the running instance (by handle) and the watchdogs of the instances kept since."""
    import ray

    if ray.is_initialized():
        with _stderr_to_log():
            ray.shutdown()
    kept = _KEPT[since:]
    del _KEPT[since:]
    for watchdog in kept:
        if watchdog is not None:
            watchdog.close()


def _check_count(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{param(key, 'engine')} must be an integer >= {low}, got {value!r}")
    return value



def _signal_handlers() -> dict[int, Any] | None:
    """The process's SIGTERM handler (main thread only; None elsewhere)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return {signal.SIGTERM: signal.getsignal(signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict[int, Any] | None) -> None:
    """Put back what :func:`_signal_handlers` saw (the command line's SIGTERM-as-Ctrl-C)."""
    import signal

    for sig, handler in (handlers or {}).items():
        if handler is not None:
            signal.signal(sig, handler)

#: The smallest virtual-memory limit (``ulimit -v``) under which a local Ray instance starts
#: (its processes reserve address space beyond the object store).
MIN_ADDRESS_SPACE = 2 * 2**30


def object_store_for_limit() -> int | None:
    """Ray's object store for a local instance under a virtual-memory limit
    (``RLIMIT_AS``, ``ulimit -v``): None without a limit (Ray's default, 30% of the
    memory, whose mapping alone exceeds a limit of a few GiB: Ray would die without a
    word); an eighth of the limit otherwise, which leaves Ray's processes their address
    space. A limit below :data:`MIN_ADDRESS_SPACE` is refused in one line.

    Examples
    --------
    >>> import resource
    >>> unlimited = resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY
    >>> object_store_for_limit() is None or not unlimited
    True
    """
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    if soft < MIN_ADDRESS_SPACE:
        raise ConfigError(f"a virtual-memory limit of {soft / 2**30:.2f} GiB (ulimit -v) is "
                          f"too small for a local Ray instance (at least "
                          f"{MIN_ADDRESS_SPACE / 2**30:.0f} GiB): raise it (ulimit -v "
                          f"unlimited) or run with engine=local")
    store = max(80 * 2**20, soft // 8)
    log.warning("a virtual-memory limit of %.1f GiB (ulimit -v): Ray's object store is "
                "capped at %.2f GiB", soft / 2**30, store / 2**30)
    return int(store)


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
        self.watchdog: Watchdog | None = None
        self.events: RayEventsToLog | None = None
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
                store = object_store_for_limit()
                if store is not None:
                    kwargs["object_store_memory"] = store
            before = Watchdog.children() if not address else set()
            handlers = _signal_handlers()
            try:
                with _stderr_to_log():
                    ray.init(**kwargs)
            except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
                first = (str(err).strip().splitlines() or [type(err).__name__])[0]
                where = f"engine.address={address!r}" if address else "a local Ray instance"
                raise ConfigError(f"{where}: Ray did not start ({first})") from None
            finally:  # ray.init installs its own SIGTERM handler (sys.exit): keep the host's
                _restore_signal_handlers(handlers)
            self.events = RayEventsToLog()
            self.started = not keep_alive
            self.watchdog = None if address else Watchdog(before)
            if keep_alive:
                import atexit

                atexit.register(ray.shutdown)
                # the instance outlives this pool: so does its watchdog (until exit)
                _KEPT.append(self.watchdog)
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
        if self.watchdog is not None:  # the workers the actors started in
            ray.get([a.pid.remote() for a in self.actors])
            self.watchdog.watch()
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
        ray = self.ray
        from ray.exceptions import ObjectLostError, RayActorError

        queue = list(reversed(shards))
        pending: dict[Any, tuple[Shard | None, int, Any]] = {}  # shard None: a ping
        failures: dict[int, int] = {}
        load = [0] * len(self.actors)
        ready = [True] * len(self.actors)  # the first actors are placed by the CPU check
        pings: dict[int, tuple[Any, float]] = {}  # actor slot -> (ping, deadline)

        def submit(i: int) -> None:
            shard = queue.pop()
            actor = self.actors[i]
            hint = hints(shard) if hints is not None else None
            if hint:  # an actor runs one caller's calls in order: the hint comes first
                actor.hint.remote(shard, hint)
            pending[actor.run.remote(shard)] = (shard, i, actor)
            load[i] += 1

        def fill() -> None:
            """Give queued shards to ready actors, least loaded first, up to in_flight."""
            while queue:
                usable = [j for j, a in enumerate(self.actors)
                          if a is not None and ready[j] and load[j] < self.in_flight]
                if not usable:
                    return
                submit(min(usable, key=load.__getitem__))

        def replace(i: int) -> None:
            """Slot `i` lost its actor: a fresh one on probation if there seems to be room."""
            self.actors[i], ready[i] = None, False
            if self._room_for_actor():
                self.actors[i] = actor = self._new_actor()
                ping = actor.pid.remote()
                pending[ping] = (None, i, actor)
                pings[i] = (ping, time.monotonic() + REPLACEMENT_TIMEOUT)

        def check_alive() -> None:
            if all(a is None for a in self.actors):
                raise RuntimeError("every Ray worker was lost (nodes gone?); rerun to "
                                   "resume from the saved shards")

        fill()
        while queue or any(shard is not None for shard, _, _ in pending.values()):
            if not pending:  # queued shards but nobody to run them
                check_alive()
                raise RuntimeError("no Ray worker can run the remaining shards; rerun to "
                                   "resume from the saved shards")
            done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            if not done:  # give up replacements that did not start in time
                now = time.monotonic()
                for i, (ping, deadline) in list(pings.items()):
                    if now > deadline:
                        log.warning("a replacement Ray worker did not start within %g s; "
                                    "going on without it", REPLACEMENT_TIMEOUT)
                        del pings[i], pending[ping]
                        self._kill(self.actors[i])
                        self.actors[i] = None
                check_alive()
                fill()
                continue
            shard, i, actor = pending.pop(done[0])
            if shard is None:  # a replacement answered its ping (or died trying)
                pings.pop(i, None)
                try:
                    ray.get(done[0])
                    ready[i] = True
                except (RayActorError, ObjectLostError):
                    if self.actors[i] is actor:
                        self.actors[i] = None
                    check_alive()
                fill()
                continue
            load[i] -= 1
            try:
                partial = ray.get(done[0])
            except (RayActorError, ObjectLostError) as err:
                # the actor died, or its node did after the shard finished (the result lived
                # in that node's object store): either way the shard is computed again
                failures[shard.index] = failures.get(shard.index, 0) + 1
                if failures[shard.index] > self.max_retries:
                    raise
                log.warning("shard %s lost (%s); retrying", shard.name, type(err).__name__)
                if self.actors[i] is actor and isinstance(err, RayActorError):
                    replace(i)
                queue.append(shard)
                check_alive()
                fill()
                continue
            fill()
            yield shard, partial

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
        """Kill the actors; shut Ray down if this pool started it."""
        for a in getattr(self, "actors", []):
            self._kill(a)
        self.actors = []
        if self.started:
            if self.events is not None:
                self.events.restore()
                self.events = None
            self.ray.shutdown()
            self.started = False
            if self.watchdog is not None:
                self.watchdog.close()
                self.watchdog = None


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
