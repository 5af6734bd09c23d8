"""TREC qrels and run readers: real files, formats, and every bad-input error."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from irsim.data import Runs
from irsim.data.trec import read_qrels, read_run, read_runs
from irsim.errors import ConfigError, InputError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec_eval"


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def error(fn, *args) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args)
    return info.value


# --- real files ----------------------------------------------------------------------------


def test_read_trec_eval_qrels():
    q = read_qrels(DATA / "qrels.test")
    lines = (DATA / "qrels.test").read_text().split()
    assert len(q) == len(lines) // 4
    assert q.topics == ["301", "302", "303"]
    assert q.grade.dtype == np.int64
    assert (q.topic[:2].tolist(), q.docno[:2].tolist()) == (
        ["301", "301"], ["CR93E-10279", "CR93E-10505"])
    # relevant counts printed by trec_eval (num_rel in out.test.aq)
    rel = {t: int(((q.topic == t) & (q.grade >= 1)).sum()) for t in q.topics}
    assert rel == {"301": 474, "302": 77, "303": 10}


def test_read_graded_qrels_keeps_negative_grades():
    q = read_qrels(DATA / "qrels.rel_level")
    counts = dict(zip(*np.unique(q.grade, return_counts=True), strict=True))
    assert counts == {-1: 304, 0: 2818, 1: 462, 2: 14, 3: 77, 4: 6}
    assert q.source == str(DATA / "qrels.rel_level")


def test_read_trec_eval_run():
    r = read_run(DATA / "results.test")
    assert r.names == ("results.test",)  # by file name (".test" is no results extension)
    assert read_run(DATA / "results.test", run_names="tag").names == ("STANDARD",)
    assert len(r) == 1500
    assert r.run.dtype == np.int32 and set(r.run.tolist()) == {0}
    assert r.topic.dtype == object and r.docno.dtype == object
    assert r.score[:2].tolist() == [2.129133, 1.724760]
    assert r.sources == (str(DATA / "results.test"),)


def test_gzip_and_whitespace_variants(tmp_path):
    text = "301\tQ0  d1 1   2.5 tag\r\n\n  301 Q0 d2 2 +1e-1 tag  \n301 Q0 d3 3 -.5 tag"
    plain = read_run(write(tmp_path / "r.txt", text))
    gz = read_run(write(tmp_path / "r.txt.gz", gzip.compress(text.encode())))
    assert plain.docno.tolist() == gz.docno.tolist() == ["d1", "d2", "d3"]
    assert plain.score.tolist() == gz.score.tolist() == [2.5, 0.1, -0.5]
    assert gz.names == ("r",)
    assert read_run(tmp_path / "r.txt.gz", run_names="tag").names == ("tag",)


def test_docno_codes_cached_by_reader_match_recomputed(tmp_path):
    r = read_run(write(tmp_path / "r.txt", "1 Q0 b 1 1 t\n1 Q0 a 2 0 t\n2 Q0 b 1 1 t\n"))
    codes, vocab = r.docno_codes()
    assert vocab.tolist() == ["a", "b"] and codes.tolist() == [1, 0, 1]
    # the same Runs built from the object columns recomputes the codes from the strings
    plain = Runs(r.names, r.run, r.topic, r.docno, r.score)
    codes2, vocab2 = plain.docno_codes()
    assert codes2.tolist() == codes.tolist() and vocab2.tolist() == vocab.tolist()


def test_run_names(tmp_path):
    a = write(tmp_path / "a.run", "1 Q0 x 1 1.0 alpha\n")
    b = write(tmp_path / "b.res.gz", gzip.compress(b"1 Q0 x 1 1.0 t1\n1 Q0 y 1 0.5 t2\n"))
    c = write(tmp_path / "input.bm25", "1 Q0 x 1 1.0 t1\n1 Q0 y 1 0.5 t2\n")
    runs = read_runs([a, b, c])
    # the file name without .gz and a results extension (input.<tag> kept whole)
    assert runs.names == ("a", "b", "input.bm25")
    assert runs.run.tolist() == [0, 1, 1, 2, 2]
    assert read_run(a, name="mine").names == ("mine",)
    assert read_runs(a).names == ("a",)
    assert read_runs(a, run_names="tag").names == ("alpha",)


def test_two_files_with_the_same_name(tmp_path):
    a = write(tmp_path / "a.run", "1 Q0 x 1 1.0 same\n")
    b = write(tmp_path / "b.run", "1 Q0 x 1 1.0 same\n")
    assert read_runs([a, b]).names == ("a", "b")  # by file: no clash
    e = error(lambda: read_runs([a, b], run_names="tag"))
    assert "b.run" in str(e) and "a.run" in str(e) and "'same'" in str(e)
    (tmp_path / "sub").mkdir()
    c = write(tmp_path / "sub" / "a.txt", "1 Q0 x 1 1.0 other\n")
    e = error(read_runs, [a, c])
    assert e.file == str(c) and str(a) in str(e) and "run name 'a' (by file)" in str(e)


def test_no_run_files():
    with pytest.raises(ConfigError):
        read_runs([])


# --- bad input: file, line and problem in the message ---------------------------------------


def test_malformed_run_line(tmp_path):
    p = write(tmp_path / "bad.run", "1 Q0 a 1 1.0 t\n\n1 Q0 b 2 0.5\n1 Q0 c 3 0.1 t\n")
    e = error(read_run, p)
    assert e.file == str(p) and e.line == 3
    assert str(e).startswith(f"{p}:3: malformed line: expected 6")
    assert "got 5" in str(e)


def test_malformed_qrels_line(tmp_path):
    p = write(tmp_path / "q.txt", "1 0 a 1\n1 0 b 1 extra\n")
    e = error(read_qrels, p)
    assert (e.file, e.line) == (str(p), 2) and "expected 4" in str(e)


def test_duplicate_docno_in_topic(tmp_path):
    p = write(tmp_path / "dup.run",
              "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n2 Q0 a 1 3 t\n1 Q0 c 3 1 t\n1 Q0 b 4 0 t\n")
    e = error(read_run, p)
    assert e.line == 5 and "dup.run:5:" in str(e)
    assert "duplicate docno 'b' for topic '1'" in str(e) and "first at line 2" in str(e)


def test_duplicate_qrels_judgment(tmp_path):
    p = write(tmp_path / "q.txt", "1 0 a 1\n2 0 a 1\n1 0 a 0\n")
    e = error(read_qrels, p)
    assert e.line == 3 and "q.txt:3:" in str(e) and "first at line 1" in str(e)


@pytest.mark.parametrize(
    ("score", "problem"),
    [("abc", "non-numeric score 'abc'"), ("1.5x", "non-numeric score '1.5x'"),
     ("NaN", "non-finite score 'NaN'"), ("-inf", "non-finite score '-inf'"),
     ("1e999", "overflows")],
)
def test_bad_scores(tmp_path, score, problem):
    p = write(tmp_path / "s.run", f"1 Q0 a 1 1.0 t\n1 Q0 b 2 {score} t\n")
    e = error(read_run, p)
    assert e.line == 2 and "s.run:2:" in str(e) and problem in str(e)


@pytest.mark.parametrize("grade", ["1.0", "x", "2a"])
def test_non_integer_grade(tmp_path, grade):
    p = write(tmp_path / "q.txt", f"1 0 a 1\n\n1 0 b {grade}\n")
    e = error(read_qrels, p)
    assert e.line == 3 and f"non-integer relevance grade {grade!r}" in str(e)


@pytest.mark.parametrize("reader", [read_run, read_qrels])
@pytest.mark.parametrize("text", ["", "\n \n\t\n"])
def test_empty_file(tmp_path, reader, text):
    p = write(tmp_path / "empty.txt", text)
    e = error(reader, p)
    assert e.file == str(p) and "empty file" in str(e)


@pytest.mark.parametrize("reader", [read_run, read_qrels])
def test_missing_file(tmp_path, reader):
    e = error(reader, tmp_path / "nope.txt")
    assert "nope.txt" in str(e) and "file not found" in str(e)


def test_non_utf8_file(tmp_path):
    p = write(tmp_path / "latin1.run", "1 Q0 a 1 1.0 t\n1 Q0 caf\xe9 2 0.5 t\n".encode("latin-1"))
    e = error(read_run, p)
    assert e.line == 2 and "latin1.run:2:" in str(e) and "not UTF-8" in str(e)


def test_utf8_docnos_accepted(tmp_path):
    r = read_run(write(tmp_path / "u.run", "1 Q0 café 1 1.0 t\n"))
    assert r.docno.tolist() == ["café"]


def test_corrupt_gzip(tmp_path):
    p = write(tmp_path / "r.run.gz", b"\x1f\x8b\x08\x00garbage")
    e = error(read_run, p)
    assert "r.run.gz" in str(e) and "gzip" in str(e)


def test_fast_and_general_readers_agree(tmp_path, monkeypatch):
    """Files in the common layout (single spaces, no blank line) go through Arrow's CSV
    parser; any other layout (tabs, repeated or trailing blanks, blank lines, CRLF) through
    the general tokenizer. Both give the same runs and qrels, and the general reader's line
    numbers in errors."""
    import irsim.data.trec as trec

    rows = [f"{300 + t} Q0 d{t}-{i} {i + 1} {1.0 / (i + 1)!r} tag" for t in range(3)
            for i in range(5)]
    layouts = {"plain": "\n".join(rows) + "\n", "no_final_newline": "\n".join(rows),
               "crlf": "\r\n".join(rows) + "\r\n", "tabs": "\n".join(r.replace(" ", "\t")
                                                                    for r in rows),
               "blank_lines": "\n\n".join(rows) + "\n", "double_blanks": "\n".join(
                   r.replace(" ", "  ") for r in rows), "trailing": "\n".join(
                   r + " " for r in rows)}
    calls = []
    real = trec._fast_table
    monkeypatch.setattr(trec, "_fast_table",
                        lambda *a: calls.append(real(*a) is not None) or real(*a))
    got = {}
    for name, text in layouts.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text, newline="")
        got[name] = trec.read_run(path)
    assert calls == [True, True, True, False, False, False, False]
    ref = got["plain"]
    for name, r in got.items():
        assert r.topic.tolist() == ref.topic.tolist(), name
        assert r.docno.tolist() == ref.docno.tolist(), name
        assert r.score.tolist() == ref.score.tolist(), name
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(rows[:3] + ["301 Q0 x 1 notanumber tag"] + rows[3:]) + "\n")
    with pytest.raises(InputError, match=r"bad.txt:4: non-numeric score 'notanumber'"):
        trec.read_run(bad)
    bad.write_text("\n".join(rows[:3] + ["301 Q0 x 1 2.0"] + rows[3:]) + "\n")
    with pytest.raises(InputError, match=r"bad.txt:4: malformed line"):
        trec.read_run(bad)


# --- streamed: chunks of CHUNK_BYTES, the same runs, qrels and errors ------------------------


def _small_chunks(monkeypatch, size: int) -> list[int]:
    """Read in chunks of about `size` bytes; returns the list the chunks' lengths go to."""
    import irsim.data.trec as trec

    seen: list[int] = []
    real = trec._chunk_table
    monkeypatch.setattr(trec, "CHUNK_BYTES", size)
    monkeypatch.setattr(trec, "_chunk_table",
                        lambda p, data, *a: seen.append(len(data)) or real(p, data, *a))
    return seen


