"""One "which runs a study keeps" (issue 26): :func:`irsim.sampling.systems.kept_runs` and its
parameter check :func:`irsim.sampling.systems.check_drop`, used by every caller.

Before issue 26 each caller spelt the step out itself. Their code paths, as they stood on main
before the change, are copied below as plain references (``old_*``, together with the
primitives they called, frozen here too), and every caller's new path must give the same mask
on the real score matrices of shared/data/urbano (30 matrices of 48 to 129 runs: duplicates
in 21 of them, tied means in 12) for shares 0, .1, .25, .5, both rules, with and without
duplicates. A loop reference written from the definitions (duplicates first, then R's type-7
quantile or ``floor(share * k)`` with ties to the earlier run) checks the frozen code itself.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, has_data

from irsim.data.matrix import ScoreMatrix
from irsim.errors import ConfigError, InputError, python_parameters
from irsim.experiments import Shards
from irsim.experiments import reliability as rel
from irsim.kit.topicsets import compared_systems, kept_systems
from irsim.sampling.systems import check_drop, kept_runs
from irsim.simulate.pair_copula_model import prepare_fit, prepare_runs
from irsim.simulate.pairs import fit_simulator

pytestmark = pytest.mark.skipif(not has_data(), reason="shared/data not found")

SHARES = (0.0, 0.1, 0.25, 0.5)
RULES = ("quantile", "count")
FILES = tuple(sorted((SHARED_DATA / "urbano").glob("*.csv")))


@cache
def runs(name: str) -> np.ndarray:
    """A (runs, topics) matrix of shared/data/urbano (the csv holds runs as columns)."""
    return pd.read_csv(SHARED_DATA / "urbano" / name).to_numpy(np.float64).T


def names(max_runs: int = 1000) -> list[str]:
    return [f.name for f in FILES if len(runs(f.name)) <= max_runs]


# --- the code on main before issue 26, frozen -------------------------------------------

def old_bottom_count(systems, share):
    return int(math.floor(float(share) * int(systems) + 1e-9))


def old_bottom_mask(means, share, *, rule="count", keep=None):
    means = np.asarray(means, np.float64)
    out = np.ones(len(means), bool) if keep is None else np.array(keep, bool)
    if share <= 0:
        return out
    idx = np.flatnonzero(out)
    if rule == "count":
        drop = old_bottom_count(len(idx), share)
        if drop:
            out[idx[np.argsort(means[idx], kind="stable")[:drop]]] = False
    elif rule == "quantile":
        out &= means >= np.quantile(means[idx], share)
    else:
        raise ValueError(rule)
    return out


def old_duplicate_mask(scores, tol=1e-5):
    x = np.asarray(scores, np.float64)
    keep = np.ones(len(x), bool)
    for i in range(len(x) - 1):
        if keep[i]:
            keep[i + 1:] &= ~(np.abs(x[i + 1:] - x[i]) <= tol).all(axis=1)
    return keep


def old_fit_simulator_keep(x, drop_duplicates, drop_bottom):
    """irsim.simulate.pairs.fit_simulator (the old topics.py): duplicates, then the quantile."""
    keep = old_duplicate_mask(x) if drop_duplicates else np.ones(len(x), bool)
    return old_bottom_mask(x.mean(axis=1), drop_bottom, rule="quantile", keep=keep)


def old_prepare_runs(x, drop_duplicates, drop_bottom, drop_rule):
    """irsim.simulate.pair_copula_model.prepare_runs."""
    x = np.asarray(x, np.float64)
    keep = old_duplicate_mask(x) if drop_duplicates else np.ones(len(x), bool)
    return old_bottom_mask(x.mean(axis=1), drop_bottom, keep=keep, rule=drop_rule)


def old_kept_systems(data, drop_bottom, metric, rule):
    """irsim.kit.topicsets.kept_systems (reliability, error_rates, effort): no duplicates."""
    return np.flatnonzero(old_bottom_mask(data.metric(metric).mean(axis=1), drop_bottom,
                                          rule=rule))


# --- a loop reference from the definitions ---------------------------------------------

def type7(values, p):
    v = sorted(values)
    h = (len(v) - 1) * p
    lo = int(math.floor(h))
    return v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def loop_keep(x, drop_duplicates, share, rule):
    """Duplicates first (a run equal within 1e-5 on every topic to an earlier kept run), then
    among the runs left: below the type-7 quantile of their means, or the floor(share k)
    lowest means with ties to the earlier run. The means are numpy's (an input of the rule:
    a Python sum would round tied means of P@10 apart)."""
    rows = [list(map(float, r)) for r in x]
    means = np.asarray(x, np.float64).mean(axis=1).tolist()
    left = []
    for i, r in enumerate(rows):
        if drop_duplicates and any(
                all(abs(a - b) <= 1e-5 for a, b in zip(r, rows[j], strict=True)) for j in left):
            continue
        left.append(i)
    mean = {i: means[i] for i in left}
    if share > 0 and rule == "quantile":
        q = type7([mean[i] for i in left], share)
        left = [i for i in left if not mean[i] < q]
    elif share > 0:
        drop = set(sorted(left, key=lambda i: (mean[i], i))[:math.floor(share * len(left)
                                                                           + 1e-9)])
        left = [i for i in left if i not in drop]
    return [i in left for i in range(len(rows))]


# --- the tests ---------------------------------------------------------------------------

def test_the_data_exercise_duplicates_and_ties_at_the_cut():
    """The matrices hold duplicates, ties straddling the count rule's cut (the earlier run
    goes) and tied means equal to the quantile (all kept): the cases where order and tie
    handling matter."""
    dups = [n for n in names() if not old_duplicate_mask(runs(n)).all()]
    assert len(dups) == 21
    straddle = at_quantile = 0
    for n in names():
        for dup in (False, True):
            x = runs(n)[old_duplicate_mask(runs(n))] if dup else runs(n)
            m = x.mean(axis=1)
            low = np.sort(m)
            for s in SHARES[1:]:
                c = old_bottom_count(len(m), s)
                straddle += bool(low[c - 1] == low[c])
                at_quantile += bool(np.count_nonzero(m == np.quantile(m, s)) > 1)
    assert (straddle, at_quantile) == (6, 8)


def test_the_order_matters_on_real_data():
    """Bottom share first and duplicates after would keep other runs: the order is tested."""
    differ = 0
    for n in names():
        x = runs(n)
        for s in SHARES[1:]:
            for rule in RULES:
                late = old_bottom_mask(x.mean(axis=1), s, rule=rule) & old_duplicate_mask(x)
                differ += not np.array_equal(late, old_prepare_runs(x, True, s, rule))
    assert differ > 0


@pytest.mark.parametrize("name", [f.name for f in FILES])
def test_kept_runs_is_every_callers_old_path(name):
    x = runs(name)
    m = ScoreMatrix(x[None], ["m"], [f"r{i}" for i in range(len(x))],
                    [str(t) for t in range(x.shape[1])])
    for share in SHARES:
        for dup in (False, True):
            for rule in RULES:
                new = kept_runs(x, drop_duplicates=dup, drop_bottom=share, rule=rule)
                assert new.tolist() == loop_keep(x, dup, share, rule), (share, dup, rule)
                assert np.array_equal(new, old_prepare_runs(x, dup, share, rule))
                assert np.array_equal(prepare_runs(x, dup, share, rule), new)
            quantile = kept_runs(x, drop_duplicates=dup, drop_bottom=share, rule="quantile")
            assert np.array_equal(quantile, old_fit_simulator_keep(x, dup, share))
        for rule in RULES:
            assert np.array_equal(kept_systems(m, share, "m", rule),
                                  old_kept_systems(m, share, "m", rule)), (share, rule)


@pytest.mark.parametrize("name", names(max_runs=62))
def test_fit_simulator_keeps_the_old_runs(name):
    """The pair simulator (design=shift, multiple_testing) through its public door."""
    x = runs(name)
    ids = tuple(f"r{i}" for i in range(len(x)))
    for share in SHARES:
        for dup in (False, True):
            sim = fit_simulator(x, systems=ids, margin="empirical", drop_duplicates=dup,
                                drop_bottom=share)
            want = old_fit_simulator_keep(x, dup, share)
            assert sim.systems == tuple(np.array(ids)[want]), (share, dup)
            assert sim.dropped == tuple(np.array(ids)[~want]), (share, dup)


@pytest.mark.parametrize("name", ["web2012_p10.csv", "web2011_p20.csv", "adhoc5_p10.csv"])
def test_reliability_analyses_the_old_runs(name):
    x = runs(name)
    m = ScoreMatrix(x[None], ["P10"], [f"r{i}" for i in range(len(x))],
                    [str(t) for t in range(x.shape[1])])
    for share in SHARES:
        for rule in RULES:
            study, data = rel.make(rel.Config(drop_bottom=share, drop_rule=rule, B=10), m,
                                   seed=0, shards=Shards())
            want = x[old_kept_systems(m, share, "P10", rule)]
            assert np.array_equal(study.scores(data, "P10"), want), (share, rule)


def test_compared_systems_is_kept_systems():
    m = ScoreMatrix(runs("web2012_ap.csv")[None], ["AP"], [f"r{i}" for i in range(48)],
                    [str(t) for t in range(50)])
    for share in SHARES:
        for rule in RULES:
            assert compared_systems(m, share, "AP", rule) == \
                tuple(old_kept_systems(m, share, "AP", rule).tolist())


def _config(share, rule):
    """reliability's Config holding `rule` as given: a Config built with an unknown rule is
    refused by its own type first (``irsim.params.Options``), before ``make`` checks the
    share and the rule with the one check every caller shares."""
    from irsim.experiments import reliability as rel

    config = rel.Config(drop_bottom=share)
    object.__setattr__(config, "drop_rule", rule)
    return config


def test_a_config_refuses_an_unknown_rule_itself():
    from irsim.experiments import reliability as rel

    with pytest.raises(ConfigError, match=r"unknown value of experiment.drop_rule 'floor'; "
                                          r"valid: count, quantile"):
        rel.Config(drop_rule="floor")


@pytest.mark.parametrize(("share", "rule", "message"), [
    (1.0, "quantile", "drop_bottom must be in [0, 1), got 1.0"),
    (-0.1, "count", "drop_bottom must be in [0, 1), got -0.1"),
    ("x", "count", "drop_bottom must be a number in [0, 1), got 'x'"),
    (0.1, "floor", "drop_rule must be one of quantile, count; got 'floor'"),
    (None, "floor", "drop_bottom must be a number in [0, 1), got None"),  # the share first
])
def test_one_check_for_every_caller(share, rule, message):
    x = runs("web2012_ap.csv")
    m = ScoreMatrix(x[None], ["AP"], [f"r{i}" for i in range(48)], [str(t) for t in range(50)])
    calls = {
        "check_drop": lambda: check_drop(share, rule),
        "kept_runs": lambda: kept_runs(x, drop_bottom=share, rule=rule),
        "kept_systems": lambda: kept_systems(m, share, "AP", rule),
        "prepare_runs": lambda: prepare_runs(x, True, share, rule),
        "prepare_fit": lambda: prepare_fit(x, metric="AP", name="web2012", drop_bottom=share,
                                           drop_rule=rule),
        "reliability": lambda: rel.make(_config(share, rule), m, seed=0, shards=Shards()),
    }
    if rule == "quantile":  # fit_simulator's rule is fixed
        calls["fit_simulator"] = lambda: fit_simulator(x, drop_bottom=share)
    for what, call in calls.items():
        with pytest.raises(ConfigError) as err:
            call()
        assert message in str(err.value), what
    cli = str(pytest.raises(ConfigError, check_drop, share, rule).value)
    assert ("experiment." + message) in cli
    with python_parameters():
        plain = str(pytest.raises(ConfigError, check_drop, share, rule).value)
    assert plain == message


def test_kept_runs_refuses_a_vector():
    with pytest.raises(InputError, match=r"\(runs, topics\) matrix, got shape \(4,\)"):
        kept_runs(np.arange(4.0), drop_bottom=0.25)
