"""The README and the documentation pages as a new user reads them: their Python examples run
(doctest), every number they quote is what the documented command gives now (each quote below
is a page's sentence with the numbers left out, and names the page that holds it; the test
recomputes them), no other number slips in unchecked, the files and tests they cite exist, and
their quoting of parameterised metrics composes. The site itself (strict build, generated
blocks, nav) is checked by ``tests/test_docs.py``.

``python tests/test_readme.py`` prints every quote as the fixed seed writes it today.
"""

from __future__ import annotations

import doctest
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import SHARED_DATA, has_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: Every page a user reads: the README, then the documentation site's pages.
PAGES = (README, *sorted(DOCS.rglob("*.md")))
#: Pages whose numbers are not results of a documented command (so no Quote recomputes them).
NOT_RESULTS = {"docs/mutation_survivors.md": "the record of a mutmut run: mutants' diffs and "
                                             "values computed by hand for each"}


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", [p for p in PAGES if ">>> " in p.read_text()], ids=_name)
def test_python_examples_run(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=(
        doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE), verbose=False, report=True)
    assert result.attempted > 0 and result.failed == 0, _name(page)


def test_the_readme_and_the_python_page_show_a_study_from_python():
    for page in (README, DOCS / "python.md"):
        assert ">>> res = irsim.discpower(" in page.read_text(), _name(page)


# ------------------------------------------------------------------ numbers the pages quote
def _prose(text: str) -> str:
    """A page without code blocks and generated blocks, whitespace collapsed."""
    from irsim.docs import BLOCK

    text = BLOCK.sub(" ", text)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return re.sub(r"\s+", " ", text)


@cache
def tables_of(*args: str) -> dict[str, pd.DataFrame]:
    """The tables of ``irsim <args> data_dir=<test data> offline=true`` (computed once)."""
    from irsim.runner import compose_config, run

    cfg = compose_config([*args, f"data_dir={SHARED_DATA}", "offline=true", "quiet=true"])
    return {k: t.to_pandas() for k, t in run(cfg, tempfile.mkdtemp()).items()}


def f3(v: float) -> str:
    return f"{v:.3f}"


def _park() -> dict[str, str]:
    cov = tables_of("experiment=park2011", "collection=adhoc8")["coverage"]
    row = cov[(cov.n == 5) & (cov.alpha == 0.05)].set_index("method").type1_error
    return {m: f3(row[m]) for m in ("percentile", "bca", "studentised_logit")}


def _corpus_within() -> dict[str, str]:
    from scipy.stats import norm

    return {"within": f"{100 * (2 * norm.cdf(1.96 / 2 ** 0.5) - 1):.1f}"}


def _topic_set_size() -> dict[str, str]:
    t = tables_of("experiment=sakai_topic_set_size")["topic_set_size"]
    t = t[(t.design == "paired_t") & (t.alpha == 0.05) & (t.beta == 0.2)]

    def n(metric: str, d: float) -> str:
        return str(int(t[(t.metric == metric) & (t.min_diff.round(4) == d)].n.iloc[0]))

    ap, p10 = t[t.metric == "AP"].iloc[0], t[t.metric == "P@10"].iloc[0]
    return {"runs": str(ap.systems), "topics": str(ap.topics), "ve_ap": f"{ap.v_e:.4f}",
            "ve_p10": f"{p10.v_e:.4f}", "ap_04": n("AP", 0.04), "ap_10": n("AP", 0.1),
            "p10_04": n("P@10", 0.04), "p10_10": n("P@10", 0.1)}


def _topic_set_size_check() -> dict[str, str]:
    c = tables_of("experiment=sakai_topic_set_size_check")["topic_set_size_check"]
    low = c[c.beta == 0.2]

    def at(metric: str, beta: float, d: float) -> pd.Series:
        return c[(c.metric == metric) & (c.beta == beta) & (c.min_diff.round(4) == d)].iloc[0]

    a, b, e = at("AP", 0.2, 0.02), at("AP", 0.2, 0.1), at("AP", 0.1, 0.15)
    return {"lo": f"{low.realised_power.min():.2f}", "hi": f"{low.realised_power.max():.2f}",
            "p1": f3(a.realised_power), "n1": str(a.n), "p2": f3(b.realised_power),
            "n2": str(b.n), "p3": f3(e.realised_power), "n3": str(e.n)}


