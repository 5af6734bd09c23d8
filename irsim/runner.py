"""The plain functions behind the CLI: run a configured study, evaluate runs.

``@hydra.main`` in :mod:`irsim.cli` is a thin shim over these; tests call them with a
config built by Hydra's ``compose``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

import irsim
from irsim.api import describe_data, execute, matrix_to_long, versions
from irsim.data.collection import load_doc_collection
from irsim.engine import write_tables
from irsim.experiments import load
from irsim.experiments.loading import metrics_arg, progress_bar

__all__ = ["compose_config", "run", "evaluate_command", "write_manifest", "matrix_to_long",
           "describe_data", "check_seed", "check_run_dir"]

log = logging.getLogger(__name__)


def compose_config(overrides: list[str] | None = None, *, hydra: bool = False) -> DictConfig:
    """The irsim config with command-line style overrides, without running anything
    (`hydra`: also compose and return Hydra's own node, so ``hydra.*`` overrides are checked).

    Examples
    --------
    >>> cfg = compose_config(["experiment.B=200", "collection=synthetic_scores"])
    >>> cfg.experiment.B, cfg.collection.kind
    (200, 'synthetic_scores')
    """
    from hydra import compose, initialize_config_module

    from irsim.conf import register

    register()
    with initialize_config_module(config_module="irsim.conf", version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides or []),
                       return_hydra_config=hydra)


def write_manifest(run_dir: Path, cfg: DictConfig, extra: dict[str, Any]) -> Path:
    """Write ``manifest.json`` (config, seed, versions, timings, engine, shards) atomically."""
    manifest = {
        "irsim_version": irsim.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": sys.argv,
        "seed": cfg.get("seed"),
        "config": OmegaConf.to_container(cfg, resolve=True),
        "versions": versions(),
        **extra,
    }
    from irsim.engine.checkpoint import atomic_write

    path = run_dir / "manifest.json"
    text = json.dumps(manifest, indent=2, default=str).encode()
    atomic_write(path, lambda f: f.write(text))
    return path


def check_seed(seed: Any) -> int:
    """The run's seed: an integer >= 0 (not a bool, a float such as 1.7, a string or null).

    Examples
    --------
    >>> check_seed(3)
    3
    >>> check_seed(1.7)
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: seed must be an integer >= 0, got 1.7
    """
    from irsim.errors import ConfigError

    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def check_run_dir(run_dir: Path) -> None:
    """Refuse a run directory (or its ``results``) that exists as a file, before any work."""
    from irsim.errors import InputError

    for path in (run_dir, run_dir / "results", run_dir / "checkpoints"):
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a directory", file=path)


def run(cfg: DictConfig, run_dir: str | os.PathLike, *, keep_ray: bool = False,
        report: bool = True) -> dict[str, pa.Table]:
    """Run the configured study and write its tables, manifest and report into `run_dir`.

    The run holds a lock on `run_dir` (:func:`irsim.engine.checkpoint.run_dir_lock`): a second
    run into the same directory fails at once. Finished shards are checkpointed under
    ``<run_dir>/checkpoints`` and reused by a rerun of the same configuration (anything else
    there is recomputed). When the run finishes, the directory holds exactly this run's
    outputs: an earlier run's tables, report, plots and manifest are replaced or removed.

    `keep_ray` leaves a Ray instance started for engine=ray running for the next job of a
    sweep. Returns the result tables.
    """
    from irsim.engine.checkpoint import run_dir_lock

    run_dir = Path(run_dir)
    check_seed(cfg.get("seed"))
    check_run_dir(run_dir)
    with run_dir_lock(run_dir):
        checkpoints = run_dir / "checkpoints"
        try:
            return _run_locked(cfg, run_dir, checkpoints, keep_ray=keep_ray, report=report)
        except BaseException:
            # a run that fails before saving any shard leaves no empty checkpoints/ behind
            if checkpoints.is_dir() and not any(checkpoints.rglob("*.npz")):
                shutil.rmtree(checkpoints, ignore_errors=True)
            raise


def _run_locked(cfg: DictConfig, run_dir: Path, checkpoints: Path, *, keep_ray: bool,
                report: bool) -> dict[str, pa.Table]:
    from irsim.engine.output import clear_report

    t0 = time.perf_counter()
    name, config, data, shards = load(cfg)
    t_load = time.perf_counter()
    engine = cfg.engine.get("name", "local")
    engine_options = {k: v for k, v in OmegaConf.to_container(cfg.engine).items()
                      if k not in ("name", "shard_items", "shard_replicates")}
    if engine == "ray" and keep_ray:
        engine_options.setdefault("keep_alive", True)
    bar, progress = progress_bar(cfg, name, unit="shard")
    try:
        data, tables, info = execute(name, config, data, seed=check_seed(cfg.seed),
                                     shards=shards, engine=engine,
                                     engine_options=engine_options,
                                     checkpoint_dir=checkpoints, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    t_study = time.perf_counter()
    # an earlier run's manifest goes first: its outputs are about to be replaced, and a crash
    # in between must not pair it with this run's tables
    (run_dir / "manifest.json").unlink(missing_ok=True)
    write_tables(tables, run_dir)
    extra = {
        "experiment": name,
        "engine": engine,
        "fingerprint": info.get("fingerprint"),
        "shards": info["shards"],
        "run": dict(info),
        "collection": describe_data(data),
        "tables": {k: t.num_rows for k, t in tables.items()},
        "timings": {
            "load_seconds": round(t_load - t0, 4),
            "study_seconds": round(t_study - t_load, 4),
        },
    }
    clear_report(run_dir)
    if report:
        from irsim.report import write_report

        write_report(run_dir, tables, extra)
    extra["timings"]["total_seconds"] = round(time.perf_counter() - t0, 4)
    write_manifest(run_dir, cfg, extra)
    shutil.rmtree(checkpoints, ignore_errors=True)
    log.info("wrote %s", run_dir)
    return tables


def evaluate_command(cfg: DictConfig, run_dir: str | os.PathLike) -> pa.Table:
    """``irsim evaluate``: per-topic scores of every run (``results/per_topic.parquet``).

    Like :func:`run`, it locks `run_dir` and leaves exactly its own outputs there."""
    from irsim.engine.checkpoint import run_dir_lock

    run_dir = Path(run_dir)
    check_run_dir(run_dir)
    with run_dir_lock(run_dir):
        return _evaluate_locked(cfg, run_dir)


def _evaluate_locked(cfg: DictConfig, run_dir: Path) -> pa.Table:
    from irsim.engine.output import clear_report
    from irsim.metrics import evaluate

    t0 = time.perf_counter()

    docs = load_doc_collection(cfg.collection, data_dir=cfg.get("data_dir"),
                               offline=cfg.get("offline", False))
    metrics = metrics_arg(cfg) or list(cfg.collection.get("default_metrics") or [])
    bar, update = progress_bar(cfg, "evaluate")
    try:
        matrix = evaluate(docs.runs, docs.qrels, metrics, depth=docs.depth,
                          missing=docs.missing, progress=update)
    finally:
        if bar is not None:
            bar.close()
    table = matrix_to_long(matrix)
    (run_dir / "manifest.json").unlink(missing_ok=True)
    write_tables({"per_topic": table}, run_dir)
    clear_report(run_dir)
    write_manifest(run_dir, cfg, {
        "experiment": "evaluate",
        "collection": describe_data(matrix),
        "tables": {"per_topic": table.num_rows},
        "timings": {"total_seconds": round(time.perf_counter() - t0, 4)},
    })
    return table
