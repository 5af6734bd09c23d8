"""Hardened input: a table of bad inputs across readers, configs and the CLI. Each gives one
clear line naming the problem, exit code 2, no traceback and no results in the run dir."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from conftest import SHARED_DATA

from irsim.cli import main

QRELS = SHARED_DATA / "trec_eval" / "qrels.test"
RUN = SHARED_DATA / "trec_eval" / "results.test"
TOPICS_12 = "topic,s1,s2\n1,0.1,0.2\n2,0.3,0.4\n"
TOPICS_13 = "topic,s1,s2\n1,0.1,0.2\n3,0.3,0.4\n"
LATIN1 = "301 Q0 caf\u00e9 1 1 x\n".encode("latin-1")


def write(tmp, name, text, mode="w"):
    path = tmp / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def matrix_dir(tmp):
    (tmp / "m_dir").mkdir()  # a directory where a file is expected: cannot be read
    return ["collection=matrix", f"collection.path={tmp / 'm_dir'}", "collection.metric=AP"]


def paths_arg(a, b):
    return "collection.paths={AP: " + str(a) + ", RR: " + str(b) + "}"


def run_file(tmp, text):
    return ["evaluate", "collection=trec", f"collection.runs={write(tmp, 'r.run', text)}",
            f"collection.qrels={QRELS}", "metrics=[AP]"]


def matrix_file(tmp, text):
    return ["collection=matrix", f"collection.path={write(tmp, 'm.csv', text)}",
            "collection.metric=AP", "experiment.B=100"]


def corrupt_run_dir(tmp, damage):
    """A finished run directory (B=100) with one file damaged: `damage(run_dir)`."""
    from irsim.runner import compose_config, run

    run_dir = tmp / "done"
    run(compose_config(["experiment.B=100", "quiet=true", "experiment.tests=[paired_bootstrap]"]),
        run_dir)
    damage(run_dir)
    return ["report", str(run_dir)]


def flip_data_page(run_dir):
    """Flip one byte inside asl.parquet's first data page; the footer stays intact."""
    path = run_dir / "results" / "asl.parquet"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 4] ^= 0x01
    path.write_bytes(bytes(raw))


def looping_link(tmp, name):
    """`name` in tmp: a symlink pointing at another that points back."""
    (tmp / f"{name}.other").symlink_to(tmp / name)
    (tmp / name).symlink_to(tmp / f"{name}.other")
    return tmp / name


def broken_link(tmp, name):
    (tmp / name).symlink_to(tmp / "nowhere.txt")
    return tmp / name


_HELD: list[int] = []  # descriptors holding a lock (closed after each test)


