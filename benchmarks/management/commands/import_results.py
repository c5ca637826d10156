"""python manage.py import_results FILE... : each file becomes one imported run."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.imports import ImportFileError, import_points
from runner.importer import load_result_file


class Command(BaseCommand):
    help = "Import Headroom result files (JSONL) or vllm bench serve --save-result JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--name", default="", help="run name (default: the file name)")

    def handle(self, *args: object, files: list[Path], name: str, **options: object) -> None:
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
                benchmark = import_points(points, name=name or path.name, source_file=path.name)
            except ImportFileError as exc:
                raise CommandError(f"{path}: {exc}") from None
            self.stdout.write(f"{path}: {len(points)} point(s) -> /runs/{benchmark.code}/")
