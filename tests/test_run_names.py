"""One naming rule for runs in every door (issues 42 and 44): a run read from a file is named
by its file name without ``.gz`` and a results extension, or by its tag with
``run_names=tag`` (:func:`irsim.data.trec.name_runs`); a directory of runs is accepted
wherever a glob or a list is; two runs of one name are one error naming both files.

Oracles: the file names as the operating system lists them, the tags read with ``gzip``
line by line, and pytrec_eval (trec_eval 9.0.8's code, single-precision scores as irsim's
default) with scipy's paired t test for ``irsim compare`` on the shipped DL 2019 runs."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA, dl19_files
from scipy import stats as sps

import irsim
from irsim.data.collection import list_files, load_doc_collection
from irsim.data.trec import file_stem, name_runs, read_runs
from irsim.errors import ConfigError, InputError

DL19 = SHARED_DATA / "dl19-assessors"
RUNS = DL19 / "runs"
NIST = DL19 / "qrels" / "nist.txt"
PAIR = ("colbert_monoelectra-large", "bm25base_p")
#: irsim metric -> pytrec_eval measure (trec_eval's names)
METRICS = {"AP": "map", "P@10": "P_10", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank"}


def write(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()) if path.name.endswith(".gz")
                     else text.encode())
    return path


def shipped() -> list[Path]:
    """The shipped DL 2019 run files, as the operating system lists them (sorted)."""
    dl19_files((), ("nist",))  # skips without the data
    return sorted(RUNS / f for f in os.listdir(RUNS) if not f.startswith("."))


def file_tags(path: Path) -> set[str]:
    with gzip.open(path, "rt") as f:
        return {line.split()[5] for line in f if line.strip()}


# --- the rule ------------------------------------------------------------------------------


def test_names_by_file_are_file_names_without_gz_and_a_results_extension():
    paths = ["r/bm25.run.gz", "r/dense.TXT", "r/input.bm25", "r/results.test", "r/x.res"]
    assert name_runs(paths) == ("bm25", "dense", "input.bm25", "results.test", "x")
    assert [file_stem(p) for p in paths] == list(name_runs(paths))
    assert name_runs(paths[:2], [{"t1"}, {"t2"}], by="tag") == ("t1", "t2")


def test_a_collision_names_both_files_and_the_fix():
    with pytest.raises(InputError) as info:
        name_runs(["a/bm25.run", "b/bm25.txt.gz", "c/x.run", "d/x.res"])
    e = info.value
    assert e.file == "b/bm25.txt.gz" and "a/bm25.run" in str(e)
    assert "run name 'bm25' (by file)" in str(e) and "1 more name is shared: 'x'" in str(e)
    assert "rename one of the files" in str(e) and "collection.run_names=tag" in str(e)
    with pytest.raises(InputError) as info:
        name_runs(["a/large.gz", "a/base.gz"], [{"mono-electra"}, {"mono-electra"}], by="tag")
    assert info.value.file == "a/base.gz" and "a/large.gz" in str(info.value)
    assert "'mono-electra' (by tag)" in str(info.value)
    assert "collection.run_names=file" in str(info.value)


def test_by_tag_a_file_of_several_tags_is_refused(tmp_path):
    p = write(tmp_path / "mixed.run", "1 Q0 x 1 1.0 t1\n1 Q0 y 2 0.5 t2\n")
    with pytest.raises(InputError, match=r"more than one tag \(first seen: 't1', 't2'\)") as e:
        read_runs([p], run_names="tag")
    assert e.value.file == str(p) and "run_names=file" in str(e.value)
    assert read_runs([p]).names == ("mixed",)  # by file: no question asked
    with pytest.raises(ConfigError, match="unknown run_names rule 'tags'.*valid: file, tag"):
        read_runs([p], run_names="tags")


def test_a_directory_lists_its_files_sorted_without_hidden_files(tmp_path, caplog):
    import logging

    d = tmp_path / "runs"
    (d / "old-run-dir").mkdir(parents=True)
    for name, tag in (("b.run", "same"), ("a.txt.gz", "same"), (".seen", "x")):
        write(d / name, f"1 Q0 x 1 1.0 {tag}\n")
    with caplog.at_level(logging.WARNING, logger="irsim.data.collection"):
        files = list_files(d, "runs")
    assert [f.name for f in files] == sorted(f for f in os.listdir(d)
                                             if not f.startswith(".") and "." in f)
    assert "skipping 1 directory" in caplog.text
    assert read_runs(files).names == ("a", "b")  # one tag, two names
    with pytest.raises(InputError, match="the directory holds no files"):
        list_files(d / "old-run-dir", "runs")
    with pytest.raises(InputError, match="runs file not found"):
        list_files(tmp_path / "nothing", "runs")


# --- every door on the shipped DL 2019 runs --------------------------------------------------


def test_every_door_names_the_shipped_runs_by_file():
    files = shipped()
    want = tuple(f.name[:-3] for f in files)  # the names ls shows, without .gz
    assert len(files) == 61 and len(set(want)) == 61
    tags = [t for f in files for t in file_tags(f)]
    assert len(tags) == 61 and len(set(tags)) == 46  # 15 files share 4 tags
    from irsim.experiments.assessors import read_assessor_runs

    doors = {
        "read_runs": read_runs(files).names,
        "collection=trec glob": load_doc_collection(
            {"kind": "trec", "runs": f"{RUNS}/*", "qrels": str(NIST)}).runs.names,
        "collection=trec directory": load_doc_collection(
            {"kind": "trec", "runs": "dl19-assessors/runs", "qrels": str(NIST)},
            data_dir=str(SHARED_DATA)).runs.names,
        "assessors": read_assessor_runs(RUNS).names,
        "irsim.evaluate": tuple(dict.fromkeys(
            irsim.evaluate(RUNS, NIST, ["P@10"])["system"])),
    }
    for door, names in doors.items():
        assert names == want, door


def test_every_door_refuses_the_shipped_runs_by_tag_with_one_message():
    files = shipped()
    first: dict[str, Path] = {}
    clash = None
    for f in files:  # the oracle: the first file whose tag an earlier file used
        (tag,) = file_tags(f)
        if tag in first:
            clash = clash or (f, first[tag], tag)
        first.setdefault(tag, f)
    later, earlier, tag = clash
    assert tag == "mono-electra" and later.name == "colbert_monoelectra-large.gz"
    from irsim.experiments.assessors import read_assessor_runs

    doors = [
        lambda: read_runs(files, run_names="tag"),
        lambda: load_doc_collection({"kind": "trec", "runs": str(RUNS), "qrels": str(NIST),
                                     "run_names": "tag"}),
        lambda: read_assessor_runs(RUNS, run_names="tag"),
        lambda: irsim.evaluate(RUNS, NIST, ["P@10"], run_names="tag"),
        lambda: irsim.compare(runs=RUNS, qrels=NIST, metrics=["AP"], systems=list(PAIR),
                              run_names="tag"),
    ]
    messages = set()
    for door in doors:
        with pytest.raises(InputError) as info:
            door()
        assert info.value.file == str(later) and str(earlier) in str(info.value)
        messages.add(str(info.value))
    assert len(messages) == 1
    assert "3 more names are shared" in messages.pop()


def pytrec_eval_per_topic(names: tuple[str, ...]) -> dict[str, dict[str, dict[str, float]]]:
    """{run: {topic: {measure: value}}} by pytrec_eval on the NIST qrels, the run files read
    line by line here."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict[str, dict[str, int]] = {}
    for line in NIST.read_text().splitlines():
        if line.strip():
            q, _, d, rel = line.split()
            qrels.setdefault(q, {})[d] = int(rel)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(METRICS.values()))
    out = {}
    for name in names:
        run: dict[str, dict[str, float]] = {}
        with gzip.open(RUNS / f"{name}.gz", "rt") as f:
            for line in f:
                if line.strip():
                    q, _, d, _, score, _ = line.split()
                    run.setdefault(q, {})[d] = float(score)
        out[name] = evaluator.evaluate(run)
    return out


