"""The plain functions behind the CLI: run a configured study, evaluate runs.

``@hydra.main`` in :mod:`irsim.cli` is a thin shim over these; tests call them with a
config built by Hydra's ``compose``.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

import irsim
from irsim.api import execute
from irsim.data.collection import load_doc_collection
from irsim.data.matrix import ScoreMatrix
from irsim.engine import data_digest, write_tables
from irsim.experiments import load
from irsim.experiments.loading import metrics_arg, progress_bar

__all__ = ["compose_config", "run", "evaluate_command", "write_manifest", "matrix_to_long",
           "describe_data"]

log = logging.getLogger(__name__)


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The irsim config with command-line style overrides, without running anything.

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
        return compose(config_name="config", overrides=list(overrides or []))


def versions() -> dict[str, str]:
    """Versions of irsim, Python and the libraries results depend on."""
    import importlib.metadata as md

    out = {"irsim": irsim.__version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "pyarrow", "pandas", "hydra-core", "ray", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


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
    path = run_dir / "manifest.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str))
    os.replace(tmp, path)
    return path


def run(cfg: DictConfig, run_dir: str | os.PathLike, *, keep_ray: bool = False,
        report: bool = True) -> dict[str, pa.Table]:
    """Run the configured study and write its tables, manifest and report into `run_dir`.

    `keep_ray` leaves a Ray instance started for engine=ray running for the next job of a
    sweep. Returns the result tables.
    """
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    name, config, data, shards = load(cfg)
    t_load = time.perf_counter()
    engine = cfg.engine.get("name", "local")
    engine_options = {k: v for k, v in OmegaConf.to_container(cfg.engine).items()
                      if k not in ("name", "shard_items", "shard_replicates")}
    if engine == "ray" and keep_ray:
        engine_options.setdefault("keep_alive", True)
    bar, progress = progress_bar(cfg, name, unit="shard")
    checkpoints = run_dir / "checkpoints"
    try:
        data, tables, info = execute(name, config, data, seed=cfg.seed, shards=shards,
                                     engine=engine, engine_options=engine_options,
                                     checkpoint_dir=checkpoints, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    t_study = time.perf_counter()
    write_tables(tables, run_dir)
    shutil.rmtree(checkpoints, ignore_errors=True)
    extra = {
        "experiment": name,
        "engine": engine,
        "shards": info["shards"],
        "run": dict(info),
        "collection": describe_data(data),
        "tables": {k: t.num_rows for k, t in tables.items()},
        "timings": {
            "load_seconds": round(t_load - t0, 4),
            "study_seconds": round(t_study - t_load, 4),
        },
    }
    if report:
        from irsim.report import write_report

        write_report(run_dir, tables, extra)
    extra["timings"]["total_seconds"] = round(time.perf_counter() - t0, 4)
    write_manifest(run_dir, cfg, extra)
    log.info("wrote %s", run_dir)
    return tables


def describe_data(data: Any) -> dict[str, Any]:
    """Summary of a study's data for the manifest and report (a ``describe()`` method of the
    data wins)."""
    if hasattr(data, "describe"):
        return dict(data.describe())
    if isinstance(data, ScoreMatrix):
        return {
            "metrics": list(data.metrics),
            "systems": len(data.systems),
            "topics": len(data.topics),
            "source": data.source,
            "sha256": data_digest(data),
        }
    described = {"type": type(data).__name__, "sha256": data_digest(data)}
    for attr in ("runs", "qrels"):
        part = getattr(data, attr, None)
        if part is not None:
            described[attr] = len(part)
            src = getattr(part, "sources", None) or getattr(part, "source", None)
            if src:
                described[f"{attr}_source"] = src if isinstance(src, str) else list(src)
    return described


def matrix_to_long(matrix: ScoreMatrix) -> pa.Table:
    """Long table (metric, system, topic, value) of a score matrix, like ``trec_eval -q``.

    Examples
    --------
    >>> m = ScoreMatrix(np.array([[[0.5, 1.0]]]), ["AP"], ["run1"], ["401", "402"])
    >>> matrix_to_long(m).to_pylist()[1]
    {'metric': 'AP', 'system': 'run1', 'topic': '402', 'value': 1.0}
    """
    nm, ns, nt = matrix.shape
    return pa.table({
        "metric": pa.array(np.repeat(np.asarray(matrix.metrics, object), ns * nt), pa.string()),
        "system": pa.array(np.tile(np.repeat(np.asarray(matrix.systems, object), nt), nm),
                           pa.string()),
        "topic": pa.array(np.tile(np.asarray(matrix.topics, object), nm * ns), pa.string()),
        "value": pa.array(matrix.values.ravel(), pa.float64()),
    })


def evaluate_command(cfg: DictConfig, run_dir: str | os.PathLike) -> pa.Table:
    """``irsim evaluate``: per-topic scores of every run (``results/per_topic.parquet``)."""
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    from irsim.metrics import evaluate

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
    write_tables({"per_topic": table}, run_dir)
    write_manifest(run_dir, cfg, {
        "experiment": "evaluate",
        "collection": describe_data(matrix),
        "tables": {"per_topic": table.num_rows},
        "timings": {"total_seconds": round(time.perf_counter() - t0, 4)},
    })
    return table
