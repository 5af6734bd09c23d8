"""The collection kind ``trec_eval`` (``irsim.data.trec_eval``): ``trec_eval -q`` outputs, one
file per run, read into a ScoreMatrix whose values equal ``irsim.evaluate`` on the same runs and
qrels to trec_eval's 4 printed decimals (|diff| <= 5e-5): NIST's own expected output of its
test run (``../shared/data/trec_eval/out.test.aq``), and the outputs of the trec_eval 10.0
binary on DL 2019 runs (slow: it builds the binary)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA, dl19_files
from test_trec_eval_binary import BUILD

import irsim
from irsim.data.trec_eval import irsim_name, read_trec_eval
from irsim.errors import ConfigError, InputError
from irsim.kit.loading import load_collection
from irsim.runner import compose_config

TREC_EVAL = SHARED_DATA / "trec_eval"
#: every measure out.test.aq holds that irsim computes (by trec_eval's name)
MAPPED = ["map", "Rprec", "recip_rank", "ndcg"] + [
    f"{m}_{k}" for m in ("P", "ndcg_cut", "map_cut")
    for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)] + ["success_1", "success_5", "success_10"]


def _printed(path: Path) -> dict[tuple[str, str], float]:
    """``{(trec_eval measure, topic): value}`` of a -q output, read with str.split."""
    out = {}
    for line in Path(path).read_text().splitlines():
        measure, topic, value = line.split()
        if topic != "all" and measure not in ("relstring", "runid"):
            out[measure, topic] = float(value)
    return out


def _close_to_evaluate(matrix, runs, qrels, system_of: dict[str, str]) -> int:
    """Assert every value of `matrix` equals irsim.evaluate's to 5e-5; the count compared."""
    df = irsim.evaluate(runs, qrels, list(matrix.metrics), missing="drop")
    assert sorted(df.system.unique()) == sorted(system_of.values())
    compared = 0
    for si, system in enumerate(matrix.systems):
        for mi, metric in enumerate(matrix.metrics):
            want = df[(df.system == system_of[system]) & (df.metric == metric)]
            assert sorted(want.topic) == sorted(matrix.topics)
            got = dict(zip(matrix.topics, matrix.values[mi, si], strict=True))
            diff = np.abs(np.array([got[t] for t in want.topic]) - want.value.to_numpy())
            # 4 decimals printed: half a unit of the last, plus float noise (0.12345 exactly)
            assert diff.max() <= 5e-5 + 1e-12, (system, metric, diff.max())
            compared += len(diff)
    return compared


def test_nists_expected_output_reads_as_irsim_evaluates_its_test_run():
    path = TREC_EVAL / "out.test.aq"
    if not path.is_file():
        pytest.skip(f"trec_eval's test files not found at {TREC_EVAL}")
    cfg = compose_config(["collection=trec_eval", f"collection.runs={path}"]).collection
    wanted = [irsim_name(m) for m in MAPPED]
    assert wanted[:4] == ["AP", "Rprec", "RR", "nDCG"] and "nDCG@10" in wanted
    matrix = load_collection(cfg, metrics=wanted)
    assert matrix.metrics == tuple(wanted) and matrix.topics == ("301", "302", "303")
    printed = _printed(path)
    for mi, m in enumerate(MAPPED):  # the values are the file's own (no 'all' row)
        assert matrix.values[mi, 0].tolist() == [printed[m, t] for t in matrix.topics]
    compared = _close_to_evaluate(matrix, str(TREC_EVAL / "results.test"),
                                  str(TREC_EVAL / "qrels.test"), {"out.test.aq": "results.test"})
    assert compared == len(MAPPED) * 3
    # a measure irsim does not compute keeps trec_eval's name and the file's value
    whole = load_collection(cfg)
    assert whole.select(metrics=["bpref"]).values[0, 0].tolist() == [
        printed["bpref", t] for t in whole.topics]
    assert "relstring" not in whole.metrics and "runid" not in whole.metrics


