"""Progress of a run (issue 42): the time left is estimated from the work the computed shards
did, shown once stable, and does not jump on a run of few long shards; a resumed run says at
the start how many shards it takes from checkpoints."""

from __future__ import annotations

import logging

import pytest
from conftest import urbano_matrix

from irsim.engine import run_study
from irsim.engine.base import Shard
from irsim.engine.progress import Eta
from irsim.experiments.discpower import DiscPower

#: A scripted run: 12 shards of 2-3.5 minutes (the assessors' DL19 shards) on 2 workers.
MINUTES = [2.0, 3.5, 2.6, 3.1, 2.2, 3.4, 2.9, 2.4, 3.3, 2.1, 2.8, 3.0]


def schedule(minutes, workers):
    """Finish times (in order) of shards taken in plan order by the first free worker."""
    free = [0.0] * workers
    finish = []
    for m in minutes:
        w = min(range(workers), key=free.__getitem__)
        free[w] += m
        finish.append(free[w])
    return sorted(finish)


def count_rate_eta(done, total, elapsed):
    """A progress bar's own estimate: shards left at the mean rate of shards so far."""
    return elapsed * (total - done) / done


def test_eta_of_few_long_shards_is_stable_and_close_to_the_truth():
    shards = [Shard(k, (k, k + 1), (0, 100)) for k in range(len(MINUTES))]
    finish = schedule(MINUTES, 2)
    end = finish[-1]
    eta = Eta(shards, parallel=2, start=0.0)
    shown = []
    for shard, t in zip(shards, finish, strict=True):
        left = eta.done(shard, now=t)
        shown.append(left)
        if left is not None:  # oracle: the simulated time still to run
            assert abs(left - (end - t)) <= 0.3 * end
    assert shown[0] is None and all(x is not None for x in shown[1:])
    assert shown[-1] == 0.0
    # the estimated end (now + time left) never moves by more than a quarter of the run
    ends = [t + left for t, left in zip(finish, shown, strict=True) if left is not None]
    assert max(abs(b - a) for a, b in zip(ends, ends[1:], strict=False)) <= 0.25 * end
    # before the first wave is over a count would promise 40% too long (24 of 17.2 min)
    assert count_rate_eta(1, 12, finish[0]) + finish[0] > 1.35 * end


def test_eta_weighs_shards_by_their_work_not_their_count():
    """Eight quick item shards (1 replicate each, 2 s) come first, then four long shards of
    500 replicates (150 s each, one worker): counting shards promises 12 s after the quick
    ones and 250 s after the first long one (a jump as in issue 42's 2 -> 11 minutes);
    the work share keeps the estimate within 20% of the truth once a long shard finished."""
    quick = [Shard(k, (k, k + 1), (0, 1)) for k in range(8)]
    long = [Shard(8 + k, (8, 9), (k * 500, (k + 1) * 500)) for k in range(4)]
    seconds = [2.0] * 8 + [150.0] * 4
    finish = schedule(seconds, 1)
    end = finish[-1]
    eta = Eta(quick + long, parallel=1, start=0.0)
    by_work = [eta.done(s, now=t) for s, t in zip(quick + long, finish, strict=True)]
    by_count = [count_rate_eta(k + 1, 12, t) for k, t in enumerate(finish)]
    truth = [end - t for t in finish]
    # the bar's own estimate jumps: 12 s left after the quick shards, 250 s one shard later
    assert by_count[7] == pytest.approx(4 * 16 / 8)
    assert by_count[8] > 6 * by_count[7]
    for k in range(8, 12):  # after the first long shard: within 20% of the run
        assert abs(by_work[k] - truth[k]) <= 0.2 * end
    # before any long shard finished the work share overestimates (never promises too little)
    assert all(w >= t for w, t in zip(by_work[:8], truth[:8], strict=True))


