"""``irsim list``: what this installation offers (experiments, presets, collections,
metrics, tests, CI methods, engines), read from the registries and the shipped configs."""

from __future__ import annotations

import importlib.resources as resources
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from irsim.errors import unknown_name

__all__ = ["catalog", "print_catalog", "SECTIONS", "PresetTime", "preset_time",
           "parse_preset_time", "override_value", "shell_arg", "preset_overrides", "show_text",
           "show_command"]

SECTIONS = ("experiments", "presets", "collections", "metrics", "tests", "ci_methods",
            "engines")


def _configs(group: str) -> dict[str, dict]:
    root = resources.files("irsim.conf") / group
    out = {}
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            text = entry.read_text(encoding="utf-8")
            data = yaml.safe_load(text) or {}
            comment = next((ln.lstrip("# ").strip() for ln in text.splitlines()
                            if ln.startswith("#") and "@package" not in ln), "")
            out[entry.name[:-5]] = {"data": data, "comment": comment}
    return out


#: ``about <N> <unit>`` at the start of a preset's ``# expected:`` or ``# quick:`` line.
_ABOUT = re.compile(r"about (\d+(?:\.\d+)?) (s|min|h)\b")
_UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class PresetTime:
    """How long a preset takes, as its YAML header says (measured, see below).

    A preset's header comment may hold two structured lines, read by :func:`preset_time`
    (Hydra and the experiment's key checks ignore comments)::

        # expected: about 12 min on 2 cores (measured 2026-11-26 ...)
        # quick: about 1 min with experiment.trials=1000 experiment.B=200 (measured ...)

    Attributes
    ----------
    text : str
        The ``expected:`` line as written (``about <N> <s|min|h> ...``).
    seconds : float
        Its ``<N> <unit>`` in seconds.
    quick : tuple of str
        Overrides of the quick variant (the same command with smaller parameters); empty
        when the preset has none.
    quick_text : str
        The quick variant's ``about <N> <unit>`` ('' without one).
    quick_note : str
        What closes the ``quick:`` line in parentheses (how it was measured), or ''.
    needs : tuple of str
        Overrides the preset's own first usage line (``#   irsim experiment=<name> ...``)
        passes that say where its data is (``data_dir=/path/to/data``): the quick variant
        needs them too.
    """

    text: str
    seconds: float
    quick: tuple[str, ...] = ()
    quick_text: str = ""
    quick_note: str = ""
    needs: tuple[str, ...] = ()

    def quick_command(self, preset: str) -> str:
        """The quick variant as a command line ('' without one), quoted for a POSIX shell.

        Examples
        --------
        >>> PresetTime("about 9 min", 540.0, ("experiment.alpha=[0.05]",), "about 1 min"
        ...            ).quick_command("p")
        "irsim experiment=p 'experiment.alpha=[0.05]'"
        >>> PresetTime("about 9 min", 540.0, ("experiment.B=9",), "about 1 min",
        ...            needs=("data_dir=/path/to/data",)).quick_command("p")
        'irsim experiment=p data_dir=/path/to/data experiment.B=9'
        """
        if not self.quick:
            return ""
        return " ".join(["irsim", f"experiment={preset}",
                         *(shell_arg(*q.split("=", 1)) for q in (*self.needs, *self.quick))])


def _about(line: str, name: str) -> tuple[str, float]:
    m = _ABOUT.match(line)
    if m is None:
        raise ValueError(f"preset {name}: a time line must start 'about <N> <s|min|h>', "
                         f"got {line!r}")
    return m.group(0), float(m.group(1)) * _UNIT[m.group(2)]


def preset_time(name: str) -> PresetTime | None:
    """The expected time of preset `name` from the ``# expected:`` and ``# quick:`` lines of
    its header (:class:`PresetTime`, :func:`parse_preset_time`); None when it has no
    ``expected:`` line.

    Examples
    --------
    >>> t = preset_time("sakai_topic_set_size")
    >>> t.text.startswith("about "), t.seconds < 60, t.quick
    (True, True, ())
    """
    text = (resources.files("irsim.conf") / "experiment" / f"{name}.yaml").read_text(
        encoding="utf-8")
    return parse_preset_time(text, name)


