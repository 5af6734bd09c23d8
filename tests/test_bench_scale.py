"""bench/bench_scale.py's model counts the full Urbano 2019 design as the engine plans it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parents[1] / "bench" / "bench_scale.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("_bench_scale_model", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# draws: the (metric, n) groups x Monte Carlo units of 4,000 trials that a shard draws
# resamples for, summed over shards (a unit split over 2 shards is drawn twice; with one
# configuration per shard the Type I and each delta draw their own)
@pytest.mark.parametrize(("items", "reps", "draws"), [
    (1, 4000, 15 * (417 + 10 * 42)), (11, 2000, 15 * 834), (165, 4000, 15 * 417),
    (4096, 8000, 15 * 417)])
def test_plan_costs_follow_the_engine_plan(bench, items, reps, draws):
    study, data = bench.full_study(items, reps)
    per_trial = {n: (0.0, 0.0, 1.0, 0.0) for n in bench.SIZES}  # 1 s per trial, nothing else
    costs, shards = bench.plan_costs(per_trial, items, reps)
    assert shards == len(costs) == len(study.plan(data))
    # every trial of the design, once: 15 x (1,667,000 + 10 x 167,000)
    assert costs.sum() == 15 * (1_667_000 + 10 * 167_000)
    per_unit = {n: (1.0, 0.0, 0.0, 0.0) for n in bench.SIZES}  # 1 s per resample draw
    assert bench.plan_costs(per_unit, items, reps)[0].sum() == draws


def test_empty_shards_and_schedule(bench):
    costs, shards = bench.plan_costs({n: (0.0, 0.0, 1.0, 0.0) for n in bench.SIZES}, 1, 4000)
    # Type I: 15 x 417 blocks with trials, Type II/III: 150 x 42 (167,000 trials)
    assert (shards, int((costs > 0).sum())) == (165 * 417, 15 * 417 + 150 * 42)
    assert bench.makespan(np.array([3.0, 1.0, 1.0, 1.0]), 2) == 3.0
    assert bench.makespan(np.array([1.0, 1.0, 1.0, 1.0, 0.0]), 2) == 2.0
    assert bench.makespan(np.array([2.0, 5.0]), 8) == 5.0
