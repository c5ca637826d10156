"""A report's judgement of its method: how each side was measured and on what, and which of
the production acceptance criteria its two points measured (judgement.report_view calls both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analysis.parity import Parity
from analysis.types import CapacityEstimate
from judgement.figures import figures as point_figures
from judgement.lora_view import adapter_rows
from judgement.public_provenance import is_cpu_engine, public_provenance
from judgement.repeat_capacity import capacity_of as setting_capacity
from judgement.report_phrases import (
    AFTER,
    BEFORE,
    NODE_RUN,
    Phrase,
    Words,
    _,
    joined,
    number,
    percent,
    plural,
    seconds,
    spec_text,
)
from judgement.report_rows import Sweeps
from judgement.rows import Point
from judgement.spec_decode import spec_decode


@dataclass(frozen=True, kw_only=True)
class MethodRowView:
    """One methodology fact, with each side's own value: the report writes it once where
    every side reads the same."""

    label: Phrase
    values: list[tuple[Phrase, Words]]


@dataclass(frozen=True, kw_only=True)
class AcceptanceView:
    """One production acceptance criterion: whether the report measured it, and what it found
    or why not."""

    criterion: Phrase
    measured: bool
    detail: Words


# --- methodology -------------------------------------------------------------------------------


def capacity_of(point: Point, sweeps: Sweeps) -> CapacityEstimate | None:
    """The capacity estimate of the point's setting, grouped as the run page groups repeats."""
    figures = sweeps.figures(point)
    if figures is None:
        return None
    return setting_capacity(figures, list(sweeps.of(point.benchmark)[1].values()))


def _devices(point: Point, sweeps: Sweeps) -> int:
    """Devices the point used (replicas x tensor parallel), as the judgement layer counts them."""
    figs = sweeps.figures(point)
    return figs.gpu_count if figs is not None else point_figures(point).gpu_count


# The GPU line, one whole sentence for each set of facts recorded (memory, driver).
GPU_LINES = {
    (False, False): _("%(count)s x %(gpu)s (%(layout)s)").msgid,
    (True, False): _("%(count)s x %(gpu)s (%(layout)s), %(gib)s GiB each").msgid,
    (False, True): _("%(count)s x %(gpu)s (%(layout)s), driver %(driver)s, "
                     "CUDA %(cuda)s").msgid,
    (True, True): _("%(count)s x %(gpu)s (%(layout)s), %(gib)s GiB each, driver %(driver)s, "
                    "CUDA %(cuda)s").msgid,
}


