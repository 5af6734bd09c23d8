"""The import graph of :mod:`irsim` runs one way (docs/ARCHITECTURE.md): read from the code's
own ``import`` statements (those inside functions too), top-level rooms (a package or a
module of ``irsim/``) form no circle, no study imports another, and nothing below the
studies imports one. The package's face ``irsim/__init__.py`` (which reaches ``irsim.api``
lazily for ``irsim.<study>``) is no room."""

from __future__ import annotations

import ast
from pathlib import Path

import irsim

PACKAGE = Path(irsim.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the irsim modules it imports (``from a import b`` names ``a.b`` when it is a
    module, else ``a``)."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges[m] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    if full in mods:
                        edges[m].add(full)
                    elif base in mods:
                        edges[m].add(base)
    return edges


def _room(module: str) -> str:
    """``irsim.stats.ttest`` -> ``stats``; ``irsim.tables`` -> ``tables``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_rooms_form_no_circle():
    edges = _edges(_modules())
    rooms: dict[str, set[str]] = {}
    for m, targets in edges.items():
        if _room(m):
            rooms.setdefault(_room(m), set()).update(
                _room(t) for t in targets if _room(t) and _room(t) != _room(m))
    assert _circles(rooms) == []
    # the check itself sees a circle (two rooms importing each other)
    assert _circles({**rooms, "tables": rooms["tables"] | {"experiments"}}) != []
    # and the rooms stand in the order of docs/ARCHITECTURE.md: none imports a room above it
    order = ["cli", "runner", "api", "experiments", "stats", "engine", "tables", "registry",
             "errors"]
    for i, low in enumerate(order):
        assert not rooms[low] & set(order[:i]), (low, rooms[low] & set(order[:i]))


def test_inside_a_package_only_its_face_closes_a_circle():
    """A package's ``__init__`` may import its submodules that import it back (a study's
    Config beside its kernel); no other circle exists."""
    for comp in _circles(_edges(_modules())):
        package = min(comp, key=len)
        assert all(m == package or m.startswith(package + ".") for m in comp), comp


def test_no_study_imports_another_and_nothing_below_imports_a_study():
    edges = _edges(_modules())
    studies = {m.split(".")[2] for m in edges if m.startswith("irsim.experiments.")}
    assert {"discpower", "test_errors", "assessors"} <= studies
    for m, targets in edges.items():
        for t in targets:
            if not t.startswith("irsim.experiments."):
                continue
            owner = t.split(".")[2]
            if m.startswith("irsim.experiments."):
                assert m.split(".")[2] == owner, f"{m} imports another study: {t}"
            else:
                assert _room(m) in {"api", "runner", "catalog", "cli", "docs"}, (m, t)
