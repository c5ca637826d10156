"""What the imports of other clients' files share (AIPerf, GuideLLM, inference-perf).

Each tool's own summary is kept under the tool's names (PeerFigures): its definitions are not
vLLM's, so none of its figures takes a vLLM name. The vLLM-named Metrics of such a point are
computed by Headroom's own code (runner.measure.metrics.aggregate, vLLM's definitions) from the
tool's per-request records: its send and arrival times, and the server's token counts. Headroom's
own figures that need what no such file records (the intended send time, tokens per chunk) are
left empty rather than filled from the vLLM ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runner.importer.vllm_document import UNKNOWN_MODEL, ImportFileError
from runner.measure.metrics import aggregate
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.records import Float64Array, Int32Array, RequestRecord
from runner.schema.result import (
    IMPORT_CLIENTS,
    EngineInfo,
    Hardware,
    Metrics,
    PeerFigures,
    PeerTool,
    PointResult,
    PointSource,
    Provenance,
)

# Metrics fields that rest on what another client does not record: the schedule's intended
# send times (sched_*, send lag) and the tokens in each chunk (token_itl).
UNRECORDED_FIELDS = tuple(
    name
    for name in Metrics.model_fields
    if "_sched_" in name or "_token_itl_" in name or name == "max_send_lag_ms"
)
SOURCES: dict[PeerTool, PointSource] = {
    "aiperf": "aiperf-import",
    "guidellm": "guidellm-import",
    "inference-perf": "inference-perf-import",
    "llm-d-benchmark": "llm-d-import",
}


def number(value: Any) -> float | None:
    """A finite number as a float; None for anything else (a bool, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def flat_figures(tree: Any, prefix: str = "") -> dict[str, float]:
    """Every finite number in nested dicts, by its dotted path; lists are left out."""
    figures: dict[str, float] = {}
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if (figure := number(value)) is not None:
                figures[path] = figure
            elif isinstance(value, Mapping):
                figures |= flat_figures(value, path)
    return figures


def request(
    index: int,
    *,
    send: float,
    ttft: float | None,
    e2el: float | None,
    chunk_times: Sequence[float] = (),
    prompt_tokens: int | None,
    output_tokens: int | None,
    error: str | None,
) -> RequestRecord:
    """One request as vLLM's client would have recorded it, times in seconds from the first send.

    A request with no error but no first token is failed, as vLLM counts it.
    """
    if error is None and ttft is None:
        error = "no first token recorded"
    ok = error is None
    times = list(chunk_times) if ok else []
    if ok and ttft is not None and not times:
        times = [send + ttft]
    return RequestRecord(
        index=index,
        intended_send=send,
        actual_send=send,
        ttft=ttft if ok else None,
        e2el=e2el if ok else None,
        completed_at=send + e2el if e2el is not None else None,
        chunk_times=Float64Array(times),
        chunk_tokens=Int32Array(),
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens if ok else None,
        status=200 if ok else None,
        error=error,
    )


def metrics_of(records: Sequence[RequestRecord], workload: WorkloadSpec) -> Metrics:
    """vLLM's figures of the records (Headroom's aggregate), less what the tool never recorded."""
    if not records:
        raise ImportFileError("the file holds no requests of its measured phase")
    metrics = aggregate(records, workload)
    return metrics.model_copy(update=dict.fromkeys(UNRECORDED_FIELDS))


def counted_metrics(
    *, duration: float, completed: int, failed: int, prompt_tokens: int, output_tokens: int
) -> Metrics:
    """A summary's counts and token totals over its duration: vLLM's throughputs, defined alike
    in every tool; no latency statistic (a summary's are the tool's, not vLLM's)."""
    return Metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        total_input_tokens=prompt_tokens,
        total_output_tokens=output_tokens,
        request_throughput=completed / duration,
        output_throughput=output_tokens / duration,
        total_token_throughput=(prompt_tokens + output_tokens) / duration,
        short_responses=0,
        valid=failed == 0 and completed > 0,
    )


def workload_of(
    records: Sequence[RequestRecord], *, endpoint: str, label: str, ignore_eos: bool = False
) -> WorkloadSpec:
    """The lengths the requests had, as a dataset workload named after the tool's data."""
    inputs = [r.prompt_tokens for r in records if r.prompt_tokens]
    outputs = [r.output_tokens for r in records if r.output_tokens]
    return WorkloadSpec(
        kind="dataset",
        dataset_path=label,
        input_tokens_min=min(inputs, default=1),
        input_tokens_max=max(inputs, default=1),
        output_tokens=max(outputs, default=1),
        ignore_eos=ignore_eos,
        endpoint="chat" if "chat" in endpoint else "completions",
    )


def most_in_flight(records: Iterable[RequestRecord]) -> int:
    """The most requests in flight at once: a closed loop's concurrency, read off its sends."""
    events: list[tuple[float, int]] = []
    for r in records:
        if r.actual_send is None or r.completed_at is None:
            continue
        events += [(r.actual_send, 1), (r.completed_at, -1)]
    # An end sorts before a send at the same moment: that slot was handed on, not added.
    events.sort(key=lambda event: (event[0], event[1]))
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return max(most, 1)


def import_notes(tool: PeerTool, source: str) -> list[str]:
    """The notes every point imported from the tool's file `source` starts with."""
    name = IMPORT_CLIENTS[SOURCES[tool]]
    return [
        f"imported from {name} file {source}",
        f"vLLM-named figures are Headroom's, computed from {name}'s per-request records; "
        f"{name}'s own figures are kept under its names",
        "engine settings are not recorded by this tool; shown as 'defaults'",
    ]


def peer_point(
    *,
    tool: PeerTool,
    version: str | None,
    format_label: str | None = None,
    source: str,
    key: str,
    load: LoadSpec,
    workload: WorkloadSpec,
    metrics: Metrics,
    requests: list[RequestRecord],
    figures: dict[str, float],
    units: dict[str, str] | None = None,
    model: str | None,
    started_at: str,
    notes: list[str],
) -> PointResult:
    """A point imported from another client's file; its provenance names the tool and version,
    or, where the file does not name its version, the format recognised (format_label, from
    runner.importer.detect: "stage report (0.2 to 0.4 format)")."""
    name = IMPORT_CLIENTS[SOURCES[tool]]
    if version:
        client = f"{name} {version}"
    elif format_label:
        client = f"{name} {format_label} (version not recorded in the file)"
    else:
        client = f"{name} (version not recorded in the file)"
    notes = [*import_notes(tool, source), *notes]
    return PointResult(
        key=key,
        plan_name=f"{tool}-import",
        engine_config=EngineConfig(),
        load=load,
        workload=workload,
        metrics=metrics,
        provenance=Provenance(
            hardware=Hardware(host=f"unknown (not recorded by {name})"),
            engine=EngineInfo(launch_style="attach", name=None),
            checkpoint=Checkpoint(model=model or UNKNOWN_MODEL),
            client_version=client,
            started_at=started_at,
        ),
        requests=requests,
        source=SOURCES[tool],
        notes=notes,
        peer=PeerFigures(
            tool=tool, version=version, file=source, figures=figures, units=units or {}
        ),
    )