def check_comparison(table, oracle) -> None:
    """Each metric's means, difference and t test of the pair against pytrec_eval's
    per-topic values and scipy."""
    a, b = (oracle[n] for n in PAIR)
    topics = sorted(set(a) & set(b))
    assert len(topics) == 43
    rows = table.to_pandas()
    assert set(rows["metric"]) == set(METRICS)
    for metric, measure in METRICS.items():
        x = np.array([a[t][measure] for t in topics])
        y = np.array([b[t][measure] for t in topics])
        got = rows[rows["metric"] == metric]
        assert (got["system_a"] == PAIR[0]).all() and (got["system_b"] == PAIR[1]).all()
        np.testing.assert_allclose(got["mean_a"], x.mean(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["mean_b"], y.mean(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["diff"], (x - y).mean(), rtol=0, atol=1e-12)
        t = got[got["test"] == "t"]
        np.testing.assert_allclose(t["p_value"], sps.ttest_rel(x, y).pvalue, rtol=1e-9)


def compare_args(out: Path) -> list[str]:
    """The issue's command line (after ``irsim``)."""
    return ["compare", *PAIR, "collection=trec", f"collection.runs={RUNS}/*",
            f"collection.qrels={NIST}", "quiet=true", f"hydra.run.dir={out}"]


def check_console(stdout: str) -> None:
    assert f"system_a={PAIR[0]}, system_b={PAIR[1]}" in stdout
    assert [ln.split()[0] for ln in stdout.splitlines()[2:6]] == list(METRICS)


def test_irsim_compare_on_the_shipped_runs_from_the_command_line(tmp_path, capsys):
    """The issue's command (the console script's main, in process: no SystemExit is exit 0):
    the pair named by file, numbers equal to pytrec_eval's."""
    from irsim.cli import main

    shipped()
    main(compare_args(tmp_path / "run"))
    check_console(capsys.readouterr().out)
    table = pq.read_table(tmp_path / "run" / "results" / "comparison.parquet")
    check_comparison(table, pytrec_eval_per_topic(PAIR))


@pytest.mark.slow
def test_irsim_compare_on_the_shipped_runs_as_a_process(tmp_path):
    """The same command as a process: exit status 0."""
    shipped()
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "irsim", *compare_args(out)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    check_console(r.stdout)
    check_comparison(pq.read_table(out / "results" / "comparison.parquet"),
                     pytrec_eval_per_topic(PAIR))


def test_irsim_compare_on_the_shipped_runs_from_python():
    shipped()
    result = irsim.compare(runs=RUNS, qrels=NIST, metrics=list(METRICS), systems=list(PAIR))
    check_comparison(result.tables["comparison"], pytrec_eval_per_topic(PAIR))
    # the per-topic differences irsim.evaluate gives, the oracle's
    df = irsim.evaluate([RUNS / f"{n}.gz" for n in PAIR], NIST, list(METRICS))
    wide = df.pivot_table(index=["metric", "topic"], columns="system", values="value")
    oracle = pytrec_eval_per_topic(PAIR)
    for metric, measure in METRICS.items():
        per_topic = wide.loc[metric]
        want = np.array([oracle[PAIR[0]][t][measure] - oracle[PAIR[1]][t][measure]
                         for t in per_topic.index])
        np.testing.assert_allclose(per_topic[PAIR[0]] - per_topic[PAIR[1]], want,
                                   rtol=0, atol=1e-12)


def test_an_unknown_system_of_trec_runs_says_how_runs_are_named(tmp_path, capsys):
    """A tag typed where runs are named by file: exit 2, one line naming the rule's key."""
    from irsim.cli import main

    files, qrels = dl19_files(PAIR, ("nist",))
    with pytest.raises(SystemExit) as exc:
        main(["compare", "mono-electra", PAIR[1], "collection=trec",
              f"collection.runs=[{','.join(files)}]", f"collection.qrels={qrels['nist']}",
              "quiet=true", f"hydra.run.dir={tmp_path / 'bad'}"])
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "unknown system in experiment.systems 'mono-electra'" in err[0]
    assert err[0].endswith("(runs are named by file name; collection.run_names=tag names "
                           "them by tag)")
    assert f"valid: {PAIR[1]}, {PAIR[0]}" in err[0]
