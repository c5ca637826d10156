from django.contrib import admin
from django.utils import timezone

from reports.models import Report, ReportCaveat


class ReportCaveatInline(admin.TabularInline):
    model = ReportCaveat
    extra = 0
    fields = ("position", "kind", "code", "text")


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("title", "language", "benchmark", "created_by", "created_at", "revoked_at",
                    "expires_at")
    list_filter = ("language",)
    search_fields = ("title",)
    readonly_fields = ("token", "created_at")
    raw_id_fields = ("benchmark", "baseline_point", "candidate_point", "scaling_point",
                     "scaling_reference")
    inlines = [ReportCaveatInline]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected reports (their links answer 410)")
    def revoke(self, request, queryset):
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
