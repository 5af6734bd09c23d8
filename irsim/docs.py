"""The generated parts of the documentation site (``docs/``, built by ``mkdocs build``).

A page marks a generated block with two lines, ``<!-- gen:<kind> [<name>] -->`` and
``<!-- /gen -->``; :func:`render` replaces the text between them with what the code says
now, so parameter lists, table schemas, figure names, presets and the API index are never
copied by hand. ``python -m irsim.docs docs`` rewrites every page under ``docs/``;
``python -m irsim.docs --check docs`` (and ``tests/test_docs.py``) fails when a page is
stale. Kinds:

- ``parameters <experiment>``: the experiment's parameters with default, type and
  description, from its ``Config`` (:func:`irsim.api.config_parameters`, as ``irsim show``);
- ``presets <experiment>``: its presets with what each sets (the shipped
  ``conf/experiment/<preset>.yaml``, as ``irsim show <preset>``);
- ``figures <experiment>``: the figures its report draws (the report module's ``FIGURES``);
  ``figures``: every study's, as a table (:func:`irsim.report.figures_markdown`);
- ``tables <experiment>``: the schemas of the tables it writes; ``tables``: every table
  (:func:`irsim.tables.markdown`);
- ``api``: the mkdocstrings directives of every public name of :mod:`irsim`
  (``irsim.__all__``);
- ``metrics``, ``tests``, ``collections``: the registered metrics
  (:func:`irsim.metrics.measures.register`), significance tests
  (:func:`irsim.stats.registry.register_test`) and kinds of collection
  (:func:`irsim.data.readers.register_reader`), one row each (:func:`registry_markdown`);
- ``notebook <name>``: the notebook ``<name>.ipynb`` beside the page as Markdown, its code
  cells as code blocks (:func:`notebook_markdown`; the notebook is committed without outputs).

The site's navigation (``mkdocs.yml`` beside the ``docs`` directory) has one generated
block too, between the comment lines ``# gen:nav studies`` and ``# /gen``: a line
``- <title>: studies/<name>.md`` per registered study, in listing order (:func:`nav_yaml`;
the title is its registration's ``title=``), so a study's page joins the site with no line
written by hand.

Examples
--------
>>> page = "# x\\n<!-- gen:figures effort -->\\nold\\n<!-- /gen -->\\nrest\\n"
>>> print(render(page))
# x
<!-- gen:figures effort -->
`effort.png`
<!-- /gen -->
rest
<BLANKLINE>
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["BLOCK", "NAV", "render", "block", "parameters_markdown", "presets_markdown",
           "api_markdown", "notebook_markdown", "nav_yaml", "render_nav", "update", "main"]

#: A generated block: its opening marker (kind, optional name), content, closing marker.
BLOCK = re.compile(r"(<!-- gen:(?P<kind>[\w-]+)(?: (?P<name>[\w-]+))? -->\n)(?P<body>.*?)"
                   r"(<!-- /gen -->)", re.S)

#: The generated block of ``mkdocs.yml``: the studies' entries of the navigation.
NAV = re.compile(r"(?P<open>^(?P<indent>[ ]*)# gen:nav studies[^\n]*\n)(?P<body>.*?)"
                 r"(?P<close>^[ ]*# /gen$)", re.S | re.M)


def _md(text: str) -> str:
    """Docstring markup (reStructuredText roles, double backquotes) as Markdown for one table
    cell: a pipe is escaped, and a code span holding one becomes HTML (Markdown tables would
    show the escape inside code).

    Examples
    --------
    >>> _md("Any of ``t`` (:data:`~irsim.stats.TESTS`) | x")
    'Any of `t` (`irsim.stats.TESTS`) \\\\| x'
    >>> _md("ties: ``|x - y| <= t``")
    'ties: <code>&#124;x - y&#124; &lt;= t</code>'
    """
    import html

    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")
    parts = re.split(r"(`[^`]*`)", text)
    for i, part in enumerate(parts):
        if i % 2 and "|" in part:
            parts[i] = f"<code>{html.escape(part[1:-1]).replace('|', '&#124;')}</code>"
        elif not i % 2:
            parts[i] = part.replace("|", "\\|")
    return "".join(parts)


def _experiments() -> tuple[str, ...]:
    from irsim.experiments import names

    return tuple(names())


def _experiment(name: str | None) -> str:
    if name not in _experiments():
        raise ValueError(f"unknown experiment {name!r} in a generated block (one of "
                         f"{', '.join(_experiments())})")
    return name


def parameters_markdown(experiment: str) -> str:
    """The parameters of `experiment` as a table: the key as it is typed on the command line
    with its default, the type, and the description from the ``Config`` fields' help
    (:func:`irsim.params.option`).

    Examples
    --------
    >>> print(parameters_markdown("coverage").splitlines()[7])
    | `experiment.samples=1000` | int, >= 1 | Topic samples per size. |
    """
    from irsim.api import config_parameters
    from irsim.catalog import override_value
    from irsim.experiments import get

    params = config_parameters(get(experiment).config)
    lines = [f"`irsim show {experiment}` prints the same list; from Python each key is a "
             f"keyword argument of `irsim.{experiment}` (`help(irsim.{experiment})`).", "",
             "| key and default | type | meaning |", "|---|---|---|"]
    for p in params:
        value = override_value(p.default).replace("|", "\\|")
        lines.append(f"| `{p.key}={value}` | {_md(p.type)} | "
                     f"{_md(p.description or p.meaning)} |")
    return "\n".join(lines) + "\n"


def engine_markdown(engine: str) -> str:
    """The options of `engine` (:mod:`irsim.engine.config`) as a table, from the field
    metadata of its typed config.

    Examples
    --------
    >>> print(engine_markdown("local").splitlines()[2])  # doctest: +NORMALIZE_WHITESPACE
    | `engine.blas_threads=1` | int \\| None | BLAS threads of the kernels: 1 never
    oversubscribes the cores; null = BLAS's own threading (one thread per core) |
    """
    import dataclasses

    from irsim.catalog import override_value
    from irsim.engine.config import ENGINES

    lines = ["| key and default | type | meaning |", "|---|---|---|"]
    for f in dataclasses.fields(ENGINES[engine]):
        if f.name == "name":
            continue
        value = override_value(f.default).replace("|", "\\|")
        kind = str(f.type).replace("|", "\\|")
        lines.append(f"| `engine.{f.name}={value}` | {kind} | {_md(f.metadata['help'])} |")
    return "\n".join(lines) + "\n"


def presets_markdown(experiment: str) -> str:
    """The presets of `experiment`, each with its one-line description, the overrides it
    applies (what ``irsim show <preset>`` lists first) and its expected time on 2 cores with,
    for a long one, the quick variant's command (the header's ``# expected:`` and
    ``# quick:`` lines, :func:`irsim.catalog.preset_time`).

    Examples
    --------
    >>> print(presets_markdown("coverage").splitlines()[0][:44])
    - `experiment=park2011`: Park (ASEARC 2011):
    """
    from irsim.catalog import catalog, preset_overrides, preset_time, shell_arg

    lines = []
    for preset in catalog()["presets"]:
        base, about, overrides = preset_overrides(preset)
        if base != experiment:
            continue
        sets = " ".join(f"`{shell_arg(k, v)}`" for k, v in overrides)
        lines.append(f"- `experiment={preset}`: {_md(about)}  \n  sets {sets}")
        expected = preset_time(preset)
        if expected is not None:
            lines[-1] += f"  \n  expected time: {_md(expected.text)}"
            if expected.quick:
                note = f" ({_md(expected.quick_note)})" if expected.quick_note else ""
                lines[-1] += (f"  \n  quick variant, {expected.quick_text}{note}: "
                              f"`{expected.quick_command(preset)}`")
    return "\n".join(lines or ["(no preset)"]) + "\n"


def _figures(experiment: str | None) -> str:
    from irsim.report import figures, figures_markdown

    if experiment is None:
        return figures_markdown()
    names = figures()[_experiment(experiment)]
    return (", ".join(f"`{n}`" for n in names) or "(none)") + "\n"


def _tables(experiment: str | None) -> str:
    from irsim.tables import markdown

    return markdown(None if experiment is None else _experiment(experiment))


def api_markdown() -> str:
    """The API reference: one mkdocstrings directive per public name of :mod:`irsim`
    (``irsim.__all__``), grouped as studies, data and results, tests and CI methods; each
    named where it is defined (the study functions are made from their ``Config`` at first
    use, so they are inspected, not read from source).

    Examples
    --------
    >>> print(api_markdown().splitlines()[2])
    ::: irsim.discpower
    """
    import irsim

    def directive(path: str, *options: str) -> list[str]:
        return [f"::: {path}", *(f"    {o}" for o in options), ""]

    lines = ["## Studies", ""]
    for name in _experiments():
        lines += directive(f"irsim.{name}", "options:", "  force_inspection: true")
    lines += ["## Data, results and errors", ""]
    for name in irsim._OTHER:
        lines += directive(f"{getattr(irsim, name).__module__}.{name}")
    lines += ["## Significance tests and CI methods", ""]
    for name in irsim._STATS:
        obj = getattr(irsim, name)
        if callable(obj):
            lines += directive(f"{obj.__module__}.{name}")
    lines += _registries()
    return "\n".join(lines)


def _registries() -> list[str]:
    """The tests and CI methods by config name (``irsim.TESTS``, ``irsim.CI_METHODS``) as
    tables: constants, which mkdocstrings would show with their type's docstring."""
    from irsim.stats.registry import CI_METHOD_SPECS, TESTS

    lines = ["### `TESTS`", "",
             "`irsim.TESTS`: the significance tests by the name a study's `tests` takes "
             "(`irsim.stats.registry.TestSpec`; `irsim.get_test(name)`).", "",
             "| name | function | kind | Monte Carlo | what |", "|---|---|---|---|---|"]
    for t in TESTS.values():
        lines.append(f"| `{t.name}` | `irsim.{t.function.__name__}` | {t.kind} | "
                     f"{'yes' if t.monte_carlo else 'no'} | {_md(t.description)} |")
    lines += ["", "### `CI_METHODS`", "",
              "`irsim.CI_METHODS`: the interval methods by the name `irsim.mean_ci`, "
              "`irsim.bootstrap_ci` and the studies take (`irsim.get_ci_method(name)`).", "",
              "| name | bootstrap | what |", "|---|---|---|"]
    for c in CI_METHOD_SPECS.values():
        lines.append(f"| `{c.name}` | {'yes' if c.bootstrap else 'no'} | "
                     f"{_md(c.description)} |")
    return [*lines, ""]


