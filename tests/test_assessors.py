"""experiment=assessors on TREC DL 2019 (the shared dl19-assessors folder): both doors, shard
sizes, label / rank / decision agreement against direct oracles, composites, bad input."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA, dl19_files
from scipy import stats as sps
from test_golden import assert_bit_identical

import irsim
from irsim.errors import ConfigError, InputError

DL19 = SHARED_DATA / "dl19-assessors"
RUNS = ("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4", "colbert_rankzephyr",
        "idst_bert_p1", "TUW19-p3-f", "ICT-BERT2", "colbert_monoelectra-base")
QRELS = ("nist", "andrew-parry", "eugene-yang")
GROUPS = [["ferdinand-schlatt", "froebe"], ["andrew-parry", "eugene-yang"],
          ["guglielmo-faggioli", "harry-scells"], ["saber-zerhoudi", "sean-macavaney"]]
SMALL = {"B": 40, "test_B": 200, "metrics": ["AP", "P@10"], "tests": ["t", "randomisation"],
         "corrections": ["none", "holm"], "seed": 3}


@pytest.fixture(scope="module")
def data():
    return dl19_files(RUNS, QRELS)


@pytest.fixture(scope="module")
def small(data):
    runs, qrels = data
    return irsim.assessors(runs=runs, qrels=qrels, reference="nist", **SMALL)


def test_shard_sizes_give_identical_tables(data, small):
    runs, qrels = data
    for items in (1, 7):
        other = irsim.assessors(runs=runs, qrels=qrels, reference="nist", shard_items=items,
                                **SMALL)
        assert sorted(other.tables) == sorted(small.tables)
        for name in small.tables:
            assert_bit_identical(other.tables[name], small.tables[name], name)


def test_label_agreement_equals_agreement_functions_and_sklearn(small):
    from sklearn.metrics import cohen_kappa_score

    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors.agreement import LABEL_STATS, LABEL_STREAM
    from irsim.stats import agreement as agr

    nist, ap = (read_qrels(DL19 / "qrels" / f"{n}.txt") for n in ("nist", "andrew-parry"))
    topic, _, g = agr.joint_labels(nist, ap)
    lab = small.to_pandas("label_agreement")
    per = small.to_pandas("label_agreement_topic")
    pairs = list(dict.fromkeys(zip(lab.qrels_a, lab.qrels_b, strict=True)))
    item = pairs.index(("nist", "andrew-parry"))
    # per topic: scikit-learn on the topic's passages
    rows = per[(per.qrels_a == "nist") & (per.qrels_b == "andrew-parry")
               & (per.labels == "graded") & (per.statistic == "kappa_quadratic")]
    for t, v in zip(rows.topic, rows.value, strict=True):
        sel = topic == t
        want = cohen_kappa_score(g[sel, 0], g[sel, 1], weights="quadratic", labels=[0, 1, 2, 3])
        np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-12)
    # the mean and its interval: irsim.stats.agreement called directly
    for r, (labels, stat) in enumerate(LABEL_STATS):
        row = lab[(lab.qrels_a == "nist") & (lab.qrels_b == "andrew-parry")
                  & (lab.labels == labels) & (lab.statistic == stat)].iloc[0]
        if stat == "fleiss_reference":  # two assessors and the reference: not a pair with it
            assert np.isnan(row["mean"]) and np.isnan(row.pooled) and row["items"] == 0
            continue
        a, b = (g, g) if labels == "graded" else (g >= 2, g >= 2)
        if stat == "alpha_ordinal":
            _, vals = agr.krippendorff_alpha_per_topic(a.astype(float), topic, "ordinal")
        else:
            w = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}[stat]
            cats = [0, 1, 2, 3] if labels == "graded" else [False, True]
            _, vals = agr.cohen_kappa_per_topic(a[:, 0], b[:, 1], topic, w, labels=cats)
            pooled = cohen_kappa_score(a[:, 0], b[:, 1], weights=w, labels=cats)
            assert row.pooled == pytest.approx(pooled, abs=1e-12)
        ci = agr.mean_kappa_ci(vals, confidence_level=0.95, B=SMALL["B"], seed=SMALL["seed"],
                               study=LABEL_STREAM, key=(item, r))
        assert (row["mean"], row.low, row.high, row.topics) == (ci.mean, ci.low, ci.high,
                                                                 ci.topics)
        assert row["items"] == len(topic)
    conf = small.to_pandas("confusion")
    conf = conf[(conf.qrels_a == "nist") & (conf.qrels_b == "andrew-parry")]
    want = agr.confusion(g[:, 0], g[:, 1], labels=[0, 1, 2, 3])
    assert conf["count"].to_numpy().reshape(4, 4).tolist() == want.tolist()


def test_rank_agreement_equals_scipy_on_system_means(data, small):
    from irsim.metrics import evaluate

    runs, qrels = data
    means = small.to_pandas("system_means")
    ranks = small.to_pandas("rank_agreement")
    for (q, m), part in means.groupby(["qrels", "metric"]):
        row = ranks[(ranks.qrels == q) & (ranks.metric == m)].iloc[0]
        tau = sps.kendalltau(part.reference_mean, part["mean"]).statistic
        rho = sps.spearmanr(part.reference_mean, part["mean"]).statistic
        assert row.tau_b == pytest.approx(tau, abs=1e-12)
        assert row.spearman == pytest.approx(rho, abs=1e-12)
        assert row.tau_b_low <= row.tau_b_high and row.systems == len(RUNS)
        assert row.top1 == (part.reference_mean.idxmax() == part["mean"].idxmax())
    # the reference means are those of irsim.evaluate on the assessor's topics
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs

    ref = evaluate(read_assessor_runs(runs), read_qrels(qrels["nist"]), ["AP"], depth=1000,
                   missing="drop")
    topics = sorted(set(small.to_pandas("label_agreement_topic").query(
        "qrels_b == 'andrew-parry' and qrels_a == 'nist'").topic))
    col = [ref.topics.index(t) for t in topics]
    part = means[(means.qrels == "andrew-parry") & (means.metric == "AP")]
    order = [ref.systems.index(s) for s in part.system]
    np.testing.assert_allclose(part.reference_mean, ref.values[0][order][:, col].mean(axis=1),
                               rtol=1e-12)


def test_decision_agreement_equals_a_per_pair_loop(data):
    """t test with Holm: scipy's ttest_rel pair by pair and statsmodels' multipletests."""
    from statsmodels.stats.multitest import multipletests

    from irsim.experiments.assessors import Config, load_from_python
    from irsim.experiments.assessors.prepare import prepare

    runs, qrels = data
    config = Config(metrics=["P@10"], tests=["t"], corrections=["none", "holm"])
    res = irsim.assessors(runs=runs, qrels=qrels, reference="nist", B=20, metrics=["P@10"],
                          tests=["t"], corrections=["none", "holm"])
    prep = prepare(config, load_from_python(None, {"runs": runs, "qrels": qrels}, config))
    dec = res.to_pandas("decision_agreement")
    for j, q in enumerate(prep.others):
        x, y, _ = prep.compared(j, 0)
        for corr in ("none", "holm"):
            counts = dict.fromkeys(("both", "neither", "lost", "gained", "opposite"), 0)
            p1, p2, d1, d2 = [], [], [], []
            for a, b in itertools.combinations(range(len(RUNS)), 2):
                for p, d, s in ((p1, d1, x), (p2, d2, y)):
                    z = s[a] - s[b]
                    pv = sps.ttest_rel(s[a], s[b]).pvalue
                    p.append(1.0 if np.isnan(pv) else pv)
                    d.append(z.mean())
            r1 = multipletests(p1, 0.05, "holm")[0] if corr == "holm" else np.array(p1) <= .05
            r2 = multipletests(p2, 0.05, "holm")[0] if corr == "holm" else np.array(p2) <= .05
            for s1, s2, a1, a2 in zip(r1, r2, d1, d2, strict=True):
                key = ("neither" if not (s1 or s2) else "lost" if s1 and not s2
                       else "gained" if s2 and not s1
                       else "both" if np.sign(a1) == np.sign(a2) else "opposite")
                counts[key] += 1
            row = dec[(dec.qrels == q) & (dec.correction == corr)].iloc[0]
            assert {k: int(row[k]) for k in counts} == counts
            assert row.power_reference == pytest.approx(sum(r1) / len(r1))


@pytest.mark.slow
def test_paper_pair_kappas_from_the_topic_table(data):
    """The SIGIR 2025 per-pair kappas (binary, mean over the topics judged by exactly two
    secondary assessors: 168216 left out) from the study's per-topic table."""
    runs, _ = data
    names = ["nist", *itertools.chain.from_iterable(GROUPS)]
    res = irsim.assessors(runs=runs[:3], qrels={n: str(DL19 / "qrels" / f"{n}.txt")
                                               for n in names},
                          reference="nist", B=10, test_B=20, metrics=["P@10"], tests=["t"],
                          corrections=["none"])
    per = res.to_pandas("label_agreement_topic")
    per = per[(per.labels == "binary") & (per.statistic == "kappa") & (per.topic != "168216")]
    want = {("andrew-parry", "eugene-yang"): 0.381, ("ferdinand-schlatt", "froebe"): 0.369,
            ("guglielmo-faggioli", "harry-scells"): 0.468,
            ("saber-zerhoudi", "sean-macavaney"): 0.338}
    for (a, b), k in want.items():
        got = per[(per.qrels_a == a) & (per.qrels_b == b)].value.dropna().mean()
        assert round(got, 3) == k
    # the 16 composites: every topic once, 168216 from the first group
    res2 = irsim.assessors(runs=runs[:3], qrels={n: str(DL19 / "qrels" / f"{n}.txt")
                                                for n in names},
                           reference="nist", groups=GROUPS, B=10, test_B=20,
                           metrics=["P@10"], tests=["t"], corrections=["none"])
    ranks = res2.to_pandas("rank_agreement")
    mixes = [q for q in ranks.qrels if q.startswith("mix")]
    assert len(mixes) == 16 and set(ranks[ranks.qrels.isin(mixes)].topics) == {43}
    # the assessor G-study: the reference and the parallel composites on all 43 topics
    gs = res2.to_pandas("assessor_gstudy")
    assert set(gs.levels) == {"nist,mix1111,mix2222"}
    assert set(gs.topics) == {43} and set(gs.assessors) == {3} and len(gs) == 7


