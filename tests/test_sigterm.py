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
    proc = subprocess.Popen(
        [sys.executable, "-m", "irsim", "collection=synthetic_scores",
         "collection.systems=30", "experiment=discpower", "experiment.B=20000",
         f"hydra.run.dir={run_dir}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "checkpoints").is_dir():  # the engine has started
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the run did not start within 120 s"
            time.sleep(0.1)
        time.sleep(0.5)
        assert proc.poll() is None, "the run ended before SIGTERM: make it longer"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err[-2000:]
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    assert lines[-1] == (f"irsim: error: interrupted; finished shards are saved: rerun the "
                         f"same command with hydra.run.dir={run_dir} to resume"), err[-2000:]
    assert sum(ln.startswith("irsim:") for ln in lines) == 1, err[-2000:]
    assert "Traceback" not in err
    assert (run_dir / "checkpoints").is_dir()  # what a rerun resumes from
