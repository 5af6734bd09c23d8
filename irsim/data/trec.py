"""Readers for TREC qrels and run files, streamed and vectorised with pyarrow.

A file is read in chunks of about :data:`CHUNK_BYTES` (``.gz`` is decompressed as it is
read; a chunk ends at a line end), so memory holds one chunk of text plus what is kept of
the rows (topic and docno codes, scores or grades), never the whole file. Each chunk is
checked for NUL bytes and UTF-8, split into lines and then into whitespace-separated tokens
by Arrow (its CSV parser for the common layout, its compute kernels for any other); every
check (column count, numbers) is a mask over the chunk's lines, and the first offending line
is found with ``argmax``; duplicates are found over the whole file from integer codes. Blank
lines are skipped but counted, so the reported line numbers are those of the file. A file
with several problems reports the first problem of the first chunk that has one (a
duplicate, found over the whole file, after every chunk's other checks; :func:`read_runs`
reads every file before it looks for duplicates, so that each string is hashed once).

:func:`read_runs` reads small run files in groups of about :data:`GROUP_BYTES`: a group's
files, each shorter than a chunk and in the common layout (single spaces), are read into one
buffer and parsed by one call of Arrow's CSV parser, their scores cast at once; a group with
any other file, or any problem, is read file by file as above, so the runs, the names and
every error are those of reading each file alone.

Formats
-------
qrels : ``qid iter docno rel``
    ``rel`` is an integer grade; negative grades are kept (they are judged non-relevant,
    as in trec_eval). A (qid, docno) pair may appear once.
run : ``qid Q0 docno rank score tag``
    Ranking is by ``score`` (the rank column is ignored, as in trec_eval); a docno may
    appear once per topic. Runs are named by one rule, :func:`name_runs`: by file name
    (without ``.gz`` and a results extension; the default) or by tag (``run_names="tag"``).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from irsim.data.trec_csv import csv_columns, read_together
from irsim.data.types import Qrels, Runs, missing_file, sorted_codes
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["read_qrels", "read_run", "read_runs", "trec_eval_scores", "SCORE_PRECISIONS",
           "name_runs", "file_stem", "RUN_NAMES", "DEFAULT_RUN_NAMES"]

PathT = str | PathLike

_INT_RE = r"^[+-]?[0-9]+$"
_FLOAT_RE = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_NONFINITE_RE = r"^[+-]?(?i:nan|inf|infinity)$"

_RUN_COLUMNS = "qid Q0 docno rank score tag"
_QRELS_COLUMNS = "qid iter docno rel"


#: Run files :func:`read_runs` reads at once (threads; None: one per CPU). Each holds one
#: chunk of text at a time; the runs and the first error are those of the files' order.
READ_THREADS: int | None = None

#: Bytes of (decompressed) text read, checked and parsed at a time; a chunk is extended to
#: its last line end (a line longer than this is read whole).
CHUNK_BYTES = 1 << 24

#: Bytes of text of the small run files :func:`read_runs` parses together (one group at a
#: time per thread; small enough that the memory of one group is reused by the next).
GROUP_BYTES = 1 << 20


class _Table:
    """The data lines of one chunk: token columns (Arrow arrays, chunked or not) plus their
    1-based line numbers."""

    def __init__(self, path: Path, columns: list[pa.Array | pa.ChunkedArray],
                 line: np.ndarray):
        self.path = path
        self.columns = columns
        self.line = line

    def fail(self, problem: str, row: int | None = None) -> InputError:
        line = None if row is None else int(self.line[row])
        return InputError(problem, file=self.path, line=line)


class _Lines:
    """The line numbers of a file's data rows, kept compactly: a chunk whose lines are all
    data rows (Arrow's CSV layout) as its first line only, any other chunk as its array."""

    def __init__(self) -> None:
        self.first_rows: list[int] = []
        self.lines: list[int | np.ndarray] = []
        self.rows = 0

    def add(self, t: _Table) -> None:
        n = len(t.line)
        if n:
            consecutive = int(t.line[-1]) - int(t.line[0]) == n - 1
            self.first_rows.append(self.rows)
            self.lines.append(int(t.line[0]) if consecutive else t.line)
            self.rows += n

    def __getitem__(self, row: int) -> int:
        i = int(np.searchsorted(self.first_rows, row, side="right")) - 1
        seg = self.lines[i]
        off = row - self.first_rows[i]
        return seg + off if isinstance(seg, int) else int(seg[off])


def _open(path: PathT) -> tuple[Path, Iterator[bytes]]:
    """The file's path and its (decompressed) content as blocks of :data:`CHUNK_BYTES`."""
    p = Path(path)
    if not p.exists():
        raise InputError(missing_file(p), file=p)
    if not p.is_file():
        raise InputError("not a regular file", file=p)
    try:
        f = open(p, "rb")  # noqa: SIM115 - closed by the generator below
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror})", file=p) from None
    return p, _blocks(p, f)


