"""The driver's merge and checkpoint path (issue 30): what a checkpoint keeps of a top-k
shard is derived without set operations, equals the earlier hashing derivation entry for
entry, and checkpoints are written off the merging loop with every failure still raised."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import urbano_matrix

from irsim.engine import run_study
from irsim.engine.base import shard_grid
from irsim.engine.checkpoint import CheckpointStore
from irsim.engine.partials import NO_INDEX, Accumulator, Count, TopK, encode
from irsim.engine.runner import CheckpointWriter, reducer_of
from irsim.experiments.discpower import DiscPower


def _needed_by_hashing(kind: TopK, state: dict, value, shard):
    """The earlier derivation (issue 16): the shard's entries whose index is held by the
    merged state, found with np.isin over (row, index) keys."""
    val, idx, *aux = (np.asarray(a) for a in value)
    rows, _ = val.shape
    held = state["idx"][slice(*shard.items)]
    real = idx != NO_INDEX
    live = held != NO_INDEX
    hi = int(max(idx[real].max(initial=-1), held[live].max(initial=-1))) + 1
    row = np.arange(rows, dtype=np.int64)[:, None]
    keep = real & np.isin(row * hi + np.where(real, idx, 0), (row * hi + held)[live])
    n = keep.sum(axis=1)
    width = int(n.max(initial=0))
    r, c = np.nonzero(keep)
    pos = np.cumsum(keep, axis=1)[r, c] - 1
    fill = -np.inf if kind.largest else np.inf
    out_val = np.full((rows, width), fill, val.dtype)
    out_idx = np.full((rows, width), NO_INDEX, np.int64)
    out_val[r, pos], out_idx[r, pos] = val[r, c], idx[r, c]
    out_aux = []
    for a in aux:
        o = np.zeros((rows, width), a.dtype)
        o[r, pos] = a[r, c]
        out_aux.append(o)
    return (out_val, out_idx, *out_aux)


def _shard_value(shard, vals, rng, pad: bool):
    """A shard's top-k value as a kernel or a decoded checkpoint gives it: its replicates'
    values, indices and an aux array, optionally with empty slots (ragged rows)."""
    r0, r1 = shard.reps
    i0, i1 = shard.items
    v = vals[i0:i1, r0:r1].copy()
    idx = np.broadcast_to(np.arange(r0, r1), v.shape).copy()
    if pad:  # a ragged checkpoint: some entries dropped, padded with empty slots
        drop = rng.random(v.shape) < 0.3
        v[drop], idx[drop] = -np.inf, NO_INDEX
    aux = np.where(idx == NO_INDEX, 0.0, -v)
    return (v, idx, aux)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_needed_equals_the_hashing_derivation(seed, largest):
    """Ties everywhere (values on a coarse grid, -inf values that are real entries), k above
    and below a shard's width, ragged shards: the kept entries are the same arrays."""
    rng = np.random.default_rng(seed)
    items, reps = 7, 48
    vals = np.round(rng.normal(size=(items, reps)) * 3) / 3
    vals[rng.random(vals.shape) < 0.05] = -np.inf if largest else np.inf
    for k in (1, 5, 13, 40):
        kind = TopK(items, k, aux=1, largest=largest)
        for rep_block in (4, 12):
            shards = shard_grid(items, 3, reps, rep_block)
            rng.shuffle(shards)
            acc = Accumulator({"top": kind})
            for s in shards:
                value = _shard_value(s, vals, rng, pad=largest and rng.random() < 0.3)
                acc.combine(s, {"top": value})
                got = acc.needed(s, {"top": value})["top"]
                want = _needed_by_hashing(kind, acc.state["top"], value, s)
                enc_got, enc_want = (encode({"top": kind}, {"top": x}) for x in (got, want))
                assert enc_got.keys() == enc_want.keys()
                for key in enc_got:
                    assert enc_got[key].dtype == enc_want[key].dtype, key
                    assert np.array_equal(enc_got[key], enc_want[key]), key


