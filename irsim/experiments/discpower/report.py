"""Report of the discpower study (Sakai 2006): discriminative power (raw and after the
multiple-comparison correction), ASL curves, test agreement with scatter-plot matrices of
p-values (Smucker et al. 2007), MR-PT curves, the bootstrap swap method's swap rates and the
Kendall tau matrix.

The plot functions read one result table each and write PNG files (matplotlib, Agg canvas
through :class:`matplotlib.figure.Figure`, no global state changed) into a directory,
returning their paths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from irsim.report import figure_lines, markdown_table, safe_name, save_figure
from irsim.report.plots import FIGURES as ASL_FIGURES
from irsim.report.plots import asl_curves
from irsim.stats.registry import legend_of

__all__ = ["sections", "mr_pt_curves", "swap_rate_curves", "tau_matrix", "pvalue_matrices",
           "bayes_sections", "bayes_plot", "FIGURES"]

#: Figures of this report: the ASL curves (:data:`irsim.report.plots.FIGURES`) and its own
#: (``<metric>`` as :func:`irsim.report.safe_name` spells it).
FIGURES = (*ASL_FIGURES, "mr_pt_curves.png", "swap_rates_<kind>.png", "tau_matrix.png",
           "pvalues_<metric>.png", "bayes_discpower.png")


def sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Discriminative power, ASL curves, MR-PT curves, swap rates and the tau matrix.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"], "test": ["t"], "alpha": [0.05], "pairs": [3],
    ...               "significant": [1], "sensitivity": [1 / 3], "estimated_diff": [0.1],
    ...               "estimated_diff_raw": [0.0987]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     sections({"discpower": t}, Path(d))[0]
    '## Discriminative power'
    """
    lines: list[str] = []
    if "discpower" in tables:
        lines += ["## Discriminative power", "",
                  "Share of system pairs with ASL < alpha (sensitivity) and the estimated "
                  "difference required for ASL < alpha (rounded to two significant figures, "
                  "raw value beside it). `AG x` is the paired test on log(x + 1e-5), `G x` "
                  "the unpaired test of the geometric mean.", "",
                  "Estimated difference: paired bootstrap, |mean(w*b)| of the sample with "
                  "the ceil(alpha B)-th largest |t*|, max over pairs (Sakai 2006; it need "
                  "not shrink with alpha when |t*| and |mean| part ways, e.g. AG scores "
                  "with many zeros); unpaired bootstrap, the ceil(alpha B)-th largest |d*|, "
                  "max over pairs; t, t(1 - alpha/2, n-1) sd/sqrt(n), max over pairs; "
                  "randomised Tukey HSD, the ceil(alpha B)-th largest null range; Tukey HSD, "
                  "the honestly significant difference; none (empty) for Wilcoxon, sign and "
                  "randomisation.", "",
                  "`significant_adjusted` and `sensitivity_adjusted` count the pairs whose ASL "
                  "adjusted by `correction` over all pairs of the metric and test is below "
                  "alpha (Bonferroni and Holm bound the family-wise error rate, BH and BY the "
                  "false discovery rate); Tukey HSD and randomised Tukey HSD are simultaneous "
                  "tests already and are not adjusted again. Monte Carlo ASLs of 0 stay 0 "
                  "under every correction: with `pvalue=count` a small B lets them pass any "
                  "correction (use `pvalue=plus_one`); with `plus_one` no Monte Carlo ASL "
                  "passes Bonferroni or Holm unless B >= pairs / alpha.", "",
                  markdown_table(tables["discpower"], max_rows=80), ""]
    if "asl" in tables:
        lines += ["## ASL curves", "",
                  "Each line is one metric: its system pairs sorted by ASL. A metric whose "
                  "curve stays low for more pairs discriminates more pairs.", ""]
        lines += figure_lines(asl_curves(tables["asl"], run_dir))
    if "test_agreement" in tables and tables["test_agreement"].num_rows:
        lines += ["## Test agreement", "",
                  "For every pair of tests (Smucker, Allan & Carterette 2007): Pearson's r "
                  "and the RMSE of their p-values over all system pairs, and the share of "
                  "pairs significant (ASL < alpha, uncorrected) by both, by the first only, "
                  "by the second only and by neither. Large `only_a` + `only_b` means the "
                  "choice of test decides which pairs are called different.", "",
                  markdown_table(tables["test_agreement"], max_rows=120), ""]
        if "asl" in tables:
            lines += ["Scatter-plot matrices: one point per system pair, the p-values of two "
                      "tests against each other (lower triangle), the distribution of each "
                      "test's p-values (diagonal) and r / RMSE (upper triangle); dashed "
                      "lines at 0.05. Points off the diagonal are pairs the tests judge "
                      "differently.", ""]
            lines += figure_lines(pvalue_matrices(tables["asl"], run_dir))
    if "stability" in tables:
        lines += ["## Stability (MR-PT curves)", "",
                  "Minority rate (how often the bootstrap samples disagree with the majority "
                  "verdict on a pair) against the proportion of ties, one point per "
                  "fuzziness value: curves nearer the origin are more stable and "
                  "discriminate more.", ""]
        lines += figure_lines(mr_pt_curves(tables["stability"], run_dir))
    if "swap_summary" in tables:
        lines += ["## Bootstrap swap method", "",
                  "Swap rate (share of comparisons where a second bootstrap sample reverses "
                  "the order of the pair) per bin of the difference |D|; the required "
                  "difference is the smallest bin edge from which every swap rate stays at "
                  "or below 1 - confidence; sensitivity is the share of comparisons with a "
                  "difference at least that large.", "",
                  markdown_table(_filled(tables["swap_summary"])), ""]
        lines += figure_lines(swap_rate_curves(tables["swap_rates"], run_dir))
    if "rankcorr" in tables and tables["rankcorr"].num_rows:
        lines += ["## Rank correlation", "",
                  "Kendall's tau between the system rankings of two metrics, its bootstrap "
                  "standard error over the topic samples, and the Z0 test.", "",
                  markdown_table(tables["rankcorr"]), ""]
        lines += figure_lines(tau_matrix(tables["rankcorr"], run_dir))
    return lines + bayes_sections(tables, run_dir)


