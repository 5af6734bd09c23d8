"""Report of experiment=test_errors: the generator's fit, Type I error against alpha and
power against delta, as tables and plots (matplotlib Agg figures, no global state changed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from irsim.report import colour_of, figure_lines, markdown_table, save_figure, type_m_s
from irsim.stats.registry import legend_of

__all__ = ["FIGURES", "sections", "nearest_alpha", "summary_table", "type1_plots", "power_plots",
           "type3_plots", "families_wide", "urbano_sections", "bayes_summary", "bayes_plots",
           "bayes_sections"]

#: Figures the report draws (``<tail>``: ``two-sided``, ``greater`` for design=shift,
#: ``one-sided`` for design=urbano2019; ``type3_error.png`` by design=urbano2019 only).
FIGURES = ("type1_error_<tail>.png", "power_<tail>.png", "type3_error.png",
           *type_m_s.FIGURES, "bayes_decisions.png")


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


def _panels(df: pd.DataFrame, axes: np.ndarray, metrics: list, sizes: list
            ) -> Iterator[tuple[Any, str, int, pd.DataFrame, dict[str, bool]]]:
    """Every panel of a (metric, n) grid of :func:`_grid`: ``(ax, metric, n, cell, edges)``,
    `cell` the rows of `df` of (metric, n), `edges` the keywords ``bottom`` and ``left`` of
    :func:`_finish_panel` (whether the panel is on the grid's outer edge)."""
    for i, metric in enumerate(metrics):
        for j, n in enumerate(sizes):
            yield (axes[i, j], metric, n, df[(df["metric"] == metric) & (df["n"] == n)],
                   {"bottom": i == len(metrics) - 1, "left": j == 0})


def _by_test(cell: pd.DataFrame, tests: list, x: str
             ) -> Iterator[tuple[int, str, pd.DataFrame]]:
    """``(k, test, rows)`` of every test of `tests` (index `k`) with rows in a panel's
    `cell`, sorted by the column `x`."""
    for k, test in enumerate(tests):
        r = cell[cell["test"] == test].sort_values(x)
        if not r.empty:
            yield k, test, r


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
    handles = [Line2D([], [], color=colour_of(t), marker="o", markersize=4,
                      label=legend_of(t)) for t in tests]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.42 / height))


def _series(ax, x: np.ndarray, rate: np.ndarray, lo: np.ndarray, hi: np.ndarray, colour: str,
            k: int, tests: int, *, log: bool = False, band_alpha: float = 0.15) -> None:
    """One test's rates with their interval: a line over a shaded band, or, for a single
    point (one alpha or delta), a marker with an error bar, nudged sideways by the test's
    index `k` of `tests` so that the tests' points stand side by side."""
    x, rate = np.asarray(x, np.float64), np.asarray(rate, np.float64)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if len(x) > 1:
        ax.fill_between(x, lo, hi, color=colour, alpha=band_alpha, linewidth=0)
        ax.plot(x, rate, color=colour, marker="o", markersize=2.5, linewidth=1.2)
        return
    step = 0.08 * (k - (tests - 1) / 2)
    xs = x * np.exp(step) if log else x * (1 + step) if x[0] != 0 else x + step * 0.01
    ax.errorbar(xs, rate, yerr=np.vstack([np.maximum(rate - lo, 0), np.maximum(hi - rate, 0)]),
                color=colour, marker="o", markersize=6, capsize=3, linestyle="none")


def _single_xlim(ax, values: np.ndarray, *, log: bool = False) -> bool:
    """Room around the one x value of a panel (a single alpha or delta); False when there
    are several."""
    v = np.unique(np.asarray(values, np.float64))
    if len(v) != 1:
        return False
    if log:
        ax.set_xlim(v[0] / 1.6, v[0] * 1.6)
    elif v[0] != 0:
        ax.set_xlim(v[0] * 0.6, v[0] * 1.4)
    else:
        ax.set_xlim(-0.01, 0.01)
    ax.set_xticks([v[0]])  # the one value sampled
    ax.set_xticklabels([f"{v[0]:g}"])
    ax.xaxis.set_minor_locator(NullLocator())
    return True


