"""Evaluation measures: parsing, vectorised per-topic kernels, ``evaluate`` and aggregation.

>>> from irsim.metrics import parse_measure
>>> str(parse_measure("P@10"))
'P@10'
"""

from irsim.metrics import (  # noqa: F401  (register the kernels)
    linear,
    ntcir_measures,
    trec_measures,
)
from irsim.metrics.aggregate import aggregate
from irsim.metrics.evaluate import evaluate
from irsim.metrics.measures import Measure, available_measures, parse_measure
from irsim.metrics.multi import composite_qrels, evaluate_many

__all__ = ["Measure", "aggregate", "available_measures", "composite_qrels", "evaluate",
           "evaluate_many", "parse_measure"]
