"""The paper's drop rule (issue 29): a run goes when its mean is below R's type-7 quantile of
the means (Urbano's code, ``mean < quantile(means, p)``), the default of every study that
drops a bottom share; ``drop_rule=count`` keeps irsim's former ``floor(p k)`` rule.

Oracles: R's documented type-7 values, a pure-Python type-7 quantile, and a G-study computed
here from the two-way ANOVA formulas (METHODS.md section 8) with a loop over the runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA

import irsim
from irsim.errors import ConfigError
from irsim.sampling.systems import DEFAULT_RULE, RULES, bottom_mask

WEB2012_AP = SHARED_DATA / "urbano" / "web2012_ap.csv"


def type7(values, p: float) -> float:
    """R's ``quantile(values, p)`` (type 7): the sorted values interpolated at (n - 1) p."""
    v = sorted(float(x) for x in values)
    h = (len(v) - 1) * p
    lo = int(math.floor(h))
    return v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def paper_keep(means, p: float) -> list[int]:
    """The runs Urbano's code keeps: ``!(mean < quantile(means, p))``, one at a time."""
    q = type7(means, p)
    return [i for i, m in enumerate(means) if not m < q]


def web2012_47() -> pd.DataFrame:
    """A real collection of 47 runs: TREC Web 2012 AP without its last run (48 runs)."""
    return pd.read_csv(WEB2012_AP).iloc[:, :47]


def test_type7_is_numpys_default_quantile():
    # R: quantile(1:10, .25) = 3.25; quantile(c(1, 2, 3, 4, 10), .3) = 2.2;
    # quantile(c(.5, .1, .3), .9) = .46
    assert np.quantile(np.arange(1, 11), 0.25) == pytest.approx(3.25, abs=1e-15)
    assert np.quantile([1, 2, 3, 4, 10], 0.3) == pytest.approx(2.2, abs=1e-15)
    assert np.quantile([0.5, 0.1, 0.3], 0.9) == pytest.approx(0.46, abs=1e-15)
    rng = np.random.default_rng(29)
    for n in (2, 3, 7, 47, 129):
        x = rng.random(n)
        for p in (0.1, 0.25, 0.5, 0.9):
            assert np.quantile(x, p) == pytest.approx(type7(x, p), abs=1e-14)


def test_the_default_is_the_papers_rule():
    assert DEFAULT_RULE == "quantile" and set(RULES) == {"quantile", "count"}
    from irsim.experiments import effort, error_rates, reliability

    for cfg in (reliability.Config, error_rates.Config, effort.Config):
        assert cfg().drop_rule == "quantile", cfg


def test_47_runs_at_a_quarter_keep_35_by_the_paper_and_36_by_the_count():
    """The issue's case on real data: 0.25 * 46 = 11.5 puts the quartile between the 12th
    and 13th lowest means (12 go), floor(0.25 * 47) = 11 go by the count."""
    x = web2012_47()
    means = x.mean(axis=0).tolist()
    low = sorted(means)
    assert len(means) == 47 and low[10] < low[11] < low[12]  # no tie at either cut
    keep = paper_keep(means, 0.25)
    assert len(keep) == 35
    assert np.flatnonzero(bottom_mask(np.array(means), 0.25, rule="quantile")).tolist() == keep
    assert bottom_mask(np.array(means), 0.25, rule="count").sum() == 36
    for rule, kept in (("quantile", 35), ("count", 36)):
        rel = irsim.reliability(x, drop_bottom=0.25, drop_rule=rule, B=20, max_topics=10)
        row = rel.to_pandas("reliability").iloc[0]
        assert (row.systems, row.dropped) == (kept, 47 - kept), rule
    default = irsim.reliability(x, drop_bottom=0.25, B=20, max_topics=10)
    assert default.to_pandas("reliability").iloc[0].systems == 35


def g_reference(x: np.ndarray) -> dict[str, float]:
    """Variance components, percentages, E(rho^2) and Phi of a (systems, topics) matrix by
    the two-way ANOVA without replication (METHODS.md section 8), written out here."""
    n_s, n_t = x.shape
    grand = x.mean()
    ms_s = n_t * ((x.mean(axis=1) - grand) ** 2).sum() / (n_s - 1)
    ms_t = n_s * ((x.mean(axis=0) - grand) ** 2).sum() / (n_t - 1)
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + grand
    ms_e = (resid ** 2).sum() / ((n_s - 1) * (n_t - 1))
    s, t, e = max((ms_s - ms_e) / n_t, 0.0), max((ms_t - ms_e) / n_s, 0.0), ms_e
    total = s + t + e
    return {"systems": n_s, "var_system": s, "var_topic": t, "var_residual": e,
            "pct_system": 100 * s / total, "pct_topic": 100 * t / total,
            "pct_residual": 100 * e / total, "e_rho2": s / (s + e / n_t),
            "phi": s / (s + (t + e) / n_t)}


