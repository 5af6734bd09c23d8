"""Reports: the sweep report over a real multirun, the one number format of every report,
figure declarations, the lower-bound flag of required_diff and the evaluate report."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import irsim
from irsim.errors import InputError
from irsim.report import MISSING, figures, fmt, markdown_table


def irsim_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real 3-job multirun on the local engine (tiny B)."""
    root = tmp_path_factory.mktemp("sweep")
    out = root / "sw"
    r = irsim_cli("-m", "collection=synthetic_scores", "collection.systems=8",
                  "experiment.B=100,200,400", "experiment.tests=[paired_bootstrap]",
                  "experiment.swap=true", "quiet=true", f"hydra.sweep.dir={out}", cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _md_table(text: str, heading: str) -> pd.DataFrame:
    """The first Markdown table after `heading` in `text`, as strings."""
    block = text.split(heading, 1)[1]
    table = []
    for ln in block.splitlines():
        if ln.startswith("|"):
            table.append(ln)
        elif table:
            break
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in table
             if not set(ln.replace("|", "").strip()) <= {"-"}]
    return pd.DataFrame(cells[1:], columns=cells[0])


@pytest.mark.slow
def test_sweep_report_compares_jobs(sweep):
    r = irsim_cli("report", str(sweep), cwd=sweep.parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sweep / "sweep.md")
    text = (sweep / "sweep.md").read_text()
    assert "3 jobs; swept: `experiment.B` (100, 200, 400)" in text
    wide = _md_table(text, "## `discpower`: sensitivity")
    assert list(wide.columns) == ["metric", "test", "alpha", "experiment.B=100",
                                  "experiment.B=200", "experiment.B=400"]
    # every cell is the job's own sensitivity, read independently of irsim's merge
    for job, b in enumerate((100, 200, 400)):
        own = pd.read_parquet(sweep / str(job) / "results" / "discpower.parquet")
        for _, row in own.iterrows():
            mine = wide[(wide.metric == row.metric) & (wide.test == row.test) &
                        (wide.alpha.astype(float) == row.alpha)]
            assert mine[f"experiment.B={b}"].tolist() == [fmt(row.sensitivity)]
    wide = _md_table(text, "## `swap_summary`: required_diff")
    assert len(wide) == 1 and wide.columns[-1] == "experiment.B=400"
    for name in ("sweep_discpower.png", "sweep_swap_summary.png"):
        png = (sweep / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
        assert f"]({name})" in text
    assert "nan" not in text.lower().split() and "e+0" not in text


@pytest.mark.slow
def test_sweep_report_refuses_an_incomplete_sweep(sweep, tmp_path):
    import shutil

    from irsim.report.sweep import write_sweep_report

    copy = tmp_path / "sw"
    shutil.copytree(sweep, copy)
    (copy / "1" / "manifest.json").unlink()
    with pytest.raises(InputError, match=r"incomplete sweep: 2 of 3 jobs finished"):
        write_sweep_report(copy)
    path = write_sweep_report(copy, partial=True)
    assert "2 jobs; swept: `experiment.B` (100, 400)" in path.read_text()
    r = irsim_cli("report", str(copy), cwd=tmp_path)
    assert r.returncode == 2 and "incomplete sweep" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value,text", [
    (12060.0, "12,060"), (12060, "12,060"), (1206.3, "1,206"), (999.96, "1,000"),
    (0.123456, "0.1235"), (float("nan"), MISSING), (None, MISSING), (0.0, "0"),
    (np.float64(0.05), "0.05"), (np.int64(3), "3"), (float("inf"), "inf"),
])
def test_one_number_format(value, text):
    assert fmt(value) == text
    assert "e+" not in fmt(value) and "nan" not in fmt(value)


def test_markdown_table_has_no_nan_or_exponent():
    t = pa.table({"a": [12060.0, float("nan"), None], "b": [1, 2, 3]})
    md = markdown_table(t)
    assert "| 12,060 | 1 |" in md and f"| {MISSING} | 2 |" in md
    assert "nan" not in md and "e+" not in md


def _declared(study: str, png: str) -> bool:
    patterns = [re.sub(r"<[^>]+>", "*", f) for f in figures()[study]]
    return any(fnmatch.fnmatch(png, p) for p in patterns)


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(4)
    df = pd.DataFrame(rng.beta(2, 4, size=(30, 6)) + np.linspace(0, 0.3, 6),
                      columns=[f"run{i}" for i in range(6)]).clip(0, 1)
    return {"AP": df, "P@10": (df * 10).round() / 10}


