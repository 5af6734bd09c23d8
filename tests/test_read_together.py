"""read_runs parses small run files in the common layout together (one Arrow CSV pass for
a group of files): the runs, names and every error are those of reading each file alone."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import irsim.data.trec as trec
from irsim.data.trec import read_run, read_runs
from irsim.errors import InputError


def _text(rng, topics: int, docs: int, tag: str = "tag") -> str:
    return "".join(f"{400 + t} Q0 D{t}-{rng.integers(10**6)}-{i} {i + 1} {rng.normal():.17g} "
                   f"{tag}\n" for t in range(topics) for i in range(docs))


def _files(tmp_path: Path, n: int = 6) -> list[Path]:
    """Run files in several layouts that Arrow's CSV parser reads (plain, CRLF, a byte order
    mark, no last line end, UTF-8 docnos, gzip)."""
    rng = np.random.default_rng(7)
    paths = []
    for k in range(n):
        text = _text(rng, topics=3 + k, docs=20 + 3 * k, tag=f"t{k}")
        if k == 1:
            text = text.replace("\n", "\r\n")
        if k == 2:
            text = "\ufeff" + text.rstrip("\n")
        if k == 3:
            text = text.replace("D0-", "Dé€-")
        data = text.encode()
        path = tmp_path / (f"r{k}.run.gz" if k == 4 else f"r{k}.run")
        path.write_bytes(gzip.compress(data) if k == 4 else data)
        paths.append(path)
    return paths


def _spy(monkeypatch) -> list[bool]:
    """Whether each call of read_together read its group together."""
    calls: list[bool] = []
    real = trec.read_together

    def spy(*args):
        parts = real(*args)
        calls.append(parts is not None)
        return parts

    monkeypatch.setattr(trec, "read_together", spy)
    return calls


def _python_split(path: Path) -> list[list[str]]:
    data = path.read_bytes()
    data = gzip.decompress(data) if path.suffix == ".gz" else data
    return [ln.split() for ln in data.decode("utf-8-sig").splitlines() if ln.strip()]


@pytest.mark.parametrize("chunk", [None, 20000])
def test_runs_read_together_are_the_files_read_alone(tmp_path, monkeypatch, chunk):
    """One group, or several (GROUP_BYTES small: read by the thread pool)."""
    paths = _files(tmp_path)
    if chunk:
        monkeypatch.setattr(trec, "GROUP_BYTES", chunk)
    calls = _spy(monkeypatch)
    runs = read_runs(paths)
    groups = trec._groups(paths)  # a group of one file is read alone
    assert calls == [True] * sum(len(g) > 1 for g in groups)
    assert len(groups) == 1 if chunk is None else len(groups) > 1 and len(groups[0]) > 1
    assert runs.names == tuple(f"r{k}" for k in range(len(paths)))
    assert read_runs(paths, run_names="tag").names == tuple(f"t{k}" for k in range(len(paths)))
    lines = [_python_split(p) for p in paths]  # the oracle: Python's split of the text
    assert runs.topic.tolist() == [ln[0] for f in lines for ln in f]
    assert runs.docno.tolist() == [ln[2] for f in lines for ln in f]
    assert runs.score.tolist() == [float(ln[4]) for f in lines for ln in f]
    assert runs.run.tolist() == [k for k, f in enumerate(lines) for _ in f]
    assert runs.unique_lists
    for k, p in enumerate(paths):
        alone = read_run(p)
        mine = runs.run == k
        assert runs.docno[mine].tolist() == alone.docno.tolist()
        assert runs.score[mine].tolist() == alone.score.tolist()


@pytest.mark.parametrize(("bad", "problem"), [
    (b"9 Q0 x 1 1.0\n", "malformed line: expected 6"),
    (b"9 Q0 x 1 abc t\n", "non-numeric score 'abc'"),
    (b"9 Q0 x 1 nan t\n", "non-finite score 'nan'"),
    (b"9 Q0 x 1 1e999 t\n", "overflows a float64"),
    (b"9 Q0 d3 1 1.0 t\n", "duplicate docno 'd3' for topic '9' in the run (first at line 4)"),
    (b"9 Q0 x\x00y 1 1.0 t\n", "NUL byte (0x00) at column 7"),
    (b"9 Q0 caf\xe9 1 1.0 t\n", "not UTF-8 text (byte 0xe9 at offset"),
    (b"\n", None),  # a blank line: read by the general reader, no error
    (b"9  Q0 x 1 1.0 t\n", None),  # a double blank: the same
    (b"9\tQ0 x 1 1.0 t\n", None),  # a tab: the same
])
def test_a_file_of_a_group_reads_and_fails_as_alone(tmp_path, monkeypatch, bad, problem):
    good = b"".join(b"9 Q0 d%d %d %d.5 t\n" % (i, i, i) for i in range(10))
    paths = _files(tmp_path, 3)
    odd = tmp_path / "odd.run"
    odd.write_bytes(good + bad + b"9 Q0 last 1 0.25 t\n")
    paths.insert(2, odd)
    (tmp_path / "missing.run").unlink(missing_ok=True)
    calls = _spy(monkeypatch)
    if problem is None:
        runs = read_runs(paths)
        assert calls == [False]  # the group read file by file
        assert runs.docno[runs.run == 2].tolist() == [ln[2] for ln in _python_split(odd)]
        return
    with pytest.raises(InputError) as alone:
        read_run(odd)
    # the first error in file order: odd.run's, before a missing file after it (a
    # duplicate is looked for once every file is read, as it was file by file)
    late = [] if "duplicate" in problem else [tmp_path / "missing.run"]
    with pytest.raises(InputError) as grouped:
        read_runs([*paths, *late])
    assert str(grouped.value) == str(alone.value)
    assert (grouped.value.file, grouped.value.line) == (str(odd), 11)
    assert problem in str(grouped.value)


def test_a_missing_file_of_a_group_is_named(tmp_path):
    paths = _files(tmp_path, 3)
    with pytest.raises(InputError, match=r"nothere\.run: file not found"):
        read_runs([*paths[:2], tmp_path / "nothere.run", paths[2]])


def test_a_file_longer_than_a_chunk_is_read_alone(tmp_path, monkeypatch):
    """A file of CHUNK_BYTES or more is read by chunks (the group falls back to the
    per-file reader), with the same runs."""
    paths = _files(tmp_path, 3)
    whole = read_runs(paths)
    monkeypatch.setattr(trec, "CHUNK_BYTES", 3000)
    calls = _spy(monkeypatch)
    runs = read_runs(paths)
    assert calls == [False]
    for a in ("topic", "docno", "score", "run"):
        assert getattr(runs, a).tolist() == getattr(whole, a).tolist(), a
