"""Run a study on an executor, with checkpoints, and return its tables."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.engine.base import Partial, Shard, Study
from irsim.engine.checkpoint import CheckpointStore, fingerprint_of
from irsim.engine.config import ENGINES, check_options
from irsim.engine.partials import Accumulator
from irsim.engine.progress import Eta
from irsim.errors import unknown_name

__all__ = ["run_study", "data_digest", "RunInfo", "reducer_of", "CheckpointWriter"]

log = logging.getLogger(__name__)


def data_digest(data: Any) -> str:
    """sha256 over the arrays and ids of a study's data (ScoreMatrix, dataclass of arrays,
    dict or tuple of those).

    Examples
    --------
    >>> data_digest(np.zeros(3)) == data_digest(np.zeros(3))
    True
    >>> data_digest(np.zeros(3)) == data_digest(np.ones(3))
    False
    """
    h = hashlib.sha256()

    def feed(obj: Any) -> None:
        if isinstance(obj, np.ndarray):
            h.update(str((obj.dtype.str, obj.shape)).encode())
            if obj.dtype == object:
                h.update("\x1f".join(map(str, obj.ravel().tolist())).encode())
            else:
                h.update(np.ascontiguousarray(obj).tobytes())
        elif isinstance(obj, dict):
            for k in sorted(obj, key=str):
                h.update(str(k).encode())
                feed(obj[k])
        elif isinstance(obj, (list, tuple)):
            h.update(f"seq{len(obj)}".encode())
            for x in obj:
                feed(x)
        elif hasattr(obj, "__dataclass_fields__"):
            for name in obj.__dataclass_fields__:
                if name == "source" or name == "sources":
                    continue
                h.update(name.encode())
                feed(getattr(obj, name))
        else:
            h.update(repr(obj).encode())

    feed(data)
    return h.hexdigest()


class RunInfo(dict):
    """What a run did (engine, shards, computed vs resumed, seconds), for the manifest.

    ``seconds_shards`` is the wall time of computing and merging the shards; of it, the
    driver spent ``seconds_merge`` merging them (and deriving what their checkpoints keep)
    on its main thread; ``seconds_checkpoints`` is the helper thread's time writing them.
    """


#: BLAS threads of engine=local when the options do not say (see :func:`blas_limit`)
LOCAL_BLAS_THREADS = 1


def blas_limit(threads: int | None):
    """Context manager limiting BLAS threads (restored on exit); ``None`` = no change.

    Ray actors run single-threaded (one CPU each: parallelism comes from the actors), and so
    does the local engine by default (``LOCAL_BLAS_THREADS``): BLAS's own threading (``None``)
    oversubscribes the cores as soon as other work shares them. On 2 shared cores (issue 30,
    interleaved runs) one thread was 2.5x faster for discpower (adhoc8 AP, B = 3000) and
    4.3x for test_errors (urbano_test_errors, 500 trials); on 2 idle cores BLAS's threads
    gained 1.27x (W1 discpower: 17.7 s against 22.4 s).
    """
    from contextlib import nullcontext

    if threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=int(threads), user_api="blas")


def _local_partials(
    study: Study, data: Any, shards: list[Shard], blas_threads: int | None
) -> Iterator[tuple[Shard, Partial]]:
    for shard in shards:
        with blas_limit(blas_threads):
            part = study.kernel(shard, data)
        yield shard, part


class CheckpointWriter:
    """Saves shards' checkpoints on a helper thread, in the order given, so that the loop
    merging shards (and, on engine=ray, submitting the next ones) never waits for encoding,
    checksums, file writes and fsyncs (most of which run without the GIL).

    At most `depth` checkpoints wait (:meth:`put` blocks beyond: memory stays bounded). The
    first failure of a save (a full disk; anything raised) stops the writing: later
    checkpoints are dropped (their shards are recomputed on resume) and the error is raised
    in the caller's thread by the next :meth:`put` or by :meth:`close`. Checkpoints are
    independent files, each written atomically, so which of them reach the disk never
    changes a resume's tables.
    """

    def __init__(self, store: CheckpointStore, depth: int = 4):
        self.store = store
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None  # the failure, until raised
        self.failed = False  # for good: nothing more is written
        self.seconds = 0.0  # spent saving, on the helper thread
        self.thread = threading.Thread(target=self._loop, name="irsim-checkpoints",
                                       daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if not self.failed:
                t = time.perf_counter()
                try:
                    shard, partial = item
                    self.store.save(shard, partial() if callable(partial) else partial)
                except BaseException as err:  # noqa: BLE001 - re-raised by the caller
                    self.error, self.failed = err, True
                self.seconds += time.perf_counter() - t

    def _raise(self) -> None:
        if self.error is not None:
            err, self.error = self.error, None
            raise err

    def put(self, shard: Shard, partial: Partial | Callable[[], Partial]) -> None:
        """Queue `partial` (which nobody changes any more; or a function computing it, called
        on the helper thread) to be saved as `shard`'s."""
        self._raise()
        self.queue.put((shard, partial))

    def close(self, *, raise_error: bool = True) -> None:
        """Wait until every queued checkpoint is written; raise a save's failure (unless
        `raise_error` is false: another exception is on its way)."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        if raise_error:
            self._raise()


class _FieldReducer:
    """A study's reducer: an :class:`Accumulator` merges the shards' typed fields, the
    study's ``finalize(merged, data)`` makes the tables."""

    def __init__(self, study: Study, data: Any):
        self.study, self.data = study, data
        self.acc = Accumulator(study.fields(data))

    def combine(self, shard: Shard, partial: Partial) -> None:
        self.acc.combine(shard, partial)

    def needed(self, shard: Shard, partial: Partial) -> Partial:
        """What a checkpoint of a just-merged shard keeps (:meth:`Accumulator.needed`)."""
        return self.acc.needed(shard, partial)

    def needed_later(self, shard: Shard, partial: Partial) -> Callable[[], Partial]:
        """:meth:`needed`, to be computed later (:meth:`Accumulator.needed_later`)."""
        return self.acc.needed_later(shard, partial)

    def finalize(self) -> dict[str, pa.Table]:
        return self.study.finalize(self.acc.result(), self.data)


