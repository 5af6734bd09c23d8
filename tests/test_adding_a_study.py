"""The guide "Adding a study": its worked study, copied from the page into a distribution of
its own (an entry point of the group ``irsim.studies``), runs through both doors, ``irsim
list`` / ``show``, the report and the docs generator, with no file of irsim touched; and the
registration refuses what it must."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA

from irsim import registry

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "adding-a-study.md"
AP = SHARED_DATA / "urbano" / "adhoc8_ap.csv"

#: The checks that run inside the plugin's process (the registry there holds bootwin).
PYTHON_DOOR = textwrap.dedent('''
    import json, sys
    from pathlib import Path

    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    import irsim
    from irsim import docs, tables
    from irsim.catalog import catalog
    from irsim.experiments import names
    from irsim.report import figures
    from irsim.catalog import show_text
    from irsim.sampling.topics import bootstrap_counts

    out = Path(sys.argv[1])
    df = pd.read_csv(sys.argv[2]).iloc[:, :12]
    result = irsim.bootwin(df, metric="AP", B=600, seed=3)
    pq.write_table(result.tables["bootwin"], out / "python.parquet")
    again = irsim.bootwin(df, metric="AP", B=600, seed=3, shard_replicates=70)
    report = result.report(out / "run")
    per = irsim.bootwin({"AP": [df, df.iloc[:, :8]]}, B=200, seed=3)
    per.report(out / "per")

    # the loop reference: the same bootstrap samples, one at a time
    x = df.to_numpy().T
    wins = np.zeros(x.shape[0], int)
    for row in bootstrap_counts(3, "bootwin/topics", x.shape[1], 0, 600, key=(0,)):
        means = np.array([sum(c * v for c, v in zip(row, s)) for s in x])
        wins += np.isclose(means, means.max(), rtol=0, atol=1e-12)
    json.dump({
        "names": names(),
        "wins": result.tables["bootwin"].column("wins").to_pylist(),
        "loop": wins.tolist(),
        "shards_equal": again.tables["bootwin"].equals(result.tables["bootwin"]),
        "report": report.read_text(),
        "png": (out / "run" / "bootwin.png").is_file(),
        "per_report": (out / "per" / "report.md").read_text(),
        "per_collections": per.tables["bootwin"].column("collection").unique().to_pylist(),
        "show": show_text("bootwin"),
        "catalog": catalog()["experiments"].get("bootwin"),
        "doc": irsim.bootwin.__doc__,
        "parameters": docs.parameters_markdown("bootwin"),
        "tables": tables.markdown("bootwin"),
        "figures": list(figures()["bootwin"]),
        "api": docs.api_markdown(),
    }, open(out / "python.json", "w"))
''')


def _study_source() -> str:
    text = GUIDE.read_text()
    match = re.search(r'```python title="bootwin_study.py"\n(.*?)```', text, re.S)
    assert match, "the guide's study block is missing"
    return match.group(1)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    """A distribution holding the guide's study, found through its entry point."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "bootwin_study.py").write_text(_study_source())
    info = root / "irsim_bootwin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: irsim-bootwin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[irsim.studies]\nbootwin = bootwin_study\n")
    return root


