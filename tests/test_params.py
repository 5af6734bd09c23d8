"""A study's parameters declared once (:mod:`irsim.params`): help in field metadata, the
generated docstring, the Bayesian options shared by inheritance."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
from omegaconf import OmegaConf

from irsim.api import config_parameters, study_function
from irsim.engine.checkpoint import fingerprint_of
from irsim.errors import ConfigError
from irsim.experiments import get, names
from irsim.kit.common import BAYES_OPTIONS, BayesOptions, BayesRules
from irsim.params import document, option, ordered_fields, parameters
from irsim.runner import compose_config


def bayes_studies() -> list[str]:
    """Every registered study whose Config has a Bayesian option (a field of
    :class:`irsim.kit.common.BayesOptions`): it decides pairs the Bayesian way too."""
    shared = {f.name for f in dataclasses.fields(BayesOptions)}
    return [name for name in names()
            if shared & {f.name for f in dataclasses.fields(get(name).config)}]


BAYES_STUDIES = bayes_studies()


@document
@dataclass
class Toy:
    """Parameters of a toy."""

    name: str = option("toy", "``toy``.")
    sizes: Any = option([5, 10], "Topic-set sizes.", kind="int or list of int")
    B: int = option(100, "Resamples.")
    top: int | None = option(None, "Systems kept.")


def test_option_metadata_default_copies_and_kind():
    a, b = Toy(), Toy()
    assert a.sizes == [5, 10] and a.sizes is not b.sizes  # a fresh list per instance
    a.sizes.append(20)
    assert Toy().sizes == [5, 10]
    got = [(p.name, p.kind, p.help, p.default) for p in parameters(Toy)]
    assert got == [("name", "str", "``toy``.", "toy"),
                   ("sizes", "int or list of int", "Topic-set sizes.", [5, 10]),
                   ("B", "int", "Resamples.", 100),
                   ("top", "int, optional", "Systems kept.", None)]
    assert Toy.__doc__.splitlines()[:5] == ["Parameters of a toy.", "", "Parameters",
                                            "----------", "name : str"]
    assert "top : int, optional\n    Systems kept.\n" in Toy.__doc__
    document(Toy)  # idempotent: the section is replaced, not appended
    assert Toy.__doc__.count("Parameters\n----------") == 1


def test_long_help_is_wrapped_in_the_docstring_not_changed():
    text = " ".join(["word"] * 60)

    @document
    @dataclass
    class Long:
        x: int = option(1, text)

    body = Long.__doc__.split("----------\n", 1)[1].splitlines()
    assert body[0] == "x : int" and all(len(line) <= 96 for line in body)
    assert " ".join(line.strip() for line in body[1:]) == text


@pytest.mark.parametrize("name", BAYES_STUDIES)
def test_bayes_options_declared_once_and_listed_last(name):
    """The four studies that decide pairs inherit the Bayesian options; none re-declares
    one; they stay the last parameters (as before) with BayesOptions' text first."""
    config = get(name).config
    assert issubclass(config, BayesOptions)
    own = config.__dict__["__annotations__"]
    assert not set(own) & set(BAYES_OPTIONS) and "bayes" not in own
    order = [f.name for f in ordered_fields(config)]
    assert order[-5:] == ["bayes", *BAYES_OPTIONS]
    assert [p.name for p in config_parameters(config)][-5:] == order[-5:]
    shared = {p.name: p.help for p in parameters(BayesOptions)}
    for p in config_parameters(config)[-5:]:
        assert p.description.startswith(shared[p.name])
    assert dataclasses.asdict(config())["bayes_r"] == BAYES_OPTIONS["bayes_r"]
    # the Python function's signature and docstring follow the same order
    params = list(study_function(name).__signature__.parameters)
    assert params[1:len(order)] == order[1:]


@pytest.mark.parametrize("name", BAYES_STUDIES)
def test_bayes_options_through_hydra(name):
    """OmegaConf types the inherited fields and refuses what they refuse."""
    cfg = compose_config([f"experiment={name}", "experiment.bayes=[jzs_bf]",
                          "experiment.bayes_r=0.5"])
    assert cfg.experiment.bayes == ["jzs_bf"] and cfg.experiment.bayes_r == 0.5
    rules = BayesRules.of(OmegaConf.to_object(cfg.experiment))
    assert rules.tests == ("jzs_bf",) and rules.r == 0.5
    with pytest.raises(Exception, match="bayes_r"):
        compose_config([f"experiment={name}", "experiment.bayes_r=wide"])


