"""python manage.py import_results FILE... : each file becomes one imported run."""

from __future__ import annotations

from pathlib import Path

import pydantic
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmarks.imports import ImportFileError, StatedFacts, import_points
from benchmarks.models import AuditEvent
from runner.importer import load_result_file

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
    help = "Import Headroom result files (JSONL) or vllm bench serve --save-result JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--name", default="", help="run name (default: the file name)")
        stated = parser.add_argument_group(
            "stated facts", "what the files do not record; never replaces what they do"
        )
        for name, (flag, help_text) in STATED_FLAGS.items():
            stated.add_argument(flag, dest=f"stated_{name}", help=help_text)

    def handle(self, *args: object, files: list[Path], name: str, **options: object) -> None:
        stated = _stated_facts(options)
        # Read every file before storing any, so one bad file leaves the database untouched.
        loaded = []
        for path in files:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            try:
                points = load_result_file(path)
            except ImportFileError as exc:
                raise CommandError(f"{path}: {exc}") from None
            if not points:
                raise CommandError(f"{path}: no points in this file")
            loaded.append((path, points))
        for path, points in loaded:
            try:
                with transaction.atomic():
                    benchmark = import_points(
                        ((point, None) for point in points),  # read whole above: no encoders
                        name=name or path.name, source_file=path.name, stated=stated,
                    )
                    # No account: the event's actor is the command line.
                    AuditEvent.objects.record(None, AuditEvent.Action.IMPORTED, benchmark,
                                              detail=f"manage.py import_results {path.name}")
            except ImportFileError as exc:
                raise CommandError(f"{path}: {exc}") from None
            self.stdout.write(f"{path}: {len(points)} point(s) -> /runs/{benchmark.code}/")


def _stated_facts(options: dict[str, object]) -> StatedFacts:
    values = {name: options.get(f"stated_{name}") for name in STATED_FLAGS}
    try:
        return StatedFacts.model_validate(values)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        flag = STATED_FLAGS[str(error["loc"][0])][0] if error["loc"] else "stated facts"
        message = error["msg"].removeprefix("Value error, ")
        raise CommandError(f"{flag}: {message}") from None
