"""What the engine's queue and the hardware did over a point's window."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import (
    Field,
)

from runner.schema.base import Schema


class QueueSummary(Schema):
    """The engine's queue over a point's window, from its /metrics samples (runner.measure.sampler).

    Every field declares how a node run combines its replicas' summaries into the node's
    (`node_rule`, applied by runner.sweep), so a field added later cannot drop out of node
    points unnoticed:

    - sum: what adds up across the node. At every instant the node runs and queues the sum of
      its replicas' requests, so the mean running and waiting add up (each replica's mean is
      over its own window; replicas released together share nearly one). Sample counts and
      counter increases (preemptions, generated tokens) add up too.
    - max: peaks and gaps. Replicas peak at different instants, so adding their peaks would
      claim a moment nobody observed; the highest replica's peak is what one engine reached
      against its own max_num_seqs and KV cache. The worst-covered replica's gap decides
      whether the node's samples are too sparse to judge.
    - histogram: seconds per value, added value by value across replicas.
    - mean: per-engine ratios. KV usage is a fraction of one replica's cache (replicas run one
      config, so their caches are equal), and tokens per step is read against one replica's
      max_num_batched_tokens; a sum would report a cache over 100% full or steps past the
      budget. (Each replica counts once: the step count is not kept to weight by it.)
    """

    samples: int = Field(default=0, json_schema_extra={"node": "sum"})
    # The longest stretch of the window that some replica's samples left uncovered (the window's
    # edges count as its ends). When it is a large part of the window, the means and peaks below
    # rest on too few samples: a short point, or a /metrics endpoint too busy to answer.
    max_gap_s: float | None = Field(default=None, json_schema_extra={"node": "max"})
    mean_running: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    mean_waiting: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    peak_running: float | None = Field(default=None, json_schema_extra={"node": "max"})
    peak_waiting: float | None = Field(default=None, json_schema_extra={"node": "max"})
    peak_kv_usage: float | None = Field(default=None, json_schema_extra={"node": "max"})
    mean_kv_usage: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    preemptions: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    generation_tokens: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    # From the vllm:iteration_tokens_total histogram (sum / count over the window): how close
    # the engine's steps came to max_num_batched_tokens, the token-budget evidence.
    mean_tokens_per_step: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    # Waiting split by vLLM's reason (vllm:num_requests_waiting_by_reason): "capacity" is the
    # queue the scheduler could admit with more room, "deferred" is held back by something else.
    mean_waiting_capacity: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    mean_waiting_deferred: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    # Prompt tokens looked up in the prefix cache during the window and those it held; the hit
    # rate is their ratio (prefix_cache_hit_rate), so a node's rate weighs every replica's tokens.
    prefix_cache_queries: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    prefix_cache_hits: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    # Achieved work per GPU per second over the window, from vLLM's estimates (counters that
    # only count with --enable-mfu-metrics). None: not reported (counter absent, or it did not
    # rise while the point ran). A per-GPU rate, so a node takes the mean of its replicas'.
    flops_per_gpu_s: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    read_bytes_per_gpu_s: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    write_bytes_per_gpu_s: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    # Time requests spent waiting in the engine's queue, for the requests that finished in the
    # window (vllm:request_queue_time_seconds). The mean is exact (sum over count); the
    # percentiles are the upper bound of the histogram bucket the rank falls in, so they are
    # only as fine as vLLM's buckets (0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10 s, ...), and None when
    # the rank lies beyond the highest finite bound. A node's percentile is the highest
    # replica's, an upper bound of the node's own (a pooled percentile never exceeds the
    # largest of its parts').
    queue_time_requests: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    mean_queue_time_s: float | None = Field(default=None, json_schema_extra={"node": "mean"})
    queue_time_p50_s: float | None = Field(default=None, json_schema_extra={"node": "max"})
    queue_time_p90_s: float | None = Field(default=None, json_schema_extra={"node": "max"})
    queue_time_p99_s: float | None = Field(default=None, json_schema_extra={"node": "max"})
    # Seconds of the window each running count held while that replica had requests waiting
    # ({"4": 11.5, "3": 0.5}), from the step-held gauges: the share of queued time spent at
    # max_num_seqs, which ramp-up and drain cannot pull down as they pull down the mean. A
    # node's adds its replicas' seconds count by count, each replica's running read against
    # its own cap.
    running_while_waiting_s: dict[str, float] | None = Field(
        default=None, json_schema_extra={"node": "histogram"})
    # Speculative decoding over the window (vllm:spec_decode_*, only from an engine started with
    # --speculative-config; None from any other): drafts proposed, the draft tokens in them, the
    # tokens the target model accepted, and accepted tokens by draft position ({"0": 192, ...},
    # position "0" first). Counts, so a node adds its replicas' (positions one by one); the
    # rates below are ratios of the sums, weighing every replica's drafts.
    spec_drafts: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    spec_draft_tokens: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    spec_accepted_tokens: float | None = Field(default=None, json_schema_extra={"node": "sum"})
    spec_accepted_per_position: dict[str, float] | None = Field(
        default=None, json_schema_extra={"node": "histogram"})

    NODE_RULES: ClassVar[frozenset[str]] = frozenset({"sum", "max", "mean", "histogram"})

    @classmethod
    def node_rule(cls, name: str) -> str:
        """How a node combines its replicas' values of field `name`: "sum", "max" or "mean"."""
        extra = cls.model_fields[name].json_schema_extra
        rule = extra.get("node") if isinstance(extra, dict) else None
        if rule not in cls.NODE_RULES:
            raise ValueError(
                f"QueueSummary.{name} declares no node rule (one of {sorted(cls.NODE_RULES)})"
            )
        return str(rule)

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Hits over queries in the window (0-1); None when no prompt token was looked up."""
        if self.prefix_cache_hits is None or not self.prefix_cache_queries:
            return None
        return self.prefix_cache_hits / self.prefix_cache_queries

    @property
    def spec_acceptance_rate(self) -> float | None:
        """Accepted over draft tokens (0-1), as vLLM's SpecDecodingLogging computes its "Avg
        Draft acceptance rate"; None without speculative decoding or without a draft token."""
        if self.spec_accepted_tokens is None or not self.spec_draft_tokens:
            return None
        return self.spec_accepted_tokens / self.spec_draft_tokens

    @property
    def spec_mean_acceptance_length(self) -> float | None:
        """1 + accepted tokens per draft: the tokens one verification step yields, the bonus
        token included (vLLM's "Mean acceptance length"); None without a draft."""
        if self.spec_accepted_tokens is None or not self.spec_drafts:
            return None
        return 1 + self.spec_accepted_tokens / self.spec_drafts

    @property
    def spec_acceptance_by_position(self) -> dict[str, float] | None:
        """Per draft position, the share of drafts whose token there was accepted (accepted at
        that position / drafts, vLLM's per-position acceptance rate); None without a draft."""
        if not self.spec_accepted_per_position or not self.spec_drafts:
            return None
        drafts = self.spec_drafts
        return {pos: count / drafts for pos, count in self.spec_accepted_per_position.items()}

    @property
    def memory_bytes_per_gpu_s(self) -> float | None:
        """Bytes read and written per GPU per second (vLLM's bandwidth estimate adds both)."""
        parts = [v for v in (self.read_bytes_per_gpu_s, self.write_bytes_per_gpu_s) if v]
        return sum(parts) if parts else None