def test_bayes_rules_check_the_inherited_options():
    # the field's bound refuses it in the Config, in each study's Config too (one check)
    with pytest.raises(ConfigError, match="bayes_prob must be inside \\(0, 1\\), got 1.5"):
        BayesOptions(bayes=["t_posterior"], bayes_prob=1.5)
    for name in BAYES_STUDIES:
        with pytest.raises(ConfigError, match="bayes_threshold must be >= 1, got 0.5"):
            get(name).config(bayes=["jzs_bf"], bayes_threshold=0.5)
    # BayesRules (built from a checked Config) checks the tests' names
    with pytest.raises(ConfigError, match="unknown Bayesian test in experiment.bayes 'jzs'"):
        BayesRules(("jzs",))
    assert BayesRules(("t_posterior",), prob=0.9).rule("t_posterior", 100) == \
        "90% HDI vs ROPE +-0.01"


@pytest.mark.parametrize("name", names())
def test_every_field_is_an_option(name):
    """Every field of every study carries help; the generated docstring and irsim show read
    the same text."""
    config = get(name).config
    for f in dataclasses.fields(config):
        assert f.metadata.get("help"), f"{name}.{f.name}"
    for p in config_parameters(config):
        if p.option is not None:  # a config group's option: its own class documents it
            group, _, key = p.name.partition(".")
            assert f"{key} : {p.type}\n" in config.GROUPS[group][p.option].__doc__
            continue
        assert f"{p.name} : {p.type}\n" in config.__doc__


# --------------------------------------------------------------------------- fingerprints
def _made(name: str, **params: Any):
    """The study object of experiment `name` made by its own ``make`` on small data."""
    from irsim.data.synthetic import synthetic_scores, synthetic_trec
    from irsim.experiments import make_study
    from irsim.kit.common import Shards
    from irsim.kit.loading import DocCollection

    entry = get(name)
    if entry.data == "matrix":
        data = synthetic_scores(systems=6, topics=30, metrics=("AP", "P@10"), seed=1).matrix
    elif entry.data == "docs":
        runs, qrels = synthetic_trec(runs=4, topics=6, docs_per_topic=60, depth=40, seed=2)
        data = DocCollection(runs, qrels, 40)
    else:
        from conftest import dl19_files

        from irsim.data.trec import read_qrels
        from irsim.experiments.assessors import AssessorInput, read_assessor_runs

        runs, qrels = dl19_files(("bm25base_p", "bm25tuned_rm3_p", "colbert_rankgpt4"),
                                 ("nist", "andrew-parry"))
        data = AssessorInput(read_assessor_runs(runs),
                             {n: read_qrels(p) for n, p in qrels.items()})
        params = {"metrics": ["AP"], **KIND_PARAMS.get(name, {}), **params}
    config = entry.config(**{**SMALL.get(name, {}), **params})
    study, _ = make_study(name, config, data, seed=3, shards=Shards())
    return study


#: Parameters that keep make quick on the small data (the defaults otherwise).
SMALL: dict[str, dict[str, Any]] = {
    "error_rates": {"trials": 20, "subset_sizes": [5], "target_sizes": [10], "test_B": 50,
                    "sd_samples": 20, "sd_sizes": [5]},
    "effort": {"trials": 5, "subset_sizes": [2], "pools": [{"metric": "AP", "depth": 10}]},
    "topic_set_size": {"check_trials": 0},
    "reliability": {"check_trials": 0, "max_topics": 60},
    "test_errors": {"trials": 250, "sizes": [10], "B": 100, "alpha": [0.05, 0.1]},
    "multiple_testing": {"trials": 250, "systems": [5], "sizes": [10], "B": 100},
    "assessors": {"simulate_trials": 0, "B": 50, "test_B": 50, "swap_trials": 10},
    "budget": {"trials": 10},
}
#: The qrels roles of the studies reading a set of qrels (DL19: nist and andrew-parry).
KIND_PARAMS: dict[str, dict[str, Any]] = {"assessors": {"reference": "nist"},
                                          "budget": {"gold": "nist", "proxy": [], "votes": True,
                                                     "metrics": ["AP", "P@10"]}}