def _blocks(p: Path, f: BinaryIO) -> Iterator[bytes]:
    with f:
        try:
            gz = p.suffix == ".gz" or f.read(2) == b"\x1f\x8b"
            f.seek(0)
        except OSError as e:
            raise InputError(f"cannot read file ({e.strerror})", file=p) from None
        src: BinaryIO = gzip.GzipFile(fileobj=f, mode="rb") if gz else f
        # a plain file is read to its size, not to a CHUNK_BYTES buffer (allocating one per
        # small file costs more than reading it); the read of one byte more ends the file
        left = None if gz else os.fstat(f.fileno()).st_size + 1
        while True:
            try:
                want = CHUNK_BYTES if left is None else min(CHUNK_BYTES, left)
                block = src.read(want)
                if len(block) == want < CHUNK_BYTES:  # longer than its size said (/proc)
                    block += src.read(CHUNK_BYTES - want)
                    left = None
            except (gzip.BadGzipFile, EOFError, zlib.error) as e:
                raise InputError(f"corrupt gzip data ({e})", file=p) from None
            except OSError as e:
                raise InputError(f"cannot read file ({e.strerror})", file=p) from None
            if not block:
                return
            if left is not None:
                left = max(left - len(block), 1)
            yield block


def _chunks(blocks: Iterable[bytes]) -> Iterator[tuple[bytes, int, int]]:
    """``(text, lines before it, bytes before it)``: the blocks cut after their last line
    end (the rest carried to the next; a block shorter than :data:`CHUNK_BYTES` is the
    file's last, kept whole); the UTF-8 byte order mark dropped."""
    carry = b""
    line0 = offset0 = 0
    before: bytes | None = None  # the previous chunk: its lines counted once another follows

    def emit(data: bytes) -> tuple[bytes, int, int]:
        nonlocal line0, offset0, before
        if before is None:
            if data[:3] == b"\xef\xbb\xbf":  # UTF-8 byte order mark
                data = data[3:]
        else:
            line0 += before.count(b"\n")
            offset0 += len(before)
        before = data
        return data, line0, offset0

    for block in blocks:
        data = carry + block if carry else block
        if len(block) < CHUNK_BYTES:  # a short read: the end of the file
            carry = b""
            yield emit(data)
            continue
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield emit(data[:cut])
        carry = data[cut:]
    if carry:
        yield emit(carry)


