"""Document-level data: graded qrels and TREC runs, held columnar (one row per line).

These are the contract between the readers, the synthetic generators and the metric
kernels. Strings are numpy object arrays; numbers are numpy arrays.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Qrels", "Runs", "docno_index", "missing_file"]


def missing_file(path: str | os.PathLike) -> str:
    """Why `path`, which does not resolve to an existing file, cannot be opened: "file not
    found", "symlink loop", "broken symlink (-> target)", "permission denied", ...

    ``Path.exists()`` is False for all of these; the readers report the real cause.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "a").symlink_to(d / "b"); (d / "b").symlink_to(d / "a")
    >>> missing_file(d / "a"), missing_file(d / "none")
    ('symlink loop', 'file not found')
    """
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symlink loop"
        if err.errno == errno.EACCES:
            return "permission denied"
        if err.errno == errno.ENAMETOOLONG:
            return "file name too long"
        if err.errno == errno.ENOENT and os.path.islink(path):
            return f"broken symlink (-> {os.readlink(path)})"
        return "file not found"
    return "file not found"


def docno_index(docno: np.ndarray | object) -> tuple[np.ndarray, np.ndarray]:
    """Factorise docnos: (codes, vocabulary), codes ordered like the strings.

    Parameters
    ----------
    docno : ndarray of str (object dtype) or pyarrow string array

    Returns
    -------
    codes : ndarray of int64
        ``vocabulary[codes[i]] == docno[i]``.
    vocabulary : ndarray of str (object dtype)
        Unique docnos sorted bytewise on their UTF-8 encoding (the order of C ``strcmp``,
        which trec_eval uses to break score ties).

    Examples
    --------
    >>> codes, vocab = docno_index(np.array(["b", "a", "b", "c"], dtype=object))
    >>> codes.tolist(), vocab.tolist()
    ([1, 0, 1, 2], ['a', 'b', 'c'])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(docno, pa.ChunkedArray):
        docno = pa.concat_arrays(docno.chunks) if docno.num_chunks else pa.array(
            [], pa.large_string())
    if not isinstance(docno, pa.Array):
        docno = pa.array(np.asarray(docno, dtype=object), type=pa.large_string())
    enc = pc.dictionary_encode(docno)
    order = pc.array_sort_indices(enc.dictionary).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[enc.indices.to_numpy(zero_copy_only=False)]
    vocab = np.asarray(enc.dictionary.take(pa.array(order)).to_numpy(zero_copy_only=False),
                       dtype=object)
    return codes, vocab


@dataclass(frozen=True)
class Qrels:
    """Graded relevance judgments, one row per (topic, docno).

    Parameters
    ----------
    topic, docno : ndarray of str (object dtype)
    grade : ndarray of int64
        Relevance grade; grades <= 0 are non-relevant (negative grades are judged
        non-relevant, as trec_eval treats them).
    source : str, optional
        The file they came from.
    """

    topic: np.ndarray
    docno: np.ndarray
    grade: np.ndarray
    source: str | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.grade)

    @property
    def topics(self) -> list[str]:
        """Sorted unique topic ids."""
        return sorted(set(self.topic.tolist()))


@dataclass(frozen=True)
class Runs:
    """One or more ranked runs, one row per retrieved document.

    Parameters
    ----------
    names : tuple of str
        Run names (the TREC `tag`, or the file name), in order.
    run : ndarray of int32
        Index into `names` for each row.
    topic, docno : ndarray of str (object dtype)
    score : ndarray of float64
        Retrieval score; ranking is by score descending, ties by docno descending
        (trec_eval); any rank column in the file is ignored.
    sources : tuple of str
        The file each run came from (same order as `names`).
    precision : {"float64", "float32"}
        The precision scores are ranked at: ``float32`` as trec_eval reads a run file
        (scores equal in single precision tie; the readers' default), ``float64`` every
        digit (the default for runs built in memory).
    """

    names: tuple[str, ...]
    run: np.ndarray
    topic: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    sources: tuple[str, ...] = field(default=(), compare=False)
    precision: str = field(default="float64", compare=False)

    def __len__(self) -> int:
        return len(self.score)

    def docno_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Docnos as int64 codes into their sorted vocabulary (see :func:`docno_index`).

        Computed on first use and cached on this object (the readers fill the cache from
        their Arrow arrays), so evaluating the same runs again skips the string work. A
        Runs is immutable: do not modify its arrays in place.

        Examples
        --------
        >>> r = Runs(("r",), np.zeros(2, np.int32), np.array(["1", "1"], dtype=object),
        ...          np.array(["d2", "d1"], dtype=object), np.array([1.0, 0.5]))
        >>> codes, vocab = r.docno_codes()
        >>> codes.tolist(), vocab.tolist()
        ([1, 0], ['d1', 'd2'])
        """
        cached = self.__dict__.get("_docno_codes")
        if cached is None or len(cached[0]) != len(self.docno):
            cached = docno_index(self.docno)
            self.__dict__["_docno_codes"] = cached
        return cached


def _prime_docno_codes(runs: Runs, docno: object) -> None:
    """Fill the :meth:`Runs.docno_codes` cache from an Arrow array of the same docnos
    (readers have one, which avoids converting Python strings back to Arrow)."""
    runs.__dict__["_docno_codes"] = docno_index(docno)
