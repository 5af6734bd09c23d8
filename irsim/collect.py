"""``irsim collect <sweep dir>``: merge every job's tables of a Hydra multirun into one
partitioned Parquet dataset, with the sweep parameters as columns.

The output goes to a new directory, or to an empty one, or replaces an earlier output of
``irsim collect`` (recognised by the :data:`MARKER` file it holds); anything else (a directory
holding other files, the sweep itself, a directory inside one of its jobs or holding the
sweep, a symlink) is refused: collect never deletes what it did not write."""

from __future__ import annotations

import json
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
           "param_column", "MARKER", "check_out_dir", "sweep_task", "check_sweep_dir"]

#: The file ``irsim collect`` writes into its output directory; a later collect replaces a
#: directory only when it holds this file (or is empty).
MARKER = ".irsim-collect"


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


#: Hydra flags whose value is the next argument (not an override).
_VALUE_FLAGS = ("-cp", "-cn", "-cd", "--config-path", "--config-name", "--config-dir",
                "--experimental-rerun")


def sweep_task(argv: list[str]) -> list[str]:
    """The overrides of a command line that Hydra records as the sweep's task
    (``hydra.overrides.task`` of ``multirun.yaml``): all but flags and ``hydra.*``.

    Examples
    --------
    >>> sweep_task(["-m", "experiment.B=100,200", "quiet=true", "hydra.sweep.dir=sw"])
    ['experiment.B=100,200', 'quiet=true']
    """
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUE_FLAGS:
            skip = True
        elif not arg.startswith("-") and not arg.lstrip("+~").startswith(("hydra.",
                                                                          "hydra/")):
            out.append(arg)
    return out


def check_sweep_dir(sweep_dir: str | os.PathLike, task: list[str]) -> None:
    """Refuse to start a sweep with overrides `task` in `sweep_dir` when it holds another
    sweep (its ``multirun.yaml`` records other overrides: Hydra would overwrite the jobs'
    ``.hydra/overrides.yaml``, and ``irsim collect`` would label one sweep's tables with the
    other's parameters) or files and no sweep. The same sweep again (the same overrides, in
    any order) resumes it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"overrides": {
    ...     "task": ["experiment.B=1000", "quiet=true"]}}}))
    >>> check_sweep_dir(d, ["quiet=true", "experiment.B=1000"])  # the same sweep: resumed
    >>> check_sweep_dir(d, ["experiment.B=2000", "quiet=true"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: ...: holds another sweep (experiment.B=1000 quiet=true); ...
    """
    sweep = Path(sweep_dir)
    if not sweep.is_dir():
        return
    recorded = sweep / "multirun.yaml"
    if recorded.is_file():
        try:
            conf = yaml.safe_load(recorded.read_text(encoding="utf-8")) or {}
            old = [str(t) for t in conf["hydra"]["overrides"]["task"] or []]
        except Exception:  # noqa: BLE001 - unreadable: not provably the same sweep
            old = None
        if old is not None and sorted(old) == sorted(task):
            return
        shown = "unreadable multirun.yaml" if old is None else (" ".join(old) or
                                                                 "no overrides")
        raise InputError(f"holds another sweep ({shown}); a second sweep there would mix "
                         f"its jobs with that sweep's and relabel them: choose another "
                         f"hydra.sweep.dir (the same command again resumes that sweep)",
                         file=sweep)
    if any(sweep.iterdir()):
        raise InputError("holds files irsim did not write and no sweep (no multirun.yaml): "
                         "choose a new or empty hydra.sweep.dir", file=sweep)


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
            params[key] = _label(value)
        jobs.append((job, params))
    return jobs


def _label(value: str) -> str:
    """A sweep parameter's label: the override's value, a list of one scalar as that scalar
    (the command line writes ``experiment.alpha=0.01,0.05`` as ``[0.01],[0.05]`` for a list
    field, :func:`irsim.runner.promote_overrides`).

    Examples
    --------
    >>> _label("[0.01]"), _label("[0.01,0.05]"), _label("500"), _label("[[1,2]]")
    ('0.01', '[0.01,0.05]', '500', '[[1,2]]')
    """
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if inner and not any(c in inner for c in "[],{}"):
            return inner
    return value


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


