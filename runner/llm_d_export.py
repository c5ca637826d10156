"""A Headroom point as llm-d-benchmark's benchmark report, version 0.2.1: the common format in
which results reach llm-d's tools and anyone else who reads that schema.

One report a point (llm-d's own reports are one a stage); a run is their YAML documents after
`---` (write_reports), which runner.importer.llm_d_report reads back. What goes where:

- run: uid (a UUID5 of the run and the point's key), eid (the run's code), time (start and end as
  the point's provenance records them, its duration as ISO 8601 with every digit: "PT12.5S").
- scenario.stack: one inference engine: the serving engine's name and version, replicas, model,
  accelerator and tensor parallelism; its native args are the engine config's vLLM flags
  (--max-num-seqs ...) and its extra args.
- scenario.load: tool "headroom", the lengths and rate or concurrency as llm-d names them, and
  Headroom's own load and workload specs under native.config (what llm-d has no field for).
- results.request_performance.aggregate: counts, token lengths, vLLM's latency statistics in ms
  (mean, stddev, p50 = median, p90, p95, p99, and the other percentiles llm-d has a name for),
  and the throughputs.
- results.observability.components: the engine's queue summary (running, waiting, KV use: mean
  and peak) as its aggregate, and each replica's engine samples as time series
  (num_requests_running, num_requests_waiting, kv_cache_usage, num_preemptions,
  generation_tokens), timed from the point's start.

Not in the schema, so not exported: Headroom's own figures (sched_*, token_itl_*, send lag,
connections, goodput SLOs), per-request records, client health, GPU telemetry and notes.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import yaml

from runner.schema.base import SCHEMA_VERSION
from runner.schema.engine_config import EngineConfig
from runner.schema.result import Metrics, PointResult

REPORT_VERSION = "0.2.1"
ENGINE_LABEL = "engine-0"
TOOL = "headroom"
# Metrics' family -> the report's latency name and units.
LATENCIES = {
    "ttft": ("time_to_first_token", "ms"),
    "tpot": ("time_per_output_token", "ms/token"),
    "itl": ("inter_token_latency", "ms/token"),
    "e2el": ("request_latency", "ms"),
}
STATISTICS = {"mean": "mean", "std": "stddev", "median": "p50", "p90": "p90", "p95": "p95",
              "p99": "p99"}  # fmt: skip
# vLLM's other percentiles (Metrics.other_percentiles, "p99.9_ttft_ms") the report has names for.
OTHER_PERCENTILES = {"p0.1": "p0p1", "p1": "p1", "p5": "p5", "p10": "p10", "p25": "p25",
                     "p75": "p75", "p99.9": "p99p9"}  # fmt: skip
# EngineSample field -> the report's time series name and units.
SERIES = {
    "running": ("num_requests_running", "count"),
    "waiting": ("num_requests_waiting", "count"),
    "kv_usage": ("kv_cache_usage", "fraction"),
    "preemptions_total": ("num_preemptions", "count"),
    "generation_tokens_total": ("generation_tokens", "count"),
}
NAMESPACE = uuid.UUID("6f1c5a0e-43a4-4d7e-9b3c-8d2f43e1a043")


def reports(points: Iterable[PointResult], *, run_code: str, run_name: str) -> list[dict[str, Any]]:
    """A report per point, stage numbers in the points' order."""
    return [report(point, run_code=run_code, run_name=run_name, stage=index)
            for index, point in enumerate(points)]  # fmt: skip


def write_reports(documents: Sequence[dict[str, Any]]) -> str:
    """The reports as YAML documents after `---`: llm-d's own reports are YAML."""
    return yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True)


def report(point: PointResult, *, run_code: str, run_name: str, stage: int) -> dict[str, Any]:
    """One point as a 0.2.1 report (module docstring)."""
    start = _instant(point.provenance.started_at if point.provenance else None)
    document: dict[str, Any] = {
        "version": REPORT_VERSION,
        "run": _run(point, run_code, run_name, start),
        "scenario": {"stack": [_engine(point)], "load": _load(point, stage)},
        "results": {"request_performance": {"aggregate": _aggregate(point.metrics)}},
    }
    observability = _observability(point, start)
    if observability:
        document["results"]["observability"] = {"components": observability}
    return document


def _instant(text: str | None) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _run(point: PointResult, code: str, name: str, start: datetime | None) -> dict[str, Any]:
    time: dict[str, Any] = {"duration": f"PT{point.metrics.duration!r}S"}
    if start is not None:
        time["start"] = start.isoformat()
        end = _instant(point.provenance.finished_at if point.provenance else None)
        if end is not None:
            time["end"] = end.isoformat()
    return {
        "uid": str(uuid.uuid5(NAMESPACE, f"{code}/{point.key}")),
        "eid": code,
        "time": time,
        "description": name,
    }


