"""SIGTERM (``kill``, a scheduler's time limit) ends a run as Ctrl-C does: one line on stderr
with the command that resumes it, exit code 2, the finished shards kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGTERM is a POSIX signal")
def test_sigterm_prints_the_resume_command(tmp_path):
    run_dir = tmp_path / "run"
    # 480 shards of 250 resamples: still computing when the signal arrives on a busy machine
    proc = subprocess.Popen(
        [sys.executable, "-m", "irsim", "collection=synthetic_scores",
         "collection.systems=30", "experiment=discpower", "experiment.B=120000",
         "engine.shard_replicates=250", "experiment.estimated_diff=false",
         "experiment.tests=[paired_bootstrap]", "quiet=true", f"hydra.run.dir={run_dir}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while len(list((run_dir / "checkpoints").rglob("*.npz"))) < 2:  # shards saved
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no shard was saved within 120 s"
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before SIGTERM: make it longer"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err[-2000:]
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    assert lines == [f"irsim: error: interrupted; finished shards are saved: rerun the same "
                     f"command with hydra.run.dir={run_dir} to resume"], err[-2000:]
    assert list((run_dir / "checkpoints").rglob("*.npz"))  # what a rerun resumes from