def _reliability() -> dict[str, str]:
    tabs = tables_of("experiment=urbano_reliability")
    rel = tabs["reliability"].set_index("metric")
    topics = tabs["reliability_topics"]

    def need(metric: str, indicator: str) -> str:
        r = topics[(topics.metric == metric) & (topics.indicator == indicator) &
                   (topics.target == 0.9)]
        return str(int(r.topics.iloc[0]))

    ap = rel.loc["AP"]
    return {"runs": str(ap.systems), "s": f"{ap.pct_system:.1f}", "t": f"{ap.pct_topic:.1f}",
            "r": f"{ap.pct_residual:.1f}", "e": f3(ap.e_rho2), "lo": f3(ap.e_rho2_feldt_lo),
            "hi": f3(ap.e_rho2_feldt_hi), "phi": f3(ap.phi), "n_e": need("AP", "e_rho2"),
            "n_phi": need("AP", "phi"), "rr": f3(rel.loc["RR"].e_rho2),
            "n_rr": need("RR", "e_rho2")}


def _reliability_check() -> dict[str, str]:
    c = tables_of("experiment=urbano_reliability")["reliability_check"]
    c = c[c.metric == "AP"].set_index("topics")
    sizes = (10, 25, 100)

    def join(col: str, form: Callable[[float], str]) -> str:
        return " / ".join(form(c.loc[n, col]) for n in sizes)

    return {"true": join("true_e_rho2", f3), "corr": join("corr2_mean", f3),
            "bias": join("e_rho2_bias", lambda v: f"{v:.3f}" if abs(v) >= 5e-4 else f"{v:.4f}"),
            "tau": join("tau_mean", lambda v: f"{v:.2f}")}


def _f(v: float) -> str:
    """.942 below 1 (three decimals), 1.09 above (three figures)."""
    return f"{v:.3f}".lstrip("0") if abs(v) < 1 else f"{v:.3g}"


def _budget_tables() -> dict[str, pd.DataFrame]:
    return tables_of("experiment=budget_dl19")


def _budget_row(unit: str, metric: str, budget: float) -> dict:
    t = _budget_tables()
    iv = t["budget_intervals"]
    iv = iv[(iv.unit == unit) & (iv.metric == metric) & (iv.budget == budget)
            & (iv.target == "mean")].set_index("estimator")
    dec = t["budget_decisions"]
    dec = dec[(dec.unit == unit) & (dec.metric == metric) & (dec.budget == budget)
              & (dec.correction == "holm")].set_index("estimator")
    return {"n": f"{int(iv.loc['gold', 'n']):,}",
            **{e: f"{_f(iv.loc[e, 'coverage'])} / {_f(iv.loc[e, 'width'])}"
               for e in ("gold", "ppi", "ppi_pp", "stratified")},
            "agree": f"{_f(dec.loc['gold', 'agreement'])} / "
                     f"{_f(dec.loc['stratified', 'agreement'])}"}


#: The worked example's table: (unit, metric, budget) per row.
BUDGET_ROWS = (("judgments", "P(rel=2)@10", 0.2), ("judgments", "P(rel=2)@10", 0.75),
               ("judgments", "DCG@10", 0.75), ("topics", "AP(rel=2)", 0.3),
               ("topics", "nDCG@10", 0.75))


def _budget_table() -> dict[str, str]:
    out = {}
    for i, row in enumerate(BUDGET_ROWS):
        out.update({f"{k}{i}": v for k, v in _budget_row(*row).items()})
    return out


def _budget_table_template() -> str:
    head = ("| people judge | metric | budget | gold alone: coverage / width | PPI | PPI++ | "
            "stratified PPI | decision agreement (gold / stratified) | |---|---|---|---|---|"
            "---|---|---| ")
    rows = [f"| {u} | {m} | {b:g} ({{n{i}}}{' topics' if u == 'topics' else ''}) | "
            f"{{gold{i}}} | {{ppi{i}}} | {{ppi_pp{i}}} | {{stratified{i}}} | {{agree{i}}} |"
            for i, (u, m, b) in enumerate(BUDGET_ROWS)]
    return head + " ".join(rows)


