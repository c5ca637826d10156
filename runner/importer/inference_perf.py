"""An inference-perf per-stage report (stage_N_lifecycle_metrics.json, from inference-perf 0.1.0
to 0.7) as a Headroom point, with its stage's Prometheus report when that came with it.

A stage is one load level: its report states the requested rate (from 0.1.1), counts, token
figures and inference-perf's own statistics, which are kept under its names
("successes.latency.time_to_first_token.p99", in seconds). No stage report names
inference-perf's version; its keys date the format (runner.importer.detect.lifecycle_format),
and the point's provenance names that format.

The stage's duration is inference-perf's total_time, the first request's start to the last
one's end: from 0.5 the report states it (benchmark_time_seconds); before, it states its
throughput block, which is counts over that same total_time, so the duration is
successes.count / throughput.requests_per_sec and the token totals are each throughput times
it; the point's notes say so. A report with neither is refused, naming both.

Output tokens: from 0.6 the report has the server's count (output_tokens.total); before, only
inference-perf's count of the response text re-tokenized on the client, which is what vLLM's
own client counts when a response has no usage. A stage report has no per-request entries:
no vLLM-named latency statistic. The whole-run summary mixes the stages' loads and is refused
(runner.importer.detect).
"""

from __future__ import annotations

from typing import Any

from runner.importer.detect import STAGE_NAME, Detected
from runner.importer.inference_perf_server import ServerReport, read_server_report
from runner.importer.peers import counted_metrics, flat_figures, number, peer_point
from runner.importer.vllm_document import ImportFileError
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import PointResult


def from_stage_report(
    document: dict[str, Any],
    *,
    source_name: str,
    detected: Detected,
    server: tuple[dict[str, Any], str] | None = None,
) -> PointResult:
    """The stage as a point; server: its stage_N_prometheus_metrics.json and that file's name."""
    successes = document.get("successes") or {}
    failures = document.get("failures") or {}
    load = document.get("load_summary") or {}
    completed = _count(successes.get("count"), "successes.count", source_name, detected)
    failed = _count(failures.get("count", 0), "failures.count", source_name, detected)
    notes: list[str] = []
    duration = _duration(document, completed, source_name, detected, notes)
    prompt, output = _token_totals(successes, duration, notes)
    metrics = counted_metrics(
        duration=duration, completed=completed, failed=failed, prompt_tokens=prompt,
        output_tokens=output,
    )  # fmt: skip
    rate = number(load.get("requested_rate"))
    requests = max(completed + failed, 1)
    notes += [
        "an inference-perf stage report has no per-request entries: vLLM-named latency "
        "statistics are left empty",
        "the arrival process (constant or Poisson) is not in a stage report: shown as Poisson",
    ]
    if rate is None:
        notes.append("the requested rate is not in an inference-perf 0.1.0 stage report: the "
                     "load is shown as a burst of the stage's requests")  # fmt: skip
    report = _server(server, document, duration, source_name, detected)
    point = peer_point(
        tool="inference-perf",
        version=None,
        format_label=detected.version,
        source=source_name,
        key=f"import:{source_name}",
        load=(
            LoadSpec(shape="rate", num_requests=requests, rate=rate)
            if rate is not None and rate > 0
            else LoadSpec(shape="burst", num_requests=requests)
        ),
        workload=_workload(successes),
        metrics=metrics,
        requests=[],
        figures=(
            flat_figures(successes, "successes")
            | flat_figures(failures, "failures")
            | flat_figures(load, "load_summary")
            | _stated_time(document)
            | (report.figures if report else {})
        ),
        model=None,
        started_at="unknown (not in an inference-perf stage report)",
        notes=notes,
    )
    if report is not None:
        report.attach(point)
    return point


def _count(value: Any, name: str, source: str, detected: Detected) -> int:
    figure = number(value)
    if figure is None or figure < 0 or figure != int(figure):
        detected.refuse(source, f"{name} must be a whole number, got {value!r:.40}")
    return int(figure)