def type1_plots(table: pa.Table, out_dir: Path) -> list[Path]:
    """Per alternative: Type I error rate (delta = 0) against alpha on log-log axes, one
    panel per (metric, n), one line per test with its Clopper-Pearson band; the diagonal
    is the nominal level. Rates of 0 are drawn on a dotted line labelled 0 above the
    bottom edge, whole."""
    df = table.to_pandas()
    df = df[df["delta"] == 0.0]
    paths: list[Path] = []
    for alt, part in df.groupby("alternative", sort=False):
        fig, axes, metrics, sizes = _grid(part, f"Type I error vs alpha ({alt})")
        tests = list(dict.fromkeys(part["test"]))
        amin, amax = part["alpha"].min(), part["alpha"].max()
        floor = amin / 4
        for ax, metric, n, cell, edges in _panels(part, axes, metrics, sizes):
            ax.plot([floor, amax * 1.5], [floor, amax * 1.5], color="grey",
                    linestyle="--", linewidth=0.8)
            for k, test, r in _by_test(cell, tests, "alpha"):
                _series(ax, r["alpha"], np.maximum(r["rate"], floor),
                        np.maximum(r["ci_lo"], floor), np.maximum(r["ci_hi"], floor),
                        colour_of(test), k, len(tests), log=True,
                        band_alpha=0.12)
            ax.set_xscale("log")
            ax.set_yscale("log")
            if not _single_xlim(ax, part["alpha"], log=True):
                ax.set_xlim(amin / 1.3, amax * 1.3)
            ax.set_ylim(floor / 1.8, max(amax * 1.5, float(part["ci_hi"].max()) * 1.1))
            if (cell["rate"] < floor).any():  # rates of 0 (and below the floor) drawn on it
                ax.axhline(floor, color="grey", linestyle=":", linewidth=0.7)
                ax.annotate("0", (0.0, floor), xycoords=("axes fraction", "data"),
                            xytext=(-3, 0), textcoords="offset points", ha="right",
                            va="center", fontsize=8)
            _finish_panel(ax, cell, metric, n, **edges,
                          xlabel="significance level alpha", ylabel="Type I error rate")
        _legend(fig, tests)
        paths.append(save_figure(fig, Path(out_dir) / f"type1_error_{alt}.png"))
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
        for ax, metric, n, cell, edges in _panels(part, axes, metrics, sizes):
            ax.axhline(alpha, color="grey", linestyle="--", linewidth=0.8)
            for k, test, r in _by_test(cell, tests, "delta"):
                _series(ax, r["delta"], r["rate"], r["ci_lo"], r["ci_hi"],
                        colour_of(test), k, len(tests))
            if not _single_xlim(ax, part["delta"]):
                ax.set_xlim(min(0.0, part["delta"].min()), dmax * 1.02)
            ax.set_ylim(0, 1.02)
            _finish_panel(ax, cell, metric, n, **edges,
                          xlabel="true difference in mean (delta)",
                          ylabel="power (rejection rate)")
        _legend(fig, tests)
        paths.append(save_figure(fig, Path(out_dir) / f"power_{alt}.png"))
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
    if "type_1" in tables:
        return (urbano_sections(tables, run_dir) + type_m_s.sections(tables, run_dir)
                + bayes_sections(tables, run_dir))
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
        lines += figure_lines(type1_plots(te, run_dir))
    power, alpha = summary_table(te, delta=None)
    if power is not None:
        lines += ["## Power", "",
                  f"Share of trials with p <= alpha = {alpha} when the experimental system's "
                  "true mean exceeds the baseline's by delta.", "",
                  markdown_table(power, max_rows=60), ""]
        lines += figure_lines(power_plots(te, run_dir))
    return lines + type_m_s.sections(tables, run_dir) + bayes_sections(tables, run_dir)