@pytest.mark.slow  # builds trec_eval 10.0 (a few seconds)
def test_trec_eval_10_outputs_of_dl19_runs_read_as_irsim_evaluates_them(
        trec_eval_10, tmp_path):
    names = ("bm25base_p", "ICT-BERT2", "TUA1-1", "colbert_monoelectra-large")
    runs, qrels = dl19_files(names, ("nist",))
    folder = tmp_path / "evals"
    folder.mkdir()
    for run in runs:  # the binary reads plain text: the .gz piped in
        out = subprocess.run([trec_eval_10, "-q", "-m", "all_trec", qrels["nist"], "-"],
                             input=gzip.open(run).read(), capture_output=True, check=True)
        (folder / Path(run).name.replace(".gz", ".txt")).write_bytes(out.stdout)
    cfg = compose_config(["collection=trec_eval", f"collection.runs={folder}",
                          "metrics=[AP,P@10,nDCG@10,RR,nDCG,Rprec,AP@100]"])
    matrix = load_collection(cfg.collection, metrics=list(cfg.metrics))
    assert matrix.systems == tuple(sorted(names))  # by file name, as every door names runs
    assert len(matrix.topics) == 43
    compared = _close_to_evaluate(matrix, runs, qrels["nist"], {n: n for n in names})
    assert compared == 4 * 7 * 43
    assert 0.2 < matrix.values[0].mean() < 0.6  # real scores, not zeros


@pytest.fixture(scope="module")
def trec_eval_10(tmp_path_factory):
    """NIST's trec_eval 10.0, built as tests/test_trec_eval_binary.py builds it."""
    if not BUILD.is_file() or any(shutil.which(t) is None for t in ("gcc", "make")):
        pytest.skip("trec_eval 10.0 cannot be built here (../shared/tools, gcc, make)")
    out = subprocess.run([str(BUILD), str(tmp_path_factory.mktemp("trec_eval-10.0"))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1]


def _write(d: Path, name: str, text: str) -> Path:
    (d / name).write_text(text)
    return d / name


def test_bad_lines_name_the_file_and_line(tmp_path):
    good = "map\t1\t0.5\nP_10\t1\t0.3\n"
    for text, line, problem in [
        (good + "map 2\n", 3, "expected 3 fields"),
        (good + "map\t2\tabc\n", 3, "not a finite number"),
        (good + "map\t2\tnan\n", 3, "not a finite number"),
        (good + "\nmap\t1\t0.25\n", 4, "also on line 1"),
    ]:
        with pytest.raises(InputError, match=problem) as err:
            read_trec_eval([_write(tmp_path, "r.txt", text)])
        assert err.value.file == str(tmp_path / "r.txt") and err.value.line == line
    with pytest.raises(InputError, match="no per-topic value"):
        read_trec_eval([_write(tmp_path, "all.txt", "map\tall\t0.5\n")])


def test_runs_named_by_file_or_runid_and_missing_topics(tmp_path):
    a = _write(tmp_path, "a.txt", "runid\tall\tA\nmap\t1\t0.5\nmap\t2\t0.25\nmap\tall\t0.375\n")
    b = _write(tmp_path, "b.run", "runid\tall\tB\nmap\t2\t0.75\n")
    with pytest.raises(InputError, match="no AP for topic 1") as err:
        read_trec_eval([a, b])
    assert err.value.file == str(b)
    zero = read_trec_eval([a, b], missing="zero")
    assert zero.systems == ("a", "b") and zero.topics == ("1", "2")
    assert zero.values[0].tolist() == [[0.5, 0.25], [0.0, 0.75]]
    drop = read_trec_eval([a, b], missing="drop", run_names="tag")
    assert drop.systems == ("A", "B") and drop.values[0].tolist() == [[0.25], [0.75]]
    (tmp_path / "other").mkdir()
    with pytest.raises(InputError, match="also the name of"):  # a.txt and other/a.run
        read_trec_eval([a, _write(tmp_path / "other", "a.run", "map\t1\t0.5\n")])


def test_the_kind_is_typed_and_asked_for_by_metric(tmp_path):
    with pytest.raises(ConfigError, match="collection.run_name"):
        from irsim.conf import check_keys

        check_keys(compose_config(["collection=trec_eval", "+collection.run_name=tag"]))
    path = _write(tmp_path, "x.txt", "map\t1\t0.5\nP_10\t1\t0.3\n")
    cfg = compose_config(["collection=trec_eval", f"collection.runs={path}"]).collection
    with pytest.raises(ConfigError, match="unknown metric 'map'"):
        load_collection(cfg, metrics=["map"])
