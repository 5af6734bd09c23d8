"""The swap-bin rules of irsim.kit.bins against references written here from their
definitions (Sakai 2006, Voorhees & Buckley 2002): the smallest difference from which every
non-empty bin's swap rate is at most the threshold, the relative difference, and the swap
rule at exact zeros. The cases sit on the cut-offs: a rate equal to the threshold, bins with
one comparison, a violating last bin, violations followed by empty bins only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from irsim.kit.bins import is_swap, relative_difference, required_difference


def required_reference(comps, swaps, lo, threshold):
    """Scan from the first bin: the answer is the first edge j such that no non-empty bin
    from j on has swaps / comps > threshold, provided a non-empty bin is left from j on (or
    no bin violates at all: the first edge). NaN when no such edge exists."""
    n = len(comps)
    if all(c == 0 or s / c <= threshold for c, s in zip(comps, swaps, strict=True)):
        return float(lo[0])
    for j in range(1, n):
        rest = list(zip(comps[j:], swaps[j:], strict=True))
        if all(c == 0 or s / c <= threshold for c, s in rest) and any(c > 0 for c, _ in rest):
            return float(lo[j])
    return math.nan


@pytest.mark.parametrize("comps, swaps, want", [
    ([100, 100, 100], [40, 5, 0], 0.01),   # 5 / 100 = threshold: not a violation
    ([100, 100, 100], [40, 6, 0], 0.02),   # just above it
    ([1, 100, 100], [1, 0, 0], 0.01),      # one comparison, swapped: a violation
    ([100, 1, 100], [0, 1, 0], 0.02),
    ([100, 100, 100], [0, 0, 40], None),   # the last bin violates: NaN
    ([100, 100, 0, 0], [0, 40, 0, 0], None),  # only empty bins after the violation: NaN
    ([100, 100, 0, 100], [0, 40, 0, 0], 0.02),  # an empty bin does not count against it
    ([0, 0, 100], [0, 0, 0], 0.0),         # no violation anywhere: the first edge
])
def test_required_difference_on_the_cut_offs(comps, swaps, want):
    lo = np.array([0.0, 0.01, 0.02, 0.03])[: len(comps)]
    got = required_difference(np.array(comps), np.array(swaps), lo, 0.05)
    ref = required_reference(comps, swaps, lo, 0.05)
    if want is None:
        assert math.isnan(got) and math.isnan(ref)
    else:
        assert got == want == ref


def test_required_difference_equals_the_scan_on_random_bins():
    rng = np.random.default_rng(3)
    lo = np.round(np.arange(8) * 0.01, 2)
    for _ in range(3000):
        comps = rng.integers(0, 4, 8) * rng.integers(0, 2, 8)  # many empty and tiny bins
        swaps = np.minimum(comps, rng.integers(0, 3, 8))
        threshold = rng.choice([0.0, 0.05, 1 / 3, 0.5])
        got = required_difference(comps, swaps, lo, threshold)
        ref = required_reference(comps.tolist(), swaps.tolist(), lo, threshold)
        assert (math.isnan(got) and math.isnan(ref)) or got == ref, (comps, swaps, threshold)


def test_relative_difference_of_equal_zero_means_is_zero():
    """|a - b| / min(a, b): equal means give 0 even when both are 0 (no division); a
    difference from a zero mean is infinite."""
    got = relative_difference(np.array([0.0, 0.0, 0.25, 0.4]),
                              np.array([0.0, 0.1, 0.375, 0.4]))
    assert got.tolist() == [0.0, math.inf, 0.5, 0.0]
    given = relative_difference(np.array([0.0]), np.array([0.0]), absd=np.array([0.0]))
    assert given.tolist() == [0.0]


def test_a_zero_difference_is_a_swap_only_when_zero_swaps():
    """Sakai's bootstrap swap rule is d * d' < 0: a difference of exactly 0 on one side is
    not a swap; Voorhees-Buckley count it."""
    d = np.array([-0.1, 0.1, 0.0, -0.1])
    d2 = np.array([0.0, 0.0, -0.2, 0.2])
    assert is_swap(d, d2, zero_swaps=False).tolist() == [False, False, False, True]
    assert is_swap(d, d2, zero_swaps=True).tolist() == [True, True, True, True]


def test_relative_difference_uses_the_given_absolute_difference_and_stays_quiet():
    """`absd` (|a - b| with exact ties snapped to 0 by the caller) is used as given; the
    divisions by a zero mean (x / 0 and 0 / 0) raise nothing even where NumPy would raise."""
    a, b = np.array([0.1]), np.array([0.1 + 1e-12])
    assert relative_difference(a, b, absd=np.array([0.0])).tolist() == [0.0]
    assert relative_difference(a, b)[0] == pytest.approx(1e-11, rel=1e-3)
    with np.errstate(all="raise"):
        got = relative_difference(np.array([0.0, 0.0]), np.array([0.0, 0.1]))
    assert got.tolist() == [0.0, math.inf]
