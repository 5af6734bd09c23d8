"""Command line: ``irsim [--force] [overrides]`` runs a study (Hydra); subcommands ``show``,
``evaluate``, ``report``, ``list``, ``collect``.

Bad input ends with one line on stderr and exit code 2; a run ends with the line
``irsim: results in <run dir>`` (also with ``quiet=true``). A run directory that already
holds this study's finished results is reported complete and not recomputed unless
``--force``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from irsim.errors import IrsimError

__all__ = ["main"]

log = logging.getLogger("irsim")



@dataclass
class _Invocation:
    """What one ``irsim`` command line tells Hydra's entry point beside its config (Hydra's
    ``@hydra.main`` function takes no arguments, so the one invocation under way is held
    here, reset by :func:`main` for each call)."""

    #: ``--force``: recompute a run directory that already holds this run's results.
    force: bool = False
    #: The sweep directory of the multirun under way (set by its jobs; named when it ends).
    sweep: Path | None = None


_STATE = _Invocation()

SUBCOMMANDS = {
    "show": "every parameter of an experiment or preset with its default, type and meaning: "
            "irsim show <experiment|preset>",
    "evaluate": "per-topic scores of TREC runs (like trec_eval -q) as Parquet",
    "report": "rebuild report.md and plots of a run directory, or write a sweep's report: "
              "irsim report <run dir|sweep dir>",
    "list": "list experiments, collections, metrics, tests and CI methods",
    "collect": "merge a sweep's tables into one partitioned Parquet dataset: "
               "irsim collect <sweep dir> [<out dir>] [--partial]",
}
# and every study registered with a ``command`` (irsim.registry.study): irsim <study> A B ...


def command_overrides(study: str, args: list[str]) -> list[str]:
    """``irsim <study> A B ... [key=value ...]`` as the overrides of ``experiment=<study>``,
    for a study registered with a ``command`` field (:func:`irsim.registry.study`): the
    arguments without ``=`` fill that field's list (quoted for Hydra), the others pass as
    they are.

    Examples
    --------
    >>> command_overrides("compare", ["bm25", "dense-v2", "experiment.baseline=bm25", "seed=3"])
    ['experiment=compare', "experiment.systems=['bm25','dense-v2']", \
'experiment.baseline=bm25', 'seed=3']
    """
    from irsim.registry import get

    field = get(study).command
    names = [a for a in args if "=" not in a and not a.startswith("-")]
    rest = [a for a in args if a not in names]
    quoted = ",".join("'" + n.replace("\\", "\\\\").replace("'", "\\'") + "'" for n in names)
    return [f"experiment={study}", *([f"experiment.{field}=[{quoted}]"] if names else []),
            *rest]


def command_help(study: str) -> str:
    """The short help of the subcommand ``irsim <study> --help`` (a study registered with a
    ``command``): usage, the question it answers, its parameters with their defaults in one
    line each, where its data comes from, and an example.

    Examples
    --------
    >>> print(command_help("compare").splitlines()[0])
    usage: irsim compare A B [C ...] [key=value ...]
    """
    import textwrap

    from irsim.api import config_parameters
    from irsim.catalog import _plain, override_value
    from irsim.registry import get

    s = get(study)
    params = config_parameters(s.config)
    field = next(p for p in params if p.name == s.command)
    width = max(len(f"experiment.{p.name}={override_value(p.default)}") for p in params
                if p.name != s.command)
    lines = [f"usage: irsim {study} A B [C ...] [key=value ...]", "",
             *textwrap.wrap(s.question + ".", 92), "",
             *textwrap.wrap(f"A B ...: experiment.{s.command}. {_plain(field.meaning)}", 92),
             "",
             "Options (key=value; every parameter in full: irsim show " + study + "):"]
    for p in params:
        if p.name != s.command:
            key = f"experiment.{p.name}={override_value(p.default)}"
            lines.append(f"  {key:<{width}}  {_plain(p.meaning)}")
    lines += ["",
              "Data (any collection; runs are named by file name, collection.run_names=tag "
              "names them by tag):",
              "  collection=trec collection.runs='runs/*' collection.qrels=qrels.txt "
              "'metrics=[AP,nDCG@10]'",
              "  collection=matrix collection.path=scores.csv collection.metric=AP",
              "", "Example:",
              f"  irsim {study} bm25 dense collection=trec collection.runs='runs/*' "
              "collection.qrels=qrels.txt", "",
              "The answer is printed on stdout; the run directory holds results/*.parquet, "
              "report.md and figures."]
    return "\n".join(lines)


def _study_command(word: str) -> str | None:
    """The study whose subcommand `word` is (registered with a ``command``), else None."""
    if not word.isidentifier() or word in SUBCOMMANDS:
        return None
    from irsim.registry import get

    try:
        return word if get(word).command else None
    except IrsimError:
        return None


def _fail(err: BaseException | str, code: int = 2) -> None:
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [repr(err)]
    print(f"irsim: error: {lines[0]}", file=sys.stderr)
    raise SystemExit(code)


def _log_to_files(message: str) -> str | None:
    """Log the exception being handled, with its traceback, to the run directory's log file
    only (the console gets one line); returns that file's path."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, message, None,
                            sys.exc_info())
    where = None
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
            where = handler.baseFilename
    return where


