"""irsim.simulate.copulas and irsim.simulate.pair_copula_model: pair copulas by AIC, data
preparation, the disk cache.

Oracles: closed-form Kendall's tau of the families (Clayton theta / (theta + 2), Gumbel
1 - 1/theta, Gaussian 2 asin(rho) / pi) against scipy.stats.kendalltau of draws; family
selection on large samples of a known copula; ranks from scipy.stats.rankdata; the paper's
data preparation written out with pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pyvinecopulib as pv
from conftest import SHARED_DATA
from scipy import stats as sps

from irsim.simulate import copulas as cop
from irsim.simulate.pair_copula_model import cache_key, fit_pair_copula_model, prepare_runs


def draws(c: pv.Bicop, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u1, w = rng.random(n), rng.random(n)
    return np.column_stack([u1, cop.sample_pair(c, u1, w)])


@pytest.mark.parametrize("family, rotation, par, tau", [
    ("clayton", 0, 2.0, 2.0 / 4.0),
    ("gumbel", 0, 2.5, 1 - 1 / 2.5),
    ("gaussian", 0, 0.5, 2 * np.arcsin(0.5) / np.pi),
    ("clayton", 90, 3.0, -3.0 / 5.0),
])
def test_inverse_h_sampling_has_the_closed_form_tau(family, rotation, par, tau):
    c = pv.Bicop(family=getattr(pv.BicopFamily, family), rotation=rotation,
                 parameters=np.array([[par]]))
    u = draws(c, 20000, 1)
    got = sps.kendalltau(u[:, 0], u[:, 1])[0]
    # sd of tau-hat <= sqrt(2 (2n + 5) / (9 n (n - 1))) * 1.5 for dependent data: 0.01 covers
    # 4 such sds at n = 20000
    assert got == pytest.approx(tau, abs=0.02)
    assert ((u > 0) & (u < 1)).all()


@pytest.mark.parametrize("family, rotation, par", [
    ("gaussian", 0, 0.7), ("frank", 0, 8.0), ("gumbel", 0, 3.0), ("clayton", 180, 2.0)])
@pytest.mark.slow
def test_selection_recovers_a_known_family(family, rotation, par):
    truth = pv.Bicop(family=getattr(pv.BicopFamily, family), rotation=rotation,
                     parameters=np.array([[par]]))
    u = draws(truth, 5000, 2)
    got = cop.fit_pair(u[:, 0], u[:, 1], seed=0)
    assert got.family == truth.family and got.rotation == rotation
    assert float(got.parameters[0, 0]) == pytest.approx(par, rel=0.08)


def test_pseudo_observations_break_ties_at_random():
    x = np.array([[0.3, 0.1], [0.1, 0.1], [0.3, 0.5], [0.2, 0.1], [0.3, 0.2]])
    a = cop.pseudo_obs(x, np.random.default_rng(0))
    b = cop.pseudo_obs(x, np.random.default_rng(0))
    assert (a == b).all()
    for col in range(2):
        # a permutation of 1..n over n + 1, consistent with the ordinal ranks of the values
        assert sorted(a[:, col] * 6) == pytest.approx([1, 2, 3, 4, 5])
        lo = sps.rankdata(x[:, col], method="min")
        hi = sps.rankdata(x[:, col], method="max")
        assert ((a[:, col] * 6 >= lo - 1e-9) & (a[:, col] * 6 <= hi + 1e-9)).all()
    seen = {tuple(cop.pseudo_obs(x, np.random.default_rng(s))[:, 0]) for s in range(30)}
    assert len(seen) == 6  # the three tied 0.3s in all 3! orders
    untied = np.random.default_rng(3).random((40, 2))
    u = cop.pseudo_obs(untied, np.random.default_rng(9))
    assert u * 41 == pytest.approx(np.column_stack([sps.rankdata(untied[:, 0]),
                                                    sps.rankdata(untied[:, 1])]), abs=1e-9)


@pytest.mark.parametrize("name, dups, bottom", [("adhoc5_ap", 0, 6), ("web2010_ndcg20", 10, 8),
                                                ("adhoc7_ap", 0, 11)])
def test_data_preparation_as_the_paper(name, dups, bottom):
    x = pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv")
    keep = prepare_runs(x.to_numpy().T, drop_duplicates=True, drop_bottom=0.1)
    # R/common.R with pandas: removeDuplicates (within 1e-5 on every topic, the later run
    # goes), then removeBottom: keep mu >= quantile(mu, .1) (R's type 7 = numpy's linear)
    cols = list(x.columns)
    dup = set()
    for i, a in enumerate(cols):
        if a in dup:
            continue
        for b in cols[i + 1:]:
            if (np.abs(x[a] - x[b]) <= 1e-5).all():
                dup.add(b)
    rest = [c for c in cols if c not in dup]
    means = x[rest].mean()
    low = set(means.index[means < np.quantile(means.to_numpy(), 0.1)])
    want = [c not in dup and c not in low for c in cols]
    assert keep.tolist() == want
    # the count rule (irsim before issue 29): the floor(10%) lowest means
    count = prepare_runs(x.to_numpy().T, drop_bottom=0.1, drop_rule="count")
    assert int((~count).sum()) - len(dup) == int(np.floor(0.1 * len(rest)))
    assert (len(dup), len(low)) == (dups, bottom)


@pytest.mark.slow
def test_fitted_collection_and_its_cache(tmp_path):
    x = pd.read_csv(SHARED_DATA / "urbano" / "adhoc8_p10.csv").to_numpy().T[:8]
    m = fit_pair_copula_model(x, metric="P@10", name="adhoc8", seed=3, cache_dir=tmp_path)
    assert len(m.runs) == 8 - 1 and len(m.copulas) == 21 and not m.cached  # R's removeBottom
    again = fit_pair_copula_model(x, metric="P@10", name="adhoc8", seed=3, cache_dir=tmp_path)
    assert again.cached and again.fit_seconds == 0.0
    assert again.copulas == m.copulas and again.margin_families == m.margin_families
    assert (again.margins.x == m.margins.x).all() and (again.margins.F == m.margins.F).all()
    assert len(list(tmp_path.glob("*.npz"))) == 1
    other = fit_pair_copula_model(x, metric="P@10", name="adhoc8", seed=4, cache_dir=tmp_path)
    assert not other.cached and len(list(tmp_path.glob("*.npz"))) == 2
    # the pair index is the triu order; a copula is the one fitted to that pair
    assert m.dropped == ("r0",)
    kept = x[1:]
    a, b = np.triu_indices(7, 1)
    k = 11
    assert m.pair(a[k], b[k]) == k == m.pair(b[k], a[k])
    rng = np.random.default_rng([3, __import__("irsim.rng", fromlist=["x"])
                                 .study_key("adhoc8/P@10"), int(a[k]), int(b[k])])
    u = cop.pseudo_obs(np.column_stack([kept[a[k]], kept[b[k]]]), rng)
    direct = pv.Bicop.from_data(u, controls=cop.controls())
    assert direct.to_json() == m.copulas[k]
    assert cache_key(x, m.runs, {"a": 1}) != cache_key(x + 0.1, m.runs, {"a": 1})


@pytest.mark.slow
def test_controls_are_the_reference_selection_on_any_threads():
    """Oracle: pyvinecopulib's selection with its controls spelled out (MLE, AIC, the 11
    parametric families with rotations, the library's family preselection, one thread): the
    controls of a fit on 1 or 2 threads select the same model (family, rotation, parameters,
    log-likelihood: the JSON) on real pairs, tied (P@10) and untied (AP)."""
    ref = pv.FitControlsBicop(
        family_set=[getattr(pv.BicopFamily, f) for f in cop.FAMILIES],
        parametric_method="mle", selection_criterion="aic", allow_rotations=True,
        preselect_families=True, num_threads=1)
    for name in ("adhoc5_ap", "adhoc7_p10"):
        x = pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv").to_numpy(np.float64).T[:6]
        a, b = np.triu_indices(len(x), 1)
        for i, j in zip(a.tolist(), b.tolist(), strict=True):
            u = cop.pseudo_obs(np.column_stack([x[i], x[j]]), np.random.default_rng([i, j]))
            want = pv.Bicop.from_data(u, controls=ref).to_json()
            for threads in (1, 2):
                got = pv.Bicop.from_data(u, controls=cop.controls(threads=threads))
                assert got.to_json() == want, (name, i, j, threads)
