"""A verdict's cause and the sweep's story, in words, as the run page and the report both say
them: each a Sentence (template and values) so a report translates the template (locale/ko).
The verdict sentences and the format helpers they use are analysis.sentences'."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.sentences import (
    KIND_PHRASES,
    Sentence,
    evidence_scope,
    join_names,
    limit_text,
    num,
    pct,
    percent,
    setting_changes_text,
    setting_value_text,
    within_band,
)
from analysis.types import VerdictEvidence

CAUSE_SCHEDULER_CAP = (
    "the scheduler cap bound, with running at max_num_seqs %(cap)s for %(share)s of the time "
    "requests waited and %(waiting)s waiting on average")
CAUSE_SCHEDULER_CAP_MEAN = (
    "the scheduler cap bound, with mean running %(running)s of max_num_seqs %(cap)s while "
    "%(waiting)s requests waited on average")
CAUSE_KV_CAPACITY = (
    "KV cache capacity bound, with peak KV cache use %(kv)s and %(preemptions)s preemptions")
CAUSE_DEFERRED = (
    "deferred admission held the queue, with %(deferred)s of %(waiting)s waiting requests "
    "deferred rather than waiting for capacity")
CAUSE_TOKEN_BUDGET = (
    "the token budget bound, with steps averaging %(steps)s of %(budget)s batched tokens while "
    "%(waiting)s requests waited on average")
CAUSE_TOKEN_BUDGET_PARTIAL = (
    "the token budget may bind, with %(waiting)s requests waiting on average and running below "
    "max_num_seqs, but the steps could not be checked against the budget")
CAUSE_STEP_TIME = (
    "the engine's own step time bound, with mean running up %(growth)s over the previous load "
    "level for %(gain)s output")
CAUSE_UNDERLOADED = "no limit bound, with nothing waiting (peak running %(peak)s of %(cap)s)"
# An imported scrape without a running count: only the queue is known.
CAUSE_UNDERLOADED_NO_RUNNING = "no limit bound, with nothing waiting (mean %(waiting)s)"
CAUSE_CLIENT = "the load generator was saturated, so its timings may be wrong"
CAUSE_UNCLEAR = "no limit can be named from the engine's evidence"
# The ladder's symptom, beside the cause (the step time's own clause already says it).
SATURATED_CLAUSE = (
    "%(cause)s, and more load added only waiting (%(gain)s output over the previous load "
    "level)")

# The same, when the step's output change is inside the run's noise band.
SATURATED_NOISE_CLAUSE = (
    "%(cause)s, and more load added only waiting (output changed %(gain)s over the previous "
    "load level, within noise of ±%(band)s)")

CHANGE_RAISED = "raising %(setting)s from %(before)s to %(after)s"
CHANGE_LOWERED = "lowering %(setting)s from %(before)s to %(after)s"
CHANGE_CHANGED = "changing %(setting)s from %(before)s to %(after)s"
CHANGE_TWO = "%(first)s and %(second)s"

STORY_ROSE = (
    "At %(load)s, %(change)s raised output %(ratio)s (%(before)s -> %(after)s output tok/s): "
    "at %(from)s, %(from_cause)s; at %(to)s, %(to_cause)s.")
STORY_FELL = (
    "At %(load)s, %(change)s lost %(loss)s of output (%(before)s -> %(after)s output tok/s): "
    "at %(from)s, %(from_cause)s; at %(to)s, %(to_cause)s.")
STORY_LEVEL = (
    "At %(load)s, %(change)s left output level (%(before)s -> %(after)s output tok/s, "
    "%(pct)s): at %(from)s, %(from_cause)s; at %(to)s, %(to_cause)s.")
# Two configs whose output differs by less than the run's noise band.
STORY_NOISE = (
    "At %(load)s, %(change)s changed output by %(pct)s, within noise of ±%(band)s (%(before)s "
    "-> %(after)s output tok/s): at %(from)s, %(from_cause)s; at %(to)s, %(to_cause)s.")
STORY_LEVEL_LIMIT = (
    "At %(load)s, %(change)s left output level (%(before)s -> %(after)s output tok/s, "
    "%(pct)s), so admitting more requests no longer pays and the engine's own step time is now "
    "the limit: at %(from)s, %(from_cause)s; at %(to)s, %(to_cause)s.")
# Every template of a cause or a story a report may look up (locale/ko translates each).
STORY_TEMPLATES = (
    CAUSE_SCHEDULER_CAP, CAUSE_SCHEDULER_CAP_MEAN, CAUSE_KV_CAPACITY, CAUSE_DEFERRED,
    CAUSE_TOKEN_BUDGET, CAUSE_TOKEN_BUDGET_PARTIAL, CAUSE_STEP_TIME, CAUSE_UNDERLOADED,
    CAUSE_UNDERLOADED_NO_RUNNING,
    CAUSE_CLIENT, CAUSE_UNCLEAR, SATURATED_CLAUSE, SATURATED_NOISE_CLAUSE, CHANGE_RAISED,
    CHANGE_LOWERED, CHANGE_CHANGED, CHANGE_TWO, STORY_ROSE, STORY_FELL, STORY_NOISE, STORY_LEVEL,
    STORY_LEVEL_LIMIT,
)


def _cause_values(kind: str, e: VerdictEvidence, partial: bool) -> tuple[str, dict[str, str]]:
    scope = evidence_scope(e)
    waiting = num((e.mean_waiting or 0) / scope.replicas)
    cap = limit_text(e, "max_num_seqs") if e.max_num_seqs is not None else "-"
    if kind == "scheduler_cap" and e.at_cap_share is not None:
        return CAUSE_SCHEDULER_CAP, {"cap": cap, "share": percent(e.at_cap_share * 100),
                                     "waiting": waiting}
    if kind == "scheduler_cap":
        assert e.mean_running is not None  # a pinned cap was judged on it
        return CAUSE_SCHEDULER_CAP_MEAN, {"running": scope.mean(e.mean_running), "cap": cap,
                                          "waiting": waiting}
    if kind == "kv_capacity":
        kv = e.peak_kv_usage
        return CAUSE_KV_CAPACITY, {"kv": percent(kv * 100) if kv is not None else "-",
                                   "preemptions": num(e.preemptions or 0)}
    if kind == "deferred":
        assert e.mean_waiting_deferred is not None  # deferred was judged on it
        return CAUSE_DEFERRED, {"deferred": num(e.mean_waiting_deferred / scope.replicas),
                                "waiting": waiting}
    if kind == "token_budget" and not partial:
        assert e.mean_tokens_per_step is not None  # a full token-budget verdict read the steps
        return CAUSE_TOKEN_BUDGET, {"steps": num(e.mean_tokens_per_step),
                                    "budget": limit_text(e, "max_num_batched_tokens"),
                                    "waiting": waiting}
    if kind == "token_budget":
        return CAUSE_TOKEN_BUDGET_PARTIAL, {"waiting": waiting}
    if kind == "step_time":
        # The step time holds only against a previous level where running grew.
        assert e.running_growth_pct is not None and e.throughput_gain_pct is not None
        return CAUSE_STEP_TIME, {"growth": pct(e.running_growth_pct),
                                 "gain": pct(e.throughput_gain_pct)}
    if kind == "underloaded" and e.peak_running is None:
        return CAUSE_UNDERLOADED_NO_RUNNING, {"waiting": waiting}
    if kind == "underloaded":
        assert e.peak_running is not None  # the branch above took the point without it
        return CAUSE_UNDERLOADED, {"peak": num(e.peak_running), "cap": cap}
    if kind == "client_bound":
        return CAUSE_CLIENT, {}
    return CAUSE_UNCLEAR, {}


def cause_sentence(kind: str, evidence: VerdictEvidence, partial: bool = False) -> Sentence:
    """The cause at one point in a clause, with the figure that shows it, and the ladder's
    saturation beside it where it holds: what the story and a report's queue evidence say."""
    template, values = _cause_values(kind, evidence, partial)
    cause = Sentence(template, values)
    if evidence.saturated and kind != "step_time":
        gain, band = evidence.throughput_gain_pct, evidence.noise_band_pct
        assert gain is not None  # saturated only against a previous level
        if band is not None and within_band(gain, band):
            return Sentence(SATURATED_NOISE_CLAUSE, {"cause": cause, "gain": pct(gain),
                                                     "band": percent(band)})
        return Sentence(SATURATED_CLAUSE, {"cause": cause, "gain": pct(gain)})
    return cause


