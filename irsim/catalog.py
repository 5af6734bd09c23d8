"""``irsim list``: what this installation offers (experiments, presets, collections,
metrics, tests, CI methods, engines), read from the registries and the shipped configs."""

from __future__ import annotations

import importlib.resources as resources
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from irsim.errors import unknown_name

__all__ = ["catalog", "print_catalog", "SECTIONS", "PresetTime", "preset_time",
           "parse_preset_time"]

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
    """

    text: str
    seconds: float
    quick: tuple[str, ...] = ()
    quick_text: str = ""
    quick_note: str = ""

    def quick_command(self, preset: str) -> str:
        """The quick variant as a command line ('' without one), quoted for a POSIX shell.

        Examples
        --------
        >>> PresetTime("about 9 min", 540.0, ("experiment.alpha=[0.05]",), "about 1 min"
        ...            ).quick_command("p")
        "irsim experiment=p 'experiment.alpha=[0.05]'"
        """
        from irsim.runner import shell_arg

        if not self.quick:
            return ""
        return " ".join(["irsim", f"experiment={preset}",
                         *(shell_arg(*q.split("=", 1)) for q in self.quick)])


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
    for line in text.splitlines():
        if not line.startswith("#"):
            break  # the header ends at the first key
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
    return PresetTime(fields["expected"], seconds, quick, quick_text, note)


def catalog() -> dict[str, dict[str, str]]:
    """Every section as ``{name: one-line description}``.

    Examples
    --------
    >>> c = catalog()
    >>> "discpower" in c["experiments"] and "AP" in c["metrics"] and "bca" in c["ci_methods"]
    True
    """
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
    from irsim.experiments.discpower import TESTS as DISC_TESTS

    tests = {n: spec.description for n, spec in TESTS.items()}
    for n in DISC_TESTS:
        tests.setdefault(n, "paired bootstrap / unpaired bootstrap (Sakai 2006)")
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
        print("Recompute:      irsim --force ...   (a finished run directory is not rerun)")
        print("Sweep report:   irsim report <sweep dir>   (irsim collect <sweep dir> merges)")
        print("Per-topic:      irsim evaluate collection=trec collection.runs=... "
              "collection.qrels=...")
        print("Hydra help:     irsim --help   (config groups and keys)")
