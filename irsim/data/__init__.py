"""Collections: readers, validation, registry and synthetic generators."""

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs

__all__ = ["Qrels", "Runs", "ScoreMatrix"]
