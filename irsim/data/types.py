"""Document-level data: graded qrels and TREC runs, held columnar (one row per line).

These are the contract between the readers, the synthetic generators and the metric
kernels. Strings are numpy object arrays; numbers are numpy arrays. A :class:`Runs` read
from files holds its topics and docnos as integer codes into sorted vocabularies
(:meth:`Runs.from_codes`); the object arrays ``Runs.topic`` and ``Runs.docno`` are then
built on first use, and the evaluation works on the codes alone.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Qrels", "Runs", "docno_index", "missing_file", "sorted_codes"]


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
    return sorted_codes(enc.indices.to_numpy(zero_copy_only=False), enc.dictionary)


def sorted_codes(indices: np.ndarray, dictionary: object) -> tuple[np.ndarray, np.ndarray]:
    """Codes into a dictionary of unique strings -> (codes, vocabulary) with the vocabulary
    sorted bytewise on UTF-8 (C ``strcmp`` order, which is also Python's ``str`` order) and
    the codes renumbered to match: ``vocabulary[codes] == dictionary[indices]``.

    Parameters
    ----------
    indices : ndarray of int
        Positions in `dictionary`.
    dictionary : pyarrow string array
        Unique strings (any order), e.g. a dictionary encoding's dictionary.

    Returns
    -------
    codes : ndarray of int64
    vocabulary : ndarray of str (object dtype)

    Examples
    --------
    >>> import pyarrow as pa
    >>> codes, vocab = sorted_codes(np.array([0, 1, 0]), pa.array(["b", "a"]))
    >>> codes.tolist(), vocab.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    order = pc.array_sort_indices(dictionary).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[np.asarray(indices)]
    vocab = np.asarray(dictionary.take(pa.array(order)).to_numpy(zero_copy_only=False),
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
        The precision scores are ranked at (the default, in memory and in the readers, is
        ``float64``): ``float64`` every digit, as trec_eval 10.0 reads a run file;
        ``float32`` as trec_eval <= 9.0.8 and pytrec_eval read it (scores equal in single
        precision tie).
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

    @classmethod
    def from_codes(cls, names: tuple[str, ...], run: np.ndarray,
                   topic: tuple[np.ndarray, np.ndarray], docno: tuple[np.ndarray, np.ndarray],
                   score: np.ndarray, sources: tuple[str, ...] = (),
                   precision: str = "float64", unique: bool = False) -> Runs:
        """Runs whose topics and docnos are given as codes into sorted vocabularies.

        ``Runs.topic`` and ``Runs.docno`` (object arrays) are built from the codes on first
        access only; :meth:`topic_codes` and :meth:`docno_codes` return the codes as given.

        Parameters
        ----------
        names, run, score, sources, precision
            As the class.
        topic, docno : (codes, vocabulary)
            int64 codes per row and the vocabulary (object array of unique str, sorted as
            :func:`sorted_codes` sorts): ``vocabulary[codes]`` is the column.
        unique : bool
            True when no docno repeats within a (run, topic) list (the readers check
            this): the evaluation then need not check it again.

        Examples
        --------
        >>> r = Runs.from_codes(("r",), np.zeros(3, np.int32),
        ...                     (np.array([0, 0, 1]), np.array(["1", "2"], dtype=object)),
        ...                     (np.array([1, 0, 0]), np.array(["a", "b"], dtype=object)),
        ...                     np.array([2.0, 1.0, 1.0]))
        >>> r.docno_codes()[0].tolist(), r.topic.tolist(), r.docno.tolist()
        ([1, 0, 0], ['1', '1', '2'], ['b', 'a', 'a'])
        """
        self = object.__new__(cls)
        self.__dict__.update(names=tuple(names), run=run, score=score, sources=tuple(sources),
                             precision=precision, _topic_codes=topic, _docno_codes=docno,
                             _unique=bool(unique))
        return self

    @property
    def unique_lists(self) -> bool:
        """True when no docno is known to repeat within a (run, topic) list (checked by the
        readers); False when it has not been checked."""
        return bool(self.__dict__.get("_unique", False))

    def __getattr__(self, name: str) -> np.ndarray:
        # only reached when `name` is not in the instance: a column of Runs.from_codes,
        # built from its codes on first access
        codes = self.__dict__.get(f"_{name}_codes") if name in ("topic", "docno") else None
        if codes is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = codes[1][codes[0]]
        self.__dict__[name] = value
        return value

    def _lazy(self, name: str) -> bool:
        return name not in self.__dict__

    def docno_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Docnos as int64 codes into their sorted vocabulary (see :func:`docno_index`).

        Computed on first use and cached on this object (the readers give them), so
        evaluating the same runs again skips the string work. A Runs is immutable: do not
        modify its arrays in place.

        Examples
        --------
        >>> r = Runs(("r",), np.zeros(2, np.int32), np.array(["1", "1"], dtype=object),
        ...          np.array(["d2", "d1"], dtype=object), np.array([1.0, 0.5]))
        >>> codes, vocab = r.docno_codes()
        >>> codes.tolist(), vocab.tolist()
        ([1, 0], ['d1', 'd2'])
        """
        return self._codes("docno")

    def topic_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Topic ids as int64 codes into their sorted vocabulary (as :meth:`docno_codes`).

        Examples
        --------
        >>> r = Runs(("r",), np.zeros(3, np.int32), np.array(["2", "10", "2"], dtype=object),
        ...          np.array(["a", "b", "c"], dtype=object), np.array([1.0, 0.5, 0.2]))
        >>> codes, vocab = r.topic_codes()
        >>> codes.tolist(), vocab.tolist()
        ([1, 0, 1], ['10', '2'])
        """
        return self._codes("topic")

    def _codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        key = f"_{name}_codes"
        cached = self.__dict__.get(key)
        if cached is not None and self._lazy(name):
            return cached
        column = self.__dict__[name]
        if cached is None or len(cached[0]) != len(column):
            cached = docno_index(column)
            self.__dict__[key] = cached
        return cached