def test_needed_uses_no_set_operation(monkeypatch):
    """O(the shard): neither np.isin nor np.unique (the hashing that cost 5 s of 11 s)."""
    def refuse(*a, **k):
        raise AssertionError("a set operation")

    monkeypatch.setattr(np, "isin", refuse)
    monkeypatch.setattr(np, "unique", refuse)
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(5, 40))
    acc = Accumulator({"top": TopK(5, 6, aux=1), "n": Count((5,), along="items")})
    for s in shard_grid(5, 5, 40, 10):
        part = {"top": _shard_value(s, vals, rng, pad=False),
                "n": np.ones(5, np.int64)}
        acc.combine(s, part)
        acc.needed(s, part)


def test_needed_keeps_everything_with_nan():
    """NaN has no place in the order: nothing is dropped (exact, if not compact)."""
    kind = TopK(1, 2)
    acc = Accumulator({"top": kind})
    s = shard_grid(1, 1, 3, 3)[0]
    value = (np.array([[np.nan, 1.0, 0.5]]), np.array([[0, 1, 2]]))
    acc.state["top"]["val"][:] = [[np.nan, 1.0]]  # a state the merge never makes
    acc.state["top"]["idx"][:] = [[0, 1]]
    got = kind.needed(acc.state["top"], value, s)
    assert got[1].tolist() == [[0, 1, 2]]


def test_real_study_checkpoints_equal_the_hashing_derivation():
    """discpower (paired with aux, unpaired): every shard's kept top-k equals the earlier
    derivation, merged in a scrambled order."""
    m = urbano_matrix("adhoc6_ap", "AP", systems=24)
    study = DiscPower(B=2000, alphas=(0.2,), seed=1, shard_items=256, shard_replicates=250)
    shards = study.plan(m)
    np.random.default_rng(3).shuffle(shards)
    reducer = reducer_of(study, m)
    fields = reducer.acc.fields
    tops = [n for n, kind in fields.items() if isinstance(kind, TopK)]
    assert tops
    for s in shards:
        part = study.kernel(s, m)
        reducer.combine(s, part)
        got = reducer.needed(s, part)
        for name in tops:
            want = _needed_by_hashing(fields[name], reducer.acc.state[name], part[name], s)
            for x, y in zip(got[name], want, strict=True):
                assert x.dtype == y.dtype and np.array_equal(x, y), name


# ------------------------------------------------------------------ the checkpoint writer
class _Store:
    def __init__(self, fail_at=None, exc=OSError):
        self.saved, self.fail_at, self.exc = [], fail_at, exc

    def save(self, shard, partial):
        if len(self.saved) == self.fail_at:
            self.saved.append(None)
            raise self.exc("disk full")
        self.saved.append(shard)


def test_writer_saves_in_order_and_waits_on_close():
    store = _Store()
    w = CheckpointWriter(store, depth=2)
    for i in range(10):
        w.put(i, {})
    w.close()
    assert store.saved == list(range(10))
    assert not w.thread.is_alive()


@pytest.mark.parametrize("exc", [OSError, KeyboardInterrupt])
def test_writer_failure_stops_writing_and_is_raised(exc):
    store = _Store(fail_at=3, exc=exc)
    w = CheckpointWriter(store, depth=1)
    with pytest.raises(exc):
        for i in range(50):
            w.put(i, {})
        w.close()
    w.close(raise_error=False)
    assert store.saved == [0, 1, 2, None]  # nothing after the failure


def test_failed_save_fails_the_run(tmp_path, monkeypatch):
    """A checkpoint that cannot be written fails run_study with that error (as before the
    writer thread), and no temporary file stays behind."""
    import errno

    m = urbano_matrix("adhoc6_ap", "AP", systems=12)
    study = DiscPower(B=500, seed=0, shard_items=256, shard_replicates=250)
    real = CheckpointStore.save
    calls = []

    def full(self, shard, partial):
        calls.append(shard)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, shard, partial)

    monkeypatch.setattr(CheckpointStore, "save", full)
    with pytest.raises(OSError, match="No space"):
        run_study(study, m, checkpoint_dir=tmp_path)
    assert len(calls) == 2
    assert len(list((tmp_path / study.name).glob("*.npz"))) == 1
    assert not list((tmp_path / study.name).glob("*.tmp"))
