"""test_errors' designs are a config group (issue 26): ``experiment/design=shift`` and
``experiment/design=urbano2019``, each with only its own fields.

- Both doors give the same tables for either design (the Python door's ``design=`` object
  against the command line's group syntax, bit for bit), and these tables equal those the
  design's study object gives when built by hand (:class:`TestErrors` / :class:`UrbanoStudy`
  on data prepared as before the group existed): the group moved the parameters, not the
  numbers.
- A key of the other design is refused by Hydra/OmegaConf (an unknown key): one line, exit 2
  on the command line; a ConfigError naming the design object in Python.
- The spelling before the group (``experiment.design=urbano2019``) is one line, exit 2, that
  names ``experiment/design=urbano2019``.
"""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from conftest import SHARED_DATA, urbano_csv
from golden.record import tables_of
from test_golden import assert_bit_identical

import irsim
from irsim.errors import ConfigError
from irsim.experiments.test_errors import (
    DESIGNS,
    Config,
    Shift,
    TestErrors,
    TrialTests,
    Urbano2019,
    UrbanoStudy,
    make,
)

URBANO = SHARED_DATA / "urbano"


def _same(api: dict, cli: dict) -> None:
    assert sorted(api) == sorted(cli)
    for name in cli:
        assert_bit_identical(api[name], cli[name], name)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, timeout=300)


# ------------------------------------------------------------------ the group and its doors
def test_each_design_holds_only_its_own_fields():
    import dataclasses

    own = {name: {f.name for f in dataclasses.fields(cls)} for name, cls in DESIGNS.items()}
    assert own == {"shift": {"name", "margin", "dependence"},
                   "urbano2019": {"name", "power_trials", "fit_cache", "fit_threads",
                                  "margin_families", "fit_cache_verify"}}
    shared = {f.name for f in dataclasses.fields(Config)}
    assert not shared & (own["shift"] | own["urbano2019"]) - {"name"}
    assert Config().design == Shift() and Config(design="urbano2019").design == Urbano2019()
    assert [DESIGNS[n].POOLS for n in DESIGNS] == [False, True]


def test_the_composed_config_has_the_chosen_design():
    from omegaconf import OmegaConf

    from irsim.runner import compose_config

    def design(*overrides: str):
        cfg = compose_config(["experiment=test_errors", *overrides])
        return OmegaConf.to_object(cfg.experiment).design

    assert design() == Shift()
    assert design("experiment.design.margin=kernel") == Shift(margin="kernel")
    assert design("experiment/design=urbano2019", "experiment.design.power_trials=7") == \
        Urbano2019(power_trials=7)
    preset = OmegaConf.to_object(compose_config(["experiment=urbano2019"]).experiment)
    assert preset.design == Urbano2019(power_trials=1000, fit_threads=2,
                                       margin_families=["truncnorm", "beta", "kernel", "bks"])
    assert (preset.drop_bottom, preset.sign_threshold) == (0.1, 0.01)


