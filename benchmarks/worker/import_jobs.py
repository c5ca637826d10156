"""An uploaded result file imported by the import worker (tasks.import_result_file): the
import's row claimed, its points read into one run, its progress written as they come, its CPU
time bounded, and how it ended recorded on the row.

The storing itself is benchmarks.storage.imports.import_file's, the one the command calls too.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from benchmarks.models import AuditEvent, Benchmark, ResultImport
from benchmarks.storage.imports import StatedFacts, import_file
from benchmarks.worker.beats import RowBeat
from benchmarks.worker.cpu_limit import CpuTimeExceeded, cpu_time_limit
from runner.importer.vllm_document import ImportFileError

log = logging.getLogger(__name__)

ImportState = ResultImport.State


def run_result_import(import_id: int) -> str | None:
    """Import a queued upload: claim it, store its points as one run, record how it ended.

    Returns the final state, or None when there was nothing to claim (delivered twice, or the
    row is gone). The stored file is deleted when the import ends, whichever way.
    """
    if not _claim_import(import_id):
        log.info("result import %s not claimable: another delivery has it, or it is gone",
                 import_id)  # fmt: skip
        return None
    row = ResultImport.objects.select_related("created_by").get(pk=import_id)
    try:
        return _import_row(row)
    finally:
        row.stored_path.unlink(missing_ok=True)
        row.stored_telemetry_path.unlink(missing_ok=True)


def _claim_import(import_id: int) -> bool:
    """queued -> running."""
    claimed = ResultImport.objects.filter(pk=import_id, state=ImportState.QUEUED).update(
        state=ImportState.RUNNING, started_at=timezone.now()
    )
    return bool(claimed)


def _import_row(row: ResultImport) -> str:
    """Store the row's file as a run; the import is stopped, storing nothing, once it has used
    HEADROOM_IMPORT_CPU_LIMIT_S of CPU: a file built to be slow must not hold the worker."""
    progress = ImportProgress(row.pk)
    limit = settings.HEADROOM_IMPORT_CPU_LIMIT_S
    try:
        with progress, cpu_time_limit(limit), transaction.atomic():
            benchmark = import_file(
                row.stored_path,
                source_file=row.file_name,
                name=row.name,
                user=row.created_by,
                stated=StatedFacts(**row.stated),
                on_point=progress.report,
                companion=row.stored_telemetry_path if row.telemetry_file_name else None,
                companion_file=row.telemetry_file_name,
            )
            # With the run, in its transaction: the record and the import are kept together.
            AuditEvent.objects.record(row.created_by, AuditEvent.Action.IMPORTED, benchmark,
                                      detail=f"from {row.imported_files}")  # fmt: skip
            _finish_import(row.pk, ImportState.SUCCEEDED, progress.count, benchmark=benchmark)
        return ImportState.SUCCEEDED
    except CpuTimeExceeded:
        log.warning("result import %s stopped after %s s of CPU", row.pk, limit)
        message = (
            f"Cannot import {row.file_name}: the import took more than {limit} s of CPU and was "
            "stopped"
        )
    except ImportFileError as exc:
        message = f"Cannot import {row.file_name}: {str(exc).removeprefix(row.file_name + ': ')}"
    except Exception as exc:  # any failure is recorded on the row
        log.exception("result import %s failed", row.pk)
        message = (
            f"The import stopped on an unexpected error ({type(exc).__name__}); nothing was "
            "stored. The worker's log has the details."
        )
    _finish_import(row.pk, ImportState.FAILED, progress.count, error_message=message)
    return ImportState.FAILED


def _finish_import(
    import_id: int,
    state: str,
    progress: int,
    *,
    benchmark: Benchmark | None = None,
    error_message: str = "",
) -> bool:
    """running -> succeeded | failed."""
    assert state in ResultImport.FINAL_STATES, state
    finished = ResultImport.objects.filter(pk=import_id, state=ImportState.RUNNING).update(
        state=state,
        progress=progress,
        benchmark=benchmark,
        error_message=error_message,
        finished_at=timezone.now(),
    )
    return bool(finished)


class ImportProgress(RowBeat):
    """The count of points read, written to the import's row from a thread of its own.

    The points go in within one transaction, which the polling page cannot see into; this
    thread's own database connection commits the count as it grows, every
    HEADROOM_HEARTBEAT_S. `report` is only an attribute store, so the import never waits on it.
    """

    thread_name = "headroom-import"

    def __init__(self, import_id: int) -> None:
        self.import_id = import_id
        self.count = 0
        self.written = 0
        super().__init__()

    def report(self, count: int) -> None:
        self.count = count

    def beat_once(self) -> None:
        count = self.count
        if count == self.written:
            return
        try:
            ResultImport.objects.filter(pk=self.import_id, state=ImportState.RUNNING).update(
                progress=count
            )
            self.written = count
        except Exception:  # a locked SQLite or a blip: the next write catches up
            log.warning("progress of result import %s not written", self.import_id,
                        exc_info=True)  # fmt: skip
            connection.close()
