"""What Headroom stores: nodes, what ran (runtime, checkpoint, workload), runs and their points.

Integrity lives in the database (constraints in Meta). Per-request records and engine samples
sit in PointData as compressed column arrays (see benchmarks/storage.py) so that listing and
charting runs never reads them.
"""

from __future__ import annotations

import re
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from analysis.types import LATENCY_STATISTICS
from runner.schema.flags import check_command_value, check_model_source

REVISION_REGEX = r"^[0-9a-f]{40}$"
# Links shown as <a href>: http(s) only, so a javascript: or data: URL can never be stored.
HTTP_URL_REGEX = r"^https?://"
LARGEST_FINITE_FLOAT = sys.float_info.max


def heartbeat_cutoff(now: datetime | None = None) -> datetime:
    """HEADROOM_STALE_AFTER_S before now: a heartbeat older than this means its worker is gone."""
    return (now or timezone.now()) - timedelta(seconds=settings.HEADROOM_STALE_AFTER_S)


def is_stale_heartbeat(heartbeat_at: datetime, now: datetime | None = None) -> bool:
    """Strictly older than the cutoff, as the reaper's heartbeat_at__lt: a heartbeat exactly at
    the cutoff still counts, so a page never calls lost a run the reaper would leave running."""
    return heartbeat_at < heartbeat_cutoff(now)


