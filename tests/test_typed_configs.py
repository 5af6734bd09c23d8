"""Every study parameter is typed: a closed set of values is a :class:`irsim.params.Choice`
(Hydra and OmegaConf refuse another value, with the closest ones named), a list of scalars is
``list[X]`` and takes one scalar as a list of one, in both doors, with the same tables and
the same run identity as before the types."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

import irsim
from irsim.conf.schema import IrsimConfig
from irsim.experiments import get, names
from irsim.params import Choice, promote, scalar_lists
from irsim.runner import compose_config, promote_overrides

#: The only fields left typed ``Any``, each with its reason.
UNTYPED = {
    ("effort", "pools"): "a list of {metric, depth} mappings, checked by the study",
    ("factorial", "replicate_qrels"): "a mapping of names to qrels files, or null: Hydra "
                                      "merges a dict into a typed dict key by key, which "
                                      "struct mode refuses, and cannot replace a null one",
}


def _configs():
    for name in names():
        config = get(name).config
        yield name, config
        for options in getattr(config, "GROUPS", {}).values():
            for option, cls in options.items():
                yield f"{name}/{option}", cls


@pytest.mark.parametrize("name,config", list(_configs()), ids=lambda v: str(v))
def test_no_study_parameter_is_untyped(name, config):
    """No field is ``Any`` (or a list of ``Any``) but the declared exceptions; no field
    spells its closed set of values in text instead of a Choice."""
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        text = str(hints[f.name])
        if (name.split("/")[0], f.name) in UNTYPED or f.name in getattr(config, "GROUPS", {}):
            continue  # a config group's field lists its options (test_errors' design)
        assert "Any" not in text, f"{name}.{f.name}: {text}"
        kind = f.metadata.get("kind") or ""
        assert not kind.startswith("{"), f"{name}.{f.name}: a Choice, not kind={kind!r}"


def test_the_top_level_metrics_is_a_typed_list():
    assert scalar_lists(IrsimConfig) == {"metrics"}
    assert list(compose_config(["metrics=AP"]).metrics) == ["AP"]


def test_choices_keep_every_value_as_before():
    """The Choices hold exactly the values the studies accepted before (the tuples derived
    from them are plain strings), and a member is its string for json, hashing and
    formatting: a run's fingerprint does not change."""
    from irsim.experiments.multiple_testing import NULL_MARGINS
    from irsim.experiments.topic_set_size import DESIGNS, DIFF_VARIANCES
    from irsim.metrics.multi import UNJUDGED_RULES
    from irsim.sampling.systems import DEFAULT_RULE, RULES
    from irsim.simulate.margins.tabulated import MARGIN_KINDS
    from irsim.simulate.pairs import DEPENDENCE
    from irsim.stats._validation import ALTERNATIVES, PVALUE_MODES, Alternative
    from irsim.stats.multiple import CORRECTIONS, Correction
    from irsim.stats.wilcoxon import WILCOXON_METHODS, ZERO_METHODS

    assert CORRECTIONS == ("none", "bonferroni", "holm", "bh", "by")
    assert PVALUE_MODES == ("count", "plus_one")
    assert ALTERNATIVES == ("two-sided", "less", "greater")
    assert WILCOXON_METHODS == ("auto", "exact", "approx", "r")
    assert ZERO_METHODS == ("wilcox", "pratt")
    assert MARGIN_KINDS == ("auto", "kernel", "empirical")
    assert DEPENDENCE == ("pearson", "kendall")
    assert RULES == ("quantile", "count") and DEFAULT_RULE == "quantile"
    assert NULL_MARGINS == ("own", "shared")
    assert DESIGNS == ("paired_t", "anova", "ci")
    assert DIFF_VARIANCES == ("residual", "pairs_median", "pairs_max")
    assert UNJUDGED_RULES == ("reference", "nonrelevant", "condensed")
    for values in (CORRECTIONS, PVALUE_MODES, ALTERNATIVES):
        assert all(type(v) is str for v in values)
    assert Alternative["two-sided"] == "two-sided"
    assert json.dumps([Correction.holm, {"c": Correction.by}]) == '["holm", {"c": "by"}]'
    assert hash(Correction.holm) == hash("holm") and f"{Correction.bh}" == "bh"
    assert repr(Correction.holm) == "'holm'"
    with pytest.raises(irsim.ConfigError, match=r"did you mean 'holm'"):
        Correction("hlm")


