"""Bayesian decisions in experiment=multiple_testing (issue 28): table
``bayes_multiple_testing``.

- A per-comparison Python loop regenerates the study's simulated collections block by block
  and decides every pair of every trial with the public functions of
  :mod:`irsim.stats.bayes`, one pair at a time (the Bayesian bootstrap with the study's
  stream and batch key), and scipy's paired t test; its counts equal the table's exactly.
- The significance tests' rows agree with tables ``multiple_testing`` and ``type_m_s`` of
  the same run.
- Shard sizes change nothing; without ``bayes`` nothing changes; the Python door equals the
  command line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import irsim
from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments.multiple_testing import TOPIC_STREAM, MultipleTesting, prepare
from irsim.rng import REPLICATE_BLOCK, blocked_draws, study_key
from irsim.simulate.joint_copula_model import (
    fit_joint_copula_model,
    null_pair_mask,
    true_null_count,
)
from irsim.stats.bayes import bayes_t_posterior, bayesian_bootstrap, jzs_bayes_factor

BAYES = ("jzs_bf", "t_posterior", "bayesian_bootstrap")
ROPE = 0.04
#: m = 6 with share_null 0.5: 3 null systems, the others 0.1/3 apart above them (true
#: differences of 0.033 inside the ROPE, 0.067 and 0.1 outside); share_null 1: all tie
SMALL = dict(sizes=(12,), systems=(6,), share_null=(1.0, 0.5), alpha=(0.05,), tests=("t",),
             corrections=("none", "holm"), trials=260, B=100, seed=9, bayes=BAYES,
             bayes_rope=ROPE)


@pytest.fixture(scope="module")
def data():
    """A generator fitted to 8 synthetic AP runs (kernel margins, Gaussian copula)."""
    m = synthetic_scores(systems=8, topics=30, metrics=("AP",), seed=3).matrix
    model = fit_joint_copula_model(m.metric("AP"), metric="AP", systems=m.systems, spread=0.1)
    return prepare([model], systems=(6,), shares=(1.0, 0.5), spread=0.1)


@pytest.fixture(scope="module")
def tables(data):
    out, info = run_study(MultipleTesting.of(**SMALL, shard_replicates=250), data)
    assert info["shards"] == 2 * 2  # a configuration per shard x two trial blocks
    return out


def _reference(study: MultipleTesting, data, m: int, share: float) -> dict:
    """Counts of one configuration by a loop over trials and pairs."""
    model, n = data.models[0], study.config.sizes[0]
    m0 = true_null_count(m, share)
    shifts = data.shifts[0][(m, m0)]
    pa_, pb_ = np.triu_indices(m, 1)
    null = null_pair_mask(m, m0)
    mkey = study_key(model.metric)
    keys = ("false_different", "familywise", "right", "wrong", "rope_comparisons",
            "equivalent_inside", "equivalent_outside", "undecided")
    count = {b: dict.fromkeys(keys, 0) for b in (*BAYES, "t")}
    for a in range(0, study.config.trials, REPLICATE_BLOCK):
        b = min(study.config.trials, a + REPLICATE_BLOCK)
        draws = blocked_draws(study.seed, TOPIC_STREAM, (mkey, n), a, b,
                              lambda rng, k: model.draw(rng, k, n))
        order, logit = model.latent(draws, n)
        x, margins = model.scores(order, logit, m, shifts, m0=m0)
        means = model.true_means(margins, shifts)
        key = (mkey, n, a // REPLICATE_BLOCK, 0)  # one batch per block at this size
        for t in range(len(x)):
            false_any = dict.fromkeys(count, False)
            for p, (i, j) in enumerate(zip(pa_, pb_, strict=True)):
                xi, xj = x[t, i], x[t, j]
                delta = means[t, i] - means[t, j]
                decided = {
                    "jzs_bf": str(jzs_bayes_factor(xi, xj, threshold=3.0).decision),
                    "t_posterior": str(bayes_t_posterior(xi, xj, rope=ROPE,
                                                         prob=0.95).decision),
                    "bayesian_bootstrap": str(bayesian_bootstrap(
                        xi, xj, rope=ROPE, prob=0.95, B=100, seed=9,
                        study="multiple_testing/bayesian_bootstrap", key=key).decision)}
                sig = sps.ttest_rel(xi, xj).pvalue <= 0.05
                decided["t"] = ("better" if xi.mean() > xj.mean() else "worse") if sig \
                    else "undecided"
                for name, d in decided.items():
                    c = count[name]
                    different = d in ("better", "worse")
                    if null[p]:
                        c["false_different"] += different
                        false_any[name] |= different
                    elif different:
                        right = (d == "better") == (delta > 0)
                        c["right" if right else "wrong"] += 1
                    inside = null[p] or abs(delta) <= ROPE
                    c["rope_comparisons"] += inside
                    c["equivalent_inside"] += inside and d == "equivalent"
                    c["equivalent_outside"] += (not inside) and d == "equivalent"
                    c["undecided"] += d == "undecided"
            for name, hit in false_any.items():
                count[name]["familywise"] += hit
    return count


@pytest.mark.slow
def test_loop_reference_equals_the_table(data, tables):
    study = MultipleTesting.of(**SMALL)
    tab = tables["bayes_multiple_testing"].to_pandas()
    assert len(tab) == 2 * (len(BAYES) + 2)  # per configuration: 3 Bayesian, t x 2 corrections
    for share in (1.0, 0.5):
        ref = _reference(study, data, 6, share)
        cell = tab[tab.share_null == share]
        m0 = true_null_count(6, share)
        pairs, null_pairs = 15, m0 * (m0 - 1) // 2
        for name in (*BAYES, "t"):
            row = (cell[(cell.method == "bayes") & (cell.test == name)] if name != "t" else
                   cell[(cell.test == "t") & (cell.correction == "none")]).iloc[0]
            c = ref[name]
            assert row.trials == study.config.trials
            assert row.null_comparisons == study.config.trials * null_pairs
            assert row.alt_comparisons == study.config.trials * (pairs - null_pairs)
            for k in ("false_different", "familywise", "right", "wrong"):
                assert row[k] == c[k], (share, name, k)
            if name != "t":
                for k in ("rope_comparisons", "equivalent_inside", "equivalent_outside"):
                    assert row[k] == c[k], (share, name, k)
                assert row.undecided_rate == c["undecided"] / (study.config.trials * pairs)
                assert row.equivalent_inside_rate == c["equivalent_inside"] / c[
                    "rope_comparisons"]
            else:
                assert pd.isna(row.rope_comparisons) and pd.isna(row.equivalent_inside_rate)
            if null_pairs:
                assert row.false_different_rate == c["false_different"] / (
                    study.config.trials * null_pairs)
                assert row.false_different_lo <= row.false_different_rate \
                    <= row.false_different_hi
        if share == 0.5:  # all three truth classes occur: of the 15 pairs, 3 null pairs and
            # 5 pairs 0.033 apart (the 3 null systems with the first other one, and the 2
            # neighbours among the others) are inside the ROPE of 0.04
            jzs = cell[cell.test == "jzs_bf"].iloc[0]
            assert jzs.rope_comparisons == study.config.trials * 8
            assert ref["bayesian_bootstrap"]["right"] > 0
            assert ref["jzs_bf"]["equivalent_inside"] > 0


def test_test_rows_agree_with_the_other_tables(tables):
    """The significance tests' rows restate table multiple_testing (FWER, power) and
    type_m_s (wrong sign) of the same run."""
    tab = tables["bayes_multiple_testing"].to_pandas()
    mt = tables["multiple_testing"].to_pandas()
    tm = tables["type_m_s"].to_pandas()
    rows = tab[tab.method == "test"]
    assert len(rows) == 2 * 2
    for _, r in rows.iterrows():
        ref = mt[(mt.share_null == r.share_null) & (mt.correction == r.correction)
                 & (mt.test == r.test)].iloc[0]
        assert r.familywise == ref.familywise_errors and r.fwer == ref.fwer
        if r.alt_comparisons:
            assert (r.right + r.wrong) / r.alt_comparisons == pytest.approx(ref.power,
                                                                            rel=1e-12)
            ms = tm[(tm.share_null == r.share_null) & (tm.correction == r.correction)
                    & (tm.test == r.test)].iloc[0]
            assert r.wrong == ms.wrong_sign and r.right + r.wrong == ms.significant
        else:
            assert pd.isna(r.power)
    bayes = tab[tab.method == "bayes"]
    assert bayes.correction.isna().all() and bayes.alpha.isna().all()


def test_shard_sizes_change_nothing(data, tables):
    split, info = run_study(MultipleTesting.of(**{**SMALL, "shard_items": 2,
                                                  "shard_replicates": 1000}), data)
    assert info["shards"] == 1
    for name in ("bayes_multiple_testing", "multiple_testing", "type_m_s"):
        pd.testing.assert_frame_equal(split[name].to_pandas(), tables[name].to_pandas(),
                                      check_exact=True)


def test_without_bayes_nothing_changes(data, tables):
    plain = MultipleTesting.of(**{**SMALL, "bayes": ()})
    assert not any(k.startswith("bayes") for k in plain.fingerprint())
    assert not any(k.startswith("bayes") for k in plain.fields(data))
    out, _ = run_study(plain, data)
    assert "bayes_multiple_testing" not in out
    pd.testing.assert_frame_equal(out["multiple_testing"].to_pandas(),
                                  tables["multiple_testing"].to_pandas(), check_exact=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"bayes": ["jzs_bf", "bayes_bootstrap"]}, "did you mean 'bayesian_bootstrap'"),
    ({"bayes_threshold": 0.9}, "bayes_threshold must be >= 1"),
    ({"bayes_prob": 1.5}, "bayes_prob must be in"),
])
def test_bad_options_are_named(options, message):
    m = synthetic_scores(systems=6, topics=20, metrics=("AP",),
                                              seed=1).matrix
    with pytest.raises(ConfigError, match=message):
        irsim.multiple_testing(m, systems=[4], sizes=[10], trials=10, **options)


@pytest.mark.slow
def test_python_door_equals_the_command_line(tmp_path):
    """12 runs of TREC-8 AP (shared data) through both doors: the same bits."""
    from golden.record import tables_of
    from test_api import assert_same_tables, frame

    df = frame("adhoc8_ap", systems=12)
    path = tmp_path / "ap12.csv"
    df.to_csv(path, index=False)
    api = irsim.multiple_testing(df, metric="AP", systems=[4], sizes=[15], share_null=[0.5],
                                 tests=["t", "randomisation"], trials=250, B=100, seed=4,
                                 bayes=list(BAYES))
    cli = tables_of(["experiment=multiple_testing", "collection=matrix",
                     f"collection.path={path}", "collection.metric=AP",
                     "experiment.systems=[4]", "experiment.sizes=[15]",
                     "experiment.share_null=[0.5]", "experiment.tests=[t,randomisation]",
                     "experiment.trials=250", "experiment.B=100", "seed=4",
                     "experiment.bayes=[jzs_bf,t_posterior,bayesian_bootstrap]"])
    assert cli["bayes_multiple_testing"].num_rows == 3 + 2 * 5
    assert_same_tables(api.tables, cli)
