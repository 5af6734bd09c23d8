"""The documentation site (``docs/``, ``mkdocs.yml``): it builds with ``mkdocs build --strict``,
its generated blocks are what ``python -m irsim.docs docs`` writes now, every page is in the nav,
every study has its page, and the README stays a short front page that links to them. What
the pages say (examples, quoted numbers, cited files) is checked by ``tests/test_readme.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from irsim import docs
from irsim.experiments import names as study_names

KNOWN = study_names()
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return [p for v in node for p in _nav_pages(v)]


def _mkdocs() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


# --------------------------------------------------------------------------- the build
@pytest.mark.slow
def test_mkdocs_build_strict_has_no_warning(tmp_path):
    """The whole site, API pages included, builds with every warning an error (broken links
    and anchors, pages outside the nav, docstrings mkdocstrings cannot render). mkdocs and
    mkdocstrings come with the extras ``test`` and ``docs``."""
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-5000:]
    assert "WARNING" not in out, out[-5000:]
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    for name in ("discpower", "paired_t", "ScoreMatrix", "evaluate"):
        assert f'id="{name}"' in api or f"{name}</" in api, name


# ------------------------------------------------------------------- generated blocks
def test_generated_blocks_are_current():
    stale = docs.update(DOCS, check=True)
    assert not stale, (f"stale generated blocks in {', '.join(map(str, stale))}: run "
                       "`python -m irsim.docs docs` (from the repository root) and commit")


def test_the_generator_fills_blocks_and_refuses_unknown_ones(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# t\n<!-- gen:parameters coverage -->\nold\n<!-- /gen -->\n## next\n")
    assert docs.update(tmp_path, check=True) == [page]
    assert page.read_text().count("old") == 1  # --check leaves the page as it was
    assert docs.main(["--check", str(tmp_path)]) == 1
    assert docs.update(tmp_path) == [page] and docs.update(tmp_path) == []
    text = page.read_text()
    assert "| `experiment.samples=1000` | int, >= 1 | Topic samples per size. |" in text
    assert text.startswith("# t\n<!-- gen:parameters coverage -->\n")
    assert text.endswith("<!-- /gen -->\n## next\n")
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        docs.render("<!-- gen:tables nope -->\n<!-- /gen -->")
    with pytest.raises(ValueError, match="unknown generated block kind"):
        docs.render("<!-- gen:colours -->\n<!-- /gen -->")


def test_every_figure_and_table_is_on_the_site():
    from irsim import tables
    from irsim.report import figures

    tables_page = (DOCS / "reference" / "tables.md").read_text()
    assert tables.markdown() in tables_page
    studies_page = (DOCS / "studies" / "index.md").read_text()
    for study, names in figures().items():
        for name in names:
            assert f"`{name}`" in studies_page, (study, name)
    for spec in tables.registered().values():
        for study in spec.studies:
            if study != "evaluate":
                page = (DOCS / "studies" / f"{study}.md").read_text()
                assert f"### `{spec.name}`" in page, (study, spec.name)


# ------------------------------------------------------------------------ pages, nav
def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = _nav_pages(_mkdocs()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert _mkdocs()["docs_dir"] == "docs"


def test_every_study_has_a_page_with_its_generated_parts():
    nav = _nav_pages(_mkdocs()["nav"])
    for name in KNOWN:
        page = DOCS / "studies" / f"{name}.md"
        assert f"studies/{name}.md" in nav, name
        text = page.read_text()
        for kind in ("presets", "figures", "parameters", "tables"):
            assert f"<!-- gen:{kind} {name} -->" in text, (name, kind)
        assert "## Run it" in text and "```bash\nirsim " in text, name
        assert "## How to read it" in text, name
        assert f"(docs/studies/{name}.md)" in README.read_text(), name
        assert f"]({name}.md)" in (DOCS / "studies" / "index.md").read_text(), name


def test_the_determinism_page_summarises_the_rules():
    text = (DOCS / "guides" / "determinism.md").read_text()
    assert text.startswith("# Determinism\n")
    assert not re.search(r"TODO|TBD|placeholder|lorem", text, flags=re.I)
    for rule in ("seed", "shard", "bit-identical", "resume"):
        assert rule in text


def test_the_api_page_covers_every_public_name():
    import irsim

    text = (DOCS / "reference" / "api.md").read_text()
    for name in irsim.__all__:
        if name != "__version__":
            assert re.search(rf"(::: [\w.]+\.{name}$|### `{name}`)", text, flags=re.M), name


# ------------------------------------------------------------ presets' expected times
#: Over this (3 minutes), a preset's header must also give a quick variant (``# quick:``).
QUICK_OVER = 180.0


def _presets() -> list[str]:
    from irsim.catalog import catalog

    return list(catalog()["presets"])


@pytest.mark.parametrize("preset", _presets())
def test_every_preset_says_how_long_it_takes_and_how_to_run_it_quicker(preset):
    """Each preset's header gives its measured time on 2 cores; one over 3 minutes also (any
    may) a quick variant: the same command with smaller parameters, which composes, changes only
    keys the preset sets (or names a few ``metrics``), and only makes them smaller. Both are
    on its study's page and in ``irsim show``."""
    from omegaconf import OmegaConf

    from irsim.catalog import preset_overrides, preset_time, show_text
    from irsim.runner import compose_config

    expected = preset_time(preset)
    assert expected is not None, f"{preset}: no '# expected: about <N> <unit> ...' line"
    assert expected.seconds > 0 and "2 cores" in expected.text
    assert re.search(r"\((measured|extrapolated) 20\d\d-\d\d-\d\d", expected.text), preset
    assert expected.quick or expected.seconds <= QUICK_OVER, f"{preset}: no '# quick:' line"
    assert (not expected.quick) or _seconds(expected.quick_text) < expected.seconds
    base, _, overrides = preset_overrides(preset)
    page = (DOCS / "studies" / f"{base}.md").read_text()
    assert f"expected time: {docs._md(expected.text)}" in page
    show = show_text(preset)
    assert f"Expected time: {expected.text}" in show
    if expected.quick:
        assert f"`{expected.quick_command(preset)}`" in page
        assert f"Quick variant, {expected.quick_text}" in show
        assert show.count(expected.quick_command(preset)) == 1
        full = OmegaConf.to_container(compose_config([f"experiment={preset}"]), resolve=True)
        quick = OmegaConf.to_container(
            compose_config([f"experiment={preset}", *expected.quick]), resolve=True)
        sets = {k for k, _ in overrides}
        for override in expected.quick:
            key = override.split("=", 1)[0]
            b = _get(quick, key)
            if key == "metrics":  # fewer metrics than the collection's (null: all of them)
                assert _get(full, key) is None and isinstance(b, list) and b, (preset, b)
                continue
            assert key in sets, f"{preset}: the quick variant changes {key}, not a preset key"
            a = _get(full, key)
            assert a != b and _size(b) < _size(a), (preset, key, a, b)