def _refuse_nul(path: Path, data: bytes, line0: int = 0) -> None:
    """A NUL byte (never part of a docno, topic or tag: trec_eval would cut the string
    there) is refused with its line."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = line0 + data.count(b"\n", 0, nul) + 1
        column = nul - data.rfind(b"\n", 0, nul)
        raise InputError(f"NUL byte (0x00) at column {column}: not a text line", file=path,
                         line=line)


def _lines(path: Path, data: bytes, line0: int = 0, offset0: int = 0) -> pa.Array:
    """The chunk's lines as a string array (line ``line0 + i + 1`` at index i), trimmed of
    whitespace."""
    _refuse_nul(path, data, line0)
    blob = pa.array([data], type=pa.large_binary())
    try:
        text = blob.cast(pa.large_string())
    except pa.ArrowInvalid:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = line0 + data.count(b"\n", 0, e.start) + 1
            raise InputError(
                f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {offset0 + e.start})",
                file=path, line=line,
            ) from None
        raise  # arrow and Python disagree on validity: let it surface
    return pc.ascii_trim_whitespace(pc.split_pattern(text, "\n").flatten())


def _fast_table(p: Path, data: bytes, ncols: int) -> _Table | None:
    """The common layout read by Arrow's CSV parser: every line holds exactly `ncols`
    tokens separated by single spaces, no blank line, valid UTF-8. None for anything else
    (tabs or CRs anywhere, repeated, leading or trailing blanks, blank lines, a malformed
    line): the general reader then reads the chunk and names the line of any problem.
    Line numbers from 1."""
    if _not_single_spaced(data):
        return None
    parsed = csv_columns(data, ncols)
    if parsed is None or len(parsed[0][0]) == 0:
        return None
    columns = parsed[0]
    return _Table(p, columns, np.arange(1, len(columns[0]) + 1))


def _not_single_spaced(data: bytes) -> bool:
    """Whether the text holds whitespace other than spaces and line ends (tab, VT, FF, a CR
    not followed by LF: the general reader splits on them, Arrow's CSV layout would keep
    them in a token or end a line there)."""
    if any(c in data for c in (b"\t", b"\v", b"\f")):
        return True
    return b"\r" in data and data.count(b"\r") != data.count(b"\r\n")


def _chunk_table(p: Path, data: bytes, ncols: int, spec: str, line0: int,
                 offset0: int) -> _Table:
    """One chunk's data lines in ``ncols`` string columns, the column count of every line
    checked (lines numbered in the file: the chunk starts after line `line0`, byte
    `offset0`)."""
    _refuse_nul(p, data, line0)
    fast = _fast_table(p, data, ncols)
    if fast is not None:
        fast.line += line0
        return fast
    lines = _lines(p, data, line0, offset0)
    nonblank = pc.greater(pc.binary_length(lines), 0).to_numpy(zero_copy_only=False)
    tokens = pc.ascii_split_whitespace(lines)
    ntok = pc.list_value_length(tokens).to_numpy(zero_copy_only=False)
    bad = nonblank & (ntok != ncols)
    if bad.any():
        i = int(np.argmax(bad))
        shown = lines[i].as_py()
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InputError(
            f"malformed line: expected {ncols} whitespace-separated columns ({spec}), "
            f"got {ntok[i]}: {shown!r}",
            file=p, line=line0 + i + 1,
        )
    rows = np.flatnonzero(nonblank)
    kept = tokens.filter(pa.array(nonblank)) if rows.size < len(lines) else tokens
    columns = [pc.list_element(kept, j).cast(pa.string()) for j in range(ncols)]
    return _Table(p, columns, rows + line0 + 1)


def _tables(path: PathT, ncols: int, spec: str) -> tuple[Path, Iterator[_Table]]:
    """The file's path and its chunks' tables (:func:`_chunk_table`), read as consumed."""
    p, blocks = _open(path)
    return p, (_chunk_table(p, data, ncols, spec, line0, offset0)
               for data, line0, offset0 in _chunks(blocks))


class _Codes:
    """A string column as int32 codes into its dictionary (unique strings, an Arrow array)."""

    def __init__(self, indices: np.ndarray, dictionary: pa.Array):
        self.indices = indices
        self.dictionary = dictionary

    @classmethod
    def encode(cls, chunks: list[pa.Array]) -> _Codes:
        """One dictionary for all the chunks (Arrow hashes each string once)."""
        enc = pc.dictionary_encode(pa.chunked_array(chunks, type=pa.string()))
        parts = enc.chunks
        first = parts[0].dictionary.buffers()
        if any(c.dictionary.buffers()[1:] != first[1:] for c in parts[1:]):
            parts = enc.unify_dictionaries().chunks  # pragma: no cover - Arrow shares it
        idx = [c.indices.to_numpy(zero_copy_only=False) for c in parts]
        return cls(np.concatenate(idx) if len(idx) > 1 else idx[0], parts[0].dictionary)

    def sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """(codes, vocabulary): int64 codes into the sorted unique strings (object array),
        see :func:`irsim.data.types.sorted_codes`."""
        return sorted_codes(self.indices, self.dictionary)

    def objects(self) -> np.ndarray:
        """The column as an object array of str (one Python string per distinct value)."""
        return _objects(self.dictionary)[self.indices]

    def value(self, row: int) -> str:
        return self.dictionary[int(self.indices[row])].as_py()


def _pieces(col: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def _first_true(mask: np.ndarray) -> int | None:
    return int(np.argmax(mask)) if mask.any() else None


def _match(col: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(col, pattern).to_numpy(zero_copy_only=False)


def _strip_plus(col: pa.Array) -> pa.Array:
    return pc.replace_substring_regex(col, r"^\+", "", max_replacements=1)


def _parse_scores(t: _Table, col: pa.Array) -> np.ndarray:
    try:  # fast path: Arrow's parser (decimal and exponent forms, nan/inf)
        values = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        i = _first_true(~_match(col, _FLOAT_RE) & ~_match(col, _NONFINITE_RE))
        if i is None:  # pragma: no cover - Arrow rejected what the pattern accepts
            raise t.fail("non-numeric score") from None
        raise t.fail(f"non-numeric score {col[i].as_py()!r}", i) from None
    i = _first_true(~np.isfinite(values))
    if i is not None:
        token = col[i].as_py()
        if _match(pa.array([token]), _NONFINITE_RE)[0]:
            raise t.fail(f"non-finite score {token!r}", i)
        raise t.fail(f"score {token!r} overflows a float64", i)
    return values


def _parse_grades(t: _Table, col: pa.Array) -> np.ndarray:
    i = _first_true(~_match(col, _INT_RE))
    if i is not None:
        raise t.fail(f"non-integer relevance grade {col[i].as_py()!r}", i)
    if pc.any(pc.starts_with(col, "+")).as_py():
        col = _strip_plus(col)
    try:
        return pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        lengths = pc.utf8_length(col).to_numpy(zero_copy_only=False)
        i = int(np.argmax(lengths))
        raise t.fail(f"relevance grade {col[i].as_py()!r} out of range", i) from None


def _check_unique(p: Path, lines: _Lines, topic: _Codes, docno: _Codes, what: str,
                  rows: slice = slice(None)) -> None:
    """Raise at the first line whose (topic, docno) already appeared earlier in the file
    (the file's `rows` of the columns)."""
    key = (topic.indices[rows].astype(np.int64) * max(len(docno.dictionary), 1)
           + docno.indices[rows])
    s = np.sort(key)
    if not (s[1:] == s[:-1]).any():
        return
    order = np.argsort(key, kind="stable")
    s = key[order]
    repeat = np.flatnonzero(s[1:] == s[:-1]) + 1
    second = int(order[repeat].min())
    first = int(order[np.searchsorted(s, key[second])])
    at = rows.start or 0
    raise InputError(
        f"duplicate docno {docno.value(at + second)!r} for topic {topic.value(at + second)!r} "
        f"{what} (first at line {lines[first]})", file=p, line=lines[second])


def _objects(col: pa.Array) -> np.ndarray:
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)