def reducer_of(study: Study, data: Any) -> _FieldReducer:
    """The reducer of `study` (``combine(shard, partial)``, ``finalize() -> tables``)."""
    return _FieldReducer(study, data)


def run_study(
    study: Study,
    data: Any,
    *,
    engine: str = "local",
    engine_options: dict | None = None,
    checkpoint_dir: str | Path | None = None,
    progress: Callable[[int, int], Any] | None = None,
    eta: Callable[[float | None], Any] | None = None,
) -> tuple[dict[str, pa.Table], RunInfo]:
    """Execute every shard of `study` and reduce the partial results into tables.

    Parameters
    ----------
    study : Study
        The experiment (parameters and plan/kernel/reducer).
    data : object
        What the kernel reads (e.g. a :class:`~irsim.data.ScoreMatrix`).
    engine : {"local", "ray"}
        ``local`` runs shards in this process; ``ray`` on a Ray cluster (see
        :mod:`irsim.engine.ray_executor`).
    engine_options : dict, optional
        Executor options: ``blas_threads`` (default 1, local and per Ray actor; None: BLAS's
        own threading, see :func:`blas_limit`) and, for ray, address, workers, ... (see
        :func:`irsim.engine.ray_executor.ray_partials`).
    checkpoint_dir : path, optional
        Where finished shards are saved (each keeps what the merge can still use: top-k
        entries already beaten k times are left out); a shard found there is reused only when its
        identity matches (fingerprint of parameters, data and irsim version; shard
        coordinates; checksum), otherwise it is recomputed (see
        :class:`~irsim.engine.checkpoint.CheckpointStore`). A run that takes shards from
        there says how many in one log line before it computes the others.
    progress : callable, optional
        Called as ``progress(done, total)`` after each shard.
    eta : callable, optional
        Called as ``eta(seconds)`` after each computed shard: the time left, estimated from
        the work the computed shards did (None until it is stable; see
        :class:`irsim.engine.progress.Eta`).

    Returns
    -------
    tables : dict of str to pyarrow.Table
    info : RunInfo
    """
    t0 = time.perf_counter()
    shards = study.plan(data)
    fingerprint = fingerprint_of({"study": study.name, **study.fingerprint()},
                                 data_digest(data))
    store = None if checkpoint_dir is None else CheckpointStore(
        checkpoint_dir, study.name, fingerprint, fields=study.fields(data))
    reducer = reducer_of(study, data)
    resumed = _resume(study, store, shards, reducer)
    todo = [s for s in shards if s.index not in resumed]
    if progress is not None:
        progress(len(resumed), len(shards))
    executor_info: dict = {}
    stream = _stream(study, data, todo, reducer, engine, engine_options, executor_info)
    t_compute = time.perf_counter()
    writer = None if store is None else CheckpointWriter(store)
    tracker = _Tracker(todo, len(shards), len(resumed), progress, eta, executor_info)
    t_merge = _merge(stream, reducer, writer, tracker)
    t_reduce = time.perf_counter()
    tables = reducer.finalize()
    t_end = time.perf_counter()
    info = RunInfo(
        engine=engine,
        fingerprint=fingerprint,
        shards=len(shards),
        shards_resumed=len(resumed),
        shards_computed=len(todo),
        seconds_plan=round(t_compute - t0, 4),
        seconds_shards=round(t_reduce - t_compute, 4),
        seconds_finalize=round(t_end - t_reduce, 4),
        seconds_merge=round(t_merge, 4),
        seconds_checkpoints=round(writer.seconds, 4) if writer is not None else 0.0,
        **executor_info,
    )
    log.info("study %s: %d shards (%d resumed) in %.2fs", study.name, len(shards),
             len(resumed), t_end - t0)
    return tables, info


