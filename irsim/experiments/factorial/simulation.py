"""The simulations of ``experiment=factorial`` on the engine: known truth calibrated on the
collection (family-wise error and power of each design and model) and Ferro & Sanderson's
split-half consistency of the collection's own ANOVA conclusions.

Known truth, per metric: the variance components the REML fit of the crossed design finds
on the shard scores (topic, shard, system x topic, system x shard, topic x shard, residual)
become the standard deviations of :func:`~irsim.experiments.factorial.truth.simulate_design`
with the collection's numbers of topics and shards; the system effects are the
whole-collection means of ``truth_systems`` runs spread over the ranking, the lowest
``truth_null`` share of them set to their common mean (the true null pairs). So the table
answers: on collections like this one, with differences like these, how often does each
design and model call a null pair significant (FWER) and find a real difference (power)?
Trials run in shards of :data:`irsim.rng.REPLICATE_BLOCK`-aligned ranges, their counts add
up exactly (:class:`~irsim.engine.partials.Count`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from irsim.experiments.factorial import truth as tr
from irsim.stats.varcomp import variance_components

__all__ = ["TruthSetting", "truth_setting", "truth_counts", "truth_rates", "split_counts",
           "TRUTH_METHODS"]

#: The methods the known-truth table compares (:data:`truth.METHODS`), all of them: the
#: simulated replicates are crossed, as document shards are.
TRUTH_METHODS = tuple(tr.METHODS)

#: The crossed design's components in the order of simulate_design's keywords.
_SD = {"topic": "sd_topic", "replicate": "sd_replicate", "system:topic": "sd_interaction",
       "system:replicate": "sd_system_replicate", "topic:replicate": "sd_topic_replicate",
       "residual": "sd_residual"}


@dataclass(frozen=True)
class TruthSetting:
    """The known truth of one metric: the systems and their effects, and the standard
    deviations (keywords of :func:`truth.simulate_design`)."""

    systems: tuple[str, ...]
    effects: tuple[float, ...]
    sd: tuple[tuple[str, float], ...]
    topics: int
    replicates: int
    crossed: bool = True

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods compared: every one of :data:`TRUTH_METHODS` when the replicates are
        crossed, else those of the designs without a replicate factor."""
        return TRUTH_METHODS if self.crossed else tuple(
            m for m in TRUTH_METHODS if not m.startswith("crossed"))

    @property
    def null_pairs(self) -> int:
        e = np.array(self.effects)
        i, j = np.triu_indices(len(e), 1)
        return int((e[i] == e[j]).sum())

    def model(self) -> dict[str, Any]:
        """Keywords of :func:`truth.simulate_design`."""
        return dict(effects=np.array(self.effects), topics=self.topics,
                    replicates=self.replicates,
                    replicate="crossed" if self.crossed else "replicated", **dict(self.sd))


def truth_setting(x_full: np.ndarray, x_reps: np.ndarray, systems: tuple[str, ...], *,
                  count: int, null_share: float, crossed: bool = True) -> TruthSetting:
    """The known truth calibrated on one metric's scores (module docstring).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> reps = rng.normal(size=(6, 10, 3)) * 0.1 + np.arange(6.0)[:, None, None] / 10
    >>> t = truth_setting(reps.mean(-1), reps, tuple("abcdef"), count=4, null_share=0.5)
    >>> t.systems, t.null_pairs, t.effects[2] == t.effects[3]
    (('f', 'd', 'c', 'a'), 1, True)
    """
    means = x_full.mean(axis=1)
    order = np.argsort(-means, kind="stable")
    pick = order[np.unique(np.linspace(0, len(order) - 1, min(count, len(order))).round()
                           .astype(int))]
    effects = means[pick].astype(float)
    n_null = int(round(null_share * len(pick)))
    if n_null >= 2:
        effects[-n_null:] = effects[-n_null:].mean()
    v = variance_components(x_reps, "crossed" if crossed else "replicated")
    var = dict(zip(v.components, v.var, strict=True))
    sd = tuple((key, float(np.sqrt(max(float(var.get(c, 0.0)), 0.0))))
               for c, key in _SD.items())
    return TruthSetting(tuple(systems[i] for i in pick), tuple(float(e) for e in effects),
                        sd, x_reps.shape[1], x_reps.shape[2], bool(crossed))


def truth_counts(setting: TruthSetting, trials: tuple[int, int], *, alpha: float, seed: int,
                 key: int) -> dict[str, np.ndarray]:
    """The error counts of trials ``[lo, hi)`` (integers that add up over shards): trials
    with a false rejection per method, and per method and pair the right-sign detections,
    wrong-sign ones and false rejections."""
    c = tr.run_trials(trials, alpha=alpha, methods=setting.methods, seed=seed,
                      stream=f"factorial/truth/{key}", **setting.model())
    rows = [TRUTH_METHODS.index(m) for m in setting.methods]  # a row per TRUTH_METHODS

    def placed(v: np.ndarray) -> np.ndarray:
        out = np.zeros((len(TRUTH_METHODS), *v.shape[1:]), v.dtype)
        out[rows] = v
        return out

    return {"fw": placed(c.familywise), "detected": placed(c.detected),
            "wrong": placed(c.wrong), "false": placed(c.false), "trials": np.array(c.trials)}


def truth_rates(setting: TruthSetting, counts: dict[str, np.ndarray], level: float
                ) -> dict[str, np.ndarray]:
    """:func:`truth.error_rates` of merged counts."""
    e = np.array(setting.effects)
    i, j = np.triu_indices(len(e), 1)
    direction = np.sign(e[i] - e[j]).astype(np.int8)
    rows = [TRUTH_METHODS.index(m) for m in setting.methods]
    c = tr.ErrorCounts(setting.methods, direction == 0, direction, int(counts["trials"]),
                       *(counts[k][rows] for k in ("fw", "detected", "wrong", "false")))
    return tr.error_rates(c, level=level)


def split_counts(x: np.ndarray, design: str, model: str, trials: tuple[int, int], *,
                 alpha: float, seed: int, key: int) -> dict[str, np.ndarray]:
    """Split-half agreements of trials ``[lo, hi)``: trials whose halves agree on the system
    effect, and the count of (trial, pair) decisions that agree."""
    s = tr.split_half_agreement(x, trials=trials, design=design, model=model, alpha=alpha,
                                seed=seed, stream=f"factorial/split_half/{key}")
    pairs = x.shape[0] * (x.shape[0] - 1) // 2
    agree = np.rint(s.pair_agree * pairs).astype(np.int64)
    return {"system": np.array([int(s.system_agree.sum())]),
            "pairs": np.array([int(agree.sum())]), "trials": np.array([len(s.system_agree)])}
