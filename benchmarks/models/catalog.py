"""What runs where: nodes, runtimes, checkpoints, engine starts and outside endpoints.

Integrity lives in the database (constraints in Meta).
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from runner.schema.flags import check_command_value, check_model_source, model_display_name

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
        return self._label(self.repo)

    @property
    def display_name(self) -> str:
        """What lists call it: the hub repo id, or a local folder's name, never its path on
        the node (runner.schema.flags.model_display_name)."""
        return model_display_name(self.repo) or self.repo

    @property
    def display_label(self) -> str:
        """str() with the display name: "tiny-model@22b68337 bf16"."""
        return self._label(self.display_name)

    def _label(self, name: str) -> str:
        revision = f"@{self.revision[:8]}" if self.revision else ""
        precision = f" {self.precision}" if self.precision else ""
        return f"{name}{revision}{precision}"

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
    node run). The launch estimate reads the last KEPT (benchmarks/launch/estimates.py); older
    ones are dropped as new ones come (EngineStart.objects.record)."""

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
    encrypted (benchmarks/security/vault.py), given to the runner only in the worker's memory, never
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