# ----------------------------------------------------------------------------- urbano2019


def _as_alternative(table: pa.Table) -> pa.Table:
    """A type_k table in the layout of ``test_errors`` (``alternative`` = tail; delta 0 for
    type_1), so the plots and summaries above serve both designs."""
    df = table.to_pandas().rename(columns={"tail": "alternative"})
    if "delta" not in df:
        df["delta"] = 0.0
    return pa.Table.from_pandas(df, preserve_index=False)


def families_wide(table: pa.Table, kind: str) -> pa.Table | None:
    """Counts of the `kind` (``margin`` or ``copula``) families: one row per family, one
    column per metric (0 where not chosen), rows by total count.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP", "AP", "RR"], "kind": ["margin"] * 3,
    ...               "family": ["beta", "kernel", "dks"], "count": [5, 2, 7],
    ...               "share": [5 / 7, 2 / 7, 1.0]})
    >>> families_wide(t, "margin").to_pylist()[0]
    {'family': 'dks', 'AP': 0, 'RR': 7}
    """
    df = table.to_pandas()
    df = df[df["kind"] == kind]
    if df.empty:
        return None
    metrics = list(dict.fromkeys(df["metric"]))
    wide = df.pivot_table(index="family", columns="metric", values="count", aggfunc="sum",
                          fill_value=0)[metrics]
    wide = wide.loc[wide.sum(axis=1).sort_values(ascending=False, kind="stable").index]
    wide = wide.reset_index()
    wide.columns.name = None
    return pa.Table.from_pandas(wide.astype({m: "int64" for m in metrics}),
                                preserve_index=False)


def type3_plots(table: pa.Table, out_dir: Path, alpha: float = 0.05) -> list[Path]:
    """Type III error rate (two-sided tests significant with the wrong sign) against delta
    at one alpha, one panel per (metric, n), one line per test with its band."""
    df = table.to_pandas()
    if df.empty:
        return []
    alpha = nearest_alpha(df["alpha"], alpha)
    df = df[df["alpha"] == alpha]
    fig, axes, metrics, sizes = _grid(df, f"Type III error vs true difference (alpha = "
                                          f"{alpha}, two-sided)")
    tests = list(dict.fromkeys(df["test"]))
    for ax, metric, n, cell, edges in _panels(df, axes, metrics, sizes):
        for k, test, r in _by_test(cell, tests, "delta"):
            _series(ax, r["delta"], r["rate"], r["ci_lo"], r["ci_hi"],
                    colour_of(test), k, len(tests))
        top = max(float(df["ci_hi"].max()) * 1.05, 1e-3)
        # a single delta: its markers whole, also at a rate of 0
        ax.set_ylim(-0.03 * top if _single_xlim(ax, df["delta"]) else 0, top)
        _finish_panel(ax, cell, metric, n, **edges,
                      xlabel="true difference in mean (delta)",
                      ylabel="Type III error rate")
    _legend(fig, tests)
    return [save_figure(fig, Path(out_dir) / "type3_error.png")]


