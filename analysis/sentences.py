"""Every sentence the analysis layer writes, in one place but for a verdict's cause and the
sweep's story (analysis.causes).

Kept apart from the arithmetic so wording changes never touch the logic. Each builder takes
numbers and names, never points, and returns plain text; the numbers also travel as fields of
the result dataclasses. The operating-point sentence is a Sentence (template and values): the
run page shows it in English and a report translates its template (locale/ko), so the two say
the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # analysis.types builds on Sentence, so the evidence types are for mypy only
    from analysis.types import (
        KneeEvidence,
        ParetoEvidence,
        SelectionEvidence,
        SloEvidence,
        VerdictEvidence,
    )

# Words for each verdict kind inside "moved the bottleneck from X to Y".
KIND_PHRASES = {
    "client_bound": "the client",
    "kv_capacity": "KV capacity",
    "scheduler_cap": "the scheduler cap",
    "token_budget": "the token budget",
    "deferred": "deferred admission",
    "step_time": "the engine's step time",
    "underloaded": "no limit (underloaded)",
    "unclear": "an unclear limit",
}


# What shows each limit, for a ladder's diagnosis where the verdict changes along it.
KIND_EVIDENCE = {
    "kv_capacity": "the KV cache is full or requests are preempted",
    "deferred": "most waiting requests are deferred, not waiting for capacity",
    "scheduler_cap": "running sits at max_num_seqs while requests wait",
    "token_budget": "steps fill max_num_batched_tokens",
    "step_time": "more admitted requests add little output",
    "underloaded": "nothing waits",
}


def pct_decimals(value: float) -> int:
    """Decimals for a percentage: one, and two below 1% in size, so a +0.38% step never reads
    as "+0%" (or, rounded up, as "+1%") beside a knee threshold of 2%."""
    return 2 if abs(value) < 1 else 1


def percent(value: float) -> str:
    """A level in percent (KV use, efficiency, a share of the window): "0.38%", "73.1%"."""
    return f"{value:.{pct_decimals(value)}f}%"


def pct(value: float) -> str:
    """A signed change in percent: "+0.38%", "-3.0%", "+70.7%"."""
    return f"{value:+.{pct_decimals(value)}f}%"


def num(value: float) -> str:
    """A figure for prose: thousands separators, one decimal for small values."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def join_names(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


