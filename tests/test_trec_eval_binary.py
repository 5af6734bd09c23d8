"""irsim's per-topic values against NIST's trec_eval 10.0 binary and pytrec_eval (issue 42).

trec_eval 10.0 reads run scores as doubles, trec_eval <= 9.0.8 and pytrec_eval (which embeds
9.0.8's code) as single-precision floats; ``scores="float64"`` (the default) must equal the
first and ``scores="float32"`` the second. The binary is built from NIST's unmodified sources
in ``../shared/tools/trec_eval`` by ``../shared/tools/build-trec-eval`` (once per session, in
a temporary directory; skipped without gcc and make). Every run of the DL 2019 assessor data
(``../shared/data/dl19-assessors/runs``, NIST qrels) is compared on ``map``, ``P_10``,
``recip_rank``, ``ndcg_cut_10`` and ``ndcg``: with the binary to its printed 4 decimals (the
rounded strings equal, |diff| <= 5e-5), with pytrec_eval to 1e-12. ``depth`` is checked
against ``-M``.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA

import irsim
from irsim.data.trec import read_run

#: trec_eval's measure (as printed) -> irsim's name
MEASURES = {"map": "AP", "P_10": "P@10", "recip_rank": "RR", "ndcg_cut_10": "nDCG@10",
            "ndcg": "nDCG"}
#: the binary's -m options of MEASURES
TREC_EVAL_OPTIONS = ["-m", "map", "-m", "P.10", "-m", "recip_rank", "-m", "ndcg_cut.10",
                     "-m", "ndcg"]
BUILD = SHARED_DATA.parent / "tools" / "build-trec-eval"
DL19 = SHARED_DATA / "dl19-assessors"


@pytest.fixture(scope="session")
def trec_eval_10(tmp_path_factory) -> str:
    """The path of trec_eval 10.0 built from NIST's sources (once per session)."""
    if not BUILD.is_file():
        pytest.skip(f"trec_eval's build script not found at {BUILD} (../shared/tools)")
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found: NIST's trec_eval 10.0 cannot be "
                    "built from ../shared/tools/trec_eval")
    out = subprocess.run([str(BUILD), str(tmp_path_factory.mktemp("trec_eval-10.0"))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    binary = out.stdout.split()[-1]
    v = subprocess.run([binary, "-v"], capture_output=True, text=True)
    version = v.stdout + v.stderr
    assert "trec_eval version 10.0" in version, version
    return binary


def trec_eval_q(binary: str, qrels: Path, run: Path, *options: str) -> dict:
    """``trec_eval -q`` of one run file (``.gz`` piped in: the binary reads plain text):
    ``{(topic, measure): printed value}`` without the ``all`` lines."""
    data = gzip.open(run).read() if run.suffix == ".gz" else run.read_bytes()
    out = subprocess.run([binary, "-q", *options, *TREC_EVAL_OPTIONS, str(qrels), "-"],
                         input=data, capture_output=True, check=True).stdout.decode()
    values = {}
    for line in out.splitlines():
        measure, topic, value = line.split()
        if topic != "all":
            values[topic, measure] = value
    return values


def irsim_values(run: Path, qrels: Path, **options) -> dict:
    """``irsim.evaluate`` of one run file: ``{(topic, trec_eval measure): value}``.
    ``missing="drop"`` keeps the topics of both the run and the qrels, as trec_eval
    without ``-c``."""
    df = irsim.evaluate(str(run), str(qrels), list(MEASURES.values()), missing="drop",
                        **options)
    names = {v: k for k, v in MEASURES.items()}
    return {(t, names[m]): v for t, m, v in zip(df.topic, df.metric, df.value, strict=True)}


@pytest.fixture(scope="module")
def dl19() -> tuple[list[Path], Path]:
    qrels = DL19 / "qrels" / "nist.txt"
    if not qrels.is_file():
        pytest.skip(f"DL 2019 assessor data not found at {DL19} (set IRSIM_TEST_DATA)")
    runs = sorted((DL19 / "runs").glob("*.gz"))
    assert len(runs) == 61  # the README's 37 official runs and 24 later systems
    return runs, qrels


@pytest.fixture(scope="module")
def dl19_trec_eval_10(trec_eval_10, dl19) -> dict:
    """The binary's -q values of every DL19 run: {run file name: {(topic, measure): str}}."""
    runs, qrels = dl19
    return {run.name: trec_eval_q(trec_eval_10, qrels, run) for run in runs}


def compare_printed(mine: dict, binary: dict) -> list[tuple]:
    """The (topic, measure, irsim, binary) whose values differ at the binary's 4 printed
    decimals; also checks that both give the same (topic, measure) set."""
    assert set(mine) == set(binary)
    return [(*key, mine[key], printed) for key, printed in sorted(binary.items())
            if f"{mine[key]:.4f}" != printed or abs(mine[key] - float(printed)) > 5e-5]


@pytest.mark.slow  # builds trec_eval (a few seconds), 61 processes of it
def test_default_scores_equal_trec_eval_10_on_dl19(dl19, dl19_trec_eval_10):
    """The default (``scores="float64"``): every printed value of trec_eval 10.0."""
    runs, qrels = dl19
    compared, differ = 0, []
    for run in runs:
        binary = dl19_trec_eval_10[run.name]
        differ += [(run.name, *d) for d in compare_printed(irsim_values(run, qrels), binary)]
        compared += len(binary)
    assert compared == 13115  # 61 runs x 43 topics x 5 measures
    assert differ == []
    assert read_run(runs[0]).precision == "float64"  # the default named in the docs


@pytest.mark.slow
def test_float32_scores_are_trec_eval_9_not_10_on_dl19(dl19, dl19_trec_eval_10):
    """``scores="float32"`` is trec_eval 9.0.8's reading (pytrec_eval, checked to 1e-12 in
    the next test): on DL19 it differs from 10.0 where one run's scores differ only beyond
    single precision (TUA1-1, topic 148538: AP and nDCG), and nowhere else."""
    runs, qrels = dl19
    differ = []
    for run in runs:
        mine = irsim_values(run, qrels, scores="float32")
        differ += [(run.name, *d) for d in compare_printed(mine, dl19_trec_eval_10[run.name])]
    assert [(r, t, m, f"{v:.4f}", b) for r, t, m, v, b in differ] == [
        ("TUA1-1.gz", "148538", "map", "0.2927", "0.2930"),
        ("TUA1-1.gz", "148538", "ndcg", "0.4809", "0.4810"),
    ]
    # the cause: that run's scores on that topic tie in float32 and not in float64
    r = read_run(DL19 / "runs" / "TUA1-1.gz")
    score = r.score[r.topic == "148538"]
    assert len(np.unique(score.astype(np.float32))) < len(np.unique(score))


@pytest.mark.slow  # pytrec_eval parses 61 run files in Python
def test_float32_scores_equal_pytrec_eval_on_dl19(dl19):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    runs, qrels = dl19
    with open(qrels) as f:
        evaluator = pytrec_eval.RelevanceEvaluator(
            pytrec_eval.parse_qrel(f), {"map", "P", "recip_rank", "ndcg_cut", "ndcg"})
    compared, worst = 0, 0.0
    for run in runs:
        with gzip.open(run, "rt") as f:
            ref = evaluator.evaluate(pytrec_eval.parse_run(f))
        mine = irsim_values(run, qrels, scores="float32")
        assert {t for t, _ in mine} == set(ref)
        for (topic, measure), value in mine.items():
            worst = max(worst, abs(value - ref[topic][measure]))
            compared += 1
    assert compared == 13115
    assert worst <= 1e-12


def _long_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run of 1,500 documents on each of 4 topics (relevant ones on both sides of rank
    1000) and its qrels: trec_eval's -M1000 and no -M give different AP and nDCG."""
    rng = np.random.default_rng(42)
    run, qrels = [], []
    for t in range(4):
        docs = [f"D{t}-{i:05d}" for i in rng.permutation(1600)[:1500]]
        scores = np.round(np.sort(rng.normal(size=1500))[::-1], 6)
        run += [f"{700 + t} Q0 {d} {i + 1} {s:.6f} long\n"
                for i, (d, s) in enumerate(zip(docs, scores, strict=True))]
        rel = rng.choice(1500, 40, replace=False)  # about a third below rank 1000
        qrels += [f"{700 + t} 0 {docs[i]} {1 + i % 3}\n" for i in rel]
    rp, qp = tmp_path / "long.run", tmp_path / "long.qrels"
    rp.write_text("".join(run))
    qp.write_text("".join(qrels))
    return rp, qp


@pytest.mark.slow
def test_depth_is_trec_eval_M(tmp_path, trec_eval_10):
    """depth=1000 (the default) is ``trec_eval -M1000``, depth=None is trec_eval without
    -M, depth=50 is -M50, on a run of 1,500 documents per topic."""
    run, qrels = _long_run(tmp_path)
    cases = {"default": ({}, ["-M1000"]), "None": ({"depth": None}, []),
             "50": ({"depth": 50}, ["-M50"])}
    got = {}
    for label, (options, flags) in cases.items():
        mine = irsim_values(run, qrels, **options)
        assert compare_printed(mine, trec_eval_q(trec_eval_10, qrels, run, *flags)) == [], label
        got[label] = mine
    # the cut matters here: the values with and without it differ
    assert got["default"][("700", "map")] != got["None"][("700", "map")]
    assert got["default"][("700", "ndcg")] < got["None"][("700", "ndcg")]


@pytest.mark.slow
def test_scores_equal_in_float32_rank_as_trec_eval_10(tmp_path, trec_eval_10):
    """1000000001 and 1000000000: distinct doubles, one float. trec_eval 10.0 ranks the
    first first (RR 1), as the default; float32 ties them and docno descending puts b first
    (RR .5, trec_eval 9.0.8's and pytrec_eval's answer)."""
    run, qrels = tmp_path / "r.txt", tmp_path / "q.txt"
    run.write_text("1 Q0 a 1 1000000001 t\n1 Q0 b 2 1000000000 t\n")
    qrels.write_text("1 0 a 1\n1 0 b 0\n")
    binary = trec_eval_q(trec_eval_10, qrels, run)
    assert binary[("1", "recip_rank")] == "1.0000"
    assert compare_printed(irsim_values(run, qrels), binary) == []
    assert irsim_values(run, qrels, scores="float32")[("1", "recip_rank")] == 0.5
