"""Supervision of the Ray instance irsim starts: its processes, not its work.

The pool (:mod:`irsim.engine.ray_executor`) runs shards; this module starts or joins the Ray
instance it runs them on (:class:`RayInstance`) and looks after that instance's processes:
a local instance listens on 127.0.0.1 only (:func:`loopback_only`), its object store fits
a virtual-memory limit (:func:`object_store_for_limit`), the host's SIGTERM handler
survives ``ray.init``, what Ray's core writes to the console goes to the log
(:class:`RayEventsToLog`), and a :class:`Watchdog` ends the instance's processes when the
driver dies, even by ``kill -9`` (Linux: it reads /proc). Instances kept alive for a sweep
are released by :func:`release_kept`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from irsim.errors import ConfigError

__all__ = ["RayInstance", "loopback_only", "object_store_for_limit", "Watchdog",
           "descendants", "kept_count", "release_kept", "stderr_to_log", "RayEventsToLog"]

log = logging.getLogger(__name__)


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



@contextmanager
def stderr_to_log() -> Iterator[None]:
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
        with stderr_to_log():
            ray.shutdown()
    kept = _KEPT[since:]
    del _KEPT[since:]
    for watchdog in kept:
        if watchdog is not None:
            watchdog.close()



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



class RayInstance:
    """The Ray instance a pool runs on: started here (a new local instance, or joined at
    `address`) or found running (then left as it was).

    Parameters
    ----------
    address : str, optional
        ``None`` starts a new local instance (127.0.0.1 only, never a stale cluster found on
        this machine); ``"auto"``, ``host:port`` or ``ray://host:port`` joins that cluster.
    num_cpus : int, optional
        CPUs of a locally started instance (None: all of this machine).
    keep_alive : bool
        Leave an instance started here running after :meth:`close` (until :func:`release_kept`
        or interpreter exit), so the jobs of a sweep share it.

    Attributes
    ----------
    started_here : bool
        Whether this object started (or joined) the instance, rather than finding it running.
    local : bool
        Whether the instance was started on this machine by this object: only then do
        ``num_cpus`` and the object store sizing apply.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 keep_alive: bool = False):
        import ray

        self.ray = ray
        self.started_here = self.local = False
        self.owned = False  # close() shuts Ray down
        self.watchdog: Watchdog | None = None
        self.events: RayEventsToLog | None = None
        if ray.is_initialized():
            return
        self._start(address, num_cpus)
        self.started_here, self.local = True, not address
        self.events = RayEventsToLog()
        self.owned = not keep_alive
        if keep_alive:
            import atexit

            atexit.register(ray.shutdown)
            # the instance outlives its pool: so does its watchdog (until exit)
            _KEPT.append(self.watchdog)

    def _start(self, address: str | None, num_cpus: int | None) -> None:
        """``ray.init`` of a new local instance or of the cluster at `address`, with Ray's
        console output in the log, the host's SIGTERM handler kept and (local) a watchdog."""
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "logging_level": logging.ERROR}
        if address:
            kwargs["address"] = address
        else:
            loopback_only()  # the instance about to start, and its processes
            kwargs.update(address="local", num_cpus=num_cpus, _node_ip_address="127.0.0.1")
            store = object_store_for_limit()
            if store is not None:
                kwargs["object_store_memory"] = store
        before = Watchdog.children() if not address else set()
        handlers = _signal_handlers()
        try:
            with stderr_to_log():
                self.ray.init(**kwargs)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            where = f"engine.address={address!r}" if address else "a local Ray instance"
            raise ConfigError(f"{where}: Ray did not start ({first})") from None
        finally:  # ray.init installs its own SIGTERM handler (sys.exit): keep the host's
            _restore_signal_handlers(handlers)
        self.watchdog = None if address else Watchdog(before)

    def watch(self) -> None:
        """Hand the processes the instance started so far (e.g. actors' workers) to its
        watchdog (nothing without one)."""
        if self.watchdog is not None:
            self.watchdog.watch()

    def close(self) -> None:
        """Shut Ray down if this object started it and was not asked to keep it."""
        if not self.owned:
            return
        if self.events is not None:
            self.events.restore()
            self.events = None
        self.ray.shutdown()
        self.owned = False
        if self.watchdog is not None:
            self.watchdog.close()
            self.watchdog = None
