"""Simulated assessors (known truth by simulation, :mod:`irsim.simulate.assessor`): every
trial relabels the reference with an assessor drawn from the model fitted on
``simulate_from``, scores the runs under it and compares rankings and decisions with the
reference's on random topic subsets (or topic bootstraps) of every planning size; the
planning tables answer how many topics keep the simulated assessor close enough."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from irsim.data.types import Qrels
from irsim.exact import exact_mean
from irsim.experiments.assessors.agreement import CATEGORIES, DECISION_COUNTS
from irsim.experiments.assessors.prepare import AssessorData, SimSetup
from irsim.metrics.multi import evaluate_many
from irsim.rng import blocked_draws
from irsim.simulate.assessor import AssessorModel, simulate_grades
from irsim.stats import agreement as agr
from irsim.stats.kendall import concordance, pair_signs, tau_b, ties
from irsim.stats.multiple import reject
from irsim.stats.ties import snap_ties
from irsim.stats.ttest import paired_t
from irsim.tables import table

__all__ = ["SIM_STREAM", "SUBSET_STREAM", "BOOTSTRAP_STREAM", "SIMULATED_TRIAL_STATS",
           "trial_stats", "simulated_qrels", "simulate_trials", "depth_labels",
           "simulation_tables"]

#: Simulated assessors: the grades of every trial, and its random topic subsets.
SIM_STREAM = "assessors/simulate"
SUBSET_STREAM = "assessors/simulate/topics"
#: Simulated assessors: the topic bootstraps of the planning sizes beyond the topics.
BOOTSTRAP_STREAM = "assessors/simulate/bootstrap"

#: The per-trial statistics of ``simulated_trials``.
SIMULATED_TRIAL_STATS = ("tau_b", "kappa", "kappa_binary", "agreement", *CATEGORIES,
                         "power_reference", "power")
#: Bytes of one block of pair differences in :func:`trial_stats`.
_SIM_BYTES = 32 * 2**20


def trial_stats(xs: np.ndarray, ys: np.ndarray, *, alpha: float,
                corrections: Sequence[str]) -> np.ndarray:
    """Per trial: tau-b of the system rankings of `xs` and `ys` and, per correction, the
    paired t test's decision counts (:data:`CATEGORIES`, then the significant pairs under
    each).

    Parameters
    ----------
    xs, ys : ndarray (trials, systems, topics)
        Reference and simulated scores on each trial's topics.

    Returns
    -------
    ndarray (trials, 1 + len(corrections) * 7)

    Examples
    --------
    >>> x = np.array([[[0.1, 0.2, 0.3], [0.5, 0.6, 0.7], [0.4, 0.4, 0.5]]])
    >>> out = trial_stats(x, 1 - x, alpha=0.05, corrections=["none"])
    >>> float(out[0, 0]), out[0, 1:].tolist()  # reversed ranking: every decision flips
    (-1.0, [0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0])
    """
    m, S, n = xs.shape
    ia, ib = np.triu_indices(S, 1)
    P = len(ia)
    # exact means, ties snapped (the tie rule: tau-b of the exact means)
    mx, my = snap_ties(exact_mean(xs, axis=-1)), snap_ties(exact_mean(ys, axis=-1))
    dx, dy = mx[:, ia] - mx[:, ib], my[:, ia] - my[:, ib]
    sx, sy = pair_signs(dx).T, pair_signs(dy).T  # (pairs, trials)
    out = np.empty((m, 1 + len(corrections) * len(DECISION_COUNTS)))
    out[:, 0] = tau_b(concordance(sx, sy), ties(sx), ties(sy), S)
    same = np.sign(dx) == np.sign(dy)
    step = max(1, _SIM_BYTES // (8 * P * n))
    px, py = np.empty((m, P)), np.empty((m, P))
    for lo in range(0, m, step):  # memory blocks of trials (rows are independent)
        hi = min(m, lo + step)
        for p, v in ((px, xs), (py, ys)):
            z = v[lo:hi, ia, :] - v[lo:hi, ib, :]
            with np.errstate(invalid="ignore", divide="ignore"):
                p[lo:hi] = np.nan_to_num(paired_t(z).pvalue, nan=1.0)
    for ci, corr in enumerate(corrections):
        r1, r2 = reject(px, alpha, corr, axis=-1), reject(py, alpha, corr, axis=-1)
        both = r1 & r2
        counts = (both & same, ~r1 & ~r2, r1 & ~r2, ~r1 & r2, both & ~same, r1, r2)
        out[:, 1 + ci * len(DECISION_COUNTS):1 + (ci + 1) * len(DECISION_COUNTS)] = np.stack(
            [np.count_nonzero(c, axis=-1) for c in counts], axis=-1)
    return out


def _subsets(seed: int, n: int, T: int, start: int, stop: int) -> np.ndarray:
    """Each trial's random subset of `n` of `T` topics (sorted positions), keyed by the
    trial and the size only; all topics when ``n == T``."""
    if n >= T:
        return np.broadcast_to(np.arange(T), (stop - start, T))
    idx = blocked_draws(seed, SUBSET_STREAM, (n,), start, stop,
                        lambda rng, m: np.argsort(rng.random((m, T)), axis=1)[:, :n])
    return np.sort(idx, axis=1)


def _bootstrap(seed: int, n: int, T: int, start: int, stop: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each trial's topic bootstrap of `n` of `T` topics (with replacement, sorted
    positions, keyed by the trial and the size only) and every slot's copy number (0 for a
    topic's first draw, 1 for its second, ...).

    Examples
    --------
    >>> idx, copy = _bootstrap(3, 6, 4, 0, 2)
    >>> idx.shape, bool((np.diff(idx, axis=1) >= 0).all())
    ((2, 6), True)
    >>> all(copy[i, j] == np.sum(idx[i, :j] == idx[i, j]) for i in range(2) for j in range(6))
    True
    """
    idx = blocked_draws(seed, BOOTSTRAP_STREAM, (n,), start, stop,
                        lambda rng, m: rng.integers(0, T, size=(m, n)))
    idx = np.sort(idx, axis=1)
    pos = np.broadcast_to(np.arange(n), idx.shape)
    new = np.ones(idx.shape, bool)
    new[:, 1:] = idx[:, 1:] != idx[:, :-1]
    first = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    return idx, pos - first