@pytest.mark.parametrize("name", ["discpower", "multiple_testing", "test_errors"])
def test_a_study_holding_choices_has_the_fingerprint_of_plain_strings(name):
    """The study made from a composed config holds Choice members; its fingerprint is
    byte for byte the json of the same values as plain strings (a run directory made before
    the types resumes)."""
    from omegaconf import OmegaConf
    from test_params import SMALL, _made

    composed = OmegaConf.to_object(compose_config([f"experiment={name}"]).experiment)
    small = {*SMALL.get(name, {}), "name"}
    study = _made(name, **{k: v for k, v in vars(composed).items() if k not in small})
    held = getattr(study, "config", None)
    assert isinstance((held if dataclasses.is_dataclass(held) else study).pvalue, Choice)

    def plain(value):
        if isinstance(value, Choice):
            return str.__str__(value)
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v) for v in value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    fingerprint = study.fingerprint()
    strings = {k: plain(v) for k, v in fingerprint.items()}
    assert not any(isinstance(v, Choice) for v in strings.values())
    assert json.dumps(fingerprint, sort_keys=True, default=str) == json.dumps(
        strings, sort_keys=True, default=str)


def test_promote_keeps_lists_and_non_list_fields():
    config = get("discpower").config
    assert promote(config, {"alpha": 0.05, "tests": "t", "B": 200, "fuzziness": [0.1]}) == {
        "alpha": [0.05], "tests": ["t"], "B": 200, "fuzziness": [0.1]}
    assert "correction" not in scalar_lists(config)
    assert {"corrections", "tests", "alpha"} <= scalar_lists(get("multiple_testing").config)


def test_overrides_are_promoted_per_experiment_and_in_sweeps():
    assert promote_overrides(["experiment=swap", "experiment.confidence=0.9",
                              "experiment.trials=5"]) == [
        "experiment=swap", "experiment.confidence=[0.9]", "experiment.trials=5"]
    # corpus_ci's alpha is one float, discpower's a list
    assert promote_overrides(["experiment=corpus_ci", "experiment.alpha=0.1"])[1] == \
        "experiment.alpha=0.1"
    assert promote_overrides(["-m", "experiment.alpha=0.01,0.05", "seed=range(2)"]) == [
        "-m", "experiment.alpha=[0.01],[0.05]", "seed=range(2)"]
    assert promote_overrides(["-m", "experiment=test_errors",
                              "experiment.alternatives=less,two-sided"])[2] == \
        "experiment.alternatives=[less],[two-sided]"
    # a sweep over experiments: promoted only where every one takes a list
    assert promote_overrides(["-m", "experiment=discpower,corpus_ci",
                              "experiment.alpha=0.05"])[2] == "experiment.alpha=0.05"
    assert promote_overrides(["-m", "experiment=discpower,coverage",
                              "experiment.alpha=0.05"])[2] == "experiment.alpha=[0.05]"
    # left for Hydra: deletions, interpolations, shuffled sweeps, keys it does not know
    for arg in ("~experiment.alpha", "experiment.alpha=${oc.env:A}",
                "experiment.alpha=shuffle(0.1,0.2)", "+experiment.nope=1",
                "experiment.alpha=null"):
        assert promote_overrides([arg]) == [arg]


def test_the_cli_and_python_take_a_scalar_for_a_list_with_the_same_tables(tmp_path):
    """``experiment.alpha=0.05 experiment.tests=t`` on the command line, ``alpha=0.05,
    tests="t"`` and ``alpha=[0.05], tests=["t"]`` in Python: one table."""
    import pyarrow.parquet as pq

    from irsim.cli import main

    tables = []
    for args in (["experiment.alpha=0.05", "experiment.tests=t"],
                 ["experiment.alpha=[0.05]", "experiment.tests=[t]"]):
        run_dir = tmp_path / str(len(tables))
        main([*args, "experiment.B=200", "quiet=true", f"hydra.run.dir={run_dir}"])
        tables.append(pq.read_table(run_dir / "results" / "discpower.parquet"))
    assert tables[0].equals(tables[1]) and tables[0].num_rows == 4  # the default's 4 metrics
    assert set(tables[0].column("alpha").to_pylist()) == {0.05}
    assert set(tables[0].column("test").to_pylist()) == {"t"}
    from irsim.data.synthetic import synthetic_scores

    m = synthetic_scores(systems=5, topics=15, seed=1).matrix
    one = irsim.discpower(m, alpha=0.05, tests="t", B=200, seed=0)
    listed = irsim.discpower(m, alpha=[0.05], tests=["t"], B=200, seed=0)
    assert one.tables["discpower"].equals(listed.tables["discpower"])
    assert one.tables["discpower"].num_rows == 1


