"""Per-topic values against trec_eval's own test outputs (usnistgov/trec_eval test files).

trec_eval prints 4 decimals; we compare at that precision (|ours - printed| <= 5e-5),
per topic and for the 'all' line (the mean over topics). Interpolated precision is not
pinned (it changed between trec_eval 9.0.8 and 10.0).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import SHARED_DATA

from irsim.data.trec import read_qrels, read_run
from irsim.metrics import evaluate

DATA = SHARED_DATA / "trec_eval"
TOL = 5e-5 + 1e-12


def trec_eval_output(name: str) -> dict[str, dict[str, float]]:
    """{measure: {qid or 'all': value}} from a trec_eval -q output file."""
    out: dict[str, dict[str, float]] = {}
    for line in (DATA / name).read_text().splitlines():
        meas, qid, value = line.split()
        try:
            out.setdefault(meas, {})[qid] = float(value)
        except ValueError:  # runid, relstring
            pass
    return out


def irsim_name(trec_name: str, rel: int) -> str | None:
    """The irsim measure for a trec_eval measure name (None if not supported)."""
    r = f"(rel={rel})" if rel != 1 else ""
    if trec_name == "map":
        return f"AP{r}"
    if trec_name == "Rprec":
        return f"Rprec{r}"
    if trec_name == "recip_rank":
        return f"RR{r}"
    if trec_name == "ndcg":
        return "nDCG"  # trec_eval's ndcg uses gains, not the -l threshold
    if m := re.fullmatch(r"ndcg_cut_(\d+)", trec_name):
        return f"nDCG@{m[1]}"
    if m := re.fullmatch(r"P_(\d+)", trec_name):
        return f"P{r}@{m[1]}"
    if m := re.fullmatch(r"success_(\d+)", trec_name):
        return f"Success{r}@{m[1]}"
    if m := re.fullmatch(r"map_cut_(\d+)", trec_name):
        return f"AP{r}@{m[1]}"
    return None


@pytest.fixture(scope="module")
def run():
    return read_run(DATA / "results.test")


def check(out: dict[str, dict[str, float]], matrix, pairs: list[tuple[str, str]]) -> None:
    assert matrix.topics == ("301", "302", "303")
    for trec_name, ours in pairs:
        values = matrix.metric(ours)[0]
        expected = out[trec_name]
        for t, v in zip(matrix.topics, values, strict=True):
            assert abs(v - expected[t]) <= TOL, (trec_name, ours, t, v, expected[t])
        assert abs(values.mean() - expected["all"]) <= TOL, (trec_name, "all")


@pytest.mark.parametrize(("outfile", "qrels", "rel"), [
    ("out.test.aq", "qrels.test", 1),      # trec_eval -m all_trec -q
    ("out.test.aql", "qrels.rel_level", 2),  # ... -l2 on graded qrels (grades -1..4)
])
def test_all_trec(run, outfile, qrels, rel):
    out = trec_eval_output(outfile)
    pairs = [(t, irsim_name(t, rel)) for t in out if irsim_name(t, rel)]
    names = {t for t, _ in pairs}
    assert {"map", "Rprec", "recip_rank", "ndcg", "P_10", "ndcg_cut_10", "success_1"} <= names
    assert len(pairs) >= 20
    m = evaluate(run, read_qrels(DATA / qrels), [ours for _, ours in pairs])
    check(out, m, pairs)


def test_num_rel_matches_qrels(run):
    out = trec_eval_output("out.test.aql")
    q = read_qrels(DATA / "qrels.rel_level")
    for t in ("301", "302", "303"):
        assert out["num_rel"][t] == ((q.topic == t) & (q.grade >= 2)).sum()


def test_measure_parameters(run):
    """out.test.meas_params: -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -m P.5,7,3
    -msuccess.2,5,20. trec_eval reads the cut-off 23.4 with atol (23); irsim only takes
    integer cut-offs, so it is checked as nDCG@23."""
    out = trec_eval_output("out.test.meas_params")
    pairs = [
        ("ndcg_1=3,2=9,4=4.5", "nDCG(gains={1:3,2:9,4:4.5})"),
        ("ndcg_cut_10", "nDCG@10"), ("ndcg_cut_20", "nDCG@20"), ("ndcg_cut_23", "nDCG@23"),
        ("P_3", "P@3"), ("P_5", "P@5"), ("P_7", "P@7"),
        ("success_2", "Success@2"), ("success_5", "Success@5"), ("success_20", "Success@20"),
    ]
    m = evaluate(run, read_qrels(DATA / "qrels.test"), [ours for _, ours in pairs])
    check(out, m, pairs)


def test_custom_gains_matter_on_graded_qrels(run):
    """On graded qrels custom gains change nDCG (the binary test above cannot show it)."""
    q = read_qrels(DATA / "qrels.rel_level")
    m = evaluate(run, q, ["nDCG", "nDCG(gains={1:3,2:9,4:4.5})", "nDCG(gains={0:0})"])
    assert not np.allclose(m.values[0], m.values[1])
    np.testing.assert_array_equal(m.values[0], m.values[2])  # {0:0} is the default


@pytest.mark.parametrize(("outfile", "qrels", "ap"), [
    ("out.test.aq", "qrels.test", "AP"), ("out.test.aql", "qrels.rel_level", "AP(rel=2)")])
def test_gm_map(run, outfile, qrels, ap):
    from irsim.metrics import aggregate

    out = trec_eval_output(outfile)
    m = evaluate(run, read_qrels(DATA / qrels), [ap])
    assert abs(aggregate(m.metric(ap), "gmean_trec")[0] - out["gm_map"]["all"]) <= TOL


def test_gzip_run_and_qrels_give_the_same_values(tmp_path):
    """`irsim evaluate` on gzip-compressed copies of results.test and qrels.test: the same
    per-topic table as on the plain files (values bit-identical), equal to trec_eval's printed
    values (out.test.aq) and to pytrec_eval fed the decompressed text parsed here."""
    import gzip

    import pyarrow.parquet as pq

    from irsim.cli import main

    pytrec_eval = pytest.importorskip("pytrec_eval")
    run_gz, qrels_gz = tmp_path / "results.test.gz", tmp_path / "qrels.test.gz"
    run_gz.write_bytes(gzip.compress((DATA / "results.test").read_bytes()))
    qrels_gz.write_bytes(gzip.compress((DATA / "qrels.test").read_bytes()))
    pairs = [("map", "AP"), ("P_10", "P@10"), ("ndcg_cut_10", "nDCG@10"),
             ("recip_rank", "RR"), ("Rprec", "Rprec"), ("success_5", "Success@5")]
    metrics = "[" + ",".join(ours for _, ours in pairs) + "]"
    tables = {}
    for key, runs, qrels in (("plain", DATA / "results.test", DATA / "qrels.test"),
                             ("gz", run_gz, qrels_gz)):
        main(["evaluate", "collection=trec", f"collection.runs={runs}",
              f"collection.qrels={qrels}", f"metrics={metrics}", "quiet=true",
              f"hydra.run.dir={tmp_path / key}"])
        tables[key] = pq.read_table(tmp_path / key / "results" / "per_topic.parquet").to_pandas()
    plain, gz = tables["plain"], tables["gz"]
    assert gz.columns.tolist() == ["metric", "system", "topic", "value"]
    assert len(gz) == len(pairs) * 3
    assert gz[["metric", "system", "topic"]].equals(plain[["metric", "system", "topic"]])
    np.testing.assert_array_equal(gz.value.to_numpy().view(np.int64),
                                  plain.value.to_numpy().view(np.int64))
    # trec_eval's printed values (4 decimals)
    out = trec_eval_output("out.test.aq")
    for trec_name, ours in pairs:
        for row in gz[gz.metric == ours].itertuples():
            assert abs(row.value - out[trec_name][row.topic]) <= TOL, (ours, row.topic)
    # pytrec_eval on the decompressed text, parsed with str.split
    qrels: dict[str, dict[str, int]] = {}
    for line in gzip.decompress(qrels_gz.read_bytes()).decode().splitlines():
        t, _, d, g = line.split()
        qrels.setdefault(t, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in gzip.decompress(run_gz.read_bytes()).decode().splitlines():
        t, _, d, _, s, _ = line.split()
        run.setdefault(t, {})[d] = float(s)
    res = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.10", "ndcg_cut.10", "recip_rank",
                                                 "Rprec", "success.5"}).evaluate(run)
    for trec_name, ours in pairs:
        for row in gz[gz.metric == ours].itertuples():
            assert row.value == pytest.approx(res[row.topic][trec_name], abs=1e-9), (ours,
                                                                                    row.topic)