def parse_preset_time(text: str, name: str = "?") -> PresetTime | None:
    """The :class:`PresetTime` of a preset's YAML `text` (None without ``# expected:``); a
    malformed line is a ValueError naming preset `name`.

    Examples
    --------
    >>> t = parse_preset_time("# @package _global_\\n# About it\\n"
    ...                       "# expected: about 12 min on 2 cores (measured)\\n"
    ...                       "# quick: about 1 min with experiment.B=200 (measured)\\n"
    ...                       "experiment: {}\\n")
    >>> t.seconds, t.quick, t.quick_text, t.quick_note
    (720.0, ('experiment.B=200',), 'about 1 min', 'measured')
    >>> parse_preset_time("# expected: 12 minutes\\n", "p")
    Traceback (most recent call last):
    ...
    ValueError: preset p: a time line must start 'about <N> <s|min|h>', got '12 minutes'
    """
    fields: dict[str, str] = {}
    needs: tuple[str, ...] | None = None
    for line in text.splitlines():
        if not line.startswith("#"):
            break  # the header ends at the first key
        words = line.lstrip("# ").split()
        if needs is None and words[:2] == ["irsim", f"experiment={name}"]:
            needs = tuple(w for w in words[2:] if w.startswith("data_dir="))
        key, sep, value = line.lstrip("# ").partition(":")
        if sep and key in ("expected", "quick"):
            if key in fields:
                raise ValueError(f"preset {name}: two '# {key}:' lines")
            fields[key] = value.strip()
    if "expected" not in fields:
        if "quick" in fields:
            raise ValueError(f"preset {name}: a '# quick:' line without '# expected:'")
        return None
    _, seconds = _about(fields["expected"], name)
    quick: tuple[str, ...] = ()
    quick_text = note = ""
    if "quick" in fields:
        quick_text, _ = _about(fields["quick"], name)
        head, sep, rest = fields["quick"].partition(" with ")
        m = re.fullmatch(r"(.*?)\s*\(([^()]*)\)", rest)
        if m:
            rest, note = m.groups()
        quick = tuple(shlex.split(rest))
        if not sep or head != quick_text or not quick or not all("=" in q for q in quick):
            raise ValueError(f"preset {name}: write '# quick: about <N> <unit> with "
                             f"key=value ... [(note)]', got {fields['quick']!r}")
    return PresetTime(fields["expected"], seconds, quick, quick_text, note, needs or ())


def catalog() -> dict[str, dict[str, str]]:
    """Every section as ``{name: one-line description}``.

    Examples
    --------
    >>> c = catalog()
    >>> "discpower" in c["experiments"] and "AP" in c["metrics"] and "bca" in c["ci_methods"]
    True
    """
    from irsim.conf import kind_options
    from irsim.data.collection import readers
    from irsim.experiments import studies
    from irsim.metrics import available_measures
    from irsim.stats import CI_METHOD_SPECS, TESTS

    experiments = {s.name: s.description for s in studies()}
    presets = {}
    for name, entry in _configs("experiment").items():
        if name in experiments:
            continue
        presets[name] = entry["comment"] or "preset"
    collections = {}
    for name, entry in _configs("collection").items():
        data = entry["data"]
        if "kind" not in data and isinstance(data.get("collection"), dict):
            data = data["collection"]
        collections[name] = f"[{data.get('kind', '?')}] {data.get('description', '')}".strip()
    for kind in kind_options():  # a reader of another distribution, selected by its kind
        collections[kind] = f"[{kind}] {readers()[kind].description}".strip()
    tests = {n: spec.description for n, spec in TESTS.items()}
    return {
        "experiments": experiments,
        "presets": presets,
        "collections": collections,
        "metrics": dict(available_measures()),
        "tests": tests,
        "ci_methods": {n: spec.description for n, spec in CI_METHOD_SPECS.items()},
        "engines": {
            "local": "run every shard in this process",
            "ray": "Ray actors on a local instance or a cluster (engine.address=auto|ray://...)",
        },
    }


