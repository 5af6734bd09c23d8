"""experiment=factorial on TREC DL 2019 runs (the shared dl19-assessors folder): its tables
against statsmodels (anova_lm, MixedLM), scipy (studentized range, ttest_rel) and the
per-shard evaluation; both doors; bad input."""

from __future__ import annotations

import glob

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, dl19_files
from scipy import stats as sps
from test_factorial import anova_lm
from test_factorial_reml import mixedlm

import irsim
from irsim.data.convert import as_doc_collection
from irsim.errors import ConfigError, InputError
from irsim.experiments.factorial import check_data, factorial_data
from irsim.stats.factorial import randomised_design_tukey

smf = pytest.importorskip("statsmodels.formula.api")

#: 12 DL 2019 runs of very different quality (66 pairs), the NIST qrels, 4 shards.
RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
        "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base", "p_bert",
        "runid3", "srchvrs_ps_run2", "test1")
KW = dict(metrics=["AP", "nDCG@10"], shards=4, B=300, seed=5, alpha=0.05, truth_trials=500,
          split_trials=60)


@pytest.fixture(scope="module")
def dl19():
    runs, qrels = dl19_files(tuple(r for r in RUNS if (
        SHARED_DATA / "dl19-assessors" / "runs" / f"{r}.gz").is_file()), ("nist",))
    assert len(runs) >= 10, runs
    res = irsim.factorial(runs=runs, qrels=qrels["nist"], **KW)
    docs = as_doc_collection(runs, qrels["nist"])
    return res, factorial_data(docs, KW["metrics"], KW["shards"], "")


def _rows(res, name, **where):
    df = res.to_pandas(name)
    for key, value in where.items():
        df = df[df[key].isna()] if value is None else df[df[key] == value]
    return df.reset_index(drop=True)


@pytest.mark.parametrize("design", ["replicated", "crossed"])
def test_fixed_anova_equals_anova_lm(dl19, design):
    res, data = dl19
    for k, metric in enumerate(KW["metrics"]):
        ours = _rows(res, "factorial_anova", metric=metric, design=design, model="fixed")
        ref = anova_lm(data.replicated[k], design)
        assert len(ours) == len(ref) and ours.term.iloc[-1] == "residual"
        np.testing.assert_allclose(ours.ss, ref.sum_sq, rtol=1e-9)
        np.testing.assert_array_equal(ours.df, ref.df)
        np.testing.assert_allclose(ours.f[:-1], ref.F[:-1], rtol=1e-8)
        np.testing.assert_allclose(ours.p_value[:-1], ref["PR(>F)"][:-1], rtol=1e-6,
                                   atol=1e-300)


def test_components_equal_mixedlm(dl19):
    """REML components of the replicated design against statsmodels MixedLM (1e-6)."""
    res, data = dl19
    ours = _rows(res, "factorial_components", metric="AP", design="replicated")
    ref, _ = mixedlm(data.replicated[0], "replicated", start=ours.variance.to_numpy())
    assert ours.component.tolist() == ["topic", "system:topic", "residual"]
    np.testing.assert_allclose(ours.variance, ref, rtol=1e-6)
    assert ours.share.sum() == pytest.approx(1.0)


def _tukey_count(x: np.ndarray, mse: float, df: float, alpha: float) -> int:
    """Pairs whose |difference of means| exceeds the studentized range's critical value."""
    means = x.reshape(x.shape[0], -1).mean(axis=1)
    m = x[0].size
    crit = sps.studentized_range.ppf(1 - alpha, x.shape[0], df) * np.sqrt(mse / m)
    i, j = np.triu_indices(len(means), 1)
    return int((np.abs(means[i] - means[j]) > crit).sum())


