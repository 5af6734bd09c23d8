"""Issue 13, fitting cost: copula selections as shards on the engine; pooled collections from
the Python door.

- Codes: a fitted copula's fixed-width code (:func:`irsim.simulate.copulas.encode`) gives back
  the copula pyvinecopulib selected (family, rotation, parameters bit for bit).
- Sharding: :func:`fit_pair_copula_models` gives the models of :func:`fit_pair_copula_model` (in
  process, serially) bit for bit, at every shard size, and on engine=ray with 2 workers; a Ray
  instance the fit starts is the one the study then runs on, and is shut down with the session.
- Cache: a second fit reads every model back and runs nothing on the engine.
- Threads (the preset's ``fit_threads: 2``): every pair's model is pyvinecopulib's own
  selection with the one-thread controls of the serial path, pair by pair; the models equal
  the serial ones bit for bit at every shard size and number of threads.
- ``make_study`` hands the engine to test_errors, whose copulas are then selected there.
- ``irsim.test_errors({"AP": [...], ...}, design="urbano2019")`` gives the command line's
  ``collection.paths={AP: [a.csv, b.csv], ...}`` tables bit for bit; bad input is one
  ConfigError naming the parameter.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import pyvinecopulib as pv
from conftest import SHARED_DATA

import irsim
from irsim.data.matrix_io import read_urbano_csv
from irsim.engine.session import Engine
from irsim.errors import ConfigError
from irsim.experiments.test_errors import Urbano2019
from irsim.simulate import copulas as cop
from irsim.simulate.fit_engine import CopulaFits, PairData, fit_pair_copula_models
from irsim.simulate.pair_copula_model import fit_pair_copula_model, prepare_fit

URBANO = SHARED_DATA / "urbano"
#: (file, metric, runs kept of the file): two AP collections and a discrete one (P@10)
PARTS = (("adhoc5_ap", "AP", 10), ("adhoc6_ap", "AP", 9), ("adhoc7_p10", "P@10", 8))


def _frame(name: str, runs: int) -> pd.DataFrame:
    return pd.read_csv(URBANO / f"{name}.csv").iloc[:, :runs]


def _requests(cache=None) -> list[dict]:
    out = []
    for name, metric, runs in PARTS:
        df = _frame(name, runs)
        out.append({"scores": df.to_numpy(np.float64).T, "metric": metric, "name": name,
                    "runs": tuple(df.columns), "seed": 3, "cache_dir": cache})
    return out


def _same(a, b) -> None:
    """Two models are the same model, bit for bit."""
    assert a.runs == b.runs and a.dropped == b.dropped
    assert a.copulas == b.copulas and a.copula_families == b.copula_families
    assert a.margin_families == b.margin_families
    assert np.array_equal(a.margins.x, b.margins.x) and np.array_equal(a.margins.F, b.margins.F)


@pytest.fixture(scope="module")
def serial():
    """Each collection fitted in process, one selection after the other."""
    return [fit_pair_copula_model(**r) for r in _requests()]


def test_codes_give_back_pyvinecopulibs_selection():
    """Oracle: pyvinecopulib's own selection on the same pseudo-observations; every family
    of the selection set round-trips through its code (parameters bit for bit)."""
    rng = np.random.default_rng(0)
    df = _frame("adhoc5_ap", 6)
    x = df.to_numpy(np.float64).T
    for i, j in ((0, 1), (2, 5), (3, 4)):
        u = cop.pseudo_obs(np.column_stack([x[i], x[j]]), np.random.default_rng([7, i, j]))
        want = pv.Bicop.from_data(u, controls=cop.controls())
        got = cop.load(cop.decode(cop.encode(want)))
        assert (got.family, got.rotation) == (want.family, want.rotation)
        assert np.array_equal(got.parameters, want.parameters)
        assert got.nobs == want.nobs == 50
        ll = json.loads(cop.decode(cop.encode(want)))["ll"]
        assert ll == json.loads(want.to_json())["ll"]
    u = cop.pseudo_obs(np.column_stack([x[0], x[1]]), rng)
    for fam in cop.FAMILIES:  # each family fitted alone to a real pair
        want = pv.Bicop.from_data(u, controls=cop.controls((fam,)))
        got = cop.load(cop.decode(cop.encode(want)))
        assert (got.family, got.rotation) == (want.family, want.rotation), fam
        assert np.array_equal(got.parameters, want.parameters), fam
        assert cop.label(cop.encode(want)).split()[0] == cop.family_name(want)


@pytest.mark.slow
def test_models_hold_pyvinecopulibs_selection_of_each_pair(serial):
    """Oracle: pair (i, j) of a model is pyvinecopulib's AIC selection on the
    pseudo-observations of kept runs i and j, ties broken by the generator seeded
    (seed, study_key(name/metric), i, j)."""
    from irsim.rng import study_key
    from irsim.simulate.pair_copula_model import prepare_runs

    model, (name, metric, runs) = serial[0], PARTS[0]
    x = _frame(name, runs).to_numpy(np.float64).T
    kept = x[prepare_runs(x, True, 0.1)]
    assert len(kept) == len(model.runs) == 9
    for i, j in ((0, 1), (0, 8), (4, 7), (7, 8)):
        rng = np.random.default_rng([3, study_key(f"{name}/{metric}"), i, j])
        u = cop.pseudo_obs(np.column_stack([kept[i], kept[j]]), rng)
        want = pv.Bicop.from_data(u, controls=cop.controls())
        got = model.copula(model.pair(i, j))
        assert (got.family, got.rotation) == (want.family, want.rotation)
        assert np.array_equal(got.parameters, want.parameters)


@pytest.mark.parametrize("shard_pairs", [1, 13, 64, 10_000])
@pytest.mark.slow
def test_engine_fit_equals_the_serial_fit_at_any_shard_size(serial, shard_pairs):
    models = fit_pair_copula_models(_requests(), shard_pairs=shard_pairs)
    assert [m.name for m in models] == [p[0] for p in PARTS]
    for got, want in zip(models, serial, strict=True):
        _same(got, want)
        assert not got.cached and got.fit_seconds > 0


@pytest.mark.slow
def test_two_threads_select_pyvinecopulibs_models_pair_by_pair():
    """Oracle: the serial path's selection, pair by pair - pyvinecopulib's Bicop.from_data
    with the controls of one thread on the pseudo-observations of kept runs (i, j), ties
    broken by the generator seeded (seed, key, i, j) - for every pair of three real
    collections (two AP, one P@10: 85 pairs) fitted as the preset does (engine=local,
    fit_threads=2): family, rotation, parameters, log-likelihood and observations identical;
    margins as prepared alone."""
    info: dict = {}
    models = fit_pair_copula_models(_requests(), threads=2, shard_pairs=7, info=info)
    assert info["copulas"] == 85 and info["shards"] == 13
    ctl = cop.controls(cop.FAMILIES, 1)
    for model, request in zip(models, _requests(), strict=True):
        task = prepare_fit(**request)
        assert model.runs == tuple(n for n, k in zip(task.names, task.keep, strict=True) if k)
        assert np.array_equal(model.margins.F, task.margins.F)
        assert np.array_equal(model.margins.x, task.margins.x)
        a, b = np.triu_indices(len(task.kept), 1)
        assert len(model.copulas) == len(a) > 20
        for k, (i, j) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
            rng = np.random.default_rng([task.seed, task.key, i, j])
            u = cop.pseudo_obs(np.column_stack([task.kept[i], task.kept[j]]), rng)
            want = pv.Bicop.from_data(u, controls=ctl)
            got = model.copula(k)
            assert (got.family, got.rotation, got.nobs) == (want.family, want.rotation, 50)
            assert np.array_equal(got.parameters, want.parameters)
            assert json.loads(model.copulas[k])["ll"] == json.loads(want.to_json())["ll"]


@pytest.mark.parametrize("threads, shard_pairs", [(2, 1), (3, 13), (2, 10_000)])
@pytest.mark.slow
def test_threads_equal_the_serial_fit(serial, threads, shard_pairs):
    models = fit_pair_copula_models(_requests(), threads=threads, shard_pairs=shard_pairs)
    for got, want in zip(models, serial, strict=True):
        _same(got, want)


@pytest.mark.slow
def test_shards_cover_collections_end_to_end(serial):
    """A shard that spans two collections fits the tail of one and the head of the next."""
    tasks = [prepare_fit(**r) for r in _requests()]
    data = PairData.of(tasks)
    # 10, 9 and 8 runs less those below the 10% quantile of the means (R's removeBottom: the
    # lowest of distinct means): 9, 8 and 7 kept (no duplicates): 36, 28, 21 pairs
    assert data.offsets.tolist() == [0, 36, 64, 85]
    study = CopulaFits(shard_pairs=10)
    shard = study.plan(data)[3]  # pairs 30..39: 6 of the first collection, 4 of the second
    codes = study.kernel(shard, data)["codes"]
    want = [cop.load(s) for s in serial[0].copulas[30:36] + serial[1].copulas[:4]]
    assert [cop.load(cop.decode(c)).parameters.tolist() for c in codes] == \
        [w.parameters.tolist() for w in want]
    with pytest.raises(ConfigError, match="shard_pairs"):
        CopulaFits(shard_pairs=0)


@pytest.mark.slow
def test_the_cache_skips_fitting(tmp_path, serial):
    class Recording(Engine):
        def run(self, study, data, **kw):
            self.studies.append(study.name)
            return super().run(study, data, **kw)

    eng = Recording("local")
    eng.studies = []
    info: dict = {}
    first = fit_pair_copula_models(_requests(tmp_path), engine=eng, shard_pairs=16, info=info)
    assert eng.studies == ["copula_fits"] and len(list(tmp_path.glob("*.npz"))) == 3
    # what the fit did, for the manifest: 36 + 28 + 21 pairs in shards of 16
    assert (info["engine"], info["collections_fitted"], info["collections_cached"],
            info["copulas"], info["shard_pairs"], info["shards"]) == ("local", 3, 0, 85, 16, 6)
    info = {}
    again = fit_pair_copula_models(_requests(tmp_path), engine=eng, info=info)
    assert eng.studies == ["copula_fits"]  # nothing ran the second time
    assert info == {"collections_fitted": 0, "collections_cached": 3, "copulas": 0}
    for got, fitted, want in zip(again, first, serial, strict=True):
        assert got.cached and got.fit_seconds == 0.0
        _same(got, fitted)
        _same(got, want)
    # one collection changed: only it is fitted
    changed = _requests(tmp_path)
    changed[1]["seed"] = 4
    models = fit_pair_copula_models(changed, engine=eng)
    assert eng.studies == ["copula_fits"] * 2
    assert [m.cached for m in models] == [True, False, True]


#: The small urbano2019 study of these tests (parameters of test_errors' Config): the preset
#: ``experiment=urbano2019``'s values, with fewer sizes, deltas, trials and tests.
STUDY = dict(design=Urbano2019(power_trials=250, fit_threads=2,
                               margin_families=["truncnorm", "beta", "kernel", "bks"]),
             sizes=[10], deltas=[0.05],
             trials=250, B=50, tests=["t", "sign"], alpha=[0.05], drop_bottom=0.1,
             drop_duplicates=True, wilcoxon_method="r", sign_threshold=0.01,
             bootstrap_statistic="mean", alternatives=["two-sided", "greater"])


def _urbano_config():
    from irsim.experiments.test_errors import Config

    return Config(**STUDY)


@pytest.mark.slow
def test_make_study_selects_the_copulas_on_the_engine(serial):
    """test_errors' data preparation runs its selections on the engine it is given."""
    from irsim.data.sets import CollectionSet
    from irsim.experiments import Shards, make_study

    class Recording(Engine):
        def run(self, study, data, **kw):
            self.studies.append((study.name, study.plan(data)[-1].items[1]))
            return super().run(study, data, **kw)

    name, metric, runs = PARTS[0]
    matrix = read_urbano_csv(URBANO / f"{name}.csv", metric).select(
        systems=list(_frame(name, runs).columns))
    with Recording("local") as eng:
        eng.studies = []
        _, data = make_study("test_errors", _urbano_config(), CollectionSet(((name, matrix),)),
                             seed=3, shards=Shards(), engine=eng)
    assert eng.studies == [("copula_fits", 36)]
    _same(data.pools[0].models[0], serial[0])


