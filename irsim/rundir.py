"""What irsim owns in a run directory, so that it only ever removes what it wrote.

irsim writes into a run directory only when the directory is new or empty (Hydra's own
``.hydra/`` and ``*.log`` aside) or is already irsim's: it holds the ownership file
:data:`OWNED` or a ``manifest.json`` of an irsim run. Anything else is refused with one line
before anything is written (:func:`check_claimable`); so is a ``results/`` or
``checkpoints/`` that is a symlink (irsim never writes through one nor removes files behind
it), and so is a symlinked ``.hydra/`` or a file in it that Hydra would write through (a
symlink, a hard link) onto someone else's file.

:data:`OWNED` lists, relative to the directory, the files irsim wrote there: the tables of
``results/`` and the report with its plots. A file is recorded before it is written, and only
recorded files are ever removed or replaced as an earlier run's outputs; a user's table,
plot or notes in the same directory stay. ``checkpoints/`` is irsim's when it holds the mark
file :data:`CHECKPOINTS_MARK`, which irsim writes when it creates the directory; only then
is it removed. A run directory of an irsim that did not write :data:`OWNED` yet is adopted
from its manifest (its tables, ``report.md`` and the plots that report links).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from irsim.errors import InputError

__all__ = ["OWNED", "CHECKPOINTS_MARK", "HYDRA_FILES", "check_links", "check_hydra_files",
           "check_claimable", "check_writable", "claim", "owned",
           "record", "remove_owned", "is_irsim_dir", "make_checkpoints", "remove_checkpoints",
           "record_report", "atomic_write"]

#: The ownership file of a run directory: the files irsim wrote there.
OWNED = ".irsim-run.json"
#: The mark file of a ``checkpoints/`` directory irsim created.
CHECKPOINTS_MARK = ".irsim-checkpoints"

_LINKED_PNG = re.compile(r"\]\(([^)/\s]+\.png)\)")


def check_links(run_dir: str | os.PathLike) -> None:
    """Refuse a ``results/``, ``checkpoints/`` or ``.hydra/`` of `run_dir` that is a symlink,
    and files of ``.hydra/`` that Hydra would write through (:func:`check_hydra_files`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "results").symlink_to(tempfile.mkdtemp())
    >>> check_links(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: .../results: is a symlink (-> ...): irsim never writes through ...
    """
    run_dir = Path(run_dir)
    for name in ("results", "checkpoints", ".hydra"):
        path = run_dir / name
        if path.is_symlink():
            raise InputError(f"is a symlink (-> {os.readlink(path)}): irsim never writes "
                             f"through a symlinked {name}/ nor removes files behind it; "
                             f"replace it with a directory or choose another run directory",
                             file=path)
    check_hydra_files(run_dir / ".hydra", HYDRA_FILES)
    if run_dir.is_dir():  # Hydra appends its log (<job name>.log) to the run directory's
        check_hydra_files(run_dir, sorted(p.name for p in run_dir.glob("*.log")))


#: The files Hydra writes into a run directory's ``.hydra/`` (the composed config, the
#: command line's overrides, Hydra's own config).
HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def check_hydra_files(folder: str | os.PathLike, names: Iterable[str]) -> None:
    """Refuse, before Hydra writes them, files of `folder` (``.hydra/``, a sweep's
    ``multirun.yaml``) that Hydra would write through onto another file: a symlink or a
    file with other hard links (Hydra truncates and rewrites it in place), or `folder`
    being a file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "thesis.tex").write_text("x")
    >>> (d / "config.yaml").symlink_to(d / "thesis.tex")
    >>> check_hydra_files(d, HYDRA_FILES)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: .../config.yaml: is a symlink (-> .../thesis.tex): Hydra would ...
    """
    folder = Path(folder)
    if not folder.is_symlink() and folder.exists() and not folder.is_dir():
        raise InputError("is a file, not a directory", file=folder)
    if not folder.is_dir():
        return
    for name in names:
        path = folder / name
        if path.is_symlink():
            raise InputError(f"is a symlink (-> {os.readlink(path)}): Hydra would write this "
                             f"run's config or log through it onto another file; remove the link "
                             f"or choose another directory", file=path)
        if path.is_dir():
            raise InputError("is a directory, not a file", file=path)
        try:
            links = path.stat().st_nlink if path.exists() else 1
        except OSError:
            links = 1
        if links > 1:
            raise InputError(f"has {links - 1} other hard link(s): Hydra would rewrite this "
                             f"file in place and change the others; remove it or choose "
                             f"another directory", file=path)


def check_writable(run_dir: str | os.PathLike) -> None:
    """Refuse, before any computation, a run directory whose results could not be written:
    in `run_dir` and in its ``results/`` and ``checkpoints/`` (when they exist) a probe file
    is created and removed (a new, uniquely named file irsim made, so removing it touches
    nothing of anyone else's). A read-only directory, one on a file system mounted read-only
    or without permission, fails with one line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_writable(d); sorted(p.name for p in d.iterdir())  # the probe is gone
    []
    """
    import secrets

    run_dir = Path(run_dir)
    for path in (run_dir, run_dir / "results", run_dir / "checkpoints"):
        if path is not run_dir and not path.is_dir():
            continue  # created later inside run_dir, which is probed
        probe = path / f".irsim-write-probe-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as err:
            raise InputError(f"is not writable ({err.strerror}): irsim checks before computing"
                             f" that it can write its results; fix the permissions or choose "
                             f"another run directory (hydra.run.dir)", file=path) from None
        os.close(fd)
        probe.unlink()


def _manifest(run_dir: Path) -> dict | None:
    """The irsim manifest of `run_dir` (a JSON object with its tables and versions)."""
    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("tables"), dict) and "versions" in data:
        return data
    return None


def _owned_file(run_dir: Path) -> Path | None:
    path = run_dir / OWNED
    return path if path.is_file() and not path.is_symlink() else None


def is_irsim_dir(run_dir: str | os.PathLike) -> bool:
    """Whether `run_dir` holds irsim's ownership file or an irsim manifest."""
    run_dir = Path(run_dir)
    return _owned_file(run_dir) is not None or _manifest(run_dir) is not None


def _foreign(run_dir: Path) -> list[str]:
    """Entries of `run_dir` other than Hydra's own (``.hydra/``, ``*.log``) and irsim's
    ``checkpoints/`` (its mark: an interrupted run)."""
    def ours(e: Path) -> bool:
        if e.name == ".hydra" or (e.name.endswith(".log") and e.is_file()):
            return True
        return e.name == "checkpoints" and (e / CHECKPOINTS_MARK).is_file()

    return sorted(e.name for e in run_dir.iterdir() if not ours(e))


def check_claimable(run_dir: str | os.PathLike) -> None:
    """Refuse, changing nothing, a run directory irsim may not write into: a symlinked
    ``results/`` or ``checkpoints/``, a ``checkpoints/`` irsim did not create, or a non-empty
    directory that is not irsim's (no :data:`OWNED`, no irsim manifest). A directory that does
    not exist yet is fine.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_claimable(d / "new"); check_claimable(d)  # new, empty: fine
    >>> _ = (d / "thesis.tex").write_text("x")
    >>> check_claimable(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: ...: holds files irsim did not write (thesis.tex); ...
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    check_links(run_dir)
    for path in (run_dir / "results", run_dir / "checkpoints"):
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a directory", file=path)
    checkpoints = run_dir / "checkpoints"
    if checkpoints.is_dir() and not (checkpoints / CHECKPOINTS_MARK).is_file():
        raise InputError(f"was not created by irsim (no {CHECKPOINTS_MARK} file in it): irsim "
                         f"would reset it; move it away or choose another run directory",
                         file=checkpoints)
    if is_irsim_dir(run_dir):
        return
    foreign = _foreign(run_dir)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise InputError(f"holds files irsim did not write ({shown}); irsim writes only into "
                         f"a new or empty directory or one of its own run directories: choose "
                         f"another run directory (hydra.run.dir)", file=run_dir)


def _legacy(run_dir: Path) -> list[str]:
    """The files an irsim run directory without :data:`OWNED` holds as irsim's: the tables
    its manifest lists, ``report.md`` and the plots that report links."""
    manifest = _manifest(run_dir)
    if manifest is None:
        return []
    files = [f"results/{t}.parquet" for t in manifest["tables"]]
    report = run_dir / "report.md"
    if report.is_file():
        files.append("report.md")
        try:
            files += _LINKED_PNG.findall(report.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return files


def owned(run_dir: str | os.PathLike) -> set[str]:
    """The files (relative paths) irsim wrote in `run_dir`.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> record(d, ["results/asl.parquet", "report.md"])
    >>> sorted(owned(d))
    ['report.md', 'results/asl.parquet']
    """
    run_dir = Path(run_dir)
    path = _owned_file(run_dir)
    if path is None:
        return set(_legacy(run_dir))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data.get("files", []) if isinstance(data, dict) else []
    except (OSError, UnicodeDecodeError, ValueError):
        return set()  # unreadable: nothing is known to be irsim's, nothing is removed
    return {f for f in files if isinstance(f, str) and _relative(f)}


def _relative(name: str) -> bool:
    """A plain relative path inside the directory (no ``..``, not absolute)."""
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def _write(run_dir: Path, files: set[str]) -> None:
    text = json.dumps({"owner": "irsim", "files": sorted(files)}, indent=1).encode()
    atomic_write(run_dir / OWNED, lambda f: f.write(text))


def claim(run_dir: str | os.PathLike) -> None:
    """:func:`check_claimable`, then adopt an irsim run directory written before
    :data:`OWNED` existed (its manifest goes first when a run rewrites the directory)."""
    run_dir = Path(run_dir)
    check_claimable(run_dir)
    if run_dir.is_dir() and _owned_file(run_dir) is None and _manifest(run_dir) is not None:
        _write(run_dir, set(_legacy(run_dir)))


def record(run_dir: str | os.PathLike, files: Iterable[str]) -> None:
    """Add `files` (relative paths) to what irsim wrote in `run_dir` (before writing them)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    current = owned(run_dir)
    new = current | {str(f) for f in files}
    if new != current or _owned_file(run_dir) is None:
        _write(run_dir, new)


def remove_owned(run_dir: str | os.PathLike, files: Iterable[str]) -> None:
    """Remove those of `files` that irsim wrote in `run_dir`, and forget them."""
    run_dir = Path(run_dir)
    mine = owned(run_dir)
    gone = {f for f in files if f in mine}
    for name in gone:
        path = run_dir / name
        if path.is_symlink() or path.is_file():
            path.unlink()
    if gone:
        _write(run_dir, mine - gone)


def record_report(run_dir: str | os.PathLike, pngs_before: set[str]) -> None:
    """Record ``report.md`` and the plots a report just written added or links."""
    run_dir = Path(run_dir)
    now = {p.name for p in run_dir.glob("*.png")}
    files = {"report.md", *(now - pngs_before)}
    try:
        text = (run_dir / "report.md").read_text(encoding="utf-8", errors="replace")
        files |= {n for n in _LINKED_PNG.findall(text) if n in now}
    except OSError:
        pass
    record(run_dir, files)


def make_checkpoints(checkpoints: str | os.PathLike) -> Path:
    """Create ``checkpoints/`` (if needed) with its mark file; returns it."""
    checkpoints = Path(checkpoints)
    check_links(checkpoints.parent)
    checkpoints.mkdir(parents=True, exist_ok=True)
    mark = checkpoints / CHECKPOINTS_MARK
    if not mark.is_file():
        mark.write_text("created by irsim: removed when the run finishes\n")
    return checkpoints


def remove_checkpoints(checkpoints: str | os.PathLike, *, only_if_empty: bool = False
                       ) -> None:
    """Remove ``checkpoints/`` if irsim created it (its mark file; never a symlink); with
    `only_if_empty`, only when it holds no saved shard."""
    checkpoints = Path(checkpoints)
    if checkpoints.is_symlink() or not (checkpoints / CHECKPOINTS_MARK).is_file():
        return
    if only_if_empty and any(checkpoints.rglob("*.npz")):
        return
    shutil.rmtree(checkpoints, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Any) -> None:
    """Write a file by ``write(fileobj)`` into ``<path>.tmp``, fsync it, rename it over
    `path` and fsync the directory. On any failure (a full disk, an interrupt) the temporary
    file is removed and `path` is untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write(p, lambda f: f.write(b"hello"))
    >>> p.read_bytes(), sorted(x.name for x in p.parent.iterdir())
    (b'hello', ['a.txt'])
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
