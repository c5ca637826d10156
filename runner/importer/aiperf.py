"""NVIDIA AIPerf's result files as Headroom points.

Two files of one AIPerf run (aiperf 0.13), each importable alone:
- profile_export_aiperf.json, the run's summary: AIPerf's figures under AIPerf's names, and
  the counts, token totals and duration under vLLM's, which mean the same in both tools. It has
  no per-request data, so no vLLM-named latency statistic.
- profile_export.jsonl, one record a request: vLLM's figures computed by Headroom from each
  request's send time, TTFT, latency and chunk gaps (AIPerf's time_to_first_token,
  request_latency and inter_chunk_latency are vLLM's TTFT, E2EL and ITL of the same stream)
  with the server's token counts when AIPerf had them (--use-server-token-count).
Warm-up records are left out, as AIPerf leaves them out of its own figures.
AIPerf's GPU telemetry (--gpu-telemetry) is read by runner.importer.aiperf_telemetry: the
summary's telemetry section under AIPerf's names, and gpu_telemetry_export.jsonl's readings
with the per-request records. Its server metrics export (server_metrics_export.json) comes
with the summary as the point's queue evidence (runner.importer.aiperf_server).
"""

from __future__ import annotations

from typing import Any

from runner.importer import aiperf_server, aiperf_telemetry
from runner.importer.detect import Detected
from runner.importer.peers import (
    counted_metrics,
    flat_figures,
    metrics_of,
    most_in_flight,
    number,
    peer_point,
    request,
    workload_of,
)
from runner.importer.vllm_document import ImportFileError
from runner.measure.metrics import window_of
from runner.schema.plan import LoadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult

SUMMARY_KEYS = ("aiperf_version",)
RECORD_KEYS = ("metadata", "metrics")
MEASURED_PHASE = "profiling"
# Older AIPerf wrote only request_count.
COMPLETED_NAMES = ("completed_request_count", "request_count")
MS = 1e-3
NS = 1e-9
# What one file alone cannot say; an artifact folder's point has the other file
# (runner.importer.aiperf_folder), which leaves these out.
NO_PER_REQUEST_DATA = (
    "AIPerf's summary has no per-request data: vLLM-named latency statistics are left "
    "empty (import profile_export.jsonl for them)"
)
LOAD_NOT_IN_RECORDS = (
    "the load is not in the per-request file: shown as a closed loop of the most requests "
    "that were in flight at once"
)
ENDPOINT_NOT_IN_RECORDS = "the endpoint is not in the per-request file: shown as completions"


def is_summary(document: Any) -> bool:
    return isinstance(document, dict) and all(key in document for key in SUMMARY_KEYS)


def is_record(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and all(isinstance(document.get(key), dict) for key in RECORD_KEYS)
        and "request_start_ns" in document["metadata"]
    )


# ---------------------------------------------------------------------------------------------
# The summary
# ---------------------------------------------------------------------------------------------


def from_summary(
    document: dict[str, Any],
    *,
    source_name: str,
    detected: Detected | None = None,
    server: tuple[dict[str, Any], str] | None = None,
) -> PointResult:
    """profile_export_aiperf.json as one point (the first releases' `records` map too); with
    server (the run's server_metrics_export.json and that file's name), its queue evidence."""
    document = _flattened(document)
    config = document.get("input_config") or {}
    figures, units = _summary_figures(document)
    completed = int(_required(document, COMPLETED_NAMES, source_name))
    errors = document.get("error_summary") or []
    failed = sum(int(number(item.get("count")) or 0) for item in errors)
    duration = _required(document, ("benchmark_duration",), source_name)
    if duration <= 0:
        raise ImportFileError(f"{source_name}: benchmark_duration must be > 0, got {duration}")
    output = int(_total(document, "output", source_name))
    prompt = int(_total(document, "prompt", source_name))
    metrics = counted_metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        prompt_tokens=prompt,
        output_tokens=output,
    )
    endpoint = str((config.get("endpoint") or {}).get("type") or "chat")
    workload = workload_of([], endpoint=endpoint, label="aiperf")
    workload = workload.model_copy(
        update={
            "input_tokens_min": max(int(figures.get("input_sequence_length.min", 1)), 1),
            "input_tokens_max": max(int(figures.get("input_sequence_length.max", 1)), 1),
            "output_tokens": max(int(figures.get("output_sequence_length.max", 1)), 1),
        }
    )
    notes = [NO_PER_REQUEST_DATA, *_token_count_notes(config, document)]
    telemetry, telemetry_figures, telemetry_units = aiperf_telemetry.summary_telemetry(document)
    point = peer_point(
        tool="aiperf",
        version=str(document.get("aiperf_version") or "") or None,
        format_label=detected.version if detected else None,
        source=source_name,
        key=f"import:{source_name}:{document.get('benchmark_id', '')}",
        load=_load(config, completed + failed),
        workload=workload,
        metrics=metrics,
        requests=[],
        figures=figures | telemetry_figures,
        units=units | telemetry_units,
        model=_model(config),
        started_at=str(document.get("start_time") or "unknown"),
        notes=notes,
    )
    if telemetry is not None:
        point.telemetry = telemetry
    if server is not None:
        export, name = server
        aiperf_server.read_server_metrics(export, name=name).attach(point)
    return point