def studies_markdown(where: str | None = None) -> str:
    """The table of studies (docs' page "Studies" and the README): each registered study
    with its link, presets, question and tables, from its registration
    (:mod:`irsim.registry`), the presets' YAML and :mod:`irsim.tables`. `where`
    ``"readme"`` links the pages from the repository's root.

    Examples
    --------
    >>> studies_markdown().splitlines()[2].startswith("| [`discpower`](discpower.md) (default)")
    True
    """
    from irsim.catalog import catalog, preset_overrides
    from irsim.registry import studies
    from irsim.runner import compose_config

    base = "docs/studies/" if where == "readme" else ""
    default_study = compose_config([]).experiment.name
    presets: dict[str, list[str]] = {}
    for preset in catalog()["presets"]:
        presets.setdefault(preset_overrides(preset)[0], []).append(preset)
    lines = ["| experiment | preset | question | tables |", "|---|---|---|---|"]
    for s in studies():
        if not s.module.startswith("irsim."):
            continue  # a study of another package documents itself
        always = [t.name for t in s.tables if not t.when]
        optional = [t.name for t in s.tables if t.when]
        tables = ", ".join(f"`{t}`" for t in always)
        if optional:
            tables += " (+ " + ", ".join(f"`{t}`" for t in optional) + ")"
        default = " (default)" if s.name == default_study else ""
        lines.append(f"| [`{s.name}`]({base}{s.name}.md){default} | "
                     f"{', '.join(f'`{p}`' for p in presets.get(s.name, []))} | "
                     f"{_md(s.question)} | {tables} |")
    return "\n".join(lines) + "\n"


