"""The launch pages: the form, its confirmation with the estimate, a plan file or a run laid
onto the form. Launching needs launch_benchmark (dashboard.access)."""

from __future__ import annotations

import logging
from uuid import UUID

import pydantic
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST, require_safe
from kombu.exceptions import OperationalError as BrokerError

from benchmarks.launch import estimates, launch_rules, plans
from benchmarks.models import (
    AuditEvent,
    Benchmark,
    Node,
)
from benchmarks.worker import tasks
from dashboard import plan_files, uploads
from dashboard.access import (
    LAUNCH,
    get_benchmark_for_user,
)
from dashboard.forms_launch import LaunchForm
from runner.schema.plan import SweepPlan

log = logging.getLogger(__name__)


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
    plan: SweepPlan = form.cleaned_data["plan"]
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
    benchmark = get_benchmark_for_user(request, code)
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
        plan = SweepPlan.model_validate(benchmark.plan)
    except pydantic.ValidationError as exc:
        # A plan stored by an older schema: the form starts blank and says why.
        why = plans.pydantic_message(exc)
        return plan_files.PlanOnForm(left_out=[f"the stored plan no longer reads: {why}"])
    return plan_files.plan_on_form(plan)
