"""Forms of the judgement pages: operating point selection, saved comparisons, references.

The forms validate what a person typed; whether the stored points allow the choice (enough load
levels, latency recorded, same workload spec) is analysis's call, and its
AnalysisError message becomes a form error.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Exists, OuterRef, Q

from benchmarks.models import Benchmark, ExternalReference, OperatingPoint, Point
from dashboard.form_fields import declared_field
from judgement.figures import figures_by_key, parse_spec
from judgement.operating_point import shown_operating_point
from judgement.rows import load_points
from judgement.vocabulary import (
    DEFAULT_LATENCY_GROWTH_PCT,
    DEFAULT_THROUGHPUT_GAIN_PCT,
    LATENCY_FIELDS,
    LATENCY_LABELS,
    REFERENCE_UNITS,
)

RECENT_RUNS_FOR_CHOICES = 20
# The selects list at most this many points and runs, the most recent first, plus any already
# chosen: one large run among the recent ones must not make /comparisons/new/ slow for everyone.
MAX_POINT_CHOICES = 500
MAX_RUN_CHOICES = 200


def point_label(point: Point) -> str:
    return (
        f"{point.benchmark.name} · {point.engine_label} · {point.load_label} · r{point.repeat}"
        f"{'' if point.valid else ' (invalid)'}"
    )


class PointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Point) -> str:
        return point_label(obj)


class RunPointChoiceField(forms.ModelChoiceField):
    """A point of the run on the page: its run goes without saying."""

    def label_from_instance(self, obj: Point) -> str:
        return f"{obj.engine_label} · {obj.load_label} · r{obj.repeat}"


def _slo_label(field: str) -> str:
    return f"{LATENCY_LABELS[field]}: at most"


class OperatingPointForm(forms.Form):
    method = forms.ChoiceField(choices=OperatingPoint.Method.choices, initial="knee")
    throughput_gain_pct = forms.FloatField(
        label="Knee: next step adds less than (% throughput)",
        initial=DEFAULT_THROUGHPUT_GAIN_PCT, min_value=0, required=False,
    )
    latency_growth_pct = forms.FloatField(
        label="Knee: while median latency grows more than (%)",
        initial=DEFAULT_LATENCY_GROWTH_PCT, min_value=0, required=False,
    )
    min_tokens_per_user = forms.FloatField(
        label="Pareto: at least (tokens/s per user)", min_value=0, required=False,
    )
    point = RunPointChoiceField(queryset=Point.objects.none(), required=False,
                                label="Override: the point to operate at")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False,
                             label="Override: why (kept with the choice)")

    def __init__(self, *args: Any, benchmark: Benchmark, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        declared_field(self, "point", forms.ModelChoiceField).queryset = benchmark.points.all()
        for name in LATENCY_FIELDS:
            self.fields[f"slo_{name}"] = forms.FloatField(
                label=f"SLO: {_slo_label(name)}", min_value=0, required=False
            )

    def slo_fields(self) -> list[forms.BoundField]:
        return [self[f"slo_{name}"] for name in LATENCY_FIELDS]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        method = data.get("method")
        if method == "knee":
            for name in ("throughput_gain_pct", "latency_growth_pct"):
                if data.get(name) is None:
                    self.add_error(name, "A knee needs both thresholds.")
        elif method == "slo":
            if not self.limits():
                self.add_error(None, "An SLO selection needs at least one latency limit.")
        elif method == "pareto":
            if not data.get("min_tokens_per_user"):
                self.add_error("min_tokens_per_user", "Say how many tokens/s each user needs.")
        elif method == "override":
            if data.get("point") is None:
                self.add_error("point", "Choose the point to operate at.")
            if not (data.get("reason") or "").strip():
                self.add_error("reason", "An override needs a written reason.")
        return data

    def limits(self) -> dict[str, float]:
        return {
            name: self.cleaned_data[f"slo_{name}"]
            for name in LATENCY_FIELDS
            if self.cleaned_data.get(f"slo_{name}") is not None
        }

    def params(self) -> dict[str, Any]:
        """The method's parameters, as the analysis function takes them."""
        method, data = self.cleaned_data["method"], self.cleaned_data
        if method == "knee":
            return {"throughput_gain_pct": data["throughput_gain_pct"],
                    "latency_growth_pct": data["latency_growth_pct"]}
        if method == "slo":
            return {"limits": self.limits()}
        if method == "pareto":
            return {"min_tokens_per_user": data["min_tokens_per_user"]}
        return {"chosen_key": data["point"].key, "reason": data["reason"]}


def recent_points(chosen: list[int] | None = None) -> Any:
    """Points of the most recent runs (MAX_POINT_CHOICES at most), plus the points already
    chosen (by id). Unsliced, so that the field can look a choice up in it."""
    recent = list(
        Benchmark.objects.order_by("-created_at").values_list("pk", flat=True)[
            :RECENT_RUNS_FOR_CHOICES
        ]
    )
    by_recency = ("-benchmark__created_at", "id")
    listed = list(Point.objects.filter(benchmark__in=recent).order_by(*by_recency)
                  .values_list("pk", flat=True)[:MAX_POINT_CHOICES])
    return (
        Point.objects.filter(Q(pk__in=listed) | Q(pk__in=chosen or []))
        .select_related("benchmark")
        .order_by(*by_recency)
    )


