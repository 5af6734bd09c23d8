"""Issue 46, reliability round four: "Data loss and mislabelled results" and "Tracebacks".

Each case ends in one clean line (``irsim: error: ...``, exit code 2) with nothing written or
lost, or in a correct result checked against an independent reading of the same files.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import SHARED_DATA, has_data
from test_data_safety import QUICK, one_line_error, run_quietly, snapshot

from irsim.errors import ConfigError, InputError

needs_data = pytest.mark.skipif(not has_data(), reason="shared data not available")


def refused(args: list[str], capsys) -> str:
    """`irsim <args>` in this process: exit code 2 and the one line it printed."""
    from irsim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2, capsys.readouterr().err[-3000:]
    return one_line_error(capsys.readouterr().err)


def job_rows(job: Path, table: str) -> pa.Table:
    return pq.read_table(job / "results" / f"{table}.parquet")


# ----------------------------------------------------------------- .hydra/ through a link
def _run_dir_with_hydra(tmp_path: Path) -> Path:
    """An irsim run directory as a run through Hydra leaves it (results, manifest, .hydra/)."""
    run_dir = tmp_path / "R"
    run_quietly(["experiment.B=100", *QUICK], run_dir)
    (run_dir / ".hydra").mkdir()
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (run_dir / ".hydra" / name).write_text(f"# {name} of the first run\n")
    return run_dir


@pytest.mark.parametrize("how", ["config-symlink", "overrides-symlink", "folder-symlink",
                                 "config-hardlink", "log-symlink"])
def test_hydra_files_through_a_link_are_refused(tmp_path, how, capsys):
    """R/.hydra/config.yaml (or R/.hydra, or Hydra's log) linked to a user's file: a rerun
    with another parameter stops with one line before Hydra writes, and the user's file
    (and the run directory) are unchanged."""
    run_dir = _run_dir_with_hydra(tmp_path)
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.tex").write_text("\\documentclass{article}\n")
    hydra = run_dir / ".hydra"
    if how == "config-symlink":
        (hydra / "config.yaml").unlink()
        (hydra / "config.yaml").symlink_to(user / "thesis.tex")
    elif how == "overrides-symlink":
        (hydra / "overrides.yaml").unlink()
        (hydra / "overrides.yaml").symlink_to(user / "thesis.tex")
    elif how == "config-hardlink":
        (hydra / "config.yaml").unlink()
        os.link(user / "thesis.tex", hydra / "config.yaml")
    elif how == "log-symlink":
        (run_dir / "cli.log").symlink_to(user / "thesis.tex")
    else:
        shutil.rmtree(hydra)
        hydra.symlink_to(user, target_is_directory=True)
    before, mine = snapshot(run_dir), snapshot(user)
    line = refused(["experiment.B=100", *QUICK, "seed=3", f"hydra.run.dir={run_dir}"], capsys)
    assert ("symlink" in line or "hard link" in line) and ".hydra" in line or \
        "cli.log" in line, line
    assert snapshot(user) == mine and snapshot(run_dir) == before
    assert (user / "thesis.tex").read_text() == "\\documentclass{article}\n"
    with pytest.raises(InputError):  # and from Python
        run_quietly(["experiment.B=100", *QUICK, "seed=3"], run_dir)
    assert snapshot(user) == mine


def test_a_sweep_job_with_a_linked_hydra_folder_is_refused(tmp_path, capsys):
    sweep = tmp_path / "sw"
    (sweep / "0").mkdir(parents=True)
    task = ["experiment.B=100", *QUICK]
    (sweep / "multirun.yaml").write_text(yaml.safe_dump(
        {"hydra": {"overrides": {"task": task}}}))
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine\n")
    (sweep / "0" / ".hydra").symlink_to(user, target_is_directory=True)
    before = snapshot(tmp_path)
    line = refused(["-m", *task, f"hydra.sweep.dir={sweep}"], capsys)
    assert "0/.hydra: is a symlink" in line, line
    assert snapshot(tmp_path) == before


# ----------------------------------------------------------------- names and interpolations
def test_a_run_directory_name_too_long_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "x" * 300
    line = refused(["experiment.B=100", *QUICK, f"hydra.run.dir={name}"], capsys)
    assert "is 300 bytes long, over the 255 bytes" in line and "hydra.run.dir" in line
    line = refused(["-m", "experiment.B=100", *QUICK, f"hydra.sweep.dir=a/{name}/b"], capsys)
    assert "is 300 bytes long" in line and "hydra.sweep.dir" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value, needle", [
    ("${oc.env:IRSIM_TEST_SURELY_UNSET_46}", "IRSIM_TEST_SURELY_UNSET_46"),
    ("${bogus:1}", "Unsupported interpolation type bogus")])
@pytest.mark.parametrize("sweep", [False, True])
def test_an_interpolation_that_cannot_resolve_is_one_line(tmp_path, capsys, monkeypatch,
                                                          value, needle, sweep):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IRSIM_TEST_SURELY_UNSET_46", raising=False)
    where = ["-m", f"hydra.sweep.dir={tmp_path / 'sw'}"] if sweep else \
        [f"hydra.run.dir={tmp_path / 'r'}"]
    b = f"experiment.B=100,{value}" if sweep else f"experiment.B={value}"
    line = refused([b, *QUICK, *where], capsys)
    assert line.startswith("irsim: error: config: experiment.B: cannot resolve an "
                           "interpolation") and needle in line, line
    assert list(tmp_path.iterdir()) == []  # no run directory, no multirun.yaml


@pytest.mark.parametrize("sweep, needle", [
    ("experiment.B=100,abc", "experiment.B: Value 'abc' of type 'str' could not be converted "
                             "to Integer"),
    ("experiment.B=choice()", "empty choice is not legal"),
    ("experiment.alpha=[0.05],[x]", "experiment.alpha: Value 'x' of type 'str' could not be "
                                    "converted to Float"),
    ("seed=range(30)", None),
    ("seed=1,-1", "seed must be an integer >= 0, got -1"),
    ("collection=synthetic,nope", "unknown collection 'nope'")])
def test_a_bad_value_in_any_job_of_a_sweep_is_one_line_before_hydra(tmp_path, capsys,
                                                                    monkeypatch, sweep,
                                                                    needle):
    monkeypatch.chdir(tmp_path)
    if needle is None:  # 30 jobs, the last bad: found (each job's values checked)
        sweep, needle = "experiment.B=100,200,abc", "'abc' of type 'str'"
        args = ["-m", "seed=range(30)", sweep]
    else:
        args = ["-m", sweep]
    line = refused([*args, "quiet=true", "metrics=[AP]", f"hydra.sweep.dir={tmp_path / 'sw'}"],
                   capsys)
    assert needle in line, line
    assert list(tmp_path.iterdir()) == []  # no multirun.yaml left behind


def test_the_jobs_checked_cover_every_swept_value():
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from irsim.overrides import sweep_jobs as _sweep_jobs

    args = ["experiment.B=100,200,300", "seed=range(4)", "quiet=true"]
    jobs = _sweep_jobs(args)
    parsed = OverridesParser.create().parse_overrides(args)
    every = [j for batch in BasicSweeper.split_arguments(parsed, None) for j in batch]
    assert len(every) == 12 and all(j in every for j in jobs)
    assert {x for j in jobs for x in j} == {x for j in every for x in j}
    assert len(jobs) <= 3 + 4


# ---------------------------------------------------- two sweeps in one (default) directory
@pytest.mark.slow  # two jobs through Hydra in a subprocess
def test_a_sweep_never_shares_hydras_default_directory(tmp_path):
    """The default sweep directory of this second (and of the next minute) already holds
    another sweep, some of them locked by a running one: the new sweep takes a free
    ``<time>-1``, changes nothing of the others, and its jobs are labelled as they ran."""
    from irsim.collect import collect
    from irsim.engine.checkpoint import run_dir_lock

    now = dt.datetime.now()
    taken = []
    for s in range(120):
        t = now + dt.timedelta(seconds=s)
        d = tmp_path / "outputs" / "multirun" / t.strftime("%Y-%m-%d") / t.strftime("%H-%M-%S")
        (d / "0" / ".hydra").mkdir(parents=True)
        (d / "multirun.yaml").write_text(yaml.safe_dump(
            {"hydra": {"overrides": {"task": ["experiment.B=300"]}}}))
        (d / "0" / ".hydra" / "overrides.yaml").write_text("- experiment.B=300\n")
        taken.append(d)
    before = snapshot(tmp_path / "outputs")
    with run_dir_lock(taken[0]), run_dir_lock(taken[1]):
        r = subprocess.run([sys.executable, "-m", "irsim", "-m", "experiment.B=100,200",
                            *QUICK], capture_output=True, text=True, cwd=tmp_path,
                           timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    after = snapshot(tmp_path / "outputs")
    assert {k: v for k, v in after.items() if k in before} == before
    new = sorted({Path(k).parts[2] for k in after if k not in before})
    assert len(new) == 1 and new[0].endswith("-1"), new
    sweep = tmp_path / "outputs" / "multirun" / Path(next(
        k for k in after if k not in before)).parts[1] / new[0]
    for job, b in (("0", 100), ("1", 200)):
        manifest = json.loads((sweep / job / "manifest.json").read_text())
        assert manifest["config"]["experiment"]["B"] == b
    asl = ds.dataset(collect(sweep)["asl"], partitioning="hive").to_table().to_pandas()
    labels = {str(j): str(b) for j, b in asl.groupby("job")["experiment.B"].first().items()}
    assert labels == {"0": "100", "1": "200"}


# ------------------------------------------------------------------------ irsim collect
@pytest.fixture(scope="module")
def built_sweep(tmp_path_factory) -> Path:
    sweep = tmp_path_factory.mktemp("sweep") / "sw"
    for job, b in enumerate([100, 200]):
        d = sweep / str(job)
        run_quietly([f"experiment.B={b}", *QUICK], d)
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(f"- experiment.B={b}\n")
    return sweep


@pytest.fixture
def sweep(built_sweep, tmp_path) -> Path:
    return Path(shutil.copytree(built_sweep, tmp_path / "sw", symlinks=True))


def _collected(out: Path, table: str) -> pa.Table:
    labels = ds.partitioning(pa.schema([("experiment.B", pa.string())]), flavor="hive")
    t = ds.dataset(out / table, partitioning=labels).to_table()
    t = t.select([*[c for c in t.column_names if c not in ("experiment.B", "job")],
                  "experiment.B", "job"])
    return t.sort_by([("job", "ascending"), *[(c, "ascending") for c in t.column_names
                                              if c not in ("job", "experiment.B")]])


def _expected(sweep: Path, table: str) -> pa.Table:
    """The jobs' own tables, read directly, with their labels: the collect's oracle."""
    parts = []
    for job, b in (("0", "100"), ("1", "200")):
        t = job_rows(sweep / job, table)
        t = t.append_column("experiment.B", pa.array([b] * t.num_rows, pa.string()))
        parts.append(t.append_column("job", pa.array([job] * t.num_rows, pa.string())))
    t = pa.concat_tables(parts)
    return t.sort_by([("job", "ascending"), *[(c, "ascending") for c in t.column_names
                                              if c not in ("job", "experiment.B")]])


def test_collect_trusts_the_manifest_over_overwritten_overrides(sweep, capsys):
    """Job 0 ran with experiment.B=100 (its manifest); a second sweep overwrote its
    overrides.yaml with B=300: collect refuses, naming both, and writes nothing."""
    from irsim.collect import collect

    (sweep / "0" / ".hydra" / "overrides.yaml").write_text("- experiment.B=300\n")
    before = snapshot(sweep)
    with pytest.raises(InputError) as info:
        collect(sweep)
    assert "experiment.B=300" in str(info.value) and "experiment.B=100" in str(info.value)
    line = refused(["collect", str(sweep)], capsys)
    assert "says experiment.B=300 but its manifest.json records experiment.B=100" in line
    line = refused(["report", str(sweep)], capsys)  # the sweep report merges the same way
    assert "experiment.B=100" in line
    assert snapshot(sweep) == before
    # the true label collects, and its rows are the jobs' own
    (sweep / "0" / ".hydra" / "overrides.yaml").write_text("- experiment.B=100\n")
    out = collect(sweep)["asl"].parent
    assert _collected(out, "asl").to_pydict() == _expected(sweep, "asl").to_pydict()


def test_collect_into_an_earlier_output_keeps_a_users_files(sweep, tmp_path):
    from irsim.collect import MARKER, collect

    out = tmp_path / "merged"
    collect(sweep, out)
    (out / "thesis.tex").write_text("\\documentclass{article}\n")
    (out / "notes").mkdir()
    (out / "notes" / "todo.txt").write_text("mine\n")
    mine = {k: v for k, v in snapshot(out).items() if k.startswith(("thesis", "notes"))}
    collect(sweep, out)
    after = snapshot(out)
    assert {k: after[k] for k in mine} == mine
    assert _collected(out, "asl").to_pydict() == _expected(sweep, "asl").to_pydict()
    assert not [p for p in out.iterdir() if p.name.startswith(".irsim-collect-tmp")]
    marker = json.loads((out / MARKER).read_text())
    assert set(marker["tables"]) == {p.name for p in out.iterdir() if p.is_dir()} - {"notes"}
    # a user's file inside collect's own table folder: refused, nothing changed
    (out / "asl" / "mine.csv").write_text("1,2\n")
    before = snapshot(out)
    with pytest.raises(InputError, match="collect did not write it"):
        collect(sweep, out)
    assert snapshot(out) == before
    # a user's folder where a new table would go (an output holding other tables)
    (out / "asl" / "mine.csv").unlink()
    marker["tables"] = [t for t in marker["tables"] if t != "discpower"]
    (out / MARKER).write_text(json.dumps(marker))
    before = snapshot(out)
    with pytest.raises(InputError, match="holds discpower"):
        collect(sweep, out)
    assert snapshot(out) == before


def test_collect_into_the_current_empty_folder(sweep, tmp_path, monkeypatch, capsys):
    from irsim.cli import main
    from irsim.collect import MARKER

    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    main(["collect", str(sweep), "."])
    assert "asl: asl" in capsys.readouterr().out
    assert (here / MARKER).is_file()
    assert _collected(here, "asl").to_pydict() == _expected(sweep, "asl").to_pydict()
    assert not [p for p in here.iterdir() if p.name.startswith(".irsim-collect-tmp")]
    main(["collect", str(sweep), "."])  # again: its own output, replaced
    assert _collected(here, "asl").to_pydict() == _expected(sweep, "asl").to_pydict()


@pytest.mark.parametrize("damage", ["seven-bytes", "other-schema", "missing"])
def test_collect_with_a_damaged_job_table_is_one_line(sweep, capsys, damage):
    path = sweep / "1" / "results" / "asl.parquet"
    if damage == "seven-bytes":
        path.write_bytes(b"PAR1\x00\x00\x00")
    elif damage == "other-schema":
        pq.write_table(pa.table({"x": [1, 2, 3]}), path)
    else:
        path.unlink()
    before = snapshot(sweep)
    line = refused(["collect", str(sweep)], capsys)
    assert "job 1" in line and "asl.parquet" in line, line
    assert snapshot(sweep) == before


def test_report_on_a_table_of_another_schema_is_one_line(tmp_path, capsys):
    d = tmp_path / "run"
    run_quietly(["experiment.B=100", *QUICK], d)
    pq.write_table(pa.table({"x": [1, 2]}), d / "results" / "discpower.parquet")
    before = snapshot(d)
    line = refused(["report", str(d)], capsys)
    assert "discpower.parquet: is not the discpower table irsim writes" in line
    assert "lacks column(s) ['metric', 'test'" in line
    assert snapshot(d) == before


# ----------------------------------------------------------------------------- fit cache
def _toy() -> np.ndarray:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((1, 40))
    return np.clip(0.3 + 0.1 * z + 0.05 * rng.standard_normal((10, 40)), 0, 1)


def _forge(path: Path, change) -> None:
    """Rewrite a cache entry with its checksum recomputed (a forgery by someone who can
    write to the cache directory)."""
    from irsim.simulate.pair_copula_model import _payload_digest

    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    change(meta, arrays)
    text = json.dumps(meta)
    arrays["meta"] = np.array(text)
    arrays["sha256"] = np.array(_payload_digest(str(arrays["key"]), arrays["x"], arrays["F"],
                                                text))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _swap_copula(meta, arrays):
    meta["copulas"][0], meta["copulas"][1] = meta["copulas"][1], meta["copulas"][0]


@pytest.mark.parametrize("forgery, needle", [
    (lambda m, a: m["copulas"].__setitem__(3, "nonsense"), "copula 3 does not parse"),
    (lambda m, a: m["copulas"].__setitem__(3, '{"fam":"Gumbel"}'), "copula 3 does not parse"),
    (lambda m, a: m.pop("runs"), "missing 'runs'"),
    (lambda m, a: m["copulas"].pop(), "9 runs with 35 copulas"),
    (lambda m, a: a.__setitem__("x", a["x"][:, ::-1].copy()), "non-decreasing")])
def test_a_malformed_fit_cache_entry_with_a_valid_checksum_is_refused(tmp_path, forgery,
                                                                      needle):
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    cache = tmp_path / "cache"
    fit_pair_copula_model(_toy(), metric="AP", name="toy", seed=0, cache_dir=cache)
    (entry,) = cache.glob("*.npz")
    _forge(entry, forgery)
    before = entry.read_bytes()
    with pytest.raises(InputError) as info:
        fit_pair_copula_model(_toy(), metric="AP", name="toy", seed=0, cache_dir=cache)
    message = str(info.value)
    assert "\n" not in message and entry.name in message and needle in message, message
    assert "trusts its directory" in message
    assert entry.read_bytes() == before  # not refitted over silently


def test_the_fit_cache_verification_refits_a_sample_of_pairs(tmp_path):
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    x, cache = _toy(), tmp_path / "cache"
    fresh = fit_pair_copula_model(x, metric="AP", name="toy", seed=0)
    fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache)
    honest = fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache,
                                   verify=5)
    assert honest.cached and honest.copulas == fresh.copulas
    np.testing.assert_array_equal(honest.margins.x, fresh.margins.x)
    (entry,) = cache.glob("*.npz")
    _forge(entry, _swap_copula)  # two well-formed copulas swapped, checksum recomputed
    trusted = fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache)
    assert trusted.cached and trusted.copulas != fresh.copulas  # the cache trusts its folder
    with pytest.raises(InputError, match="differs from a refit of the copula of runs"):
        fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache,
                              verify=36)  # every pair
    fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=tmp_path / "c2")
    (entry2,) = (tmp_path / "c2").glob("*.npz")
    _forge(entry2, lambda m, a: m["runs"].reverse())
    with pytest.raises(InputError, match="keeps other runs"):
        fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=tmp_path / "c2",
                              verify=1)
    with pytest.raises(InputError, match="verify="):
        fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache,
                              verify=-1)


# ------------------------------------------------------------------- assessors and Python
def _dl19(n_runs: int) -> tuple[list[str], dict[str, str]]:
    d = SHARED_DATA / "dl19-assessors"
    runs = sorted(str(p) for p in (d / "runs").glob("*.gz"))[:n_runs]
    return runs, {"nist": str(d / "qrels" / "nist.txt"),
                  "froebe": str(d / "qrels" / "froebe.txt")}


@needs_data
def test_assessors_with_one_run_is_refused():
    import irsim

    runs, qrels = _dl19(1)
    with pytest.raises(InputError, match="1 run given: .* needs at least 2 runs"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", B=20, metrics=["P@10"])


@needs_data
@pytest.mark.parametrize("depth", [0, -5, 2.5, True])
def test_assessors_depth_must_be_positive(depth, tmp_path, capsys):
    import irsim

    runs, qrels = _dl19(3)
    with pytest.raises(ConfigError, match=f"depth must be a positive integer .* got "
                                          f"{depth!r}"):
        irsim.assessors(runs=runs, qrels=qrels, reference="nist", depth=depth)
    if depth == 0:  # the command line refuses it as irsim evaluate does
        q = ", ".join(f"{n}: {p}" for n, p in qrels.items())
        line = refused(["experiment=assessors", "collection=trec",
                        f"collection.runs=[{','.join(runs)}]", f"collection.qrels={{{q}}}",
                        "experiment.reference=nist", "collection.depth=0", "quiet=true",
                        f"hydra.run.dir={tmp_path / 'run'}"], capsys)
        assert "collection.depth must be a positive integer" in line
        assert not (tmp_path / "run").exists()


@needs_data
def test_a_qrels_name_with_a_comma_is_refused(tmp_path):
    import irsim

    runs, qrels = _dl19(3)
    with pytest.raises(ConfigError, match="qrels name 'a,b': a comma is not allowed"):
        irsim.assessors(runs=runs, qrels={"nist": qrels["nist"], "a,b": qrels["froebe"]},
                        reference="nist")
    folder = tmp_path / "q"
    folder.mkdir()
    shutil.copy(qrels["nist"], folder / "nist.txt")
    shutil.copy(qrels["froebe"], folder / "a,b.txt")
    with pytest.raises(ConfigError, match="'a,b' .*a comma is not allowed"):
        irsim.assessors(runs=runs, qrels=str(folder), reference="nist")


@pytest.mark.parametrize("progress", ["no", "false", 0, 1])
def test_progress_must_be_a_boolean(progress):
    import pandas as pd

    import irsim

    scores = pd.DataFrame(np.random.default_rng(0).random((10, 4)), columns=list("abcd"))
    with pytest.raises(ConfigError, match=f"progress must be True, False or None.*"
                                          f"{progress!r}"):
        irsim.discpower(scores, metric="AP", B=100, progress=progress)
    got = irsim.discpower(scores, metric="AP", B=100, progress=False, tests=["t"])
    assert got.tables["discpower"].num_rows > 0