def notebook_markdown(path: str | Path) -> str:
    """A Jupyter notebook as a Markdown page: its Markdown cells as they are, its code cells as
    Python code blocks, and under its first heading a line that links to the notebook (a file
    beside the page). Outputs are left out: the notebook is committed without them and
    ``tests/test_notebook.py`` runs it.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.ipynb"
    >>> _ = path.write_text(json.dumps({"cells": [
    ...     {"cell_type": "markdown", "source": ["# Title\\n", "Intro."]},
    ...     {"cell_type": "code", "source": "x = 1", "outputs": []}]}))
    >>> lines = notebook_markdown(path).splitlines()
    >>> lines[0], lines[2][:47]
    ('# Title', '*This page is the notebook [`t.ipynb`](t.ipynb)')
    >>> lines[4:]
    ['Intro.', '', '```python', 'x = 1', '```']
    """
    import json

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"generated block 'notebook': no notebook {path}")
    note = (f"*This page is the notebook [`{path.name}`]({path.name}) without its outputs: "
            f"download it and run it in Jupyter.*")
    parts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = cell["source"]
        text = ("".join(source) if isinstance(source, list) else source).strip("\n")
        if cell["cell_type"] == "code":
            parts.append(f"```python\n{text}\n```")
        elif cell["cell_type"] == "markdown":
            if not parts and text.startswith("# "):
                title, _, rest = text.partition("\n")
                parts += [title, note] + ([rest.strip("\n")] if rest.strip() else [])
                continue
            parts.append(text)
    return "\n\n".join(parts) + "\n"


