"""Each engine config's diagnosis over its load ladder: the limit that bound at its loaded
levels, where it changed and on what evidence, and from where the ladder was saturated. The
verdicts themselves are analysis.verdicts'."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from analysis import sentences
from analysis.sweep_story import config_order
from analysis.types import Verdict

# Verdicts that say nothing of which limit binds under load, left out of a ladder's diagnosis.
NO_LIMIT_KINDS = frozenset({"underloaded", "unclear", "client_bound"})


def diagnose_ladders(verdicts: Sequence[Verdict]) -> tuple[str, ...]:
    """One sentence per engine config over its load ladder (its points on the fewest replicas,
    in load order): the limit that bound at its loaded levels, where it changed and on what
    evidence, and from where the ladder was saturated.

    "seqs=4: the scheduler cap at every loaded level (burst 16 to burst 128); saturated from
    burst 32 on"; "seqs=16: no limit (underloaded) at burst 16 (nothing waits); the scheduler
    cap from burst 64 on (running sits at max_num_seqs while requests wait)". Levels whose
    verdict names no limit (unclear, client-bound) are named apart, with their kind, so a
    change is never read into a point that could not be judged.
    """
    by_config: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_config.setdefault(v.config_label, []).append(v)
    sentences_out = []
    for label, group in sorted(by_config.items(), key=lambda item: config_order(item[1][0])):
        fewest = min(v.evidence.replicas for v in group)
        ladder = sorted((v for v in group if v.evidence.replicas == fewest),
                        key=lambda v: (v.offered_concurrency, v.key))
        sentences_out.append(f"{label}: {_ladder_text(ladder)}")
    return tuple(sentences_out)


def _runs(
    ladder: Sequence[Verdict], kind_of: Callable[[Verdict], str]
) -> list[tuple[str, list[str]]]:
    """Consecutive load levels of one kind, in ladder order, each level named once."""
    runs: list[tuple[str, list[str]]] = []
    for v in ladder:
        where, kind = v.load_label or v.key, kind_of(v)
        if runs and runs[-1][0] == kind:
            if where not in runs[-1][1]:
                runs[-1][1].append(where)
        else:
            runs.append((kind, [where]))
    return runs


def _span(loads: Sequence[str], last: bool) -> str:
    if len(loads) == 1:
        return f"at {loads[0]}"
    return f"from {loads[0]} on" if last else f"from {loads[0]} to {loads[-1]}"


def _ladder_text(ladder: Sequence[Verdict]) -> str:
    runs = _runs(ladder, lambda v: v.kind)
    if len(runs) == 1 and runs[0][0] not in NO_LIMIT_KINDS:
        (kind, loads), = runs
        span = f"{loads[0]} to {loads[-1]}" if len(loads) > 1 else loads[0]
        text = f"{sentences.KIND_PHRASES[kind]} at every loaded level ({span})"
    else:
        parts = []
        for i, (kind, loads) in enumerate(runs):
            why = sentences.KIND_EVIDENCE.get(kind)
            parts.append(f"{sentences.KIND_PHRASES[kind]} {_span(loads, i == len(runs) - 1)}"
                         + (f" ({why})" if why else ""))
        text = "; ".join(parts)
    symptom = _runs(ladder, lambda v: "saturated" if v.evidence.saturated else "")
    saturated = [(loads, i == len(symptom) - 1) for i, (kind, loads) in enumerate(symptom)
                 if kind]
    if saturated:
        text += "; saturated " + " and ".join(_span(loads, last) for loads, last in saturated)
    return text
