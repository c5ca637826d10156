from django.contrib import admin
from django.db import transaction
from django.utils import timezone

from benchmarks.models import AuditEvent
from reports.models import Report, ReportCaveat, ReportVersion


class ReportCaveatInline(admin.TabularInline):
    model = ReportCaveat
    extra = 0
    fields = ("position", "kind", "code", "text")


class ReportVersionInline(admin.TabularInline):
    """Read-only: a published version is what a customer was sent, so nobody edits it here."""

    model = ReportVersion
    extra = 0
    fields = ("number", "generated_at", "language", "published_by")
    readonly_fields = fields
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("title", "language", "benchmark", "created_by", "created_at", "revoked_at",
                    "expires_at")
    list_filter = ("language",)
    search_fields = ("title",)
    # Revocation only through the action below, which records who revoked; a revoked link
    # stays revoked (a customer was told it is gone).
    readonly_fields = ("code", "created_at", "revoked_at")
    raw_id_fields = ("benchmark", "baseline_point", "candidate_point", "scaling_point",
                     "scaling_reference")
    inlines = [ReportVersionInline, ReportCaveatInline]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected reports (every version's link answers 410)",
                  permissions=["publish"])
    def revoke(self, request, queryset) -> None:
        with transaction.atomic():
            for report in queryset.filter(revoked_at__isnull=True).select_for_update():
                report.revoked_at = timezone.now()
                report.save(update_fields=["revoked_at"])
                AuditEvent.objects.record(request.user, AuditEvent.Action.REVOKED, report,
                                          detail="in the admin")

    def has_publish_permission(self, request) -> bool:
        return request.user.has_perm("reports.publish_report")