def registry_markdown(kind: str) -> str:
    """The table of one registry of extension points: ``metrics`` (name, cut-off,
    parameters with their defaults, meaning), ``tests`` (name, kind, Monte Carlo or closed
    form, the study options it takes, meaning) or ``collections`` (kind, what it gives,
    meaning); a metric, test or reader registered by another package is left out (it
    documents itself).

    Examples
    --------
    >>> registry_markdown("tests").splitlines()[2]
    '| `t` | paired | closed form |  | paired t test |'
    """
    if kind == "metrics":
        from irsim.metrics.measures import _registry

        cut = {"required": "`@k` required", "optional": "`@k` optional", "none": "none"}
        rows = [(f"`{d.name}`", cut[d.cutoff],
                 ", ".join(f"`{k}={v}`" for k, v in d.params.items()), d.description)
                for d in _registry().values() if d.kernel.__module__.startswith("irsim.")]
        head = ("metric", "cut-off", "parameters (default)", "meaning")
    elif kind == "tests":
        from irsim.stats.registry import TESTS

        rows = [(f"`{t.name}`", t.kind, "Monte Carlo" if t.monte_carlo else "closed form",
                 ", ".join(f"`{field}`" for field, _ in t.options), t.description)
                for t in TESTS.values() if t.function.__module__.startswith("irsim.")]
        head = ("test", "kind", "p-value", "study options", "meaning")
    elif kind == "collections":
        from irsim.data.collection import readers

        gives = {"matrix": "per-topic scores", "docs": "runs and qrels"}
        rows = [(f"`{r.kind}`", gives.get(r.level, r.level), r.description)
                for r in readers().values() if r.load.__module__.startswith("irsim.")]
        head = ("kind", "gives", "meaning")
    else:
        raise ValueError(f"no registry {kind!r}")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


