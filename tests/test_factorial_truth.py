"""Known truth of the factorial study (irsim.experiments.factorial.truth): the simulated
collections, each design's family-wise error and power against exact values (the noncentral
t, scipy) and the nominal level, and the split-half agreement.

Monte Carlo tolerance: a rate estimated from ``n`` trials is within 3 binomial standard
deviations ``sqrt(p (1 - p) / n)`` of its exact value ``p`` (each test has a fixed seed, so it
either passes or fails for good; 3 SD keeps the chance that a correct kernel fails a new seed
at 0.3% per check)."""

import numpy as np
import pytest
from scipy import stats as sps

from irsim.errors import ConfigError, InputError
from irsim.experiments.factorial.truth import (
    Decisions,
    _tukey_significant,
    count_errors,
    decisions,
    error_rates,
    halves_agreement,
    run_trials,
    simulate_design,
    split_half_agreement,
    tukey_calls,
)
from irsim.stats.anova import anova_two_way, tukey_hsd
from irsim.stats.factorial import anova_table, design_of, design_tukey, ems_matrix

NULL = dict(effects=[0.5] * 4, topics=15, replicates=3, sd_topic=0.1, sd_interaction=0.1,
            sd_residual=0.1)


def within(rate: float, p: float, n: int, sds: float = 3.0) -> bool:
    return abs(rate - p) <= sds * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("replicate", ["replicated", "crossed"])
def test_trials_are_the_same_for_any_split(replicate):
    kw = dict(effects=[0.1, 0.2, 0.2], topics=6, replicates=2, sd_topic=0.3,
              sd_interaction=0.2, sd_residual=0.1, replicate=replicate, seed=4)
    if replicate == "crossed":
        kw.update(sd_replicate=0.1, sd_topic_replicate=0.05, sd_system_replicate=0.05)
    whole = simulate_design((0, 600), **kw)
    parts = [simulate_design(r, **kw) for r in [(0, 7), (7, 251), (251, 250 + 250), (500, 600)]]
    assert np.array_equal(np.concatenate(parts), whole)
    assert np.array_equal(simulate_design((333, 334), **kw)[0], whole[333])
    clipped = simulate_design((0, 600), **kw, link="clip")
    assert np.array_equal(clipped, np.clip(whole, 0, 1))


def test_replicated_draws_are_the_crossed_draws_without_the_crossed_effects():
    kw = dict(effects=[0.0, 1.0], topics=5, replicates=3, sd_topic=1.0, sd_interaction=0.5,
              sd_residual=0.2, seed=9)
    r = simulate_design((0, 40), **kw)
    c = simulate_design((0, 40), **kw, replicate="crossed")
    assert np.array_equal(r, c)


@pytest.mark.parametrize("design", ["replicated", "crossed"])
def test_mean_squares_have_the_expected_values_of_the_model(design):
    """The mean over trials of each mean square equals its expectation from the known
    variance components (ems_matrix, the unrestricted mixed model), within 3 SE."""
    sd = dict(sd_topic=0.5, sd_interaction=0.3, sd_residual=0.2)
    if design == "crossed":
        sd.update(sd_replicate=0.4, sd_topic_replicate=0.25, sd_system_replicate=0.15)
    shape = (4, 8, 3)
    x = simulate_design((0, 3000), effects=[0.0] * 4, topics=8, replicates=3, **sd,
                        replicate=design, seed=2)
    t = anova_table(x, design, model="mixed")
    if design == "replicated":  # system (null: 0), topic, system:topic, residual
        comp = [0.0, 0.5 ** 2, 0.3 ** 2, 0.2 ** 2]
    else:  # system, topic, replicate, s:t, s:r, t:r, residual
        comp = [0.0, 0.5 ** 2, 0.4 ** 2, 0.3 ** 2, 0.15 ** 2, 0.25 ** 2, 0.2 ** 2]
    expected = ems_matrix(design_of(design), shape) @ np.array(comp)
    mean, se = t.ms.mean(0), t.ms.std(0, ddof=1) / np.sqrt(len(x))
    assert (np.abs(mean - expected) <= 3 * se).all(), (mean, expected)


