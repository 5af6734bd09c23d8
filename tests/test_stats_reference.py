"""Reference numbers of METHODS.md section 2: Sakai's book (Table 5.1) and Urbano's
adhoc8 AP runs 125 (baseline) vs 126."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from irsim.stats import (
    anova_two_way,
    paired_bootstrap,
    paired_t,
    randomisation_test,
    sign_test,
    wilcoxon,
)


@pytest.fixture(scope="module")
def sakai(shared_data):
    """Systems X, Y, Z (nDCG@5 on 20 topics), topics aligned by query id."""
    frames = [pd.read_csv(shared_data / "sakai-book" / f"{s}.csv").set_index("query_id")
              for s in "XYZ"]
    topics = frames[0].index
    return np.stack([f.loc[topics].iloc[:, 0].to_numpy(np.float64) for f in frames])


@pytest.fixture(scope="module")
def urbano(shared_data):
    """adhoc8 AP: x = run 126, y = run 125 (1-based columns; 125 is the baseline)."""
    df = pd.read_csv(shared_data / "urbano" / "adhoc8_ap.csv")
    return df.iloc[:, 125].to_numpy(np.float64), df.iloc[:, 124].to_numpy(np.float64)


def _close(value, reference: str) -> bool:
    """`value` rounds to the published `reference` (half a unit in its last place)."""
    decimals = len(reference.split(".")[1])
    return abs(float(value) - float(reference)) <= 0.5 * 10.0**-decimals + 1e-12


def test_sakai_paired_t(sakai):
    x, y = sakai[0], sakai[1]
    r = paired_t(x, y)
    assert _close(r.mean, "0.0750")
    assert _close(r.sd**2, "0.0251")
    assert _close(r.effect_size, "0.473")
    assert _close(r.statistic, "2.116")
    assert _close(r.pvalue, "0.0478")
    assert _close(r.margin_of_error(0.95), "0.0742")
    ci = r.confidence_interval(0.95)
    assert math.isclose(float(ci.high - ci.low), 2 * float(r.margin_of_error()), rel_tol=1e-12)


def test_sakai_anova(sakai):
    r = anova_two_way(sakai)
    assert _close(r.statistic, "2.475")
    assert _close(r.pvalue, "0.098")
    assert (r.df_systems, r.df_topics, r.df_error) == (2, 19, 38)


@pytest.mark.parametrize(("alternative", "count"),
                         [("two-sided", 69120), ("greater", 34560), ("less", 1031296)])
def test_sakai_exact_randomisation(sakai, alternative, count):
    r = randomisation_test(sakai[0], sakai[1], method="exact", alternative=alternative)
    assert r.exact and r.n_resamples == 2**20
    assert int(r.count) == count
    assert float(r.pvalue) == count / 1048576
    # auto picks the exact enumeration when 2**n <= B
    assert float(randomisation_test(sakai[0], sakai[1], B=2**20,
                                    alternative=alternative).pvalue) == count / 1048576


@pytest.mark.parametrize(("alternative", "col"), [("greater", 0), ("two-sided", 1)])
def test_urbano_closed_form_tests(urbano, alternative, col):
    x, y = urbano
    refs = {
        "t": (0.0006596986, 0.0013193972),
        "wilcoxon": (0.001722594, 0.003445188),
        "sign": (0.004779939, 0.009559879),
    }
    got = {
        "t": paired_t(x, y, alternative=alternative).pvalue,
        "wilcoxon": wilcoxon(x, y, method="r", alternative=alternative).pvalue,
        "sign": sign_test(x, y, threshold=0.01, alternative=alternative).pvalue,
    }
    for name, ref in refs.items():
        assert abs(float(got[name]) - ref[col]) <= 1e-9, name


def _within_4_se(p: float, reference: float, B: int) -> bool:
    return abs(p - reference) <= 4.0 * math.sqrt(reference * (1.0 - reference) / B)


@pytest.mark.parametrize(("alternative", "reference"),
                         [("greater", 0.000424), ("two-sided", 0.000586)])
@pytest.mark.slow
def test_urbano_bootstrap_shift(urbano, alternative, reference):
    """The published bootstrap values are of the shift method (non-studentised mean)."""
    B = 1_000_000
    r = paired_bootstrap(*urbano, statistic="mean", alternative=alternative, B=B, seed=1)
    assert _within_4_se(float(r.pvalue), reference, B)


@pytest.mark.parametrize(("alternative", "reference"),
                         [("greater", 0.000603), ("two-sided", 0.001188)])
@pytest.mark.slow
def test_urbano_permutation(urbano, alternative, reference):
    B = 1_000_000
    r = randomisation_test(*urbano, alternative=alternative, B=B, seed=1)
    assert not r.exact
    assert _within_4_se(float(r.pvalue), reference, B)


# -- numbers pinned in doctests, derived here from scipy or the definitions ---------------------
# Each test repeats a docstring example's input and checks the printed number against an
# independent computation, so the doctest's expected output has a source (file:line of the
# printed number in the comment).


def test_doctest_paired_t_numbers():
    """irsim/stats/ttest.py:97,99: (2.0913, 0.066, 9) and (0.6613, 0.119)."""
    x = np.array([0.7, 0.3, 0.2, 0.6, 0.4, 0.4, 0.0, 0.7, 0.1, 0.5])
    y = np.array([0.5, 0.1, 0.0, 0.2, 0.4, 0.3, 0.0, 0.5, 0.3, 0.5])
    ref = sps.ttest_rel(x, y)
    z = x - y
    effect = z.mean() / z.std(ddof=1)  # METHODS.md: effect size = mean(z) / sd(z)
    ci = ref.confidence_interval(0.95)
    margin = (ci.high - ci.low) / 2
    assert (round(ref.statistic, 4), round(ref.pvalue, 4), ref.df) == (2.0913, 0.066, 9)
    assert (round(effect, 4), round(margin, 4)) == (0.6613, 0.119)
    r = paired_t(x, y)
    assert float(r.statistic) == pytest.approx(ref.statistic, rel=1e-12)
    assert float(r.pvalue) == pytest.approx(ref.pvalue, rel=1e-12)
    assert float(r.effect_size) == pytest.approx(effect, rel=1e-12)
    assert float(r.margin_of_error()) == pytest.approx(margin, rel=1e-12)


def test_doctest_registry_t_pvalue():
    """irsim/stats/__init__.py:15: 0.1881."""
    from irsim.stats import get_test

    x, y = np.array([[0.5, 0.6, 0.7, 0.4]]), np.array([[0.4, 0.5, 0.5, 0.45]])
    ref = sps.ttest_rel(x[0], y[0]).pvalue
    assert round(ref, 4) == 0.1881
    assert float(get_test("t").function(x, y).pvalue[0]) == pytest.approx(ref, rel=1e-12)


def test_doctest_wilcoxon_numbers():
    """irsim/stats/wilcoxon.py:159,162: (33.0, 0.039062) and (2.0304, 0.021158)."""
    z = np.array([0.12, -0.03, 0.25, 0.08, 0.31, -0.02, 0.17, 0.09])
    w_plus = sps.rankdata(np.abs(z))[z > 0].sum()  # W+ (scipy's two-sided reports min)
    exact = sps.wilcoxon(z, method="exact")
    approx = sps.wilcoxon(z, alternative="greater", method="approx", correction=True)
    assert (w_plus, round(exact.pvalue, 6)) == (33.0, 0.039062)
    assert (round(approx.zstatistic, 4), round(approx.pvalue, 6)) == (2.0304, 0.021158)
    r = wilcoxon(z, method="exact")
    assert float(r.statistic) == w_plus
    assert float(r.pvalue) == pytest.approx(exact.pvalue, rel=1e-12)
    r = wilcoxon(z, method="approx", correction=True, alternative="greater")
    assert float(r.zstatistic) == pytest.approx(approx.zstatistic, rel=1e-12)
    assert float(r.pvalue) == pytest.approx(approx.pvalue, rel=1e-12)


def test_doctest_sign_numbers():
    """irsim/stats/sign.py:65: ([6], [7], 0.125)."""
    z = np.array([[0.2, 0.1, 0.3, -0.05, 0.005, 0.4, 0.2, 0.1]])
    kept = z[0][np.abs(z[0]) > 0.01]
    k, m = int((kept > 0).sum()), len(kept)
    ref = sps.binomtest(k, m, 0.5).pvalue
    assert (k, m, round(ref, 4)) == (6, 7, 0.125)
    r = sign_test(z, threshold=0.01)
    assert (r.statistic.tolist(), r.n.tolist()) == ([k], [m])
    assert float(r.pvalue[0]) == pytest.approx(ref, rel=1e-12)


def test_doctest_studentized_t_and_geometric_mean():
    """irsim/stats/resample.py:81,83 (3.872983, 0.0), :97 (-11.5129), :108 (0.200012)."""
    from irsim.stats.resample import gmean_scores, log_scores, studentized_t

    z = np.array([0.1, 0.3, 0.2, 0.4])
    ref = sps.ttest_1samp(z, 0.0).statistic  # mean / (sd(ddof=1) / sqrt(n))
    assert round(ref, 6) == 3.872983
    assert float(studentized_t(z)) == pytest.approx(ref, rel=1e-12)
    # METHODS.md: a resample with zero variance has t* = 0
    assert float(studentized_t(np.array([0.2, 0.2, 0.2]))) == 0.0
    # Sakai's AG: logs of x + 1e-5; the geometric mean of x + 1e-5 (scipy)
    assert round(math.log(1e-5), 4) == -11.5129
    np.testing.assert_allclose(log_scores(np.array([0.0, 1.0])), [math.log(1e-5),
                                                                   math.log(1 + 1e-5)])
    g = sps.gmean(np.array([0.1, 0.4]) + 1e-5)
    assert round(g, 6) == 0.200012
    assert float(gmean_scores(np.array([0.1, 0.4]))) == pytest.approx(g, rel=1e-12)


def test_doctest_bca_acceleration():
    """irsim/stats/ci.py:174: 0.096225, from the jackknife definition (Efron & Tibshirani
    14.15): a = sum (mean_jack - theta_(i))^3 / (6 (sum (mean_jack - theta_(i))^2)^1.5)."""
    from irsim.stats import mean_acceleration

    x = [0.0, 0.0, 0.0, 1.0]
    jack = [sum(x[:i] + x[i + 1:]) / (len(x) - 1) for i in range(len(x))]
    mj = sum(jack) / len(jack)
    u = [mj - t for t in jack]
    a = sum(v ** 3 for v in u) / (6 * sum(v ** 2 for v in u) ** 1.5)
    assert round(a, 6) == 0.096225
    assert float(mean_acceleration(np.array(x))) == pytest.approx(a, rel=1e-12)


def test_doctest_t_interval_of_a_mean():
    """irsim/stats/ci.py:530: [0.128, 0.442] (scipy's t interval)."""
    from irsim.stats import mean_ci

    x = np.array([[0.12, 0.45, 0.30, 0.05, 0.61, 0.22, 0.38, 0.15]])
    lo, hi = sps.t.interval(0.95, 7, loc=x.mean(), scale=sps.sem(x[0]))
    assert np.round([lo, hi], 4).tolist() == [0.128, 0.442]
    ci = mean_ci(x, method="t").confidence_interval
    assert (float(ci.low[0]), float(ci.high[0])) == pytest.approx((lo, hi), rel=1e-12)


def test_doctest_z0_numbers():
    """irsim/stats/kendall.py:95: (2.639, 0.0083), from Sakai's Eq. 12 written out; Sakai
    (SIGIR 2006): with 30 runs, tau above 0.34 is significant at 0.01."""
    from irsim.stats.kendall import z0_test

    k = 30
    z0 = 0.34 / math.sqrt(2 * (2 * k + 5) / (9 * k * (k - 1)))
    p = 2 * sps.norm.sf(z0)
    assert (round(z0, 3), round(p, 4)) == (2.639, 0.0083)
    assert p < 0.01 < 2 * sps.norm.sf(0.33 / math.sqrt(2 * (2 * k + 5) / (9 * k * (k - 1))))
    assert z0_test(0.34, 30) == pytest.approx((z0, p), rel=1e-12)


def sakai_paired_asl(z: np.ndarray, B: int, rng: np.random.Generator) -> float:
    """Sakai's studentised paired bootstrap written out (METHODS.md section 2)."""
    n = len(z)
    t_obs = z.mean() / (z.std(ddof=1) / math.sqrt(n))
    w = z - z.mean()
    s = w[rng.integers(0, n, size=(B, n))]
    sd = s.std(axis=1, ddof=1)
    t = np.divide(s.mean(axis=1), sd / math.sqrt(n), out=np.zeros(B), where=sd > 0)
    return float(np.mean(np.abs(t) >= abs(t_obs)))


def test_doctest_paired_bootstrap_pvalues():
    """irsim/stats/bootstrap.py:197: [0.604, 0.0, 0.0] (B = 2000) against an independent
    loop with B = 40,000 and numpy's own generator: within 4 combined binomial SE."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, (3, 30))
    y = x - np.array([[0.0], [0.05], [0.2]]) + rng.normal(0, 0.1, (3, 30))
    printed = [0.604, 0.0, 0.0]
    got = paired_bootstrap(x, y, B=2000, seed=1).pvalue
    assert np.round(got, 3).tolist() == printed
    ref_rng = np.random.default_rng(2024)
    for row in range(3):
        ref = sakai_paired_asl(x[row] - y[row], 40_000, ref_rng)
        se = math.sqrt(max(ref * (1 - ref), 1 / 40_000) * (1 / 2000 + 1 / 40_000))
        assert abs(got[row] - ref) <= 4 * se, (row, got[row], ref)


def test_doctest_unpaired_bootstrap_pvalues():
    """irsim/stats/bootstrap.py:287: [0.726, 0.0] (B = 2000) against Sakai's unpaired
    bootstrap written out (pool x and y, draw n + m with replacement, |mean difference|),
    B = 40,000: within 4 combined binomial SE."""
    from irsim.stats import unpaired_bootstrap

    rng = np.random.default_rng(3)
    x = rng.beta(2, 3, (2, 40))
    y = np.stack([rng.beta(2, 3, 40), rng.beta(1, 4, 40)])
    got = unpaired_bootstrap(x, y, B=2000, seed=1).pvalue
    assert np.round(got, 3).tolist() == [0.726, 0.0]
    ref_rng = np.random.default_rng(99)
    B = 40_000
    for row in range(2):
        v = np.concatenate([x[row], y[row]])
        s = v[ref_rng.integers(0, 80, size=(B, 80))]
        d = s[:, :40].mean(axis=1) - s[:, 40:].mean(axis=1)
        obs = x[row].mean() - y[row].mean()
        ref = float(np.mean(np.abs(d) >= abs(obs)))
        se = math.sqrt(max(ref * (1 - ref), 1 / B) * (1 / 2000 + 1 / B))
        assert abs(got[row] - ref) <= 4 * se, (row, got[row], ref)