@pytest.mark.slow
def test_shift_python_door_equals_cli_and_the_study_built_by_hand():
    from irsim.engine import run_study
    from irsim.simulate.pairs import fit_simulator, prepare

    path = URBANO / "web2012_ndcg20.csv"
    kw = dict(trials=250, B=100, sizes=[10], deltas=[0.0, 0.03], tests=["t", "sign"],
              alpha=[0.05])
    api = irsim.test_errors(pd.read_csv(path), metric="nDCG@20", design=Shift(margin="kernel"),
                            seed=4, **kw)
    assert api.manifest["config"]["experiment"]["design"] == {
        "name": "shift", "margin": "kernel", "dependence": "pearson"}
    cli = tables_of(["experiment=test_errors", "collection=matrix",
                     f"collection.path={path}", "collection.metric=nDCG@20",
                     "experiment.design.margin=kernel", "experiment.trials=250",
                     "experiment.B=100", "experiment.sizes=[10]",
                     "experiment.deltas=[0.0,0.03]", "experiment.tests=[t,sign]",
                     "experiment.alpha=[0.05]", "seed=4"])
    _same(api.tables, cli)
    matrix = irsim.api.as_score_matrix(pd.read_csv(path), "nDCG@20")
    # the oracle: the shift study and its data built by hand, as before the group existed
    sim = fit_simulator(matrix.metric("nDCG@20"), metric="nDCG@20", systems=matrix.systems,
                        margin="kernel", dependence="pearson", drop_duplicates=True,
                        drop_bottom=0.0)
    study = TestErrors.of(sizes=(10,), deltas=(0.0, 0.03), alpha=(0.05,), tests=("t", "sign"),
                          trials=250, B=100, seed=4)
    data = prepare([sim], tuple(study.config.deltas),
                   [matrix.select(metrics=["nDCG@20"], systems=sim.systems).values[0]])
    tables, _ = run_study(study, data)
    _same(tables, cli)
    # the design's margin reaches the tables: another margin, another generator and rates
    other = irsim.test_errors(pd.read_csv(path), metric="nDCG@20", seed=4,
                              design=Shift(margin="empirical"), **kw)
    assert other.tables["test_errors_fit"].column("margin").to_pylist() == ["empirical"]
    assert cli["test_errors_fit"].column("margin").to_pylist() == ["kernel"]


@pytest.mark.slow
def test_urbano2019_python_door_equals_cli_and_the_study_built_by_hand(tmp_path):
    from irsim.engine import run_study
    from irsim.experiments.test_errors.urbano2019 import urbano_data
    from irsim.kit.common import Shards

    a, b = urbano_csv(tmp_path, "adhoc5_p10", 8), urbano_csv(tmp_path, "adhoc6_p10", 10)
    design = Urbano2019(power_trials=300)
    kw = dict(trials=250, B=50, sizes=[10], deltas=[0.05], tests=["t", "sign"],
              alpha=[0.05], alternatives=["two-sided", "greater"], drop_bottom=0.1)
    # the command line names a collection by its file's stem without the metric (adhoc5)
    frames = {"P@10": {"adhoc5": pd.read_csv(a), "adhoc6": pd.read_csv(b)}}
    api = irsim.test_errors(frames, design=design, seed=3, **kw)
    cli = tables_of(["experiment=test_errors", "experiment/design=urbano2019",
                     "collection=matrix", f"collection.paths={{P@10: [{a}, {b}]}}",
                     "metrics=[P@10]", "experiment.design.power_trials=300",
                     "experiment.trials=250", "experiment.B=50", "experiment.sizes=[10]",
                     "experiment.deltas=[0.05]", "experiment.tests=[t,sign]",
                     "experiment.alpha=[0.05]", "experiment.alternatives=[two-sided,greater]",
                     "experiment.drop_bottom=0.1", "seed=3"])
    _same(api.tables, cli)
    assert cli["type_2"].column("trials").to_pylist() == [300] * 4  # power_trials reached it
    assert cli["type_1"].column("trials").to_pylist() == [250] * 4
    # the oracle: UrbanoStudy on the pooled data, built by hand
    config = Config(**kw, design=design)
    shared = dict(sizes=(10,), alpha=(0.05,), tests=("t", "sign"),
                  alternatives=("two-sided", "greater"), trials=250, B=50, seed=3,
                  shard_replicates=4000, shard_items=11)
    study = UrbanoStudy(TrialTests.of(**shared), 300, (0.05,))
    # its fingerprint: design=shift's study's shared fields with the design's own (what it
    # was when UrbanoStudy wrapped a TestErrors)
    assert study.fingerprint() == {**TestErrors.of(**shared, deltas=(0.0,)).fingerprint(),
                                   "design": "urbano2019", "power_trials": 300,
                                   "deltas": (0.05,)}
    # a TestErrors serves as its shared part too (the same tables)
    assert UrbanoStudy(TestErrors.of(**shared), 300, (0.05,)).fingerprint() == study.fingerprint()
    pooled = irsim.api.as_collection_set(frames)
    tables, _ = run_study(study, urbano_data(config, pooled, 3, study.deltas))
    _same(tables, cli)
    made, _ = make(config, pooled, seed=3, shards=Shards())
    # the same study: its Config also holds the data's fields (drop_bottom, the design)
    assert made.fingerprint() == study.fingerprint()
    assert ((made.tests.seed, made.tests.shard_items, made.tests.shard_replicates)
            == (study.tests.seed, study.tests.shard_items, study.tests.shard_replicates))