def test_composites_take_shared_topics_from_the_first_group(data):
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import composites

    qs = {n: read_qrels(DL19 / "qrels" / f"{n}.txt") for n in itertools.chain(*GROUPS)}
    mix = composites(qs, GROUPS)
    assert list(mix)[:3] == ["mix1111", "mix1112", "mix1121"] and len(mix) == 16
    m = mix["mix2111"]  # froebe, andrew-parry, guglielmo-faggioli, saber-zerhoudi
    sel = m.topic == "168216"
    fr = qs["froebe"]
    want = dict(zip(fr.docno[fr.topic == "168216"], fr.grade[fr.topic == "168216"],
                    strict=True))
    assert dict(zip(m.docno[sel], m.grade[sel], strict=True)) == want
    assert len(set(m.topic)) == 43


def _write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


def test_bad_input_is_one_line(data, tmp_path):
    runs, qrels = data
    base = dict(runs=runs[:2], reference="nist", B=5, test_B=5, metrics=["P@10"],
                tests=["t"], corrections=["none"])
    nist = qrels["nist"]
    cases = [
        ({"nist": nist, "x": _write(tmp_path / "other.txt", ["999999 0 d1 1"])}, InputError,
         "is not judged in the reference"),
        ({"nist": nist, "x": _write(tmp_path / "scale.txt", ["1037798 0 7208049 7"])},
         InputError, "outside the scale"),
        ({"nist": nist, "x": _write(tmp_path / "none.txt", ["1037798 0 no-such-doc 1"])},
         InputError, "shares no judged"),
    ]
    for q, err, text in cases:
        with pytest.raises(err) as info:
            irsim.assessors(qrels=q, **base)
        assert text in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError) as info:
        irsim.assessors(qrels=qrels, **{**base, "reference": "nsit"})
    assert "did you mean 'nist'" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="unjudged"):
        irsim.assessors(qrels=qrels, **{**base, "unjudged": "ignore"})


