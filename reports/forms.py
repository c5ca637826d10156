"""The build form: a report from one benchmark's points (or a saved comparison's two points)."""

from __future__ import annotations

import uuid

from django import forms
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from benchmarks.models import (
    Benchmark,
    CapacityPlan,
    Caveat,
    Comparison,
    ExternalReference,
    Point,
)
from dashboard.form_fields import declared_field
from judgement.comparison_view import compare_points
from judgement.scaling_view import scaling_problem
from judgement.vocabulary import AnalysisError
from reports import publishing
from reports.models import Item, Report, ReportCaveat

# Caveats no engineer may leave out: they change what every number on the page means.
REQUIRED_CAVEAT_CODES = (
    "cpu-engine",
    "invalid-point",
    "client-saturated",
    "client-nap",
    "sparse-queue-samples",
    "disturbed-host",
    "vllm-bench-import",
    "peer-import",
    "headroom-import",
)
DEFAULT_ITEMS = [Item.HEADLINE, Item.COMPARISON_TABLE, Item.CURVES, Item.QUEUE_EVIDENCE]


class PointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, point: Point) -> str:
        return (f"{point.engine_label} · {point.load_label} · r{point.repeat} · "
                f"{point.output_throughput:,.0f} tok/s{'' if point.valid else ' (invalid)'}")


def _plan_of(plans, code: str | None) -> CapacityPlan | None:
    try:
        return plans.filter(code=uuid.UUID(code)).first() if code else None
    except ValueError:
        return None


