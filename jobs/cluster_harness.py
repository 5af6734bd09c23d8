"""A real multi-node Ray cluster on one machine: one network namespace per node.

Every node is a Linux network namespace with its own address on a private subnet (default
``10.77.0.0/24``): a bridge in the root namespace holds ``.1``, node ``i`` gets ``.10+i`` on a
veth pair into the bridge. ``ray start`` runs inside each namespace (``ip netns exec``), the
head at ``.10`` (GCS port 6379, dashboard and job server 8265), the workers joining it, each
with its own ``--temp-dir``, ``--node-ip-address`` and ``--num-cpus``. The client (irsim's
driver, ``ray job submit``) stays in the root namespace and reaches the head over the bridge,
as a user on another machine of the cluster would.

The driver (``irsim``, any ``ray.init``) must run *on a node* of the cluster: it is the owner
of the objects it puts (the study's data) and the other nodes fetch them from the address of
the node it attached to. A driver in the root namespace attaches to the head's raylet (found
by ``ps``), announces the head's address but listens in the root namespace: some workers never
get the data and the run hangs (irsim checks first and stops with one line instead,
:mod:`irsim.engine.reach`). Run it inside a node with :meth:`Cluster.on_node` (``ip netns
exec``), as one runs ``irsim`` on the head of a real cluster; from outside the cluster use
``ray job submit`` (HTTP to the head's dashboard), which works from the root namespace.
:meth:`Cluster.outsider` makes a namespace with no route to the cluster at all.

As a script (root; everything is torn down when it ends)::

    # a 3-node cluster until Ctrl-C: prints the address and the client's environment
    sudo python jobs/cluster_harness.py --nodes 3
    # run one command on the head node ({address}: HEAD:6379, {dashboard}: http://HEAD:8265)
    sudo python jobs/cluster_harness.py --nodes 3 -- \\
        irsim engine=ray engine.address={address} experiment.B=1000

In Python (tests/test_real_cluster.py)::

    with Cluster(nodes=3) as c:
        subprocess.run(c.on_node(["irsim", f"engine.address={c.address}", ...]),
                       env=c.client_env())

Two traps of a cluster on one machine, both handled here:

* **Loopback**: Ray rewrites ``127.0.0.1:PORT`` to the host's own interface address, so a
  "cluster" of several ``ray start`` on 127.0.0.1 is not one. Each node needs an address of
  its own: here a namespace each (``--node-ip-address``).
* **Token authentication**: Ray 2.60 turns it on (``RAY_AUTH_MODE=token``) for clusters
  started where a token exists (``~/.ray/auth_token``). The harness makes its own token
  (``<base>/auth_token``), starts every node with ``RAY_AUTH_MODE=token RAY_AUTH_TOKEN=...``
  and gives clients the same two variables (:meth:`Cluster.client_env`); a client without
  them is refused. ``auth="disabled"`` starts the cluster without authentication.

Tear-down (:meth:`Cluster.stop`, also by the context manager, by ``atexit`` and on SIGTERM
in script mode) ends only processes this harness started: SIGTERM to the process group of
each ``ray start --block`` (each started in a session of its own), then, after a grace
period, SIGKILL to whatever is still running inside the harness's namespaces (only its
``ray start`` and their descendants ever ran there; each is identified by pid and start
time). Never ``ray stop`` (which ends every Ray process of the machine) nor a kill by name.
Then the namespaces, veth pairs and the bridge are deleted. Ray's full logs stay under
``<base>/n<i>/session_latest/logs`` until then (``keep_logs=True`` keeps them).
"""

from __future__ import annotations

import argparse
import atexit
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

#: GCS port and dashboard (job server) port of the head
GCS_PORT = 6379
DASHBOARD_PORT = 8265

#: seconds a node gets to print "Ray runtime started"
START_TIMEOUT = 120.0
#: seconds the ``ray start`` process groups get after SIGTERM before SIGKILL
STOP_GRACE = 5.0