def _stated_time(document: dict[str, Any]) -> dict[str, float]:
    stated = number(document.get("benchmark_time_seconds"))
    return {} if stated is None else {"benchmark_time_seconds": stated}


def _duration(
    document: dict[str, Any], completed: int, source: str, detected: Detected, notes: list[str]
) -> float:
    """benchmark_time_seconds, else successes.count over throughput.requests_per_sec."""
    stated = number(document.get("benchmark_time_seconds"))
    if stated is not None:
        if stated <= 0:
            detected.refuse(source, f"benchmark_time_seconds must be > 0, got {stated}")
        return stated
    throughput = (document.get("successes") or {}).get("throughput") or {}
    rate = number(throughput.get("requests_per_sec"))
    if rate is None or rate <= 0 or completed == 0:
        detected.refuse(
            source,
            "without benchmark_time_seconds, and without a successful request to derive the "
            "stage's duration from (successes.count / throughput.requests_per_sec)",
        )
    duration = completed / rate
    notes.append(
        f"duration {duration:.6g} s derived from the report's own figures, successes.count / "
        "throughput.requests_per_sec (this format states no benchmark_time_seconds; "
        "inference-perf computed that rate over its total_time, the first request's start to "
        "the last one's end)"
    )
    return duration


def _token_totals(
    successes: dict[str, Any], duration: float, notes: list[str]
) -> tuple[int, int]:
    """The server's token counts where the report has them (0.6 on), else its throughput block
    times the duration (the client's re-tokenized count of the text, before 0.6)."""
    prompt = number((successes.get("prompt_tokens") or {}).get("total"))
    output = number((successes.get("output_tokens") or {}).get("total"))
    if prompt is not None and output is not None:
        notes.append(
            "output tokens under vLLM's names are the server's count (output_tokens.total); "
            "inference-perf's own throughputs may count re-tokenized text (output_len)"
        )
        return int(prompt), int(output)
    throughput = successes.get("throughput") or {}
    input_rate = number(throughput.get("input_tokens_per_sec")) or 0.0
    output_rate = number(throughput.get("output_tokens_per_sec")) or 0.0
    notes.append(
        "token totals are the report's throughput.input_tokens_per_sec and "
        "output_tokens_per_sec times the duration: inference-perf's count of the prompts and of "
        "the response text re-tokenized on the client (this format has no server count)"
    )
    return round(input_rate * duration), round(output_rate * duration)


def _server(
    server: tuple[dict[str, Any], str] | None,
    stage: dict[str, Any],
    duration: float,
    source: str,
    detected: Detected,
) -> ServerReport | None:
    if server is None:
        return None
    document, name = server
    stage_number, server_number = STAGE_NAME.search(source), STAGE_NAME.search(name)
    if stage_number and server_number and stage_number[1] != server_number[1]:
        raise ImportFileError(
            f"{source}: {name} is the Prometheus report of stage {server_number[1]}, not of "
            f"stage {stage_number[1]}"
        )
    return read_server_report(document, name=name, completed=_completed(stage))


def _completed(stage: dict[str, Any]) -> int:
    return int(number((stage.get("successes") or {}).get("count")) or 0)


def _stat(successes: dict[str, Any], names: tuple[str, ...], statistic: str) -> float:
    """The first of the named statistics blocks that has the statistic (output_tokens from
    0.6, output_len before)."""
    for name in names:
        value = number((successes.get(name) or {}).get(statistic))
        if value is not None:
            return value
    return 0.0


def _workload(successes: dict[str, Any]) -> WorkloadSpec:
    prompts, outputs = ("prompt_tokens", "prompt_len"), ("output_tokens", "output_len")
    return WorkloadSpec(
        kind="dataset",
        dataset_path="inference-perf",
        input_tokens_min=max(int(_stat(successes, prompts, "min")), 1),
        input_tokens_max=max(int(_stat(successes, prompts, "max")), 1),
        output_tokens=max(int(_stat(successes, outputs, "max")), 1),
        endpoint="completions",
    )
