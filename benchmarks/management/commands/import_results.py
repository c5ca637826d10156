"""python manage.py import_results FILE... : each file (or folder, or .zip of one) becomes one
imported run; --companion FILE gives the file that came with a single FILE."""

from __future__ import annotations

from pathlib import Path

import pydantic
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmarks.models import AuditEvent, Benchmark
from benchmarks.storage.imports import ImportFileError, StatedFacts, import_file

# StatedFacts field -> the flag that states it; each fills only what a file does not record.
STATED_FLAGS = {
    "gpu_name": ("--gpu-name", "GPU, e.g. 'NVIDIA H200'"),
    "gpu_count": ("--gpu-count", "GPUs on the host that served"),
    "engine": ("--runtime", "serving engine: vllm, tensorrt-llm, sglang or another's name"),
    "engine_version": ("--runtime-version", "the engine's version"),
    "engine_image": ("--runtime-image", "the image it ran from"),
    "checkpoint": ("--checkpoint", "Hub repo id of the weights"),
    "revision": ("--revision", "the checkpoint's 40-hex commit"),
    "precision": ("--precision", "e.g. bf16, FP8, NVFP4"),
}


class Command(BaseCommand):
    help = (
        "Import result files: Headroom JSONL, runs' JSON downloads, and the results of vllm "
        "bench serve, AIPerf, GuideLLM, inference-perf and llm-d-benchmark. A folder (or a .zip "
        "of one) of a tool's output is one run: an inference-perf run's stage reports with "
        "their Prometheus reports, a vllm bench sweep's runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--name", default="", help="run name (default: the file name)")
        parser.add_argument(
            "--companion", "--aiperf-telemetry", type=Path, metavar="FILE", dest="companion",
            help="the file that came with the one FILE: AIPerf's gpu_telemetry_export.jsonl "
            "with its profile_export.jsonl, inference-perf's stage_N_prometheus_metrics.json "
            "with stage_N_lifecycle_metrics.json",
        )  # fmt: skip
        stated = parser.add_argument_group(
            "stated facts", "what the files do not record; never replaces what they do"
        )
        for name, (flag, help_text) in STATED_FLAGS.items():
            stated.add_argument(flag, dest=f"stated_{name}", help=help_text)

    def handle(
        self, *args: object, files: list[Path], name: str, companion: Path | None,
        **options: object,
    ) -> None:  # fmt: skip
        stated = _stated_facts(options)
        for path in files:
            if not path.exists():
                raise CommandError(f"{path}: no such file or folder")
        if companion is not None and not companion.is_file():
            raise CommandError(f"{companion}: no such file")
        if companion is not None and len(files) != 1:
            raise CommandError(
                "--companion goes with one file, the result it came with (AIPerf's "
                "profile_export.jsonl, an inference-perf stage report); "
                f"{len(files)} were given"
            )
        # One transaction for every file, so one bad file leaves the database untouched; each
        # file is read a point at a time as it is stored (import_file), never held whole.
        imported: list[tuple[Path, Benchmark]] = []
        with transaction.atomic():
            for path in files:
                try:
                    benchmark = import_file(path, name=name or path.name, stated=stated,
                                            document_limit=False, companion=companion)
                except ImportFileError as exc:
                    raise CommandError(f"{path}: {exc}") from None
                # No account: the event's actor is the command line.
                AuditEvent.objects.record(None, AuditEvent.Action.IMPORTED, benchmark,
                                          detail=f"manage.py import_results {path.name}")
                imported.append((path, benchmark))
        # Said once all are stored: a run named before a later file failed would not exist.
        for path, benchmark in imported:
            count = benchmark.points.count()
            self.stdout.write(f"{path}: {count} point(s) -> /runs/{benchmark.code}/")


def _stated_facts(options: dict[str, object]) -> StatedFacts:
    values = {name: options.get(f"stated_{name}") for name in STATED_FLAGS}
    try:
        return StatedFacts.model_validate(values)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        flag = STATED_FLAGS[str(error["loc"][0])][0] if error["loc"] else "stated facts"
        message = error["msg"].removeprefix("Value error, ")
        raise CommandError(f"{flag}: {message}") from None
