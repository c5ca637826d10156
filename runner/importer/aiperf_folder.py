"""An AIPerf artifact folder as one point a run: the folder `aiperf profile` wrote, read whole.

AIPerf writes one run's files side by side (aiperf/config/artifacts.py, the same names from 0.3
to 0.13): profile_export_aiperf.json (its summary), profile_export.jsonl (a record a request),
server_metrics_export.json (its scrape of the server's /metrics, from 0.4) and
gpu_telemetry_export.jsonl (--gpu-telemetry), beside files Headroom does not read (inputs.json,
the CSV copies, logs/, plots/). Each file alone imports as a point of its own
(runner.importer.aiperf); the folder makes them one:

- the records give the requests and vLLM's figures (Headroom's, computed from them), with the
  GPU readings summarised over their window;
- the summary gives what the records do not hold: AIPerf's version, the load it ran, the model,
  the endpoint, the start time, and its own figures under its names;
- the server metrics export is the point's queue evidence (runner.importer.aiperf_server).

The summary's counts are cross-checked against the records before they are put together: files
of two runs in one folder are refused, naming both, rather than read as one. Every directory
that holds a summary or records is one run (AIPerf's multi-run folders hold one a run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.importer import aiperf_server
from runner.importer.aiperf import (
    ENDPOINT_NOT_IN_RECORDS,
    LOAD_NOT_IN_RECORDS,
    NO_PER_REQUEST_DATA,
)
from runner.importer.companions import Companion, Reader, read_companion
from runner.importer.peers import SOURCES, import_notes
from runner.importer.vllm_document import ImportFileError
from runner.schema.result import PointResult

SUMMARY_FILE = "profile_export_aiperf.json"
RECORDS_FILE = "profile_export.jsonl"
SERVER_FILE = "server_metrics_export.json"
TELEMETRY_FILE = "gpu_telemetry_export.jsonl"
RUN_FILES = (SUMMARY_FILE, RECORDS_FILE)
AIPERF_SOURCE = SOURCES["aiperf"]
# The summary's token totals and the per-request figure each sums (aiperf/metrics/types/).
TOKEN_TOTALS = (
    ("output tokens (the server's usage)", "total_usage_completion_tokens.avg",
     "usage_completion_tokens.sum"),
    ("output tokens (AIPerf's count)", "total_osl.avg", "output_sequence_length.sum"),
    ("prompt tokens (AIPerf's count)", "total_isl.avg", "input_sequence_length.sum"),
)  # fmt: skip

Labeller = Callable[[Path], str]


@dataclass(frozen=True)
class AiperfRun:
    """One run's files in an artifact folder; None where AIPerf did not write that file."""

    folder: Path
    summary: Path | None
    records: Path | None
    server: Path | None
    telemetry: Path | None


def aiperf_runs(files: list[Path]) -> list[AiperfRun]:
    """Each directory among files that holds AIPerf's summary or records, in path order."""
    folders = sorted({path.parent for path in files if path.name in RUN_FILES})

    def present(folder: Path, name: str) -> Path | None:
        return folder / name if (folder / name) in files else None

    return [
        AiperfRun(folder=folder, summary=present(folder, SUMMARY_FILE),
                  records=present(folder, RECORDS_FILE), server=present(folder, SERVER_FILE),
                  telemetry=present(folder, TELEMETRY_FILE))
        for folder in folders
    ]  # fmt: skip


def read_run(run: AiperfRun, label: Labeller, limit: int | None, read: Reader) -> PointResult:
    """The run's files as one point (module docstring); read is files.read_documents, so each
    file is read, limited and refused as it would be alone, under its own name."""
    server = _companion(run.server, label, limit)
    if run.records is None:
        assert run.summary is not None  # aiperf_runs keeps only folders with one of the two
        return _one_point(read(run.summary, label(run.summary), limit, server),
                          label(run.summary))  # fmt: skip
    telemetry = _companion(run.telemetry, label, limit)
    records = _one_point(read(run.records, label(run.records), limit, telemetry),
                         label(run.records))  # fmt: skip
    if run.summary is None:
        if server is not None:
            aiperf_server.read_server_metrics(server.data, name=server.name).attach(records)
        return records
    summary = _one_point(read(run.summary, label(run.summary), limit, server), label(run.summary))
    _cross_check(summary, records, label(run.summary), label(run.records))
    return _combined(summary, records, label(run.folder))


def _one_point(points: Iterator[PointResult], name: str) -> PointResult:
    """The one AIPerf point a file under AIPerf's name gives; a file of another kind under that
    name is refused, not read as part of the run."""
    found = list(points)
    if len(found) != 1 or found[0].source != AIPERF_SOURCE or found[0].peer is None:
        raise ImportFileError(f"{name}: not AIPerf's file, though it has AIPerf's name")
    return found[0]


def _companion(path: Path | None, label: Labeller, limit: int | None) -> Companion | None:
    return read_companion(path, label(path), limit) if path is not None else None


def _cross_check(summary: PointResult, records: PointResult, summary_name: str,
                 records_name: str) -> None:  # fmt: skip
    """The summary must count the requests and tokens the records hold: else the two are of
    different runs (or the records were cut), and neither is taken for the other. Tokens are
    compared total for total where both files state them alike (the server's usage, AIPerf's
    own count of the output, of the prompts)."""
    assert summary.peer is not None and records.peer is not None  # both are AIPerf's points
    stated, summed = summary.peer.figures, records.peer.figures
    checks = [
        ("completed requests", summary.metrics.completed, records.metrics.completed),
        ("failed requests", summary.metrics.failed, records.metrics.failed),
        *((what, stated.get(total), summed.get(per_request))
          for what, total, per_request in TOKEN_TOTALS),
    ]  # fmt: skip
    for what, in_summary, in_records in checks:
        if in_summary is not None and in_records is not None and in_summary != in_records:
            raise ImportFileError(
                f"{summary_name} counts {_count(in_summary)} {what}, {records_name} holds "
                f"{_count(in_records)} in AIPerf's profiling phase: they are not of the same "
                "run (or the records were cut short); import each file alone"
            )


def _count(value: float) -> str:
    return f"{value:g}"


def _combined(summary: PointResult, records: PointResult, folder_name: str) -> PointResult:
    """The records' point, with what only the summary holds (module docstring)."""
    assert summary.peer is not None and records.peer is not None  # both are AIPerf's points
    base = {*import_notes("aiperf", summary.peer.file), *import_notes("aiperf", records.peer.file)}
    left_out = base | {NO_PER_REQUEST_DATA, LOAD_NOT_IN_RECORDS, ENDPOINT_NOT_IN_RECORDS}
    notes = [
        *import_notes("aiperf", folder_name),
        f"read as one run: {summary.peer.file} (AIPerf's summary: its version, load, model and "
        f"figures) and {records.peer.file} (the requests, from which vLLM's figures are "
        "computed), their counts checked to agree",
        *(note for note in records.notes if note not in left_out),
        *(note for note in summary.notes if note not in left_out and note not in records.notes),
    ]
    point = records.model_copy(
        update={
            "key": summary.key,
            "load": summary.load,
            "workload": records.workload.model_copy(
                update={"endpoint": summary.workload.endpoint}),
            "provenance": summary.provenance,
            "queue": summary.queue,
            "notes": notes,
            "peer": summary.peer.model_copy(update={
                "file": folder_name,
                "figures": records.peer.figures | summary.peer.figures,
                "units": records.peer.units | summary.peer.units,
            }),
        }
    )  # fmt: skip
    if not records.telemetry_samples:
        point.telemetry = summary.telemetry  # AIPerf's own GPU figures, without the readings
    return point