@pytest.mark.slow
def test_command_line_equals_python(data, small, tmp_path):
    runs, qrels = data
    q = ", ".join(f"{n}: {p}" for n, p in qrels.items())
    args = ["experiment=assessors", "collection=trec", f"collection.runs=[{','.join(runs)}]",
            f"collection.qrels={{{q}}}", "experiment.reference=nist",
            f"experiment.B={SMALL['B']}", f"experiment.test_B={SMALL['test_B']}",
            "experiment.metrics=[AP,P@10]", "experiment.tests=[t,randomisation]",
            "experiment.corrections=[none,holm]", f"seed={SMALL['seed']}",
            f"hydra.run.dir={tmp_path / 'run'}"]
    proc = subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, want in small.tables.items():
        assert_bit_identical(pq.read_table(tmp_path / "run" / "results" / f"{name}.parquet"),
                             want, name)
    assert (tmp_path / "run" / "assessors_kappa.png").is_file()


@pytest.mark.ray
def test_ray_equals_local(data, small):
    runs, qrels = data
    ray = irsim.assessors(runs=runs, qrels=qrels, reference="nist", engine="ray", workers=2,
                          **SMALL)
    for name in small.tables:
        assert_bit_identical(ray.tables[name], small.tables[name], name)


@pytest.mark.parametrize("unjudged", ["reference", "nonrelevant", "condensed"])
def test_unjudged_rule_scores_equal_composite_qrels_evaluated_directly(data, unjudged):
    """The other qrels' means are those of irsim.metrics on composite_qrels (condensed:
    condensed lists), the reference restricted to the assessor's topics; qrels given as a
    list of files are named by their stems."""
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs
    from irsim.metrics.multi import composite_qrels, evaluate_many

    runs, qrels = data
    res = irsim.assessors(runs=runs[:4], qrels=[qrels["nist"], qrels["andrew-parry"]],
                          reference="nist", unjudged=unjudged, B=5, metrics=["AP", "P@10"],
                          tests=["t"], corrections=["none"])
    nist, ap = read_qrels(qrels["nist"]), read_qrels(qrels["andrew-parry"])
    keep = np.isin(nist.topic, list(set(ap.topic)))
    ref = type(nist)(nist.topic[keep], nist.docno[keep], nist.grade[keep], source="nist")
    other = composite_qrels(ref, ap, unjudged=unjudged)
    want = evaluate_many(read_assessor_runs(runs[:4]), {"x": other}, ["AP", "P@10"],
                         missing="drop", condensed=unjudged == "condensed")["x"]
    means = res.to_pandas("system_means")
    assert set(means.qrels) == {"andrew-parry"}
    for k, metric in enumerate(want.metrics):
        part = means[means.metric == metric]
        np.testing.assert_allclose(part["mean"], want.values[k].mean(axis=1), rtol=1e-12)