class Node(models.Model):
    """A host known by its Celery queue; its worker registers and refreshes it when it starts."""

    class LaunchStyle(models.TextChoices):
        CPU = "cpu", "vLLM on the CPU (stands in for a GPU)"
        SERVE = "serve", "vLLM installed on the host"
        DOCKER = "docker", "vLLM container image"

    queue = models.SlugField(max_length=100, unique=True)
    hostname = models.CharField(max_length=255, blank=True)
    launch_style = models.CharField(
        max_length=10, choices=LaunchStyle.choices, default=LaunchStyle.CPU
    )
    gpu_name = models.CharField(max_length=200, blank=True)
    gpu_count = models.PositiveSmallIntegerField(default=0)
    gpu_memory_mib = models.PositiveIntegerField(null=True, blank=True)
    driver_version = models.CharField(max_length=50, blank=True)
    cuda_version = models.CharField(max_length=50, blank=True)
    cpu_model = models.CharField(max_length=200, blank=True)
    cpu_count = models.PositiveSmallIntegerField(null=True, blank=True)
    # Written by people (/catalog/nodes/); the fields above come from the node's worker.
    description = models.TextField(
        blank=True, help_text="what the node is for, where it is, who looks after it"
    )
    # What one GPU-hour on this node costs, set by an engineer with the date it held: every
    # point's cost per million output tokens, and what a tuning result is worth, come from it.
    gpu_hour_price = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="per GPU per hour"
    )
    price_currency = models.CharField(max_length=3, blank=True, help_text="ISO 4217, e.g. USD")
    price_as_of = models.DateField(null=True, blank=True, help_text="when the price held")
    # A dcgm-exporter on the node, scraped for GPU telemetry where NVML is not used directly.
    dcgm_exporter_url = models.CharField(
        max_length=300, blank=True, help_text="http(s)://host:9400/metrics of dcgm-exporter"
    )
    registered_at = models.DateTimeField(default=timezone.now)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["queue"]
        constraints = [
            # A price means nothing without its currency and date.
            models.CheckConstraint(
                condition=Q(gpu_hour_price__isnull=True)
                | (Q(gpu_hour_price__gte=0) & ~Q(price_currency="") & Q(price_as_of__isnull=False)),
                name="node_price_complete",
            ),
            models.CheckConstraint(
                condition=Q(dcgm_exporter_url="") | Q(dcgm_exporter_url__regex=HTTP_URL_REGEX),
                name="node_dcgm_url_is_http",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue} ({self.hardware_label()})"

    def hardware_label(self) -> str:
        if self.gpu_count and self.gpu_name:
            return f"{self.gpu_count} x {self.gpu_name}"
        return f"CPU only{': ' + self.cpu_model if self.cpu_model else ''}"

    def max_replicas(self) -> int:
        return max(self.gpu_count, 1)

    def is_alive(self, now: datetime | None = None) -> bool:
        """Its worker beat within HEADROOM_STALE_AFTER_S; offline otherwise, or never seen.

        A run launched onto an offline node waits in the node's queue until its worker starts.
        """
        return self.last_heartbeat_at is not None and not is_stale_heartbeat(
            self.last_heartbeat_at, now
        )

    def offline_note(self) -> str:
        """What the launch form, the launch and a queued run's page say of an offline node."""
        if self.is_alive():
            return ""
        last = self.last_heartbeat_at
        since = f"since {last:%Y-%m-%d %H:%M:%S} UTC" if last else "yet"
        return (
            f"{self.queue} is offline (no worker heartbeat {since}): a run launched on it "
            "waits in its queue until that node's worker starts."
        )


class Runtime(models.Model):
    """The serving engine that ran, its version, and the image (with digest) if any.

    Headroom launches only vLLM; the other engines come from imported files, so a comparison
    can say the runtime differs instead of taking every import for a vLLM run.
    """

    class Engine(models.TextChoices):
        VLLM = "vllm", "vLLM"
        TENSORRT_LLM = "tensorrt-llm", "TensorRT-LLM"
        SGLANG = "sglang", "SGLang"
        OTHER = "other", "Another engine (named)"

    LAUNCHABLE = (Engine.VLLM,)

    engine = models.CharField(max_length=50, choices=Engine.choices, default=Engine.VLLM)
    other_engine = models.CharField(
        max_length=50, blank=True, help_text="the engine's name when engine is other, e.g. tgi"
    )
    version = models.CharField(max_length=50)
    image = models.CharField(max_length=300, blank=True, help_text="e.g. vllm/vllm-openai:v0.11.0")
    digest = models.CharField(max_length=100, blank=True, help_text="sha256:...")
    # An import records what ran elsewhere; only a person allowed to manage runtimes makes one
    # launchable, since a launched runtime's image runs on a GPU node with the host's GPUs.
    approved = models.BooleanField(
        default=False, help_text="launchable: approved by someone allowed to manage runtimes"
    )

    class Meta:
        ordering = ["engine", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["engine", "other_engine", "version", "image", "digest"],
                name="runtime_unique",
            ),
            models.CheckConstraint(
                condition=Q(digest="") | Q(digest__startswith="sha256:"),
                name="runtime_digest_sha256",
            ),
            models.CheckConstraint(
                condition=Q(engine__in=["vllm", "tensorrt-llm", "sglang", "other"]),
                name="runtime_engine_known",
            ),
            # "other" says nothing without a name; a named engine needs no second name.
            models.CheckConstraint(
                condition=(Q(engine="other") & ~Q(other_engine=""))
                | (~Q(engine="other") & Q(other_engine="")),
                name="runtime_other_engine_named",
            ),
        ]

    def __str__(self) -> str:
        image = f" ({self.image})" if self.image else ""
        return f"{self.engine_name} {self.version}{image}"

    @property
    def engine_name(self) -> str:
        """As runner.schema.result.EngineInfo.name spells it: vllm, tensorrt-llm, sglang or tgi."""
        return self.other_engine if self.engine == self.Engine.OTHER else self.engine

    @classmethod
    def engine_naming_problem(cls, engine: str | None, other_engine: str | None) -> str | None:
        """What a form says when engine and other_engine break runtime_other_engine_named."""
        if engine == cls.Engine.OTHER and not other_engine:
            return "Name the engine."
        if other_engine and engine != cls.Engine.OTHER:
            return "Only for another engine: choose 'Another engine' as the engine."
        return None

    @classmethod
    def engine_fields(cls, name: str) -> dict[str, str]:
        """engine and other_engine for an engine name as the runner spells it."""
        if name in cls.Engine.values and name != cls.Engine.OTHER:
            return {"engine": name, "other_engine": ""}
        return {"engine": cls.Engine.OTHER, "other_engine": name}


