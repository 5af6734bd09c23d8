"""experiment=compare: every number against its oracle (scipy's paired t and Wilcoxon,
statsmodels' corrections, irsim.stats' Monte Carlo tests called directly), both doors equal,
bad input one clear error."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA
from scipy import stats as sps

import irsim
from irsim.runner import compose_config, run

AP = SHARED_DATA / "urbano" / "adhoc8_ap.csv"
SYSTEMS = ["run2", "run3", "run9", "run12"]


def frame() -> pd.DataFrame:
    return pd.read_csv(AP)


@pytest.fixture(scope="module")
def result():
    return irsim.compare(frame(), metric="AP", systems=SYSTEMS, B=2000, seed=3,
                         tests=["t", "wilcoxon", "sign", "randomisation", "paired_bootstrap"])


def test_every_number_equals_its_oracle(result):
    from statsmodels.stats.multitest import multipletests

    df = result.to_pandas("comparison")
    data = frame()
    pairs = [("run2", "run3"), ("run2", "run9"), ("run2", "run12"), ("run3", "run9"),
             ("run3", "run12"), ("run9", "run12")]
    assert list(df.drop_duplicates(["system_a", "system_b"])[["system_a", "system_b"]]
                .itertuples(index=False, name=None)) == pairs
    for test, part in df.groupby("test", sort=False):
        ps = []
        for (a, b), row in zip(pairs, part.itertuples(), strict=True):
            x, y = data[a].to_numpy(), data[b].to_numpy()
            tt = sps.ttest_rel(x, y)
            ci = tt.confidence_interval(0.95)
            assert row.mean_a == pytest.approx(x.mean(), rel=1e-14)
            assert row.diff == pytest.approx((x - y).mean(), rel=1e-12, abs=1e-15)
            assert (row.ci_lo, row.ci_hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
            assert row.effect_size == pytest.approx((x - y).mean() / (x - y).std(ddof=1),
                                                    rel=1e-10)
            if test == "t":
                want = tt.pvalue
            elif test == "wilcoxon":
                want = irsim.wilcoxon(x, y).pvalue
            elif test == "sign":
                want = irsim.sign_test(x, y).pvalue
            else:  # the Monte Carlo tests: the same stream (seed, test, metric 0)
                fn = irsim.randomisation_test if test == "randomisation" else \
                    irsim.paired_bootstrap
                i = pairs.index((a, b))
                xs = data[[p[0] for p in pairs]].to_numpy().T
                ys = data[[p[1] for p in pairs]].to_numpy().T
                want = fn(xs, ys, B=2000, seed=3, study=f"compare/{test}", key=(0,)).pvalue[i]
            assert row.p_value == pytest.approx(float(want), rel=1e-12), (test, a, b)
            ps.append(row.p_value)
        holm = multipletests(ps, method="holm")[1]
        assert part.p_adjusted.to_numpy() == pytest.approx(holm, rel=1e-12)
        assert (part.significant == (part.p_adjusted < 0.05)).all()
    # the printed answer: per pair the difference, its interval and effect size, then the
    # corrected p-values (tests/test_console.py checks its numbers)
    lines = result.headline().splitlines()
    assert lines[0] == "comparison: p_adjusted by test (correction=holm, metric=AP)"
    assert lines[1].split() == ["system_a", "system_b", "diff", "ci_lo", "ci_hi",
                                "effect_size", "t", "wilcoxon", "sign", "randomisation",
                                "paired_bootstrap"]
    assert [ln.split()[:2] for ln in lines[2:]] == [list(p) for p in pairs]


def test_baseline_and_both_doors(tmp_path):
    py = irsim.compare(frame(), metric="AP", systems=["run9", "run12"], baseline="run2",
                       B=500, seed=1, correction="bh")
    cfg = compose_config(["experiment=compare", "collection=matrix", f"collection.path={AP}",
                          "collection.metric=AP", "experiment.systems=[run9,run12]",
                          "experiment.baseline=run2", "experiment.B=500", "seed=1",
                          "experiment.correction=bh", "quiet=true"])
    cli = run(cfg, tmp_path)
    assert cli["comparison"].equals(py.tables["comparison"])
    df = py.to_pandas("comparison")
    assert set(zip(df.system_a, df.system_b, strict=True)) == {("run9", "run2"),
                                                               ("run12", "run2")}
    report = (tmp_path / "report.md").read_text()
    assert "## Per-pair comparison" in report and "compare_AP.png" in report
    assert (tmp_path / "compare_AP.png").stat().st_size > 5000
    assert pq.read_table(tmp_path / "results" / "comparison.parquet").num_rows == 2 * 3


def test_shards_do_not_change_the_tables(result):
    again = irsim.compare(frame(), metric="AP", systems=SYSTEMS, B=2000, seed=3,
                          tests=["t", "wilcoxon", "sign", "randomisation", "paired_bootstrap"],
                          shard_items=1, shard_replicates=100)
    assert again.tables["comparison"].equals(result.tables["comparison"])


@pytest.mark.parametrize("kwargs,message", [
    (dict(systems=["run2", "rnu3"]), r"unknown system in systems 'rnu3' \(did you mean"),
    (dict(systems=["run2"]), "must name at least two systems"),
    (dict(systems=["run2", "run2"]), "lists a system twice"),
    (dict(systems=["run2"], baseline="run2"), "names no system besides the baseline"),
    (dict(systems=["run2", "run3"], tests=["tukey_hsd"]), "unknown test of experiment=compare"),
    (dict(systems=["run2", "run3"], ci_level=1.5), r"ci_level must be inside \(0, 1\)"),
    # typed fields: OmegaConf refuses the wrong type; a scalar for a list is a list of one
    (dict(systems="run2"), "must name at least two systems"),
    (dict(baseline=["run2"]), r"^baseline: Cannot convert 'ListConfig' to string"),
    (dict(systems=["run2", "run3"], tests=1.5), r"unknown test of experiment=compare '1.5'"),
    (dict(systems=["run2", "run3"], correction="hlm"),
     r"^unknown value of correction 'hlm' \(did you mean 'holm'\?\); valid: bh, bonferroni"),
    (dict(systems=["run2", "run3"], B=[5]),
     r"^B: Value '\[5\]' of type 'ListConfig' could not be converted to Integer"),
])
def test_bad_parameters_are_one_clear_error(kwargs, message):
    with pytest.raises(irsim.ConfigError, match=message):
        irsim.compare(frame(), metric="AP", **kwargs)


def test_a_scalar_for_a_list_is_a_list_of_one_in_both_doors(tmp_path):
    """``tests="t"`` is ``tests=["t"]`` in Python, and ``experiment.tests=t`` is
    ``experiment.tests=[t]`` on the command line: the same tables."""
    one = irsim.compare(frame(), metric="AP", systems=SYSTEMS, tests="t", B=200, seed=3)
    listed = irsim.compare(frame(), metric="AP", systems=SYSTEMS, tests=["t"], B=200, seed=3)
    assert one.tables["comparison"].equals(listed.tables["comparison"])
    assert set(one.tables["comparison"].column("test").to_pylist()) == {"t"}
    from irsim.runner import compose_config

    cfg = compose_config(["experiment=compare", "experiment.tests=t",
                          "experiment.systems=run2"])
    assert list(cfg.experiment.tests) == ["t"] and list(cfg.experiment.systems) == ["run2"]


def test_the_compare_subcommand(tmp_path, capsys):
    """irsim compare A B ...: the named systems (any characters), the rest overrides; the
    Python door's tables; an unknown system is one line and exit code 2."""
    from irsim.cli import _study_command, command_overrides, main

    # the subcommand comes from the registration (command="systems"), not from the CLI
    assert [_study_command(w) for w in ("compare", "swap", "list", "experiment=x")] == [
        "compare", None, None, None]
    assert command_overrides("compare", ["a b", "it's", "seed=2"]) == [
        "experiment=compare", "experiment.systems=['a b','it\\'s']", "seed=2"]
    common = ["collection=matrix", f"collection.path={AP}", "collection.metric=AP",
              "experiment.B=300", "quiet=true"]
    main(["compare", "run2", "run9", *common, f"hydra.run.dir={tmp_path / 'run'}"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("comparison: p_adjusted (correction=holm, metric=AP, system_a=run2, "
                      "system_b=run9)")
    assert out[1].startswith("diff=") and out[2].split() == ["test", "p_adjusted"]
    assert [ln.split()[0] for ln in out[3:6]] == ["t", "wilcoxon", "randomisation"]
    py = irsim.compare(frame(), metric="AP", systems=["run2", "run9"], B=300)
    assert pq.read_table(tmp_path / "run" / "results" / "comparison.parquet").equals(
        py.tables["comparison"])
    with pytest.raises(SystemExit) as exc:
        main(["compare", "run2", "rnu9", *common, f"hydra.run.dir={tmp_path / 'bad'}"])
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "unknown system in experiment.systems 'rnu9'" in err[0]
