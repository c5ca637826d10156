"""The import pages: the upload form, and the status of an import a worker is running.
Importing needs import_results (dashboard.access)."""

from __future__ import annotations

import logging
from uuid import UUID

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.db import transaction
from django.http import (
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_safe
from kombu.exceptions import OperationalError as BrokerError

from benchmarks.models import (
    ResultImport,
)
from benchmarks.worker import tasks
from dashboard import uploads
from dashboard.access import (
    IMPORT,
    AuthenticatedHttpRequest,
    get_import_for_user,
)
from dashboard.forms_import import ImportForm

log = logging.getLogger(__name__)


@csrf_exempt  # checked by _run_import: the CSRF check reads the body, so it must come after
@login_required
@permission_required(IMPORT, raise_exception=True)
def run_import(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The upload form. Its handler enforces the size limit as the body arrives, so it is put in
    place before anything reads the body: hence csrf_protect on the view behind this one, as
    Django's documentation does for upload handlers that a view installs."""
    handler = uploads.ResultFileUploadHandler(request)
    request.upload_handlers = [handler]
    return _run_import(request, handler)


@csrf_protect
def _run_import(
    request: AuthenticatedHttpRequest, handler: uploads.ResultFileUploadHandler
) -> HttpResponse:
    posted = request.method == "POST"
    form = ImportForm(
        request.POST if posted else None, request.FILES if posted else None,
        refused=handler.refusal,
    )  # fmt: skip
    if posted and form.is_valid():
        result_import = _queue_import(request, form)
        if result_import is not None:
            return redirect("run_import_status", code=result_import.code)
    return render(request, "runs/import.html", {"form": form}, status=400 if form.errors else 200)


def _queue_import(request: AuthenticatedHttpRequest, form: ImportForm) -> ResultImport | None:
    """Keep the received file under its import's generated name, then enqueue the import.

    The web never parses the file: a worker does (benchmarks.worker.import_jobs.run_result_import).
    """
    upload = form.cleaned_data["file"]
    telemetry = form.cleaned_data.get("companion")
    with transaction.atomic():  # committed: a worker can always find the row and its files
        result_import = ResultImport.objects.create(
            created_by=request.user,
            file_name=upload.name[:255],
            telemetry_file_name=telemetry.name[:255] if telemetry else "",
            size=upload.size + (telemetry.size if telemetry else 0),
            name=form.cleaned_data["name"],
            stated=form.cleaned_data["stated"].model_dump(exclude_none=True),
        )
        upload.keep(result_import.stored_path)
        if telemetry:
            telemetry.keep(result_import.stored_telemetry_path)
    try:
        tasks.enqueue_import(result_import)
    except BrokerError as exc:
        # As for a launch: an import nobody will run is not left behind, nor are its files.
        log.error("broker unreachable at import: %s", exc)
        result_import.stored_path.unlink(missing_ok=True)
        result_import.stored_telemetry_path.unlink(missing_ok=True)
        result_import.delete()
        form.add_error(
            None,
            "The task queue (broker) is unreachable, so nothing was imported. "
            f"Check that Redis is running at {settings.CELERY_BROKER_URL.split('@')[-1]}.",
        )
        return None
    return result_import


def _import_status(result_import: ResultImport) -> dict[str, object]:
    """What the status page shows and its progress.json returns."""
    run = result_import.benchmark
    return {
        "state": result_import.state,
        "final": result_import.is_final,
        "progress": result_import.progress,
        "error_message": result_import.error_message,
        "run_url": reverse("run_detail", kwargs={"code": run.code}) if run else None,
    }


@login_required
@require_safe
@permission_required(IMPORT, raise_exception=True)
def run_import_status(request: AuthenticatedHttpRequest, code: UUID) -> HttpResponse:
    result_import = get_import_for_user(request, code)
    ctx = {"result_import": result_import, "status": _import_status(result_import)}
    return render(request, "runs/import_status.html", ctx)


@login_required
@require_safe
@permission_required(IMPORT, raise_exception=True)
def run_import_progress(request: AuthenticatedHttpRequest, code: UUID) -> JsonResponse:
    return JsonResponse(_import_status(get_import_for_user(request, code)))
