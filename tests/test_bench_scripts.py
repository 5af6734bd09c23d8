"""The bench/ scripts stay importable (they are run by hand, not by the suite; an API change
must not break them silently)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = sorted((Path(__file__).resolve().parents[1] / "bench").glob("bench_*.py"))


def test_every_workload_has_a_script():
    names = {p.stem for p in BENCH}
    assert {"bench_metrics", "bench_stats", "bench_discpower", "bench_swap", "bench_ci",
            "bench_ray", "bench_test_errors"} <= names


@pytest.mark.parametrize("path", BENCH, ids=[p.stem for p in BENCH])
def test_bench_script_imports(path):
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # main() is guarded by __name__ == "__main__"
    assert callable(module.main)


#: Every script at a tiny size (seconds each): what it prints is not checked (its ratios are
#: timings), only that it runs to the end on today's API. A script left out says why.
TINY = {
    "bench_assessors_qrels": ["--sizes", "2", "3", "--quadratic", "3", "--runs", "3", "--B",
                              "20", "--test-B", "100", "--metrics", "AP"],
    "bench_bayes": ["--pairs", "20", "--loop-pairs", "5", "--repeats", "1"],
    "bench_budget": ["--synthetic", "--trials", "50", "--naive-trials", "1", "--budgets",
                     "0.3"],
    "bench_ci": ["--repeats", "1", "--loop-cells", "2", "--loop-lists", "2", "--loop-reps",
                 "2", "--no-local", "--workers", "1"],
    "bench_discpower": ["--repeats", "1", "--loop-pairs", "3", "--B", "200"],
    "bench_driver": ["--B", "200", "--repeats", "1", "--skip-ray"],
    "bench_evaluate_paths": ["--runs", "5", "--topics", "5", "--docs", "50", "--repeats", "1"],
    "bench_factorial": ["--repeats", "1"],
    "bench_fit": ["--metrics", "AP", "--runs", "8", "--profile-pairs", "5", "--threads", "1"],
    "bench_metrics": ["--runs", "5", "--topics", "5", "--docs", "50"],
    "bench_multi_qrels": ["--synthetic", "--runs", "5", "--topics", "5", "--docs", "50",
                          "--qrels", "2", "--repeat", "1"],
    "bench_multiple_testing": ["--trials", "250", "--m", "5", "--n", "25", "--B", "200",
                               "--repeats", "1"],
    "bench_read": ["--runs", "5", "--topics", "5", "--docs", "50", "--repeats", "1",
                   "--big-lines", "1000"],
    "bench_stats": ["--repeats", "1", "--scipy-pairs", "5"],
    "bench_swap": ["--repeats", "1", "--trials", "20", "--naive-trials", "5"],
    "bench_test_errors": ["--runs", "8", "--trials", "250", "--mc-trials", "250", "--B",
                          "1024", "--n", "25", "--loop-trials", "2", "--repeats", "1"],
}
NOT_RUN = {
    "bench_exact": "no size options: minutes at its fixed sizes",
    "bench_ray": "starts a Ray instance at B = 150,000 (minutes)",
    "bench_scale": "its --quick run takes about 2 minutes (its model: tests/test_bench_scale.py)",
    "bench_urbano_power": "fits the preset's pooled AP collections first (minutes)",
}


def test_every_script_is_run_or_says_why():
    assert {p.stem for p in BENCH} == set(TINY) | set(NOT_RUN)


@pytest.mark.slow  # about 2 minutes: every script at a tiny size
@pytest.mark.parametrize("name", sorted(TINY))
def test_bench_script_runs_at_a_tiny_size(name, tmp_path):
    import os
    import subprocess
    import sys

    from conftest import SHARED_DATA, has_data

    if not has_data():
        pytest.skip(f"test data not found at {SHARED_DATA}")
    root = BENCH[0].parents[1]
    env = {**os.environ, "IRSIM_TEST_DATA": str(SHARED_DATA), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(root / "bench" / f"{name}.py"), *TINY[name]],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip(), "the script printed nothing"


#: A stand-in for trec_eval's C binary (its command line and -q output; the values from
#: pytrec_eval, trec_eval's own code): the real binary cannot be installed from PyPI, Debian
#: or npm, so this checks the bench's plumbing, parsing and agreement check.
FAKE_TREC_EVAL = '''
import sys, pytrec_eval
args = sys.argv[1:]
assert args[0] == "-q", args
measures = [args[i + 1] for i in range(1, len(args) - 2, 2)]
qrels_path, run_path = args[-2:]
with open(qrels_path) as f:
    qrel = pytrec_eval.parse_qrel(f)
with open(run_path) as f:
    run = pytrec_eval.parse_run(f)
res = pytrec_eval.RelevanceEvaluator(qrel, set(measures)).evaluate(run)
for topic, values in sorted(res.items()):
    for name, v in sorted(values.items()):
        print(f"{name:<22}\\t{topic}\\t{v:.4f}")
'''


@pytest.mark.slow  # seconds: the evaluate bench with a trec_eval contender
def test_bench_evaluate_paths_times_a_trec_eval_binary(tmp_path):
    import os
    import subprocess
    import sys

    fake = tmp_path / "trec_eval"
    fake.write_text(f"#!{sys.executable}\n{FAKE_TREC_EVAL}")
    fake.chmod(0o755)
    root = BENCH[0].parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root),
                                                        os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(root / "bench" / "bench_evaluate_paths.py"),
                        *TINY["bench_evaluate_paths"], "--trec-eval", str(fake)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "trec_eval / irsim:" in r.stdout
    assert "with trec_eval to its 4 decimals: max |diff|" in r.stdout
    # a stand-in that prints another value fails the agreement check
    fake.write_text(f"#!{sys.executable}\n" + FAKE_TREC_EVAL.replace("{v:.4f}", "{v + 0.01:.4f}"))
    r = subprocess.run([sys.executable, str(root / "bench" / "bench_evaluate_paths.py"),
                        *TINY["bench_evaluate_paths"], "--trec-eval", str(fake)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert r.returncode != 0 and "AssertionError" in r.stderr
