"""Agreement of relevance labels between assessors: Cohen's kappa (unweighted, linear and
quadratic weights), Fleiss' kappa, Krippendorff's alpha, per topic and overall, with
bootstrap-over-topics intervals.

Every statistic is computed from counts built by one ``np.bincount``: the confusion matrix
of two assessors (``(a, b)`` codes), a batch of confusion matrices, one per topic
(``(topic, a, b)`` codes), the category counts of each item (``(item, label)`` codes) and
the coincidence matrix of Krippendorff's alpha. No Python loop runs over items or topics.

Labels are arbitrary numbers (grades 0-3, or booleans after binarisation); a statistic sees
them as categories in the order of ``labels`` (default: the sorted union of the values
observed), and weighted kappas measure a disagreement by the distance between the
categories' *positions* in that order, as :func:`sklearn.metrics.cohen_kappa_score` does.

Conventions
-----------
- A statistic whose chance disagreement is zero (every label the same category) is NaN, as
  scikit-learn and statsmodels return it; :func:`mean_kappa_ci` leaves NaN topics out.
- Per-topic functions return the sorted unique topic ids and one value per topic.
- Items x raters label matrices (:func:`fleiss_kappa_labels`, :func:`krippendorff_alpha`)
  have one row per item (a judged passage) and one column per rater; NaN is a missing
  label (Krippendorff only).

The SIGIR 2025 re-annotation study (Parry et al., TREC DL 2019)
---------------------------------------------------------------
Its figures follow from these functions (``tests/test_agreement.py`` reproduces them):

- per pair of assessors, the mean over the topics judged by exactly two secondary
  assessors of :func:`cohen_kappa_per_topic` on the passages both judged, grades
  binarised at ``>= 2`` (0.381, 0.369, 0.468, 0.338);
- per group, the mean over topics of :func:`fleiss_kappa_per_topic` on the 4 grades of
  the passages both assessors judged, with the NIST label counted as *two* raters
  (columns a, b, NIST, NIST), which is what the paper's notebook computes (0.221, 0.280,
  0.168, 0.282); with NIST counted once the means are 0.12-0.15 lower (0.071, 0.156,
  0.029, 0.145).

Examples
--------
>>> import numpy as np
>>> a = np.array([0, 1, 2, 2, 3, 0, 1])
>>> b = np.array([0, 2, 2, 1, 3, 0, 0])
>>> round(cohen_kappa(a, b), 4), round(cohen_kappa(a >= 2, b >= 2), 4)
(0.4167, 0.4167)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from irsim.errors import ConfigError, InputError

if TYPE_CHECKING:
    from irsim.data.types import Qrels

__all__ = ["KAPPA_WEIGHTS", "ALPHA_LEVELS", "AgreementCI", "confusion", "confusion_per_topic",
           "kappa_from_confusion", "cohen_kappa", "cohen_kappa_per_topic", "fleiss_kappa",
           "fleiss_kappa_labels", "fleiss_kappa_per_topic", "krippendorff_alpha",
           "mean_kappa_ci", "pooled_kappa_ci", "pooled_alpha_ci",
           "krippendorff_alpha_per_topic", "joint_labels"]

#: Weightings of Cohen's kappa: unweighted (None), linear and quadratic.
KAPPA_WEIGHTS = (None, "linear", "quadratic")
#: Levels of measurement of Krippendorff's alpha.
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _labels_and_codes(labels: ArrayLike | None, *arrays: np.ndarray
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
    """The category values (sorted) and each array's category codes (0..L-1)."""
    arrays = [np.asarray(x) for x in arrays]
    if labels is None:
        cats = np.unique(np.concatenate([x.ravel() for x in arrays]))
    else:
        cats = np.asarray(labels)
        if cats.ndim != 1 or len(cats) == 0:
            raise ConfigError("labels must be a non-empty 1-d sequence")
    order = np.argsort(cats, kind="stable")
    sorted_cats = cats[order]
    if np.any(sorted_cats[1:] == sorted_cats[:-1]):  # np.unique's are distinct
        raise ConfigError(f"labels must be distinct, got {cats.tolist()}")
    codes = []
    for x in arrays:
        pos = np.clip(np.searchsorted(sorted_cats, x), 0, len(cats) - 1)
        bad = sorted_cats[pos] != x
        if bad.any():
            v = x[bad].ravel()[0]
            v = v.item() if isinstance(v, np.generic) else v
            raise InputError(f"label {v!r} is not one of the labels {cats.tolist()}")
        codes.append(order[pos].astype(np.int64))
    return cats, codes


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or a.shape != b.shape:
        raise InputError(f"a and b must be 1-d arrays of the same length, got shapes "
                         f"{a.shape} and {b.shape}")
    if len(a) == 0:
        raise InputError("no items: a and b are empty")
    return a, b


