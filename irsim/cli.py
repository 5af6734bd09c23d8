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


def _fail(err: BaseException) -> None:
    print(f"irsim: error: {err}", file=sys.stderr)
    raise SystemExit(2)


@hydra.main(version_base="1.3", config_path="pkg://irsim.conf", config_name="config")
def _hydra_entry(cfg: DictConfig) -> None:
    from irsim.runner import evaluate_command, run

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
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
    sys.argv = [prog, *argv]
    _hydra_entry()


if __name__ == "__main__":
    main()
