"""Issue 46's guards: resamples too few for the significance level (the one B * alpha >= 1
rule, in every study whose tests resample), scores too small for double precision,
memory estimated before anything is allocated, Ray under a virtual-memory limit, and the
assessors study's cost in the number of qrels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, dl19_files, urbano_matrix
from scipy import stats as sps

import irsim
from irsim.errors import ConfigError


# ------------------------------------------------------------ B * alpha >= 1 everywhere
@pytest.fixture(scope="module")
def adhoc8():
    return urbano_matrix("adhoc8_ap", "AP", systems=8)


def test_compare_with_one_resample_is_refused_and_enough_gives_the_scipy_p(adhoc8):
    """compare B=1 called every pair significant (randomisation p_adjusted = 0, a pair with
    t p = .108 among them): refused by the rule; B = 1/alpha is accepted and the t row is
    scipy's."""
    pair = dict(systems=["run1", "run2"], tests=["t", "randomisation"], correction="none")
    with pytest.raises(ConfigError, match=r"B=1 is too small for "
                                          r"alpha=0.05.*B >= 20 \(B \* alpha >= 1\)"):
        irsim.compare(adhoc8, B=1, **pair)
    with pytest.raises(ConfigError, match=r"B=19 is too small"):
        irsim.compare(adhoc8, B=19, **pair)
    out = irsim.compare(adhoc8, B=20, **pair).to_pandas("comparison")
    x = adhoc8.values[0]
    want = sps.ttest_rel(x[0], x[1]).pvalue
    np.testing.assert_allclose(out[out.test == "t"].p_value.iloc[0], want, rtol=1e-12)
    # without a Monte Carlo test B is not used: B=1 is fine
    t_only = irsim.compare(adhoc8, B=1, **{**pair, "tests": ["t"]}).to_pandas("comparison")
    np.testing.assert_allclose(t_only.p_value.iloc[0], want, rtol=1e-12)


@pytest.mark.parametrize("study,kw,message", [
    ("multiple_testing", dict(B=10, alpha=[0.05], sizes=[10], systems=[3], trials=10),
     r"B=10 is too small for alpha=0.05"),
    ("error_rates", dict(test_B=10, tests=["t", "randomisation"]),
     r"test_B=10 is too small for full_alpha=0.05"),
    ("error_rates", dict(test_B=50, tests=["randomisation"]),
     r"test_B=50 is too small for windows \(smallest edge or width\)"
     r"=0.01.*B >= 100"),
])
def test_every_resampling_study_applies_the_rule(adhoc8, study, kw, message):
    with pytest.raises(ConfigError, match=message):
        getattr(irsim, study)(adhoc8, **kw)


def test_resampling_studies_without_monte_carlo_tests_take_any_B(adhoc8):
    """The rule binds only a Monte Carlo test: error_rates with t alone and test_B=1 runs
    (and its full-set t decisions are scipy's)."""
    res = irsim.error_rates(adhoc8, test_B=1, tests=["t"], subset_sizes=[5], trials=2,
                            sampling=["disjoint"])
    assert res.tables


def test_assessors_test_B_follows_the_rule():
    runs, qrels = dl19_files(("bm25base_p", "ICT-BERT2", "TUW19-p3-f"), ("nist", "andrew-parry"))
    with pytest.raises(ConfigError, match=r"test_B=10 is too small for "
                                          r"alpha=0.05"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", test_B=10,
                        tests=["t", "randomisation"])