def _cli_and_python(tmp_path):
    from irsim.runner import compose_config, run

    paths = {}
    for name, metric, runs in PARTS:
        path = tmp_path / f"{name}.csv"
        _frame(name, runs).to_csv(path, index=False)
        paths.setdefault(metric, []).append(str(path))
    spec = ", ".join(f"{m}: [{', '.join(p)}]" for m, p in paths.items())
    cfg = compose_config(["experiment=urbano2019", f"collection.paths={{{spec}}}",
                          "metrics=[AP,P@10]", "experiment.trials=250",
                          "experiment.design.power_trials=250", "experiment.B=50",
                          "experiment.sizes=[10]", "experiment.deltas=[0.05]",
                          "experiment.tests=[t,sign]", "experiment.alpha=[0.05]",
                          "quiet=true", "seed=3"])
    cli = run(cfg, tmp_path / "run")
    # the command line names a collection by its file without the metric (adhoc5_ap.csv:
    # adhoc5): the same names from Python give the same tables
    frames = {m: {n.rsplit("_", 1)[0]: _frame(n, r) for n, mm, r in PARTS if mm == m}
              for m in paths}
    res = irsim.test_errors(frames, seed=3, **STUDY)
    return cli, res


@pytest.mark.slow
def test_pooled_python_door_equals_the_command_line(tmp_path):
    cli, res = _cli_and_python(tmp_path)
    assert set(res.tables) == set(cli)
    for name in cli:
        assert res.tables[name].to_pydict() == cli[name].to_pydict(), name
    models = pq.read_table(tmp_path / "run" / "results" / "test_errors_models.parquet")
    assert models.column("collection").to_pylist() == ["adhoc5", "adhoc6", "adhoc7"]
    assert res.manifest["collection"]["collections"] == {
        "AP": ["adhoc5", "adhoc6"], "P@10": ["adhoc7"]}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    fit = manifest["collection"]["fit_run"]
    assert (fit["engine"], fit["collections_fitted"], fit["shards"]) == ("local", 3, 2)
    assert fit["copulas"] == sum(r * (r - 1) // 2 for r in (9, 8, 7))  # runs after the 10%
    # a list names the collections collection0, collection1, ... per metric; ScoreMatrix works
    a = read_urbano_csv(URBANO / "adhoc5_ap.csv", "AP")
    a = a.select(systems=list(a.systems[:10]))
    listed = irsim.test_errors({"AP": [a, _frame("adhoc6_ap", 9)]}, seed=3,
                               **STUDY)
    assert listed.to_pandas("test_errors_models")["collection"].tolist() == [
        "collection0", "collection1"]
    assert listed.tables["test_errors_families"].num_rows > 0


def test_pooled_bad_input_is_one_config_error():
    df = _frame("adhoc5_ap", 6)
    # a study that does not pool runs on each collection: the same data twice, the same rows
    from irsim.report import rows_of

    swap = irsim.swap({"AP": [df, df]}, trials=20)
    t = swap.tables["swap_summary"]
    assert rows_of(t, "collection0").to_pandas().equals(rows_of(t, "collection1").to_pandas())
    with pytest.raises(ConfigError, match=r"^metrics: 'RR' is not a metric of the data"):
        irsim.test_errors({"AP": [df, df]}, metrics=["RR"], **STUDY)
    p10 = read_urbano_csv(URBANO / "adhoc5_p10.csv", "P@10")
    with pytest.raises(ConfigError, match=r"^data\['AP'\]\[1\]: no metric 'AP'"):
        irsim.test_errors({"AP": [df, p10]}, **STUDY)
    with pytest.raises(ConfigError, match=r"^data\['AP'\]\['b'\] is str"):
        irsim.test_errors({"AP": {"a": df, "b": "x.csv"}}, **STUDY)


@pytest.mark.ray
def test_ray_two_workers_fit_and_study_equal_local(tmp_path, serial):
    """One Ray instance (2 workers) selects the copulas at several shard sizes, then runs the
    study on the same instance; models and tables equal the local ones bit for bit; the
    instance is shut down with the session."""
    import ray

    assert not ray.is_initialized()
    with Engine("ray", {"workers": 2, "num_cpus": 2}) as eng:
        for shard_pairs in (5, 32):
            models = fit_pair_copula_models(_requests(), engine=eng, shard_pairs=shard_pairs)
            for got, want in zip(models, serial, strict=True):
                _same(got, want)
            assert ray.is_initialized()  # kept for the study
            address = ray.get_runtime_context().gcs_address
        _, info = eng.run(CopulaFits(shard_pairs=50), PairData.of(
            [prepare_fit(**r) for r in _requests()]))
        assert info["ray"]["gcs_address"] == address and info["ray"]["workers"] == 2
    assert not ray.is_initialized()
    # the whole study from the Python door: fit and trials on Ray
    frames = {"AP": {n: _frame(n, r) for n, m, r in PARTS if m == "AP"}}
    local = irsim.test_errors(frames, seed=3, **STUDY)
    remote = irsim.test_errors(frames, seed=3, engine="ray", workers=2, shard_items=1,
                               **STUDY)
    assert not ray.is_initialized()
    assert remote.manifest["run"]["engine"] == "ray"
    for name in local.tables:
        assert remote.tables[name].to_pydict() == local.tables[name].to_pydict(), name
