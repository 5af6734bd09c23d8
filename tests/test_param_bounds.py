"""A field's bounds declared once on the field (``option(..., ge=, gt=, le=, lt=)``): checked
by the Config itself (:func:`irsim.params.normalise`) in both doors with the field's name,
each element of a list field, and shown in the generated Parameters documentation."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pytest

import irsim
from irsim.cli import main
from irsim.data.synthetic import synthetic_scores
from irsim.errors import ConfigError, python_parameters
from irsim.experiments import get, names
from irsim.params import Options, bound_text, check_bounds, document, option, parameters


@document
@dataclass
class Toy(Options):
    """Parameters of a toy."""

    B: int = option(100, "Resamples.", ge=1)
    alpha: list[float] = option([0.05], "Levels.", gt=0, lt=1)
    sizes: list[int] = option([5, 10], "Sizes.", ge=2)
    drop: float = option(0.0, "Share dropped.", ge=0, lt=1)
    top: int | None = option(None, "Systems kept.", ge=1)


@pytest.mark.parametrize("kwargs,message", [
    ({"B": 0}, "B must be an integer >= 1, got 0"),
    ({"B": 2.5}, "B must be an integer >= 1, got 2.5"),
    ({"B": True}, "B must be an integer >= 1, got True"),
    ({"alpha": [0.05, 1.0]}, "alpha must be inside (0, 1), got 1.0"),
    ({"alpha": 0.0}, "alpha must be inside (0, 1), got 0.0"),
    ({"alpha": ["x"]}, "alpha must be a number inside (0, 1), got 'x'"),
    ({"alpha": [math.nan]}, "alpha must be a number inside (0, 1), got nan"),
    ({"sizes": [5, 1]}, "sizes must be an integer >= 2, got 1"),
    ({"drop": 1.0}, "drop must be in [0, 1), got 1.0"),
    ({"drop": -0.1}, "drop must be in [0, 1), got -0.1"),
    ({"top": 0}, "top must be an integer >= 1, got 0"),
])
def test_a_bound_is_refused_with_the_fields_name(kwargs, message):
    with python_parameters(), pytest.raises(ConfigError) as err:
        Toy(**kwargs)
    assert str(err.value) == message
    with pytest.raises(ConfigError) as err:  # the command line's spelling of the name
        Toy(**kwargs)
    assert str(err.value) == f"config: experiment.{message}"


def test_values_within_the_bounds_are_held_as_annotated():
    t = Toy(B=20.0, alpha=0.5, sizes=[2, 3.0], drop=0, top=None)
    assert (t.B, t.alpha, t.sizes, t.drop, t.top) == (20, [0.5], [2, 3], 0.0, None)
    assert type(t.B) is int and type(t.sizes[1]) is int and type(t.drop) is float
    # the edges: ge and le include the bound, gt and lt exclude it
    assert check_bounds("x", 1, {"ge": 1, "le": 1}, True) == 1
    for bounds in ({"gt": 1}, {"lt": 1}):
        with pytest.raises(ConfigError):
            check_bounds("x", 1, bounds, True)


def test_bound_text_and_the_generated_docs():
    assert [bound_text(b) for b in ({"ge": 1}, {"gt": 0}, {"le": 5}, {"gt": 0, "lt": 1},
                                    {"ge": 0, "lt": 1}, {"gt": 0, "le": 1},
                                    {"ge": 0.5, "le": 2})] == [
        ">= 1", "> 0", "<= 5", "inside (0, 1)", "in [0, 1)", "in (0, 1]", "in [0.5, 2]"]
    kinds = {p.name: p.kind for p in parameters(Toy)}
    assert kinds["B"] == "int, >= 1"
    assert kinds["alpha"] == "float or list of float, each inside (0, 1)"
    assert "B : int, >= 1\n" in Toy.__doc__
    with pytest.raises(ValueError, match="at most one lower bound"):
        option(1, "x", ge=0, gt=0)


def test_every_bound_on_a_study_field_is_documented_and_its_default_within_it():
    """Each study's bounded fields: the docstring shows the bound, and the default passes
    (a Config with its defaults is built without error)."""
    seen = 0
    for name in names():
        config = get(name).config
        kinds = {p.name: p.kind for p in parameters(config)}
        for f in dataclasses.fields(config):
            bounds = f.metadata.get("bounds")
            if bounds:
                seen += 1
                assert bound_text(bounds) in kinds[f.name], (name, f.name)
                assert f"{f.name} : {kinds[f.name]}\n" in config.__doc__
        config()
    assert seen >= 20


def _matrix():
    return synthetic_scores(systems=4, topics=10, seed=1).matrix


@pytest.mark.parametrize("key,value,message", [
    ("B", 0, "B must be an integer >= 1, got 0"),
    ("ci_level", 1.5, "ci_level must be inside (0, 1), got 1.5"),
    ("alpha", 0.0, "alpha must be inside (0, 1), got 0.0"),
])
def test_python_door_names_the_keyword(key, value, message):
    with pytest.raises(ConfigError) as err:
        irsim.compare(_matrix(), **{key: value})
    assert str(err.value) == message


@pytest.mark.parametrize("args,message", [
    (["experiment=compare", "experiment.ci_level=1.5"],
     "experiment.ci_level must be inside (0, 1), got 1.5"),
    (["experiment=compare", "experiment.B=0"], "experiment.B must be an integer >= 1, got 0"),
    (["experiment=swap", "experiment.confidence=[0.95,1.0]"],
     "experiment.confidence must be inside (0, 1), got 1.0"),
])
def test_command_line_names_the_key_exit_2(tmp_path, capsys, args, message):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main([*args, "collection=synthetic_scores", "quiet=true", f"hydra.run.dir={run_dir}"])
    assert exc.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == [f"irsim: error: config: {message}"]
    assert not run_dir.exists()


@pytest.mark.parametrize("key,value,message", [
    ("alpha", 1.5, "alpha must be inside (0, 1), got 1.5"),
    ("test_B", 0, "test_B must be an integer >= 1, got 0"),
    ("simulate_trials", -1, "simulate_trials must be an integer >= 0, got -1"),
    ("simulate_prior", -0.5, "simulate_prior must be >= 0, got -0.5"),
    ("tau_target", 1.5, "tau_target must be in [-1, 1], got 1.5"),
    ("planning_probability", 1.0, "planning_probability must be inside (0, 1), got 1.0"),
    ("simulate_concentration", 0.0, "simulate_concentration must be > 0, got 0.0"),
])
def test_assessors_bounds_are_on_its_fields(key, value, message, capsys):
    """assessors declares its bounds on its fields like every study: one message, with the
    field's name, from the Python door (before any file is read) and the command line."""
    with python_parameters(), pytest.raises(ConfigError) as err:
        irsim.assessors(runs=["unread.run"], qrels={"a": "unread", "b": "unread"},
                        **{key: value})
    assert str(err.value) == message
    with pytest.raises(SystemExit) as done:
        main(["experiment=assessors", f"experiment.{key}={value}"])
    assert done.value.code == 2
    assert capsys.readouterr().err.strip() == f"irsim: error: config: experiment.{message}"