def _budget_prose() -> dict[str, str]:
    t = _budget_tables()
    iv, dec = t["budget_intervals"], t["budget_decisions"]
    holm = dec[dec.correction == "holm"]
    p = iv[(iv.estimator == "proxy") & (iv.metric == "P(rel=2)@10") & (iv.unit == "topics")
           & (iv.budget == 0.1)].set_index("target")
    pd_ = holm[(holm.estimator == "proxy") & (holm.metric == "P(rel=2)@10")].iloc[0]
    judg = iv[(iv.unit == "judgments") & iv.estimator.isin(["gold", "ppi", "ppi_pp"])]
    strat = iv[(iv.unit == "judgments") & (iv.estimator == "stratified")]
    top = iv[(iv.unit == "topics") & iv.estimator.isin(["ppi_pp", "stratified"])]
    plan = t["budget_planning"]
    rec = plan[plan.recommended].set_index("metric")
    sample = holm[holm.estimator != "proxy"]
    proxy = holm[holm.estimator == "proxy"]
    return {"bias": _f(-p.loc["mean", "bias"]), "cov_m": _f(p.loc["mean", "coverage"]),
            "cov_d": _f(p.loc["difference", "coverage"]), "gained": f"{pd_.gained:.0f}",
            "lost": f"{pd_.lost:.0f}", "j_lo": _f(judg.coverage.min()),
            "j_hi": _f(judg.coverage.max()), "s_lo": _f(strat[strat.budget == 0.1].coverage.min()),
            "s_hi": _f(strat[strat.budget >= 0.3].coverage.min()),
            "r_p": f"{rec.loc['P(rel=2)@10', 'cost_ratio']:.2f}",
            "r_d": f"{rec.loc['DCG@10', 'cost_ratio']:.2f}",
            "a_p": _f(rec.loc["P(rel=2)@10", "agreement"]),
            "a_d": _f(rec.loc["DCG@10", "agreement"]),
            "u_lo": _f(top.coverage.min()), "u_hi": _f(top.coverage.max()),
            "pa": _f(proxy.agreement.max()), "g_max": f"{sample.gained.max():.0f}"}


def _assessors_published() -> dict[str, str]:
    """The SIGIR 2025 paper's per-group kappas out of one call each (the calls of
    tests/test_assessors_published.py)."""
    import itertools

    import irsim

    groups = (("ferdinand-schlatt", "froebe"), ("andrew-parry", "eugene-yang"),
              ("guglielmo-faggioli", "harry-scells"), ("saber-zerhoudi", "sean-macavaney"))
    dl19 = SHARED_DATA / "dl19-assessors"
    names = ("nist", *itertools.chain.from_iterable(groups))
    runs = [str(dl19 / "runs" / f"{r}.gz") for r in ("bm25base_p", "bm25tuned_rm3_p",
                                                      "idst_bert_p1")]
    qrels = {n: str(dl19 / "qrels" / f"{n}.txt") for n in names}
    small = {"B": 10, "test_B": 20, "metrics": ["P@10"], "tests": ["t"],
             "corrections": ["none"], "reference": "nist"}

    def lab(**kw) -> pd.DataFrame:
        return irsim.assessors(runs=runs, qrels=qrels, **small, **kw).to_pandas(
            "label_agreement")

    def mean(t: pd.DataFrame, pair, labels: str, stat: str) -> float:
        return t[(t.qrels_a == pair[0]) & (t.qrels_b == pair[1]) & (t.labels == labels)
                 & (t.statistic == stat)]["mean"].iloc[0]

    pair_only, per_assessor, default = (lab(kappa_topics="pair_only"),
                                        lab(fleiss_reference="per_assessor"), lab())
    out = {"c_all": f3(mean(default, groups[0], "binary", "kappa")).lstrip("0")}
    for i, g in enumerate(groups, 1):
        out[f"c{i}"] = f3(mean(pair_only, g, "binary", "kappa")).lstrip("0")
        out[f"f{i}"] = f3(mean(per_assessor, g, "graded", "fleiss_reference")).lstrip("0")
        out[f"o{i}"] = f3(mean(default, g, "graded", "fleiss_reference")).lstrip("0")
    return out


@dataclass(frozen=True)
class Quote:
    """A sentence of a page (``page``, relative to the repository) with its numbers as
    ``{placeholders}``, and how the fixed seed computes them (``values``; ``slow``: marked
    ``slow``, out of the default run: a study of more than a second)."""

    name: str
    page: str
    template: str
    values: Callable[[], dict[str, str]]
    data: bool = True
    slow: bool = True

    def pattern(self) -> re.Pattern:
        """The template with every placeholder matching a number (for the guard)."""
        parts = re.split(r"\{\w+\}", self.template)
        number = r"-?[\d.,]+(?: / -?[\d.,]+)*"
        return re.compile(number.join(re.escape(p) for p in parts))