# --- operating point --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    """A sentence as its message template and the values filled into it.

    str() gives the English the run page shows; a report looks the template up in its own
    catalog (locale/) and fills in the same values, so both pages say the same thing in either
    language. The values are already formatted (pct, num): a translation moves them, never
    reformats them. A value may itself be a Sentence (a clause), translated with its parent.
    """

    template: str
    values: Mapping[str, str | Sentence]
    # False for a template no catalog has: a bare value, joined clauses, a stored old sentence.
    translatable: bool = True

    def __str__(self) -> str:
        return self.template % {name: str(value) for name, value in self.values.items()}

    def translated(self, gettext: Callable[[str], str]) -> str:
        """In the active language: the template looked up with gettext, the same values."""
        template = gettext(self.template) if self.translatable else self.template
        return template % {
            name: value.translated(gettext) if isinstance(value, Sentence) else value
            for name, value in self.values.items()
        }


KNEE = (
    "The operating point is the last load level before the knee: going on to %(next_load)s "
    "added %(gain)s output tokens/s while median latency rose %(growth)s."
)
# A step past the knee that lost throughput reads as a loss, never as "added -9.1%".
KNEE_LOSS = (
    "The operating point is the last load level before the knee: going on to %(next_load)s "
    "lost %(loss)s of its output tokens/s while median latency rose %(growth)s."
)
# The step past the knee changed output by less than the run's noise: not a loss or a gain.
KNEE_NOISE = (
    "The operating point is the last load level before the knee: going on to %(next_load)s "
    "changed output tokens/s by %(change)s, within noise (±%(band)s), while median latency "
    "rose %(growth)s."
)
NO_KNEE = (
    "No knee within the sweep: no step added less than %(gain)s output tokens/s while median "
    "latency grew more than %(growth)s, so the highest-throughput point is the operating point."
)
SLO_NEXT = (
    "The operating point is the highest output throughput within %(limits)s; %(metric)s binds "
    "(%(value)s of %(limit)s here) and the next faster point (%(next)s) reaches %(broken)s."
)
SLO_LAST = (
    "The operating point is the highest output throughput within %(limits)s; %(metric)s binds "
    "(%(value)s of %(limit)s here) and no point of the sweep is faster."
)
PARETO = (
    "The operating point is the highest output tokens/s per GPU on the Pareto frontier with at "
    "least %(target)s tokens/s per user: %(per_gpu)s per GPU at %(per_user)s tokens/s per user."
)
OVERRIDE = "The operating point was chosen by an engineer: %(reason)s."
# Every template a report may look up (locale/ko translates each).
OPERATING_POINT_TEMPLATES = (KNEE, KNEE_LOSS, KNEE_NOISE, NO_KNEE, SLO_NEXT, SLO_LAST, PARETO,
                             OVERRIDE)


def operating_point_sentence(
    method: str, params: Mapping[str, Any], evidence: SelectionEvidence, reason: str
) -> Sentence:
    """Why the operating point is where it is, from what the selection stored.

    The one sentence for every page: selection writes it when it chooses, the run page and the
    report rebuild it from the stored params and evidence. The evidence, never the parameters,
    for a knee: both hold throughput_gain_pct and latency_growth_pct, the evidence as the
    measured step and the parameters as the thresholds it was tested against.
    """
    if method == "knee":
        knee = cast("KneeEvidence", evidence)
        if knee.found is None:
            return Sentence(NO_KNEE, {"gain": f"{params['throughput_gain_pct']:g}%",
                                      "growth": f"{params['latency_growth_pct']:g}%"})
        gain = knee.found.throughput_gain_pct
        step = {"next_load": knee.found.to_load, "growth": pct(knee.found.latency_growth_pct)}
        band = knee.noise_band_pct
        if band is not None and within_band(gain, band):
            return Sentence(KNEE_NOISE, {**step, "change": pct(gain), "band": percent(band)})
        if gain < 0:
            return Sentence(KNEE_LOSS, {**step, "loss": percent(-gain)})
        return Sentence(KNEE, {**step, "gain": pct(gain)})
    if method == "slo":
        slo = cast("SloEvidence", evidence)
        limits = params["limits"]
        metric = slo.binding_metric
        values = {
            "limits": limits_text(limits),
            "metric": metric,
            "value": num(slo.values[metric]),
            "limit": with_unit(metric, limits[metric]),
        }
        if slo.next_key is None:
            return Sentence(SLO_LAST, values)
        broken = join_names(
            [f"{name} {with_unit(name, value)}" for name, value in slo.next_violations.items()]
        )
        return Sentence(SLO_NEXT, {**values, "next": slo.next_key, "broken": broken})
    if method == "pareto":
        pareto = cast("ParetoEvidence", evidence)
        return Sentence(PARETO, {"target": num(params["min_tokens_per_user"]),
                                 "per_gpu": num(pareto.output_throughput_per_gpu),
                                 "per_user": num(pareto.tokens_per_user)})
    if method == "override":
        return Sentence(OVERRIDE, {"reason": reason.strip().rstrip(".")})
    raise KeyError(method)


def with_unit(name: str, value: float) -> str:
    """A limit's value with its unit: ms for latencies, % for goodput_miss_pct."""
    return f"{num(value)}%" if name.endswith("_pct") else f"{num(value)} ms"


def limits_text(limits: Mapping[str, float]) -> str:
    return join_names([f"{name} <= {with_unit(name, limit)}" for name, limit in limits.items()])


# A quality set scored on the CPU engine: the tiny model's weights are random, so its answers are
# noise, and a score of them would read as a verdict on a model it is not.
QUALITY_ON_CPU_ENGINE = (
    "The tiny random-weight CPU model scores near zero; this score says nothing about a real "
    "model's quality."
)