def print_catalog(args: Iterable[str] = ()) -> None:
    """Print the catalog (or the named sections) for ``irsim list [section ...]``."""
    cat = catalog()
    wanted = list(args) or list(SECTIONS)
    for section in wanted:
        if section not in cat:
            raise unknown_name("list section", section, SECTIONS)
    for section in wanted:
        print(f"{section}:")
        entries = cat[section]
        width = max((len(k) for k in entries), default=0)
        for name, desc in entries.items():
            print(f"  {name:<{width}}  {desc}")
        print()
    if not args:
        print("Run a study:    irsim experiment=<name> collection=<name> [key=value ...]")
        print("Run a preset:   irsim experiment=<preset>   (docs/studies/)")
        print("Parameters:     irsim show <experiment|preset>")
        from irsim.experiments import studies

        for s in studies():  # the studies that are also subcommands (registry: command=)
            if s.command:
                print(f"{s.name.capitalize() + ':':<16}irsim {s.name} <{s.command}> ... "
                      f"[key=value ...]   (irsim {s.name} --help)")
        print("Recompute:      irsim --force ...   (a finished run directory is not rerun)")
        print("Sweep report:   irsim report <sweep dir>   (irsim collect <sweep dir> merges)")
        print("Per-topic:      irsim evaluate collection=trec collection.runs=... "
              "collection.qrels=...")
        print("Hydra help:     irsim --help   (config groups and keys)")