@pytest.mark.parametrize("share", [0.25, 0.1, 0.2])
def test_g_study_where_p_k_is_not_an_integer_equals_the_papers_rule(share):
    """47 runs: 11.75, 4.7 and 9.4 are not integers. The G-study of the study equals the
    reference on the runs the paper keeps, and differs from the count rule's."""
    x = web2012_47()
    assert share * 47 != int(share * 47)
    scores = x.to_numpy().T
    ref = g_reference(scores[paper_keep(scores.mean(axis=1).tolist(), share)])
    row = irsim.reliability(x, drop_bottom=share, B=20, max_topics=10) \
        .to_pandas("reliability").iloc[0]
    for key, want in ref.items():
        assert row[key] == pytest.approx(want, rel=1e-10, abs=1e-12), key
    count = irsim.reliability(x, drop_bottom=share, drop_rule="count", B=20, max_topics=10) \
        .to_pandas("reliability").iloc[0]
    assert count.systems == 47 - math.floor(share * 47)
    assert count.systems != row.systems and count.pct_system != pytest.approx(row.pct_system)


def test_issue_figures_on_the_47_run_collection():
    """The issue: the G-study's percentages move by 1.3-1.7 points between the rules on its
    47-run collection at p = .25. Here (Web 2012 AP without its last run) the count rule's
    G-study equals the reference on its 36 runs, and the percentages move by 0.3-0.7 points
    (system 6.24 -> 5.85 %, topic 48.09 -> 48.79 %, residual 45.68 -> 45.35 %)."""
    x = web2012_47()
    rows = {rule: irsim.reliability(x, drop_bottom=0.25, drop_rule=rule, B=20, max_topics=10)
            .to_pandas("reliability").iloc[0] for rule in RULES}
    scores = x.to_numpy().T
    means = scores.mean(axis=1)
    order = sorted(range(47), key=lambda i: (means[i], i))
    count_ref = g_reference(scores[sorted(order[11:])])
    for key in ("pct_system", "pct_topic", "pct_residual"):
        assert rows["count"][key] == pytest.approx(count_ref[key], rel=1e-10)
    # the figures docs/studies/reliability.md and docs/guides/determinism.md quote
    assert (rows["count"].systems, rows["quantile"].systems) == (36, 35)
    assert (round(rows["count"].pct_system, 2), round(rows["quantile"].pct_system, 2)) == \
        (6.24, 5.85)
    moved = max(abs(rows["quantile"][k] - rows["count"][k])
                for k in ("pct_system", "pct_topic", "pct_residual"))
    assert 0.5 < moved < 1.0


def test_error_rates_compare_the_systems_the_rule_keeps():
    """error_rates compares the systems the rule keeps: 35 of 47 by default (595 pairs),
    36 with drop_rule=count (630 pairs)."""
    x = web2012_47()
    for rule, kept in (("quantile", 35), ("count", 36)):
        res = irsim.error_rates(x, drop_bottom=0.25, drop_rule=rule, trials=2,
                                subset_sizes=[5], tests=[], sd_samples=2, sd_sizes=[5])
        assert res.to_pandas("sd_by_size").systems.tolist() == [kept], rule
        dep = res.to_pandas("error_dependency")
        assert (dep.pairs == kept * (kept - 1) // 2).all(), rule


def test_effort_compares_the_systems_the_rule_keeps():
    """effort on 10 synthetic runs at 0.25: the paper's rule keeps those not below the type-7
    quartile of the first series' means (0.25 * 9 = 2.25: 3 go), the count 8 (2 go)."""
    from irsim.data.collection import DocCollection
    from irsim.data.synthetic import synthetic_trec
    from irsim.experiments import Shards
    from irsim.experiments.effort import Config, make

    runs, qrels = synthetic_trec(runs=10, topics=12, docs_per_topic=80, depth=50, seed=2,
                                 quality_sd=0.4, topic_sd=0.5)
    docs = DocCollection(runs, qrels, 50)
    for rule in ("quantile", "count"):
        study, data = make(Config(drop_bottom=0.25, drop_rule=rule, subset_sizes=[4],
                                  trials=2), docs, seed=0, shards=Shards())
        means = data.matrix.values[0].mean(axis=1)
        assert len(set(means.tolist())) == 10
        if rule == "quantile":
            want = paper_keep(means.tolist(), 0.25)
            assert len(want) == 7
        else:
            want = sorted(np.argsort(means, kind="stable")[2:].tolist())
        assert list(study.systems) == want, rule


def test_bad_rule_is_one_clear_error():
    with pytest.raises(ConfigError, match="^unknown value of drop_rule 'floor'; valid: count, "
                                          "quantile$"):
        irsim.error_rates(web2012_47(), drop_bottom=0.25, drop_rule="floor")