class Checkpoint(models.Model):
    """Model weights pinned to a revision, with the precision and KV-cache dtype served."""

    repo = models.CharField(max_length=300, help_text="Hub repo id or local path")
    revision = models.CharField(
        max_length=40, blank=True, help_text="40-hex commit; blank only for a local path"
    )
    precision = models.CharField(max_length=50, blank=True, help_text="e.g. bf16, FP8, NVFP4")
    kv_cache_dtype = models.CharField(max_length=50, blank=True, help_text="e.g. fp8; blank=auto")
    # As with Runtime.approved: a checkpoint named by an imported file is a record, not a
    # permission to load those weights on a GPU node.
    approved = models.BooleanField(
        default=False, help_text="launchable: approved by someone allowed to manage checkpoints"
    )
    # Flags that load code or read files (--trust-remote-code, --tokenizer, --chat-template,
    # ...) run with the worker's rights on the node; an administrator allows them per checkpoint.
    trusted = models.BooleanField(
        default=False, help_text="an administrator allows code-loading engine flags with it"
    )

    class Meta:
        ordering = ["repo", "revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["repo", "revision", "precision", "kv_cache_dtype"],
                name="checkpoint_unique",
            ),
            # A branch or tag can move; only a commit id pins the weights that ran.
            models.CheckConstraint(
                condition=Q(revision="") | Q(revision__regex=REVISION_REGEX),
                name="checkpoint_revision_is_commit",
            ),
        ]
        # Approving (approved=True) is changing the row: Django's change_checkpoint. Trusting
        # lets code-loading flags run with the worker's rights, so it is an administrator's own.
        permissions = [
            ("trust_checkpoint", "Can mark a checkpoint trusted for code-loading engine flags"),
        ]

    def __str__(self) -> str:
        revision = f"@{self.revision[:8]}" if self.revision else ""
        precision = f" {self.precision}" if self.precision else ""
        return f"{self.repo}{revision}{precision}"

    def clean(self) -> None:
        # The repo goes on vLLM's command line: never one it would read as a flag, and an
        # approved one must be a hub id or a folder this deployment allows (runner.schema).
        try:
            check_command_value(self.repo, "repo")
            if self.approved:
                check_model_source(self.repo, settings.HEADROOM_MODEL_DIRS)
        except ValueError as exc:
            raise ValidationError({"repo": str(exc)}) from None


class EngineStartQuerySet(models.QuerySet["EngineStart"]):
    def of(self, node: Node, checkpoint: Checkpoint) -> EngineStartQuerySet:
        """The starts of this checkpoint on this node, newest first."""
        return self.filter(node=node, checkpoint=checkpoint).order_by("-started_at", "-pk")

    def record(self, node: Node, checkpoint: Checkpoint, seconds: float) -> EngineStart:
        """Keep one measured start and drop the ones older than the last EngineStart.KEPT."""
        now = timezone.now()
        with transaction.atomic():
            start = self.create(node=node, checkpoint=checkpoint, seconds=seconds,
                                started_at=now - timedelta(seconds=seconds))
            older = list(self.of(node, checkpoint).values_list("pk", flat=True)[EngineStart.KEPT:])
            self.filter(pk__in=older).delete()
        return start


