"""Executors: local (in-process) and ray (actors); sharding, checkpoints, output."""

from irsim.engine.base import Partial, Reducer, Shard, Study, block_ranges, shard_grid
from irsim.engine.output import read_tables, write_tables
from irsim.engine.runner import RunInfo, data_digest, run_study

__all__ = [
    "Partial",
    "Reducer",
    "RunInfo",
    "Shard",
    "Study",
    "block_ranges",
    "data_digest",
    "read_tables",
    "run_study",
    "shard_grid",
    "write_tables",
]