def test_tukey_counts_against_the_studentized_range(dl19):
    """The significant pairs of each design and model: scipy's studentized range with the
    error mean square statsmodels' anova_lm gives (fixed: the residual; mixed replicated:
    system:topic)."""
    res, data = dl19
    sig = res.to_pandas("factorial_significant")
    for k, metric in enumerate(KW["metrics"]):
        two = anova_lm(data.full[k], "two_way")
        rep = anova_lm(data.replicated[k], "replicated")
        crossed = anova_lm(data.replicated[k], "crossed")
        want = {
            ("two_way", "fixed"): _tukey_count(data.full[k], two.mean_sq.iloc[-1],
                                               two.df.iloc[-1], 0.05),
            ("replicated", "fixed"): _tukey_count(data.replicated[k], rep.mean_sq.iloc[-1],
                                                  rep.df.iloc[-1], 0.05),
            ("replicated", "mixed"): _tukey_count(data.replicated[k], rep.mean_sq.iloc[2],
                                                  rep.df.iloc[2], 0.05),
            ("crossed", "fixed"): _tukey_count(data.replicated[k], crossed.mean_sq.iloc[-1],
                                               crossed.df.iloc[-1], 0.05)}
        for (design, model), n in want.items():
            got = sig[(sig.metric == metric) & (sig.design == design) & (sig.model == model)
                      & (sig.method == "tukey")].significant
            assert got.tolist() == [n], (metric, design, model)
    # the designs differ on these runs: replicates under the fixed model call more pairs
    ap = sig[(sig.metric == "AP") & (sig.method == "tukey")].set_index(["design", "model"])
    assert ap.significant[("replicated", "fixed")] > ap.significant[("two_way", "fixed")]


def test_t_holm_against_scipy_and_statsmodels(dl19):
    from statsmodels.stats.multitest import multipletests

    res, data = dl19
    pairs = _rows(res, "factorial_pairs", metric="nDCG@10", method="t_holm")
    x = data.full[1]
    i, j = np.triu_indices(len(x), 1)
    p = sps.ttest_rel(x[i], x[j], axis=1).pvalue
    want = multipletests(p, method="holm")[1]
    np.testing.assert_allclose(pairs.p_value, want, rtol=1e-10)
    assert pairs.significant.tolist() == (want < 0.05).tolist()
    np.testing.assert_allclose(pairs["diff"], x[i].mean(1) - x[j].mean(1), atol=1e-12)


def test_randomised_tukey_is_the_designs_permutation_test(dl19):
    res, data = dl19
    for design, blocks in (("two_way", "topic"), ("crossed", "topic_replicate")):
        got = _rows(res, "factorial_pairs", metric="AP", design=design,
                    method="randomised_tukey")
        x = data.full[0] if design == "two_way" else data.replicated[0]
        want = randomised_design_tukey(x, design, blocks=blocks, B=300, seed=5,
                                       study=f"factorial/{design}", key=(0,))
        np.testing.assert_array_equal(got.p_value, want.pvalue)
        assert got.significant.tolist() == (want.pvalue < 0.05).tolist()
        # its simultaneous intervals exclude 0 exactly for the significant pairs
        excludes = (got.ci_lo > 0) | (got.ci_hi < 0)
        assert excludes.tolist() == got.significant.tolist()
        assert got.significant.sum() > 0


def test_whole_collection_scores_are_irsim_evaluate(dl19):
    res, data = dl19
    means = _rows(res, "factorial_means", metric="AP", replicate=None)
    runs, qrels = dl19_files(tuple(means.system), ("nist",))
    ev = irsim.evaluate(runs, qrels["nist"], ["AP"])
    want = ev.groupby("system", sort=False)["value"].mean()
    np.testing.assert_allclose(means["mean"], want[means.system].to_numpy(), rtol=1e-12)


