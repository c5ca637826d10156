"""A folder of result files as one run: a tool's output folder, read as the tool wrote it.

- inference-perf: each stage_N_lifecycle_metrics.json is a point, in stage order, read with its
  stage_N_prometheus_metrics.json when that is beside it (runner.importer.companions); the
  summary reports, per-request reports and config.yaml are not points.
- vllm bench sweep: each run=N.json under the sweep's SERVE-.../BENCH-... folders is a point
  (warmup.json, an unmeasured run, is not read; each combination's summary.json and
  serve_sla's SLA--*.json, lists of its runs, are not read again);
  vLLM 0.32's --continue-on-error failure records (run=N.failure.json, warmup.failure.json,
  SERVE-...-failure.json) hold no figures and are not points: each point's note names each one,
  what failed (the run, or the serve set whose server process exited) and vLLM's message;
  a sweep folder with only its summary.csv gives that file's rows.
- AIPerf: each directory holding profile_export_aiperf.json or profile_export.jsonl is one run,
  its summary, records, server metrics and GPU telemetry read as one point
  (runner.importer.aiperf_folder); its other files (inputs.json, CSV copies, logs) are not read.
- anything else: every .json, .jsonl, .yaml and .yml file, in name order.

The folder is walked to at most MAX_DEPTH levels and MAX_FILES files; each file is held to the
document limit as a file of its own would be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from runner.importer.aiperf_folder import aiperf_runs, read_run
from runner.importer.companions import Reader, check_size, read_companion
from runner.importer.detect import STAGE_NAME, vllm_sweep_failure
from runner.importer.vllm_document import ImportFileError
from runner.schema.result import PointResult

MAX_DEPTH = 4
MAX_FILES = 5_000
RESULT_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
SWEEP_RUN = re.compile(r"^run=(\d+)\.json$")
SWEEP_FAILURE = re.compile(r"^(?:run=\d+\.failure|warmup\.failure|SERVE-.*-failure)\.json$")


def iter_folder(
    folder: Path, name: str, limit: int | None, read: Reader
) -> Iterator[PointResult]:
    """The points of every result file in the folder, as its layout says (module docstring)."""
    files = _files(folder, name)
    stages = sorted(
        ((int(match[1]), path) for path in files
         if (match := STAGE_NAME.search(path.name)) and match[2] == "lifecycle"),
        key=lambda pair: (pair[0], str(pair[1])),
    )  # fmt: skip
    if stages:
        yield from _inference_perf(stages, folder, name, limit, read)
        return
    sweep_runs = sorted((path for path in files if SWEEP_RUN.match(path.name)), key=_sweep_order)
    if sweep_runs:
        failures = sorted(_failure(path, _label(name, folder, path), limit)
                          for path in files if SWEEP_FAILURE.match(path.name))  # fmt: skip
        note = (f"this sweep also recorded {len(failures)} failure(s) (vLLM's --continue-on-error "
                f"records, no figures; not imported): {'; '.join(failures)}")  # fmt: skip
        for path in sweep_runs:
            for point in read(path, _label(name, folder, path), limit, None):
                if failures:
                    point = point.model_copy(update={"notes": [*point.notes, note]})
                yield point
        return
    if aiperf := aiperf_runs(files):
        for run in aiperf:
            yield read_run(run, lambda path: _label(name, folder, path), limit, read)
        return
    chosen = [p for p in files if p.name == "summary.csv"] or [
        p for p in files if p.suffix.lower() in RESULT_SUFFIXES
    ]
    if not chosen:
        raise ImportFileError(f"{name}: no result files in this folder (.json, .jsonl, .yaml, "
                              ".yml, or a vllm bench sweep's summary.csv)")  # fmt: skip
    for path in sorted(chosen):
        yield from read(path, _label(name, folder, path), limit, None)


def _files(folder: Path, name: str) -> list[Path]:
    found: list[Path] = []
    pending = [(folder, 0)]
    while pending:
        here, depth = pending.pop()
        for entry in sorted(here.iterdir()):
            if entry.is_symlink():
                continue  # a link may lead out of the folder
            if entry.is_dir() and depth < MAX_DEPTH:
                pending.append((entry, depth + 1))
            elif entry.is_file():
                found.append(entry)
                if len(found) > MAX_FILES:
                    raise ImportFileError(f"{name}: more than {MAX_FILES} files; import the "
                                          "tool's output folder itself")  # fmt: skip
    return found


def _failure(path: Path, label: str, limit: int | None) -> str:
    """A failure record named by its file and by what it says failed, in vLLM's words."""
    check_size(path, label, limit, "a vllm bench sweep failure record")
    try:
        said = vllm_sweep_failure(json.loads(path.read_text(encoding="utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        said = None
    return f"{label}: {said or 'not a failure record vLLM wrote (unreadable)'}"


def _label(name: str, folder: Path, path: Path) -> str:
    return name if path == folder else f"{name}/{path.relative_to(folder).as_posix()}"


def _sweep_order(path: Path) -> tuple[str, int]:
    match = SWEEP_RUN.match(path.name)
    return (str(path.parent), int(match[1]) if match else 0)


def _inference_perf(
    stages: list[tuple[int, Path]], folder: Path, name: str, limit: int | None, read: Reader
) -> Iterator[PointResult]:
    """The stages, in order, each with its Prometheus report; all with one workload.

    The stages of one run sent one workload, but a stage report only states the lengths its
    own requests had: each would read as a workload of its own, and no stage would stand on
    the same ladder as the one before it. So the stages share the workload that spans them
    all. Stage points hold no requests, so holding them all costs little.
    """
    points: list[PointResult] = []
    for number, path in stages:
        server = path.with_name(f"stage_{number}_prometheus_metrics.json")
        companion = None
        if server.is_file():
            companion = read_companion(server, _label(name, folder, server), limit)
        points.extend(read(path, _label(name, folder, path), limit, companion))
    shared = points[0].workload.model_copy(update={
        "input_tokens_min": min(p.workload.input_tokens_min for p in points),
        "input_tokens_max": max(p.workload.input_tokens_max for p in points),
        "output_tokens": max(p.workload.output_tokens for p in points),
    })  # fmt: skip
    for point in points:
        if point.workload != shared:
            point.notes.append("workload shown as the span of the run's stages (each stage "
                               "report states only its own requests' lengths)")  # fmt: skip
        point.workload = shared
        yield point
