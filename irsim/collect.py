"""``irsim collect <sweep dir>``: merge every job's tables of a Hydra multirun into one
partitioned Parquet dataset, with the sweep parameters as columns.

The output goes to a new directory, or to an empty one, or to an earlier output of
``irsim collect`` (recognised by the :data:`MARKER` file it holds, which lists the table
folders collect wrote there); anything else (a directory holding other files, the sweep
itself, a directory inside one of its jobs or holding the sweep, a symlink) is refused:
collect never deletes what it did not write. The new output is written beside, inside the
output directory (a hidden temporary folder), and then only collect's own table folders are
swapped: a user's file placed in an earlier output stays.

Each job is labelled by its ``.hydra/overrides.yaml``, checked against the configuration its
``manifest.json`` records (a job whose overrides were overwritten, by a second sweep started
in the same directory, is refused with the difference named), and each table against the
sha256 the manifest records for it."""

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
           "param_column", "MARKER", "check_out_dir", "sweep_task", "check_sweep_dir",
           "check_labels"]

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
    from irsim.rundir import check_hydra_files, check_links

    sweep = Path(sweep_dir)
    if not sweep.is_dir():
        return
    check_hydra_files(sweep, ["multirun.yaml"])  # Hydra rewrites it in place
    for job in sorted(sweep.iterdir()):
        if job.name.isdigit() and job.is_symlink():
            raise InputError(f"is a symlink (-> {os.readlink(job)}): Hydra would write a job's "
                             f"config and results through it; remove the link or choose "
                             f"another hydra.sweep.dir", file=job)
        if job.is_dir():
            check_links(job)  # .hydra/, results/, checkpoints/: never through a symlink
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
        where = job.relative_to(sweep)
        manifest = _job_manifest(job, where)
        check_labels(job, manifest, where)
        for path in _job_tables(job, manifest):
            table = _read_job_table(path, manifest, where)
            n = table.num_rows
            for k in keys:
                table = table.append_column(param_column(k, table.column_names),
                                            pa.array([params.get(k)] * n, pa.string()))
            table = table.append_column(
                "job", pa.array([str(job.relative_to(sweep))] * n, pa.string()))
            per_table.setdefault(path.stem, []).append(table)
    merged = {}
    for name, tables in per_table.items():
        try:
            merged[name] = pa.concat_tables(tables, promote_options="default")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            first = (str(err).splitlines() or [type(err).__name__])[0]
            raise InputError(f"the jobs' {name} tables have incompatible columns ({first}): "
                             f"were they written by different irsim versions?",
                             file=sweep) from None
    return merged, varying, jobs


def _job_manifest(job: Path, where: Path) -> dict:
    """The manifest of a finished job (a JSON object), or :class:`InputError`."""
    path = job / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(f"job {where}: unreadable manifest ({first})", file=path) from None
    if not isinstance(data, dict):
        raise InputError(f"job {where}: the manifest is no JSON object", file=path)
    return data


def _job_tables(job: Path, manifest: dict) -> list[Path]:
    """The tables of a job: those its manifest lists (a user's Parquet file placed in
    ``results/`` is not the job's), every ``results/*.parquet`` for a manifest without
    a list."""
    names = manifest.get("tables")
    if isinstance(names, dict | list) and names:
        return [job / "results" / f"{t}.parquet" for t in sorted(names)]
    return sorted((job / "results").glob("*.parquet"))


def _read_job_table(path: Path, manifest: dict, where: Path) -> pa.Table:
    """A job's table, checked against the sha256 its manifest records; a missing, changed
    or unreadable table is :class:`InputError` naming it."""
    from irsim.provenance import file_sha256

    if not path.is_file():
        raise InputError(f"job {where}: table missing (its manifest lists it); rerun the "
                         f"job", file=path)
    digests = manifest.get("table_sha256")
    if isinstance(digests, dict) and path.stem in digests and \
            file_sha256(path) != digests[path.stem]:
        raise InputError(f"job {where}: the table differs from the one the job wrote (its "
                         f"sha256 is not the manifest's); rerun the job", file=path)
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(f"job {where}: unreadable table ({first}); rerun the job",
                         file=path) from None


def _parsed(item: str) -> tuple[str, object] | None:
    """``(key, value)`` of an override as Hydra parses it; None for a group choice, a
    deletion, an interpolation or anything not parsed."""
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        override = OverridesParser.create().parse_override(item)
    except Exception:  # noqa: BLE001 - not comparable: not checked
        return None
    if override.is_delete() or "${" in item:
        return None
    return override.key_or_group, override.value()