# Where a point's telemetry came from: Headroom's own sampling (NVML, a dcgm-exporter page, a CPU
# engine's psutil), or an imported AIPerf run's scrape of a dcgm-exporter (aiperf-dcgm). Rows
# stored before a value was added keep reading: a value is only ever added.
TelemetrySource = Literal["nvml", "dcgm-exporter", "psutil", "aiperf-dcgm"]
# How a GPU's energy over the window was found: its energy counter's increase, or its power
# readings integrated (trapezoid) when it reports no counter.
EnergyMethod = Literal["counter", "power-integral"]


class TelemetrySample(Schema):
    """One reading of one device during a point (runner.measure.telemetry), on the point's clock.

    A GPU reading (gpu set: NVML's index, which is dcgm-exporter's `gpu` label) holds the GPU's
    gauges and its energy counter; a CPU reading (gpu None) holds the CPU time of one CPU
    engine replica's processes. A field the source did not report is None.
    """

    t: float
    replica: int = Field(default=0, ge=0)
    # Never negative: benchmarks.storage.columnar stores None as -1, so a -1 would read back as
    # None.
    gpu: int | None = Field(default=None, ge=0,
                            description="GPU index; None: a CPU-engine reading")
    utilization_pct: float | None = Field(default=None, description="GPU busy, 0-100")
    memory_used_mib: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    energy_j: float | None = Field(default=None, description="energy counter, J (running total)")
    cpu_seconds: float | None = Field(
        default=None, description="user + system CPU seconds of the processes (running total)"
    )


class GpuTelemetry(Schema):
    """One GPU over the point's window."""

    gpu: int
    replica: int = 0
    samples: int = Field(default=0, description="readings inside the window")
    mean_utilization_pct: float | None = None
    mean_memory_used_mib: float | None = None
    peak_memory_used_mib: float | None = None
    mean_power_w: float | None = None
    peak_power_w: float | None = None
    mean_sm_clock_mhz: float | None = None
    energy_j: float | None = None
    energy_method: EnergyMethod | None = None
    energy_note: str | None = Field(default=None, description="why there is no energy figure")


class CpuTelemetry(Schema):
    """One CPU engine replica's processes over the point's window (CPU, never a GPU)."""

    replica: int = 0
    samples: int = 0
    cpu_seconds: float | None = None
    mean_cores_busy: float | None = Field(default=None, description="CPU seconds / window s")


class TelemetrySummary(Schema):
    """What the hardware did during the point's window
    (runner.measure.telemetry_summary.summarize_telemetry).

    Energy is per GPU over exactly the client window; the point's figures need every sampled
    GPU's energy (a node's energy is all of its GPUs'). `notes` say plainly what was not taken
    and why; a point without a source has no figures at all, never estimated ones.
    """

    source: TelemetrySource | None = None
    window_s: float | None = None
    samples: int = Field(default=0, description="readings taken, inside the window or not")
    gpus: list[GpuTelemetry] = Field(default_factory=list)
    cpu: list[CpuTelemetry] = Field(default_factory=list)
    # Over the GPUs: utilization averaged, power summed (the node's draw), the highest GPU peak.
    mean_utilization_pct: float | None = None
    mean_power_w: float | None = None
    peak_power_w: float | None = None
    energy_j: float | None = None
    energy_method: EnergyMethod | Literal["mixed"] | None = None
    joules_per_output_token: float | None = None
    output_tokens_per_joule: float | None = None
    cpu_seconds: float | None = None
    mean_cores_busy: float | None = None
    notes: list[str] = Field(default_factory=list)
