"""An inference-perf per-stage report (stage_N_lifecycle_metrics.json, inference-perf 0.7) as a
Headroom point.

A stage is one load level: its report states the requested rate, counts and token totals, and
inference-perf's own statistics, which are kept under its names
("successes.latency.time_to_first_token.p99", in seconds). Its throughputs count output
tokens by re-tokenizing the response text on the client unless it ran with
use_server_output_tokens, so vLLM's output throughput is computed here from the server's count
(output_tokens.total) over the stage's time. A stage report has no per-request entries and
does not name inference-perf's version: no vLLM-named latency statistic, and the version is
left unrecorded. The whole-run summary mixes the stages' loads and is refused.
"""

from __future__ import annotations

from typing import Any

from runner.importer.peers import counted_metrics, flat_figures, number, peer_point
from runner.importer.vllm_document import ImportFileError
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import PointResult

REPORT_KEYS = ("benchmark_time_seconds", "load_summary", "successes", "failures")
SUMMARY_REFUSED = (
    "{source}: an inference-perf summary report mixes every stage's load into one figure; "
    "import the per-stage reports (stage_N_lifecycle_metrics.json) instead"
)


def _is_report(document: Any) -> bool:
    return isinstance(document, dict) and all(key in document for key in REPORT_KEYS)


def is_stage_report(document: Any) -> bool:
    return _is_report(document) and "requested_rate" in (document.get("load_summary") or {})


def is_summary_report(document: Any) -> bool:
    return _is_report(document) and not is_stage_report(document)


def from_stage_report(document: dict[str, Any], *, source_name: str) -> PointResult:
    successes = document.get("successes") or {}
    failures = document.get("failures") or {}
    load = document.get("load_summary") or {}
    duration = number(document.get("benchmark_time_seconds"))
    if duration is None or duration <= 0:
        raise ImportFileError(f"{source_name}: benchmark_time_seconds must be a number > 0")
    completed = int(number(successes.get("count")) or 0)
    failed = int(number(failures.get("count")) or 0)
    prompt = int(_stat(successes, "prompt_tokens", "total"))
    output = int(_stat(successes, "output_tokens", "total"))
    metrics = counted_metrics(
        duration=duration,
        completed=completed,
        failed=failed,
        prompt_tokens=prompt,
        output_tokens=output,
    )
    rate = number(load.get("requested_rate"))
    requests = max(completed + failed, 1)
    notes = [
        "an inference-perf stage report has no per-request entries: vLLM-named latency "
        "statistics are left empty",
        "output tokens under vLLM's names are the server's count (output_tokens.total); "
        "inference-perf's own throughputs may count re-tokenized text (output_len)",
        "the arrival process (constant or Poisson) is not in a stage report: shown as Poisson",
    ]
    return peer_point(
        tool="inference-perf",
        version=None,
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
            | {"benchmark_time_seconds": duration}
        ),
        model=None,
        started_at="unknown (not in an inference-perf stage report)",
        notes=notes,
    )


def _stat(successes: dict[str, Any], name: str, statistic: str) -> float:
    return number((successes.get(name) or {}).get(statistic)) or 0.0


def _workload(successes: dict[str, Any]) -> WorkloadSpec:
    return WorkloadSpec(
        kind="dataset",
        dataset_path="inference-perf",
        input_tokens_min=max(int(_stat(successes, "prompt_tokens", "min")), 1),
        input_tokens_max=max(int(_stat(successes, "prompt_tokens", "max")), 1),
        output_tokens=max(int(_stat(successes, "output_tokens", "max")), 1),
        endpoint="completions",
    )
