"""A stored capacity plan: its inputs, what the rules answered, the points it read, and the run
that checked it against the engine."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmarks.models.comparisons import Comparison
from benchmarks.models.runs import Benchmark


class CapacityPlan(models.Model):
    """How many GPUs a demand needs at each engine config, as analysis.capacity_plan answered
    when the plan was made.

    `inputs` is the rule's PlanInputs and `outputs` its CapacityPlan, both as JSON
    (judgement.capacity_view reads them back): a plan is kept as answered, so a report that
    includes it and a link already sent never change, and "editing" one makes a new row that
    names it in `derived_from`. The source is a run, a saved comparison (its two points'
    configs) or every run of the run's plan (`plan_key`); `point_ids` names the points read.
    `check_run` is the run that loaded `check_config` at the plan's per-replica rate.
    """

    class Scope(models.TextChoices):
        RUN = "run", "this run"
        PLAN = "plan", "every run of this run's plan"
        COMPARISON = "comparison", "the comparison's two configs"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    benchmark = models.ForeignKey(Benchmark, models.PROTECT, related_name="capacity_plans",
                                  help_text="the run it was made from (a comparison's "
                                  "candidate run)")
    scope = models.CharField(max_length=12, choices=Scope.choices, default=Scope.RUN)
    comparison = models.ForeignKey(Comparison, models.PROTECT, null=True, blank=True,
                                   related_name="capacity_plans")
    plan_key = models.CharField(max_length=64, blank=True)
    point_ids = models.JSONField(default=list)
    inputs = models.JSONField(help_text="analysis.capacity_plan.PlanInputs")
    outputs = models.JSONField(help_text="analysis.capacity_plan.CapacityPlan")
    met = models.BooleanField(help_text="some engine config meets the demand")
    derived_from = models.ForeignKey("self", models.SET_NULL, null=True, blank=True,
                                     related_name="derived")
    check_run = models.ForeignKey(Benchmark, models.SET_NULL, null=True, blank=True,
                                  related_name="capacity_checks")
    check_config = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True,
                                   blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope="comparison", comparison__isnull=False)
                | (~Q(scope="comparison") & Q(comparison__isnull=True)),
                name="capacity_plan_comparison_with_its_scope",
            ),
            models.CheckConstraint(
                condition=Q(check_run__isnull=True) | ~Q(check_config=""),
                name="capacity_plan_check_names_its_config",
            ),
        ]
        indexes = [
            # The run page's list of its plans, newest first.
            models.Index(fields=["benchmark", "-created_at"], name="capacity_plan_run_created"),
        ]

    def __str__(self) -> str:
        return self.name