QUOTES = (
    Quote("park2011", "docs/studies/coverage.md",
          "On TREC-8 AP at n = 5 and alpha = 0.05 irsim measures percentile {percentile}, "
          "BCa {bca}, studentised logit {studentised_logit} (Park, TREC 2004 Robust: 0.181, "
          "0.170, 0.055)", _park),
    Quote("corpus_ci", "docs/studies/corpus_ci.md",
          "should fall inside the intervals built on the other {within}% of the time "
          "(2 Phi(1.96 / sqrt 2) - 1)", _corpus_within, data=False, slow=False),
    Quote("topic_set_size", "docs/studies/topic_set_size.md",
          "On TREC-8 ad hoc ({runs} runs x {topics} topics) V_E of AP is {ve_ap}: at alpha = "
          "0.05 and power 0.8, the paired t test needs {ap_04} topics to detect 0.04 and "
          "{ap_10} to detect 0.10; P@10 (V_E = {ve_p10}) needs {p10_04} and {p10_10}.",
          _topic_set_size),
    Quote("topic_set_size_check", "docs/studies/topic_set_size.md",
          "plans for power 0.8 deliver more, {lo}-{hi} (AP: {p1} at n = {n1} for minD = "
          "0.02, {p2} at n = {n2} for 0.10), while plans for power 0.9 deliver slightly less "
          "for AP with few topics ({p3} at n = {n3} for minD = 0.15)", _topic_set_size_check),
    Quote("reliability", "docs/studies/reliability.md",
          "On TREC-8 ad hoc with the bottom 25% dropped ({runs} runs): AP's variance is "
          "{s}% system, {t}% topic, {r}% residual; E(rho^2) = {e} [Feldt {lo}, {hi}], Phi = "
          "{phi}; {n_e} topics reach E(rho^2) = 0.90 but {n_phi} are needed for Phi = 0.90. "
          "RR is much less reliable (E(rho^2) = {rr}; {n_rr} topics for 0.90).",
          _reliability),
    Quote("reliability_check", "docs/studies/reliability.md",
          "On TREC-8 AP: true E(rho^2) {true} at 10 / 25 / 100 topics, realised squared "
          "correlation {corr}, estimator bias {bias}; Kendall's tau with the true ordering "
          "is only {tau}.", _reliability_check),
    Quote("budget", "docs/studies/budget.md",
          "alone it misses the systems' P(rel=2)@10 by {bias} on average (coverage of its "
          "means' intervals {cov_m}, of the differences' {cov_d}) and calls {gained} of 1,830 "
          "pairs significant that full NIST judging does not (Holm; {lost} lost).",
          _budget_prose),
    Quote("budget_table", "docs/studies/budget.md", _budget_table_template(), _budget_table),
    Quote("budget_judgments", "docs/studies/budget.md",
          "gold alone, PPI and PPI++ keep close to their promise at every budget (coverage "
          "{j_lo}-{j_hi}, for "
          "the means and the differences); the stratified PPI from 0.3 of the pool (at least "
          "{s_hi}; {s_lo} at 0.1, where its pilot is small)", _budget_prose),
    Quote("budget_planning", "docs/studies/budget.md",
          "The planning answer: **stratified PPI on judgments from 75% of the pool** for "
          "P(rel=2)@10 and DCG@10 (agreement {a_p} and {a_d}; gold alone would need {r_p} and "
          "{r_d} times the gold judgments for the same width, the pool capping what it can "
          "use).", _budget_prose),
    Quote("budget_topics", "docs/studies/budget.md",
          "PPI++ and the stratified estimator under-cover (down to {u_lo})", _budget_prose),
    Quote("budget_decisions", "docs/studies/budget.md",
          "The proxy alone reaches {pa} but by gaining false positives; the sample-based "
          "estimators lose power instead (they never gain more than {g_max} pairs here).",
          _budget_prose),
    Quote("assessors_published", "docs/studies/assessors.md",
          "| mean over topics of Cohen's kappa of the two assessors, binarised at grade 2 | "
          "{c1}, {c2}, {c3}, {c4} | `experiment.kappa_topics=pair_only`, row `binary` / "
          "`kappa`, column `mean` | `all`: group 1 {c_all} (topic 168216 counted), the others "
          "unchanged | | mean over topics of Fleiss' kappa of the two assessors and NIST, 4 "
          "grades | {f1}, {f2}, {f3}, {f4} | `experiment.fleiss_reference=per_assessor`, row "
          "`graded` / `fleiss_reference`, column `mean` (every topic: the paper's group 1 list "
          "includes 168216) | `once`: {o1}, {o2}, {o3}, {o4} |", _assessors_published),
)


