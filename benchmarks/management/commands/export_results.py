"""python manage.py export_results RUN_CODE --format llm-d [--out FILE]: a run in a common
format others read (benchmarks.storage.exports)."""

from __future__ import annotations

import sys
from pathlib import Path
from uuid import UUID

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.models import Benchmark
from benchmarks.storage.exports import llm_d_documents

FORMATS = ("llm-d",)


class Command(BaseCommand):
    help = (
        "Write a run as llm-d-benchmark benchmark reports (version 0.2.1, one YAML document a "
        "point), which llm-d's tools and `import_results` read."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", help="the run's code, as in its page's address /runs/CODE/")
        parser.add_argument("--format", choices=FORMATS, default="llm-d",
                            help="llm-d: llm-d-benchmark's benchmark report")  # fmt: skip
        parser.add_argument("--out", type=Path, help="the file to write (default: stdout)")

    def handle(self, *args: object, run: str, out: Path | None, **options: object) -> None:
        try:
            benchmark = Benchmark.objects.get(code=UUID(run))
        except (ValueError, ValidationError, Benchmark.DoesNotExist):
            raise CommandError(f"{run}: no such run") from None
        if out is None:
            for document in llm_d_documents(benchmark):
                sys.stdout.write(document)
            return
        with out.open("w", encoding="utf-8") as handle:
            for document in llm_d_documents(benchmark):
                handle.write(document)
        self.stderr.write(f"{out}: {benchmark.points.count()} report(s)")
