"""A GuideLLM benchmarks report (guidellm 0.3 to 0.8, JSON or YAML) as Headroom points.

The report's shape changed twice (runner.importer.detect tells them apart): 0.3 kept each
benchmark's request_totals, run_stats and strategy (args.strategy) on the benchmark, its
requests' times as start_time, first_token_time and last_token_time; from 0.4 a benchmark has
its config (strategy, backend) and metrics (request_totals among them) and its requests' times
under info.timings; from 0.5 the report's metadata names guidellm_version (0.7 puts the run's
settings under a top-level config, 0.4 to 0.6 under args; neither is read). Reports of 0.3 and
0.4 do not name their version: the provenance names the format.

Every benchmark of the report (each stream count or rate of a sweep) is one point. GuideLLM's
own statistics are kept under its names ("time_to_first_token_ms.successful.p99"): its
percentiles are not numpy's interpolated ones that vLLM reports, so none takes a vLLM name.
vLLM's figures are computed by Headroom from the report's per-request entries, from their
timings: request_start (just before the request went out), first_token_iteration and
last_request_iteration (the last chunk), with the server's token counts. A report whose
requests were sampled (`--metrics sample_size`) holds too few entries for that: its points keep
only the counts under vLLM's names.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from runner.importer.detect import Detected
from runner.importer.peers import (
    counted_metrics,
    flat_figures,
    metrics_of,
    number,
    peer_point,
    request,
    workload_of,
)
from runner.importer.vllm_document import ImportFileError
from runner.schema.plan import LoadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import Metrics, PointResult

# Request entries by GuideLLM's status; "incomplete" ones were cut off when the benchmark ended.
STATUSES = ("successful", "errored", "incomplete")


def from_report(
    document: dict[str, Any], *, source_name: str, detected: Detected
) -> list[PointResult]:
    benchmarks = document["benchmarks"]
    if not benchmarks:
        detected.refuse(source_name, "the report holds no benchmarks")
    version = str((document.get("metadata") or {}).get("guidellm_version") or "") or None
    return [
        _point(benchmark, index, version, f"{source_name}#{index}", detected)
        for index, benchmark in enumerate(benchmarks)
    ]


def _config(benchmark: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's config (0.4 on), or 0.3's args and worker in its shape."""
    if isinstance(benchmark.get("config"), dict):
        return benchmark["config"]
    args = benchmark.get("args") or {}
    worker = benchmark.get("worker") or {}
    return {
        "id_": benchmark.get("id_"),
        "strategy": args.get("strategy") or {},
        "backend": {"model": worker.get("backend_model")},
    }


def _point(
    benchmark: dict[str, Any], index: int, version: str | None, source: str, detected: Detected
) -> PointResult:
    config = _config(benchmark)
    metrics_tree = benchmark.get("metrics") or {}
    totals = metrics_tree.get("request_totals") or benchmark.get("request_totals") or {}
    entries = benchmark.get("requests") or {}
    counted = {status: int(number(totals.get(status)) or 0) for status in STATUSES}
    kept = {status: entries.get(status) or [] for status in STATUSES}
    complete = all(len(kept[status]) == counted[status] for status in STATUSES)
    notes: list[str] = []
    records = _records(kept, source) if complete else []
    endpoint = str((config.get("backend") or {}).get("request_format") or _request_type(kept))
    workload = workload_of(records, endpoint=endpoint, label="guidellm")
    if records:
        metrics = metrics_of(records, workload)
    else:
        metrics = _counted_metrics(benchmark, counted, source)
        notes.append(
            "the report keeps a sample of its requests, not all: vLLM-named latency statistics "
            "are left empty"
        )
    if counted["incomplete"]:
        notes.append(
            f"{counted['incomplete']} requests GuideLLM cut off at the benchmark's end are "
            "counted as failed"
        )
    return peer_point(
        tool="guidellm",
        version=version,
        format_label=detected.version,
        source=source,
        key=f"import:{source}:{config.get('id_', index)}",
        load=_load(config.get("strategy") or {}, sum(counted.values())),
        workload=workload,
        metrics=metrics,
        requests=records,
        figures=_figures(metrics_tree),
        model=(config.get("backend") or {}).get("model") or None,
        started_at=_iso(benchmark.get("start_time")),
        notes=notes,
    )


