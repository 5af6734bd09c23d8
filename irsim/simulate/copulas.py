"""Pair copulas of runs (pyvinecopulib), selected by AIC as Urbano & Nagler (SIGIR 2018) do.

For a pair of runs ``(i, j)`` the scores are turned into pseudo-observations
``rank / (n + 1)`` with ties broken at random (a seeded permutation: discrete metrics such as
P@10 and RR have many ties), and :class:`pyvinecopulib.Bicop` selects by AIC among the
parametric families :data:`FAMILIES` with all their rotations (no independence copula, no
nonparametric TLL). A fitted copula is stored as its JSON (``Bicop.to_json``), so models pickle
(Ray) and cache to disk as plain text.

Sampling is by the inverse h-function: ``u1`` and ``w`` uniform, ``u2 = h^{-1}_1(w | u1)``,
so every draw is a function of numpy uniforms keyed by the caller (deterministic on any
executor).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((2, 300))
>>> x, y = z[0], 0.8 * z[0] + 0.6 * z[1]
>>> cop = fit_pair(x, y, seed=0)
>>> round(float(cop.tau), 1)   # Gaussian dependence: tau = 2 asin(0.8) / pi = 0.59
0.6
"""

from __future__ import annotations

import json

import numpy as np
import pyvinecopulib as pv
from numpy.typing import ArrayLike

from irsim.errors import InputError

__all__ = ["CODE_FIELDS", "FAMILIES", "WIDTH", "controls", "decode", "encode", "family_name",
           "fit_pair", "label", "load", "pseudo_obs", "sample_pair"]

#: Families selected among (with rotations), by their pyvinecopulib names.
FAMILIES = ("gaussian", "student", "clayton", "gumbel", "frank", "joe", "bb1", "bb6", "bb7",
            "bb8", "tawn")

#: Families a copula code can hold (its ``family`` is the index here): the parametric ones.
CODE_FAMILIES = ("indep",) + FAMILIES
#: The fixed-width numeric code of a fitted copula (:func:`encode`): what the engine's shards
#: return (a float64 row per pair) and what :func:`decode` turns back into the copula's JSON.
CODE_FIELDS = ("family", "rotation", "nobs", "npars", "loglik", "par0", "par1", "par2")
#: Length of a code.
WIDTH = len(CODE_FIELDS)
_PARS = WIDTH - 5


def controls(families: tuple[str, ...] = FAMILIES, threads: int = 1) -> pv.FitControlsBicop:
    """pyvinecopulib fit controls: MLE, selection by AIC over `families` and rotations, the
    families of one selection fitted on `threads` threads (the selection does not depend on
    it)."""
    try:
        fams = [getattr(pv.BicopFamily, f) for f in families]
    except AttributeError as err:
        raise InputError(f"unknown copula family in {families}") from err
    return pv.FitControlsBicop(family_set=fams, parametric_method="mle",
                               selection_criterion="aic", allow_rotations=True,
                               num_threads=int(threads))


