"""Synthetic collections with known truth, seeded through :func:`irsim.rng.rng_for`.

* :func:`synthetic_scores` -- a score matrix from a linear mixed model pushed through a link
  into [0, 1], with each system's *population* mean score known exactly. For studies that
  need ground truth: type I/II error rates, CI coverage, swap rates against the truth.
* :func:`synthetic_trec` -- document-level runs and graded qrels whose run quality is
  controllable, for corpus-level studies and metric kernels.

Every random draw is keyed by (seed, stream name, coordinates), and streams are keyed per
system (per run), so adding systems or topics leaves the existing values unchanged (nested
designs): ``synthetic_scores(systems=10, ...)`` is a sub-matrix of
``synthetic_scores(systems=20, ...)`` with the same seed and parameters.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, logit, ndtr

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError
from irsim.rng import check_seed, rng_for

#: Working memory a synthetic collection may take (irsim.kit.common.MEMORY_BUDGET: the
#: data layer imports no kit).
_MEMORY_BUDGET = 2 * 2**30

__all__ = ["LINKS", "SyntheticScores", "link_mean", "synthetic_scores", "synthetic_trec"]

#: Links from the latent scale to scores in [0, 1].
LINKS = ("clip", "logit")

_STREAM = "synthetic/scores"
_TREC = "synthetic/trec"


# ----------------------------------------------------------------------------- validation


def _count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _nonneg(name: str, value: object) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{name} must be finite and >= 0, got {value!r}")
    return v


# ----------------------------------------------------------------------------- score level


def link_mean(latent_mean: ArrayLike, sd: float, link: str = "clip") -> np.ndarray:
    """Exact mean score ``E[link(m + sd * Z)]``, ``Z ~ N(0, 1)``, elementwise in `latent_mean`.

    For ``link="clip"`` (``min(max(x, 0), 1)``) the mean has a closed form:
    ``1 - sd * (G((1 - m) / sd) - G(-m / sd))`` with ``G(z) = z Phi(z) + phi(z)`` (the
    antiderivative of the normal cdf). For ``link="logit"`` (``1 / (1 + exp(-x))``) it is a
    deterministic trapezoid rule on ``z`` in [-9, 9] with step 0.02, which for this analytic
    integrand is accurate to far below 1e-12.

    Examples
    --------
    >>> float(link_mean(0.5, 0.2, "clip"))      # symmetric around 0.5
    0.5
    >>> from scipy.stats import norm      # E[max(Z, 0)] - E[max(Z - 1, 0)]
    >>> bool(np.isclose(link_mean(0.0, 1.0, "clip"), norm.pdf(0) - norm.pdf(1) + norm.sf(1)))
    True
    >>> round(float(link_mean(0.0, 1.5, "logit")), 12)
    0.5
    """
    if link not in LINKS:
        raise ConfigError(f"link must be one of {', '.join(LINKS)}, got {link!r}")
    m = np.asarray(latent_mean, dtype=np.float64)
    sd = float(sd)
    if sd == 0:
        return np.clip(m, 0.0, 1.0) if link == "clip" else expit(m)
    if link == "clip":
        def g(z: np.ndarray) -> np.ndarray:
            return z * ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        out = 1.0 - sd * (g((1.0 - m) / sd) - g(-m / sd))
        return np.clip(out, 0.0, 1.0)
    z = np.linspace(-9.0, 9.0, 901)
    w = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (z[1] - z[0])
    w[[0, -1]] *= 0.5
    flat = m.reshape(-1, 1)
    out = np.empty(flat.shape[0])
    for lo in range(0, flat.shape[0], 4096):  # bounded memory for huge inputs
        out[lo:lo + 4096] = expit(flat[lo:lo + 4096] + sd * z) @ w
    return out.reshape(m.shape)


@dataclass(frozen=True)
class SyntheticScores:
    """A synthetic score matrix and the truth behind it.

    Unpacks as ``matrix, true_means = synthetic_scores(...)``.

    Attributes
    ----------
    matrix : ScoreMatrix
        Shape (metrics, systems, topics).
    true_means : ndarray, shape (metrics, systems)
        Each system's population mean score: the expectation over topics and noise, given
        the system effects (see :func:`synthetic_scores`).
    system_effects : ndarray, shape (metrics, systems)
        The latent system effects ``a`` (on the latent scale).
    """

    matrix: ScoreMatrix
    true_means: np.ndarray
    system_effects: np.ndarray

    def __iter__(self) -> Iterator[ScoreMatrix | np.ndarray]:
        yield self.matrix
        yield self.true_means


def _component(
    seed: int, kind: str, k: int, n: int, sd: float
) -> np.ndarray:
    """Component `k` (0 = shared by all metrics) of length n, N(0, sd^2)."""
    return sd * rng_for(seed, f"{_STREAM}/{kind}", k).standard_normal(n)


def synthetic_scores(
    *,
    systems: int = 30,
    topics: int = 50,
    metrics: Sequence[str] = ("synthetic",),
    seed: int = 0,
    mu: float | Sequence[float] = 0.3,
    system_sd: float = 0.05,
    topic_sd: float = 0.15,
    noise_sd: float = 0.08,
    metric_corr: float = 0.8,
    link: str = "clip",
    system_effects: ArrayLike | None = None,
) -> SyntheticScores:
    """A synthetic score matrix from a mixed model, with known per-system population means.

    The score of system ``s`` on topic ``t`` under metric ``k`` is::

        x[k, s, t] = link(c_k + a[k, s] + b[k, t] + e[k, s, t])

    with ``a ~ N(0, system_sd^2)`` (system effect), ``b ~ N(0, topic_sd^2)`` (topic
    difficulty) and ``e ~ N(0, noise_sd^2)`` (system-topic interaction), all independent.
    ``c_k = mu`` for ``link="clip"`` (the latent scale is the score scale, clipped to
    [0, 1]: AP-like point masses at 0 and 1) and ``c_k = logit(mu)`` for ``link="logit"``
    (the sds are then in logit units; scores lie strictly in (0, 1)).

    Several metrics are correlated variants: each of ``a``, ``b`` and ``e`` for metric ``k``
    is ``sqrt(metric_corr) * shared + sqrt(1 - metric_corr) * own_k``, so every metric has
    the same marginal model and the latent components of two metrics have correlation
    `metric_corr`.

    ``true_means[k, s] = E_{b, e}[x[k, s, t]] = link_mean(c_k + a[k, s],
    sqrt(topic_sd^2 + noise_sd^2), link)``: the mean over the *population* of topics,
    conditional on the drawn system effects. It is computed exactly (closed form for
    ``clip``, fine quadrature for ``logit``, see :func:`link_mean`), never from the sample.

    Parameters
    ----------
    systems, topics : int
        Matrix size (>= 1).
    metrics : sequence of str
        Metric ids (unique); one correlated variant each.
    seed : int
        Global seed; streams ``synthetic/scores/{systems,topics,noise}``.
    mu : float or sequence of float
        Location of the median system on the score scale, one per metric or shared.
    system_sd, topic_sd, noise_sd : float
        Standard deviations of the three effects (latent scale), >= 0.
    metric_corr : float
        Correlation in [0, 1] between the latent components of different metrics.
    link : {"clip", "logit"}
    system_effects : array-like, shape (systems,) or (metrics, systems), optional
        Use these latent system effects instead of drawing them (e.g. equal effects to
        simulate the null hypothesis, or a fixed difference for power).

    Returns
    -------
    SyntheticScores
        ``matrix`` (systems ``sys1..``, topics ``1..``), ``true_means``, ``system_effects``.

    Examples
    --------
    >>> res = synthetic_scores(systems=4, topics=10, metrics=("AP", "P@10"), seed=1)
    >>> res.matrix.shape, res.true_means.shape
    ((2, 4, 10), (2, 4))
    >>> bool(((res.matrix.values >= 0) & (res.matrix.values <= 1)).all())
    True
    >>> m, true_means = synthetic_scores(systems=3, topics=5, system_effects=[0.0, 0.0, 0.1])
    >>> bool(true_means[0, 0] == true_means[0, 1] < true_means[0, 2])
    True
    """
    systems = _count("systems", systems)
    topics = _count("topics", topics)
    seed = check_seed(seed)
    if isinstance(metrics, str):
        metrics = (metrics,)
    metrics = tuple(str(m) for m in metrics)
    if not metrics or len(set(metrics)) != len(metrics) or not all(metrics):
        raise ConfigError(f"metrics must be non-empty, unique names, got {metrics!r}")
    nm = len(metrics)
    system_sd = _nonneg("system_sd", system_sd)
    topic_sd = _nonneg("topic_sd", topic_sd)
    noise_sd = _nonneg("noise_sd", noise_sd)
    rho = _nonneg("metric_corr", metric_corr)
    if rho > 1:
        raise ConfigError(f"metric_corr must be in [0, 1], got {metric_corr!r}")
    if link not in LINKS:
        raise ConfigError(f"link must be one of {', '.join(LINKS)}, got {link!r}")
    mus = np.broadcast_to(np.asarray(mu, dtype=np.float64), (nm,)) if np.ndim(mu) == 0 \
        else np.asarray(mu, dtype=np.float64)
    if mus.shape != (nm,) or not np.isfinite(mus).all():
        raise ConfigError(f"mu must be a number or one number per metric ({nm}), got {mu!r}")
    if link == "logit":
        if not ((mus > 0) & (mus < 1)).all():
            raise ConfigError(f"mu must be in (0, 1) for link='logit', got {mu!r}")
        centre = logit(mus)
    else:
        centre = mus.copy()

    w_shared, w_own = math.sqrt(rho), math.sqrt(1.0 - rho)

    def mix(kind: str, n: int, sd: float) -> np.ndarray:
        shared = _component(seed, kind, 0, n, sd)
        return np.stack([w_shared * shared + w_own * _component(seed, kind, k + 1, n, sd)
                         for k in range(nm)])

    if system_effects is None:
        a = mix("systems", systems, system_sd)
    else:
        a = np.asarray(system_effects, dtype=np.float64)
        if a.ndim == 1:
            a = np.broadcast_to(a, (nm, a.shape[0]))
        if a.shape != (nm, systems) or not np.isfinite(a).all():
            raise ConfigError(f"system_effects must be finite with shape ({systems},) or "
                              f"({nm}, {systems}), got shape {np.shape(system_effects)}")
        a = a.copy()
    b = mix("topics", topics, topic_sd)

    def noise(k: int) -> np.ndarray:
        # one stream per (component, system): adding systems or topics keeps existing cells
        return np.stack([rng_for(seed, f"{_STREAM}/noise", k, s).standard_normal(topics)
                         for s in range(systems)]) * noise_sd

    shared_e = noise(0)
    latent = np.empty((nm, systems, topics))
    for k in range(nm):
        latent[k] = (centre[k] + a[k][:, None] + b[k][None, :]
                     + w_shared * shared_e + w_own * noise(k + 1))
    values = np.clip(latent, 0.0, 1.0) if link == "clip" else expit(latent)
    true_means = link_mean(centre[:, None] + a, math.hypot(topic_sd, noise_sd), link)
    source = (f"synthetic_scores(seed={seed}, systems={systems}, topics={topics}, "
              f"link={link})")
    matrix = ScoreMatrix(values, metrics, [f"sys{i + 1}" for i in range(systems)],
                         [str(t + 1) for t in range(topics)], source=source)
    a.setflags(write=False)
    true_means.setflags(write=False)
    return SyntheticScores(matrix, true_means, a)


# ----------------------------------------------------------------------------- document level


def synthetic_trec(
    *,
    runs: int = 20,
    topics: int = 50,
    docs_per_topic: int = 1000,
    depth: int = 1000,
    grades: Sequence[int] = (0, 1, 2, 3),
    relevant_rate: float = 0.05,
    quality: float | Sequence[float] | None = None,
    noise_sd: float = 1.0,
    quality_sd: float = 0.0,
    topic_sd: float = 0.0,
    seed: int = 0,
) -> tuple[Runs, Qrels]:
    """Graded qrels and ranked runs whose quality is controllable.

    Each topic ``t`` (ids ``"1".."topics"``) has `docs_per_topic` documents ``d{t}-{k}``
    (``k = 1..docs_per_topic``), all judged. A document is relevant with probability
    `relevant_rate`; a relevant document's grade is one of the positive `grades`, each
    level half as likely as the one below (3 levels: 4/7, 2/7, 1/7); the others get the
    largest non-positive grade. A topic left without relevant documents gets one (its
    document with the smallest uniform draw, at the lowest positive grade), so recall-based
    metrics are defined on every topic.

    Run ``r`` (named ``run{r+1}``) scores every document of a topic as
    ``quality[r] * gain + noise_sd * N(0, 1)`` (gain = the grade if positive, else 0) and
    retrieves the `depth` best. Higher quality puts relevant and high-grade documents
    earlier; quality 0 ranks at random. The ``score`` column holds ``depth, depth-1, ..., 1``
    down each ranking: distinct, exactly representable in float32, so every tool (trec_eval,
    pytrec_eval) ranks the same way.

    Parameters
    ----------
    runs, topics, docs_per_topic : int
        Sizes (>= 1).
    depth : int
        Documents retrieved per (run, topic), ``1 <= depth <= docs_per_topic``.
    grades : sequence of int
        Relevance levels, at least one <= 0 and one > 0.
    relevant_rate : float
        Probability that a document is relevant, in (0, 1].
    quality : float or sequence of float, optional
        Per-run quality (>= 0); default evenly spaced from 0 to 2.
    noise_sd : float
        Sd of the per-document score noise (> 0).
    quality_sd : float
        System x topic interaction: run ``r`` uses quality
        ``quality[r] * exp(quality_sd * N(0, 1))`` on each topic (stream
        ``synthetic/trec/interaction``, keyed by run), so that which run is better varies
        from topic to topic as in real collections; 0 (default) keeps quality fixed.
    topic_sd : float
        Topic difficulty shared by all runs: every run's quality on topic ``t`` is also
        multiplied by ``exp(topic_sd * N(0, 1))`` (stream ``synthetic/trec/topic``); hard
        topics are hard for everyone, which is what makes paired tests stronger than
        unpaired ones. 0 (default) keeps topics alike.
    seed : int
        Global seed; streams ``synthetic/trec/qrels`` and ``synthetic/trec/run`` (keyed by
        run index, so adding runs keeps the existing ones).

    Returns
    -------
    (Runs, Qrels)

    Examples
    --------
    >>> runs, qrels = synthetic_trec(runs=3, topics=2, docs_per_topic=50, depth=10, seed=1)
    >>> runs.names, len(runs), len(qrels)
    (('run1', 'run2', 'run3'), 60, 100)
    >>> runs.topic[0], runs.docno[0].startswith("d1-"), runs.score[:3].tolist()
    ('1', True, [10.0, 9.0, 8.0])
    >>> set(qrels.grade.tolist()) <= {0, 1, 2, 3}
    True
    """
    runs = _count("runs", runs)
    topics = _count("topics", topics)
    docs = _count("docs_per_topic", docs_per_topic)
    depth = _count("depth", depth)
    _check_trec_size(runs, topics, docs, depth)
    seed = check_seed(seed)
    positive, nonpos = _grade_levels(grades)
    rate = _nonneg("relevant_rate", relevant_rate)
    if not 0 < rate <= 1:
        raise ConfigError(f"relevant_rate must be in (0, 1], got {relevant_rate!r}")
    noise_sd = _nonneg("noise_sd", noise_sd)
    quality_sd = _nonneg("quality_sd", quality_sd)
    topic_sd = _nonneg("topic_sd", topic_sd)
    if noise_sd == 0:
        raise ConfigError("noise_sd must be > 0 (scores must be continuous)")
    q = _run_quality(quality, runs)

    grade = _trec_grades(seed, topics, docs, rate, positive, nonpos)
    gain = np.where(grade > 0, grade, 0).astype(np.float64)
    topic_ids = np.array([str(t + 1) for t in range(topics)], dtype=object)
    docno = np.strings.add(
        np.strings.add("d", topic_ids.astype(np.dtypes.StringDType()))[:, None],
        np.strings.add("-", np.arange(1, docs + 1).astype(np.dtypes.StringDType()))[None, :],
    ).astype(object)
    qrels = Qrels(
        topic=np.repeat(topic_ids, docs),
        docno=docno.reshape(-1),
        grade=grade.reshape(-1).astype(np.int64),
        source=f"synthetic_trec(seed={seed})",
    )
    ranked = _trec_rankings(seed, q, gain, depth, noise_sd=noise_sd, quality_sd=quality_sd,
                            topic_sd=topic_sd)
    n = runs * topics * depth
    topic_col = np.empty(n, dtype=object)
    topic_col.reshape(runs, topics, depth)[...] = topic_ids[None, :, None]
    out_runs = Runs(
        names=tuple(f"run{r + 1}" for r in range(runs)),
        run=np.repeat(np.arange(runs, dtype=np.int32), topics * depth),
        topic=topic_col,
        docno=docno.reshape(-1)[ranked.reshape(-1)],
        score=np.tile(np.arange(depth, 0, -1, dtype=np.float64), runs * topics),
        sources=tuple(f"synthetic_trec(seed={seed})" for _ in range(runs)),
    )
    return out_runs, qrels


def _check_trec_size(runs: int, topics: int, docs: int, depth: int) -> None:
    """`depth` at most `docs`; the ranked lists (int64), their docno references and scores,
    the per-run draws of topics x docs: refused before anything is allocated
    (irsim.kit.common.MEMORY_BUDGET)."""
    if depth > docs:
        raise ConfigError(f"depth ({depth}) must be <= docs_per_topic ({docs})")
    need = 8.0 * (3 * runs * topics * depth + 4 * topics * docs)
    if need > _MEMORY_BUDGET:
        raise ConfigError(f"the synthetic collection ({runs} runs x {topics} topics x {depth} "
                          f"documents) would need about {need / 2**30:.1f} GiB of memory, over "
                          f"the {_MEMORY_BUDGET / 2**30:g} GiB budget: lower collection.runs, "
                          "collection.topics or collection.depth")


def _grade_levels(grades: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """The positive relevance levels (sorted) and the non-positive ones; one of each needed."""
    try:
        levels = sorted({int(g) for g in grades})
    except (TypeError, ValueError):
        raise ConfigError(f"grades must be integers, got {grades!r}") from None
    positive = np.array([g for g in levels if g > 0], dtype=np.int64)
    nonpos = [g for g in levels if g <= 0]
    if positive.size == 0 or not nonpos:
        raise ConfigError(f"grades need at least one level <= 0 and one > 0, got {grades!r}")
    return positive, nonpos


def _run_quality(quality: float | Sequence[float] | None, runs: int) -> np.ndarray:
    """One quality per run (default evenly spaced from 0 to 2), each finite and >= 0."""
    if quality is None:
        return np.linspace(0.0, 2.0, runs)
    q = np.asarray(quality, dtype=np.float64)
    q = np.full(runs, float(q)) if q.ndim == 0 else q
    if q.shape != (runs,) or not np.isfinite(q).all() or (q < 0).any():
        raise ConfigError(f"quality must be a number >= 0 or one per run ({runs}), "
                          f"got {quality!r}")
    return q


def _trec_grades(seed: int, topics: int, docs: int, rate: float, positive: np.ndarray,
                 nonpos: list[int]) -> np.ndarray:
    """The (topics, docs) grades: one uniform per (topic, doc) decides relevance and grade
    (prefix-stable in topics); a topic without a relevant document gets one."""
    u = rng_for(seed, f"{_TREC}/qrels").random((topics, docs))
    probs = 0.5 ** np.arange(positive.size)
    cum = np.cumsum(probs / probs.sum())
    cum[-1] = 1.0
    relevant = u < rate
    level = np.minimum(np.searchsorted(cum, u / rate, side="right"), positive.size - 1)
    grade = np.where(relevant, positive[level], max(nonpos))
    empty = ~relevant.any(axis=1)
    if empty.any():
        rows = np.flatnonzero(empty)
        grade[rows, np.argmin(u[rows], axis=1)] = positive[0]
    return grade


def _trec_rankings(seed: int, q: np.ndarray, gain: np.ndarray, depth: int, *,
                   noise_sd: float, quality_sd: float, topic_sd: float) -> np.ndarray:
    """(runs, topics, depth) flat indices into the (topics, docs) docno table: each run's
    `depth` best documents per topic. One stream per run; a loop over runs only (each step
    is vectorised over topics x docs)."""
    runs, (topics, docs) = len(q), gain.shape
    ranked = np.empty((runs, topics, depth), dtype=np.int64)
    offset = (np.arange(topics, dtype=np.int64) * docs)[:, None]
    difficulty = rng_for(seed, f"{_TREC}/topic").standard_normal(topics)
    for r in range(runs):
        s = rng_for(seed, f"{_TREC}/run", r).standard_normal((topics, docs))
        s *= noise_sd
        if quality_sd > 0 or topic_sd > 0:
            jitter = rng_for(seed, f"{_TREC}/interaction", r).standard_normal(topics)
            factor = np.exp(quality_sd * jitter + topic_sd * difficulty)
            s += (q[r] * factor)[:, None] * gain
        else:
            s += q[r] * gain
        s *= -1.0  # ascending sort of -score = descending score
        if depth < docs:
            top = np.argpartition(s, depth - 1, axis=1)[:, :depth]
            order = np.argsort(np.take_along_axis(s, top, axis=1), axis=1)
            ranked[r] = np.take_along_axis(top, order, axis=1) + offset
        else:
            # continuous scores: exact ties have probability ~1e-10 per topic, so the
            # (unstable, fast) sort gives the one correct order on every machine
            ranked[r] = np.argsort(s, axis=1) + offset
    return ranked
