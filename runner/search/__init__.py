"""The adaptive sweep: which point to measure next, and what the search left out (SearchRecord).

rules: the knee and SLO tests, shared with analysis.selection; levels: one engine config's load
levels; walk: the engine configs of a grid; state: both together, driven by runner.sweep.
"""
