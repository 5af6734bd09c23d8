"""The run or sweep directory of a command line: read from its overrides, made explicit
when Hydra's default is used (the next free ``<time>-1``, ``<time>-2``... when a run of the
same second has it) and locked before Hydra writes into it.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import NoReturn

from irsim.errors import IrsimError

__all__ = ["explicit_run_dir", "explicit_sweep_dir", "own_directory", "lock_sweep_dir"]


def _refuse(err: BaseException | str) -> NoReturn:
    """Stop with `err`'s first line (the command line prints it, exit code 2)."""
    if isinstance(err, IrsimError):
        raise err
    raise IrsimError(str(err))


def explicit_run_dir(argv: list[str]) -> Path | None:
    """The ``hydra.run.dir=...`` of a single run's command line (None: Hydra's default, an
    interpolation, or a sweep)."""
    return _explicit(argv, "hydra.run.dir", sweep=False)


def explicit_sweep_dir(argv: list[str]) -> Path | None:
    """The ``hydra.sweep.dir=...`` of a sweep's command line (None: not a sweep, Hydra's
    default, or an interpolation)."""
    return _explicit(argv, "hydra.sweep.dir", sweep=True)


def _explicit(argv: list[str], key: str, *, sweep: bool) -> Path | None:
    """The directory `key` names on a command line of a sweep (`sweep`) or a single run;
    None for the other kind, Hydra's default or an interpolation."""
    if any(a in ("-m", "--multirun") for a in argv) != sweep:
        return None
    value = _dir_value(argv, key)
    return None if (not value or "${" in value) else Path(value)


def _dir_value(argv: list[str], key: str) -> str | None:
    """The value of the last ``key=...`` override of `argv` (quotes removed), else None."""
    for arg in reversed(argv):
        name, sep, value = arg.partition("=")
        if sep and name.lstrip("+~") == key:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value
    return None


def _override(key: str, path: Path) -> str:
    """``key=<path>`` as a Hydra override (quoted when the path holds Hydra's syntax)."""
    import re

    text = str(path)
    if re.fullmatch(r"[\w./\-:~+@%]+", text):
        return f"{key}={text}"
    return f"{key}='" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def own_directory(stack: ExitStack, argv: list[str], job: list[str]) -> list[str]:
    """The command line with the run (or sweep) directory made explicit, before Hydra
    resolves it: Hydra's default (``outputs/<date>/<time>``, ``outputs/multirun/...``) is
    resolved here and, when a run or sweep of the same second already has it, the next free
    ``<time>-1``, ``<time>-2``... is taken; it is locked at once (held in `stack`) so that
    two sweeps started in the same second never share a directory (the second would
    overwrite the first's ``multirun.yaml`` and job configs). A directory given by an
    interpolation is resolved here too (then locked and checked as an explicit one).
    `job`: the overrides of one job (composed to resolve the directory)."""
    from irsim.engine.checkpoint import run_dir_lock
    from irsim.runner import check_path_length, compose_config

    sweep = any(a in ("-m", "--multirun") for a in argv)
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    given = _dir_value(argv, key)
    if given is not None and "${" not in given:
        return argv  # explicit: locked and checked by the caller
    try:
        node = compose_config(job, hydra=True).hydra
        base = Path(str(node.sweep.dir if sweep else node.run.dir))
    except Exception:  # noqa: BLE001 - Hydra resolves (and reports) it itself
        return argv
    argv = [a for a in argv if a.partition("=")[0].lstrip("+~") != key]
    if given is not None:  # an interpolation, resolved once: then an explicit directory
        return [*argv, _override(key, base)]
    try:
        check_path_length(base, key)
    except IrsimError as err:
        _refuse(err)
    for n in range(1000):
        here = base if n == 0 else base.with_name(f"{base.name}-{n}")
        if here.is_symlink() or (here.exists() and (not here.is_dir() or any(here.iterdir()))):
            continue  # another run's or sweep's, or not a directory
        held = ExitStack()
        try:
            held.enter_context(run_dir_lock(here))
        except IrsimError:
            continue  # another irsim holds it this very moment
        if any(here.iterdir()):
            held.close()
            continue
        stack.enter_context(held)
        return [*argv, _override(key, here)]
    _refuse(f"{base}: no free directory beside it (tried {base.name}-1 to {base.name}-999): "
          f"give {key}")
    return argv


def lock_sweep_dir(stack: ExitStack, sweep: Path, argv: list[str]) -> None:
    """Hold the sweep directory for the whole sweep, before Hydra writes into it: a second
    sweep there (running, or with other overrides) is refused with one line."""
    from irsim.collect import check_sweep_dir, sweep_task
    from irsim.engine.checkpoint import run_dir_lock
    from irsim.runner import check_path_length

    try:
        check_path_length(sweep, "hydra.sweep.dir")
        stack.enter_context(run_dir_lock(sweep))
    except IrsimError as err:
        if "in use" not in str(err):
            _refuse(err)
        _refuse(f"{sweep}: sweep directory in use by another irsim sweep (wait for it or choose "
              f"another hydra.sweep.dir)")
    try:
        check_sweep_dir(sweep, sweep_task(argv))
    except IrsimError as err:
        _refuse(err)