def urbano_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Markdown of a ``design=urbano2019`` run: the generators (collections, families chosen
    per metric), then Type I, power (Type II) and Type III summaries at alpha = 0.05 (or the
    nearest level) with their figures.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"], "kind": ["margin"], "family": ["beta"],
    ...               "count": [3], "share": [1.0]})
    >>> urbano_sections({"test_errors_families": t}, Path("."))[:1]
    ['## Generators']
    """
    lines: list[str] = ["## Generators", "",
                        "Per (metric, collection), the runs kept after dropping duplicates "
                        "and the bottom share by mean, and the copulas fitted (one per pair). "
                        "Fitting time is in manifest.json (`collection.fit_seconds`; 0 when "
                        "the models came from `experiment.fit_cache`).", ""]
    if "test_errors_models" in tables:
        lines += [markdown_table(tables["test_errors_models"], max_rows=60), ""]
    fams = tables.get("test_errors_families")
    if fams is not None:
        for kind, what in (("margin", "Margin families selected by AIC (runs per metric)"),
                           ("copula", "Copula families selected by AIC, with rotation (pairs "
                                      "per metric)")):
            wide = families_wide(fams, kind)
            if wide is not None:
                lines += [f"### {what}", "", markdown_table(wide, max_rows=80), ""]
    if "type_1" in tables:
        t1 = _as_alternative(tables["type_1"])
        summary, alpha = summary_table(t1, delta=0.0)
        if summary is not None:
            lines += ["## Type I error", "",
                      f"Share of trials with p <= alpha = {alpha} when both runs go through "
                      "the first run's margin (equal true means); 95% Clopper-Pearson "
                      "interval in brackets. A test holds its level when alpha lies inside "
                      "its interval.", "", markdown_table(summary, max_rows=80), ""]
            lines += figure_lines(type1_plots(t1, run_dir))
    if "type_2" in tables and tables["type_2"].num_rows:
        t2 = _as_alternative(tables["type_2"])
        summary, alpha = summary_table(t2, delta=None)
        if summary is not None:
            lines += ["## Power (1 - Type II error)", "",
                      f"Share of trials significant at alpha = {alpha} with the true sign "
                      "when the experimental run's true mean is the baseline's + delta.", "",
                      markdown_table(summary, max_rows=80), ""]
            lines += figure_lines(power_plots(t2, run_dir))
    if "type_3" in tables and tables["type_3"].num_rows:
        t3 = _as_alternative(tables["type_3"])
        summary, alpha = summary_table(t3, delta=None)
        if summary is not None:
            lines += ["## Type III error", "",
                      f"Share of trials where a two-sided test is significant at alpha = "
                      f"{alpha} with the wrong sign (mean difference < 0 although delta > 0).",
                      "", markdown_table(summary, max_rows=80), ""]
            lines += figure_lines(type3_plots(tables["type_3"], run_dir))
    return lines


# ------------------------------------------------------------------ Bayesian decisions




def _t_rates(tables: dict[str, pa.Table], alpha: float = 0.05) -> tuple[pd.DataFrame, float]:
    """The two-sided t test's rates per (metric, n, delta) from table ``type_m_s`` (both
    designs): significant / trials (``t_different``), significant with the true sign
    (``t_power``) and with the wrong sign (``t_wrong``), counts and trials."""
    tm = tables.get("type_m_s")
    empty = pd.DataFrame(columns=["metric", "n", "delta", "trials", "t_different", "t_power",
                                  "t_wrong"])
    if tm is None or not tm.num_rows:
        return empty, alpha
    df = tm.to_pandas()
    df = df[(df["test"] == "t") & (df["alternative"] == "two-sided")]
    if df.empty:
        return empty, alpha
    alpha = nearest_alpha(df["alpha"], alpha)
    df = df[df["alpha"] == alpha].copy()
    wrong = df["wrong_sign"].fillna(0).astype("int64")
    null = df["delta"] == 0
    df["t_different"] = df["significant"].astype("int64")
    df["t_power"] = np.where(null, -1, df["significant"] - wrong)
    df["t_wrong"] = np.where(null, -1, wrong)
    return df[["metric", "n", "delta", "trials", "t_different", "t_power", "t_wrong"]], alpha


def _cell(k: int, trials: int) -> str:
    from irsim.stats.binomial import clopper_pearson

    lo, hi = clopper_pearson(np.array([k]), np.array([trials]))
    return _interval(k / trials, float(lo[0]), float(hi[0]))


def bayes_summary(tables: dict[str, pa.Table], alpha: float = 0.05
                  ) -> tuple[pa.Table | None, pa.Table | None, float]:
    """Two tables from ``bayes_decisions`` beside the two-sided t test at `alpha` (the
    nearest level of ``type_m_s``): the false "different" rate under delta = 0 (one row per
    metric and n) and, for delta != 0, the share decided in the true direction with the
    wrong-direction share in parentheses (one row per metric, n and delta); one column per
    test, rates with their 95% Clopper-Pearson interval.

    Examples
    --------
    >>> b = pa.table({"metric": ["AP", "AP"], "n": [25, 25], "delta": [0.0, 0.02],
    ...               "test": ["jzs_bf"] * 2, "trials": [100, 100], "better": [1, 30],
    ...               "worse": [1, 0], "equivalent": [70, 40]})
    >>> null, power, a = bayes_summary({"bayes_decisions": b})
    >>> null.to_pylist()
    [{'metric': 'AP', 'n': 25, 'jzs_bf': '0.0200 [0.0024, 0.0704]'}]
    >>> power.to_pylist()[0]["jzs_bf"]
    '0.3000 [0.2124, 0.3998] (wrong 0.0000)'
    """
    bd = tables.get("bayes_decisions")
    if bd is None or not bd.num_rows:
        return None, None, alpha
    df = bd.to_pandas()
    t, alpha = _t_rates(tables, alpha)
    tests = list(dict.fromkeys(df["test"]))
    keys = ["metric", "n", "delta"]
    cells = []
    for _, r in df.iterrows():
        k = int(r["trials"])
        if r["delta"] == 0:
            cell = _cell(int(r["better"] + r["worse"]), k)
        else:
            right, wrong = ((r["better"], r["worse"]) if r["delta"] > 0
                            else (r["worse"], r["better"]))
            cell = f"{_cell(int(right), k)} (wrong {int(wrong) / k:.4f})"
        cells.append(cell)
    wide = df.assign(cell=cells).pivot_table(index=keys, columns="test", values="cell",
                                             aggfunc="first", sort=False)[tests].reset_index()
    wide.columns.name = None
    label = f"t test (alpha={alpha:g})"
    if not t.empty:
        tcell = [_cell(int(d), int(k)) if p < 0 else
                 f"{_cell(int(p), int(k))} (wrong {int(w) / int(k):.4f})"
                 for d, p, w, k in zip(t["t_different"], t["t_power"], t["t_wrong"],
                                       t["trials"], strict=True)]
        wide = wide.merge(t[keys].assign(**{label: tcell}), on=keys, how="left")
        wide = wide[keys + [label] + tests]
    null = wide[wide["delta"] == 0].drop(columns="delta")
    power = wide[wide["delta"] != 0]
    return (pa.Table.from_pandas(null, preserve_index=False) if len(null) else None,
            pa.Table.from_pandas(power, preserve_index=False) if len(power) else None, alpha)


def bayes_plots(tables: dict[str, pa.Table], out_dir: Path, alpha: float = 0.05
                ) -> list[Path]:
    """``bayes_decisions.png``: per (metric, n), against delta, the share of trials each
    Bayesian rule calls different (better or worse: the false "different" rate at delta =
    0, about the power elsewhere; solid) and equivalent (dashed), beside the two-sided t
    test's rejection rate at `alpha` (the nearest level; black)."""
    from matplotlib.lines import Line2D

    bd = tables.get("bayes_decisions")
    if bd is None or not bd.num_rows:
        return []
    df = bd.to_pandas()
    t, alpha = _t_rates(tables, alpha)
    fig, axes, metrics, sizes = _grid(df, f"Bayesian decisions vs true difference (t test: "
                                          f"alpha = {alpha:g}, two-sided)")
    tests = list(dict.fromkeys(df["test"]))
    for ax, metric, n, cell, edges in _panels(df, axes, metrics, sizes):
        for k, test, r in _by_test(cell, tests, "delta"):
            colour = colour_of(test)
            _series(ax, r["delta"], r["different_rate"], r["different_lo"],
                    r["different_hi"], colour, k, len(tests) + 1)
            ax.plot(r["delta"], r["equivalent_rate"], color=colour, linestyle="--",
                    marker="s", markersize=3 if len(r) > 1 else 6, linewidth=1.0)
        tc = t[(t["metric"] == metric) & (t["n"] == n)].sort_values("delta")
        if not tc.empty:
            rate = (tc["t_different"] / tc["trials"]).to_numpy(np.float64)
            ax.plot(tc["delta"], rate, color="black", marker="o",
                    markersize=2.5 if len(tc) > 1 else 6, linewidth=1.2,
                    linestyle="-" if len(tc) > 1 else "none")
        if not _single_xlim(ax, df["delta"]):
            lo, hi = float(df["delta"].min()), float(df["delta"].max())
            pad = 0.02 * max(hi - lo, 1e-3)
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(-0.02, 1.02)
        _finish_panel(ax, cell, metric, n, **edges,
                      xlabel="true difference in mean (delta)", ylabel="share of trials")
    height = fig.get_figheight()
    handles = [Line2D([], [], color=colour_of(b), marker="o", markersize=4,
                      label=legend_of(b)) for b in tests]
    if not t.empty:
        handles.append(Line2D([], [], color="black", marker="o", markersize=4,
                              label="t test"))
    handles += [Line2D([], [], color="grey", linestyle="-", label="different"),
                Line2D([], [], color="grey", linestyle="--", marker="s", markersize=3,
                       label="equivalent")]
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 3), fontsize=9,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.42 / height))
    fig.subplots_adjust(top=1 - 1.25 / height)
    return [save_figure(fig, Path(out_dir) / "bayes_decisions.png")]