def _change(setting: str, before: Any, after: Any) -> Sentence:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (before, after))
    template = (CHANGE_RAISED if after > before else CHANGE_LOWERED) if numbers else CHANGE_CHANGED
    return Sentence(template, {"setting": setting, "before": setting_value_text(before),
                               "after": setting_value_text(after)})


def changes_sentence(changes: Sequence[tuple[str, Any, Any]]) -> Sentence:
    """'raising max_num_seqs from 4 to 64', two changes joined, more as a list."""
    parts = [_change(*change) for change in changes]
    joined = parts[-1]
    for part in reversed(parts[:-1]):
        joined = Sentence(CHANGE_TWO, {"first": part, "second": joined})
    return joined


def story_sentence(
    *, load: str, changes: Sequence[tuple[str, Any, Any]], sides: tuple[str, str],
    throughputs: tuple[float, float], causes: tuple[Sentence, Sentence], flat_pct: float,
    raised_a_limit: bool, noise_band_pct: float | None = None,
) -> Sentence:
    """'At burst 128, raising max_num_seqs from 4 to 64 raised output 1.98x (1,140 -> 2,258
    output tok/s): at 4, the scheduler cap bound: ...; at 64, ...'. Output within flat_pct either
    way stayed level; after raising a scheduler limit that says the step time is the limit."""
    before, after = throughputs
    values: dict[str, str | Sentence] = {
        "load": load, "change": changes_sentence(changes), "before": num(before),
        "after": num(after), "from": sides[0], "to": sides[1], "from_cause": causes[0],
        "to_cause": causes[1]}
    change = (after - before) / before * 100 if before > 0 else 0.0
    if abs(change) >= flat_pct and noise_band_pct is not None and within_band(change,
                                                                            noise_band_pct):
        return Sentence(STORY_NOISE, {**values, "pct": pct(change),
                                      "band": percent(noise_band_pct)})
    if abs(change) < flat_pct:
        template = STORY_LEVEL_LIMIT if raised_a_limit else STORY_LEVEL
        return Sentence(template, {**values, "pct": pct(change)})
    if change > 0:
        return Sentence(STORY_ROSE, {**values, "ratio": f"{after / before:.2f}x"})
    return Sentence(STORY_FELL, {**values, "loss": percent(-change)})


def sweep_step_sentence(
    changes: Sequence[tuple[str, Any, Any]],
    from_kind: str,
    to_kind: str,
    *,
    held: Sequence[tuple[str, Any]] = (),
) -> str:
    """'raising max_num_seqs from 256 to 1024 moved the bottleneck from the scheduler cap to
    saturation'; held: the other axes of a grid and where they stood, '(at
    max_num_batched_tokens 2048)'."""
    what = setting_changes_text(changes) or "the next engine config"
    if held:
        at = join_names([f"{name} {setting_value_text(value)}" for name, value in held])
        what = f"{what} (at {at})"
    if from_kind == to_kind:
        return f"{what} left the bottleneck at {KIND_PHRASES[from_kind]}"
    return f"{what} moved the bottleneck from {KIND_PHRASES[from_kind]} to {KIND_PHRASES[to_kind]}"