# ------------------------------------------------------------ the command line's one line
def refused(args, tmp_path, capsys) -> str:
    """Run the CLI on `args`; assert exit 2, one line without a traceback and nothing
    written in the run directory; return the line."""
    from irsim.cli import main

    run_dir = tmp_path / "run"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*args, "quiet=true", f"hydra.run.dir={run_dir}"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert exc.value.code == 2, err
    assert len(lines) == 1 and lines[0].startswith("irsim: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert not (run_dir / "results").exists() and not (run_dir / "manifest.json").exists()
    return lines[0]


# ------------------------------------------------------------ underflow
def test_scores_too_small_for_double_precision_are_refused(adhoc8):
    """Scores times 1e-155 changed sensitivity (.57/.71 became 1.0/1.0); at 1e-310 the t
    test gave 1.0 and the bootstrap 0.0. A system whose scores are all below 1e-100 is
    refused, naming it and its metric."""
    from irsim.data.matrix import ScoreMatrix
    from irsim.errors import InputError

    for factor in (1e-155, 1e-310):
        with pytest.raises(InputError, match=r"tiny.csv: scores of system 'run1' for metric "
                                             r"'AP' are all below 1e-100.*rescale"):
            ScoreMatrix(adhoc8.values * factor, adhoc8.metrics, adhoc8.systems,
                        adhoc8.topics, source="tiny.csv")
    # the Python door's data frame goes through the same check
    frame = pd.DataFrame(adhoc8.values[0].T * 1e-155, columns=list(adhoc8.systems))
    with pytest.raises(InputError, match=r"system 'run1' for metric 'AP' are all below"):
        irsim.compare(frame, metric="AP", B=1000)
    # 1e-50 is accepted, and the t test is scale-free: scipy's p on the unscaled scores
    small = ScoreMatrix(adhoc8.values * 1e-50, adhoc8.metrics, adhoc8.systems, adhoc8.topics)
    x = adhoc8.values[0]
    out = irsim.compare(small, systems=["run1", "run2"], tests=["t"]).to_pandas("comparison")
    np.testing.assert_allclose(out.p_value.iloc[0], sps.ttest_rel(x[0], x[1]).pvalue,
                               rtol=1e-10)
    # a single tiny score (RBP of a document at rank 1000) among ordinary ones is fine
    v = adhoc8.values.copy()
    v[0, 0, 0] = 1e-301
    one = ScoreMatrix(v, adhoc8.metrics, adhoc8.systems, adhoc8.topics)
    out = irsim.compare(one, systems=["run1", "run2"], tests=["t"]).to_pandas("comparison")
    np.testing.assert_allclose(out.p_value.iloc[0], sps.ttest_rel(v[0, 0], v[0, 1]).pvalue,
                               rtol=1e-10)


def test_a_tiny_score_file_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "tiny.csv"
    pd.read_csv(SHARED_DATA / "urbano" / "adhoc8_ap.csv").iloc[:, :5].mul(1e-155).to_csv(
        path, index=False)
    line = refused(["collection=matrix", f"collection.path={path}", "collection.metric=AP"],
                   tmp_path, capsys)
    assert "tiny.csv" in line and "'run1'" in line and "below 1e-100" in line, line


# ------------------------------------------------------------ memory, estimated first
GIB = r"would need about [0-9.]+ GiB of memory, over the 2 GiB budget: lower "


@pytest.mark.parametrize("study,kw,knob", [
    ("test_errors", dict(trials=10**9, sizes=[10]), "trials"),
    ("test_errors", dict(trials=10, sizes=[10**8]), "trials or sizes"),
    ("error_rates", dict(trials=10**9), "trials"),
    ("reliability", dict(B=10**9), "B or check_trials"),
    ("coverage", dict(B=10**9), "B or sizes"),
])
def test_matrix_studies_refuse_before_allocating(adhoc8, study, kw, knob):
    """Each ended "internal error: MemoryError" (issue 46): now one ConfigError naming the
    estimate and the knob, raised by make before the engine allocates anything."""
    import resource
    import time

    start, peak = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConfigError, match=GIB + knob):
        getattr(irsim, study)(adhoc8, **kw)
    assert time.perf_counter() - start < 30
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak  # KiB
    assert grown < 500_000, grown


@pytest.mark.parametrize("study,kw,knob", [
    ("effort", dict(trials=10**9, subset_sizes=[5]), "trials"),
    ("corpus_ci", dict(B=10**9), "B"),
])
def test_document_studies_refuse_before_allocating(study, kw, knob):
    from irsim.data.synthetic import synthetic_trec

    runs, qrels = synthetic_trec(runs=4, topics=10, docs_per_topic=100, depth=50, seed=1)
    with pytest.raises(ConfigError, match=GIB + knob):
        getattr(irsim, study)(runs=runs, qrels=qrels, **kw)