def test_truth_and_split_halves_equal_the_simulation_module(dl19):
    """The known-truth table is the module's run_trials + error_rates on the setting the
    study calibrates (REML components of the crossed design, effects from the whole
    collection), whatever the trial shards; the split halves are split_half_agreement."""
    from irsim.experiments.factorial import truth as tr
    from irsim.experiments.factorial.simulation import TRUTH_METHODS, truth_setting
    from irsim.stats.varcomp import variance_components

    res, data = dl19
    got = _rows(res, "factorial_truth", metric="nDCG@10")
    setting = truth_setting(data.full[1], data.replicated[1], data.systems, count=10,
                            null_share=0.5)
    sd = dict(setting.sd)
    v = variance_components(data.replicated[1], "crossed")
    assert sd["sd_interaction"] == pytest.approx(
        float(np.sqrt(v.var[v.components.index("system:topic")])), rel=1e-12)
    means = data.full[1].mean(axis=1)
    assert setting.effects[0] == pytest.approx(means.max()) and setting.null_pairs == 10
    c = tr.run_trials((0, 500), alpha=0.05, methods=TRUTH_METHODS, seed=5,
                      stream="factorial/truth/1", **setting.model())
    want = tr.error_rates(c, level=0.95)
    assert got.method.tolist() == list(want["method"])
    for name in ("fwer", "power", "type_s"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12)
    # the mixed models keep their level on collections like this one; the fixed ones do not
    fw = got.set_index("method").fwer
    assert fw["replicated_fixed"] > 0.1 and fw["crossed_mixed"] < 0.05 + 3 * np.sqrt(
        0.05 * 0.95 / 500)
    split = _rows(res, "factorial_split_half", metric="AP", design="replicated",
                  model="mixed")
    s = tr.split_half_agreement(data.replicated[0], trials=(0, 60), design="replicated",
                                model="mixed", alpha=0.05, seed=5,
                                stream="factorial/split_half/0")
    assert split.system_agree.iloc[0] == pytest.approx(s.system_agree.mean())
    assert split.pair_agree.iloc[0] == pytest.approx(s.pair_agree.mean(), rel=1e-12)


def test_trial_shards_do_not_change_the_tables():
    from test_api import synthetic_docs

    runs, qrels = synthetic_docs()
    kw = dict(runs=runs, qrels=qrels, metrics=["AP"], shards=3, B=50, truth_trials=600,
              split_trials=300, seed=2)
    a = irsim.factorial(**kw, shard_replicates=250)
    b = irsim.factorial(**kw, shard_replicates=1000)
    for name in ("factorial_truth", "factorial_split_half"):
        assert a.tables[name].equals(b.tables[name]), name


def test_bad_input_is_one_line(dl19):
    _, data = dl19
    flat = type(data)(data.metrics, data.systems, data.topics, data.full,
                      np.repeat(data.full[..., None], 3, axis=-1), data.relevant)
    with pytest.raises(InputError, match="replicates are identical"):
        check_data(flat, ("two_way", "replicated"))
    check_data(flat, ("two_way",))  # the whole collection alone needs no replicates
    runs, qrels = dl19_files(RUNS[:2], ("nist",))
    with pytest.raises(InputError, match="needs >= 3 runs, got 2"):
        irsim.factorial(runs=runs, qrels=qrels["nist"], metrics=["AP"], B=10)
    with pytest.raises(ConfigError, match="shards"):
        irsim.factorial(runs=runs, qrels=qrels["nist"], shards=1)
    with pytest.raises(ConfigError, match="design"):
        irsim.factorial(runs=runs, qrels=qrels["nist"], designs=["latin_square"])


def test_qrels_as_replicates_on_the_topics_every_assessor_judged():
    """Three qrels of DL 2019 (NIST and two assessors): the topics all three judge (13), each
    replicate is irsim.evaluate under that qrels (trec_eval-exact, tested elsewhere)."""
    runs, qrels = dl19_files(RUNS[:8], ("nist", "andrew-parry", "eugene-yang"))
    res = irsim.factorial(runs=runs, qrels=qrels["nist"], metrics=["AP"], B=50,
                          replicates="qrels", replicate_qrels=qrels, truth_trials=0,
                          split_trials=0, methods=["tukey"])
    means = res.to_pandas("factorial_means")
    topics = set.intersection(*(set(pd.read_csv(f, sep=r"\s+", header=None, dtype=str)[0])
                                for f in qrels.values()))
    assert len(topics) == 13
    for name, path in qrels.items():
        ev = irsim.evaluate(runs, path, ["AP"], missing="drop")
        ev = ev[ev.topic.isin(topics)]
        want = ev.groupby("system", sort=False)["value"].mean()
        got = means[means.replicate == name].set_index("system")["mean"]
        np.testing.assert_allclose(got[want.index], want, rtol=1e-12)
    sig = res.to_pandas("factorial_significant")
    assert set(sig.replicates[sig.design != "two_way"]) == {3}