@pytest.mark.parametrize("study,kwargs", [
    ("swap", {"subset_sizes": [5, 10], "trials": 50}),
    ("error_rates", {"subset_sizes": [3, 6], "trials": 5, "tests": ["t"],
                     "sd_sizes": [3, 4, 5, 6, 7], "sd_samples": 5}),
    ("coverage", {"sizes": [5], "samples": 50, "B": 50, "alpha": [0.05, 0.1]}),
])
def test_reports_declare_their_figures_and_print_no_nan(tmp_path, scores, study, kwargs):
    res = getattr(irsim, study)(scores, seed=2, **kwargs)
    res.report(tmp_path)
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs
    for png in pngs:
        assert _declared(study, png), f"{png} is not in the FIGURES of {study}'s report module"
    text = (tmp_path / "report.md").read_text()
    words = re.findall(r"[A-Za-z0-9.+-]+", text)
    assert "nan" not in [w.lower() for w in words]
    assert not re.search(r"\d\.\d+e\+\d", text)


def test_required_diff_in_the_open_bin_is_a_lower_bound(tmp_path):
    from irsim.experiments.swap.report import sections

    summary = pa.table({
        "metric": ["AP", "AP"], "sampling": ["disjoint", "disjoint"], "subset_size": [5, 10],
        "confidence": [0.95, 0.95], "required_diff": [0.2, 0.05],
        "max_performance": [0.5, 0.5], "relative_diff": [0.4, 0.1],
        "sensitivity": [0.1, 0.6], "mean_unique_topics": [5.0, 10.0],
        "mean_overlap": [0.0, 0.0]})
    lo = np.round(np.arange(21) / 100, 2)
    rates = pa.table({
        "metric": ["AP"] * 42, "sampling": ["disjoint"] * 42,
        "subset_size": [5] * 21 + [10] * 21, "bin_kind": ["absolute"] * 42,
        "bin_lo": np.tile(lo, 2), "bin_hi": np.tile(np.append(lo[1:], np.inf), 2),
        "comparisons": [10] * 42, "swaps": [1] * 42, "swap_rate": [0.1] * 42})
    text = "\n".join(sections({"swap_summary": summary}, tmp_path))
    assert "| AP | disjoint | 5 | 0.95 | 0.2 |" in text  # no rates: no bin to judge by
    text = "\n".join(sections({"swap_summary": summary, "swap_rates": rates}, tmp_path))
    assert "| AP | disjoint | 5 | 0.95 | >= 0.2 |" in text
    assert "| AP | disjoint | 10 | 0.95 | 0.05 |" in text


def test_swap_plot_labels_reference_lines():
    from matplotlib.figure import Figure

    from irsim.experiments.swap.report import reference_lines

    ax = Figure().subplots()
    reference_lines(ax)
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["10%", "20%", "5%"]
    assert sorted(round(line.get_ydata()[0], 2) for line in ax.lines) == [0.05, 0.1, 0.2]


def test_sd_plot_size_ticks_and_map_plot_run_names(tmp_path):
    """sd_by_size: the topic ticks are the sampled sizes; MAP intervals: runs by name."""
    from irsim.experiments.corpus_ci import report as corpus_ci
    from irsim.experiments.error_rates import report as error_rates
    from irsim.report import figure_hook

    saved = []
    sd = pa.table({"metric": ["AP"] * 3, "sample_size": [5, 7, 11], "samples": [10] * 3,
                   "systems": [4] * 3, "mean_sd": [0.05, 0.04, 0.03],
                   "min_sd": [0.04, 0.03, 0.02], "max_sd": [0.06, 0.05, 0.04]})
    with figure_hook(lambda fig, path: saved.append(fig)):
        error_rates.sd_plot(sd, tmp_path)
    ax = saved[-1].axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks == [5, 7, 11]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["5", "7", "11"]
    t = pa.table({"direction": ["A->B"] * 4, "system": ["runA", "runB"] * 2,
                  "measure": ["MAP", "MAP", "L-MAP", "L-MAP"],
                  "method": ["parametric", "parametric", "bootstrap", "bootstrap"],
                  "estimate": [0.3, 0.2, -1.0, -1.5], "lo": [0.25, 0.15, -1.2, -1.8],
                  "hi": [0.35, 0.25, -0.8, -1.2], "other": [0.31, 0.1, -1.1, -1.6]})
    with figure_hook(lambda fig, path: saved.append(fig)):
        corpus_ci.map_interval_plot(t, tmp_path)
    for ax in saved[-1].axes:
        assert [x.get_text() for x in ax.get_xticklabels()] == ["runB", "runA"]
