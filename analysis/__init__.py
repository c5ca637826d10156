"""The rules: pure functions that turn measured points into signed statements.

Nothing here imports Django, so the rules are tested without a database: the judgement package
converts rows into the frozen dataclasses of `analysis.types` (`analysis.convert` does the same
for a runner `PointResult`) and calls these functions. Every figure a sentence quotes is also a
field of the result, so templates format numbers themselves; the wording lives in
`analysis.sentences` and its siblings so it is translated in one place.
"""

from analysis.errors import AnalysisError

__all__ = ["AnalysisError"]
