"""Capacity plans: made from the run page or the comparison page, opened, edited into a new plan,
and checked against the engine. Every figure and sentence comes from judgement.capacity_view;
making a plan needs add_capacityplan, launching its check launch_benchmark.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe
from kombu.exceptions import OperationalError as BrokerError

from benchmarks.launch.capacity_checks import CheckRefused, create_check
from benchmarks.models import AuditEvent, Benchmark, CapacityPlan, Comparison
from benchmarks.worker import tasks
from dashboard.access import (
    LAUNCH,
    MAKE_CAPACITY_PLAN,
    AuthenticatedHttpRequest,
    get_benchmark_for_user,
    get_capacity_plan_for_user,
    get_comparison_for_user,
)
from dashboard.forms_capacity import CheckForm, PlanCapacityForm, initial_of, plan_form
from judgement.capacity_view import (
    answer,
    asked_of,
    checkable,
    demand_label,
    plan_view,
    price_text,
    row_fields,
    source_points,
    stored_inputs,
    stored_plan,
)
from judgement.rows import plan_runs_count
from judgement.vocabulary import AnalysisError

log = logging.getLogger(__name__)


def _make(request: AuthenticatedHttpRequest, form: PlanCapacityForm, benchmark: Benchmark,
          comparison: Comparison | None = None,
          derived_from: CapacityPlan | None = None) -> CapacityPlan | None:
    """The plan's row from a valid form; None (and an error on the form) when the points
    cannot answer."""
    scope = form.cleaned_data["scope"]
    points = source_points(benchmark, scope, comparison)
    try:
        plan = answer(points, form.inputs)
    except AnalysisError as exc:
        form.add_error(None, f"Cannot plan: {exc}.")
        return None
    fields = row_fields(plan, points)
    name = form.cleaned_data.get("name") or f"{benchmark.name}: {demand_label(fields['inputs'])}"
    return CapacityPlan.objects.create(
        name=name[:200], benchmark=benchmark, scope=scope, comparison=comparison,
        plan_key=benchmark.plan_key if scope == CapacityPlan.Scope.PLAN else "",
        derived_from=derived_from, created_by=request.user, **fields)


def _form_page(request: HttpRequest, form: PlanCapacityForm, *, benchmark: Benchmark,
               comparison: Comparison | None = None,
               derived_from: CapacityPlan | None = None) -> HttpResponse:
    ctx = {"form": form, "benchmark": benchmark, "comparison": comparison,
           "derived_from": derived_from}
    return render(request, "capacity/new.html", ctx, status=400 if form.errors else 200)


@login_required
@permission_required(MAKE_CAPACITY_PLAN, raise_exception=True)
def capacity_new(request: AuthenticatedHttpRequest, code: UUID) -> HttpResponse:
    """GET: the form alone; POST (the run page's form posts here): make the plan, open it."""
    benchmark = get_benchmark_for_user(request, code)
    form = plan_form(benchmark, request.POST or None)
    if request.method == "POST" and form.is_valid():
        row = _make(request, form, benchmark)
        if row is not None:
            return redirect("capacity_detail", code=row.code)
    return _form_page(request, form, benchmark=benchmark)


@login_required
@permission_required(MAKE_CAPACITY_PLAN, raise_exception=True)
def capacity_new_from_comparison(request: AuthenticatedHttpRequest, code: UUID) -> HttpResponse:
    comparison = get_comparison_for_user(request, code)
    benchmark = comparison.candidate_point.benchmark
    form = PlanCapacityForm(request.POST or None, node=benchmark.node, comparison=True)
    if request.method == "POST" and form.is_valid():
        row = _make(request, form, benchmark, comparison=comparison)
        if row is not None:
            return redirect("capacity_detail", code=row.code)
    return _form_page(request, form, benchmark=benchmark, comparison=comparison)


@login_required
@permission_required(MAKE_CAPACITY_PLAN, raise_exception=True)
def capacity_edit(request: AuthenticatedHttpRequest, code: UUID) -> HttpResponse:
    """A stored plan's inputs on the form; saving makes a new plan that names this one (a plan
    is kept as it was answered: a report may show it)."""
    row = get_capacity_plan_for_user(request, code)
    benchmark, comparison = row.benchmark, row.comparison
    kwargs: dict[str, Any] = {"node": benchmark.node}
    if comparison is not None:
        kwargs["comparison"] = True
    else:
        kwargs["plan_runs"] = plan_runs_count(benchmark)
    form = PlanCapacityForm(request.POST or None,
                            initial=initial_of(asked_of(row), row.scope), **kwargs)
    if request.method == "POST" and form.is_valid():
        made = _make(request, form, benchmark, comparison=comparison, derived_from=row)
        if made is not None:
            return redirect("capacity_detail", code=made.code)
    return _form_page(request, form, benchmark=benchmark, comparison=comparison,
                      derived_from=row)


def _check_form(row: CapacityPlan, data: Any = None) -> CheckForm:
    configs = [(c.config_label, c.name) for c in stored_plan(row).configs if c.sized]
    best = stored_plan(row).best
    return CheckForm(data, configs=configs,
                     initial={"config": best.config_label if best else None})


@login_required
@require_safe
def capacity_detail(request: HttpRequest, code: UUID) -> HttpResponse:
    row = get_capacity_plan_for_user(request, code)
    ctx = {"row": row, "view": plan_view(row), "price": price_text(row),
           "check_form": _check_form(row), "derived": row.derived.all()[:20],
           "checkable": row.benchmark.source == Benchmark.Source.LAUNCHED}
    return render(request, "capacity/detail.html", ctx)


@login_required
@require_POST
@permission_required(LAUNCH, raise_exception=True)
def capacity_check(request: AuthenticatedHttpRequest, code: UUID) -> HttpResponse:
    """Launch the check: the chosen config at the plan's per-replica rate, on the source run's
    node, through the same queue as any launch."""
    row = get_capacity_plan_for_user(request, code)
    form = _check_form(row, request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a config with a plan and 1 to 5 draws.")
        return redirect("capacity_detail", code=row.code)
    try:
        config = checkable(row, form.cleaned_data["config"])
        run = create_check(row, config, stored_inputs(row), repeats=form.cleaned_data["repeats"],
                           user=request.user)
    except (AnalysisError, CheckRefused) as exc:
        messages.error(request, f"Cannot check: {exc}.")
        return redirect("capacity_detail", code=row.code)
    try:
        tasks.enqueue_benchmark(run)
    except BrokerError as exc:
        log.error("broker unreachable at a capacity check: %s", exc)
        with transaction.atomic():
            CapacityPlan.objects.filter(pk=row.pk).update(check_run=None, check_config="")
            AuditEvent.objects.about(run).delete()
            run.delete()
        messages.error(request, "The task queue (broker) is unreachable, so nothing was "
                                "launched.")
        return redirect("capacity_detail", code=row.code)
    messages.success(request, f"Checking {config.name} at its per-replica rate: queued on "
                              f"{run.node.queue if run.node else '-'}.")
    return redirect("capacity_detail", code=row.code)