def _same(a: object, b: object) -> bool:
    """Whether an override's value `a` and a recorded config value `b` agree."""
    import math

    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or math.isclose(float(a), float(b), rel_tol=1e-12)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) or isinstance(b, dict):
        return True  # a config group or a mapping: not compared
    return a is b if a is None or b is None else str(a) == str(b)


_ABSENT = object()


def check_labels(job: Path, manifest: dict, where: Path | str = "") -> None:
    """Refuse a job whose ``.hydra/overrides.yaml`` (its labels in a collected table)
    disagrees with the configuration its ``manifest.json`` records (the run's own record,
    written with its tables): Hydra rewrote the overrides of another sweep started in the
    same directory. Keys the manifest does not hold as a value (a config group, a deleted
    key, an interpolation) are not compared.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> job = pathlib.Path(tempfile.mkdtemp())
    >>> (job / ".hydra").mkdir()
    >>> _ = (job / ".hydra" / "overrides.yaml").write_text("- experiment.B=300\\n")
    >>> check_labels(job, {"config": {"experiment": {"B": 300}}})
    >>> check_labels(job, {"config": {"experiment": {"B": 100}}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: ...says experiment.B=300 but its manifest.json records ...B=100...
    """
    config = manifest.get("config")
    if not isinstance(config, dict):
        return
    path = job / ".hydra" / "overrides.yaml"
    try:
        items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        raise InputError(f"job {where}: unreadable overrides", file=path) from None
    for item in items if isinstance(items, list) else []:
        parsed = _parsed(str(item))
        if parsed is None or parsed[0].startswith(("hydra.", "hydra/")) or "/" in parsed[0]:
            continue
        key, value = parsed
        node: object = config
        for part in key.split("."):
            node = node.get(part, _ABSENT) if isinstance(node, dict) else _ABSENT
        if node is _ABSENT or isinstance(node, dict):
            continue
        if not _same(value, node):
            shown = json.dumps(node) if not isinstance(node, str) else node
            raise InputError(f"job {where or job.name}: its .hydra/overrides.yaml says {item} "
                             f"but its manifest.json records {key}={shown}: its overrides "
                             f"were overwritten (a second sweep started in the same "
                             f"directory?); collect labels no job by overrides its run did "
                             f"not have: rerun the sweep into a new hydra.sweep.dir",
                             file=path)


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


#: The prefix of the hidden folder collect writes its new output into, inside the output
#: directory, before swapping it in.
_TMP = ".irsim-collect-tmp-"


def _entries(out: Path) -> list[Path]:
    """What `out` holds, collect's own temporary folders aside."""
    return [e for e in out.iterdir() if not e.name.startswith(_TMP)]


def _earlier(out: Path) -> tuple[list[str], set[str] | None]:
    """The table folders and files (relative paths; None: not recorded, an older irsim)
    an earlier collect wrote in `out` (its :data:`MARKER`)."""
    try:
        data = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return [], set()  # unreadable: nothing is known to be collect's
    if not isinstance(data, dict):
        return [], set()
    tables = [t for t in data.get("tables") or [] if isinstance(t, str) and t
              and "/" not in t and t not in (".", "..") and not t.startswith(".")]
    files = data.get("files")
    return tables, ({f for f in files if isinstance(f, str)} if isinstance(files, list)
                    else None)


def _foreign_in(out: Path, table: str, files: set[str] | None) -> str | None:
    """A file or link in collect's earlier table folder `table` that collect did not write
    (not in `files`; an older marker without files: anything but Parquet), else None."""
    folder = out / table
    if folder.is_symlink() or not folder.is_dir():
        return table
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(out))
        if path.is_symlink() or (path.is_file() and (
                rel not in files if files is not None else path.suffix != ".parquet")):
            return rel
    return None