def _params() -> list:
    return [pytest.param(q, id=q.name, marks=[pytest.mark.slow] if q.slow else [])
            for q in QUOTES]


@pytest.mark.parametrize("quote", _params())
def test_quoted_numbers_are_what_the_fixed_seed_gives(quote):
    if quote.data and not has_data():
        pytest.skip(f"test data not found at {SHARED_DATA}")
    sentence = quote.template.format(**quote.values())
    assert sentence in _prose((ROOT / quote.page).read_text()), (
        f"{quote.page} is stale: its {quote.name} numbers are not what the documented command "
        f"gives now; write:\n{sentence}")


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_number_a_page_quotes_is_checked(page):
    """Numbers with three or more decimals, or percentages with a decimal, appear in a
    page's prose only inside the sentences of QUOTES that name the page (which the test above
    recomputes)."""
    if _name(page) in NOT_RESULTS:
        pytest.skip(NOT_RESULTS[_name(page)])
    prose = _prose(page.read_text())
    covered = [m.span() for q in QUOTES if q.page == _name(page)
               for m in q.pattern().finditer(prose)]
    loose = []
    for m in re.finditer(r"(?<![\w.@-])-?(\d*\.\d{3,}|\d+\.\d+%)", prose):
        if not any(lo <= m.start() and m.end() <= hi for lo, hi in covered):
            loose.append(prose[max(0, m.start() - 40):m.end() + 10])
    assert not loose, f"{_name(page)}: numbers no test produces (add a Quote to " \
        "tests/test_readme.py): " + " | ".join(loose)


def test_every_quote_names_a_page_that_exists():
    for q in QUOTES:
        assert (ROOT / q.page).is_file() and (ROOT / q.page) in PAGES, q


# ------------------------------------------------------------------------- citations
@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_pages_cite_files_and_tests_that_exist(page):
    text = page.read_text()
    for path in sorted(set(re.findall(r"`((?:irsim|jobs|tests|bench)/[\w/.-]+\.\w+)", text))):
        if "<" not in path:
            assert (ROOT / path).is_file(), f"{_name(page)} cites {path}, which does not exist"
    for path, name in sorted(set(re.findall(r"(tests/test_\w+\.py)::(\w+)", text))):
        source = (ROOT / path).read_text()
        assert f"def {name}(" in source, \
            f"{_name(page)} cites {path}::{name}, which does not exist"


def test_quoted_parameterised_metrics_compose_as_documented():
    """A metric with parentheses must be quoted inside metrics=[...]; every such example of
    the pages composes to the metrics it names, and the unquoted form gets the hint."""
    import shlex

    from irsim.runner import compose_config

    text = "\n".join(p.read_text() for p in PAGES)
    examples = [a for line in re.findall(r"^(?:\$ )?irsim .*$", text, flags=re.M)
                for a in shlex.split(line.rstrip("\\").strip(), comments=True)
                if a.startswith("metrics=") and "(" in a]
    assert examples, "no page shows a quoted parameterised metric (metrics='[\"AP(rel=2)\"]')"
    for arg in examples:
        cfg = compose_config([arg])
        assert any("(" in str(m) for m in cfg.metrics), arg


if __name__ == "__main__":
    for q in QUOTES:
        print(f"{q.name} ({q.page}):\n  {q.template.format(**q.values())}\n")


@pytest.mark.slow
def test_data_dependent_tests_skip_without_the_data(tmp_path):
    """Outside the layout (no ../shared/data): tests that read the data are skipped with a
    message saying where the data are expected; checked by pointing IRSIM_TEST_DATA at a
    directory that does not exist (a subprocess pytest; the data are not moved)."""
    import os
    import subprocess

    nowhere = tmp_path / "no-shared-data"
    tests = ["tests/test_cli.py::test_evaluate_writes_trec_eval_per_topic",  # reads a path
             "tests/test_matrix_io.py::test_adhoc8_ap_column_means_equal_pandas",  # fixture
             "tests/test_cli.py::test_list_names_everything"]  # needs no data: still runs
    # -m "": the named tests run whatever their markers (the default run leaves out `slow`)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                        "-m", "", *tests], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, "IRSIM_TEST_DATA": str(nowhere)})
    assert r.returncode == 0, r.stdout[-3000:]
    assert "1 passed, 2 skipped" in r.stdout, r.stdout[-3000:]
    assert r.stdout.count(f"test data not found at {nowhere} (expected: shared/data beside "
                          f"the clone, i.e. ../shared/data; or set IRSIM_TEST_DATA") == 2
