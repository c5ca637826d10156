"""How well the verdict rules name the limit that binds by construction, over every recording:
per point, per engine config over its ladder, and whether any verdict's own evidence says
otherwise. docs/verdicts.md prints `markdown_table()`; tests/analysis/test_ground_truth.py holds
the targets and keeps that table current."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from analysis.convert import from_point_result
from analysis.diagnosis import diagnose_ladders
from analysis.sentences import KIND_PHRASES
from analysis.types import Verdict
from analysis.verdicts import verdicts_for_sweep
from tests.analysis.ground_truth.classes import CLASSES, GroundTruthClass
from tests.analysis.ground_truth.record import read_recording, recordings


@dataclass
class ClassAccuracy:
    name: str
    recordings: int = 0
    points: int = 0  # labelled points
    points_right: int = 0
    configs: int = 0  # labelled configs, once per recording
    configs_right: int = 0
    wrong: list[str] = field(default_factory=list)  # "recording: key: expected, judged"
    contradictions: list[str] = field(default_factory=list)


def contradictions(v: Verdict) -> list[str]:
    """What in a verdict's own evidence line says it cannot be that verdict: a token budget
    with steps far below the budget, a cap nothing waited behind, an underloaded point with a
    queue. Looser than the rules on purpose: a contradiction, not a borderline case."""
    e = v.evidence
    if (v.kind == "token_budget" and not v.partial
            and e.mean_tokens_per_step < 0.5 * e.max_num_batched_tokens):
        return [f"token budget with steps at {e.mean_tokens_per_step:.0f} of "
                f"{e.max_num_batched_tokens}"]
    if v.kind == "scheduler_cap" and (
            e.mean_waiting < 1 or e.peak_running < (e.max_num_seqs or 0)):
        return [f"scheduler cap with peak running {e.peak_running} of {e.max_num_seqs} "
                f"and {e.mean_waiting:.1f} waiting"]
    if v.kind == "kv_capacity" and (e.peak_kv_usage or 0) < 0.9 and not e.preemptions:
        return [f"KV capacity at {e.peak_kv_usage} peak KV, no preemptions"]
    if v.kind == "underloaded" and e.mean_waiting >= 1:
        return [f"underloaded with {e.mean_waiting:.1f} waiting on average"]
    if v.kind == "step_time" and e.throughput_gain_pct >= e.running_growth_pct / 2:
        return [f"step time though output grew {e.throughput_gain_pct:.1f}% for "
                f"{e.running_growth_pct:.1f}% more running"]
    if v.kind == "client_bound" and not e.client_saturated:
        return ["client-bound without the client flag"]
    return []


def _config_right(expected: str, labelled: Sequence[Verdict], ladder: Sequence[Verdict]) -> bool:
    """The limit held at most of the config's labelled levels, and the config's line on the page
    (diagnose_ladders over all its levels) names it."""
    (line,) = diagnose_ladders(ladder)
    most = Counter(v.kind for v in labelled).most_common(1)[0][0]
    return most == expected and KIND_PHRASES[expected] in line


def class_accuracy(gt: GroundTruthClass) -> ClassAccuracy:
    out = ClassAccuracy(gt.name)
    for path in recordings(gt.name):
        out.recordings += 1
        points = read_recording(path)
        judged = verdicts_for_sweep([from_point_result(p) for p in points])
        labelled: dict[str, tuple[str, list[Verdict]]] = {}
        for p in points:
            v = judged[p.key]
            out.contradictions += [f"{path.stem}: {p.key}: {why}" for why in contradictions(v)]
            expected = gt.expected_kind(p.engine_config.label(), p.load.label())
            if expected is None:
                continue
            out.points += 1
            if v.kind == expected:
                out.points_right += 1
            else:
                out.wrong.append(f"{path.stem}: {p.key}: {expected}, judged {v.sentence}")
            labelled.setdefault(p.engine_config.label(), (expected, []))[1].append(v)
        for label, (expected, verdicts) in labelled.items():
            ladder = [judged[p.key] for p in points if p.engine_config.label() == label]
            out.configs += 1
            out.configs_right += _config_right(expected, verdicts, ladder)
    return out


def accuracy() -> list[ClassAccuracy]:
    return [class_accuracy(gt) for gt in CLASSES.values()]


def markdown_table(rows: Sequence[ClassAccuracy]) -> str:
    lines = ["| class | recordings | labelled points judged right | config diagnoses right |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.recordings} | {r.points_right} of {r.points} | "
                     f"{r.configs_right} of {r.configs} |")
    total = sum(r.points for r in rows)
    right = sum(r.points_right for r in rows)
    lines.append(f"| all | {sum(r.recordings for r in rows)} | {right} of {total} "
                 f"({right / total:.0%}) | {sum(r.configs_right for r in rows)} of "
                 f"{sum(r.configs for r in rows)} |")
    return "\n".join(lines)