# ----------------------------------------------------------------------------- G-theory s x t x a

def _anova_lm_ms(x):
    """Mean squares of every term by statsmodels' OLS ANOVA on the long table (the oracle)."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    s, t, a = np.meshgrid(*(np.arange(n) for n in x.shape), indexing="ij")
    df = pd.DataFrame({"y": x.ravel(), "s": s.ravel(), "t": t.ravel(), "a": a.ravel()})
    fit = smf.ols("y ~ C(s) + C(t) + C(a) + C(s):C(t) + C(s):C(a) + C(t):C(a)", df).fit()
    tab = anova_lm(fit, typ=1)
    names = {"C(s)": "system", "C(t)": "topic", "C(a)": "assessor",
             "C(s):C(t)": "system_topic", "C(s):C(a)": "system_assessor",
             "C(t):C(a)": "topic_assessor", "Residual": "residual"}
    return {names[k]: (float(tab.loc[k, "mean_sq"]), int(round(tab.loc[k, "df"])))
            for k in names}


def test_g_study3_mean_squares_equal_statsmodels_anova():
    from irsim.stats.gtheory import COMPONENTS3, g_study3

    rng = np.random.default_rng(5)
    x = (rng.normal(size=(5, 6, 3)) + rng.normal(size=(5, 1, 1))
         + rng.normal(size=(1, 6, 1)) + 0.3 * rng.normal(size=(5, 1, 3)))
    g = g_study3(x)
    want = _anova_lm_ms(x)
    for c in COMPONENTS3:
        np.testing.assert_allclose(g.ms[c], want[c][0], rtol=1e-9, err_msg=c)
        assert g.df[c] == want[c][1], c


def test_g_study3_components_equal_a_loop_over_cells_and_batch():
    from irsim.stats.gtheory import COMPONENTS3, g_study3

    rng = np.random.default_rng(8)
    xs = rng.normal(size=(3, 4, 5, 2)) + rng.normal(size=(3, 4, 1, 1))
    batch = g_study3(xs)
    for b, x in enumerate(xs):
        s, t, a = x.shape
        gm = x.mean()
        ms, mt, ma = x.mean(axis=(1, 2)), x.mean(axis=(0, 2)), x.mean(axis=(0, 1))
        mst, msa, mta = x.mean(axis=2), x.mean(axis=1), x.mean(axis=0)
        ss = dict.fromkeys(COMPONENTS3, 0.0)
        for i in range(s):
            ss["system"] += t * a * (ms[i] - gm) ** 2
            for j in range(t):
                ss["system_topic"] += a * (mst[i, j] - ms[i] - mt[j] + gm) ** 2
                for k in range(a):
                    ss["residual"] += (x[i, j, k] - mst[i, j] - msa[i, k] - mta[j, k]
                                       + ms[i] + mt[j] + ma[k] - gm) ** 2
            for k in range(a):
                ss["system_assessor"] += t * (msa[i, k] - ms[i] - ma[k] + gm) ** 2
        for j in range(t):
            ss["topic"] += s * a * (mt[j] - gm) ** 2
            for k in range(a):
                ss["topic_assessor"] += s * (mta[j, k] - mt[j] - ma[k] + gm) ** 2
        for k in range(a):
            ss["assessor"] += s * t * (ma[k] - gm) ** 2
        df = {"system": s - 1, "topic": t - 1, "assessor": a - 1,
              "system_topic": (s - 1) * (t - 1), "system_assessor": (s - 1) * (a - 1),
              "topic_assessor": (t - 1) * (a - 1), "residual": (s - 1) * (t - 1) * (a - 1)}
        m = {c: ss[c] / df[c] for c in COMPONENTS3}
        raw = {"residual": m["residual"],
               "system_topic": (m["system_topic"] - m["residual"]) / a,
               "system_assessor": (m["system_assessor"] - m["residual"]) / t,
               "topic_assessor": (m["topic_assessor"] - m["residual"]) / s,
               "system": (m["system"] - m["system_topic"] - m["system_assessor"]
                          + m["residual"]) / (t * a),
               "topic": (m["topic"] - m["system_topic"] - m["topic_assessor"]
                         + m["residual"]) / (s * a),
               "assessor": (m["assessor"] - m["system_assessor"] - m["topic_assessor"]
                            + m["residual"]) / (s * t)}
        for c in COMPONENTS3:
            np.testing.assert_allclose(batch.ms[c][b], m[c], rtol=1e-10, err_msg=c)
            np.testing.assert_allclose(batch.var[c][b], max(raw[c], 0.0), rtol=1e-10,
                                       atol=1e-15, err_msg=c)
            assert bool(batch.negative[c][b]) == (raw[c] < 0), c


def test_g_study3_with_one_assessor_recovers_the_two_facet_g_study():
    from irsim.stats.gtheory import d_study3, e_rho2, g_study, g_study3, phi

    x = np.random.default_rng(2).normal(size=(6, 9)) + np.arange(6.0)[:, None] / 3
    g2, g3 = g_study(x), g_study3(x[:, :, None])
    np.testing.assert_allclose(g3.ms["system"], g2.ms_system, rtol=1e-12)
    np.testing.assert_allclose(g3.ms["topic"], g2.ms_topic, rtol=1e-12)
    np.testing.assert_allclose(g3.ms["system_topic"], g2.ms_residual, rtol=1e-12)
    np.testing.assert_allclose(g3.var["system"], g2.var_system, rtol=1e-12)
    np.testing.assert_allclose(g3.var["topic"], g2.var_topic, rtol=1e-12)
    np.testing.assert_allclose(g3.var["system_topic"], g2.var_residual, rtol=1e-12)
    for c in ("assessor", "system_assessor", "topic_assessor", "residual"):
        assert float(g3.var[c]) == 0.0 and g3.df[c] == 0
    n = np.array([1, 9, 50])
    for design in ("crossed", "nested"):
        r, p = d_study3(g3, n, 1, design=design)
        np.testing.assert_allclose(r, e_rho2(g2, n), rtol=1e-12)
        np.testing.assert_allclose(p, phi(g2, n), rtol=1e-12)


def _merged_qrels(nist, other):
    """The reference's judgments on `other`'s topics, `other`'s grades where it judged
    (unjudged=reference), built with pandas (an oracle of composite_qrels)."""
    import pandas as pd

    from irsim.data.types import Qrels

    ref = pd.DataFrame({"t": nist.topic, "d": nist.docno, "g": nist.grade})
    oth = pd.DataFrame({"t": other.topic, "d": other.docno, "g": other.grade})
    ref = ref[ref.t.isin(set(oth.t))]
    both = pd.concat([oth, ref]).drop_duplicates(["t", "d"], keep="first")
    return Qrels(both.t.to_numpy(object), both.d.to_numpy(object), both.g.to_numpy())


def test_assessor_gstudy_equals_g_study3_of_independently_evaluated_scores(data, small):
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import read_assessor_runs
    from irsim.stats.gtheory import COMPONENTS3, d_study3, g_study3

    runs, _ = data
    runs = read_assessor_runs(runs)
    nist = read_qrels(DL19 / "qrels" / "nist.txt")
    levels = {"nist": nist}
    for n in QRELS[1:]:
        levels[n] = _merged_qrels(nist, read_qrels(DL19 / "qrels" / f"{n}.txt"))
    topics = sorted(set(levels["andrew-parry"].topic) & set(levels["eugene-yang"].topic))
    gs, ds = small.to_pandas("assessor_gstudy"), small.to_pandas("assessor_dstudy")
    for metric in SMALL["metrics"]:
        cols = []
        for q in levels.values():
            df = irsim.evaluate(runs, q, [metric], depth=1000, missing="drop")
            wide = df.pivot(index="system", columns="topic", values="value")
            cols.append(wide.loc[list(runs.names), topics].to_numpy())
        g = g_study3(np.stack(cols, axis=-1))
        rows = gs[gs.metric == metric].set_index("component")
        assert rows.levels.iloc[0] == "nist,andrew-parry,eugene-yang"
        assert (rows.topics == len(topics)).all() and (rows.assessors == 3).all()
        for c in COMPONENTS3:
            np.testing.assert_allclose(rows.loc[c, "variance"], g.var[c], rtol=1e-9,
                                       atol=1e-12, err_msg=c)
            np.testing.assert_allclose(rows.loc[c, "mean_square"], g.ms[c], rtol=1e-9,
                                       err_msg=c)
            assert rows.loc[c, "df"] == g.df[c]
        np.testing.assert_allclose(rows.share.sum(), 1.0, rtol=1e-12)
        for design in ("crossed", "nested"):
            part = ds[(ds.metric == metric) & (ds.design == design)]
            r, p = d_study3(g, part.topics.to_numpy(), part.assessors.to_numpy(),
                            design=design)
            np.testing.assert_allclose(part.e_rho2, r, rtol=1e-9)
            np.testing.assert_allclose(part.phi, p, rtol=1e-9)
        assert len(part) == 200 * 5  # the default grid


def test_g_assessors_with_one_level_is_refused(data):
    """One assessor leaves the assessor components without degrees of freedom (reported as
    zero variance, with a D-study built on them): refused with one line (issue 46). The
    one-assessor reduction itself is checked on g_study3 directly (g_study3(x[:, :, None]))."""
    runs, qrels = data
    with pytest.raises(ConfigError, match=r"g_assessors.*names one qrels.*at least 2"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", g_assessors=["nist"],
                        **{**SMALL, "tests": ["t"], "corrections": ["none"]})


def test_a_qrels_named_like_a_composite_is_refused_and_renamed_agrees_fully(data):
    """A qrels passed as `mix1` when groups build a composite `mix1` collided with it (two
    `mix1` rows, neither the copy of the reference): refused, naming the clash (issue 46).
    Under another name the copy of the reference agrees with it exactly (tau-b = 1)."""
    runs, qrels = data
    kw = {**SMALL, "tests": ["t"], "corrections": ["none"], "metrics": ["AP"],
          "simulate_trials": 0, "swap_trials": 0}
    groups = [["andrew-parry", "eugene-yang"]]
    with pytest.raises(ConfigError, match=r"qrels 'mix1' has the name of a composite"):
        irsim.assessors(runs=runs, qrels={**qrels, "mix1": qrels["nist"]}, reference="nist",
                        groups=groups, **kw)
    res = irsim.assessors(runs=runs, qrels={**qrels, "nistcopy": qrels["nist"]},
                          reference="nist", groups=groups, **kw)
    rank = res.to_pandas("rank_agreement")
    assert sorted(set(rank.qrels)) == ["andrew-parry", "eugene-yang", "mix1", "mix2",
                                       "nistcopy"]
    copy = rank[rank.qrels == "nistcopy"]
    assert len(copy) == 1 and copy.tau_b.iloc[0] == 1.0 and copy.tau_ap.iloc[0] == 1.0


def test_g_assessors_bad_input_is_one_clear_error(data):
    runs, qrels = data
    kw = {**SMALL, "tests": ["t"], "corrections": ["none"]}
    with pytest.raises(ConfigError, match="g_assessors"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", g_assessors=["nobody"],
                        **kw)
    with pytest.raises(ConfigError, match="max_assessors"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", max_assessors=0, **kw)


def test_g_study3_bootstrap_equals_a_loop_over_replicates():
    from irsim.rng import blocked_draws
    from irsim.stats.gtheory import COMPONENTS3, g_study3, g_study3_bootstrap

    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 5, 7, 3)) + np.arange(5.0)[None, :, None, None]
    boot = g_study3_bootstrap(x, 260, seed=4, study="s", key=(1,))
    idx = blocked_draws(4, "s", (1,), 0, 260, lambda r, m: r.integers(0, 7, size=(m, 7)))
    for i in (0, 1, 249, 250, 259):  # both sides of a replicate block
        g = g_study3(x[:, :, idx[i], :])
        for c in COMPONENTS3:
            np.testing.assert_allclose(boot.var[c][i], g.var[c], rtol=1e-12, atol=1e-15)
    part = g_study3_bootstrap(x, 60, seed=4, study="s", key=(1,), start=200)
    np.testing.assert_array_equal(part.var["system"], boot.var["system"][200:])


def test_assessor_gstudy_intervals_equal_quantiles_of_a_loop(small):
    from irsim.experiments.assessors.gstudy import GSTUDY_STREAM
    from irsim.rng import blocked_draws
    from irsim.stats.gtheory import COMPONENTS3, d_study3, g_study3

    gs, ds = small.to_pandas("assessor_gstudy"), small.to_pandas("assessor_dstudy")
    B, T = SMALL["B"], int(gs.topics.iloc[0])
    idx = blocked_draws(SMALL["seed"], GSTUDY_STREAM, (), 0, B,
                        lambda r, m: r.integers(0, T, size=(m, T)))
    # the G-study's scores, rebuilt from the tables the study already checks
    from irsim.data.trec import read_qrels
    from irsim.experiments.assessors import AssessorInput, Config, read_assessor_runs
    from irsim.experiments.assessors.prepare import prepare

    runs = [str(DL19 / "runs" / f"{r}.gz") for r in RUNS]
    inp = AssessorInput(read_assessor_runs(runs),
                        {n: read_qrels(DL19 / "qrels" / f"{n}.txt") for n in QRELS})
    x = prepare(Config(reference="nist", metrics=SMALL["metrics"]), inp).g_scores()
    reps = [g_study3(x[:, :, idx[b], :]) for b in range(B)]  # one replicate at a time
    for mi, metric in enumerate(SMALL["metrics"]):
        rows = gs[gs.metric == metric].set_index("component")
        for c in COMPONENTS3:
            v = np.array([np.broadcast_to(g.var[c], (len(SMALL["metrics"]),))[mi]
                          for g in reps])
            lo, hi = np.quantile(v, [0.025, 0.975])
            np.testing.assert_allclose([rows.loc[c, "variance_low"],
                                        rows.loc[c, "variance_high"]], [lo, hi],
                                       rtol=1e-9, atol=1e-15, err_msg=c)
        part = ds[(ds.metric == metric) & (ds.design == "nested") & (ds.topics == 50)
                  & (ds.assessors == 2)].iloc[0]
        r = np.array([float(d_study3(g, 50, 2)[0][mi]) for g in reps])
        np.testing.assert_allclose([part.e_rho2_low, part.e_rho2_high],
                                   np.quantile(r, [0.025, 0.975]), rtol=1e-9)
        assert part.e_rho2_low <= part.e_rho2 <= part.e_rho2_high


@pytest.mark.slow
def test_swap_rates_per_qrels_equal_a_loop_over_trials_and_pairs(data):
    from irsim.experiments.assessors.swaps import SWAP_STREAM
    from irsim.sampling.subsets import subset_indices

    runs, qrels = data
    kw = {**SMALL, "metrics": ["P@10"], "tests": ["t"], "corrections": ["none"]}
    r = irsim.assessors(runs=runs, qrels=qrels, reference="nist", swap_trials=30, **kw)
    split = irsim.assessors(runs=runs, qrels=qrels, reference="nist", swap_trials=30,
                            shard_items=1, shard_replicates=7, **kw)
    assert_bit_identical(split.tables["assessor_swap"], r.tables["assessor_swap"], "swap")
    sw = r.to_pandas("assessor_swap").set_index("qrels")
    assert list(sw.index) == list(QRELS)
    for name in ("nist", "eugene-yang"):
        df = irsim.evaluate(read_runs_for_swap(runs), _qrels_for_swap(name, qrels), ["P@10"],
                            depth=1000, missing="drop")
        wide = df.pivot(index="system", columns="topic", values="value")
        topics = r.to_pandas("system_means")  # the systems' order
        x = wide.loc[list(dict.fromkeys(topics.system))].to_numpy()
        T = x.shape[1]
        c = T // 2
        assert sw.loc[name, "topics"] == T and sw.loc[name, "subset_size"] == c
        idx = subset_indices("disjoint", SMALL["seed"], SWAP_STREAM, T, c, 0, 30)
        comps = swaps = 0
        for t in range(30):  # one trial, one pair at a time
            m1, m2 = x[:, idx[t, 0]].mean(axis=1), x[:, idx[t, 1]].mean(axis=1)
            for i in range(x.shape[0]):
                for j in range(i + 1, x.shape[0]):
                    d1, d2 = m1[i] - m1[j], m2[i] - m2[j]
                    d1 = 0.0 if abs(d1) < 1e-9 else d1
                    d2 = 0.0 if abs(d2) < 1e-9 else d2
                    comps += 1
                    swaps += d1 * d2 < 0 or (d1 == 0) != (d2 == 0)
        assert sw.loc[name, "comparisons"] == comps
        assert sw.loc[name, "swaps"] == swaps
        assert sw.loc[name, "swap_rate"] == pytest.approx(swaps / comps, rel=1e-12)


def read_runs_for_swap(runs):
    from irsim.experiments.assessors import read_assessor_runs

    return read_assessor_runs(runs)


def _qrels_for_swap(name, qrels):
    from irsim.data.trec import read_qrels

    nist = read_qrels(DL19 / "qrels" / "nist.txt")
    return nist if name == "nist" else _merged_qrels(nist, read_qrels(qrels[name]))


def test_bayesian_decision_agreement_equals_a_per_pair_loop(data):
    """experiment.bayes: every pair decided one at a time by the public functions of
    irsim.stats.bayes (the same posterior draws under both qrels), then classified as the
    frequentist decisions are; without bayes the table is empty."""
    from irsim.experiments.assessors import Config, load_from_python
    from irsim.experiments.assessors.bayes import BAYES_STREAM
    from irsim.experiments.assessors.prepare import prepare
    from irsim.stats.bayes import bayes_t_posterior, bayesian_bootstrap, jzs_bayes_factor

    runs, qrels = data
    opts = {"B": 20, "test_B": 300, "metrics": ["P@10"], "tests": ["t"],
            "corrections": ["none"], "seed": 5}
    bayes = ["jzs_bf", "t_posterior", "bayesian_bootstrap"]
    res = irsim.assessors(runs=runs, qrels=qrels, reference="nist", bayes=bayes,
                          bayes_rope=0.02, **opts)
    tab = res.to_pandas("bayes_decision_agreement")
    assert len(tab) == 2 * 3 and set(tab.test) == set(bayes)
    config = Config(metrics=["P@10"], tests=["t"], corrections=["none"])
    prep = prepare(config, load_from_python(None, {"runs": runs, "qrels": qrels}, config))
    decide = {
        "jzs_bf": lambda z: jzs_bayes_factor(z).decision,
        "t_posterior": lambda z: bayes_t_posterior(z, rope=0.02).decision,
        "bayesian_bootstrap": lambda z: bayesian_bootstrap(
            z, rope=0.02, B=300, seed=5, study=BAYES_STREAM, key=key).decision}
    for j, q in enumerate(prep.others):
        key = (j, 0)
        x, y, _ = prep.compared(j, 0)
        for test in bayes:
            counts = dict.fromkeys(("both", "neither", "lost", "gained", "opposite",
                                    "equivalent_reference", "equivalent", "same_decision"),
                                   0)
            for a, b in itertools.combinations(range(len(RUNS)), 2):
                d1, d2 = (str(decide[test](s[a] - s[b])) for s in (x, y))
                diff1, diff2 = d1 in ("better", "worse"), d2 in ("better", "worse")
                cls = ("neither" if not (diff1 or diff2) else "lost" if not diff2
                       else "gained" if not diff1 else "both" if d1 == d2 else "opposite")
                counts[cls] += 1
                counts["equivalent_reference"] += d1 == "equivalent"
                counts["equivalent"] += d2 == "equivalent"
                counts["same_decision"] += d1 == d2
            row = tab[(tab.qrels == q) & (tab.test == test)].iloc[0]
            assert {k: int(row[k]) for k in counts} == counts, (q, test)
            assert row.agreement == (counts["both"] + counts["neither"]) / row.pairs
    assert irsim.assessors(runs=runs, qrels=qrels, reference="nist", **opts
                           ).to_pandas("bayes_decision_agreement").empty
    with pytest.raises(ConfigError, match="bayes_threshold must be >= 1"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", bayes=["jzs_bf"],
                        bayes_threshold=0.5, **opts)
