"""No data loss and no wrong results around directories irsim writes (issue 29, "Data loss and
wrong results"): irsim never removes what it did not write, a second sweep cannot relabel a
sweep's jobs, a resume or a "complete" directory never serves another code's or another
run's tables, a forged fit-cache entry is refitted, and a collection file stays inside the
data directory."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irsim.errors import ConfigError, InputError

#: a run of a few seconds (default synthetic collection)
QUICK = ["quiet=true", "metrics=[AP]", "experiment.tests=[paired_bootstrap]"]


def irsim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "irsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("irsim: error: "), stderr[-3000:]
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path under `root` (not following symlinks) with its bytes (files), its target
    (symlinks) or ``<dir>``."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            out[key] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            out[key] = "<dir>"
        else:
            out[key] = path.read_bytes()
    return out


def a_parquet(path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), path)


def run_quietly(overrides: list[str], run_dir: Path) -> dict[str, pa.Table]:
    from irsim.runner import compose_config, run

    return run(compose_config(overrides), run_dir)


# ------------------------------------------------------------------ 1. irsim collect's output
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


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_collect_never_deletes_a_directory_it_did_not_write(sweep, tmp_path, monkeypatch,
                                                            capsys):
    """`irsim collect SW OUT` into a non-empty foreign OUT (also `.`), into the sweep itself
    or into one of its jobs: one line, exit 2, nothing changed anywhere."""
    from irsim.cli import main

    mine = tmp_path / "mine"
    (mine / "chapters").mkdir(parents=True)
    (mine / "thesis.tex").write_text("\\documentclass{article}\n")
    (mine / "chapters" / "one.tex").write_text("chapter one\n")
    monkeypatch.chdir(mine)
    before = snapshot(tmp_path)
    cases = {(str(sweep), str(mine)): "did not write",
             (str(sweep), "."): "did not write",
             (str(sweep), str(sweep)): "the sweep directory",
             (str(sweep), str(sweep / "0")): "job",
             (str(sweep), str(sweep / "1" / "merged")): "job"}
    for args, needle in cases.items():
        with pytest.raises(SystemExit) as exc:
            main(["collect", *args])
        assert exc.value.code == 2, args
        line = one_line_error(capsys.readouterr().err)
        assert needle in line, (args, line)
        assert snapshot(tmp_path) == before, args


def test_collect_writes_a_new_or_empty_directory_and_replaces_only_its_own_output(sweep,
                                                                                  tmp_path):
    import pyarrow.dataset as ds

    from irsim.collect import MARKER, collect

    out = tmp_path / "new" / "merged"
    collect(sweep, out)
    assert (out / MARKER).is_file()
    first = ds.dataset(out / "asl", partitioning="hive").to_table().num_rows
    collect(sweep, out)  # a previous collect output (its marker): replaced
    assert ds.dataset(out / "asl", partitioning="hive").to_table().num_rows == first
    empty = tmp_path / "empty"
    empty.mkdir()
    collect(sweep, empty)  # an empty directory: used
    assert (empty / "asl").is_dir() and (empty / MARKER).is_file()
    paths = collect(sweep)  # the default, <sweep>/collected, twice
    paths = collect(sweep)
    assert paths["asl"] == sweep / "collected" / "asl"
    (out / MARKER).unlink()  # without the marker, the directory is not irsim's any more
    before = snapshot(out)
    with pytest.raises(InputError, match="did not write"):
        collect(sweep, out)
    assert snapshot(out) == before
    link = tmp_path / "link"
    link.symlink_to(empty, target_is_directory=True)
    with pytest.raises(InputError, match="symlink"):
        collect(sweep, link)
    assert (empty / "asl").is_dir()


def test_a_sweep_report_removes_only_its_own_plots(sweep):
    from irsim.report.sweep import write_sweep_report

    (sweep / "sweep_overview.png").write_bytes(b"\x89PNG mine")
    write_sweep_report(sweep)
    write_sweep_report(sweep)  # its own plots replaced
    assert (sweep / "sweep_overview.png").read_bytes() == b"\x89PNG mine"
    assert (sweep / "sweep_discpower.png").is_file()


# --------------------------------------------------------------- 2. a run's own directory
@pytest.mark.parametrize("link", ["results", "checkpoints"])
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_symlinked_results_or_checkpoints_is_refused(tmp_path, link):
    """results/ or checkpoints/ pointing elsewhere: refused before anything is written
    through it (a stale-table sweep of results/ or a checkpoint reset would delete the
    target's files)."""
    thesis = tmp_path / "thesis"
    (thesis / "discpower").mkdir(parents=True)
    (thesis / "thesis.tex").write_text("\\documentclass{article}\n")
    a_parquet(thesis / "other.parquet")
    (thesis / "discpower" / "notes.tex").write_text("notes\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / link).symlink_to(thesis, target_is_directory=True)
    before = snapshot(thesis)
    r = irsim("experiment.B=100", *QUICK, f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-3000:]
    line = one_line_error(r.stderr)
    assert "symlink" in line and link in line, line
    assert snapshot(thesis) == before
    with pytest.raises(InputError, match="symlink"):  # and from Python
        run_quietly(["experiment.B=100", *QUICK], run_dir)
    assert snapshot(thesis) == before


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_folder_holding_other_files_is_refused_and_left_as_it_was(tmp_path):
    import pandas as pd

    import irsim as api

    folder = tmp_path / "thesis"
    (folder / "results").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}\n")
    (folder / "figure.png").write_bytes(b"\x89PNG mine")
    (folder / "report.md").write_text("# my notes\n")
    a_parquet(folder / "results" / "other.parquet")
    before = snapshot(folder)
    r = irsim("experiment.B=100", *QUICK, f"hydra.run.dir={folder}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "did not write" in one_line_error(r.stderr)
    assert snapshot(folder) == before  # nothing removed, nothing written (not even .hydra/)
    with pytest.raises(InputError, match="did not write"):
        run_quietly(["experiment.B=100", *QUICK], folder)
    rng = np.random.default_rng(0)
    scores = pd.DataFrame(rng.random((12, 4)), columns=["r1", "r2", "r3", "r4"])
    res = api.discpower(scores, metric="AP", B=100, tests=["paired_bootstrap"])
    with pytest.raises(InputError, match="did not write"):
        res.report(folder)
    assert snapshot(folder) == before
    # an empty folder is fine, from the command line and from Python
    empty = tmp_path / "empty"
    empty.mkdir()
    r = irsim("experiment.B=100", *QUICK, f"hydra.run.dir={empty}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (empty / "results" / "asl.parquet").is_file()
    (tmp_path / "empty2").mkdir()
    assert res.report(tmp_path / "empty2").is_file()


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_rerun_removes_only_what_irsim_wrote(tmp_path):
    """A user's table, plot and notes added to a run directory survive a rerun with another
    configuration; the earlier run's own tables that the new one does not write are
    removed."""
    d = tmp_path / "run"
    run_quietly(["experiment.B=100", *QUICK, "experiment.stability=true"], d)
    assert (d / "results" / "stability.parquet").is_file()
    a_parquet(d / "results" / "mine.parquet")
    (d / "notes.png").write_bytes(b"\x89PNG mine")
    (d / "notes.txt").write_text("mine\n")
    tables = run_quietly(["experiment.B=100", *QUICK, "seed=1"], d)
    assert {p.stem for p in (d / "results").glob("*.parquet")} == set(tables) | {"mine"}
    assert "stability" not in tables
    assert (d / "notes.png").read_bytes() == b"\x89PNG mine"
    assert (d / "notes.txt").read_text() == "mine\n"
    # a complete run serves its own tables, not the user's
    again = run_quietly(["experiment.B=100", *QUICK, "seed=1"], d)
    assert set(again) == set(tables)


def test_irsim_report_writes_only_into_an_irsim_run_directory(tmp_path, capsys):
    from irsim.cli import main

    d = tmp_path / "mine"
    (d / "results").mkdir(parents=True)
    a_parquet(d / "results" / "other.parquet")
    (d / "report.md").write_text("# my notes\n")
    before = snapshot(d)
    with pytest.raises(SystemExit) as exc:
        main(["report", str(d)])
    assert exc.value.code == 2
    assert "no irsim manifest" in one_line_error(capsys.readouterr().err)
    assert snapshot(d) == before


# ------------------------------------------------------------- 3. one sweep per sweep dir
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_second_sweep_into_a_sweep_directory_is_refused(tmp_path):
    from irsim.collect import collect, sweep_jobs
    from irsim.engine.checkpoint import run_dir_lock

    sw = tmp_path / "sw"
    args = ["-m", "experiment.B=100,200", *QUICK, f"hydra.sweep.dir={sw}"]
    r = irsim(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    before = snapshot(sw)
    other = irsim("-m", "experiment.B=300", *QUICK, f"hydra.sweep.dir={sw}", cwd=tmp_path)
    assert other.returncode == 2, other.stderr[-3000:]
    assert "another sweep" in one_line_error(other.stderr)
    assert snapshot(sw) == before
    labels = {job.name: params["experiment.B"] for job, params in sweep_jobs(sw)}
    assert labels == {"0": "100", "1": "200"}
    assert set(collect(sw)) >= {"asl", "discpower"}
    # the same sweep again resumes it (every job complete); a sweep in progress is locked
    again = irsim(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    with run_dir_lock(sw):
        busy = irsim(*args, cwd=tmp_path)
    assert busy.returncode == 2 and "in use" in one_line_error(busy.stderr)


# ------------------------------------------------------------------ 4. resume and complete
_STUDY = """
import json, sys
import irsim
from irsim.data.synthetic import synthetic_scores
from irsim.engine import run_study
from irsim.experiments.discpower import DiscPower

class Stop(Exception):
    pass

def stop(done, total):
    if done == 2:
        raise Stop

matrix = synthetic_scores(systems=30, topics=25, metrics=("AP",), seed=0).matrix
study = DiscPower.of(B=500, seed=0, tests=["paired_bootstrap"], shard_items=256,
                     shard_replicates=250)
if sys.argv[1] == "interrupt":
    try:
        run_study(study, matrix, checkpoint_dir=sys.argv[2], progress=stop)
    except Stop:
        pass
else:
    _, info = run_study(study, matrix, checkpoint_dir=sys.argv[2])
    print(json.dumps({"file": irsim.__file__, "resumed": info["shards_resumed"],
                      "shards": info["shards"]}))
"""


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_resume_after_a_code_change_recomputes_every_shard(tmp_path):
    """A copy of the installed package is interrupted; a resume with the same code reuses
    its shards, a resume after a change of its source (same version string) none."""
    import irsim

    pkg = tmp_path / "pkg"
    shutil.copytree(Path(irsim.__file__).parent, pkg / "irsim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "study.py"
    script.write_text(_STUDY)
    env = {**os.environ, "PYTHONPATH": str(pkg)}

    def study(*args):
        r = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout) if r.stdout.strip() else None

    study("interrupt", str(tmp_path / "ck"))
    shutil.copytree(tmp_path / "ck", tmp_path / "ck-same")
    same = study("resume", str(tmp_path / "ck-same"))
    assert same["file"].startswith(str(pkg)) and same["shards"] == 4
    assert same["resumed"] == 2
    source = pkg / "irsim" / "experiments" / "discpower" / "__init__.py"
    source.write_text(source.read_text() + "\n# a change that keeps the version string\n")
    changed = study("resume", str(tmp_path / "ck"))
    assert changed["resumed"] == 0


def test_the_fingerprint_covers_the_source(tmp_path, monkeypatch):
    import irsim
    from irsim import provenance
    from irsim.engine.checkpoint import fingerprint_of

    copy = tmp_path / "irsim"
    shutil.copytree(Path(irsim.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    digest = provenance.source_digest(copy)
    assert digest == provenance.code_digest()  # the installed package's source
    (copy / "stats" / "extra.py").write_text("X = 1\n")
    assert provenance.source_digest(copy) != digest
    before = fingerprint_of({"B": 10}, "data")
    monkeypatch.setattr(provenance, "code_digest", lambda: "0" * 64)
    assert fingerprint_of({"B": 10}, "data") != before


@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_swapped_table_or_a_copied_manifest_is_not_served_as_complete(tmp_path, capsys):
    from irsim.runner import COMPLETE

    a, b = tmp_path / "a", tmp_path / "b"
    seed0 = ["experiment.B=100", *QUICK, "seed=0"]
    ta = run_quietly(seed0, a)
    run_quietly(["experiment.B=100", *QUICK, "seed=1"], b)
    capsys.readouterr()
    run_quietly(seed0, a)
    assert COMPLETE in capsys.readouterr().err  # untouched: complete

    def same(got):
        for name, table in ta.items():
            assert got[name].to_pydict() == table.to_pydict(), name

    shutil.copy(b / "results" / "asl.parquet", a / "results" / "asl.parquet")
    got = run_quietly(seed0, a)
    assert COMPLETE not in capsys.readouterr().err
    same(got)
    assert pq.read_table(a / "results" / "asl.parquet").to_pydict() == ta["asl"].to_pydict()
    shutil.copy(a / "manifest.json", b / "manifest.json")  # b holds seed 1's tables
    got = run_quietly(seed0, b)
    assert COMPLETE not in capsys.readouterr().err
    same(got)
    manifest = json.loads((b / "manifest.json").read_text())
    assert set(manifest["table_sha256"]) == set(ta)


def test_a_manifest_without_table_digests_is_not_complete(tmp_path):
    from irsim.runner import completed

    d = tmp_path / "run"
    run_quietly(["experiment.B=100", *QUICK], d)
    manifest = json.loads((d / "manifest.json").read_text())
    assert completed(d, manifest["fingerprint"])
    del manifest["table_sha256"]
    (d / "manifest.json").write_text(json.dumps(manifest))
    assert not completed(d, manifest["fingerprint"])


# ---------------------------------------------------------------------- 5. the fit cache
def _toy() -> np.ndarray:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((1, 40))
    return np.clip(0.3 + 0.1 * z + 0.05 * rng.standard_normal((10, 40)), 0, 1)


def _rewrite(path: Path, change) -> None:
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _forge_copula(arrays) -> None:
    """Pair 0's copula replaced by another pair's (different) one: a well-formed entry."""
    meta = json.loads(str(arrays["meta"]))
    other = next(c for c in meta["copulas"] if c != meta["copulas"][0])
    meta["copulas"][0] = other
    arrays["meta"] = np.array(json.dumps(meta))


def _forge_margin(arrays) -> None:
    arrays["x"] = arrays["x"].copy()
    arrays["x"].flat[0] += 0.01


DAMAGE = {
    "forged-copula": lambda p, other: _rewrite(p, _forge_copula),
    "forged-margin": lambda p, other: _rewrite(p, _forge_margin),
    "another-entry": lambda p, other: p.write_bytes(other.read_bytes()),
    "garbage": lambda p, other: p.write_bytes(b"PK\x03\x04 garbage" * 10),
    "empty": lambda p, other: p.write_bytes(b""),
    "truncated": lambda p, other: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "no-meta": lambda p, other: _rewrite(p, lambda a: a.pop("meta")),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.slow  # over 4 s on a loaded 2-core machine
def test_a_forged_or_damaged_fit_cache_entry_is_refitted(tmp_path, damage, caplog):
    from irsim.simulate.pair_copula_model import fit_pair_copula_model

    x = _toy()
    cache = tmp_path / "cache"
    fresh = fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache)
    (entry,) = cache.glob("*.npz")
    fit_pair_copula_model(x, metric="AP", name="toy", seed=1, cache_dir=tmp_path / "other")
    (other,) = (tmp_path / "other").glob("*.npz")
    DAMAGE[damage](entry, other)
    with caplog.at_level(logging.WARNING):
        got = fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache)
    assert not got.cached
    assert got.copulas == fresh.copulas and got.runs == fresh.runs
    np.testing.assert_array_equal(got.margins.x, fresh.margins.x)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and entry.name in warnings[0] and "\n" not in warnings[0]
    assert "refit" in warnings[0]
    again = fit_pair_copula_model(x, metric="AP", name="toy", seed=0, cache_dir=cache)
    assert again.cached and again.copulas == fresh.copulas  # overwritten with a good entry


# ------------------------------------------------------- 6. collection files in data_dir
@pytest.mark.parametrize("file", ["../outside.csv", "urbano/../../outside.csv",
                                  "../data-other/outside.csv"])
def test_a_collection_file_leaving_the_data_directory_is_refused(tmp_path, file):
    from irsim.data.collection import load_score_matrix
    from irsim.data.registry import resolve_file

    text = b"run1,run2\r\n0.25,0.5\r\n0.75,1\r\n"
    src = tmp_path / "published" / "x_ap.csv"
    src.parent.mkdir()
    src.write_bytes(text)
    data = tmp_path / "data"
    data.mkdir()
    spec = {"file": file, "url": src.as_uri(), "sha256": hashlib.sha256(text).hexdigest()}
    cfg = {"kind": "matrix", "name": "evil", "paths": {"AP": spec}}
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_score_matrix(cfg, data_dir=str(data))
    assert "evil" in str(info.value) and file in str(info.value)
    with pytest.raises(ConfigError, match="data directory"):
        resolve_file(spec, data_dir=data)
    assert snapshot(tmp_path) == before  # nothing downloaded anywhere
    # inside the data directory: downloaded there
    ok = {**spec, "file": "urbano/x_ap.csv"}
    m = load_score_matrix({**cfg, "paths": {"AP": ok}}, data_dir=str(data))
    assert m.shape == (1, 2, 2) and (data / "urbano" / "x_ap.csv").read_bytes() == text


# ------------------------------------------- writability is checked before any computation
def _never_computes(monkeypatch) -> list:
    """The engine's entry to a study's kernels, replaced by one that records the call."""
    import irsim.engine.session

    calls: list = []

    def record(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the study was computed")

    monkeypatch.setattr(irsim.engine.session, "run_study", record)
    return calls


def _cli_refuses(args: list[str], capsys) -> str:
    from irsim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    return one_line_error(capsys.readouterr().err)


def _previous_run(run_dir: Path) -> None:
    """An irsim run directory with results/ (the directory a rerun writes its tables into)."""
    run_quietly(["experiment.B=100", *QUICK], run_dir)
    assert (run_dir / "results").is_dir()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into a chmod 555 directory")
@pytest.mark.parametrize("where", ["results", "run"])
def test_a_read_only_results_directory_is_refused_before_computing(tmp_path, where, capsys,
                                                                   monkeypatch):
    run_dir = tmp_path / "run"
    _previous_run(run_dir)
    target = run_dir / "results" if where == "results" else run_dir
    before = snapshot(run_dir)
    calls = _never_computes(monkeypatch)
    target.chmod(0o555)
    try:
        line = _cli_refuses(["experiment.B=100", *QUICK, f"hydra.run.dir={run_dir}"], capsys)
        assert f"{target}: is not writable (Permission denied)" in line, line
        with pytest.raises(InputError, match="is not writable"):  # and from Python
            run_quietly(["experiment.B=100", *QUICK], run_dir)
    finally:
        target.chmod(0o755)
    assert calls == [] and snapshot(run_dir) == before


def test_a_results_directory_that_cannot_be_written_is_refused_before_computing(
        tmp_path, capsys, monkeypatch):
    """As root (chmod has no effect) too: the probe file fails as on a read-only mount
    (EROFS), and the run stops with one line, exit code 2, no kernel called, nothing
    changed."""
    import errno

    run_dir = tmp_path / "run"
    _previous_run(run_dir)
    before = snapshot(run_dir)
    calls = _never_computes(monkeypatch)
    real_open = os.open
    probes: list[str] = []

    def read_only(path, flags, *args, **kwargs):
        if Path(path).name.startswith(".irsim-write-probe-") and \
                Path(path).parent == run_dir / "results":
            probes.append(str(path))
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    line = _cli_refuses(["experiment.B=100", *QUICK, f"hydra.run.dir={run_dir}"], capsys)
    assert line == (f"irsim: error: {run_dir / 'results'}: is not writable (Read-only file "
                    f"system): irsim checks before computing that it can write its results; "
                    f"fix the permissions or choose another run directory (hydra.run.dir)")
    with pytest.raises(InputError, match=r"results: is not writable \(Read-only"):
        run_quietly(["experiment.B=100", *QUICK], run_dir)
    assert len(probes) == 2 and calls == [] and snapshot(run_dir) == before
    monkeypatch.setattr(os, "open", real_open)
    # a writable directory: the probe leaves nothing behind
    from irsim.rundir import check_writable

    check_writable(run_dir)
    assert snapshot(run_dir) == before


def test_a_dangling_symlink_run_directory_is_refused_before_computing(tmp_path, capsys,
                                                                      monkeypatch):
    calls = _never_computes(monkeypatch)
    run_dir = tmp_path / "run"
    run_dir.symlink_to(tmp_path / "gone", target_is_directory=True)
    line = _cli_refuses(["experiment.B=100", *QUICK, f"hydra.run.dir={run_dir}"], capsys)
    assert line.startswith(f"irsim: error: {run_dir}: is a dangling symlink (-> "
                           f"{tmp_path / 'gone'}): irsim cannot write its results there"), line
    with pytest.raises(InputError, match="is a dangling symlink"):
        run_quietly(["experiment.B=100", *QUICK], run_dir)
    assert calls == [] and not (tmp_path / "gone").exists() and run_dir.is_symlink()


def test_a_dangling_symlink_results_is_refused_before_computing(tmp_path, capsys,
                                                                monkeypatch):
    calls = _never_computes(monkeypatch)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results").symlink_to(tmp_path / "gone", target_is_directory=True)
    line = _cli_refuses(["experiment.B=100", *QUICK, f"hydra.run.dir={run_dir}"], capsys)
    assert f"{run_dir / 'results'}: is a dangling symlink" in line, line
    assert calls == [] and not (tmp_path / "gone").exists()
