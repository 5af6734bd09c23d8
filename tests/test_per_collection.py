"""Several collections per metric for the studies that do not pool them (issue 13:
``collection.paths={METRIC: [file, ...]}`` works for every matrix study).

Oracle: the study run on each collection alone, with the same seed. For every matrix study
(except test_errors design=urbano2019, which pools), the rows of each collection of a
per-collection run equal, bit for bit, the tables of the single run; the report holds one
section per collection with the study's own figures; the Python door gives the command
line's tables; sharding, resume and engine=ray change nothing; bad groupings are one line.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import SHARED_DATA

from irsim.errors import ConfigError
from irsim.registry import get, studies
from irsim.report import rows_of
from irsim.runner import compose_config, run


def per_collection_studies() -> list[str]:
    """Every registered matrix study that runs once per collection (its ``pools`` is false
    for its default Config)."""
    return [s.name for s in studies() if s.data == "matrix" and not s.pooled(s.config())]


def small(study: str) -> list[str]:
    """The study's own small command-line settings: the first case of its registration's
    example (:class:`irsim.registry.Example`), its ``collection=`` overrides left out."""
    cases = list(get(study).example.overrides.values())
    assert cases, f"{study}: its registration's example has no command-line case"
    return [o for o in cases[0] if not o.startswith(("collection=", "collection."))]


RUNS = {"adhoc5": 8, "adhoc6": 9}

#: Small settings of swap, for the tests of the Python door and of resuming (as the Python
#: calls below give them).
SWAP = ["experiment.trials=40", "experiment.subset_sizes=[10,20]"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Cut-down TREC-5/6 AP and P@10 matrices (8 and 9 runs) as Urbano CSVs."""
    d = tmp_path_factory.mktemp("collections")
    out = {}
    for coll, runs in RUNS.items():
        for metric, suffix in (("AP", "ap"), ("P@10", "p10")):
            df = pd.read_csv(SHARED_DATA / "urbano" / f"{coll}_{suffix}.csv").iloc[:, :runs]
            path = d / f"{coll}_{suffix}.csv"
            df.to_csv(path, index=False)
            out[coll, metric] = str(path)
    return out


def _paths(files, colls=("adhoc5", "adhoc6")) -> str:
    ap = ",".join(files[c, "AP"] for c in colls)
    p10 = ",".join(files[c, "P@10"] for c in colls)
    return f"collection.paths={{AP: [{ap}], P@10: [{p10}]}}"


def _single(files, coll) -> str:
    return f"collection.paths={{AP: {files[coll, 'AP']}, P@10: {files[coll, 'P@10']}}}"


def same(a: pa.Table, b: pa.Table) -> bool:
    """Bit-identical tables (NaN equal to NaN, -0.0 unequal to 0.0)."""
    if a.schema.remove_metadata() != b.schema.remove_metadata() or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if pa.types.is_floating(x.type):
            if x.null_count or y.null_count:
                if not x.is_null().equals(y.is_null()):
                    return False
                x, y = x.fill_null(0.0), y.fill_null(0.0)
            if not np.array_equal(x.to_numpy().view(np.uint64), y.to_numpy().view(np.uint64)):
                return False
        elif not x.equals(y):
            return False
    return True


def _run(overrides, run_dir, **kw):
    return run(compose_config(["collection=matrix", "quiet=true", "seed=5", *overrides]),
               run_dir, **kw)


@pytest.mark.parametrize("study", per_collection_studies())
@pytest.mark.slow
def test_each_collection_equals_its_own_run(study, files, tmp_path):
    check_per_collection(study, files, tmp_path)


