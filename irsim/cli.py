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
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from irsim.errors import IrsimError

__all__ = ["main"]

log = logging.getLogger("irsim")

#: ``--force``: recompute a run directory that already holds this run's finished results.
_FORCE = False
#: The sweep directory of the multirun under way (set by its jobs; named when it ends).
_SWEEP: Path | None = None

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
        global _SWEEP
        _SWEEP = Path(hc.sweep.dir).absolute()
    try:
        if cfg.get("command", "run") == "evaluate":
            evaluate_command(cfg, run_dir)
        else:
            # the jobs of a multirun share one Ray instance instead of starting one each
            tables = run(cfg, run_dir, keep_ray=multirun, force=_FORCE)
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


def _config_names(group: str) -> list[str]:
    import importlib.resources as resources

    if group == "engine":  # typed: irsim.engine.config
        from irsim.engine.config import ENGINES

        return sorted(ENGINES)
    root = resources.files("irsim.conf") / group
    names = {e.name[:-5] for e in root.iterdir() if e.name.endswith(".yaml")}
    if group == "experiment":  # experiments are structured configs; presets are YAML
        from irsim.experiments import names as study_names

        names |= set(study_names())
    return sorted(names)


def _stored_group(path: str) -> list[str] | None:
    """The options of the config group `path` that a study stores in Hydra's ConfigStore
    (``experiment/design``: test_errors' designs, :func:`irsim.conf.store`), None when
    `path` is not such a group."""
    from hydra.core.config_store import ConfigStore

    from irsim.conf import register

    if "/" not in path or not path.startswith("experiment/"):
        return None
    register()
    node: object = ConfigStore.instance().repo
    for part in path.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return None
    return sorted(name.removesuffix(".yaml") for name in node)