# ---------------------------------------------------------------------------- irsim show
def override_value(value: Any) -> str:
    """A value as a command-line override writes it (``null``, ``true``, ``[a,b]``).

    Examples
    --------
    >>> override_value([0.05, 0.1]), override_value(None), override_value(True)
    ('[0.05,0.1]', 'null', 'true')
    >>> override_value(["AP(rel=2)", "P@10"])
    '["AP(rel=2)",P@10]'
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if isinstance(value, str) and any(ch in text for ch in "()[]{},=:'\" "):
        return '"' + text.replace('"', '\\"') + '"'
    return text


def shell_arg(key: str, value: str) -> str:
    """``key=value`` as it can be pasted into a POSIX shell: in single quotes when the value
    holds characters the shell would expand (lists, braces, quotes, spaces).

    Examples
    --------
    >>> shell_arg("experiment.B", "1000"), shell_arg("experiment.alpha", "[0.01,0.05]")
    ('experiment.B=1000', "'experiment.alpha=[0.01,0.05]'")
    """
    arg = f"{key}={value}"
    if not any(ch in value for ch in "[]{}()*?$'\" <>|&;~!`\\"):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


def _flatten(prefix: str, node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, dict) and node:
        out = []
        for key, value in node.items():
            out += _flatten(f"{prefix}.{key}" if prefix else str(key), value)
        return out
    return [(prefix, node)]


def preset_overrides(name: str) -> tuple[str, str, list[tuple[str, str]]]:
    """``(base experiment, one-line description, [(key, value)])`` of preset `name`: what
    ``experiment=<name>`` sets beyond its experiment's defaults, as command-line overrides.

    Examples
    --------
    >>> base, about, keys = preset_overrides("park2011")
    >>> base, keys[0], ("experiment.B", "1000") in keys
    ('coverage', ('collection', 'park2011'), True)
    """
    text = (resources.files("irsim.conf") / "experiment" / f"{name}.yaml").read_text(
        encoding="utf-8")
    about = next((ln.lstrip("# ").strip() for ln in text.splitlines()
                  if ln.startswith("#") and "@package" not in ln), "")
    data = yaml.safe_load(text) or {}
    base, keys = "", []
    for entry in data.pop("defaults", []) or []:
        if isinstance(entry, str) and entry.endswith("@experiment"):
            base = entry.partition("@")[0]
        elif isinstance(entry, dict):
            for key, value in entry.items():
                if str(key).startswith("override /"):
                    group, _, package = str(key).removeprefix("override /").partition("@")
                    if package and package != group.replace("/", "."):
                        group = f"{group}@{package}"  # a package of its own: keep it
                    keys.append((group, str(value)))
    keys += [(k, override_value(v)) for k, v in _flatten("", data)]
    return base, about, keys


def show_text(name: str) -> str:
    """What ``irsim show <name>`` prints: every parameter of an experiment (or of a preset's
    experiment, with the preset's values) with its default, type and meaning, from the
    experiment's ``Config``; for a preset also the overrides it applies.

    Examples
    --------
    >>> text = show_text("coverage")
    >>> print(text.splitlines()[0][:45])
    experiment=coverage: coverage of confidence i
    >>> text.splitlines()[9:11]
    ['  experiment.samples=1000  (int, >= 1)', '      Topic samples per size.']
    >>> show_text("covrage")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: unknown experiment or preset 'covrage' (did you ...
    """
    from omegaconf import OmegaConf

    from irsim.api import config_parameters
    from irsim.experiments import get
    from irsim.runner import compose_config

    cat = catalog()
    if name in cat["experiments"]:
        base, lines, overrides = name, [f"experiment={name}: {cat['experiments'][name]}"], []
        composed = None
    elif name in cat["presets"]:
        base, about, overrides = preset_overrides(name)
        lines = [f"experiment={name}: preset of experiment={base}: {about}", "",
                 f"The preset sets ({len(overrides)}; any of them can be overridden on the "
                 f"command line):"]
        lines += [f"  {shell_arg(k, v)}" for k, v in overrides]
        lines += _time_lines(name)
        composed = compose_config([f"experiment={name}"])
    else:
        raise unknown_name("experiment or preset", name,
                           [*cat["experiments"], *cat["presets"]])
    params = config_parameters(get(base).config)
    values = {} if composed is None else OmegaConf.to_container(composed.experiment,
                                                                 resolve=True)
    what = "default" if composed is None else f"value in {name}"
    lines += ["", f"Parameters ({len(params)}): experiment.<key>=<value> ({what}, type), "
                  f"meaning; an unknown key is an error"]
    for p in params:
        value: Any = p.default
        if composed is not None:
            value = values
            for part in p.name.split("."):  # a config group's key: design.power_trials
                value = value.get(part) if isinstance(value, dict) else None
            if p.group and isinstance(value, dict):  # the option chosen: its name
                value = value.get("name")
            chosen = values.get(p.name.partition(".")[0]) if p.option else None
            if p.option and isinstance(chosen, dict) and chosen.get("name") != p.option:
                continue  # a key of the option the preset does not choose
        lines += [f"  {shell_arg(p.key, override_value(value))}  ({p.type})",
                  f"      {_plain(p.meaning)}"]
    lines += ["", f"Python: help(irsim.{base}) documents the same parameters as keywords."]
    return "\n".join(lines)


def _time_lines(preset: str) -> list[str]:
    """The expected time of `preset` and its quick variant, for ``irsim show``."""
    expected = preset_time(preset)
    if expected is None:
        return []
    lines = ["", f"Expected time: {expected.text}"]
    if expected.quick:
        note = f" ({expected.quick_note})" if expected.quick_note else ""
        lines.append(f"Quick variant, {expected.quick_text}{note}: "
                     f"{expected.quick_command(preset)}")
    return lines


def _plain(text: str) -> str:
    """Docstring markup as console text: ``:role:`~x.y``` -> ``x.y``, no backquotes.

    Examples
    --------
    >>> _plain("Any of ``t`` (:data:`irsim.stats.TESTS`, :func:`~irsim.stats.t`).")
    'Any of t (irsim.stats.TESTS, irsim.stats.t).'
    """
    import re

    return re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text).replace("`", "")


def show_command(args: list[str]) -> None:
    """``irsim show <experiment|preset>``."""
    from irsim.errors import InputError

    if len(args) != 1 or args[0].startswith("-"):
        raise InputError("usage: irsim show <experiment|preset> (`irsim list experiments "
                         "presets` names them)")
    print(show_text(args[0]))
