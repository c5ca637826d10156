"""The names pages and reports need from the rules, in one place.

dashboard/ and reports/ never import analysis (.importlinter), so the error they catch, the
result types they annotate, the unit and latency vocabulary and the percentage rule they write
numbers with are re-exported here, and only here.
"""

from __future__ import annotations

from analysis import AnalysisError, parity, selection, sentences
from analysis.types import (
    LATENCY_FIELDS,
    LATENCY_LABELS,
    REFERENCE_UNITS,
    UNIT_OUTPUT_TPS_PER_GPU,
    CapacityEstimate,
    PointFigures,
    ScalingResult,
    Verdict,
)

# How the run page and reports write a percentage: one rule for every one of them (the
# sentences use it too), so a +0.38% step never reads as "+0%".
pct = sentences.pct
percent = sentences.percent
pct_decimals = sentences.pct_decimals

# A sentence as its template and values, which a report translates (reports.wording.say).
Sentence = sentences.Sentence

# The selection form's defaults, as the rules define them.
DEFAULT_LATENCY_GROWTH_PCT = selection.DEFAULT_LATENCY_GROWTH_PCT
DEFAULT_THROUGHPUT_GAIN_PCT = selection.DEFAULT_THROUGHPUT_GAIN_PCT

# Output parity's result and the templates a report translates.
Parity = parity.Parity
PARITY_TEMPLATES = parity.PARITY_TEMPLATES

__all__ = [
    "DEFAULT_LATENCY_GROWTH_PCT",
    "DEFAULT_THROUGHPUT_GAIN_PCT",
    "LATENCY_FIELDS",
    "LATENCY_LABELS",
    "PARITY_TEMPLATES",
    "REFERENCE_UNITS",
    "UNIT_OUTPUT_TPS_PER_GPU",
    "AnalysisError",
    "CapacityEstimate",
    "Parity",
    "PointFigures",
    "ScalingResult",
    "Sentence",
    "Verdict",
    "pct",
    "pct_decimals",
    "percent",
]
