"""Shareable customer reports: a read-only link to a tuning result, generated from stored points.

A Report is the engineer's choice: the source points, the items to show, the language and the
caveats. What a customer reads is a ReportVersion: the page as it was generated from those rows
when the version was published (every figure, sentence, label and the chart data), kept with
the ids of the rows it came from. The public link renders that snapshot and nothing else, so
editing a reference, an operating point or a point later never changes a link already sent.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmarks.models import Benchmark, CapacityPlan, ExternalReference, Point

# 32 random bytes = 256 bits (a link's only key), urlsafe base64 = 43 characters.
TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> str:
    """What the database keeps of a link token: its SHA-256, hex (64 characters).

    A link is found by the digest of the token in its URL, so a copy of the database (a backup,
    a read replica) opens no report, and the lookup compares digests, not the secret itself.
    """
    return hashlib.sha256(token.encode()).hexdigest()


def unclaimed_digest() -> str:
    """The digest of a token nobody keeps: a row saved without issue_token() (the admin, a
    shell) has a link that opens nothing until a new one is issued."""
    return token_digest(new_token())


class IssuesLinks:
    """A row with a public link whose token only its digest (the token_digest field) keeps."""

    token_digest: str
    # The token of the link this instance issued, never saved: what the engineer is shown
    # once. None on an instance loaded from the database.
    issued_token: str | None = None

    def issue_token(self) -> str:
        """A new token for this row's link; sets its digest (the caller saves the row)."""
        self.issued_token = new_token()
        self.token_digest = token_digest(self.issued_token)
        return self.issued_token


class Item(models.TextChoices):
    """What a report can show, in the order the page shows it."""

    HEADLINE = "headline", "Headline: before -> after output tokens/s"
    COMPARISON_TABLE = "comparison_table", "Comparison table"
    CURVES = "curves", "Throughput vs latency curve with the operating point"
    QUEUE_EVIDENCE = "queue_evidence", "Queue evidence (waiting vs running, KV)"
    NODE_SCALING = "node_scaling", "Node scaling (one common window)"
    REFERENCES = "references", "Dated external references"
    FLEET = "fleet", "What it means for your fleet (a capacity plan)"


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


class Report(IssuesLinks, models.Model):
    """One customer report and its links. Each published version has its own public link
    /r/<token>/ (the first version's is the report's own token); all of them answer 410 Gone
    once the report is revoked or expired. Only each token's digest is stored: a link is shown
    once, when it is issued (issue_token), and a lost one is re-issued.

    Source: a benchmark's points (baseline and candidate chosen by the engineer) and, when built
    from a saved comparison, that comparison's two points. The baseline/candidate columns are
    always filled, so the page never guesses which points the headline compares.
    """

    class Language(models.TextChoices):
        KO = "ko", "한국어"
        EN = "en", "English"

    # The engineer's pages name the report by this code; the public link's token is known only
    # to whoever was shown it (issue_token).
    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    token_digest = models.CharField(max_length=64, unique=True, default=unclaimed_digest,
                                    editable=False)
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
    # A plan is kept as it was answered (editing one makes a new row), and a published version
    # keeps the page as it was built: a link already sent never changes its fleet.
    capacity_plan = models.ForeignKey(
        CapacityPlan, models.PROTECT, null=True, blank=True, related_name="reports",
        help_text="what it means for the customer's fleet: a stored capacity plan",
    )
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
        # Building a report publishes its first version, so one right covers building,
        # publishing again and revoking: what a customer can read (benchmarks/migrations/0009).
        permissions = [
            ("publish_report", "Can build and publish customer reports and revoke their links"),
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


class ReportVersion(IssuesLinks, models.Model):
    """One published state of a report: exactly what its link shows, frozen.

    `content` holds the page in each language as reports/content.py built it at `generated_at`
    (reports/publishing.py writes it; nothing edits it afterwards); `sources` the ids of the
    points, operating point, references and caveats it was built from. Publishing again adds
    the next number with a new token, so a link already sent keeps showing its own version.
    Revocation and expiry stay on the report: they close every version's link at once.
    Re-issuing a version's link replaces its digest: the old link answers 404 from then on.

    A report built before versions existed has none; it is frozen the first time its link is
    opened (publishing.first_version), which is what that link showed until then.
    """

    report = models.ForeignKey(Report, models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    # Version 1 takes the report's own token digest, so the first link sent keeps working.
    token_digest = models.CharField(max_length=64, unique=True, default=unclaimed_digest,
                                    editable=False)
    language = models.CharField(max_length=2, choices=Report.Language.choices,
                                help_text="the language the link opens in")
    generated_at = models.DateTimeField(default=timezone.now)
    content = models.JSONField(help_text="the rendered content per language (ko, en)")
    sources = models.JSONField(default=dict, help_text="ids of the rows the figures came from")
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["report", "number"]
        constraints = [
            # Also the index for "the report's versions, in order" and "its latest version".
            models.UniqueConstraint(fields=["report", "number"], name="report_version_once"),
            models.CheckConstraint(condition=Q(number__gte=1), name="report_version_from_one"),
            models.CheckConstraint(
                condition=Q(language__in=["ko", "en"]), name="report_version_language_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.report.title} v{self.number}"


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