# ------------------------------------------------------------------------- refused keys
def test_a_key_of_the_other_design_is_refused_in_python():
    df = pd.read_csv(URBANO / "adhoc8_ap.csv").iloc[:, :6]
    with pytest.raises(ConfigError, match=r"^config: power_trials is a parameter of design "
                                          r"'urbano2019': pass design=Urbano2019\("):
        irsim.test_errors(df, metric="AP", power_trials=10)
    with pytest.raises(ConfigError, match=r"^config: margin is a parameter of design 'shift'"):
        irsim.test_errors(df, metric="AP", design="urbano2019", margin="kernel")
    with pytest.raises(ConfigError, match=r"unknown design 'urbano' \(did you mean "
                                          r"'urbano2019'\?\); valid: shift, urbano2019$"):
        irsim.test_errors(df, metric="AP", design="urbano")
    with pytest.raises(ConfigError, match=r"design must be one of shift, urbano2019 "
                                          r"or an object of Shift, Urbano2019, got int"):
        irsim.test_errors(df, metric="AP", design=3)
    with pytest.raises(TypeError, match="power_trials"):
        Shift(power_trials=3)  # a dataclass: the other design's field is no keyword of it
    with pytest.raises(ConfigError, match=r"unknown parameter of design 'urbano2019' 'margin' "
                                          r"\(did you mean 'margin_families'\?\); valid: "
                                          r"fit_cache, fit_cache_verify, fit_threads, "
                                          r"margin_families, power_trials$"):
        irsim.test_errors(df, metric="AP", design={"name": "urbano2019", "margin": "kernel"})


def test_the_manifest_design_builds_the_same_config():
    """The design as a manifest records it (``{"name": ..., keys}``) is accepted by the
    Python door and gives the same Config as the design object."""
    from irsim.api import _build_config

    for design in (Urbano2019(power_trials=5, fit_threads=2), Shift(dependence="kendall")):
        import dataclasses

        recorded = dataclasses.asdict(design)
        assert recorded["name"] == design.NAME
        assert _build_config("test_errors", {"design": recorded}) == \
            _build_config("test_errors", {"design": design}) == Config(design=design)


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (["experiment/design=urbano2019", "experiment.design.margin=kernel"],
     "config: unknown parameter of experiment/design=urbano2019 'experiment.design.margin'"),
    (["experiment.design.power_trials=10"],
     "config: unknown parameter of experiment/design=shift 'experiment.design.power_trials'"),
    (["experiment=urbano2019", "experiment/design=shift"], "config: "),
    (["experiment.design=urbano2019"],
     "config: experiment.design=urbano2019: design is a config group: select it with "
     "experiment/design=urbano2019 (its own parameters: experiment.design.<key>)"),
    (["experiment/design=urbano"],
     "config: unknown experiment/design 'urbano' (did you mean 'urbano2019'?); valid: shift, "
     "urbano2019"),
])
def test_cli_refuses_with_one_line_and_exit_2(args, message, tmp_path):
    base = [] if any(a.startswith("experiment=") for a in args) else ["experiment=test_errors"]
    done = _cli(*base, *args, f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"irsim: error: {message}"), done.stderr
    assert not (tmp_path / "run").exists()
