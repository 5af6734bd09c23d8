"""Measure values: names as ir_measures spells them, parameters, parsing and the registry.

A measure is an immutable :class:`Measure` (name, cut-off, parameters); its canonical
string (``AP(rel=2)``, ``nDCG(gains={1:3,2:9})@10``) is its identity, its config value
and its column name. Parameters equal to their defaults are dropped, so ``AP(rel=1)``
and ``AP`` are the same measure. Parameters are parsed with :mod:`ast` on literals
only (``ast.literal_eval``), never ``eval``.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from irsim.data.trec_eval import TREC_EVAL_NAMES
from irsim.errors import ConfigError, unknown_name

if TYPE_CHECKING:
    import numpy as np

    from irsim.metrics.block import Block

__all__ = ["Measure", "parse_measure", "available_measures", "register", "definition"]

Kernel = Callable[["Block", "Measure"], "np.ndarray"]
CutoffPolicy = Literal["required", "optional", "none"]



#: Largest cut-off a metric takes (``P@k``): lists are evaluated in blocks as wide as it.
MAX_CUTOFF = 1_000_000

@dataclass(frozen=True)
class MeasureDef:
    """A registered measure: its kernel and what it accepts."""

    name: str
    kernel: Kernel
    cutoff: CutoffPolicy
    params: Mapping[str, Any]
    description: str


_REGISTRY: dict[str, MeasureDef] = {}


def register(
    name: str, *, cutoff: CutoffPolicy, params: Mapping[str, Any], description: str
) -> Callable[[Kernel], Kernel]:
    """Register a kernel ``f(block, measure) -> (rows,)`` under ``name`` (decorator)."""

    def deco(kernel: Kernel) -> Kernel:
        unknown = set(params) - set(_NORMALISERS)
        if unknown:  # programming error in a kernel module, not user input
            raise TypeError(f"{name}: no normaliser for parameters {sorted(unknown)}")
        _REGISTRY[name] = MeasureDef(name, kernel, cutoff, dict(params), description)
        return kernel

    return deco


def _registry() -> dict[str, MeasureDef]:
    """The registered measures (the kernel modules register theirs when the package
    :mod:`irsim.metrics` is imported, which importing this module does first)."""
    return _REGISTRY


def definition(name: str) -> MeasureDef:
    """The registered definition of measure ``name`` (ConfigError if unknown)."""
    reg = _registry()
    if name not in reg:
        raise unknown_name("metric", name, reg)
    return reg[name]


# --- parameter normalisers: user value -> canonical hashable value ------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _norm_rel(v: Any) -> int:
    if not _is_int(v) or v < 0:
        raise ValueError("rel must be an integer grade >= 0")
    return int(v)


def _norm_gains(v: Any) -> tuple[tuple[int, float], ...] | None:
    if v is None:
        return None
    if isinstance(v, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in v):
        v = dict(v)
    if not isinstance(v, dict) or not v:
        raise ValueError("gains must be a non-empty dict {grade: gain}, e.g. {1: 3, 2: 9}")
    for k, g in v.items():
        if not _is_int(k) or k < 0:
            raise ValueError(f"gains keys must be integer grades >= 0, got {k!r}")
        if not _is_real(g) or g < 0:
            raise ValueError(f"gains values must be finite numbers >= 0, got {g!r}")
    return tuple(sorted((int(k), float(g)) for k, g in v.items()))


def _norm_beta(v: Any) -> float:
    if not _is_real(v) or v < 0:
        raise ValueError("beta must be a finite number >= 0")
    return float(v)


def _norm_b(v: Any) -> float:
    if not _is_real(v) or v <= 1:
        raise ValueError("b (log base) must be a finite number > 1")
    return float(v)


def _norm_p(v: Any) -> float:
    if not _is_real(v) or not 0 < v < 1:
        raise ValueError("p (persistence) must be a number in (0, 1)")
    return float(v)


_NORMALISERS: dict[str, Callable[[Any], Any]] = {
    "p": _norm_p,
    "rel": _norm_rel,
    "gains": _norm_gains,
    "beta": _norm_beta,
    "b": _norm_b,
}


def _fmt_number(x: float | int) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _fmt_value(v: Any) -> str:
    if isinstance(v, tuple):  # gains
        return "{" + ",".join(f"{k}:{_fmt_number(g)}" for k, g in v) + "}"
    if isinstance(v, int | float):
        return _fmt_number(v)
    return repr(v)


@dataclass(frozen=True)
class Measure:
    """An evaluation measure with its parameters; ``str(m)`` is its canonical name.

    Parameters
    ----------
    name : str
        A registered name (see :func:`available_measures`): ``AP``, ``P``, ``nDCG``, ``Q``...
    cutoff : int, optional
        Rank cut-off ``@k`` (required for ``P``, ``Success``, ``nCG``...; optional for
        ``AP``, ``RR``, ``nDCG``, ``Q``).
    params : tuple of (name, value) pairs or dict, optional
        ``rel`` (relevance threshold), ``gains`` (grade -> gain), ``beta``, ``b``;
        defaults are dropped, so equal measures compare equal.

    Examples
    --------
    >>> m = Measure("nDCG", 10, {"gains": {2: 9, 1: 3.0}})
    >>> str(m)
    'nDCG(gains={1:3,2:9})@10'
    >>> Measure("AP", params={"rel": 1}) == Measure("AP")
    True
    >>> m.gains
    {1: 3.0, 2: 9.0}
    """

    name: str
    cutoff: int | None = None
    params: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        d = definition(self.name)
        text = self.name
        if self.cutoff is not None:
            if not _is_int(self.cutoff) or self.cutoff < 1:
                raise ConfigError(f"metric {text}: cut-off must be a positive integer, "
                                  f"got {self.cutoff!r}")
            if self.cutoff > MAX_CUTOFF:
                raise ConfigError(f"metric {text}@{self.cutoff}: cut-off must be at most "
                                  f"{MAX_CUTOFF:,} (a ranked list is evaluated to its cut-off)")
            if d.cutoff == "none":
                raise ConfigError(f"metric {text} takes no cut-off (got @{self.cutoff})")
        elif d.cutoff == "required":
            raise ConfigError(f"metric {text} needs a cut-off, e.g. {text}@10")
        raw = dict(self.params)
        canon: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in d.params:
                valid = ", ".join(sorted(d.params)) or "none"
                raise ConfigError(f"metric {text}: unknown parameter {key!r} (valid: {valid})")
            try:
                value = _NORMALISERS[key](value)
            except ValueError as e:
                raise ConfigError(f"metric {text}: {e}") from None
            if value != _NORMALISERS[key](d.params[key]):
                canon[key] = value
        object.__setattr__(self, "params", tuple(sorted(canon.items())))

    def __str__(self) -> str:
        s = self.name
        if self.params:
            s += "(" + ",".join(f"{k}={_fmt_value(v)}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            s += f"@{self.cutoff}"
        return s

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"

    def param(self, key: str) -> Any:
        """The value of parameter ``key`` (its default if not given)."""
        d = definition(self.name)
        if key not in d.params:
            raise KeyError(key)
        return dict(self.params).get(key, _NORMALISERS[key](d.params[key]))

    @property
    def rel(self) -> int:
        """Relevance threshold: a document is relevant if its grade >= rel."""
        return self.param("rel")

    @property
    def gains(self) -> dict[int, float] | None:
        """Custom grade -> gain mapping, or None for gain = grade."""
        g = self.param("gains")
        return None if g is None else dict(g)

    @property
    def beta(self) -> float:
        """Blended-ratio weight of Q, R-measure and O."""
        return self.param("beta")

    @property
    def b(self) -> float:
        """Log base of the original (Jarvelin-Kekalainen) DCG discount."""
        return self.param("b")

    @property
    def definition(self) -> MeasureDef:
        """The registered definition (kernel, accepted parameters)."""
        return definition(self.name)


_SYNTAX = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*)\s*"
    r"(?:\((?P<params>.*)\))?\s*"
    r"(?:@\s*(?P<cutoff>[^\s@()]*))?\s*"
    r"(?:\((?P<params_after>.*)\))?\s*$",  # also accept NAME@k(params)
    re.S,
)


def _parse_params(text: str, params: str) -> dict[str, Any]:
    if not params.strip():
        return {}
    try:
        call = ast.parse(f"_({params})", mode="eval").body
    except SyntaxError:
        raise ConfigError(f"metric {text!r}: cannot parse parameters ({params})") from None
    if not isinstance(call, ast.Call) or call.args:
        raise ConfigError(f"metric {text!r}: parameters must be given as name=value")
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise ConfigError(f"metric {text!r}: parameters must be given as name=value")
        if kw.arg in out:
            raise ConfigError(f"metric {text!r}: parameter {kw.arg!r} given twice")
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError):
            raise ConfigError(
                f"metric {text!r}: parameter {kw.arg!r} must be a literal"
            ) from None
    return out


#: Names a user may type for a metric, lowercased -> irsim's: trec_eval's (one table,
#: irsim.data.trec_eval.TREC_EVAL_NAMES, which also reads trec_eval's outputs) and others.
_TREC_EVAL_NAMES = {**{k.lower(): v for k, v in TREC_EVAL_NAMES.items()},
                    "mrr": "RR", "ap": "AP", "q": "Q", "o": "O"}


def _hint(text: str) -> str | None:
    """The irsim spelling of a trec_eval name (``map``, ``P_10``, ``ndcg_cut_10``) or of a
    name in the wrong case, if there is one."""
    m = re.fullmatch(r"([A-Za-z_]+?)(?:_([0-9]+))?", text)
    if m is None:
        return None
    base, k = m.group(1), m.group(2)
    lower = {n.lower(): n for n in _registry()}
    name = _TREC_EVAL_NAMES.get(base.lower()) or lower.get(base.lower())
    if name is None:
        return None
    return f"{name}@{k}" if k else name


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure name as ir_measures writes it.

    Parameters
    ----------
    text : str or Measure
        ``NAME[(param=value, ...)][@cutoff]``, e.g. ``AP``, ``P@10``, ``AP(rel=2)``,
        ``nDCG(gains={0:0,1:3,2:9})@10``, ``Q@100``, ``nDCG_orig@10``. A Measure is
        returned as is.

    Returns
    -------
    Measure

    Raises
    ------
    ConfigError
        Unknown name (with close suggestions), bad syntax, unknown or invalid parameter,
        missing, forbidden or non-integer cut-off.

    Examples
    --------
    >>> parse_measure("nDCG( gains = {2: 9, 1: 3} ) @ 10")
    Measure('nDCG(gains={1:3,2:9})@10')
    >>> str(parse_measure("AP(rel=2)")), str(parse_measure("AP(rel=1)"))
    ('AP(rel=2)', 'AP')
    >>> parse_measure("nDGC@10")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    irsim.errors.ConfigError: config: unknown metric 'nDGC' (did you mean 'nDCG', ...
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise ConfigError(f"metric must be a string, got {type(text).__name__}")
    m = _SYNTAX.match(text)
    if m is None:
        raise ConfigError(f"cannot parse metric {text!r} (expected NAME(param=value)@k)")
    name = m.group("name")
    if name not in _registry():
        hint = _hint(text.strip())
        fixed = {n.lower(): n for n in _registry()}.get(name.lower())
        if hint is None and fixed is not None:
            hint = text.strip().replace(name, fixed, 1)
        if hint:
            raise ConfigError(f"unknown metric {text!r} (did you mean {hint!r}?)")
        definition(name)  # raises, with close suggestions
    cutoff_text = m.group("cutoff")
    cutoff = None
    if cutoff_text is not None:
        if not re.fullmatch(r"[0-9]+", cutoff_text) or int(cutoff_text) < 1:
            raise ConfigError(
                f"metric {text!r}: cut-off must be a positive integer, got {cutoff_text!r}"
            )
        cutoff = int(cutoff_text)
    if m.group("params") is not None and m.group("params_after") is not None:
        raise ConfigError(f"cannot parse metric {text!r} (parameters given twice)")
    params = _parse_params(text, m.group("params") or m.group("params_after") or "")
    return Measure(name, cutoff, tuple(params.items()))


def available_measures() -> dict[str, str]:
    """Registered measures: name -> one-line description (forms and parameters).

    Examples
    --------
    >>> ms = available_measures()
    >>> "AP" in ms and "nDCG_orig" in ms
    True
    >>> ms["P"]
    'precision at k (trec_eval P_k); form P@k; params: rel=1'
    """
    out = {}
    for name, d in sorted(_registry().items(), key=lambda kv: kv[0].lower()):
        forms = {"required": f"{name}@k", "optional": f"{name}, {name}@k", "none": name}
        params = ", ".join(f"{k}={_fmt_value(v) if v is not None else 'None'}"
                           for k, v in d.params.items()) or "none"
        out[name] = f"{d.description}; form{'s' if d.cutoff == 'optional' else ''} " \
                    f"{forms[d.cutoff]}; params: {params}"
    return out
