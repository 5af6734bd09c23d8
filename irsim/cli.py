"""Command line: ``irsim [overrides]`` runs a study (Hydra); subcommands ``evaluate``,
``report``, ``list``.

Bad input ends with one line on stderr and exit code 2.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from irsim.errors import IrsimError

__all__ = ["main"]

log = logging.getLogger("irsim")

SUBCOMMANDS = {
    "evaluate": "per-topic scores of TREC runs (like trec_eval -q) as Parquet",
    "report": "rebuild report.md and plots of a run directory: irsim report <run dir>",
    "list": "list experiments, collections, metrics, tests and CI methods",
    "collect": "merge a sweep's tables into one partitioned Parquet dataset: "
               "irsim collect <sweep dir> [<out dir>]",
}


def _fail(err: BaseException | str) -> None:
    print(f"irsim: error: {err}", file=sys.stderr)
    raise SystemExit(2)


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
    try:
        if cfg.get("command", "run") == "evaluate":
            evaluate_command(cfg, run_dir)
        else:
            # the jobs of a multirun share one Ray instance instead of starting one each
            run(cfg, run_dir, keep_ray=hc.mode == RunMode.MULTIRUN)
    except IrsimError as err:
        _fail(err)
    if not cfg.get("quiet", False):
        print(f"irsim: results in {run_dir}", file=sys.stderr)


def _config_names(group: str) -> list[str]:
    import importlib.resources as resources

    root = resources.files("irsim.conf") / group
    names = {e.name[:-5] for e in root.iterdir() if e.name.endswith(".yaml")}
    if group == "experiment":  # experiments are structured configs; presets are YAML
        from irsim.experiments import experiment_names

        names |= set(experiment_names())
    return sorted(names)


def _precheck(overrides: list[str]) -> None:
    """Compose the config of a single run before Hydra does, so that a bad override gives
    one line and exit code 2 (Hydra would print several lines and exit 1)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from irsim.errors import unknown_name

    if any(a in ("-m", "--multirun") or a.startswith("-") for a in overrides):
        return  # sweeps and Hydra flags: Hydra validates each job itself
    plain = [a for a in overrides if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    for arg in plain:
        key, sep, value = arg.partition("=")
        group = key.lstrip("+~")
        if sep and group in ("collection", "experiment", "engine"):
            names = _config_names(group)
            if value not in names:
                _fail(unknown_name(group, value, names))
    try:
        from irsim.runner import compose_config

        compose_config(plain)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [str(err)]
        message = lines[0]
        if message.startswith("Could not override") and len(lines) > 1:
            key = message.split("'")[1] if "'" in message else "?"
            _fail(_unknown_key(plain, key))
        cause = err.__cause__
        if message.startswith("Error merging override") and cause is not None:
            arg = message.removeprefix("Error merging override").strip()
            first = str(cause).splitlines()[0].strip()
            message = f"{arg.partition('=')[0]}: {first}"
        _fail(f"config: {message}")


def _unknown_key(overrides: list[str], key: str) -> str:
    """The message for an unknown key: the valid keys of its node, closest first."""
    from omegaconf import OmegaConf

    from irsim.errors import unknown_name
    from irsim.runner import compose_config

    node, _, leaf = key.rpartition(".")
    rest = [a for a in overrides if a.lstrip("+~").partition("=")[0] != key]
    try:
        cfg = compose_config(rest)
        parent = OmegaConf.select(cfg, node) if node else cfg
        valid = [f"{node}.{k}" if node else str(k) for k in parent.keys()]
    except Exception:  # the rest does not compose either: report the key alone
        return f"config: unknown config key {key!r}"
    what = f"parameter of experiment={cfg.experiment.name}" if node == "experiment" else \
        "config key"
    return str(unknown_name(what, key, valid))


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``irsim``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "irsim"
    if argv and argv[0] in SUBCOMMANDS:
        cmd, rest = argv[0], argv[1:]
        try:
            if cmd == "list":
                from irsim.catalog import print_catalog

                print_catalog(rest)
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
        argv = [*rest, "+command=evaluate"]
        prog = "irsim evaluate"
    if not any(a in ("--help", "-h", "--hydra-help", "--info", "--cfg", "-c") for a in argv):
        _precheck(argv)
    sys.argv = [prog, *argv]
    from irsim.conf import register

    register()
    _hydra_entry()


if __name__ == "__main__":
    main()