# --- comparisons ------------------------------------------------------------------------------


def factors_sentence(
    matching: Sequence[str], differing: Sequence[str], unknown: Sequence[str]
) -> str:
    """'same GPU SKU and spec; runtime version and host differ'."""
    parts = []
    if matching:
        parts.append(f"same {join_names(matching)}")
    if differing:
        verb = "differs" if len(differing) == 1 else "differ"
        parts.append(f"{join_names(differing)} {verb}")
    if unknown:
        parts.append(f"{join_names(unknown)} not recorded on both sides")
    return "; ".join(parts)


def prefix_caching_sentence(
    baseline: bool | None, baseline_hit_rate: float | None,
    candidate: bool | None, candidate_hit_rate: float | None,
) -> str:
    """'prefix caching differs (baseline on, 97.1% of prompt tokens from the cache; candidate
    off, no lookups reported): ...'."""

    def side(name: str, setting: bool | None, hit_rate: float | None) -> str:
        hits = (
            f"{percent(hit_rate * 100)} of prompt tokens from the cache"
            if hit_rate is not None else "no lookups reported"
        )
        return f"{name} {setting_value_text(setting)}, {hits}"

    return (
        f"prefix caching differs ({side('baseline', baseline, baseline_hit_rate)}; "
        f"{side('candidate', candidate, candidate_hit_rate)}): the engines did not do the same "
        "prompt work, so the change is not the scheduler's alone"
    )


def controlled_label(controlled: bool) -> str:
    return "controlled" if controlled else "not controlled"


def spec_statement(left: str, left_spec: str | None, right: str, right_spec: str | None) -> str:
    """What replaces a percentage when the specs are not the same on both sides:
    'no percentage across different specs: reference 1000 in / 1000 out, local point 63-66 in /
    256 out'."""
    lead = (
        "no percentage across different specs"
        if left_spec is not None and right_spec is not None
        else "no percentage without the spec on both sides"
    )

    def side(name: str, spec: str | None) -> str:
        return f"{name} {spec if spec is not None else '(spec not recorded)'}"

    return f"{lead}: {side(left, left_spec)}, {side(right, right_spec)}"


def comparison_sentence(
    controlled: bool,
    matching: Sequence[str],
    differing: Sequence[str],
    unknown: Sequence[str],
    spec_note: str | None = None,
) -> str:
    """'not controlled: same GPU SKU; spec differs; no percentage across different specs: ...'.
    spec_note (a spec_statement) is given when the specs are not the same on both sides."""
    text = f"{controlled_label(controlled)}: {factors_sentence(matching, differing, unknown)}"
    return f"{text}; {spec_note}" if spec_note else text


def reference_sentence(
    name: str,
    recorded_on: date,
    no_longer_listed_on: date | None,
    controlled: bool,
    matching: Sequence[str],
    differing: Sequence[str],
    unknown: Sequence[str],
    spec_note: str | None = None,
) -> str:
    """The reference with its dates (the listing date only when one was recorded), then the
    same guard as comparison_sentence."""
    dated = f"{name}, recorded on {recorded_on.isoformat()}"
    if no_longer_listed_on is not None:
        dated += f", no longer listed since {no_longer_listed_on.isoformat()}"
    return f"{dated}: {comparison_sentence(controlled, matching, differing, unknown, spec_note)}"


def latency_label(statistic: str) -> str:
    """'Median request latency (ms, E2EL)': a published latency always says which statistic."""
    return f"{statistic.capitalize()} request latency (ms, E2EL)"


# --- node scaling -----------------------------------------------------------------------------


