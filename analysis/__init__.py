"""The rules: pure functions that turn measured points into signed statements.

Nothing here imports Django: the judgement package converts rows into the small frozen dataclasses
of
`analysis.types` and call these functions. `convert` turns a runner `PointResult`
into those dataclasses. Every figure a sentence quotes is also a field of the result, so
templates can format numbers themselves; sentences live in `sentences` so they can be
translated in one place.

Modules:
- selection: operating point by saturation knee, SLO, Pareto frontier, and engineer override
- compare: controlled baseline vs candidate, and local result vs dated external reference
- repeats: capacity estimate from repeats (the lowest) with its spread
- scaling: node throughput and scaling efficiency against a single-replica reference
- verdicts: which engine limit binds at a point
- sweep_story: what a sweep changed across its engine configs
- diagnosis: each engine config's limits along its load ladder
- causes, sentences: every sentence a verdict, a step or a selection says
- caveats, checks: what makes a stored point doubtful, and why
- cost, hardware, parity: money and energy, the hardware's share, output parity
"""

from analysis.errors import AnalysisError

__all__ = ["AnalysisError"]
