"""What both designs of experiment=test_errors share: the tests, deltas and alphas they run
by default and the table of the Bayesian tests' decisions (``bayes_decisions``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from irsim.errors import ConfigError
from irsim.stats.binomial import clopper_pearson
from irsim.tables import table as build_table

if TYPE_CHECKING:
    from irsim.engine.session import Engine
    from irsim.experiments import Shards

__all__ = ["TESTS", "DELTAS", "ALPHAS", "Design", "bayes_decisions_table"]

#: Tests this study runs, by config name (the paired tests of :mod:`irsim.stats`).
TESTS = ("t", "wilcoxon", "sign", "randomisation", "paired_bootstrap")
#: Default true differences (0: Type I error).
DELTAS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10)
#: Default significance levels (Urbano et al. 2019).
ALPHAS = (0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,
          0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1)


def bayes_decisions_table(counts: np.ndarray, trials: np.ndarray, keys: list[dict],
                          tests: tuple[str, ...], rules: list[str], ci_level: float
                          ) -> pa.Table:
    """Table ``bayes_decisions``: one row per (configuration, Bayesian test) from the integer
    decision counts.

    Parameters
    ----------
    counts : ndarray of int, shape (configurations, tests, 4)
        Trials per decision, in the order of :data:`irsim.stats.bayes.DECISIONS`.
    trials : ndarray of int, shape (configurations,)
    keys : list of dict
        ``metric``, ``n`` and ``delta`` of each configuration.
    tests, rules : sequences of str
        The Bayesian tests and their rules (:meth:`TestErrors.bayes_rule`).
    ci_level : float
        Level of the Clopper-Pearson intervals.

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> t = bayes_decisions_table(np.array([[[3, 1, 80, 16]], [[40, 2, 8, 50]]]),
    ...                           np.array([100, 100]),
    ...                           [{"metric": "AP", "n": 25, "delta": 0.0},
    ...                            {"metric": "AP", "n": 25, "delta": 0.02}],
    ...                           ("jzs_bf",), ["BF10 >= 3"], 0.95).to_pandas()
    >>> t[["delta", "different_rate", "power", "wrong_sign_rate", "equivalent_rate"]
    ...   ].values.tolist()
    [[0.0, 0.04, nan, nan, 0.8], [0.02, 0.42, 0.4, 0.02, 0.08]]
    """
    cols: dict[str, list] = {c: [] for c in ("metric", "n", "delta", "test", "rule", "trials",
                                             "better", "worse", "equivalent", "undecided")}
    right, wrong = [], []
    for item, key in enumerate(keys):
        k, delta = int(trials[item]), float(key["delta"])
        for bi, test in enumerate(tests):
            better, worse, equivalent, undecided = (int(v) for v in counts[item, bi])
            for c, v in (("metric", key["metric"]), ("n", int(key["n"])), ("delta", delta),
                         ("test", test), ("rule", rules[bi]), ("trials", k),
                         ("better", better), ("worse", worse), ("equivalent", equivalent),
                         ("undecided", undecided)):
                cols[c].append(v)
            right.append(better if delta > 0 else worse if delta < 0 else -1)
            wrong.append(worse if delta > 0 else better if delta < 0 else -1)
    trials_ = np.asarray(cols["trials"], np.int64)
    out: dict[str, Any] = dict(cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, hits in (("different", np.asarray(cols["better"]) + np.asarray(cols["worse"])),
                           ("power", np.asarray(right, np.int64)),
                           ("wrong_sign", np.asarray(wrong, np.int64)),
                           ("equivalent", np.asarray(cols["equivalent"], np.int64))):
            known = hits >= 0
            h = np.where(known, hits, 0)
            lo, hi = clopper_pearson(h, trials_, ci_level)
            rate = h / trials_
            stem = "power" if name == "power" else f"{name}_rate"
            lo_name = "power_lo" if name == "power" else f"{name}_lo"
            hi_name = "power_hi" if name == "power" else f"{name}_hi"
            for c, v in ((stem, rate), (lo_name, lo), (hi_name, hi)):
                out[c] = pa.array(np.where(known, v, np.nan), pa.float64(), mask=~known)
    return build_table("bayes_decisions", out)


@dataclass
class Design:
    """A design of experiment=test_errors: one option of the config group
    ``experiment/design`` (``experiment/design=<name>`` on the command line, ``design=`` in
    Python), whose fields are the design's own parameters (``experiment.design.<key>``) and
    nothing else. A design knows its data preparation, whether it pools the collections of a
    metric and its study class (:meth:`make`); the study's ``make`` only calls it.

    Subclasses: :class:`~irsim.experiments.test_errors.shift.Shift` and
    :class:`~irsim.experiments.test_errors.urbano2019.Urbano2019`; each declares a field
    ``name`` (its option's name, what the manifest records).
    """

    #: Whether several collections of a metric are read pooled (one generator over all of
    #: them) rather than one study per collection.
    POOLS: ClassVar[bool] = False
    #: The option's name in the group (the default of its ``name`` field).
    NAME: ClassVar[str] = ""

    def __post_init__(self) -> None:
        name = getattr(self, "name", self.NAME)
        if name != self.NAME:
            raise ConfigError(f"design name {name!r} is not this design ({self.NAME}): select "
                              f"a design with experiment/design={name} (Python: "
                              f"design={name!r})")

    def make(self, config: Any, data: Any, *, seed: int, shards: Shards,
             engine: Engine | None = None) -> tuple[Any, Any]:
        """The study object and the data its kernel reads, from the study's `config` (the
        shared parameters) and this design's own."""
        raise NotImplementedError(f"{type(self).__name__} does not define make")