def scaling_sentence(
    n_replicas: int,
    total_gpus: int,
    node_throughput: float,
    window_seconds: float,
    throughput_per_gpu: float,
    efficiency: float,
    reference_throughput: float,
) -> str:
    return (
        f"{n_replicas} replicas on {total_gpus} GPUs: {num(node_throughput)} output tokens/s "
        f"over one {window_seconds:.1f} s window, {num(throughput_per_gpu)} per GPU; "
        f"{percent(efficiency * 100)} of {n_replicas} x the reference ({num(reference_throughput)})"
    )


# --- queue charts -----------------------------------------------------------------------------


def no_queue_chart_sentence(imported_from: str | None, summary_samples: int) -> str:
    """Why a point has no queue chart: it stored no engine samples to draw. imported_from: the
    client whose file the point came from; None: measured by Headroom."""
    if imported_from:
        return (
            f"imported from {imported_from}, whose result file holds the client's figures "
            "only, no engine samples (running/waiting from /metrics)"
        )
    if summary_samples > 0:
        return (
            f"the result holds the queue summary of {summary_samples} engine samples but not "
            "the samples themselves"
        )
    return (
        "no engine samples were recorded: the engine's /metrics did not answer during the "
        "point"
    )


# --- verdicts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """How a verdict sentence names its figures: one engine's, or a node's per replica.

    A node run's queue summary holds the sum of its replicas' mean running and waiting, the
    highest replica's peaks and the replicas' mean KV use and tokens per step
    (runner.schema.samples.QueueSummary). A node sentence divides the sums by the replica count and
    says whose peak it quotes, so "running 2,048 of 256" never reads as one engine's.
    """

    replicas: int

    @property
    def node(self) -> bool:
        return self.replicas > 1

    def mean(self, total: float) -> str:
        """A summed mean (running, waiting) as one replica's share."""
        return f"{num(total / self.replicas)} per replica" if self.node else num(total)

    @property
    def each(self) -> str:
        return " per replica" if self.node else ""

    @property
    def busiest(self) -> str:
        return " on the busiest replica" if self.node else ""

    @property
    def fullest(self) -> str:
        return " on the fullest replica" if self.node else ""


def evidence_scope(evidence: VerdictEvidence) -> _Scope:
    return _Scope(replicas=evidence.replicas)


def _kv_capacity(e: VerdictEvidence, scope: _Scope) -> str:
    usage = e.peak_kv_usage
    across = f" across the {scope.replicas} replicas" if scope.node else ""
    return (
        "KV capacity: "
        + (f"peak KV usage {percent(usage * 100)}{scope.fullest} and " if usage is not None else "")
        + f"{num(e.preemptions or 0)} preemptions{across}"
    )


def limit_text(e: VerdictEvidence, name: str) -> str:
    """A limit's figure in a sentence, marked when it is vLLM's own default (not configured)."""
    default = " (vLLM's default)" if name in e.limits_from_defaults else ""
    return f"{getattr(e, name)}{default}"


def _scheduler_cap(e: VerdictEvidence, scope: _Scope) -> str:
    assert e.mean_running is not None and e.mean_waiting is not None  # the cap's conditions
    on_each = f" on each of {scope.replicas} replicas" if scope.node else ""
    share = e.at_cap_share
    for_how_long = f" for {percent(share * 100)} of the time requests waited" if share else ""
    # An imported scrape may state the mean only (its peak is then not in the evidence).
    peak = (f", peak {num(e.peak_running)}" if e.peak_running is not None else "")
    return (
        f"scheduler cap: running pinned at max_num_seqs{on_each}{for_how_long} "
        f"(mean {scope.mean(e.mean_running)}{peak} of "
        f"{limit_text(e, 'max_num_seqs')}{scope.busiest}) while "
        f"{num(e.mean_waiting / scope.replicas)} "
        f"requests wait{scope.each} on average"
    )