def pseudo_obs(x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
    """``rank / (n + 1)`` of each column of `x` (shape (n, d)), ties broken at random:
    ranks of ``(x, random permutation)`` in lexicographic order.

    Examples
    --------
    >>> pseudo_obs(np.array([[0.1], [0.5], [0.3]]), np.random.default_rng(0)).ravel().tolist()
    [0.25, 0.75, 0.5]
    >>> u = pseudo_obs(np.zeros((3, 1)), np.random.default_rng(0))
    >>> sorted(u.ravel().tolist())   # all tied: a random order of 1/4, 2/4, 3/4
    [0.25, 0.5, 0.75]
    """
    x = np.atleast_2d(np.asarray(x, np.float64))
    n, d = x.shape
    u = np.empty((n, d))
    for c in range(d):  # d = 2 columns
        order = np.lexsort((rng.permutation(n), x[:, c]))
        r = np.empty(n)
        r[order] = np.arange(1, n + 1)
        u[:, c] = r / (n + 1)
    return u


def fit_pair(x: ArrayLike, y: ArrayLike, *, seed: int | tuple[int, ...] = 0,
             families: tuple[str, ...] = FAMILIES) -> pv.Bicop:
    """The copula of ``(x, y)`` selected by AIC (ties broken with a generator seeded by
    `seed`)."""
    rng = np.random.default_rng(seed)
    u = pseudo_obs(np.column_stack([np.asarray(x, np.float64), np.asarray(y, np.float64)]),
                   rng)
    return pv.Bicop.from_data(u, controls=controls(families))


def family_name(cop: pv.Bicop) -> str:
    """The family's display name (``Gaussian``, ``Clayton``, ``BB8``...)."""
    return json.loads(cop.to_json())["fam"]


def _display(code_family: int) -> str:
    name = CODE_FAMILIES[code_family]
    return json.loads(pv.Bicop(family=getattr(pv.BicopFamily, name)).to_json())["fam"]


#: pyvinecopulib's display name (the JSON's ``fam``) of each of :data:`CODE_FAMILIES`.
DISPLAY = tuple(_display(i) for i in range(len(CODE_FAMILIES)))


def encode(cop: pv.Bicop) -> np.ndarray:
    """The copula as a float64 row of :data:`CODE_FIELDS`: family index in
    :data:`CODE_FAMILIES`, rotation, observations and parameters of the fit, log-likelihood,
    parameters (unused ones NaN). Exactly what its JSON holds; :func:`decode` inverts it.

    Examples
    --------
    >>> cop = pv.Bicop(family=pv.BicopFamily.gumbel, rotation=90, parameters=np.array([[1.5]]))
    >>> encode(cop).tolist()[:2], encode(cop).tolist()[5:]
    ([4.0, 90.0], [1.5, nan, nan])
    >>> load(decode(encode(cop))).parameters.tolist(), load(decode(encode(cop))).rotation
    ([[1.5]], 90)
    """
    spec = json.loads(cop.to_json())
    try:
        family = DISPLAY.index(spec["fam"])
    except ValueError:
        raise InputError(f"copula family {spec['fam']!r} has no code (parametric families "
                         f"only: {', '.join(DISPLAY)})") from None
    par = np.asarray(spec["par"]["data"], np.float64).ravel()
    if par.size > _PARS or spec["par"]["shape"][1:] not in ([], [1]):
        raise InputError(f"copula {spec['fam']}: {par.size} parameters, a code holds "
                         f"{_PARS}")
    ll = spec.get("ll")
    out = np.full(WIDTH, np.nan)
    out[:5] = (family, spec["rot"], spec["nobs"], spec["npars"],
               np.nan if ll is None else ll)
    out[5:5 + par.size] = par
    return out


def decode(code: ArrayLike) -> str:
    """The JSON of the copula of `code` (:func:`encode`), in pyvinecopulib's layout (keys
    sorted, no spaces): a pure function of the code, so the same code gives the same string
    on any engine.

    Examples
    --------
    >>> decode([3, 180, 50, 1, 3.5, 0.6, np.nan, np.nan])
    '{"fam":"Clayton","ll":3.5,"nobs":50,"npars":1.0,"par":{"data":[0.6],"shape":[1,1]},"rot":180,"vt":["c","c"]}'
    """
    c = np.asarray(code, np.float64)
    par = c[5:][~np.isnan(c[5:])]
    spec = {"fam": DISPLAY[int(c[0])], "ll": None if np.isnan(c[4]) else float(c[4]),
            "nobs": int(c[2]), "npars": float(c[3]),
            "par": {"data": par.tolist(), "shape": [int(par.size), 1]}, "rot": int(c[1]),
            "vt": ["c", "c"]}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def label(code: ArrayLike) -> str:
    """``<family>`` or ``<family> <rotation>`` of a code (the families table's names).

    Examples
    --------
    >>> nan = float("nan")
    >>> label([3, 180, 50, 1, 3.5, 0.6, nan, nan]), label([1, 0, 50, 1, 0, 0.2, nan, nan])
    ('Clayton 180', 'Gaussian')
    """
    c = np.asarray(code, np.float64)
    fam, rot = DISPLAY[int(c[0])], int(c[1])
    return fam if rot == 0 else f"{fam} {rot}"


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def _spec_problem(spec: object) -> str | None:
    """What makes `spec` (a parsed copula JSON) other than pyvinecopulib's layout, or None."""
    if not isinstance(spec, dict):
        return "not a JSON object"
    missing = [k for k in ("fam", "ll", "nobs", "npars", "par", "rot", "vt") if k not in spec]
    if missing:
        return f"no {', '.join(missing)}"
    par = spec["par"]
    shape = par.get("shape") if isinstance(par, dict) else None
    if spec["fam"] not in DISPLAY:
        return f"family {spec['fam']!r}"
    if spec["rot"] not in (0, 90, 180, 270) or isinstance(spec["rot"], bool):
        return f"rotation {spec['rot']!r}"
    if not (isinstance(shape, list) and len(shape) == 2 and all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= _PARS for n in shape)):
        return "parameters without a shape of two small counts"
    data = par.get("data")
    size = shape[0] * shape[1]
    if not (data is None and size == 0 or isinstance(data, list) and len(data) == size
            and all(_number(v) for v in data)):
        return f"parameters other than {size} finite numbers"
    if not (_number(spec["nobs"]) and _number(spec["npars"])
            and (spec["ll"] is None or _number(spec["ll"]))):
        return "nobs, npars or ll not a number"
    if not (isinstance(spec["vt"], list) and len(spec["vt"]) == 2
            and all(v in ("c", "d") for v in spec["vt"])):
        return f"variable types {spec['vt']!r}"
    return None