def _request_type(kept: dict[str, list[Any]]) -> str:
    """0.3's request entries name their type (text_completions, chat_completions)."""
    for entries in kept.values():
        for entry in entries:
            if isinstance(entry, dict) and entry.get("request_type"):
                return str(entry["request_type"])
    return "chat"


def _figures(metrics_tree: dict[str, Any]) -> dict[str, float]:
    """Every statistic GuideLLM gives of its successful requests, and its request totals."""
    figures = flat_figures(metrics_tree.get("request_totals"), "request_totals")
    for name, value in metrics_tree.items():
        if isinstance(value, dict) and isinstance(value.get("successful"), dict):
            figures |= flat_figures(value["successful"], f"{name}.successful")
    return figures


def _records(kept: dict[str, list[Any]], source: str) -> list[RequestRecord]:
    entries = [(status, entry) for status in STATUSES for entry in kept[status]]
    starts = [_start(entry, source) for _, entry in entries]
    if not starts:
        return []
    first = min(starts)
    ordered = sorted(zip(starts, entries, strict=True), key=lambda pair: pair[0])
    return [
        _record(index, status, entry, start - first)
        for index, (start, (status, entry)) in enumerate(ordered)
    ]


def _timings(entry: dict[str, Any]) -> dict[str, Any]:
    return (entry.get("info") or {}).get("timings") or {}


def _request_start(entry: dict[str, Any]) -> float | None:
    """When the request went out: info.timings.request_start (0.4 on), or 0.3's start_time."""
    return (number(_timings(entry).get("request_start")) or number(entry.get("request_start_time"))
            or number(entry.get("start_time")))  # fmt: skip


def _start(entry: dict[str, Any], source: str) -> float:
    start = _request_start(entry)
    if start is None:
        raise ImportFileError(f"{source}: a request entry has no request_start time")
    return start


def _record(index: int, status: str, entry: dict[str, Any], send: float) -> RequestRecord:
    timings = _timings(entry)
    start = _request_start(entry) or 0.0
    first = number(timings.get("first_token_iteration")) or number(entry.get("first_token_time"))
    last = (number(timings.get("last_request_iteration")) or number(timings.get("request_end"))
            or number(entry.get("last_token_time")))  # fmt: skip
    error = None
    if status != "successful":
        info = entry.get("info") or {}
        error = str(info.get("error") or entry.get("error") or f"{status} in GuideLLM")
    ttft = first - start if first is not None else None
    e2el = last - start if last is not None else None
    return request(
        index,
        send=send,
        ttft=ttft,
        e2el=e2el,
        prompt_tokens=_count(entry.get("prompt_tokens")),
        output_tokens=_count(entry.get("output_tokens")),
        error=error,
    )


def _count(value: Any) -> int | None:
    figure = number(value)
    return int(figure) if figure is not None else None


def _counted_metrics(
    benchmark: dict[str, Any], counted: dict[str, int], source: str
) -> Metrics:
    duration = number(benchmark.get("duration"))
    if duration is None or duration <= 0:
        raise ImportFileError(f"{source}: the benchmark has no duration > 0")
    tree = benchmark.get("metrics") or {}

    def total(name: str) -> int:
        stats = (tree.get(name) or {}).get("successful") or {}
        return int(number(stats.get("total_sum")) or 0)

    completed = counted["successful"]
    failed = counted["errored"] + counted["incomplete"]
    prompt, output = total("prompt_token_count"), total("output_token_count")
    return counted_metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        prompt_tokens=prompt,
        output_tokens=output,
    )


def _load(strategy: dict[str, Any], num_requests: int) -> LoadSpec:
    """GuideLLM's strategy as Headroom's load shape (synchronous is a closed loop of one)."""
    kind = strategy.get("type_")
    requests = max(num_requests, 1)
    rate = number(strategy.get("rate"))
    if kind == "synchronous":
        return LoadSpec(shape="concurrency", num_requests=requests, concurrency=1)
    if kind == "concurrent" and isinstance(strategy.get("streams"), int):
        return LoadSpec(shape="concurrency", num_requests=requests, concurrency=strategy["streams"])
    if kind in ("constant", "poisson") and rate is not None and rate > 0:
        burstiness = 1.0 if kind == "poisson" else float("inf")
        return LoadSpec(shape="rate", num_requests=requests, rate=rate, burstiness=burstiness)
    return LoadSpec(shape="burst", num_requests=requests)


def _iso(epoch: Any) -> str:
    seconds = number(epoch)
    if seconds is None:
        return "unknown"
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()
