"""Collections: readers, validation, registry and synthetic generators; the Python door's
data conversion (:mod:`irsim.data.convert`) and several collections at once
(:mod:`irsim.data.sets`)."""

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs

__all__ = ["Qrels", "Runs", "ScoreMatrix"]
