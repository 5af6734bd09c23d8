"""The remaining time of a run, from the work its finished shards did.

A shard's *work* is its share of items times replicates (``items`` width x ``reps`` width,
at least 1). The estimate after a shard finishes is the time spent computing so far times the
work left over the work done, counting only the shards this run computes (shards taken from
checkpoints cost nothing and do not count). It is shown only once it is stable: after as many
shards as run in parallel (one per worker: the first wave) have finished, since before that the
finished work says nothing about how many shards run at once.

Counting shards instead (a progress bar's own rate) lets a few quick shards or a resumed
start promise minutes where long shards then take many more (issue 42: the assessors' ETA
went from 2 to 11 minutes with 2-3.5 minute shards).

Examples
--------
>>> from irsim.engine.base import Shard
>>> shards = [Shard(k, (0, 1), (0, 100)) for k in range(4)]
>>> eta = Eta(shards, parallel=2)
>>> eta.done(shards[0], now=10.0) is None  # the first wave is not over yet
True
>>> eta.done(shards[1], now=12.0)  # 2 of 4 shards' work in 12 s: as much again
12.0
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from irsim.engine.base import Shard

__all__ = ["Eta", "work", "show_eta", "BAR_FORMAT"]


def work(shard: Shard) -> int:
    """A shard's share of the study's work: its items times its replicates (at least 1).

    Examples
    --------
    >>> work(Shard(0, (0, 4), (0, 1000)))
    4000
    >>> work(Shard(1, (8, 9), (0, 0)))
    1
    """
    return max(1, shard.items[1] - shard.items[0]) * max(1, shard.reps[1] - shard.reps[0])


class Eta:
    """Seconds left of a run (see the module docstring).

    Parameters
    ----------
    shards : iterable of Shard
        The shards this run computes (not those resumed from checkpoints).
    parallel : int
        How many shards run at once (workers); the estimate is None until that many finished.
    start : float
        When computing started (the clock of `now` in :meth:`done`).
    """

    def __init__(self, shards: Iterable[Shard], parallel: int = 1, start: float = 0.0):
        self.total = sum(work(s) for s in shards)
        self.parallel = max(1, int(parallel))
        self.start = start
        self.finished = 0
        self.work_done = 0

    def done(self, shard: Shard, now: float) -> float | None:
        """Record that `shard` finished at `now`; the seconds left, or None while unknown."""
        self.finished += 1
        self.work_done += work(shard)
        return self.left(now)

    def left(self, now: float) -> float | None:
        """Seconds left at `now`: elapsed x (work left / work done), once stable."""
        if self.finished < self.parallel or self.work_done <= 0:
            return None
        elapsed = max(0.0, now - self.start)
        return elapsed * max(0, self.total - self.work_done) / self.work_done


#: A tqdm bar without tqdm's own time left (a rate of shards): ``show_eta`` puts the
#: estimate of :class:`Eta` in its place.
BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


def show_eta(bar: Any) -> Callable[[float | None], None]:
    """An ``eta(seconds)`` callback of :func:`irsim.engine.run_study` that shows the time left
    on the tqdm `bar` instead of tqdm's own estimate (``mm:ss left``; ``? left`` while not
    stable). A door passes ``eta=show_eta(bar)`` beside its ``progress``.

    Examples
    --------
    >>> import io
    >>> from tqdm import tqdm
    >>> out = io.StringIO()
    >>> bar = tqdm(total=4, file=out, unit="shard", ncols=60, mininterval=0)
    >>> shown = show_eta(bar)
    >>> bar.n = 2
    >>> shown(130.0)
    >>> out.getvalue().rsplit("\\r", 1)[-1].endswith(", 02:10 left]")
    True
    """
    from tqdm import tqdm

    bar.bar_format = BAR_FORMAT

    def shown(seconds: float | None) -> None:
        left = "?" if seconds is None else tqdm.format_interval(seconds)
        bar.set_postfix_str(f"{left} left", refresh=True)

    return shown