def bayes_sections(tables: dict[str, pa.Table], run_dir: Path) -> list[str]:
    """Markdown of table ``bayes_discpower`` (``experiment.bayes``): the Bayesian rules'
    decisions over all pairs beside the t test, and the figure.

    Examples
    --------
    >>> bayes_sections({}, Path("."))
    []
    """
    bd = tables.get("bayes_discpower")
    if bd is None or not bd.num_rows:
        return []
    df = bd.to_pandas()
    rules = "; ".join(f"`{t}`: {r}" for t, r in dict(zip(df["test"], df["rule"],
                                                        strict=True)).items())
    t_alpha = float(df["t_alpha"].iloc[0])
    lines = ["## Bayesian decisions", "",
             "Every system pair decided by the Bayesian tests of `experiment.bayes` "
             f"({rules}): `better` (the first system credibly better), `worse`, "
             "`equivalent` or `undecided`. `sensitivity` is the share of pairs decided "
             "different (better or worse), the Bayesian counterpart of discriminative power; "
             f"`t_sensitivity` is the paired t test's at p < {t_alpha:g} (1 - "
             "`experiment.bayes_prob`) and `both` counts the pairs both call different. A "
             "Bayesian rule is not calibrated to a level: a higher sensitivity is not better "
             "by itself (see the known-truth error rates of experiment=test_errors and "
             "multiple_testing). `equivalent` is a positive finding the t test cannot make: "
             "the pair's difference is credibly inside the ROPE (for the Bayes factor: the "
             "evidence favours no difference). Every pair's decision and evidence: "
             "`results/bayes_pairs.parquet`.", "",
             markdown_table(bd.select(["metric", "test", "pairs", "better", "worse",
                                       "equivalent", "undecided", "sensitivity",
                                       "t_sensitivity", "both"]), max_rows=60), ""]
    lines += figure_lines(bayes_plot(bd, run_dir))
    return lines


