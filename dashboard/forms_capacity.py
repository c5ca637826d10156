"""The "Plan capacity" form (run page, comparison page, a plan edited into a new one) and the
form of a plan's check against the engine.

The form checks what was typed; whether it makes a demand the points can answer (a trace that
reads, targets in the METRIC:STAT:MS syntax, a spec) is judgement.capacity_view's call, and its
AnalysisError becomes a form error.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from benchmarks.launch.capacity_checks import CHECK_REPEATS, CHECK_REPEATS_MAX
from benchmarks.models import Benchmark, CapacityPlan, Node
from dashboard.form_fields import declared_field
from judgement.capacity_view import Asked, inputs_of
from judgement.rows import plan_runs_count
from judgement.vocabulary import AnalysisError
from runner.workloads.prompts import dataset_names
from runner.workloads.traces import TRACE_RATE_WINDOW_S

MARGIN_MAX_PCT = 1000


class PlanCapacityForm(forms.Form):
    name = forms.CharField(max_length=200, required=False,
                           help_text="optional; the demand names the plan otherwise")
    scope = forms.ChoiceField(choices=[(CapacityPlan.Scope.RUN, "this run")],
                              initial=CapacityPlan.Scope.RUN, label="Over")
    kind = forms.ChoiceField(label="Demand", initial="rate", widget=forms.RadioSelect,
                             choices=[("rate", "peak requests/s"),
                                      ("trace", "a trace, sized at its peak or a percentile"),
                                      ("batch", "a batch job: N requests within T hours")])
    rate = forms.FloatField(required=False, min_value=0, label="Requests/s at peak")
    spec = forms.CharField(required=False, max_length=100, label="The demand's spec",
                           help_text="optional, e.g. 1000 in / 1000 out; blank: the run's own")
    trace = forms.ChoiceField(required=False, label="Trace",
                              help_text="a trace file in the data directory (HEADROOM_DATA_DIR)")
    trace_at = forms.CharField(required=False, max_length=8, initial="peak",
                               label="Size the trace at", help_text="peak, or a percentile "
                               "of its windows such as p95")
    trace_window_s = forms.FloatField(required=False, min_value=0, initial=TRACE_RATE_WINDOW_S,
                                      label="Rate window (s)")
    requests = forms.IntegerField(required=False, min_value=1, label="Batch: requests")
    hours = forms.FloatField(required=False, min_value=0, label="Batch: within hours")
    slos = forms.CharField(required=False, max_length=300, label="Latency targets",
                           help_text="METRIC:STAT:MS, space-separated: ttft, tpot, itl or e2el "
                           "at p50, p95 or p99, e.g. ttft:p95:2000 tpot:p99:50")
    margin_pct = forms.FloatField(required=False, min_value=0, max_value=MARGIN_MAX_PCT,
                                  initial=0, label="Headroom margin (%)")

    def __init__(self, *args: Any, node: Node | None = None, plan_runs: int = 1,
                 comparison: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node = node  # whose GPU-hour price the plan takes
        scope = declared_field(self, "scope", forms.ChoiceField)
        if comparison:
            scope.choices = [(CapacityPlan.Scope.COMPARISON, "the comparison's two configs")]
            scope.initial = CapacityPlan.Scope.COMPARISON
        elif plan_runs > 1:
            scope.choices = [(CapacityPlan.Scope.RUN, "this run"),
                             (CapacityPlan.Scope.PLAN, f"every run of this run's plan "
                                                       f"({plan_runs})")]
        names = dataset_names(settings.HEADROOM_DATA_DIR)
        declared_field(self, "trace", forms.ChoiceField).choices = (
            [("", "-- choose --")] + [(name, name) for name in names])

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = data.get("kind")
        if kind == "rate" and data.get("rate") is None:
            self.add_error("rate", "Give the requests/s at peak.")
        if kind == "trace" and not data.get("trace"):
            self.add_error("trace", "Choose the trace.")
        if kind == "batch":
            for name in ("requests", "hours"):
                if data.get(name) is None:
                    self.add_error(name, "A batch job needs its requests and its deadline.")
        if not self.errors:
            try:
                self.inputs = inputs_of(self.asked(), self.node)
            except AnalysisError as exc:
                self.add_error(None, f"Cannot plan: {exc}.")
        return data

    def asked(self) -> Asked:
        data = self.cleaned_data
        return Asked(kind=data["kind"], rate=data.get("rate"), trace=data.get("trace") or "",
                     trace_at=(data.get("trace_at") or "peak").strip(),
                     trace_window_s=data.get("trace_window_s") or TRACE_RATE_WINDOW_S,
                     requests=data.get("requests"), hours=data.get("hours"),
                     spec=data.get("spec") or "", slos=data.get("slos") or "",
                     margin_pct=data.get("margin_pct") or 0.0)


def plan_form(benchmark: Benchmark, data: Any = None, **kwargs: Any) -> PlanCapacityForm:
    """The run page's form: over this run, or every run of its plan when it has several."""
    return PlanCapacityForm(data, node=benchmark.node, plan_runs=plan_runs_count(benchmark),
                            **kwargs)


def initial_of(asked: Asked, scope: str) -> dict[str, Any]:
    """A stored plan's fields, to fill the form that edits it into a new plan."""
    return {"scope": scope, "kind": asked.kind, "rate": asked.rate, "spec": asked.spec,
            "trace": asked.trace, "trace_at": asked.trace_at,
            "trace_window_s": asked.trace_window_s, "requests": asked.requests,
            "hours": asked.hours, "slos": asked.slos, "margin_pct": asked.margin_pct}


class CheckForm(forms.Form):
    config = forms.ChoiceField(label="Engine config")
    repeats = forms.IntegerField(min_value=1, max_value=CHECK_REPEATS_MAX, initial=CHECK_REPEATS,
                                 label="Draws")

    def __init__(self, *args: Any, configs: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        declared_field(self, "config", forms.ChoiceField).choices = configs