class EngineStart(models.Model):
    """How long an engine of this checkpoint took to start on this node: from launching its
    process until /health answered (runner.engine.process.start_engine; the slowest replica of a
    node
    run). The launch estimate reads the last KEPT (benchmarks/estimates.py); older ones are
    dropped as new ones come (EngineStart.objects.record)."""

    # Their median is not set by one or two cold starts (weights not yet in the page cache).
    KEPT = 5

    node = models.ForeignKey(Node, models.CASCADE, related_name="+")
    checkpoint = models.ForeignKey(Checkpoint, models.CASCADE, related_name="+")
    seconds = models.FloatField()
    started_at = models.DateTimeField()

    objects = EngineStartQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(seconds__gte=0), name="engine_start_seconds_nonneg"),
        ]
        indexes = [
            # EngineStart.objects.of(node, checkpoint): the estimate's read and record's trim.
            models.Index(fields=["node", "checkpoint", "-started_at"], name="engine_start_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.checkpoint} on {self.node.queue}: {self.seconds:.0f} s"


class Endpoint(models.Model):
    """An OpenAI-compatible server that is already running, measured without starting an engine.

    A benchmark against it attaches: the worker of `node` (the one that can reach it) sends the
    load, reads /version, /v1/models and /metrics, and starts nothing. The checkpoint and runtime
    say what the endpoint is registered as serving; the worker checks them against what the
    server reports before the first point. The API key and extra headers are secrets: stored
    encrypted (benchmarks/vault.py), given to the runner only in the worker's memory, never
    shown again, never in a plan, a result, a log, an export or a report.
    """

    name = models.SlugField(max_length=100, unique=True, help_text="e.g. customer-prod-h200")
    base_url = models.CharField(
        max_length=300, help_text="http(s)://host:port of the OpenAI-compatible server"
    )
    served_model = models.CharField(
        max_length=300, help_text="the model name the server answers to (its /v1/models id)"
    )
    node = models.ForeignKey(
        Node, models.PROTECT, help_text="the worker node that can reach the endpoint"
    )
    checkpoint = models.ForeignKey(
        Checkpoint, models.PROTECT, help_text="the weights the endpoint is registered as serving"
    )
    runtime = models.ForeignKey(
        Runtime, models.PROTECT, help_text="the engine and version it is registered as running"
    )
    api_key_encrypted = models.TextField(blank=True, editable=False)
    extra_headers_encrypted = models.TextField(blank=True, editable=False)
    # Shown where the values never are, so a page can say which headers are sent.
    extra_header_names = models.CharField(max_length=500, blank=True, editable=False)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    # The last reachability check, from the dashboard or the node's worker.
    checked_at = models.DateTimeField(null=True, blank=True)
    check_ok = models.BooleanField(null=True, blank=True)
    check_note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(base_url__regex=HTTP_URL_REGEX), name="endpoint_url_is_http"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.served_model} at {self.base_url})"

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)


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

    # A trace workload: how much of the trace a point replays (runner.traces).
    trace_span_s = models.FloatField(
        null=True, blank=True,
        help_text="trace workload: replay only the trace's first this many seconds (trace "
        "time); blank: all of it",
    )  # fmt: skip
    trace_longer = models.CharField(
        max_length=10, choices=TraceLonger.choices, default=TraceLonger.TRUNCATE,
        help_text="trace workload: what a load of fewer requests than the trace does",
    )  # fmt: skip
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

        queued  -> running     the worker claims it (claim_benchmark)
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
    # Engine configs the launch form left out of the plan because vLLM would refuse them, each
    # as a sentence naming the config and the rule (shown on the run page).
    plan_notes = models.JSONField(default=list, blank=True)
    # The launch's estimate (benchmarks/estimates.py), shown beside the actual after the run.
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
        ]
        indexes = [
            # Run list, newest first, optionally filtered by state.
            models.Index(fields=["-created_at"], name="benchmark_created"),
            models.Index(fields=["state", "-created_at"], name="benchmark_state_created"),
            # Run list filtered by hardware.
            models.Index(fields=["hardware", "-created_at"], name="benchmark_hardware_created"),
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
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"

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
    chart
    without decoding anything; the per-request records and samples are in PointData.
    """

    # Not columns: the run page's view sets them on the points it lists, for its template.
    caveat_list: list[Caveat]
    judgement_row: dict[str, Any] | None

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

    # runner.schema.result.Metrics, field for field (tests/dashboard/test_models.py checks it).
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
    (benchmarks/storage.py): one array per RequestRecord / EngineSample field.
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
        SCOPE = "scope"
        METHOD = "method"
        LIMITATION = "limitation"

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
                                        "registered"]),
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


class ResultImport(models.Model):
    """One uploaded result file on its way to an imported run, and how that went.

    The web stores the file (stored_path) and this row, then enqueues the id; a worker beside
    the web parses the file there and stores its points. States and the only transitions, each
    one conditional UPDATE (benchmarks/imports.py):

        queued  -> running     a worker claims it
        running -> succeeded   every point stored as one run (benchmark), in one transaction
        running -> failed      the file was refused, the import raised or passed its CPU
                               limit: nothing is stored

    succeeded and failed are final; the file is deleted when the import ends either way.
    progress counts the points read so far; error_message says why an import failed.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    FINAL_STATES = (State.SUCCEEDED, State.FAILED)

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # As the browser named it: shown and written into the run, never used as a path.
    file_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField(help_text="bytes received")
    name = models.CharField(max_length=200, blank=True, help_text="the run's name, if given")
    stated = models.JSONField(
        default=dict, blank=True, help_text="benchmarks.imports.StatedFacts given at upload"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveIntegerField(default=0, help_text="points read so far")
    error_message = models.TextField(blank=True)
    benchmark = models.ForeignKey(
        Benchmark, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "succeeded", "failed"]),
                name="result_import_state_known",
            ),
            # Only a succeeded import made a run (it may be deleted since: SET_NULL).
            models.CheckConstraint(
                condition=Q(benchmark__isnull=True) | Q(state="succeeded"),
                name="result_import_run_only_when_succeeded",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(state__in=["succeeded", "failed"]),
                name="result_import_finished_only_when_final",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    @property
    def stored_path(self) -> Path:
        """Where the received file waits for its worker: a generated name, never the user's."""
        return Path(settings.HEADROOM_IMPORT_DIR) / f"{self.code}.upload"
