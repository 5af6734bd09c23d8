"""Every ``irsim`` command the README and the documentation pages show, walked as a new user
would type it: it composes (presets, collections, engines and keys exist; values have their
types; Hydra accepts the quoting) and passes the checks a run makes before computing
anything, exactly as the CLI's own pre-check does. Files a command names in the shared data
exist. (Running every command to the end is the job of the quoted-number tests of
``tests/test_readme.py`` and of the presets' own tests; this walk catches a command that a
renamed key or preset would break.)
"""

from __future__ import annotations

import itertools
import re
import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import SHARED_DATA, has_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
FENCE = re.compile(r"^```(\w*)\s*$")
#: Commands of a guide's toy plugin study: not installed here (tests/test_adding_a_study.py
#: runs them with the plugin installed).
PLUGIN_STUDIES = ("bootwin",)


def _commands(page: Path) -> list[tuple[str, str]]:
    """``(where, command)`` for each ``irsim ...`` line of a fenced block of `page`, with
    continuation lines joined."""
    out, block, buf, start = [], None, "", 0
    for i, line in enumerate(page.read_text().splitlines(), 1):
        s = line.strip()
        if block is None:
            block = FENCE.match(s) and "open"
            continue
        if s.startswith("```"):
            block = None
            continue
        if buf:
            buf += " " + s.removesuffix("\\").strip()
        elif s.startswith(("irsim ", "$ irsim ", "python -m irsim ")) or s == "irsim":
            buf, start = s.removeprefix("$ ").removesuffix("\\").strip(), i
        else:
            continue
        if not s.endswith("\\"):
            out.append((f"{page.relative_to(ROOT).as_posix()}:{start}", buf))
            buf = ""
    return out


COMMANDS = [c for p in PAGES for c in _commands(p)]


def _args(command: str) -> list[str] | None:
    """The arguments after ``irsim``; None for a schematic line (``...``, ``<head ip>``)."""
    words = shlex.split(command, comments=True)
    words = words[3:] if words[:3] == ["python", "-m", "irsim"] else words[1:]
    if any(w == "..." or "<" in w for w in words):
        return None
    return words


def test_the_walk_finds_the_commands():
    """The extractor sees the pages' commands (a broken fence rule would silently find none)."""
    where = {w.split(":")[0] for w, _ in COMMANDS}
    assert len(COMMANDS) >= 50
    assert {"README.md", "docs/cli.md", "docs/studies/discpower.md",
            "docs/studies/test_errors.md"} <= where


def _jobs(args: list[str]) -> list[list[str]]:
    """A sweep's jobs (``-m key=a,b``: every combination); a single run as one job."""
    if "-m" not in args and "--multirun" not in args:
        return [args]
    args = [a for a in args if a not in ("-m", "--multirun")]
    choices = []
    for a in args:
        key, sep, value = a.partition("=")
        plain = sep and not key.startswith("hydra.") and "," in value and not any(
            c in value for c in "[]{}'\"")
        choices.append([f"{key}={v}" for v in value.split(",")] if plain else [a])
    return [list(job) for job in itertools.product(*choices)]


@pytest.mark.slow  # about 60 compositions of Hydra configs
@pytest.mark.parametrize("where,command", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_documented_command_composes(where, command, monkeypatch, tmp_path, capsys):
    from irsim import cli
    from irsim.errors import IrsimError
    from irsim.overrides import precheck

    args = _args(command)
    if args is None:
        pytest.skip("a schematic line (placeholders)")
    if any(f"experiment={s}" in args for s in PLUGIN_STUDIES):
        pytest.skip("the guide's plugin study (tests/test_adding_a_study.py runs it)")
    monkeypatch.chdir(tmp_path)  # relative paths are the user's: never ours
    if args and args[0] in ("collect", "report"):
        assert len(args) >= 2, command  # a directory the user's earlier command wrote
        return
    if args and args[0] in ("show", "list"):
        try:
            cli.main(args)
        except SystemExit as done:
            assert done.code in (0, None), capsys.readouterr().err
        return
    if args and cli._study_command(args[0]):
        args = cli.command_overrides(args[0], args[1:])
    elif args and args[0] == "evaluate":
        args = args[1:]
    shared = [a.split("=", 1)[1] for a in args if a.startswith("data_dir=")]
    if shared and shared[0] == "../shared/data":
        for a in args:  # files the command names inside the shared data exist
            for path in re.findall(r"\.\./shared/data/[\w./-]+", a):
                if has_data():
                    assert (SHARED_DATA / path.removeprefix("../shared/data/")).exists(), path
    for job in _jobs(args):
        try:
            precheck(job)
        except IrsimError as err:
            pytest.fail(f"{where}: {command!r} is refused: {err}")
