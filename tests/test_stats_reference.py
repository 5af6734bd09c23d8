"""Reference numbers of METHODS.md section 2: Sakai's book (Table 5.1) and Urbano's
adhoc8 AP runs 125 (baseline) vs 126."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

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
def test_urbano_bootstrap_shift(urbano, alternative, reference):
    """The published bootstrap values are of the shift method (non-studentised mean)."""
    B = 1_000_000
    r = paired_bootstrap(*urbano, statistic="mean", alternative=alternative, B=B, seed=1)
    assert _within_4_se(float(r.pvalue), reference, B)


@pytest.mark.parametrize(("alternative", "reference"),
                         [("greater", 0.000603), ("two-sided", 0.001188)])
def test_urbano_permutation(urbano, alternative, reference):
    B = 1_000_000
    r = randomisation_test(*urbano, alternative=alternative, B=B, seed=1)
    assert not r.exact
    assert _within_4_se(float(r.pvalue), reference, B)
