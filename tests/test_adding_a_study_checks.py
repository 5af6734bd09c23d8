"""A study registered outside irsim gets every check the built-in studies get, with no line
of any test or of ``mkdocs.yml`` written for it: its registration's ``example`` (small
settings, :class:`irsim.registry.Example`) and ``title`` are all the tests read.

The study (``toywin``, below) lives in a distribution of its own (an entry point of the
group ``irsim.studies``, as the guide "Adding a study" ships one). In a process where it is
installed, the suite's own tests, copied unchanged, are run for it:

- ``test_figures.py``: its example runs through the Python door and every figure of its
  report passes the figure checks;
- ``test_per_collection.py``: a matrix study that does not pool, run on two collections at
  once, equals each collection's own run (its first command-line case);
- ``test_params.py``: its Config inherits the Bayesian options, so the Bayesian-options
  checks run for it; every field is an option; its fingerprint holds every table field,
  and changes with each table field its example sets (``B``);
- ``test_golden.py``: its command-line case is a golden case, ``toywin_small``; with no
  recorded tables it fails, naming ``tests/golden/record.py``; recorded, it passes, and a
  change of the code's numbers fails it;
- the navigation block of ``mkdocs.yml`` (``python -m irsim.docs``) gains its entry.

What a study provides for these: ``example=`` (``overrides``: command-line cases;
``keywords`` and ``figures``: the Python door's run of the figure checks), ``title=`` (its
navigation entry) and, for the site, its page ``docs/studies/<name>.md``
(``tests/test_docs.py`` checks that every study has one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]

#: The study: how often each system is the best on a bootstrap sample of topics (the
#: guide's bootwin), with its smoke-test settings and the Bayesian options.
TOYWIN = textwrap.dedent('''
    """toywin: how often each system is the best on a bootstrap sample of topics."""

    from __future__ import annotations

    from dataclasses import dataclass
    from pathlib import Path

    import pyarrow as pa

    from irsim.engine.base import Shard
    from irsim.engine.partials import Count
    from irsim.exact import Exact
    from irsim.kit.common import BayesOptions, Shards, select_metrics
    from irsim.params import fingerprint, option
    from irsim.registry import study
    from irsim.sampling.topics import bootstrap_counts
    from irsim.tables import Column, TableSpec, table

    TOYWIN = TableSpec(
        "toywin", ("toywin",), "Each system's share of bootstrap samples it is best on.",
        (Column("metric", pa.string(), "metric"), Column("system", pa.string(), "system"),
         Column("wins", pa.int64(), "samples on which the system has the highest mean"),
         Column("p_best", pa.float64(), "`wins / B`")))


    @dataclass
    class Config(BayesOptions):
        """Parameters of ``experiment=toywin``."""

        name: str = option("toywin", "``toywin``.")
        B: int = option(1000, "Bootstrap samples of topics.")
        metrics: list[str] | None = option(None, "The metrics (default: all).",
                                           tables="data")


    @dataclass(frozen=True)
    class ToyWin:
        config: Config
        seed: int
        name: str = "toywin"

        @property
        def B(self) -> int:
            return int(self.config.B)

        def fingerprint(self) -> dict:  # its Config's table fields, and the seed
            return {**fingerprint(self.config, Config), "seed": self.seed}

        def plan(self, data) -> list[Shard]:
            return [Shard(k, (k, k + 1), (0, self.B)) for k in range(len(data.metrics))]

        def fields(self, data) -> dict:
            return {"wins": Count((len(data.metrics), len(data.systems)), along="items")}

        def kernel(self, shard: Shard, data) -> dict:
            k = shard.items[0]
            x = data.values[k]
            counts = bootstrap_counts(self.seed, "toywin/topics", x.shape[1], *shard.reps,
                                      key=(k,))
            sums = Exact(x, x.shape[1]).right(counts.T)
            return {"wins": (sums == sums.max(axis=0)).sum(axis=1)[None, :]}

        def finalize(self, merged, data) -> dict:
            wins = merged["wins"]
            return {"toywin": table("toywin", [
                {"metric": m, "system": s, "wins": int(wins[k, j]),
                 "p_best": float(wins[k, j] / self.B)}
                for k, m in enumerate(data.metrics) for j, s in enumerate(data.systems)])}


    def sections(tables: dict, run_dir: Path) -> list[str]:
        """The share of samples each system is best on, per metric."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from irsim.report import figure_lines, save_figure

        df = tables["toywin"].to_pandas()
        fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
        for metric, part in df.groupby("metric", sort=False):
            ax.plot(range(len(part)), sorted(part.p_best, reverse=True), marker="o",
                    label=metric)
        ax.set_xlabel("system (by share)")
        ax.set_ylabel("P(best)")
        fig.legend(loc="outside right upper")
        path = save_figure(fig, run_dir / "toywin.png", dpi=100)
        plt.close(fig)
        return ["## How often each system is the best", "", *figure_lines([path])]


    FIGURES = ("toywin.png",)


    @study("toywin", config=Config, data="matrix", title="Toy wins",
           description="how often each system is the best on a bootstrap sample of topics",
           tables=[TOYWIN], headlines={"toywin": (("metric", "system"), "p_best")},
           example=dict(overrides={"small": ["experiment.B=200"]},
                        keywords=dict(B=100), figures=["toywin.png"]))
    def make(config: Config, data, *, seed: int, shards: Shards):
        return ToyWin(config, seed), select_metrics(data, config.metrics)