@pytest.mark.parametrize("name", names())
def test_fingerprint_is_every_table_field(name):
    """A study's fingerprint holds every field declared ``tables=True`` (the Bayesian ones
    only with a Bayesian test), none declared ``tables=False`` or ``"data"``, each with the
    value the study holds; every field is classified (True, False or "data")."""
    config = get(name).config
    params = {p.name: p for p in parameters(config)}
    assert {p.tables for p in params.values()} <= {True, False, "data"}
    study = _made(name)
    got = study.fingerprint()
    fields = {f.name: f for f in dataclasses.fields(config)}
    table_fields = {n for n, p in params.items() if p.tables is True and n != "name"
                    and fields[n].metadata.get("only_with") is None}
    not_here = {"design"} if name == "test_errors" else set()
    assert table_fields - not_here <= set(got), sorted(table_fields - not_here - set(got))
    others = {n for n, p in params.items() if p.tables is not True}
    assert not others & set(got)
    assert not {"bayes", *BAYES_OPTIONS} & set(got)  # no Bayesian test: as before issue 28
    assert got.get("seed") == 3 or not hasattr(study, "seed")
    fingerprint_of({"study": name, **got}, "digest")  # the run's identity takes it as it is


def example_changes(name: str) -> list[tuple[str, Any]]:
    """The table fields (``tables=True``) the study's example sets (its registration's
    ``example.keywords``) to a value other than the default: another valid value each."""
    config = get(name).config
    base = {**dataclasses.asdict(config()), **SMALL.get(name, {})}  # what _made uses
    params = {p.name: p for p in parameters(config)}
    return [(k, v) for k, v in get(name).example.keywords.items()
            if k in params and params[k].tables is True and v != base.get(k)]


#: More table-affecting fields per study, and another valid value of each (beside those
#: of :func:`example_changes`).
CHANGES = {
    "discpower": [("B", 500), ("alpha", [0.05]), ("wilcoxon_method", "exact"),
                  ("sign_threshold", 0.01), ("bayes", ["jzs_bf"])],
    "compare": [("tests", ["t"]), ("ci_level", 0.9), ("baseline", "sys1")],
    "swap": [("trials", 50), ("confidence", [0.9]), ("subset_sizes", [5])],
    "coverage": [("samples", 10), ("alpha", [0.1])],
    "topic_set_size": [("min_diff", [0.05]), ("m", [5])],
    "reliability": [("targets", [0.9]), ("drop_bottom", 0.25)],
    "test_errors": [("deltas", [0.02]), ("alpha", [0.01]), ("bayes", ["t_posterior"])],
    "multiple_testing": [("share_null", [1.0]), ("alpha", [0.01])],
    "corpus_ci": [("B", 200), ("alpha", 0.1)],
    "error_rates": [("min_comparisons", 3), ("subset_sizes", [6])],
    "effort": [("trials", 6)],
    "assessors": [("top_k", 5), ("planning_probability", 0.9)],
    "budget": [("alpha", 0.01), ("pilot", 0.3), ("trials", 20), ("agreement_target", 0.8),
               ("corrections", ["bh"]), ("coverage_tolerance", 0.02)],
}


@pytest.mark.parametrize("name", names())
def test_changing_a_table_field_changes_the_fingerprint(name, tmp_path):
    """Another value of a table-affecting field gives another fingerprint (its own entry, or
    the derived values it builds); a ``tables=False`` field (test_errors' fitting cache and
    threads) leaves it as it is."""
    base = _made(name).fingerprint()
    changes = [*example_changes(name), *CHANGES.get(name, [])]
    assert changes, f"{name}: no table field to change"
    for key, value in changes:
        assert _made(name, **{key: value}).fingerprint() != base, (name, key)
    if name == "test_errors":  # the urbano2019 design's own fields: one changes it, two not
        from irsim.experiments.test_errors import Urbano2019

        urbano = _made(name, design=Urbano2019()).fingerprint()
        assert urbano != base and urbano["design"] == "urbano2019"
        assert _made(name, design=Urbano2019(power_trials=500)).fingerprint() != urbano
        assert _made(name, design=Urbano2019(fit_threads=2, fit_cache=str(tmp_path))
                     ).fingerprint() == urbano