def simulated_qrels(data: AssessorData, start: int, stop: int, seed: int, copy: int = 0
                    ) -> np.ndarray:
    """Grades of the simulated assessors ``start:stop``: the reference's judgments of
    ``simulate_from``'s topics with the relabelled ones drawn from the model, shape
    (trials, judgments) in the order of ``data.sim.base``. ``copy > 0``: an independent
    assessor of the same trial (the one judging the copy-th resampled copy of a topic in a
    topic bootstrap)."""
    sim = data.sim
    grade = np.asarray(sim.base.grade, np.int64)
    G = np.repeat(grade[None, :], stop - start, axis=0)
    bt = np.asarray(sim.base.topic, dtype=object)
    G[:, sim.relabel] = simulate_grades(sim.model, grade[sim.relabel], seed, SIM_STREAM,
                                        start, stop, topics=bt[sim.relabel],
                                        bins=sim.bins[sim.relabel],
                                        key=(copy,) if copy else ())
    return G


def _score_layer(data: AssessorData, G: np.ndarray, start: int, need: np.ndarray | None
                 ) -> np.ndarray:
    """Scores (trials, metrics, systems, topics) of the simulated grades `G` on
    ``data.sim.topics`` in one :func:`~irsim.metrics.multi.evaluate_many` pass; with `need`
    (trials, topics) of bool only those topics of each trial are scored (NaN elsewhere)."""
    sim = data.sim
    bt, bd = np.asarray(sim.base.topic, dtype=object), np.asarray(sim.base.docno, dtype=object)
    tpos = {t: i for i, t in enumerate(sim.topics)}
    code = np.array([tpos.get(t, -1) for t in bt.tolist()], np.int64)
    m = len(G)
    qs, rows = {}, []
    for i in range(m):  # one qrels per trial (the metrics' own pass is vectorised)
        keep = slice(None) if need is None else need[i, np.maximum(code, 0)] & (code >= 0)
        if need is not None and not need[i].any():
            continue
        qs[f"trial{start + i}"] = Qrels(bt[keep], bd[keep], G[i][keep],
                                        source=f"trial{start + i}")
        rows.append(i)
    M, S, T = len(data.metrics), len(data.systems), len(sim.topics)
    Y = np.full((m, M, S, T), np.nan)
    if not qs:
        return Y
    scored = evaluate_many(data.source.runs, qs, list(data.metrics), depth=data.source.depth,
                           missing="drop")
    for i, sm in zip(rows, scored.values(), strict=True):
        cols = [tpos[t] for t in sm.topics if t in tpos]
        src = [k for k, t in enumerate(sm.topics) if t in tpos]
        Y[i][:, :, cols] = np.asarray(sm.values)[:, :, src]
    return Y


