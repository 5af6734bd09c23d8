"""Golden cases: the main job, every study's own small runs (its registration's
``example.overrides``), the presets (papers' settings, at the sizes of :data:`PRESETS`) and
the README's examples on ../shared/data, as command-line overrides.

No list of studies is kept here: a study's cases come from the registry
(:class:`irsim.registry.Example`), named ``<study>_<case>``, and :func:`study_of` tells
which study a case runs. The tables were recorded (``python tests/golden/record.py``) before
the study kit redesign (issue 12) for the studies of that time, and when a study landed for
the others; ``tests/test_golden.py`` keeps the code bit-identical to them. A case that would
take more than a few seconds is recorded with smaller sizes (fewer trials or replicates):
the code path is the same, only the loop counts shrink. Parameters added later are pinned to
the value that reproduces the recorded behaviour (``experiment.splits=1``: the one MD5 split
of the first session; ``collection.run_names=tag``: runs were named by their tag when the
file held one).
"""

from __future__ import annotations

from importlib.resources import files

import yaml

from irsim.registry import studies

#: Presets recorded as golden cases: preset -> overrides after ``experiment=<preset>`` (the
#: sizes of the recording). A preset of ``irsim/conf/experiment/`` that is not here is in
#: :data:`UNRECORDED`, with the reason.
#: The default alphas of experiment=test_errors that B=200 resolves (B * alpha >= 1, the rule
#: of every study that resamples): cases recorded at B=200 before the rule keep these rows.
ALPHAS_B200 = "[0.005,0.006,0.007,0.008,0.009,0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1]"

PRESETS: dict[str, list[str]] = {
    "sakai2006": ["data_dir={data}"],
    "sakai_topic_sampling": ["data_dir={data}", "experiment.trials=200"],
    "sanderson_zobel2005": ["data_dir={data}", "experiment.trials=20"],
    "park2011": ["experiment.samples=200", "experiment.B=300"],
    "cormack_lynam2006": ["experiment.B=300", "collection.runs=20", "experiment.splits=1"],
    # B=200 resolves alphas >= 1/200 only (B * alpha >= 1): the recorded rows of those alphas
    "urbano_test_errors": ["data_dir={data}", "experiment.trials=300", "experiment.B=200",
                           f"experiment.alpha={ALPHAS_B200}"],
    "budget_dl19": ["data_dir={data}", "experiment.trials=60"],
    # recorded with issue 44 (every study and preset from the registry and the listing)
    "sakai_topic_set_size": ["data_dir={data}"],
    "sakai_topic_set_size_check": ["data_dir={data}", "experiment.check_trials=20"],
    "sakai_topic_set_size_web2012": ["data_dir={data}"],
    "urbano_reliability": ["data_dir={data}", "experiment.B=100", "experiment.check_trials=20"],
    "urbano_reliability_web2012": ["data_dir={data}", "experiment.B=100",
                                   "experiment.check_trials=20"],
}

#: Presets with no golden case, and why (each is a preset of the listing; a new preset must
#: be in PRESETS or here: tests/test_adding_a_study_checks.py). Their studies have golden
#: cases of their own.
UNRECORDED: dict[str, str] = {
    "corpus_ci_dl": "names no runs or qrels: the user gives collection.runs and .qrels",
    "discpower_all_tests": "over 7 minutes at B=200 (8 tests on 129 TREC-8 runs)",
    "multiple_testing_adhoc8": "over a minute at 20 trials (fits and 4 numbers of systems)",
    "urbano2019": "the pooled design's copula fits take minutes",
    "assessors_dl19": "over 2 minutes at B=50 (9 qrels and 16 composites)",
}

#: The main job and the README's examples on real data (not per study).
EXAMPLES: dict[str, list[str]] = {
    # the main job: `irsim` on the embedded synthetic collection
    "default": [],
    "park2011_adhoc8": ["experiment=park2011", "collection=adhoc8", "data_dir={data}",
                        "experiment.samples=200", "experiment.B=300"],
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
                            "experiment.sizes=[25]", "experiment.deltas=[0.0,0.03]",
                            f"experiment.alpha={ALPHAS_B200}"],
}

#: Cases of more than ~3 s (on a busy 2-core machine): tests/test_golden.py marks them
#: ``slow`` (the default run keeps the others, at least one case of most studies;
#: ``.ci/run`` runs them all, and every case under each BLAS kernel).
SLOW: set[str] = {"adhoc8_ap_p10", "cormack_lynam2006", "corpus_ci_synthetic",
                  "discpower_all_methods", "matrix_adhoc8_ap", "sakai2006",
                  "sanderson_zobel2005", "urbano_test_errors", "budget_dl19",
                  "multiple_testing_synthetic", "discpower_synthetic",
                  "reliability_checked", "topic_set_size_checked",
                  "sakai_topic_set_size_check", "factorial_synthetic", "factorial_dl19_qrels"}


def presets() -> list[str]:
    """Every preset shipped (``irsim/conf/experiment/*.yaml``)."""
    return sorted(p.name[:-5] for p in (files("irsim.conf") / "experiment").iterdir()
                  if p.name.endswith(".yaml"))


def study_cases() -> dict[str, list[str]]:
    """Every registered study's own cases: ``<study>_<case>`` -> overrides."""
    return {f"{s.name}_{case}": [f"experiment={s.name}", *overrides]
            for s in studies() for case, overrides in s.example.overrides.items()}


def cases() -> dict[str, list[str]]:
    """Every golden case: the examples, every study's own cases, the recorded presets."""
    out = {**EXAMPLES, **study_cases()}
    out.update({p: [f"experiment={p}", *PRESETS[p]] for p in presets() if p in PRESETS})
    return out


def _default_experiment() -> str:
    config = yaml.safe_load((files("irsim.conf") / "config.yaml").read_text())
    return next(d["experiment"] for d in config["defaults"]
                if isinstance(d, dict) and "experiment" in d)


def study_of(overrides: list[str]) -> str:
    """The study a case runs: its ``experiment=`` (a study, or a preset's study), else the
    default experiment of ``irsim/conf/config.yaml``."""
    name = next((o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")),
                _default_experiment())
    if name in presets():
        spec = yaml.safe_load((files("irsim.conf") / "experiment" / f"{name}.yaml").read_text())
        return next(d for d in spec["defaults"] if isinstance(d, str) and "@" in d
                    ).split("@")[0]
    return name


#: case name -> overrides (``{data}`` is replaced by the path of ../shared/data)
CASES: dict[str, list[str]] = cases()