def bayes_plot(bayes_discpower: pa.Table, out_dir: str | Path) -> list[Path]:
    """``bayes_discpower.png``: one bar per (metric, Bayesian test) split into the shares
    of pairs decided different, equivalent and undecided, with the t test's sensitivity
    as a black diamond on the same row."""
    df = bayes_discpower.to_pandas()
    if df.empty:
        return []
    rows = len(df)
    fig = Figure(figsize=(8.0, 1.9 + 0.34 * rows))
    ax = fig.add_subplot()
    y = np.arange(rows)[::-1].astype(float)
    undecided = df["undecided"].to_numpy(np.float64) / df["pairs"].to_numpy(np.float64)
    left = np.zeros(rows)
    for values, colour, label in (
            (df["sensitivity"].to_numpy(np.float64), "tab:blue",
             "different (better or worse)"),
            (df["equivalent_share"].to_numpy(np.float64), "tab:green", "equivalent"),
            (undecided, "lightgrey", "undecided")):
        ax.barh(y, values, left=left, height=0.7, color=colour, label=label)
        left = left + values
    t_alpha = float(df["t_alpha"].iloc[0])
    ax.plot(df["t_sensitivity"].to_numpy(np.float64), y, linestyle="none", marker="D",
            markersize=6, color="black", label=f"t test: share p < {t_alpha:g}")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{m} | {legend_of(t)}"
                        for m, t in zip(df["metric"], df["test"], strict=True)], fontsize=8)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_xlabel("share of system pairs")
    height = fig.get_figheight()
    fig.legend(loc="upper center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.08 / height))
    fig.subplots_adjust(top=1 - 0.75 / height, bottom=0.7 / height, left=0.36, right=0.97)
    return [save_figure(fig, Path(out_dir) / "bayes_discpower.png")]


def _filled(table: pa.Table) -> pa.Table:
    """`table` without its all-null columns (another study's columns of a shared table)."""
    return table.select([c for c in table.column_names
                         if table.column(c).null_count < table.num_rows or not table.num_rows])


_MARKERS = "osD^vP*Xh<>p"


def _metric_style(i: int) -> dict:
    return {"marker": _MARKERS[i % len(_MARKERS)], "color": f"C{i % 10}"}


def mr_pt_curves(stability: pa.Table, out_dir: str | Path) -> list[Path]:
    """MR-PT curves (Sakai 2006, Fig. 10): minority rate against proportion of ties, one
    line per metric, one point per fuzziness value (PT grows with the fuzziness, so the
    points run from the smallest fuzziness on the left to the largest on the right).

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP", "AP"], "fuzziness": [0.01, 0.2],
    ...               "minority_rate": [0.05, 0.01], "prop_ties": [0.02, 0.4]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in mr_pt_curves(t, d)]
    ['mr_pt_curves.png']
    """
    df = stability.to_pandas()
    fig = Figure(figsize=(7, 4.6), dpi=120)
    ax = fig.subplots()
    for i, (metric, part) in enumerate(df.groupby("metric", sort=False)):
        part = part.sort_values("fuzziness")
        x, y = part["prop_ties"].to_numpy(), part["minority_rate"].to_numpy()
        ax.plot(x, y, label=str(metric), linewidth=1.3, markersize=3.5, **_metric_style(i))
    if len(df):
        fz = np.sort(df["fuzziness"].unique())
        ax.set_title(f"Stability: MR-PT curves (fuzziness {fz[0]:g} to {fz[-1]:g}; "
                     "ties grow with fuzziness)", fontsize=10)
    ax.set_xlabel("proportion of ties (PT); one point per fuzziness, growing to the right")
    ax.set_ylabel("minority rate (MR)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(title="metric", fontsize=8)
    fig.tight_layout()
    return [save_figure(fig, Path(out_dir) / "mr_pt_curves.png")]


def swap_rate_curves(swap_rates: pa.Table, out_dir: str | Path) -> list[Path]:
    """Swap rate per bin of the absolute difference, one line per metric, with the 5%
    line (Sakai 2006, Section 3.5). Bins without comparisons are left out.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 3, "bin_kind": ["absolute"] * 3,
    ...               "bin_lo": [0.0, 0.01, 0.02], "bin_hi": [0.01, 0.02, float("inf")],
    ...               "comparisons": [10, 10, 0], "swap_rate": [0.3, 0.04, None]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in swap_rate_curves(t, d)]
    ['swap_rates_absolute.png']
    """
    df = swap_rates.to_pandas()
    paths = []
    for kind, rows in df.groupby("bin_kind", sort=False):
        fig = Figure(figsize=(7.5, 4.4), dpi=120)
        ax = fig.subplots()
        for i, (metric, part) in enumerate(rows.groupby("metric", sort=False)):
            part = part[part["comparisons"] > 0].sort_values("bin_lo")
            ax.plot(part["bin_lo"].to_numpy(), part["swap_rate"].to_numpy(),
                    label=str(metric), linewidth=1.3, markersize=3.5, **_metric_style(i))
        for level, style in ((0.05, "--"),):
            ax.axhline(level, color="grey", linestyle=style, linewidth=0.8)
            ax.annotate(f"{level:.0%}", (0, level), textcoords="offset points",
                        xytext=(2, 2), fontsize=8, color="grey")
        lo = np.sort(rows["bin_lo"].unique())
        if kind == "absolute" and len(lo):
            ax.set_xticks(lo[::2])
            ax.set_xticklabels([f"{v:.2f}" for v in lo[::2]], fontsize=8)
            ax.set_xlabel("absolute difference |D| (bin lower edge; last bin open)")
        else:
            ax.set_xlabel(f"{kind} difference (bin lower edge)")
        ax.set_ylabel("swap rate")
        ax.set_ylim(bottom=0)
        ax.set_title("Bootstrap swap method: swap rate by difference", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(title="metric", fontsize=8)
        fig.tight_layout()
        paths.append(save_figure(fig, Path(out_dir) / f"swap_rates_{kind}.png"))
    return paths


def tau_matrix(rankcorr: pa.Table, out_dir: str | Path) -> list[Path]:
    """Kendall's tau of every metric pair as a matrix (Sakai 2006, Figs. 12-13): the upper
    triangle shows tau, the lower its bootstrap standard error; cells with a Z0 test not
    significant at 0.01 are marked.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric_a": ["AP"], "metric_b": ["P@10"], "tau": [0.8],
    ...               "se_boot": [0.03], "p_value": [1e-9]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in tau_matrix(t, d)]
    ['tau_matrix.png']
    """
    df = rankcorr.to_pandas()
    names: list[str] = []
    for a, b in zip(df["metric_a"], df["metric_b"], strict=True):
        for x in (a, b):
            if x not in names:
                names.append(x)
    m = len(names)
    pos = {x: i for i, x in enumerate(names)}
    tau = np.full((m, m), np.nan)
    se = np.full((m, m), np.nan)
    for r in df.itertuples():
        i, j = sorted((pos[r.metric_a], pos[r.metric_b]))
        tau[i, j] = r.tau
        se[j, i] = r.se_boot
    size = max(4.5, 1.1 * m + 2.2)
    fig = Figure(figsize=(size + 1.2, size), dpi=120)
    ax = fig.subplots()
    vmin = 0.0 if not (tau < 0).any() else -1.0
    img = ax.imshow(tau, cmap="viridis", vmin=vmin, vmax=1)
    se_max = np.nanmax(se) if np.isfinite(se).any() else 0.1
    ax.imshow(se, cmap="Greys", vmin=0,
              vmax=max(se_max * 2.5, 1e-9))
    sig = {(pos[r.metric_a], pos[r.metric_b]): r.p_value for r in df.itertuples()}
    fs = 10 if m <= 6 else 8
    for i in range(m):
        for j in range(m):
            if i < j and np.isfinite(tau[i, j]):
                p = sig.get((i, j), sig.get((j, i), 0.0))
                mark = "" if p < 0.01 else "\n(n.s.)"
                ax.text(j, i, f"τ={tau[i, j]:.3f}{mark}", ha="center", va="center",
                        fontsize=fs, color="white" if tau[i, j] < vmin + 0.6 * (1 - vmin)
                        else "black")
            elif i > j and np.isfinite(se[i, j]):
                ax.text(j, i, f"se={se[i, j]:.3f}", ha="center", va="center", fontsize=fs,
                        color="black")
            elif i == j:
                ax.text(j, i, names[i], ha="center", va="center", fontsize=max(fs - 1, 8),
                        color="dimgrey")
    ax.set_xticks(range(m))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=fs)
    ax.set_yticks(range(m))
    ax.set_yticklabels(names, fontsize=fs)
    ax.set_title("Kendall's τ (upper) and bootstrap SE (lower)", fontsize=10)
    cbar = fig.colorbar(img, ax=ax, fraction=0.046, pad=0.04)
    cbar.set_label("τ")
    fig.tight_layout()
    return [save_figure(fig, Path(out_dir) / "tau_matrix.png")]


def pvalue_matrices(asl: pa.Table, out_dir: str | Path) -> list[Path]:
    """Scatter-plot matrix of the tests' p-values, one figure per metric with two or more
    tests (``pvalues_<metric>.png``): one point per system pair; lower triangle p-value of
    the row's test against the column's, diagonal histogram of each test's p-values, upper
    triangle Pearson's r and the RMSE.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"metric": ["AP"] * 6, "test": ["t"] * 3 + ["sign"] * 3,
    ...               "system_a": ["a", "a", "b"] * 2, "system_b": ["b", "c", "c"] * 2,
    ...               "asl": [0.01, 0.3, 0.02, 0.03, 0.5, 0.2]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in pvalue_matrices(t, d)]
    ['pvalues_AP.png']
    """
    df = asl.to_pandas()
    paths = []
    for metric, rows in df.groupby("metric", sort=False):
        wide = rows.pivot(index=["system_a", "system_b"], columns="test", values="asl")
        tests = [t for t in rows["test"].unique() if t in wide.columns]
        if len(tests) < 2:
            continue
        k = len(tests)
        side = min(2.1 * k + 0.6, 16.0)  # at most 1760 px at 110 dpi
        fig = Figure(figsize=(side, side + 0.3), dpi=110)
        axes = np.asarray(fig.subplots(k, k, squeeze=False))
        for i, ti in enumerate(tests):
            for j, tj in enumerate(tests):
                ax = axes[i, j]
                pi, pj = wide[ti].to_numpy(), wide[tj].to_numpy()
                if i == j:
                    ax.hist(pi[np.isfinite(pi)], bins=20, range=(0, 1), color="C0")
                    ax.set_xlim(0, 1)
                    ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
                    ax.yaxis.set_major_locator(MaxNLocator(3, integer=True))
                elif i > j:
                    ax.scatter(pj, pi, s=3, alpha=0.4, color="C0", linewidths=0)
                    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.6)
                    ax.axhline(0.05, color="C3", linestyle="--", linewidth=0.6)
                    ax.axvline(0.05, color="C3", linestyle="--", linewidth=0.6)
                    ax.set_xlim(0, 1)
                    ax.set_ylim(0, 1)
                    ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
                    ax.set_yticks([0, 0.5, 1], ["0", ".5", "1"])
                else:
                    ok = np.isfinite(pi) & np.isfinite(pj)
                    r = (np.corrcoef(pi[ok], pj[ok])[0, 1] if ok.sum() > 1
                         and pi[ok].std() > 0 and pj[ok].std() > 0 else float("nan"))
                    rmse = float(np.sqrt(np.mean((pi[ok] - pj[ok]) ** 2))) if ok.any() else 0
                    ax.text(0.5, 0.5, f"r = {r:.3f}\nRMSE = {rmse:.3f}", ha="center",
                            va="center", fontsize=8, transform=ax.transAxes)
                    ax.set_xticks([])
                    ax.set_yticks([])
                if i == k - 1:
                    ax.set_xlabel(tj.replace("_", " "), fontsize=8)
                if j == 0:
                    ax.set_ylabel(ti.replace("_", " "), fontsize=8)
                ax.tick_params(labelsize=8)
        fig.suptitle(f"p-values of every system pair by test: {metric}", fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / (side + 0.3)))
        paths.append(save_figure(fig, Path(out_dir) / f"pvalues_{safe_name(str(metric))}.png"))
    return paths
