"""``experiment=compare``: is my run significantly better than that one? Per-pair results.

The question a single paper asks of its own runs, answered for a chosen set of systems: for
every pair (all pairs of ``systems``, or each against a ``baseline``), per metric, the mean
scores, their difference with a paired t confidence interval, the standardised effect size
(``mean(d) / sd(d)``, Sakai's), and the p-value of every selected significance test of
:mod:`irsim.stats` with its multiple-comparison correction over the family of the chosen
pairs (per metric and test).

The closed-form tests (t, Wilcoxon, sign) and the intervals are computed in the study's
finalize; the Monte Carlo tests (randomisation, paired and unpaired bootstrap) in its kernel,
one shard per metric and test, their draws keyed by (seed, test, metric), so the tables are
the same on ``engine=local`` and ``engine=ray`` and for any shard size. Each p-value equals a
call of the test of :mod:`irsim.stats` on the same pair (tested).

Examples
--------
>>> import numpy as np
>>> from irsim.data.matrix import ScoreMatrix
>>> from irsim.kit.common import Shards
>>> x = np.random.default_rng(0).random((1, 4, 20))
>>> m = ScoreMatrix(x, ["AP"], ["bm25", "dense", "splade", "rm3"], [str(i) for i in range(20)])
>>> study, data = make(Config(systems=["dense", "splade"], baseline="bm25"), m, seed=0,
...                    shards=Shards())
>>> study.pairs
(('dense', 'bm25'), ('splade', 'bm25'))
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pyarrow as pa

from irsim.data.matrix import ScoreMatrix
from irsim.engine.base import Shard
from irsim.engine.partials import Slab
from irsim.errors import ConfigError, param, unknown_name
from irsim.kit.common import (
    as_tuple,
    check_choices,
    check_resamples,
    select_metrics,
)
from irsim.params import Options, fingerprint, option
from irsim.registry import Headline, study
from irsim.stats._validation import PValueMode
from irsim.stats.multiple import CORRECTIONS, Correction, adjust
from irsim.stats.registry import get_test, tests_of
from irsim.stats.ttest import paired_t
from irsim.tables import Column, TableSpec, table

__all__ = ["Config", "Compare", "make", "PAIR_KINDS", "STREAM", "COMPARISON"]

#: The kinds of test compare runs: one pair at a time (the tests of :data:`irsim.stats.TESTS`
#: of these kinds; the Monte Carlo ones run in the kernel).
PAIR_KINDS = ("paired", "unpaired")
#: Random streams: ``compare/<test>``, keyed by the metric's index.
STREAM = "compare"

_S, _F = pa.string(), pa.float64()
COMPARISON = TableSpec(
    "comparison", ("compare",),
    "Every chosen pair of systems per metric and test: means, difference with its confidence "
    "interval, effect size, p-value and corrected p-value.",
    (Column("metric", _S, "metric"),
     Column("system_a", _S, "first system of the pair (with `baseline`: the other system)"),
     Column("system_b", _S, "second system (with `baseline`: the baseline)"),
     Column("mean_a", _F, "mean score of `system_a` over the topics"),
     Column("mean_b", _F, "mean score of `system_b`"),
     Column("diff", _F, "`mean_a - mean_b`"),
     Column("ci_lo", _F, "lower limit of the paired t interval of `diff` at `ci_level`"),
     Column("ci_hi", _F, "upper limit of that interval"),
     Column("effect_size", _F, "`diff / sd` of the per-topic differences (Sakai's "
                               "standardised mean difference; null when sd is 0)"),
     Column("test", _S, "significance test (`irsim.stats.TESTS`)"),
     Column("p_value", _F, "two-sided p-value of the test"),
     Column("p_adjusted", _F, "p-value corrected over the chosen pairs of the metric and test "
                              "(`correction`)"),
     Column("correction", _S, "`none`, `bonferroni`, `holm`, `bh` or `by`"),
     Column("B", pa.int64(), "Monte Carlo samples of the test (`B`; null for the "
                             "closed-form tests t, Wilcoxon and sign)"),
     Column("pvalue", _S, "`count` (`count/B`) or `plus_one` (`(count+1)/(B+1)`) for the "
                          "Monte Carlo tests; null for the closed-form ones"),
     Column("significant", pa.bool_(), "`p_adjusted < alpha`")))


@dataclass
class Config(Options):
    """Parameters of ``experiment=compare``."""

    name: str = option("compare", "``compare``.")
    systems: list[str] | None = option(
        None, "The systems to compare (names as in the data); all pairs of them, or each against "
        "`baseline`. None: every system of the data.", tables="data")
    baseline: str | None = option(
        None, "Compare every other system of `systems` with this one (it need not be listed in "
        "`systems`). None: all pairs.", tables="data")
    tests: list[str] = option(
        ["t", "wilcoxon", "randomisation"], "Any of ``t``, ``wilcoxon``, ``sign``, "
        "``randomisation``, ``paired_bootstrap``, ``unpaired_bootstrap`` "
        "(:data:`irsim.stats.TESTS`).")
    B: int = option(10000, "Monte Carlo samples of the randomisation and bootstrap tests.", ge=1)
    pvalue: PValueMode = option(
        PValueMode.count, "Monte Carlo p-value ``count/B`` (as the papers define it; 0 when no "
        "sample is as extreme, printed on the console as ``<1/B``) or ``(count+1)/(B+1)`` "
        "(``plus_one``, never 0).")
    alpha: float = option(0.05, "Significance level of column ``significant``.", gt=0, lt=1)
    correction: Correction = option(
        Correction.holm, "Multiple-comparison correction over the chosen pairs, per metric and "
        "test.")
    ci_level: float = option(0.95, "Confidence level of the interval of the difference.",
                             gt=0, lt=1)
    metrics: list[str] | None = option(
        None, "The metrics to compare on (default: every metric of the data).", tables="data")


@dataclass(frozen=True)
class Compare:
    """The comparison study (see the module docstring): its normalised `config`, the pairs
    it builds from ``systems`` and ``baseline``, and the seed."""

    config: Config
    pairs: tuple[tuple[str, str], ...]
    seed: int
    name: str = "compare"

    def fingerprint(self) -> dict[str, Any]:
        """Parameters that determine the tables (from :class:`Config`,
        :func:`irsim.params.fingerprint`; `systems` and `baseline` through the pairs)."""
        return fingerprint(self, Config, derived={"pairs": [list(p) for p in self.pairs]})

    def _mc(self) -> tuple[str, ...]:
        return tuple(t for t in self.config.tests if get_test(t).monte_carlo)

    def plan(self, data: ScoreMatrix) -> list[Shard]:
        """One shard per (metric, Monte Carlo test): item ``k * tests + j``."""
        n = len(data.metrics) * len(self._mc())
        return [Shard(i, (i, i + 1), (0, 1)) for i in range(n)]

    def fields(self, data: ScoreMatrix) -> dict[str, Slab]:
        n = len(data.metrics) * len(self._mc())
        return {"p": Slab((n, len(self.pairs)), along="items")}

    def _xy(self, data: ScoreMatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        index = {s: i for i, s in enumerate(data.systems)}
        a = np.array([index[p[0]] for p in self.pairs])
        b = np.array([index[p[1]] for p in self.pairs])
        x = data.values[k]
        return x[a], x[b]

    def kernel(self, shard: Shard, data: ScoreMatrix) -> dict[str, np.ndarray]:
        mc = self._mc()
        k, j = divmod(shard.items[0], len(mc))
        x, y = self._xy(data, k)
        test = mc[j]
        spec = get_test(test)
        p = spec.pvalues(x, y, **spec.keywords(self, stream=STREAM, key=(k,)))
        return {"p": p[None, :]}

    def finalize(self, merged: dict[str, Any], data: ScoreMatrix) -> dict[str, pa.Table]:
        mc, cfg = self._mc(), self.config
        rows: dict[str, list] = {c.name: [] for c in COMPARISON.columns}
        for k, metric in enumerate(data.metrics):
            x, y = self._xy(data, k)
            t = paired_t(x, y)
            ci = t.confidence_interval(cfg.ci_level)
            with np.errstate(divide="ignore", invalid="ignore"):
                effect = np.where(t.sd > 0, t.mean / t.sd, np.nan)
            for test in cfg.tests:
                if test in mc:
                    p = merged["p"][k * len(mc) + mc.index(test)]
                else:  # identical runs: the test's identical_pvalue (t: 1, not NaN)
                    p = get_test(test).pvalues(x, y, **get_test(test).study_options(self))
                p_adj = adjust(p, str(cfg.correction))
                for i, (sa, sb) in enumerate(self.pairs):
                    rows["metric"].append(metric)
                    rows["system_a"].append(sa)
                    rows["system_b"].append(sb)
                    rows["mean_a"].append(float(x[i].mean()))
                    rows["mean_b"].append(float(y[i].mean()))
                    rows["diff"].append(float(t.mean[i]))
                    rows["ci_lo"].append(float(ci.low[i]))
                    rows["ci_hi"].append(float(ci.high[i]))
                    rows["effect_size"].append(None if np.isnan(effect[i])
                                               else float(effect[i]))
                    rows["test"].append(test)
                    rows["p_value"].append(float(p[i]))
                    rows["p_adjusted"].append(float(p_adj[i]))
                    rows["correction"].append(str(cfg.correction))
                    rows["B"].append(cfg.B if test in mc else None)
                    rows["pvalue"].append(str(cfg.pvalue) if test in mc else None)
                    rows["significant"].append(bool(p_adj[i] < cfg.alpha))
        return {"comparison": table("comparison", rows)}


def _pairs(data: ScoreMatrix, systems: Any, baseline: Any) -> tuple[tuple[str, str], ...]:
    names = [str(s) for s in as_tuple(systems)] if systems is not None else list(data.systems)
    for s in names:
        if s not in data.systems:
            raise unknown_name(f"system in {param('systems')}", s, data.systems)
    if len(set(names)) != len(names):
        raise ConfigError(f"{param('systems')} lists a system twice: {names}")
    if baseline is None:
        if len(names) < 2:
            raise ConfigError(f"{param('systems')} must name at least two systems, got "
                              f"{names}")
        return tuple(combinations(names, 2))
    base = str(baseline)
    if base not in data.systems:
        raise unknown_name(f"system in {param('baseline')}", base, data.systems)
    others = [s for s in names if s != base]
    if not others:
        raise ConfigError(f"{param('systems')} names no system besides the baseline {base!r}")
    return tuple((s, base) for s in others)


@study("compare", config=Config, data="matrix", order=15,
       title="Per-pair comparison",
       example=dict(overrides={"synthetic": ["experiment.B=200"]},
                    keywords=dict(systems=["sys1", "sys2", "sys3", "sys4"], B=200),
                    figures=["compare_*"]),
       description="is one run significantly better than another? per-pair means, difference "
                   "with CI, effect size and the p-values of every test, corrected",
       tables=[COMPARISON], command="systems",
       # the console: per pair the difference, its interval and effect size, then the
       # corrected p-value of every test (a Monte Carlo p of 0 printed as <1/B)
       headlines={"comparison": Headline(
           ("metric", "system_a", "system_b", "test"), "p_adjusted", samples="B",
           also=("diff", "ci_lo", "ci_hi", "effect_size", "correction"))},
       question=("Is my run significantly better than that one? Per pair of chosen systems: "
                 "the difference with its confidence interval, the effect size and every "
                 "test's p-value, corrected"))
def make(config: Config, data: ScoreMatrix, *, seed: int, shards: Any
         ) -> tuple[Compare, ScoreMatrix]:
    """The comparison of `config` on `data` (restricted to ``config.metrics``), checked (the
    bounds of its fields are checked by :class:`Config` itself)."""
    data = select_metrics(data, config.metrics)
    if len(data.topics) < 2:
        raise ConfigError(f"compare needs >= 2 topics, got {len(data.topics)}")
    tests = check_choices(config.tests, tests_of(*PAIR_KINDS), "test of experiment=compare",
                          param("tests"))
    if not tests:
        raise ConfigError(f"{param('tests')} lists no test")
    check_choices([config.correction], CORRECTIONS, "correction", param("correction"))
    check_choices([config.pvalue], PValueMode.values(), "p-value mode", param("pvalue"))
    check_resamples(config.B, [config.alpha], param("B"), param("alpha"), tests=tests)
    pairs = _pairs(data, config.systems, config.baseline)
    keep = sorted({s for p in pairs for s in p}, key=data.systems.index)
    return Compare(config, pairs=pairs, seed=int(seed)), data.select(systems=keep)
