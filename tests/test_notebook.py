"""The tutorial notebook ``docs/tutorials/first-study.ipynb``, executed as a user would run it:
a Jupyter kernel of this interpreter (``ipykernel``) runs every cell in a temporary working
directory (nbclient), and the numbers it shows are checked against the same computation done
here: the discriminative power against ``irsim.discpower`` on the CSV the notebook wrote (same
B and seed), the per-pair t p-values against ``scipy.stats.ttest_rel`` with statsmodels' Holm
correction, the interval against the mean and standard error of the differences. The notebook
is committed without outputs, so it never shows stale numbers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import irsim  # noqa: E402
from irsim.report import fmt  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "first-study.ipynb"


def _cell(nb, tag: str):
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"one cell tagged {tag!r} in {NOTEBOOK.name}"
    return cells[0]


def _stdout(cell) -> str:
    return "".join(o.text for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stdout")


def test_the_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code), \
        "strip the outputs: jupyter nbconvert --clear-output --inplace " + NOTEBOOK.name
    assert nb.metadata.kernelspec.name == "python3"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run top to bottom in a fresh directory, with one more cell at the end
    that names the kernel's interpreter: (notebook, directory)."""
    where = tmp_path_factory.mktemp("tutorial")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    probe = nbformat.v4.new_code_cell("import sys; print(sys.executable)")
    probe.metadata["tags"] = ["probe"]
    nb.cells.append(probe)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(where)}}).execute()
    # the notebook writes its files into a temporary folder of its own, which it prints
    out = _stdout(_cell(nb, "make-csv")).strip()
    assert out.startswith("files in "), out
    # nothing beside the notebook (run in place under docs/, such files broke mkdocs --strict)
    assert sorted(p.name for p in where.iterdir()) == [], "the notebook wrote beside itself"
    return nb, Path(out.removeprefix("files in "))


@pytest.mark.slow
def test_the_notebook_runs_without_error_or_warning_in_this_interpreter(executed):
    nb, where = executed
    kernel = Path(_stdout(_cell(nb, "probe")).strip())
    assert kernel.parent.resolve() == Path(sys.executable).parent.resolve(), \
        "the notebook ran in another interpreter (whose irsim?)"
    for cell in nb.cells:
        if cell.cell_type == "code":
            for out in cell.outputs:
                assert out.output_type != "error", cell.source
                assert not (out.output_type == "stream" and out.name == "stderr"), out.text
    assert (where / "ap.csv").is_file()


@pytest.mark.slow
def test_discpower_in_the_notebook_is_irsim_discpower_of_its_csv(executed):
    nb, where = executed
    scores = pd.read_csv(where / "ap.csv", dtype={"topic": str})
    assert scores.shape == (50, 7) and list(scores)[0] == "topic"
    direct = irsim.discpower(scores, metric="AP", B=200, seed=1, progress=False)
    assert _stdout(_cell(nb, "discpower-headline")).strip() == direct.headline().strip()
    written = pd.read_parquet(where / "discpower" / "results" /
                              "discpower.parquet")
    expected = direct.to_pandas("discpower")
    pd.testing.assert_frame_equal(written, expected)
    # 6 systems: 15 pairs; the sensitivity is the share of them found significant
    assert (expected.pairs == 15).all()
    np.testing.assert_allclose(expected.sensitivity, expected.significant / 15)
    shown = _cell(nb, "discpower-table").outputs[0].data["text/plain"]
    for value in expected.significant:
        assert f" {value} " in shown
    # MAP per system as shown: the column means of the CSV
    means = _cell(nb, "read-csv").outputs[0].data["text/plain"]
    for system in scores.columns[1:]:
        assert re.search(rf"{system}\s+{scores[system].mean():.4f}", means), system


@pytest.mark.slow
def test_compare_in_the_notebook_matches_scipy_and_statsmodels(executed):
    nb, where = executed
    scores = pd.read_csv(where / "ap.csv", dtype={"topic": str})
    runs = ["dense", "splade", "monot5"]
    p = np.array([stats.ttest_rel(scores[r], scores["bm25"]).pvalue for r in runs])
    holm = multipletests(p, method="holm")[1]
    table = pd.read_parquet(where / "compare" / "results" /
                            "comparison.parquet")
    t = table[table.test == "t"].set_index("system_a").loc[runs]
    np.testing.assert_allclose(t.p_value, p, rtol=1e-10)
    np.testing.assert_allclose(t.p_adjusted, holm, rtol=1e-10)
    d = scores[runs].to_numpy() - scores[["bm25"]].to_numpy()
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(axis=0, ddof=1) / np.sqrt(len(d))
    np.testing.assert_allclose(t["diff"], d.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t.ci_lo, d.mean(axis=0) - half, rtol=1e-10)
    np.testing.assert_allclose(t.effect_size, d.mean(axis=0) / d.std(axis=0, ddof=1),
                               rtol=1e-10)
    # the headline the notebook printed: per run its difference with the 95% interval and
    # effect size, then each test's Holm-corrected p-value, as the reports print numbers
    # (irsim.report.fmt: 4 significant digits, 3 under 1e-4)
    lines = _stdout(_cell(nb, "compare-headline")).strip().splitlines()
    assert lines[0] == "comparison: p_adjusted by test (correction=holm, metric=AP, system_b=bm25)"
    assert lines[1].split() == ["system_a", "diff", "ci_lo", "ci_hi", "effect_size", "t",
                                "wilcoxon", "randomisation"]
    shown = {ln.split()[0]: [float(v) for v in ln.split()[1:6]] for ln in lines[2:]}
    assert list(shown) == runs
    want = np.column_stack([d.mean(axis=0), d.mean(axis=0) - half, d.mean(axis=0) + half,
                            d.mean(axis=0) / d.std(axis=0, ddof=1), holm])
    assert [shown[r] for r in runs] == [[float(fmt(v)) for v in row] for row in want]
    # and the per-pair report it wrote has the same numbers
    report = _stdout(_cell(nb, "compare-report"))
    assert "## Per-pair comparison" in report
    for r, q in zip(runs, holm, strict=True):
        row = next(ln for ln in report.splitlines() if ln.startswith(f"| {r} | bm25 |"))
        assert float(row.split("|")[9].strip().rstrip("*")) == float(fmt(q)), row


@pytest.mark.slow
def test_the_notebook_shows_figures_and_writes_both_reports(executed):
    nb, where = executed
    for tag in ("figure", "asl-curve"):
        images = [o for o in _cell(nb, tag).outputs if "image/png" in o.get("data", {})]
        assert len(images) == 1, tag
    for study, figure in (("discpower", "asl_curve_paired_bootstrap.png"),
                          ("compare", "compare_AP.png")):
        run = where / study
        assert (run / "report.md").is_file() and (run / "manifest.json").is_file()
        assert (run / figure).stat().st_size > 1000
