"""Readers for TREC qrels and run files, vectorised with pyarrow.

A file is read whole (``.gz`` is decompressed), checked for UTF-8, split into lines and
then into whitespace-separated tokens by pyarrow compute kernels; every check (column
count, numbers, duplicates) is a mask over all lines at once, and the first offending
line is found with ``argmax``. Blank lines are skipped but counted, so the reported line
numbers are those of the file.

Formats
-------
qrels : ``qid iter docno rel``
    ``rel`` is an integer grade; negative grades are kept (they are judged non-relevant,
    as in trec_eval). A (qid, docno) pair may appear once.
run : ``qid Q0 docno rank score tag``
    Ranking is by ``score`` (the rank column is ignored, as in trec_eval); a docno may
    appear once per topic. The run is named by its ``tag`` when one tag is used in the
    whole file, else by the file name without ``.gz`` and a results extension.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from irsim.data.types import Qrels, Runs, _prime_docno_codes, missing_file
from irsim.errors import ConfigError, InputError, unknown_name

__all__ = ["read_qrels", "read_run", "read_runs", "trec_eval_scores", "SCORE_PRECISIONS"]

PathT = str | PathLike

_INT_RE = r"^[+-]?[0-9]+$"
_FLOAT_RE = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_NONFINITE_RE = r"^[+-]?(?i:nan|inf|infinity)$"

_RUN_COLUMNS = "qid Q0 docno rank score tag"
_QRELS_COLUMNS = "qid iter docno rel"


class _Table:
    """The data lines of one file: token columns plus their 1-based line numbers."""

    def __init__(self, path: Path, columns: list[pa.Array], line: np.ndarray):
        self.path = path
        self.columns = columns
        self.line = line

    def fail(self, problem: str, row: int | None = None) -> InputError:
        line = None if row is None else int(self.line[row])
        return InputError(problem, file=self.path, line=line)


def _read_bytes(path: PathT) -> tuple[Path, bytes]:
    p = Path(path)
    if not p.exists():
        raise InputError(missing_file(p), file=p)
    if not p.is_file():
        raise InputError("not a regular file", file=p)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror})", file=p) from None
    if p.suffix == ".gz" or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"corrupt gzip data ({e})", file=p) from None
    if data[:3] == b"\xef\xbb\xbf":  # UTF-8 byte order mark
        data = data[3:]
    return p, data


def _refuse_nul(path: Path, data: bytes) -> None:
    """A NUL byte (never part of a docno, topic or tag: trec_eval would cut the string
    there) is refused with its line."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        column = nul - data.rfind(b"\n", 0, nul)
        raise InputError(f"NUL byte (0x00) at column {column}: not a text line", file=path,
                         line=line)


def _lines(path: Path, data: bytes) -> pa.Array:
    """The file's lines as a string array (line i+1 at index i), trimmed of whitespace."""
    _refuse_nul(path, data)
    blob = pa.array([data], type=pa.large_binary())
    try:
        text = blob.cast(pa.large_string())
    except pa.ArrowInvalid:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise InputError(
                f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
                file=path, line=line,
            ) from None
        raise  # arrow and Python disagree on validity: let it surface
    return pc.ascii_trim_whitespace(pc.split_pattern(text, "\n").flatten())


def _fast_table(p: Path, data: bytes, ncols: int) -> _Table | None:
    """The common layout read by Arrow's CSV parser: every line holds exactly `ncols`
    tokens separated by single spaces, no blank line, valid UTF-8. None for anything else
    (tabs, repeated or trailing blanks, blank lines, a malformed line): the general reader
    then reads the file and names the line of any problem."""
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
                column_types={n: pa.large_string() for n in names}, strings_can_be_null=False,
                quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    rows = t.num_rows
    if rows == 0:
        return None
    columns = [t.column(j).combine_chunks() for j in range(ncols)]
    # every token non-empty (an empty one: a doubled or trailing blank) and no CR left over
    for col in columns:
        if pc.any(pc.equal(pc.binary_length(col), 0)).as_py():
            return None
    if pc.any(pc.ends_with(columns[-1], "\r")).as_py():
        return None
    return _Table(p, columns, np.arange(1, rows + 1))


