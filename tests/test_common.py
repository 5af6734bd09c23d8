"""Shared study pieces: the mergeable top-k equals a full sort, whatever the merge order."""

from __future__ import annotations

import numpy as np
import pytest

from irsim.engine.partials import topk_rows


def full_topk(val, idx, k):
    order = np.lexsort((idx, -val), axis=-1)[:, :k]
    return np.take_along_axis(val, order, 1), np.take_along_axis(idx, order, 1)


@pytest.mark.parametrize("levels", [3, 50, None])  # few distinct values: many ties
def test_merging_partial_topk_in_any_order_equals_full_sort(levels):
    rng = np.random.default_rng(levels or 0)
    rows, width, k = 40, 600, 37
    val = rng.random((rows, width)) if levels is None else rng.integers(0, levels,
                                                                        (rows, width)) / levels
    idx = np.tile(np.arange(width), (rows, 1))
    want_v, want_i = full_topk(val, idx, k)
    blocks = np.array_split(np.arange(width), 7)
    for perm in (range(7), rng.permutation(7), rng.permutation(7)):
        state_v = np.full((rows, k), -np.inf)
        state_i = np.full((rows, k), np.iinfo(np.int64).max)
        for b in perm:
            cols = blocks[b]
            part_v, part_i = topk_rows(val[:, cols], idx[:, cols], k, idx_sorted=True)
            state_v, state_i = topk_rows(np.concatenate([state_v, part_v], 1),
                                         np.concatenate([state_i, part_i], 1), k, sort=False)
        got_v, got_i = topk_rows(state_v, state_i, k)
        np.testing.assert_array_equal(got_v, want_v)
        np.testing.assert_array_equal(got_i, want_i)