_KINDS: dict[str, Callable[[str | None], str]] = {
    "studies": studies_markdown,
    "parameters": lambda n: parameters_markdown(_experiment(n)),
    "presets": lambda n: presets_markdown(_experiment(n)),
    "figures": _figures,
    "tables": _tables,
    "api": lambda n: api_markdown(),
    "metrics": lambda n: registry_markdown("metrics"),
    "tests": lambda n: registry_markdown("tests"),
    "collections": lambda n: registry_markdown("collections"),
    "engine": lambda n: engine_markdown(n or "local"),
    "notebook": lambda n: notebook_markdown(Path(f"{n}.ipynb")),  # beside the page: render()
}


def block(kind: str, name: str | None = None, where: str | Path | None = None) -> str:
    """The content of the generated block ``<!-- gen:<kind> [<name>] -->`` (`where`: the
    page's directory, where a ``notebook`` block finds its notebook; default: the working
    directory).

    Examples
    --------
    >>> block("figures", "reliability")
    '`d_study.png`\\n'
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown generated block kind {kind!r} (one of {', '.join(_KINDS)})")
    if kind == "notebook":
        return notebook_markdown(Path(where or ".") / f"{name}.ipynb")
    return _KINDS[kind](name)


def render(text: str, where: str | Path | None = None) -> str:
    """`text` with every generated block filled anew (the rest unchanged); `where` is the
    page's directory (see :func:`block`)."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{block(m['kind'], m['name'], where)}{m.group(5)}",
                     text)


def nav_yaml(indent: str = "") -> str:
    """The studies' entries of the site's navigation: ``- <title>: studies/<name>.md`` per
    registered study, in listing order, each line starting with `indent`.

    Examples
    --------
    >>> print(nav_yaml().splitlines()[0])
    - Discriminative power: studies/discpower.md
    """
    import json

    from irsim.registry import studies

    def quoted(title: str) -> str:  # a JSON string is a YAML string
        plain = not set(title) & set(':#"\'{}[],&*!|>%@`') and title == title.strip()
        return title if plain else json.dumps(title)

    return "".join(f"{indent}- {quoted(s.title)}: studies/{s.name}.md\n" for s in studies())


def render_nav(text: str) -> str:
    """`text` (``mkdocs.yml``) with its ``# gen:nav studies`` block filled anew
    (:func:`nav_yaml`, indented as the opening comment)."""
    return NAV.sub(lambda m: m["open"] + nav_yaml(m["indent"]) + m["close"], text)


def update(root: str | Path, *, check: bool = False) -> list[Path]:
    """Render every Markdown page under `root`, the ``README.md`` beside it (the
    repository's) and the navigation of the ``mkdocs.yml`` beside it; the files that were
    stale (rewritten, or with ``check=True`` left as they are)."""
    stale = []
    readme = Path(root).resolve().parent / "README.md"
    mkdocs = Path(root).resolve().parent / "mkdocs.yml"
    pages = sorted(Path(root).rglob("*.md")) + ([readme] if readme.is_file() else [])
    for page in [*pages, *([mkdocs] if mkdocs.is_file() else [])]:
        text = page.read_text(encoding="utf-8")
        new = render_nav(text) if page == mkdocs else render(text, page.parent)
        if new != text:
            stale.append(page)
            if not check:
                page.write_text(new, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    """``python -m irsim.docs [--check] <docs dir>``: write the generated blocks (or, with
    ``--check``, exit 1 naming the stale pages)."""
    parser = argparse.ArgumentParser(prog="python -m irsim.docs", description=main.__doc__)
    parser.add_argument("root", nargs="?", default="docs")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = update(args.root, check=args.check)
    for page in stale:
        print(f"{page}: {'stale' if args.check else 'updated'}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
