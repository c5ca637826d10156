"""The report's sections about the sweep itself: the curve with its operating point, the queue
evidence, and the methodology (how each side was measured, on what)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from judgement import charts
from judgement.figures import figures as point_figures
from judgement.lora_view import adapter_rows
from judgement.operating_point import operating_point_sentence, shown_operating_point
from judgement.repeat_capacity import capacity_of as setting_capacity
from judgement.request_timeline import REPORT_TIMELINE_LANES, request_timeline
from judgement.rows import Point, samples_blobs
from judgement.spec_decode import spec_decode
from judgement.stability_view import figure_sentences, run_stability
from judgement.verdict_rows import cause, step_story
from judgement.vocabulary import CapacityEstimate, Verdict
from reports import facts
from reports.build_reads import Build
from reports.page import AcceptanceRow, MethodRow, QueueSide, ReportContent
from reports.wording import (
    cpu_label,
    kv_text,
    num,
    percent,
    queue_value,
    seconds,
    spec_text,
)

# --- curve and operating point -----------------------------------------------------------------


def curve(content: ReportContent, build: Build) -> None:
    """The sweep's curve with the operating point the run page shows (stored, or the default
    knee over every single-replica point of the benchmark)."""
    benchmark = build.report.benchmark
    points, figs = build.sweeps.single_replica(benchmark)
    by_key = {p.key: p for p in build.sweeps.of(benchmark)[0]}
    shown = shown_operating_point(benchmark, figs)
    selected = by_key.get(shown.key) if shown.key else None
    if shown.error is not None:
        content.curve_sentence = _no_operating_point_sentence()
    else:
        # The run page's own sentence (judgement), in the report's language.
        content.curve_sentence = _public_sentence(
            operating_point_sentence(shown), by_key).translated(_)
    content.sources["curve_points"] = [p.pk for p in points]
    content.sources["operating_point"] = shown.stored.pk if shown.stored else None
    content.sources["operating_point_point"] = selected.pk if selected else None
    figure = charts.throughput_figure(points)
    # The curve is drawn from single-replica points: each trace's name is an engine label.
    traces = [{
        "name": facts.public_engine_label(trace["name"]),
        "x": [None if v is None else v / 1000 for v in trace["x"]["median_e2el_ms"]],
        "y": trace["y"],
        "valid": trace["valid"],
    } for trace in figure["traces"]]
    content.figures["curve"] = {"traces": traces, "selected": None}
    if selected is None:
        return
    content.curve_selected = _(
        "%(config)s at %(load)s: %(tps)s output tokens/s, median latency %(lat)s"
    ) % {"config": facts.public_engine_label(selected.engine_label), "load": selected.load_label,
         "tps": num(selected.output_throughput), "lat": seconds(selected.median_e2el_ms)}
    content.curve_selected += cpu_label(facts.is_cpu_engine(selected))
    chosen = next((f for f in figs if f.key == selected.key), None)
    if chosen is not None:
        found = figure_sentences(chosen, figs, run_stability(figs).noise)
        content.curve_interval = "; ".join(s.translated(_) for s in found if s is not None)
    content.figures["curve"]["selected"] = {
        "x": None if selected.median_e2el_ms is None else selected.median_e2el_ms / 1000,
        "y": selected.output_throughput,
        "name": facts.public_engine_label(selected.engine_label),
        # Which config it is, spelled as the run page's label (data-config): not shown.
        "config": facts.public_engine_key(selected.engine_label),
    }


def _public_sentence(sentence: Any, by_key: Mapping[str, Point]) -> Any:
    """The run page's sentence with each point key in it (the SLO sentence names the next
    point by its key) as the customer may read it: no engine flag values."""
    values = {name: facts.public_point_key(value) if value in by_key else value
              for name, value in sentence.values.items()}
    return dataclasses.replace(sentence, values=values)


def _no_operating_point_sentence() -> str:
    return _("No operating point could be chosen from the measured load levels (a knee needs "
             "enough valid levels of one engine config); none is marked.")


# --- queue evidence ------------------------------------------------------------------------------


def _verdict(point: Point, build: Build) -> Verdict | None:
    return build.sweeps.verdicts(point.benchmark).by_key.get(point.key)


def _verdict_text(point: Point, build: Build) -> str:
    """The point's cause with the figure that shows it, as the run page's story says it."""
    found = _verdict(point, build)
    if found is not None:
        return cause(found).translated(_)
    figs = build.sweeps.figures(point)
    if figs is not None and figs.queue_samples == 0:
        return _("not determined (no engine samples)")
    return _("not determined")


def queue(content: ReportContent, build: Build) -> None:
    baseline, candidate = build.report.baseline_point, build.report.candidate_point
    blobs = samples_blobs([baseline, candidate])
    sides, figures = [], []
    lanes: list[dict[str, Any] | None] = []
    for point, label in ((baseline, _("Before")), (candidate, _("After"))):
        config = facts.public_engine_label(point.engine_label)
        title = f"{label}: {config}{cpu_label(facts.is_cpu_engine(point))}"
        sentence = _(
            "On average %(running)s requests ran while %(waiting)s waited (peak %(peak_waiting)s "
            "waiting); peak KV cache use %(kv)s."
        ) % {
            "running": num(queue_value(point, "mean_running"), 1),
            "waiting": num(queue_value(point, "mean_waiting"), 1),
            "peak_waiting": num(queue_value(point, "peak_waiting")),
            "kv": kv_text(point),
        }
        blob = blobs.get(point.pk)
        drawn = charts.samples_figure(blob) if blob else {"replicas": []}
        timeline = request_timeline(point, REPORT_TIMELINE_LANES)
        sides.append(QueueSide(
            title=title, verdict=_verdict_text(point, build), sentence=sentence,
            no_chart="" if drawn["replicas"] else _(
                "No engine samples were stored for this point, so there is no queue chart."),
            timeline_drawn=timeline.drawn.translated(_) if timeline else "",
            timeline_phases=timeline.phases.translated(_) if timeline else ""))
        figures.append({"title": title, "replicas": drawn["replicas"],
                        "line_shape": drawn.get("line_shape", "linear")})
        # Its lanes; the engine's counts beneath them are the queue chart's own samples.
        lanes.append(dataclasses.asdict(timeline.lanes) if timeline else None)
    content.queue = sides
    content.figures["queue"] = figures
    content.figures["timeline"] = lanes
    before, after = _verdict(baseline, build), _verdict(candidate, build)
    if before is not None and after is not None:
        content.queue_story = step_story(before, after).translated(_)


# --- methodology -------------------------------------------------------------------------------


def _devices(point: Point, build: Build) -> int:
    """Devices the point used (replicas x tensor parallel), as the judgement layer counts them."""
    figs = build.sweeps.figures(point)
    return figs.gpu_count if figs is not None else point_figures(point).gpu_count


def _hardware_text(point: Point, build: Build) -> str:
    """What this point ran on: its own replicas x tensor parallel, not the host's GPU count."""
    prov = facts.public_provenance(point)
    used = _devices(point, build)
    replicas = ngettext("%(count)s replica", "%(count)s replicas", point.replicas) % {
        "count": point.replicas}
    layout = _("%(replicas)s x tensor parallel %(tp)s") % {
        "replicas": replicas, "tp": max(1, used // point.replicas)}
    if prov["gpu_name"]:
        text = f"{used} x {prov['gpu_name']} ({layout})"
        if prov["gpu_memory_mib"]:
            text += _(", %(gib)s GiB each") % {"gib": num(prov["gpu_memory_mib"] / 1024)}
        if prov["driver_version"] or prov["cuda_version"]:
            text += _(", driver %(driver)s, CUDA %(cuda)s") % {
                "driver": prov["driver_version"] or "-", "cuda": prov["cuda_version"] or "-"}
        if prov["gpu_count"] > used:
            text += _("; the host has %(count)s GPUs") % {"count": prov["gpu_count"]}
    else:
        text = (_("CPU only (%(cpu)s)") % {"cpu": prov["cpu_model"]} if prov["cpu_model"]
                else _("CPU only"))
        text += f", {layout}"
    if facts.is_cpu_engine(point):
        text = _("%(hardware)s - a CPU engine stands in for the customer's GPU: the shape of "
                 "the results is real, the absolute numbers are not GPU numbers") % {
            "hardware": text}
    return text


# How the customer reads an engine's name; another engine is shown as its record spells it.
ENGINE_NAMES = {"vllm": "vLLM", "tensorrt-llm": "TensorRT-LLM", "sglang": "SGLang"}


def _software_text(point: Point) -> str:
    prov = facts.public_provenance(point)
    runtime = point.benchmark.runtime
    name = prov["engine_name"]
    software = _("%(engine)s %(version)s") % {
        "engine": ENGINE_NAMES.get(name, name) if name else _("engine not recorded"),
        "version": prov["engine_version"] or "-"}
    image = prov["image"] or (runtime.image if runtime else "")
    if image:
        software += _(", image %(image)s") % {"image": image}
    if runtime and runtime.digest:
        software += f" ({runtime.digest})"
    return software


def _model_text(point: Point) -> str:
    prov = facts.public_provenance(point)
    model = prov["model"] or "-"
    if prov["model_is_local"]:
        model = _("%(model)s (local directory)") % {"model": model}
    revision = prov["revision"] or _("no revision (local)")
    return f"{model} @ {revision}"


def _spec_long_text(point: Point) -> str:
    workload = point.workload or {}
    spec = _("%(spec)s, temperature %(temp)s") % {
        "spec": spec_text(point), "temp": num(workload.get("temperature", 0), 1)}
    if workload.get("ignore_eos"):
        spec += _("; every response must reach the output limit (ignore_eos)")
    return spec


def _requests_text(point: Point) -> str:
    return _("%(count)s, load %(load)s") % {
        "count": num((point.load or {}).get("num_requests")), "load": point.load_label}


def _method_row(label: str, sides: Sequence[tuple[str, Point]], text: Any) -> MethodRow:
    """One value when every side reads the same, else each side's own, labelled."""
    values = [(side, text(point)) for side, point in sides]
    if len({value for _side, value in values}) == 1:
        return MethodRow(label=label, values=[("", values[0][1])])
    return MethodRow(label=label, values=values)


def methodology(content: ReportContent, build: Build) -> None:
    report = build.report
    sides = [(_("Before"), report.baseline_point), (_("After"), report.candidate_point)]
    if build.scaling is not None and report.scaling_point is not None:
        sides.append((_("Node run"), report.scaling_point))
    headline = sides[:2]
    if not all(facts.public_provenance(p)["recorded"] for _side, p in headline):
        content.methodology.append(MethodRow(
            label=_("Provenance"), values=[("", _("not recorded (imported result)"))]))
    content.methodology += [
        _method_row(_("Hardware"), sides, lambda p: _hardware_text(p, build)),
        _method_row(_("Software"), headline, _software_text),
        _method_row(_("Model and revision"), headline, _model_text),
        _method_row(_("Precision"), headline,
                    lambda p: facts.public_provenance(p)["precision"] or _("not recorded")),
        _method_row(_("KV cache dtype"), headline,
                    lambda p: facts.public_provenance(p)["kv_dtype"] or _("auto (model dtype)")),
        _method_row(_("Requests per point"), headline, _requests_text),
        _method_row(_("Input/output spec"), headline, _spec_long_text),
        _method_row(_("Repeats"), headline, lambda p: _repeats_text(p, build)),
        _method_row(_("Prefix cache"), headline, lambda p: _prefix_cache_text(p, build)),
    ]
    # Only where they apply: most engines run neither.
    if any(spec_decode(p) is not None for _side, p in headline):
        content.methodology.append(
            _method_row(_("Speculative decoding"), headline, _spec_decode_text))
    if any((p.workload or {}).get("lora_split") for _side, p in headline):
        content.methodology.append(_method_row(_("LoRA adapters"), headline, _lora_text))
    content.metric_definitions = [
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
    content.limits = [
        _("A local improvement over an initial configuration is not a claim of superiority over "
          "a tuned baseline."),
        _("A fixed output length validates generation work, not answer quality."),
        _("p95/p99 latency, network overhead, failures and domain quality remain production "
          "acceptance criteria; longer contexts or interactive latency targets need their own "
          "evaluation."),
    ]


def acceptance(content: ReportContent, build: Build) -> None:
    """Which of the production acceptance criteria (the limits above) the report's two points
    measured, and which they did not, so a reader sees what is still to be shown."""
    before, after = build.report.baseline_point, build.report.candidate_point
    content.acceptance = [
        _representative(before, after),
        _tail_latency(before, after),
        _network(before, after),
        AcceptanceRow(
            criterion=_("Failures"),
            measured=True,
            detail=_("%(before)s of %(before_total)s requests failed before, %(after)s of "
                     "%(after_total)s after") % {
                "before": num(before.failed), "before_total": num(before.completed + before.failed),
                "after": num(after.failed), "after_total": num(after.completed + after.failed)},
        ),
        _outputs(build),
    ]


def _outputs(build: Build) -> AcceptanceRow:
    """Output parity (the two points' outputs compared request by request) or a quality set."""
    parity = build.parity
    found = [parity.sentence.translated(_)] if parity is not None and parity.measured else []
    quality = _quality(build.report.baseline_point, build.report.candidate_point)
    if quality is not None:
        found.append(quality)
    if found:
        return AcceptanceRow(criterion=_("Output parity or quality"), measured=True,
                             detail="; ".join(found))
    return AcceptanceRow(criterion=_("Output parity or quality"), measured=False,
                         detail=_("outputs were not compared and no quality set was run"))


def _quality(before: Point, after: Point) -> str | None:
    """Both points' quality-set scores (Point.quality, runner.schema QualityResult); None
    unless both ran one."""
    if not before.quality or not after.quality:
        return None
    scores: dict[str, str] = {}
    for side, stored in (("before", before.quality), ("after", after.quality)):
        scores |= {side: num(stored["passed"]), f"{side}_items": num(stored["items"]),
                   f"{side}_score": percent(stored["score"] * 100),
                   f"{side}_file": stored["file"]}
    if scores["before_file"] == scores["after_file"]:
        return _("quality set %(before_file)s: %(before)s of %(before_items)s items passed "
                 "before (%(before_score)s), %(after)s of %(after_items)s after "
                 "(%(after_score)s)") % scores
    return _("quality sets differ: %(before)s of %(before_items)s items of %(before_file)s "
             "passed before (%(before_score)s), %(after)s of %(after_items)s of %(after_file)s "
             "after (%(after_score)s)") % scores


def _representative(before: Point, after: Point) -> AcceptanceRow:
    details = {
        "trace": _("replayed from a trace file"),
        "lengths": _("lengths drawn from a request log"),
        "dataset": _("prompts from a dataset file"),
        "conversation": _("multi-turn conversations replayed from a file"),
    }
    kinds = {(p.workload or {}).get("kind") for p in (before, after)}
    found = [details[kind] for kind in sorted(k for k in kinds if k in details)]
    if len(found) == len(kinds):
        return AcceptanceRow(criterion=_("Representative prompts or a trace"), measured=True,
                             detail="; ".join(found))
    return AcceptanceRow(criterion=_("Representative prompts or a trace"), measured=False,
                         detail=_("synthetic prompts, not the customer's traffic"))


def _tail_latency(before: Point, after: Point) -> AcceptanceRow:
    if before.p99_e2el_ms is None or after.p99_e2el_ms is None:
        return AcceptanceRow(criterion=_("p95/p99 latency"), measured=False,
                             detail=_("no p99 latency recorded"))
    return AcceptanceRow(
        criterion=_("p95/p99 latency"), measured=True,
        detail=_("p99 request latency %(before)s before, %(after)s after") % {
            "before": seconds(before.p99_e2el_ms), "after": seconds(after.p99_e2el_ms)},
    )


def _network(before: Point, after: Point) -> AcceptanceRow:
    rtts = [((p.client or {}).get("network_rtt") or {}).get("median_ms") for p in (before, after)]
    if None in rtts:
        return AcceptanceRow(criterion=_("Network overhead"), measured=False,
                             detail=_("no network round trip recorded"))
    return AcceptanceRow(
        criterion=_("Network overhead"), measured=True,
        detail=_("round trip %(before)s ms before, %(after)s ms after, measured before each "
                 "point") % {"before": num(rtts[0], 2), "after": num(rtts[1], 2)},
    )


def _prefix_cache_text(point: Point, build: Build) -> str:
    """Whether the engine reused shared prompt prefixes, and how much of the prompts it found
    cached: the case study repeats one text, so its throughput depends on it."""
    figs = build.sweeps.figures(point) or point_figures(point)
    setting = dict(figs.other_settings).get("enable_prefix_caching")
    words = {True: _("on"), False: _("off"), None: _("the engine's default")}[setting]
    if figs.prefix_cache_hit_rate is None:
        return _("%(setting)s; the engine reported no prefix-cache lookups") % {"setting": words}
    return _("%(setting)s; %(share)s of prompt tokens were found in the cache") % {
        "setting": words, "share": percent(figs.prefix_cache_hit_rate * 100)}


def _spec_decode_text(point: Point) -> str:
    """vLLM's own acceptance figures over the point (judgement.spec_decode)."""
    cell = spec_decode(point)
    if cell is None:
        return _("off")
    if cell.acceptance_rate is None or cell.mean_acceptance_length is None:
        return _("on; the engine proposed no draft during the point")
    return _("acceptance rate %(rate)s, mean acceptance length %(length)s (accepted draft "
             "tokens over drafted ones, and 1 + accepted per draft, from vLLM's counters over "
             "the point)") % {"rate": percent(cell.acceptance_rate * 100),
                              "length": num(cell.mean_acceptance_length, 2)}


def _lora_text(point: Point) -> str:
    """How the point's requests were spread over adapters, and each adapter's figures from
    its stored requests (judgement.lora_view)."""
    split = (point.workload or {}).get("lora_split") or []
    if not split:
        return _("none: every request went to the base model")
    rows = adapter_rows(point)
    if not rows:
        names = ", ".join(share["name"] for share in split)
        return _("requests spread over %(names)s; the point's requests are not stored, so "
                 "there are no figures per adapter") % {"names": names}
    return "; ".join(
        _("%(name)s: %(completed)s of %(requests)s requests completed, %(tps)s output "
          "tokens/s, median latency %(lat)s") % {
            "name": row.name, "completed": num(row.completed), "requests": num(row.requests),
            "tps": num(row.output_throughput), "lat": seconds(row.median_e2el_ms)}
        for row in rows)


def capacity_of(point: Point, build: Build) -> CapacityEstimate | None:
    """The capacity estimate of the point's setting, grouped as the run page groups repeats."""
    figures = build.sweeps.figures(point)
    if figures is None:
        return None
    return setting_capacity(figures, list(build.sweeps.of(point.benchmark)[1].values()))


def _repeats_text(point: Point, build: Build) -> str:
    estimate = capacity_of(point, build)
    if estimate is None:
        return _("this point is not a valid run; no capacity estimate rests on it")
    return ngettext(
        "%(count)s valid repeat of this setting; the capacity estimate uses the lowest: "
        "%(value)s output tokens/s (spread %(spread)s)",
        "%(count)s valid repeats of this setting; the capacity estimate uses the lowest: "
        "%(value)s output tokens/s (spread %(spread)s)",
        estimate.repeats,
    ) % {"count": estimate.repeats, "value": num(estimate.capacity),
         "spread": percent(estimate.relative_spread_pct)}
