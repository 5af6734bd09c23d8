"""``irsim list``: what this installation offers (experiments, presets, collections,
metrics, tests, CI methods, engines), read from the registries and the shipped configs."""

from __future__ import annotations

import importlib.resources as resources
from collections.abc import Iterable

import yaml

from irsim.errors import unknown_name

__all__ = ["catalog", "print_catalog", "SECTIONS"]

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