def test_eta_is_none_until_every_worker_finished_a_shard():
    shards = [Shard(k, (0, 1), (0, 10)) for k in range(6)]
    eta = Eta(shards, parallel=3, start=0.0)
    assert [eta.done(s, now=1.0 + k) for k, s in enumerate(shards[:2])] == [None, None]
    assert eta.done(shards[2], now=3.0) == pytest.approx(3.0)  # half the work in 3 s


class Interrupt(Exception):
    pass


def test_a_resumed_run_says_at_the_start_how_many_shards_it_takes(tmp_path):
    matrix = urbano_matrix("adhoc6_ap", "AP", systems=40)  # 8 shards
    events = []

    class Counting(DiscPower):
        def kernel(self, shard, data):
            events.append(("kernel", shard.index))
            return super().kernel(shard, data)

    study = Counting.of(B=300, seed=3, shard_items=256, shard_replicates=100)

    def stop_after_3(done, total):
        if done == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_study(study, matrix, checkpoint_dir=tmp_path, progress=stop_after_3)

    class Record(logging.Handler):
        def emit(self, record):
            events.append(("log", record.getMessage()))

    logger = logging.getLogger("irsim.engine.runner")
    handler, level = Record(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    events.clear()
    lefts = []
    try:
        tables, info = run_study(study, matrix, checkpoint_dir=tmp_path, eta=lefts.append)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert events[0] == ("log", "study discpower: resuming: 3 of 8 shards from checkpoints, "
                                "5 to compute")
    assert [e[0] for e in events[1:6]] == ["kernel"] * 5
    assert info["shards_resumed"] == 3 and info["shards_computed"] == 5
    # the time left counts only the computed shards; it reaches 0 with the last one
    assert len(lefts) == 5 and lefts[-1] == 0.0 and all(x >= 0 for x in lefts)
    # oracle: the same tables as a run that was never interrupted
    plain, _ = run_study(DiscPower.of(B=300, seed=3, shard_items=256, shard_replicates=100), matrix)
    assert set(plain) == set(tables)
    for name in plain:
        assert plain[name].to_pydict() == tables[name].to_pydict(), name


def test_a_step_without_its_own_bar_shows_the_engines_time_left(tmp_path):
    """A step the session draws the bar of (a study's data preparation) shows the engine's
    estimate, not tqdm's: 0 s left once the last of its 8 shards is merged."""
    import io

    from tqdm import tqdm

    from irsim.engine.session import Engine

    matrix = urbano_matrix("adhoc6_ap", "AP", systems=40)
    out = io.StringIO()
    bars = []

    def draw(desc):
        bar = tqdm(total=None, desc=desc, unit="shard", file=out, mininterval=0, ncols=80)
        bars.append(bar)

        def update(done, total):
            bar.total, bar.n = total, done
            bar.refresh()

        return bar, update

    study = DiscPower.of(B=300, seed=3, shard_items=256, shard_replicates=100)
    with Engine("local", bars=draw) as engine:
        tables, info = engine.run(study, matrix)
    assert info["shards"] == 8 and len(bars) == 1
    last = out.getvalue().rsplit("\r", 1)[-1].rstrip()
    assert last.startswith("discpower:") and "8/8" in last and last.endswith(", 00:00 left]")
    assert "?shard/s" not in last and "<" not in last  # tqdm's own estimate is gone


def test_the_python_door_bar_shows_the_engines_time_left(capsys):
    """The study's own bar (progress=True) carries the engine's time left, not tqdm's
    estimate; the tables are those of a run without a bar."""
    import irsim
    from irsim.data.synthetic import synthetic_scores

    m = synthetic_scores(systems=6, topics=20, seed=1).matrix
    shown = irsim.discpower(m, B=200, tests=["paired_bootstrap"], seed=2, progress=True,
                            shard_items=256, shard_replicates=100)
    err = capsys.readouterr().err
    assert " left]" in err and "<" not in err.rsplit("\r", 1)[-1]
    plain = irsim.discpower(m, B=200, tests=["paired_bootstrap"], seed=2, progress=False)
    assert shown.tables["discpower"].equals(plain.tables["discpower"])