def _run(plugin: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plugin), os.environ.get("PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


@pytest.mark.slow  # about 30 s: seven processes
@pytest.mark.skipif(not AP.is_file(), reason="shared data not found")
def test_the_guides_study_runs_through_every_door(plugin, tmp_path):
    script = tmp_path / "door.py"
    script.write_text(PYTHON_DOOR)
    r = _run(plugin, str(script), str(tmp_path), str(AP), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads((tmp_path / "python.json").read_text())

    # the registration reached every list: listing order puts it after the built-in ones
    assert got["names"][-1] == "bootwin" and got["names"][0] == "discpower"
    assert got["catalog"] == "how often each system is the best on a bootstrap sample of topics"
    assert got["doc"].startswith("How often each system is the best")
    assert "experiment.B=1000  (int, >= 1)" in got["show"] and "Bootstrap samples of topics." in \
        got["show"]
    assert "| `experiment.B=1000` | int, >= 1 | Bootstrap samples of topics. |" in got["parameters"]
    assert got["tables"].startswith("### `bootwin`") and "| `p_best` | float64 |" in \
        got["tables"]
    assert got["figures"] == ["bootwin.png"] and got["png"]
    assert "::: irsim.bootwin" in got["api"]
    # the numbers: the loop over the same samples, any shard size
    assert got["wins"] == got["loop"] and sum(got["wins"]) >= 600
    assert got["shards_equal"]
    # its report section, and its headline across collections
    assert "## How often each system is the best" in got["report"]
    assert "![bootwin](bootwin.png)" in got["report"]
    assert got["per_collections"] == ["collection0", "collection1"]
    assert "### `bootwin`: p_best" in got["per_report"]

    # the command line: same tables as Python; listed and shown
    cli = tmp_path / "cli"
    r = _run(plugin, "-m", "irsim", "experiment=bootwin", "collection=matrix",
             f"collection.path={tmp_path / 'ap12.csv'}", "collection.metric=AP",
             "experiment.B=600", "seed=3", f"hydra.run.dir={cli}", cwd=tmp_path)
    assert r.returncode == 2 and "ap12.csv" in r.stderr  # not written yet: one clear error
    import pandas as pd

    pd.read_csv(AP).iloc[:, :12].to_csv(tmp_path / "ap12.csv", index=False)
    r = _run(plugin, "-m", "irsim", "experiment=bootwin", "collection=matrix",
             f"collection.path={tmp_path / 'ap12.csv'}", "collection.metric=AP",
             "experiment.B=600", "seed=3", f"hydra.run.dir={cli}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert pq.read_table(cli / "results" / "bootwin.parquet").equals(
        pq.read_table(tmp_path / "python.parquet"))
    assert "## How often each system is the best" in (cli / "report.md").read_text()
    r = _run(plugin, "-m", "irsim", "list", cwd=tmp_path)
    assert r.returncode == 0 and re.search(r"bootwin\s+how often each system", r.stdout)
    r = _run(plugin, "-m", "irsim", "show", "bootwin", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("experiment=bootwin: how often")
    r = _run(plugin, "-m", "irsim", "experiment=bootwin", "+experiment.BB=1",
             f"hydra.run.dir={tmp_path / 'bad'}", cwd=tmp_path)
    assert r.returncode == 2 and "experiment.BB" in r.stderr and "Traceback" not in r.stderr


def test_the_registry_is_the_only_list_of_studies():
    """Every built-in module registers; irsim's front door, the ConfigStore and the docs read
    the registry."""
    import irsim
    from irsim.catalog import catalog
    from irsim.docs import api_markdown

    built_in = sorted(m.rpartition(".")[2] for m in registry._package_modules()
                      if m.startswith("irsim.experiments."))
    assert sorted(registry.names()) == built_in
    assert [n for n in irsim.__all__ if n in built_in] == registry.names()
    assert set(built_in) <= set(dir(irsim))
    assert list(catalog()["experiments"]) == registry.names()
    for name in built_in:
        entry = registry.get(name)
        assert entry.module == f"irsim.experiments.{name}"
        assert entry.config().name == name
        assert f"::: irsim.{name}\n" in api_markdown()
    assert registry.get("test_errors").pooled(registry.get("test_errors").config(
        design="urbano2019"))
    assert not registry.get("test_errors").pooled(registry.get("test_errors").config())
    assert not registry.get("swap").pooled(registry.get("swap").config())


def test_registration_refuses_programming_errors():
    from dataclasses import dataclass

    from irsim.errors import ConfigError
    from irsim.params import option

    @dataclass
    class Cfg:
        B: int = option(1, "Samples.")

    @dataclass
    class Undocumented:
        B: int = 1

    with pytest.raises(ValueError, match="not a Python identifier"):
        registry.study("boot-win", config=Cfg, data="matrix", description="x")
    with pytest.raises(ValueError, match="data='scores' is not one of"):
        registry.study("bw", config=Cfg, data="scores", description="x")
    with pytest.raises(ValueError, match="config must be a dataclass"):
        registry.study("bw", config=dict, data="matrix", description="x")
    with pytest.raises(ValueError, match="command='systems' is not a field of its config"):
        registry.study("bw", config=Cfg, data="matrix", description="x", command="systems")
    with pytest.raises(ValueError, match=r"Undocumented.B has no help text: declare it with "
                                         r"irsim.params.option"):
        registry.study("bw", config=Undocumented, data="matrix", description="x")
    with pytest.raises(ValueError, match="registered by irsim.experiments.swap already"):
        registry.study("swap", config=Cfg, data="matrix", description="x")(lambda: None)
    with pytest.raises(ConfigError, match=r"unknown experiment 'swp' \(did you mean 'swap'"):
        registry.get("swp")
    assert np.array_equal(registry.names(), [s.name for s in registry.studies()])


def test_a_table_clash_refuses_the_registration():
    """The table registry listens to the registry: a study whose table clashes with a
    registered one is not registered (and the registry itself imports no reader)."""
    from dataclasses import dataclass

    from irsim import tables
    from irsim.params import option

    @dataclass
    class Cfg:
        B: int = option(1, "Samples.")

    registry.get("discpower")  # its tables are registered with it
    clash = tables.table_spec("discpower", ("clash_test",), "Not discpower's.",
                              [tables.column("x", tables.INT, "x")])
    with pytest.raises(ValueError, match="table 'discpower' is registered already"):
        registry.study("clash_test", config=Cfg, data="matrix", description="x",
                       tables=[clash])(lambda: None)
    assert "clash_test" not in registry.names()
    import ast

    tree = ast.parse(Path(registry.__file__).read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and id(n) not in docs}
    assert imported <= {"__future__", "importlib", "importlib.util", "importlib.metadata",
                        "pkgutil", "collections.abc", "dataclasses", "types", "typing",
                        "irsim.errors", "irsim.params"}, imported
    assert not any("irsim.experiments" in v for v in named)


def test_a_package_of_studies_is_found_through_its_entry_point(tmp_path):
    """irsim's own studies come from its entry point ``irsim.study_packages``; another
    distribution's package of studies is found the same way, each study imported on first
    use only."""
    from importlib.metadata import entry_points

    assert [ep.value for ep in entry_points(group=registry.PACKAGE_ENTRY_POINTS)
            if ep.name == "irsim"] == ["irsim.experiments"]
    pkg = tmp_path / "toy_studies"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("toy_first", "toy_second"):
        (pkg / f"{name}.py").write_text(
            "from dataclasses import dataclass\n"
            "from irsim.params import option\n"
            "from irsim.registry import study\n"
            "@dataclass\n"
            "class Config:\n"
            f"    name: str = option({name!r}, 'The name.')\n"
            f"@study({name!r}, config=Config, data='matrix', description='a toy', order=5000)\n"
            "def make(config, data, *, seed, shards):\n"
            "    raise NotImplementedError\n")
    (pkg / "_private.py").write_text("raise RuntimeError('never imported')\n")
    info = tmp_path / "toy_studies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-studies\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[irsim.study_packages]\ntoy = toy_studies\n")
    script = (
        "import json, sys\n"
        "from irsim import registry\n"
        "first = registry.get('toy_first').module\n"
        "lazy = 'toy_studies.toy_second' not in sys.modules\n"
        "print(json.dumps([first, lazy, registry.names()]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path),
                                                         os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    first, lazy, names = json.loads(r.stdout)
    assert first == "toy_studies.toy_first" and lazy
    assert names[0] == "discpower" and names[-2:] == ["toy_first", "toy_second"]


def test_a_data_kind_is_declared_by_its_study():
    """A kind brings its two loaders (matrix and docs too); built-in names are refused and a
    study may name it by object or by name."""
    kind = registry.data_kind("pair_of_matrices_test", description="two matrices",
                              from_config=lambda cfg, config: ("cfg", config),
                              from_python=lambda data, kw, config: (data, kw["left"]),
                              keywords={"left": None})
    assert registry.kinds()["pair_of_matrices_test"] is kind
    assert kind.keywords == {"left": None} and kind.from_python(1, {"left": 2}, None) == (1, 2)
    with pytest.raises(ValueError, match="data kind 'docs' is built in"):
        registry.data_kind("docs", description="x", from_config=print, from_python=print)
    assert registry.get("effort").kind.name == "docs"
    matrix = registry.get("swap").kind  # built in: declared as any kind (irsim.kit.loading)
    assert matrix.name == "matrix" and matrix.from_python.__module__ == "irsim.kit.loading"


def test_the_report_of_a_study_is_found_in_its_own_package(tmp_path, monkeypatch):
    """Without ``report=``, a study package's report is its ``report`` submodule (registered
    by the package or by one of its modules) and a one-module study's is the module itself; a
    study without one has none (the report then lists the tables only); ``report=`` names any
    other module."""
    from dataclasses import dataclass

    from irsim.params import option

    @dataclass
    class Cfg:
        B: int = option(1, "Samples.")

    section = "def sections(tables, run_dir):\n    return ['## toy']\n"
    pkg = tmp_path / "toy_pkg_study"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def make(config, data, *, seed, shards): ...\n")
    (pkg / "report.py").write_text(section + "FIGURES = ('toy.png',)\n")
    bare = tmp_path / "toy_bare_study"
    bare.mkdir()
    (bare / "__init__.py").write_text("")
    (tmp_path / "toy_one_study.py").write_text(section)
    split = tmp_path / "toy_split_study"
    split.mkdir()
    (split / "__init__.py").write_text("")
    (split / "registration.py").write_text("def make(config, data, *, seed, shards): ...\n")
    (split / "report.py").write_text(section + "FIGURES = ()\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def entry(module: str, report: str | None = None) -> registry.Study:
        return registry.Study(name="toy", description="x", config=Cfg, make=print,
                              data="matrix", module=module, report=report)

    found = entry("toy_pkg_study").report_module()
    assert found.__name__ == "toy_pkg_study.report" and found.FIGURES == ("toy.png",)
    assert found.sections({}, tmp_path) == ["## toy"]
    assert entry("toy_one_study").report_module().__name__ == "toy_one_study"
    assert entry("toy_split_study.registration").report_module().__name__ == \
        "toy_split_study.report"
    assert entry("toy_bare_study").report_name() == "toy_bare_study.report"
    assert entry("toy_bare_study").report_module() is None
    assert entry("toy_bare_study", report="toy_one_study").report_module().__name__ == \
        "toy_one_study"
    # the built-in studies: each has a report; by default its package's report submodule
    for name in registry.names():
        module = registry.get(name).report_module()
        assert module is not None and hasattr(module, "FIGURES")
        if registry.get(name).report is None:
            assert module.__name__ == f"irsim.experiments.{name}.report"


def test_the_shared_report_code_imports_no_study():
    """irsim.report holds what every report shares; a study's report lives in its package, so
    no module of irsim/report imports a study (the import graph points one way)."""
    import ast

    import irsim.report

    for path in sorted(Path(irsim.report.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = [node.module or "" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)]
        imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for a in node.names]
        assert not [m for m in imported if m.startswith("irsim.experiments")], path.name
