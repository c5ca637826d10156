"""The judgement layer: from stored points to every figure, sentence and label Headroom shows.

It reads rows and calls the rules in `analysis` (pure functions, no Django):
- figures, operating_point, verdict_rows, engine_work, spec_decode, capacity, comparisons,
  costs, scaling, queues: rows in, judgements out, one subject each, for pages, reports and exports.
- rows: every query the layer makes. It never writes (tests/judgement/test_never_writes.py).
- vocabulary: the rules' names pages and reports need (they may not import analysis).
- charts: the chart data the run page and reports draw.
"""
