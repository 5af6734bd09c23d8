"""The typed top level and collections of the Hydra config.

:class:`IrsimConfig` is the top level (``conf/config.yaml`` extends it); each kind of
collection is one dataclass, declared by its reader (:mod:`irsim.data.readers`;
:data:`COLLECTIONS` by ``kind``), the base that every ``conf/collection/<name>.yaml`` of that
kind extends (``defaults: [base_<kind>, _self_]``).
With the engines (:mod:`irsim.engine.config`) and the experiments' ``Config`` they make
every node of the config typed, so Hydra and OmegaConf refuse a misspelt key or a value of
the wrong type themselves (:func:`irsim.conf.check_keys` turns their refusal into one line).

One dataclass per kind (not one with every key optional): a key of another kind
(``collection.systems`` on a ``trec`` collection) is refused instead of being ignored.
Values the loaders check themselves with a more useful message (files, globs, lists of
files, qrels by assessor) are typed ``Any``.

Examples
--------
>>> sorted(COLLECTIONS)[:5]
['matrix', 'synthetic_scores', 'synthetic_trec', 'trec', 'trec_eval']
>>> TrecCollection().depth, MatrixCollection().paths is None
(1000, True)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from irsim.data.collection import (
    MatrixCollection,
    SyntheticScoresCollection,
    SyntheticTrecCollection,
    TrecCollection,
    TrecEvalCollection,
)

__all__ = ["IrsimConfig", "MatrixCollection", "TrecCollection", "SyntheticTrecCollection",
           "SyntheticScoresCollection", "TrecEvalCollection", "COLLECTIONS"]


def _help(text: str, default: Any = None) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class IrsimConfig:
    """The top-level keys of the irsim config (``conf/config.yaml``: their defaults; the
    groups ``collection``, ``experiment`` and ``engine`` are typed by their options)."""

    seed: Any = _help("seed of every random draw (an integer >= 0; checked by "
                      "irsim.rng.check_seed)", 0)
    metrics: list[str] | None = _help("metrics to study; null = the collection's default list "
                                      "(for a score matrix: all its metrics)")
    data_dir: str | None = _help("where named collections are found / downloaded; null = "
                                 "$IRSIM_DATA_DIR or ~/.cache/irsim")
    offline: bool = _help("never download anything (collections must already be in "
                          "data_dir)", False)
    quiet: bool = _help("no progress bars (logs still go to the run dir)", False)
    command: str = _help("internal: run (a study) or evaluate (irsim evaluate)", "run")
    collection: Any = None
    experiment: Any = None
    engine: Any = None


class _Schemas(Mapping):
    """The collection schemas by ``kind``, read from the registry of collection readers
    (:func:`irsim.data.collection.readers`) at each access: a reader registered later is
    in it."""

    def __getitem__(self, kind: str) -> type:
        from irsim.data.collection import readers

        return readers()[kind].config

    def __iter__(self) -> Iterator[str]:
        from irsim.data.collection import readers

        return iter(readers())

    def __len__(self) -> int:
        from irsim.data.collection import readers

        return len(readers())


#: The collection schemas by ``kind`` (stored as ``collection/base_<kind>``): each registered
#: reader's config.
COLLECTIONS: Mapping[str, type] = _Schemas()
