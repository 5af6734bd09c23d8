"""The counting kernel of the randomisation test and the shift bootstrap
(:func:`irsim.stats.resample.resampled_counts`) against the plain definition, on many random
configurations: sign flips and bootstrap counts (kept as uint8 / uint16, centred and divided
block by block), n odd and even, rows and B that are not multiples of the blocks, every set
of alternatives, observed statistics of both signs, 0, and thresholds that fall exactly on a
replicate (ties at the tie tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from irsim.sampling.signs import sign_flips
from irsim.sampling.topics import bootstrap_counts
from irsim.stats import resample
from irsim.stats.resample import resampled_counts
from irsim.stats.ties import TIE_RTOL

ALTERNATIVE_SETS = (("two-sided", "greater"), ("greater", "two-sided"), ("two-sided",),
                    ("less",), ("greater",), ("less", "two-sided", "greater"),
                    ("greater", "less"), ("two-sided", "less"))


def _definition(product: np.ndarray, obs: np.ndarray, alternatives: tuple[str, ...],
                scale: np.ndarray) -> np.ndarray:
    """Replicates at least as extreme as the observed value, straight from the definition:
    ties within ``TIE_RTOL * max(|obs|, scale)``; two-sided ``|r| >= |obs| - tol`` (every
    replicate when that bound is not positive)."""
    tol = TIE_RTOL * np.maximum(np.abs(obs), scale)[:, None]
    o = obs[:, None]
    out = np.empty((len(product), len(alternatives)), np.int64)
    for j, alt in enumerate(alternatives):
        if alt == "greater":
            hit = product >= o - tol
        elif alt == "less":
            hit = product <= o + tol
        else:
            a = np.abs(o) - tol
            hit = (product >= a) | (product <= -a) | (a <= 0)
        out[:, j] = hit.sum(axis=1)
    return out


def _configuration(seed: int) -> tuple:
    """A random problem: (lhs, draws, kwargs, float64 draws used, obs, scale, alternatives).

    Even seeds: the shift bootstrap (counts as small integers, ``center`` = their mean,
    ``divisor`` = n); odd seeds: sign flips. Half the problems have dyadic data, so every
    replicate is exact in any order of summation and ties with the observed value are exact.
    """
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(2, 62))
    rows = int(rng.integers(1, 300))
    B = int(rng.choice([1, 7, 1023, 1024, 1025, 2048, 2500, int(rng.integers(1, 3000))]))
    alternatives = ALTERNATIVE_SETS[seed % len(ALTERNATIVE_SETS)]
    if seed % 4 < 2:
        lhs = rng.integers(-4, 5, (rows, n)) / 8.0
    else:
        lhs = rng.normal(0.0, 0.1, (rows, n)) + rng.normal(0.0, 0.05, (rows, 1))
    lhs[rng.random(rows) < 0.05] = 0.0  # observed 0, scale 0
    if seed % 2 == 0:
        counts = bootstrap_counts(seed, "kernel", n, 0, B)
        draws = counts.astype(np.uint8 if seed % 3 else np.uint16)
        center = counts.mean(axis=0)
        kwargs = {"center": center, "divisor": n}
        used = (counts - center) / n
        obs, scale = lhs.mean(axis=1), np.abs(lhs).mean(axis=1)
    else:
        draws = sign_flips(seed, "kernel", n, 0, B)
        kwargs, used = {}, draws
        obs, scale = lhs.sum(axis=1), np.abs(lhs).sum(axis=1)
    return lhs, draws, kwargs, used, obs, scale, alternatives


def _on_threshold(value: float, scale: float, side: str) -> float | None:
    """An observed value whose threshold (``obs - tol``, ``obs + tol`` or ``|obs| - tol``
    as the kernel computes them) is exactly `value`, found by stepping ulp by ulp from the
    real-number solution; None if no float lands on it."""
    if side == "ge":
        guess = value + TIE_RTOL * max(abs(value), scale)
    elif side == "le":
        guess = value - TIE_RTOL * max(abs(value), scale)
    else:  # two-sided, positive obs: |obs| - tol = value
        guess = value + TIE_RTOL * max(abs(value), scale)
    for direction in (np.inf, -np.inf):
        obs = guess
        for _ in range(64):
            tol = TIE_RTOL * max(abs(obs), scale)
            hit = {"ge": obs - tol, "le": obs + tol, "abs": abs(obs) - tol}[side]
            if hit == value:
                return obs
            obs = float(np.nextafter(obs, direction))
    return None


@pytest.mark.parametrize("seed", range(40))
def test_kernel_counts_equal_the_definition(seed):
    lhs, draws, kwargs, used, obs, scale, alternatives = _configuration(seed)
    got = resampled_counts(lhs, draws, obs, alternatives, scale, **kwargs)
    want = _definition(lhs @ used.T, obs, alternatives, scale)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64 and got.shape == (len(lhs), len(alternatives))


def _exact_problem(kind: str, n: int, B: int, seed: int) -> tuple:
    """Dyadic data whose replicates are exact in any order of summation: sign flips of
    multiples of 1/8, or bootstrap counts with B and n powers of two (the mean count is a
    multiple of 1/B, the draws of 1/(B n))."""
    rng = np.random.default_rng(seed)
    lhs = rng.integers(-4, 5, (150, n)) / 8.0
    if kind == "signs":
        draws = sign_flips(seed, "kernel", n, 0, B)
        return lhs, draws, {}, draws, lhs.sum(axis=1), np.abs(lhs).sum(axis=1)
    counts = bootstrap_counts(seed, "kernel", n, 0, B)
    center = counts.mean(axis=0)
    return (lhs, counts.astype(np.uint8), {"center": center, "divisor": n},
            (counts - center) / n, lhs.mean(axis=1), np.abs(lhs).mean(axis=1))


@pytest.mark.parametrize(("kind", "n", "B"), [("signs", 13, 1500), ("signs", 50, 1024),
                                              ("counts", 16, 1024), ("counts", 32, 2048)])
def test_thresholds_exactly_on_a_replicate(kind, n, B):
    """Observed values placed so that ``obs - tol``, ``obs + tol`` or ``|obs| - tol`` is
    exactly a replicate (exact replicates, see :func:`_exact_problem`), on both signs: the
    kernel counts that replicate as the definition does (>= / <=), and the test has teeth
    (a strict comparison would count fewer)."""
    lhs, draws, kwargs, used, obs, scale = _exact_problem(kind, n, B, n + B)
    product = lhs @ used.T
    obs = obs.copy()
    placed = []
    rng = np.random.default_rng(n)
    for r in range(len(lhs)):
        values = np.unique(product[r][product[r] != 0])
        if not len(values):
            continue
        side = ("ge", "le", "abs")[r % 3]
        value = float(rng.choice(values))
        if side == "abs":
            value = abs(value)
        o = _on_threshold(value, float(scale[r]), side)
        if o is not None:
            obs[r] = -o if (side == "abs" and r % 2) else o  # two-sided: both signs
            placed.append((r, side, value))
    assert len(placed) >= len(lhs) // 2
    alternatives = ("two-sided", "greater", "less")
    got = resampled_counts(lhs, draws, obs, alternatives, scale, **kwargs)
    np.testing.assert_array_equal(got, _definition(product, obs, alternatives, scale))
    tol = TIE_RTOL * np.maximum(np.abs(obs), scale)
    for r, side, value in placed:
        column = {"ge": 1, "le": 2, "abs": 0}[side]
        strict = {"ge": (product[r] > obs[r] - tol[r]).sum(),
                  "le": (product[r] < obs[r] + tol[r]).sum(),
                  "abs": (np.abs(product[r]) > abs(obs[r]) - tol[r]).sum()}[side]
        assert got[r, column] == strict + (np.abs(product[r]) == value).sum() * (
            side == "abs") + (product[r] == value).sum() * (side != "abs")
        assert got[r, column] > strict


@pytest.mark.parametrize("shape", [(8, 64), (5, 24), (7, 13), (1, 8), (300, 2040)])
def test_counts_do_not_depend_on_the_blocks(monkeypatch, shape):
    """Other block shapes (whole machine words of booleans or not: 13 columns are counted
    without the word sums) give the same counts as the definition."""
    monkeypatch.setattr(resample, "BLOCK_ROWS", shape[0])
    monkeypatch.setattr(resample, "BLOCK_COLS", shape[1])
    for seed in (2, 3, 6):
        lhs, draws, kwargs, used, obs, scale, alternatives = _configuration(seed)
        got = resampled_counts(lhs, draws, obs, alternatives, scale, **kwargs)
        np.testing.assert_array_equal(
            got, _definition(lhs @ used.T, obs, alternatives, scale))


@pytest.mark.parametrize("width", [1024, 2040])
def test_byte_lanes_do_not_carry(monkeypatch, width):
    """Rows whose every replicate counts (up to 255 words of ones per byte lane at 2,040
    columns, the widest block the word sums accept) keep every count: no byte lane carries
    into the next."""
    monkeypatch.setattr(resample, "BLOCK_COLS", width)
    n, B = 3, 2040 * 3 + 5
    lhs = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [-1.0, -1.0, -1.0]])
    draws = np.ones((B, n))
    obs = np.array([-100.0, 0.0, 100.0])
    got = resampled_counts(lhs, draws, obs, ("greater", "less", "two-sided"), 0.0)
    np.testing.assert_array_equal(got, [[B, 0, 0], [B, B, B], [0, B, 0]])


def test_ufunc_buffer_size_is_restored():
    lhs, draws, kwargs, _, obs, scale, alternatives = _configuration(0)
    before = np.getbufsize()
    resampled_counts(lhs, draws, obs, alternatives, scale, **kwargs)
    assert np.getbufsize() == before
