"""Shareable customer reports: a read-only link to a tuning result, generated from stored points.

The numbers on a report are never stored here: the public page computes them from the Point rows
each time (reports/content.py), so every figure traces back to stored requests. What is stored
is the engineer's choice: the source points, the items to show, the language and the caveats.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmarks.models import Benchmark, ExternalReference, Point

# 32 random bytes = 256 bits, urlsafe base64 = 43 characters. The issue asks for at least 128.
TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class Item(models.TextChoices):
    """What a report can show, in the order the page shows it."""

    HEADLINE = "headline", "Headline: before -> after output tokens/s"
    COMPARISON_TABLE = "comparison_table", "Comparison table"
    CURVES = "curves", "Throughput vs latency curve with the operating point"
    QUEUE_EVIDENCE = "queue_evidence", "Queue evidence (waiting vs running, KV)"
    NODE_SCALING = "node_scaling", "Node scaling (one common window)"
    REFERENCES = "references", "Dated external references"


ITEM_ORDER = tuple(Item.values)


def validate_items(value: object) -> None:
    if not isinstance(value, list) or not value:
        raise ValidationError("Choose at least one item to include.")
    unknown = [v for v in value if v not in ITEM_ORDER]
    if unknown:
        raise ValidationError(f"Unknown report item(s): {', '.join(map(str, unknown))}")
    if len(set(value)) != len(value):
        raise ValidationError("An item is listed twice.")


class ReportQuerySet(models.QuerySet["Report"]):
    def for_owner(self, user) -> ReportQuerySet:
        return self.filter(created_by=user).order_by("-created_at")


class Report(models.Model):
    """One share link. Public at /r/<token>/ until revoked or expired; both then answer 410.

    Source: a benchmark's points (baseline and candidate chosen by the engineer) and, when built
    from a saved comparison, that comparison's two points. The baseline/candidate columns are
    always filled, so the page never guesses which points the headline compares.
    """

    class Language(models.TextChoices):
        KO = "ko", "한국어"
        EN = "en", "English"

    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    title = models.CharField(max_length=200)
    language = models.CharField(max_length=2, choices=Language.choices, default=Language.KO)
    # The sweep whose curve the report draws (the candidate's benchmark for a comparison).
    benchmark = models.ForeignKey(Benchmark, models.PROTECT, related_name="reports")
    comparison = models.ForeignKey(
        "benchmarks.Comparison", models.PROTECT, null=True, blank=True, related_name="reports",
        help_text="the saved comparison this report was built from, if any",
    )
    # A link the customer holds must not lose its points: PROTECT, not CASCADE.
    baseline_point = models.ForeignKey(Point, models.PROTECT, related_name="+")
    candidate_point = models.ForeignKey(Point, models.PROTECT, related_name="+")
    scaling_point = models.ForeignKey(
        Point, models.PROTECT, null=True, blank=True, related_name="+",
        help_text="a point with several replicas measured over one common window",
    )
    scaling_reference = models.ForeignKey(
        Point, models.PROTECT, null=True, blank=True, related_name="+",
        help_text="the single-replica run the node throughput is compared with",
    )
    references = models.ManyToManyField(ExternalReference, blank=True, related_name="reports")
    items = models.JSONField(validators=[validate_items])
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="reports"
    )
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ReportQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(language__in=["ko", "en"]), name="report_language_known"
            ),
            models.CheckConstraint(
                condition=~Q(baseline_point=models.F("candidate_point")),
                name="report_two_different_points",
            ),
            models.CheckConstraint(
                condition=Q(scaling_point__isnull=True) | Q(scaling_reference__isnull=False),
                name="report_scaling_has_reference",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__isnull=True) | Q(expires_at__gt=models.F("created_at")),
                name="report_expires_after_created",
            ),
        ]
        indexes = [
            # "My reports": the owner's reports, newest first.
            models.Index(fields=["created_by", "-created_at"], name="report_owner_created"),
        ]

    def __str__(self) -> str:
        return self.title

    def shows(self, item: str) -> bool:
        return item in self.items

    def is_live(self, now=None) -> bool:
        """Revoked or past its expiry: the link answers 410 Gone."""
        now = now or timezone.now()
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or now < self.expires_at

    def status(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if not self.is_live():
            return "expired"
        return "live"


class ReportCaveat(models.Model):
    """A caveat as the customer reads it, copied when the report is built.

    Copied rather than linked: editing a run's caveat in the admin later must not change what a
    customer was already sent without anyone noticing. `source` keeps where it came from.
    """

    report = models.ForeignKey(Report, models.CASCADE, related_name="caveats")
    position = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=20, blank=True)
    code = models.SlugField(max_length=50, blank=True)
    text = models.TextField()
    source = models.ForeignKey(
        "benchmarks.Caveat", models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.text[:80]