def _seconds(about: str) -> float:
    from irsim.catalog import parse_preset_time

    return parse_preset_time(f"# expected: {about}\n").seconds


def _get(config: dict, key: str):
    for part in key.split("."):
        config = config[part]
    return config


def _size(value) -> float:
    """A parameter's size: a number itself, a list its length (fewer sizes or systems)."""
    return len(value) if isinstance(value, list) else float(value)


def test_a_malformed_time_line_is_refused():
    from irsim.catalog import parse_preset_time

    assert parse_preset_time("# @package _global_\n# about\nexperiment: {}\n") is None
    for text, match in (("# expected: 3 min\n", "must start 'about <N>"),
                        ("# expected: about 9 min\n# quick: about 1 min\n", "with key=value"),
                        ("# expected: about 9 min\n# quick: about 1 min with B\n",
                         "with key=value"),
                        ("# quick: about 1 min with experiment.B=2\n", "without"),
                        ("# expected: about 1 s\n# expected: about 2 s\n", "two")):
        with pytest.raises(ValueError, match=match):
            parse_preset_time(text, "p")
    t = parse_preset_time("# expected: about 1.5 h on 2 cores\n"
                          "# quick: about 2 min with 'experiment.sizes=[25, 50]' (on 2 cores)\n")
    assert (t.seconds, t.quick, t.quick_text, t.quick_note) == (
        5400.0, ("experiment.sizes=[25, 50]",), "about 2 min", "on 2 cores")
    assert t.quick_command("x") == "irsim experiment=x 'experiment.sizes=[25, 50]'"


# ---------------------------------------------------------------------------- README
def test_the_readme_is_a_short_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    # .ci/run greps for these two commands, verbatim
    assert "pip install . && irsim" in text
    assert "pip install '.[test]' && pytest" in text
    assert "pip install '.[docs]' && mkdocs serve" in text
    # no table schemas; its one generated block is the table of studies (the registry's)
    assert "| column | type | meaning |" not in text
    assert re.findall(r"<!-- gen:([\w-]+(?: [\w-]+)?) -->", text) == ["studies readme"]
    assert docs.render(text) == text


def test_readme_links_point_at_files_that_exist():
    for target in re.findall(r"\]\(((?:docs|tests|irsim)/[^)#]+)(?:#[^)]*)?\)",
                             README.read_text()):
        assert (ROOT / target).is_file(), target


def test_the_docs_tools_are_in_the_test_and_docs_extras():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for extra in ("docs", "test"):
        names = [re.split(r"[<>=!~ ]", r)[0] for r in extras[extra]]
        assert "mkdocs-material" in names and "mkdocstrings[python]" in names, extra
