"""Typed errors for bad input.

Every problem with user input (a file, a config value, a name) is raised as an
:class:`InputError` whose message is one line naming the file, the line and the
problem. The CLI turns it into that one line on stderr and exit code 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from os import PathLike

__all__ = ["IrsimError", "InputError", "ConfigError", "unknown_name", "param",
           "python_parameters", "python_door"]

#: How parameters are named in messages: "cli" (``experiment.B``) or "python" (``B``).
_STYLE: ContextVar[str] = ContextVar("irsim_parameter_style", default="cli")


def param(key: str, group: str = "experiment") -> str:
    """A parameter's name as the caller wrote it: ``experiment.B`` on the command line,
    ``B`` (the keyword) when a study was called from Python.

    Examples
    --------
    >>> param("B")
    'experiment.B'
    >>> with python_parameters():
    ...     param("B"), param("shard_items", "engine")
    ('B', 'shard_items')
    """
    return key if _STYLE.get() == "python" else f"{group}.{key}"


def python_door() -> bool:
    """Whether the caller came in by the Python door (a study function, inside
    :func:`python_parameters`) rather than the command line: a message may then only name
    what a study function accepts (it takes ``workers`` but no other engine option).

    Examples
    --------
    >>> python_door()
    False
    >>> with python_parameters():
    ...     python_door()
    True
    """
    return _STYLE.get() == "python"


@contextmanager
def python_parameters() -> Iterator[None]:
    """Within this block, :func:`param` names parameters as Python keywords."""
    token = _STYLE.set("python")
    try:
        yield
    finally:
        _STYLE.reset(token)


class IrsimError(Exception):
    """Base class of every error irsim raises on purpose."""


class InputError(IrsimError, ValueError):
    """Bad input data: the message names the file, the line (1-based) and the problem.

    Parameters
    ----------
    problem : str
        What is wrong, in a few words.
    file : str or path-like, optional
        The file that holds the problem.
    line : int, optional
        1-based line number in `file`.

    Examples
    --------
    >>> print(InputError("non-numeric score 'abc'", file="run.txt", line=3))
    run.txt:3: non-numeric score 'abc'
    """

    def __init__(
        self, problem: str, *, file: str | PathLike | None = None, line: int | None = None
    ):
        self.problem = problem
        self.file = None if file is None else str(file)
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        if self.file is None:
            return self.problem
        if self.line is None:
            return f"{self.file}: {self.problem}"
        return f"{self.file}:{self.line}: {self.problem}"


class ConfigError(IrsimError, ValueError):
    """A configuration value is invalid (unknown name, B < 1, alpha outside (0, 1), ...).

    Examples
    --------
    >>> str(ConfigError("experiment.B must be >= 1, got 0"))
    'config: experiment.B must be >= 1, got 0'
    """

    def __init__(self, problem: str):
        self.problem = problem
        # from Python the problem speaks for itself (it names the keyword)
        super().__init__(problem if _STYLE.get() == "python" else f"config: {problem}")


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> ConfigError:
    """Build the error for an unknown name, suggesting the closest valid ones.

    Examples
    --------
    >>> str(unknown_name("metric", "nDGC@10", ["nDCG@10", "AP", "P@10"]))
    "config: unknown metric 'nDGC@10' (did you mean 'nDCG@10', 'P@10'?); valid: AP, P@10, nDCG@10"
    """
    valid = sorted(set(valid))
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    listing = ", ".join(valid) if len(valid) <= 30 else ", ".join(valid[:30]) + ", ..."
    return ConfigError(f"unknown {kind} {name!r}{hint}; valid: {listing}")
