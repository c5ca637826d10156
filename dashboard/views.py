"""The run pages: the list, a run's page and the small JSON views it polls, its downloads, the
audit log. Every page needs a login; what else each action needs is a permission
(dashboard.access)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import pydantic
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Min
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from benchmarks.launch import estimates
from benchmarks.models import (
    AuditEvent,
    Benchmark,
    Caveat,
    Checkpoint,
    Point,
    PointData,
    Runtime,
)
from benchmarks.storage import columnar, exports, regression_record
from benchmarks.storage.points import (
    METRIC_FIELDS,
    TELEMETRY_CSV_COLUMNS,
    point_to_result,
    stored_requests,
    telemetry_cells,
)
from benchmarks.worker import lifecycle
from dashboard import plan_files, views_judgement
from dashboard.access import (
    VIEW_AUDIT,
    can_accept_baseline,
    can_cancel,
    get_benchmark_for_user,
)
from judgement import charts, peer_view
from judgement.regression_view import regression_section
from judgement.request_timeline import request_timeline, timeline_figure
from judgement.run_page import PointRow, RunPage
from runner.schema.plan import SweepPlan
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult

RUNS_PER_PAGE = 50
AUDIT_EVENTS_PER_PAGE = 100
# The run page lists this many points at a time, the rest a page away (?page=N): each row
# costs milliseconds to render, so a run of thousands of points would take seconds.
POINTS_PER_PAGE = 100
# Beyond this many points a run's page is a summary, without the verdicts, operating point and
# charts, which read every point; its CSV and JSON downloads hold them all.
MAX_JUDGED_POINTS = 1_000


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
@require_safe
def run_detail(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = get_benchmark_for_user(request, code)
    stored = benchmark.points.defer("provenance", "per_replica")
    total = stored.count()
    # A run beyond MAX_JUDGED_POINTS is summarised: only the listed page's rows are read.
    judged = total <= MAX_JUDGED_POINTS
    points = list(stored) if judged else None
    ctx: dict[str, Any] = {
        "benchmark": benchmark,
        "points_count": total,
        "summarised": not judged,
        "max_judged_points": MAX_JUDGED_POINTS,
        "provenance": benchmark.points.exclude(provenance=None)
        .values_list("provenance", flat=True).first(),
        "throughput_figure": None if points is None else charts.throughput_figure(points),
        "can_cancel": can_cancel(request.user, benchmark),
        "estimate": _estimate_beside_actual(benchmark),
        "regression": regression_section(benchmark),
        "can_accept_baseline": can_accept_baseline(request.user, benchmark),
    }
    ctx.update(views_judgement.run_detail_context(request, benchmark) if judged
               else {"judgement": None})
    # Each point row finds its verdict in one lookup, not a loop over the verdicts in the template.
    judgement: RunPage | None = ctx["judgement"]
    rows = {row.point.pk: row for row in (judgement.rows if judgement else [])}
    page = Paginator(stored if points is None else _decisions_first(points, rows),
                     POINTS_PER_PAGE).get_page(request.GET.get("page"))
    listed: list[Point] = list(page.object_list)
    shown = listed if points is None else points  # what the page's other sections read
    for point in shown:  # the listed points are among them, the same objects
        point.judgement_row = rows.get(point.pk)
    run_caveats, point_caveats = _caveats(benchmark, shown)
    ctx.update({
        "points": shown,
        "listed_points": listed,
        "points_page": page,
        "run_caveats": run_caveats,
        "point_caveats": point_caveats,
        "lengths_figure": charts.lengths_figure(shown),
        "peer_sections": peer_view.peer_sections(shown),
        "any_goodput": any(p.goodput_slos for p in listed),
    })
    return render(request, "runs/detail.html", ctx)


def _decisions_first(points: list[Point], rows: dict[int, PointRow]) -> list[Point]:
    """A run listed over several pages shows its operating point and its Pareto frontier
    first, then the others in order; a run on one page keeps its order."""
    if len(points) <= POINTS_PER_PAGE:
        return points

    def decides(point: Point) -> bool:
        row = rows.get(point.pk)
        return row is not None and (row.selected or row.on_frontier)

    return sorted(points, key=lambda point: not decides(point))  # stable: order kept within


def _caveats(benchmark: Benchmark, shown: list[Point]) -> tuple[list[Caveat], list[Caveat]]:
    """The run's own caveats, and one of each code its points carry (the caveats section: the
    same caveat on many points, e.g. the CPU engine's, is listed once); each shown point gets
    its own as caveat_list, for its row."""
    by_point: dict[int, list[Caveat]] = defaultdict(list)
    for caveat in Caveat.objects.filter(point__in=shown):
        by_point[caveat.point_id].append(caveat)  # type: ignore[index]
    for point in shown:
        point.caveat_list = by_point.get(point.pk, [])
    first_of_each = (Caveat.objects.filter(point__benchmark=benchmark).values("code")
                     .annotate(first=Min("id")).values("first"))
    return (list(Caveat.objects.filter(benchmark=benchmark)),
            list(Caveat.objects.filter(pk__in=first_of_each).order_by("code")))


def _estimate_beside_actual(benchmark: Benchmark) -> estimates.EstimateBesideActual | None:
    """The launch's estimate, and what the run took once it has ended; None without one."""
    if benchmark.estimated_wall_s is None:
        return None
    try:
        plan: SweepPlan | None = SweepPlan.model_validate(benchmark.plan)
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
    b = get_benchmark_for_user(request, code)
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
    benchmark = get_benchmark_for_user(request, code)
    # Only the samples columns: the request records of a big point stay on disk.
    data = PointData.objects.filter(point__benchmark=benchmark, point_id=point_id)
    blobs = data.values_list("samples", "telemetry").first()
    if blobs is None:
        raise Http404("This run has no such point.")
    figure = charts.samples_figure(blobs[0])
    # GPU telemetry (or the CPU engine's CPU use) on the same clock, drawn beside the queue.
    figure["telemetry"] = columnar.telemetry_series(blobs[1])
    return JsonResponse(figure)


