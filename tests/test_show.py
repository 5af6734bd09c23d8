"""``irsim show``: every parameter of an experiment or preset from its Config, strictness of
keys (unknown keys refused, never suggested with ``+``)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from irsim.api import config_parameters
from irsim.catalog import catalog, preset_overrides, shell_arg, show_text
from irsim.experiments import get, names
from irsim.params import ordered_fields
from irsim.runner import compose_config

KNOWN = names()


def irsim(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("name", KNOWN)
def test_every_config_field_is_documented(name):
    """Every Config field carries its help in its metadata (type and meaning): what show
    prints."""
    config = get(name).config
    fields = [f.name for f in ordered_fields(config) if f.name != "name"]
    every = config_parameters(config)
    params = [p for p in every if p.option is None]  # a config group's keys: its options'
    assert [p.name for p in params] == fields
    for p in every:
        if p.option is not None:  # documented by the option's own Config-like dataclass
            group, _, key = p.name.partition(".")
            f = next(f for f in dataclasses.fields(config.GROUPS[group][p.option])
                     if f.name == key)
            assert p.description == f"``{p.option}``: {f.metadata['help']}"
    for p in params:
        assert p.type and p.meaning, f"{name}.{p.name} is not documented"
        assert "\n" not in p.meaning and p.meaning.endswith((".", ")"))
        f = next(f for f in dataclasses.fields(config) if f.name == p.name)
        note = getattr(config, "NOTES", {}).get(p.name)  # a study's remark on a shared field
        assert p.description == (f"{f.metadata['help']} {note}" if note else f.metadata["help"])


@pytest.mark.parametrize("name", KNOWN)
def test_config_docstring_is_generated_from_the_metadata(name):
    """help(Config) and mkdocstrings read the generated numpy docstring: griffe's numpy
    parser (mkdocstrings' own) finds every field with the metadata's type and text."""
    griffe = pytest.importorskip("griffe")
    config = get(name).config
    sections = griffe.Docstring(config.__doc__, parser="numpy").parse()
    assert [s.kind.value for s in sections] == ["text", "parameters"]
    assert "Parameters\n---" not in sections[0].value  # the head is the study's own text
    parsed = {p.name: (p.annotation, " ".join(p.description.split()))
              for p in sections[1].value}
    # griffe reads "{a, b}" as "a, b" and ", optional" as a flag, not part of the type
    def kind(text):
        text = text.removesuffix(", optional")
        return text[1:-1] if text.startswith("{") and text.endswith("}") else text

    expected = {p.name: (kind(p.type), p.description) for p in config_parameters(config)
                if p.option is None}  # a config group's keys: in its options' docstrings
    assert {k: v for k, v in parsed.items() if k != "name"} == expected


@pytest.mark.parametrize("name", KNOWN)
@pytest.mark.slow
def test_show_experiment_lists_every_key_with_default(name):
    """Every parameter line pastes into a shell and composes back to the default."""
    import shlex

    from omegaconf import OmegaConf

    text = show_text(name)
    config = get(name).config()
    params = [ln for ln in text.splitlines() if ln.startswith("  ") and "  (" in ln]
    keys = [f.name for f in ordered_fields(config) if f.name != "name"]
    assert sorted(keys) == sorted(f.name for f in dataclasses.fields(config) if f.name != "name")
    listed = config_parameters(type(config))  # a config group: its choice, its options' keys
    assert [p.name for p in listed if p.option is None] == keys
    assert len(params) == len(listed)
    for line, p in zip(params, listed, strict=True):
        arg = shlex.split(line.split("  (")[0])
        assert len(arg) == 1 and arg[0].startswith(f"{p.key}="), line
        group, _, key = p.name.partition(".")
        chosen = [f"experiment/{group}={p.option}"] if p.option else []
        cfg = compose_config([f"experiment={name}", *chosen, arg[0]])
        got = OmegaConf.to_container(cfg.experiment, resolve=True)[group]
        if p.group:  # the option chosen: its name
            got, want = got["name"], p.default
        elif p.option:
            got, want = got[key], p.default
        else:
            want = getattr(config, p.name)
        assert got == (list(want) if isinstance(want, tuple) else want), line


def test_show_preset_lists_overrides_and_its_values():
    text = show_text("park2011")
    base, _, keys = preset_overrides("park2011")
    assert base == "coverage"
    assert "experiment=park2011: preset of experiment=coverage" in text
    for key, value in keys:
        assert f"  {shell_arg(key, value)}\n" in text
    # the parameter list shows the preset's values, composed as Hydra does
    cfg = compose_config(["experiment=park2011"])
    assert cfg.experiment.samples == 1000 and cfg.collection.topics == 249
    assert "  'experiment.sizes=[5,10,20]'  (int or list of int, each >= 2)" in text
    assert ("collection", "park2011") in keys  # its shape: conf/collection/park2011.yaml


@pytest.mark.parametrize("name", sorted(catalog()["presets"]))
def test_show_every_preset(name):
    base, _, keys = preset_overrides(name)
    assert base in KNOWN and keys
    assert show_text(name).startswith(f"experiment={name}: preset of experiment={base}")


@pytest.mark.slow
def test_show_cli_and_unknown_name():
    r = irsim("show", "swap")
    assert r.returncode == 0, r.stderr
    assert "experiment.trials=1000  (int, >= 1)" in r.stdout
    r = irsim("show", "sakai206")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean 'sakai2006'" in lines[0]
    r = irsim("show")
    assert r.returncode == 2 and "usage: irsim show" in r.stderr


@pytest.mark.parametrize("arg,needle", [
    ("experiment.BB=100", "'experiment.BB' (did you mean 'experiment.B'"),
    ("+experiment.BB=100", "'experiment.BB' (did you mean 'experiment.B'"),
    ("+foo=1", "unknown config key 'foo'"),
    ("+engine.foo=1", "'engine.foo'"),
    ("engine.wokers=2", "'engine.wokers'"),
    ("engine.blas_threads=two", "engine.blas_threads: Value 'two' of type 'str' could not be "
                                "converted to Integer"),
    ("+collection.systems=5", "unknown config key 'collection.systems'"),
])
@pytest.mark.slow
def test_unknown_keys_refused_without_plus_suggestion(tmp_path, arg, needle):
    out = tmp_path / "run"
    r = irsim(arg, "experiment.B=100", "quiet=true", f"hydra.run.dir={out}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("irsim: error: config: "), r.stderr
    assert needle in lines[0]
    assert "+" not in lines[0].replace(arg, "") and "experiment.name" not in lines[0]
    assert not out.exists() or not (out / "results").exists()


def test_unknown_key_in_a_sweep_refused(tmp_path):
    from irsim.errors import ConfigError
    from irsim.runner import run

    with pytest.raises(ConfigError, match="unknown config key 'foo'"):
        run(compose_config(["+foo=1", "experiment.B=100", "quiet=true"]), tmp_path / "a")
    with pytest.raises(ConfigError, match="'experiment.BB'"):
        run(compose_config(["+experiment.BB=1", "experiment.B=100"]), tmp_path / "b")
    assert not (tmp_path / "a" / "results").exists()


def test_engine_options_are_typed_configs():
    """engine=local|ray are the dataclasses of irsim.engine.config in Hydra's ConfigStore:
    the composed options, the Python door's defaults and the dataclass fields are one."""
    import dataclasses

    from irsim.api import engine_defaults
    from irsim.engine.config import ENGINES
    from irsim.errors import ConfigError

    for name, cls in ENGINES.items():
        cfg = compose_config([f"engine={name}"])
        assert dict(cfg.engine) == engine_defaults(name) == dataclasses.asdict(cls())
    assert engine_defaults("ray")["max_retries"] == 3
    assert compose_config(["engine=ray", "engine.workers=3"]).engine.workers == 3
    with pytest.raises(ConfigError, match="unknown engine 'dask'; valid: local, ray"):
        engine_defaults("dask")


def test_a_quick_variant_passes_the_data_dir_its_preset_needs(tmp_path):
    """The quick variant of a preset whose own usage line passes data_dir passes it too, and
    without the data the run says where it looked (both places), in one line."""
    from irsim.catalog import preset_time

    quick = preset_time("assessors_dl19").quick_command("assessors_dl19")
    assert quick.startswith("irsim experiment=assessors_dl19 data_dir=/path/to/data ")
    assert quick in show_text("assessors_dl19")
    plain = preset_time("cormack_lynam2006").quick_command("cormack_lynam2006")
    assert plain and "data_dir" not in plain  # synthetic data: nothing to point at
    r = irsim("experiment=assessors_dl19", f"data_dir={tmp_path}", "quiet=true",
              f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"irsim: error: dl19-assessors/runs: runs file not found: looked in the working "
        f"directory ({tmp_path / 'dl19-assessors/runs'}) and in the data directory "
        f"({tmp_path / 'dl19-assessors/runs'})")
