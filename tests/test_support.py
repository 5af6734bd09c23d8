"""One support detection (irsim.simulate.margins.support) for every generator.

Until issue 26 the shift design (``simulate/topics.py``) and the simIReff margins
(``simulate/margins.py``) each had their own ``detect_support``, with different rounding
tolerances for RR. The unified :func:`detect_support` is checked against plain-loop
re-implementations of both old rules on every score matrix of ../shared/data (Urbano's 30
CSVs, the Sakai book's three, and six metrics of trec_eval's test run and of TREC DL 2019's
runs on the NIST qrels and the eight secondary assessors' qrels), whole and run by run: the
shift design's callers get exactly the old label and the urbano2019 callers exactly the old
name (which is part of the fit cache key).
"""

from __future__ import annotations

import glob
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, has_data

from irsim.data.matrix import ScoreMatrix
from irsim.simulate.margins import Support, detect_support, rounding_tolerance

pytestmark = pytest.mark.skipif(not has_data(), reason="needs ../shared/data")

#: Metrics computed from the runs and qrels of the shared data.
METRICS = ("AP", "P@10", "RR", "nDCG@10", "P@5", "Rprec")


# ----------------------------------------------------------------------------- references


def _grid(values: list[float]) -> str | None:
    for m in range(1, 101):
        if all(abs(x * m - round(x * m)) < 1e-6 for x in values):
            return f"grid 1/{m}"
    return None


def old_shift_rule(scores: np.ndarray) -> str | None:
    """The shift design's old rule (topics.detect_support), one value at a time."""
    values = sorted({float(x) for x in np.ravel(scores)})
    grid = _grid(values)
    if grid is not None:
        return grid
    resolution = 1e-9
    for d in range(13):
        if all(abs(x * 10**d - round(x * 10**d)) < 1e-6 for x in values):
            resolution = 0.5 * 10.0**-d * (1 + 1e-6)
            break
    nonzero = [x for x in values if x > 0]
    if nonzero and all(abs(x - 1 / round(1 / x)) <= resolution for x in nonzero):
        return "reciprocal"
    return None


def old_simireff_rule(scores: np.ndarray) -> str | None:
    """The simIReff margins' old rule (margins.detect_support), one value at a time."""
    values = sorted({float(x) for x in np.ravel(scores)})
    grid = _grid(values)
    if grid is not None:
        return grid
    nonzero = [x for x in values if x > 0]
    if not nonzero:
        return None
    decimals = max(len(f"{x:.10f}".rstrip("0").split(".")[1]) for x in nonzero)
    tol = 0.5 * 10.0**-decimals + 1e-12
    ranks = [round(1 / x) for x in nonzero]
    if all(r >= 1 and abs(x - 1 / max(r, 1)) <= tol for x, r in zip(nonzero, ranks, strict=True)):
        return f"reciprocal 1/{max(ranks)}"
    return None


# ----------------------------------------------------------------------------- the data


def _matrices() -> list[tuple[str, np.ndarray]]:
    """(name, runs x topics) of every score matrix of the shared data."""
    out = []
    for path in sorted((SHARED_DATA / "urbano").glob("*.csv")):
        out.append((path.stem, pd.read_csv(path).to_numpy(np.float64).T))
    for path in sorted((SHARED_DATA / "sakai-book").glob("*.csv")):
        df = pd.read_csv(path)
        out.append((f"sakai-book/{path.stem}", df.iloc[:, 1:].to_numpy(np.float64).T))
    from irsim.data.trec import read_run
    from irsim.kit.loading import load_collection

    def evaluated(runs: list[str], qrels: Path) -> ScoreMatrix:
        return load_collection({"kind": "trec", "runs": runs, "qrels": str(qrels),
                                "depth": 1000, "scores": "float32", "missing": "drop"},
                               metrics=list(METRICS))

    te = SHARED_DATA / "trec_eval"
    m = evaluated([str(te / "results.test")], te / "qrels.test")
    out += [(f"trec_eval/{metric}", m.metric(metric)) for metric in m.metrics]
    dl19 = SHARED_DATA / "dl19-assessors"
    if (dl19 / "qrels" / "nist.txt").is_file():
        runs: dict[str, str] = {}
        for path in sorted(glob.glob(str(dl19 / "runs" / "*.gz"))):
            runs.setdefault(read_run(path).names[0], path)  # run names must be unique
        for qrels in sorted((dl19 / "qrels").glob("*.txt")):
            m = evaluated(sorted(runs.values()), qrels)
            for metric in m.metrics:
                out.append((f"dl19/{Path(qrels).stem}/{metric}", m.metric(metric)))
    return out


@pytest.fixture(scope="module")
def matrices() -> list[tuple[str, np.ndarray]]:
    return _matrices()


@pytest.mark.slow
def test_unified_support_is_both_old_rules_on_all_shared_data(matrices):
    found = {"grid": 0, "reciprocal": 0, "continuous": 0}
    checked = 0
    for name, x in matrices:
        for part in [x, *x]:  # the whole matrix, then each run alone
            got = detect_support(part)
            old_shift, old_simireff = old_shift_rule(part), old_simireff_rule(part)
            assert (None if got is None else got.label) == old_shift, name
            assert (None if got is None else got.name) == old_simireff, name
            checked += 1
        whole = detect_support(x)
        found["continuous" if whole is None else whole.name.split()[0]] += 1
    # the data exercise every branch: P@k grids, RR reciprocals, continuous metrics
    assert len(matrices) == 30 + 3 + 10 * len(METRICS)
    assert found["grid"] >= 10 and found["reciprocal"] >= 10 and found["continuous"] >= 10
    assert checked > 4000


def test_reciprocal_support_values_and_index():
    rr = pd.read_csv(SHARED_DATA / "urbano" / "adhoc8_rr.csv").to_numpy(np.float64).T
    s = detect_support(rr)
    R = round(1 / rr[rr > 0].min())
    assert s.name == f"reciprocal 1/{R}" and s.label == "reciprocal" and s.K == R
    assert s.values[0] == 0 and s.values[-1] == 1 and np.all(np.diff(s.values) > 0)
    # every observed score indexes its own value, within the scores' rounding
    idx = s.index(rr)
    assert np.abs(s.values[idx] - rr).max() <= rounding_tolerance(rr)
    assert math.isclose(rounding_tolerance(rr), 0.5e-4 * (1 + 1e-6))


def test_support_edge_cases():
    assert detect_support([0.0, 0.0]).name == "grid 1/1"         # all zeros: the 0/1 grid
    assert detect_support([0.25, 0.5]).name == "grid 1/4"
    assert detect_support([1 / 3, 1 / 101]).name == "reciprocal 1/101"  # exact floats
    assert detect_support([0.3334, 0.5]) is None                  # 1/3 rounds to 0.3333
    assert detect_support([0.0, 0.5], max_grid=1).name == "reciprocal 1/2"
    assert Support("grid 1/10", np.arange(11) / 10).label == "grid 1/10"