def read_qrels(path: PathT) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``, any whitespace, ``.gz`` accepted).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Qrels
        One row per judgment, in file order; negative grades are kept.

    Raises
    ------
    InputError
        Missing or unreadable file, not UTF-8, no data lines, a line without exactly 4
        columns, a non-integer grade, or a (qid, docno) pair judged twice. The message
        names the file and the 1-based line.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "qrels.txt")
    >>> _ = open(p, "w").write("301 0 d1 1\\n301 0 d2 0\\n302 0 d1 -1\\n")
    >>> q = read_qrels(p)
    >>> q.topics, q.grade.tolist()
    (['301', '302'], [1, 0, -1])
    >>> _ = open(p, "w").write("301 0 d1 1\\n301 0 d1 2\\n")
    >>> read_qrels(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    irsim.errors.InputError: ...qrels.txt:2: duplicate docno 'd1' for topic '301' ...
    """
    p, tables = _tables(path, 4, _QRELS_COLUMNS)
    topics, docnos, grades, lines = [], [], [], _Lines()
    for t in tables:
        topic, _, docno, rel = t.columns
        grades.append(_parse_grades(t, rel))
        topics += _pieces(topic)
        docnos += _pieces(docno)
        lines.add(t)
    if lines.rows == 0:
        raise InputError("empty file (no data lines)", file=p)
    topic_codes, docno_codes = _Codes.encode(topics), _Codes.encode(docnos)
    del topics, docnos  # the strings: only the codes are needed now
    _check_unique(p, lines, topic_codes, docno_codes, "in the qrels")
    return Qrels(topic_codes.objects(), docno_codes.objects(), np.concatenate(grades),
                 source=str(p))


_RUN_SUFFIXES = (".txt", ".run", ".runs", ".res", ".trec", ".tsv", ".tab")

#: How runs read from files are named (:func:`name_runs`): ``file`` (the default) or ``tag``.
RUN_NAMES = ("file", "tag")
#: The default of every door's ``run_names`` (``collection.run_names``, ``run_names=``).
DEFAULT_RUN_NAMES = RUN_NAMES[0]


def file_stem(path: PathT) -> str:
    """The file name without ``.gz`` and a usual results extension (``.txt``, ``.run``,
    ``.runs``, ``.res``, ``.trec``, ``.tsv``, ``.tab``); any other extension is kept
    (``input.bm25`` stays whole: TREC's archived runs are named ``input.<tag>``).

    Examples
    --------
    >>> [file_stem(p) for p in ("runs/bm25.run.gz", "input.bm25.gz", "results.test")]
    ['bm25', 'input.bm25', 'results.test']
    """
    p = Path(path)
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    stem, suffix = Path(name).stem, Path(name).suffix
    return stem if stem and suffix.lower() in _RUN_SUFFIXES else name


def name_runs(paths: Sequence[PathT], tags: Sequence[Iterable[str]] | None = None, *,
              by: str = DEFAULT_RUN_NAMES) -> tuple[str, ...]:
    """The names of the runs read from `paths` (one run per file): irsim's one naming rule,
    applied by every door that reads run files (:func:`read_runs`, :func:`irsim.evaluate`,
    the study functions' ``runs=``, ``collection=trec``, ``irsim evaluate``, ``irsim
    compare``, the assessors study).

    Parameters
    ----------
    paths : sequence of str or path-like
        The run files, one run each.
    tags : sequence of iterables of str, optional
        The distinct tags (last column) of each file; needed when ``by="tag"``.
    by : {"file", "tag"}
        ``file`` (default): the file name without ``.gz`` and a results extension
        (:func:`file_stem`); the files of one directory never collide, and the name is the
        one ``ls`` shows. ``tag``: the file's run tag, as trec_eval reports it (a file
        holding several tags is refused); participants' tags often repeat (four TREC DL
        2019 passage runs share the tag ``mono-electra``).

    Returns
    -------
    tuple of str
        One name per file, in order.

    Raises
    ------
    InputError
        Two files get the same name (the message names both files and how to tell them
        apart), or ``by="tag"`` and a file holds more than one tag.
    ConfigError
        `by` is neither ``file`` nor ``tag``.

    Examples
    --------
    >>> name_runs(["a/bm25.run", "a/dense.txt.gz"])
    ('bm25', 'dense')
    >>> name_runs(["a/large.gz", "a/base.gz"], [{"mono-electra"}, {"mono-electra"}], by="tag")
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    irsim.errors.InputError: a/base.gz: run name 'mono-electra' (by tag) is also the name of
    a/large.gz; two runs need two names: name runs by file (run_names=file; on the command
    line collection.run_names=file)
    """
    _check_rule(by)
    paths = [Path(p) for p in paths]
    if by == "file":
        names = [file_stem(p) for p in paths]
    else:
        if tags is None:
            raise ConfigError("name_runs(by='tag') needs the tags of each file")
        names = []
        for p, file_tags in zip(paths, tags, strict=True):
            distinct = sorted(set(file_tags))
            if len(distinct) != 1:
                shown = ", ".join(repr(t) for t in distinct[:2])
                raise InputError(
                    "the run is to be named by its tag, but the file holds "
                    f"{f'more than one tag (first seen: {shown})' if distinct else 'no tag'}: "
                    "name runs by file (run_names=file; on the command line "
                    "collection.run_names=file)", file=p)
            names.append(distinct[0])
    first: dict[str, Path] = {}
    clash: list[tuple[Path, str]] = []  # (the later file, its name) of every name repeated
    for p, name in zip(paths, names, strict=True):
        if name in first:
            clash.append((p, name))
        else:
            first[name] = p
    if clash:
        p, name = clash[0]
        others = sorted({n for _, n in clash} - {name})
        more = (f" ({len(others)} more name{'s are' if len(others) > 1 else ' is'} shared: "
                f"{', '.join(repr(n) for n in others[:3])}{', ...' if len(others) > 3 else ''})"
                if others else "")
        fix = ("rename one of the files, or name runs by tag (run_names=tag; on the command "
               "line collection.run_names=tag)" if by == "file" else
               "name runs by file (run_names=file; on the command line "
               "collection.run_names=file)")
        raise InputError(f"run name {name!r} (by {by}) is also the name of {first[name]}"
                         f"{more}; two runs need two names: {fix}", file=p)
    return tuple(names)


#: How run scores rank, ties always by docno descending: ``float64`` (the default) as
#: trec_eval 10.0 reads them (``double sim`` in its trec_format.h: every digit of the file
#: ranks), or ``float32`` as trec_eval up to 9.0.8 and pytrec_eval (which embeds 9.0.8's code)
#: read them (``float sim``: scores equal in single precision tie).
SCORE_PRECISIONS = ("float64", "float32")
_F32_MAX = float(np.finfo(np.float32).max)


def trec_eval_scores(score: np.ndarray) -> np.ndarray:
    """`score` rounded to single precision as trec_eval up to 9.0.8 and pytrec_eval store it
    (as float64 values; magnitudes beyond the float32 range saturate, so they tie as those
    tools' infinities do): the ``scores="float32"`` mode. trec_eval 10.0 keeps the doubles.

    Examples
    --------
    >>> trec_eval_scores(np.array([1000000001.0, 1000000000.0, 0.5, 1e300])).tolist()
    [1000000000.0, 1000000000.0, 0.5, 3.4028234663852886e+38]
    """
    with np.errstate(over="ignore"):  # beyond the float32 range: inf, clipped below
        s32 = np.asarray(score).astype(np.float32)
    np.clip(s32, -_F32_MAX, _F32_MAX, out=s32)
    return s32.astype(np.float64)


class _RunFile:
    """One run file as read: the name given to it (None: :func:`name_runs` names it), its
    path, topic and docno columns (a chunk's Arrow array each), scores, the lines of its
    rows and its distinct tags (up to two, read when runs are named by tag)."""

    def __init__(self, name: str | None, path: Path, topic: list[pa.Array],
                 docno: list[pa.Array], score: np.ndarray, lines: _Lines, tags: set[str]):
        self.name, self.path, self.topic, self.docno = name, path, topic, docno
        self.score, self.lines, self.tags = score, lines, tags


def _read_one_run(path: PathT, name: str | None, by: str = "file") -> _RunFile:
    """Read and check one run file (the duplicate check is :func:`_assemble`'s); its tags
    are read when it is to be named by tag (`by`)."""
    p, tables = _tables(path, 6, _RUN_COLUMNS)
    topics, docnos, scores, lines = [], [], [], _Lines()
    tags: set[str] = set()
    for t in tables:
        topic, _, docno, _, score_col, tag = t.columns
        scores.append(_parse_scores(t, score_col))
        topics += _pieces(topic)
        docnos += _pieces(docno)
        lines.add(t)
        if name is None and by == "tag" and len(tags) < 2 and len(tag):
            tags.update(pc.unique(tag).to_pylist())
    if lines.rows == 0:
        raise InputError("empty file (no data lines)", file=p)
    return _RunFile(name, p, topics, docnos, np.concatenate(scores), lines, tags)


def _read_group(paths: Sequence[PathT], by: str) -> list[_RunFile]:
    """The run files of `paths`, read together (:func:`irsim.data.trec_csv.read_together`)
    when they can be, else one by one."""
    together = read_together(paths, CHUNK_BYTES, by == "tag") if len(paths) > 1 else None
    if together is None:
        return [_read_one_run(p, None, by) for p in paths]
    parts = []
    for f in together:
        lines = _Lines()  # every line a data row
        lines.first_rows, lines.lines, lines.rows = [0], [1], len(f.score)
        parts.append(_RunFile(None, f.path, f.topic, f.docno, f.score, lines, f.tags))
    return parts


def _groups(paths: list[PathT]) -> list[list[PathT]]:
    """Consecutive files of about :data:`GROUP_BYTES` of text together (a ``.gz`` file
    counted as four times its size)."""
    groups: list[list[PathT]] = [[]]
    size = 0
    for path in paths:
        try:
            n = os.stat(path).st_size * (4 if str(path).endswith(".gz") else 1)
        except OSError:
            n = 0
        if groups[-1] and size + n > GROUP_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(path)
        size += n
    return groups


def _assemble(parts: list[_RunFile], scores: str = "float64", by: str = "file") -> Runs:
    """The runs of the files, each file checked for a docno repeated within a topic (codes
    of all the files at once: each string is hashed once), named by :func:`name_runs`
    (rule `by`) unless a name was given."""
    topic = _Codes.encode([c for part in parts for c in part.topic])
    docno = _Codes.encode([c for part in parts for c in part.docno])
    for part in parts:
        part.topic = part.docno = []  # the strings: only the codes are needed now
    counts = np.array([len(part.score) for part in parts], dtype=np.int64)
    ends = np.cumsum(counts)
    for part, end, n in zip(parts, ends, counts, strict=True):
        _check_unique(part.path, part.lines, topic, docno, "in the run",
                      slice(int(end - n), int(end)))
    if all(part.name is not None for part in parts):
        names = tuple(str(part.name) for part in parts)
    else:
        names = name_runs([part.path for part in parts], [part.tags for part in parts], by=by)
    return Runs.from_codes(
        names=names,
        run=np.repeat(np.arange(len(parts), dtype=np.int32), counts),
        topic=topic.sorted(),
        docno=docno.sorted(),
        score=np.concatenate([part.score for part in parts]),
        sources=tuple(str(part.path) for part in parts),
        precision=scores,
        unique=True,  # checked above, file by file
    )


def _check_precision(scores: str) -> str:
    if scores not in SCORE_PRECISIONS:
        raise unknown_name("scores", str(scores), SCORE_PRECISIONS)
    return scores


def read_run(path: PathT, name: str | None = None, *, scores: str = "float64",
             run_names: str = DEFAULT_RUN_NAMES) -> Runs:
    """Read one TREC run file (``qid Q0 docno rank score tag``, any whitespace, ``.gz`` ok).

    Parameters
    ----------
    path : str or path-like
    name : str, optional
        The run's name; by default the name `run_names` gives it.
    run_names : {"file", "tag"}
        The naming rule (:func:`name_runs`): the file name without ``.gz`` and a results
        extension (``file``, the default: ``bm25.run.gz`` is ``bm25``, ``input.bm25`` stays
        ``input.bm25``) or the run's tag (``tag``).
    scores : {"float64", "float32"}
        ``float64`` (default): every digit of the file ranks, as in trec_eval 10.0, the
        current release (its ``double sim``); ``float32``: scores rank at single precision,
        as in trec_eval up to 9.0.8 and in pytrec_eval, which embeds 9.0.8's code (its
        ``float sim``), so scores equal in single precision tie. Ties go by docno
        descending in both. The default follows NIST's current release, which computes
        the trec_eval figures published from now on; ``float32`` reproduces figures
        computed with the older versions or with tools built on pytrec_eval. The two
        differ only where scores differ beyond single precision. The scores are kept as
        read (``Runs.score``); ``Runs.precision`` records the choice.

    Returns
    -------
    Runs
        A single run, rows in file order. The rank column is not kept: ranking is by
        score, ties by docno descending, when the run is evaluated.

    Raises
    ------
    InputError
        Missing or unreadable file, not UTF-8, no data lines, a line without exactly 6
        columns, a non-numeric or non-finite score, or a docno repeated within a topic.
        The message names the file and the 1-based line.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "bm25.run")
    >>> _ = open(p, "w").write("301 Q0 d1 1 2.5 myrun\\n301 Q0 d2 2 1.5 myrun\\n")
    >>> r = read_run(p)
    >>> r.names, r.docno.tolist(), r.score.tolist()
    (('bm25',), ['d1', 'd2'], [2.5, 1.5])
    >>> read_run(p, run_names="tag").names
    ('myrun',)
    >>> _ = open(p, "w").write("301 Q0 d1 1 2.5 myrun\\n301 Q0 d2 2 NaN myrun\\n")
    >>> read_run(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    irsim.errors.InputError: ...bm25.run:2: non-finite score 'NaN'
    """
    _check_precision(scores)
    return _assemble([_read_one_run(path, name, _check_rule(run_names))], scores, run_names)


def _check_rule(run_names: str) -> str:
    if run_names not in RUN_NAMES:
        raise unknown_name("run_names rule", str(run_names), RUN_NAMES)
    return run_names


def read_runs(paths: Iterable[PathT] | PathT, *, scores: str = "float64",
              run_names: str = DEFAULT_RUN_NAMES) -> Runs:
    """Read several TREC run files into one :class:`Runs` (one run per file).

    Parameters
    ----------
    paths : iterable of str or path-like
        The run files, in the order the runs are to appear
        (:func:`irsim.data.collection.list_files` lists those of a directory or a glob).
    scores : {"float64", "float32"}
        As :func:`read_run`: ``float64`` (default) as trec_eval 10.0, ``float32`` as
        trec_eval <= 9.0.8 and pytrec_eval.
    run_names : {"file", "tag"}
        The naming rule (:func:`name_runs`): by file name (default) or by tag.

    Returns
    -------
    Runs
        One run per file, named by `run_names`.

    Raises
    ------
    InputError
        As :func:`read_run`, or when two files get the same run name (the message names
        both files and the fix), or a file named by tag holds several tags.
    ConfigError
        If no path is given, or `run_names` is not a rule.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for f in ("a", "b"):  # two files of one tag
    ...     _ = open(os.path.join(d, f + ".txt"), "w").write("1 Q0 x 1 1.0 same\\n")
    >>> read_runs([os.path.join(d, "a.txt"), os.path.join(d, "b.txt")]).names
    ('a', 'b')
    """
    if isinstance(paths, str | PathLike):
        paths = [paths]
    _check_precision(scores)
    by = _check_rule(run_names)
    groups = _groups(list(paths))
    threads = min(READ_THREADS or os.cpu_count() or 1, len(groups))
    if threads > 1:  # Arrow parses without the GIL; results (and the first error) in order
        with ThreadPoolExecutor(threads) as pool:
            parts = [f for g in pool.map(lambda g: _read_group(g, by), groups) for f in g]
    else:
        parts = [f for g in groups for f in _read_group(g, by)]
    if not parts:
        raise ConfigError("no run files given")
    return _assemble(parts, scores, by)
