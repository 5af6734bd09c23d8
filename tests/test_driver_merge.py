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


def _shard_value(shard, vals, rng, pad: bool, fill: float = -np.inf):
    """A shard's top-k value as a kernel or a decoded checkpoint gives it: its replicates'
    values, indices and an aux array, optionally with empty slots (ragged rows)."""
    r0, r1 = shard.reps
    i0, i1 = shard.items
    v = vals[i0:i1, r0:r1].copy()
    idx = np.broadcast_to(np.arange(r0, r1), v.shape).copy()
    if pad:  # a ragged checkpoint: some entries dropped, padded with empty slots
        drop = rng.random(v.shape) < 0.3
        v[drop], idx[drop] = fill, NO_INDEX
    aux = np.where(idx == NO_INDEX, 0.0, -v)
    return (v, idx, aux)


def _entries(value) -> set[tuple[int, int]]:
    """(row, index) of a top-k value's entries (empty slots left out)."""
    idx = np.asarray(value[1])
    rows, cols = np.nonzero(idx != NO_INDEX)
    return set(zip(rows.tolist(), idx[rows, cols].tolist(), strict=True))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_needed_holds_what_can_be_selected_and_resumes_exactly(seed, largest):
    """Ties everywhere (values on a coarse grid, -inf/inf values that are real entries), k
    above and below a shard's width, ragged shards, any shard order: a checkpoint keeps
    every entry of its shard that is in the top k of everything merged so far (what the
    np.isin derivation kept) and only real entries of the shard; and a resume from any
    subset of the checkpoints (the rest recomputed) gives the top k of everything."""
    from irsim.engine.partials import decode, topk_rows

    rng = np.random.default_rng(seed)
    items, reps = 7, 48
    vals = np.round(rng.normal(size=(items, reps)) * 3) / 3
    vals[rng.random(vals.shape) < 0.05] = -np.inf if largest else np.inf
    for k in (1, 5, 13, 40):
        kind = TopK(items, k, aux=1, largest=largest)
        fields = {"top": kind}
        for rep_block in (4, 12):
            shards = shard_grid(items, 3, reps, rep_block)
            rng.shuffle(shards)
            acc, ref, saved, values = Accumulator(fields), Accumulator(fields), {}, {}
            for s in shards:
                value = _shard_value(s, vals, rng, pad=rng.random() < 0.3,
                                     fill=-np.inf if largest else np.inf)
                values[s] = value
                acc.combine(s, {"top": value})
                ref.combine(s, {"top": value})
                ref.result()  # the exact top k of everything merged so far
                kept = acc.needed(s, {"top": value})["top"]
                exact = _needed_by_hashing(kind, ref.state["top"], value, s)
                assert _entries(exact) <= _entries(kept) <= _entries(value)
                saved[s] = decode(fields, encode(fields, {"top": kept}))
            want = acc.result()["top"]
            everything = [np.full((items, reps), f) for f in
                          (-np.inf if largest else np.inf, NO_INDEX, 0.0)]
            for s, value in values.items():
                real = np.asarray(value[1]) != NO_INDEX
                r, c = np.nonzero(real)
                for dst, a in zip(everything, value, strict=True):
                    dst[r + s.items[0], np.asarray(value[1])[r, c]] = np.asarray(a)[r, c]
            direct = topk_rows(everything[0], everything[1].astype(np.int64), min(k, reps),
                               everything[2], largest=largest)
            for g, d in zip(want, direct, strict=True):
                assert np.array_equal(g[:, :d.shape[1]], d)
            for trial in range(3):
                pick = np.random.default_rng(1000 * seed + trial)
                resumed = [s for s in shards if pick.random() < 0.6]
                rest = [s for s in shards if s not in resumed]
                pick.shuffle(rest)
                acc2 = Accumulator(fields)
                for s in resumed + rest:
                    acc2.combine(s, saved[s] if s in resumed else {"top": values[s]})
                for g, w in zip(acc2.result()["top"], want, strict=True):
                    assert np.array_equal(g, w)


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
    acc.state["top"]["bar"][:] = np.nan  # a state the merge never makes
    got = kind.needed(acc.state["top"], value, s)
    assert got[1].tolist() == [[0, 1, 2]]


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_real_study_checkpoints_hold_the_exact_set_and_stay_small():
    """discpower (paired with aux, unpaired), shards merged in a scrambled order: every
    checkpoint holds its shard's entries in the top k so far (what the np.isin derivation
    kept), and all of them together at most 1.5 times as many entries."""
    m = urbano_matrix("adhoc6_ap", "AP", systems=24)
    study = DiscPower.of(B=2000, alpha=(0.2,), seed=1, shard_items=256, shard_replicates=250)
    shards = study.plan(m)
    np.random.default_rng(3).shuffle(shards)
    reducer, ref = reducer_of(study, m), reducer_of(study, m)
    fields = reducer.acc.fields
    tops = [n for n, kind in fields.items() if isinstance(kind, TopK)]
    assert tops
    stored = exact_stored = 0
    for s in shards:
        part = study.kernel(s, m)
        reducer.combine(s, part)
        ref.combine(s, part)
        ref.acc.result()  # selects what waits: the exact top k of everything so far
        got = reducer.needed(s, part)
        for name in tops:
            exact = _needed_by_hashing(fields[name], ref.acc.state[name], part[name], s)
            assert _entries(exact[:2]) <= _entries(got[name][:2])
            stored += len(_entries(got[name][:2]))
            exact_stored += len(_entries(exact[:2]))
    print(f"checkpoints hold {stored} top-k entries, the exact set {exact_stored}")
    assert exact_stored <= stored <= 1.5 * exact_stored
    assert set(reducer.finalize()) == set(ref.finalize())


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
    study = DiscPower.of(B=500, seed=0, shard_items=256, shard_replicates=250)
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


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_in_place_merge_equals_one_selection_over_everything(seed, largest):
    """The merge replaces held entries in place (rows hold their k in no order): after any
    shard order, with ties, -inf/inf entries and ragged (padded) shards, the final lists
    equal topk_rows over every entry at once."""
    from irsim.engine.partials import topk_rows

    rng = np.random.default_rng(seed)
    items, reps = 6, 60
    vals = np.round(rng.normal(size=(items, reps)) * 2) / 2
    vals[rng.random(vals.shape) < 0.05] = -np.inf if largest else np.inf
    for k in (1, 4, 15, 35, 80):
        for rep_block in (5, 20):
            shards = shard_grid(items, 4, reps, rep_block)
            rng.shuffle(shards)
            acc = Accumulator({"top": TopK(items, k, aux=1, largest=largest)})
            dropped = np.zeros(vals.shape, bool)
            for s in shards:
                v, idx, aux = _shard_value(s, vals, rng, pad=False)
                if rng.random() < 0.3:  # ragged: some entries left out, rows padded
                    out = rng.random(v.shape) < 0.3
                    fill = -np.inf if largest else np.inf
                    dropped[s.items[0]:s.items[1], s.reps[0]:s.reps[1]] = out
                    v, idx, aux = (np.where(out, f, a) for a, f in
                                   ((v, fill), (idx, NO_INDEX), (aux, 0.0)))
                acc.combine(s, {"top": (v, idx, aux)})
            got = acc.result()["top"]
            idx_all = np.broadcast_to(np.arange(reps), vals.shape)
            keep_v = np.where(dropped, -np.inf if largest else np.inf, vals)
            keep_i = np.where(dropped, NO_INDEX, idx_all)
            want = topk_rows(keep_v, keep_i, min(k, reps), np.where(dropped, 0.0, -vals),
                             largest=largest)
            for g, w in zip(got, want, strict=True):
                assert np.array_equal(g[:, :w.shape[1]], w), (k, rep_block)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_prefiltered_shards_merge_to_the_same_result(seed, largest):
    """engine=ray ships each shard without what the merge's hints (taken when the shard
    was submitted, several merges earlier) say can never be selected: the same top k, and
    checkpoints of the prefiltered values resume exactly."""
    from irsim.engine.partials import decode, prefilter

    rng = np.random.default_rng(seed)
    items, reps = 6, 80
    vals = np.round(rng.normal(size=(items, reps)) * 3) / 3
    vals[rng.random(vals.shape) < 0.05] = -np.inf if largest else np.inf
    fill = -np.inf if largest else np.inf
    for k in (3, 12, 30):
        fields = {"top": TopK(items, k, aux=1, largest=largest),
                  "n": Count((items,), along="items")}
        shards = shard_grid(items, 3, reps, 5)
        rng.shuffle(shards)
        whole = Accumulator(fields)
        acc, saved, in_flight, dropped = Accumulator(fields), {}, [], 0
        for s in shards + [None] * 3:
            if s is not None:  # submitted: its hints are taken now
                in_flight.append((s, acc.hints(s)))
            if len(in_flight) > 3 or (s is None and in_flight):
                t, hints = in_flight.pop(0)
                part = {"top": _shard_value(t, vals, rng, pad=False, fill=fill),
                        "n": np.ones(t.items[1] - t.items[0], np.int64)}
                whole.combine(t, part)
                small = prefilter(fields, part, hints)
                assert _entries(small["top"]) <= _entries(part["top"])
                dropped += len(_entries(part["top"])) - len(_entries(small["top"]))
                acc.combine(t, small)
                saved[t] = decode(fields, encode(fields, acc.needed(t, small)))
        assert dropped > 0
        want = whole.result()
        got = acc.result()
        for g, w in zip(got["top"], want["top"], strict=True):
            assert np.array_equal(g, w)
        assert np.array_equal(got["n"], want["n"])
        resumed = Accumulator(fields)
        for t in shards[::-1]:
            resumed.combine(t, saved[t])
        for g, w in zip(resumed.result()["top"], want["top"], strict=True):
            assert np.array_equal(g, w)


