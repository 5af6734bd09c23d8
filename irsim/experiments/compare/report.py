"""Report of ``experiment=compare``: per metric, one row per pair with the difference, its
interval, the effect size and each test's corrected p-value; a forest plot of the
differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from irsim.report import fmt, markdown_table, safe_name, save_figure

__all__ = ["sections", "FIGURES", "forest_plot", "difference_matrix"]

FIGURES = ("compare_<metric>.png",)


#: Pairs up to which the figure is a forest plot (one row per pair); above, a matrix of the
#: systems.
FOREST_PAIRS = 40


def forest_plot(df, metric: str, path: Path) -> Path:
    """Each pair's difference with its interval (one row per pair), 0 marked; with more
    than :data:`FOREST_PAIRS` pairs, :func:`difference_matrix` instead. Returns the path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> df = pd.DataFrame({"system_a": ["a", "a", "b"], "system_b": ["b", "c", "c"],
    ...                    "diff": [0.1, 0.2, 0.1], "ci_lo": [0.0, 0.1, -0.1],
    ...                    "ci_hi": [0.2, 0.3, 0.3], "test": ["t"] * 3,
    ...                    "significant": [False, True, False]})
    >>> forest_plot(df, "AP", Path(tempfile.mkdtemp()) / "compare_AP.png").name
    'compare_AP.png'
    """
    from matplotlib.figure import Figure

    pairs = df.drop_duplicates(["system_a", "system_b"])
    if len(pairs) > FOREST_PAIRS:
        return difference_matrix(df, metric, path)
    labels = [f"{a} - {b}" for a, b in zip(pairs.system_a, pairs.system_b, strict=True)]
    fig = Figure(figsize=(6.4, max(0.24 * len(labels) + 1.3, 2.4)), dpi=110,
                 layout="constrained")
    ax = fig.subplots()
    ys = list(range(len(labels)))[::-1]
    ax.errorbar(pairs["diff"], ys, xerr=[pairs["diff"] - pairs.ci_lo,
                                         pairs.ci_hi - pairs["diff"]],
                fmt="o", color="C0", capsize=3, markersize=4)
    ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(f"difference in mean {metric} (paired t interval)", fontsize=9)
    ax.set_title(f"{metric}: differences between the chosen systems", fontsize=10)
    return save_figure(fig, path)


def difference_matrix(df, metric: str, path: Path) -> Path:
    """The difference of every pair as an upper-triangle matrix of the systems (best mean
    first; a cell: row minus column), coloured on a scale symmetric about 0, the value in
    each cell with ``*`` when the first test (after correction) rejects. Returns the path."""
    from matplotlib.figure import Figure

    pairs = df.drop_duplicates(["system_a", "system_b"])
    first = df["test"].iloc[0]
    rejects = {(a, b) for a, b, t, r in zip(df.system_a, df.system_b, df.test, df.significant,
                                            strict=True) if t == first and r}
    systems = list(dict.fromkeys([*pairs.system_a, *pairs.system_b]))
    mean: dict[str, float] = {}
    if {"mean_a", "mean_b"} <= set(pairs.columns):
        for a, b, ma, mb in zip(pairs.system_a, pairs.system_b, pairs.mean_a, pairs.mean_b,
                                strict=True):
            mean[a], mean[b] = ma, mb
        systems.sort(key=lambda s: -mean[s])
    k = len(systems)
    pos = {s: i for i, s in enumerate(systems)}
    grid = np.full((k, k), np.nan)
    star = np.zeros((k, k), bool)
    for a, b, d in zip(pairs.system_a, pairs.system_b, pairs["diff"], strict=True):
        i, j = pos[a], pos[b]
        grid[i, j], grid[j, i] = d, -d
        star[i, j] = star[j, i] = (a, b) in rejects
    grid, star = grid[:-1, 1:], star[:-1, 1:]  # row: the better system of the pair
    grid[np.tril_indices(k - 1, -1)] = np.nan
    top = float(np.nanmax(np.abs(grid))) or 1.0
    numbers = k <= 21
    cell = 0.5 if numbers else max(0.16, min(0.5, 13.0 / (k - 1)))
    label = 0.07 * max(len(s) for s in systems) + 0.4
    fig = Figure(figsize=(cell * (k - 1) + label + 1.4, cell * (k - 1) + label + 0.6), dpi=110,
                 layout="constrained")
    ax = fig.subplots()
    signed = float(np.nanmin(grid)) < 0  # without the means the order is the table's
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu" if signed else "Blues",
                   vmin=-top if signed else 0.0, vmax=top)
    ax.set_xticks(range(k - 1), systems[1:], rotation=60, ha="left", fontsize=8)
    ax.set_yticks(range(k - 1), systems[:-1], fontsize=8)
    ax.xaxis.tick_top()
    if numbers:
        for i in range(k - 1):
            for j in range(i, k - 1):
                v = grid[i, j]
                text = f"{v:{'+' if signed else ''}.2f}".replace("0.", ".")
                ax.text(j, i, text + ("*" if star[i, j] else ""),
                        ha="center", va="center", fontsize=8,
                        color="white" if abs(v) > 0.6 * top else "black")
    for side in ("bottom", "left"):
        ax.spines[side].set_visible(False)
    fig.colorbar(im, ax=ax, shrink=0.8).ax.tick_params(labelsize=8)
    said = f"; *: {first} rejects" if numbers else ""
    ax.set_xlabel(f"{metric}: mean difference row - column of the {len(pairs)} pairs "
                  f"(best first){said}", fontsize=9)
    return save_figure(fig, path)


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Per metric: a table of the pairs (difference, interval, effect size, each test's
    corrected p-value, * when significant) and the forest plot.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"], "system_a": ["a"], "system_b": ["b"],
    ...               "mean_a": [0.3], "mean_b": [0.2], "diff": [0.1], "ci_lo": [0.02],
    ...               "ci_hi": [0.18], "effect_size": [0.6], "test": ["t"],
    ...               "p_value": [0.01], "p_adjusted": [0.01], "correction": ["holm"],
    ...               "significant": [True]})
    >>> lines = sections({"comparison": t}, Path(tempfile.mkdtemp()))
    >>> lines[0], lines[-2]
    ('## Per-pair comparison', '![AP](compare_AP.png)')
    """
    if "comparison" not in tables:
        return []
    df = tables["comparison"].to_pandas()
    correction = df.correction.iloc[0] if len(df) else "none"
    lines = ["## Per-pair comparison", "",
             "For each pair: the difference of the mean scores (`a - b`) with its paired t "
             "interval, the effect size (mean difference / sd of the per-topic differences) "
             f"and each test's p-value corrected over the chosen pairs ({correction}); "
             "`*`: significant at the run's alpha.", ""]
    for metric, part in df.groupby("metric", sort=False):
        wide = part.drop_duplicates(["system_a", "system_b"])[
            ["system_a", "system_b", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi",
             "effect_size"]].reset_index(drop=True)
        for test, rows in part.groupby("test", sort=False):
            wide[f"p {test}"] = [fmt(p) + ("*" if s else "") for p, s in zip(
                rows.p_adjusted, rows.significant, strict=True)]
        name = f"compare_{safe_name(str(metric))}.png"
        forest_plot(part, str(metric), run_dir / name)
        lines += [f"### {metric}", "",
                  markdown_table(pa.Table.from_pandas(wide, preserve_index=False)), "",
                  f"![{metric}]({name})", ""]
    return lines
