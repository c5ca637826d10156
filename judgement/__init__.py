"""The judgement layer: from stored points to every figure, sentence and label Headroom shows.

- analysis: the rules, as pure functions over small frozen dataclasses (no Django).
- judge: the one entry point for pages, reports and exports: rows in, judgements out.
- charts: the chart data the run page and reports draw.

This file imports nothing, so the pure rules load without Django.
"""