def check_per_collection(study: str, files: dict, tmp_path) -> None:
    """`study` on two collections at once equals each collection's own run (its small
    settings, :func:`small`)."""
    params = [f"experiment={study}", *small(study)]
    both = _run([*params, _paths(files)], tmp_path / "both")
    assert both, study
    for coll in RUNS:
        alone = _run([*params, _single(files, coll)], tmp_path / coll)
        assert sorted(alone) == sorted(both)
        for name, table in alone.items():
            mine = both[name]
            assert mine.column_names[0] == "collection"
            assert same(rows_of(mine, coll), table), f"{study}/{name}/{coll}"
    for name, table in both.items():  # collections in the order given, nothing else
        got = table.column("collection").unique().to_pylist()
        assert got == [c for c in RUNS if c in got], name
    manifest = json.loads((tmp_path / "both" / "manifest.json").read_text())
    described = manifest["collection"]["collections"]
    assert list(described) == list(RUNS)
    assert [d["systems"] for d in described.values()] == [8, 9]
    report = (tmp_path / "both" / "report.md").read_text()
    assert report.index("## Collection `adhoc5`") < report.index("## Collection `adhoc6`")
    for png in (tmp_path / "adhoc5").glob("*.png"):  # the same figures, per collection
        assert (tmp_path / "both" / f"adhoc5_{png.name}").is_file(), png.name
        assert f"](adhoc5_{png.name})" in report
    assert not list((tmp_path / "both").glob(".report-*"))


@pytest.mark.slow
def test_report_rebuild_and_sweep_keys(files, tmp_path):
    """``irsim report <run dir>`` rebuilds the same per-collection report from the tables;
    a collection's section has the single run's section text."""
    from irsim.report import report_command

    _run(["experiment=discpower", "experiment.B=200", _paths(files)], tmp_path / "both")
    first = (tmp_path / "both" / "report.md").read_text()
    report_command([str(tmp_path / "both")])
    assert (tmp_path / "both" / "report.md").read_text() == first
    _run(["experiment=discpower", "experiment.B=200", _single(files, "adhoc6")],
         tmp_path / "alone")
    alone = (tmp_path / "alone" / "report.md").read_text()
    table = alone[alone.index("| metric |"):].split("\n\n")[0]
    section = first[first.index("## Collection `adhoc6`"):]
    assert table in section
    # the overview: each collection's sensitivity side by side, read from its own table
    from irsim.report import fmt

    overview = first[first.index("## Across collections"):first.index("## Collection ")]
    rows = [ln.strip("|").split(" | ") for ln in overview.splitlines()
            if ln.startswith("| ") and not ln.startswith("| metric")]
    assert rows and rows[0] != []
    both = pd.read_parquet(tmp_path / "both" / "results" / "discpower.parquet")
    for metric, test, alpha, *cells in rows:
        for coll, cell in zip(RUNS, cells, strict=True):
            own = both[(both.collection == coll) & (both.metric == metric.strip()) &
                       (both.test == test) & (both.alpha == float(alpha))]
            assert [fmt(v) for v in own.sensitivity] == [cell.strip()]


@pytest.mark.slow
def test_named_collections_may_lack_a_metric(files, tmp_path):
    spec = (f"collection.paths={{AP: {{t5: {files['adhoc5', 'AP']}, t6: {files['adhoc6', 'AP']}}},"
            f" P@10: {{t6: {files['adhoc6', 'P@10']}}}}}")
    tables = _run(["experiment=discpower", "experiment.B=200", spec], tmp_path / "named")
    t = tables["discpower"].to_pandas()
    assert sorted(set(zip(t.collection, t.metric, strict=True))) == \
        [("t5", "AP"), ("t6", "AP"), ("t6", "P@10")]
    alone = _run(["experiment=discpower", "experiment.B=200", _single(files, "adhoc6")],
                 tmp_path / "alone")
    assert same(rows_of(tables["asl"], "t6"), alone["asl"])


@pytest.mark.slow
def test_top_level_metrics_keep_those_collections(files, tmp_path):
    spec = (f"collection.paths={{AP: {{t5: {files['adhoc5', 'AP']}}}, "
            f"P@10: {{t6: {files['adhoc6', 'P@10']}}}}}")
    tables = _run(["experiment=discpower", "experiment.B=200", "metrics=[P@10]", spec],
                  tmp_path / "m")
    assert tables["discpower"].column("collection").unique().to_pylist() == ["t6"]


@pytest.mark.slow
def test_python_door_equals_the_command_line(files, tmp_path):
    import irsim

    cli = _run(["experiment=swap", *SWAP, _paths(files)], tmp_path / "cli")
    data = {m: {c: pd.read_csv(files[c, m]) for c in RUNS} for m in ("AP", "P@10")}
    res = irsim.swap(data, trials=40, subset_sizes=[10, 20], seed=5)
    for name, table in cli.items():
        assert same(res.tables[name], table), name
    positional = irsim.swap({m: list(v.values()) for m, v in data.items()}, trials=40,
                            subset_sizes=[10, 20], seed=5)
    assert positional.tables["swap_summary"].column("collection").unique().to_pylist() == \
        ["collection0", "collection1"]
    report = res.report(tmp_path / "py")
    assert "## Collection `adhoc6`" in report.read_text()


