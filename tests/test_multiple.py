"""Multiple-comparison corrections (irsim.stats.multiple) against statsmodels' multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import urbano_matrix
from statsmodels.stats.multitest import multipletests

from irsim.engine import run_study
from irsim.errors import ConfigError, InputError
from irsim.experiments.discpower import DiscPower
from irsim.stats import CORRECTIONS, adjust, reject

SM = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}
ALPHAS = (0.01, 0.2)  # statsmodels' Holm runs gc.collect() per call: few calls


def oracle(family: np.ndarray, method: str, alpha: float = 0.05):
    """statsmodels on the family without its NaNs, NaN (not rejected) where NaN."""
    ok = ~np.isnan(family)
    adj, rej = np.full(family.shape, np.nan), np.zeros(family.shape, bool)
    if ok.any():
        if method == "none":
            adj[ok], rej[ok] = family[ok], family[ok] <= alpha
        else:
            r, q, *_ = multipletests(family[ok], alpha=alpha, method=SM[method])
            adj[ok], rej[ok] = q, r
    return adj, rej


def check(p: np.ndarray, axis: int) -> None:
    """Every family along `axis` equals the oracle bit for bit."""
    families = np.moveaxis(p, axis, -1).reshape(-1, p.shape[axis])
    for method in CORRECTIONS:
        got = np.moveaxis(adjust(p, method, axis=axis), axis, -1).reshape(families.shape)
        for alpha in ALPHAS:
            rej = np.moveaxis(reject(p, alpha, method, axis=axis), axis, -1)
            rej = rej.reshape(families.shape)
            for f, family in enumerate(families):
                want_adj, want_rej = oracle(family, method, alpha)
                np.testing.assert_array_equal(got[f], want_adj, err_msg=method)
                np.testing.assert_array_equal(rej[f], want_rej, err_msg=f"{method} {alpha}")


def random_p(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Skewed p-values with ties (rounded), exact 0 and 1."""
    p = rng.uniform(size=shape) ** 3
    p = np.where(rng.uniform(size=shape) < 0.4, np.round(p, 2), p)
    p[rng.uniform(size=shape) < 0.05] = 0.0
    p[rng.uniform(size=shape) < 0.05] = 1.0
    return p


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.slow
def test_random_families_equal_statsmodels(axis):
    rng = np.random.default_rng(20071106)
    p = random_p(rng, (5, 60) if axis else (60, 5))
    assert len(np.unique(p)) < p.size  # ties
    assert (p == 0).any() and (p == 1).any()
    check(p, axis)


@pytest.mark.slow
def test_three_dimensions_and_small_families():
    rng = np.random.default_rng(3)
    check(random_p(rng, (2, 3, 25)), axis=-1)
    check(random_p(rng, (2, 5, 2)), axis=1)
    check(random_p(rng, (5, 1)), axis=1)  # families of one p-value


@pytest.mark.slow
def test_nan_is_left_out_of_the_family():
    rng = np.random.default_rng(8)
    p = random_p(rng, (4, 40))
    p[rng.uniform(size=p.shape) < 0.2] = np.nan
    p[3] = np.nan  # a family of NaNs only
    check(p, axis=1)
    assert np.isnan(adjust(p, "bh")[3]).all() and not reject(p, 0.5, "holm")[3].any()
    # by hand: Bonferroni counts the three members only
    np.testing.assert_array_equal(adjust([0.01, np.nan, 0.2, 0.3], "bonferroni"),
                                  [0.03, np.nan, 0.6000000000000001, 0.8999999999999999])


def test_by_hand():
    # Holm: sorted 0.01 0.03 0.04 0.2 times 4 3 2 1 -> 0.04 0.09 0.08 0.2, running max
    p = np.array([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(adjust(p, "holm"), [0.04, 0.09, 0.09, 0.2], rtol=1e-15)
    # BH: p m / i = 0.04 0.06 0.0533 0.2, running min from the top
    np.testing.assert_allclose(adjust(p, "bh"), [0.04, 0.16 / 3, 0.16 / 3, 0.2], rtol=1e-15)
    # BY: BH times 1 + 1/2 + 1/3 + 1/4 = 25/12
    np.testing.assert_allclose(adjust(p, "by"), np.minimum(1, np.array(
        [0.04, 0.16 / 3, 0.16 / 3, 0.2]) * 25 / 12), rtol=1e-15)
    assert adjust(p, "none").tolist() == p.tolist()


@pytest.mark.parametrize("test", ["t", "paired_bootstrap"])
def test_real_discpower_pvalues(test):
    # every pair of the 129 adhoc8 AP runs: one family of 8,256 p-values per test
    m = urbano_matrix("adhoc8_ap", "AP")
    sub = m if test == "t" else m.select(systems=m.systems[:40])
    tables, _ = run_study(DiscPower.of(tests=(test,), B=250, seed=1, estimated_diff=False), sub)
    p = tables["asl"].column("asl").to_numpy()
    k = len(sub.systems)
    assert len(p) == k * (k - 1) // 2
    assert len(np.unique(p)) < len(p)  # ties (exact for the bootstrap's count/B)
    for method in CORRECTIONS:
        want_adj, want_rej = oracle(p, method, 0.05)
        np.testing.assert_array_equal(adjust(p, method), want_adj, err_msg=method)
        np.testing.assert_array_equal(reject(p, 0.05, method), want_rej, err_msg=method)
    # two families stacked along axis 0 give the same as each alone
    two = np.stack([p, p[::-1]])
    np.testing.assert_array_equal(adjust(two, "holm", axis=1)[1], adjust(p[::-1], "holm"))


def test_corrections_only_raise_pvalues_in_order():
    rng = np.random.default_rng(5)
    p = random_p(rng, (3, 200))
    bonf, holm, bh, by = (adjust(p, m) for m in ("bonferroni", "holm", "bh", "by"))
    assert (holm <= bonf).all() and (bh <= holm).all() and (bh <= by).all() and (p <= bh).all()


def test_bad_input():
    with pytest.raises(ConfigError, match="did you mean 'holm'"):
        adjust([0.1], "hlm")
    with pytest.raises(ConfigError, match="unknown correction"):
        reject([0.1], 0.05, "fdr_bh")
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        adjust([0.1, 1.5], "bh")
    with pytest.raises(ConfigError, match="alpha"):
        reject([0.1], 1.5, "bh")
    with pytest.raises(ConfigError, match="axis"):
        adjust([[0.1]], "bh", axis=2)
    with pytest.raises(InputError):
        adjust(0.1, "bh")
