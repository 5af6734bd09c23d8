"""The known-truth study irsim.experiments.test_errors against references written here from
the definitions, on what a mutation run of the module left open.

design=urbano2019 (Urbano, Lima & Hanjalic 2019): the trial layout (Type I trials
``trials``, Type II/III trials ``power_trials``, in replicate blocks of 250 and Monte Carlo
units of 4,000, two metrics x two sizes x kinds), rejection counting ``p <= alpha`` (sign
tests on 6 topics, whose p-values sit exactly on the alphas 1/64, 2/64 and 6/64... written
as exact fractions here), the direction of Type II (a two-sided rejection counts only when
the experimental mean is higher) and of Type III (a two-sided rejection with the
experimental mean lower), the one-sided tail, and the Clopper-Pearson bands (scipy's
``binomtest(...).proportion_ci(method="exact")``). The trials are the generator's own
(``PooledMetric.type1`` / ``type2`` on the study's documented stream; the generator is
checked in tests/test_urbano2019.py): every p-value, sign and count is computed here trial
by trial with scipy and exact fractions.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps

from irsim.engine import run_study
from irsim.errors import ConfigError
from irsim.experiments.test_errors import (
    URBANO_STREAM,
    TestErrors,
    TrialTests,
    Urbano2019,
    UrbanoData,
    UrbanoStudy,
)
from irsim.sampling import blocked_draws, study_key
from irsim.simulate.designs import PooledMetric
from irsim.simulate.pair_copula_model import fit_pair_copula_model
from irsim.simulate.pairs import TopicSimulator, prepare
from irsim.stats.bootstrap import paired_bootstrap
from irsim.stats.randomisation import randomisation_test


def sign_p(z: np.ndarray, alternative: str, threshold: float = 0.0) -> Fraction:
    """Exact sign test on the differences with |z| > threshold."""
    k, m = int((z > threshold).sum()), int((np.abs(z) > threshold).sum())
    if m == 0:
        return Fraction(1)
    pmf = [Fraction(math.comb(m, i), 2**m) for i in range(m + 1)]
    if alternative == "greater":
        return sum(pmf[k:], Fraction(0))
    return min(Fraction(1), 2 * sum(pmf[: min(k, m - k) + 1], Fraction(0)))


def cp_band(k: int, n: int, level: float) -> tuple[float, float]:
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def _pool(metric: str, seed: int, deltas) -> PooledMetric:
    """A toy collection of 6 runs on 30 topics (AP-like scores in [0, 1])."""
    rng = np.random.default_rng(seed)
    x = np.clip(0.3 + 0.1 * rng.standard_normal((1, 30))
                + np.linspace(-0.08, 0.08, 6)[:, None]
                + 0.08 * rng.standard_normal((6, 30)), 0, 1)
    return PooledMetric.build(metric, [fit_pair_copula_model(x, metric=metric, name=f"toy{seed}")],
                              deltas)


DELTAS = (0.01, 0.08)
ALPHAS = (0.015625, 0.03125, 0.05, 0.09375)  # 1/64, 2/64, 0.05, 6/64
TESTS = ("t", "sign")
ALTS = ("two-sided", "greater")


@pytest.fixture  # per test: mutmut maps each mutant to the tests that call the code
def urbano():
    data = UrbanoData((_pool("AP", 1, DELTAS), _pool("nDCG", 2, DELTAS)), DELTAS)
    base = TestErrors.of(sizes=(6, 9), alpha=ALPHAS, tests=TESTS, alternatives=ALTS,
                         trials=4130, B=10, seed=7, ci_level=0.9)
    study = UrbanoStudy(base, 260, DELTAS)
    tables, _ = run_study(study, data)
    return data, study, {k: v.to_pandas() for k, v in tables.items()}


def urbano_reference(data: UrbanoData, study: UrbanoStudy):
    """Rows (table, metric, n, delta, test, tail, alpha) -> (trials, rejections), trial by
    trial: Type I through ``type1`` on the first ``trials`` replicates, each delta through
    ``type2`` on the first ``power_trials``; the uniforms are rows of the stream
    ``test_errors/urbano2019`` keyed by (metric, n) (3 + 2 n per trial)."""
    t = study.tests
    out = {}
    edge = 0
    for pool in data.pools:
        for n in t.config.sizes:
            total = max(t.config.trials, study.power_trials)
            u = blocked_draws(t.seed, URBANO_STREAM, (study_key(pool.metric), n), 0, total,
                              lambda rng, m, n=n: rng.random((m, 3 + 2 * n)))
            kinds = [(0, 0.0, t.config.trials)] + [(k + 1, d, study.power_trials)
                                            for k, d in enumerate(study.deltas)]
            for kind, delta, trials in kinds:
                base, exp = (pool.type1(u[:trials], n) if kind == 0
                             else pool.type2(u[:trials], n, kind - 1))
                z = exp - base
                means = z.mean(axis=1)
                for test in t.config.tests:
                    for alt in t.config.alternatives:
                        tail = "two-sided" if alt == "two-sided" else "one-sided"
                        if test == "sign":
                            ps = [sign_p(row, alt) for row in z]
                        else:
                            ps = [Fraction(float(v)) for v in sps.ttest_1samp(
                                z, 0.0, axis=1, alternative=alt).pvalue]
                        for alpha in t.config.alpha:
                            a = Fraction(alpha)
                            rej = wrong = 0
                            for p, mean in zip(ps, means, strict=True):
                                edge += test == "sign" and p == a
                                if not p <= a:
                                    continue
                                if kind == 0 or alt != "two-sided" or mean > 0:
                                    rej += 1
                                if kind > 0 and alt == "two-sided" and mean < 0:
                                    wrong += 1
                            if kind == 0:
                                out[("type_1", pool.metric, n, None, test, tail, alpha)] = (
                                    trials, rej)
                            else:
                                out[("type_2", pool.metric, n, delta, test, tail, alpha)] = (
                                    trials, rej)
                                if alt == "two-sided":
                                    out[("type_3", pool.metric, n, delta, test, tail,
                                         alpha)] = (trials, wrong)
    return out, edge


@pytest.mark.mutation
def test_urbano2019_counts_equal_a_trial_by_trial_loop(urbano):
    data, study, tables = urbano
    ref, edge = urbano_reference(data, study)
    assert edge > 0  # some sign-test p-values equal an alpha exactly
    got = {}
    for name in ("type_1", "type_2", "type_3"):
        df = tables[name]
        for r in df.itertuples(index=False):
            delta = None if name == "type_1" else r.delta
            key = (name, r.metric, r.n, delta, r.test, r.tail, r.alpha)
            assert key not in got
            got[key] = (r.trials, r.rejections)
            lo, hi = cp_band(r.rejections, r.trials, 0.9)
            assert r.rate == r.rejections / r.trials
            assert r.ci_lo == pytest.approx(lo, rel=1e-9, abs=1e-15), key
            assert r.ci_hi == pytest.approx(hi, rel=1e-9, abs=1e-15), key
    assert got == ref
    # the directions are exercised: Type III errors occur, and at delta 0.01 some two-sided
    # rejections are not Type II hits
    t3 = tables["type_3"]
    assert (t3.rejections > 0).any()
    assert {v[0] for v in ref.values()} == {4130, 260}


# -- design=shift ---------------------------------------------------------------------------
TOPIC_STREAM = "test_errors/topics"


def shift_trials(data, mi: int, di: int, n: int, seed: int, trials: int):
    """(experimental - baseline) scores of trials 0..trials-1 from the definition: per trial
    one uniform picks an ordered pair of the eligible ones (floor(u * pairs)), then 2 n
    standard normals feed the pair's copula; the experimental margin is the baseline's
    shifted by theta (rows of the stream ``test_errors/topics`` keyed by (metric, n))."""
    sim = data.simulators[mi]
    ordered = data.trial_pairs[mi]

    def draw(rng, m):
        return np.concatenate([rng.random((m, 1)), rng.standard_normal((m, 2 * n))], axis=1)

    block = blocked_draws(seed, TOPIC_STREAM, (study_key(sim.metric), n), 0, trials, draw)
    pick = np.floor(block[:, 0] * len(ordered)).astype(np.int64)
    assert pick.max() < len(ordered)
    base, pair = ordered[pick, 0], ordered[pick, 1]
    y, x = sim.scores(pair, block[:, 1:n + 1], block[:, n + 1:], margin_a=base,
                      margin_b=base, theta_b=data.thetas[mi][di, base])
    return x, y


def _shift_data(deltas):
    sims = [TopicSimulator.normal(means=[0.4, 0.45, 0.5], sds=[0.09, 0.1, 0.11],
                                  rho=[0.3, 0.5, 0.7], metric="AP"),
            TopicSimulator.normal(means=[0.3, 0.6], sds=[0.1, 0.12], rho=[0.6],
                                  metric="nDCG")]
    return prepare(sims, deltas)


@pytest.mark.mutation
def test_shift_design_table_equals_a_trial_by_trial_loop():
    """Every row of ``test_errors`` (2 metrics x 2 sizes x 2 deltas, two replicate blocks):
    Wilcoxon (method=approx: scipy's normal approximation), the sign test with a tie
    threshold (exact fractions), the randomisation and shift-bootstrap tests (Monte Carlo:
    irsim.stats called here with the documented options: B, seed, stream
    ``test_errors/<test>``, key (metric, block), p-value (count + 1) / (B + 1)); the mean
    difference and its standard error (numpy, ddof = 1); Clopper-Pearson bands at 80%
    (scipy)."""
    deltas, sizes, trials, seed, b = (0.0, 0.06), (7, 12), 300, 9, 50  # B * 0.02 >= 1
    alphas, alts = (0.02, 0.05, 0.2), ("two-sided", "greater", "less")
    tests = ("wilcoxon", "sign", "randomisation", "paired_bootstrap")
    data = _shift_data(deltas)
    study = TestErrors.of(sizes=sizes, deltas=deltas, alpha=alphas, tests=tests,
                          alternatives=alts, trials=trials, B=b, seed=seed, pvalue="plus_one",
                          wilcoxon_method="approx", sign_threshold=0.05,
                          bootstrap_statistic="mean", ci_level=0.8)
    df = run_study(study, data)[0]["test_errors"].to_pandas()
    assert len(df) == 2 * 2 * 2 * len(tests) * len(alts) * len(alphas)
    seen = 0
    for mi, sim in enumerate(data.simulators):
        mkey = study_key(sim.metric)
        for n in sizes:
            for di, delta in enumerate(deltas):
                x, y = shift_trials(data, mi, di, n, seed, trials)
                z = x - y
                md = z.mean(axis=1)
                for alt in alts:
                    p = {"wilcoxon": [float(sps.wilcoxon(r, method="approx", correction=False,
                                                         alternative=alt).pvalue) for r in z],
                         "sign": [sign_p(r, alt, 0.05) if alt != "less"
                                  else sign_p(-r, "greater", 0.05) for r in z]}
                    for name, fn in (("randomisation", randomisation_test),
                                     ("paired_bootstrap", paired_bootstrap)):
                        opts = {"statistic": "mean"} if name == "paired_bootstrap" else {}
                        p[name] = [float(fn(x[i], y[i], alternative=alt, B=b, seed=seed,
                                            study=f"test_errors/{name}",
                                            key=(mkey, i // 250), pvalue_mode="plus_one",
                                            **opts).pvalue) for i in range(trials)]
                    for test in tests:
                        for alpha in alphas:
                            row = df[(df.metric == sim.metric) & (df.n == n)
                                     & (df.delta == delta) & (df.test == test)
                                     & (df.alternative == alt) & (df.alpha == alpha)]
                            assert len(row) == 1
                            row = row.iloc[0]
                            k = sum(Fraction(v) <= Fraction(alpha) for v in p[test])
                            assert (row.trials, row.rejections) == (trials, k), (
                                sim.metric, n, delta, test, alt, alpha)
                            assert row.rate == k / trials
                            lo, hi = cp_band(k, trials, 0.8)
                            assert row.ci_lo == pytest.approx(lo, rel=1e-9, abs=1e-15)
                            assert row.ci_hi == pytest.approx(hi, rel=1e-9, abs=1e-15)
                            assert row.mean_diff == pytest.approx(md.mean(), abs=1e-9)
                            assert row.mean_diff_se == pytest.approx(
                                md.std(ddof=1) / math.sqrt(trials), rel=1e-6)
                            seen += 1
    assert seen == len(df)


@pytest.mark.parametrize("trials", [1, 2, 3])
def test_mean_difference_of_one_two_and_three_trials(trials):
    """mean_diff is the mean of the trials' mean differences; mean_diff_se = sd (ddof 1) /
    sqrt(trials), undefined (NaN, without dividing by zero) for a single trial."""
    data = _shift_data((0.0, 0.05))
    study = TestErrors.of(sizes=(5,), deltas=(0.0, 0.05), alpha=(0.05,), tests=("t",),
                          trials=trials, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        df = run_study(study, data)[0]["test_errors"].to_pandas()
    for mi, sim in enumerate(data.simulators):
        for di, delta in enumerate((0.0, 0.05)):
            x, y = shift_trials(data, mi, di, 5, 2, trials)
            md = (x - y).mean(axis=1)
            row = df[(df.metric == sim.metric) & (df.delta == delta)].iloc[0]
            assert row.trials == trials
            assert row.mean_diff == pytest.approx(md.mean(), abs=1e-9)
            if trials == 1:
                assert math.isnan(row.mean_diff_se)
            else:
                assert row.mean_diff_se == pytest.approx(md.std(ddof=1) / math.sqrt(trials),
                                                         rel=1e-6)


@pytest.mark.mutation
def test_urbano2019_generator_tables_tabulate_the_models(urbano):
    """``test_errors_families``: per metric, the margin family of every kept run and the
    copula family of every pair, counted, shares of the total, most frequent first (ties by
    name); ``test_errors_models``: one row per collection from the fitted model."""
    data, _, tables = urbano
    fam = tables["test_errors_families"]
    want = []
    for pool in data.pools:
        for kind, attr in (("margin", "margin_families"), ("copula", "copula_families")):
            counts: dict[str, int] = {}
            for m in pool.models:
                for f in getattr(m, attr):
                    counts[f] = counts.get(f, 0) + 1
            total = sum(counts.values())
            assert total == sum(len(m.runs) if kind == "margin" else len(m.copulas)
                                for m in pool.models)
            for f in sorted(counts, key=lambda f: (-counts[f], f)):
                want.append((pool.metric, kind, f, counts[f], counts[f] / total))
    assert [tuple(r) for r in fam[["metric", "kind", "family", "count", "share"]]
            .itertuples(index=False)] == want
    models = tables["test_errors_models"]
    want = [(pool.metric, m.name, len(m.runs), len(m.dropped), len(m.copulas), m.support,
             float(m.observed_error)) for pool in data.pools for m in pool.models]
    assert [tuple(r) for r in models[["metric", "collection", "runs", "dropped", "pairs",
                                      "support", "mean_error_max"]]
            .itertuples(index=False)] == want
    d = data.describe()
    assert d["metrics"] == ["AP", "nDCG"]
    assert d["collections"] == {"AP": ["toy1"], "nDCG": ["toy2"]}
    assert d["runs_kept"] == {p.metric: sum(len(m.runs) for m in p.models) for p in data.pools}
    assert d["copulas"] == {p.metric: sum(len(m.copulas) for m in p.models)
                            for p in data.pools}
    assert d["deltas"] == list(DELTAS) and d["topics"] == "simulated"
    assert d["fit_cached"] is False


@pytest.mark.mutation
def test_make_passes_every_parameter_to_the_study():
    """``make``: every Config field reaches the study; design=urbano2019 drops delta 0 from
    the Type II/III deltas, runs Type I on (0.0,), power_trials 0 means ``trials``, and its
    trials are sharded in Monte Carlo units of 4,000."""
    from irsim.data.synthetic import synthetic_scores
    from irsim.experiments import Shards
    from irsim.experiments.test_errors import Config, make

    matrix = synthetic_scores(systems=6, topics=30, metrics=("AP", "nDCG"), seed=1).matrix
    cfg = dict(tests=["sign", "randomisation"], sizes=[8], deltas=[0.0, 0.03], alpha=[0.1],
               alternatives=["greater"], trials=300, B=17, pvalue="plus_one",
               wilcoxon_method="exact", sign_threshold=0.02, bootstrap_statistic="mean",
               ci_level=0.9)
    study, data = make(Config(**cfg), matrix, seed=4, shards=Shards())
    c = study.config
    assert (c.tests, c.sizes, c.deltas, c.alpha, c.alternatives, c.trials, c.B, study.seed,
            c.pvalue, c.wilcoxon_method, c.sign_threshold, c.bootstrap_statistic,
            c.ci_level) == (
        ["sign", "randomisation"], [8], [0.0, 0.03], [0.1], ["greater"], 300, 17, 4,
        "plus_one", "exact", 0.02, "mean", 0.9)
    assert tuple(data.deltas) == (0.0, 0.03) and study.shard_replicates == 1000
    ucfg = {**cfg, "alternatives": ["two-sided"], "design": "urbano2019"}
    urb, udata = make(Config(**{**ucfg, "deltas": [0.0, 0.02, 0.05]}), matrix, seed=4,
                      shards=Shards())
    assert isinstance(urb, UrbanoStudy) and isinstance(udata, UrbanoData)
    assert urb.deltas == (0.02, 0.05) and udata.deltas == (0.02, 0.05)
    # the shared part of both designs (no deltas of its own: Type I is always run)
    assert type(urb.tests) is TrialTests and not hasattr(urb.tests, "deltas")
    assert urb.power_trials == 300
    assert urb.tests.shard_replicates == 4000 and urb.tests.seed == 4
    assert udata.metrics == ("AP", "nDCG")
    for pool in udata.pools:  # one collection per metric, fitted to that metric's scores
        assert [m.metric for m in pool.models] == [pool.metric]
        assert len(pool.models[0].runs) + len(pool.models[0].dropped) == 6
        assert len(pool.baselines) == 2  # Type II/III candidates of both deltas
    assert udata.fit_run["collections_fitted"] == 2
    urb2, _ = make(Config(**{**ucfg, "deltas": [0.02], "design": Urbano2019(power_trials=40)}),
                   matrix, seed=4, shards=Shards())
    assert urb2.power_trials == 40 and urb2.deltas == (0.02,)
    with pytest.raises(ConfigError, match=r"experiment\.design.*'bogus'"):
        make(Config(design="bogus"), matrix, seed=0, shards=Shards())


def test_parameters_are_normalised_and_bad_ones_named():
    """The study holds lists of Python numbers whatever the caller passed (lists, floats
    with integral values, numpy integers); the smallest topic set size is 2 (a t statistic
    needs two differences); each bad value gives a ConfigError naming the parameter."""
    study = TestErrors.of(tests=["t"], sizes=[np.int64(2), 5.0], deltas=[0, np.float32(0.5)],
                          alpha=[0.05, np.float64(0.01)], alternatives=["greater"], trials=3.0,
                          B=np.int64(7))
    c = study.config
    assert (c.tests, c.sizes, c.deltas, c.alpha, c.alternatives, c.trials, c.B) == (
        ["t"], [2, 5], [0.0, 0.5], [0.05, 0.01], ["greater"], 3, 7)
    for v in (*c.sizes, c.trials, c.B):
        assert type(v) is int
    for v in (*c.deltas, *c.alpha):
        assert type(v) is float
    for kw, msg in [({"tests": []}, r"experiment\.tests must list at least one test"),
                    ({"alternatives": []},
                     r"experiment\.alternatives must list at least one alternative"),
                    ({"alternatives": ["sideways"]},
                     r"unknown value of experiment\.alternatives 'sideways'"),
                    ({"sizes": [5, 1]}, r"experiment\.sizes must be an integer >= 2, got 1"),
                    ({"sizes": [2.5]}, r"experiment\.sizes must be an integer >= 2, got 2\.5"),
                    ({"deltas": [0.0, math.nan]},
                     r"experiment\.deltas must list finite numbers, got \[0\.0, nan\]"),
                    ({"deltas": [math.inf]}, r"experiment\.deltas must list finite numbers")]:
        with pytest.raises(ConfigError, match=msg):
            TestErrors.of(**kw)


def test_fit_table_without_source_diagnostics():
    """Simulators prepared without source matrices: one row per metric, support "" for
    continuous margins, every system of a normal margin a baseline, NaN diagnostics of the
    fit to a source; data without any diagnostics: baselines -1 (not computed)."""
    data = _shift_data((0.0, 0.05))
    study = TestErrors.of(sizes=(5,), deltas=(0.0, 0.05), alpha=(0.05,), tests=("t",), trials=2)
    fit = run_study(study, data)[0]["test_errors_fit"].to_pandas()
    assert fit.metric.tolist() == ["AP", "nDCG"] and fit.systems.tolist() == [3, 2]
    assert fit.support.tolist() == ["", ""]
    assert fit.baselines.tolist() == [3, 2]
    assert fit[["ks_mean", "ks_max", "mean_error_max"]].isna().all().all()
    bare = dataclasses.replace(data, diagnostics=())
    fit = run_study(study, bare)[0]["test_errors_fit"].to_pandas()
    assert fit.baselines.tolist() == [-1, -1] and fit.support.tolist() == ["", ""]
    assert fit[["ks_mean", "ks_max", "mean_error_max"]].isna().all().all()


@pytest.mark.mutation
def test_urbano2019_shards_and_monte_carlo_keys(urbano):
    """Shards of 2 configurations x 250 trials (offsets inside the item range; Type I
    trials (250) end on a block edge and the Type II/III trials (520) run past them), one
    tail, and the randomisation test: its p-values from irsim.stats.randomisation_test on
    the unit's trials with the documented options (stream ``test_errors/randomisation``,
    key (metric, unit of 4,000 trials), B, seed, count / B). The counts equal the loop and
    the tables of one shard."""
    data, _, _ = urbano
    kw = dict(sizes=(6,), alpha=(0.03125, 0.1), tests=("sign", "randomisation"),
              alternatives=("two-sided",), trials=250, B=32, seed=3)  # B * 0.03125 >= 1
    sharded = UrbanoStudy(TestErrors.of(**kw, shard_items=2, shard_replicates=250), 520, DELTAS)
    whole = UrbanoStudy(TestErrors.of(**kw), 520, DELTAS)
    tables = {k: v.to_pandas() for k, v in run_study(sharded, data)[0].items()}
    one = {k: v.to_pandas() for k, v in run_study(whole, data)[0].items()}
    for name in ("type_1", "type_2", "type_3"):
        assert tables[name].equals(one[name]), name
    t = whole.tests
    mc = {}
    n = 6
    for pool in data.pools:
        u = blocked_draws(t.seed, URBANO_STREAM, (study_key(pool.metric), n), 0, 520,
                          lambda rng, m: rng.random((m, 3 + 2 * n)))
        for kind, trials in [(0, 250), (1, 520), (2, 520)]:
            base, exp = (pool.type1(u[:trials], n) if kind == 0
                         else pool.type2(u[:trials], n, kind - 1))
            p = randomisation_test(exp, base, alternative="two-sided", B=32, seed=3,
                                   study="test_errors/randomisation",
                                   key=(study_key(pool.metric), 0), pvalue_mode="count").pvalue
            mc[(pool.metric, kind)] = (np.asarray(p), (exp - base).mean(axis=1))
    got = {}
    for name in ("type_1", "type_2", "type_3"):
        for r in tables[name].itertuples(index=False):
            delta = None if name == "type_1" else r.delta
            key = (name, r.metric, r.n, delta, r.test, r.tail, r.alpha)
            assert key not in got
            got[key] = (r.trials, r.rejections)
    ref = {}
    for (metric, kind), (p, mean) in mc.items():
        for alpha in kw["alpha"]:
            hit = p <= alpha
            if kind == 0:
                ref[("type_1", metric, 6, None, "randomisation", "two-sided", alpha)] = (
                    250, int(hit.sum()))
            else:
                d = DELTAS[kind - 1]
                ref[("type_2", metric, 6, d, "randomisation", "two-sided", alpha)] = (
                    520, int((hit & (mean > 0)).sum()))
                ref[("type_3", metric, 6, d, "randomisation", "two-sided", alpha)] = (
                    520, int((hit & (mean < 0)).sum()))
    exact, _ = urbano_reference(data, UrbanoStudy(TestErrors.of(**{**kw, "tests": ("sign",)}),
                                                  520, DELTAS))
    assert got == {**ref, **exact}
    assert len(tables["type_3"]) == 2 * 2 * 2 * 2  # metrics x deltas x tests x alphas


class _ThreeTrialPool:
    """A stand-in generator with fixed Type II/III trials on 6 topics (baseline 0): the
    experimental mean above, exactly equal to and below the baseline's, each with 4 of 6
    differences of one sign (two-sided sign test p = 44/64 = 0.6875)."""

    metric = "AP"
    rows = np.array([[0.125] * 4 + [-0.125] * 2,     # mean > 0
                     [0.125] * 4 + [-0.25] * 2,      # mean exactly 0
                     [-0.125] * 4 + [0.125] * 2])    # mean < 0

    def type1(self, u, n):
        return np.zeros((len(u), n)), self.rows[np.arange(len(u)) % 3]

    def type2(self, u, n, delta_index):
        return self.type1(u, n)


def test_a_rejection_with_equal_means_is_neither_type_2_nor_type_3():
    """Type II counts two-sided rejections whose experimental mean is higher, Type III those
    whose mean is lower; a rejected trial with exactly equal means is neither."""
    pool = _ThreeTrialPool()
    assert pool.rows.mean(axis=1).tolist() == [1 / 24, 0.0, -1 / 24]
    assert all(sign_p(r, "two-sided") == Fraction(44, 64) for r in pool.rows)
    data = UrbanoData((pool,), (0.05,))
    study = UrbanoStudy(TestErrors.of(sizes=(6,), alpha=(0.6875, 0.5), tests=("sign",),
                                      alternatives=("two-sided",), trials=3, B=10), 3, (0.05,))
    (shard,) = study.plan(data)
    out = study.kernel(shard, data)
    assert out["trials"].tolist() == [3, 3]
    assert out["rejections"][:, 0, 0].tolist() == [[3, 0], [1, 0]]  # Type I: all 3 rejected
    assert out["wrong"][1, 0].tolist() == [1, 0]


def test_urbano2019_parameters_on_their_cut_offs():
    """Type II/III deltas must be finite and > 0 (0 is Type I, always run); the tails are
    two-sided and greater; power_trials >= 1; the data must have the study's deltas."""
    base = TestErrors.of(sizes=(6,), alpha=(0.05,), tests=("t",), trials=10)
    assert UrbanoStudy(base, 1, (1e-9, 0.5)).deltas == (1e-9, 0.5)
    given = UrbanoStudy(base, 1, [np.int64(1), np.float32(0.5)]).deltas  # a tuple of floats
    assert given == (1.0, 0.5) and type(given) is tuple
    assert all(type(d) is float for d in given)
    for bad in ((0.0,), (0.02, 0.0), (math.inf,), (-0.01,), (math.nan,)):
        with pytest.raises(ConfigError, match=r"experiment\.deltas: design=urbano2019 needs "
                                              r"deltas > 0"):
            UrbanoStudy(base, 10, bad)
    with pytest.raises(ConfigError, match=r"experiment\.design\.power_trials must be an "
                                          r"integer"):
        UrbanoStudy(base, 0, (0.05,))
    less = TestErrors.of(sizes=(6,), alpha=(0.05,), tests=("t",), trials=10,
                         alternatives=("two-sided", "less"))
    with pytest.raises(ConfigError, match=r"experiment\.alternatives: design=urbano2019 runs "
                                          r"two-sided and greater .*'less'"):
        UrbanoStudy(less, 10, (0.05,))
    data = UrbanoData((_ThreeTrialPool(),), (0.05,))
    with pytest.raises(ConfigError, match=r"prepared for deltas \[0\.05\], the study has "
                                          r"\[0\.02\]"):
        UrbanoStudy(base, 10, (0.02,)).plan(data)