def _read_table(path: PathT, ncols: int, spec: str) -> _Table:
    """Read ``path`` into ``ncols`` string columns, checking the column count of every line."""
    p, data = _read_bytes(path)
    _refuse_nul(p, data)
    fast = _fast_table(p, data, ncols)
    if fast is not None:
        return fast
    lines = _lines(p, data)
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
            file=p, line=i + 1,
        )
    rows = np.flatnonzero(nonblank)
    if rows.size == 0:
        raise InputError("empty file (no data lines)", file=p)
    kept = tokens.filter(pa.array(nonblank)) if rows.size < len(lines) else tokens
    columns = [pc.list_element(kept, j) for j in range(ncols)]
    return _Table(p, columns, rows + 1)


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


def _check_unique(t: _Table, topic: pa.Array, docno: pa.Array, what: str) -> None:
    """Raise at the first line whose (topic, docno) already appeared earlier in the file."""
    key = pc.binary_join_element_wise(topic, docno, pa.scalar("\t", pa.large_string()))
    encoded = pc.dictionary_encode(key)
    if len(encoded.dictionary) == len(key):
        return
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    s = codes[order]
    repeat = np.flatnonzero(s[1:] == s[:-1]) + 1
    second = int(order[repeat].min())
    first = int(order[np.searchsorted(s, codes[second])])
    raise t.fail(
        f"duplicate docno {docno[second].as_py()!r} for topic {topic[second].as_py()!r} "
        f"{what} (first at line {t.line[first]})",
        second,
    )


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
    t = _read_table(path, 4, _QRELS_COLUMNS)
    topic, _, docno, rel = t.columns
    grade = _parse_grades(t, rel)
    _check_unique(t, topic, docno, "in the qrels")
    return Qrels(_objects(topic), _objects(docno), grade, source=str(t.path))


_RUN_SUFFIXES = (".txt", ".run", ".runs", ".res", ".trec", ".tsv", ".tab")


def _run_stem(p: Path) -> str:
    """File name without ``.gz`` and a usual results extension (``input.bm25`` is kept
    whole: TREC submissions are often named ``input.<tag>``)."""
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    stem, suffix = Path(name).stem, Path(name).suffix
    return stem if stem and suffix.lower() in _RUN_SUFFIXES else name


#: How run scores are kept: ``float32`` as trec_eval reads them (``float sim`` in its
#: trec_format.h: scores equal in single precision tie, and ties go by docno descending), or
#: ``float64`` (every digit of the file ranks).
SCORE_PRECISIONS = ("float32", "float64")
_F32_MAX = float(np.finfo(np.float32).max)


def trec_eval_scores(score: np.ndarray) -> np.ndarray:
    """`score` rounded to single precision as trec_eval stores it (as float64 values;
    magnitudes beyond the float32 range saturate, so they tie as trec_eval's infinities do).

    Examples
    --------
    >>> trec_eval_scores(np.array([1000000001.0, 1000000000.0, 0.5, 1e300])).tolist()
    [1000000000.0, 1000000000.0, 0.5, 3.4028234663852886e+38]
    """
    return np.clip(score, -_F32_MAX, _F32_MAX).astype(np.float32).astype(np.float64)


def _read_one_run(path: PathT, name: str | None) -> tuple[str, Path, list[pa.Array], np.ndarray]:
    t = _read_table(path, 6, _RUN_COLUMNS)
    topic, _, docno, _, score_col, tag = t.columns
    score = _parse_scores(t, score_col)
    _check_unique(t, topic, docno, "in the run")
    if name is None:
        tags = pc.unique(tag)
        name = tags[0].as_py() if len(tags) == 1 else _run_stem(t.path)
    return name, t.path, [topic, docno], score


