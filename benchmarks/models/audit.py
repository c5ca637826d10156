"""Who changed what: one audit event per change a person or a command made."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def record(self, actor: Any, action: str, target: models.Model, detail: str = "") -> AuditEvent:
        """Keep one event about `target`. Called inside the transaction that makes the change,
        so the change and its record are kept or lost together (refused outside one)."""
        if not transaction.get_connection(self.db).in_atomic_block:
            raise RuntimeError("an audit event is written in the transaction of its change")
        person = actor if getattr(actor, "is_authenticated", False) else None
        return self.create(
            actor=person,
            actor_name=person.get_username() if person is not None else "",
            action=action,
            target_type=ContentType.objects.get_for_model(target),
            target_id=target.pk,
            target_label=str(target)[:300],
            detail=detail[:300],
        )

    def about(self, target: models.Model) -> AuditEventQuerySet:
        return self.filter(target_type=ContentType.objects.get_for_model(target),
                           target_id=target.pk)


class AuditEvent(models.Model):
    """Who launched, cancelled, imported, published, revoked, re-issued or approved what, and when.

    Written only by AuditEvent.objects.record, next to the change; never edited (the admin is
    read-only). The target is a content type and id rather than a foreign key: the record must
    outlive the row (a deleted run, report or checkpoint), so its label is copied too, and so is
    the actor's user name for the same reason. An actor of None is a command-line action.
    """

    class Action(models.TextChoices):
        LAUNCHED = "launched"
        CANCELLED = "cancelled"
        IMPORTED = "imported"
        PUBLISHED = "published"
        REVOKED = "revoked"
        # A report version's link replaced by a new one (the old link stops working).
        REISSUED = "reissued"
        APPROVED = "approved"
        TRUSTED = "trusted"
        # An endpoint registered, or its address or secrets changed.
        REGISTERED = "registered"
        # A run accepted as its plan's regression baseline, or no longer.
        BASELINE = "baseline"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=20, choices=Action.choices)
    target_type = models.ForeignKey(ContentType, models.PROTECT, related_name="+")
    target_id = models.PositiveBigIntegerField()
    target = GenericForeignKey("target_type", "target_id")
    target_label = models.CharField(max_length=300)
    detail = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=["launched", "cancelled", "imported", "published",
                                        "revoked", "reissued", "approved", "trusted",
                                        "registered", "baseline"]),
                name="audit_event_action_known",
            ),
        ]
        indexes = [
            # The audit page: newest first.
            models.Index(fields=["-created_at"], name="audit_event_created"),
            # AuditEvent.objects.about(row): the events of one run, report or checkpoint.
            models.Index(fields=["target_type", "target_id"], name="audit_event_target"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name or 'command line'} {self.action} {self.target_label}"
