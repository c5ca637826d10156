"""Speculative decoding's acceptance per point, as the run page shows it where it applies.

The figures are vLLM's own (runner.schema.samples.QueueSummary: acceptance rate = accepted /
draft tokens, mean acceptance length = 1 + accepted / drafts), read from the point's stored
queue summary. A point whose engine ran without speculative decoding has none; a run none of
whose points has any shows no column at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.models import Point
from judgement.figures import point_result


@dataclass(frozen=True)
class SpecDecode:
    """One point's acceptance: the two rates (None when the window had no draft), the counts
    they rest on, and each draft position's acceptance ("1" for the first drafted token)."""

    acceptance_rate: float | None
    mean_acceptance_length: float | None
    drafts: float
    draft_tokens: float
    accepted_tokens: float
    by_position: list[tuple[str, float]]

    @property
    def detail(self) -> str:
        """What the cell's figures rest on, in a sentence."""
        if not self.drafts:
            return "the engine ran speculative decoding but proposed no draft in this point"
        positions = ", ".join(f"{pos}: {rate * 100:.1f}%" for pos, rate in self.by_position)
        text = (f"{self.accepted_tokens:,.0f} of {self.draft_tokens:,.0f} draft tokens accepted "
                f"over {self.drafts:,.0f} drafts; mean acceptance length = 1 + accepted / drafts "
                "(the bonus token included)")
        return f"{text}; accepted by draft position {positions}" if positions else text


def spec_decode(point: Point) -> SpecDecode | None:
    """The point's acceptance, or None when its engine exposed no speculative-decoding
    counters (an engine started without --speculative-config), or whose stored result cannot
    be read (judgement.figures.figures_by_key says why for the page)."""
    try:
        queue = point_result(point).queue
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None
    if queue.spec_drafts is None or queue.spec_accepted_tokens is None:
        return None
    by_position = queue.spec_acceptance_by_position or {}
    return SpecDecode(
        acceptance_rate=queue.spec_acceptance_rate,
        mean_acceptance_length=queue.spec_mean_acceptance_length,
        drafts=queue.spec_drafts,
        draft_tokens=queue.spec_draft_tokens or 0.0,
        accepted_tokens=queue.spec_accepted_tokens,
        # vLLM numbers positions from 0; people count drafted tokens from 1.
        by_position=[(str(int(pos) + 1), rate) for pos, rate in by_position.items()],
    )


def spec_decode_by_key(points: Sequence[Point]) -> dict[str, SpecDecode]:
    """The points that ran speculative decoding, by key; empty when none did."""
    found = {p.key: spec_decode(p) for p in points}
    return {key: cell for key, cell in found.items() if cell is not None}