def _renamed(names):
    from dataclasses import replace

    from test_api import synthetic_docs

    runs, qrels = synthetic_docs(runs=len(names))
    return replace(runs, names=tuple(names)), qrels


def test_repeated_runs_as_replicates():
    names = ["a@s1", "b@s2", "a@s2", "c@s1", "b@s1", "c@s2"]
    runs, qrels = _renamed(names)
    res = irsim.factorial(runs=runs, qrels=qrels, metrics=["P@10"], B=50, replicates="runs",
                          designs=["two_way", "replicated"], truth_trials=200,
                          split_trials=0, methods=["tukey"])
    ev = irsim.evaluate(runs, qrels, ["P@10"]).groupby("system", sort=False)["value"].mean()
    means = res.to_pandas("factorial_means")
    got = means.dropna(subset=["replicate"])
    for system, rep, mean in zip(got.system, got.replicate, got["mean"], strict=True):
        assert mean == pytest.approx(ev[f"{system}@{rep}"], rel=1e-12)
    two = means[means.replicate.isna()].set_index("system")["mean"]  # the first replicate
    assert two.to_dict() == pytest.approx({s: ev[f"{s}@s1"] for s in "abc"}, rel=1e-12)
    truth = res.to_pandas("factorial_truth")
    assert not truth.method.str.startswith("crossed").any() and len(truth) == 4
    with pytest.raises(ConfigError, match="design crossed needs replicates"):
        irsim.factorial(runs=runs, qrels=qrels, metrics=["P@10"], replicates="runs")
    bad, qrels = _renamed(["a@1", "a@2", "b@1", "b@3", "c@1", "c@2"])
    with pytest.raises(InputError, match="system 'b' has replicates"):
        irsim.factorial(runs=bad, qrels=qrels, replicates="runs", designs=["replicated"])
    bad, qrels = _renamed(["a@1", "a2", "b@1", "b@2", "c@1", "c@2"])
    with pytest.raises(InputError, match="run 'a2' is not named"):
        irsim.factorial(runs=bad, qrels=qrels, replicates="runs", designs=["replicated"])


def test_collections_nested_against_anova_lm(tmp_path):
    """Two collections of the same 8 DL 2019 runs, each of its own NIST topics (the first 20
    and the next 20): design nested equals statsmodels' anova_lm of the nested OLS; the
    two-way table pools the 40 topics (irsim.evaluate); unequal topic counts are refused
    unless collection_topics is given."""
    runs, qrels = dl19_files(RUNS[:8], ("nist",))
    q = pd.read_csv(qrels["nist"], sep=r"\s+", header=None, dtype=str)
    topics = sorted(set(q[0]))
    files = {}
    for name, part in (("first", topics[:20]), ("second", topics[20:41])):
        files[name] = str(tmp_path / f"{name}.txt")
        q[q[0].isin(part)].to_csv(files[name], sep=" ", header=False, index=False)
    kw = dict(runs=runs, qrels=qrels["nist"], metrics=["AP"], B=50, split_trials=20,
              replicates="collections", replicate_qrels=files, designs=["two_way", "nested"])
    with pytest.raises(InputError, match="set collection_topics"):
        irsim.factorial(**kw)
    res = irsim.factorial(**kw, collection_topics=20)
    from irsim.experiments.factorial import Config, _scores

    data = _scores(Config(replicates="collections", replicate_qrels=files,
                          collection_topics=20), as_doc_collection(runs, qrels["nist"]),
                   ["AP"])
    x = data.scores("nested", 0)
    assert x.shape == (8, 2, 20)
    ours = _rows(res, "factorial_anova", design="nested", model="fixed")
    ref = anova_lm(x, "nested")
    np.testing.assert_allclose(ours.ss, ref.sum_sq, rtol=1e-9)
    np.testing.assert_allclose(ours.f[:-1], ref.F[:-1], rtol=1e-8)
    ev = irsim.evaluate(runs, qrels["nist"], ["AP"])
    ev = ev[ev.topic.isin(topics[:20] + topics[20:40])]
    means = _rows(res, "factorial_means", replicate=None).set_index("system")["mean"]
    want = ev.groupby("system")["value"].mean()
    np.testing.assert_allclose(means[want.index], want, rtol=1e-12)
    assert res.to_pandas("factorial_truth").empty
    assert set(res.to_pandas("factorial_split_half").design) == {"two_way", "nested"}
    with pytest.raises(ConfigError, match="design nested needs replicates=collections"):
        irsim.factorial(runs=runs, qrels=qrels["nist"], designs=["two_way", "nested"])
    with pytest.raises(ConfigError, match="designs=\\[two_way,nested\\]|two_way and nested"):
        irsim.factorial(**{**kw, "designs": ["two_way", "crossed"]}, collection_topics=20)


