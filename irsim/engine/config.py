"""The engine options, typed: ``engine=local`` and ``engine=ray`` are these dataclasses.

Each is stored in Hydra's ConfigStore as ``engine/<name>`` (:func:`irsim.conf.register`),
so Hydra and OmegaConf refuse an unknown key (``engine.wokers=2``) or a value of the wrong
type (``engine.workers=two``) themselves, and the Python door reads its defaults from the
same place (:func:`engine_defaults`). Values are checked where they are used (the Ray
executor checks ``workers`` against the cluster's CPUs).

Shard sizes are granularity only: kernels work in fixed 256-pair x 250-replicate units, so
results never change with ``shard_items`` or ``shard_replicates``.

Examples
--------
>>> engine_defaults("local")
{'name': 'local', 'blas_threads': 1, 'shard_items': None, 'shard_replicates': None}
>>> sorted(engine_defaults("ray"))[:4]
['address', 'blas_threads', 'in_flight', 'max_retries']
>>> engine_defaults("dask")
Traceback (most recent call last):
...
irsim.errors.ConfigError: config: unknown engine 'dask'; valid: local, ray
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from irsim.errors import unknown_name

__all__ = ["LocalEngine", "RayEngine", "ENGINES", "engine_defaults", "check_options"]


def _help(text: str, default: Any) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class LocalEngine:
    """Run every shard in this process.

    BLAS threads: 1 (the default) never oversubscribes the cores. Measured on 2 cores shared
    with other work (issue 30, interleaved, best of 3): discpower adhoc8 AP B=3000 2.8 s with
    1 thread vs 7.0 s with ``null``; experiment=urbano_test_errors at 500 trials 3.5 s vs
    14.9 s; on 2 idle cores ``null`` was 1.27x faster (W1 discpower, 17.7 s vs 22.4 s). For
    parallel work use engine=ray (one worker per core, 1 BLAS thread each); ``null`` only
    on a machine nothing else uses.
    """

    name: str = "local"
    blas_threads: int | None = _help(
        "BLAS threads of the kernels: 1 never oversubscribes the cores; null = BLAS's own "
        "threading (one thread per core)", 1)
    shard_items: int | None = _help(
        "items (system pairs, runs, configurations) per shard; null = the study's default",
        None)
    shard_replicates: int | None = _help(
        "replicates (bootstrap samples, trials) per shard; null = the study's default", None)


@dataclass
class RayEngine:
    """Run shards on Ray actors: a local Ray instance (``address: null``; it listens on
    127.0.0.1 only) or an existing cluster (``address: auto``, ``host:port`` or
    ``ray://host:port``; an address that does not answer is an error within seconds).
    Results are identical to engine=local.
    """

    name: str = "ray"
    address: str | None = _help(
        "null: start a local instance (127.0.0.1 only); auto, host:port or ray://host:port: "
        "join that cluster", None)
    workers: int | None = _help(
        "actors in the pool (>= 1, at most the cluster's CPUs); null = one per CPU", None)
    num_cpus: int | None = _help(
        "CPUs of a locally started instance (>= 1); null = all of this machine", None)
    in_flight: int = _help("shards queued per actor (bounded in-flight work)", 2)
    max_retries: int = _help(
        "retries of a shard whose actor died (on a fresh actor, or a surviving one)", 3)
    blas_threads: int | None = _help(
        "BLAS threads per actor: 1 (each actor holds one CPU; parallelism comes from the "
        "actors)", 1)
    shard_items: int | None = _help(
        "items (system pairs, runs, configurations) per shard; null = the study's default",
        None)
    shard_replicates: int | None = _help(
        "replicates (bootstrap samples, trials) per shard; null = the study's default", None)


#: The engines by config name (``engine=<name>``).
ENGINES: dict[str, type] = {"local": LocalEngine, "ray": RayEngine}


def engine_defaults(engine: str) -> dict[str, Any]:
    """The options of `engine` with their defaults (one source for both doors)."""
    try:
        cls = ENGINES[engine]
    except (KeyError, TypeError):
        raise unknown_name("engine", str(engine), ENGINES) from None
    return dataclasses.asdict(cls())



#: Options of an executor that irsim sets itself, beyond its config's (a sweep keeps one Ray
#: instance alive for its jobs; CPUs per actor).
EXECUTOR_ONLY: dict[str, tuple[str, ...]] = {"local": (), "ray": ("cpus_per_worker",
                                                                  "keep_alive")}


def check_options(engine: str, options: dict[str, Any]) -> None:
    """The one check of the options handed to `engine`'s executor
    (:func:`irsim.engine.run_study`'s ``engine_options``): the fields of its config
    (without ``name`` and the shard sizes, which the planner reads) and
    :data:`EXECUTOR_ONLY`; anything else is refused in the words of the config's check.

    Examples
    --------
    >>> check_options("ray", {"workers": 2, "keep_alive": True})
    >>> check_options("local", {"worker": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown option of engine=local 'worker'; valid: blas_threads
    """
    valid = [k for k in engine_defaults(engine) if k not in
             ("name", "shard_items", "shard_replicates")] + list(EXECUTOR_ONLY[engine])
    for key in options:
        if key not in valid:
            raise unknown_name(f"option of engine={engine}", str(key), valid)
