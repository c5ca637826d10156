"""The judgement layer: from stored points to every figure, sentence and label Headroom shows.

It reads rows (judgement.rows: every query it makes) and calls the rules in `analysis`, so pages
and reports format what it returns and never judge for themselves. It never writes
(tests/judgement/test_never_writes.py); judgement.vocabulary re-exports the rules' names that
pages and reports need, since they may not import analysis.
"""