@pytest.mark.slow
def test_shards_and_resume_change_nothing(files, tmp_path):
    from irsim.engine.checkpoint import CheckpointStore

    params = ["experiment=swap", "experiment.trials=1000", "experiment.subset_sizes=[10]",
              _paths(files)]
    sharded = [*params, "engine.shard_replicates=250"]  # 4 shards per collection
    whole = _run(params, tmp_path / "a")
    small = _run(sharded, tmp_path / "b")
    for name in whole:
        assert same(small[name], whole[name]), name
    # a run stopped after a few shards resumes from its checkpoints (shards of part 1 too)
    calls = []
    real = CheckpointStore.save

    def stop_after_five(self, shard, partial):
        real(self, shard, partial)
        calls.append(shard.part)
        if len(calls) == 5:
            raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CheckpointStore, "save", stop_after_five)
        with pytest.raises(KeyboardInterrupt):
            _run(sharded, tmp_path / "c")
    saved = sorted(p.name for p in (tmp_path / "c" / "checkpoints").rglob("*.npz"))
    assert calls == [0, 0, 0, 0, 1] and len(saved) == 5 and saved[-1].startswith("p1_")
    resumed = _run(sharded, tmp_path / "c")
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert (manifest["run"]["shards_resumed"], manifest["run"]["shards_computed"]) == (5, 3)
    for name in whole:
        assert same(resumed[name], whole[name]), name


@pytest.mark.ray
def test_ray_equals_local(files, tmp_path):
    params = ["experiment=swap", *SWAP, _paths(files)]
    local = _run(params, tmp_path / "local")
    ray = _run([*params, "engine=ray", "engine.workers=2", "engine.shard_items=1"],
               tmp_path / "ray")
    for name in local:
        assert same(ray[name], local[name]), name


def test_bad_groupings_are_one_line(files, tmp_path):
    a5, a6, p5 = files["adhoc5", "AP"], files["adhoc6", "AP"], files["adhoc5", "P@10"]
    with pytest.raises(ConfigError, match=r"lists 2 files for AP but 1 for P@10: the i-th"):
        _run(["experiment=discpower", f"collection.paths={{AP: [{a5}, {a6}], P@10: [{p5}]}}"],
             tmp_path / "x")
    with pytest.raises(ConfigError, match=r"two collections would be named 'adhoc5'"):
        _run(["experiment=discpower", f"collection.paths={{AP: [{a5}, {a5}]}}"],
             tmp_path / "x")
    with pytest.raises(ConfigError, match=r"names the collections of AP but not those of P@10"):
        _run(["experiment=discpower", f"collection.paths={{AP: {{t5: {a5}}}, P@10: [{p5}]}}"],
             tmp_path / "x")
    # a problem of one collection's data names the collection
    with pytest.raises(ConfigError, match=r"^config: collection 'adhoc5': "):
        _run(["experiment=swap", "experiment.subset_sizes=[30]", _paths(files)],
             tmp_path / "x")
    assert not (tmp_path / "x" / "results").exists()


def test_check_accepts_a_leading_collection_column_only():
    from irsim.engine.composite import with_collection
    from irsim.tables import check

    t = pa.table({"metric": ["AP"], "system": ["r"], "topic": ["1"], "value": [0.5]})
    check("per_topic", with_collection(t, "adhoc5"))
    bad = t.add_column(0, "collection", pa.array([1]))
    with pytest.raises(TypeError, match="column 'collection': type int64"):
        check("per_topic", bad)
    with pytest.raises(ValueError, match="undeclared"):
        check("per_topic", t.append_column("collection", pa.array(["a"])))


