"""The one error the analysis layer raises."""

from __future__ import annotations


class AnalysisError(ValueError):
    """Inputs that cannot honestly give the asked-for figure; the message says why.

    A subclass of ValueError so callers that already treat bad input as ValueError keep working,
    while views can catch exactly this and show the message instead of a silent number.
    """