def _assemble(parts: list[tuple[str, Path, list[pa.Array], np.ndarray]],
              scores: str = "float32") -> Runs:
    seen: dict[str, Path] = {}
    for name, p, _, _ in parts:
        if name in seen:
            raise InputError(
                f"run name {name!r} is also used by {seen[name]} (run names must be unique)",
                file=p,
            )
        seen[name] = p
    counts = np.array([len(s) for *_, s in parts], dtype=np.int64)
    run = np.repeat(np.arange(len(parts), dtype=np.int32), counts)
    topic = _objects(pa.concat_arrays([c[0] for _, _, c, _ in parts]))
    docno_arrow = pa.concat_arrays([c[1] for _, _, c, _ in parts])
    score = np.concatenate([s for *_, s in parts])
    runs = Runs(
        names=tuple(n for n, *_ in parts),
        run=run,
        topic=topic,
        docno=_objects(docno_arrow),
        score=score,
        sources=tuple(str(p) for _, p, _, _ in parts),
        precision=scores,
    )
    _prime_docno_codes(runs, docno_arrow)
    return runs


def _check_precision(scores: str) -> str:
    if scores not in SCORE_PRECISIONS:
        raise unknown_name("scores", str(scores), SCORE_PRECISIONS)
    return scores


def read_run(path: PathT, name: str | None = None, *, scores: str = "float32") -> Runs:
    """Read one TREC run file (``qid Q0 docno rank score tag``, any whitespace, ``.gz`` ok).

    Parameters
    ----------
    path : str or path-like
    name : str, optional
        The run's name; by default its tag if the file uses a single tag, else the file
        name without ``.gz`` and a results extension (``.txt``, ``.run``, ``.res``,
        ``.trec``, ``.tsv``; ``input.bm25`` stays ``input.bm25``).
    scores : {"float32", "float64"}
        ``float32`` (default): scores rank at single precision, as trec_eval reads them,
        so scores equal in single precision tie (and ties go by docno descending) exactly
        as in trec_eval and pytrec_eval; ``float64``: every digit of the file ranks. The
        scores are kept as read (``Runs.score``); ``Runs.precision`` records the choice.

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
    (('myrun',), ['d1', 'd2'], [2.5, 1.5])
    >>> _ = open(p, "w").write("301 Q0 d1 1 2.5 myrun\\n301 Q0 d2 2 NaN myrun\\n")
    >>> read_run(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    irsim.errors.InputError: ...bm25.run:2: non-finite score 'NaN'
    """
    return _assemble([_read_one_run(path, name)], _check_precision(scores))


def read_runs(paths: Iterable[PathT] | PathT, *, scores: str = "float32") -> Runs:
    """Read several TREC run files into one :class:`Runs` (one run per file).

    Parameters
    ----------
    paths : iterable of str or path-like
        The run files, in the order the runs are to appear.
    scores : {"float32", "float64"}
        As :func:`read_run` (default ``float32``, trec_eval's precision).

    Returns
    -------
    Runs
        Runs named by their tag (when unique within the file) or file stem.

    Raises
    ------
    InputError
        As :func:`read_run`, or when two files give the same run name.
    ConfigError
        If no path is given.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for tag in ("a", "b"):
    ...     _ = open(os.path.join(d, tag + ".txt"), "w").write(f"1 Q0 x 1 1.0 {tag}\\n")
    >>> read_runs([os.path.join(d, "a.txt"), os.path.join(d, "b.txt")]).names
    ('a', 'b')
    """
    if isinstance(paths, str | PathLike):
        paths = [paths]
    _check_precision(scores)
    parts = [_read_one_run(p, None) for p in paths]
    if not parts:
        raise ConfigError("no run files given")
    return _assemble(parts, scores)