@pytest.mark.slow
def test_sweep_of_per_collection_runs(files, tmp_path):
    """A Hydra multirun whose jobs each run on two collections: ``irsim collect`` keeps the
    runs' ``collection`` column and puts the ``collection=matrix`` override beside it as
    ``override.collection``; the sweep report keys its rows by collection."""
    import subprocess
    import sys

    import pyarrow.dataset as ds

    out = tmp_path / "sw"
    r = subprocess.run([sys.executable, "-m", "irsim", "-m", "experiment=discpower",
                        "collection=matrix", _paths(files), "experiment.B=200,300",
                        "quiet=true", "seed=5", f"hydra.sweep.dir={out}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-m", "irsim", "collect", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = ds.dataset(out / "collected" / "discpower", partitioning="hive").to_table()
    df = got.to_pandas()
    assert set(df["override.collection"]) == {"matrix"}
    assert sorted(set(zip(df.collection, df["experiment.B"].astype(str), strict=True))) == \
        [("adhoc5", "200"), ("adhoc5", "300"), ("adhoc6", "200"), ("adhoc6", "300")]
    # each job's rows are its own table's
    own = pd.read_parquet(out / "0" / "results" / "discpower.parquet")
    mine = df[df.job == "0"][own.columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, own, check_dtype=False)
    r = subprocess.run([sys.executable, "-m", "irsim", "report", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    text = (out / "sweep.md").read_text()
    header = next(ln for ln in text.split("## `discpower`: sensitivity")[1].splitlines()
                  if ln.startswith("| "))
    assert header.startswith("| collection | metric | test | alpha |")


@pytest.mark.slow
def test_registered_collections(tmp_path):
    """``collection=trec_adhoc`` (``collection.collections=[adhoc5, ..., adhoc8]``): each
    registered collection's rows equal the study run on it alone."""
    params = ["experiment=swap", "experiment.trials=20", "experiment.subset_sizes=[10]",
              f"data_dir={SHARED_DATA}", "metrics=[P@10]", "quiet=true", "seed=5"]
    both = run(compose_config([*params, "collection=matrix",
                               "collection.collections=[adhoc8,adhoc6]"]), tmp_path / "both")
    for coll in ("adhoc8", "adhoc6"):
        alone = run(compose_config([*params, f"collection={coll}"]), tmp_path / coll)
        for name, table in alone.items():
            assert same(rows_of(both[name], coll), table), (name, coll)
    assert both["swap_summary"].column("collection").unique().to_pylist() == \
        ["adhoc8", "adhoc6"]
    from irsim.data.sets import CollectionList, CollectionSet
    from irsim.kit.loading import score_matrix

    adhoc = score_matrix(compose_config(["collection=trec_adhoc", f"data_dir={SHARED_DATA}",
                                         "quiet=true"]))
    assert isinstance(adhoc, CollectionList)
    assert [(n, m.metrics, m.shape[1:]) for n, m in adhoc.parts] == [
        ("adhoc5", ("AP", "P@10", "RR"), (61, 50)), ("adhoc6", ("AP", "P@10", "RR"), (74, 50)),
        ("adhoc7", ("AP", "P@10", "RR"), (103, 50)), ("adhoc8", ("AP", "P@10", "RR"), (129, 50))]
    from irsim.experiments import load  # the registration says design=urbano2019 pools

    _, _, pooled, _ = load(compose_config(["experiment=test_errors",
                                           "experiment/design=urbano2019",
                                           "collection=trec_web", "metrics=[nDCG@20]",
                                           f"data_dir={SHARED_DATA}", "quiet=true"]))
    assert isinstance(pooled, CollectionSet)
    assert [(n, m.metrics) for n, m in pooled.parts] == [
        (f"web201{i}", ("nDCG@20",)) for i in range(3)]
    with pytest.raises(ConfigError, match=r"unknown collection.collections entry 'adhoc9' "
                                          r"\(did you mean 'adhoc8'"):
        score_matrix(compose_config(["collection=matrix", "collection.collections=[adhoc9]"]))
    with pytest.raises(ConfigError, match=r"'synthetic' is not a registered score-matrix "
                                          r"collection \(kind matrix with paths: adhoc5"):
        score_matrix(compose_config(["collection=matrix",
                                     "collection.collections=[adhoc8,synthetic]"]))
    with pytest.raises(ConfigError, match=r"leave collection.path and collection.paths out"):
        score_matrix(compose_config(["collection=trec_adhoc", "collection.path=x.csv"]))
