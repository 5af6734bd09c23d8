"""Report section of table ``type_m_s`` (Type S and Type M errors, Gelman and Carlin 2014),
shared by the reports of experiment=test_errors and experiment=multiple_testing: a reading
guide, the Type S rate and the exaggeration ratio at alpha = 0.05 (or the nearest level) per
test, and two figures: the exaggeration ratio against power (the Gelman-Carlin curve; the
closed form of the t test under normal differences drawn for two-sided tests) and the Type S
rate against delta."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure

from irsim.report import colour_of, save_figure
from irsim.stats.registry import legend_of
from irsim.stats.typems import retrodesign

__all__ = ["FIGURES", "sections", "summary", "exaggeration_plots", "type_s_plots",
           "closed_form_curve"]

#: Figures drawn (``<alternative>``: ``two-sided``, ``greater`` or ``less``; the Type S
#: figure by test_errors only, whose rows have a delta).
FIGURES = ("exaggeration_<alternative>.png", "type_s_<alternative>.png")


def _alpha(df: pd.DataFrame, target: float = 0.05) -> float:
    a = np.asarray(sorted(set(df["alpha"])))
    return float(a[np.argmin(np.abs(np.log(a) - np.log(target)))])


def closed_form_curve(n: int, alpha: float, points: int = 200
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Power and exaggeration ratio of the two-sided paired t test on `n` topics with
    normal differences (:func:`irsim.stats.typems.retrodesign`, ``df = n - 1``), along
    ``delta / se`` from 0.05 to 8.

    Examples
    --------
    >>> power, ratio = closed_form_curve(50, 0.05, points=3)
    >>> bool(power[0] < 0.06 and ratio[0] > 20 and ratio[-1] < 1.01)
    True
    """
    lam = np.geomspace(0.05, 8.0, points)
    r = retrodesign(lam, 1.0, alpha, df=n - 1)
    return r.power, r.exaggeration


def _rows(table: pa.Table) -> pd.DataFrame:
    df = table.to_pandas()
    return df[df["wrong_sign"].notna()] if "wrong_sign" in df else df.iloc[:0]


def _keys(df: pd.DataFrame) -> list[str]:
    keys = ["metric", "alternative", "n"]
    if df["delta"].notna().any():
        keys.append("delta")
    for c in ("m", "share_null", "correction"):
        if c in df and df[c].notna().any():
            keys.append(c)
    return keys


def summary(table: pa.Table, alpha: float = 0.05) -> tuple[pa.Table | None, float]:
    """One row per configuration and one column per test at one alpha: ``S <type_s>, M
    <exaggeration_mean> [lo, hi] (power <power>)``.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"], "n": [50], "delta": [0.02], "m": pa.nulls(1,
    ...     pa.int64()), "share_null": pa.nulls(1, pa.float64()), "correction":
    ...     pa.nulls(1, pa.string()), "test": ["t"], "alternative": ["two-sided"],
    ...     "alpha": [0.05], "trials": [100], "significant": [20], "power": [0.2],
    ...     "wrong_sign": [1], "type_s": [0.05], "exaggeration_mean": [2.5],
    ...     "exaggeration_mean_lo": [2.2], "exaggeration_mean_hi": [2.8]})
    >>> tab, a = summary(t)
    >>> tab.to_pylist()[0]["t"]
    'S 0.050, M 2.50 [2.20, 2.80] (power 0.200)'
    """
    df = _rows(table)
    if df.empty:
        return None, alpha
    alpha = _alpha(df, alpha)
    df = df[df["alpha"] == alpha]
    keys = _keys(df)
    cell = [f"S {s:.3f}, M {m:.2f} [{lo:.2f}, {hi:.2f}] (power {p:.3f})" if k else
            "none significant"
            for s, m, lo, hi, p, k in zip(df["type_s"], df["exaggeration_mean"],
                                          df["exaggeration_mean_lo"],
                                          df["exaggeration_mean_hi"], df["power"],
                                          df["significant"], strict=True)]
    df = df.assign(cell=cell)
    tests = list(dict.fromkeys(df["test"]))
    wide = df.pivot_table(index=keys, columns="test", values="cell", aggfunc="first",
                          sort=False)[tests].reset_index()
    wide.columns.name = None
    return pa.Table.from_pandas(wide, preserve_index=False), alpha


def _panels(rows: list, cols: list, title: str) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(max(3.4 * len(cols) + 1.0, 7.0), 2.8 * len(rows) + 1.3))
    axes = np.atleast_2d(fig.subplots(len(rows), len(cols), squeeze=False, sharex=True,
                                      sharey=True))
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.1, right=0.97, top=1 - 1.0 / height, bottom=0.65 / height,
                        wspace=0.08, hspace=0.28)
    fig.suptitle(title, fontsize=12, y=1 - 0.12 / height)
    return fig, axes


