"""Samplers: every draw is a pure function of (seed, study, coordinates)."""

from irsim.rng import REPLICATE_BLOCK, blocked_draws, rng_for, study_key
from irsim.sampling.topics import bootstrap_counts, bootstrap_indices, indices_to_counts

__all__ = [
    "REPLICATE_BLOCK",
    "blocked_draws",
    "bootstrap_counts",
    "bootstrap_indices",
    "indices_to_counts",
    "rng_for",
    "study_key",
]