def locked(tmp, args):
    """`args` run into tmp/run while another process holds its lock (flock on another open
    file description conflicts exactly as another process's would)."""
    import fcntl
    import os

    (tmp / "run").mkdir()
    fd = os.open(tmp / "run", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.append(fd)
    return args


def file_at(tmp, rel):
    path = tmp / "run" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file where a directory belongs")
    return ["experiment.B=100"]


# (id, builder(tmp) -> args, substring of the message)
CASES = [
    ("run-columns", lambda t: run_file(t, "301 Q0 d1 1 2.0 tag\n301 Q0 d2 2 1.0\n"),
     "r.run:2:"),
    ("run-duplicate-docno", lambda t: run_file(t, "301 Q0 d1 1 2 x\n301 Q0 d1 2 1 x\n"),
     "duplicate"),
    ("run-nan-score", lambda t: run_file(t, "301 Q0 d1 1 nan x\n"), "r.run:1:"),
    ("run-inf-score", lambda t: run_file(t, "301 Q0 d1 1 2 x\n301 Q0 d2 2 inf x\n"),
     "r.run:2:"),
    ("run-non-numeric", lambda t: run_file(t, "301 Q0 d1 1 high x\n"), "r.run:1:"),
    ("run-empty", lambda t: run_file(t, ""), "empty"),
    ("run-not-utf8", lambda t: ["evaluate", "collection=trec",
                                "collection.runs=" + str(write(t, "b.run", LATIN1, "wb")),
                                f"collection.qrels={QRELS}", "metrics=[AP]"], "UTF-8"),
    ("run-topic-not-in-qrels", lambda t: run_file(t, "999 Q0 d1 1 2 x\n"), "999"),
    ("run-missing-file", lambda t: ["evaluate", "collection=trec",
                                    f"collection.runs={t / 'nope.run'}",
                                    f"collection.qrels={QRELS}"], "nope.run"),
    ("qrels-empty", lambda t: ["evaluate", "collection=trec", f"collection.runs={RUN}",
                               f"collection.qrels={write(t, 'q.txt', '')}"], "empty"),
    ("qrels-bad-grade", lambda t: ["evaluate", "collection=trec", f"collection.runs={RUN}",
                                   f"collection.qrels={write(t, 'q.txt', '301 0 d1 x')}"],
     "q.txt:1:"),
    ("gz-corrupt", lambda t: ["evaluate", "collection=trec",
                              "collection.runs=" + str(write(t, "r.run.gz", b"not gzip", "wb")),
                              f"collection.qrels={QRELS}"], "r.run.gz"),
    ("matrix-nan", lambda t: matrix_file(t, "a,b\n0.1,0.2\n0.3,\n"), "m.csv:3:"),
    ("matrix-non-numeric", lambda t: matrix_file(t, "a,b\n0.1,x\n0.3,0.2\n"), "m.csv:2:"),
    ("matrix-columns", lambda t: matrix_file(t, "a,b\n0.1,0.2,0.3\n0.3,0.2\n"), "m.csv:2:"),
    ("matrix-empty", lambda t: matrix_file(t, ""), "empty"),
    ("metrics-topics-mismatch", lambda t: [
        "collection=matrix",
        paths_arg(write(t, "a.csv", TOPICS_12), write(t, "b.csv", TOPICS_13)),
        "experiment.B=100"], "topics differ"),
    ("unknown-metric", lambda t: ["metrics=[AP,nDGC@10]"], "unknown metric 'nDGC'"),
    ("unknown-test", lambda t: ["experiment.tests=[paired_bootstrp]"],
     "did you mean 'paired_bootstrap'"),
    ("unknown-experiment", lambda t: ["experiment=discpowr"], "did you mean 'discpower'"),
    ("unknown-collection", lambda t: ["collection=adhoc9"], "did you mean 'adhoc8'"),
    ("unknown-key", lambda t: ["experiment.Bx=3"],
     "unknown parameter of experiment=discpower 'experiment.Bx' (did you mean 'experiment.B'"),
    ("appended-unknown-key", lambda t: ["+experiment.BB=100"],
     "unknown parameter of experiment=discpower 'experiment.BB' (did you mean 'experiment.B'"),
    ("old-shard-key", lambda t: ["experiment=coverage", "experiment.shard_samples=3"],
     "unknown parameter of experiment=coverage 'experiment.shard_samples'"),
    ("unknown-engine-key", lambda t: ["engine.shard_pairs=3"],
     "'engine.shard_pairs' (did you mean 'engine.shard_items'"),
    ("wrong-type", lambda t: ["experiment=swap", "experiment.trials=many"],
     "experiment.trials: Value 'many' of type 'str' could not be converted to Integer"),
    ("B-zero", lambda t: ["experiment.B=0"], "experiment.B must be an integer >= 1"),
    ("alpha-outside", lambda t: ["experiment.alpha=[0.05,1.2]"], "inside (0, 1)"),
    ("alpha-text", lambda t: ["experiment.alpha=[abc]"],
     "experiment.alpha: Value 'abc' of type 'str' could not be converted to Float"),
    ("alpha-zero", lambda t: ["experiment.alpha=[0]"], "inside (0, 1)"),
    ("offline-missing", lambda t: ["collection=adhoc8", f"data_dir={t}", "offline=true"],
     "offline"),
    ("disjoint-c-over-half", lambda t: [
        "experiment=swap", "collection=synthetic_scores", "experiment.sampling=[disjoint]",
        "experiment.subset_sizes=[30]", "experiment.trials=10"], "n/2"),
    ("sizes-over-topics", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.sizes=[80]",
        "experiment.samples=10", "experiment.B=10"], "80"),
    ("B-zero-coverage", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.B=0"], "B"),
    ("unknown-ci-method", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.methods=[bcaa]"],
     "did you mean 'bca'"),
    ("unreadable-file", lambda t: matrix_dir(t), "m_dir"),
    ("report-not-a-run", lambda t: ["report", str(t)], "not a run directory"),
    ("list-unknown", lambda t: ["list", "metrcs"], "did you mean 'metrics'"),
    # issue 16: seeds and numbers that used to give tracebacks or run silently rounded
    ("seed-negative", lambda t: ["seed=-1"], "seed must be an integer >= 0, got -1"),
    ("seed-text", lambda t: ["seed=abc"], "seed must be an integer >= 0, got 'abc'"),
    ("seed-null", lambda t: ["seed=null"], "seed must be an integer >= 0, got None"),
    ("seed-fraction", lambda t: ["seed=1.7"], "seed must be an integer >= 0, got 1.7"),
    ("seed-bool", lambda t: ["seed=true"], "seed must be an integer >= 0, got True"),
    ("seed-list", lambda t: ["seed=[1,2]"], "seed must be an integer >= 0"),
    ("B-text", lambda t: ["experiment.B=abc"], "experiment.B: Value 'abc'"),
    ("B-null", lambda t: ["experiment.B=null"], "experiment.B"),
    ("B-fraction", lambda t: ["experiment.B=2.5"], "experiment.B"),
    # issue 16: Ray settings that used to hang (actors never scheduled, endless retries)
    ("ray-workers-over-cpus", lambda t: ["engine=ray", "engine.num_cpus=1",
                                         "engine.workers=1000", "experiment.B=100"],
     "engine.workers=1000 needs 1000 CPUs but the Ray cluster has 1"),
    ("ray-num-cpus-zero", lambda t: ["engine=ray", "engine.num_cpus=0"],
     "engine.num_cpus must be an integer >= 1, got 0"),
    ("ray-workers-zero", lambda t: ["engine=ray", "engine.workers=0"],
     "engine.workers must be an integer >= 1, got 0"),
    ("ray-workers-negative", lambda t: ["engine=ray", "engine.workers=-2"],
     "engine.workers must be an integer >= 1, got -2"),
    ("ray-in-flight-zero", lambda t: ["engine=ray", "engine.in_flight=0"],
     "engine.in_flight must be an integer >= 1"),
    ("ray-max-retries-negative", lambda t: ["engine=ray", "engine.max_retries=-1"],
     "engine.max_retries must be an integer >= 0"),
    ("ray-address-refused", lambda t: ["engine=ray", "engine.address=127.0.0.1:1"],
     "no Ray cluster reachable at 127.0.0.1:1"),
    ("ray-address-malformed", lambda t: ["engine=ray", "engine.address=ray://nohost"],
     "must be 'auto', host:port or ray://host:port"),
    # issue 16: Hydra's own keys are checked by the pre-check too (no Hydra traceback)
    ("hydra-key-wrong-type", lambda t: ["hydra.job.chdir=abc"],
     "hydra.job.chdir: Value 'abc' is not a valid bool"),
    ("hydra-unknown-key", lambda t: ["hydra.run.dirr=x"], "unknown config key 'hydra.run.dirr'"),
    ("hydra-unknown-group-option", lambda t: ["hydra/launcher=nope"],
     "Could not find 'hydra/launcher/nope'"),
    ("metric-unquoted-parentheses", lambda t: ["metrics=[AP(rel=0)]"],
     "quote a value with parentheses"),
    # issue 16: the run directory
    ("run-dir-is-a-file", lambda t: (write(t, "run", "x"), ["experiment.B=100"])[1],
     "is a file"),
    ("results-is-a-file", lambda t: file_at(t, "results"), "results: is a file"),
    ("checkpoints-is-a-file", lambda t: file_at(t, "checkpoints"), "checkpoints: is a file"),
    ("run-dir-in-use", lambda t: locked(t, ["experiment.B=100"]),
     "in use by another irsim run"),
    ("evaluate-run-dir-in-use", lambda t: locked(t, [
        "evaluate", "collection=trec", f"collection.runs={RUN}", f"collection.qrels={QRELS}",
        "metrics=[AP]"]), "in use by another irsim run"),
    # issue 16: irsim report on damaged run directories
    ("report-garbage-parquet", lambda t: corrupt_run_dir(
        t, lambda d: (d / "results" / "asl.parquet").write_bytes(b"PAR1 not parquet")),
     "asl.parquet: not a readable Parquet table"),
    ("report-empty-parquet", lambda t: corrupt_run_dir(
        t, lambda d: (d / "results" / "discpower.parquet").write_bytes(b"")),
     "discpower.parquet: not a readable Parquet table"),
    ("report-corrupt-data-page", lambda t: corrupt_run_dir(t, flip_data_page),
     "asl.parquet: not a readable Parquet table"),
    ("report-corrupt-manifest", lambda t: corrupt_run_dir(
        t, lambda d: (d / "manifest.json").write_text("{not json")), "unreadable manifest"),
    ("report-manifest-not-object", lambda t: corrupt_run_dir(
        t, lambda d: (d / "manifest.json").write_text("[1, 2]")), "not an object"),
    ("report-results-is-a-file", lambda t: (write(t, "results", "x"), ["report", str(t)])[1],
     "not a run directory"),
    # issue 16, defect 8: empty and repeated lists (a repeat would duplicate output rows)
    ("metrics-empty", lambda t: ["metrics=[]"], "metrics=[] lists no metric"),
    ("metrics-repeated", lambda t: ["metrics=[AP,AP]"], "metrics lists 'AP' twice"),
    ("study-metrics-empty", lambda t: ["experiment=coverage", "collection=synthetic_scores",
                                       "experiment.metrics=[]"],
     "experiment.metrics=[] lists no metric"),
    ("study-metrics-repeated", lambda t: [
        "experiment=swap", "collection=synthetic_scores", "experiment.metrics=[synthetic,"
        "synthetic]"], "experiment.metrics lists 'synthetic' twice"),
    ("alpha-repeated", lambda t: ["experiment.alpha=[0.5,0.5]"],
     "experiment.alpha lists 0.5 twice"),
    ("alpha-repeated-spelled-apart", lambda t: ["experiment.alpha=[0.05,0.01,0.050]"],
     "experiment.alpha lists 0.05 twice"),
    ("fuzziness-repeated", lambda t: ["experiment.stability=true",
                                      "experiment.fuzziness=[0.05,0.05]"],
     "experiment.fuzziness values must be distinct"),
    ("tests-repeated", lambda t: ["experiment.tests=[t,t]"], "experiment.tests lists a test"),
    ("swap-confidence-repeated", lambda t: [
        "experiment=swap", "collection=synthetic_scores", "experiment.confidence=[0.95,0.95]"],
     "experiment.confidence lists 0.95 twice"),
    ("coverage-alpha-repeated", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.alpha=[0.1,0.1]"],
     "experiment.alpha lists 0.1 twice"),
    ("coverage-methods-repeated", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.methods=[t,bca,t]"],
     "experiment.methods lists 't' twice"),
    ("coverage-sizes-repeated", lambda t: [
        "experiment=coverage", "collection=synthetic_scores", "experiment.sizes=[5,10,5]"],
     "experiment.sizes lists 5 twice"),
    ("swap-sizes-repeated", lambda t: [
        "experiment=swap", "collection=synthetic_scores", "experiment.subset_sizes=[5,10,5]"],
     "experiment.subset_sizes lists 5 twice"),
    ("swap-sampling-repeated", lambda t: [
        "experiment=swap", "collection=synthetic_scores",
        "experiment.sampling=[disjoint,disjoint]"],
     "experiment.sampling lists 'disjoint' twice"),
    ("error-rates-tests-repeated", lambda t: [
        "experiment=error_rates", "collection=synthetic_scores", "experiment.tests=[t,t]"],
     "experiment.tests lists 't' twice"),
    # issue 16, defect 8: symlinks, NUL bytes, runs and qrels that do not belong together
    ("matrix-symlink-loop", lambda t: ["collection=matrix",
                                       f"collection.path={looping_link(t, 'm.csv')}",
                                       "collection.metric=AP"], "m.csv: symlink loop"),
    ("run-symlink-loop", lambda t: ["evaluate", "collection=trec",
                                    f"collection.runs={looping_link(t, 'r.run')}",
                                    f"collection.qrels={QRELS}"], "r.run: symlink loop"),
    ("qrels-symlink-loop", lambda t: ["evaluate", "collection=trec", f"collection.runs={RUN}",
                                      f"collection.qrels={looping_link(t, 'q.txt')}"],
     "q.txt: symlink loop"),
    ("matrix-broken-symlink", lambda t: ["collection=matrix",
                                         f"collection.path={broken_link(t, 'm.csv')}",
                                         "collection.metric=AP"],
     "m.csv: broken symlink (-> "),
    ("run-nul-in-docno", lambda t: run_file(t, "301 Q0 d1 1 2 x\n301 Q0 d\x002 2 1 x\n"),
     "r.run:2: NUL byte (0x00) at column 9"),
    ("qrels-nul-in-docno", lambda t: [
        "evaluate", "collection=trec", f"collection.runs={RUN}",
        f"collection.qrels={write(t, 'q.txt', '301 0 d1 1' + chr(10) + '301 0 d' + chr(0))}"],
     "q.txt:2: NUL byte"),
    ("matrix-nul", lambda t: matrix_file(t, "a,b\n0.1,0.2\n0.3\x00,0.4\n"),
     "m.csv:3: NUL byte"),
    ("missing-zero-no-common-topic", lambda t: [
        *run_file(t, "999 Q0 d1 1 2 x\n"), "collection.missing=zero"],
     "has no topic in common with the qrels"),
    ("missing-drop-no-common-topic", lambda t: [
        *run_file(t, "999 Q0 d1 1 2 x\n"), "collection.missing=drop"], "no topic"),
    ("local-workers-zero", lambda t: ["engine.workers=0"],  # engine=local has no workers
     "unknown config key 'engine.workers'"),
    # issue 16, defect 6: a logit interval of scores outside [0, 1]
    ("coverage-logit-outside-unit-interval", lambda t: [
        "experiment=coverage", "collection=matrix", "experiment.sizes=[2]",
        "experiment.methods=[t,studentised_logit]", "collection.metric=X",
        "collection.path=" + str(write(t, "m.csv", "a,b\n0.1,0.2\n0.3,1.7\n0.5,0.9\n"))],
     "experiment.methods: studentised_logit needs scores in [0, 1], but X of system 'b' on "
     "topic '2' is 1.7"),
    # issue 29: a number where files are expected, an absurd cut-off, a score beyond 1e100
    ("runs-a-number", lambda t: ["experiment=effort", "collection=trec", "collection.runs=5",
                                 f"collection.qrels={QRELS}"],
     "collection.runs must be a file, a directory, a glob pattern or a list of them, got 5"),
    ("cutoff-absurd", lambda t: ["metrics=[P@99999999999]"],
     "metric P@99999999999: cut-off must be at most 1,000,000"),
    ("score-1e308", lambda t: matrix_file(t, "a,b\n0.1,0.2\n0.3,1e308\n"),
     "is beyond +-1e+100"),
]


@pytest.fixture(autouse=True)
def _release_locks():
    import os

    yield
    while _HELD:
        os.close(_HELD.pop())


#: The cases whose run directory exists before the run (left as it was).
PRE_EXISTING_RUN_DIR = {"run-dir-is-a-file", "results-is-a-file", "checkpoints-is-a-file",
                        "run-dir-in-use", "evaluate-run-dir-in-use"}

#: The cases that start a Ray instance (marker `ray`: not in the default run).
STARTS_RAY = {"ray-workers-over-cpus"}


@pytest.mark.parametrize("name,build,needle", [
    pytest.param(*c, id=c[0], marks=[pytest.mark.ray] if c[0] in STARTS_RAY else [])
    for c in CASES])
def test_bad_input(tmp_path, capsys, name, build, needle):
    run_dir = tmp_path / "run"
    args = build(tmp_path)
    capsys.readouterr()  # what building the case printed
    if args[0] not in ("report", "list"):
        args = [*args, "quiet=true", f"hydra.run.dir={run_dir}"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("irsim: error: ") and "Traceback" not in err
    assert needle in lines[0], lines[0]
    assert not (run_dir / "results").is_dir()
    assert not (run_dir / "manifest.json").exists()
    assert not (run_dir / "checkpoints").is_dir()  # nothing half-written, not even empty
    # a refused run into a new directory leaves no directory behind (not even .hydra/)
    if name not in PRE_EXISTING_RUN_DIR:
        assert not run_dir.exists(), sorted(p.name for p in run_dir.rglob("*"))


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


def test_gzip_run_is_accepted(tmp_path, capsys):
    gz = tmp_path / "run.gz"
    with gzip.open(gz, "wt") as f:
        f.write(RUN.read_text())
    main(["evaluate", "collection=trec", f"collection.runs={gz}", f"collection.qrels={QRELS}",
          "metrics=[AP]", "quiet=true", f"hydra.run.dir={tmp_path / 'ok'}"])
    assert (tmp_path / "ok" / "results" / "per_topic.parquet").exists()


@pytest.mark.slow
def test_full_filesystem_one_line_and_no_temp_files(tmp_path, capsys, monkeypatch):
    """A disk that fills up while checkpointing: one line naming the problem, exit 2, no
    half-written checkpoint (.tmp) and no results; the next run starts cleanly."""
    import errno

    import numpy as np

    calls = {"n": 0}
    real = np.savez

    def fills_up(file, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            file.write(b"PK\x03\x04partial")  # a torn write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(file, *args, **kwargs)

    monkeypatch.setattr(np, "savez", fills_up)
    run_dir = tmp_path / "run"
    args = ["experiment.B=1000", "engine.shard_replicates=250", "quiet=true",
            f"hydra.run.dir={run_dir}"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0], err
    assert not list(run_dir.rglob("*.tmp")) and not (run_dir / "results").exists()
    assert len(list(run_dir.rglob("*.npz"))) == 2  # the two complete shards are kept
    monkeypatch.setattr(np, "savez", real)
    main(args)
    assert (run_dir / "results" / "asl.parquet").exists()


@pytest.mark.slow
def test_internal_error_is_one_line_with_the_traceback_in_the_log(tmp_path, capsys,
                                                                  monkeypatch):
    """A bug (not bad input) still prints one line, exit code 1, and points to the run
    directory's log, which holds the traceback."""
    import irsim.engine.session

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    # the CLI runs studies through the run's engine session, which looks run_study up at
    # each run
    monkeypatch.setattr(irsim.engine.session, "run_study", boom)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["experiment.B=100", "quiet=true", f"hydra.run.dir={run_dir}"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "internal error: RuntimeError: boom" in lines[0], err
    logs = list(run_dir.glob("*.log"))
    assert logs and "Traceback" in logs[0].read_text() and "boom" in logs[0].read_text()
    assert not (run_dir / "results").exists() and not (run_dir / "checkpoints").exists()


# ------------------------------------------------ issue 16, defect 6: degenerate designs
def test_two_topics_make_the_paired_bootstrap_degenerate_and_are_refused():
    """With 2 topics every resample of the centred differences (d, -d) has t* = 0 (checked
    by enumerating the three resamples directly), so the paired bootstrap gives ASL 0 to
    every pair with d != 0; the study's check and irsim.stats.paired_bootstrap refuse it."""
    from irsim.errors import ConfigError, InputError
    from irsim.kit.common import check_paired_bootstrap_topics
    from irsim.stats import paired_bootstrap

    rng = np.random.default_rng(0)
    x, y = rng.random((20, 2)), rng.random((20, 2))
    w = (x - y) - (x - y).mean(axis=1, keepdims=True)  # (d, -d) per pair
    for counts in ((2, 0), (1, 1), (0, 2)):
        sample = np.repeat(w, counts, axis=1)
        mean, sd = sample.mean(axis=1), sample.std(axis=1, ddof=1)
        assert np.all((np.abs(mean) < 1e-15) | (sd < 1e-15))  # t* = 0 (or 0/0)
    with pytest.raises(InputError, match="at least 3 values"):
        paired_bootstrap(x, y, B=200, seed=1)
    with pytest.raises(ConfigError, match="paired_bootstrap needs at least 3 topics"):
        check_paired_bootstrap_topics(2)
    assert check_paired_bootstrap_topics(3) == 3
    three = paired_bootstrap(rng.random((20, 3)), rng.random((20, 3)), B=200, seed=1)
    assert (np.asarray(three.pvalue) > 0).any()


@pytest.mark.parametrize("B,alphas,ok", [(1, [0.01], False), (99, [0.01, 0.05], False),
                                         (100, [0.01, 0.05], True), (19, [0.05], False),
                                         (20, [0.05], True), (1000, [0.001], True)])
def test_too_few_resamples_for_alpha_are_refused(B, alphas, ok):
    """B * alpha >= 1 for every alpha: an ASL moves in steps of 1/B (count mode), so with
    fewer resamples 'ASL < alpha' means 'no resample as extreme' (B=1: most pairs
    significant) and with add-one p-values (>= 1/(B+1)) nothing can be significant."""
    from irsim.errors import ConfigError
    from irsim.kit.common import check_resamples

    if ok:
        assert check_resamples(B, alphas) == B
        assert 1 / (B + 1) < min(alphas)  # the smallest add-one ASL can be below alpha
    else:
        assert 1 / (B + 1) >= min(alphas) - 1e-15  # no add-one ASL can be below alpha
        with pytest.raises(ConfigError, match=f"experiment.B={B} is too small"):
            check_resamples(B, alphas)


# ------------------------------------------------------------ the Python door (issue 29)
def _frame(systems=6, topics=12):
    import pandas as pd

    rng = np.random.default_rng(3)
    return pd.DataFrame(rng.random((topics, systems)), columns=[f"s{i}" for i in
                                                                range(systems)])


def test_numpy_scalars_are_parameters_like_python_ones():
    import irsim

    df = _frame()
    plain = irsim.discpower(df, metric="AP", B=200, alpha=[0.05, 0.1], seed=1)
    numpy = irsim.discpower(df, metric="AP", B=np.int64(200), seed=np.int64(1),
                            alpha=[np.float64(0.05), np.float64(0.1)])
    arr = irsim.discpower(df, metric="AP", B=200, alpha=np.array([0.05, 0.1]), seed=1,
                          shard_items=np.int64(256))
    for other in (numpy, arr):
        for name, table in plain.tables.items():
            assert table.equals(other.tables[name]), name


@pytest.mark.parametrize("study,kwargs", [
    ("discpower", dict(B=100)), ("swap", dict(trials=10, subset_sizes=[3])),
    ("error_rates", dict(trials=5, test_B=100, sd_samples=2, subset_sizes=[3])),
    ("coverage", dict(samples=10, B=100, sizes=[3])), ("reliability", dict(B=10)),
    ("topic_set_size", {}), ("test_errors", dict(trials=20, B=100, sizes=[5])),
    ("multiple_testing", dict(trials=10, sizes=[5])),
])
def test_duplicate_columns_are_one_clear_error(study, kwargs):
    import irsim

    df = _frame()
    df.columns = ["s0", "s0", *df.columns[2:]]
    with pytest.raises(irsim.InputError, match=r"duplicate column \(system\) name 's0'"):
        getattr(irsim, study)(df, metric="AP", **kwargs)


@pytest.mark.parametrize("value,kind", [(1j, "complex128"),
                                        ("2020-01-01", "datetime64")])
def test_complex_or_date_columns_are_not_scores(value, kind):
    import pandas as pd

    import irsim

    df = _frame()
    df["s5"] = pd.to_datetime(value) if kind.startswith("datetime") else value
    with pytest.raises(irsim.InputError, match=f"column 's5' holds {kind}"):
        irsim.discpower(df, metric="AP", B=100)


@pytest.mark.parametrize("study,kwargs", [("discpower", dict(B=100)),
                                          ("error_rates", dict(trials=5, test_B=100,
                                                               sd_samples=2,
                                                               subset_sizes=[3]))])
def test_huge_scores_are_refused_before_they_overflow(study, kwargs):
    import irsim

    df = _frame() * 1e308
    with pytest.raises(irsim.InputError, match=r"is beyond \+-1e\+100"):
        getattr(irsim, study)(df, metric="AP", **kwargs)


@pytest.mark.parametrize("study,what", [("reliability", "the G-study"),
                                        ("topic_set_size", "the topic set size")])
def test_identical_systems_are_refused_instead_of_nan_tables(study, what):
    import irsim

    df = _frame()
    for c in df.columns[1:]:
        df[c] = df["s0"]  # every system scores the same on every topic
    with pytest.raises(irsim.InputError, match=f"every system has the same score on every "
                                               f"topic .* so {what}"):
        getattr(irsim, study)(df, metric="AP")
    df["s1"] = _frame()["s1"]  # one system differs: the tables hold numbers again
    out = getattr(irsim, study)(df, metric="AP", B=20) if study == "reliability" else \
        getattr(irsim, study)(df, metric="AP")
    first = out.tables[study].to_pandas()
    value = first["e_rho2"] if study == "reliability" else first["n"]
    assert value.notna().all() and (value > 0).all()


# ------------------------------------------- issue 29: the memory budget on every path
def _tall(topics: int = 400_000, systems: int = 3):
    import pandas as pd

    x = np.random.default_rng(29).random((topics, systems))
    return pd.DataFrame(x, columns=[f"s{i}" for i in range(systems)])


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


# the estimates written out: 8-byte values; the G-study's bootstrap holds 5 copies of
# 250 resampled (3, 400000) matrices and 250 rows of indices; a block of topic-set trials
# 5 copies of the counts of 250 trials x 2 sets x 400000 topics; a D-study row ~450 bytes
@pytest.mark.parametrize("study, kwargs, what, need, lower", [
    ("reliability", {}, "the bootstrap (250 resamples of 3 systems x 400000 topics at once)",
     8 * 400_000 * (250 + 5 * 3 * 250), "B or the number of topics"),
    ("error_rates", dict(tests=[]),
     "error rates (250 trials x 2 topic sets x 400000 topics at once)",
     8 * 5 * 250 * 2 * 400_000, "the number of topics (trials are drawn 250 at a time)"),
    ("swap", {}, "swap rates (250 trials x 2 topic sets x 400000 topics at once)",
     8 * 5 * 250 * 2 * 400_000, "the number of topics (trials are drawn 250 at a time)"),
])
def test_three_systems_on_400000_topics_are_refused_before_allocating(study, kwargs, what,
                                                                      need, lower):
    """The issue's 3 x 400,000 topics: one clear error naming the step, the estimate, the
    2 GiB budget and the parameter, and nothing of that size allocated first (the whole
    call peaks far below one block of the kernel)."""
    import tracemalloc

    import irsim
    from irsim.errors import ConfigError

    x = _tall()
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as err:
            getattr(irsim, study)(x, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (f"{what} would need about {_gib(need)} of memory, over the 2 GiB "
                              f"budget: lower {lower}")
    assert need > 2 * 2**30 and peak < 400 * 2**20, peak


def test_max_topics_of_ten_million_is_refused_before_allocating(capsys, tmp_path):
    """max_topics=1e7: the D-study table (a row per size and metric) is refused, from
    Python and on the command line (one line, exit code 2, nothing written)."""
    import pandas as pd

    import irsim
    from irsim.errors import ConfigError

    x = pd.read_csv(SHARED_DATA / "urbano" / "web2012_ap.csv")
    with pytest.raises(ConfigError, match=r"^the D-study table \(10000000 sizes x 1 metrics\) "
                                          r"would need about 4\.2 GiB of memory, over the 2 "
                                          r"GiB budget: lower max_topics$"):
        irsim.reliability(x, max_topics=10_000_000, B=20)
    assert 450 * 10_000_000 / 2**30 == pytest.approx(4.19, abs=0.01)
    irsim.reliability(x, max_topics=4_000_000 // 1000, B=20)  # well inside: runs
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["experiment=reliability", "quiet=true", "metrics=[AP]",
              "experiment.max_topics=10000000", f"hydra.run.dir={run_dir}"])
    assert exc.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == ["irsim: error: config: the D-study table (10000000 sizes x 1 metrics) "
                     "would need about 4.2 GiB of memory, over the 2 GiB budget: lower "
                     "experiment.max_topics"], lines
    assert not (run_dir / "results").exists()


def test_the_simulation_check_and_the_sd_table_are_budgeted():
    """reliability's check draws 250 collections of (systems + 1) x topics normals at once;
    error_rates' sd table holds all its samples of a size at once."""
    import irsim
    from irsim.errors import ConfigError

    x = _tall(topics=2_000, systems=3)
    with pytest.raises(ConfigError, match=r"^the simulation check \(250 collections of 3 "
                                          r"systems x 200000 topics at once\) would need "
                                          r"about 7\.8 GiB .* lower check_topics "
                                          r"\(collections are drawn 250 at a time\)$"):
        irsim.reliability(x, B=20, check_trials=10, check_topics=[200_000])
    assert 8 * 200_000 * (250 + 5 * 4 * 250) / 2**30 == pytest.approx(7.82, abs=0.01)
    with pytest.raises(ConfigError, match=r"^the sd table \(40000 samples x 2000 topics at "
                                          r"once\) would need about 3\.0 GiB .* lower "
                                          r"sd_samples or the number of topics$"):
        irsim.error_rates(x, tests=[], sd_samples=40_000, sd_sizes=[5])
    assert 8 * 5 * 40_000 * 2_000 / 2**30 == pytest.approx(2.98, abs=0.01)


def test_effort_checks_the_budget_before_pooling_its_trials(monkeypatch):
    """effort shares the topic-set trials' estimate: with the budget lowered below one block
    of 16 topics (8 x 5 x 250 x 2 x 16 = 320,000 bytes) it is refused in make()."""
    import irsim.kit.common
    from irsim.data.collection import DocCollection
    from irsim.data.synthetic import synthetic_trec
    from irsim.errors import ConfigError
    from irsim.experiments import Shards
    from irsim.experiments.effort import Config, make

    runs, qrels = synthetic_trec(runs=4, topics=16, docs_per_topic=60, depth=40, seed=1)
    docs = DocCollection(runs, qrels, 40)
    make(Config(subset_sizes=[4], trials=2), docs, seed=0, shards=Shards())  # fits
    monkeypatch.setattr(irsim.kit.common, "MEMORY_BUDGET", 300_000)
    with pytest.raises(ConfigError, match=r"^config: effort's error rates \(250 trials x 2 "
                                          r"topic sets x 16 topics at once\) would need"):
        make(Config(subset_sizes=[4], trials=2), docs, seed=0, shards=Shards())


def test_discpower_checks_the_budget_of_its_bootstrap_samples(capsys, tmp_path):
    """discpower on 3 systems x 400,000 topics (a MemoryError after the data loaded): one
    error before any sample is drawn, from Python and on the command line; the bound holds
    the kernel's measured peak on a case that fits."""
    import tracemalloc

    import pandas as pd

    import irsim
    from irsim.errors import ConfigError
    from irsim.experiments.discpower.kernel import working_bytes

    rng = np.random.default_rng(0)
    tall = pd.DataFrame(rng.random((400_000, 3)), columns=["a", "b", "c"])
    need = 400_000 * 100 * (24 + 32)
    with pytest.raises(ConfigError, match=r"^discpower's bootstrap samples \(100 "
                                          r"replicates of 400000 topics at once\) would need "
                                          r"about 2\.1 GiB of memory, over the 2 GiB budget: "
                                          r"lower B or the number of topics"):
        irsim.discpower(tall, B=100, progress=False)
    assert working_bytes(400_000, 100, paired=True, unpaired=True, swap=False) == need
    assert need / 2**30 == pytest.approx(2.09, abs=0.01)
    irsim.discpower(tall, B=100, tests=["t", "wilcoxon"], progress=False)  # nothing resampled
    small = pd.DataFrame(rng.random((4_000, 3)), columns=["a", "b", "c"])
    tracemalloc.start()
    try:
        irsim.discpower(small, B=500, swap=True, stability=True, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= working_bytes(4_000, 500, paired=True, unpaired=True, swap=True), peak
    path = tmp_path / "tall.csv"
    tall.iloc[:, :2].assign(c=tall.c).to_csv(path, index=False)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["collection=matrix", f"collection.path={path}", "collection.metric=AP",
              "experiment.B=100", "quiet=true", f"hydra.run.dir={run_dir}"])
    assert exc.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "discpower's bootstrap samples (100 replicates of 400000 " \
        "topics at once)" in lines[0] and "lower experiment.B" in lines[0], lines
    assert not (run_dir / "results").exists()
