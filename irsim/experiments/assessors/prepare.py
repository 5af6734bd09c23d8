"""The assessors study's prepared data: the checks of the parameters against the qrels, the
composites of topic groups, the label pairs, every qrels' scores (one vectorised evaluation)
and the simulated assessors' model (:class:`AssessorData`, what the kernel reads)."""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from irsim.data.matrix import ScoreMatrix
from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, param, unknown_name
from irsim.kit.common import BayesRules, check_resamples
from irsim.kit.qrels_set import AssessorInput
from irsim.metrics.multi import UNJUDGED_RULES, composite_qrels, evaluate_many
from irsim.params import Choice
from irsim.simulate.assessor import AssessorModel, depth_bins, fit_assessor_model
from irsim.stats import agreement as agr
from irsim.stats.multiple import CORRECTIONS
from irsim.stats.registry import TESTS

if TYPE_CHECKING:
    from irsim.experiments.assessors import Config

log = logging.getLogger(__name__)

__all__ = ["LabelPair", "SimSetup", "AssessorData", "composites", "parallel_composites",
           "best_ranks", "check_config", "prepare", "RELABEL_RULES", "KappaTopics",
           "FleissReference", "LabelPairs", "AUTO_ALL_PAIRS", "pair_only_topics",
           "reference_raters", "label_pairs", "sharing"]


class Relabel(Choice):
    """How a simulated assessor relabels the reference (``experiment.simulate_relabel``)."""

    all = "all"
    judged = "judged"


RELABEL_RULES = Relabel.values()


class KappaTopics(Choice):
    """Which topics a label pair's agreement is computed on (``experiment.kappa_topics``)."""

    all = "all"
    pair_only = "pair_only"


class LabelPairs(Choice):
    """Which label pairs are compared (``experiment.label_pairs``)."""

    auto = "auto"
    all = "all"
    reference = "reference"


#: ``label_pairs=auto`` compares every two given qrels up to this many qrels besides the
#: reference (300 pairs), and only each qrels with the reference beyond.
AUTO_ALL_PAIRS = 25


class FleissReference(Choice):
    """How often the reference's label counts in ``fleiss_reference``
    (``experiment.fleiss_reference``)."""

    once = "once"
    per_assessor = "per_assessor"


@dataclass(frozen=True)
class LabelPair:
    """Two qrels' jointly judged labels."""

    a: str
    b: str
    topic: np.ndarray  # (n,) topic ids
    grades: np.ndarray  # (n, 2)
    #: Topic ids and labels (items x raters: a, b, then the reference once or twice) of the
    #: passages a, b and the reference all judged; None for a pair with the reference.
    fleiss_topic: np.ndarray | None = None
    fleiss_labels: np.ndarray | None = None
    #: The pair's random-stream key: its position among the label pairs of
    #: ``label_pairs=all`` (the same whichever pairs are compared).
    key: int = 0

    def restricted(self, keep: set) -> LabelPair | None:
        """The pair on the topics in `keep` only (None when none is left)."""
        rows = np.isin(self.topic, list(keep))
        if not rows.any():
            return None
        ft, fl = self.fleiss_topic, self.fleiss_labels
        if ft is not None:
            frows = np.isin(ft, list(keep))
            ft, fl = (ft[frows], fl[frows]) if frows.any() else (None, None)
        return LabelPair(self.a, self.b, self.topic[rows], self.grades[rows], ft, fl,
                         self.key)


def pair_only_topics(qrels: Mapping[str, Qrels], reference: str) -> set:
    """Topics judged by at most two of the given qrels other than `reference`: for two
    assessors, the topics judged by exactly the pair (``kappa_topics=pair_only``; the SIGIR
    2025 paper's "topics judged by exactly two assessors").

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = lambda *t: Qrels(obj(*t), obj(*("d",) * len(t)), np.zeros(len(t), np.int64))
    >>> qs = {"ref": q("1", "2"), "a": q("1", "2"), "b": q("1", "2"), "c": q("2")}
    >>> sorted(pair_only_topics(qs, "ref"))
    ['1']
    """
    judged: dict[Any, int] = {}
    for name, q in qrels.items():
        if name != reference:
            for t in set(np.asarray(q.topic).tolist()):
                judged[t] = judged.get(t, 0) + 1
    return {t for t, k in judged.items() if k <= 2}


