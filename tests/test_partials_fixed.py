"""Fixed point (issue 26): :class:`irsim.engine.partials.FixedPoint`, :class:`Fixed` and the
addends of a :class:`Sum` against exact rational arithmetic (:class:`fractions.Fraction`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from irsim.engine.base import Shard
from irsim.engine.checkpoint import CheckpointStore
from irsim.engine.partials import Accumulator, Fixed, FixedPoint, Sum, decode, encode


def _units(v: float, bits: int) -> int:
    """Oracle: the nearest integer to v * 2**bits, ties to even (``round`` of a Fraction)."""
    return round(Fraction(v) * 2**bits)


def _floats(rng: np.random.Generator, n: int, bits: int) -> np.ndarray:
    """Mixed magnitudes and signs, with exact ties at half a unit and values whose units
    do not fit int64."""
    parts = [
        rng.normal(size=n),
        rng.normal(size=n) * 10.0 ** rng.integers(-15, 15, size=n),
        # ties: (k + 1/2) units, k even and odd
        (rng.integers(-2**20, 2**20, size=n) + 0.5) * 2.0**-bits,
        rng.uniform(2.0**62, 2.0**70, size=n) * 2.0**-bits * rng.choice([-1, 1], size=n),
        np.array([0.0, -0.0, 2.0**-bits / 2, -(2.0**-bits) / 2, 1.5 * 2.0**-bits]),
    ]
    x = np.concatenate(parts)
    return x[rng.permutation(len(x))]


@pytest.mark.parametrize("bits", [0, 2, 32, 40, 128])
def test_units_round_each_value_half_to_even_exactly(bits):
    x = _floats(np.random.default_rng(bits), 300, bits)
    got = FixedPoint(bits).units(x)
    assert [int(u) for u in got.tolist()] == [_units(v, bits) for v in x.tolist()]
    small = x[np.abs(x) * 2.0**bits < 2.0**62]
    assert FixedPoint(bits).units(small).dtype == np.int64  # the vectorised path


@pytest.mark.parametrize("bits", [32, 40, 128])
def test_sum_of_addends_is_exact_and_final_correctly_rounded(bits):
    rng = np.random.default_rng(7 + bits)
    x = _floats(rng, 200, bits).reshape(5, -1)
    total = FixedPoint(bits).sum(x, axis=1)
    exact = [sum(_units(v, bits) for v in row) for row in x.tolist()]
    assert [int(u) for u in total.units.tolist()] == exact
    want = [float(Fraction(e, 2**bits)) for e in exact]  # Fraction -> float: correctly rounded
    assert total.value().tolist() == want == [e / 2**bits for e in exact]
    # all axes, and a sum over nothing
    assert int(FixedPoint(bits).sum(x, axis=None).units) == sum(exact)
    assert FixedPoint(bits).sum(np.empty((3, 0)), axis=1).units.tolist() == [0, 0, 0]


def test_sums_past_int64_are_exact_on_every_path():
    p = FixedPoint(40)
    # units near 2**61 fit int64 but 16 of them may not: the two-halves path
    u = (np.random.default_rng(3).integers(2**60, 2**61, size=(3, 16))
         * np.array([[1], [-1], [1]]))
    x = u * 2.0**-40
    got = p.sum(x, axis=1)
    want = [sum(_units(v, 40) for v in row) for row in x.tolist()]
    assert [int(v) for v in got.units.tolist()] == want
    assert got.units.dtype == object and abs(want[0]) >= 2**63
    assert got.value().tolist() == [w / 2**40 for w in want]
    # addition past int64 is detected and redone exactly; it narrows back when it fits
    a = Fixed(np.array([2**62, -(2**62), 5]), 40)
    b = a + a
    assert b.units.dtype == object
    assert [int(v) for v in b.units.tolist()] == [2**63, -(2**63), 10]
    assert (b + Fixed(np.array([-(2**63), 2**63, 0], dtype=object), 40)).units.dtype == np.int64
    acc = p.zeros(2)
    acc[0] += Fixed(np.array(2**63 - 1), 40)
    acc[0] += Fixed(np.array(2**63 - 1), 40)
    acc[1] += Fixed(np.array([2**63], dtype=object), 40)[0]
    assert [type(v) for v in acc.units.tolist()] == [int, int]  # no 0-d arrays inside
    assert acc.units.tolist() == [2**64 - 2, 2**63]
    assert acc.value().tolist() == [2.0**24, 2.0**23]
    assert decode({"s": Sum((2,), bits=40)}, encode({"s": Sum((2,), bits=40)}, {"s": acc})
                  )["s"] == acc


def test_bit_for_bit_the_hand_formula_it_replaces():
    """``np.round(v * 2**bits).astype(np.int64).sum(axis)`` then ``int(s) / 2**bits / n``
    (reliability 2**40, multiple_testing's FDP and test_errors 2**32)."""
    rng = np.random.default_rng(11)
    for bits, values in ((40, rng.uniform(-1, 1, (8, 1000)) ** 3),
                         (32, rng.integers(0, 7, (6, 1000)) / rng.integers(1, 7, (6, 1000))),
                         (32, rng.normal(0, 0.05, (4, 997)))):
        scale = 2.0**bits
        hand = np.round(values * scale).astype(np.int64).sum(axis=1)
        kind = Sum((values.shape[0],), bits=bits)
        st = kind.combine(kind.zero(), kind.addends(values, axis=1), Shard(0, (0, 1), (0, 1)))
        n = values.shape[1]
        assert kind.final(st).tolist() == [int(v) / scale for v in hand]
        assert (kind.final(st) / n).tolist() == [int(v) / scale / n for v in hand]
        assert FixedPoint(bits).units(values).tolist() == np.round(values * scale).astype(
            np.int64).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shards_merge_exactly_in_any_order(seed):
    """A study's sums over items x trials, split into shards and merged in a random order:
    the same state (bit for bit) as in order and as the exact sum."""
    rng = np.random.default_rng(seed)
    items, trials, bits = 6, 90, 40
    x = rng.normal(size=(items, trials, 2)) * 10.0 ** rng.integers(-6, 6, (items, trials, 1))
    x[rng.random(x.shape) < 0.1] = 0.5 * 2.0**-bits  # ties
    fields = {"sums": Sum((items, 2), along="items", bits=bits),
              "total": Sum((2,), bits=bits)}
    spans = [((a, min(a + 2, items)), (r, min(r + 25, trials)))
             for a in range(0, items, 2) for r in range(0, trials, 25)]
    shards = [Shard(j, it, reps) for j, (it, reps) in enumerate(spans)]

    def part(s: Shard) -> dict:
        (i0, i1), (r0, r1) = s.items, s.reps
        block = x[i0:i1, r0:r1]
        return {"sums": fields["sums"].addends(block, axis=1),
                "total": fields["total"].addends(block.reshape(-1, 2), axis=0)}

    results = []
    for order in (range(len(shards)), rng.permutation(len(shards)),
                  rng.permutation(len(shards))):
        acc = Accumulator(fields)
        for j in order:
            acc.combine(shards[j], part(shards[j]))
        results.append((acc.state["sums"], acc.state["total"], acc.result()))
    for sums, total, res in results[1:]:
        assert sums == results[0][0] and total == results[0][1]
        assert res["sums"].tolist() == results[0][2]["sums"].tolist()
    exact = [[sum(_units(v, bits) for v in x[i, :, c].tolist()) for c in range(2)]
             for i in range(items)]
    assert results[0][2]["sums"].tolist() == [[e / 2**bits for e in row] for row in exact]
    assert results[0][2]["total"].tolist() == [sum(row[c] for row in exact) / 2**bits
                                               for c in range(2)]


def test_fixed_sums_survive_checkpoints(tmp_path):
    fields = {"small": Sum((3,), along="items", bits=40), "big": Sum((2, 2), bits=40),
              "floats": Sum((2,), bits=40)}
    shard = Shard(0, (0, 3), (0, 10))
    part = {"small": fields["small"].addends(np.array([[0.1, -0.7], [1e-13, 2.0], [-3.0, 0.0]])),
            "big": Fixed(np.array([[2**70, -(2**64) - 3], [7, -(2**100)]], dtype=object), 40),
            "floats": np.array([0.25, -1.5])}
    back = decode(fields, encode(fields, part))
    assert back["small"] == part["small"] and back["big"] == part["big"]
    assert back["floats"].tolist() == [0.25, -1.5]
    store = CheckpointStore(tmp_path, "study", "fp", fields=fields)
    store.save(shard, part)
    loaded = CheckpointStore(tmp_path, "study", "fp", fields=fields).load(shard)
    a, b = Accumulator(fields), Accumulator(fields)
    a.combine(shard, part)
    b.combine(shard, loaded)
    assert all(np.array_equal(a.result()[k], b.result()[k]) for k in fields)
    assert b.result()["big"].tolist() == [[2.0**30, -(2.0**24)], [7 * 2.0**-40, -(2.0**60)]]


def test_bad_values_and_mixed_points_are_refused():
    p = FixedPoint(32)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="finite"):
            p.units([1.0, bad])
        with pytest.raises(ValueError, match="finite"):
            p.sum([[0.5, bad]])
    kind = Sum((1,), bits=32)
    with pytest.raises(ValueError, match="finite"):
        kind.combine(kind.zero(), np.array([np.nan]), Shard(0, (0, 1), (0, 1)))
    with pytest.raises(ValueError, match="2\\*\\*-40"):
        kind.combine(kind.zero(), FixedPoint(40).sum([[1.0]]), Shard(0, (0, 1), (0, 1)))
    with pytest.raises(ValueError, match="2\\*\\*-40"):
        p.zeros(1) + FixedPoint(40).zeros(1)
    with pytest.raises(TypeError):
        p.zeros(1) + np.ones(1)
    with pytest.raises(TypeError):
        Fixed(np.ones(2), 32)
    for bits in (-1, 961, 2.5, True):
        with pytest.raises(ValueError, match="bits"):
            FixedPoint(bits)


