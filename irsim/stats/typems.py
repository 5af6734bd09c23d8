"""Type M (magnitude) and Type S (sign) errors of significant results (Gelman and Carlin,
"Beyond power calculations: assessing Type S (sign) and Type M (magnitude) errors",
Perspectives on Psychological Science 9, 2014; METHODS.md section 13).

For a true difference ``delta != 0`` and a two-sided test at level ``alpha``:

- **power** = P(significant);
- **Type S rate** = P(the estimate has the wrong sign | significant);
- **exaggeration ratio** (Type M) = E(|estimate| / |delta| | significant).

:func:`retrodesign` computes the three exactly (numerical integration, vectorised over arrays
of ``delta`` and ``se``) for

- ``df = inf``: Gelman and Carlin's ``retrodesign``: the estimate is normal with known
  standard error ``se``, significant when ``|d| / se > z_{1-alpha/2}``;
- finite ``df``: the paired t test: the estimate ``d`` is normal with standard error ``se``
  (``sigma / sqrt(n)``), the test's standard error is estimated with ``df = n - 1`` degrees of
  freedom, ``(df) s^2 / se^2 ~ chi^2_df`` independent of ``d``, and the result is significant
  when ``|d| / s > t_{1-alpha/2, df}`` (``|d| / s`` is noncentral t with noncentrality
  ``delta / se``). For a given ``s`` the significant region of ``d`` is two half lines, on
  which the normal's mass and first moment are closed form; the expectation over ``s`` is a
  fixed Gauss-Legendre rule over the chi-square's log scale.

:func:`summarise` turns per-trial records of a simulation (the estimate, fixed point, and
the smallest alpha at which each trial is significant) into the counts, rates and intervals
of the studies' ``type_m_s`` table; every number is a deterministic function of the records'
multiset (no resampling: the bootstrap intervals are computed exactly, as with infinitely
many resamples), so it does not depend on shards, workers or the engine.

Examples
--------
>>> r = retrodesign(2.0, 8.1)          # Gelman and Carlin's sex-ratio example (Durante et al.)
>>> round(float(r.power), 2), round(float(r.type_s), 2), round(float(r.exaggeration), 1)
(0.06, 0.24, 9.5)
>>> r = retrodesign(0.1, 3.28)         # the beauty and sex ratio example (Kanazawa)
>>> round(float(r.power), 2), round(float(r.type_s), 2)
(0.05, 0.46)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special
from scipy import stats as sps

from irsim.engine.partials import Count, FixedPoint

__all__ = ["Retrodesign", "retrodesign", "TypeMS", "summarise", "median_bootstrap_interval",
           "TYPE_M_POINT", "median_bootstrap_ranks", "TypeMFields", "TypeMRecord", "TypeMRows"]

#: The recorded estimates in fixed point: each rounded to 2^-32 (half to even), an integer
#: per trial; the Type M ratios are of these quantised estimates.
TYPE_M_POINT = FixedPoint(32)
#: Nodes of the Gauss-Legendre rule over the chi-square's log scale (finite df).
NODES = 200


def _chi2_rule(nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre rule for E f(sqrt(V / nu)), V ~ chi^2_nu: nodes ``sqrt(v / nu)`` and
    weights, over ``log v`` between the 1e-17 and 1 - 1e-17 quantiles (the integrand
    ``f(v) pdf(v) v`` is smooth in ``log v``)."""
    lo, hi = np.log(sps.chi2.ppf(1e-17, nu)), np.log(sps.chi2.isf(1e-17, nu))
    x, w = np.polynomial.legendre.leggauss(NODES)
    t = lo + (hi - lo) * (x + 1.0) / 2.0
    v = np.exp(t)
    weight = w * (hi - lo) / 2.0 * np.exp(sps.chi2.logpdf(v, nu) + t)
    return np.sqrt(v / nu), weight


@dataclass(frozen=True)
class Retrodesign:
    """Power, Type S rate and exaggeration ratio (arrays of the broadcast shape).

    Attributes
    ----------
    power : ndarray
        P(significant).
    type_s : ndarray
        P(wrong sign | significant).
    exaggeration : ndarray
        E(|d| / |delta| | significant).
    """

    power: np.ndarray
    type_s: np.ndarray
    exaggeration: np.ndarray


