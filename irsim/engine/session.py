"""One run's engine: the executor and options shared by a study's preparation and the study.

A study's data preparation may itself be engine work (``test_errors``' ``design=urbano2019``
selects thousands of pair copulas as shards: :mod:`irsim.simulate.fit_engine`). An
:class:`Engine` carries the engine name and options of :func:`irsim.engine.run_study` to
both, so the preparation runs where the study runs. With ``engine=ray`` a Ray instance that
the first step starts (or the cluster it joins) is kept for the later steps instead of being
started again, and shut down (``ray.shutdown()``, by handle) when the session closes, unless
the caller asked for ``keep_alive``; a Ray instance that was already running before the
session is used and left as it was.

Examples
--------
>>> import numpy as np
>>> from irsim.engine.base import Shard
>>> from irsim.engine.partials import Count
>>> class Ones:
...     name = "ones"
...     def plan(self, data): return [Shard(0, (0, 3), (0, 0))]
...     def kernel(self, shard, data): return {"n": np.ones(3, np.int64)}
...     def fields(self, data): return {"n": Count((3,), along="items")}
...     def finalize(self, merged, data): return {"n": merged["n"]}
...     def fingerprint(self): return {}
>>> with Engine("local") as eng:
...     tables, info = eng.run(Ones(), None)
>>> tables["n"].tolist(), info["engine"]
([1, 1, 1], 'local')
>>> Engine("spark")
Traceback (most recent call last):
...
irsim.errors.ConfigError: config: unknown engine 'spark'; valid: local, ray
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from irsim.engine.config import ENGINES
from irsim.engine.progress import show_eta
from irsim.engine.runner import RunInfo, run_study
from irsim.errors import unknown_name

__all__ = ["Engine"]


class Engine:
    """The engine of one run (see the module docstring): ``run(study, data, **kw)`` is
    :func:`irsim.engine.run_study` with this session's engine and options.

    Parameters
    ----------
    name : {"local", "ray"}
    options : mapping, optional
        Engine options of :func:`irsim.engine.run_study`.
    bars : callable, optional
        ``bars(desc) -> (bar, update)``: a progress bar for a step run without one of its
        own (a study's data preparation: ``copula_fits``), closed when the step ends;
        ``(None, None)`` for none. Each door passes its own (the CLI's unless ``quiet``, the
        Python door's when a person is watching).
    """

    def __init__(self, name: str = "local", options: Mapping[str, Any] | None = None,
                 bars: Callable[[str], tuple[Any, Any]] | None = None):
        if name not in ENGINES:
            raise unknown_name("engine", str(name), ENGINES)
        self.name = name
        self.options = dict(options or {})
        self.bars = bars
        self._owned = False  # this session asked the first Ray pool to keep its instance
        self._kept_from = 0

    def run(self, study: Any, data: Any, **kwargs: Any) -> tuple[dict[str, pa.Table], RunInfo]:
        """Run `study` on `data` (keywords: ``checkpoint_dir``, ``progress``, ``eta``;
        without ``progress``, the session's `bars` draw one named after the study, with the
        time left of :func:`irsim.engine.progress.show_eta`)."""
        bar = None
        if kwargs.get("progress") is None and self.bars is not None:
            bar, kwargs["progress"] = self.bars(str(getattr(study, "name", "step")))
            if hasattr(bar, "set_postfix_str") and kwargs.get("eta") is None:  # a tqdm bar:
                kwargs["eta"] = show_eta(bar)  # the engine's time left, not tqdm's
        try:
            return self._run(study, data, **kwargs)
        finally:
            if bar is not None:
                bar.close()

    def _run(self, study: Any, data: Any, **kwargs: Any) -> tuple[dict[str, pa.Table], RunInfo]:
        options = dict(self.options)
        if self.name == "ray" and not options.get("keep_alive") and not self._owned:
            import ray

            if not ray.is_initialized():
                from irsim.engine import ray_executor

                # the pool about to start Ray keeps it for the next steps; close() ends it
                options["keep_alive"] = True
                self._owned = True
                self._kept_from = ray_executor.kept_count()
        elif self._owned:
            options["keep_alive"] = True
        return run_study(study, data, engine=self.name, engine_options=options, **kwargs)

    def close(self) -> None:
        """Shut down the Ray instance this session's first step started (by handle) and
        release its watchdog; nothing for engine=local or a Ray instance found running."""
        if not self._owned:
            return
        self._owned = False
        from irsim.engine import ray_executor

        ray_executor.release_kept(self._kept_from)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