def _token_budget(e: VerdictEvidence, scope: _Scope) -> str:
    assert e.mean_running is not None and e.mean_waiting is not None  # the budget's conditions
    usage = e.peak_kv_usage
    text = (
        f"token budget: running {num(e.mean_running / scope.replicas)} of "
        f"{limit_text(e, 'max_num_seqs')}{scope.each} on average with "
        f"{num(e.mean_waiting / scope.replicas)} waiting{scope.each} and "
        + (
            f"KV at {percent(usage * 100)} peak{scope.fullest}"
            if usage is not None
            else "KV usage not recorded"
        )
    )
    # Tokens per step is each replica's own (a mean over the replicas), read against one
    # replica's budget.
    if e.mean_tokens_per_step is not None and e.max_num_batched_tokens:
        return text + (
            f"; steps average {num(e.mean_tokens_per_step)} of "
            f"{limit_text(e, 'max_num_batched_tokens')} batched tokens{scope.each}"
        )
    if e.mean_tokens_per_step is not None:
        return text + (
            f"; steps average {num(e.mean_tokens_per_step)} tokens{scope.each}, but "
            "max_num_batched_tokens was left at the engine default (not recorded), "
            "so the evidence is partial"
        )
    return text + "; no per-step token counts, so the evidence is partial"


def within_band(change_pct: float, band_pct: float | None) -> bool:
    """Whether a change is inside the run's noise band (analysis.noise.band_pct: a +/- percent
    on the log scale)."""
    return band_pct is not None and abs(math.log1p(change_pct / 100)) <= math.log1p(
        band_pct / 100)


def noisy_pct(change_pct: float, band_pct: float | None) -> str:
    """A signed change, or the change said to be within the noise band: "+3.1%", "-4.0%, within
    noise (±15.2%)"."""
    if within_band(change_pct, band_pct):
        assert band_pct is not None
        return f"{pct(change_pct)}, within noise (±{percent(band_pct)})"
    return pct(change_pct)


def _saturated(e: VerdictEvidence, scope: _Scope) -> str:
    """The ladder's symptom, said beside the cause."""
    growth = e.latency_growth_pct
    what = f"node output tokens/s ({scope.replicas} replicas)" if scope.node else "output tokens/s"
    assert e.throughput_gain_pct is not None  # saturated only against a previous level
    gain = noisy_pct(e.throughput_gain_pct, e.noise_band_pct)
    return (
        f"saturated: {gain} {what} over the previous load "
        + (
            f"level for {pct(growth)} median latency"
            if growth is not None
            else "level while more requests wait"
        )
    )


def _step_time(e: VerdictEvidence, scope: _Scope) -> str:
    # The step time holds only against a previous level where running grew.
    assert e.running_growth_pct is not None and e.throughput_gain_pct is not None
    assert e.mean_running is not None
    return (
        f"engine step time: mean running rose {pct(e.running_growth_pct)} over the previous "
        f"load level (to {scope.mean(e.mean_running)}) for {pct(e.throughput_gain_pct)} "
        "output tokens/s: each step slowed nearly as much as it widened, so admitting more "
        "requests adds little output"
    )


def _deferred(e: VerdictEvidence, scope: _Scope) -> str:
    assert e.mean_waiting_deferred is not None and e.mean_waiting is not None
    return (
        f"deferred admission: {num(e.mean_waiting_deferred / scope.replicas)} of "
        f"{num(e.mean_waiting / scope.replicas)} waiting requests{scope.each} on average "
        "wait deferred (not for capacity), so no batch limit holds them back"
    )


def _underloaded(e: VerdictEvidence, scope: _Scope) -> str:
    assert e.mean_waiting is not None  # every engine verdict has the waiting count
    if e.peak_running is None:
        # An imported scrape without a running count (or its peak): only the queue is known.
        running = (f"; mean running {scope.mean(e.mean_running)}"
                   if e.mean_running is not None else "")
        return f"underloaded: nothing waits (mean {scope.mean(e.mean_waiting)}{running})"
    full = e.max_num_seqs is not None and e.peak_running >= e.max_num_seqs
    if full:
        room = "the load just fills max_num_seqs"
    else:
        room = "every replica has room" if scope.node else "the engine has room"
    cap = f" of {limit_text(e, 'max_num_seqs')}" if e.max_num_seqs is not None else ""
    kv = (
        f", peak KV {percent(e.peak_kv_usage * 100)}{scope.fullest}"
        if e.peak_kv_usage is not None
        else ""
    )
    return (
        f"underloaded: nothing waits (mean {scope.mean(e.mean_waiting)}) and {room} "
        f"(peak running {num(e.peak_running)}{cap}{scope.busiest}{kv})"
    )


