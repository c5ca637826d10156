"""The launch form's adaptive-sweep fields: which answer to search for, how precisely, and with
how many points and seconds at most (runner.schema.search_record.SearchSpec)."""

from __future__ import annotations

from typing import Any

import pydantic
from django import forms
from django.core.exceptions import ValidationError

from runner.schema.search_record import DEFAULT_TOLERANCE_PCT, SEARCH_LATENCY_FIELDS, SearchSpec

GRID = ""
# A week: longer than any run's Celery time limit, so a larger figure is a typing slip.
MAX_TIME_BUDGET_S = 7 * 24 * 3600


class SearchFields(forms.Form):
    search = forms.ChoiceField(
        label="Sweep",
        required=False,
        choices=[
            (GRID, "Full grid: every config x load level x repeat"),
            ("knee", "Adaptive: search for the saturation knee"),
            ("slo", "Adaptive: search for the highest throughput within latency limits"),
        ],
        help_text="an adaptive sweep measures only where the answer can still change: the "
        "configs and load levels above are its candidates, repeats the most one point gets",
    )
    search_tolerance_pct = forms.FloatField(
        label="Search tolerance (%)", required=False, min_value=0.1, max_value=50,
        initial=DEFAULT_TOLERANCE_PCT,
        help_text="the answer is located to within this share of its throughput",
    )
    search_point_budget = forms.IntegerField(
        label="Point budget", required=False, min_value=1, max_value=10_000,
        help_text="at most this many points in all; blank: the search stops on its own",
    )
    # Seconds, as the plan file and the CLI have it, so a plan read back onto the form is the
    # same number rather than a minute count rounded in floating point.
    search_time_budget_s = forms.FloatField(
        label="Time budget (seconds on the node)", required=False, min_value=1,
        max_value=MAX_TIME_BUDGET_S,
        help_text="engine starts included, e.g. 3600 for an hour: a config is not started when "
        "its estimated start and points do not fit in what is left; blank: no limit",
    )
    search_limits = forms.CharField(
        label="Latency limits (SLO search)", required=False, max_length=300,
        help_text="in ms, e.g. p99_ttft_ms:500 median_e2el_ms:20000; one of "
        + ", ".join(SEARCH_LATENCY_FIELDS),
    )

    def clean_search_limits(self) -> dict[str, float]:
        limits: dict[str, float] = {}
        for item in self.cleaned_data["search_limits"].split():
            name, _, value = item.partition(":")
            if name not in SEARCH_LATENCY_FIELDS:
                raise ValidationError(f"{name!r} is not a latency the search can limit.")
            try:
                limits[name] = float(value)
            except ValueError:
                raise ValidationError(f"{item!r}: write NAME:MS, e.g. p99_ttft_ms:500.") from None
        return limits

    def search_spec(self, data: dict[str, Any]) -> SearchSpec | None:
        """The search the form asks for (None: a grid); a problem is an error on its field."""
        objective = data.get("search") or GRID
        limits = data.get("search_limits") or {}
        if objective == GRID:
            for name in ("search_point_budget", "search_time_budget_s", "search_limits"):
                if data.get(name):
                    self.add_error(name, "This is for an adaptive sweep: choose one above.")
            return None
        if objective == "slo" and not limits and "search_limits" not in self.errors:
            self.add_error("search_limits", "An SLO search needs at least one limit, e.g. "
                                            "p99_ttft_ms:500.")
            return None
        if objective == "knee" and limits:
            self.add_error("search_limits", "Latency limits are for the SLO search; the knee "
                                            "search has none.")
            return None
        try:
            return SearchSpec.model_validate({
                "objective": objective,
                "tolerance_pct": data.get("search_tolerance_pct") or DEFAULT_TOLERANCE_PCT,
                "point_budget": data.get("search_point_budget"),
                "time_budget_s": data.get("search_time_budget_s"),
                "limits": limits,
            })
        except pydantic.ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            self.add_error("search_limits", f"{message}.")
            return None