def _resume(study: Study, store: CheckpointStore | None, shards: list[Shard],
            reducer: _FieldReducer) -> set[int]:
    """Merge the shards `store` holds valid checkpoints of; their indices. Says in one log
    line, before anything is computed, how many shards a resumed run takes from there."""
    if store is None:
        return set()
    resumed = set()
    for shard in shards:
        part = store.load(shard)
        if part is not None:
            reducer.combine(shard, part)
            resumed.add(shard.index)
    if resumed:
        log.info("study %s: resuming: %d of %d shards from checkpoints, %d to compute",
                 study.name, len(resumed), len(shards), len(shards) - len(resumed))
    return resumed


def _stream(study: Study, data: Any, todo: list[Shard], reducer: _FieldReducer, engine: str,
            engine_options: dict | None, info: dict) -> Iterable[tuple[Shard, Partial]]:
    """The ``(shard, partial)`` stream of `engine` over `todo` (options checked first)."""
    options = dict(engine_options or {})
    if engine in ENGINES:
        check_options(engine, options)
    if engine == "local":
        blas_threads = options.pop("blas_threads", LOCAL_BLAS_THREADS)
        return _local_partials(study, data, todo, blas_threads)
    if engine == "ray":
        from irsim.engine.ray_executor import ray_partials

        # each shard's actor drops what the merge can never use (hints taken at submission,
        # for the fields its kernel returns when the study says which: PerCollection)
        fields_of = getattr(study, "fields_of", None)
        hints = (reducer.acc.hints if fields_of is None
                 else lambda shard: reducer.acc.hints(shard, fields_of(shard, data)))
        return ray_partials(study, data, todo, info=info, hints=hints, **options)
    raise unknown_name("engine", str(engine), ENGINES)


class _Tracker:
    """Shards done so far, told to ``progress(done, total)``, and the time left, told to
    ``eta(seconds)`` (:class:`irsim.engine.progress.Eta` over the computed shards; as many
    run at once as the executor has workers, known once its first shard is back)."""

    def __init__(self, todo: list[Shard], total: int, count: int,
                 progress: Callable[[int, int], Any] | None,
                 eta: Callable[[float | None], Any] | None, info: dict):
        self.total, self.count = total, count
        self.progress, self.eta, self.info = progress, eta, info
        self.estimate = Eta(todo, start=time.perf_counter())

    def done(self, shard: Shard) -> None:
        self.count += 1
        if self.progress is not None:
            self.progress(self.count, self.total)
        if self.eta is not None:
            if self.estimate.finished == 0:  # the pool is up: its workers are known
                self.estimate.parallel = int(self.info.get("ray", {}).get("workers", 1))
            self.eta(self.estimate.done(shard, time.perf_counter()))


def _merge(stream: Iterable[tuple[Shard, Partial]], reducer: _FieldReducer,
           writer: CheckpointWriter | None, tracker: _Tracker) -> float:
    """Merge the shards of `stream` as they arrive, handing what their checkpoints keep to
    `writer`; the seconds this thread spent merging and handing over.

    The stream is closed on the way out, also when the reduction raises (Ctrl-C while a
    checkpoint is written): the executor shuts down now, not when the generator is collected
    at exit; the checkpoints handed to the writer are on disk before this returns or raises.
    """
    t_merge = 0.0
    try:
        with contextlib.closing(iter(stream)) as shards:
            for shard, part in shards:
                t = time.perf_counter()
                reducer.combine(shard, part)
                if writer is not None:  # what can still matter (exact: Accumulator.needed),
                    # derived and written on the writer's thread
                    writer.put(shard, reducer.needed_later(shard, part))
                t_merge += time.perf_counter() - t
                tracker.done(shard)
    except BaseException:
        if writer is not None:
            writer.close(raise_error=False)
        raise
    if writer is not None:
        writer.close()
    return t_merge