def _run_text(rng, topics=7, docs=40, layout="plain") -> str:
    rows = [f"{400 + t} Q0 D{t}-{rng.integers(10**6)}-{i} {i + 1} {rng.normal():.6g} tag"
            for t in range(topics) for i in range(docs)]
    if layout == "plain":
        return "\n".join(rows) + "\n"
    # tabs, blank lines, CRLF and a BOM, in a mix of lines
    out = []
    for i, r in enumerate(rows):
        out.append(r.replace(" ", "\t") if i % 3 == 0 else r)
        if i % 11 == 0:
            out.append("   ")
    return "\ufeff" + "\r\n".join(out) + "\r\n"


@pytest.mark.parametrize("layout", ["plain", "mixed"])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("size", [64, 1000, 2001])
def test_chunks_give_the_file_read_whole(tmp_path, monkeypatch, layout, gz, size):
    rng = np.random.default_rng(size)
    text = _run_text(rng, layout=layout).encode()
    path = write(tmp_path / ("r.run.gz" if gz else "r.run"), gzip.compress(text) if gz
                 else text)
    whole = read_run(path)
    qtext = "".join(f"{400 + t} 0 D{t}-{i} {i % 3}\n" for t in range(7) for i in range(90))
    qpath = write(tmp_path / "q.txt", qtext)
    qwhole = read_qrels(qpath)
    seen = _small_chunks(monkeypatch, size)
    got = read_run(path)
    assert len(seen) > 3 and max(seen) <= size + 60  # a chunk: `size` + the rest of a line
    assert got.names == whole.names == ("r",)
    # the tag read over every chunk: one tag, as read whole
    assert read_run(path, run_names="tag").names == ("tag",)
    for a in ("topic", "docno", "score", "run"):
        assert getattr(got, a).tolist() == getattr(whole, a).tolist(), a
    for c, w in zip(got.docno_codes(), whole.docno_codes(), strict=True):
        assert c.tolist() == w.tolist()
    # the oracle: Python's own split of the text
    lines = [ln.split() for ln in text.decode("utf-8-sig").splitlines() if ln.strip()]
    assert got.docno.tolist() == [ln[2] for ln in lines]
    assert got.score.tolist() == [float(ln[4]) for ln in lines]
    q = read_qrels(qpath)
    assert q.grade.tolist() == qwhole.grade.tolist() == [i % 3 for t in range(7)
                                                           for i in range(90)]
    assert q.docno.tolist() == qwhole.docno.tolist()