def verdict_sentence(kind: str, evidence: VerdictEvidence, partial: bool) -> str:
    """The verdict with its evidence numbers; a node run's (evidence.replicas > 1) quotes
    them per replica (_Scope)."""
    scope = evidence_scope(evidence)
    if kind == "client_bound":
        text = "client-bound: the load generator was saturated, so its timings may be wrong"
    elif kind == "kv_capacity":
        text = _kv_capacity(evidence, scope)
    elif kind == "scheduler_cap":
        text = _scheduler_cap(evidence, scope)
    elif kind == "token_budget":
        text = _token_budget(evidence, scope)
    elif kind == "step_time":
        text = _step_time(evidence, scope)
    elif kind == "deferred":
        text = _deferred(evidence, scope)
    elif kind == "underloaded":
        text = _underloaded(evidence, scope)
    else:
        text = f"unclear: {evidence.why or 'no limit shows in the evidence'}"
    if partial and kind != "token_budget":
        text += " (evidence partial)"
    if evidence.saturated and kind != "step_time":
        text += "; " + _saturated(evidence, scope)
    if evidence.memory_bound:
        assert evidence.memory_bandwidth_pct is not None  # memory_bound says it was judged
        text += "; " + memory_bound_clause(evidence.memory_bandwidth_pct, scope)
    if evidence.queue_source:
        text += "; " + evidence_clause(evidence.queue_source, evidence.lacked)
    return text


def evidence_clause(source: str, lacked: Sequence[str]) -> str:
    """Whose scrape an imported point's verdict rests on, and what it did not hold."""
    if not lacked:
        return f"evidence: {source}"
    return f"evidence: {source}, which lacks {join_names(list(lacked))}"


def memory_bound_clause(bandwidth_pct: float, scope: _Scope) -> str:
    """What a point at its GPUs' memory-bandwidth limit means for tuning: vLLM's byte estimate
    per GPU against the datasheet peak (a node's is the mean of its replicas')."""
    whose = f" (mean of the {scope.replicas} replicas)" if scope.node else ""
    return (
        f"at {percent(bandwidth_pct)} of memory-bandwidth peak per GPU{whose}: further "
        "scheduler tuning cannot add much; a smaller KV dtype or more GPUs can"
    )


def setting_value_text(value: Any) -> str:
    """A setting's value in a sentence: None is the engine's own default, a switch on or off."""
    if value is None:
        return "the engine default"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def setting_changes_text(changes: Sequence[tuple[str, Any, Any]]) -> str:
    """'raising max_num_seqs from 256 to 1024'; 'changing the engine config' when not numeric."""
    parts = []
    previous_verb = None
    for setting, before, after in changes:
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in (before, after)
        )
        verb = ("raising" if after > before else "lowering") if numbers else "changing"
        # "raising A from 1 to 2 and B from 3 to 4": say the verb once for a run of them.
        lead = "" if verb == previous_verb else f"{verb} "
        parts.append(
            f"{lead}{setting} from {setting_value_text(before)} to {setting_value_text(after)}"
        )
        previous_verb = verb
    return join_names(parts)


# --- how sure the figures are (analysis.noise) --------------------------------------------------

NOISE_REPEATS = (
    "One draw of a setting in this run is good to ±%(band)s (its 95%% interval, from the "
    "scatter of %(draws)s draws of the same settings, control points included); a change "
    "smaller than that is within noise.")
NOISE_CONTROLS = (
    "Each engine config's first load level was measured again after its last, on the same "
    "engine, and moved %(changes)s. With one draw per level, these control points are the "
    "run's only measure of its noise: one draw is good to ±%(band)s (its 95%% interval).")