@pytest.mark.parametrize("design,model", [("two_way", "fixed"), ("replicated", "fixed"),
                                          ("replicated", "mixed"), ("crossed", "fixed"),
                                          ("crossed", "mixed")])
def test_tukey_calls_are_design_tukeys_decisions(design, model):
    """Every call equals design_tukey's interval (which test_factorial checks against
    scipy); crossed/mixed has one Satterthwaite df per trial (the bracketed path)."""
    trials = 10 if model == "mixed" and design == "crossed" else 6  # > 8 df: bracketed
    x = simulate_design((0, trials), effects=[0.0, 0.02, 0.05, 0.3], topics=10, replicates=3,
                        sd_topic=0.2, sd_interaction=0.05, sd_residual=0.1,
                        sd_system_replicate=0.05, replicate="crossed", seed=5)
    if design == "two_way":
        x = x[..., 0]
    f, s = np.triu_indices(4, 1)
    calls, p = tukey_calls(x, design, model, 0.05, f, s)
    ref = design_tukey(x, design, model=model, level=0.95, pvalues=False)
    sig = (ref.low > 0) | (ref.high < 0)
    assert np.array_equal(calls != 0, sig)
    assert np.array_equal(calls[sig], np.sign(ref.statistic[sig]))
    assert 0 < sig.sum() < sig.size  # both kinds of decisions are checked
    assert np.allclose(p, anova_table(x, design, model=model).pvalue[..., 0])
    if (design, model) == ("crossed", "mixed"):
        assert len(np.unique(ref.df_error)) == len(x)


@pytest.mark.slow
def test_bracketed_critical_values_are_scipys():
    """Many distinct df: each decision equals q > scipy's studentized range quantile, also
    for q within 1e-9 of it (the problems the brackets leave to an exact quantile)."""
    df = np.linspace(20.0, 40.0, 12)
    crit = np.array([sps.studentized_range.ppf(0.95, 5, d) for d in df])
    q = crit[:, None] * np.array([1 - 1e-9, 1 + 1e-9, 0.9, 1.1, 0.999, 1.001])
    sig = _tukey_significant(q, df, 0.95, 5)
    assert np.array_equal(sig, q > crit[:, None])
    assert np.array_equal(sig, np.tile([False, True, False, True, False, True], (12, 1)))


def test_fwer_under_the_complete_null_replicated():
    """Voorhees et al.'s point: with a system x topic interaction, the fixed model's Tukey
    (error within cells) is far above alpha; the mixed model's (error system:topic) and
    the two-way design's are at alpha (their model is true); Holm's is at most alpha."""
    n = 2000
    r = error_rates(run_trials((0, n), **NULL, seed=11))
    fwer = dict(zip(r["method"].tolist(), r["fwer"].tolist(), strict=True))
    assert within(fwer["two_way"], 0.05, n)
    assert within(fwer["replicated_mixed"], 0.05, n)
    assert fwer["paired_t_holm"] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n)
    i = r["method"].tolist().index("replicated_fixed")
    assert r["fwer_low"][i] > 0.3  # clearly anti-conservative: 0.547 here
    assert np.isnan(r["power"]).all()  # no truly different pair


def test_fwer_without_interaction_the_fixed_model_is_exact():
    """Without an interaction the fixed model is the true one: its Tukey is at alpha."""
    n = 2000
    kw = {**NULL, "sd_interaction": 0.0}
    r = error_rates(run_trials((0, n), **kw, methods=["replicated_fixed"], seed=12))
    assert within(float(r["fwer"][0]), 0.05, n)


def test_fwer_crossed():
    """Crossed replicates with a system x replicate effect: the fixed crossed model (error
    = three-way residual) is far above alpha (about 0.86 here); the mixed one (error: the
    quasi-F combination s:t + s:r - residual, Satterthwaite's df) is at alpha with 6
    replicates. (With 3 replicates and a larger s:r effect it is liberal: 0.063 over 6000
    trials, Wilson 0.057-0.069, at sd_system_replicate=0.1: Satterthwaite's approximation
    with few df.)"""
    n = 1500
    kw = {**NULL, "replicates": 6, "replicate": "crossed", "sd_replicate": 0.1,
          "sd_topic_replicate": 0.05, "sd_system_replicate": 0.05}
    r = error_rates(run_trials((0, n), **kw, methods=["crossed_fixed", "crossed_mixed"],
                               seed=13))
    assert r["fwer_low"][0] > 0.5
    assert within(float(r["fwer"][1]), 0.05, n)


