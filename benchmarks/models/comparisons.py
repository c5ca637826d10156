"""What a run is held against: published references, chosen operating points, comparisons."""

from __future__ import annotations

import re
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from analysis.types import LATENCY_STATISTICS
from benchmarks.models.catalog import (
    HTTP_URL_REGEX,
    REVISION_REGEX,
)
from benchmarks.models.runs import Benchmark, Point


class ExternalReference(models.Model):
    """A dated public figure (a vendor's published number) kept with what it measured.

    Each fixed factor of a controlled comparison (docs/vllm.md) has a field, blank when
    the source does not state it: a blank factor is "not recorded", so no comparison with the
    reference is called controlled on a guess. The latency is one published request latency
    with the statistic it is (median or mean), so it is only ever shown beside the same
    statistic of a local point.
    """

    source = models.CharField(max_length=200)
    url = models.URLField(max_length=1000, help_text="the page the figure was read on (http(s))")
    recorded_on = models.DateField(help_text="when we read the figure on the page")
    value = models.FloatField()
    unit = models.CharField(max_length=50, default="output tokens/s per GPU")
    gpu_name = models.CharField(max_length=200)
    gpu_count = models.PositiveSmallIntegerField(default=1)
    host = models.CharField(
        max_length=200, blank=True, help_text="the machine or system named by the source"
    )
    runtime = models.CharField(max_length=100, blank=True)
    runtime_version = models.CharField(max_length=50, blank=True)
    checkpoint = models.CharField(
        max_length=300, blank=True, help_text="Hub repo id, e.g. nvidia/Qwen3-30B-A3B-NVFP4"
    )
    checkpoint_revision = models.CharField(
        max_length=40,
        blank=True,
        validators=[
            RegexValidator(REVISION_REGEX, "A checkpoint revision is a 40-hex commit id.")
        ],
        help_text="40-hex commit, when the source pins one",
    )
    precision = models.CharField(max_length=50, blank=True, help_text="e.g. bf16, FP8, NVFP4")
    kv_dtype = models.CharField(max_length=50, blank=True, help_text="e.g. fp8")
    request_count = models.PositiveIntegerField(
        null=True, blank=True, help_text="requests per measurement, when the source says"
    )
    workload_spec = models.CharField(max_length=200, help_text="e.g. 1000 in / 1000 out")
    latency_ms = models.FloatField(
        null=True, blank=True, help_text="a published request latency (E2EL), in ms"
    )
    latency_statistic = models.CharField(
        max_length=10,
        blank=True,
        choices=[(s, s.capitalize()) for s in LATENCY_STATISTICS],
        help_text="whether the published latency is a median or a mean",
    )
    notes = models.TextField(blank=True)
    no_longer_listed_on = models.DateField(
        null=True, blank=True, help_text="first date the figure was no longer shown (optional)"
    )

    class Meta:
        ordering = ["-recorded_on"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gt=0), name="reference_value_pos"),
            models.CheckConstraint(
                condition=Q(no_longer_listed_on__isnull=True)
                | Q(no_longer_listed_on__gte=models.F("recorded_on")),
                name="reference_unlisted_after_recorded",
            ),
            # A link that is not http(s) (javascript:, data:) must never reach an <a href>.
            models.CheckConstraint(
                condition=Q(url__iregex=HTTP_URL_REGEX), name="reference_url_http"
            ),
            # A branch or tag can move; only a commit id pins the weights that were measured.
            models.CheckConstraint(
                condition=Q(checkpoint_revision="")
                | Q(checkpoint_revision__regex=REVISION_REGEX),
                name="reference_revision_is_commit",
            ),
            models.CheckConstraint(
                condition=Q(request_count__isnull=True) | Q(request_count__gt=0),
                name="reference_request_count_pos",
            ),
            # A latency without its statistic cannot be put beside a local one, nor the reverse.
            models.CheckConstraint(
                condition=(Q(latency_ms__isnull=True) & Q(latency_statistic=""))
                | (Q(latency_ms__gt=0) & Q(latency_statistic__in=LATENCY_STATISTICS)),
                name="reference_latency_with_statistic",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.recorded_on}: {self.value} {self.unit}"

    def clean(self) -> None:
        """Field-level messages for the rules the constraints above enforce (the form shows
        them next to the field; the constraints keep the database right without a form)."""
        errors: dict[str, str] = {}
        if self.latency_ms is not None and self.latency_ms <= 0:
            errors["latency_ms"] = "A published latency must be greater than zero."
        elif self.latency_ms is not None and not self.latency_statistic:
            errors["latency_statistic"] = "Say whether the latency is a median or a mean."
        elif self.latency_ms is None and self.latency_statistic:
            errors["latency_ms"] = "A median or mean needs the latency it describes."
        # URLField alone accepts ftp:// too; the page links to this, so only http(s) is kept.
        if self.url and not re.match(HTTP_URL_REGEX, self.url, re.IGNORECASE):
            errors["url"] = "Only http and https links are kept."
        recorded, gone = self.recorded_on, self.no_longer_listed_on
        if recorded and gone and gone < recorded:
            errors["no_longer_listed_on"] = (
                "A figure cannot disappear before the day it was recorded."
            )
        if errors:
            raise ValidationError(errors)


class OperatingPoint(models.Model):
    """Where to operate a benchmark: the chosen point, the method and parameters that chose it.

    Every selection is kept; `is_current` marks the one shown (at most one per benchmark), so an
    override keeps what it replaced. `sentence` and `evidence` are what analysis
    returned when the choice was made (the figures it quoted), stored because a signed choice
    must not change if the selection code later does; the page recomputes nothing from them.
    """

    class Method(models.TextChoices):
        KNEE = "knee", "Saturation knee"
        SLO = "slo", "Latency SLO"
        PARETO = "pareto", "Pareto frontier"
        OVERRIDE = "override", "Engineer override"

    benchmark = models.ForeignKey(
        Benchmark, models.CASCADE, related_name="operating_points"
    )
    method = models.CharField(max_length=10, choices=Method.choices)
    params = models.JSONField(default=dict, help_text="the method's parameters, as given")
    point = models.ForeignKey(Point, models.CASCADE, related_name="operating_points")
    sentence = models.TextField()
    evidence = models.JSONField(default=dict)
    reason = models.TextField(blank=True, help_text="required for an override")
    is_current = models.BooleanField(default=True)
    chosen_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark"],
                condition=Q(is_current=True),
                name="operating_point_one_current",
            ),
            models.CheckConstraint(
                condition=Q(method__in=["knee", "slo", "pareto", "override"]),
                name="operating_point_method_known",
            ),
            # An unexplained override is what this tool exists to prevent.
            models.CheckConstraint(
                condition=~Q(method="override") | Q(reason__regex=r"\S"),
                name="operating_point_override_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.name}: {self.get_method_display()} -> {self.point.key}"


class Comparison(models.Model):
    """A saved baseline vs candidate comparison of two stored points.

    Nothing derivable is stored: the page recomputes the figures, the factor table and the
    controlled / not controlled label from the two points with analysis.compare.
    The points are PROTECTed: a saved (possibly reported) comparison must not lose its
    evidence silently, so deleting a run it uses is refused until the comparison is deleted.
    """

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    baseline_point = models.ForeignKey(Point, models.PROTECT, related_name="+")
    candidate_point = models.ForeignKey(Point, models.PROTECT, related_name="+")
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(baseline_point=models.F("candidate_point")),
                name="comparison_two_different_points",
            ),
        ]

    def __str__(self) -> str:
        return self.name
