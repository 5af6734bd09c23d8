"""Reports: ``report.md`` with the key tables as Markdown and PNG plots beside it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from irsim.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["colour_of", "write_report", "report_command", "markdown_table", "fmt", "MISSING",
           "mean_scores", "figures", "rows_of", "per_collection_sections", "across_collections",
           "figures_markdown", "headline_text", "pvalue_text", "safe_name", "save_figure",
           "figure_hook", "figure_lines"]

#: Callables that :func:`save_figure` calls with ``(figure, path)`` before it writes a figure
#: (registered by :func:`figure_hook`; the figure tests check every figure here).
_FIGURE_HOOKS: list[Callable[[Figure, Path], None]] = []


@contextmanager
def figure_hook(hook: Callable[[Figure, Path], None]) -> Iterator[None]:
    """Within the block, call ``hook(figure, path)`` for every figure a report saves, before
    it is written (the figure fully laid out; the hook may draw it, must not change it).

    Examples
    --------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> seen = []
    >>> with figure_hook(lambda fig, path: seen.append(path.name)):
    ...     _ = save_figure(Figure(), Path(tempfile.mkdtemp()) / "x.png")
    >>> seen
    ['x.png']
    """
    _FIGURE_HOOKS.append(hook)
    try:
        yield
    finally:
        _FIGURE_HOOKS.remove(hook)


def save_figure(fig: Figure, path: str | os.PathLike, **kwargs: Any) -> Path:
    """Write `fig` as a PNG to `path` (through a temporary file beside it, so a reader never
    sees half a PNG): the one place every report saves a figure. The hooks of
    :func:`figure_hook` see the figure first. `kwargs` go to ``Figure.savefig``. Returns
    the path.
    """
    path = Path(path)
    for hook in list(_FIGURE_HOOKS):
        hook(fig, path)
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, **kwargs)
    os.replace(tmp, path)
    return path


def figure_lines(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The Markdown lines that show the figures at `paths` (PNGs written beside
    ``report.md``, as :func:`save_figure` returns them): per figure, an image named by the
    file's stem and a blank line.

    Examples
    --------
    >>> figure_lines([Path("run/power_greater.png"), "run/type3_error.png"])
    ['![power_greater](power_greater.png)', '', '![type3_error](type3_error.png)', '']
    """
    return [line for p in map(Path, paths) for line in (f"![{p.stem}]({p.name})", "")]


def colour_of(name: str) -> str:
    """The colour of test `name` (a significance or a Bayesian test) in every figure: the
    Tableau palette in the order of the test registries
    (:func:`irsim.stats.registry.position_of`; ten colours, then their light shades), so
    a test keeps its colour across figures and studies and no two registered tests share
    one; black for an unregistered name.

    Examples
    --------
    >>> colour_of("t"), colour_of("wilcoxon"), colour_of("toy")
    ('#1f77b4', '#ff7f0e', 'black')
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    from irsim.stats.registry import position_of

    k = position_of(name)
    if k is None:
        return "black"
    palette = colormaps["tab20"].colors  # pairs: dark, light
    return to_hex(palette[(2 * k) % 20 + (2 * k) // 20 % 2])


def safe_name(text: str) -> str:
    """A file-name-safe version of a metric name (figure names: ``P@10`` -> ``P_10``).

    Examples
    --------
    >>> safe_name("nDCG@10"), safe_name("AP(rel=2)")
    ('nDCG_10', 'AP_rel_2')
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "metric"


#: How a report shows a missing value (null, NaN).
MISSING = "\u2014"


def fmt(value: Any, digits: int = 4) -> str:
    """A number as every report prints it: `digits` significant digits (from 1,000 up:
    rounded to an integer), thousands separated by commas (never ``1.206e+04``), integers in
    full, a missing value (None, NaN) as an em dash (never ``nan``), infinity as ``inf``;
    anything else as ``str``.

    Examples
    --------
    >>> fmt(12060.0), fmt(12060), fmt(1234567.891), fmt(0.123456), fmt(0.0004567)
    ('12,060', '12,060', '1,234,568', '0.1235', '0.0004567')
    >>> fmt(float("nan")), fmt(None), fmt(float("-inf")), fmt(0.0), fmt(3.0), fmt(True)
    ('\u2014', '\u2014', '-inf', '0', '3', 'True')
    >>> fmt(12.3456), fmt(1.5e-07)
    ('12.35', '1.5e-07')
    """
    import math

    import numpy as np

    if value is None:
        return MISSING
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return MISSING
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if abs(v) < 1e-4:
            return f"{v:.{min(digits, 3)}g}"
        rounded = float(f"{v:.{digits}g}")
        if abs(rounded) >= 1000:  # thousands separated, never 1.206e+04
            return f"{v:,.0f}"
        return f"{v:.{digits}g}"
    return str(value)