def test_assessors_refuse_B_before_allocating():
    runs, qrels = dl19_files(("bm25base_p", "ICT-BERT2", "TUW19-p3-f"), ("nist", "andrew-parry"))
    with pytest.raises(ConfigError, match=GIB + "B, test_B or simulate_trials"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", B=10**9, tests=["t"])


def test_a_synthetic_collection_too_large_is_refused():
    from irsim.data.synthetic import synthetic_trec

    with pytest.raises(ConfigError, match=r"100000 runs x 50 topics x 1000 documents.*"
                                          r"111.8 GiB.*lower collection.runs"):
        synthetic_trec(runs=100_000, topics=50, docs_per_topic=1000, depth=1000)
    runs, _ = synthetic_trec(runs=3, topics=2, docs_per_topic=50, depth=10, seed=1)
    assert len(runs.names) == 3


def test_cli_memory_refusals_are_one_line(tmp_path, capsys):
    line = refused(["experiment=test_errors", "collection=matrix",
                    f"collection.path={SHARED_DATA / 'urbano' / 'adhoc8_ap.csv'}",
                    "collection.metric=AP", "experiment.trials=1000000000"], tmp_path, capsys)
    assert "GiB of memory" in line and "experiment.trials" in line, line
    line = refused(["experiment=discpower", "collection=synthetic",
                    "collection.runs=100000"], tmp_path, capsys)
    assert "GiB of memory" in line and "collection.runs" in line, line
    path = tmp_path / "m.csv"
    path.write_text("a,b\n0.1,0.2\n0.3,0.4\n")
    line = refused(["collection=matrix", f"collection.path={path}",
                    "collection.metric=" + "A" * 100_000], tmp_path, capsys)
    assert "a metric name of 100,000 characters" in line and "m.csv" in line, line


# ------------------------------------------------------------ Ray under a memory limit
def _irsim_under_limit(limit: int, run_dir, *extra: str):
    import resource
    import subprocess
    import sys

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cmd = [sys.executable, "-m", "irsim", "experiment.B=200", "metrics=[AP]", "quiet=true",
           f"hydra.run.dir={run_dir}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=cap)


@pytest.mark.ray
def test_ray_under_a_virtual_memory_limit(tmp_path):
    """`ulimit -v 8 GiB`: Ray's default object store (30% of the memory) cannot be mapped and
    Ray used to die without a word; irsim caps the store to fit and the run gives the tables
    of engine=local. Below 2 GiB: one line naming the limit and the fix, exit 2."""
    import pyarrow.parquet as pq

    r = _irsim_under_limit(8 * 2**30, tmp_path / "ray", "engine=ray", "engine.workers=2")
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    assert "object store is capped" in r.stdout + r.stderr
    local = _irsim_under_limit(8 * 2**30, tmp_path / "local", "engine=local")
    assert local.returncode == 0, local.stderr[-2000:]
    for name in ("asl", "discpower"):
        got = pq.read_table(tmp_path / "ray" / "results" / f"{name}.parquet")
        assert got.equals(pq.read_table(tmp_path / "local" / "results" / f"{name}.parquet"))
    small = _irsim_under_limit(2**30, tmp_path / "small", "engine=ray")
    assert small.returncode == 2
    err = [ln for ln in small.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "virtual-memory limit of 1.00 GiB" in err[0], small.stderr
    assert "engine=local" in err[0]


def test_python_door_checks_the_cluster_address_before_joining():
    """The Python door takes ``address=`` and makes the command line's driver checks
    (irsim.engine.reach): an address nobody answers is one ConfigError within seconds,
    before Ray starts; ``address`` without engine='ray' is refused."""
    import time

    import irsim
    from irsim.data.synthetic import synthetic_scores
    from irsim.errors import ConfigError

    m = synthetic_scores(systems=4, topics=10, seed=1).matrix
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"address='127\.0\.0\.1:1': no Ray cluster reachable"):
        irsim.discpower(m, B=100, tests=["t"], engine="ray", address="127.0.0.1:1")
    assert time.monotonic() - start < 15
    with pytest.raises(ConfigError, match="address needs engine='ray'"):
        irsim.discpower(m, B=100, tests=["t"], address="127.0.0.1:1")
