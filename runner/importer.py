"""Read result files: Headroom's own JSONL and `vllm bench serve --save-result` JSON.

vllm bench files vary by version: older ones lack `failed`, p90/p95, `latencies` and
`start_times`; per-request arrays are present only with `--save-detailed`. Every key is read
defensively, and what a file cannot tell (for example whether responses were cut short) is
written into the point's notes instead of being guessed.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.results import ResultFileError, read_points
from runner.schema import (
    Checkpoint,
    EngineConfig,
    EngineInfo,
    Hardware,
    LoadSpec,
    Metrics,
    PointResult,
    Provenance,
    RequestRecord,
    WorkloadSpec,
)

# The keys without which a file is not a vllm bench serve result at all.
VLLM_BENCH_REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens")
METRIC_FAMILIES = ("ttft", "tpot", "itl", "e2el")
STATISTICS = ("mean", "median", "std", "p90", "p95", "p99")


class ImportFileError(ValueError):
    """A result file that cannot be read; the message says why and where."""


def load_result_file(path: Path) -> list[PointResult]:
    """Every point in a Headroom results file (JSONL) or a vllm bench JSON; ImportFileError else."""
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    text = _read_text(path)
    if not text.strip():
        raise ImportFileError(f"{path}: the file is empty")
    document = _single_json_document(text)
    if document is None:
        try:
            return read_points(path).points
        except ResultFileError as exc:
            raise ImportFileError(str(exc)) from exc
    if isinstance(document, dict) and "schema_version" in document:
        try:
            return [PointResult.model_validate(document)]
        except ValidationError as exc:
            raise ImportFileError(f"{path}: not a valid Headroom point: {exc.errors()[0]['msg']}")
    return [from_vllm_bench(document, source_name=path.name)]


def from_vllm_bench(data: Any, *, source_name: str) -> PointResult:
    """Turn one `vllm bench serve --save-result` document into a point."""
    if not isinstance(data, dict):
        raise ImportFileError(f"{source_name}: expected a JSON object, got {type(data).__name__}")
    missing = [key for key in VLLM_BENCH_REQUIRED if key not in data]
    if missing:
        raise ImportFileError(
            f"{source_name}: not a vllm bench serve result (missing {', '.join(missing)})"
        )
    notes = [f"imported from vllm bench serve file {source_name}"]
    requests = _requests(data, notes)
    metrics = _metrics(data, requests, notes)
    return PointResult(
        key=f"import:{source_name}:{data.get('date', '')}",
        plan_name=str(data.get("label") or "vllm-bench-import"),
        engine_config=EngineConfig(),
        load=_load(data, metrics.completed + metrics.failed),
        workload=_workload(data, requests, metrics),
        metrics=metrics,
        provenance=_provenance(data),
        requests=requests,
        source="vllm-bench-import",
        notes=notes
        + ["engine settings are not recorded in vllm bench files; shown as 'defaults'"],
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{path}: not a text file (is it compressed or binary?)") from None


def _single_json_document(text: str) -> Any | None:
    """The parsed document if the text is exactly one JSON value, None if it may be JSONL."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("{") and "\n{" in text.strip():
            return None  # several objects, one per line: a Headroom results file
        raise ImportFileError(
            f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
            "(is the file truncated?)"
        ) from None


def _number(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _metrics(data: dict[str, Any], requests: list[RequestRecord], notes: list[str]) -> Metrics:
    completed = int(data["completed"])
    if "failed" in data:
        failed = int(data["failed"])
    else:
        failed = max(int(data.get("num_prompts") or completed) - completed, 0)
        notes.append("file has no 'failed' key: failures inferred from num_prompts - completed")
    notes.append("short responses cannot be checked: the file does not record max_tokens")
    duration = float(data["duration"])
    values: dict[str, Any] = {}
    for family in METRIC_FAMILIES:
        for statistic in STATISTICS:
            key = f"{statistic}_{family}_ms"
            values[key] = _number(data, key)
    total_input = int(data["total_input_tokens"])
    total_output = int(data["total_output_tokens"])
    return Metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        short_responses=0,
        valid=failed == 0 and completed > 0,
        total_input_tokens=total_input,
        total_output_tokens=total_output,
        request_throughput=_number(data, "request_throughput") or completed / duration,
        output_throughput=_number(data, "output_throughput") or total_output / duration,
        total_token_throughput=_number(data, "total_token_throughput")
        or (total_input + total_output) / duration,
        **values,
    )


def _requests(data: dict[str, Any], notes: list[str]) -> list[RequestRecord]:
    """Per-request records from --save-detailed arrays; empty when the file has none."""
    ttfts = data.get("ttfts")
    if not isinstance(ttfts, list):
        return []
    count = len(ttfts)
    itls = _array(data, "itls", count, [])
    output_lens = _array(data, "output_lens", count, None)
    input_lens = _array(data, "input_lens", count, None)
    errors = _array(data, "errors", count, "")
    latencies = _array(data, "latencies", count, None)
    starts = _array(data, "start_times", count, None)
    first_start = min((s for s in starts if isinstance(s, (int, float))), default=None)
    if first_start is None:
        notes.append("file has no start_times: request send times shown as 0")
    records = []
    for index in range(count):
        send = starts[index] - first_start if first_start is not None else 0.0
        error = errors[index] or None
        ttft = ttfts[index] if not error and ttfts[index] else None
        gaps = itls[index] or []
        chunk_times = []
        if ttft is not None:
            moment = send + ttft
            chunk_times.append(moment)
            for gap in gaps:
                moment += gap
                chunk_times.append(moment)
        latency = latencies[index] if latencies[index] else (
            ttft + sum(gaps) if ttft is not None else None
        )
        records.append(
            RequestRecord(
                index=index,
                intended_send=send,
                actual_send=send,
                ttft=ttft,
                e2el=latency if not error else None,
                completed_at=send + latency if latency and not error else None,
                chunk_times=chunk_times,
                chunk_tokens=[1] * len(chunk_times),
                prompt_tokens=input_lens[index],
                output_tokens=output_lens[index] if not error else None,
                status=None if error else 200,
                error=error,
            )
        )
    return records


def _array(data: dict[str, Any], key: str, count: int, default: Any) -> list[Any]:
    values = data.get(key)
    if not isinstance(values, list) or len(values) != count:
        return [default] * count
    return values


def _load(data: dict[str, Any], num_requests: int) -> LoadSpec:
    num_requests = int(data.get("num_prompts") or num_requests or 1)
    rate = data.get("request_rate")
    concurrency = data.get("max_concurrency")
    if isinstance(rate, (int, float)) and math.isfinite(rate):
        return LoadSpec(
            shape="rate",
            num_requests=num_requests,
            rate=float(rate),
            burstiness=float(data.get("burstiness") or 1.0),
        )
    if isinstance(concurrency, int) and concurrency > 0:
        return LoadSpec(shape="concurrency", num_requests=num_requests, concurrency=concurrency)
    return LoadSpec(shape="burst", num_requests=num_requests)


def _workload(data: dict[str, Any], requests: list[RequestRecord], metrics: Metrics) -> WorkloadSpec:
    input_lens = [r.prompt_tokens for r in requests if r.prompt_tokens]
    output_lens = [r.output_tokens for r in requests if r.output_tokens]
    completed = max(metrics.completed, 1)
    mean_input = max(round(metrics.total_input_tokens / completed), 1)
    backend = str(data.get("backend") or data.get("endpoint_type") or "")
    return WorkloadSpec(
        kind="dataset",
        dataset_path=str(data.get("dataset_name") or data.get("dataset_path") or "vllm-bench"),
        input_tokens_min=min(input_lens, default=mean_input),
        input_tokens_max=max(input_lens, default=mean_input),
        output_tokens=max(output_lens, default=max(round(metrics.total_output_tokens / completed), 1)),
        ignore_eos=False,
        endpoint="chat" if "chat" in backend else "completions",
    )


def _provenance(data: dict[str, Any]) -> Provenance:
    return Provenance(
        hardware=Hardware(host="unknown (not recorded by vllm bench)"),
        engine=EngineInfo(launch_style="attach"),
        checkpoint=Checkpoint(model=str(data.get("model_id") or "unknown")),
        client_version=f"vllm bench serve ({data.get('backend', 'unknown backend')})",
        started_at=_iso_date(data.get("date")),
    )


def _iso_date(value: Any) -> str:
    """vllm bench writes local time as 20250101-120000; keep it, marked as local time."""
    try:
        return datetime.strptime(str(value), "%Y%m%d-%H%M%S").isoformat() + " (local time)"
    except ValueError:
        return str(value or "unknown")