@login_required
@require_safe
def point_timeline(request: HttpRequest, code: UUID, point_id: int) -> JsonResponse:
    """The point's request timeline (judgement.request_timeline), drawn by static/js/run.js:
    only the few request columns it needs are read, never the records."""
    benchmark = get_benchmark_for_user(request, code)
    point = Point.objects.filter(benchmark=benchmark, pk=point_id).only("pk").first()
    timeline = request_timeline(point) if point is not None else None
    if timeline is None:
        raise Http404("This run has no such point with stored requests.")
    return JsonResponse(timeline_figure(timeline))


@login_required
@require_POST
def run_cancel(request: HttpRequest, code: UUID) -> HttpResponse:
    benchmark = get_benchmark_for_user(request, code)
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


@login_required
@require_POST
def run_baseline(request: HttpRequest, code: UUID) -> HttpResponse:
    """Accept the run as its plan's regression baseline (replacing the one before), or withdraw
    it: every run of the plan is judged again either way."""
    benchmark = get_benchmark_for_user(request, code)
    if not can_accept_baseline(request.user, benchmark):
        raise PermissionDenied
    withdraw = request.POST.get("action") == "withdraw"
    detail = "withdrawn as the plan's baseline" if withdraw else "accepted as the plan's baseline"
    try:
        # The change and its audit record are kept together.
        with transaction.atomic():
            if withdraw:
                regression_record.withdraw(benchmark)
            else:
                regression_record.accept(benchmark)
            AuditEvent.objects.record(request.user, AuditEvent.Action.BASELINE, benchmark,
                                      detail=detail)
    except regression_record.BaselineError as exc:
        messages.error(request, f"Not accepted as the baseline: {exc}.")
        return redirect("run_detail", code=benchmark.code)
    messages.success(request, f"{benchmark.name}: {detail}.")
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
    """The run and every point in full (runner.schema.result.PointResult), point by point."""
    benchmark = get_benchmark_for_user(request, code)

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


@login_required
@require_safe
def run_llm_d(request: HttpRequest, code: UUID) -> StreamingHttpResponse:
    """The run as llm-d-benchmark benchmark reports (benchmarks.storage.exports), one a point."""
    benchmark = get_benchmark_for_user(request, code)
    response = StreamingHttpResponse(exports.llm_d_documents(benchmark),
                                     content_type="application/yaml")  # fmt: skip
    response["Content-Disposition"] = (
        f'attachment; filename="headroom-{benchmark.code}.llm-d.yaml"'
    )
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
    yield from _point_json(head, columnar.iter_requests(blob))


def _point_json(
    head: PointResult, requests: Iterable[RequestRecord]
) -> Iterator[str]:
    """The model_dump_json() of the point `head` with these requests, in pieces: everything
    else, then each request as it comes (from columnar.iter_requests: a block at a time)."""
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
    """The run's plan as the file `python -m runner sweep` runs (runner.cli.commands.load_plan)."""
    benchmark = get_benchmark_for_user(request, code)
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
    benchmark = get_benchmark_for_user(request, code)
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
