"""Arrow's CSV parser over TREC text in the common layout (single spaces, no blank line):
one chunk of a file (:func:`irsim.data.trec.read_run`), or several small files read into one
buffer and parsed by one call (:func:`read_together`, for :func:`irsim.data.trec.read_runs`).
Anything else in the text (tabs, repeated blanks, blank lines, a NUL byte, text that is not
UTF-8, a bad token) makes these functions answer None: the general reader of
:mod:`irsim.data.trec` then reads the file and names the line of any problem."""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

__all__: list[str] = []


def csv_columns(data: bytes | memoryview, ncols: int, utf8: bool = False
                 ) -> tuple[list[pa.ChunkedArray], np.ndarray] | None:
    """The `ncols` string columns of single-spaced text by Arrow's CSV parser (chunked, as
    it parsed them) and the bytes of each line's tokens, or None when a line holds another
    number of tokens or an empty one (a doubled, leading or trailing blank), or the text is
    not UTF-8 (checked unless `utf8` says the caller checked it)."""
    names = [f"c{j}" for j in range(ncols)]
    try:
        t = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False,
                                             double_quote=False, escape_char=False,
                                             newlines_in_values=False,
                                             ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, check_utf8=not utf8,
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    columns = [t.column(j) for j in range(ncols)]
    line = np.zeros(t.num_rows, dtype=np.int64)
    for col in columns:
        n = token_lengths(col)
        if (n == 0).any():
            return None
        line += n
    return columns, line


def token_lengths(col: pa.ChunkedArray) -> np.ndarray:
    """The bytes of each string of a string column (int32 offsets: a chunk of text holds
    less than 2 GiB), from its offsets."""
    parts = [np.diff(np.frombuffer(chunk.buffers()[1], dtype="<i4", count=len(chunk) + 1,
                                   offset=chunk.offset * 4)) for chunk in col.chunks]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class _Texts:
    """Files' texts one after another in one buffer (read into it, not joined), each in
    the common layout (its byte order mark dropped, a last line end added): the buffer,
    each file's path and end, whether any holds a CR."""

    def __init__(self, size: int):
        self.buffer = bytearray(size)
        self.paths: list[Path] = []
        self.ends: list[int] = []
        self.crlf = False

    def add(self, p: Path, data: bytes | None, size: int) -> bool:
        """Add the file (`data`: its decompressed text, None: read `size` bytes from `p`);
        False when it cannot be read or is in another layout."""
        buf, start = self.buffer, self.ends[-1] if self.ends else 0
        if data is None:
            with open(p, "rb") as f:
                if f.readinto(memoryview(buf)[start:start + size]) != size or not size:
                    return False
            if buf[start:start + 2] == b"\x1f\x8b":  # gzip data without .gz
                return False
        else:
            buf[start:start + size] = data
        end = start + size
        if buf[start:start + 3] == b"\xef\xbb\xbf":  # UTF-8 byte order mark
            buf[start:end - 3] = buf[start + 3:end]
            end -= 3
        if end == start or any(buf.find(c, start, end) >= 0 for c in (b"\x00", b"\t", b"\v",
                                                                       b"\f")):
            return False
        if buf.find(b"\r", start, end) >= 0:  # (find, unlike count, runs at memchr's speed)
            if buf.count(b"\r", start, end) != buf.count(b"\r\n", start, end):
                return False
            self.crlf = True
        if buf[end - 1] != 0x0A:
            buf[end] = 0x0A
            end += 1
        self.paths.append(p)
        self.ends.append(end)
        return True

    def text(self) -> memoryview | None:
        """The texts (None: one is not UTF-8)."""
        view = memoryview(self.buffer)[:self.ends[-1]]
        if not self.buffer.isascii():
            try:
                str(view, "utf-8")
            except UnicodeDecodeError:
                return None
        return view

    def rows(self, line: np.ndarray) -> np.ndarray | None:
        """Each file's lines, given the bytes of each line's tokens (`line`, single spaced,
        6 tokens); None when they do not end at the files' ends."""
        if self.crlf:
            bounds = [0, *self.ends]
            rows = np.array([self.buffer.count(b"\n", a, b) for a, b in
                             zip(bounds[:-1], bounds[1:], strict=True)], dtype=np.int64)
        else:
            ends = np.cumsum(line + 6)  # 5 spaces and a line end
            at = np.searchsorted(ends, self.ends)
            if at[-1] >= len(ends) or not np.array_equal(ends[at], self.ends):
                return None
            rows = np.diff(at, prepend=-1)
        return rows if rows.sum() == len(line) else None


def _texts(paths: Sequence[str | os.PathLike], max_bytes: int) -> _Texts | None:
    """The files' texts in one buffer (:class:`_Texts`); None when one holds `max_bytes`
    or more, cannot be read or is in another layout."""
    files = []
    for path in paths:
        p = Path(path)
        try:
            st = os.stat(p)
            data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else None
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile):
            return None
        size = st.st_size if data is None else len(data)
        if not stat.S_ISREG(st.st_mode) or size >= max_bytes:
            return None
        files.append((p, data, size))
    texts = _Texts(sum(size + 1 for _, _, size in files))
    return texts if all(texts.add(*f) for f in files) else None


class RunText:
    """One run file of a group: its path, topic and docno columns (Arrow arrays), scores
    and tags (when asked for)."""

    def __init__(self, path: Path, topic: list[pa.Array], docno: list[pa.Array],
                 score: np.ndarray, tags: set[str]):
        self.path, self.topic, self.docno, self.score, self.tags = (path, topic, docno,
                                                                    score, tags)


def read_together(paths: Sequence[str | os.PathLike], max_bytes: int, tags: bool = False
                  ) -> list[RunText] | None:
    """Small run files in the common layout, each shorter than `max_bytes`, parsed in one
    pass of Arrow's CSV parser (one call, not one per file), their scores in one cast (and
    each file's distinct tags when `tags`); None when any of them is not (or has a problem:
    the per-file reader then reads each and names the first)."""
    texts = _texts(paths, max_bytes)
    text = None if texts is None else texts.text()
    parsed = None if text is None else csv_columns(text, 6, utf8=True)
    rows = None if parsed is None else texts.rows(parsed[1])
    if rows is None:
        return None
    topic, _, docno, _, score_col, tag = parsed[0]
    try:
        score = pc.cast(score_col, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None
    if not np.isfinite(score).all():
        return None
    out, at = [], 0
    for p, n in zip(texts.paths, rows.tolist(), strict=True):
        out.append(RunText(p, _pieces(topic.slice(at, n)), _pieces(docno.slice(at, n)),
                           score[at:at + n],
                           set(pc.unique(tag.slice(at, n)).to_pylist()) if tags else set()))
        at += n
    return out


def _pieces(col: pa.ChunkedArray) -> list[pa.Array]:
    return col.chunks