#: The counts the study page quotes: TREC DL 2019, 61 runs, NIST qrels, AP, 5 shards.
DL19_COUNTS = {("two_way", "fixed"): 575, ("replicated", "fixed"): 899,
               ("crossed", "fixed"): 1188, ("replicated", "mixed"): 554,
               ("crossed", "mixed"): 528}


@pytest.mark.slow
def test_dl19_counts_the_page_quotes():
    runs = sorted(glob.glob(str(SHARED_DATA / "dl19-assessors" / "runs" / "*.gz")))
    if len(runs) != 61:
        pytest.skip("the 61 DL 2019 runs are not there")
    res = irsim.factorial(runs=runs, qrels=str(SHARED_DATA / "dl19-assessors" / "qrels" /
                                              "nist.txt"),
                          metrics=["AP"], methods=["tukey"], seed=1)
    sig = res.to_pandas("factorial_significant").set_index(["design", "model"])
    assert (sig.pairs == 1830).all()
    assert {k: int(sig.significant[k]) for k in DL19_COUNTS} == DL19_COUNTS
    comp = res.to_pandas("factorial_components")
    crossed = comp[comp.design == "crossed"].set_index("component").share
    # "about half", "about a seventh", "a fifth" on the page
    assert 0.45 < crossed["topic"] < 0.55 and 0.12 < crossed["system:topic"] < 0.16
    assert 0.18 < crossed["topic:replicate"] < 0.22
    assert pd.notna(sig.significant).all()


@pytest.mark.slow
def test_the_pages_known_truth_sentence(tmp_path):
    """docs/studies/factorial.md: on the synthetic default the fixed models call a null pair
    significant in well over half of the simulated collections; the whole collection's Tukey
    HSD and the mixed models stay below alpha."""
    from irsim.runner import compose_config, run

    t = run(compose_config(["experiment=factorial", "quiet=true"]), tmp_path / "run",
            report=False)["factorial_truth"].to_pandas()
    for _, part in t.groupby("metric"):
        fw = part.set_index("method").fwer
        assert fw["replicated_fixed"] > 0.55 and fw["crossed_fixed"] > 0.55, fw
        assert max(fw["two_way"], fw["replicated_mixed"], fw["crossed_mixed"]) < 0.05, fw


@pytest.mark.ray
def test_ray_engine_equals_local():
    """Every job kind on Ray (randomised Tukey, Tukey p-values, truth and split-half trial
    shards) gives engine=local's tables bit for bit."""
    from test_api import assert_same_tables, synthetic_docs

    runs, qrels = synthetic_docs()
    kw = dict(runs=runs, qrels=qrels, metrics=["AP", "P@10"], shards=3, B=100, seed=4,
              truth_trials=500, split_trials=30, pair_pvalues=True, shard_replicates=250)
    local = irsim.factorial(**kw)
    ray = irsim.factorial(**kw, engine="ray", workers=2)
    assert ray.manifest["engine"] == "ray" and ray.manifest["run"]["shards"] > 10
    assert_same_tables(ray.tables, local.tables)


def test_command_line_bad_input_is_one_line_and_exit_2(tmp_path):
    """replicates=runs on runs not named <system>@<replicate>: one line, exit 2, no run
    directory left behind."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "irsim", "experiment=factorial",
                          "experiment.replicates=runs", "experiment.designs=[replicated]",
                          f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True,
                         text=True, timeout=600)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2, out.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("irsim: error: ") and \
        "is not named <system>@<replicate>" in lines[0], lines
    assert not (tmp_path / "run" / "results").exists()