def reference_raters(a: Qrels, b: Qrels, ref: Qrels, rule: str
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Topic ids and the items x raters labels of the passages `a`, `b` and `ref` all
    judged: columns a, b and the reference once (``rule="once"``) or once per assessor
    (``"per_assessor"``: a, b, ref, ref, as the SIGIR 2025 paper's notebook counts it);
    ``(None, None)`` when no passage was judged by all three."""
    try:
        t, _, g = agr.joint_labels(a, b, ref)
    except InputError as err:
        if "share no" in err.problem:
            return None, None
        raise
    return t, (g if rule == FleissReference.once else g[:, [0, 1, 2, 2]])


@dataclass(frozen=True)
class SimSetup:
    """What the simulated assessors need (known truth by simulation).

    Attributes
    ----------
    name : str
        The qrels the model is fitted from.
    model : AssessorModel
    base : Qrels
        The reference's judgments of `name`'s topics (relabelled in every trial).
    relabel : ndarray of bool
        Which judgments of `base` a trial relabels.
    joint : ndarray of int
        Positions in `base` of the passages the model was fitted on (the trials' kappa).
    topics : tuple of str
        The topics compared (the reference's scored topics among `name`'s).
    reference : ndarray (metrics, systems, topics)
        The reference's scores on `topics`.
    sizes : tuple of int
        Topic-set sizes of the planning table (ascending; all topics among them; larger
        sizes are topic bootstraps).
    bins : ndarray of int
        Depth bin of every judgment of `base` (all 0 without depth bins).
    """

    name: str
    model: AssessorModel
    base: Qrels
    relabel: np.ndarray
    joint: np.ndarray
    topics: tuple[str, ...]
    reference: np.ndarray
    sizes: tuple[int, ...]
    bins: np.ndarray


@dataclass(frozen=True)
class AssessorData:
    """What the kernel reads.

    Attributes
    ----------
    reference : str
    others : tuple of str
        The qrels compared with the reference (given ones, then composites).
    metrics, systems : tuple of str
    scores : dict of str to ScoreMatrix
        Per-topic scores under every qrels (the reference over all its topics).
    pairs : tuple of LabelPair
        The label pairs.
    scale : ndarray
        Grade scale.
    rel : int
    """

    reference: str
    others: tuple[str, ...]
    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    scores: dict[str, ScoreMatrix]
    pairs: tuple[LabelPair, ...]
    scale: np.ndarray
    rel: int
    source: AssessorInput
    g_levels: tuple[str, ...] = ()
    g_topics: tuple[str, ...] = ()
    sim: SimSetup | None = None

    def compared(self, j: int, m: int) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """Reference and other scores (systems x topics) of other qrels `j`, metric `m`, on
        the other's topics."""
        other = self.scores[self.others[j]]
        ref = self.scores[self.reference]
        col = [ref.topics.index(t) for t in other.topics]
        return ref.values[m][:, col], other.values[m], other.topics

    def describe(self) -> dict:
        return {**self.source.describe(), "reference": self.reference,
                "compared": list(self.others)}

    def g_scores(self) -> np.ndarray:
        """Scores of the G-study, shape (metrics, systems, topics, assessors): every level
        of the assessor facet on the common topics (empty without a G-study)."""
        if not self.g_levels:
            return np.empty((len(self.metrics), len(self.systems), 0, 0))
        cols = []
        for q in self.g_levels:
            sm = self.scores[q]
            pos = {t: i for i, t in enumerate(sm.topics)}
            cols.append(np.asarray(sm.values)[:, :, [pos[t] for t in self.g_topics]])
        return np.stack(cols, axis=-1)


def composites(qrels: Mapping[str, Qrels], groups: Sequence[Sequence[str]]
               ) -> dict[str, Qrels]:
    """Every qrels made of one member per topic group, over the groups' topics.

    A topic judged by several groups is taken from the first group that judged it.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = lambda t, g: Qrels(obj(*t), obj(*("d",) * len(t)), np.array(g))
    >>> qs = {"a": q(["1", "3"], [1, 1]), "b": q(["1", "3"], [0, 0]),
    ...       "c": q(["2", "3"], [2, 2]), "d": q(["2", "3"], [3, 3])}
    >>> mix = composites(qs, [["a", "b"], ["c", "d"]])
    >>> list(mix), mix["mix12"].topic.tolist(), mix["mix12"].grade.tolist()
    (['mix11', 'mix12', 'mix21', 'mix22'], ['1', '2', '3'], [1, 3, 1])
    """
    topics_of = [set().union(*(set(np.asarray(qrels[m].topic).tolist()) for m in g))
                 for g in groups]
    owner: dict[str, int] = {}
    for gi, ts in enumerate(topics_of):
        for t in sorted(ts):
            owner.setdefault(t, gi)
    sep = "-" if any(len(g) > 9 for g in groups) else ""
    out = {}
    for picks in itertools.product(*(range(len(g)) for g in groups)):
        topic, docno, grade = [], [], []
        for gi, (g, k) in enumerate(zip(groups, picks, strict=True)):
            q = qrels[g[k]]
            t = np.asarray(q.topic, dtype=object)
            keep = np.array([owner[x] == gi for x in t.tolist()], dtype=bool)
            topic.append(t[keep])
            docno.append(np.asarray(q.docno, dtype=object)[keep])
            grade.append(np.asarray(q.grade, dtype=np.int64)[keep])
        name = "mix" + sep.join(str(k + 1) for k in picks)
        t, d, g = np.concatenate(topic), np.concatenate(docno), np.concatenate(grade)
        order = np.lexsort((d, t))
        out[name] = Qrels(t[order], d[order], g[order], source=name)
    return out


def _restrict(q: Qrels, topics: set[str]) -> Qrels:
    keep = np.isin(np.asarray(q.topic, dtype=object), list(topics))
    return Qrels(np.asarray(q.topic, dtype=object)[keep], np.asarray(q.docno, dtype=object)[keep],
                 np.asarray(q.grade)[keep], source=q.source)


def _check_names(config: Config, qrels: Mapping[str, Qrels]) -> None:
    if config.reference not in qrels:
        raise unknown_name(f"{param('reference')} (a name of the qrels)",
                           str(config.reference), list(qrels))
    if len(qrels) < 2:
        raise ConfigError("the study needs the reference and at least one other qrels")
    for g in config.groups or ():
        for m in g:
            if m not in qrels:
                raise unknown_name(f"qrels in {param('groups')}", str(m), list(qrels))
            if m == config.reference:
                raise ConfigError(f"{param('groups')} must not hold the reference "
                                  f"{config.reference!r}")
        if len(g) == 0:
            raise ConfigError(f"{param('groups')} holds an empty group")


def check_config(config: Config) -> None:
    """Check the parameters that need no data (one clear error each)."""
    BayesRules.of(config)  # the Bayesian options, before anything is read
    if config.unjudged not in UNJUDGED_RULES:
        raise unknown_name(param("unjudged") + " rule", str(config.unjudged), UNJUDGED_RULES)
    for t in config.tests:
        if t not in TESTS:
            raise unknown_name(f"test in {param('tests')}", str(t), TESTS)
    for c in config.corrections:
        if c not in CORRECTIONS:
            raise unknown_name(f"correction in {param('corrections')}", str(c), CORRECTIONS)
    if not config.tests or not config.corrections or not config.metrics:
        raise ConfigError(f"{param('tests')}, {param('corrections')} and {param('metrics')} "
                          "must not be empty")
    if config.pvalue not in ("plus_one", "count"):
        raise unknown_name(param("pvalue") + " mode", str(config.pvalue), ("plus_one", "count"))
    # a Monte Carlo p-value moves in steps of 1/test_B
    if config.test_B is not None:  # the default (None) is chosen large enough in make
        check_resamples(int(config.test_B), [float(config.alpha)], param("test_B"),
                        param("alpha"), tests=list(config.tests))
    for name, rules in (("kappa_topics", KappaTopics.values()),
                        ("fleiss_reference", FleissReference.values()),
                        ("label_pairs", LabelPairs.values())):
        if getattr(config, name) not in rules:
            raise unknown_name(param(name) + " rule", str(getattr(config, name)), rules)
    if config.simulate_relabel not in RELABEL_RULES:
        raise unknown_name(param("simulate_relabel") + " rule", str(config.simulate_relabel),
                           RELABEL_RULES)
    if config.simulate_depth:
        edges = list(config.simulate_depth)
        if (any(isinstance(e, bool) or not isinstance(e, int) for e in edges)
                or edges[0] < 1 or bool(np.any(np.diff(edges) <= 0))):
            raise ConfigError(f"{param('simulate_depth')} must be increasing ranks >= 1 "
                              f"(bin edges, e.g. [10, 100]), got {config.simulate_depth!r}")
    # the bounds of single fields (alpha, B, test_B, top_k, the trials, the prior, the
    # targets, planning_probability, simulate_concentration) are on the fields (Config)


def _check_qrels(ref_name: str, ref: Qrels, name: str, q: Qrels, scale: np.ndarray) -> None:
    src = q.source or name
    g = np.asarray(q.grade)
    bad = ~np.isin(g, scale)
    if bad.any():
        raise InputError(f"grade {int(g[bad][0])} is outside the scale {scale.tolist()} "
                         f"(experiment scale)", file=src)
    ref_topics = set(np.asarray(ref.topic).tolist())
    other = set(np.asarray(q.topic).tolist()) - ref_topics
    if other:
        raise InputError(f"topic {sorted(other)[0]!r} is not judged in the reference "
                         f"{ref_name!r}", file=src)


def prepare(config: Config, data: AssessorInput) -> AssessorData:
    """Check `config` against `data`, build the composites and label pairs, evaluate
    every qrels once and set up the simulation: what the kernel reads."""
    qrels = dict(data.qrels)
    if len(data.runs.names) < 2:  # rank agreement (Kendall's tau) needs two systems
        raise InputError(f"{len(data.runs.names)} run given: the assessors study compares "
                         f"the ranking of the runs under each qrels and needs at least 2 runs")
    _check_names(config, qrels)
    ref_name = config.reference
    ref = qrels[ref_name]
    if config.scale is not None:
        scale = np.unique(np.asarray(list(config.scale), dtype=np.int64))
        if len(scale) < 2:
            raise ConfigError(f"{param('scale')} needs at least two grades")
    else:
        g = np.asarray(ref.grade, dtype=np.int64)
        scale = np.arange(int(g.min()), int(g.max()) + 1)
    _check_qrels(ref_name, ref, ref_name, ref, scale)
    given = [n for n in qrels if n != ref_name]
    for n in given:
        _check_qrels(ref_name, ref, n, qrels[n], scale)
    if not scale.min() < config.rel <= scale.max():
        raise ConfigError(f"{param('rel')}={config.rel} does not split the scale "
                          f"{scale.tolist()} into relevant and non-relevant grades")
    mixes = composites(qrels, config.groups) if config.groups else {}
    clash = sorted(set(mixes) & set(qrels))
    if clash:
        raise ConfigError(f"qrels {clash[0]!r} has the name of a composite built from "
                          f"{param('groups')} ({', '.join(clash)}): rename it (composites are "
                          "named mix<member of each group>)")
    labelled = {**qrels, **mixes}

    pairs = label_pairs(config, qrels, mixes, given)

    # scores: the reference over all its topics, each other qrels over its own topics
    others = given + list(mixes)
    evalq = {ref_name: ref}
    for n in others:
        q = labelled[n]
        topics = set(np.asarray(q.topic).tolist())
        evalq[n] = composite_qrels(_restrict(ref, topics), q, unjudged=config.unjudged,
                                   source=q.source or n)
    cond = others if config.unjudged == "condensed" else ()
    try:
        scores = evaluate_many(data.runs, evalq, list(config.metrics), depth=data.depth,
                               missing="drop", condensed=cond)
    except ConfigError as err:
        raise ConfigError(f"{param('metrics')}: {err.problem}") from None
    levels, common = _g_levels(config, qrels, others, scores)
    sim = _sim_setup(config, ref, labelled, others, list(mixes), scores[ref_name], scale,
                     data) if int(config.simulate_trials) > 0 else None
    return AssessorData(ref_name, tuple(others), tuple(scores[ref_name].metrics),
                        tuple(data.runs.names), scores, tuple(pairs), scale, int(config.rel),
                        data, levels, common, sim)


def _all_pairs(config: Config, given: Sequence[str]) -> bool:
    """Whether every two given qrels are compared (``label_pairs``)."""
    if config.label_pairs == LabelPairs.auto:
        return len(given) <= AUTO_ALL_PAIRS
    return config.label_pairs == LabelPairs.all


def label_pairs(config: Config, qrels: Mapping[str, Qrels], mixes: Mapping[str, Qrels],
                given: Sequence[str]) -> list[LabelPair]:
    """The label pairs: each given qrels with the reference, every two given qrels that
    share a judged pair (``label_pairs``: all, or auto up to :data:`AUTO_ALL_PAIRS`; the
    only part quadratic in the number of qrels), then each composite with the reference;
    with ``kappa_topics=pair_only`` restricted to those topics (a pair left with none is
    left out). Each pair's ``key`` is its position among the pairs of
    ``label_pairs=all``, so a pair's row does not depend on which pairs are compared."""
    ref_name = config.reference
    everyone = _all_pairs(config, given)
    keep = (pair_only_topics(qrels, ref_name)
            if config.kappa_topics == KappaTopics.pair_only else None)
    names = [ref_name, *given]  # the reference first: qrels_a of every pair it is in
    candidates = [*itertools.combinations(names, 2), *((ref_name, n) for n in mixes)]
    labelled = {**qrels, **mixes}
    shared = None if everyone else sharing([labelled[n] for n in (*names, *mixes)], keep)
    index = {n: i for i, n in enumerate((*names, *mixes))}
    pairs, key = [], 0
    for a, b in candidates:
        if not everyone and ref_name not in (a, b):  # counted, not compared
            key += bool(shared[index[a], index[b]])
            continue
        pair = _label_pair(config, qrels, labelled, a, b)
        if pair is not None and keep is not None:
            pair = pair.restricted(keep)
        if pair is not None:
            pairs.append(dataclasses.replace(pair, key=key))
            key += 1
    return pairs


def _label_pair(config: Config, qrels: Mapping[str, Qrels], labelled: Mapping[str, Qrels],
                a: str, b: str) -> LabelPair | None:
    """The jointly judged labels of `a` and `b` (None: two given qrels sharing no judged
    pair; a qrels sharing none with the reference is an error)."""
    ref_name = config.reference
    try:
        t, _, g = agr.joint_labels(labelled[a], labelled[b])
    except InputError as err:
        if "share no" not in err.problem or b not in qrels:
            raise
        if ref_name in (a, b):
            raise InputError(f"qrels {b if a == ref_name else a!r} shares no judged "
                             f"(topic, passage) pair with the reference {ref_name!r}",
                             file=qrels[b if a == ref_name else a].source) from None
        return None
    fleiss = (None, None) if ref_name in (a, b) else reference_raters(
        qrels[a], qrels[b], qrels[ref_name], config.fleiss_reference)
    return LabelPair(a, b, t, g, *fleiss)


def sharing(qrels: Sequence[Qrels], topics: set | None = None) -> np.ndarray:
    """Which qrels share a judged (topic, passage) pair (on `topics`; None: all): a
    boolean matrix from one sparse product of the qrels x pairs incidence, so that
    ``label_pairs=reference`` counts the pairs it does not compare in linear time.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> q = lambda t, d: Qrels(obj(*t), obj(*d), np.zeros(len(t), np.int64))
    >>> qs = [q(["1", "2"], ["a", "b"]), q(["1"], ["a"]), q(["2"], ["c"])]
    >>> sharing(qs).astype(int).tolist()
    [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    >>> sharing(qs, {"2"}).astype(int).tolist()
    [[1, 0, 0], [0, 0, 0], [0, 0, 1]]
    """
    import pandas as pd
    from scipy import sparse

    rows, keys = [], []
    for i, q in enumerate(qrels):
        t = np.asarray(q.topic, dtype=object).astype(str)
        d = np.asarray(q.docno, dtype=object).astype(str)
        if topics is not None:
            on = np.isin(t, [str(x) for x in topics])
            t, d = t[on], d[on]
        keys.append(np.char.add(np.char.add(t, "\x1f"), d))
        rows.append(np.full(len(t), i))
    codes, uniq = pd.factorize(np.concatenate(keys) if keys else np.array([], str))
    inc = sparse.csr_matrix((np.ones(len(codes)), (np.concatenate(rows), codes)),
                            shape=(len(qrels), len(uniq)))
    return np.asarray((inc @ inc.T).todense()) > 0


def best_ranks(runs: Runs, topic: np.ndarray, docno: np.ndarray, depth: int) -> np.ndarray:
    """The best (smallest) rank any run gave each (topic, docno), ``inf`` when no run
    retrieved it within `depth`. Ranks follow trec_eval: score descending (at the runs'
    precision), ties by docno descending.

    Examples
    --------
    >>> r = Runs(("a", "b"), np.array([0, 0, 1, 1], np.int32), np.array(["1"] * 4, object),
    ...          np.array(["d1", "d2", "d1", "d2"], object), np.array([2.0, 1.0, 1.0, 1.0]))
    >>> best_ranks(r, np.array(["1", "1", "1"], object), np.array(["d1", "d2", "d3"], object),
    ...            100).tolist()  # run b ties d1, d2: d2 first (docno descending)
    [1.0, 1.0, inf]
    """
    score = np.asarray(runs.score, np.float64)
    if runs.precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    _, tcode = np.unique(np.asarray(runs.topic, dtype=object).astype(str), return_inverse=True)
    _, dcode = np.unique(np.asarray(runs.docno, dtype=object).astype(str), return_inverse=True)
    run = np.asarray(runs.run, np.int64)
    order = np.lexsort((-dcode, -score, tcode, run))
    grp = run[order] * (tcode.max() + 1) + tcode[order]
    pos = np.arange(len(order))
    first = np.maximum.accumulate(np.where(np.r_[True, grp[1:] != grp[:-1]], pos, 0))
    rank = np.empty(len(order), np.float64)
    rank[order] = pos - first + 1
    keep = rank <= depth
    key = _pd_index(np.asarray(runs.topic, dtype=object)[keep],
                    np.asarray(runs.docno, dtype=object)[keep])
    uniq = key.unique()
    code = uniq.get_indexer(key)
    mins = np.full(len(uniq), np.inf)
    np.minimum.at(mins, code, rank[keep])
    hit = uniq.get_indexer(_pd_index(np.asarray(topic, dtype=object),
                                     np.asarray(docno, dtype=object)))
    return np.where(hit >= 0, mins[np.maximum(hit, 0)], np.inf)


def _sim_setup(config: Config, ref: Qrels, labelled: Mapping[str, Qrels],
               others: Sequence[str], mixes: Sequence[str], ref_scores: ScoreMatrix,
               scale: np.ndarray, data: AssessorInput) -> SimSetup:
    """Fit the assessor model from the reference and ``simulate_from``; the judgments a
    trial relabels (and their depth bins); the planning sizes."""
    name = config.simulate_from
    if name is None:
        name = mixes[0] if mixes else others[0]
    name = str(name)
    if name not in others:
        raise unknown_name(f"{param('simulate_from')} (a qrels other than the reference)",
                           name, list(others))
    other = labelled[name]
    t, d, g = agr.joint_labels(ref, other)
    edges = tuple(int(e) for e in config.simulate_depth or ())
    own = set(np.asarray(other.topic).tolist())
    topics = tuple(x for x in ref_scores.topics if x in own)
    base = _restrict(ref, set(topics))
    bt = np.asarray(base.topic, dtype=object)
    bd = np.asarray(base.docno, dtype=object)
    if edges:
        bins = depth_bins(best_ranks(data.runs, bt, bd, data.depth), edges)
        jb = depth_bins(best_ranks(data.runs, np.asarray(t, dtype=object),
                                   np.asarray(d, dtype=object), data.depth), edges)
    else:
        bins, jb = np.zeros(len(bt), np.int64), None
    conc = config.simulate_concentration
    model = fit_assessor_model(g[:, 0], g[:, 1], scale, topics=t,
                               per_topic=bool(config.simulate_per_topic),
                               prior=float(config.simulate_prior),
                               concentration=None if conc is None else float(conc),
                               bins=jb, depth_edges=edges)
    key = _pd_index(bt, bd)
    joint = key.get_indexer(_pd_index(np.asarray(t, dtype=object), np.asarray(d, dtype=object)))
    joint = joint[joint >= 0]
    relabel = np.ones(len(bt), bool)
    if config.simulate_relabel == "judged":
        relabel[:] = False
        relabel[joint] = True
    T = len(topics)
    if T < 2:
        raise ConfigError(f"{param('simulate_from')}={name!r} shares {T} scored topic(s) "
                          "with the reference: the simulation needs >= 2")
    if config.planning_sizes is None:
        sizes = list(range(5, T, 5))
    else:
        sizes = [int(n) for n in config.planning_sizes]
        bad = [n for n in sizes if n < 2]
        if bad:
            raise ConfigError(f"{param('planning_sizes')} must be >= 2 (topics per "
                              f"collection), got {bad[0]}")
    col = [ref_scores.topics.index(x) for x in topics]
    return SimSetup(name, model, base, relabel, np.sort(joint), topics,
                    np.asarray(ref_scores.values)[:, :, col], tuple(sorted({*sizes, T})),
                    bins)


def _pd_index(topic: np.ndarray, docno: np.ndarray) -> Any:
    """A pandas MultiIndex of (topic, docno) pairs (for position lookups)."""
    import pandas as pd

    return pd.MultiIndex.from_arrays([topic.astype(str), docno.astype(str)])


def parallel_composites(groups: Sequence[Sequence[str]]) -> list[str]:
    """Names of the composites made of member j of every group, j = 1 .. the smallest
    group's size: each topic's judgments once each.

    Examples
    --------
    >>> parallel_composites([["a", "b"], ["c", "d", "e"]])
    ['mix11', 'mix22']
    """
    sep = "-" if any(len(g) > 9 for g in groups) else ""
    return ["mix" + sep.join(str(j + 1) for _ in groups)
            for j in range(min(len(g) for g in groups))]


def _g_levels(config: Config, qrels: Mapping[str, Qrels], others: Sequence[str],
              scores: Mapping[str, ScoreMatrix]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The G-study's assessor levels and the topics all of them judged (in the reference's
    order); () when fewer than 2 topics are common (a warning) or fewer than 1 level."""
    ref = config.reference
    if config.g_assessors is not None:
        levels = [str(q) for q in config.g_assessors]
        for q in levels:
            if q not in scores:
                raise unknown_name(f"qrels in {param('g_assessors')}", q, [ref, *others])
        if len(set(levels)) != len(levels) or not levels:
            raise ConfigError(f"{param('g_assessors')} must name distinct qrels, got "
                              f"{levels}")
        if len(levels) < 2:
            raise ConfigError(f"{param('g_assessors')} names one qrels ({levels[0]!r}): the "
                              "G-study needs at least 2 assessors (with one, the assessor "
                              "components have no degrees of freedom)")
    elif config.groups:
        levels = [ref, *parallel_composites(config.groups)]
    else:
        levels = [ref, *[q for q in qrels if q != ref]]
    common = set(scores[levels[0]].topics)
    for q in levels[1:]:
        common &= set(scores[q].topics)
    topics = tuple(t for t in scores[ref].topics if t in common)
    if len(topics) < 2:
        if config.g_assessors is not None:
            raise ConfigError(f"the qrels of {param('g_assessors')} share {len(topics)} "
                              "scored topic(s): the G-study needs >= 2")
        log.warning("the G-study's assessors (%s) share %d scored topic(s): no G-study "
                    "(set %s)", ", ".join(levels), len(topics), param("g_assessors"))
        return (), ()
    return tuple(levels), topics