def test_make_passes_the_shift_designs_generator_options():
    """design=shift: ``make`` fits each metric's simulator with the Config's margin,
    dependence, drop_duplicates and drop_bottom (a mutation-run gap): its data equal those
    prepared from :func:`irsim.simulate.pairs.fit_simulator` called with the same options,
    and each non-default option changes them."""
    from conftest import urbano_matrix

    from irsim.data.matrix import ScoreMatrix
    from irsim.engine import data_digest
    from irsim.experiments import Shards
    from irsim.experiments.test_errors import Config, Shift, make
    from irsim.simulate.pairs import fit_simulator, prepare

    a = urbano_matrix("adhoc8_ap", "AP", systems=12)
    # a duplicate run (a copy of the first under another name), for drop_duplicates
    m = ScoreMatrix(np.concatenate([a.values, a.values[:, :1]], axis=1), a.metrics,
                    [*a.systems, "copy"], a.topics)
    base = {"margin": "auto", "dependence": "pearson", "drop_duplicates": True,
            "drop_bottom": 0.0}
    digests = set()
    for change in ({}, {"margin": "empirical"}, {"dependence": "kendall"},
                   {"drop_bottom": 0.25}, {"drop_duplicates": False}):
        opts = {**base, **change}
        design = Shift(margin=opts["margin"], dependence=opts["dependence"])
        study, data = make(Config(sizes=[10], deltas=[0.0], trials=250, design=design,
                                  drop_duplicates=opts["drop_duplicates"],
                                  drop_bottom=opts["drop_bottom"]), m, seed=0,
                           shards=Shards())
        sim = fit_simulator(m.metric("AP"), metric="AP", systems=m.systems, **opts)
        want = prepare([sim], tuple(study.config.deltas),
                       [m.select(metrics=["AP"], systems=sim.systems).values[0]])
        assert data_digest(data) == data_digest(want), change
        digests.add(data_digest(data))
    assert len(digests) == 5  # every option reaches the simulator
