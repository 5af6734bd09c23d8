"""The Python front door: every study from a DataFrame (or runs and qrels) equals the command
line bit for bit; bad parameters raise one typed error naming the keyword."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import SHARED_DATA
from golden.record import tables_of
from test_golden import assert_bit_identical

import irsim
from irsim.errors import ConfigError, InputError

URBANO = SHARED_DATA / "urbano"
TREC_EVAL = SHARED_DATA / "trec_eval"


def frame(name: str, systems: int | None = None) -> pd.DataFrame:
    df = pd.read_csv(URBANO / f"{name}.csv")
    return df if systems is None else df.iloc[:, :systems]


def assert_same_tables(api: dict[str, pa.Table], cli: dict[str, pa.Table]) -> None:
    assert sorted(api) == sorted(cli)
    for name in cli:
        assert_bit_identical(api[name], cli[name], name)


def synthetic_docs(runs: int = 6, topics: int = 12, seed: int = 0):
    """The embedded synthetic collection's generator, as objects (CLI: collection=synthetic
    with the same sizes)."""
    from irsim.data.synthetic import synthetic_trec

    quality = np.linspace(0.5, 1.5, runs)
    return synthetic_trec(runs=runs, topics=topics, docs_per_topic=200, depth=200,
                          relevant_rate=0.05, quality=quality, quality_sd=0.4, topic_sd=0.8,
                          seed=seed)


SYNTH_CLI = ["collection.runs=6", "collection.topics=12", "collection.docs_per_topic=200",
             "collection.depth=200"]

#: study -> (API call, CLI overrides): the same data and parameters through both doors
CASES = {
    "discpower": (
        lambda: irsim.discpower(frame("adhoc8_ap"), metric="AP", B=300, seed=5,
                                alpha=[0.01, 0.05, 0.1]),
        ["collection=matrix", f"collection.path={URBANO}/adhoc8_ap.csv",
         "collection.metric=AP", "experiment.B=300", "seed=5",
         "experiment.alpha=[0.01,0.05,0.1]"]),
    "swap": (
        lambda: irsim.swap({"AP": frame("adhoc8_ap"), "P@10": frame("adhoc8_p10")},
                           trials=100, subset_sizes=[10, 20], seed=2),
        ["experiment=swap", "collection=matrix",
         f"collection.paths={{AP: {URBANO}/adhoc8_ap.csv, P@10: {URBANO}/adhoc8_p10.csv}}",
         "experiment.trials=100", "experiment.subset_sizes=[10,20]", "seed=2"]),
    "error_rates": (
        lambda: irsim.error_rates(frame("adhoc8_ap"), metric="AP", trials=10, test_B=200,
                                  sd_samples=5, subset_sizes=[5, 10]),
        ["experiment=error_rates", "collection=matrix", f"collection.path={URBANO}/adhoc8_ap.csv",
         "collection.metric=AP", "experiment.trials=10", "experiment.test_B=200",
         "experiment.sd_samples=5", "experiment.subset_sizes=[5,10]"]),
    "effort": (
        lambda: irsim.effort(runs=synthetic_docs()[0], qrels=synthetic_docs()[1], trials=10,
                             subset_sizes=[2, 4]),
        ["experiment=effort", *SYNTH_CLI, "experiment.trials=10",
         "experiment.subset_sizes=[2,4]"]),
    "coverage": (
        lambda: irsim.coverage(frame("adhoc8_ap"), metric="AP", samples=100, B=200,
                               sizes=[5, 10]),
        ["experiment=coverage", "collection=matrix", f"collection.path={URBANO}/adhoc8_ap.csv",
         "collection.metric=AP", "experiment.samples=100", "experiment.B=200",
         "experiment.sizes=[5,10]"]),
    "corpus_ci": (
        lambda: irsim.corpus_ci(runs=TREC_EVAL / "results.test", qrels=TREC_EVAL / "qrels.test",
                                B=300, validate=False),
        ["experiment=corpus_ci", "collection=trec", f"collection.runs={TREC_EVAL}/results.test",
         f"collection.qrels={TREC_EVAL}/qrels.test", "experiment.B=300",
         "experiment.validate=false"]),
    "test_errors": (
        lambda: irsim.test_errors(frame("web2012_ndcg20"), metric="nDCG@20", trials=200, B=200,
                                  sizes=[25], deltas=[0.0, 0.03], alpha=[0.01, 0.05], seed=4),
        ["experiment=test_errors", "collection=matrix",
         f"collection.path={URBANO}/web2012_ndcg20.csv", "collection.metric=nDCG@20",
         "experiment.trials=200", "experiment.B=200", "experiment.sizes=[25]",
         "experiment.deltas=[0.0,0.03]", "experiment.alpha=[0.01,0.05]", "seed=4"]),
    "factorial": (
        lambda: irsim.factorial(runs=synthetic_docs()[0], qrels=synthetic_docs()[1],
                                metrics=["AP", "P@10"], shards=3, B=200, seed=0,
                                pair_pvalues=True, truth_trials=300, split_trials=30),
        ["experiment=factorial", *SYNTH_CLI, "metrics=[AP,P@10]", "experiment.shards=3",
         "experiment.B=200", "seed=0", "experiment.pair_pvalues=true",
         "experiment.truth_trials=300", "experiment.split_trials=30"]),
}


@pytest.mark.parametrize("study", sorted(CASES))
def test_api_equals_cli(study):
    call, overrides = CASES[study]
    result = call()
    assert result.name == study
    assert_same_tables(result.tables, tables_of(overrides))


def test_dataframe_forms_agree():
    ap, p10 = frame("adhoc8_ap", 12), frame("adhoc8_p10", 12)
    wide = irsim.discpower({"AP": ap, "P@10": p10}, B=200, seed=1)
    long = irsim.discpower(irsim.api.as_score_matrix({"AP": ap, "P@10": p10}), B=200, seed=1)
    topics = [str(i + 1) for i in range(len(ap))]
    rows = [(s, t, m, float(v)) for m, df in (("AP", ap), ("P@10", p10))
            for s in df.columns for t, v in zip(topics, df[s], strict=True)]
    longer = irsim.discpower(pd.DataFrame(rows, columns=["system", "topic", "metric", "value"]),
                             B=200, seed=1)
    assert_same_tables(wide.tables, long.tables)
    assert_same_tables(wide.tables, longer.tables)
    # the AP rows equal a run on AP alone (metrics are studied independently)
    alone = irsim.discpower(ap, metric="AP", B=200, seed=1).to_pandas("asl")
    both = wide.to_pandas("asl")
    pd.testing.assert_frame_equal(both[both.metric == "AP"].reset_index(drop=True), alone)


def test_evaluate_equals_trec_eval_and_feeds_a_study():
    per_topic = irsim.evaluate(TREC_EVAL / "results.test", TREC_EVAL / "qrels.test",
                               ["AP", "P@10"])
    assert list(per_topic.columns) == ["system", "topic", "metric", "value"]
    # trec_eval -a -q on the same files (out.test.aq, per topic)
    ref = {}
    for line in (TREC_EVAL / "out.test.aq").read_text().splitlines():
        measure, topic, value = line.split()
        if measure in ("map", "P_10") and topic != "all":
            ref[("AP" if measure == "map" else "P@10", topic)] = float(value)
    got = {(m, t): v for m, t, v in per_topic[["metric", "topic", "value"]].itertuples(
        index=False)}
    assert len(ref) == len(got) == 6
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, abs=5e-5)
    # and it feeds a study like any long DataFrame (one run: no pairs, but the tables exist)
    res = irsim.coverage(per_topic, metrics=["AP"], sizes=[2], samples=20, B=50)
    assert res.to_pandas("coverage").intervals.min() == 20


def test_result_object(tmp_path):
    res = irsim.discpower(frame("adhoc8_ap", 8), metric="AP", B=100, seed=0)
    assert "asl" in repr(res) and res.to_pandas().equals(res.to_pandas("asl"))
    assert res.manifest["config"]["experiment"]["B"] == 100
    assert res.manifest["seed"] == 0 and res.manifest["collection"]["systems"] == 8
    path = res.report(tmp_path / "run")
    assert path.read_text().startswith("# irsim report: discpower")
    assert (tmp_path / "run" / "results" / "asl.parquet").is_file()
    assert any(tmp_path.joinpath("run").glob("*.png"))
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["experiment"] == \
        "discpower"
    with pytest.raises(ConfigError, match="unknown table 'asll'"):
        res.to_pandas("asll")


def test_signature_is_the_config():
    import inspect

    params = inspect.signature(irsim.discpower).parameters
    assert params["B"].default == 1000 and params["B"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["alpha"].default == [0.01, 0.05]
    assert {"seed", "engine", "workers"} <= set(params)
    assert "B" in irsim.discpower.__doc__


@pytest.mark.parametrize("kwargs, error, message", [
    ({"B": 0}, ConfigError, "^B must be an integer >= 1, got 0$"),
    ({"BB": 100}, ConfigError, "unknown parameter of irsim.discpower 'BB' .*did you mean 'B'"),
    ({"B": "many"}, ConfigError, "^B: "),
    ({"alpha": [0.05, 1.5]}, ConfigError, "^alpha must be inside"),
    ({"tests": ["paired_bootstrp"]}, ConfigError, "did you mean 'paired_bootstrap'"),
    ({"engine": "spark"}, ConfigError, "unknown engine 'spark'"),
    ({"seed": 1.5}, ConfigError, "seed must be an integer"),
    ({"workers": 2}, ConfigError, "workers needs engine='ray'"),
])
def test_bad_parameters_name_the_keyword(kwargs, error, message):
    with pytest.raises(error, match=message):
        irsim.discpower(frame("adhoc8_ap", 5), metric="AP", **kwargs)


def test_bad_data():
    bad = frame("adhoc8_ap", 3).astype(object)
    bad.iloc[4, 1] = "n/a"
    with pytest.raises(InputError, match=r"non-numeric value 'n/a' in column .* \(topic 5\)"):
        irsim.discpower(bad, metric="AP")
    missing = frame("adhoc8_ap", 3)
    missing.iloc[2, 0] = np.nan
    with pytest.raises(InputError, match="missing or infinite value"):
        irsim.discpower(missing, metric="AP")
    with pytest.raises(ConfigError, match="needs data"):
        irsim.discpower()
    with pytest.raises(ConfigError, match="data must be a pandas DataFrame"):
        irsim.discpower([[0.1, 0.2]])
    with pytest.raises(InputError, match="runs file not found"):
        irsim.corpus_ci(runs="/nonexistent/run.txt", qrels=TREC_EVAL / "qrels.test")


@pytest.mark.ray
def test_ray_engine_equals_local():
    df = frame("adhoc8_ap", 20)
    local = irsim.discpower(df, metric="AP", B=500, seed=9, shard_items=64,
                            shard_replicates=250)
    ray = irsim.discpower(df, metric="AP", B=500, seed=9, engine="ray", workers=2)
    assert ray.manifest["engine"] == "ray" and ray.manifest["run"]["shards"] >= 1
    assert_same_tables(ray.tables, local.tables)


def test_metric_selects_one_metric_of_multi_metric_data_or_refuses_it():
    """issue 31: with data of several metrics (a long DataFrame, a dict of DataFrames, a
    ScoreMatrix), ``metric=`` keeps that metric only, and a metric that is not there is a
    ConfigError naming the valid ones (it used to be ignored silently)."""
    rng = np.random.default_rng(4)
    systems, topics = [f"r{i}" for i in range(5)], [str(t) for t in range(20)]
    frames = {m: pd.DataFrame(rng.random((20, 5)), columns=systems) for m in ("AP", "RR")}
    long = pd.concat([f.assign(topic=topics).melt("topic", var_name="system")
                      .assign(metric=m) for m, f in frames.items()])
    one = irsim.discpower(frames["RR"], metric="RR", B=100, seed=1).to_pandas("discpower")
    for data in (long, frames, irsim.api.as_score_matrix(long)):
        got = irsim.discpower(data, metric="RR", B=100, seed=1).to_pandas("discpower")
        assert got["metric"].unique().tolist() == ["RR"]
        pd.testing.assert_frame_equal(got, one)
        with pytest.raises(ConfigError, match=r"unknown metric 'nDCG@10'.*valid: AP, RR"):
            irsim.discpower(data, metric="nDCG@10", B=100, seed=1)
    got = irsim.swap(long, metric="AP", trials=20, seed=1).to_pandas("swap_summary")
    assert got["metric"].unique().tolist() == ["AP"]


def test_progress_bar_defaults_to_on_when_someone_watches(monkeypatch):
    """issue 31: progress=None (the default) shows the bar in a terminal or a notebook and
    not otherwise; True/False force it."""
    import sys

    from irsim import api

    assert api._progress("swap", None) == (None, None)  # pytest: not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar, update = api._progress("swap", None)
    assert bar is not None and callable(update)
    bar.close()
    assert api._progress("swap", False) == (None, None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", object())  # imported, no kernel running
    assert api._progress("swap", None) == (None, None)

    class Shell:  # IPython's shell inside a Jupyter kernel
        config = {"IPKernelApp": {}}

    monkeypatch.setitem(sys.modules, "IPython", type("IPython", (), {
        "get_ipython": staticmethod(lambda: Shell())}))
    bar, _ = api._progress("swap", None)
    assert bar is not None
    bar.close()
    assert inspect_default("progress") is None


def inspect_default(key: str):
    import inspect

    return inspect.signature(irsim.swap).parameters[key].default


@pytest.mark.parametrize("seed", [-1, 1.5, "3", None, True])
def test_a_bad_seed_is_a_config_error_in_the_python_door(seed):
    """One seed rule for both doors (irsim.rng.check_seed): it used to end in a bare
    ValueError from inside a kernel for seed=-1."""
    df = pd.DataFrame(np.random.default_rng(0).random((10, 3)), columns=list("abc"))
    with pytest.raises(ConfigError, match="seed must be an integer >= 0"):
        irsim.discpower(df, metric="AP", B=10, seed=seed)
    assert irsim.discpower(df, metric="AP", B=100, seed=np.int64(2)).manifest["seed"] == 2


def test_result_headline_is_the_clis_answer():
    res = irsim.swap(frame("adhoc8_ap", 10), metric="AP", trials=20, subset_sizes=[5],
                     seed=1)
    text = res.headline()
    summary = res.to_pandas("swap_summary")
    assert text.splitlines()[0] == ("swap_summary: required_diff by confidence (metric=AP, "
                                    "subset_size=5)")
    head = text.splitlines()[1].split()
    assert head[0] == "sampling" and head[1:] == [f"confidence={c:g}" for c in
                                                  dict.fromkeys(summary.confidence)]
    body = {r.split()[0]: [float(v) for v in r.split()[1:]] for r in text.splitlines()[2:]}
    for row in summary.itertuples():
        col = list(dict.fromkeys(summary.confidence)).index(row.confidence)
        assert body[row.sampling][col] == float(f"{row.required_diff:.4g}")