def test_power_of_two_systems_is_the_noncentral_t():
    """With two systems Tukey's HSD is the paired t-test: the two-way design's power on
    replicate 0 is the noncentral t's with sigma^2 = 2 (sd_int^2 + sd_res^2), the mixed
    model's on the cell means with 2 (sd_int^2 + sd_res^2 / R); both df T - 1. The
    directional error is the noncentral t's wrong tail."""
    n, topics, reps, delta = 3000, 12, 4, 0.08
    sd_i, sd_e = 0.1, 0.15
    kw = dict(effects=[delta, 0.0], topics=topics, replicates=reps, sd_topic=0.3,
              sd_interaction=sd_i, sd_residual=sd_e)
    c = run_trials((0, n), **kw, seed=21)
    r = error_rates(c)
    crit = sps.t.isf(0.025, topics - 1)
    for m, var in (("two_way", 2 * (sd_i ** 2 + sd_e ** 2)),
                   ("replicated_mixed", 2 * (sd_i ** 2 + sd_e ** 2 / reps))):
        nc = delta * np.sqrt(topics / var)
        power = sps.nct.sf(crit, topics - 1, nc)
        wrong = sps.nct.cdf(-crit, topics - 1, nc)
        i = r["method"].tolist().index(m)
        assert within(float(r["power"][i]), power, n), (m, r["power"][i], power)
        assert within(float(r["type_s"][i]), wrong, n, sds=4), (m, r["type_s"][i], wrong)
    tw, holm = (r["method"].tolist().index(m) for m in ("two_way", "paired_t_holm"))
    assert c.detected[tw, 0] == c.detected[holm, 0]  # one pair: the same test
    assert np.isnan(r["fwer"]).all()


def test_power_of_the_fixed_model_without_interaction():
    """Without interaction the fixed model is true: the difference of two system means over
    T R observations each against MS within (df 2 T (R - 1)) is a noncentral t."""
    n, topics, reps, delta, sd_e = 3000, 6, 3, 0.1, 0.2
    c = run_trials((0, n), effects=[0.0, delta], topics=topics, replicates=reps, sd_topic=0.5,
                   sd_interaction=0.0, sd_residual=sd_e, methods=["replicated_fixed"], seed=22)
    df = 2 * topics * (reps - 1)
    nc = delta / np.sqrt(2 * sd_e ** 2 / (topics * reps))
    power = sps.nct.sf(sps.t.isf(0.025, df), df, nc)
    assert within(float(error_rates(c)["power"][0]), power, n)


def test_counts_merge_and_do_not_depend_on_chunks():
    kw = dict(effects=[0.0, 0.0, 0.1, 0.2], topics=8, replicates=2, sd_topic=0.1,
              sd_interaction=0.1, sd_residual=0.1, seed=3)
    whole = run_trials((0, 300), **kw)
    split = run_trials((0, 120), **kw) + run_trials((120, 300), **kw)
    small = run_trials((0, 300), **kw, budget=8.0 * 2000)  # chunks of a few trials
    for c in (split, small):
        assert c.trials == 300
        for f in ("familywise", "detected", "wrong", "false"):
            assert np.array_equal(getattr(c, f), getattr(whole, f))


def test_counts_against_a_loop_over_trials():
    """count_errors against a direct reading of each trial's calls."""
    rng = np.random.default_rng(0)
    calls = rng.integers(-1, 2, size=(50, 2, 6)).astype(np.int8)
    f, s = np.triu_indices(4, 1)
    effects = [0.0, 0.0, 0.3, 0.1]
    c = count_errors(Decisions(("a", "b"), f, s, calls, 0.05), effects)
    truth = np.sign(np.array(effects)[f] - np.array(effects)[s])
    for m in range(2):
        fw = sum(any(calls[b, m, p] != 0 and truth[p] == 0 for p in range(6))
                 for b in range(50))
        assert c.familywise[m] == fw
        for p in range(6):
            col = calls[:, m, p]
            if truth[p] == 0:
                assert c.false[m, p] == (col != 0).sum() and c.detected[m, p] == 0
            else:
                assert c.detected[m, p] == (col == truth[p]).sum()
                assert c.wrong[m, p] == (col == -truth[p]).sum()