#: variables of the caller's environment that must not reach the nodes or the clients:
#: irsim's test suite sets RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (local-only Ray, which refuses
#: to join a multi-node cluster); a token of the caller's own cluster would be the wrong one
_DROPPED = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS", "RAY_AUTH_MODE",
            "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def unavailable() -> str | None:
    """Why network namespaces cannot be made here (None: they can)."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if shutil.which("ray") is None:
        return "the ray command is not installed"
    probe = f"irsim-probe-{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


def _kill_namespace(name: str) -> None:
    """Kill the processes left in network namespace `name` (by PID: the harness's own
    namespaces hold only what it started there) and delete the namespace."""
    for word in _ip("netns", "pids", name, check=False).stdout.split():
        try:
            os.kill(int(word), signal.SIGKILL)
        except OSError:
            pass
    _ip("netns", "del", name, check=False)


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def cleanup_stale() -> list[str]:
    """Tear down what a harness whose process is gone left behind (it was killed before its
    tear-down ran): namespaces ``irsim-<pid>-<i>`` of a dead `pid`, the processes in them
    (that harness's ``ray start`` and descendants), their veths and bridge. Returns the
    namespaces removed."""
    r = _ip("netns", "list", check=False)
    removed = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "irsim" or not parts[1].isdigit():
            continue
        if os.path.exists(f"/proc/{parts[1]}"):
            continue  # its harness is alive
        _kill_namespace(name)
        _ip("link", "del", f"irsv{parts[1]}n{parts[2]}", check=False)
        _ip("link", "del", f"irsb{parts[1]}", check=False)
        removed.append(name)
    return removed


@dataclass
class Node:
    """One node: its namespace, address, root-side veth, ``ray start`` process and log."""

    index: int
    netns: str
    ip: str
    veth: str
    temp_dir: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def pids(self) -> list[tuple[int, str]]:
        """``(pid, start time)`` of every process in this node's namespace."""
        r = _ip("netns", "pids", self.netns, check=False)
        out = []
        for word in r.stdout.split():
            start = _start_time(int(word))
            if start is not None:
                out.append((int(word), start))
        return out

    def raylet(self) -> int | None:
        """pid of this node's raylet (None: not running)."""
        return next((pid for pid, _ in self.pids() if _comm(pid) == "raylet"), None)


class Cluster:
    """A head and ``nodes - 1`` workers, each ``ray start`` in a network namespace of its own.

    Parameters
    ----------
    nodes : int
        Nodes including the head (>= 1).
    cpus : int or list of int
        ``--num-cpus`` of every node, or one per node (the head first).
    subnet : str
        First three octets of the private /24 (the bridge is ``.1``, node ``i`` ``.10+i``).
    auth : {"token", "disabled"}
        Ray's authentication mode on every node; with ``"token"`` a fresh token is made.
    node_env : dict, optional
        Node index -> extra environment of that node's ``ray start`` (and so of its raylet
        and workers), e.g. ``{1: {"OPENBLAS_CORETYPE": "Haswell"}}``.
    object_store_mb : int
        ``--object-store-memory`` of each node, in MB.
    base : str, optional
        Directory of the nodes' temp dirs, logs and token (default: a new one under /tmp;
        short, since Ray's socket paths must fit in 107 characters).
    keep_logs : bool
        Leave `base` in place after :meth:`stop`.
    """

    def __init__(self, nodes: int = 2, cpus: int | list[int] = 1, *, subnet: str = "10.77.0",
                 auth: str = "token", node_env: dict[int, dict[str, str]] | None = None,
                 object_store_mb: int = 256, base: str | None = None,
                 keep_logs: bool = False) -> None:
        if nodes < 1:
            raise ValueError(f"nodes must be >= 1, got {nodes}")
        if auth not in ("token", "disabled"):
            raise ValueError(f"auth must be 'token' or 'disabled', got {auth!r}")
        self.cpus = [cpus] * nodes if isinstance(cpus, int) else list(cpus)
        if len(self.cpus) != nodes:
            raise ValueError(f"cpus: {len(self.cpus)} values for {nodes} nodes")
        self.subnet, self.auth, self.object_store_mb = subnet, auth, object_store_mb
        self.keep_logs = keep_logs
        self.base = Path(base) if base else Path(tempfile.mkdtemp(prefix="irsc-", dir="/tmp"))
        self.base.mkdir(parents=True, exist_ok=True)
        tag = str(os.getpid())
        self.bridge = f"irsb{tag}"
        self.token = secrets.token_hex(16) if auth == "token" else None
        node_env = node_env or {}
        self.nodes = [Node(i, f"irsim-{tag}-{i}", f"{subnet}.{10 + i}", f"irsv{tag}n{i}",
                           self.base / f"n{i}", self.base / f"n{i}.log",
                           dict(node_env.get(i, {})))
                      for i in range(nodes)]
        self._network = False
        self._stopped = False
        self._outsiders: list[str] = []

    # ------------------------------------------------------------------ addresses
    @property
    def head_ip(self) -> str:
        return self.nodes[0].ip

    @property
    def address(self) -> str:
        """The head's GCS, ``HEAD:6379`` (``engine.address``, ``ray start --address``)."""
        return f"{self.head_ip}:{GCS_PORT}"

    @property
    def dashboard(self) -> str:
        """The head's dashboard and job server (``ray job submit --address``)."""
        return f"http://{self.head_ip}:{DASHBOARD_PORT}"

    def on_node(self, cmd: list[str], index: int = 0) -> list[str]:
        """`cmd` run inside node `index`'s namespace (default the head): where a driver
        must run (see the module's docstring)."""
        return ["ip", "netns", "exec", self.nodes[index].netns, *cmd]

    def outsider(self) -> str:
        """A new namespace that is no node and has no route to the cluster (only its
        loopback): where a driver "not on the cluster's network" runs. Returns its name (run
        a command there with ``ip netns exec NAME``); deleted by :meth:`stop`."""
        name = f"irsim-{os.getpid()}-x{len(self._outsiders)}"
        _ip("netns", "add", name)
        self._outsiders.append(name)
        _ip("-n", name, "link", "set", "lo", "up")
        return name

    def auth_env(self) -> dict[str, str]:
        """The variables a client needs to be let in (``RAY_AUTH_MODE``, ``RAY_AUTH_TOKEN``)."""
        if self.token is None:
            return {"RAY_AUTH_MODE": "disabled"}
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for a client in the root namespace (irsim, ``ray job submit``):
        `base` (default this process's) without the variables that would break it, plus
        :meth:`auth_env`."""
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if k not in _DROPPED}
        return {**env, **self.auth_env()}

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Cluster:
        """Make the network, start the head, then the workers; return when every node has
        started (its ``ray start`` printed "Ray runtime started")."""
        atexit.register(self.stop)
        cleanup_stale()
        try:
            self._make_network()
            self._start_node(self.nodes[0])
            self._wait_started(self.nodes[0])
            for node in self.nodes[1:]:
                self._start_node(node)
            for node in self.nodes[1:]:
                self._wait_started(node)
        except BaseException:
            self.stop()
            raise
        return self

    def _make_network(self) -> None:
        if _ip("link", "show", self.bridge, check=False).returncode == 0:
            raise RuntimeError(f"bridge {self.bridge} exists already (another harness?)")
        if f" {self.subnet}.1/" in _ip("-o", "addr", "show", check=False).stdout:
            raise RuntimeError(f"{self.subnet}.1 is in use on this machine (another harness "
                               f"running?): choose another subnet")
        self._network = True
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for node in self.nodes:
            _ip("netns", "add", node.netns)
            _ip("link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns",
                node.netns)
            _ip("link", "set", node.veth, "master", self.bridge, "up")
            _ip("-n", node.netns, "addr", "add", f"{node.ip}/24", "dev", "eth0")
            _ip("-n", node.netns, "link", "set", "eth0", "up")
            _ip("-n", node.netns, "link", "set", "lo", "up")
            _ip("-n", node.netns, "route", "add", "default", "via", f"{self.subnet}.1")

    def _start_node(self, node: Node) -> None:
        cmd = ["ip", "netns", "exec", node.netns, "ray", "start", "--block",
               f"--node-ip-address={node.ip}", f"--temp-dir={node.temp_dir}",
               f"--num-cpus={self.cpus[node.index]}",
               f"--object-store-memory={self.object_store_mb * 10**6}",
               "--disable-usage-stats"]
        if node.index == 0:
            cmd += ["--head", f"--port={GCS_PORT}", "--include-dashboard=true",
                    f"--dashboard-host={node.ip}", f"--dashboard-port={DASHBOARD_PORT}"]
        else:
            cmd += [f"--address={self.address}"]
        env = {**self.client_env(), **node.env}
        with open(node.log, "wb") as out:
            # a session of its own: its process group is ended as one, and a Ctrl-C of the
            # terminal reaches only this script
            node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env,
                                         start_new_session=True)

    def _wait_started(self, node: Node, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = node.log.read_text(errors="replace") if node.log.exists() else ""
            if "Ray runtime started" in text:
                return
            if node.proc is not None and node.proc.poll() is not None:
                break
            time.sleep(0.2)
        tail = "\n".join((node.log.read_text(errors="replace") if node.log.exists()
                          else "").splitlines()[-15:])
        raise RuntimeError(f"node {node.index} ({node.ip}) did not start within {timeout:g} s; "
                           f"end of {node.log}:\n{tail}")

    def stop(self) -> None:
        """End every process this harness started, then delete its network (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        # workers first, the head last: the raylets leave the GCS cleanly
        for node in reversed(self.nodes):
            if node.proc is not None and node.proc.poll() is None:
                try:
                    os.killpg(node.proc.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.monotonic() + STOP_GRACE
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        if self._network:
            for node in self.nodes:
                # what is left in the namespace: only ever this harness's ray start and its
                # descendants ran there (checked again by start time just before the kill)
                for pid, start in node.pids():
                    if _start_time(pid) == start:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                if node.proc is not None:
                    try:
                        node.proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                _ip("netns", "del", node.netns, check=False)
                _ip("link", "del", node.veth, check=False)
            _ip("link", "del", self.bridge, check=False)
        for name in self._outsiders:  # only ever the test's own driver ran there
            _kill_namespace(name)
        if not self.keep_logs:
            shutil.rmtree(self.base, ignore_errors=True)

    # ------------------------------------------------------------------ faults
    def kill_raylet(self, index: int) -> int:
        """SIGKILL the raylet of node `index` (a node lost); returns its pid."""
        pid = self.nodes[index].raylet()
        if pid is None:
            raise RuntimeError(f"node {index} has no raylet running")
        os.kill(pid, signal.SIGKILL)
        return pid

    def restart_node(self, index: int) -> None:
        """End what is left of worker node `index` (after a fault) and start it again."""
        if index == 0:
            raise ValueError("the head cannot be restarted (the cluster would be a new one)")
        node = self.nodes[index]
        if node.proc is not None and node.proc.poll() is None:
            try:
                os.killpg(node.proc.pid, signal.SIGTERM)
                node.proc.wait(timeout=STOP_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for pid, start in node.pids():
            if _start_time(pid) == start:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        node.log.unlink(missing_ok=True)
        self._start_node(node)
        self._wait_started(node)

    def link(self, index: int, up: bool) -> None:
        """Take node `index`'s link to the bridge down (a partition) or bring it back."""
        _ip("link", "set", self.nodes[index].veth, "up" if up else "down")

    def logs(self) -> list[Path]:
        """Where Ray's full logs are: each node's ``session_latest/logs``."""
        return [n.temp_dir / "session_latest" / "logs" for n in self.nodes]


def main(argv: list[str] | None = None) -> int:
    """The script: start a cluster, run a command against it (or wait), tear it down."""
    args = sys.argv[1:] if argv is None else argv
    command: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, command = args[:i], args[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=2, help="nodes including the head")
    p.add_argument("--cpus", type=int, default=1, help="--num-cpus of each node")
    p.add_argument("--subnet", default="10.77.0", help="first three octets of the /24")
    p.add_argument("--auth", choices=["token", "disabled"], default="token")
    p.add_argument("--keep-logs", action="store_true", help="keep the nodes' Ray logs")
    opts = p.parse_args(args)
    reason = unavailable()
    if reason:
        print(f"cluster_harness: {reason}", file=sys.stderr)
        return 2
    # SIGTERM ends the script like Ctrl-C: the cluster is torn down in the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cluster = Cluster(opts.nodes, opts.cpus, subnet=opts.subnet, auth=opts.auth,
                      keep_logs=opts.keep_logs)
    try:
        t0 = time.monotonic()
        cluster.start()
        print(f"cluster_harness: {opts.nodes} nodes up in {time.monotonic() - t0:.1f} s: "
              f"head {cluster.address}, dashboard {cluster.dashboard}, Ray logs under "
              f"{cluster.base}/n<i>/session_latest/logs", file=sys.stderr)
        if command:
            cmd = [c.format(address=cluster.address, dashboard=cluster.dashboard)
                   for c in command]
            return subprocess.run(cluster.on_node(cmd), env=cluster.client_env()).returncode
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in cluster.auth_env().items())
        print(f"# on the head node: ip netns exec {cluster.nodes[0].netns} bash\n"
              f"export {exports}\n# irsim engine=ray engine.address={cluster.address} ...\n"
              f"# ray job submit --address {cluster.dashboard} -- python jobs/irsim_job.py "
              f"...\n# Ctrl-C ends the cluster", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 130
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