@pytest.mark.parametrize("seed", [0, 1])
def test_type_m_records_merge_from_any_shards_into_their_layout(seed):
    """:class:`irsim.stats.typems.TypeMFields`: shards record per-trial estimates and
    significance codes of their own configurations; merged in any order, :meth:`merged`
    gives the whole arrays: the estimates rounded to 2**-32 half to even (Fraction oracle),
    the codes the number of alphas with p <= alpha."""
    from irsim.stats.typems import TYPE_M_POINT, TypeMFields

    rng = np.random.default_rng(seed)
    trials, items, tests, alts, block = 37, 7, 2, 2, 3
    alphas = (0.05, 0.01, 0.1)
    d = rng.normal(0, 0.05, (trials, items))
    d[rng.random(d.shape) < 0.1] = 2.5 * 2.0**-32  # ties: 2.5 units round to 2
    p = rng.random((trials, items, tests, alts))
    layout = TypeMFields(trials, items, tests, alts, block)
    spans = [((i0, i1), (r, min(r + 10, trials))) for i0, i1 in layout.blocks()
             for r in range(0, trials, 10)]
    acc = Accumulator(layout.fields())
    for j in rng.permutation(len(spans)):
        (i0, i1), (r0, r1) = spans[j]
        shard = Shard(int(j), (i0, i1), (r0, r1))
        rec = layout.record(shard, alphas)
        for item in range(i0, i1):
            rec.diff(item, r0, d[r0:r1, item])
            for t in range(tests):
                rec.levels(item, r0, t, p[r0:r1, item, t])
        acc.combine(shard, rec.partial())
    q, code = layout.merged(acc.result())
    assert q.tolist() == [[round(Fraction(v) * 2**32) for v in row] for row in d.tolist()]
    assert TYPE_M_POINT.bits == 32
    want = sum((p <= a).astype(int) for a in alphas)
    assert code.tolist() == want.tolist()
    assert len(layout.fields()) == 2 * len(layout.blocks()) == 6


def test_int64_units_give_the_correctly_rounded_float():
    """The vectorised int64 -> float path rounds as Python's exact ``int / 2**bits`` does,
    past 2**53 (ties at half an ulp to even) and at the ends of int64."""
    rng = np.random.default_rng(4)
    u = np.concatenate([rng.integers(2**53, 2**63 - 1, 500, dtype=np.int64),
                        -rng.integers(2**53, 2**63 - 1, 500, dtype=np.int64),
                        np.array([2**53 + 1, 2**53 + 3, 2**54 + 2, -(2**53) - 1,
                                  2**63 - 1, -(2**63)], np.int64)])
    for bits in (0, 32, 128, 960):
        got = FixedPoint(bits).value(u)
        assert got.tolist() == [int(x) / 2**bits for x in u.tolist()]
        assert got.tolist() == [float(Fraction(int(x), 2**bits)) for x in u.tolist()]
