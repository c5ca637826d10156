"""Uploaded result files on their way to an imported run."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmarks.models.runs import Benchmark


class ResultImport(models.Model):
    """One uploaded result file on its way to an imported run, and how that went.

    The web stores the file (stored_path) and this row, then enqueues the id; a worker beside
    the web parses the file there and stores its points. States and the only transitions, each
    one conditional UPDATE (benchmarks/worker/import_jobs.py):

        queued  -> running     a worker claims it
        running -> succeeded   every point stored as one run (benchmark), in one transaction
        running -> failed      the file was refused, the import raised or passed its CPU
                               limit: nothing is stored

    succeeded and failed are final; the file is deleted when the import ends either way.
    progress counts the points read so far; error_message says why an import failed.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    FINAL_STATES = (State.SUCCEEDED, State.FAILED)

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # As the browser named it: shown and written into the run, never used as a path.
    file_name = models.CharField(max_length=255)
    # The file that came with the result (runner.importer.companions: AIPerf's
    # gpu_telemetry_export.jsonl, an inference-perf stage's Prometheus report); blank: none.
    telemetry_file_name = models.CharField(max_length=255, blank=True)
    size = models.PositiveBigIntegerField(help_text="bytes received, both files together")
    name = models.CharField(max_length=200, blank=True, help_text="the run's name, if given")
    stated = models.JSONField(
        default=dict, blank=True, help_text="benchmarks.storage.imports.StatedFacts given at upload"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveIntegerField(default=0, help_text="points read so far")
    error_message = models.TextField(blank=True)
    benchmark = models.ForeignKey(
        Benchmark, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "succeeded", "failed"]),
                name="result_import_state_known",
            ),
            # Only a succeeded import made a run (it may be deleted since: SET_NULL).
            models.CheckConstraint(
                condition=Q(benchmark__isnull=True) | Q(state="succeeded"),
                name="result_import_run_only_when_succeeded",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(state__in=["succeeded", "failed"]),
                name="result_import_finished_only_when_final",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    @property
    def stored_path(self) -> Path:
        """Where the received file waits for its worker: a generated name, never the user's."""
        return Path(settings.HEADROOM_IMPORT_DIR) / f"{self.code}.upload"

    @property
    def stored_telemetry_path(self) -> Path:
        """Where the file that came with it (its companion) waits, if one was sent."""
        return Path(settings.HEADROOM_IMPORT_DIR) / f"{self.code}.telemetry"

    @property
    def imported_files(self) -> str:
        """The file's name, and its companion's: as the import's messages name them."""
        if self.telemetry_file_name:
            return f"{self.file_name} with {self.telemetry_file_name}"
        return self.file_name
