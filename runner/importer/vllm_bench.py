"""A `vllm bench serve` result as a Headroom point: its metrics, requests, load and workload."""

from __future__ import annotations

import math
import re
from typing import Any, cast

from pydantic import ValidationError

from runner.client.responses import chunk_token_counts
from runner.importer.vllm_document import (
    PERCENTILE_KEY,
    STATISTIC_FIELDS,
    VLLM_BENCH_REQUIRED,
    BenchDocument,
    BenchMetadata,
    ImportFileError,
    bench_provenance,
    engine_settings_note,
    from_metadata,
    leftover_notes,
    read_metadata,
)
from runner.measure.metrics import summary_ms
from runner.schema.engine_config import EngineConfig
from runner.schema.flags import check_goodput
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.records import Float64Array, Int32Array, RequestRecord
from runner.schema.result import Metrics, PointResult


def from_vllm_bench(data: Any, *, source_name: str, format_label: str = "") -> PointResult:
    """Turn one `vllm bench serve --save-result` document into a point; format_label: the
    format runner.importer.detect recognised, named in the provenance."""
    if not isinstance(data, dict):
        raise ImportFileError(f"{source_name}: expected a JSON object, got {_kind(data)}")
    missing = [key for key in VLLM_BENCH_REQUIRED if key not in data]
    if missing:
        raise ImportFileError(
            f"{source_name}: not a vllm bench serve result (missing {', '.join(missing)})"
        )
    try:
        doc = BenchDocument.model_validate(data)
        return _point(doc, data, source_name, format_label)
    except ValidationError as exc:
        raise ImportFileError(f"{source_name}: {_first_error(exc)}") from None


def _point(
    doc: BenchDocument, data: dict[str, Any], source: str, format_label: str
) -> PointResult:
    metadata = read_metadata(data, source)
    notes = [f"imported from vllm bench serve file {source}"]
    chat = "chat" in (doc.backend or doc.endpoint_type or "")
    requests = _requests(doc, chat=chat, source=source, notes=notes)
    metrics = _metrics(doc, data, requests, metadata, notes, source)
    load = _load(doc, metrics.completed + metrics.failed, source, notes)
    engine_config = from_metadata(EngineConfig, metadata.group("engine"), source)
    notes.append(engine_settings_note(engine_config, metadata, sweep=doc.run_number is not None))
    notes += leftover_notes(data, metadata)
    return PointResult(
        key=f"import:{source}:{doc.date or ''}",
        plan_name=doc.label or "vllm-bench-import",
        engine_config=engine_config,
        load=load,
        workload=_workload(doc, chat, requests, metrics),
        metrics=metrics,
        provenance=bench_provenance(doc, metadata, source, notes, format_label),
        repeat=doc.run_number if doc.run_number is not None and doc.run_number >= 0 else 0,
        requests=requests,
        source="vllm-bench-import",
        notes=notes,
    )


TEXTLESS = "no chunk of text (vLLM counted it as completed, with a TTFT of 0)"
NO_REASON = "failed in vllm bench (no first chunk; no reason recorded)"


def _kind(data: Any) -> str:
    if isinstance(data, list) and data and isinstance(data[0], dict) and "benchmark" in data[0]:
        # save_to_pytorch_benchmark_format writes this list beside the result file.
        return "a list (a .pytorch.json file? import the result file written beside it)"
    return type(data).__name__


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    return f"{where}: {error['msg']}"


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


def _metrics(
    doc: BenchDocument,
    data: dict[str, Any],
    requests: list[RequestRecord],
    metadata: BenchMetadata,
    notes: list[str],
    source: str,
) -> Metrics:
    completed, duration = doc.completed, doc.duration
    if doc.failed is not None:
        failed = doc.failed
    else:
        failed = max((doc.num_prompts or completed) - completed, 0)
        notes.append("file has no 'failed' key: failures inferred from num_prompts - completed")
    notes.append("short responses cannot be checked: the file does not record max_tokens")
    statistics, other_percentiles = _statistics(data, source)
    if not any(key.endswith("_e2el_ms") for key in (*statistics, *other_percentiles)):
        statistics |= _e2el_from_latencies(doc, requests, completed, failed, notes)
    total_input, total_output = doc.total_input_tokens, doc.total_output_tokens
    return Metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        short_responses=0,
        valid=failed == 0 and completed > 0,
        total_input_tokens=total_input,
        total_output_tokens=total_output,
        request_throughput=_finite(doc.request_throughput) or completed / duration,
        output_throughput=_finite(doc.output_throughput) or total_output / duration,
        total_token_throughput=_finite(doc.total_token_throughput)
        or (total_input + total_output) / duration,
        request_goodput=_finite(doc.request_goodput),
        goodput_slos=_goodput_slos(doc, metadata, notes, source),
        other_percentiles=other_percentiles,
        # Each statistic is a float | None field of Metrics, checked there by its name; mypy
        # cannot match a ** dict's keys to fields, so it sees them as Any.
        **cast(dict[str, Any], statistics),
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _statistics(
    data: dict[str, Any], source: str
) -> tuple[dict[str, float | None], dict[str, float]]:
    """The ttft/tpot/itl/e2el statistics: Metrics fields, and the other percentiles by name."""
    fields: dict[str, float | None] = {}
    others: dict[str, float] = {}
    for key, value in data.items():
        if key in STATISTIC_FIELDS:
            fields[key] = _figure(key, value, source)
        elif PERCENTILE_KEY.match(key) and (figure := _figure(key, value, source)) is not None:
            others[key] = figure
    return fields, others