def _is_collect_output(out: Path) -> bool:
    marker = out / MARKER
    return marker.is_file() and not marker.is_symlink()


def check_out_dir(sweep_dir: str | os.PathLike, out: str | os.PathLike) -> None:
    """Refuse an output directory `out` that ``irsim collect`` may not replace: a symlink or a
    file, the sweep directory itself, a directory inside one of its jobs or holding the sweep,
    or a non-empty directory that is not an earlier collect output (no :data:`MARKER`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "mine").mkdir()
    >>> _ = (d / "mine" / "thesis.tex").write_text("x")
    >>> check_out_dir(d / "sweep", d / "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: ...: holds files irsim did not write (it is no output of irsim ...
    """
    sweep, out = Path(sweep_dir), Path(out)
    if out.is_symlink():
        raise InputError("is a symlink: irsim collect writes a directory of its own, never "
                         "through a symlink; give a new directory", file=out)
    if out.exists() and not out.is_dir():
        raise InputError("is a file, not a directory", file=out)
    where, home = out.resolve(), sweep.resolve()
    if where == home:
        raise InputError("is the sweep directory itself: collect into a new directory "
                         "(default: <sweep dir>/collected)", file=out)
    if home.is_relative_to(where):
        raise InputError("holds the sweep directory: collect into a new directory "
                         "(default: <sweep dir>/collected)", file=out)
    for job, _ in sweep_jobs(sweep, finished=False):
        if where.is_relative_to(job.resolve()):
            raise InputError(f"is inside job {job.relative_to(sweep)} of the sweep: collect "
                             f"into a new directory (default: <sweep dir>/collected)",
                             file=out)
    if out.is_dir() and any(out.iterdir()) and not _is_collect_output(out):
        raise InputError(f"holds files irsim did not write (it is no output of irsim collect: "
                         f"no {MARKER} file); collect into a new or empty directory",
                         file=out)


def collect(sweep_dir: str | os.PathLike, out: str | os.PathLike | None = None, *,
            partial: bool = False) -> dict[str, Path]:
    """Merge the result tables of every job under `sweep_dir`.

    A sweep with unfinished jobs (a job directory without its tables and manifest, or fewer
    job directories than ``multirun.yaml`` launches) is refused with :class:`InputError`
    naming them, unless `partial` (then the finished jobs are merged).

    Each table ``T`` becomes the dataset ``<out>/T/`` (hive-partitioned by the sweep
    parameters, which are also columns, plus ``job``: the job's directory relative to the
    sweep). `out` defaults to ``<sweep_dir>/collected``. It must be new, empty or an earlier
    output of collect (its :data:`MARKER` file), which is then replaced; anything else is
    refused with :class:`InputError` (:func:`check_out_dir`), before anything is read.

    Returns
    -------
    dict of table name to dataset directory
    """
    sweep = Path(sweep_dir)
    out = Path(out) if out is not None else sweep / "collected"
    check_out_dir(sweep, out)
    merged, varying, _ = merged_tables(sweep, partial=partial)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".collect-", dir=out.parent))
    old = None
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
        marker = {"sweep": str(sweep.resolve()), "tables": sorted(merged)}
        (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        check_out_dir(sweep, out)  # still new, empty or an earlier collect output
        if out.is_dir() and _is_collect_output(out):
            # the earlier output moves aside (renamed over an empty directory), then goes
            old = Path(tempfile.mkdtemp(prefix=".collect-old-", dir=out.parent))
            os.replace(out, old)
        try:
            os.replace(tmp, out)  # a new name, or over an empty directory
        except BaseException:
            if old is not None:  # the earlier output goes back
                os.replace(old, out)
                old = None
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and _is_collect_output(old):
            shutil.rmtree(old, ignore_errors=True)
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