def _tails(mu: np.ndarray, tau: np.ndarray, h: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For ``d ~ N(mu, tau^2)``: P(d > h), P(d < -h), E(d; d > h), E(-d; d < -h)."""
    a, b = (h - mu) / tau, (-h - mu) / tau
    up, low = special.ndtr(-a), special.ndtr(b)
    pa, pb = np.exp(-0.5 * a * a), np.exp(-0.5 * b * b)
    c = 1.0 / math.sqrt(2.0 * math.pi)
    return up, low, mu * up + tau * c * pa, -mu * low + tau * c * pb


def retrodesign(delta: ArrayLike, se: ArrayLike, alpha: ArrayLike = 0.05,
                df: ArrayLike = math.inf) -> Retrodesign:
    """Power, Type S rate and exaggeration ratio of a two-sided test (Gelman and Carlin 2014).

    Parameters
    ----------
    delta : array_like
        True effect (nonzero; its sign does not matter).
    se : array_like
        Standard error of the estimate (> 0).
    alpha : array_like
        Significance level of the two-sided test.
    df : array_like
        ``inf``: normal estimate with known `se` (``retrodesign`` of the paper); finite: the
        t test with `df` degrees of freedom for the estimated standard error (paired t on
        ``n`` topics: ``df = n - 1``, ``se = sd(differences) / sqrt(n)``).

    Returns
    -------
    Retrodesign
        Arrays broadcast over the arguments.

    Examples
    --------
    >>> r = retrodesign([0.01, 0.02], 0.1 / np.sqrt(50), df=49)
    >>> r.power.round(3).tolist(), r.exaggeration.round(2).tolist()
    ([0.107, 0.284], [3.4, 1.83])
    """
    delta, se, alpha, df = np.broadcast_arrays(*(np.asarray(v, np.float64)
                                                 for v in (delta, se, alpha, df)))
    if not (np.abs(delta) > 0).all() or not (se > 0).all():
        raise ValueError("retrodesign needs delta != 0 and se > 0")
    if not ((alpha > 0) & (alpha < 1)).all():
        raise ValueError("alpha must be inside (0, 1)")
    mu = np.abs(delta)
    finite = np.isfinite(df)
    power = np.empty(mu.shape)
    wrong = np.empty(mu.shape)
    moment = np.empty(mu.shape)
    z = special.ndtri(1.0 - alpha / 2.0)
    if (~finite).any():
        up, low, mup, mlow = _tails(mu[~finite], se[~finite], z[~finite] * se[~finite])
        power[~finite], wrong[~finite], moment[~finite] = up + low, low, mup + mlow
    for nu in np.unique(df[finite]):
        f = df == nu
        y, w = _chi2_rule(float(nu))  # nodes: the estimated se / the true se
        s = se[f][..., None] * y
        c = sps.t.ppf(1.0 - alpha[f] / 2.0, nu)[..., None]
        up, low, mup, mlow = _tails(mu[f][..., None], se[f][..., None], c * s)
        power[f] = (up + low) @ w
        wrong[f] = low @ w
        moment[f] = (mup + mlow) @ w
    return Retrodesign(power, wrong / power, moment / (power * mu))


@dataclass(frozen=True)
class TypeMS:
    """Type S and Type M statistics of one (configuration, test, tail), per alpha (arrays
    of length ``alphas``); see :func:`summarise`."""

    trials: int
    significant: np.ndarray
    wrong_sign: np.ndarray
    mean: np.ndarray
    mean_lo: np.ndarray
    mean_hi: np.ndarray
    median: np.ndarray
    median_lo: np.ndarray
    median_hi: np.ndarray
    unconditional: float


def median_bootstrap_interval(values: np.ndarray, level: float = 0.95
                              ) -> tuple[float, float]:
    """Exact percentile bootstrap interval of the median of sorted `values` (as with
    infinitely many resamples).

    The bootstrap median of a resample of ``m`` values is its order statistic
    ``k = ceil(m / 2)`` (the lower median). It is at most the sample's ``j``-th order
    statistic ``x_(j)`` when at least ``k`` resampled values are, so
    ``P*(median* <= x_(j)) = P(Binomial(m, j / m) >= k) = I_{j/m}(k, m - k + 1)`` (ties
    included: a value's probability is that of its last order statistic). The interval
    bounds are ``x_(j)`` for the smallest ``j`` with that probability at least ``(1 - level)
    / 2`` and ``(1 + level) / 2``.

    Parameters
    ----------
    values : ndarray, shape (m,)
        Sorted ascending; m >= 1.
    level : float

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> median_bootstrap_interval(np.arange(1.0, 6.0))
    (1.0, 5.0)
    >>> median_bootstrap_interval(np.arange(100.0))
    (39.0, 59.0)
    """
    lo, hi = median_bootstrap_ranks(len(values), level)
    return float(values[lo - 1]), float(values[hi - 1])


def median_bootstrap_ranks(m: int, level: float = 0.95) -> tuple[int, int]:
    """The order statistics (1-based ranks ``j``) bounding the exact percentile bootstrap
    interval of the lower median of ``m`` values (:func:`median_bootstrap_interval`).

    Examples
    --------
    >>> median_bootstrap_ranks(100)
    (40, 60)
    """
    k = (m + 1) // 2
    out = []
    for q in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        # smallest j in 1..m with I_{j/m}(k, m-k+1) >= q: start from the inverse, then step
        j = int(min(max(math.ceil(m * float(special.betaincinv(k, m - k + 1, q))), 1), m))
        while j > 1 and special.betainc(k, m - k + 1, (j - 1) / m) >= q:
            j -= 1
        while j < m and special.betainc(k, m - k + 1, j / m) < q:
            j += 1
        out.append(j)
    return out[0], out[1]


def summarise(q: np.ndarray, level: np.ndarray, alphas: int, delta: float,
              ci_level: float = 0.95) -> TypeMS:
    """Type S / Type M statistics from per-trial records of one configuration and test.

    Parameters
    ----------
    q : ndarray of int64, shape (trials,)
        The trials' estimates (mean differences) in fixed point, ``round(d * 2**32)``
        (:data:`TYPE_M_POINT`).
    level : ndarray of int, shape (trials,)
        Per trial, the index of the smallest alpha (in increasing order) at which the trial
        is significant (``p <= alpha``); ``alphas`` when it is significant at none.
    alphas : int
        Number of significance levels.
    delta : float
        The true difference (nonzero).
    ci_level : float
        Level of the intervals.

    Returns
    -------
    TypeMS
        Per alpha (increasing): significant trials; significant trials whose estimate has
        the sign opposite to `delta` (an estimate of 0 is not counted); the mean and the
        median of ``|d| / |delta|`` over significant trials, the mean's interval ``mean +-
        z sd / sqrt(m)`` (the normal bootstrap interval with the exact bootstrap standard
        error, ``sd`` with divisor ``m``) and the median's exact percentile bootstrap
        interval (:func:`median_bootstrap_interval`; the median is the lower median
        ``x_(ceil(m/2))`` for an even ``m``, so that both are of the same statistic); NaN
        where no trial is significant. ``unconditional``: the mean of ``|d| / |delta|`` over
        all trials. Ratios are of the fixed-point estimates.

    Examples
    --------
    >>> q = np.array([-2, 3, 5, 1, 4]) * 2**30              # d = -0.5, 0.75, 1.25, ...
    >>> s = summarise(q, np.array([0, 1, 0, 2, 1]), alphas=2, delta=0.5)
    >>> s.significant.tolist(), s.wrong_sign.tolist()
    ([2, 4], [1, 1])
    >>> s.mean.tolist(), s.median.tolist(), round(s.unconditional, 6)
    ([1.75, 1.75], [1.0, 1.5], 1.5)
    """
    q = np.asarray(q, np.int64)
    level = np.asarray(level)
    scale = TYPE_M_POINT.scale * abs(delta)
    a = np.abs(q)
    wrong = (q * int(np.sign(delta))) < 0
    order = np.argsort(a, kind="stable")
    a_sorted, lev_sorted = a[order], level[order]
    z = float(special.ndtri(0.5 + ci_level / 2.0))
    out = {k: np.full(alphas, np.nan) for k in ("mean", "mean_lo", "mean_hi", "median",
                                                 "median_lo", "median_hi")}
    sig = np.zeros(alphas, np.int64)
    bad = np.zeros(alphas, np.int64)
    for li in range(alphas):  # nested sets: significant at alpha li
        keep = lev_sorted <= li
        v = a_sorted[keep]
        m = len(v)
        sig[li] = m
        bad[li] = int(np.count_nonzero(wrong & (level <= li)))
        if m == 0:
            continue
        r = v / scale
        mean = int(v.sum()) / m / scale  # exact integer sum, one rounding
        sd = math.sqrt(float(np.mean((r - mean) ** 2)))
        out["mean"][li] = mean
        out["mean_lo"][li] = mean - z * sd / math.sqrt(m)
        out["mean_hi"][li] = mean + z * sd / math.sqrt(m)
        out["median"][li] = v[(m + 1) // 2 - 1] / scale
        lo, hi = median_bootstrap_interval(v, ci_level)
        out["median_lo"][li], out["median_hi"][li] = lo / scale, hi / scale
    unconditional = int(a.sum()) / len(a) / scale if len(a) else math.nan
    return TypeMS(trials=len(q), significant=sig, wrong_sign=bad, unconditional=unconditional,
                  **out)


# ------------------------------------------------------------------ studies' records and rows
def _names(i0: int) -> tuple[str, str]:
    """The two fields of the item block starting at configuration `i0` (estimates, codes):
    the only place their names are spelt."""
    return f"tm_diff_{i0}", f"tm_level_{i0}"


@dataclass(frozen=True)
class TypeMFields:
    """The typed partials of the per-trial records (:class:`TypeMRecord`): per (trial,
    configuration) the fixed-point estimate (:data:`TYPE_M_POINT`), and per (trial,
    configuration, test, alternative) the number of alphas at which the trial is
    significant.

    Integer counters along the trials, one pair of fields per block of `block`
    configurations (the study's item blocks), so that a shard ships only its own
    configurations' records; each cell is written by the one shard that owns its (trial,
    configuration), so the merge is exact in any order. A study declares :meth:`fields`,
    records with :meth:`record` and reads :meth:`merged`: no field name is spelt outside.

    Parameters
    ----------
    trials, items, tests, alternatives : int
        Trials (replicates), configurations (items), tests and alternatives recorded.
    block : int
        Configurations per item block (the study's ``shard_items``).

    Examples
    --------
    >>> from irsim.engine.base import Shard
    >>> from irsim.engine.partials import Accumulator
    >>> layout = TypeMFields(trials=2, items=3, tests=1, alternatives=1, block=2)
    >>> acc = Accumulator(layout.fields())
    >>> for shard in (Shard(0, (0, 2), (0, 2)), Shard(1, (2, 3), (0, 2))):
    ...     rec = layout.record(shard, alphas=(0.05,))
    ...     for item in range(*shard.items):
    ...         rec.diff(item, 0, np.array([0.25, -0.5]) * (item + 1))
    ...         rec.levels(item, 0, 0, np.array([[0.01], [0.2]]))
    ...     acc.combine(shard, rec.partial())
    >>> q, code = layout.merged(acc.result())
    >>> (q / TYPE_M_POINT.scale).tolist(), code[:, :, 0, 0].tolist()
    ([[0.25, 0.5, 0.75], [-0.5, -1.0, -1.5]], [[1, 1, 1], [0, 0, 0]])
    """

    trials: int
    items: int
    tests: int
    alternatives: int
    block: int

    def blocks(self) -> list[tuple[int, int]]:
        """The item blocks ``(first, end)``."""
        return [(i, min(i + self.block, self.items))
                for i in range(0, self.items, max(int(self.block), 1))]

    def fields(self) -> dict[str, Count]:
        """The study's fields of the records."""
        out: dict[str, Count] = {}
        for i0, i1 in self.blocks():
            diff, level = _names(i0)
            out[diff] = Count((self.trials, i1 - i0), along="reps")
            out[level] = Count((self.trials, i1 - i0, self.tests, self.alternatives),
                               along="reps", dtype="int16")
        return out

    def record(self, shard: Any, alphas: tuple[float, ...]) -> TypeMRecord:
        """A shard's records (its trials and configurations, which form one item block)."""
        return TypeMRecord(shard, self.tests, self.alternatives, alphas)

    def merged(self, merged: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The merged records: estimates (trials, items), fixed point, and codes (trials,
        items, tests, alternatives)."""
        names = [_names(i0) for i0, _ in self.blocks()]
        return (np.concatenate([merged[d] for d, _ in names], axis=1),
                np.concatenate([merged[c] for _, c in names], axis=1))


class TypeMRecord:
    """A shard's per-trial records for :class:`TypeMFields` (rows: the shard's trials;
    columns: the shard's configurations, which form one item block)."""

    def __init__(self, shard: Any, tests: int, alternatives: int,
                 alphas: tuple[float, ...]) -> None:
        r0, r1 = shard.reps
        i0, i1 = shard.items
        if len(alphas) > 32000:
            raise ValueError("too many significance levels for the int16 records")
        self.r0, self.i0 = r0, i0
        self.sorted_alphas = np.sort(np.asarray(alphas, np.float64))
        self.q = np.zeros((r1 - r0, i1 - i0), np.int64)
        self.code = np.zeros((r1 - r0, i1 - i0, tests, alternatives), np.int16)

    def diff(self, item: int, first: int, d: np.ndarray) -> None:
        """Record the estimates `d` of trials ``first, first + 1, ...`` of `item` (in fixed
        point, :data:`TYPE_M_POINT`)."""
        rows = slice(first - self.r0, first - self.r0 + len(d))
        self.q[rows, item - self.i0] = TYPE_M_POINT.units(d)

    def levels(self, item: int, first: int, test: int, p: np.ndarray) -> None:
        """Record the p-values `p` (trials, alternatives) of `test` as the number of alphas
        with ``p <= alpha``."""
        p = np.asarray(p)
        rows = slice(first - self.r0, first - self.r0 + len(p))
        a = self.sorted_alphas
        self.code[rows, item - self.i0, test] = len(a) - np.searchsorted(a, p, side="left")

    def partial(self) -> dict[str, np.ndarray]:
        """The kernel's fields (those of its item block)."""
        diff, level = _names(self.i0)
        return {diff: self.q, level: self.code}


#: Columns of table ``type_m_s`` that identify a row, in order (irsim/tables.py).
KEY_COLUMNS = ("metric", "n", "delta", "m", "share_null", "correction", "test",
               "alternative", "alpha")
VALUE_COLUMNS = ("trials", "significant", "power", "wrong_sign", "type_s", "type_s_lo",
                 "type_s_hi", "exaggeration_mean", "exaggeration_mean_lo",
                 "exaggeration_mean_hi", "exaggeration_median", "exaggeration_median_lo",
                 "exaggeration_median_hi", "abs_ratio_mean")


class TypeMRows:
    """Rows of table ``type_m_s``, one per (configuration, test, alternative, alpha)."""

    def __init__(self, tests: tuple[str, ...], alphas: tuple[float, ...],
                 ci_level: float) -> None:
        self.tests, self.alphas, self.ci_level = tests, tuple(alphas), ci_level
        # position of each alpha (user order) among the sorted alphas
        self.rank = np.argsort(np.argsort(np.asarray(alphas), kind="stable"), kind="stable")
        self.cols: dict[str, list] = {c: [] for c in KEY_COLUMNS + VALUE_COLUMNS}

    def _row(self, keys: dict, values: dict) -> None:
        for c in KEY_COLUMNS:
            self.cols[c].append(keys.get(c))
        for c in VALUE_COLUMNS:
            self.cols[c].append(values.get(c))

    def add_null(self, keys: dict, trials: int, significant: np.ndarray) -> None:
        """Rows of a configuration without a true sign (delta = 0): trials, significant
        (per alpha, user order) and power (the Type I error rate); the rest null."""
        for li, alpha in enumerate(self.alphas):
            k = int(significant[li])
            self._row({**keys, "alpha": alpha},
                      {"trials": trials, "significant": k,
                       "power": k / trials if trials else math.nan})

    def add(self, keys: dict, q: np.ndarray, code: np.ndarray, delta: float,
            ci_level: float | None = None) -> None:
        """Rows of one (configuration, test, alternative) from its records: `q` the
        fixed-point estimates, `code` the number of alphas at which each trial is
        significant."""
        from irsim.stats.binomial import clopper_pearson

        level = ci_level or self.ci_level
        n_alpha = len(self.alphas)
        s = summarise(q, n_alpha - np.asarray(code, np.int64), n_alpha, delta, level)
        lo, hi = clopper_pearson(s.wrong_sign, s.significant, level)
        for li, alpha in enumerate(self.alphas):
            j = int(self.rank[li])
            k, w = int(s.significant[j]), int(s.wrong_sign[j])
            self._row({**keys, "alpha": alpha}, {
                "trials": s.trials, "significant": k,
                "power": k / s.trials if s.trials else math.nan, "wrong_sign": w,
                "type_s": w / k if k else math.nan,
                "type_s_lo": float(lo[j]) if k else math.nan,
                "type_s_hi": float(hi[j]) if k else math.nan,
                "exaggeration_mean": float(s.mean[j]),
                "exaggeration_mean_lo": float(s.mean_lo[j]),
                "exaggeration_mean_hi": float(s.mean_hi[j]),
                "exaggeration_median": float(s.median[j]),
                "exaggeration_median_lo": float(s.median_lo[j]),
                "exaggeration_median_hi": float(s.median_hi[j]),
                "abs_ratio_mean": s.unconditional})

    def add_histogram(self, keys: dict, total: int, ratio_sum: int, hist: np.ndarray,
                      sums: np.ndarray, wrong: np.ndarray, scale: int) -> None:
        """Rows of one (configuration, test, ...) from integer summaries, per alpha (user
        order): `hist` (alphas, bins) the significant comparisons by ``round(ratio *
        scale)`` (the last bin holding every larger value), `sums` (alphas, 2) the exact
        sums of those integers and of their squares (uncapped), `wrong` (alphas,) the
        significant comparisons with the wrong sign; `total` comparisons with `ratio_sum`
        the sum of all their grid values. The same statistics as :meth:`add`, of the
        ratios on the grid (the median and its interval capped at the last bin)."""
        from irsim.stats.binomial import clopper_pearson

        sig = np.asarray(hist, np.int64).sum(axis=1)
        lo, hi = clopper_pearson(np.asarray(wrong, np.int64), sig, self.ci_level)
        z = float(special.ndtri(0.5 + self.ci_level / 2.0))
        for li, alpha in enumerate(self.alphas):
            m, w = int(sig[li]), int(wrong[li])
            values: dict[str, Any] = {
                "trials": total, "significant": m, "power": m / total, "wrong_sign": w,
                "type_s": w / m if m else math.nan,
                "type_s_lo": float(lo[li]) if m else math.nan,
                "type_s_hi": float(hi[li]) if m else math.nan,
                "abs_ratio_mean": ratio_sum / total / scale}
            if m:
                s1, s2 = int(sums[li, 0]), int(sums[li, 1])
                mean = s1 / m / scale
                half = z * math.sqrt(float((m * s2 - s1 * s1) / (m * m)) / m) / scale
                cum = np.cumsum(hist[li])
                j_lo, j_hi = median_bootstrap_ranks(m, self.ci_level)
                at = np.searchsorted(cum, [(m + 1) // 2, j_lo, j_hi], side="left") / scale
                values.update({
                    "exaggeration_mean": mean, "exaggeration_mean_lo": mean - half,
                    "exaggeration_mean_hi": mean + half, "exaggeration_median": at[0],
                    "exaggeration_median_lo": at[1], "exaggeration_median_hi": at[2]})
            else:
                values.update({k: math.nan for k in VALUE_COLUMNS if k.startswith("exagg")})
            self._row({**keys, "alpha": alpha}, values)

    def table(self) -> Any:
        """The ``type_m_s`` table (schema of :mod:`irsim.tables`)."""
        from irsim.tables import table as build_table

        return build_table("type_m_s", self.cols)