def _grid_plots(df: pd.DataFrame, out_dir: Path, stem: str, title: str, xlabel: str,
                ylabel: str, draw: Any) -> list[Path]:
    """One figure per alternative, one panel per (metric, n): ``draw(ax, cell, alt)`` draws
    a panel's series; the legend under the title, as test_errors' other figures place it
    (the tests named as there); saved as ``<stem>_<alternative>.png``."""
    paths = []
    for alt, sub in df.groupby("alternative", sort=False):
        metrics, sizes = list(dict.fromkeys(sub["metric"])), sorted(set(sub["n"]))
        fig, axes = _panels(metrics, sizes, title.format(alt=alt))
        for i, metric in enumerate(metrics):
            for j, n in enumerate(sizes):
                ax = axes[i, j]
                draw(ax, sub[(sub["metric"] == metric) & (sub["n"] == n)], alt, n)
                ax.set_title(f"{metric}, n = {n}", fontsize=9)
                ax.tick_params(which="both", labelsize=8)
                if i == len(metrics) - 1:
                    ax.set_xlabel(xlabel, fontsize=9)
                if j == 0:
                    ax.set_ylabel(ylabel, fontsize=9)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, [legend_of(lab) for lab in labels], loc="upper center",
                   ncol=min(len(labels), 6), fontsize=9, frameon=False,
                   bbox_to_anchor=(0.5, 1 - 0.42 / fig.get_figheight()))
        path = Path(out_dir) / f"{stem}_{alt}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


def exaggeration_plots(table: pa.Table, out_dir: Path, alpha: float = 0.05) -> list[Path]:
    """Per alternative: exaggeration ratio (mean over significant trials, log scale) against
    power, one panel per (metric, n), one colour per test, the points of a test joined
    along delta (test_errors) or per configuration (multiple_testing); for two-sided tests
    the closed form of the t test on normal differences (dashed)."""
    df = _rows(table)
    df = df[df["significant"] > 0]
    if df.empty:
        return []
    alpha = _alpha(df, alpha)
    df = df[df["alpha"] == alpha]

    def draw(ax: Any, cell: pd.DataFrame, alt: str, n: int) -> None:
        joined = "o-" if cell["delta"].notna().all() else "o"  # along delta
        for test, pts in cell.groupby("test", sort=False):
            order = pts.sort_values("power")
            ax.plot(order["power"], order["exaggeration_mean"], joined,
                    ms=3 if len(order) > 1 else 5, lw=1, color=colour_of(str(test)),
                    label=str(test))
        if alt == "two-sided":
            p, r = closed_form_curve(int(n), alpha)
            ax.plot(p, r, "k--", lw=0.8, label="t, closed form")
        ax.set_yscale("log")
        ax.axhline(1.0, color="0.6", lw=0.6)

    return _grid_plots(df, out_dir, "exaggeration",
                       f"Exaggeration ratio against power ({{alt}}, alpha = {alpha})", "power",
                       "E(|d|/|delta| | significant)", draw)


def type_s_plots(table: pa.Table, out_dir: Path, alpha: float = 0.05) -> list[Path]:
    """Per alternative: the Type S rate against delta with its Clopper-Pearson band, one
    panel per (metric, n), one colour per test (rows with a delta only)."""
    df = _rows(table)
    df = df[(df["significant"] > 0) & df["delta"].notna()]
    if df.empty:
        return []
    alpha = _alpha(df, alpha)
    df = df[df["alpha"] == alpha]

    def draw(ax: Any, cell: pd.DataFrame, alt: str, n: int) -> None:
        for test, pts in cell.groupby("test", sort=False):
            pts = pts.sort_values("delta")
            c = colour_of(str(test))
            ax.plot(pts["delta"], pts["type_s"], "o-", ms=3 if len(pts) > 1 else 5, lw=1,
                    color=c, label=str(test))
            ax.fill_between(pts["delta"], pts["type_s_lo"], pts["type_s_hi"], color=c,
                            alpha=0.15, lw=0)

    return _grid_plots(df, out_dir, "type_s",
                       f"Type S rate against delta ({{alt}}, alpha = {alpha})", "delta",
                       "P(wrong sign | significant)", draw)


def sections(tables: dict[str, pa.Table], run_dir: Path, figures: bool = True) -> list[str]:
    """Markdown of table ``type_m_s`` with its figures (PNG files written into `run_dir`;
    none with ``figures=False``); empty without the table or without a row of a true
    difference.

    Examples
    --------
    >>> sections({}, Path("."))
    []
    """
    from irsim.report import markdown_table

    if "type_m_s" not in tables:
        return []
    table = tables["type_m_s"]
    wide, alpha = summary(table)
    if wide is None:
        return []
    lines = [
        "## Type S and Type M errors", "",
        "Among the trials a test calls significant at alpha = "
        f"{alpha}: **S**, the share whose observed mean difference d has the wrong sign "
        "(Type S rate), and **M**, the mean of |d| / |delta| (the exaggeration ratio, Type M, "
        "with its bootstrap interval), where delta is the true difference; power is the "
        "share of trials significant. Gelman and Carlin (2014): the lower the power, the more "
        "a significant difference overstates the truth. An M of 2.5 means a significant "
        "+0.05 at this n and power typically reflects a true +0.02; read a published "
        "significant difference of a low-powered comparison (few topics, small delta) "
        "with this factor in mind."
        + (" In the figures the dashed curve is the closed form of the t test on normal "
           "differences (`irsim.stats.retrodesign`)." if figures else ""), "",
        markdown_table(wide, max_rows=120), ""]
    if figures:
        for path in (exaggeration_plots(table, run_dir, alpha)
                     + type_s_plots(table, run_dir, alpha)):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