def hardware_text(point: Point, sweeps: Sweeps) -> Phrase:
    """What this point ran on: its own replicas x tensor parallel, not the host's GPU count."""
    prov = public_provenance(point)
    used = _devices(point, sweeps)
    layout = plural("%(count)s replica x tensor parallel %(tp)s",
                    "%(count)s replicas x tensor parallel %(tp)s", point.replicas,
                    count=str(point.replicas), tp=str(max(1, used // point.replicas)))
    text: Phrase
    if prov["gpu_name"]:
        memory, driver = bool(prov["gpu_memory_mib"]), bool(prov["driver_version"]
                                                            or prov["cuda_version"])
        text = Phrase(GPU_LINES[(memory, driver)], {
            "count": str(used), "gpu": prov["gpu_name"], "layout": layout,
            "gib": number(prov["gpu_memory_mib"] / 1024 if memory else None),
            "driver": prov["driver_version"] or "-", "cuda": prov["cuda_version"] or "-"})
        if prov["gpu_count"] > used:
            text = _("%(hardware)s; the host has %(count)s GPUs", hardware=text,
                     count=str(prov["gpu_count"]))
    elif prov["cpu_model"]:
        text = _("CPU only (%(cpu)s), %(layout)s", cpu=prov["cpu_model"], layout=layout)
    else:
        text = _("CPU only, %(layout)s", layout=layout)
    if is_cpu_engine(point):
        text = _("%(hardware)s - a CPU engine stands in for the customer's GPU: the shape of "
                 "the results is real, the absolute numbers are not GPU numbers", hardware=text)
    return text


# How the customer reads an engine's name; another engine is shown as its record spells it.
ENGINE_NAMES = {"vllm": "vLLM", "tensorrt-llm": "TensorRT-LLM", "sglang": "SGLang"}


def _software_text(point: Point) -> Words:
    prov = public_provenance(point)
    runtime = point.benchmark.runtime
    name = prov["engine_name"]
    values: dict[str, Words] = {
        "engine": ENGINE_NAMES.get(name, name) if name else _("engine not recorded"),
        "version": prov["engine_version"] or "-"}
    image = prov["image"] or (runtime.image if runtime else "")
    software = (_("%(engine)s %(version)s, image %(image)s", **values, image=image) if image
                else _("%(engine)s %(version)s", **values))
    if runtime and runtime.digest:
        return joined([software, f"({runtime.digest})"])
    return software


def _model_text(point: Point) -> Words:
    prov = public_provenance(point)
    model: Words = prov["model"] or "-"
    if prov["model_is_local"]:
        model = _("%(model)s (local directory)", model=model)
    revision: Words = prov["revision"] or _("no revision (local)")
    return joined([model, revision], " @ ")


def _spec_long_text(point: Point) -> Phrase:
    workload = point.workload or {}
    values: dict[str, Words] = {"spec": spec_text(point),
                                "temp": number(workload.get("temperature", 0), 1)}
    if workload.get("ignore_eos"):
        return _("%(spec)s, temperature %(temp)s; every response must reach the output limit "
                 "(ignore_eos)", **values)
    return _("%(spec)s, temperature %(temp)s", **values)


def _requests_text(point: Point) -> Phrase:
    return _("%(count)s, load %(load)s", count=number((point.load or {}).get("num_requests")),
             load=point.load_label)


def _prefix_cache_text(point: Point, sweeps: Sweeps) -> Phrase:
    """Whether the engine reused shared prompt prefixes, and how much of the prompts it found
    cached: the case study repeats one text, so its throughput depends on it."""
    figs = sweeps.figures(point) or point_figures(point)
    setting = dict(figs.other_settings).get("enable_prefix_caching")
    words = {True: _("on"), False: _("off"), None: _("the engine's default")}[setting]
    if figs.prefix_cache_hit_rate is None:
        return _("%(setting)s; the engine reported no prefix-cache lookups", setting=words)
    return _("%(setting)s; %(share)s of prompt tokens were found in the cache", setting=words,
             share=percent(figs.prefix_cache_hit_rate * 100))


def _spec_decode_text(point: Point) -> Phrase:
    """vLLM's own acceptance figures over the point (judgement.spec_decode)."""
    cell = spec_decode(point)
    if cell is None:
        return _("off")
    if cell.acceptance_rate is None or cell.mean_acceptance_length is None:
        return _("on; the engine proposed no draft during the point")
    return _("acceptance rate %(rate)s, mean acceptance length %(length)s (accepted draft "
             "tokens over drafted ones, and 1 + accepted per draft, from vLLM's counters over "
             "the point)", rate=percent(cell.acceptance_rate * 100),
             length=number(cell.mean_acceptance_length, 2))


def _lora_text(point: Point) -> Words:
    """How the point's requests were spread over adapters, and each adapter's figures from
    its stored requests (judgement.lora_view)."""
    split = (point.workload or {}).get("lora_split") or []
    if not split:
        return _("none: every request went to the base model")
    rows = adapter_rows(point)
    if not rows:
        names = ", ".join(share["name"] for share in split)
        return _("requests spread over %(names)s; the point's requests are not stored, so "
                 "there are no figures per adapter", names=names)
    return joined([
        _("%(name)s: %(completed)s of %(requests)s requests completed, %(tps)s output "
          "tokens/s, median latency %(lat)s", name=row.name, completed=number(row.completed),
          requests=number(row.requests), tps=number(row.output_throughput),
          lat=seconds(row.median_e2el_ms))
        for row in rows], "; ")


def _repeats_text(point: Point, sweeps: Sweeps) -> Phrase:
    estimate = capacity_of(point, sweeps)
    if estimate is None:
        return _("this point is not a valid run; no capacity estimate rests on it")
    return plural(
        "%(count)s valid repeat of this setting; the capacity estimate uses the lowest: "
        "%(value)s output tokens/s (spread %(spread)s)",
        "%(count)s valid repeats of this setting; the capacity estimate uses the lowest: "
        "%(value)s output tokens/s (spread %(spread)s)",
        estimate.repeats,
        count=str(estimate.repeats), value=number(estimate.capacity),
        spread=percent(estimate.relative_spread_pct))


def _row(label: Phrase, sides: list[tuple[Phrase, Point]],
         text: Callable[[Point], Words]) -> MethodRowView:
    return MethodRowView(label=label, values=[(side, text(point)) for side, point in sides])


def methodology(baseline: Point, candidate: Point, node: Point | None,
                sweeps: Sweeps) -> list[MethodRowView]:
    """How each side was measured; node: the node run, when the report shows its scaling."""
    headline = [(BEFORE, baseline), (AFTER, candidate)]
    sides = headline + ([(NODE_RUN, node)] if node is not None else [])
    rows = []
    if not all(public_provenance(p)["recorded"] for _side, p in headline):
        rows.append(MethodRowView(label=_("Provenance"),
                                  values=[(BEFORE, _("not recorded (imported result)"))]))
    rows += [
        _row(_("Hardware"), sides, lambda p: hardware_text(p, sweeps)),
        _row(_("Software"), headline, _software_text),
        _row(_("Model and revision"), headline, _model_text),
        _row(_("Precision"), headline,
             lambda p: public_provenance(p)["precision"] or _("not recorded")),
        _row(_("KV cache dtype"), headline,
             lambda p: public_provenance(p)["kv_dtype"] or _("auto (model dtype)")),
        _row(_("Requests per point"), headline, _requests_text),
        _row(_("Input/output spec"), headline, _spec_long_text),
        _row(_("Repeats"), headline, lambda p: _repeats_text(p, sweeps)),
        _row(_("Prefix cache"), headline, lambda p: _prefix_cache_text(p, sweeps)),
    ]
    # Only where they apply: most engines run neither.
    if any(spec_decode(p) is not None for _side, p in headline):
        rows.append(_row(_("Speculative decoding"), headline, _spec_decode_text))
    if any((p.workload or {}).get("lora_split") for _side, p in headline):
        rows.append(_row(_("LoRA adapters"), headline, _lora_text))
    return rows


# --- what every report says of its method -------------------------------------------------------

METRIC_DEFINITIONS = [
    (_("Output tokens/s"), _("as vllm bench serve computes it: completed output tokens "
                             "divided by the benchmark window (its start to the last "
                             "request's end); output tokens come from the server's usage "
                             "report, failed requests count in the window but not in the "
                             "tokens.")),
    (_("Request latency"), _("as vllm bench serve computes it: last streamed chunk minus the "
                             "moment the request was sent (E2EL), median over the requests "
                             "of a point.")),
    (_("Running / waiting"), _("the engine's own gauges (vllm:num_requests_running and "
                               "vllm:num_requests_waiting) sampled during the point.")),
    (_("KV cache use"), _("vllm:kv_cache_usage_perc sampled during the point.")),
    (_("Prefix-cache hits"), _("prompt tokens the engine found in its prefix cache over "
                               "those it looked up during the point "
                               "(vllm:prefix_cache_hits_total / "
                               "vllm:prefix_cache_queries_total).")),
]
LIMITS = [
    _("A local improvement over an initial configuration is not a claim of superiority over "
      "a tuned baseline."),
    _("A fixed output length validates generation work, not answer quality."),
    _("p95/p99 latency, network overhead, failures and domain quality remain production "
      "acceptance criteria; longer contexts or interactive latency targets need their own "
      "evaluation."),
]


# --- acceptance --------------------------------------------------------------------------------


def acceptance(before: Point, after: Point, parity: Parity | None) -> list[AcceptanceView]:
    """Which of the production acceptance criteria (the limits a report states) the report's
    two points measured, and which they did not, so a reader sees what is still to be shown."""
    return [
        _representative(before, after),
        _tail_latency(before, after),
        _network(before, after),
        AcceptanceView(
            criterion=_("Failures"),
            measured=True,
            detail=_("%(before)s of %(before_total)s requests failed before, %(after)s of "
                     "%(after_total)s after", before=number(before.failed),
                     before_total=number(before.completed + before.failed),
                     after=number(after.failed),
                     after_total=number(after.completed + after.failed)),
        ),
        _outputs(before, after, parity),
    ]


def _outputs(before: Point, after: Point, parity: Parity | None) -> AcceptanceView:
    """Output parity (the two points' outputs compared request by request) or a quality set."""
    found: list[Words] = [parity.sentence] if parity is not None and parity.measured else []
    quality = _quality(before, after)
    if quality is not None:
        found.append(quality)
    if found:
        return AcceptanceView(criterion=_("Output parity or quality"), measured=True,
                              detail=joined(found, "; "))
    return AcceptanceView(criterion=_("Output parity or quality"), measured=False,
                          detail=_("outputs were not compared and no quality set was run"))


def _quality(before: Point, after: Point) -> Phrase | None:
    """Both points' quality-set scores (Point.quality, runner.schema QualityResult); None
    unless both ran one."""
    if not before.quality or not after.quality:
        return None
    scores: dict[str, Words] = {}
    for side, stored in (("before", before.quality), ("after", after.quality)):
        scores |= {side: number(stored["passed"]), f"{side}_items": number(stored["items"]),
                   f"{side}_score": percent(stored["score"] * 100),
                   f"{side}_file": stored["file"]}
    if scores["before_file"] == scores["after_file"]:
        return _("quality set %(before_file)s: %(before)s of %(before_items)s items passed "
                 "before (%(before_score)s), %(after)s of %(after_items)s after "
                 "(%(after_score)s)", **scores)
    return _("quality sets differ: %(before)s of %(before_items)s items of %(before_file)s "
             "passed before (%(before_score)s), %(after)s of %(after_items)s of %(after_file)s "
             "after (%(after_score)s)", **scores)


def _representative(before: Point, after: Point) -> AcceptanceView:
    details = {
        "trace": _("replayed from a trace file"),
        "lengths": _("lengths drawn from a request log"),
        "dataset": _("prompts from a dataset file"),
        "conversation": _("multi-turn conversations replayed from a file"),
    }
    kinds = {(p.workload or {}).get("kind") for p in (before, after)}
    found: list[Words] = [details[kind] for kind in sorted(k for k in kinds if k in details)]
    if len(found) == len(kinds):
        return AcceptanceView(criterion=_("Representative prompts or a trace"), measured=True,
                              detail=joined(found, "; "))
    return AcceptanceView(criterion=_("Representative prompts or a trace"), measured=False,
                          detail=_("synthetic prompts, not the customer's traffic"))


def _tail_latency(before: Point, after: Point) -> AcceptanceView:
    if before.p99_e2el_ms is None or after.p99_e2el_ms is None:
        return AcceptanceView(criterion=_("p95/p99 latency"), measured=False,
                              detail=_("no p99 latency recorded"))
    return AcceptanceView(
        criterion=_("p95/p99 latency"), measured=True,
        detail=_("p99 request latency %(before)s before, %(after)s after",
                 before=seconds(before.p99_e2el_ms), after=seconds(after.p99_e2el_ms)),
    )


def _network(before: Point, after: Point) -> AcceptanceView:
    rtts = [((p.client or {}).get("network_rtt") or {}).get("median_ms") for p in (before, after)]
    if None in rtts:
        return AcceptanceView(criterion=_("Network overhead"), measured=False,
                              detail=_("no network round trip recorded"))
    return AcceptanceView(
        criterion=_("Network overhead"), measured=True,
        detail=_("round trip %(before)s ms before, %(after)s ms after, measured before each "
                 "point", before=number(rtts[0], 2), after=number(rtts[1], 2)),
    )