# ------------------------------------------------------------- hints of several collections
def _two_collections():
    from irsim.engine.composite import PartData, PerCollection

    a = urbano_matrix("adhoc6_ap", "AP", systems=14)
    b = urbano_matrix("adhoc8_ap", "AP", systems=11)
    studies = [DiscPower.of(B=1000, seed=s, shard_items=32, shard_replicates=250) for s in (1, 2)]
    return PerCollection(("a", "b"), studies), PartData(("a", "b"), (a, b))


def test_hints_of_a_collection_are_its_own_fields():
    """PerCollection says which fields a shard returns: the merge's hints for a shard are
    those of its collection's top-k fields only (what it ships stays O(the shard)), the
    same as the unrestricted hints for those fields."""
    study, data = _two_collections()
    reducer = reducer_of(study, data)
    shards = study.plan(data)
    for s in shards[: len(shards) // 2] + [t for t in shards if t.part == 1][:2]:
        reducer.combine(s, study.kernel(s, data))
    for s in shards:
        names = study.fields_of(s, data)
        assert names and all(n.startswith(f"c{s.part}.") for n in names)
        assert set(names) == set(study.kernel(s, data))
        own = reducer.acc.hints(s, names)
        every = reducer.acc.hints(s)
        assert set(own) == {n for n in every if n.startswith(f"c{s.part}.")}
        for n, (bar, bar_idx) in own.items():
            assert np.array_equal(bar, every[n][0]) and np.array_equal(bar_idx, every[n][1])


@pytest.mark.ray
def test_ray_with_hints_of_several_collections_equals_local(ray_local, tmp_path):
    study, data = _two_collections()
    local, _ = run_study(study, data)
    tables, info = run_study(study, data, engine="ray", engine_options={"workers": 2},
                             checkpoint_dir=tmp_path)
    assert info["shards"] == len(study.plan(data))
    assert set(tables) == set(local)
    for name in local:
        assert tables[name].equals(local[name]), name
    resumed, info = run_study(study, data, checkpoint_dir=tmp_path)  # every shard on disk
    assert info["shards_resumed"] == info["shards"]
    for name in local:
        assert resumed[name].equals(local[name]), name
