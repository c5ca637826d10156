"""What ran and what it measured: workloads, runs (benchmarks), their points and caveats.

Integrity lives in the database (constraints in Meta). Per-request records and engine samples
sit in PointData as compressed column arrays (see benchmarks/storage/columnar.py) so that
listing and charting runs never reads them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from analysis import caveats
from benchmarks.models.catalog import (
    LARGEST_FINITE_FLOAT,
    Checkpoint,
    Endpoint,
    Node,
    Runtime,
    heartbeat_cutoff,
    is_stale_heartbeat,
)
from runner.regression import plan_key


class Workload(models.Model):
    """What the client sends: prompt and output spec, request count and load shape."""

    class PromptSource(models.TextChoices):
        CASE_STUDY = "case_study", "Case study (one guide text, new request id)"
        RANDOM = "random", "Random tokens"
        DATASET = "dataset", "Dataset (JSONL)"
        TRACE = "trace", "Trace (Mooncake JSONL, BurstGPT CSV or timestamp_s CSV)"
        LENGTHS = "lengths", "Request-length log (input/output token counts)"
        CONVERSATION = "conversation", "Conversations (multi-turn JSONL, replayed turn by turn)"

    class Endpoint(models.TextChoices):
        COMPLETIONS = "completions", "/v1/completions"
        CHAT = "chat", "/v1/chat/completions"

    class LoadShape(models.TextChoices):
        BURST = "burst", "Burst (all queued at once)"
        CONCURRENCY = "concurrency", "Closed loop (fixed concurrency)"
        RATE = "rate", "Open loop (request rate)"
        TRACE = "trace", "Trace replay (the trace's arrival times)"

    name = models.CharField(max_length=100, default="custom")
    prompt_source = models.CharField(
        max_length=20, choices=PromptSource.choices, default=PromptSource.CASE_STUDY
    )
    dataset_path = models.CharField(max_length=500, blank=True)
    input_tokens_min = models.PositiveIntegerField(default=63)
    input_tokens_max = models.PositiveIntegerField(default=66)
    output_tokens = models.PositiveIntegerField(default=256)
    request_count = models.PositiveIntegerField(default=2000)
    temperature = models.FloatField(default=0.0)
    ignore_eos = models.BooleanField(default=True)
    thinking = models.BooleanField(default=False, help_text="chat only: enable_thinking")
    endpoint = models.CharField(
        max_length=20, choices=Endpoint.choices, default=Endpoint.COMPLETIONS
    )
    stream = models.BooleanField(default=True)
    load_shape = models.CharField(max_length=20, choices=LoadShape.choices, default=LoadShape.BURST)
    keep_outputs = models.BooleanField(
        default=False,
        help_text="output parity: keep every response's token ids (temperature 0 only)",
    )
    class TraceLonger(models.TextChoices):
        TRUNCATE = "truncate", "Replay its first requests (with a note on the point)"
        REFUSE = "refuse", "Refuse the plan"

    # A trace workload: how much of the trace a point replays (runner.workloads.traces).
    trace_span_s = models.FloatField(
        null=True, blank=True,
        help_text="trace workload: replay only the trace's first this many seconds (trace "
        "time); blank: all of it",
    )  # fmt: skip
    trace_longer = models.CharField(
        max_length=10, choices=TraceLonger.choices, default=TraceLonger.TRUNCATE,
        help_text="trace workload: what a load of fewer requests than the trace does",
    )  # fmt: skip
    # The LoRA adapters the requests are spread over, as runner.schema.plan.LoraShare dumps
    # ([{"name", "weight"}]); [] for none.
    lora_split = models.JSONField(default=list, blank=True)
    conversation_turns_max = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="conversation workload: replay at most this many user turns of each "
        "conversation; blank: all of them",
    )  # fmt: skip

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(input_tokens_max__gte=models.F("input_tokens_min")),
                name="workload_input_range",
            ),
            models.CheckConstraint(condition=Q(output_tokens__gt=0), name="workload_output_pos"),
            models.CheckConstraint(condition=Q(request_count__gt=0), name="workload_requests_pos"),
            models.CheckConstraint(condition=Q(temperature__gte=0), name="workload_temp_nonneg"),
            models.CheckConstraint(
                condition=~Q(prompt_source__in=["dataset", "trace", "lengths", "conversation"])
                | ~Q(dataset_path=""),
                name="workload_dataset_has_path",
            ),
            # Thinking is a chat-template switch; on /v1/completions it would be silently ignored.
            models.CheckConstraint(
                condition=Q(thinking=False) | Q(endpoint="chat"), name="workload_thinking_on_chat"
            ),
            # Comparing outputs between points means something only for greedy decoding.
            models.CheckConstraint(
                condition=Q(keep_outputs=False) | Q(temperature=0), name="workload_parity_greedy"
            ),
            # A span is of trace time, finite and above 0, and means something only for a trace;
            # so does refusing a trace longer than a load. The upper bound is the largest finite
            # double, a literal SQLite reads too (it takes `inf` for a column name); NaN fails it
            # on PostgreSQL, where NaN sorts above every number.
            models.CheckConstraint(
                condition=Q(trace_span_s__isnull=True)
                | Q(prompt_source="trace", trace_span_s__gt=0,
                    trace_span_s__lte=LARGEST_FINITE_FLOAT),
                name="workload_trace_span",
            ),
            models.CheckConstraint(
                condition=Q(trace_longer="truncate") | Q(prompt_source="trace"),
                name="workload_trace_longer",
            ),
            # A cap on turns means something only for conversations, and a cap of 0 replays none.
            models.CheckConstraint(
                condition=Q(conversation_turns_max__isnull=True)
                | Q(prompt_source="conversation", conversation_turns_max__gt=0),
                name="workload_turns_max_conversation",
            ),
        ]

    def __str__(self) -> str:
        kept = "; outputs kept for parity" if self.keep_outputs else ""
        turns = (f"; at most {self.conversation_turns_max} turns a conversation"
                 if self.conversation_turns_max else "")
        span = f"; the trace's first {self.trace_span_s:g} s" if self.trace_span_s else ""
        return (f"{self.name}: {self.spec_label()}, {self.request_count} requests, "
                f"{self.load_shape}{span}{turns}{kept}")

    def spec_label(self) -> str:
        return f"{self.input_tokens_min}-{self.input_tokens_max} in / {self.output_tokens} out"


class BenchmarkQuerySet(models.QuerySet["Benchmark"]):
    def for_list(self) -> BenchmarkQuerySet:
        """The run list: one query with everything a row shows, newest first."""
        return self.select_related("node", "runtime", "checkpoint", "workload").order_by(
            "-created_at"
        )

    def active(self) -> BenchmarkQuerySet:
        return self.exclude(state__in=Benchmark.FINAL_STATES)

    def stale(self, now: datetime | None = None) -> BenchmarkQuerySet:
        """Running runs whose worker died: the rule of Benchmark.heartbeat_is_stale, in SQL
        (the partial index benchmark_running_heartbeat serves it)."""
        return self.filter(state=Benchmark.State.RUNNING, heartbeat_at__lt=heartbeat_cutoff(now))


class Benchmark(models.Model):
    """One launched (or imported) sweep and its lifecycle.

    States and the only allowed transitions, each made by one conditional UPDATE:

        queued  -> running     the worker claims it (lifecycle.claim)
        queued  -> cancelled   cancelled before any worker picked it up
        running -> succeeded   run_plan finished every point
        running -> failed      the runner raised, a time limit hit, or the reaper found its
                               heartbeat stale (the worker died); finished points are kept
        running -> cancelled   the user asked, the runner stopped the engine

    succeeded, failed and cancelled are final. Error detail is kept apart from the state in
    error_type / error_message / error_detail. Imported runs are created as succeeded.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Source(models.TextChoices):
        LAUNCHED = "launched"
        IMPORTED = "imported"

    FINAL_STATES = (State.SUCCEEDED, State.FAILED, State.CANCELLED)
    # error_type of a run failed because its worker died (lifecycle.reap_stale, fail_orphans).
    WORKER_LOST = "WorkerLost"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LAUNCHED)
    node = models.ForeignKey(Node, models.PROTECT, null=True, blank=True)
    runtime = models.ForeignKey(Runtime, models.PROTECT, null=True, blank=True)
    checkpoint = models.ForeignKey(Checkpoint, models.PROTECT, null=True, blank=True)
    # Set when the run attached to a registered endpoint instead of starting engines.
    endpoint = models.ForeignKey(Endpoint, models.PROTECT, null=True, blank=True)
    workload = models.ForeignKey(Workload, models.PROTECT)
    plan = models.JSONField(help_text="The runner.schema.plan.SweepPlan this run launched")
    # An adaptive sweep's record as it goes (runner.schema.search_record.SearchRecord): each
    # config's status and reason, and the costs; None for a grid.
    search = models.JSONField(null=True, blank=True)
    # Engine configs the launch form left out of the plan because vLLM would refuse them, each
    # as a sentence naming the config and the rule (shown on the run page).
    plan_notes = models.JSONField(default=list, blank=True)
    # The launch's estimate (benchmarks/launch/estimates.py), shown beside the actual after the run.
    estimated_wall_s = models.FloatField(null=True, blank=True)
    estimated_gpu_hours = models.FloatField(null=True, blank=True)
    estimate_basis = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    progress = models.FloatField(default=0.0)
    progress_note = models.CharField(max_length=300, blank=True)
    points_done = models.PositiveIntegerField(default=0)
    points_total = models.PositiveIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    celery_task_id = models.CharField(max_length=50, blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    error_message = models.TextField(blank=True)
    error_detail = models.TextField(blank=True, help_text="traceback or engine log tail")

    # Denormalized from the points as they are stored, so the run list filters and shows them
    # without touching the Point table (10,000 runs on the first page must stay fast).
    hardware = models.CharField(max_length=200, blank=True, help_text="e.g. 8 x NVIDIA H200")
    best_output_throughput = models.FloatField(null=True, blank=True)

    # Regression watch (benchmarks/storage/regression_record.py): runs of one plan share its key
    # (runner.regression.plan_key, set on save from the plan); one of them may be the plan's
    # accepted baseline, and each other finished run keeps its verdict against it, for the list.
    # An imported run was launched from no plan: its key is blank, and it is never a baseline.
    plan_key = models.CharField(max_length=64, blank=True, editable=False)
    accepted_baseline = models.BooleanField(default=False)
    regression = models.CharField(max_length=20, blank=True, editable=False,
                                  help_text="runner.regression verdict against the baseline")

    objects = BenchmarkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "succeeded", "failed", "cancelled"]),
                name="benchmark_state_known",
            ),
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="benchmark_progress_0_1"
            ),
            models.CheckConstraint(
                condition=Q(points_done__lte=models.F("points_total")) | Q(source="imported"),
                name="benchmark_points_done_le_total",
            ),
            # A launched run must say where and what it ran; an import may not know.
            models.CheckConstraint(
                condition=Q(source="imported")
                | (Q(node__isnull=False) & Q(runtime__isnull=False) & Q(checkpoint__isnull=False)),
                name="benchmark_launched_is_complete",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True)
                | Q(state__in=["succeeded", "failed", "cancelled"]),
                name="benchmark_finished_only_when_final",
            ),
            # A baseline is a finished sweep that measured all it meant to, one per plan.
            models.CheckConstraint(
                condition=Q(accepted_baseline=False) | Q(state="succeeded"),
                name="benchmark_baseline_succeeded",
            ),
            # Only a launched run has a plan to be the baseline of (an import's key is blank).
            models.CheckConstraint(
                condition=Q(accepted_baseline=False) | Q(source="launched"),
                name="benchmark_baseline_launched",
            ),
            models.UniqueConstraint(
                fields=["plan_key"], condition=Q(accepted_baseline=True),
                name="benchmark_one_baseline_per_plan",
            ),
        ]
        indexes = [
            # Run list, newest first, optionally filtered by state.
            models.Index(fields=["-created_at"], name="benchmark_created"),
            models.Index(fields=["state", "-created_at"], name="benchmark_state_created"),
            # Run list filtered by hardware.
            models.Index(fields=["hardware", "-created_at"], name="benchmark_hardware_created"),
            # Regression watch: the runs of one plan
            # (benchmarks.storage.regression_record.refresh_plan).
            models.Index(fields=["plan_key"], name="benchmark_plan_key"),
            # The reaper: running runs with an old heartbeat.
            models.Index(
                fields=["heartbeat_at"],
                name="benchmark_running_heartbeat",
                condition=Q(state="running"),
            ),
        ]
        # Who may do what is in Django's groups (benchmarks/migrations/0009): viewing needs only
        # a login; these name the actions that cost GPU time or change what others see.
        permissions = [
            ("launch_benchmark", "Can launch benchmarks and cancel their own"),
            ("cancel_any_benchmark", "Can cancel a benchmark someone else launched"),
            ("import_results", "Can import result files"),
            ("accept_baseline", "Can accept a run as its plan's regression baseline"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Derived from the plan, which never changes after the run is created. An import's
        # "plan" is only its name and file: keyed, every import would be one plan.
        self.plan_key = plan_key(self.plan) if self.source == self.Source.LAUNCHED else ""
        super().save(*args, **kwargs)

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    def heartbeat_is_stale(self, now: datetime | None = None) -> bool:
        """Still 'running' on its row, but its worker stopped beating: read from the row alone,
        so a page says so before any reaper has ended the run (BenchmarkQuerySet.stale)."""
        return (
            self.state == self.State.RUNNING
            and self.heartbeat_at is not None
            and is_stale_heartbeat(self.heartbeat_at, now)
        )

    @property
    def worker_lost(self) -> bool:
        """Its worker died mid-run: seen from a stale heartbeat, or already failed for it."""
        reaped = self.state == self.State.FAILED and self.error_type == self.WORKER_LOST
        return reaped or self.heartbeat_is_stale()



class Point(models.Model):
    """One measured point: an engine config under one load level, one repeat, N replicas.

    Every aggregate of runner.schema.result.Metrics is a real column so points sort, filter and
    chart without decoding anything; the per-request records and samples are in PointData.
    """

    # Not columns: the run page's view sets them on the points it lists, for its template.
    caveat_list: list[Caveat]
    judgement_row: Any  # judgement.run_page.PointRow or None (a layer above this one)

    benchmark = models.ForeignKey(Benchmark, models.CASCADE, related_name="points")
    key = models.CharField(max_length=500)
    plan_name = models.CharField(max_length=200, default="sweep")
    source = models.CharField(max_length=30, default="headroom")
    engine_label = models.CharField(max_length=300)
    engine_config = models.JSONField()
    load_label = models.CharField(max_length=100)
    load = models.JSONField()
    offered_concurrency = models.FloatField()
    workload = models.JSONField()
    repeat = models.PositiveIntegerField(default=0)
    replicas = models.PositiveSmallIntegerField(default=1)
    t0_monotonic = models.FloatField(default=0.0)
    window_start = models.FloatField(null=True, blank=True)
    window_end = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    # runner.schema.result.Metrics, field for field (tests/benchmarks/test_models.py checks it).
    # vLLM's names and definitions:
    duration = models.FloatField()
    completed = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()
    total_input_tokens = models.BigIntegerField()
    total_output_tokens = models.BigIntegerField()
    request_throughput = models.FloatField()
    output_throughput = models.FloatField()
    total_token_throughput = models.FloatField()
    request_goodput = models.FloatField(null=True, blank=True)
    mean_ttft_ms = models.FloatField(null=True, blank=True)
    median_ttft_ms = models.FloatField(null=True, blank=True)
    std_ttft_ms = models.FloatField(null=True, blank=True)
    p90_ttft_ms = models.FloatField(null=True, blank=True)
    p95_ttft_ms = models.FloatField(null=True, blank=True)
    p99_ttft_ms = models.FloatField(null=True, blank=True)
    mean_tpot_ms = models.FloatField(null=True, blank=True)
    median_tpot_ms = models.FloatField(null=True, blank=True)
    std_tpot_ms = models.FloatField(null=True, blank=True)
    p90_tpot_ms = models.FloatField(null=True, blank=True)
    p95_tpot_ms = models.FloatField(null=True, blank=True)
    p99_tpot_ms = models.FloatField(null=True, blank=True)
    mean_itl_ms = models.FloatField(null=True, blank=True)
    median_itl_ms = models.FloatField(null=True, blank=True)
    std_itl_ms = models.FloatField(null=True, blank=True)
    p90_itl_ms = models.FloatField(null=True, blank=True)
    p95_itl_ms = models.FloatField(null=True, blank=True)
    p99_itl_ms = models.FloatField(null=True, blank=True)
    mean_e2el_ms = models.FloatField(null=True, blank=True)
    median_e2el_ms = models.FloatField(null=True, blank=True)
    std_e2el_ms = models.FloatField(null=True, blank=True)
    p90_e2el_ms = models.FloatField(null=True, blank=True)
    p95_e2el_ms = models.FloatField(null=True, blank=True)
    p99_e2el_ms = models.FloatField(null=True, blank=True)
    other_percentiles = models.JSONField(default=dict, blank=True)
    # Headroom's own:
    short_responses = models.PositiveIntegerField()
    incomplete_responses = models.PositiveIntegerField(default=0)
    valid = models.BooleanField()
    mean_sched_ttft_ms = models.FloatField(null=True, blank=True)
    median_sched_ttft_ms = models.FloatField(null=True, blank=True)
    std_sched_ttft_ms = models.FloatField(null=True, blank=True)
    p90_sched_ttft_ms = models.FloatField(null=True, blank=True)
    p95_sched_ttft_ms = models.FloatField(null=True, blank=True)
    p99_sched_ttft_ms = models.FloatField(null=True, blank=True)
    mean_sched_e2el_ms = models.FloatField(null=True, blank=True)
    median_sched_e2el_ms = models.FloatField(null=True, blank=True)
    std_sched_e2el_ms = models.FloatField(null=True, blank=True)
    p90_sched_e2el_ms = models.FloatField(null=True, blank=True)
    p95_sched_e2el_ms = models.FloatField(null=True, blank=True)
    p99_sched_e2el_ms = models.FloatField(null=True, blank=True)
    mean_token_itl_ms = models.FloatField(null=True, blank=True)
    median_token_itl_ms = models.FloatField(null=True, blank=True)
    std_token_itl_ms = models.FloatField(null=True, blank=True)
    p90_token_itl_ms = models.FloatField(null=True, blank=True)
    p95_token_itl_ms = models.FloatField(null=True, blank=True)
    p99_token_itl_ms = models.FloatField(null=True, blank=True)
    max_send_lag_ms = models.FloatField(null=True, blank=True)
    mean_connect_ms = models.FloatField(null=True, blank=True)
    p99_connect_ms = models.FloatField(null=True, blank=True)
    max_connect_ms = models.FloatField(null=True, blank=True)
    goodput_slos = models.JSONField(default=dict, blank=True)
    slo_attainment = models.JSONField(default=dict, blank=True)

    # Whether the client could have distorted the timings (runner.schema.result.ClientHealth).
    client_saturated = models.BooleanField(default=False)
    client = models.JSONField(default=dict)
    queue = models.JSONField(default=dict, help_text="runner.schema.samples.QueueSummary")
    # GPU (or CPU-engine) telemetry over the point's window, summarized; the samples are in
    # PointData.telemetry.
    telemetry = models.JSONField(default=dict, blank=True, help_text="runner.schema telemetry")
    per_replica = models.JSONField(default=list)
    provenance = models.JSONField(null=True, blank=True)
    notes = models.JSONField(default=list)
    # A trace or lengths workload's file lengths beside the point's (runner.schema
    # LengthComparison); None for other workloads.
    lengths = models.JSONField(null=True, blank=True)
    # A conversation workload's per-turn and per-conversation latency (runner.schema
    # ConversationSummary); None for other workloads.
    conversations = models.JSONField(null=True, blank=True)
    # The plan's quality set scored on this point (runner.schema QualityResult: the score and a
    # row per item); None: no quality set ran.
    quality = models.JSONField(null=True, blank=True)
    # Why an adaptive sweep measured this point, and when (runner.schema.search_record.SearchStep);
    # None: a grid point.
    search = models.JSONField(null=True, blank=True)
    # An imported AIPerf, GuideLLM or inference-perf point: the tool's own figures under its
    # names (runner.schema PeerFigures); None: measured by Headroom or vllm bench.
    peer = models.JSONField(null=True, blank=True)
    # The host's CPU time over the load, by whose it was (runner.schema HostCpu: the engines',
    # the runner's, others'), with the draws set aside as disturbed; None: not measured.
    host = models.JSONField(null=True, blank=True)
    # The config's first load level measured again after its last one (PointResult.control).
    control = models.BooleanField(default=False)
    # The first config's first load level again after the last config, on a fresh engine start
    # (PointResult.end_control).
    end_control = models.BooleanField(default=False)

    class Meta:
        # Measurement order, which is the plan's order: engine configs as the user listed them
        # (256 before 1024, not as strings sort), loads ascending, then repeats.
        ordering = ["id"]
        constraints = [
            # A point key is unique within its run; this is also what makes resume skip it.
            # Its index serves "points of this benchmark" on the run page.
            models.UniqueConstraint(fields=["benchmark", "key"], name="point_key_per_benchmark"),
            models.CheckConstraint(condition=Q(duration__gte=0), name="point_duration_nonneg"),
            models.CheckConstraint(condition=Q(replicas__gte=1), name="point_replicas_pos"),
        ]

    def __str__(self) -> str:
        return self.key


class PointData(models.Model):
    """The bulky part of a point, read only for downloads and the per-point samples chart.

    `requests` and `samples` are zlib-compressed .npz archives of column arrays
    (benchmarks/storage/columnar.py): one array per RequestRecord / EngineSample field.
    """

    point = models.OneToOneField(Point, models.CASCADE, primary_key=True, related_name="data")
    request_count = models.PositiveIntegerField()
    sample_count = models.PositiveIntegerField()
    requests = models.BinaryField()
    samples = models.BinaryField()
    # Telemetry samples (GPU or CPU engine) as column arrays like samples; empty: none taken.
    telemetry = models.BinaryField(default=b"", blank=True)


class Caveat(models.Model):
    """A limit on what a number means, shown next to it: on a whole run or on one point."""

    class Kind(models.TextChoices):
        SCOPE = caveats.SCOPE
        METHOD = caveats.METHOD
        LIMITATION = caveats.LIMITATION

    benchmark = models.ForeignKey(
        Benchmark, models.CASCADE, null=True, blank=True, related_name="caveats"
    )
    point = models.ForeignKey(Point, models.CASCADE, null=True, blank=True, related_name="caveats")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    code = models.SlugField(max_length=50, help_text="stable name, e.g. cpu-engine")
    text = models.TextField()
    automatic = models.BooleanField(default=False, help_text="added by Headroom, not a person")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "code"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(benchmark__isnull=False) & Q(point__isnull=True))
                | (Q(benchmark__isnull=True) & Q(point__isnull=False)),
                name="caveat_exactly_one_target",
            ),
            models.UniqueConstraint(
                fields=["point", "code"],
                condition=Q(point__isnull=False),
                name="caveat_code_once_per_point",
            ),
            models.UniqueConstraint(
                fields=["benchmark", "code"],
                condition=Q(benchmark__isnull=False),
                name="caveat_code_once_per_benchmark",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"