def simulate_trials(data: AssessorData, start: int, stop: int, *, seed: int, alpha: float,
                    corrections: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Simulated assessors ``start:stop``: per trial, metric and planning size the
    :func:`trial_stats` row, and per trial the graded and binary kappa on the fitted
    passages.

    Every trial's qrels are scored in one :func:`~irsim.metrics.multi.evaluate_many` pass;
    draws are keyed by the trial (:func:`irsim.rng.blocked_draws`), so any split of the
    trials gives the same rows.
    """
    sim = data.sim
    m = stop - start
    G = simulated_qrels(data, start, stop, seed)
    scale = np.asarray(data.scale)
    L = len(scale)
    ref_j = np.searchsorted(scale, np.asarray(sim.base.grade, np.int64)[sim.joint])
    sim_j = np.searchsorted(scale, G[:, sim.joint])
    trial = np.arange(m)[:, None]
    conf = np.bincount((trial * L * L + ref_j * L + sim_j).ravel(),
                       minlength=m * L * L).reshape(m, L, L)
    binary = (scale >= data.rel).astype(np.int64)
    conf_b = np.bincount((trial * 4 + binary[ref_j] * 2 + binary[sim_j]).ravel(),
                         minlength=m * 4).reshape(m, 2, 2)
    kappa = np.stack([agr.kappa_from_confusion(conf), agr.kappa_from_confusion(conf_b)],
                     axis=-1)
    X = sim.reference
    T = len(sim.topics)
    # topic bootstraps of the sizes beyond T: copy c of a topic is scored under the trial's
    # c-th independent assessor, which is drawn and scored only on the topics needing it
    boot = {n: _bootstrap(seed, n, T, start, stop) for n in sim.sizes if n > T}
    copies = np.ones((m, T), np.int64)
    trial = np.arange(m)[:, None]
    for idx, _ in boot.values():
        per = np.bincount((trial * T + idx).ravel(), minlength=m * T).reshape(m, T)
        copies = np.maximum(copies, per)
    layers = [_score_layer(data, G, start, None)]
    for c in range(1, int(copies.max())):
        layers.append(_score_layer(data, simulated_qrels(data, start, stop, seed, copy=c),
                                   start, copies > c))
    Y = np.stack(layers)  # (copies, trials, metrics, systems, topics)
    S = len(data.systems)
    out = np.empty((m, len(data.metrics), len(sim.sizes),
                    1 + len(corrections) * len(DECISION_COUNTS)))
    for k, n in enumerate(sim.sizes):
        if n > T:
            idx, copy = boot[n]
        else:
            idx = _subsets(seed, n, T, start, stop)
            copy = np.zeros_like(idx)
        for mi in range(len(data.metrics)):
            xs = np.ascontiguousarray(X[mi][:, idx].transpose(1, 0, 2))
            ys = np.ascontiguousarray(Y[copy[:, None, :], trial[:, :, None], mi,
                                        np.arange(S)[None, :, None], idx[:, None, :]])
            out[:, mi, k] = trial_stats(xs, ys, alpha=alpha, corrections=corrections)
    return out, kappa


def depth_labels(edges: Sequence[int]) -> list[str]:
    """Names of the depth bins of `edges` (a single ``all`` without edges).

    Examples
    --------
    >>> depth_labels([10, 100])
    ['1-10', '11-100', '>100']
    >>> depth_labels([])
    ['all']
    """
    if not edges:
        return ["all"]
    lo = [1, *[e + 1 for e in edges[:-1]]]
    return [f"{a}-{b}" if a < b else f"{a}" for a, b in zip(lo, edges, strict=True)] + \
        [f">{edges[-1]}"]


def _smallest(sizes: Sequence[int], ok: np.ndarray) -> int:
    """The smallest size whose flag is set, -1 when none."""
    hit = np.flatnonzero(ok)
    return int(sizes[hit[0]]) if hit.size else -1


def simulation_tables(sim: SimSetup, data: AssessorData, plan: np.ndarray, kappa: np.ndarray,
                      *, alpha: float, corrections: Sequence[str], tau_target: float,
                      agreement_target: float, probability: float) -> dict[str, pa.Table]:
    """The tables of the simulation from the merged per-trial arrays."""
    mod = sim.model
    S = len(data.systems)
    pairs = S * (S - 1) // 2
    full = plan[:, :, sim.sizes.index(len(sim.topics))]  # all topics
    j = data.others.index(sim.name)
    obs_kappa = _observed_kappas(mod, data.rel)
    trial_rows, summary = [], []
    plan_rows, answer = [], []
    n = len(DECISION_COUNTS)
    for mi, metric in enumerate(data.metrics):
        x, y, _ = data.compared(j, mi)
        obs = trial_stats(x[None], y[None], alpha=alpha, corrections=corrections)[0]
        for ci, corr in enumerate(corrections):
            c0 = 1 + ci * n
            key = {"qrels": sim.name, "metric": metric, "correction": corr}
            per = {**_decision_columns(full[:, mi, c0:c0 + n] / pairs, full[:, mi, 0]),
                   "kappa": kappa[:, 0], "kappa_binary": kappa[:, 1]}
            observed = {**_decision_columns(obs[None, c0:c0 + n] / pairs, obs[None, 0]),
                        "kappa": np.array([obs_kappa[0]]),
                        "kappa_binary": np.array([obs_kappa[1]])}
            trial_rows.extend({**key, "trial": t,
                               **{k: float(per[k][t]) for k in SIMULATED_TRIAL_STATS}}
                              for t in range(plan.shape[0]))
            summary += _summary_rows(key, per, observed)
            rows, ans = _planning_rows(key, sim.sizes, plan[:, mi, :, 0],
                                       plan[:, mi, :, c0:c0 + n] / pairs,
                                       tau_target=tau_target,
                                       agreement_target=agreement_target,
                                       probability=probability)
            plan_rows += rows
            answer.append(ans)
    return {"assessor_model": table("assessor_model", _model_rows(sim)),
            "simulated_trials": table("simulated_trials", trial_rows),
            "simulated_agreement": table("simulated_agreement", summary),
            "assessor_planning": table("assessor_planning", plan_rows),
            "assessor_planning_answer": table("assessor_planning_answer", answer)}


def _model_rows(sim: SimSetup) -> list[dict]:
    """The ``assessor_model`` rows: the pooled matrix, per depth bin, per topic."""
    mod = sim.model
    scale = mod.scale.tolist()
    nan = float("nan")
    rows = [{"qrels": sim.name, "topic": "all", "depth": "all", "grade_reference": a,
             "grade": b, "count": int(mod.counts[i, k]), "probability": float(mod.probs[i, k]),
             "concentration": nan}
            for i, a in enumerate(scale) for k, b in enumerate(scale)]
    labels = depth_labels(mod.depth_edges)
    if mod.bins > 1:
        rows += [{"qrels": sim.name, "topic": "all", "depth": lab, "grade_reference": a,
                  "grade": b, "count": int(mod.bin_counts[s, i, k]),
                  "probability": float(mod.bin_probs[s, i, k]), "concentration": nan}
                 for s, lab in enumerate(labels) for i, a in enumerate(scale)
                 for k, b in enumerate(scale)]
    if mod.per_topic:
        rows += [{"qrels": sim.name, "topic": t, "depth": lab, "grade_reference": a,
                  "grade": b, "count": int(mod.topic_counts[ti, s, i, k]),
                  "probability": float(mod.topic_probs[ti, s, i, k]),
                  "concentration": float(mod.concentration[i])}
                 for ti, t in enumerate(mod.topics) for s, lab in enumerate(labels)
                 for i, a in enumerate(scale) for k, b in enumerate(scale)]
    return rows


def _observed_kappas(mod: AssessorModel, rel: int) -> tuple[float, float]:
    """Graded and binary (at `rel`) kappa of the model's pooled confusion counts."""
    L = len(mod.scale)
    binary = mod.counts.reshape(L, L)
    cut = (mod.scale >= rel).astype(np.int64)
    conf_b = np.zeros((2, 2), np.int64)
    np.add.at(conf_b, (cut[:, None], cut[None, :]), binary)
    return (float(agr.kappa_from_confusion(mod.counts)),
            float(agr.kappa_from_confusion(conf_b)))


def _decision_columns(v: np.ndarray, tau: np.ndarray) -> dict[str, np.ndarray]:
    """tau-b and the decision shares (:data:`DECISION_COUNTS` divided by the pairs, one
    row per trial) as the simulation's statistics."""
    d = dict(zip(DECISION_COUNTS, v.T, strict=True))
    return {"tau_b": tau, "agreement": d["both"] + d["neither"],
            **{k: d[k] for k in CATEGORIES},
            "power_reference": d["sig_ref"], "power": d["sig"]}


def _summary_rows(key: dict, per: dict, observed: dict) -> list[dict]:
    """The ``simulated_agreement`` rows of one (metric, correction): every statistic's
    simulated distribution against its observed value."""
    out = []
    for stat in ("tau_b", "kappa", "kappa_binary", "agreement", "lost", "gained",
                 "power_reference", "power"):
        v = per[stat]
        trials = len(v)
        o = float(observed[stat][0])
        sd = float(v.std(ddof=1)) if trials > 1 else float("nan")
        q = np.quantile(v, [0.025, 0.05, 0.5, 0.95, 0.975])
        out.append({**key, "statistic": stat, "trials": trials, "observed": o,
                    "mean": float(v.mean()), "sd": sd, "mc_se": sd / np.sqrt(trials),
                    "q025": float(q[0]), "q05": float(q[1]), "q50": float(q[2]),
                    "q95": float(q[3]), "q975": float(q[4]),
                    "observed_quantile": float(np.mean(v <= o))})
    return out


def _planning_rows(key: dict, sizes: Sequence[int], tau: np.ndarray, dec: np.ndarray, *,
                   tau_target: float, agreement_target: float, probability: float
                   ) -> tuple[list[dict], dict]:
    """The ``assessor_planning`` rows and the ``assessor_planning_answer`` row of one
    (metric, correction) from tau-b (trials, sizes) and the decision shares (trials, sizes,
    :data:`DECISION_COUNTS`)."""
    trials = tau.shape[0]
    agree = dec[..., CATEGORIES.index("both")] + dec[..., CATEGORIES.index("neither")]
    p_tau = (tau >= tau_target).mean(axis=0)
    p_agree = (agree >= agreement_target).mean(axis=0)
    rows = []
    for k, n in enumerate(sizes):
        qt = np.quantile(tau[:, k], [0.05, 0.5, 0.95])
        rows.append({**key, "topics": n, "trials": trials,
                     "tau_mean": float(tau[:, k].mean()), "tau_q05": float(qt[0]),
                     "tau_q50": float(qt[1]), "tau_q95": float(qt[2]),
                     "p_tau": float(p_tau[k]),
                     "agreement_mean": float(agree[:, k].mean()),
                     "agreement_q05": float(np.quantile(agree[:, k], 0.05)),
                     "p_agreement": float(p_agree[k]),
                     "power_reference": float(dec[:, k, DECISION_COUNTS.index("sig_ref")]
                                              .mean()),
                     "power": float(dec[:, k, DECISION_COUNTS.index("sig")].mean())})
    answer = {**key, "tau_target": tau_target,
              "topics_tau": _smallest(sizes, p_tau >= probability),
              "agreement_target": agreement_target,
              "topics_agreement": _smallest(sizes, p_agree >= probability),
              "probability": probability}
    return rows, answer