def _interrupted(run_dir: Path | None, multirun: bool = False) -> None:
    """Ctrl-C: one line saying how to resume (finished shards are checkpointed)."""
    if run_dir is None:
        _fail("interrupted")
    where = "hydra.sweep.dir=" + str(run_dir.parent) if multirun else \
        f"hydra.run.dir={run_dir}"
    _fail(f"interrupted; finished shards are saved: rerun the same command with {where} to "
          f"resume")


@hydra.main(version_base="1.3", config_path="pkg://irsim.conf", config_name="config")
def _hydra_entry(cfg: DictConfig) -> None:
    from irsim.runner import evaluate_command, run

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    if cfg.get("quiet", False):  # console shows warnings only; the run dir's log keeps all
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                    handler, logging.FileHandler):
                handler.setLevel(logging.WARNING)
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:
        _STATE.sweep = Path(hc.sweep.dir).absolute()
    try:
        if cfg.get("command", "run") == "evaluate":
            evaluate_command(cfg, run_dir)
        else:
            # the jobs of a multirun share one Ray instance instead of starting one each
            tables = run(cfg, run_dir, keep_ray=multirun, force=_STATE.force)
            _print_headline(cfg.experiment.name, tables)
    except IrsimError as err:
        _discard_fresh_run_dir(run_dir)
        _fail(f"{err}{_run_names_hint(err, cfg)}")
    except KeyboardInterrupt:
        _interrupted(run_dir, multirun)
    except OSError as err:  # a read-only or full filesystem, a vanished directory
        where = err.filename or run_dir
        _fail(f"{where}: {err.strerror or err}")
    except Exception as err:  # noqa: BLE001 - a bug: one line here, the traceback in the log
        ray_line = _ray_error(err, cfg)
        if ray_line is not None:
            _fail(ray_line)
        where = _log_to_files("internal error") or run_dir
        _fail(f"internal error: {type(err).__name__}: {err} (traceback in {where}; please "
              f"report it)", code=1)
    # the last line, quiet or not: where the results are
    print(f"irsim: results in {run_dir}", file=sys.stderr)


def sweep_lines(sweep: Path) -> list[str]:
    """What the end of a multirun prints: where its jobs are and the two commands that
    read them all.

    Examples
    --------
    >>> for line in sweep_lines(Path("/tmp/sw")):
    ...     print(line)
    irsim: sweep in /tmp/sw (one directory per job)
    irsim: its report (every job side by side): irsim report /tmp/sw
    irsim: all rows of every job in one dataset: irsim collect /tmp/sw
    """
    return [f"irsim: sweep in {sweep} (one directory per job)",
            f"irsim: its report (every job side by side): irsim report {sweep}",
            f"irsim: all rows of every job in one dataset: irsim collect {sweep}"]


def _run_names_hint(err: BaseException, cfg: DictConfig) -> str:
    """For an unknown system of TREC run files (``irsim compare <tag> ...``): how the runs
    are named and the key that names them the other way; else ''."""
    col = cfg.get("collection")
    if col is None or col.get("kind") != "trec" or "unknown system" not in str(err):
        return ""
    rule = str(col.get("run_names") or "file")
    other = "tag" if rule == "file" else "file"
    return (f" (runs are named by {'file name' if rule == 'file' else 'tag'}; "
            f"collection.run_names={other} names them by {other})")


#: What Hydra writes into a run directory before irsim runs (``.hydra/`` and the log).
_HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def _discard_fresh_run_dir(run_dir: Path) -> None:
    """After bad input: a run directory holding only what Hydra wrote for this run
    (``.hydra/`` with its three files and the log) is removed, so that a refused run leaves
    nothing behind; a directory with anything else (an earlier run's results, a user's
    files) is left as it is."""
    try:
        entries = {p.name for p in run_dir.iterdir()}
        hydra_dir = run_dir / ".hydra"
        if entries - {".hydra", "cli.log"} or not hydra_dir.is_dir() or \
                {p.name for p in hydra_dir.iterdir()} - set(_HYDRA_FILES):
            return
        for handler in list(logging.getLogger().handlers):  # release the log file
            if isinstance(handler, logging.FileHandler) and \
                    Path(handler.baseFilename).parent == run_dir:
                logging.getLogger().removeHandler(handler)
                handler.close()
        for name in _HYDRA_FILES:
            (hydra_dir / name).unlink(missing_ok=True)
        hydra_dir.rmdir()
        (run_dir / "cli.log").unlink(missing_ok=True)
        run_dir.rmdir()
    except OSError:  # anything unexpected: leave the directory as it is
        return


def _print_headline(name: str, tables: dict) -> None:
    """The run's answer on stdout: its summary tables, a few lines each
    (:func:`irsim.report.headline_text`); report.md and results/ hold the rest."""
    from irsim.report import headline_text

    text = headline_text(name, tables)
    if text:
        print(text, flush=True)


