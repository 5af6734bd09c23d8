"""The budget study's prepared data: every qrels evaluated once, the judgment pool with
each linear metric's per-document weights, the strata, the full-gold truth and decisions
(:class:`BudgetData`, what the kernel reads); the automatic ``votes`` judge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats as sps

from irsim.data.types import Qrels, Runs
from irsim.errors import ConfigError, InputError, param
from irsim.exact import exact_mean
from irsim.kit.qrels_set import AssessorInput
from irsim.metrics.linear import linear_form
from irsim.metrics.measures import parse_measure
from irsim.metrics.multi import evaluate_many
from irsim.stats.multiple import reject

if TYPE_CHECKING:
    from irsim.experiments.budget import Config

__all__ = ["BudgetData", "prepare", "votes_qrels", "UNITS"]

#: The sampling units, in table order.
UNITS = ("topics", "judgments")


@dataclass(frozen=True)
class BudgetData:
    """What the kernel reads (every array is part of the run's identity).

    Attributes
    ----------
    gold, proxies, metrics, systems, topics : tuple of str
    units : tuple of str
        The sampling units studied (``topics``, ``judgments``).
    linear : tuple of int
        Indices into `metrics` of the metrics linear in the labels (the judgments unit).
    gold_scores : ndarray (M, T, S)
        Per-topic scores under the gold qrels.
    proxy_scores : ndarray (J, M, T, S)
        Per-topic scores under each proxy.
    topic_cost : ndarray (T,)
        Gold judgments of each topic (what judging it fully costs).
    topic_strata : ndarray (J, M, T) of int
        Stratum of each topic for the stratified estimator of the topics unit: quantile
        groups of the topic's mean proxy score over the systems.
    u_topic : ndarray (N,)
        Topic index of each pair of the judgment pool (every (topic, document) some run
        ranks within the linear metrics' depth).
    coef : ndarray (L, N, S)
        Weight of each pooled pair in each system's score of each linear metric, divided
        by the number of topics: ``mean over topics = sum over the pool of coef * value``.
    gold_values, proxy_values : ndarray (L, N) and (J, L, N)
        Each pooled pair's label value (``h(grade)``) under the gold and each proxy.
    judgment_strata : ndarray (J, N) of int
        Stratum of each pooled pair: the proxy's grade (``strata=grade``) or the topic.
    budgets : ndarray (U, B) of int
        Sample sizes per unit and budget.
    given : tuple of float
        The budgets as given.
    ref_reject : ndarray (M, C, P) of bool
        Full-gold decisions (paired t test over all topics) per metric and correction.
    """

    gold: str
    proxies: tuple[str, ...]
    metrics: tuple[str, ...]
    systems: tuple[str, ...]
    topics: tuple[str, ...]
    units: tuple[str, ...]
    linear: tuple[int, ...]
    gold_scores: np.ndarray
    proxy_scores: np.ndarray
    topic_cost: np.ndarray
    topic_strata: np.ndarray
    u_topic: np.ndarray
    coef: np.ndarray
    gold_values: np.ndarray
    proxy_values: np.ndarray
    judgment_strata: np.ndarray
    budgets: np.ndarray
    given: tuple[float, ...]
    ref_reject: np.ndarray
    strata: str = "grade"

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices (a, b), a < b, of every pair of systems."""
        return np.triu_indices(len(self.systems), 1)

    def truth(self, m: int) -> np.ndarray:
        """Full-gold means of the systems, then of the pair differences, metric `m`:
        exact sums, so tied systems tie on every CPU."""
        means = exact_mean(self.gold_scores[m].T)
        ia, ib = self.pairs
        return np.concatenate([means, exact_mean((self.gold_scores[m][:, ia]
                                                  - self.gold_scores[m][:, ib]).T)])

    def describe(self) -> dict:
        """What the manifest records about the data."""
        return {"kind": "runs_qrels_set", "gold": self.gold, "proxies": list(self.proxies),
                "systems": len(self.systems), "topics": len(self.topics),
                "pool": int(len(self.u_topic))}


def votes_qrels(runs: Runs, depth: int, grades: int, topics: np.ndarray | None = None,
                name: str = "votes") -> Qrels:
    """An automatic judge from the runs themselves: a document's grade grows with the share
    of runs that rank it within `depth` (after Soboroff, Nicholas and Cahan 2001).

    ``grade = min(grades - 1, floor(share * grades))``: with 4 grades (0-3), a document
    ranked in the top `depth` by under a quarter of the runs gets 0, by at least three
    quarters 3. Every document some run ranks within `depth` is labelled.

    Examples
    --------
    >>> obj = lambda *s: np.array(s, dtype=object)
    >>> runs = Runs(("a", "b"), np.array([0, 0, 1], np.int32), topic=obj("1", "1", "1"),
    ...             docno=obj("x", "y", "x"), score=np.array([2., 1., 1.]))
    >>> q = votes_qrels(runs, depth=1, grades=4)
    >>> q.docno.tolist(), q.grade.tolist()
    (['x'], [3])
    """
    ranked = _ranks(runs, depth)
    if topics is not None:
        ranked = ranked[ranked["topic"].isin(set(np.asarray(topics, dtype=object).tolist()))]
    S = len(runs.names)
    share = ranked.groupby(["topic", "docno"], sort=True).size() / S
    grade = np.minimum(grades - 1, np.floor(share.to_numpy() * grades)).astype(np.int64)
    idx = share.index
    return Qrels(idx.get_level_values(0).to_numpy(dtype=object),
                 idx.get_level_values(1).to_numpy(dtype=object), grade, source=name)


def _ranks(runs: Runs, depth: int) -> pd.DataFrame:
    """Every (run, topic, docno) ranked within `depth`, with its 1-based rank: score
    descending, ties by docno descending (trec_eval's order)."""
    df = pd.DataFrame({"run": np.asarray(runs.run, np.int64),
                       "topic": np.asarray(runs.topic, dtype=object).astype(str),
                       "docno": np.asarray(runs.docno, dtype=object).astype(str),
                       "score": np.asarray(runs.score, np.float64)})
    df = df.sort_values(["run", "topic", "score", "docno"],
                        ascending=[True, True, False, False], kind="stable")
    df["rank"] = df.groupby(["run", "topic"], sort=False).cumcount() + 1
    return df[df["rank"] <= depth]


def _check_qrels(gold: str, g: Qrels, name: str, q: Qrels, scale: tuple[int, int]) -> None:
    """The proxy judges every gold topic, on the gold's scale."""
    missing = sorted(set(np.asarray(g.topic).tolist()) - set(np.asarray(q.topic).tolist()))
    if missing:
        raise InputError(f"proxy {name!r} judges none of the gold qrels' topics "
                         f"{', '.join(map(str, missing[:5]))}"
                         f"{' ...' if len(missing) > 5 else ''} ({len(missing)} topics): "
                         f"give a proxy over every gold topic, or restrict the gold qrels "
                         f"to the proxy's topics", file=q.source or name)
    grade = np.asarray(q.grade, np.int64)
    bad = (grade < scale[0]) | (grade > scale[1])
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"proxy {name!r} gives grade {int(grade[i])} (topic "
                         f"{q.topic[i]!r}, document {q.docno[i]!r}) outside the gold scale "
                         f"{scale[0]}..{scale[1]}: map the proxy's labels onto the gold "
                         f"scale first", file=q.source or name)


def _restrict(q: Qrels, topics: set) -> Qrels:
    keep = np.isin(np.asarray(q.topic, dtype=object), list(topics))
    return Qrels(np.asarray(q.topic)[keep], np.asarray(q.docno)[keep],
                 np.asarray(q.grade)[keep], source=q.source)


def _resolve_budgets(config: Config, units: tuple[str, ...], T: int, N: int,
                     cost: np.ndarray) -> np.ndarray:
    """Sample sizes per unit and budget: a share of the unit's pool (a value in (0, 1]) or
    a number of gold judgments (a value > 1; topics: divided by the mean cost of a
    topic)."""
    total = float(cost.sum())
    out = np.zeros((len(units), len(config.budgets)), np.int64)
    for k, b in enumerate(config.budgets):
        b = float(b)
        if not b > 0:
            raise ConfigError(f"{param('budgets')}: {b:g} is not a budget (a share in (0, 1] "
                              f"or a number of gold judgments > 1)")
        for u, unit in enumerate(units):
            pool = T if unit == "topics" else N
            if b <= 1:
                n = round(b * pool)
            else:
                limit = total if unit == "topics" else N
                if b > limit:
                    raise ConfigError(
                        f"{param('budgets')}: {b:g} gold judgments is larger than the pool "
                        f"of the {unit} unit ({int(limit):,} judgments): give a smaller "
                        f"budget or a share in (0, 1]")
                n = round(b / (total / T)) if unit == "topics" else round(b)
            out[u, k] = min(max(n, 2), pool)
    return out


def _topic_strata(proxy: np.ndarray, H: int) -> np.ndarray:
    """Quantile groups (0 .. H-1) of each topic's mean proxy score, per (proxy, metric):
    (J, M, T, S) -> (J, M, T)."""
    mean = proxy.mean(axis=-1)
    T = mean.shape[-1]
    order = np.argsort(mean, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(T), order.shape), axis=-1)
    return (rank * H // T).astype(np.int64)


def _pool(runs: Runs, topics: tuple[str, ...], lin: list, depth: int, systems: int
          ) -> tuple[pd.DataFrame, np.ndarray]:
    """The judgment pool (topic, docno, topic index) and each linear metric's coefficients
    (L, N, S)."""
    ranked = _ranks(runs, depth)
    tindex = {t: i for i, t in enumerate(topics)}
    ranked = ranked[ranked["topic"].isin(tindex.keys())]
    pool = ranked[["topic", "docno"]].drop_duplicates().sort_values(["topic", "docno"])
    pool = pool.reset_index(drop=True)
    pool["t"] = pool["topic"].map(tindex).astype(np.int64)
    key = pd.MultiIndex.from_frame(pool[["topic", "docno"]])
    u = key.get_indexer(pd.MultiIndex.from_frame(ranked[["topic", "docno"]]))
    T = len(topics)
    coef = np.zeros((len(lin), len(pool), systems))
    run = ranked["run"].to_numpy()
    rank = ranked["rank"].to_numpy()
    for li, form in enumerate(lin):  # a few metrics, each one vectorised scatter
        w = np.zeros(depth)
        k = min(len(form.weights), depth)
        w[:k] = form.weights[:k]
        np.add.at(coef[li], (u, run), w[rank - 1] / T)
    return pool, coef


def _values(pool: pd.DataFrame, q: Qrels, lin: list) -> np.ndarray:
    """(L, N) label values of the pooled pairs under `q` (unjudged: grade 0's value...
    an unjudged document counts as non-relevant, as trec_eval counts it)."""
    qdf = pd.DataFrame({"topic": np.asarray(q.topic, dtype=object).astype(str),
                        "docno": np.asarray(q.docno, dtype=object).astype(str),
                        "grade": np.asarray(q.grade, np.int64)})
    m = pool.merge(qdf, on=["topic", "docno"], how="left")
    grade = m["grade"].fillna(-1).to_numpy(np.int64)
    return np.stack([np.where(grade >= 0, f.value(np.maximum(grade, 0)), 0.0) for f in lin])


def reference_rejections(gold: np.ndarray, alpha: float, corrections: tuple[str, ...]
                         ) -> np.ndarray:
    """Full-gold decisions: the paired t test over all topics of every pair, per metric
    and correction: (M, T, S) -> (M, C, P)."""
    M, T, S = gold.shape
    ia, ib = np.triu_indices(S, 1)
    d = gold[:, :, ia] - gold[:, :, ib]
    mean = exact_mean(np.moveaxis(d, 1, -1))
    sd = d.std(axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = mean / (sd / np.sqrt(T))
    p = np.where(sd > 0, 2 * sps.t.sf(np.abs(t), T - 1), np.where(mean != 0, 0.0, 1.0))
    return np.stack([reject(p, alpha, c, axis=-1) for c in corrections], axis=1)


def prepare(config: Config, data: AssessorInput) -> BudgetData:
    """Check `config` against `data`, evaluate every qrels once and build the pool."""
    qrels = dict(data.qrels)
    gold = config.gold if config.gold is not None else next(iter(qrels), None)
    if gold not in qrels:
        raise ConfigError(f"{param('gold')}: no qrels named {gold!r} (given: "
                          f"{', '.join(qrels) or 'none'})")
    g = qrels[gold]
    ggrade = np.asarray(g.grade, np.int64)
    scale = (int(min(0, ggrade.min())), int(ggrade.max()))
    proxies = list(config.proxy) if config.proxy is not None else [n for n in qrels
                                                                     if n != gold]
    for n in proxies:
        if n not in qrels and n != "votes":
            raise ConfigError(f"{param('proxy')}: no qrels named {n!r} (given: "
                              f"{', '.join(qrels)}; or the automatic judge 'votes')")
        if n == gold:
            raise ConfigError(f"{param('proxy')}: {n!r} is the gold qrels")
    if config.votes and "votes" not in proxies:
        proxies.append("votes")
    if not proxies:
        raise ConfigError(f"no proxy qrels: give a second qrels (an LLM's, a crowd's) or "
                          f"{param('votes')}=true for the automatic judge")
    gtopics = set(np.asarray(g.topic).tolist())
    runs = data.runs
    if "votes" in proxies and "votes" not in qrels:
        qrels["votes"] = votes_qrels(runs, int(config.votes_depth), scale[1] + 1,
                                     topics=np.array(sorted(gtopics), dtype=object))
    for n in proxies:
        _check_qrels(gold, g, n, qrels[n], scale)
    evalq = {gold: g, **{n: _restrict(qrels[n], gtopics) for n in proxies}}
    try:
        scores = evaluate_many(runs, evalq, list(config.metrics), depth=data.depth,
                               missing="zero")
    except ConfigError as err:
        raise ConfigError(f"{param('metrics')}: {err.problem}") from None
    ref = scores[gold]
    metrics = tuple(ref.metrics)
    topics = tuple(str(t) for t in ref.topics)
    for n in proxies:
        if tuple(str(t) for t in scores[n].topics) != topics:
            raise InputError(f"proxy {n!r} does not give scores on the gold topics",
                             file=qrels[n].source or n)
    gold_scores = np.swapaxes(ref.values, 1, 2).astype(np.float64)  # (M, T, S)
    proxy_scores = np.stack([np.swapaxes(scores[n].values, 1, 2) for n in proxies])
    systems = tuple(ref.systems)
    if len(systems) < 2:
        raise InputError("the budget study needs at least two runs", file="runs")
    forms = [linear_form(parse_measure(m), data.depth) for m in metrics]
    units = tuple(config.units)
    linear = tuple(i for i, f in enumerate(forms) if f is not None)
    if "judgments" in units and not linear:
        raise ConfigError(f"{param('units')}: the judgments unit needs a metric linear in "
                          f"the labels (P@k, DCG@k, RBP); {', '.join(metrics)} are not: add "
                          f"one to {param('metrics')} or study the topics unit only")
    lin = [forms[i] for i in linear]
    depth = max((len(f.weights) for f in lin), default=1)
    pool, coef = _pool(runs, topics, lin, min(depth, data.depth), len(systems))
    gold_values = _values(pool, g, lin) if lin else np.zeros((0, len(pool)))
    proxy_values = (np.stack([_values(pool, qrels[n], lin) for n in proxies]) if lin
                    else np.zeros((len(proxies), 0, len(pool))))
    T, N = len(topics), len(pool)
    gtop = pd.Series(np.asarray(g.topic, dtype=object).astype(str)).value_counts()
    cost = gtop.reindex(list(topics)).fillna(0).to_numpy(np.float64)
    budgets = _resolve_budgets(config, units, T, N, cost)
    if str(config.strata) == "grade":
        jstrata = np.stack([_grade_strata(pool, qrels[n]) for n in proxies])
    else:
        jstrata = np.broadcast_to(pool["t"].to_numpy(np.int64), (len(proxies), N)).copy()
    return BudgetData(
        gold=gold, proxies=tuple(proxies), metrics=metrics, systems=systems, topics=topics,
        units=units, linear=linear, gold_scores=gold_scores, proxy_scores=proxy_scores,
        topic_cost=cost, topic_strata=_topic_strata(proxy_scores, int(config.topic_strata)),
        u_topic=pool["t"].to_numpy(np.int64), coef=coef, gold_values=gold_values,
        proxy_values=proxy_values, judgment_strata=jstrata, budgets=budgets,
        given=tuple(float(b) for b in config.budgets),
        ref_reject=reference_rejections(gold_scores, float(config.alpha),
                                        tuple(config.corrections)),
        strata=str(config.strata))


def _grade_strata(pool: pd.DataFrame, q: Qrels) -> np.ndarray:
    """The proxy's grade of each pooled pair as a stratum index (unjudged: grade 0)."""
    qdf = pd.DataFrame({"topic": np.asarray(q.topic, dtype=object).astype(str),
                        "docno": np.asarray(q.docno, dtype=object).astype(str),
                        "grade": np.asarray(q.grade, np.int64)})
    m = pool.merge(qdf, on=["topic", "docno"], how="left")
    grade = m["grade"].fillna(0).to_numpy(np.int64)
    _, idx = np.unique(grade, return_inverse=True)
    return idx.astype(np.int64)
