"""``irsim collect <sweep dir>``: merge every job's tables of a Hydra multirun into one
partitioned Parquet dataset, with the sweep parameters as columns."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import yaml

from irsim.errors import InputError

__all__ = ["collect", "collect_command", "sweep_jobs", "expected_jobs", "merged_tables",
           "param_column"]


def expected_jobs(sweep_dir: str | os.PathLike) -> int | None:
    """How many jobs the sweep launched: the product of its sweep overrides, read from the
    ``multirun.yaml`` Hydra writes at the sweep's root (None when it is absent or has no
    basic-sweeper overrides).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> task = ["experiment.B=250,500", "seed=range(3)"]
    >>> _ = (d / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"overrides": {
    ...     "task": task}}}))
    >>> expected_jobs(d)
    6
    """
    path = Path(sweep_dir) / "multirun.yaml"
    if not path.is_file():
        return None
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        conf = yaml.safe_load(path.read_text()) or {}
        task = (((conf.get("hydra") or {}).get("overrides") or {}).get("task")) or []
        parsed = OverridesParser.create().parse_overrides([str(t) for t in task])
        return sum(len(batch) for batch in BasicSweeper.split_arguments(parsed, None))
    except Exception:  # noqa: BLE001 - another sweeper's syntax: the count is unknown
        return None


def sweep_jobs(sweep_dir: str | os.PathLike, *, finished: bool = True
               ) -> list[tuple[Path, dict[str, str]]]:
    """Job directories of a sweep and their override parameters (``hydra.*`` overrides
    excluded); with `finished`, only jobs that finished (``results/`` and ``manifest.json``,
    which a run writes last)."""
    sweep = Path(sweep_dir)
    jobs = []
    for overrides in sorted(sweep.rglob(".hydra/overrides.yaml")):
        job = overrides.parent.parent
        if finished and not _finished(job):
            continue
        params = {}
        for item in yaml.safe_load(overrides.read_text()) or []:
            key, _, value = str(item).partition("=")
            key = key.lstrip("+~")
            if key.startswith("hydra.") or key.startswith("hydra/") or key == "quiet":
                continue
            params[key] = value
        jobs.append((job, params))
    return jobs


def _finished(job: Path) -> bool:
    return (job / "results").is_dir() and (job / "manifest.json").is_file()


def merged_tables(sweep_dir: str | os.PathLike, *, partial: bool = False
                  ) -> tuple[dict[str, pa.Table], list[str], list[tuple[Path, dict[str, str]]]]:
    """Every finished job's tables of a sweep, merged per table: ``(tables, varying, jobs)``.

    Each merged table keeps its columns and appends the sweep parameters (strings) and
    ``job`` (the job's directory relative to the sweep); `varying` names the parameters that
    differ between jobs. A sweep with unfinished jobs is refused with :class:`InputError`
    naming them, unless `partial` (then the finished jobs are merged).
    """
    sweep = Path(sweep_dir)
    if not sweep.is_dir():
        raise InputError("sweep directory not found", file=sweep)
    jobs = sweep_jobs(sweep)
    started = sweep_jobs(sweep, finished=False)
    unfinished = [str(j.relative_to(sweep)) for j, _ in started if not _finished(j)]
    expected = expected_jobs(sweep)
    total = max(len(started), expected or 0)
    if not partial and (unfinished or len(jobs) < total):
        listing = f" (unfinished: {', '.join(unfinished)})" if unfinished else ""
        raise InputError(f"incomplete sweep: {len(jobs)} of {total} jobs finished{listing}; "
                         f"rerun the sweep, or collect the finished jobs with --partial",
                         file=sweep)
    if not jobs:
        raise InputError("no job with results/ under this directory (is it a Hydra "
                         "multirun sweep dir?)", file=sweep)
    keys = sorted({k for _, p in jobs for k in p})
    varying = [k for k in keys if len({p.get(k) for _, p in jobs}) > 1]
    per_table: dict[str, list[pa.Table]] = {}
    for job, params in jobs:
        for path in sorted((job / "results").glob("*.parquet")):
            table = pq.read_table(path)
            n = table.num_rows
            for k in keys:
                table = table.append_column(param_column(k, table.column_names),
                                            pa.array([params.get(k)] * n, pa.string()))
            table = table.append_column(
                "job", pa.array([str(job.relative_to(sweep))] * n, pa.string()))
            per_table.setdefault(path.stem, []).append(table)
    merged = {name: pa.concat_tables(tables, promote_options="default")
              for name, tables in per_table.items()}
    return merged, varying, jobs


def param_column(key: str, columns: list[str]) -> str:
    """The column of sweep parameter `key` in a table with `columns`: the key itself, or
    ``override.<key>`` when the table has a column of that name already (a run on several
    collections has its own ``collection`` column; the sweep's ``collection=matrix`` override
    then goes beside it).

    Examples
    --------
    >>> param_column("experiment.B", ["metric"]), param_column("collection", ["collection"])
    ('experiment.B', 'override.collection')
    """
    return f"override.{key}" if key in columns else key


def collect(sweep_dir: str | os.PathLike, out: str | os.PathLike | None = None, *,
            partial: bool = False) -> dict[str, Path]:
    """Merge the result tables of every job under `sweep_dir`.

    A sweep with unfinished jobs (a job directory without its tables and manifest, or fewer
    job directories than ``multirun.yaml`` launches) is refused with :class:`InputError`
    naming them, unless `partial` (then the finished jobs are merged).

    Each table ``T`` becomes the dataset ``<out>/T/`` (hive-partitioned by the sweep
    parameters, which are also columns, plus ``job``: the job's directory relative to the
    sweep). `out` defaults to ``<sweep_dir>/collected``; it is replaced atomically.

    Returns
    -------
    dict of table name to dataset directory
    """
    sweep = Path(sweep_dir)
    merged, varying, _ = merged_tables(sweep, partial=partial)
    out = Path(out) if out is not None else sweep / "collected"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".collect-", dir=out.parent))
    try:
        for name, table in merged.items():
            parts = [f"override.{k}" if f"override.{k}" in table.column_names else k
                     for k in varying] or ["job"]
            ds.write_dataset(
                table, tmp / name, format="parquet",
                partitioning=ds.partitioning(
                    pa.schema([(k, pa.string()) for k in parts]), flavor="hive"),
                existing_data_behavior="overwrite_or_ignore",
            )
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: out / name for name in merged}


def collect_command(args: list[str]) -> None:
    """CLI: ``irsim collect <sweep dir> [<out dir>] [--partial]``."""
    partial = "--partial" in args
    args = [a for a in args if a != "--partial"]
    if not 1 <= len(args) <= 2 or any(a.startswith("-") for a in args):
        raise InputError("usage: irsim collect <sweep dir> [<out dir>] [--partial]")
    paths = collect(args[0], args[1] if len(args) == 2 else None, partial=partial)
    for name, path in paths.items():
        print(f"{name}: {path}")