NOISE_NONE = (
    "Nothing measured this run's noise: no setting was measured twice and no control point was "
    "taken, so its figures carry no interval and a single draw is not a finding.")
DRIFTED = (
    "Drifted by %(change)s between the start and the end of %(config)s: its first load level, "
    "measured again after its last, moved beyond the ±%(band)s its repeats scatter by. Every "
    "interval here is widened to include it.")
NO_DRIFT = (
    "The control points (each config's first load level measured again after its last) moved "
    "%(changes)s, inside the ±%(band)s the repeats scatter by: no drift beyond the noise.")
NOISE_END_ONLY = (
    "With one draw per level and no control point per config, the end control is the run's "
    "only measure of its noise: one draw is good to ±%(band)s (its 95%% interval).")
END_MOVED = (
    "The end control (%(config)s's first load level, measured again on a fresh engine start "
    "after the last config) moved %(change)s from the start of the sweep; with one draw per "
    "level nothing tells that from noise, and every interval here is widened to include it.")
END_DRIFTED = (
    "Drifted by %(change)s between the start and the end of the sweep: %(config)s's first load "
    "level, measured again on a fresh engine start after the last config, moved beyond the "
    "±%(band)s its repeats scatter by. Every interval here is widened to include it.")
END_NO_DRIFT = (
    "The end control (%(config)s's first load level, measured again on a fresh engine start "
    "after the last config) moved %(change)s, inside the ±%(band)s the repeats scatter by: no "
    "drift between the start and the end of the sweep.")
SEARCH_END_MOVED = (
    "The end control (the search's answer point, %(point)s, measured again on a fresh engine "
    "start after the search) moved %(change)s from its first draw; with one draw per level "
    "nothing tells that from noise, and every interval here is widened to include it.")
SEARCH_END_DRIFTED = (
    "Drifted by %(change)s over the search: its answer point, %(point)s, measured again on a "
    "fresh engine start after the search, moved beyond the ±%(band)s its repeats scatter by. "
    "Every interval here is widened to include it.")
SEARCH_END_NO_DRIFT = (
    "The end control (the search's answer point, %(point)s, measured again on a fresh engine "
    "start after the search) moved %(change)s from its first draw, inside the ±%(band)s the "
    "repeats scatter by: no drift over the search.")
DISTURBED_POINTS = (
    "Other processes on the host disturbed %(count)s point(s) (%(points)s): they are drawn "
    "hollow, and the knee, the saturation tag and the sweep's story do not read their change as "
    "the engine's.")
FIGURE_INTERVAL = "%(value)s (95%% interval %(low)s-%(high)s, from %(draws)s draw(s))"
RATIO_INTERVAL = (
    "%(ratio)s (95%% interval %(low)s-%(high)s, from %(baseline)s and %(candidate)s draws)")
RATIO_WITHIN_NOISE = (
    "%(ratio)s, within noise: its 95%% interval %(low)s-%(high)s includes no change (from "
    "%(baseline)s and %(candidate)s draws)")
RATIO_NO_INTERVAL = (
    "%(ratio)s from single draws, with no interval: nothing in either run measured its noise")
NOISE_TEMPLATES = (NOISE_REPEATS, NOISE_CONTROLS, NOISE_NONE, DRIFTED, NO_DRIFT, NOISE_END_ONLY,
                   END_MOVED, END_DRIFTED, END_NO_DRIFT, SEARCH_END_MOVED,
                   SEARCH_END_DRIFTED, SEARCH_END_NO_DRIFT, DISTURBED_POINTS,
                   FIGURE_INTERVAL, RATIO_INTERVAL, RATIO_WITHIN_NOISE, RATIO_NO_INTERVAL)


def ratio_text(value: float) -> str:
    """A ratio as the pages print it: "10.51x"."""
    return f"{value:.2f}x"


def changes_list(changes: Sequence[float]) -> str:
    return join_names([pct(change) for change in changes])

