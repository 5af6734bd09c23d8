"""Shared test fixtures: the path of ../shared/data and small real matrices."""

from __future__ import annotations

import os
from pathlib import Path

# Ray nodes started by the tests (ray.init, ray.cluster_utils.Cluster) bind to 127.0.0.1:
# Ray reads this before it is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import numpy as np
import pandas as pd
import pytest

from irsim.data.matrix import ScoreMatrix

SHARED_DATA = Path(os.environ.get(
    "IRSIM_TEST_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (CI places shared/ beside the clone)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"test data not found at {SHARED_DATA}; set IRSIM_TEST_DATA")
    return SHARED_DATA


def urbano_matrix(name: str, metric: str, systems: int | None = None) -> ScoreMatrix:
    """An Urbano CSV read with pandas (independent of irsim's readers)."""
    df = pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv")
    if systems is not None:
        df = df.iloc[:, :systems]
    vals = df.to_numpy(dtype=np.float64).T[None]
    return ScoreMatrix(vals, [metric], list(df.columns), [str(i + 1) for i in range(len(df))])


@pytest.fixture
def ray_local():
    """A fresh 2-CPU Ray instance bound to 127.0.0.1 (address="local": never a cluster that
    happens to run on this machine), shut down after the test."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False,
             _node_ip_address="127.0.0.1", log_to_driver=False)
    yield ray
    ray.shutdown()