class ReportForm(forms.ModelForm):
    items = forms.MultipleChoiceField(
        choices=Item.choices, widget=forms.CheckboxSelectMultiple, initial=DEFAULT_ITEMS
    )
    baseline_point = PointChoiceField(queryset=Point.objects.none(),
                                      help_text="before: the initial configuration")
    candidate_point = PointChoiceField(queryset=Point.objects.none(),
                                       help_text="after: the tuned configuration")
    scaling_point = PointChoiceField(queryset=Point.objects.none(), required=False,
                                     help_text="node scaling: a point run on several replicas")
    scaling_reference = PointChoiceField(queryset=Point.objects.none(), required=False,
                                         help_text="node scaling: the single-replica reference")
    capacity_plan = forms.ModelChoiceField(
        queryset=CapacityPlan.objects.none(), required=False, label="Capacity plan",
        help_text="what it means for the customer's fleet: one of this run's capacity plans",
    )
    references = forms.ModelMultipleChoiceField(
        queryset=ExternalReference.objects.all(), required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    caveats = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple,
        help_text=f"The chosen points' {', '.join(REQUIRED_CAVEAT_CODES)} caveats are always "
                  "included.",
    )
    extra_caveats = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One caveat per line, shown to the customer as written.",
    )
    expires_at = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="optional; the link answers 410 Gone after this (UTC)",
    )

    class Meta:
        model = Report
        fields = ["title", "language", "items", "baseline_point", "candidate_point",
                  "scaling_point", "scaling_reference", "capacity_plan", "references",
                  "expires_at"]

    def __init__(self, *args, benchmark: Benchmark, comparison: Comparison | None = None,
                 plan_code: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.benchmark, self.comparison = benchmark, comparison
        plans = CapacityPlan.objects.filter(benchmark=benchmark)
        if comparison is not None:
            plans = plans | CapacityPlan.objects.filter(comparison=comparison)
        declared_field(self, "capacity_plan", forms.ModelChoiceField).queryset = plans
        chosen = _plan_of(plans, plan_code) if not self.is_bound else None
        if chosen is not None:  # "Include in a customer report" on the plan's page
            self.initial.update(capacity_plan=chosen.pk, items=[*DEFAULT_ITEMS, Item.FLEET])
        points = Point.objects.filter(benchmark=benchmark).defer("per_replica", "client")
        for name in ("scaling_point", "scaling_reference"):
            declared_field(self, name, forms.ModelChoiceField).queryset = points
        if comparison is not None:
            # A saved comparison fixes both points; the form shows them but cannot change them.
            for name in ("baseline_point", "candidate_point"):
                point = getattr(comparison, name)
                field = declared_field(self, name, forms.ModelChoiceField)
                field.queryset = Point.objects.filter(pk=point.pk)
                field.initial = point.pk
                field.disabled = True
            self.initial.setdefault("title", comparison.name)
            self._init_caveats()
            return
        for name in ("baseline_point", "candidate_point"):
            declared_field(self, name, forms.ModelChoiceField).queryset = points
        ordered = sorted(points, key=lambda p: p.output_throughput)
        if ordered and not self.is_bound:
            self.initial.setdefault("baseline_point", ordered[0].pk)
            self.initial.setdefault("candidate_point", ordered[-1].pk)
            self.initial.setdefault("title", benchmark.name)
        self._init_caveats()

    def _init_caveats(self) -> None:
        self.caveat_rows = {c.pk: c for c in self._benchmark_caveats()}
        declared_field(self, "caveats", forms.ChoiceField).choices = [
            (c.pk, f"[{c.code}] {c.text}") for c in self.caveat_rows.values()
            if c.code not in REQUIRED_CAVEAT_CODES
        ]

    def _benchmark_caveats(self) -> list[Caveat]:
        """The run's caveats and its points', one per code (the same caveat on many points)."""
        where = Q(benchmark=self.benchmark) | Q(point__benchmark=self.benchmark)
        if self.comparison is not None:
            where |= Q(point__in=[self.comparison.baseline_point_id,
                                  self.comparison.candidate_point_id])
        rows = Caveat.objects.filter(where).order_by("id")
        by_code: dict[str, Caveat] = {}
        for caveat in rows:
            by_code.setdefault(caveat.code or f"id-{caveat.pk}", caveat)
        return list(by_code.values())

    def clean_expires_at(self):
        value = self.cleaned_data.get("expires_at")
        if value is not None and value <= timezone.now():
            raise forms.ValidationError("The expiry must be in the future.")
        return value

    def clean(self):
        data = super().clean()
        items = data.get("items") or []
        baseline, candidate = data.get("baseline_point"), data.get("candidate_point")
        if baseline and candidate:
            if baseline == candidate:
                self.add_error("candidate_point", "Choose a different point than the baseline.")
            else:
                try:
                    compare_points(baseline, candidate)
                except AnalysisError as exc:
                    self.add_error("baseline_point", f"These points cannot be compared: {exc}")
        if Item.NODE_SCALING in items:
            self._clean_scaling(data)
        elif data.get("scaling_point") or data.get("scaling_reference"):
            data["scaling_point"] = data["scaling_reference"] = None
        if Item.FLEET in items and not data.get("capacity_plan"):
            self.add_error("capacity_plan", "Choose a capacity plan, or leave the item out.")
        elif Item.FLEET not in items:
            data["capacity_plan"] = None
        if Item.REFERENCES in items and not data.get("references"):
            self.add_error("references", "Choose at least one reference, or leave the item out.")
        return data

    def _clean_scaling(self, data) -> None:
        node, reference = data.get("scaling_point"), data.get("scaling_reference")
        if node is None:
            self.add_error("scaling_point", "Node scaling needs a point run on several replicas.")
            return
        if reference is None:
            self.add_error("scaling_reference", "Node scaling needs a single-replica reference.")
            return
        problem = scaling_problem(node, reference)
        if problem:
            self.add_error("scaling_reference", problem)

    def save_for(self, user) -> Report:
        """Save the report and publish its first version: the link is frozen from the start.
        The report's issued_token is that link's token, to be shown once."""
        report: Report = super().save(commit=False)
        report.benchmark = self.benchmark
        report.comparison = self.comparison
        report.created_by = user
        report.issue_token()
        with transaction.atomic():
            report.save()
            self.save_m2m()
            self._save_caveats(report)
            publishing.publish(report, user)
        return report

    def _save_caveats(self, report: Report) -> None:
        chosen = [self.caveat_rows[int(pk)] for pk in self.cleaned_data.get("caveats") or []]
        points = [report.baseline_point, report.candidate_point, report.scaling_point,
                  report.scaling_reference]
        required = Caveat.objects.filter(point__in=[p for p in points if p],
                                         code__in=REQUIRED_CAVEAT_CODES).order_by("id")
        seen: set[str] = set()
        rows = []
        for caveat in [*required, *chosen]:
            if caveat.code in seen:
                continue
            seen.add(caveat.code)
            rows.append(ReportCaveat(report=report, kind=caveat.kind, code=caveat.code,
                                     text=caveat.text, source=caveat))
        for line in (self.cleaned_data.get("extra_caveats") or "").splitlines():
            if line.strip():
                rows.append(ReportCaveat(report=report, kind="scope", text=line.strip()))
        for position, row in enumerate(rows):
            row.position = position
        ReportCaveat.objects.bulk_create(rows)
