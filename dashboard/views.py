"""Server-rendered pages and the small JSON views they poll. Every page needs a login; what
else each action needs is a permission (the roles are in benchmarks/migrations/0009)."""

from __future__ import annotations

import csv
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import pydantic
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST, require_safe
from kombu.exceptions import OperationalError as BrokerError

from benchmarks import estimates, launch_rules, lifecycle, plans, storage, tasks
from benchmarks.models import (
    AuditEvent,
    Benchmark,
    Caveat,
    Checkpoint,
    Node,
    Point,
    PointData,
    ResultImport,
    Runtime,
)
from benchmarks.points import (
    METRIC_FIELDS,
    TELEMETRY_CSV_COLUMNS,
    point_to_result,
    stored_requests,
    telemetry_cells,
)
from dashboard import plan_files, uploads, views_judgement
from dashboard.forms_import import ImportForm
from dashboard.forms_launch import LaunchForm
from dashboard.http import AuthenticatedHttpRequest
from judgement import charts
from runner import schema

log = logging.getLogger(__name__)

RUNS_PER_PAGE = 50
AUDIT_EVENTS_PER_PAGE = 100

LAUNCH = "benchmarks.launch_benchmark"
CANCEL_ANY = "benchmarks.cancel_any_benchmark"
IMPORT = "benchmarks.import_results"
VIEW_ANY_IMPORT = "benchmarks.view_resultimport"
VIEW_AUDIT = "benchmarks.view_auditevent"


def _get_benchmark_for_user(request: HttpRequest, code: UUID) -> Benchmark:
    """Every logged-in teammate sees every run: Headroom is a team's shared lab notebook."""
    queryset = Benchmark.objects.select_related("node", "runtime", "checkpoint", "workload")
    return get_object_or_404(queryset, code=code)


def _get_import_for_user(request: AuthenticatedHttpRequest, code: UUID) -> ResultImport:
    """An upload's import is its uploader's; another's needs view_resultimport (superusers).
    Anyone else gets a 404: the page names a file that someone else chose to upload."""
    queryset = ResultImport.objects.select_related("benchmark")
    if not request.user.has_perm(VIEW_ANY_IMPORT):
        queryset = queryset.filter(created_by=request.user)
    return get_object_or_404(queryset, code=code)


def can_cancel(user, benchmark: Benchmark) -> bool:
    """A launcher cancels their own runs; another's takes cancel_any_benchmark as well, so a
    teammate cannot free a shared GPU by stopping someone else's sweep."""
    if not user.has_perm(LAUNCH):
        return False
    return benchmark.created_by_id == user.pk or user.has_perm(CANCEL_ANY)