def _late(tmp_path, bad: bytes, before: int = 60, name: str = "late.run") -> tuple[Path, int]:
    """A run file with `bad` as line `before` + 1 (far beyond the first small chunk)."""
    good = b"".join(b"9 Q0 d%d %d %d.5 t\n" % (i, i, i) for i in range(before))
    return write(tmp_path / name, good + bad + b"9 Q0 last 1 0.25 t\n"), before + 1


@pytest.mark.parametrize(("bad", "problem"), [
    (b"9 Q0 x 1 1.0\n", "malformed line: expected 6"),
    (b"9\tQ0 x 1 1.0\n", "malformed line: expected 6"),
    (b"9 Q0 x 1 abc t\n", "non-numeric score 'abc'"),
    (b"9 Q0 x 1 inf t\n", "non-finite score 'inf'"),
    (b"9 Q0 d7 1 1.0 t\n", "duplicate docno 'd7' for topic '9' in the run (first at line 8)"),
    (b"9 Q0 x\x00y 1 1.0 t\n", "NUL byte (0x00) at column 7"),
])
def test_errors_in_a_later_chunk_name_the_file_line(tmp_path, monkeypatch, bad, problem):
    path, line = _late(tmp_path, bad)
    whole = error(read_run, path)
    seen = _small_chunks(monkeypatch, 100)
    e = error(read_run, path)
    assert len(seen) > 5
    assert (e.file, e.line) == (whole.file, whole.line) == (str(path), line)
    assert str(e) == str(whole) and problem in str(e)


