"""The judgement layer: pure functions that turn stored points into signed statements.

Nothing here imports Django: views convert rows into the small frozen dataclasses of
`analysis.types` and call these functions. `convert` turns a runner `PointResult`
into those dataclasses. Every figure a sentence quotes is also a field of the result, so
templates can format numbers themselves; sentences live in `sentences` so they can be
translated in one place.

Modules:
- selection: operating point by saturation knee, SLO, Pareto frontier, and engineer override
- compare: controlled baseline vs candidate, and local result vs dated external reference
- repeats: capacity estimate from repeats (the lowest) with its spread
- scaling: node throughput and scaling efficiency against a single-replica reference
- verdicts: which engine limit binds at a point, and what a sweep changed
- diagnosis: each engine config's limits along its load ladder
"""

from analysis.errors import AnalysisError

__all__ = ["AnalysisError"]
