"""A capacity plan's check against the engine, as a run of its own: the plan's source run cut to
one engine config at the rate the plan promises each replica
(analysis.capacity_verify.verify_plan), on the source run's node, runtime, checkpoint and
workload.

The row is created here and enqueued by the caller after the commit
(benchmarks.worker.tasks.enqueue_benchmark), as a launch is, and the worker checks the stored
plan again (benchmarks.launch.plans.launchable_plan) before any engine starts.
"""

from __future__ import annotations

from typing import Any

import pydantic
from django.db import transaction

from analysis.capacity_types import ConfigPlan, PlanInputs
from analysis.capacity_verify import verify_plan
from analysis.errors import AnalysisError
from benchmarks.launch import estimates, launch_rules, plans
from benchmarks.models import AuditEvent, Benchmark, CapacityPlan
from runner.schema.plan import SweepPlan

# Draws of the promised rate a check takes unless asked: two, so one slow draw shows.
CHECK_REPEATS = 2
CHECK_REPEATS_MAX = 5


class CheckRefused(Exception):
    """Why this plan's check cannot be launched from the dashboard; the message says so."""


def check_plan(row: CapacityPlan, config: ConfigPlan, inputs: PlanInputs,
               repeats: int) -> SweepPlan:
    """The check's sweep plan, or CheckRefused naming why there can be none."""
    source = row.benchmark
    if source.source != Benchmark.Source.LAUNCHED or source.node is None:
        raise CheckRefused("an imported run ran elsewhere, with no plan to run again: check it "
                           "with python -m analysis capacity --verify-plan")
    if source.endpoint_id is not None:
        raise CheckRefused("a registered endpoint runs its own settings: a check cannot choose "
                           "its engine config")
    if source.checkpoint is None or not launch_rules.is_launchable_checkpoint(source.checkpoint):
        raise CheckRefused(f"checkpoint {source.checkpoint} is no longer approved for launching")
    if source.runtime is None or not launch_rules.is_launchable_runtime(source.runtime):
        raise CheckRefused(f"runtime {source.runtime} is no longer an approved vLLM runtime")
    if config.share is None:
        raise CheckRefused(f"{config.name} has no rate to check")
    demand = inputs.demand
    try:
        return verify_plan(SweepPlan.model_validate(source.plan), config, [config.share],
                           repeats_each=repeats,
                           trace_rate=demand.rate if demand.kind == "trace" else None)
    except pydantic.ValidationError as exc:
        raise CheckRefused(f"the run's stored plan no longer reads: "
                           f"{plans.pydantic_message(exc)}") from None
    except AnalysisError as exc:
        raise CheckRefused(str(exc)) from None


def create_check(row: CapacityPlan, config: ConfigPlan, inputs: PlanInputs, *,
                 repeats: int = CHECK_REPEATS, user: Any = None) -> Benchmark:
    """The queued check run, linked to the plan, with its estimate and the record of the
    launch, in one transaction (no enqueue here)."""
    plan = check_plan(row, config, inputs, repeats)
    source = row.benchmark
    assert source.node is not None and source.checkpoint is not None
    estimate = estimates.estimate_launch(plan, node=source.node, checkpoint=source.checkpoint)
    with transaction.atomic():
        run = Benchmark.objects.create(
            name=plan.name[:200], node=source.node, hardware=source.hardware,
            runtime=source.runtime, checkpoint=source.checkpoint, workload=source.workload,
            plan=plan.model_dump(mode="json"), estimated_wall_s=estimate.wall_s,
            estimated_gpu_hours=estimate.gpu_hours, estimate_basis=estimate.basis,
            points_total=plans.points_total(plan),
            created_by=user if getattr(user, "is_authenticated", False) else None)
        row.check_run, row.check_config = run, config.config_label
        row.save(update_fields=["check_run", "check_config"])
        AuditEvent.objects.record(user, AuditEvent.Action.LAUNCHED, run,
                                  detail=f"check of capacity plan {row.code}")
    return run