def _ray_error(err: BaseException, cfg: DictConfig) -> str | None:
    """One line for an error of Ray's that is the user's to fix (authentication, no
    cluster); None for anything else."""
    module = type(err).__module__ or ""
    if not module.startswith("ray"):
        return None
    from irsim.runner import auth_message

    address = cfg.engine.get("address") if "engine" in cfg else None
    if type(err).__name__ == "AuthenticationError":
        return auth_message(address, err)
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    if isinstance(err, ConnectionError | TimeoutError):
        where = f"engine.address={address!r}" if address else "Ray"
        return f"{where}: cannot reach the Ray cluster ({first})"
    return None


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``, a scheduler's time limit) ends irsim as Ctrl-C
    does: a run prints one line with the command that resumes it and exits with code 2. A
    second SIGTERM ends the process at once. The previous handler is restored after the
    block (``main`` called in-process, e.g. by the tests, leaves no handler behind); off the
    main thread nothing changes (signals are delivered to the main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``irsim`` (SIGTERM is handled as Ctrl-C)."""
    with _sigterm_as_interrupt():
        _main(argv)


def _main(argv: list[str] | None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    _STATE.force, _STATE.sweep = "--force" in argv, None
    argv = [a for a in argv if a != "--force"]
    prog = "irsim"
    if argv and argv[0] in SUBCOMMANDS:
        cmd, rest = argv[0], argv[1:]
        try:
            if cmd == "list":
                from irsim.catalog import print_catalog

                print_catalog(rest)
                return
            if cmd == "show":
                from irsim.catalog import show_command

                show_command(rest)
                return
            if cmd == "report":
                from irsim.report import report_command

                report_command(rest)
                return
            if cmd == "collect":
                from irsim.collect import collect_command

                collect_command(rest)
                return
        except IrsimError as err:
            _fail(err)
        except BrokenPipeError:  # `irsim show x | head`: the reader has what it wanted
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(0) from None
        except OSError as err:
            _fail(f"{err.filename or cmd}: {err.strerror or err}")
        except KeyboardInterrupt:
            _fail("interrupted")
        except Exception as err:  # noqa: BLE001 - a bug: one line, not a traceback
            _fail(f"internal error: {type(err).__name__}: {err} (please report it)", code=1)
        argv = [*rest, "command=evaluate"]  # the one left: evaluate
        prog = "irsim evaluate"
    elif argv and (name := _study_command(argv[0])) is not None:
        if any(a in ("--help", "-h") for a in argv[1:]):  # its own short help, not Hydra's
            print(command_help(name))
            return
        argv, prog = command_overrides(name, argv[1:]), f"irsim {name}"
    informational = any(a in ("--help", "-h", "--hydra-help", "--info", "--cfg", "-c")
                        for a in argv)
    if not any(a in ("--help", "-h", "--hydra-help") for a in argv):
        from irsim.runner import promote_overrides

        argv = promote_overrides(argv)  # experiment.alpha=0.05: a list of one (typed lists)
    try:
        _run_hydra(argv, prog, informational)
    except IrsimError as err:
        _fail(err)
    except KeyboardInterrupt:
        _fail("interrupted")


def _run_hydra(argv: list[str], prog: str, informational: bool) -> None:
    """Check the overrides (:mod:`irsim.overrides`), make the run or sweep directory explicit
    and lock it (:mod:`irsim.dirs`), then run Hydra's entry point; a multirun ends by naming
    its folder and the commands that read it."""
    from irsim.conf import register
    from irsim.dirs import explicit_run_dir, explicit_sweep_dir, lock_sweep_dir, own_directory
    from irsim.overrides import precheck

    jobs = None if informational else precheck(argv)
    register()
    with ExitStack() as stack:
        if jobs:  # Hydra's default directory, or one given by an interpolation
            argv = own_directory(stack, argv, jobs[0])
        sys.argv = [prog, *argv]
        explicit = None if informational else explicit_run_dir(argv)
        sweep = None if informational else explicit_sweep_dir(argv)
        if sweep is not None:
            lock_sweep_dir(stack, sweep, argv)
        if explicit is not None:
            from irsim.engine.checkpoint import run_dir_lock
            from irsim.rundir import check_claimable, check_writable
            from irsim.runner import check_run_dir

            # taken before Hydra writes .hydra/ into the directory, so that a second run
            # into a busy directory (or a run into a foreign one) changes nothing there
            check_run_dir(explicit)  # a file, a dangling symlink
            stack.enter_context(run_dir_lock(explicit))
            check_claimable(explicit)  # a foreign directory: refused, unchanged
            check_writable(explicit)  # before Hydra and before any computation
        _hydra_entry()
    if _STATE.sweep is not None:  # a multirun's end: its folder and what reads it
        print("\n".join(sweep_lines(_STATE.sweep)), file=sys.stderr)


if __name__ == "__main__":
    main()
