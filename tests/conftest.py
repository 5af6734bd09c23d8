"""Shared test fixtures: the path of ../shared/data and small real matrices."""

from __future__ import annotations

import logging
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

#: Why a data-dependent test is skipped when the data are not where they are expected.
NO_DATA = (f"test data not found at {SHARED_DATA} (expected: shared/data beside the clone, "
           f"i.e. ../shared/data; or set IRSIM_TEST_DATA to its path)")


#: Files whose presence means the test data are there (a bare directory is not enough: a
#: registry download attempt into the data directory creates it).
DATA_MARKERS = ("urbano/adhoc8_ap.csv", "trec_eval/qrels.test", "trec_eval/results.test")


@pytest.fixture(autouse=True)
def _logging_handlers_restored():
    """Each test leaves the logging handlers as it found them: a command line run in-process
    (Hydra's job logging) installs a console handler on the stream the test captured, which
    is closed once the test ends; a later test logging through it would print a logging error
    into its own captured output."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture(autouse=True)
def _ray_only_in_tests_marked_ray(request, monkeypatch):
    """Only a test marked ``ray`` or ``cluster`` may start Ray in the test process: Ray leaves
    its threads (gRPC, its core worker's IO) in the process after ``ray.shutdown()``, and a
    run of the default suite with such threads left over once died of a segmentation fault,
    many tests after the one that had started Ray. The default run therefore never starts Ray; the
    marked tests run in a pytest process of their own (``.ci/run``)."""
    if request.node.get_closest_marker("ray") or request.node.get_closest_marker("cluster"):
        yield
        return
    import ray

    def refused(*args, **kwargs):
        raise AssertionError(f"{request.node.nodeid} starts Ray but is not marked ray")

    monkeypatch.setattr(ray, "init", refused)
    yield


def has_data() -> bool:
    """Whether the real test data are there (the one place that decides)."""
    return all((SHARED_DATA / m).is_file() for m in DATA_MARKERS)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (CI places shared/ beside the clone); skips without it."""
    if not has_data():
        pytest.skip(NO_DATA)
    return SHARED_DATA


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Without the test data, a test that fails because it reads them (its error names the
    data directory, or a file missing under it) is reported as skipped, with NO_DATA as the
    reason; with the data present nothing changes."""
    outcome = yield
    report = outcome.get_result()
    if has_data() or not report.failed or call.excinfo is None:
        return
    text = str(report.longrepr)
    if str(SHARED_DATA) in text or str(SHARED_DATA.resolve()) in text:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {NO_DATA}")


def pytest_collectreport(report):
    """A test module that cannot even be imported without the data is skipped likewise."""
    if not has_data() and report.failed and str(SHARED_DATA) in str(report.longrepr):
        report.outcome = "skipped"
        report.longrepr = (str(report.fspath), 0, f"Skipped: {NO_DATA}")


def urbano_csv(directory: Path, name: str, runs: int) -> Path:
    """The first `runs` runs of Urbano's `name`.csv written to `directory` (same name)."""
    path = Path(directory) / f"{name}.csv"
    pd.read_csv(SHARED_DATA / "urbano" / f"{name}.csv").iloc[:, :runs].to_csv(path,
                                                                           index=False)
    return path


@pytest.fixture(scope="session")
def small_p10_pool(tmp_path_factory) -> Path:
    """A directory with two small Urbano P@10 matrices (adhoc5_p10.csv, adhoc6_p10.csv: the
    first 14 runs each) for design=urbano2019."""
    tmp = tmp_path_factory.mktemp("p10_pool")
    for name in ("adhoc5_p10", "adhoc6_p10"):
        urbano_csv(tmp, name, 14)
    return tmp


def dl19_files(runs: tuple[str, ...], qrels: tuple[str, ...]) -> tuple[list[str], dict]:
    """Paths of the named runs and qrels of the shared DL 2019 assessor data (the test is
    skipped without it): ``(run files, {qrels name: file})``."""
    dl19 = SHARED_DATA / "dl19-assessors"
    if not (dl19 / "qrels" / "nist.txt").is_file():
        pytest.skip(f"DL 2019 assessor data not found at {dl19} (set IRSIM_TEST_DATA)")
    return ([str(dl19 / "runs" / f"{r}.gz") for r in runs],
            {n: str(dl19 / "qrels" / f"{n}.txt") for n in qrels})


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
