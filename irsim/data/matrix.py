"""The score matrix: metric x system x topic, float64, with ids kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["ScoreMatrix"]



#: Largest score magnitude a study accepts: sums of squares of resampled scores over up to
#: millions of topics stay finite (IR metrics lie in [0, 1]; unnormalised gains in the
#: thousands are far inside).
MAX_SCORE = 1e100

#: Longest metric, system or topic name: each table row repeats its names (a 100,000-character
#: metric name made discpower's table of 8,256 pairs need 3 GiB).
MAX_ID = 1000

#: Smallest scale of a system's scores a study accepts: a (metric, system) row whose largest
#: magnitude is nonzero and below it is refused, since squares and cubes of its scores
#: underflow double precision (scores times 1e-155 turned sensitivity .57/.71 into 1.0/1.0;
#: at 1e-310 the t test gave p = 1 and the bootstrap 0). A single tiny score in a row of
#: ordinary ones (RBP of a document at rank 1000) is fine: the row's scale decides.
MIN_SCALE = 1e-100


@dataclass(frozen=True)
class ScoreMatrix:
    """Per-topic scores of many systems under one or more metrics.

    Parameters
    ----------
    values : ndarray, shape (metrics, systems, topics)
        float64 scores; NaN or inf are rejected.
    metrics, systems, topics : sequence of str
        Identifiers along each axis, unique.
    source : str, optional
        Where the scores came from (a path or a generator description).

    Examples
    --------
    >>> import numpy as np
    >>> m = ScoreMatrix(np.array([[[0.1, 0.2], [0.3, 0.4]]]), ["AP"], ["s1", "s2"], ["t1", "t2"])
    >>> m.shape
    (1, 2, 2)
    >>> m.metric("AP").mean(axis=1).tolist()
    [0.15000000000000002, 0.35]
    """

    values: np.ndarray
    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    topics: tuple[str, ...]
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        values = np.ascontiguousarray(self.values, dtype=np.float64)
        object.__setattr__(self, "values", values)
        for name in ("metrics", "systems", "topics"):
            object.__setattr__(self, name, tuple(str(x) for x in getattr(self, name)))
        where = self.source or "score matrix"
        if values.ndim != 3:
            raise InputError(
                f"score matrix must be 3-d (metric, system, topic), got {values.ndim}-d",
                file=where)
        expected = (len(self.metrics), len(self.systems), len(self.topics))
        if values.shape != expected:
            raise InputError(f"values have shape {values.shape}, ids give {expected}", file=where)
        for name in ("metrics", "systems", "topics"):
            ids = getattr(self, name)
            long = next((i for i in ids if len(i) > MAX_ID), None)
            if long is not None:  # every table row repeats it (8256 pairs x 100,000: 3 GiB)
                raise InputError(f"a {name[:-1]} name of {len(long):,} characters "
                                 f"({long[:20]!r}...) is over the {MAX_ID:,}-character "
                                 f"limit: shorten it", file=where)
            if len(set(ids)) != len(ids):
                dup = next(i for i in ids if ids.count(i) > 1)
                raise InputError(f"duplicate {name[:-1]} id {dup!r}", file=where)
        if values.size and not np.isfinite(values).all():
            m, s, t = np.argwhere(~np.isfinite(values))[0]
            raise InputError(
                f"non-finite score {values[m, s, t]} for metric {self.metrics[m]!r}, "
                f"system {self.systems[s]!r}, topic {self.topics[t]!r}",
                file=where,
            )
        if values.size and np.abs(values).max() > MAX_SCORE:
            m, s, t = np.argwhere(np.abs(values) > MAX_SCORE)[0]
            raise InputError(
                f"score {values[m, s, t]:g} for metric {self.metrics[m]!r}, system "
                f"{self.systems[s]!r}, topic {self.topics[t]!r} is beyond +-{MAX_SCORE:g} "
                f"(sums of squares over topics would overflow); rescale the scores",
                file=where,
            )
        if values.size:
            scale = np.abs(values).max(axis=2)
            tiny = (scale > 0) & (scale < MIN_SCALE)
            if tiny.any():
                m, s = np.argwhere(tiny)[0]
                raise InputError(
                    f"scores of system {self.systems[s]!r} for metric {self.metrics[m]!r} are "
                    f"all below {MIN_SCALE:g} in magnitude (largest {scale[m, s]:g}): their "
                    "squares underflow double precision, which changes every test and "
                    "interval; rescale the scores", file=where)
        values.setflags(write=False)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(metrics, systems, topics)."""
        return self.values.shape  # type: ignore[return-value]

    def metric(self, name: str) -> np.ndarray:
        """The (systems, topics) matrix of one metric (read-only view)."""
        try:
            return self.values[self.metrics.index(name)]
        except ValueError:
            raise unknown_name("metric", name, self.metrics) from None

    def select(
        self,
        metrics: Sequence[str] | None = None,
        systems: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
    ) -> ScoreMatrix:
        """A new matrix restricted to (and ordered by) the given ids."""

        def index(kind: str, have: tuple[str, ...], want: Sequence[str] | None) -> list[int]:
            if want is None:
                return list(range(len(have)))
            pos = {k: i for i, k in enumerate(have)}
            missing = [w for w in want if w not in pos]
            if missing:
                raise unknown_name(kind, missing[0], have)
            return [pos[w] for w in want]

        mi = index("metric", self.metrics, metrics)
        si = index("system", self.systems, systems)
        ti = index("topic", self.topics, topics)
        vals = self.values[np.ix_(mi, si, ti)]
        return ScoreMatrix(
            vals,
            [self.metrics[i] for i in mi],
            [self.systems[i] for i in si],
            [self.topics[i] for i in ti],
            source=self.source,
        )

    @staticmethod
    def stack(parts: Sequence[ScoreMatrix]) -> ScoreMatrix:
        """Stack matrices of different metrics over the same systems and topics.

        Raises
        ------
        InputError
            If the parts do not share systems and topics (in the same order after sorting
            is *not* attempted: ids must match exactly).
        """
        if not parts:
            raise ConfigError("no score matrices to stack")
        first = parts[0]
        for p in parts[1:]:
            if set(p.systems) != set(first.systems):
                extra = sorted(set(p.systems) ^ set(first.systems))[:3]
                raise InputError(
                    f"systems differ between metrics {first.metrics} and {p.metrics}: {extra}",
                    file=p.source or "score matrix",
                )
            if set(p.topics) != set(first.topics):
                extra = sorted(set(p.topics) ^ set(first.topics))[:3]
                raise InputError(
                    f"topics differ between metrics {first.metrics} and {p.metrics}: {extra}",
                    file=p.source or "score matrix",
                )
        aligned = [p.select(systems=first.systems, topics=first.topics) for p in parts]
        metrics = [m for p in aligned for m in p.metrics]
        return ScoreMatrix(
            np.concatenate([p.values for p in aligned], axis=0),
            metrics,
            first.systems,
            first.topics,
            source="; ".join(dict.fromkeys(p.source or "" for p in parts)),
        )
