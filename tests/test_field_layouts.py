"""The typed field layouts (issue 26): a study's declared fields, what its kernels write and
what its ``finalize`` reads are the same names, and those names are the ones checkpoints
written before the layouts hold (a run resumes from them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pytest
from test_swap import assert_identical

from irsim.data.collection import DocCollection
from irsim.data.synthetic import synthetic_scores, synthetic_trec
from irsim.engine import run_study
from irsim.engine.partials import Accumulator
from irsim.experiments import Shards, corpus_ci, error_rates, swap
from irsim.experiments import effort as effort_study
from irsim.experiments.discpower import DiscPower
from irsim.experiments.discpower.fields import (
    BayesDecisionFields,
    BootstrapFields,
    PermutationFields,
    SampleFields,
)
from irsim.kit.bins import LAYOUTS
from irsim.kit.topicsets import ErrorFields, PairErrors

TESTS = ("paired_bootstrap", "unpaired_bootstrap", "randomised_tukey_hsd", "randomisation", "t")
BAYES = ("jzs_bf", "t_posterior")

# The fields main wrote before the layouts (names of a checkpoint's arrays), for the study
# below: variants 0 = metric, 1 = AG metric, 2 = G metric; the paired test on 0 and 1, the
# unpaired on 0 and 2, the permutation tests on 0 and 1, the sampled methods on 0 and 2, the
# Bayesian tests on 0 and 1. <test>_kth_<v> when a shard holds all B replicates of its pairs,
# <test>_top_<v> when replicates are split.
MAIN_NAMES = [
    "bayes_code_0_jzs_bf", "bayes_code_0_t_posterior", "bayes_code_1_jzs_bf",
    "bayes_code_1_t_posterior", "bayes_value_0_jzs_bf", "bayes_value_0_t_posterior",
    "bayes_value_1_jzs_bf", "bayes_value_1_t_posterior", "conc_0_2", "gt_xy_0", "gt_xy_2",
    "gt_yx_0", "gt_yx_2", "max_perf_0", "max_perf_2", "overlap", "paired_count_0",
    "paired_count_1", "paired_{k}_0", "paired_{k}_1", "randomisation_asl_0",
    "randomisation_asl_1", "swap_comps_0", "swap_comps_2", "swap_swaps_0", "swap_swaps_2",
    "ties_0", "ties_2", "tukey_ranges_0", "tukey_ranges_1", "unique", "unpaired_count_0",
    "unpaired_count_2", "unpaired_{k}_0", "unpaired_{k}_2",
]
MAIN_ERROR_NAMES = ["absolute_comparisons", "absolute_errors", "relative_comparisons",
                    "relative_errors"]
MAIN_SWAP_NAMES = ["absolute_comparisons", "absolute_swaps", "max_performance", "overlap",
                   "relative_comparisons", "relative_swaps", "unique_topics"]
MAIN_EXTRA_NAMES = ["dependency_errors", "dependency_pairs", "full_absolute_pairs",
                    "full_absolute_significant", "full_relative_pairs",
                    "full_relative_significant"]


class Reads(dict):
    """The merged fields, recording every name ``finalize`` looks up."""

    def __init__(self, merged: dict[str, Any]) -> None:
        super().__init__(merged)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return super().__contains__(name)


def run_by_hand(study: Any, data: Any) -> tuple[dict[str, Any], set[str], Reads,
                                                dict[str, pa.Table]]:
    """Plan, every shard's kernel, the merge and finalize, as the engine runs them: the
    declared fields, the names the kernels wrote, the merged fields finalize read and its
    tables."""
    fields = study.fields(data)
    acc = Accumulator(fields)
    written: set[str] = set()
    for shard in study.plan(data):
        partial = study.kernel(shard, data)
        written |= set(partial)
        acc.combine(shard, partial)
    merged = Reads(acc.result())
    return fields, written, merged, study.finalize(merged, data)


def discpower_layout_names(study: DiscPower, data: Any) -> set[str]:
    """The names the layouts give the study's fields, walked from its variants."""
    whole = study.whole_replicates(len(data.systems) * (len(data.systems) - 1) // 2)
    names: set[str] = set()
    for vi, v in enumerate(study.variants(data)):
        for test in ("paired_bootstrap", "unpaired_bootstrap"):
            if test in v.tests:
                f = BootstrapFields.of(test, vi)
                names |= {f.count, f.kth if whole else f.top}
        if "randomised_tukey_hsd" in v.tests:
            names.add(PermutationFields(vi).tukey_ranges)
        if "randomisation" in v.tests:
            names.add(PermutationFields(vi).randomisation_asl)
    sampled = study.sampled(data)
    for x, vi in enumerate(sampled):
        s = SampleFields(vi)
        names |= {s.gt_xy, s.gt_yx, s.swap_comps, s.swap_swaps, s.max_perf, s.ties}
        names |= {s.conc(vj) for vj in sampled[x + 1:]}
    names |= {SampleFields.UNIQUE, SampleFields.OVERLAP}
    for vi in study.bayes_variants(data):
        names |= {n for t in study.config.bayes for n in (BayesDecisionFields(vi, t).code,
                                                     BayesDecisionFields(vi, t).value)}
    return names


def bootstrap_alternatives(study: DiscPower, data: Any) -> set[str]:
    """Per bootstrap test and variant, both the top-k and the kth field (one is declared,
    ``finalize`` asks for both)."""
    return {n for vi, v in enumerate(study.variants(data)) for t in v.tests
            if t.endswith("_bootstrap")
            for n in (BootstrapFields.of(t, vi).top, BootstrapFields.of(t, vi).kth)}


@pytest.mark.parametrize("shard_replicates, kth", [(None, True), (250, False)])
def test_discpower_plan_kernel_and_finalize_agree(shard_replicates: int | None, kth: bool):
    m = synthetic_scores(systems=5, topics=12, seed=1).matrix
    study = DiscPower.of(tests=TESTS, B=500, seed=3, gmean=True, stability=True,
                         fuzziness=(0.05,), swap=True, rankcorr=True, bayes=BAYES,
                         shard_replicates=shard_replicates)
    fields, written, merged, tables = run_by_hand(study, m)
    declared = set(fields)
    # the names main's checkpoints hold (the shape decides kth or top)
    assert sorted(declared) == sorted(n.format(k="kth" if kth else "top") for n in MAIN_NAMES)
    assert declared == discpower_layout_names(study, m)
    assert written == declared  # every declared field comes from some shard; nothing else
    assert declared <= merged.read  # finalize reads every field ...
    # ... and asks for nothing else but the other form of a bootstrap test's top-k field
    assert merged.read - declared <= bootstrap_alternatives(study, m) - declared
    assert len(study.plan(m)) == (1 if kth else 2)  # both merge paths ran
    engine_tables, _ = run_study(study, m)  # the engine's own run: the same tables
    assert_identical(tables, engine_tables)
    # per alpha: 5 tests of the metric, 4 of AG (no unpaired), 1 of G (the unpaired)
    assert tables["discpower"].num_rows == (5 + 4 + 1) * 2


def error_rate_layout_names(extras: bool) -> set[str]:
    names: set[str] = set()
    for lay in LAYOUTS:
        f = ErrorFields(lay)
        names |= {f.comparisons, f.errors}
        if extras:
            names |= {f.full_pairs, f.full_significant}
    if extras:
        names |= {ErrorFields.DEPENDENCY_ERRORS, ErrorFields.DEPENDENCY_PAIRS}
    return names


def check_error_fields(fields: Iterable[str], written: set[str], merged: Reads,
                       extras: bool, own: set[str] = frozenset()) -> None:
    declared = set(fields)
    main = set(MAIN_ERROR_NAMES) | (set(MAIN_EXTRA_NAMES) if extras else set())
    assert declared == main | own
    assert declared - own == error_rate_layout_names(extras)
    assert written == declared
    assert merged.read == declared


def test_error_rates_plan_kernel_and_finalize_agree():
    m = synthetic_scores(systems=6, topics=20, seed=2).matrix
    config = error_rates.Config(subset_sizes=[5, 10], trials=20, tests=["t"],
                                windows=[[0.0, 0.05]], sd_sizes=[5])
    study, data = error_rates.make(config, m, seed=0, shards=Shards())
    fields, written, merged, tables = run_by_hand(study, data)
    check_error_fields(fields, written, merged, extras=True, own={error_rates.SD_FIELD})
    assert_identical(tables, run_study(study, data)[0])
    er = tables["error_rates"].to_pandas()
    pairs = len(study.systems) * (len(study.systems) - 1) // 2
    # every pair in every trial, per size and bin kind; the window holds some of them
    sums = er.groupby(["subset_size", "bin_kind", "test"]).comparisons.sum()
    assert (sums.xs("none", level="test") == pairs * 20).all()
    assert (sums.xs("t", level="test") <= pairs * 20).all()


def test_effort_plan_kernel_and_finalize_agree():
    runs, qrels = synthetic_trec(runs=6, topics=12, docs_per_topic=80, depth=50, seed=1,
                                 quality_sd=0.4, topic_sd=0.5)
    config = effort_study.Config(subset_sizes=[4], trials=10, pools=[["AP", 10]])
    study, data = effort_study.make(config, DocCollection(runs, qrels, 50), seed=1,
                                    shards=Shards())
    assert isinstance(study.errors, PairErrors) and not study.errors.extras
    fields, written, merged, tables = run_by_hand(study, data)
    check_error_fields(fields, written, merged, extras=False)
    assert_identical(tables, run_study(study, data)[0])
    pairs = len(study.systems) * (len(study.systems) - 1) // 2
    assert tables["effort_summary"].column("comparisons").to_pylist() == [pairs * 10]


def test_swap_plan_kernel_and_finalize_agree():
    m = synthetic_scores(systems=5, topics=20, seed=1).matrix
    config = swap.Config(sampling=["disjoint"], subset_sizes=[5], trials=300)
    study, data = swap.make(config, m, seed=0, shards=Shards(replicates=250))
    fields, written, merged, tables = run_by_hand(study, data)
    assert len(study.plan(data)) == 2  # two trial blocks merged
    assert sorted(fields) == MAIN_SWAP_NAMES
    layout = {n for lay in LAYOUTS for n in swap.SwapFields(lay).names}
    assert layout == set(fields) - {"max_performance", "unique_topics", "overlap"}
    assert written == set(fields)
    assert merged.read == set(fields)
    assert_identical(tables, run_study(study, data)[0])
    rates = tables["swap_rates"].to_pandas()
    # 10 pairs x 300 trials per bin kind
    assert (rates.groupby("bin_kind").comparisons.sum() == 3000).all()


# corpus_ci's fields on main: per subset (full corpus, halves A and B) these, prefixed "A_" /
# "B_" for the halves
MAIN_CORPUS_NAMES = [
    "ap", "se", "sd_logit", "lo_normal", "hi_normal", "lo_logit", "hi_logit", "lo_bca",
    "hi_bca", "lo_normal_small_r", "hi_normal_small_r", "lo_logit_small_r",
    "hi_logit_small_r", "lo_bca_small_r", "hi_bca_small_r", "map", "map_se_boot",
    "map_se_par", "lmap", "lmap_se_boot", "lmap_se_par",
]


@pytest.mark.parametrize("validate", [True, False])
def test_corpus_ci_plan_kernel_and_finalize_agree(validate: bool):
    runs, qrels = synthetic_trec(runs=5, topics=4, docs_per_topic=60, depth=40, seed=2)
    config = corpus_ci.Config(B=100, splits=2, validate=validate)
    study, lists = corpus_ci.make(config, DocCollection(runs, qrels, 40), seed=1,
                                  shards=Shards(4))
    fields, written, merged, tables = run_by_hand(study, lists)
    prefixes = ("", "A_", "B_") if validate else ("",)
    assert list(fields) == [p + n for p in prefixes for n in MAIN_CORPUS_NAMES]
    layout = [n for sub in ("full", "A", "B")[:len(prefixes)]
              for f in [corpus_ci.SubsetFields(sub)]
              for n in (*f.per_list(study.interval_names), *f.per_run())]
    assert list(fields) == layout
    assert written == set(fields)
    # the tables read every field but the halves' sds (declared and shipped, unused)
    unused = {f for sub in ("A", "B")[:len(prefixes) - 1]
              for f in (corpus_ci.SubsetFields(sub).se, corpus_ci.SubsetFields(sub).sd_logit)}
    assert merged.read == set(fields) - unused
    assert len(study.plan(lists)) == (2 * 2 if validate else 2)  # 5 runs: two 4-run units
    assert_identical(tables, run_study(study, lists)[0])
    assert tables["corpus_ci"].num_rows == 5 * 4 * len(study.interval_names)
