"""Score-matrix readers: Urbano CSV, long CSV/Parquet, dispatch and every error case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irsim.data.matrix import ScoreMatrix
from irsim.data.matrix_io import read_long, read_matrix, read_urbano_csv, write_long
from irsim.errors import ConfigError, InputError

# (collection, metric files, runs, topics) as listed in shared/data/README.md
COLLECTIONS = [
    ("adhoc5", ("ap", "p10", "rr"), 61, 50),
    ("adhoc6", ("ap", "p10", "rr"), 74, 50),
    ("adhoc7", ("ap", "p10", "rr"), 103, 50),
    ("adhoc8", ("ap", "p10", "rr"), 129, 50),
    ("web2010", ("ap", "p10", "p20", "rr", "ndcg20", "err20"), 88, 48),
    ("web2011", ("ap", "p10", "p20", "rr", "ndcg20", "err20"), 62, 50),
    ("web2012", ("ap", "p10", "p20", "rr", "ndcg20", "err20"), 48, 50),
]
FILES = [(name, m, runs, topics) for name, ms, runs, topics in COLLECTIONS for m in ms]


def pandas_oracle(path: Path) -> pd.DataFrame:
    """Independent reader: pandas (its own CSV parser and float conversion)."""
    return pd.read_csv(path)


# ----------------------------------------------------------------------------- real data


@pytest.mark.parametrize("name,metric,runs,topics", FILES)
def test_shapes_and_values_match_pandas(shared_data, name, metric, runs, topics):
    path = shared_data / "urbano" / f"{name}_{metric}.csv"
    m = read_urbano_csv(path, metric.upper())
    assert m.shape == (1, runs, topics)
    assert m.metrics == (metric.upper(),)
    assert m.topics == tuple(str(i) for i in range(1, topics + 1))
    df = pandas_oracle(path)
    assert m.systems == tuple(df.columns)
    assert m.systems[0] in ("run1", "sys1")  # quoted web headers lose their quotes
    np.testing.assert_array_equal(m.values[0], df.to_numpy(dtype=np.float64).T)
    assert m.source == str(path)


def test_adhoc8_ap_column_means_equal_pandas(shared_data):
    path = shared_data / "urbano" / "adhoc8_ap.csv"
    means = read_urbano_csv(path, "AP").metric("AP").mean(axis=1)
    oracle = pandas_oracle(path).mean(axis=0).to_numpy()
    assert means.shape == (129,)
    np.testing.assert_allclose(means, oracle, rtol=0, atol=1e-12)
    # sanity of the oracle itself: MAPs of TREC-8 runs lie between 0 and 0.5
    assert 0 <= oracle.min() and oracle.max() < 0.5


def test_adhoc8_ap_values_published_in_urbano_readme(shared_data):
    # julian-urbano/sigir2019-statistical README prints the first topics of systems 125, 126
    m = read_urbano_csv(shared_data / "urbano" / "adhoc8_ap.csv", "AP")
    ap = m.metric("AP")
    np.testing.assert_array_equal(ap[124, :5], [0.0075, 0.0712, 0.7546, 0.1367, 0.0548])
    np.testing.assert_array_equal(ap[125, :5], [0.0258, 0.2125, 0.7863, 0.1649, 0.0797])


def test_topic_column_variant(shared_data, tmp_path):
    src = shared_data / "urbano" / "adhoc8_ap.csv"
    plain = read_urbano_csv(src, "AP")
    lines = src.read_text().splitlines()
    topics = [str(401 + i) for i in range(len(lines) - 1)]
    out = tmp_path / "adhoc8_ap_topics.csv"
    out.write_text("\n".join(["topic," + lines[0]]
                             + [f"{t},{row}" for t, row in zip(topics, lines[1:], strict=True)])
                   + "\n")
    m = read_urbano_csv(out, "AP")
    assert m.topics == tuple(topics)
    assert m.systems == plain.systems
    np.testing.assert_array_equal(m.values, plain.values)


def test_topic_ids_stay_strings(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('"topic","a","b"\n007,0.5,0.25\nq2,1,0\n')
    m = read_urbano_csv(p, "AP")
    assert m.topics == ("007", "q2")
    assert m.systems == ("a", "b")
    np.testing.assert_array_equal(m.metric("AP"), [[0.5, 1.0], [0.25, 0.0]])


def test_crlf_bom_and_blank_lines(tmp_path):
    p = tmp_path / "crlf.csv"
    p.write_bytes(b"\xef\xbb\xbfrun1,run2\r\n0.1,0.2\r\n\r\n0.3,0.4\r\n\r\n")
    m = read_urbano_csv(p, "AP")
    assert m.systems == ("run1", "run2")
    np.testing.assert_array_equal(m.metric("AP"), [[0.1, 0.3], [0.2, 0.4]])


# ----------------------------------------------------------------------------- long layout


def test_long_parquet_round_trip(shared_data, tmp_path):
    parts = [read_urbano_csv(shared_data / "urbano" / f"adhoc8_{s}.csv", name)
             for s, name in (("ap", "AP"), ("p10", "P@10"), ("rr", "RR"))]
    m = ScoreMatrix.stack(parts)
    p = write_long(m, tmp_path / "sub" / "adhoc8.parquet")
    table = pq.read_table(p)
    assert table.column_names == ["system", "topic", "metric", "value"]
    assert table.num_rows == 3 * 129 * 50
    back = read_long(p)
    assert (back.metrics, back.systems, back.topics) == (m.metrics, m.systems, m.topics)
    np.testing.assert_array_equal(back.values, m.values)
    assert not list(p.parent.glob(".*.part"))  # atomic write leaves no temp file


def test_long_csv_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(7)
    vals = rng.random((2, 3, 4))
    m = ScoreMatrix(vals, ["AP", "nDCG@10"], ["a", "b", "c"], ["401", "402", "403", "404"])
    back = read_long(write_long(m, tmp_path / "m.csv"))
    np.testing.assert_array_equal(back.values, m.values)
    assert back.topics == m.topics


def test_long_any_row_order_and_extra_columns(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("value,metric,topic,system,note\n"
                 "0.4,AP,2,b,x\n0.1,AP,1,a,y\n0.3,AP,1,b,z\n0.2,AP,2,a,w\n")
    m = read_long(p)
    assert m.systems == ("b", "a") and m.topics == ("2", "1")
    assert m.metric("AP")[m.systems.index("a"), m.topics.index("1")] == 0.1
    assert m.metric("AP")[m.systems.index("b"), m.topics.index("2")] == 0.4


def test_read_matrix_dispatch(tmp_path):
    urbano = tmp_path / "u.csv"
    urbano.write_text("run1,run2\n0.1,0.2\n0.3,0.4\n")
    m = read_matrix(urbano, metric="AP")
    assert m.metrics == ("AP",)
    with pytest.raises(ConfigError, match="metric"):
        read_matrix(urbano)
    both = ScoreMatrix(np.arange(8, dtype=float).reshape(2, 2, 2) / 10, ["AP", "RR"],
                       ["s1", "s2"], ["t1", "t2"])
    for name in ("m.parquet", "m.pq", "m.csv"):
        p = write_long(both, tmp_path / name)
        np.testing.assert_array_equal(read_matrix(p).values, both.values)
        only = read_matrix(p, metric="RR")
        assert only.metrics == ("RR",)
        np.testing.assert_array_equal(only.values[0], both.values[1])
        with pytest.raises(ConfigError, match="unknown metric 'P@10'"):
            read_matrix(p, metric="P@10")


# ----------------------------------------------------------------------------- Urbano errors


def _err(tmp_path: Path, content: str | bytes, name: str = "bad.csv") -> InputError:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    with pytest.raises(InputError) as info:
        read_urbano_csv(p, "AP")
    assert info.value.file == str(p)
    return info.value


@pytest.mark.parametrize("content,line,needle", [
    ("run1,run2\n0.1,0.2\n0.3,\n", 3, "empty cell in column 'run2'"),
    ("run1,run2\n0.1,NA\n0.3,0.4\n", 2, "missing value 'NA' in column 'run2'"),
    ("run1,run2\n0.1,0.2\nNaN,0.4\n", 3, "missing value 'NaN' in column 'run1'"),
    ("run1,run2\n0.1,0.2\n0.3,0.4\n0.5,abc\n", 4, "non-numeric value 'abc' in column 'run2'"),
    ("run1,run2\n0.1,0.2\n0.3,inf\n", 3, "non-finite value 'inf' in column 'run2'"),
    ("run1,run2\n0.1,0.2\n0.3\n", 3, "expected 2 columns (as in the header), got 1"),
    ("run1,run2\n0.1,0.2,0.5\n0.3,0.4\n", 2, "expected 2 columns (as in the header), got 3"),
    ("run1,run2\n\n0.1,0.2\n\n0.3,x\n", 5, "non-numeric value 'x'"),  # blank lines counted
    ("run1,run1\n0.1,0.2\n", 1, "duplicate column name 'run1'"),
    ("run1,,run3\n0.1,0.2,0.3\n", 1, "empty column name (column 2)"),
    ("topic,run1\n401,0.1\n402,0.2\n401,0.3\n", 4, "duplicate topic id '401' (first on line 2)"),
    ("topic,run1\n401,0.1\n,0.2\n", 3, "empty topic id"),
])
def test_urbano_errors_name_file_line_and_problem(tmp_path, content, line, needle):
    err = _err(tmp_path, content)
    assert err.line == line
    assert needle in err.problem
    assert str(err).startswith(f"{err.file}:{line}: ")


@pytest.mark.parametrize("content,needle", [
    (b"", "empty file"),
    (b"\n  \n", "empty file"),
    (b"run1,run2\n", "no data rows"),
])
def test_urbano_empty_files(tmp_path, content, needle):
    assert needle in _err(tmp_path, content).problem


def test_urbano_not_utf8(tmp_path):
    err = _err(tmp_path, "run1,run2\n0.1,0.2\n0.3,0.4 caf\xe9\n".encode("latin-1"))
    assert err.line == 3
    assert "not valid UTF-8" in err.problem


def test_urbano_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found") as info:
        read_urbano_csv(tmp_path / "nope.csv", "AP")
    assert info.value.file == str(tmp_path / "nope.csv")


def test_urbano_only_topic_column(tmp_path):
    assert "no system columns" in _err(tmp_path, "topic\n1\n2\n").problem


# ----------------------------------------------------------------------------- long errors


def _long_err(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        read_long(path)
    assert info.value.file == str(path)
    return info.value


HEAD = "system,topic,metric,value\n"


@pytest.mark.parametrize("body,line,needle", [
    ("a,1,AP,0.1\na,2,AP,0.2\nb,1,AP,0.3\na,2,AP,0.5\nb,2,AP,0.4\n", 5,
     "duplicate cell metric='AP', system='a', topic='2' (first on line 3)"),
    ("a,1,AP,0.1\na,2,AP,x\n", 3, "non-numeric value 'x' in column 'value'"),
    ("a,1,AP,0.1\na,2,AP,\n", 3, "empty cell in column 'value'"),
    ("a,1,AP,0.1\n,2,AP,0.3\n", 3, "empty system"),
    ("a,1,AP,0.1\na,2,AP\n", 3, "expected 4 columns"),
])
def test_long_csv_errors_with_line(tmp_path, body, line, needle):
    p = tmp_path / "long.csv"
    p.write_text(HEAD + body)
    err = _long_err(p)
    assert err.line == line
    assert needle in err.problem


def test_long_csv_missing_cell(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text(HEAD + "a,1,AP,0.1\na,2,AP,0.2\nb,2,AP,0.4\na,1,RR,1\na,2,RR,1\n"
                 "b,1,RR,0\nb,2,RR,0.5\n")
    err = _long_err(p)
    assert "missing cell metric='AP', system='b', topic='1'" in err.problem
    assert "needs 8 rows, got 7" in err.problem


def test_long_csv_missing_column(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("system,topic,score\na,1,0.5\n")
    err = _long_err(p)
    assert err.line == 1 and "missing column(s) metric, value" in err.problem


def test_long_parquet_errors(tmp_path):
    def write(name: str, **cols) -> Path:
        p = tmp_path / name
        pq.write_table(pa.table(cols), p)
        return p

    dup = write("dup.parquet", system=["a", "a"], topic=["1", "1"], metric=["AP", "AP"],
                value=[0.1, 0.2])
    err = _long_err(dup)
    assert err.line is None
    assert "duplicate cell metric='AP', system='a', topic='1' (row 2) (first on row 1)" \
        in err.problem
    hole = write("hole.parquet", system=["a", "b", "b"], topic=[1, 1, 2], metric=["AP"] * 3,
                 value=[0.1, 0.2, 0.3])
    assert "missing cell metric='AP', system='a', topic='2'" in _long_err(hole).problem
    blank = write("blank.parquet", system=["a", " "], topic=["1", "1"], metric=["AP"] * 2,
                  value=[0.1, 0.2])
    assert "empty system (row 2)" in _long_err(blank).problem
    nan = write("nan.parquet", system=["a"], topic=["1"], metric=["AP"], value=[float("nan")])
    assert "non-finite value nan (row 1)" in _long_err(nan).problem
    text = write("text.parquet", system=["a"], topic=["1"], metric=["AP"], value=["0.5"])
    assert "expected numbers" in _long_err(text).problem
    nocol = write("nocol.parquet", system=["a"], topic=["1"], value=[0.5])
    assert "missing column(s) metric" in _long_err(nocol).problem
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    assert "not a readable Parquet file" in _long_err(junk).problem
    assert "file not found" in _long_err(tmp_path / "absent.parquet").problem


def test_long_parquet_integer_topics_become_strings(tmp_path):
    p = tmp_path / "int.parquet"
    pq.write_table(pa.table({"system": ["a", "a"], "topic": [401, 402], "metric": ["AP"] * 2,
                             "value": [1, 0]}), p)
    m = read_long(p)
    assert m.topics == ("401", "402")
    np.testing.assert_array_equal(m.values, [[[1.0, 0.0]]])
