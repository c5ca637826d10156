"""Admin pages for every model: where nodes, runtimes, checkpoints and references are curated.

Who sees what here is Django's model permissions, held by the roles (benchmarks/migrations/0009):
adding or changing a checkpoint or runtime approves it for launch; trusting a checkpoint needs
trust_checkpoint. Ticking approved or trusted writes an audit event; the audit log is read-only.
"""

from django.contrib import admin

from benchmarks.models import (
    AuditEvent,
    Benchmark,
    Caveat,
    Checkpoint,
    Comparison,
    EngineStart,
    ExternalReference,
    Node,
    OperatingPoint,
    Point,
    PointData,
    ResultImport,
    Runtime,
    Workload,
)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = (
        "queue", "hostname", "launch_style", "gpu_name", "gpu_count", "last_heartbeat_at"
    )
    search_fields = ("queue", "hostname", "gpu_name")
    readonly_fields = ("registered_at", "last_heartbeat_at")


TRUST_CHECKPOINT = "benchmarks.trust_checkpoint"

# The boxes a person answers for: ticking one is recorded with who ticked it.
AUDITED_FLAGS = {"approved": AuditEvent.Action.APPROVED, "trusted": AuditEvent.Action.TRUSTED}


def record_granted_flags(request, obj, form) -> None:
    """An event per box ticked in this save. The admin saves in a transaction, so the event
    is kept with the change or not at all."""
    for field, action in AUDITED_FLAGS.items():
        if field in form.changed_data and getattr(obj, field):
            AuditEvent.objects.record(request.user, action, obj)


@admin.register(Runtime)
class RuntimeAdmin(admin.ModelAdmin):
    list_display = ("engine", "version", "image", "digest", "approved")
    list_filter = ("engine", "approved")
    search_fields = ("version", "image")

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        record_granted_flags(request, obj, form)


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("repo", "revision", "precision", "kv_cache_dtype", "approved", "trusted")
    list_filter = ("approved", "trusted")
    search_fields = ("repo", "revision")

    def get_readonly_fields(self, request, obj=None) -> tuple[str, ...]:
        return () if request.user.has_perm(TRUST_CHECKPOINT) else ("trusted",)

    def has_change_permission(self, request, obj=None) -> bool:
        # Editing a trusted checkpoint's repo or revision would carry the trust to other
        # weights, so only someone who may trust may edit it.
        if obj is not None and obj.trusted and not request.user.has_perm(TRUST_CHECKPOINT):
            return False
        return super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        record_granted_flags(request, obj, form)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "prompt_source", "input_tokens_min", "input_tokens_max",
                    "output_tokens", "request_count", "endpoint", "load_shape")
    list_filter = ("prompt_source", "endpoint", "load_shape")


class CaveatInline(admin.TabularInline):
    model = Caveat
    fk_name = "benchmark"
    extra = 0
    fields = ("kind", "code", "text", "automatic")


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "state", "source", "node", "hardware", "points_done", "points_total",
                    "best_output_throughput", "created_at")
    list_filter = ("state", "source", "node")
    search_fields = ("name", "code")
    list_select_related = ("node",)
    raw_id_fields = ("created_by",)
    readonly_fields = ("code", "celery_task_id", "heartbeat_at", "started_at", "finished_at")
    inlines = [CaveatInline]


class PointDataInline(admin.StackedInline):
    """Counts only: the compressed arrays are read through the run's JSON download."""

    model = PointData
    fields = ("request_count", "sample_count")
    readonly_fields = fields
    can_delete = False


@admin.register(Point)
class PointAdmin(admin.ModelAdmin):
    inlines = [PointDataInline]
    list_display = ("key", "benchmark", "output_throughput", "median_e2el_ms", "valid",
                    "client_saturated")
    list_filter = ("valid", "client_saturated")
    search_fields = ("key", "benchmark__name")
    list_select_related = ("benchmark",)
    raw_id_fields = ("benchmark",)


@admin.register(Caveat)
class CaveatAdmin(admin.ModelAdmin):
    list_display = ("code", "kind", "benchmark", "point", "automatic")
    list_filter = ("kind", "automatic")
    raw_id_fields = ("benchmark", "point")


@admin.register(ExternalReference)
class ExternalReferenceAdmin(admin.ModelAdmin):
    list_display = ("source", "recorded_on", "value", "unit", "gpu_name", "workload_spec",
                    "no_longer_listed_on")
    search_fields = ("source", "gpu_name", "notes")


@admin.register(OperatingPoint)
class OperatingPointAdmin(admin.ModelAdmin):
    list_display = ("benchmark", "method", "point", "is_current", "chosen_by", "created_at")
    list_filter = ("method", "is_current")
    search_fields = ("benchmark__name", "point__key", "reason")
    list_select_related = ("benchmark", "point", "chosen_by")
    raw_id_fields = ("benchmark", "point", "chosen_by")
    readonly_fields = ("created_at",)


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    """Figures and the controlled label are recomputed on /comparisons/<code>/, never stored."""

    list_display = ("name", "baseline_point", "candidate_point", "created_by", "created_at")
    search_fields = ("name", "notes", "baseline_point__key", "candidate_point__key")
    list_select_related = ("baseline_point", "candidate_point", "created_by")
    raw_id_fields = ("baseline_point", "candidate_point", "created_by")
    readonly_fields = ("code", "created_at")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: an event is written by the action it records (AuditEvent.objects.record)."""

    list_display = ("created_at", "actor_name", "action", "target_type", "target_label", "detail")
    list_filter = ("action", "target_type")
    search_fields = ("actor_name", "target_label", "detail")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(EngineStart)
class EngineStartAdmin(admin.ModelAdmin):
    """Read-only: a start is what the worker measured (EngineStart.objects.record). Deleting
    one is allowed: a start no longer true of the node (its disk or driver changed) can go."""

    list_display = ("started_at", "node", "checkpoint", "seconds")
    list_filter = ("node",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ResultImport)
class ResultImportAdmin(admin.ModelAdmin):
    """Read-only: an import's state is written by its worker, and deleting a queued one here
    would leave its stored file behind with no task to remove it."""

    list_display = ("created_at", "file_name", "size", "created_by", "state", "progress")
    list_filter = ("state",)
    search_fields = ("file_name", "created_by__username")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