def confusion(a: ArrayLike, b: ArrayLike, labels: ArrayLike | None = None) -> np.ndarray:
    """Confusion matrix of two assessors' labels of the same items.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        The two assessors' labels, item by item.
    labels : array_like, optional
        The categories, in order (default: the sorted union of the values in `a` and `b`).

    Returns
    -------
    ndarray of int64, shape (L, L)
        ``C[i, j]``: items labelled ``labels[i]`` by `a` and ``labels[j]`` by `b`.

    Examples
    --------
    >>> confusion([0, 1, 1, 2], [0, 1, 2, 2]).tolist()
    [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    >>> confusion([1, 1], [1, 0], labels=[0, 1, 2]).tolist()
    [[0, 0, 0], [1, 1, 0], [0, 0, 0]]
    """
    a, b = _pair(a, b)
    cats, (ca, cb) = _labels_and_codes(labels, a, b)
    L = len(cats)
    return np.bincount(ca * L + cb, minlength=L * L).reshape(L, L)


def _topic_codes(topics: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(topics)
    if t.shape != (n,):
        raise InputError(f"topics must have one id per item ({n}), got shape {t.shape}")
    if t.dtype != object:
        ids, inv = np.unique(t, return_inverse=True)
        return ids, inv.astype(np.int64)
    # string ids: hashed, only the distinct ones sorted (np.unique's ids and codes, faster)
    codes, uniq = pd.factorize(t, use_na_sentinel=False)
    order = np.argsort(uniq, kind="stable")
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    return np.asarray(uniq, dtype=object)[order], rank[codes]


def confusion_per_topic(a: ArrayLike, b: ArrayLike, topics: ArrayLike,
                        labels: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One confusion matrix per topic, from one ``bincount`` of (topic, a, b) codes.

    Parameters
    ----------
    a, b : array_like, shape (n,)
    topics : array_like, shape (n,)
        The topic of each item.
    labels : array_like, optional
        The categories shared by every topic (default: all values observed).

    Returns
    -------
    topic_ids : ndarray, shape (T,)
        Sorted unique topics.
    counts : ndarray of int64, shape (T, L, L)

    Examples
    --------
    >>> ids, c = confusion_per_topic([0, 1, 1, 0], [0, 1, 0, 0], ["q2", "q2", "q1", "q1"])
    >>> ids.tolist(), c.tolist()
    (['q1', 'q2'], [[[1, 0], [1, 0]], [[1, 0], [0, 1]]])
    """
    a, b = _pair(a, b)
    cats, (ca, cb) = _labels_and_codes(labels, a, b)
    ids, t = _topic_codes(topics, len(a))
    L, T = len(cats), len(ids)
    flat = (t * L + ca) * L + cb
    return ids, np.bincount(flat, minlength=T * L * L).reshape(T, L, L)


def _disagreement_weights(L: int, weights: str | None) -> np.ndarray:
    if weights not in KAPPA_WEIGHTS:
        raise ConfigError(f"weights must be one of {list(KAPPA_WEIGHTS)}, got {weights!r}")
    i = np.arange(L)
    d = np.abs(i[:, None] - i[None, :]).astype(np.float64)
    if weights is None:
        return (d > 0).astype(np.float64)
    return d if weights == "linear" else d * d


def kappa_from_confusion(counts: ArrayLike, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa of confusion matrices (batched over leading axes).

    ``kappa = 1 - sum(W * O) / sum(W * E)`` with ``O`` the observed counts, ``E`` the
    counts expected by chance (outer product of the margins over ``n``) and ``W`` the
    disagreement weights (``1 - I``, ``|i - j|`` or ``(i - j)^2``); unweighted, this is
    ``(p_o - p_e) / (1 - p_e)``.

    Parameters
    ----------
    counts : array_like, shape (..., L, L)
    weights : {None, "linear", "quadratic"}

    Returns
    -------
    ndarray, shape (...)
        NaN where the expected disagreement is 0 (a matrix with a single category used, or
        no items).

    Examples
    --------
    >>> c = np.array([[20, 5], [10, 15]])
    >>> float(kappa_from_confusion(c))
    0.4
    >>> kappa_from_confusion(np.stack([c, [[3, 0], [0, 0]]])).tolist()
    [0.4, nan]
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim < 2 or c.shape[-1] != c.shape[-2]:
        raise InputError(f"counts must be square matrices, got shape {c.shape}")
    L = c.shape[-1]
    w = _disagreement_weights(L, weights)
    n = c.sum(axis=(-2, -1))
    rows, cols = c.sum(axis=-1), c.sum(axis=-2)
    observed = (c * w).sum(axis=(-2, -1))
    # sum_ij w_ij r_i c_j / n, with n > 0
    expected_n = np.einsum("...i,ij,...j->...", rows, w, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = expected_n / n
        out = np.where(expected > 0, 1.0 - observed / expected, np.nan)
    return out


def cohen_kappa(a: ArrayLike, b: ArrayLike, weights: str | None = None,
                labels: ArrayLike | None = None) -> float:
    """Cohen's kappa between two assessors' labels of the same items.

    Parameters
    ----------
    a, b : array_like, shape (n,)
    weights : {None, "linear", "quadratic"}
        Unweighted, or weighted by the linear / squared distance between categories'
        positions in `labels`.
    labels : array_like, optional
        Categories in order (default: sorted union of the observed values). For a weighted
        kappa of grades, pass the whole scale (e.g. ``[0, 1, 2, 3]``) so that distances do
        not depend on which grades happen to occur.

    Returns
    -------
    float
        NaN when the expected disagreement is 0.

    Examples
    --------
    >>> from sklearn.metrics import cohen_kappa_score
    >>> a, b = [0, 1, 2, 3, 3, 1, 0, 2], [0, 2, 2, 3, 1, 1, 0, 3]
    >>> bool(np.isclose(cohen_kappa(a, b, "quadratic"),
    ...                 cohen_kappa_score(a, b, weights="quadratic")))
    True
    """
    return float(kappa_from_confusion(confusion(a, b, labels), weights))


def cohen_kappa_per_topic(a: ArrayLike, b: ArrayLike, topics: ArrayLike,
                          weights: str | None = None, labels: ArrayLike | None = None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's kappa per topic, all topics from one ``bincount`` of (topic, a, b) codes.

    Parameters
    ----------
    a, b : array_like, shape (n,)
    topics : array_like, shape (n,)
    weights : {None, "linear", "quadratic"}
    labels : array_like, optional
        Categories shared by every topic (default: all values observed in any topic).

    Returns
    -------
    topic_ids : ndarray, shape (T,)
    kappa : ndarray of float64, shape (T,)
        NaN for a topic where the expected disagreement is 0.

    Examples
    --------
    >>> ids, k = cohen_kappa_per_topic([0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1],
    ...                                ["a", "a", "a", "a", "b", "b"])
    >>> ids.tolist(), k.round(4).tolist()
    (['a', 'b'], [0.5, nan])
    """
    ids, counts = confusion_per_topic(a, b, topics, labels)
    return ids, kappa_from_confusion(counts, weights)


def _fleiss(counts: np.ndarray, topic: np.ndarray, T: int) -> np.ndarray:
    """Fleiss' kappa per group of items from their (items, categories) count rows."""
    n_items, L = counts.shape
    m = counts.sum(axis=1)
    if n_items == 0:
        raise InputError("no items to rate")
    if np.any(m != m[0]):
        i = int(np.argmax(m != m[0]))
        raise InputError(f"Fleiss' kappa needs the same number of ratings per item: item 0 "
                         f"has {int(m[0])}, item {i} has {int(m[i])}")
    r = int(m[0])
    if r < 2:
        raise InputError(f"Fleiss' kappa needs at least 2 ratings per item, got {r}")
    per_item = ((counts * counts).sum(axis=1) - r) / (r * (r - 1.0))
    items = np.bincount(topic, minlength=T).astype(np.float64)
    flat = (topic[:, None] * L + np.arange(L)[None, :]).ravel()
    cat = np.bincount(flat, weights=counts.ravel().astype(np.float64),
                      minlength=T * L).reshape(T, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = np.bincount(topic, weights=per_item, minlength=T) / items
        p = cat / (items * r)[:, None]
        p_e = (p * p).sum(axis=1)
        return np.where((items > 0) & (p_e < 1.0), (p_bar - p_e) / (1.0 - p_e), np.nan)


def fleiss_kappa(table: ArrayLike) -> float:
    """Fleiss' kappa (1971) of an items x categories table of rating counts.

    Parameters
    ----------
    table : array_like of int, shape (items, categories)
        ``table[i, j]``: raters who put item ``i`` in category ``j``; every row sums to the
        same number of raters ``r >= 2``.

    Returns
    -------
    float
        ``(P_bar - P_e) / (1 - P_e)``: ``P_bar`` the mean over items of the share of
        agreeing rater pairs, ``P_e`` the sum of squared category shares; NaN when
        ``P_e = 1``.

    Examples
    --------
    >>> from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    >>> t = np.array([[3, 0, 0], [1, 2, 0], [0, 1, 2], [0, 0, 3], [2, 1, 0]])
    >>> round(fleiss_kappa(t), 4), bool(np.isclose(fleiss_kappa(t), sm_fleiss(t)))
    (0.3919, True)
    """
    t = np.asarray(table)
    if t.ndim != 2:
        raise InputError(f"table must be 2-d (items, categories), got shape {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        if not np.all(np.isfinite(t)) or np.any(t != np.round(t)):
            raise InputError("table must hold whole rating counts")
        t = t.astype(np.int64)
    if np.any(t < 0):
        raise InputError("table must hold non-negative counts")
    return float(_fleiss(t.astype(np.int64), np.zeros(len(t), np.int64), 1)[0])


def _item_counts(labels: ArrayLike, categories: ArrayLike | None) -> np.ndarray:
    x = np.asarray(labels)
    if x.ndim != 2:
        raise InputError(f"labels must be 2-d (items, raters), got shape {x.shape}")
    if x.dtype.kind == "f" and np.isnan(x).any():
        raise InputError("Fleiss' kappa needs every rater's label of every item (NaN found); "
                         "use krippendorff_alpha for missing labels")
    cats, (codes,) = _labels_and_codes(categories, x)
    n, L = x.shape[0], len(cats)
    flat = (np.arange(n, dtype=np.int64)[:, None] * L + codes).ravel()
    return np.bincount(flat, minlength=n * L).reshape(n, L)


def fleiss_kappa_labels(labels: ArrayLike, categories: ArrayLike | None = None) -> float:
    """Fleiss' kappa from an items x raters matrix of labels.

    Parameters
    ----------
    labels : array_like, shape (items, raters)
        ``raters >= 2`` labels per item (a rater may be counted twice by repeating a column).
    categories : array_like, optional
        The category values (default: the values observed).

    Examples
    --------
    >>> x = np.array([[0, 0, 0], [0, 1, 1], [1, 2, 2], [2, 2, 2], [0, 0, 1]])
    >>> round(fleiss_kappa_labels(x), 4)  # the table of fleiss_kappa's example
    0.3919
    """
    return fleiss_kappa(_item_counts(labels, categories))


def fleiss_kappa_per_topic(labels: ArrayLike, topics: ArrayLike,
                           categories: ArrayLike | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Fleiss' kappa per topic from an items x raters label matrix, in one pass of
    ``bincount`` (item counts, then per-topic category shares and mean agreement).

    Category shares ``p_j`` are each topic's own (as Fleiss' kappa of its items alone).

    Parameters
    ----------
    labels : array_like, shape (items, raters)
    topics : array_like, shape (items,)
    categories : array_like, optional

    Returns
    -------
    topic_ids : ndarray, shape (T,)
    kappa : ndarray of float64, shape (T,)

    Examples
    --------
    >>> x = np.array([[0, 0], [1, 1], [0, 1], [1, 1], [1, 1], [0, 1]])
    >>> ids, k = fleiss_kappa_per_topic(x, [1, 1, 1, 2, 2, 2])
    >>> ids.tolist(), k.round(4).tolist()
    ([1, 2], [0.3333, -0.2])
    """
    counts = _item_counts(labels, categories)
    ids, t = _topic_codes(topics, counts.shape[0])
    return ids, _fleiss(counts, t, len(ids))


def _alpha_counts(labels: ArrayLike, level: str) -> tuple[np.ndarray, np.ndarray]:
    """Checked labels -> (values in order, per-item value counts (items, V))."""
    if level not in ALPHA_LEVELS:
        raise ConfigError(f"level must be one of {list(ALPHA_LEVELS)}, got {level!r}")
    x = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"labels must be 2-d (items, raters), got shape {x.shape}")
    if np.isinf(x).any():
        raise InputError("labels must be finite numbers or NaN")
    ok = ~np.isnan(x)
    values = np.unique(x[ok])
    if len(values) == 0:
        raise InputError("no labels (all NaN)")
    V, n_items = len(values), x.shape[0]
    codes = np.searchsorted(values, np.where(ok, x, values[0]))
    flat = (np.arange(n_items)[:, None] * V + codes)[ok]
    counts = np.bincount(flat, minlength=n_items * V).reshape(n_items, V)
    if not (counts.sum(axis=1) >= 2).any():
        raise InputError("no item has two labels: nothing to agree on")
    return values, counts


def _alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Alpha of coincidence matrices ``o`` (..., V, V) over the value order ``values``."""
    V = len(values)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    if level == "nominal":
        d = np.broadcast_to(1.0 - np.eye(V), o.shape)
    elif level == "interval":
        d = np.broadcast_to((values[:, None] - values[None, :]) ** 2, o.shape)
    elif level == "ratio":
        s = values[:, None] + values[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(s != 0, ((values[:, None] - values[None, :]) / s) ** 2, 0.0)
        d = np.broadcast_to(d, o.shape)
    else:  # ordinal: the margins of the values from c to k, less half of the two ends
        zero = np.zeros((*n_c.shape[:-1], 1))
        cum = np.concatenate([zero, np.cumsum(n_c, axis=-1)], axis=-1)
        i = np.arange(V)
        lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
        d = (cum[..., hi + 1] - cum[..., lo]
             - (n_c[..., :, None] + n_c[..., None, :]) / 2.0) ** 2
    d_o = (o * d).sum(axis=(-2, -1))
    d_e = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d_e > 0, 1.0 - (n - 1.0) * d_o / d_e, np.nan)


def krippendorff_alpha(labels: ArrayLike, level: str = "nominal") -> float:
    """Krippendorff's alpha of an items x raters matrix with missing labels (NaN).

    The exact coincidence-matrix definition (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability"): every item with ``m_u >= 2`` labels adds each ordered pair of its
    labels from different raters with weight ``1 / (m_u - 1)`` to the coincidence matrix
    ``o``; with ``n_c`` its margins and ``n`` their total,
    ``alpha = 1 - (n - 1) * sum(o_ck d_ck) / sum(n_c n_k d_ck)``. Items with fewer than
    two labels do not count.

    Parameters
    ----------
    labels : array_like, shape (items, raters)
        Numeric labels, NaN for missing.
    level : {"nominal", "ordinal", "interval", "ratio"}
        The distance ``d_ck``: nominal ``[c != k]``; ordinal
        ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` over the values in order; interval
        ``(c - k)^2``; ratio ``((c - k) / (c + k))^2``.

    Returns
    -------
    float
        NaN when there is no expected disagreement (a single value used).

    Examples
    --------
    >>> nan = np.nan
    >>> x = np.array([[1, 1, nan], [2, 2, 3], [3, 3, 3], [nan, 1, 2], [1, nan, nan]])
    >>> round(krippendorff_alpha(x, "nominal"), 4), round(krippendorff_alpha(x, "interval"), 4)
    (0.4545, 0.7391)
    """
    values, counts = _alpha_counts(labels, level)
    V = len(values)
    m = counts.sum(axis=1)
    # coincidences: sum over items of (n_u n_u^T - diag(n_u)) / (m_u - 1); integer products
    # grouped by m_u, so the result does not depend on the item order
    o = np.zeros((V, V))
    for mu in np.unique(m[m >= 2]):
        cu = counts[m == mu]
        o += ((cu.T @ cu) - np.diag(cu.sum(axis=0))) / (mu - 1.0)
    return float(_alpha_from_coincidences(o, values, level))


def krippendorff_alpha_per_topic(labels: ArrayLike, topics: ArrayLike,
                                 level: str = "nominal") -> tuple[np.ndarray, np.ndarray]:
    """Krippendorff's alpha per topic: each item's coincidences, summed per topic by one
    ``bincount`` of (topic, value, value) cells, then alpha of every topic at once.

    The values (and so the ordinal distances' order) are those of all topics; a value a
    topic does not use has zero margins there and does not change its alpha.

    Parameters
    ----------
    labels : array_like, shape (items, raters)
        NaN for missing.
    topics : array_like, shape (items,)
    level : {"nominal", "ordinal", "interval", "ratio"}

    Returns
    -------
    topic_ids : ndarray, shape (T,)
    alpha : ndarray of float64, shape (T,)
        NaN for a topic without two labels on any item or without expected disagreement.

    Examples
    --------
    >>> nan = np.nan
    >>> x = np.array([[1, 1], [2, 1], [3, 3], [1, 2], [2, 2], [1, nan]])
    >>> ids, a = krippendorff_alpha_per_topic(x, ["a", "a", "a", "b", "b", "b"], "interval")
    >>> ids.tolist(), a.round(4).tolist()
    (['a', 'b'], [0.8276, 0.0])
    """
    values, counts = _alpha_counts(labels, level)
    ids, t = _topic_codes(topics, counts.shape[0])
    V, T = len(values), len(ids)
    m = counts.sum(axis=1)
    pair = m >= 2
    cu, tu = counts[pair].astype(np.float64), t[pair]
    per_item = (cu[:, :, None] * cu[:, None, :]
                - cu[:, :, None] * np.eye(V)[None]) / (m[pair] - 1.0)[:, None, None]
    flat = (tu[:, None] * (V * V) + np.arange(V * V)[None, :]).ravel()
    o = np.bincount(flat, weights=per_item.reshape(-1), minlength=T * V * V)
    return ids, _alpha_from_coincidences(o.reshape(T, V, V), values, level)


@dataclass(frozen=True)
class AgreementCI:
    """A mean of per-topic values with its bootstrap-over-topics percentile interval.

    Attributes
    ----------
    mean : float
        Mean over the topics with a defined value.
    low, high : float
        Percentile interval of the bootstrap distribution of that mean.
    topics : int
        Topics used (NaN values left out).
    confidence_level : float
    """

    mean: float
    low: float
    high: float
    topics: int
    confidence_level: float


def mean_kappa_ci(values: ArrayLike, *, confidence_level: float = 0.95, B: int = 1000,
                  seed: int = 0, study: str = "stats/agreement",
                  key: Sequence[int] = ()) -> AgreementCI:
    """Mean of per-topic agreement values (kappa, alpha) with a bootstrap-over-topics
    percentile interval.

    Topics are resampled with replacement (``B`` count matrices from
    :func:`irsim.sampling.topics.bootstrap_counts`, keyed by ``(seed, study, key)`` through
    :mod:`irsim.rng`, so the same seed gives the same interval everywhere); the resampled
    means are exact sums (:func:`irsim.stats.ci.mean_ci`, ``method="percentile"``). Topics
    whose value is NaN (no expected disagreement) are left out first, as the paper's means
    leave them out.

    Parameters
    ----------
    values : array_like, shape (topics,)
    confidence_level : float
    B : int
        Bootstrap samples.
    seed, study, key
        The random stream.

    Returns
    -------
    AgreementCI

    Examples
    --------
    >>> k = np.array([0.42, 0.31, np.nan, 0.55, 0.18, 0.47, 0.36])
    >>> ci = mean_kappa_ci(k, B=2000, seed=1)
    >>> round(ci.mean, 4), ci.topics, bool(ci.low < ci.mean < ci.high)
    (0.3817, 6, True)
    >>> mean_kappa_ci(k, B=2000, seed=1) == ci
    True
    """
    from irsim.stats.ci import mean_ci

    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise InputError(f"values must be 1-d (one per topic), got shape {v.shape}")
    v = v[~np.isnan(v)]
    if len(v) < 2:
        raise InputError(f"a bootstrap over topics needs at least 2 topics with a defined "
                         f"value, got {len(v)}")
    res = mean_ci(v[None, :], method="percentile", confidence_level=confidence_level, B=B,
                  seed=seed, study=study, key=tuple(key))
    ci = res.confidence_interval
    return AgreementCI(float(v.mean()), float(np.asarray(ci.low).ravel()[0]),
                       float(np.asarray(ci.high).ravel()[0]), len(v), float(confidence_level))


def joint_labels(*qrels: Qrels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (topic, docno) pairs judged in every one of several qrels, with their grades.

    Parameters
    ----------
    *qrels : Qrels
        Two or more :class:`~irsim.data.types.Qrels` (e.g. two assessors and the official
        judgments).

    Returns
    -------
    topic, docno : ndarray of object, shape (n,)
        The pairs judged by all, sorted by topic then docno.
    grades : ndarray of int64, shape (n, len(qrels))
        Column ``j``: the grades of ``qrels[j]``; an items x raters matrix for
        :func:`fleiss_kappa_labels` and :func:`krippendorff_alpha`, columns for
        :func:`cohen_kappa_per_topic`.

    Raises
    ------
    InputError
        Fewer than two qrels, a (topic, docno) judged twice in one qrels, or no pair
        judged by all.

    Examples
    --------
    >>> from irsim.data import Qrels
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q1 = Qrels(obj("t1", "t1", "t2"), obj("a", "b", "c"), np.array([2, 0, 1]))
    >>> q2 = Qrels(obj("t1", "t2", "t2"), obj("a", "c", "d"), np.array([3, 1, 0]))
    >>> t, d, g = joint_labels(q1, q2)
    >>> t.tolist(), d.tolist(), g.tolist()
    (['t1', 't2'], ['a', 'c'], [[2, 3], [1, 1]])
    """
    if len(qrels) < 2:
        raise InputError(f"joint_labels needs at least two qrels, got {len(qrels)}")
    frames = []
    for j, q in enumerate(qrels):
        df = pd.DataFrame({"topic": np.asarray(q.topic, dtype=object),
                           "docno": np.asarray(q.docno, dtype=object),
                           f"g{j}": np.asarray(q.grade, dtype=np.int64)})
        dup = df.duplicated(["topic", "docno"])
        if dup.any():
            r = df[dup].iloc[0]
            raise InputError(f"duplicate judgment for topic {r.topic!r}, docno {r.docno!r}",
                             file=getattr(q, "source", None) or f"qrels {j}")
        frames.append(df.set_index(["topic", "docno"]))
    joined = frames[0].join(frames[1:], how="inner").sort_index()
    if len(joined) == 0:
        raise InputError("the qrels share no judged (topic, docno) pair")
    topic = joined.index.get_level_values(0).to_numpy(dtype=object)
    docno = joined.index.get_level_values(1).to_numpy(dtype=object)
    return topic, docno, joined.to_numpy(dtype=np.int64)


def pooled_kappa_ci(counts: ArrayLike, weights: str | None = None, *,
                    confidence_level: float = 0.95, B: int = 1000, seed: int = 0,
                    study: str = "stats/agreement/pooled", key: Sequence[int] = ()
                    ) -> AgreementCI:
    """Kappa of the confusion matrix pooled over topics, with a bootstrap-over-topics
    percentile interval.

    Resample ``b`` draws topics with replacement (counts ``c_b`` of
    :func:`irsim.sampling.topics.bootstrap_counts`, keyed by ``(seed, study, key)``); its
    pooled confusion matrix ``sum_t c_bt * C_t`` (all resamples as one integer-valued
    product, exact in float64) gives its kappa (:func:`kappa_from_confusion`); resamples
    whose kappa is undefined are left out of the percentiles.

    Parameters
    ----------
    counts : array_like, shape (topics, L, L)
        Per-topic confusion matrices (:func:`confusion_per_topic`).
    weights : {None, "linear", "quadratic"}
    confidence_level, B, seed, study, key
        As :func:`mean_kappa_ci`.

    Returns
    -------
    AgreementCI
        ``mean`` is the pooled kappa of all topics.

    Examples
    --------
    >>> a = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0])
    >>> b = np.array([0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0])
    >>> _, c = confusion_per_topic(a, b, np.repeat(["q1", "q2", "q3", "q4"], 3))
    >>> ci = pooled_kappa_ci(c, B=500, seed=2)
    >>> bool(np.isclose(ci.mean, cohen_kappa(a, b))), ci.topics
    (True, 4)
    """
    c = np.asarray(counts)
    if c.ndim != 3 or c.shape[1] != c.shape[2]:
        raise InputError(f"counts must be (topics, L, L) confusion matrices, got {c.shape}")
    return _pooled_ci(c, lambda m: kappa_from_confusion(m, weights), confidence_level, B,
                      seed, study, key)


def _pooled_ci(c: np.ndarray, statistic, confidence_level: float, B: int, seed: int,
               study: str, key: Sequence[int]) -> AgreementCI:
    """`statistic` of the confusion matrices `c` (topics, L, L) summed over the topics, with
    the percentile interval of its bootstrap over topics (as :func:`pooled_kappa_ci`)."""
    from irsim.sampling.topics import bootstrap_counts
    from irsim.stats._validation import check_confidence_level, check_int

    T, L = c.shape[0], c.shape[1]
    if T < 2:
        raise InputError(f"a bootstrap over topics needs at least 2 topics, got {T}")
    level = check_confidence_level(confidence_level)
    B = check_int("B", B, minimum=1)
    value = float(statistic(c.sum(axis=0).astype(np.float64)))
    draws = bootstrap_counts(seed, study, T, 0, B, key=tuple(key))  # (B, T)
    pooled = (draws @ c.reshape(T, L * L).astype(np.float64)).reshape(B, L, L)
    star = statistic(pooled)
    star = star[~np.isnan(star)]
    if len(star) == 0:
        return AgreementCI(value, float("nan"), float("nan"), T, level)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(star, [tail, 1.0 - tail])
    return AgreementCI(value, float(low), float(high), T, level)


def pooled_alpha_ci(counts: ArrayLike, values: ArrayLike, level: str = "ordinal", *,
                    confidence_level: float = 0.95, B: int = 1000, seed: int = 0,
                    study: str = "stats/agreement/pooled", key: Sequence[int] = ()
                    ) -> AgreementCI:
    """Krippendorff's alpha of two raters' labels pooled over topics, with a
    bootstrap-over-topics percentile interval (the resamples of :func:`pooled_kappa_ci`
    with the same ``seed``, ``study`` and ``key``).

    With two raters and every item labelled by both, the coincidence matrix of a set of
    items is ``C + C^T`` (``C`` their confusion matrix, Krippendorff 2011), so a resample's
    pooled alpha comes from the sum of its topics' confusion matrices, all resamples at once
    as one integer-valued product (exact in float64); :func:`krippendorff_alpha` on the
    resampled items gives the same value. Resamples whose alpha is undefined (one value
    used) are left out of the percentiles.

    Parameters
    ----------
    counts : array_like, shape (topics, L, L)
        Per-topic confusion matrices (:func:`confusion_per_topic`) over the labels
        `values`, in that order.
    values : array_like, shape (L,)
        The labels of the rows and columns of `counts` (numbers; only their order matters
        for ``ordinal``).
    level : {"nominal", "ordinal", "interval", "ratio"}
    confidence_level, B, seed, study, key
        As :func:`mean_kappa_ci`.

    Returns
    -------
    AgreementCI
        ``mean`` is the pooled alpha of all topics.

    Examples
    --------
    >>> a = np.array([0, 1, 2, 0, 1, 0, 0, 1, 2, 2, 0, 0])
    >>> b = np.array([0, 1, 1, 0, 2, 1, 0, 1, 2, 0, 0, 0])
    >>> _, c = confusion_per_topic(a, b, np.repeat(["q1", "q2", "q3", "q4"], 3))
    >>> ci = pooled_alpha_ci(c, [0, 1, 2], B=500, seed=2)
    >>> bool(np.isclose(ci.mean, krippendorff_alpha(np.c_[a, b], "ordinal"))), ci.topics
    (True, 4)
    """
    c = np.asarray(counts)
    v = np.asarray(values, dtype=np.float64)
    if c.ndim != 3 or c.shape[1] != c.shape[2] or c.shape[1] != len(v):
        raise InputError(f"counts must be (topics, L, L) confusion matrices over the {len(v)} "
                         f"values, got {c.shape}")
    if level not in ALPHA_LEVELS:
        raise ConfigError(f"level must be one of {list(ALPHA_LEVELS)}, got {level!r}")
    return _pooled_ci(c, lambda m: _alpha_from_coincidences(m + np.swapaxes(m, -1, -2), v,
                                                             level),
                      confidence_level, B, seed, study, key)
