"""Hardened input: a table of bad inputs across readers, configs and the CLI. Each gives one
clear line naming the problem, exit code 2, no traceback and no results in the run dir."""

from __future__ import annotations

import gzip

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
            "collection.metric=AP", "experiment.B=10"]


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
        "experiment.B=10"], "topics differ"),
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
]


@pytest.mark.parametrize("name,build,needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, capsys, name, build, needle):
    run_dir = tmp_path / "run"
    args = build(tmp_path)
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
    assert not (run_dir / "results").exists()
    assert not (run_dir / "manifest.json").exists()


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


def test_gzip_run_is_accepted(tmp_path, capsys):
    gz = tmp_path / "run.gz"
    with gzip.open(gz, "wt") as f:
        f.write(RUN.read_text())
    main(["evaluate", "collection=trec", f"collection.runs={gz}", f"collection.qrels={QRELS}",
          "metrics=[AP]", "quiet=true", f"hydra.run.dir={tmp_path / 'ok'}"])
    assert (tmp_path / "ok" / "results" / "per_topic.parquet").exists()
