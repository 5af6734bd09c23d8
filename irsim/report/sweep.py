"""``irsim report <sweep dir>``: one report over the jobs of a sweep (Hydra multirun).

The jobs' tables are merged as ``irsim collect`` merges them
(:func:`irsim.collect.merged_tables`); for every summary table a study writes, ``sweep.md``
shows its headline column side by side for every job (one column per job, labelled by the
swept parameters) and a figure plots it against the swept parameters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
from matplotlib.ticker import NullLocator

from irsim.errors import InputError

__all__ = ["headlines", "FIGURES", "is_sweep", "write_sweep_report", "sweep_command"]

def headlines() -> dict[str, tuple[tuple[str, ...], str]]:
    """The summary tables compared across the jobs of a sweep: table -> (key columns,
    headline column), as each study's registration declares them
    (:func:`irsim.registry.headlines`).

    Examples
    --------
    >>> headlines()["discpower"]
    (('metric', 'test', 'alpha'), 'sensitivity')
    """
    from irsim.registry import headlines as registered

    return registered()


#: Figures of a sweep report (``<table>`` is a table of :func:`headlines` the jobs wrote).
FIGURES = ("sweep_<table>.png",)

#: At most this many rows (key combinations) per table in sweep.md, and lines per panel of
#: a figure (a panel per value of the first key).
MAX_ROWS = 40
MAX_LINES = 12
#: Markers of the lines, in turn (a second cue beside the colour).
_MARKERS = ("o", "s", "^", "D")


def is_sweep(path: str | os.PathLike) -> bool:
    """Whether `path` is a sweep directory (Hydra's ``multirun.yaml``, or job directories
    with ``.hydra/overrides.yaml``) rather than a run directory (``results/``)."""
    path = Path(path)
    if (path / "results").is_dir():
        return False
    return (path / "multirun.yaml").is_file() or any(path.glob("*/.hydra/overrides.yaml"))


def _label(params: dict[str, str], varying: list[str]) -> str:
    return ", ".join(f"{k}={params.get(k)}" for k in varying) or "job"


def _number(text: str | None) -> float | None:
    try:
        return float(str(text))
    except (TypeError, ValueError):
        return None


def _wide(table: pa.Table, keys: tuple[str, ...], value: str, labels: dict[str, str]
          ) -> Any:
    """Rows: key combinations (first MAX_ROWS); columns: jobs (by label); cells: value."""
    df = table.to_pandas()
    keys = tuple(k for k in keys if k in df.columns)
    df["__job"] = df["job"].map(labels)
    wide = df.pivot_table(index=list(keys), columns="__job", values=value, aggfunc="first",
                          sort=False, dropna=False)
    wide = wide.reindex(columns=[lab for lab in labels.values() if lab in wide.columns])
    wide.columns.name = None
    return wide.reset_index()


def _plot(wide: Any, keys: tuple[str, ...], value: str, jobs: list[str],
          xs: list[float] | None, xlabel: str, path: Path, title: str) -> bool:
    """The headline of every row (key combination) against the jobs, one panel per value
    of the first key (the metric, say) with at most MAX_LINES lines each (a panel with
    more draws the first MAX_LINES and says "12 of 16" in its title), every line of a
    panel in its own colour: on a numeric axis ticked at the swept values when one numeric
    parameter is swept (points joined by lines), else one tick per job and points only
    (categorical values are not joined). Each panel's legend stands right of it."""
    import math

    from matplotlib.figure import Figure

    from irsim.report import save_figure

    if wide.empty or not jobs:
        return False
    keys = tuple(k for k in keys if k in wide.columns)
    split, rest = (keys[0], keys[1:]) if len(keys) > 1 else (None, keys)
    groups = (list(wide.groupby(split, sort=False)) if split is not None
              else [(None, wide)])
    cols = 1 if len(groups) == 1 else 2
    rows = math.ceil(len(groups) / cols)
    width = 6.0 if cols == 1 else 11.5
    fig = Figure(figsize=(width, 3.2 * rows + 0.8), dpi=110, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    positions = xs if xs is not None else list(range(len(jobs)))
    for ax, (head, part) in zip(axes, groups, strict=False):
        shown = part.head(MAX_LINES)
        cmap = "tab10" if len(shown) <= 10 else "tab20"
        for i, (_, row) in enumerate(shown.iterrows()):
            label = ", ".join(str(row[k]) for k in rest) or str(head)
            ax.plot(positions, [row[j] for j in jobs], color=_colour(cmap, i),
                    marker=_MARKERS[i % len(_MARKERS)],
                    linestyle="-" if xs is not None else "none", label=label)
        ax.set_xticks(positions)
        if xs is None:
            ax.set_xticklabels(jobs, rotation=30, ha="right", fontsize=8)
            ax.set_xlim(-0.5, len(jobs) - 0.5)
        else:
            ax.set_xticklabels([f"{v:g}" for v in positions], fontsize=8)
            ax.xaxis.set_minor_locator(NullLocator())
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(value, fontsize=8)
        more = f" ({len(shown)} of {len(part)} rows)" if len(part) > len(shown) else ""
        ax.set_title((f"{split} = {head}" if split is not None else title) + more,
                     fontsize=9)
        ax.legend(fontsize=8, title=", ".join(rest) or None, title_fontsize=8,
                  loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        ax.grid(alpha=0.3)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    if split is not None:
        fig.suptitle(title, fontsize=10)
    save_figure(fig, path)
    return True


def _colour(cmap: str, i: int) -> Any:
    """The `i`-th colour of a qualitative colour map (tab20: its darker shades first)."""
    from matplotlib import colormaps

    if cmap == "tab20":
        i = 2 * i if i < 10 else 2 * (i - 10) + 1
    return colormaps[cmap](i)


def write_sweep_report(sweep_dir: str | os.PathLike, *, partial: bool = False) -> Path:
    """Write ``sweep.md`` and ``sweep_<table>.png`` into `sweep_dir`: per summary table, its
    headline column for every job side by side, and a figure of it against the swept
    parameters (a numeric axis when one numeric parameter is swept). An incomplete sweep is
    refused as ``irsim collect`` refuses it, unless `partial`."""
    from irsim.collect import merged_tables
    from irsim.report import markdown_table

    sweep = Path(sweep_dir)
    merged, varying, jobs = merged_tables(sweep, partial=partial)
    order = sorted(jobs, key=lambda jp: tuple(
        (_number(jp[1].get(k)) is None, _number(jp[1].get(k)) or 0.0, str(jp[1].get(k)))
        for k in varying))
    labels = {str(job.relative_to(sweep)): _label(params, varying) for job, params in order}
    numeric = (len(varying) == 1 and
               all(_number(p.get(varying[0])) is not None for _, p in order))
    xs = [_number(p.get(varying[0])) for _, p in order] if numeric else None
    xlabel = varying[0] if len(varying) == 1 else "job"
    compared = headlines()
    for name in compared:  # the plots an earlier sweep report wrote (a user's other
        (sweep / f"sweep_{name}.png").unlink(missing_ok=True)  # sweep_*.png stay)
    lines = [f"# irsim sweep report: {sweep.name}", "",
             f"{len(jobs)} jobs; swept: "
             + (", ".join(f"`{k}` ({', '.join(sorted({str(p.get(k)) for _, p in jobs}))})"
                          for k in varying) or "nothing (all jobs share their parameters)")
             + ". Every job's own report is `<job>/report.md`; all rows of every table, with "
               "the sweep parameters as columns: `irsim collect`.", "",
             "## Jobs", ""]
    job_rows = {"job": [str(j.relative_to(sweep)) for j, _ in order],
                **{k: [str(p.get(k)) for _, p in order] for k in varying}}
    lines += [markdown_table(pa.table(job_rows), max_rows=len(order)), ""]
    params = {k for _, p in jobs for k in p}
    for name, (keys, value) in compared.items():
        table = merged.get(name)
        if table is None or value not in table.column_names:
            continue
        cols = table.column_names
        if "collection" in cols and ("collection" not in params or
                                     "override.collection" in cols):
            keys = ("collection", *keys)  # jobs that each ran on several collections
        wide = _wide(table, keys, value, labels)
        jobs_shown = [lab for lab in labels.values() if lab in wide.columns]
        figure = f"sweep_{name}.png"
        drawn = _plot(wide, keys, value, jobs_shown, xs, xlabel, sweep / figure,
                      f"{name}: {value}")
        lines += [f"## `{name}`: {value}", "",
                  f"`{value}` per job (columns) for each "
                  f"{', '.join(k for k in keys if k in wide.columns)} (rows).", ""]
        if drawn:
            lines += [f"![{name}]({figure})", ""]
        lines += [markdown_table(pa.Table.from_pandas(wide, preserve_index=False),
                                 max_rows=MAX_ROWS), ""]
    lines += ["## Tables of the jobs", ""]
    lines += [f"- `{t}`: {tab.num_rows} rows over {len(jobs)} jobs"
              for t, tab in merged.items()]
    path = sweep / "sweep.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def sweep_command(args: list[str]) -> Path:
    """``irsim report <sweep dir> [--partial]``."""
    partial = "--partial" in args
    args = [a for a in args if a != "--partial"]
    if len(args) != 1:
        raise InputError("usage: irsim report <sweep dir> [--partial]")
    return write_sweep_report(args[0], partial=partial)