def _precheck_one(overrides: list[str]) -> DictConfig:
    """Compose the config of one run (a single run, or one job of a sweep) before Hydra
    does, so that a bad override gives one line and exit code 2 (Hydra would print several
    lines and exit 1); interpolations are resolved too (``${oc.env:X}`` of an unset
    variable, an unknown resolver)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from irsim.conf import choice_error
    from irsim.errors import unknown_name

    plain = [a for a in overrides if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    hydra_args = [a for a in overrides if a not in plain]
    for arg in plain:
        key, sep, value = arg.partition("=")
        group = key.lstrip("+~")
        if sep and group in ("collection", "experiment", "engine"):
            names = _config_names(group)
            if value not in names:
                _fail(unknown_name(group, value, names))
        options = _stored_group(group.replace(".", "/")) if sep else None
        if options is not None and "/" in group:  # a study's config group: experiment/design
            if value not in options:
                _fail(unknown_name(group, value, options))
        elif options is not None:  # experiment.design=x: the group's old spelling, a key
            head, _, field = group.rpartition(".")
            _fail(f"config: {group}={value}: {field} is a config group: select it with "
                  f"{head}/{field}={value} (its own parameters: {group}.<key>)")
    try:
        from irsim.runner import compose_config

        cfg = compose_config(plain)
        if hydra_args:  # Hydra's own keys: checked too (Hydra would print a traceback)
            compose_config([*plain, *hydra_args], hydra=True)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [str(err)]
        message = lines[0]
        if message.startswith("Could not override") and len(lines) > 1:
            key = message.split("'")[1] if "'" in message else "?"
            _fail(_unknown_key(plain, key))
        cause = err.__cause__
        if message.startswith("Error parsing override") and any(c in message for c in "()"):
            _, _, bad = message.partition("'")
            key = bad.partition("=")[0] or "key"
            _fail(f"config: {message}: quote a value with parentheses, e.g. "
                  f"'{key}=\"AP(rel=2)\"' (in a list: '{key}=[\"AP(rel=2)\"]')")
        choice = choice_error(cause)
        if choice is not None:
            _fail(choice)
        if message.startswith("Error merging override") and cause is not None:
            arg = message.removeprefix("Error merging override").strip()
            first = str(cause).splitlines()[0].strip()
            message = f"{arg.partition('=')[0]}: {first}"
        _fail(f"config: {message}")
    _check_composed(cfg, plain)
    return cfg


def _check_composed(cfg: DictConfig, plain: list[str]) -> None:
    """The checks of a composed config: the seed, keys added with ``+``, interpolations."""
    from omegaconf.errors import OmegaConfBaseException

    from irsim.runner import check_keys, check_seed

    try:
        check_seed(cfg.get("seed"))
        check_keys(cfg)  # a key added with +: refused by OmegaConf (irsim.conf.check_keys)
    except IrsimError as err:
        _fail(err)
    except OmegaConfBaseException:
        pass  # an interpolation that does not resolve: said below
    if not any("${hydra:" in a for a in plain):  # Hydra's resolver: set when it runs
        from omegaconf import OmegaConf

        try:
            OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as err:
            first = ([ln.strip() for ln in str(err).splitlines() if ln.strip()] or
                     [type(err).__name__])[0]
            key = getattr(err, "full_key", None)
            _fail(f"config: {key + ': ' if key else ''}cannot resolve an interpolation "
                  f"({first})")


def _precheck(overrides: list[str]) -> list[list[str]] | None:
    """Check a command line's overrides before Hydra runs anything (:func:`_precheck_one`);
    for a sweep (``-m``), the overrides of its jobs, enough of them that every swept value
    is composed once (a bad value in any job is one line and exit code 2, before Hydra
    writes ``multirun.yaml``). Returns the jobs checked (one for a single run), or None
    when the command line holds other Hydra flags or another sweeper (Hydra checks it)."""
    multirun = any(a in ("-m", "--multirun") for a in overrides)
    args = [a for a in overrides if a not in ("-m", "--multirun")]
    if any(a.startswith("-") for a in args):
        return None  # Hydra flags: Hydra validates the jobs itself
    if not multirun:
        _precheck_one(args)
        return [args]
    if any(a.lstrip("+~").startswith(("hydra/sweeper", "hydra/launcher")) for a in args):
        return None  # another sweeper's syntax
    jobs = _sweep_jobs(args)
    first = _precheck_one(jobs[0])
    for job in jobs[1:]:
        changed = [o for o in job if o not in jobs[0]]
        if not _set_values(first, changed, job):  # a group or a new key: composed
            _precheck_one(job)
    return jobs


def _set_values(cfg: DictConfig, changed: list[str], job: list[str]) -> bool:
    """Check a sweep job that differs from the composed `cfg` only in values of existing
    keys, by setting them on a copy of `cfg` (the typed nodes convert or refuse each value,
    as Hydra's compose would, at a fraction of its cost); False when a change is not such a
    value (a config group, ``+``/``~`` keys, ``hydra.*``): the job is composed instead."""
    import copy

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    parsed = []
    for item in changed:
        if item.startswith(("+", "~")) or item.startswith(("hydra.", "hydra/")):
            return False
        try:
            override = OverridesParser.create().parse_override(item)
        except HydraException:
            return False
        key = override.key_or_group
        if "/" in key or not _is_value(cfg, key):
            return False  # a config group, a mapping or a new key: composed
        parsed.append((key, override.value()))
    copy_ = copy.deepcopy(cfg)
    for key, value in parsed:
        try:
            OmegaConf.update(copy_, key, value, merge=False)
        except OmegaConfBaseException as err:
            first = ([ln.strip() for ln in str(err).splitlines() if ln.strip()] or
                     [type(err).__name__])[0]
            _fail(f"config: {key}: {first}")
    _check_composed(copy_, [a for a in job if not a.startswith(("hydra.", "hydra/"))])
    return True


def _sweep_jobs(args: list[str]) -> list[list[str]]:
    """The jobs of a sweep (Hydra's basic sweeper) that together hold every swept value
    (the first job, then each job with a value not seen yet: at most one job per value);
    a sweep that does not parse is one line (exit code 2).

    Examples
    --------
    >>> _sweep_jobs(["experiment.B=100,200", "seed=1,2,3"])  # doctest: +NORMALIZE_WHITESPACE
    [['experiment.B=100', 'seed=1'], ['experiment.B=100', 'seed=2'],
     ['experiment.B=100', 'seed=3'], ['experiment.B=200', 'seed=1']]
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(args)
        batches = BasicSweeper.split_arguments(parsed, None)
    except HydraException as err:
        lines = [ln.strip() for ln in str(err).splitlines()
                 if ln.strip() and not ln.strip().startswith("See https")]
        detail = lines[1] if len(lines) > 1 else ""
        detail = detail.split(": ", 1)[-1] if detail.startswith("ValueError") else detail
        _fail(f"config: {lines[0] if lines else err}" + (f": {detail}" if detail else ""))
    seen: set[str] = set()
    jobs = []
    for batch in batches:
        for job in batch:
            if not jobs or set(job) - seen:
                jobs.append(list(job))
                seen |= set(job)
    return jobs


def _is_value(cfg: DictConfig, key: str) -> bool:
    """Whether `key` names an existing value (not a mapping) of `cfg`."""
    from omegaconf import OmegaConf

    head, _, last = key.rpartition(".")
    try:
        parent = OmegaConf.select(cfg, head, throw_on_missing=False) if head else cfg
        if not OmegaConf.is_dict(parent) or last not in parent:
            return False
        return not OmegaConf.is_dict(parent._get_node(last))
    except Exception:  # noqa: BLE001 - anything unusual: composed instead
        return False


def _explicit_run_dir(argv: list[str]) -> Path | None:
    """The ``hydra.run.dir=...`` of a single run's command line (None: Hydra's default, an
    interpolation, or a sweep)."""
    if any(a in ("-m", "--multirun") for a in argv):
        return None
    for arg in reversed(argv):
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+~") == "hydra.run.dir":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return None if (not value or "${" in value) else Path(value)
    return None


def _explicit_sweep_dir(argv: list[str]) -> Path | None:
    """The ``hydra.sweep.dir=...`` of a sweep's command line (None: not a sweep, Hydra's
    default, or an interpolation)."""
    if not any(a in ("-m", "--multirun") for a in argv):
        return None
    for arg in reversed(argv):
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+~") == "hydra.sweep.dir":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return None if (not value or "${" in value) else Path(value)
    return None


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


def _own_directory(stack: ExitStack, argv: list[str], job: list[str]) -> list[str]:
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
        _fail(err)
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
    _fail(f"{base}: no free directory beside it (tried {base.name}-1 to {base.name}-999): "
          f"give {key}")
    return argv


def _lock_sweep_dir(stack: ExitStack, sweep: Path, argv: list[str]) -> None:
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
            _fail(err)
        _fail(f"{sweep}: sweep directory in use by another irsim sweep (wait for it or choose "
              f"another hydra.sweep.dir)")
    try:
        check_sweep_dir(sweep, sweep_task(argv))
    except IrsimError as err:
        _fail(err)


def _unknown_key(overrides: list[str], key: str) -> str:
    """Hydra refused to set `key`, which its typed node does not declare: the message of
    :func:`irsim.conf.unknown_key` on the config composed without it."""
    from irsim.conf import unknown_key
    from irsim.runner import compose_config

    rest = [a for a in overrides if a.lstrip("+~").partition("=")[0] != key]
    try:
        return str(unknown_key(compose_config(rest), key))
    except Exception:  # noqa: BLE001 - the rest does not compose either: the key alone
        return f"config: unknown config key {key!r}"


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
    global _FORCE, _SWEEP
    _SWEEP = None
    argv = list(sys.argv[1:] if argv is None else argv)
    _FORCE = "--force" in argv
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
        jobs = None if informational else _precheck(argv)
        from irsim.conf import register

        register()
        with ExitStack() as stack:
            if jobs:  # Hydra's default directory, or one given by an interpolation
                argv = _own_directory(stack, argv, jobs[0])
            sys.argv = [prog, *argv]
            explicit = None if informational else _explicit_run_dir(argv)
            sweep = None if informational else _explicit_sweep_dir(argv)
            if sweep is not None:
                _lock_sweep_dir(stack, sweep, argv)
            if explicit is not None:
                from irsim.engine.checkpoint import run_dir_lock
                from irsim.rundir import check_claimable, check_writable
                from irsim.runner import check_run_dir

                # taken before Hydra writes .hydra/ into the directory, so that a second run
                # into a busy directory (or a run into a foreign one) changes nothing there
                try:
                    check_run_dir(explicit)  # a file, a dangling symlink
                    stack.enter_context(run_dir_lock(explicit))
                    check_claimable(explicit)  # a foreign directory: refused, unchanged
                    check_writable(explicit)  # before Hydra and before any computation
                except IrsimError as err:
                    _fail(err)
            _hydra_entry()
        if _SWEEP is not None:  # a multirun's end: its folder and what reads it
            print("\n".join(sweep_lines(_SWEEP)), file=sys.stderr)
    except KeyboardInterrupt:
        _fail("interrupted")


if __name__ == "__main__":
    main()