def _flattened(document: dict[str, Any]) -> dict[str, Any]:
    """AIPerf's first releases kept each metric under `records` (with its tag and header);
    later ones put it at the top level, as GenAI-Perf did. Read both alike."""
    records = document.get("records")
    if not isinstance(records, dict):
        return document
    rest = {key: value for key, value in document.items() if key != "records"}
    return {**records, **rest}


def _summary_figures(document: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """Each metric's statistics (avg, p50, p99, ...) as "metric.statistic", with its unit."""
    figures: dict[str, float] = {}
    units: dict[str, str] = {}
    for name, value in document.items():
        if isinstance(value, dict) and "unit" in value:
            for statistic, figure in flat_figures(value).items():
                figures[f"{name}.{statistic}"] = figure
                units[f"{name}.{statistic}"] = str(value["unit"])
    return figures, units


def _avg(document: dict[str, Any], name: str) -> float | None:
    value = document.get(name)
    return number(value.get("avg")) if isinstance(value, dict) else None


def _required(document: dict[str, Any], names: tuple[str, ...], source: str) -> float:
    """The first of the named figures the summary has."""
    for name in names:
        if (figure := _avg(document, name)) is not None:
            return figure
    raise ImportFileError(f"{source}: the AIPerf summary has no {' or '.join(names)}")


def _total(document: dict[str, Any], kind: str, source: str) -> float:
    """The server's token total when AIPerf read usage, else its own tokenizer's."""
    usage = f"total_usage_{'completion' if kind == 'output' else 'prompt'}_tokens"
    own = "total_osl" if kind == "output" else "total_isl"
    return _required(document, (usage, own), source)


def _token_count_notes(config: dict[str, Any], document: dict[str, Any]) -> list[str]:
    endpoint = config.get("endpoint") or {}
    if _avg(document, "total_usage_completion_tokens") is None:
        # AIPerf 0.3 and 0.4 (no --use-server-token-count) wrote no usage totals: total_isl and
        # total_osl are its tokenizer's counts.
        return ["token totals are AIPerf's own tokenizer's counts of the prompts and the "
                "generated text (total_isl, total_osl): the summary has no server usage totals"]
    if endpoint.get("use_server_token_count"):
        return ["token counts are the server's usage (AIPerf ran with --use-server-token-count)"]
    return [
        "token totals are the server's usage where AIPerf recorded it; AIPerf's own "
        "output_sequence_length re-tokenizes the text on the client"
    ]


def _model(config: dict[str, Any]) -> str | None:
    items = (config.get("models") or {}).get("items") or []
    names = [str(item.get("name")) for item in items if isinstance(item, dict)]
    # The first releases named them endpoint.model_names.
    names = names or [str(name) for name in (config.get("endpoint") or {}).get("model_names") or []]
    return ",".join(names) or None


def _load(config: dict[str, Any], num_requests: int) -> LoadSpec:
    # From 0.12 a phase names its kind (its name is free); 0.9 to 0.11 named it by its name.
    phases = [
        p for p in config.get("phases") or []
        if p.get("kind", p.get("name")) == MEASURED_PHASE
    ]  # fmt: skip
    # Releases before 0.9 kept the load under loadgen, without phases.
    phase = phases[0] if phases else config.get("loadgen") or {}
    concurrency = phase.get("concurrency")
    rate = number(phase.get("rate") or phase.get("request_rate"))
    requests = max(num_requests, 1)
    if rate is not None and rate > 0:
        return LoadSpec(
            shape="rate", num_requests=requests, rate=rate, max_concurrency=concurrency or None
        )
    if isinstance(concurrency, int) and concurrency > 0:
        return LoadSpec(shape="concurrency", num_requests=requests, concurrency=concurrency)
    return LoadSpec(shape="burst", num_requests=requests)


# ---------------------------------------------------------------------------------------------
# The per-request records
# ---------------------------------------------------------------------------------------------


def from_records(
    documents: list[Any],
    *,
    source_name: str,
    telemetry: tuple[list[dict[str, Any]], str] | None = None,
) -> PointResult:
    """profile_export.jsonl (one record a line) as one point; with telemetry (the readings of
    the run's gpu_telemetry_export.jsonl and that file's name), its GPU telemetry too."""
    measured = []
    for line, document in enumerate(documents, 1):
        document = _current_record(document)
        if not is_record(document):
            raise ImportFileError(f"{source_name}:{line}: not an AIPerf per-request record")
        if document["metadata"].get("benchmark_phase", MEASURED_PHASE) == MEASURED_PHASE:
            measured.append(document)
    if not measured:
        raise ImportFileError(f"{source_name}: no records of AIPerf's profiling phase")
    first_start = min(int(d["metadata"]["request_start_ns"]) for d in measured)
    records = [_record(index, d, first_start) for index, d in enumerate(measured)]
    server_counts = all(_value(d, "usage_completion_tokens") is not None for d in measured)
    workload = workload_of(records, endpoint="completions", label="aiperf")
    metrics = metrics_of(records, workload)
    figures, units = _record_figures(measured)
    notes = [
        "output tokens are the server's usage counts"
        if server_counts
        else "output tokens are AIPerf's client-side counts (the server's usage was not recorded)",
        LOAD_NOT_IN_RECORDS,
        ENDPOINT_NOT_IN_RECORDS,
    ]
    point = peer_point(
        tool="aiperf",
        version=None,
        source=source_name,
        key=f"import:{source_name}:{first_start}",
        load=LoadSpec(
            shape="concurrency", num_requests=len(records), concurrency=most_in_flight(records)
        ),
        workload=workload,
        metrics=metrics,
        requests=records,
        figures=figures,
        units=units,
        model=None,
        started_at="unknown (not in AIPerf's per-request file)",
        notes=notes,
    )
    if telemetry is not None:
        readings, name = telemetry
        aiperf_telemetry.attach_readings(
            point, readings, origin_ns=first_start, window=window_of(records), name=name
        )
    return point


# The first releases' names in a per-request record, and the later ones'.
EARLY_METADATA = {"timestamp_ns": "request_start_ns", "credit_phase": "benchmark_phase"}
EARLY_METRICS = {"ttft": "time_to_first_token", "ttst": "time_to_second_token"}


def _current_record(document: Any) -> Any:
    """A record of AIPerf's first releases (metadata.timestamp_ns, the request's start, and
    credit_phase; metrics ttft and ttst) under the later names. Its output_sequence_length
    counts every generated token, reasoning included, as later ones do (output_token_count
    leaves the reasoning tokens out)."""
    if not isinstance(document, dict) or not isinstance(document.get("metadata"), dict):
        return document
    metadata, metrics = document["metadata"], document.get("metrics")
    if "request_start_ns" in metadata or "timestamp_ns" not in metadata:
        return document
    renamed = {EARLY_METADATA.get(key, key): value for key, value in metadata.items()}
    if isinstance(metrics, dict):
        metrics = {EARLY_METRICS.get(key, key): value for key, value in metrics.items()}
    return {**document, "metadata": renamed, "metrics": metrics}


def _value(document: dict[str, Any], name: str) -> Any:
    metric = document["metrics"].get(name)
    return metric.get("value") if isinstance(metric, dict) else None


def _record(index: int, document: dict[str, Any], first_start: int) -> RequestRecord:
    metadata = document["metadata"]
    send = (int(metadata["request_start_ns"]) - first_start) * NS
    error = document.get("error")
    message = None
    if error:
        message = str(error.get("message") or error.get("type") or "failed in AIPerf")
    elif metadata.get("was_cancelled"):
        message = "cancelled by AIPerf"
    ttft_ms = number(_value(document, "time_to_first_token"))
    latency_ms = number(_value(document, "request_latency"))
    gaps = _value(document, "inter_chunk_latency") or []
    chunk_times: list[float] = []
    if ttft_ms is not None:
        moment = send + ttft_ms * MS
        chunk_times.append(moment)
        for gap in gaps:
            moment += (number(gap) or 0.0) * MS
            chunk_times.append(moment)
    output = _value(document, "usage_completion_tokens")
    if output is None:
        output = _value(document, "output_sequence_length")
    prompt = _value(document, "usage_prompt_tokens") or _value(document, "input_sequence_length")
    return request(
        index,
        send=send,
        ttft=ttft_ms * MS if ttft_ms is not None else None,
        e2el=latency_ms * MS if latency_ms is not None else None,
        chunk_times=chunk_times,
        prompt_tokens=int(prompt) if prompt is not None else None,
        output_tokens=int(output) if output is not None else None,
        error=message,
    )


def _record_figures(documents: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, str]]:
    """AIPerf's per-request figures, summed over the records ("metric.sum") with their unit:
    what the file itself states, without a statistic of Headroom's choosing."""
    figures: dict[str, float] = {"records": float(len(documents))}
    units: dict[str, str] = {"records": "requests"}
    for document in documents:
        for name, metric in document["metrics"].items():
            if isinstance(metric, dict) and (value := number(metric.get("value"))) is not None:
                figures[f"{name}.sum"] = figures.get(f"{name}.sum", 0.0) + value
                units[f"{name}.sum"] = str(metric.get("unit", ""))
    return figures, units