@login_required
@require_safe
def runs(request: HttpRequest) -> HttpResponse:
    # The list is where people look for dead runs: end them here, even with no worker left to.
    lifecycle.reap_stale()
    queryset = Benchmark.objects.for_list()
    filters = {
        "model": request.GET.get("model", ""),
        "hardware": request.GET.get("hardware", ""),
        "runtime": request.GET.get("runtime", ""),
        "state": request.GET.get("state", ""),
    }
    if filters["model"].isdigit():
        queryset = queryset.filter(checkpoint_id=int(filters["model"]))
    if filters["hardware"]:
        queryset = queryset.filter(hardware=filters["hardware"])
    if filters["runtime"].isdigit():
        queryset = queryset.filter(runtime_id=int(filters["runtime"]))
    if filters["state"] in Benchmark.State.values:
        queryset = queryset.filter(state=filters["state"])
    page = Paginator(queryset, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    query = urlencode({key: value for key, value in filters.items() if value})
    ctx = {
        "page": page,
        "filters": filters,
        "query": query,
        "checkpoints": Checkpoint.objects.all(),
        "runtimes": Runtime.objects.all(),
        "hardware_choices": Benchmark.objects.exclude(hardware="")
        .order_by("hardware")
        .values_list("hardware", flat=True)
        .distinct(),
        "states": Benchmark.State.values,
    }
    return render(request, "runs/list.html", ctx)


@login_required
@permission_required(LAUNCH, raise_exception=True)
def run_new(request: HttpRequest) -> HttpResponse:
    """The launch form. A valid POST first shows what it would launch and an estimate of its
    cost (runs/confirm.html); only that page's Launch (confirm=1) creates and enqueues the run.
    The estimate is worked out again at that moment, never read back from the posted page."""
    form = LaunchForm(request.POST or None)
    changing = request.POST.get("change") == "1"  # the confirmation page's Change
    if request.method == "POST" and not changing and form.is_valid():
        estimate = form.estimate()
        if request.POST.get("confirm") != "1":
            return _confirm_page(request, form, estimate)
        benchmark = _launch(request, form, estimate)
        if benchmark is not None:
            node: Node = form.cleaned_data["node"]  # the launched run's node
            messages.success(request, f"Queued on {node.queue}.")
            offline = node.offline_note()
            if offline:
                messages.warning(request, offline)
            return redirect("run_detail", code=benchmark.code)
    return _launch_page(request, form, plan_files.PlanFileForm())


def _launch(
    request: HttpRequest, form: LaunchForm, estimate: estimates.Estimate
) -> Benchmark | None:
    """Create the run with its estimate and its record, then enqueue it; None (and an error on
    the form) when the broker is unreachable, with nothing left behind."""
    with transaction.atomic():  # committed: a worker can always find the row
        benchmark = form.save(request.user, estimate)
        AuditEvent.objects.record(request.user, AuditEvent.Action.LAUNCHED, benchmark)
    try:
        tasks.enqueue_benchmark(benchmark)
    except BrokerError as exc:
        # Nothing half-created: the queued row would never run, so it goes, and so does
        # the record of a launch that did not happen.
        log.error("broker unreachable at submit: %s", exc)
        with transaction.atomic():
            AuditEvent.objects.about(benchmark).delete()
            benchmark.delete()
        form.add_error(
            None,
            "The task queue (broker) is unreachable, so nothing was launched. "
            f"Check that Redis is running at {settings.CELERY_BROKER_URL.split('@')[-1]}.",
        )
        return None
    return benchmark


# Fields the confirmation page does not carry back: Django's own token is rendered fresh, and
# the page's buttons add their own confirm / change.
_NOT_CARRIED = frozenset({"csrfmiddlewaretoken", "confirm", "change"})


def _confirm_page(
    request: HttpRequest, form: LaunchForm, estimate: estimates.Estimate
) -> HttpResponse:
    """What the launch would run and cost; its buttons post every submitted field again."""
    plan: schema.SweepPlan = form.cleaned_data["plan"]
    node: Node = form.cleaned_data["node"]
    carried = [
        (name, value)
        for name, values in request.POST.lists()
        if name not in _NOT_CARRIED
        for value in values
    ]
    ctx = {
        "form": form,
        "plan": plan,
        "node": node,
        "endpoint": form.cleaned_data.get("registered_endpoint"),
        "size": estimates.plan_size(plan),
        "estimate": estimate,
        "wall": estimates.duration_label(estimate.wall_s),
        "gpu_hours": None if estimate.gpu_hours is None
        else estimates.gpu_hours_label(estimate.gpu_hours),
        "plan_notes": form.cleaned_data.get("plan_notes") or [],
        "offline_note": node.offline_note(),
        "carried": carried,
    }
    return render(request, "runs/confirm.html", ctx)


def _launch_page(
    request: HttpRequest,
    form: LaunchForm,
    plan_form: plan_files.PlanFileForm,
    plan_left_out: list[str] | None = None,
    plan_source: str = "file",
) -> HttpResponse:
    ctx = {
        "form": form,
        "nodes": Node.objects.all(),
        "plan_form": plan_form,
        "plan_left_out": plan_left_out,
        "plan_source": plan_source,
    }
    status = 400 if form.errors or plan_form.errors else 200
    return render(request, "runs/new.html", ctx, status=status)


@csrf_exempt  # checked by _run_new_from_plan, once the upload handler is in place (run_import)
@login_required
@require_POST
@permission_required(LAUNCH, raise_exception=True)
def run_new_from_plan(request: HttpRequest) -> HttpResponse:
    """A plan file laid onto the launch form for review; it never launches anything itself.
    The file is received under PLAN_FILE_MAX_BYTES by the import page's bounded handler."""
    handler = uploads.ResultFileUploadHandler(request, limit=plan_files.PLAN_FILE_MAX_BYTES)
    request.upload_handlers = [handler]
    return _run_new_from_plan(request, handler)


@csrf_protect
def _run_new_from_plan(
    request: HttpRequest, handler: uploads.ResultFileUploadHandler
) -> HttpResponse:
    plan_form = plan_files.PlanFileForm(request.POST, request.FILES, refused=handler.refusal)
    if not plan_form.is_valid():
        return _launch_page(request, LaunchForm(), plan_form)
    on_form = plan_files.plan_on_form(plan_form.cleaned_data["plan_file"])
    messages.info(request, f"Filled in from {plan_form.file_name}: review, then launch.")
    return _launch_page(request, LaunchForm(initial=on_form.initial), plan_files.PlanFileForm(),
                        on_form.left_out)


@login_required
@require_safe
@permission_required(LAUNCH, raise_exception=True)
def run_again(request: HttpRequest, code: UUID) -> HttpResponse:
    """The launch form filled in from a launched run's plan, on its node (and endpoint), to
    change and launch; like a plan file, it never launches anything itself."""
    benchmark = _get_benchmark_for_user(request, code)
    if benchmark.source != Benchmark.Source.LAUNCHED:
        raise Http404("An imported run ran elsewhere: it has no plan to run again.")
    on_form = _plan_on_form(benchmark)
    initial = {**on_form.initial, "node": benchmark.node_id}
    runtime = benchmark.runtime
    if runtime is not None and launch_rules.is_launchable_runtime(runtime):
        initial.setdefault("runtime", runtime.pk)  # a plan names its runtime only by image
    if benchmark.endpoint_id:
        initial["registered_endpoint"] = benchmark.endpoint_id
    form = LaunchForm(initial=initial)
    messages.info(request, f"Filled in from {benchmark.name}: change what you need, then launch.")
    return _launch_page(request, form, plan_files.PlanFileForm(), on_form.left_out,
                        plan_source="plan of this run")


def _plan_on_form(benchmark: Benchmark) -> plan_files.PlanOnForm:
    try:
        plan = schema.SweepPlan.model_validate(benchmark.plan)
    except pydantic.ValidationError as exc:
        # A plan stored by an older schema: the form starts blank and says why.
        why = plans.pydantic_message(exc)
        return plan_files.PlanOnForm(left_out=[f"the stored plan no longer reads: {why}"])
    return plan_files.plan_on_form(plan)


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

    The web never parses the file: a worker does (benchmarks.imports.run_result_import).
    """
    upload = form.cleaned_data["file"]
    with transaction.atomic():  # committed: a worker can always find the row and its file
        result_import = ResultImport.objects.create(
            created_by=request.user,
            file_name=upload.name[:255],
            size=upload.size,
            name=form.cleaned_data["name"],
            stated=form.cleaned_data["stated"].model_dump(exclude_none=True),
        )
        upload.keep(result_import.stored_path)
    try:
        tasks.enqueue_import(result_import)
    except BrokerError as exc:
        # As for a launch: an import nobody will run is not left behind, nor is its file.
        log.error("broker unreachable at import: %s", exc)
        result_import.stored_path.unlink(missing_ok=True)
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
    result_import = _get_import_for_user(request, code)
    ctx = {"result_import": result_import, "status": _import_status(result_import)}
    return render(request, "runs/import_status.html", ctx)


@login_required
@require_safe
@permission_required(IMPORT, raise_exception=True)
def run_import_progress(request: AuthenticatedHttpRequest, code: UUID) -> JsonResponse:
    return JsonResponse(_import_status(_get_import_for_user(request, code)))


@login_required
@require_safe
def run_detail(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = _get_benchmark_for_user(request, code)
    points = list(benchmark.points.defer("provenance", "per_replica"))
    caveats = Caveat.objects.filter(Q(benchmark=benchmark) | Q(point__benchmark=benchmark))
    point_caveats: dict[int, list[Caveat]] = defaultdict(list)
    run_caveats = []
    for caveat in caveats:
        if caveat.point_id:
            point_caveats[caveat.point_id].append(caveat)
        else:
            run_caveats.append(caveat)
    for point in points:
        point.caveat_list = point_caveats.get(point.pk, [])
    # The same caveat on many points (e.g. CPU engine) is listed once in the caveats section.
    distinct_point_caveats = {c.code: c for cs in point_caveats.values() for c in cs}
    provenance = (
        benchmark.points.exclude(provenance=None).values_list("provenance", flat=True).first()
    )
    ctx: dict[str, Any] = {
        "benchmark": benchmark,
        "points": points,
        "run_caveats": run_caveats,
        "point_caveats": sorted(distinct_point_caveats.values(), key=lambda c: c.code),
        "provenance": provenance,
        "throughput_figure": charts.throughput_figure(points),
        "lengths_figure": charts.lengths_figure(points),
        "any_goodput": any(p.goodput_slos for p in points),
        "can_cancel": can_cancel(request.user, benchmark),
        "estimate": _estimate_beside_actual(benchmark),
    }
    ctx.update(views_judgement.run_detail_context(request, benchmark))
    # Each point row finds its verdict in one lookup (a loop in the template was quadratic).
    rows = {row["point"].pk: row for row in (ctx["judgement"] or {}).get("rows", [])}
    for point in points:
        point.judgement_row = rows.get(point.pk)
    return render(request, "runs/detail.html", ctx)


def _estimate_beside_actual(benchmark: Benchmark) -> estimates.EstimateBesideActual | None:
    """The launch's estimate, and what the run took once it has ended; None without one."""
    if benchmark.estimated_wall_s is None:
        return None
    try:
        plan: schema.SweepPlan | None = schema.SweepPlan.model_validate(benchmark.plan)
    except pydantic.ValidationError:
        plan = None  # a plan of an older schema: the times still compare, GPU-hours do not
    return estimates.beside_actual(
        estimated_wall_s=benchmark.estimated_wall_s,
        estimated_gpu_hours=benchmark.estimated_gpu_hours,
        basis=benchmark.estimate_basis,
        started_at=benchmark.started_at,
        finished_at=benchmark.finished_at,
        plan=plan,
    )


@login_required
@require_safe
def run_progress(request: HttpRequest, code: UUID) -> JsonResponse:
    # An open run page polls this: a run whose worker died ends here even if no worker is
    # left to reap it (lifecycle.reap_stale: one read, a conditional UPDATE only when stale).
    lifecycle.reap_stale()
    b = _get_benchmark_for_user(request, code)
    return JsonResponse(
        {
            "state": b.state,
            "final": b.is_final,
            "worker_lost": b.worker_lost,
            "progress": b.progress,
            "progress_note": b.progress_note,
            "points_done": b.points_done,
            "points_total": b.points_total,
            "heartbeat_at": b.heartbeat_at.isoformat() if b.heartbeat_at else None,
            "cancel_requested": b.cancel_requested,
            "error_type": b.error_type,
            "error_message": b.error_message,
        }
    )


@login_required
@require_safe
def point_samples(request: HttpRequest, code: UUID, point_id: int) -> JsonResponse:
    benchmark = _get_benchmark_for_user(request, code)
    # Only the samples columns: the request records of a big point stay on disk.
    data = PointData.objects.filter(point__benchmark=benchmark, point_id=point_id)
    blobs = data.values_list("samples", "telemetry").first()
    if blobs is None:
        raise Http404("This run has no such point.")
    figure = charts.samples_figure(blobs[0])
    # GPU telemetry (or the CPU engine's CPU use) on the same clock, drawn beside the queue.
    figure["telemetry"] = storage.telemetry_series(blobs[1])
    return JsonResponse(figure)


@login_required
@require_POST
def run_cancel(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = _get_benchmark_for_user(request, code)
    if not can_cancel(request.user, benchmark):
        raise PermissionDenied
    with transaction.atomic():
        outcome = lifecycle.request_cancel(benchmark)
        # A run that had already ended was not cancelled by this request: nothing to record.
        if not benchmark.is_final and outcome in (Benchmark.State.CANCELLED, "cancelling"):
            AuditEvent.objects.record(request.user, AuditEvent.Action.CANCELLED, benchmark,
                                      detail=f"{benchmark.state} -> {outcome}")
    messages.info(request, f"Run is {outcome}.")
    return redirect("run_detail", code=benchmark.code)


def _benchmark_summary(benchmark: Benchmark) -> dict[str, object]:
    return {
        "code": str(benchmark.code),
        "name": benchmark.name,
        "source": benchmark.source,
        "state": benchmark.state,
        "node": benchmark.node.queue if benchmark.node else None,
        "hardware": benchmark.hardware,
        "runtime": str(benchmark.runtime) if benchmark.runtime else None,
        "checkpoint": str(benchmark.checkpoint) if benchmark.checkpoint else None,
        "workload": str(benchmark.workload),
        "plan": benchmark.plan,
        "created_at": benchmark.created_at.isoformat(),
        "finished_at": benchmark.finished_at.isoformat() if benchmark.finished_at else None,
        "error_type": benchmark.error_type,
        "error_message": benchmark.error_message,
        "caveats": [
            {"kind": c.kind, "code": c.code, "text": c.text} for c in benchmark.caveats.all()
        ],
    }


@login_required
@require_safe
def run_json(request: HttpRequest, code: UUID) -> StreamingHttpResponse:
    """The run and every point in full (runner.schema.PointResult), streamed point by point."""
    benchmark = _get_benchmark_for_user(request, code)

    def body() -> Iterator[str]:
        head = json.dumps({"benchmark": _benchmark_summary(benchmark)}, cls=DjangoJSONEncoder)
        yield head[:-1] + ', "points": ['
        for i, point in enumerate(benchmark.points.all()):
            yield "," if i else ""
            yield from _stored_point_json(point)
        yield "]}"

    response = StreamingHttpResponse(body(), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="headroom-{benchmark.code}.json"'
    return response


# Where a point's requests go in its JSON: the records are written one at a time there, so a
# 100,000-request point never becomes one 2 GB string (docs/performance.md, "Memory of large
# points").
_NO_REQUESTS = '"requests":[]'


def _stored_point_json(point: Point) -> Iterator[str]:
    """One stored point as the download writes it. Its blobs are read on their own as its turn
    comes (a run's blobs together would be several times a large point's 590 MB), the
    requests blob in binary pieces (points.stored_requests), and its requests are made from
    the blob a block at a time."""
    data = PointData.objects.defer("requests").get(point=point)
    head = point_to_result(point, data, requests=False)
    blob = stored_requests(point)
    if blob is None:  # the run was deleted while it downloaded
        raise PointData.DoesNotExist(f"point {point.pk} has no data any more")
    yield from _point_json(head, storage.iter_requests(blob))


def _point_json(
    head: schema.PointResult, requests: Iterable[schema.RequestRecord]
) -> Iterator[str]:
    """The model_dump_json() of the point `head` with these requests, in pieces: everything
    else, then each request as it comes (from storage.iter_requests: a block at a time)."""
    text = head.model_copy(update={"requests": []}).model_dump_json()
    if text.count(_NO_REQUESTS) != 1:  # cannot happen with today's schema; never guess
        yield head.model_copy(update={"requests": list(requests)}).model_dump_json()
        return
    before, after = text.split(_NO_REQUESTS)
    yield before + '"requests":['
    for i, record in enumerate(requests):
        yield ("," if i else "") + record.model_dump_json()
    yield "]" + after


@login_required
@require_safe
def run_plan_yaml(request: HttpRequest, code: UUID) -> HttpResponse:
    """The run's plan as the file `python -m runner sweep` runs (runner.cli.load_plan reads it)."""
    benchmark = _get_benchmark_for_user(request, code)
    if benchmark.source != Benchmark.Source.LAUNCHED:
        raise Http404("An imported run ran elsewhere: it has no plan to download.")
    response = HttpResponse(plan_files.plan_yaml(benchmark.plan),
                            content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="headroom-{benchmark.code}.yaml"'
    return response


class _Echo:
    def write(self, value: str) -> str:
        return value


CSV_COLUMNS = (
    "key", "engine_label", "load_label", "offered_concurrency", "repeat", "replicas",
    "client_saturated",
) + METRIC_FIELDS


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: object) -> object:
    """Dict columns (goodput SLOs and their attainment) as JSON, not Python's repr; text that a
    spreadsheet would run as a formula (an engine label of extra flags, say) behind a quote.
    Numbers stay numbers, negative ones included."""
    if isinstance(value, dict):
        value = json.dumps(value, sort_keys=True)
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


@login_required
@require_safe
def run_csv(request: HttpRequest, code: UUID) -> StreamingHttpResponse:
    """One row per point with every aggregate, for a spreadsheet."""
    benchmark = _get_benchmark_for_user(request, code)
    writer = csv.writer(_Echo())
    caveats: dict[int, list[str]] = defaultdict(list)
    for point_id, caveat_code in Caveat.objects.filter(point__benchmark=benchmark).values_list(
        "point_id", "code"
    ):
        caveats[point_id].append(caveat_code)

    def rows() -> Iterator[str]:
        yield writer.writerow(CSV_COLUMNS + TELEMETRY_CSV_COLUMNS + ("caveats",))
        points = Point.objects.filter(benchmark=benchmark).only("pk", "telemetry", *CSV_COLUMNS)
        for point in points:
            values = [_csv_cell(getattr(point, column)) for column in CSV_COLUMNS]
            values += [_csv_cell(value) for value in telemetry_cells(point.telemetry)]
            yield writer.writerow(values + [" ".join(caveats[point.pk])])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="headroom-{benchmark.code}.csv"'
    return response


@login_required
@require_safe
@permission_required(VIEW_AUDIT, raise_exception=True)
def audit(request: HttpRequest) -> HttpResponse:
    """Who launched, cancelled, imported, published, revoked or approved what, newest first."""
    # The run an event names is linked; prefetching its target keeps that to one query.
    events = AuditEvent.objects.select_related("target_type").prefetch_related("target")
    page = Paginator(events, AUDIT_EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "audit/list.html", {"page": page})