def markdown_table(table: pa.Table, *, max_rows: int = 40, digits: int = 4) -> str:
    """A Markdown rendering of (the first rows of) a table, numbers by :func:`fmt`.

    Examples
    --------
    >>> print(markdown_table(pa.table({"a": [1, 12060], "b": [0.12345, None]})))
    | a | b |
    |---|---|
    | 1 | 0.1235 |
    | 12,060 | \u2014 |
    """
    cols = table.column_names
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.slice(0, max_rows).to_pylist():
        cells = [fmt(row[c], digits) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    if table.num_rows > max_rows:
        lines.append(f"\n({table.num_rows - max_rows} more rows in the Parquet file)")
    return "\n".join(lines)


def mean_scores(per_topic: pa.Table) -> Any:
    """Mean over topics per system (rows, in order of appearance) and metric (columns) of a
    long ``per_topic`` table (``metric, system, topic, value``), as a pandas DataFrame.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"] * 4, "system": ["b", "b", "a", "a"],
    ...               "topic": ["1", "2"] * 2, "value": [0.5, 0.25, 0.0, 1.0]})
    >>> mean_scores(t)["AP"].to_dict()
    {'b': 0.375, 'a': 0.5}
    """
    df = per_topic.select(["metric", "system", "value"]).to_pandas()
    means = df.groupby(["system", "metric"], sort=False)["value"].mean().unstack("metric")
    return means.reindex(index=df["system"].unique(), columns=df["metric"].unique())


def _evaluate_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    per_topic = tables["per_topic"]
    means = mean_scores(per_topic)
    topics = len(set(per_topic.column("topic").to_pylist()))
    table = pa.table({"system": [str(s) for s in means.index],
                      **{str(m): means[m].to_numpy() for m in means.columns}})
    return ["## Mean per system and metric", "",
            f"Mean over {topics} topics (what trec_eval reports as `all`); every topic's "
            f"score is in `results/per_topic.parquet`.", "",
            markdown_table(table, max_rows=200), ""]


def _collection_line(coll: dict[str, Any]) -> str:
    """One line describing a score-matrix collection of the manifest."""
    return (f"{coll.get('source') or 'generated'}; {coll.get('systems')} systems x "
            f"{coll.get('topics')} topics; metrics: {', '.join(coll.get('metrics', []))}.")


def rows_of(table: pa.Table, collection: str) -> pa.Table:
    """The rows of one collection of a per-collection run's table, without the
    ``collection`` column (the table the study writes when run on that collection alone).

    Examples
    --------
    >>> t = pa.table({"collection": ["a", "b", "a"], "x": [1, 2, 3]})
    >>> rows_of(t, "a").to_pylist()
    [{'x': 1}, {'x': 3}]
    """
    import pyarrow.compute as pc

    mask = pc.equal(table.column("collection"), pa.scalar(collection, pa.string()))
    return table.filter(mask).drop_columns(["collection"])


def across_collections(tables: dict[str, pa.Table], names: list[str],
                       max_rows: int = 40) -> list[str]:
    """Markdown: for each summary table of a per-collection run (those a sweep report
    compares, :func:`irsim.report.sweep.headlines`), its headline column side by side, one
    column per collection.

    Examples
    --------
    >>> t = pa.table({"collection": ["a", "b"], "metric": ["AP", "AP"], "test": ["t", "t"],
    ...               "alpha": [0.05, 0.05], "sensitivity": [0.5, 0.25]})
    >>> lines = across_collections({"discpower": t}, ["a", "b"])
    >>> print(lines[0]); print(lines[6])
    ## Across collections
    | metric | test | alpha | a | b |
    |---|---|---|---|---|
    | AP | t | 0.05 | 0.5 | 0.25 |
    """
    from irsim.report.sweep import headlines

    lines: list[str] = []
    for name, (keys, value) in headlines().items():
        table = tables.get(name)
        if table is None or value not in table.column_names or not table.num_rows:
            continue
        df = table.to_pandas()
        present = [k for k in keys if k in df.columns]
        wide = df.pivot_table(index=present, columns="collection", values=value,
                              aggfunc="first", sort=False, dropna=False)
        wide = wide.reindex(columns=[n for n in names if n in wide.columns])
        wide.columns.name = None
        wide = wide.reset_index()
        if not lines:
            lines = ["## Across collections", ""]
        lines += [f"### `{name}`: {value}", "",
                  f"`{value}` per collection (columns) for each {', '.join(present)} (rows).",
                  "", markdown_table(pa.Table.from_pandas(wide, preserve_index=False),
                                     max_rows=max_rows), ""]
    return lines[:2] + lines[2:] if lines else []


def per_collection_sections(module: Any, tables: dict[str, pa.Table], run_dir: Path,
                            collections: dict[str, dict[str, Any]]) -> list[str]:
    """The report of a study run on each of several collections: per collection a section
    ``## Collection <name>`` holding the study's own sections on that collection's rows
    (headings one level down), its figures named ``<collection>_<figure>.png``."""
    import tempfile

    lines = [f"{len(collections)} collections ({', '.join(f'`{n}`' for n in collections)}), "
             f"each studied on its own with the run's seed; every table starts with a column "
             f"`collection`.", ""]
    lines += across_collections(tables, list(collections))
    used: set[str] = set()
    for name, coll in collections.items():
        prefix = safe_name(name)
        while prefix in used:  # two names that only differ in punctuation
            prefix += "_"
        used.add(prefix)
        lines += [f"## Collection `{name}`", "", _collection_line(coll), ""]
        if module is None:
            continue
        own = {k: rows_of(t, name) for k, t in tables.items()}
        with tempfile.TemporaryDirectory(dir=run_dir, prefix=".report-") as tmp:
            body = module.sections(own, Path(tmp))
            for png in sorted(Path(tmp).glob("*.png")):
                os.replace(png, run_dir / f"{prefix}_{png.name}")
        body = [re.sub(r"\]\(([^)/\s]+\.png)\)", rf"]({prefix}_\1)", ln) for ln in body]
        lines += ["#" + ln if ln.startswith("#") else ln for ln in body]
    return lines


def write_report(run_dir: str | os.PathLike, tables: dict[str, pa.Table],
                 info: dict[str, Any]) -> Path:
    """Write ``report.md`` and its PNG plots into `run_dir` (recorded as irsim's files:
    :mod:`irsim.rundir`).

    The sections come from the study's report module (``sections(tables, run_dir)``; its
    registration names it, :meth:`irsim.registry.Study.report_name`).
    """
    from irsim import rundir

    run_dir = Path(run_dir)
    pngs_before = {p.name for p in run_dir.glob("*.png")}
    name = info.get("experiment", "run")
    lines = [f"# irsim report: {name}", ""]
    coll = info.get("collection") or {}
    if "systems" in coll:
        lines += [f"Collection: {_collection_line(coll)}", ""]
    elif "runs" in coll:
        lines += [f"Collection: {coll['runs']} run lines, {coll.get('qrels', '?')} "
                  f"judgments.", ""]
    module = report_module(name)
    if name == "evaluate" and "per_topic" in tables:
        lines += _evaluate_sections(tables, run_dir)
    elif coll.get("per_collection"):
        lines += per_collection_sections(module, tables, run_dir, coll["collections"])
    elif module is not None:
        lines += module.sections(tables, run_dir)
    lines += ["## Files", ""]
    lines += [f"- `results/{t}.parquet`: {tab.num_rows} rows" for t, tab in tables.items()]
    path = run_dir / "report.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    rundir.record_report(run_dir, pngs_before)  # what a later run may remove
    return path


def report_module(name: str) -> Any:
    """The report module of study `name` (its ``sections`` and ``FIGURES``), as its
    registration names it (default: the study package's ``report`` submodule,
    :meth:`irsim.registry.Study.report_name`); None for a study without one or
    a name no study registers (the report then lists the tables only)."""
    from irsim.errors import ConfigError
    from irsim.registry import get

    try:
        return get(name).report_module()
    except ConfigError:
        return None


def report_command(args: list[str]) -> None:
    """``irsim report <run dir>``: rebuild report.md and plots from results/*.parquet;
    ``irsim report <sweep dir> [--partial]``: the sweep's report (:mod:`irsim.report.sweep`).
    """
    from irsim.engine.output import read_tables
    from irsim.report.sweep import is_sweep, sweep_command

    paths = [a for a in args if a != "--partial"]
    if len(paths) == 1 and is_sweep(paths[0]):
        print(sweep_command(args))
        return
    if len(args) != 1:
        raise InputError("usage: irsim report <run dir> | irsim report <sweep dir> "
                         "[--partial]")
    run_dir = Path(args[0])
    if not (run_dir / "results").is_dir():
        raise InputError("not a run directory (no results/ folder) nor a sweep directory "
                         "(no multirun.yaml)", file=run_dir)
    info: dict[str, Any] = {}
    manifest = run_dir / "manifest.json"
    if manifest.exists():
        try:
            info = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            first = (str(err).splitlines() or [type(err).__name__])[0]
            raise InputError(f"unreadable manifest ({first})", file=manifest) from None
        if not isinstance(info, dict):
            raise InputError(f"manifest is a JSON {type(info).__name__}, not an object",
                             file=manifest)
    tables = read_tables(run_dir)  # a corrupt table: InputError naming it
    _check_schemas(run_dir, tables)
    from irsim import rundir

    if not rundir.is_irsim_dir(run_dir):  # report.md and plots would overwrite others' files
        raise InputError("holds no irsim manifest: irsim report rebuilds the report of an irsim "
                         "run directory only", file=run_dir)
    try:
        path = write_report(run_dir, tables, info)
    except OSError as err:
        raise InputError(f"cannot write the report: {err.strerror or err}",
                         file=err.filename or run_dir) from None
    print(path)


def _check_schemas(run_dir: Path, tables: dict[str, pa.Table]) -> None:
    """Refuse a table of a run directory that is not the table irsim writes under its name
    (another Parquet file copied over it): its columns and types are checked against the
    table registry (:func:`irsim.tables.check`; columns declared since an older irsim may
    be missing). A table of a name irsim does not write is left to the report (ignored)."""
    from irsim import tables as registry

    known = registry.registered()
    for name, table in tables.items():
        if name not in known:
            continue
        try:
            registry.check(name, table, allow_missing_optional=True)
        except (ValueError, TypeError) as err:
            raise InputError(f"is not the {name} table irsim writes ({err}); irsim report "
                             f"reads the tables irsim wrote: rerun the study",
                             file=run_dir / "results" / f"{name}.parquet") from None


def figures() -> dict[str, tuple[str, ...]]:
    """The figures each study's report draws, as its report module declares them
    (``FIGURES``), plus the sweep report's; a study whose module declares none maps to ``()``.

    Examples
    --------
    >>> f = figures()
    >>> f["swap"], f["sweep"]
    (('swap_rates_<metric>.png',), ('sweep_<table>.png',))
    """
    import importlib

    from irsim.registry import names

    out: dict[str, tuple[str, ...]] = {}
    for name in (*names(), "sweep"):
        module = report_module(name) if name != "sweep" else None
        if name == "sweep":
            module = importlib.import_module(f"{__name__}.sweep")
        out[name] = tuple(getattr(module, "FIGURES", ()) if module is not None else ())
    return out


def figures_markdown() -> str:
    """The list of figures per study of the documentation site (page "Studies"; written by
    ``python -m irsim.docs docs``), generated from the report modules' ``FIGURES``.

    Examples
    --------
    >>> print(figures_markdown().splitlines()[4])
    | `swap` | `swap_rates_<metric>.png` |
    """
    lines = ["| study | figures in the run directory (`<metric>`: `P@10` is written `P_10`) |",
             "|---|---|"]
    for name, names in figures().items():
        cells = ", ".join(f"`{n}`" for n in names) or "(none declared)"
        study = "`irsim report <sweep dir>`" if name == "sweep" else f"`{name}`"
        lines.append(f"| {study} | {cells} |")
    return "\n".join(lines) + "\n"


def pvalue_text(p: Any, samples: Any = None) -> str:
    """A p-value as the console prints it (:func:`fmt`), except a Monte Carlo p-value of 0
    (``count/B`` with no sample as extreme): ``<1/B`` with B the `samples` it was drawn
    from, since 0 is not a p-value anyone observed.

    Examples
    --------
    >>> pvalue_text(0.0, 10000), pvalue_text(0.0312, 10000), pvalue_text(0.0, None)
    ('<0.0001', '0.0312', '0')
    >>> pvalue_text(1 / 2001, 2000)  # plus_one: (0 + 1) / (B + 1)
    '0.0004998'
    """
    import math

    if samples is not None and not (isinstance(samples, float) and math.isnan(samples)) \
            and p is not None and float(p) == 0.0 and int(samples) > 0:
        return f"<{fmt(1.0 / int(samples))}"
    return fmt(p)


def _pick(column: Any, target: Any) -> Any:
    """The value of `column` (a pandas Series) that a headline's ``where`` keeps (see
    :class:`irsim.registry.Headline`); None when there is none."""
    import numbers

    values = list(dict.fromkeys(column.dropna().tolist()))
    if not values:
        return None
    if isinstance(target, str) and target == "first":
        return values[0]
    if isinstance(target, str) and target == "middle":
        nonzero = sorted(v for v in values if v != 0)
        return nonzero[(len(nonzero) - 1) // 2] if nonzero else None
    if isinstance(target, numbers.Number) and all(isinstance(v, numbers.Number)
                                                  for v in values):
        return min(values, key=lambda v: (abs(float(v) - float(target)), float(v)))
    return target


def headline_text(name: str, tables: dict[str, pa.Table], *, max_rows: int | None = None
                  ) -> str:
    """The answer of a run on the console: each summary table of study `name` (its
    registration's ``headlines``, :class:`irsim.registry.Headline`: key columns, headline
    column, the rows and columns the console shows) as a short aligned text table; keys
    with one value across the rows shown are stated once above it. Empty when the study
    declares no headline.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP", "AP"], "test": ["t", "sign"], "alpha": [0.05, 0.05],
    ...               "sensitivity": [0.61, 0.4], "correction": ["none"] * 2,
    ...               "sensitivity_adjusted": [0.61, 0.4]})
    >>> print(headline_text("discpower", {"discpower": t}))
    discpower: sensitivity (alpha=0.05, metric=AP)
    test  sensitivity
    t     0.61
    sign  0.4

    With two keys or more whose last has a few values, those values become columns:

    >>> t2 = pa.table({"metric": ["AP"] * 4, "test": ["t", "t", "sign", "sign"],
    ...                "alpha": [0.01, 0.05] * 2, "sensitivity": [0.5, 0.61, 0.3, 0.4]})
    >>> print(headline_text("discpower", {"discpower": t2}))
    discpower: sensitivity by alpha (metric=AP)
    test  alpha=0.01  alpha=0.05
    t     0.5         0.61
    sign  0.3         0.4
    """
    from irsim.errors import ConfigError
    from irsim.registry import get

    try:
        wanted = get(name).headlines
    except ConfigError:
        return ""
    blocks = [_headline_block(hname, h, tables, max_rows) for hname, h in wanted.items()]
    return "\n\n".join(b for b in blocks if b)


def _headline_block(hname: str, h: Any, tables: dict[str, pa.Table],
                    max_rows: int | None) -> str:
    """One summary table of :func:`headline_text` (empty when its table has no such rows)."""
    tname, value = h.table or hname, h.value
    title = f"{tname} ({h.label})" if h.label else tname
    table = tables.get(tname)
    if table is None or value not in table.column_names or not table.num_rows:
        return ""
    names = table.column_names
    cols = (["collection"] if "collection" in names else []) + [
        k for k in h.keys if k in names]
    also = [c for c in h.also if c in names and c not in cols and c != value]
    samples = h.samples if h.samples in names else None
    df = table.select(list(dict.fromkeys([*cols, *also, value, *filter(None, [samples]),
                                          *(c for c in h.where if c in names)]))
                      ).to_pandas()
    for col, target in h.where.items():
        if col in df.columns:
            keep = _pick(df[col], target)
            df = df[df[col] == keep] if keep is not None else df.iloc[:0]
    if df.empty:
        return ""
    df = df.reset_index(drop=True)
    fixed = [k for k in cols if df[k].nunique(dropna=False) == 1]
    varying = [k for k in cols if k not in fixed]
    also, stated, constant = _headline_columns(df, fixed, also, value)
    where = ", ".join(f"{k}={fmt(df[k].iloc[0])}" for k in sorted(stated))
    suffix = f" ({where})" if where else ""
    line2 = ["  ".join(f"{c}={fmt(df[c].iloc[0])}" for c in constant)] if constant else []
    df["\0value"] = [pvalue_text(p, b) for p, b in zip(
        df[value], df[samples] if samples else [None] * len(df), strict=True)]
    spread = varying[-1] if len(varying) >= 2 else None
    if h.summary is not None and h.summary in varying:
        body, titles, what = _headline_summary(df, varying, h.summary, value)
    elif spread is not None and df[spread].nunique() <= 6 and not df.duplicated(
            varying).any() and all(df.groupby(varying[:-1], sort=False)[c].nunique(
                dropna=False).max() <= 1 for c in also):
        body, titles, what = _headline_grid(df, varying, also, value)
    else:
        body = [[*map(fmt, r[:len(varying)]), r[-1], *map(fmt, r[len(varying):-1])]
                for r in df[[*varying, *also, "\0value"]].to_numpy(object).tolist()]
        titles, what = [*varying, value, *also], value
    head = f"{title}: {what}{suffix}"
    limit = max_rows if max_rows is not None else h.rows
    if len(body) > limit:
        head += f"; first {limit} of {len(body)} rows (all: results/{tname}.parquet)"
    rows = [titles] + [[c if isinstance(c, str) else fmt(c) for c in r] for r in body[:limit]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join([head, *line2, *("  ".join(c.ljust(w) for c, w in zip(
        r, widths, strict=True)).rstrip() for r in rows)])


def _headline_columns(df: Any, fixed: list[str], also: list[str], value: str
                      ) -> tuple[list[str], list[str], list[str]]:
    """The extra columns of a headline block: ``(also shown per row, stated once in the
    title, constant numbers shown on one line below it)``."""
    import pandas as pd

    numeric = {c: pd.api.types.is_numeric_dtype(df[c]) for c in also}
    also = [c for c in also if not (  # a copy of the value adds nothing
        numeric[c] and df[c].astype(float).equals(df[value].astype(float)))]
    if not any(numeric[c] for c in also):  # strings only qualify numbers shown
        also = []
    stated = fixed + [c for c in also if not numeric[c] and df[c].nunique(dropna=False) == 1]
    also = [c for c in also if c not in stated]
    # numeric `also` columns with one value over several rows: one line below the title
    constant = [c for c in also if df[c].nunique(dropna=False) == 1]
    return [c for c in also if c not in constant], stated, constant


def _headline_summary(df: Any, varying: list[str], over: str, value: str
                      ) -> tuple[list[list], list[str], str]:
    """Rows of min, where the min is, median and max of `value` over the key `over`."""
    rest = [k for k in varying if k != over]
    groups = df.groupby(rest, sort=False, dropna=False) if rest else [((), df)]
    body = []
    for key, part in groups:
        v = part[value].astype(float)
        low = part.loc[v.idxmin()] if v.notna().any() else None
        body.append([*(key if isinstance(key, tuple) else (key,))][:len(rest)] + [
            fmt(v.min()), fmt(low[over]) if low is not None else fmt(None),
            fmt(v.median()), fmt(v.max())])
    titles = [*rest, "min", f"{over} at min", "median", "max"]
    return body, titles, f"{value} over {df[over].nunique()} {over}"


def _headline_grid(df: Any, varying: list[str], also: list[str], value: str
                   ) -> tuple[list[list], list[str], str]:
    """The last key's values as columns: a compact grid (`also` columns before them)."""
    import pandas as pd

    spread = varying[-1]
    columns = list(dict.fromkeys(df[spread]))
    wide = df.pivot(index=varying[:-1], columns=spread, values="\0value")
    firsts = df.drop_duplicates(varying[:-1]).set_index(varying[:-1])[also]
    order = list(dict.fromkeys(map(tuple, df[varying[:-1]].to_numpy().tolist())))
    index = pd.MultiIndex.from_tuples(order) if len(varying) > 2 else [o[0] for o in order]
    wide = wide.reindex(index)[columns]
    firsts = firsts.reindex(index)
    body = [[*(k if isinstance(k, tuple) else (k,)), *map(fmt, extra), *vals]
            for k, extra, vals in zip(wide.index, firsts.to_numpy(object).tolist(),
                                      wide.to_numpy(object).tolist(), strict=True)]
    titles = [*varying[:-1], *also, *(f"{spread}={fmt(c)}" if not isinstance(c, str) else c
                                      for c in columns)]
    return body, titles, f"{value} by {spread}"
