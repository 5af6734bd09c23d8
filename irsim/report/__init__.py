"""Reports: ``report.md`` with the key tables as Markdown and PNG plots beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from irsim.errors import InputError

__all__ = ["write_report", "report_command", "markdown_table"]


def markdown_table(table: pa.Table, *, max_rows: int = 40, digits: int = 4) -> str:
    """A Markdown rendering of (the first rows of) a table.

    Examples
    --------
    >>> print(markdown_table(pa.table({"a": [1, 2], "b": [0.12345, None]})))
    | a | b |
    |---|---|
    | 1 | 0.1235 |
    | 2 |  |
    """
    cols = table.column_names
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.slice(0, max_rows).to_pylist():
        cells = []
        for c in cols:
            v = row[c]
            if v is None:
                cells.append("")
            elif isinstance(v, float):
                cells.append(f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3g}")
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    if table.num_rows > max_rows:
        lines.append(f"\n({table.num_rows - max_rows} more rows in the Parquet file)")
    return "\n".join(lines)


def write_report(run_dir: str | os.PathLike, tables: dict[str, pa.Table],
                 info: dict[str, Any]) -> Path:
    """Write ``report.md`` and its PNG plots into `run_dir`.

    The sections come from the study's report module ``irsim.report.<experiment>``
    (``sections(tables, run_dir)``).
    """
    run_dir = Path(run_dir)
    name = info.get("experiment", "run")
    lines = [f"# irsim report: {name}", ""]
    coll = info.get("collection") or {}
    if "systems" in coll:
        lines += [f"Collection: {coll.get('source') or 'generated'}; {coll.get('systems')} "
                  f"systems x {coll.get('topics')} topics; metrics: "
                  f"{', '.join(coll.get('metrics', []))}.", ""]
    elif "runs" in coll:
        lines += [f"Collection: {coll['runs']} run lines, {coll.get('qrels', '?')} "
                  f"judgments.", ""]
    module = _report_module(name)
    if module is not None:
        lines += module.sections(tables, run_dir)
    lines += ["## Files", ""]
    lines += [f"- `results/{t}.parquet`: {tab.num_rows} rows" for t, tab in tables.items()]
    path = run_dir / "report.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def _report_module(name: str) -> Any:
    """``irsim.report.<name>`` (its ``sections``), or None for an unknown experiment (the
    report then lists the tables only)."""
    import importlib
    import importlib.util

    if not name.isidentifier() or importlib.util.find_spec(f"{__name__}.{name}") is None:
        return None
    module = importlib.import_module(f"{__name__}.{name}")
    return module if hasattr(module, "sections") else None


def report_command(args: list[str]) -> None:
    """``irsim report <run dir>``: rebuild report.md and plots from results/*.parquet."""
    from irsim.engine.output import read_tables

    if len(args) != 1:
        raise InputError("usage: irsim report <run dir>")
    run_dir = Path(args[0])
    if not (run_dir / "results").is_dir():
        raise InputError("not a run directory (no results/ folder)", file=run_dir)
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
    try:
        path = write_report(run_dir, tables, info)
    except OSError as err:
        raise InputError(f"cannot write the report: {err.strerror or err}",
                         file=err.filename or run_dir) from None
    print(path)