def recent_runs(chosen: list[int]) -> Any:
    """Runs with points, the most recent MAX_RUN_CHOICES, plus the runs already chosen."""
    with_points = Benchmark.objects.filter(Exists(Point.objects.filter(benchmark=OuterRef("pk"))))
    listed = list(with_points.order_by("-created_at").values_list("pk", flat=True)
                  [:MAX_RUN_CHOICES])
    return with_points.filter(Q(pk__in=listed) | Q(pk__in=chosen)).order_by("-created_at")


class ComparisonForm(forms.Form):
    """Two points, or two runs each represented by its operating point (the one its page shows).

    A run-level comparison is stored as the two operating points it resolved to, so the saved
    comparison keeps saying exactly which measurements it compared.
    """

    name = forms.CharField(max_length=200, required=False,
                           help_text="blank: named after the two points")
    baseline_point = PointChoiceField(queryset=Point.objects.none(), required=False)
    candidate_point = PointChoiceField(queryset=Point.objects.none(), required=False)
    baseline_run = forms.ModelChoiceField(
        queryset=Benchmark.objects.none(), required=False,
        help_text="or a whole run: its operating point is compared",
    )
    candidate_run = forms.ModelChoiceField(queryset=Benchmark.objects.none(), required=False)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args: Any, preselected: list[Point | None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The selects list recent runs' points (and any already chosen) to stay short.
        chosen = [p.pk for p in preselected or [] if p is not None]
        for name in ("baseline_point", "candidate_point"):
            value = str(self.data.get(name, ""))
            if value.isdigit():
                chosen.append(int(value))
        for name in ("baseline_point", "candidate_point"):
            declared_field(self, name, forms.ModelChoiceField).queryset = recent_points(chosen)
        chosen_runs = [int(value) for name in ("baseline_run", "candidate_run")
                       if (value := str(self.data.get(name, ""))).isdigit()]
        for name in ("baseline_run", "candidate_run"):
            declared_field(self, name, forms.ModelChoiceField).queryset = recent_runs(chosen_runs)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        for side in ("baseline", "candidate"):
            point, run = data.get(f"{side}_point"), data.get(f"{side}_run")
            if point is not None and run is not None:
                self.add_error(f"{side}_run", "Choose a point or a run, not both.")
            elif point is None and run is not None:
                data[f"{side}_point"] = self._operating_point(side, run)
            elif point is None and f"{side}_point" not in self.errors:
                self.add_error(f"{side}_point", "Choose a point, or a run below.")
        baseline, candidate = data.get("baseline_point"), data.get("candidate_point")
        if baseline is not None and baseline == candidate:
            self.add_error("candidate_point", "Choose a different point from the baseline.")
        return data

    def _operating_point(self, side: str, run: Benchmark) -> Point | None:
        figs, _ = figures_by_key(load_points(run))
        shown = shown_operating_point(run, list(figs.values()))
        if shown.key is None:
            self.add_error(f"{side}_run", f"{run.name} has no operating point: {shown.error}")
            return None
        return run.points.get(key=shown.key)


class ExternalReferenceForm(forms.ModelForm):
    """A dated reference with every fixed factor its source states.

    The model's clean() holds the rules between fields (a latency with its statistic, the
    listing date after the recording date, http(s) links only); ModelForm validation runs it,
    so its messages show next to the fields here.
    """

    unit = forms.ChoiceField(choices=[(u, u) for u in REFERENCE_UNITS])
    url = forms.URLField(max_length=1000, assume_scheme="https")

    class Meta:
        model = ExternalReference
        fields = ["source", "url", "recorded_on", "no_longer_listed_on", "value", "unit",
                  "gpu_name", "gpu_count", "host", "runtime", "runtime_version", "checkpoint",
                  "checkpoint_revision", "precision", "kv_dtype", "request_count",
                  "workload_spec", "latency_ms", "latency_statistic", "notes"]
        labels = {
            "gpu_name": "GPU SKU",
            "host": "Host",
            "checkpoint": "Checkpoint (repo id)",
            "kv_dtype": "KV cache dtype",
            "latency_ms": "Published request latency (ms, E2EL)",
            "latency_statistic": "That latency is a",
            "no_longer_listed_on": "No longer listed on",
        }
        widgets = {
            "recorded_on": forms.DateInput(attrs={"type": "date"}),
            "no_longer_listed_on": forms.DateInput(attrs={"type": "date"}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def clean_value(self) -> float:
        value = self.cleaned_data["value"]
        if value is not None and value <= 0:
            raise forms.ValidationError("A published figure must be greater than zero.")
        return value

    def clean_workload_spec(self) -> str:
        spec = self.cleaned_data["workload_spec"]
        if parse_spec(spec) is None:
            raise forms.ValidationError(
                'Write the spec as "1000 in / 1000 out" (or "63-66 in / 256 out") so it can be '
                "matched with a local run."
            )
        return spec

    def clean_checkpoint_revision(self) -> str:
        # Hub commit ids are lowercase hex; a pasted uppercase one names the same commit.
        return self.cleaned_data["checkpoint_revision"].lower()


class ReferenceCompareForm(forms.Form):
    point = PointChoiceField(queryset=Point.objects.none(), label="Local point")

    def __init__(self, *args: Any, preselected: Point | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        chosen = [preselected.pk] if preselected is not None else []
        value = str(self.data.get("point", ""))
        if value.isdigit():
            chosen.append(int(value))
        declared_field(self, "point", forms.ModelChoiceField).queryset = recent_points(chosen)