def test_a_value_outside_a_choice_names_the_closest_in_both_doors(tmp_path, capsys):
    from irsim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["experiment=multiple_testing", "experiment.corrections=[holm,bonf]",
              "quiet=true", f"hydra.run.dir={tmp_path / 'run'}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["irsim: error: config: unknown value of experiment.corrections[1] 'bonf' "
                   "(did you mean 'bonferroni', 'none'?); valid: bh, bonferroni, by, holm, "
                   "none"]
    assert not (tmp_path / "run").exists()
    from irsim.data.synthetic import synthetic_scores

    m = synthetic_scores(systems=5, topics=15, seed=1).matrix
    with pytest.raises(irsim.ConfigError, match=r"^unknown value of wilcoxon_method 'exakt' "
                       r"\(did you mean 'exact'\?\); valid: approx, auto, exact, r$"):
        irsim.discpower(m, wilcoxon_method="exakt")


@pytest.mark.slow
def test_a_sweep_over_a_list_field_with_scalars_collects_by_the_scalars(tmp_path):
    """``-m experiment.alpha=0.01,0.05``: two jobs, each with a list of one level; ``irsim
    collect`` labels them 0.01 and 0.05, as typed."""
    import pyarrow.dataset as ds

    from irsim.cli import main
    from irsim.collect import collect

    sweep = tmp_path / "sweep"
    main(["-m", "experiment.alpha=0.01,0.05", "experiment.tests=t", "experiment.B=200",
          "metrics=AP", "quiet=true", f"hydra.sweep.dir={sweep}"])
    out = collect(sweep)
    table = ds.dataset(out["discpower"], partitioning="hive").to_table().to_pandas()
    labels = table["experiment.alpha"].astype(str)
    assert sorted(zip(labels, table["alpha"], strict=True)) == [("0.01", 0.01), ("0.05", 0.05)]
    assert set(table["metric"]) == {"AP"} and set(table["test"]) == {"t"}


@pytest.mark.parametrize("name,config", list(_configs()), ids=lambda v: str(v))
def test_a_config_built_directly_holds_what_hydra_builds(name, config):
    """``Config(...)`` in Python types its values as Hydra does (``irsim.params.Options``):
    the defaults are already typed, a scalar for a list field is a list of one, a string for
    a Choice its member, equal to what OmegaConf builds from the same values."""
    from omegaconf import OmegaConf

    from irsim.params import Options

    assert issubclass(config, Options), name
    default = config()
    hints = typing.get_type_hints(config)
    fields = [f for f in dataclasses.fields(config) if f.name not in
              getattr(config, "GROUPS", {})]
    lists = scalar_lists(config)
    for f in fields:
        value = getattr(default, f.name)
        if f.name in lists:
            assert value is None or isinstance(value, list), (name, f.name)
        if isinstance(hints[f.name], type) and issubclass(hints[f.name], Choice):
            assert isinstance(value, hints[f.name]), (name, f.name)
    # one scalar per list field and the plain string of every Choice
    given = {}
    for f in fields:
        value = getattr(default, f.name)
        if f.name in lists and value:
            given[f.name] = str(value[0]) if isinstance(value[0], Choice) else value[0]
        elif isinstance(value, Choice):
            given[f.name] = str(value)
    direct = config(**given)
    composed = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(config),
                                                   promote(config, given)))
    for f in fields:
        a, b = getattr(direct, f.name), getattr(composed, f.name)
        assert a == b and type(a) is type(b), (name, f.name, a, b)
        if isinstance(a, list):
            assert [type(x) for x in a] == [type(x) for x in b], (name, f.name)