def test_identical_halves_agree_on_everything():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 12, 3)) + np.arange(5.0)[:, None, None] * 0.2
    xx = np.concatenate([x, x], axis=1)
    perm = np.argsort(rng.random((30, 12)), axis=-1)  # any order of the same topics
    s = halves_agreement(xx, perm, perm[:, ::-1] + 12, design="replicated", model="mixed")
    assert s.system_agree.all() and (s.pair_agree == 1.0).all()
    summary = s.summary()
    assert summary["system_agree"] == summary["pair_agree"] == 1.0
    assert summary["pair_agree_low"] > 0.88  # Wilson's lower bound at 30 of 30


def test_nested_halves_split_each_collection():
    """Nested design: every collection's topics are split on their own; identical halves
    agree, and a split of 3 collections x 20 topics keeps the shape (trials,)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3, 10)) + np.arange(4.0)[:, None, None] * 0.3
    xx = np.concatenate([x, x], axis=-1)
    perm = np.argsort(rng.random((5, 3, 10)), axis=-1)
    s = halves_agreement(xx, perm, perm + 10, design="nested", model="mixed")
    assert s.system_agree.all() and (s.pair_agree == 1.0).all()
    r = split_half_agreement(xx, trials=(0, 40), design="nested", seed=1)
    assert r.pair_agree.shape == (40,) and r.pair_agree.min() < 1.0


def test_split_half_against_a_loop_with_the_two_way_functions():
    """Each trial's halves through irsim.stats.anova (its own arithmetic: anova_two_way's
    F test, tukey_hsd's p-values from scipy's studentized range)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 21)) + np.array([0.0, 0.1, 0.4, 0.7])[:, None]
    s = split_half_agreement(x, trials=(0, 8), seed=5)
    parts = split_half_agreement(x, trials=(3, 8), seed=5)
    assert np.array_equal(parts.pair_agree, s.pair_agree[3:])
    from irsim.rng import rng_for
    perm = np.argsort(rng_for(5, "factorial/split_half", 0).random((250, 21)), axis=-1)[:8]
    for b in range(8):
        a, c = x[:, perm[b, :10]], x[:, perm[b, 10:20]]
        sys_a, sys_c = (anova_two_way(h).pvalue <= 0.05 for h in (a, c))
        assert s.system_agree[b] == (sys_a == sys_c)
        ta, tc = tukey_hsd(a), tukey_hsd(c)
        da = np.where(ta.pvalue <= 0.05, np.sign(ta.statistic), 0)
        dc = np.where(tc.pvalue <= 0.05, np.sign(tc.statistic), 0)
        assert s.pair_agree[b] == pytest.approx((da == dc).mean())


def test_bad_input_is_one_line():
    with pytest.raises(ConfigError, match="replicate='crossed'"):
        simulate_design((0, 1), **NULL, sd_replicate=0.1)
    with pytest.raises(ConfigError, match="needs replicates >= 2"):
        run_trials((0, 5), **{**NULL, "replicates": 1}, methods=["replicated_mixed"])
    with pytest.raises(ConfigError, match="method"):
        decisions(np.zeros((1, 2, 3, 2)), methods=["tukey"])
    with pytest.raises(ConfigError, match="trials"):
        simulate_design((5, 2), **NULL)
    with pytest.raises(ConfigError, match="sd_residual"):
        simulate_design((0, 1), **{**NULL, "sd_residual": -1})
    with pytest.raises(InputError, match="halves"):
        split_half_agreement(np.zeros((3, 3)), trials=(0, 2))
    with pytest.raises(InputError, match="identical"):  # no within-cell noise: refused
        decisions(simulate_design((0, 2), **{**NULL, "sd_residual": 0.0}))
