"""Is this machine able to drive the Ray cluster at ``engine.address``? Checked in seconds,
before ``ray.init`` (which would otherwise wait for minutes, or join and then hang).

A Ray driver (irsim with ``engine.address=HEAD:PORT``) must run *on a node* of the cluster:
``ray.init`` attaches to a raylet of its own machine, the objects it puts (the study's data)
are fetched by the other nodes from the address of that node, and the workers call the
driver back. Two ways to get this wrong, both seen on a real cluster (issue 43):

* the driver has no route to the head (another network, a third namespace): the GCS port
  does not answer; :func:`check_reachable` says so in one line, with what to check;
* the GCS answers, but this machine is none of the cluster's nodes (a laptop outside the
  cluster; on one host, a network namespace next to the nodes'): Ray's ``ray.init`` waits
  for a raylet of this machine, or attaches to a raylet it finds by process id on a shared
  host, announces that node's address, and the run hangs when the workers cannot reach the
  driver back. :func:`check_on_cluster` compares the addresses of this machine's interfaces
  with the alive nodes' addresses in the GCS's node table and stops with one line naming
  both and the two ways out (a node here, or ``ray job submit``).

``auto`` (a cluster started on this machine) and ``ray://`` (Ray Client, which runs the
driver on the head) need neither check.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from irsim.errors import ConfigError

__all__ = ["check_driver", "check_reachable", "check_on_cluster", "split_address", "is_local",
           "DASHBOARD_PORT"]

#: Ray's default dashboard and job-server port (named in the advice to use ``ray job submit``)
DASHBOARD_PORT = 8265

#: node addresses named in a message at most (a 512-node cluster's list would be a page)
_NAMED = 4


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (or ``ray://host:port``, ``[v6]:port``) as ``(host, port)``.

    Examples
    --------
    >>> split_address("10.0.0.5:6379")
    ('10.0.0.5', 6379)
    >>> split_address("ray://[::1]:10001")
    ('::1', 10001)
    >>> split_address("head")
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: engine.address='head' must be 'auto', host:port or ray://host:port
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"engine.address={address!r} must be 'auto', host:port or "
                          f"ray://host:port")
    return host, int(port)


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """One line within `timeout` seconds when ``engine.address`` (``host:port`` or
    ``ray://host:port``) does not accept a TCP connection: the address, the system's reason,
    and what to check (the head runs, this machine has a route to it, no firewall drops the
    port). ``auto`` is left to Ray.

    Examples
    --------
    >>> check_reachable("auto")
    >>> check_reachable("127.0.0.1:1", timeout=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: engine.address='127.0.0.1:1': no Ray cluster reachable ...
    """
    if address == "auto":
        return
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ConfigError(
            f"engine.address={address!r}: no Ray cluster reachable at {host}:{port} "
            f"({reason} after at most {timeout:g} s): check that the head runs there (ray "
            f"status on it), that this machine has a route to {host} (ip route get {host}) "
            f"and that no firewall drops port {port}") from None


def is_local(ip: str) -> bool:
    """Whether `ip` is an address of this machine's interfaces (of this network namespace):
    a socket can be bound to it.

    Examples
    --------
    >>> is_local("127.0.0.1"), is_local("192.0.2.77")
    (True, False)
    """
    try:
        family = socket.getaddrinfo(ip, 0, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def _source_address(host: str, port: int) -> str | None:
    """The address this machine sends from towards `host` (a UDP socket's route; nothing is
    sent), None when it has no route."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return str(s.getsockname()[0])
    except OSError:
        return None


def alive_nodes(client: Any, timeout: float) -> list[str]:
    """The ``node_manager_address`` of every alive node in the GCS's node table, head first
    (`client`: a ``ray._raylet.GcsClient``)."""
    from ray.core.generated.gcs_pb2 import GcsNodeInfo

    infos = client.get_all_node_info(timeout=timeout,
                                     state_filter=GcsNodeInfo.GcsNodeState.ALIVE).values()
    ordered = sorted(infos, key=lambda n: (not n.is_head_node, n.node_manager_address))
    return list(dict.fromkeys(n.node_manager_address for n in ordered))


def off_cluster_message(address: str, nodes: list[str], local: Callable[[str], bool],
                        source: str | None) -> str | None:
    """The one line for a driver whose machine holds none of the alive `nodes`' addresses
    (`local`: whether an address is this machine's) of the cluster at `address`; `source`:
    the address this machine sends from towards the head. None when the driver is on a node
    (or the node table is empty: Ray's own message then).

    Examples
    --------
    >>> nodes = ["10.7.0.10", "10.7.0.11"]
    >>> off_cluster_message("10.7.0.10:6379", nodes, {"10.7.0.11"}.__contains__, None) is None
    True
    >>> line = off_cluster_message("10.7.0.10:6379", nodes, set().__contains__, "10.7.0.1")
    >>> line[:90]
    "engine.address='10.7.0.10:6379': this machine (10.7.0.1) is not a node of that Ray cluster"
    >>> "ray job submit --address http://10.7.0.10:8265" in line and "\\n" not in line
    True
    """
    if not nodes or any(local(n) for n in nodes):
        return None
    host, port = split_address(address)
    mine = f"this machine ({source})" if source else "this machine"
    back = source or "this machine"
    named = ", ".join(nodes[:_NAMED]) + (f" and {len(nodes) - _NAMED} more"
                                         if len(nodes) > _NAMED else "")
    return (f"engine.address={address!r}: {mine} is not a node of that Ray cluster (its "
            f"nodes: {named}), and a Ray driver must run on a node (the workers fetch its data "
            f"and call it back): run irsim on a node of the cluster, or make this machine one "
            f"(ray start --address={host}:{port}; check that the nodes reach {back} back), or "
            f"submit from here with ray job submit --address http://{host}:{DASHBOARD_PORT} "
            f"-- python jobs/irsim_job.py ...")


def check_on_cluster(address: str, client: Any, timeout: float = 10.0) -> None:
    """Stop with one line (:func:`off_cluster_message`) when this machine is none of the
    nodes of the cluster whose GCS `client` (a ``ray._raylet.GcsClient`` of ``address``)
    answers; ``auto`` and ``ray://`` are not checked, and a node table that cannot be read
    is left to Ray.

    The comparison is by address: a node's ``node_manager_address`` is an address of its
    machine's interfaces (the raylet listens there), so a driver on a node finds it among
    :func:`is_local`.
    """
    if address == "auto" or address.startswith("ray://"):
        return
    try:
        nodes = alive_nodes(client, timeout)
    except Exception:  # noqa: BLE001 - another Ray's client or a flaky GCS: ray.init decides
        return
    host, port = split_address(address)
    line = off_cluster_message(address, nodes, is_local, _source_address(host, port))
    if line:
        raise ConfigError(line)


def check_driver(address: str, timeout: float = 10.0) -> None:
    """Both checks for a driver about to ``ray.init(address)``: :func:`check_reachable`,
    then :func:`check_on_cluster` with a GCS client of its own (the Python door's
    ``RayPool``; the command line's :func:`irsim.runner.check_ray_address` checks the token
    in between, with its client). A GCS that cannot be asked (another Ray, a token
    refused) is left to ``ray.init``.

    Examples
    --------
    >>> check_driver("auto")
    >>> check_driver("ray://127.0.0.1:1", timeout=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: engine.address='ray://127.0.0.1:1': no Ray cluster ...
    """
    check_reachable(address, timeout)
    if address == "auto" or address.startswith("ray://"):
        return
    try:
        from ray._raylet import GcsClient

        client = GcsClient(address=address)
    except Exception:  # noqa: BLE001 - another Ray: ray.init decides
        return
    check_on_cluster(address, client, timeout)