def load(spec: str) -> pv.Bicop:
    """A copula from its JSON (:meth:`pyvinecopulib.Bicop.to_json`'s layout). The layout is
    checked here first (a :class:`ValueError` naming what differs): pyvinecopulib's own JSON
    reader is not meant for input it did not write.

    Examples
    --------
    >>> load('{"fam":"Gumbel","ll":null,"nobs":0,"npars":1.0,'
    ...      '"par":{"data":[1.5],"shape":[1,1]},"rot":90,"vt":["c","c"]}').rotation
    90
    >>> load('{"fam":"Gumbel"}')
    Traceback (most recent call last):
    ...
    ValueError: not a copula of pyvinecopulib's JSON layout: no ll, nobs, npars, par, rot, vt
    """
    try:
        problem = _spec_problem(json.loads(spec))
    except (TypeError, ValueError) as err:
        problem = f"no JSON ({err})"
    if problem:
        raise ValueError(f"not a copula of pyvinecopulib's JSON layout: {problem}")
    return pv.Bicop.from_json(spec)


def sample_pair(cop: pv.Bicop, u1: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``u2 = h^{-1}_1(w | u1)``: with `u1`, `w` independent uniforms, ``(u1, u2)`` is a draw
    of the copula (any shape; returns the shape of `u1`).

    Examples
    --------
    >>> cop = pv.Bicop(family=pv.BicopFamily.clayton, parameters=np.array([[2.0]]))
    >>> rng = np.random.default_rng(0)
    >>> u1, w = rng.random(20000), rng.random(20000)
    >>> u2 = sample_pair(cop, u1, w)
    >>> from scipy.stats import kendalltau
    >>> round(float(kendalltau(u1, u2)[0]), 2)   # Clayton: tau = theta / (theta + 2)
    0.5
    """
    shape = np.shape(u1)
    pts = np.column_stack([np.ravel(u1), np.ravel(w)])
    return cop.hinv1(pts).reshape(shape)
