"""Benchmark: the urbano2019 design's Type II power against the paper's published power.

Runs ``experiment=urbano2019`` (t test, two-tailed, alpha = 0.05) through the Python door
and prints, per (metric, n, delta), the share of trials significant with the true sign
(``type_2``), with the wrong sign (``type_3``), their sum (what the paper counts as power:
R/12-type_2.R takes ``ecdf(p)(alpha)`` of the two-tailed p-values), its binomial standard
error, and the paper's value (julian-urbano/sigir2019-statistical,
``output/type_2_by_delta/alpha0.050/type_2_by_delta_<metric>_<n>_alpha0.050.csv``, column
``t2``; 1.67 million trials, three decimals). The fit is slow (minutes per metric on two
cores): give ``--fit-cache`` to reuse it.

Usage::

    python bench/bench_urbano_power.py --data ../shared/data --metrics AP nDCG@20 \\
        --sizes 25 50 100 --trials 3000 --fit-cache ~/.cache/irsim/fits

Measured (issue 29, simIReff's continuous families; 3,000 trials per cell, seed 0, two
cores, other jobs beside; fit included): nDCG@20 and ERR@20 at 25, 50 and 100 topics in 8 min,
AP and P@10 in 11 min, P@10 and RR in 13 min; docs/studies/test_errors.md has the table.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

#: The paper's two-tailed t test power at alpha = 0.05 (column ``t2`` of its output files).
PAPER = {
    ("AP", 25): (0.074, 0.206, 0.411, 0.618, 0.770),
    ("AP", 50): (0.095, 0.360, 0.670, 0.862, 0.947),
    ("AP", 100): (0.138, 0.589, 0.889, 0.978, 0.996),
    ("nDCG@20", 25): (0.080, 0.175, 0.320, 0.495, 0.662),
    ("nDCG@20", 50): (0.105, 0.295, 0.556, 0.771, 0.901),
    ("nDCG@20", 100): (0.148, 0.491, 0.813, 0.947, 0.989),
    ("ERR@20", 25): (0.086, 0.254, 0.488, 0.693, 0.822),
    ("ERR@20", 50): (0.121, 0.435, 0.729, 0.873, 0.931),
    ("ERR@20", 100): (0.178, 0.669, 0.888, 0.956, 0.985),
    ("P@10", 25): (0.056, 0.091, 0.164, 0.270, 0.394),
    ("P@10", 50): (0.059, 0.138, 0.286, 0.481, 0.667),
    ("P@10", 100): (0.069, 0.229, 0.502, 0.757, 0.908),
    ("RR", 25): (0.051, 0.063, 0.088, 0.125, 0.171),
}
#: The deltas of :data:`PAPER`'s columns.
DELTAS = (0.01, 0.03, 0.05, 0.07, 0.09)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get(
        "IRSIM_TEST_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    ap.add_argument("--metrics", nargs="+", default=["AP", "nDCG@20"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[25])
    ap.add_argument("--trials", type=int, default=3000)
    ap.add_argument("--fit-cache", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from irsim.runner import compose_config, run

    overrides = ["experiment=urbano2019", f"data_dir={args.data}",
                 f"metrics=[{','.join(args.metrics)}]", "experiment.tests=[t]",
                 "experiment.alternatives=[two-sided]", "experiment.alpha=[0.05]",
                 f"experiment.sizes=[{','.join(map(str, args.sizes))}]",
                 f"experiment.deltas=[{','.join(map(str, DELTAS))}]",
                 "experiment.trials=1000", f"experiment.design.power_trials={args.trials}",
                 f"seed={args.seed}", "quiet=true"]
    if args.fit_cache:
        overrides.append(f"experiment.design.fit_cache={args.fit_cache}")
    with tempfile.TemporaryDirectory() as tmp:
        tables = run(compose_config(overrides), tmp, report=False)
        t2 = tables["type_2"].to_pandas()
        t3 = tables["type_3"].to_pandas()
    key = ["metric", "n", "delta"]
    t2 = t2[t2["tail"] == "two-sided"]
    m = t2.merge(t3[key + ["rejections"]], on=key, suffixes=("", "_3"))
    m["true_sign"] = m.rejections / m.trials
    m["wrong_sign"] = m.rejections_3 / m.trials
    m["power"] = m.true_sign + m.wrong_sign
    m["se"] = np.sqrt(m.power * (1 - m.power) / m.trials)
    m["paper"] = [PAPER.get((r.metric, r.n), (np.nan,) * 5)[DELTAS.index(round(r.delta, 2))]
                  for r in m.itertuples()]
    m["gap"] = m.power - m.paper
    pd.set_option("display.width", 160)
    print(m[key + ["trials", "true_sign", "wrong_sign", "power", "se", "paper", "gap"]]
          .round(3).to_string(index=False))


if __name__ == "__main__":
    main()
