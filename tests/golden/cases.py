"""Golden cases: every preset, every study on the embedded synthetic default and the README's
examples on ../shared/data, as command-line overrides.

The tables were recorded (``python tests/golden/record.py``) before the study kit redesign
(issue 12); ``tests/test_golden.py`` keeps the code bit-identical to them. A case that would
take more than a few seconds is recorded with smaller sizes (fewer trials or replicates):
the code path is the same, only the loop counts shrink. Parameters added later are pinned to
the value that reproduces the recorded behaviour (``experiment.splits=1``: the one MD5 split of
the first session; ``collection.run_names=tag``: runs were named by their tag when the file
held one).
"""

from __future__ import annotations

#: case name -> overrides (``{data}`` is replaced by the path of ../shared/data)
CASES: dict[str, list[str]] = {
    # the main job: `irsim` on the embedded synthetic collection
    "default": [],
    # every study on the embedded synthetic default (small sizes)
    "swap_synthetic": ["experiment=swap", "experiment.trials=100"],
    "error_rates_synthetic": ["experiment=error_rates", "experiment.trials=20",
                              "experiment.test_B=200", "experiment.sd_samples=10"],
    "effort_synthetic": ["experiment=effort", "experiment.trials=20"],
    "coverage_synthetic": ["experiment=coverage", "collection=synthetic_scores",
                           "experiment.samples=100", "experiment.B=200"],
    "corpus_ci_synthetic": ["experiment=corpus_ci", "experiment.B=300", "experiment.splits=1"],
    "test_errors_synthetic": ["experiment=test_errors", "collection=synthetic_scores",
                              "experiment.trials=300", "experiment.B=200",
                              "experiment.sizes=[25,50]", "experiment.deltas=[0.0,0.05]"],
    # presets (papers' settings) on ../shared/data
    "sakai2006": ["experiment=sakai2006", "data_dir={data}"],
    "sakai_topic_sampling": ["experiment=sakai_topic_sampling", "data_dir={data}",
                             "experiment.trials=200"],
    "sanderson_zobel2005": ["experiment=sanderson_zobel2005", "data_dir={data}",
                            "experiment.trials=20"],
    "park2011": ["experiment=park2011", "experiment.samples=200", "experiment.B=300"],
    "park2011_adhoc8": ["experiment=park2011", "collection=adhoc8", "data_dir={data}",
                        "experiment.samples=200", "experiment.B=300"],
    "cormack_lynam2006": ["experiment=cormack_lynam2006", "experiment.B=300",
                          "collection.runs=20", "experiment.splits=1"],
    "urbano_test_errors": ["experiment=urbano_test_errors", "data_dir={data}",
                           "experiment.trials=300", "experiment.B=200"],
    # README examples on real data
    "matrix_adhoc8_ap": ["collection=matrix", "collection.path={data}/urbano/adhoc8_ap.csv",
                         "collection.metric=AP"],
    "adhoc8_ap_p10": ["collection=adhoc8", "data_dir={data}", "metrics=[AP,P@10]"],
    "discpower_all_methods": [
        "experiment=discpower", "collection=adhoc8", "data_dir={data}", "experiment.gmean=true",
        "experiment.stability=true", "experiment.swap=true", "experiment.rankcorr=true",
        "experiment.tests=[paired_bootstrap,unpaired_bootstrap,t,randomised_tukey_hsd]",
        "experiment.B=200"],
    "seed7_alphas": ["experiment.B=500", "experiment.alpha=[0.01,0.05,0.1]", "seed=7"],
    "swap_adhoc8": ["experiment=swap", "collection=adhoc8", "data_dir={data}",
                    "experiment.sampling=[disjoint,replacement]",
                    "experiment.subset_sizes=[10,20]", "experiment.trials=200"],
    "effort_pools": ["experiment=effort", "experiment.trials=20",
                     "experiment.sampling=[disjoint,replacement]",
                     "experiment.pools=[{metric:AP,depth:20},{metric:nDCG@10,depth:10}]"],
    "corpus_ci_trec_eval": ["experiment=corpus_ci", "collection=trec",
                            "collection.runs={data}/trec_eval/results.test",
                            "collection.qrels={data}/trec_eval/qrels.test",
                            "collection.run_names=tag",  # recorded as the tag STANDARD
                            "experiment.B=300", "experiment.validate=false"],
    "web2012_test_errors": ["experiment=test_errors", "collection=web2012", "data_dir={data}",
                            "metrics=[nDCG@20]", "experiment.trials=200", "experiment.B=200",
                            "experiment.sizes=[25]", "experiment.deltas=[0.0,0.03]"],
    # studies added after the redesign, recorded when they landed
    "budget_dl19": ["experiment=budget_dl19", "data_dir={data}", "experiment.trials=60"],
}