''')

#: The suite's files the checks need, copied unchanged (the golden directory too: the
#: study's tables are recorded into the copy, never into the repository).
COPIED = ("conftest.py", "test_figures.py", "test_per_collection.py", "test_params.py",
          "test_golden.py", "golden")


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A copy of the suite's checks beside a distribution holding toywin, and the
    environment in which irsim finds it."""
    root = tmp_path_factory.mktemp("suite")
    plugin = root / "plugin"
    plugin.mkdir()
    (plugin / "toywin_study.py").write_text(TOYWIN)
    info = plugin / "irsim_toywin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: irsim-toywin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[irsim.studies]\ntoywin = toywin_study\n")
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    (root / "tests").mkdir()
    for name in COPIED:
        src = ROOT / "tests" / name
        if src.is_dir():
            shutil.copytree(src, root / "tests" / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, root / "tests" / name)
    env = {**os.environ, "MPLBACKEND": "Agg", "IRSIM_TEST_DATA": str(SHARED_DATA),
           "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT),
                                          os.environ.get("PYTHONPATH", "")])}
    return root, env


def _pytest(suite: tuple[Path, dict[str, str]], *files: str) -> dict[str, str]:
    """Run the copied `files` for toywin only: test id -> outcome."""
    root, env = suite
    r = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                        "-m", "slow or not slow", "-k", "toywin", "-o", "addopts=",
                        *[f"tests/{f}" for f in files]],
                       cwd=root, env=env, capture_output=True, text=True, timeout=900)
    found = dict(re.findall(r"^(tests/\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED)", r.stdout,
                            re.M))
    assert found, r.stdout[-3000:] + r.stderr[-3000:]
    return found


@pytest.mark.slow  # about a minute: three pytest processes and the study's runs
@pytest.mark.skipif(not (SHARED_DATA / "urbano").is_dir(), reason="shared data not found")
def test_a_registered_study_gets_every_check(suite):
    root, env = suite
    got = _pytest(suite, "test_figures.py", "test_per_collection.py", "test_params.py")
    want = {
        "tests/test_figures.py::test_every_figure_of_a_study_passes_the_checks[toywin]",
        "tests/test_per_collection.py::test_each_collection_equals_its_own_run[toywin]",
        "tests/test_params.py::test_bayes_options_declared_once_and_listed_last[toywin]",
        "tests/test_params.py::test_bayes_options_through_hydra[toywin]",
        "tests/test_params.py::test_every_field_is_an_option[toywin]",
        "tests/test_params.py::test_fingerprint_is_every_table_field[toywin]",
        "tests/test_params.py::test_changing_a_table_field_changes_the_fingerprint[toywin]"}
    assert {t: got.get(t) for t in want} == dict.fromkeys(want, "PASSED"), got

    # a golden case with no recorded tables fails, and names the recorder
    case = "tests/test_golden.py::test_golden[toywin_small]"
    assert _pytest(suite, "test_golden.py")[case] == "FAILED"
    r = subprocess.run([sys.executable, "tests/golden/record.py", "toywin_small"], cwd=root,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "toywin_small: ['toywin']" in r.stdout, r.stderr[-3000:]
    assert not (ROOT / "tests" / "golden" / "toywin_small").exists()
    assert _pytest(suite, "test_golden.py")[case] == "PASSED"
    # ... and a change of the numbers fails it: the recorded wins, one moved
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / "tests" / "golden" / "toywin_small" / "toywin.parquet"
    t = pq.read_table(path)
    wins = t.column("wins").to_pylist()
    wins[0] += 1
    pq.write_table(t.set_column(t.column_names.index("wins"), "wins",
                                pa.array(wins, pa.int64())), path)
    assert _pytest(suite, "test_golden.py")[case] == "FAILED"

    # its entry in the site's navigation, from its registration's title
    r = subprocess.run([sys.executable, "-c", "from irsim.docs import nav_yaml; "
                        "print(nav_yaml('  '), end='')"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "  - Toy wins: studies/toywin.md"
    assert r.stdout.splitlines()[0] == "  - Discriminative power: studies/discpower.md"


def test_the_nav_block_is_the_registry():
    """The studies' entries of ``mkdocs.yml`` are the registry's, in listing order, and the
    generator refills a stale block (a study removed by hand comes back)."""
    from irsim import docs
    from irsim.registry import studies

    text = (ROOT / "mkdocs.yml").read_text()
    block = docs.NAV.search(text)
    assert block is not None
    lines = block["body"].splitlines()
    assert lines == [f"      - {s.title}: studies/{s.name}.md" for s in studies()]
    stale = text.replace(lines[1] + "\n", "")
    assert docs.render_nav(stale) == text


def test_every_study_and_preset_has_a_golden_case():
    """Every registered study runs in some golden case (its own example's, or a preset's);
    every preset shipped is recorded or says why not."""
    from golden.cases import CASES, PRESETS, UNRECORDED, presets, study_of

    from irsim.registry import names

    assert set(names()) <= {study_of(o) for o in CASES.values()}
    assert not set(PRESETS) & set(UNRECORDED)
    assert sorted({*PRESETS, *UNRECORDED}) == presets()
    assert study_of(CASES["sakai_topic_set_size"]) == "topic_set_size"
    assert study_of(CASES["default"]) == "discpower"
