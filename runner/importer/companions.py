"""The file that came with a result file: the server-side evidence a tool wrote beside it.

A peer tool writes what it saw of the server in a file of its own, read with the result file
it belongs to, from the import page's second field and `manage.py import_results FILE
--companion FILE` (or found beside it in a folder, runner.importer.folders):

- AIPerf's gpu_telemetry_export.jsonl (--gpu-telemetry) with its profile_export.jsonl:
  the GPUs' readings (runner.importer.aiperf_telemetry);
- AIPerf's server_metrics_export.json with its profile_export_aiperf.json: the server's queue,
  KV use and preemptions over the run, as AIPerf scraped them (runner.importer.aiperf_server);
- inference-perf's stage_N_prometheus_metrics.json with stage_N_lifecycle_metrics.json: the
  server's queue, KV use and latencies over the stage, as Prometheus summarised them
  (runner.importer.inference_perf_server).

A companion is read whole, so it is held to the document limit before it is read, and it is
refused, rather than dropped, with any file it does not belong to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.importer import aiperf_telemetry
from runner.importer.detect import Detected, detect
from runner.importer.vllm_document import ImportFileError
from runner.schema.result import PointResult

# A companion's kind -> the kind of result file it goes with, and how a refusal names both.
BELONGS_TO = {
    "aiperf-gpu-telemetry": (
        "aiperf-records", "AIPerf's per-request file, profile_export.jsonl"),
    "aiperf-server-metrics": (
        "aiperf-summary", "AIPerf's summary of the same run, profile_export_aiperf.json"),
    "inference-perf-prometheus": (
        "inference-perf-stage", "the stage report of the same stage, "
        "stage_N_lifecycle_metrics.json"),
}  # fmt: skip
COMPANIONS_READ = (
    "AIPerf's gpu_telemetry_export.jsonl (with profile_export.jsonl) and "
    "server_metrics_export.json (with profile_export_aiperf.json), and inference-perf's "
    "stage_N_prometheus_metrics.json (with stage_N_lifecycle_metrics.json)"
)


@dataclass(frozen=True)
class Companion:
    """A companion file read: its name (for messages), what it is, and its content."""

    name: str
    detected: Detected
    data: Any

    @property
    def kind(self) -> str:
        return self.detected.kind

    def refuse_with(self, source: str, found: str) -> None:
        """Refuse the pair: this companion does not belong to `source`, a `found`."""
        _, belongs = BELONGS_TO[self.kind]
        raise ImportFileError(
            f"{source}: {self.detected.tool}'s {self.detected.version} {self.name} is read "
            f"only with {belongs}, not with {found}"
        )


# How a folder reads one of its files (runner.importer.files.read_documents): path, the name
# messages call it, the document limit, and the file that came with it.
Reader = Callable[[Path, str, "int | None", "Companion | None"], Iterator[PointResult]]


def check_size(path: Path, name: str, limit: int | None, what: str) -> None:
    """A file read whole must fit the limit for that, or it is refused unread."""
    size = path.stat().st_size
    if limit is not None and size > limit:
        raise ImportFileError(
            f"{name}: {what} is read whole, and this one ({_megabytes(size)}) is over the "
            f"{_megabytes(limit)} limit for that"
        )


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def read_companion(path: Path, name: str, limit: int | None) -> Companion:
    """The companion at path, recognised and read; ImportFileError naming it if it is none."""
    if not path.is_file():
        raise ImportFileError(f"{name}: no such file")
    check_size(path, name, limit, "a file that comes with a result file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{name}: not a text file (is it compressed or binary?)") from None
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = None
    found = detect(head, name) if head is not None else None
    if found is not None and found.kind == "aiperf-gpu-telemetry":
        return Companion(name, found, aiperf_telemetry.read_readings(path, name))
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        document = None
    found = detect(document, name)
    if found.kind in ("inference-perf-prometheus", "aiperf-server-metrics"):
        return Companion(name, found, document)
    what = found.label or "not a file Headroom reads"
    raise ImportFileError(
        f"{name}: {what}: not a file that comes with a result file; Headroom reads "
        f"{COMPANIONS_READ}"
    )