def check_out_dir(sweep_dir: str | os.PathLike, out: str | os.PathLike) -> None:
    """Refuse an output directory `out` that ``irsim collect`` may not write into: a symlink
    or a file, the sweep directory itself, a directory inside one of its jobs or holding the
    sweep, or a non-empty directory that is not an earlier collect output (no
    :data:`MARKER`).

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
    if out.is_dir() and _entries(out) and not _is_collect_output(out):
        raise InputError(f"holds files irsim did not write (it is no output of irsim collect: "
                         f"no {MARKER} file); collect into a new or empty directory",
                         file=out)


def _check_swap(out: Path, new: list[str]) -> list[str]:
    """Before anything in `out` changes: the earlier output's table folders to replace (each
    holding only what collect wrote there); a folder of a new table's name that collect did
    not write is refused."""
    old, files = _earlier(out) if _is_collect_output(out) else ([], set())
    for table in old:
        if not (out / table).exists() and not (out / table).is_symlink():
            continue
        foreign = _foreign_in(out, table, files)
        if foreign is not None:
            raise InputError(f"is in the folder {table}/ of an earlier irsim collect output but "
                             f"collect did not write it; move it out of {table}/ (collect "
                             f"replaces that folder)", file=out / foreign)
    for table in new:
        path = out / table
        if table not in old and (path.exists() or path.is_symlink()):
            raise InputError(f"holds {table}, which irsim collect did not write, where it would "
                             f"write the table {table}; move it away or collect into a new "
                             f"directory", file=out)
    return [t for t in old if (out / t).exists() or (out / t).is_symlink()]


def _write_marker(out: Path, sweep: Path, tables: list[str], files: list[str]) -> None:
    from irsim.rundir import atomic_write

    text = json.dumps({"sweep": str(sweep.resolve()), "tables": sorted(tables),
                       "files": sorted(files)}, indent=2) + "\n"
    atomic_write(out / MARKER, lambda f: f.write(text.encode()))


def collect(sweep_dir: str | os.PathLike, out: str | os.PathLike | None = None, *,
            partial: bool = False) -> dict[str, Path]:
    """Merge the result tables of every job under `sweep_dir`.

    A sweep with unfinished jobs (a job directory without its tables and manifest, or fewer
    job directories than ``multirun.yaml`` launches) is refused with :class:`InputError`
    naming them, unless `partial` (then the finished jobs are merged). A job whose
    ``.hydra/overrides.yaml`` disagrees with its manifest (:func:`check_labels`), or whose
    table is not the one its manifest records, is refused.

    Each table ``T`` becomes the dataset ``<out>/T/`` (hive-partitioned by the sweep
    parameters, which are also columns, plus ``job``: the job's directory relative to the
    sweep). `out` defaults to ``<sweep_dir>/collected``. It must be new, empty or an earlier
    output of collect (its :data:`MARKER` file); anything else is refused with
    :class:`InputError` (:func:`check_out_dir`), before anything is read. The new tables are
    written into a hidden folder inside `out`, then swapped in: only the table folders the
    earlier collect wrote (as its marker lists them, holding only its files) are replaced or
    removed; anything else in `out` stays.

    Returns
    -------
    dict of table name to dataset directory
    """
    sweep = Path(sweep_dir)
    out = Path(out) if out is not None else sweep / "collected"
    check_out_dir(sweep, out)
    merged, varying, _ = merged_tables(sweep, partial=partial)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP, dir=out))
    moved: list[tuple[Path, Path]] = []  # (from, to) of the swap, to undo it on failure
    marker = out / MARKER
    before = marker.read_bytes() if _is_collect_output(out) else None
    try:
        for name, table in merged.items():
            parts = [f"override.{k}" if f"override.{k}" in table.column_names else k
                     for k in varying] or ["job"]
            ds.write_dataset(
                table, tmp / "new" / name, format="parquet",
                partitioning=ds.partitioning(
                    pa.schema([(k, pa.string()) for k in parts]), flavor="hive"),
                existing_data_behavior="overwrite_or_ignore",
            )
        written = sorted(str(p.relative_to(tmp / "new")) for p in (tmp / "new").rglob("*")
                         if p.is_file())
        check_out_dir(sweep, out)  # still new, empty or an earlier collect output
        old = _check_swap(out, sorted(merged))
        _, old_files = _earlier(out) if _is_collect_output(out) else ([], set())
        # while the folders move, the marker claims both outputs' folders (a crash in
        # between leaves a directory a later collect still recognises)
        _write_marker(out, sweep, sorted({*old, *merged}),
                      sorted(set(written) | (old_files or set()) | {
                          str(p.relative_to(out)) for t in old for p in (out / t).rglob("*")
                          if p.is_file()}))
        (tmp / "old").mkdir()
        for name in old:
            moved.append((out / name, tmp / "old" / name))
            os.replace(*moved[-1])
        for name in merged:
            moved.append((tmp / "new" / name, out / name))
            os.replace(*moved[-1])
        _write_marker(out, sweep, sorted(merged), written)
        moved.clear()
    except BaseException:
        for src, dst in reversed(moved):  # the earlier output goes back
            try:
                os.replace(dst, src)
            except OSError:
                pass
        try:
            if before is not None:
                marker.write_bytes(before)
            elif marker.is_file() and not any((out / t).exists() for t in merged):
                marker.unlink()
        except OSError:
            pass
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the new output if not swapped, the old
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
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