def _cfg_id(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def engine_args(config: EngineConfig) -> dict[str, Any]:
    """The config's settings as vLLM's flags, those set only; its extra args as they are."""
    args: dict[str, Any] = {
        setting.flag: getattr(config, setting.name)
        for setting in EngineConfig.settings()
        if getattr(config, setting.name) is not None
    }
    if config.extra_args:
        args["extra_args"] = list(config.extra_args)
    return args


def _engine(point: PointResult) -> dict[str, Any]:
    provenance = point.provenance
    engine = provenance.engine if provenance else None
    hardware = provenance.hardware if provenance else None
    accelerator = (hardware.gpu_name or hardware.cpu_model) if hardware else None
    return {
        "metadata": {"schema_version": "0.0.1", "label": ENGINE_LABEL,
                     "cfg_id": _cfg_id(point.engine_config.model_dump(mode="json"))},
        "standardized": {
            "kind": "inference_engine",
            "tool": (engine.name if engine else None) or "unknown",
            "tool_version": (engine.version if engine else None) or "unknown",
            "role": "replica",
            "replicas": point.replicas,
            "model": {"name": provenance.checkpoint.model if provenance else "unknown"},
            "accelerator": {
                "model": accelerator or "unknown",
                "count": hardware.gpu_count if hardware else 0,
                "parallelism": {"tp": point.engine_config.tensor_parallel_size or 1},
            },
        },
        "native": {"args": engine_args(point.engine_config)},
    }  # fmt: skip


def _load(point: PointResult, stage: int) -> dict[str, Any]:
    spec, load = point.workload, point.load
    fixed = spec.input_tokens_min == spec.input_tokens_max
    standardized: dict[str, Any] = {
        "tool": TOOL,
        "tool_version": SCHEMA_VERSION,
        "source": {"random": "random", "dataset": "sampled"}.get(spec.kind, "unknown"),
        "stage": stage,
        "input_seq_len": {
            "distribution": "fixed" if fixed else "uniform",
            "value": (spec.input_tokens_min + spec.input_tokens_max) / 2,
            "min": spec.input_tokens_min,
            "max": spec.input_tokens_max,
        },
        "output_seq_len": {"distribution": "fixed", "value": spec.output_tokens},
    }
    if load.rate is not None:
        standardized["rate_qps"] = load.rate
    concurrency = load.concurrency if load.shape == "concurrency" else load.max_concurrency
    if concurrency is not None:
        standardized["concurrency"] = concurrency
    native = {"key": point.key, "plan_name": point.plan_name, "repeat": point.repeat,
              "load": load.model_dump(mode="json"), "workload": spec.model_dump(mode="json")}
    return {
        "metadata": {"schema_version": "0.0.1", "cfg_id": _cfg_id(native)},
        "standardized": standardized,
        "native": {"config": native},
    }  # fmt: skip


def _aggregate(metrics: Metrics) -> dict[str, Any]:
    requests: dict[str, Any] = {"total": metrics.completed + metrics.failed,
                                "failures": metrics.failed}  # fmt: skip
    if metrics.completed:
        requests["input_length"] = {"units": "count",
                                    "mean": metrics.total_input_tokens / metrics.completed}
        requests["output_length"] = {"units": "count",
                                     "mean": metrics.total_output_tokens / metrics.completed}
    latency = {}
    for family, (name, units) in LATENCIES.items():
        block = _statistics(metrics, family, units)
        if block is not None:
            latency[name] = block
    duration = metrics.duration
    throughput = {
        "input_token_rate": {"units": "tokens/s", "mean": metrics.total_input_tokens / duration},
        "output_token_rate": {"units": "tokens/s", "mean": metrics.output_throughput},
        "total_token_rate": {"units": "tokens/s", "mean": metrics.total_token_throughput},
        "request_rate": {"units": "queries/s", "mean": metrics.request_throughput},
    }
    aggregate: dict[str, Any] = {"requests": requests, "throughput": throughput}
    if latency:
        aggregate["latency"] = latency
    return aggregate


def _statistics(metrics: Metrics, family: str, units: str) -> dict[str, Any] | None:
    mean = getattr(metrics, f"mean_{family}_ms")
    if mean is None:
        return None
    block: dict[str, Any] = {"units": units}
    for ours, theirs in STATISTICS.items():
        value = getattr(metrics, f"{ours}_{family}_ms")
        if value is not None:
            block[theirs] = value
    for ours, theirs in OTHER_PERCENTILES.items():
        value = metrics.other_percentiles.get(f"{ours}_{family}_ms")
        if value is not None:
            block[theirs] = value
    return block


def _observability(point: PointResult, start: datetime | None) -> list[dict[str, Any]]:
    queue = point.queue
    aggregate: dict[str, Any] = {}
    for name, mean, peak, units in (
        ("running_requests", queue.mean_running, queue.peak_running, "count"),
        ("waiting_requests", queue.mean_waiting, queue.peak_waiting, "count"),
        ("kv_cache_usage", queue.mean_kv_usage, queue.peak_kv_usage, "fraction"),
    ):
        if mean is not None:
            aggregate[name] = {"units": units, "mean": mean,
                               **({"max": peak} if peak is not None else {})}  # fmt: skip
    components: list[dict[str, Any]] = []
    if aggregate:
        components.append({"component_label": ENGINE_LABEL, "aggregate": aggregate})
    if start is None or not point.samples:
        return components
    origin = point.window.start if point.window else 0.0
    for replica in sorted({sample.replica for sample in point.samples}):
        series: dict[str, Any] = {}
        for field, (name, units) in SERIES.items():
            entries = [
                {"ts": (start + timedelta(seconds=s.t - origin)).isoformat(), "value": value}
                for s in point.samples
                if s.replica == replica and (value := getattr(s, field)) is not None
            ]
            if entries:
                series[name] = {"units": units, "series": entries}
        if series:
            components.append({"component_label": ENGINE_LABEL,
                               "replica_id": f"replica-{replica}", "time_series": series})
    return components
