"""Run any irsim experiment on an existing Ray cluster: the entry point for ``ray job submit``.

    ray job submit --address http://HEAD:8265 --working-dir . -- \
        python jobs/irsim_job.py experiment=discpower collection=adhoc8 \
        data_dir=/shared/irsim-data hydra.run.dir=/shared/irsim-runs/adhoc8

Arguments are irsim's (Hydra overrides). ``engine=ray engine.address=auto`` are added unless
given, so the job's shards run on the cluster the job was submitted to (``ray job submit``
sets RAY_ADDRESS for the driver). Put ``hydra.run.dir`` (and ``data_dir``) on storage the
head node can write and you can read.
"""

from __future__ import annotations

import sys


def job_arguments(argv: list[str]) -> list[str]:
    """irsim arguments with engine=ray and engine.address=auto added unless given.

    Examples
    --------
    >>> job_arguments(["experiment.B=2000"])
    ['engine=ray', 'engine.address=auto', 'experiment.B=2000']
    >>> job_arguments(["engine.address=ray://head:10001", "experiment.B=2000"])
    ['engine=ray', 'engine.address=ray://head:10001', 'experiment.B=2000']
    >>> job_arguments(["engine=local"])
    ['engine=local']
    """
    args = list(argv)
    chosen = [a.split("=", 1)[1] for a in args if a.startswith(("engine=", "+engine="))]
    extra = [] if chosen else ["engine=ray"]
    on_ray = not chosen or chosen[-1] == "ray"
    if on_ray and not any(a.startswith(("engine.address=", "+engine.address=")) for a in args):
        extra.append("engine.address=auto")
    return extra + args


def main(argv: list[str] | None = None) -> None:
    """Run irsim with the job's arguments."""
    from irsim.cli import main as irsim_main

    irsim_main(job_arguments(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
