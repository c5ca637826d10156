"""NVIDIA AIPerf's GPU telemetry (aiperf 0.13, --gpu-telemetry with a dcgm-exporter URL).

AIPerf writes it twice (aiperf/gpu_telemetry/, aiperf/common/models/telemetry_models.py):
- gpu_telemetry_export.jsonl, one line a GPU per scrape: `timestamp_ns` (time.time_ns(), the
  clock of profile_export.jsonl's request_start_ns), `gpu_index`, `telemetry_source_url` and
  `telemetry_data` in AIPerf's units: nvidia_power_usage W, nvidia_energy_consumption MJ (DCGM's
  mJ x 1e-9), nvidia_gpu_utilization %, nvidia_memory_used GB (DCGM's MiB x 1.048576e-3).
  Read with AIPerf's profile_export.jsonl, these readings give Headroom's own figures over the
  point's window (runner.measure.telemetry_summary, the definitions of Headroom's sampling).
- the summary's `telemetry_data`: per GPU, AIPerf's statistics of its scrapes. Its avg is a plain
  mean of the scrapes, and its energy runs from the last scrape before the profiling phase to its
  last scrape after it; Headroom's means are time-weighted and its energy is the counter's increase
  over exactly the window. So these are kept under AIPerf's names (PeerFigures), never Headroom's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.importer.peers import number
from runner.importer.vllm_document import ImportFileError
from runner.measure.telemetry_summary import summarize_telemetry
from runner.schema.result import PointResult, Window
from runner.schema.samples import TelemetrySample, TelemetrySource, TelemetrySummary

SOURCE: TelemetrySource = "aiperf-dcgm"
RECORD_KEYS = ("timestamp_ns", "gpu_index", "telemetry_source_url", "telemetry_data")
# AIPerf's scaling of DCGM's units (aiperf/gpu_telemetry/dcgm_collector.py SCALING_FACTORS),
# undone: its GB are DCGM's MiB x 1.048576e-3, its MJ are DCGM's mJ x 1e-9.
GB_PER_MIB = 1.048576e-3
J_PER_MJ = 1e6
NS = 1e-9
# AIPerf's telemetry_data name -> TelemetrySample field, with the factor to Headroom's unit.
FIELDS = {
    "nvidia_gpu_utilization": ("utilization_pct", 1.0),
    "nvidia_memory_used": ("memory_used_mib", 1 / GB_PER_MIB),
    "nvidia_power_usage": ("power_w", 1.0),
    "nvidia_energy_consumption": ("energy_j", J_PER_MJ),
}
SUMMARY_PREFIX = "gpu_telemetry"


# ---------------------------------------------------------------------------------------------
# The readings: gpu_telemetry_export.jsonl with the per-request records
# ---------------------------------------------------------------------------------------------


def read_readings(path: Path, name: str) -> list[dict[str, Any]]:
    """Every line of gpu_telemetry_export.jsonl; ImportFileError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ImportFileError(f"{name}: not a readable text file") from None
    readings = []
    for line_number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFileError(
                f"{name}:{line_number}: not valid JSON at column {exc.colno}: {exc.msg}"
            ) from None
        readings.append(_checked(document, f"{name}:{line_number}"))
    if not readings:
        raise ImportFileError(f"{name}: no GPU telemetry readings")
    sources = {r["telemetry_source_url"] for r in readings}
    if len(sources) > 1:
        raise ImportFileError(
            f"{name}: readings of {len(sources)} dcgm-exporters ({', '.join(sorted(sources))}); "
            "a point's telemetry is one node's GPUs"
        )
    return readings