def test_non_utf8_in_a_later_chunk_gives_the_file_offset(tmp_path, monkeypatch):
    path, line = _late(tmp_path, "9 Q0 caf\xe9 1 1.0 t\n".encode("latin-1"))
    offset = path.read_bytes().index(b"\xe9")
    _small_chunks(monkeypatch, 100)
    e = error(read_run, path)
    assert e.line == line and f"byte 0xe9 at offset {offset}" in str(e)


def test_tags_across_chunks_name_the_run(tmp_path, monkeypatch):
    _small_chunks(monkeypatch, 50)
    one = b"".join(b"1 Q0 d%d 1 1.0 same\n" % i for i in range(30))
    assert read_run(write(tmp_path / "a.run", one), run_names="tag").names == ("same",)
    two = one + b"1 Q0 other 1 1.0 else\n"  # a second tag in the last chunk
    e = error(lambda: read_run(write(tmp_path / "b.run", two), run_names="tag"))
    assert "more than one tag (first seen: 'else', 'same')" in str(e)
    assert read_run(tmp_path / "b.run").names == ("b",)


def test_duplicate_in_gzip_qrels_across_chunks(tmp_path, monkeypatch):
    rows = b"".join(b"3 0 d%d 1\n" % i for i in range(50)) + b"\n\n3 0 d4 0\n"
    path = write(tmp_path / "q.gz", gzip.compress(rows))
    _small_chunks(monkeypatch, 40)
    e = error(read_qrels, path)
    assert (e.line, str(path)) == (53, e.file) and "first at line 5" in str(e)


def test_a_run_glob_skips_directories(tmp_path, caplog):
    """runs/* beside an earlier run directory (the README's order of examples): the files
    are read, the directory skipped with a note; directories only is one clear error."""
    import logging

    import pytest

    from irsim.data.collection import load_doc_collection
    from irsim.errors import InputError

    runs = tmp_path / "runs"
    (runs / "b5000").mkdir(parents=True)
    (runs / "a.run").write_text("1 Q0 d1 1 2.0 a\n1 Q0 d2 2 1.0 a\n")
    (runs / "b.run").write_text("1 Q0 d2 1 2.0 b\n1 Q0 d1 2 1.0 b\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n")
    cfg = {"kind": "trec", "runs": str(runs / "*"), "qrels": str(qrels)}
    with caplog.at_level(logging.WARNING, logger="irsim.data.collection"):
        docs = load_doc_collection(cfg)
    assert docs.runs.names == ("a", "b")
    assert "skipping 1 directory" in caplog.text and "b5000" in caplog.text
    with pytest.raises(InputError, match="matches directories only"):
        load_doc_collection({**cfg, "runs": str(runs / "b5*")})