def bayes_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Markdown of table ``bayes_decisions`` (written with ``experiment.bayes``): the false
    "different" rate under delta = 0 and the power and wrong-direction rate for delta != 0
    of every Bayesian rule beside the t test, the equivalence shares, and the figure.

    Examples
    --------
    >>> bayes_sections({}, Path("."))
    []
    """
    null, power, alpha = bayes_summary(tables)
    if null is None and power is None:
        return []
    bd = tables["bayes_decisions"].to_pandas()
    rules = "; ".join(f"`{t}`: {r}" for t, r in dict(zip(bd["test"], bd["rule"],
                                                        strict=True)).items())
    beside = (f" Beside them, the two-sided t test at alpha = {alpha:g} (table `type_m_s`)."
              if any("t test" in c for c in (null or power).column_names) else "")
    lines = ["## Bayesian decisions", "",
             "The Bayesian tests of `experiment.bayes` on the same simulated trials, each "
             f"deciding better / worse / equivalent / undecided ({rules}).{beside} A Bayesian "
             "rule is not calibrated to a level: its false \"different\" rate is whatever "
             "its threshold gives, to be read against a test's Type I error rate.", ""]
    if null is not None:
        lines += ["### False \"different\" (delta = 0)", "",
                  "Share of trials decided better or worse when both systems have the same "
                  "true mean; 95% Clopper-Pearson interval in brackets.", "",
                  markdown_table(null, max_rows=60), ""]
    if power is not None:
        lines += ["### Power and wrong direction (delta != 0)", "",
                  "Share of trials decided in the true direction (the t test: significant "
                  "with the sign of delta) and, in parentheses, in the wrong direction.", "",
                  markdown_table(power, max_rows=80), ""]
    eq = bd.pivot_table(index=["metric", "n", "delta"], columns="test",
                        values="equivalent_rate", aggfunc="first", sort=False)
    eq = eq[list(dict.fromkeys(bd["test"]))].reset_index()
    eq.columns.name = None
    if (eq.drop(columns=["metric", "n", "delta"]) > 0).any().any():
        lines += ["### Equivalent", "",
                  "Share of trials decided equivalent: correct when |delta| lies inside the "
                  "ROPE (for the Bayes factor: when delta = 0), an error outside it.", "",
                  markdown_table(pa.Table.from_pandas(eq, preserve_index=False), max_rows=80),
                  ""]
    lines += figure_lines(bayes_plots(tables, run_dir, alpha))
    return lines