def _checked(document: Any, where: str) -> dict[str, Any]:
    if not isinstance(document, dict) or any(key not in document for key in RECORD_KEYS):
        raise ImportFileError(
            f"{where}: not an AIPerf GPU telemetry record (needs {', '.join(RECORD_KEYS)})"
        )
    if not isinstance(document["timestamp_ns"], int) or isinstance(document["timestamp_ns"], bool):
        raise ImportFileError(f"{where}: timestamp_ns must be an integer (ns)")
    index = document["gpu_index"]
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ImportFileError(f"{where}: gpu_index must be an integer >= 0, got {index!r:.40}")
    if not isinstance(document["telemetry_data"], dict):
        raise ImportFileError(f"{where}: telemetry_data must be an object")
    for field in FIELDS:
        value = document["telemetry_data"].get(field)
        if value is not None and number(value) is None:
            raise ImportFileError(f"{where}: telemetry_data.{field} must be a number")
    return document


def samples_of(readings: list[dict[str, Any]], origin_ns: int) -> list[TelemetrySample]:
    """The readings as Headroom's samples, in its units, on the clock that starts at origin_ns."""
    samples = []
    for reading in sorted(readings, key=lambda r: (r["timestamp_ns"], r["gpu_index"])):
        data = reading["telemetry_data"]
        values = {
            field: value * factor
            for name, (field, factor) in FIELDS.items()
            if (value := number(data.get(name))) is not None
        }
        t = (reading["timestamp_ns"] - origin_ns) * NS
        samples.append(
            TelemetrySample.model_validate({"t": t, "gpu": reading["gpu_index"], **values})
        )
    return samples


def attach_readings(
    point: PointResult,
    readings: list[dict[str, Any]],
    *,
    origin_ns: int,
    window: Window | None,
    name: str,
) -> None:
    """The readings on the point's clock (0 at origin_ns, its first send), and Headroom's
    summary of them over its client window."""
    samples = samples_of(readings, origin_ns)
    url = readings[0]["telemetry_source_url"]
    point.telemetry_samples = samples
    point.telemetry = summarize_telemetry(
        samples, window, point.metrics.total_output_tokens, source=SOURCE,
        note=f"GPU telemetry from AIPerf's scrape of dcgm-exporter at {url} ({name}), "
        "summarized by Headroom over the point's window",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The summary's telemetry_data
# ---------------------------------------------------------------------------------------------


def summary_telemetry(
    document: dict[str, Any],
) -> tuple[TelemetrySummary | None, dict[str, float], dict[str, str]]:
    """AIPerf's per-GPU statistics as figures under its names ("gpu_telemetry.gpu_0.
    nvidia_power_usage.max", with a dcgm-exporter's address after the prefix when there were
    several), and a summary naming the source with no figure of Headroom's."""
    section = document.get("telemetry_data")
    if not isinstance(section, dict):
        return None, {}, {}
    endpoints = section.get("endpoints") or {}
    figures: dict[str, float] = {}
    units: dict[str, str] = {}
    scrapes = 0
    for endpoint, data in endpoints.items():
        prefix = SUMMARY_PREFIX if len(endpoints) == 1 else f"{SUMMARY_PREFIX}.{endpoint}"
        for gpu_key, gpu in ((data or {}).get("gpus") or {}).items():
            for metric, stats in (gpu.get("metrics") or {}).items():
                if not isinstance(stats, dict):
                    continue
                for statistic, value in stats.items():
                    if (figure := number(value)) is not None:
                        name = f"{prefix}.{gpu_key}.{metric}.{statistic}"
                        figures[name] = figure
                        units[name] = str(stats.get("unit", ""))
            power = (gpu.get("metrics") or {}).get("nvidia_power_usage") or {}
            scrapes += int(number(power.get("count")) or 0)
    urls = ", ".join((section.get("summary") or {}).get("endpoints_configured") or []) or "?"
    # samples stays 0: the readings themselves are not in this file, only AIPerf's count.
    summary = TelemetrySummary(
        source=SOURCE,
        notes=[
            f"AIPerf scraped dcgm-exporter at {urls} ({scrapes} GPU readings in its profiling "
            "phase); its summary has no readings, so no GPU figure of Headroom's: AIPerf's "
            "plain means of its scrapes and its energy from the scrape before the phase are "
            "kept under its names (gpu_telemetry.*); import profile_export.jsonl with "
            "gpu_telemetry_export.jsonl for Headroom's"
        ],
    )
    return summary, figures, units
