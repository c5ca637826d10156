"""Admin pages for every model: where nodes, runtimes, checkpoints and references are curated."""

from django.contrib import admin

from benchmarks.models import (
    Benchmark,
    Caveat,
    Checkpoint,
    Comparison,
    ExternalReference,
    Node,
    OperatingPoint,
    Point,
    PointData,
    Runtime,
    Workload,
)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("queue", "hostname", "launch_style", "gpu_name", "gpu_count", "last_heartbeat_at")
    search_fields = ("queue", "hostname", "gpu_name")
    readonly_fields = ("registered_at", "last_heartbeat_at")


@admin.register(Runtime)
class RuntimeAdmin(admin.ModelAdmin):
    list_display = ("engine", "version", "image", "digest")
    search_fields = ("version", "image")


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("repo", "revision", "precision", "kv_cache_dtype")
    search_fields = ("repo", "revision")


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