def _figure(key: str, value: Any, source: str) -> float | None:
    """A statistic as a float; None when absent or not finite, refused when not a number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportFileError(f"{source}: {key}: expected a number of ms, got {value!r:.60}")
    return float(value) if math.isfinite(value) else None


def _e2el_from_latencies(
    doc: BenchDocument,
    requests: list[RequestRecord],
    completed: int,
    failed: int,
    notes: list[str],
) -> dict[str, float | None]:
    """vLLM's e2el statistics (np.mean/median/std/percentile of successful latencies, ms).

    vLLM writes them only with --percentile-metrics e2el, but keeps `latencies` in every 0.32
    file. Without --save-detailed there is no `errors` array to tell which requests succeeded;
    vLLM's request functions leave a failed request's latency at 0.0, so the non-zero ones are
    taken, and only when their count is exactly `completed`.
    """
    if doc.latencies is None:
        return {}
    if requests:
        latencies = [r.e2el for r in requests if r.ok and r.e2el is not None]
    else:
        latencies = [x for x in doc.latencies if x > 0] if failed else list(doc.latencies)
    if not latencies or len(latencies) != completed:
        notes.append(
            "e2el statistics left empty: the file does not tell which latencies are of "
            "successful requests"
        )
        return {}
    notes.append(
        "e2el statistics (mean, median, std, p90, p95, p99) computed from the file's latencies "
        "of successful requests, not read from it"
    )
    return summary_ms("e2el", latencies)


def _goodput_slos(
    doc: BenchDocument, metadata: BenchMetadata, notes: list[str], source: str
) -> dict[str, float]:
    """SLOs from --metadata goodput=ttft:500,tpot:50; vLLM does not save its --goodput."""
    given = metadata.group("goodput").get("slos")
    if given is None:
        if _finite(doc.request_goodput) is not None:
            notes.append(
                "request_goodput kept, but its SLOs are unknown: vllm bench does not save "
                "--goodput (record them as --metadata goodput=ttft:MS,tpot:MS)"
            )
        return {}
    key, text = given
    slos: dict[str, float] = {}
    try:
        for pair in re.split(r"[\s,]+", str(text).strip()):
            name, _, ms = pair.partition(":")
            slos[name] = float(ms)
        return check_goodput(slos)
    except ValueError as exc:
        raise ImportFileError(
            f"{source}: --metadata {key}={text}: {exc} (write it as vLLM's --goodput: "
            "ttft:500,tpot:50)"
        ) from None


# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


def _requests(
    doc: BenchDocument, *, chat: bool, source: str, notes: list[str]
) -> list[RequestRecord]:
    """Per-request records from --save-detailed arrays; empty when the file has none."""
    if not doc.ttfts:
        return []
    count = len(doc.ttfts)
    for name in ("itls", "latencies", "output_lens", "input_lens", "errors", "start_times"):
        values = getattr(doc, name)
        if values is not None and len(values) != count:
            raise ImportFileError(
                f"{source}: {name} has {len(values)} entries but ttfts has {count}"
            )
    starts = doc.start_times
    first_start = min(starts, default=None) if starts is not None else None
    if first_start is None:
        notes.append("file has no start_times: request send times shown as 0")
    if doc.output_lens is not None:
        role = "; a chat stream's first chunk is taken as the role chunk, 0 tokens" if chat else ""
        notes.append(
            "tokens per chunk are not in the file: each request's output_lens is spread over "
            f"its chunks (1 on the first token chunk, the rest evenly{role})"
        )
    # When the file counts every request as completed, a request without a first chunk did not
    # fail in vLLM's eyes: its client (0.6, 0.7) counted a stream whose chunks held no text as
    # a success with a TTFT of 0, in its statistics. Headroom counts a request without a chunk
    # as not completed, so the record says which it is, and the file's figures stay vLLM's.
    all_completed = doc.completed == count
    records = [_request(doc, index, chat, first_start, all_completed) for index in range(count)]
    textless = sum(1 for r in records if r.error == TEXTLESS)
    if textless:
        notes.append(
            f"{textless} requests sent no chunk of text: vLLM counted each as completed with a "
            "TTFT of 0 (in its figures, kept as stated); their records have no TTFT"
        )
    return records


def _request(
    doc: BenchDocument, index: int, chat: bool, first_start: float | None, all_completed: bool
) -> RequestRecord:
    starts = doc.start_times
    send = starts[index] - first_start if starts and first_start is not None else 0.0
    error = (doc.errors[index] if doc.errors else None) or None
    ttft = doc.ttfts[index] if doc.ttfts and error is None and doc.ttfts[index] else None
    if error is None and ttft is None:
        # vLLM's client records no reason for some failures (an HTTP error without a reason).
        error = TEXTLESS if all_completed else NO_REASON
    gaps = doc.itls[index] if doc.itls else []
    chunk_times: list[float] = []
    if ttft is not None:
        moment = send + ttft
        chunk_times.append(moment)
        for gap in gaps:
            moment += gap
            chunk_times.append(moment)
    latency = doc.latencies[index] if doc.latencies and doc.latencies[index] else None
    if latency is None and ttft is not None:
        latency = ttft + sum(gaps)
    output = doc.output_lens[index] if doc.output_lens is not None and error is None else None
    return RequestRecord(
        index=index,
        intended_send=send,
        actual_send=send,
        ttft=ttft,
        e2el=latency if error is None else None,
        completed_at=send + latency if latency is not None and error is None else None,
        chunk_times=Float64Array(chunk_times),
        chunk_tokens=Int32Array(
            _chunk_tokens(len(chunk_times), output, chat) if output is not None else ()
        ),
        prompt_tokens=doc.input_lens[index] if doc.input_lens is not None else None,
        output_tokens=output,
        status=None if error else 200,
        error=error,
    )


def _chunk_tokens(chunks: int, output_tokens: int, chat: bool) -> list[int]:
    """output_lens over the chunks, as the runner's collector splits a usage count.

    vLLM's server opens a chat stream with a role chunk that vLLM's client counts as the first
    chunk (its TTFT) but that carries no token.
    """
    role = 1 if chat and chunks > 1 else 0
    return [0] * role + chunk_token_counts(chunks - role, None, output_tokens)


# ---------------------------------------------------------------------------------------------
# Load, workload, metadata, provenance
# ---------------------------------------------------------------------------------------------


def _load(doc: BenchDocument, num_requests: int, source: str, notes: list[str]) -> LoadSpec:
    num_requests = doc.num_prompts or num_requests or 1
    rate = _request_rate(doc.request_rate, source)
    if doc.ramp_up_strategy:
        notes.append(
            f"ramp-up load ({doc.ramp_up_strategy}, {doc.ramp_up_start_rps} to "
            f"{doc.ramp_up_end_rps} req/s) has no Headroom load shape: the load shown is not "
            "what ran"
        )
    if rate is not None:
        burstiness = doc.burstiness if doc.burstiness is not None else 1.0
        if not math.isfinite(burstiness):
            raise ImportFileError(f"{source}: burstiness: {burstiness} cannot be stored")
        return LoadSpec(
            shape="rate",
            num_requests=num_requests,
            rate=rate,
            burstiness=burstiness,
            max_concurrency=doc.max_concurrency,
        )
    if doc.max_concurrency is not None:
        return LoadSpec(
            shape="concurrency", num_requests=num_requests, concurrency=doc.max_concurrency
        )
    return LoadSpec(shape="burst", num_requests=num_requests)


def _request_rate(value: float | str | None, source: str) -> float | None:
    """requests/s, or None for a burst: vLLM writes "inf" (a float inf reads as JSON Infinity)."""
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity"):
            return None
        try:
            value = float(value)
        except ValueError:
            raise ImportFileError(f"{source}: request_rate: {value!r} is not a number") from None
    if value is None or value == math.inf:
        return None
    if not math.isfinite(value) or value <= 0:
        raise ImportFileError(f"{source}: request_rate: {value} must be a number > 0 or 'inf'")
    return value


def _workload(
    doc: BenchDocument, chat: bool, requests: list[RequestRecord], metrics: Metrics
) -> WorkloadSpec:
    input_lens = [r.prompt_tokens for r in requests if r.prompt_tokens]
    output_lens = [r.output_tokens for r in requests if r.output_tokens]
    completed = max(metrics.completed, 1)
    mean_input = max(round(metrics.total_input_tokens / completed), 1)
    mean_output = max(round(metrics.total_output_tokens / completed), 1)
    return WorkloadSpec(
        kind="dataset",
        dataset_path=doc.dataset_name or doc.dataset_path or "vllm-bench",
        input_tokens_min=min(input_lens, default=mean_input),
        input_tokens_max=max(input_lens, default=mean_input),
        output_tokens=max(output_lens, default=mean_output),
        ignore_eos=False,
        endpoint="chat" if chat else "completions",
    )
