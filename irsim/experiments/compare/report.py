"""Report of ``experiment=compare``: per metric, one row per pair with the difference, its
interval, the effect size and each test's corrected p-value; a forest plot of the
differences."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from irsim.report import fmt, markdown_table, safe_name, save_figure

__all__ = ["sections", "FIGURES", "forest_plot"]

FIGURES = ("compare_<metric>.png",)


def forest_plot(df, metric: str, path: Path) -> None:
    """Each pair's difference with its interval (one row per pair), 0 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = df.drop_duplicates(["system_a", "system_b"])
    labels = [f"{a} - {b}" for a, b in zip(pairs.system_a, pairs.system_b, strict=True)]
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(labels) + 1.4))
    ys = list(range(len(labels)))[::-1]
    ax.errorbar(pairs["diff"], ys, xerr=[pairs["diff"] - pairs.ci_lo,
                                         pairs.ci_hi - pairs["diff"]],
                fmt="o", color="C0", capsize=3)
    ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
    ax.set_yticks(ys, labels)
    ax.set_xlabel(f"difference in mean {metric} (paired t interval)")
    ax.set_title(f"{metric}: differences between the chosen systems")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


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
