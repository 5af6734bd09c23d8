"""Report of experiment=test_errors: the generator's fit, Type I error against alpha and
power against delta, as tables and plots (matplotlib Agg figures, no global state changed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure

__all__ = ["sections", "nearest_alpha", "summary_table", "type1_plots", "power_plots"]

_COLORS = {"t": "tab:blue", "wilcoxon": "tab:orange", "sign": "tab:green",
           "randomisation": "tab:red", "paired_bootstrap": "tab:purple"}
_LABELS = {"t": "t test", "wilcoxon": "Wilcoxon", "sign": "sign",
           "randomisation": "randomisation", "paired_bootstrap": "bootstrap"}


def nearest_alpha(alphas, target: float = 0.05) -> float:
    """The level in `alphas` closest to `target` (on a log scale).

    Examples
    --------
    >>> nearest_alpha([0.01, 0.04, 0.1]), nearest_alpha([0.001, 0.1], 0.02)
    (0.04, 0.1)
    """
    a = np.asarray(sorted(set(float(x) for x in alphas)))
    return float(a[np.argmin(np.abs(np.log(a) - np.log(target)))])


def _interval(rate: float, lo: float, hi: float) -> str:
    return f"{rate:.4f} [{lo:.4f}, {hi:.4f}]"


def summary_table(table: pa.Table, delta: float | None, alpha: float = 0.05
                  ) -> tuple[pa.Table | None, float]:
    """Rates with their interval at one alpha, one row per (metric, alternative, n[, delta])
    and one column per test; ``delta=None`` takes every delta > 0 (power).

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"], "test": ["t"], "alternative": ["two-sided"],
    ...               "n": [50], "delta": [0.0], "alpha": [0.05], "trials": [100],
    ...               "rejections": [5], "rate": [0.05], "ci_lo": [0.016], "ci_hi": [0.113]})
    >>> tab, a = summary_table(t, 0.0)
    >>> tab.to_pylist()
    [{'metric': 'AP', 'alternative': 'two-sided', 'n': 50, 't': '0.0500 [0.0160, 0.1130]'}]
    """
    df = table.to_pandas()
    if df.empty:
        return None, alpha
    alpha = nearest_alpha(df["alpha"], alpha)
    df = df[df["alpha"] == alpha]
    df = df[df["delta"] == delta] if delta is not None else df[df["delta"] > 0]
    if df.empty:
        return None, alpha
    keys = ["metric", "alternative", "n"] + ([] if delta is not None else ["delta"])
    df = df.assign(cell=[_interval(r, lo, hi) for r, lo, hi
                         in zip(df["rate"], df["ci_lo"], df["ci_hi"], strict=True)])
    tests = list(dict.fromkeys(df["test"]))
    wide = df.pivot_table(index=keys, columns="test", values="cell", aggfunc="first",
                          sort=False)
    wide = wide[tests].reset_index()
    wide.columns.name = None
    return pa.Table.from_pandas(wide, preserve_index=False), alpha


def _grid(df: pd.DataFrame, title: str) -> tuple[Figure, np.ndarray, list, list]:
    """Panels (metric rows x size columns) sharing both axes, with fixed margins (no
    tight_layout pass: it would draw every log tick twice)."""
    metrics = list(dict.fromkeys(df["metric"]))
    sizes = sorted(set(df["n"]))
    # at least 7 inches wide: the legend (one row of up to five tests) must fit
    width, height = max(3.4 * len(sizes) + 1.0, 7.0), 2.8 * len(metrics) + 1.3
    fig = Figure(figsize=(width, height), dpi=110)
    axes = np.atleast_2d(fig.subplots(len(metrics), len(sizes), squeeze=False, sharex=True,
                                      sharey=True))
    fig.subplots_adjust(left=0.85 / width, right=1 - 0.2 / width, bottom=0.65 / height,
                        top=1 - 1.0 / height, wspace=0.12, hspace=0.28)
    fig.suptitle(title, fontsize=12, y=1 - 0.12 / height)
    return fig, axes, metrics, sizes


def _finish_panel(ax, cell: pd.DataFrame, metric: str, n: int, *, bottom: bool, left: bool,
                  xlabel: str, ylabel: str) -> None:
    """Title (metric, n, trials), grid, ticks; axis labels on the outer panels only."""
    trials = int(cell["trials"].max()) if not cell.empty else 0
    ax.set_title(f"{metric}, n = {n} ({trials} trials)", fontsize=9)
    ax.grid(alpha=0.3, which="major", linewidth=0.5)
    ax.tick_params(labelsize=8)
    if bottom:
        ax.set_xlabel(xlabel, fontsize=9)
    if left:
        ax.set_ylabel(ylabel, fontsize=9)


def _legend(fig: Figure, tests: list[str]) -> None:
    from matplotlib.lines import Line2D

    height = fig.get_figheight()
    handles = [Line2D([], [], color=_COLORS.get(t, "black"), marker="o", markersize=4,
                      label=_LABELS.get(t, t)) for t in tests]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.42 / height))


def type1_plots(table: pa.Table, out_dir: Path) -> list[Path]:
    """Per alternative: Type I error rate (delta = 0) against alpha on log-log axes, one
    panel per (metric, n), one line per test with its Clopper-Pearson band; the diagonal
    is the nominal level. Rates of 0 are drawn at the bottom edge."""
    df = table.to_pandas()
    df = df[df["delta"] == 0.0]
    paths: list[Path] = []
    for alt, part in df.groupby("alternative", sort=False):
        fig, axes, metrics, sizes = _grid(part, f"Type I error vs alpha ({alt})")
        tests = list(dict.fromkeys(part["test"]))
        amin, amax = part["alpha"].min(), part["alpha"].max()
        floor = amin / 4
        for i, metric in enumerate(metrics):
            for j, n in enumerate(sizes):
                ax = axes[i, j]
                cell = part[(part["metric"] == metric) & (part["n"] == n)]
                ax.plot([floor, amax * 1.5], [floor, amax * 1.5], color="grey",
                        linestyle="--", linewidth=0.8)
                for test in tests:
                    r = cell[cell["test"] == test].sort_values("alpha")
                    if r.empty:
                        continue
                    c = _COLORS.get(test, "black")
                    ax.fill_between(r["alpha"], np.maximum(r["ci_lo"], floor),
                                    np.maximum(r["ci_hi"], floor), color=c, alpha=0.12,
                                    linewidth=0)
                    ax.plot(r["alpha"], np.maximum(r["rate"], floor), color=c, marker="o",
                            markersize=2.5, linewidth=1.2)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlim(amin / 1.3, amax * 1.3)
                ax.set_ylim(floor, max(amax * 1.5, float(part["ci_hi"].max()) * 1.1))
                _finish_panel(ax, cell, metric, n, bottom=i == len(metrics) - 1, left=j == 0,
                              xlabel="significance level alpha", ylabel="Type I error rate")
        _legend(fig, tests)
        path = Path(out_dir) / f"type1_error_{alt}.png"
        fig.savefig(path)
        paths.append(path)
    return paths


def power_plots(table: pa.Table, out_dir: Path, alpha: float = 0.05) -> list[Path]:
    """Per alternative: power against the true difference delta at one alpha (0.05 or
    the nearest level), one panel per (metric, n), one line per test with its
    Clopper-Pearson band; delta = 0 is the Type I error."""
    df = table.to_pandas()
    if df.empty or (df["delta"] <= 0).all():
        return []
    alpha = nearest_alpha(df["alpha"], alpha)
    df = df[df["alpha"] == alpha]
    paths: list[Path] = []
    for alt, part in df.groupby("alternative", sort=False):
        fig, axes, metrics, sizes = _grid(part, f"Power vs true difference "
                                                f"(alpha = {alpha}, {alt})")
        tests = list(dict.fromkeys(part["test"]))
        dmax = part["delta"].max()
        for i, metric in enumerate(metrics):
            for j, n in enumerate(sizes):
                ax = axes[i, j]
                cell = part[(part["metric"] == metric) & (part["n"] == n)]
                ax.axhline(alpha, color="grey", linestyle="--", linewidth=0.8)
                for test in tests:
                    r = cell[cell["test"] == test].sort_values("delta")
                    if r.empty:
                        continue
                    c = _COLORS.get(test, "black")
                    ax.fill_between(r["delta"], r["ci_lo"], r["ci_hi"], color=c, alpha=0.15,
                                    linewidth=0)
                    ax.plot(r["delta"], r["rate"], color=c, marker="o", markersize=2.5,
                            linewidth=1.2)
                ax.set_xlim(min(0.0, part["delta"].min()), dmax * 1.02)
                ax.set_ylim(0, 1.02)
                _finish_panel(ax, cell, metric, n, bottom=i == len(metrics) - 1, left=j == 0,
                              xlabel="true difference in mean (delta)",
                              ylabel="power (rejection rate)")
        _legend(fig, tests)
        path = Path(out_dir) / f"power_{alt}.png"
        fig.savefig(path)
        paths.append(path)
    return paths


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Markdown of the report: the fit table, Type I error and power tables (at alpha = 0.05
    or the nearest level) and their plots (PNG files written into `run_dir`).

    Examples
    --------
    >>> fit = pa.table({"metric": ["AP"], "margin": ["kernel"]})
    >>> sections({"test_errors_fit": fit}, Path("."))[:2]
    ['## Generator', '']
    """
    from irsim.report import markdown_table

    lines: list[str] = []
    if "test_errors_fit" in tables:
        lines += ["## Generator", "",
                  "One simulator per metric, fit to the collection: margins (kernel: logit-"
                  "scale kernel density with the observed atoms at 0 and 1 and the observed "
                  "mean; empirical: the observed scores, for discrete metrics), a Gaussian "
                  "copula per system pair reproducing its Pearson correlation. ks_mean/ks_max: "
                  "KS distance between fitted and observed margins.", "",
                  markdown_table(tables["test_errors_fit"]), ""]
    if "test_errors" not in tables:
        return lines
    te = tables["test_errors"]
    type1, alpha = summary_table(te, delta=0.0)
    if type1 is not None:
        lines += ["## Type I error", "",
                  f"Share of trials with p <= alpha = {alpha} when the two systems are "
                  "exchangeable (delta = 0); 95% Clopper-Pearson interval in brackets. A "
                  "test is exact when alpha lies inside its interval.", "",
                  markdown_table(type1, max_rows=60), ""]
        for path in type1_plots(te, run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    power, alpha = summary_table(te, delta=None)
    if power is not None:
        lines += ["## Power", "",
                  f"Share of trials with p <= alpha = {alpha} when the experimental system's "
                  "true mean exceeds the baseline's by delta.", "",
                  markdown_table(power, max_rows=60), ""]
        for path in power_plots(te, run_dir):
            lines += [f"![{path.stem}]({path.name})", ""]
    return lines
