"""What a plan asks for: the workload, the load, the client, the quality check, the sweep."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import (
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from runner.schema.base import Schema
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.flags import check_adapter_name, check_code_loading, check_goodput, lora_modules
from runner.schema.search_record import SearchSpec

WorkloadKind = Literal["case_study", "random", "dataset", "trace", "lengths", "conversation"]
Endpoint = Literal["completions", "chat"]
# The kinds whose prompts are read from a file in the data directory (runner.workloads.prompts
# dataset_file); trace and lengths prompts are token ids (runner.workloads.traces); conversation
# turns are chat messages (runner.workloads.conversations).
FILE_KINDS: Final = ("dataset", "trace", "lengths", "conversation")
TOKEN_ID_KINDS: Final = ("trace", "lengths")
TraceFormat = Literal["auto", "mooncake", "burstgpt", "csv"]
# What a trace workload does when a load would replay fewer of its requests than it holds.
TraceLonger = Literal["truncate", "refuse"]
# Mooncake's convention: each hash id stands for one block of 512 prompt tokens (vLLM's
# timed-trace reader calls it --timed-trace-chunk-hash-size: 512 for the Moonshot traces).
MOONCAKE_BLOCK_TOKENS: Final = 512
# Output parity keeps the text of this many responses (request indices 0..N-1) beside every
# response's token ids: enough to read what the model said, bounded at OUTPUT_TEXT_MAX_CHARS.
OUTPUT_TEXTS_KEPT: Final = 4
OUTPUT_TEXT_MAX_CHARS: Final = 2000


class LoraShare(Schema):
    """One LoRA adapter of a workload's split and its weight (inference-perf's
    lora_traffic_split entry: the adapter's name and its share of the requests)."""

    name: str
    weight: float = Field(gt=0)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        return check_adapter_name(name)

    @field_validator("weight")
    @classmethod
    def _finite(cls, weight: float) -> float:
        if not math.isfinite(weight):
            raise ValueError(f"a LoRA weight must be a finite number > 0, got {weight!r}")
        return weight


def parse_lora_split(text: str) -> list[LoraShare]:
    """'sql-lora:3 chat-lora:1' (NAME:WEIGHT, space-separated, as --goodput's KEY:VALUE) as
    the split's shares; ValueError says which part is wrong. An adapter name has no ':'."""
    shares = []
    for part in text.split():
        name, colon, weight = part.rpartition(":")
        if not colon or not name:
            raise ValueError(f"{part!r} is not NAME:WEIGHT, e.g. sql-lora:3")
        try:
            value = float(weight)
        except ValueError:
            raise ValueError(f"{part!r}: the weight {weight!r} is not a number") from None
        try:
            shares.append(LoraShare(name=name, weight=value))
        except ValidationError as exc:
            detail = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ValueError(f"{part!r}: {detail}") from None
    names = [share.name for share in shares]
    if len(set(names)) != len(names):
        raise ValueError(f"an adapter is named twice: {' '.join(names)}")
    split_fractions(shares)  # the arithmetic the run will do, checked before it starts
    return shares


def split_fractions(shares: Sequence[LoraShare]) -> list[float]:
    """Each adapter's fraction of the requests, weight / total (runner.workloads.lora_split splits a
    point's requests by them). ValueError when the weights do not add up to a finite number:
    1e308 twice overflows, and a run would only find out after its engine started."""
    try:
        total = math.fsum(share.weight for share in shares)
    except OverflowError:  # fsum's intermediate overflow
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("the LoRA weights must add up to a finite number: give them as "
                         "ratios, e.g. sql-lora:3 chat-lora:1")
    return [share.weight / total for share in shares]


def lora_split_text(shares: list[LoraShare]) -> str:
    """The split as parse_lora_split reads it back."""
    return " ".join(f"{share.name}:{share.weight:g}" for share in shares)


def unserved_adapters(shares: list[LoraShare], configs: list[EngineConfig]) -> str | None:
    """Why an engine that Headroom starts would 404 part of the split: a config whose
    --lora-modules lack one of its adapters; None when every config serves every one."""
    wanted = [share.name for share in shares]
    for config in configs:
        served = {name for name, _ in lora_modules(config.extra_args)}
        missing = [name for name in wanted if name not in served]
        if missing:
            return (f"the LoRA split names {', '.join(missing)}, which engine config "
                    f"{config.label()} does not serve: add --enable-lora --lora-modules "
                    "NAME=PATH for each")
    return None


class WorkloadSpec(Schema):
    """What every request sends.

    kind "trace" replays a request trace (Mooncake JSONL, BurstGPT CSV, or a CSV of
    timestamp_s,input_tokens,output_tokens; runner.workloads.traces): each request gets the
    trace's input length as a token-id prompt (requests sharing Mooncake hash ids share those
    prompt blocks, so the prefix cache sees the trace's reuse) and the trace's output length as
    its max_tokens. The trace is a workload kind because the file decides what is sent (lengths,
    shared prefixes, request order) and is read once per plan, like a dataset; its arrival
    times are replayed by the load shape "trace" (LoadSpec.speed), so one plan can sweep the
    replay speed as load levels, or send the trace's requests as a burst or a closed loop.
    kind "lengths" draws prompts and max_tokens from a request log's (input, output) token
    counts (CSV or JSONL, no text), reproducing its distribution with the seed.

    For trace and lengths the input range and output_tokens are not used: every request's
    lengths come from the file. Both send token ids, so they need the completions endpoint
    (a chat template takes text, and re-tokenized text would not keep the lengths or the
    shared blocks), as vLLM's timed-trace benchmark does.

    lora_split spreads the requests over named LoRA adapters by weight: each request's `model`
    field names its adapter (runner.workloads.lora_split: the point's N requests split by largest
    remainder, in an order shuffled with the seed), and its record keeps the name, so every
    adapter's figures come from the stored requests. Empty: every request asks for the served
    model.

    kind "conversation" replays a multi-turn JSONL file (ShareGPT or OpenAI messages style;
    runner.workloads.conversations) turn by turn on the chat endpoint: each turn sends the
    conversation so far, with the model's own replies from this run, then the next user
    message, so the prefix cache sees what it sees in production. A request is one turn
    (num_requests counts turns); the input range is not used (the history decides each prompt's
    length).
    """

    kind: WorkloadKind = "case_study"
    input_tokens_min: int = Field(default=63, gt=0)
    input_tokens_max: int = Field(default=66, gt=0)
    output_tokens: int = Field(default=256, gt=0)
    temperature: float = Field(default=0.0, ge=0)
    ignore_eos: bool = True
    endpoint: Endpoint = "completions"
    stream: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)
    dataset_path: str | None = Field(
        default=None, description="dataset, trace or length log: a file in the data directory"
    )
    seed: int = 0
    trace_format: TraceFormat = Field(
        default="auto", description="trace file format; auto: from its first line"
    )
    trace_span_s: float | None = Field(
        default=None, description="replay only the trace's first this many seconds (trace time)"
    )
    trace_longer: TraceLonger = Field(
        default="truncate",
        description="a load with fewer requests than the trace: replay its first ones (with a "
        "note on the point) or refuse the plan",
    )
    trace_block_tokens: int = Field(
        default=MOONCAKE_BLOCK_TOKENS, gt=0, description="prompt tokens per Mooncake hash id"
    )
    conversation_turns_max: int | None = Field(
        default=None, gt=0,
        description="conversation workload: replay at most this many user turns of each "
        "conversation; None: all of them",
    )
    keep_outputs: bool = Field(
        default=False,
        description="output parity: ask for each response's token ids (return_token_ids) and "
        "keep them, with a digest of the prompt's, so two points can be compared output by "
        "output; temperature 0 only",
    )
    lora_split: list[LoraShare] = Field(
        default_factory=list,
        description="LoRA adapters the requests are spread over, with weights; empty: none",
    )

    @field_validator("trace_span_s")
    @classmethod
    def _span_is_positive(cls, span: float | None) -> float | None:
        if span is not None and not (math.isfinite(span) and span > 0):
            raise ValueError(f"trace_span_s must be a finite number of seconds > 0, got {span!r}")
        return span

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        if self.input_tokens_max < self.input_tokens_min:
            raise ValueError("input_tokens_max must be >= input_tokens_min")
        if self.kind == "dataset" and not self.dataset_path:
            raise ValueError("a dataset workload needs dataset_path (a JSONL file)")
        if self.kind == "trace" and not self.dataset_path:
            raise ValueError("a trace workload needs dataset_path (the trace file)")
        if self.kind == "lengths" and not self.dataset_path:
            raise ValueError("a lengths workload needs dataset_path (the request log)")
        self._check_conversation()
        self._check_lora_split()
        if self.kind in TOKEN_ID_KINDS and self.endpoint != "completions":
            raise ValueError(
                f"a {self.kind} workload sends token-id prompts: use the completions endpoint "
                "(a chat template takes text, which would not keep the lengths)"
            )
        trace_only = {
            name: getattr(self, name)
            for name in ("trace_format", "trace_span_s", "trace_longer", "trace_block_tokens")
            if getattr(self, name) != type(self).model_fields[name].default
        }
        if self.keep_outputs and self.temperature != 0:
            raise ValueError(
                "keep_outputs compares outputs between points, which only means something at "
                f"temperature 0 (greedy decoding); this workload samples at {self.temperature}"
            )
        if trace_only and self.kind != "trace":
            raise ValueError(
                f"{', '.join(trace_only)} only apply to a trace workload (kind {self.kind!r})"
            )
        return self

    def _check_lora_split(self) -> None:
        names = [share.name for share in self.lora_split]
        if len(set(names)) != len(names):
            raise ValueError(f"lora_split names an adapter twice: {names}")
        split_fractions(self.lora_split)
        if names and self.kind == "conversation":
            raise ValueError(
                "a conversation's turns must reach one model; a LoRA split assigns requests "
                "one by one, so it does not apply to a conversation workload"
            )

    def _check_conversation(self) -> None:
        if self.kind != "conversation":
            if self.conversation_turns_max is not None:
                raise ValueError(
                    f"conversation_turns_max only applies to a conversation workload (kind "
                    f"{self.kind!r})"
                )
            return
        if not self.dataset_path:
            raise ValueError("a conversation workload needs dataset_path (a JSONL file of "
                             "conversations)")
        if self.endpoint != "chat":
            raise ValueError(
                "a conversation workload sends each turn as chat messages (the conversation so "
                "far, then the next user message): use the chat endpoint"
            )

    def spec_label(self) -> str:
        """The input/output spec that decides whether two results are comparable."""
        if self.kind == "conversation":
            turns = (f", at most {self.conversation_turns_max} turns"
                     if self.conversation_turns_max else "")
            return f"conversations {self.dataset_path}{turns} / {self.output_tokens} out"
        if self.kind == "trace":
            return f"trace {self.dataset_path}"
        if self.kind == "lengths":
            return f"lengths of {self.dataset_path}"
        return f"{self.input_tokens_min}-{self.input_tokens_max} in / {self.output_tokens} out"


LoadShape = Literal["burst", "concurrency", "rate", "trace"]


class LoadSpec(Schema):
    """How requests arrive: all at once, a closed loop of C in flight, an open-loop rate, or
    the arrival times of a trace workload (WorkloadSpec kind "trace") divided by `speed`.

    A trace load sends the trace's first num_requests requests (runner.workloads.traces says how a
    longer trace is truncated or refused), request i at (its trace time - the first one's) /
    speed: speed 2 replays the trace twice as fast.

    JSON has no infinity, so an infinite burstiness is written as the string "inf" (pydantic
    would write null, and PostgreSQL's jsonb refuses Python's `Infinity`); "inf" reads back as
    float("inf").
    """

    shape: LoadShape = "burst"
    num_requests: int = Field(gt=0)
    concurrency: int | None = Field(default=None, gt=0)
    rate: float | None = Field(default=None, description="requests/s, open loop; finite, > 0")
    burstiness: float = Field(
        default=1.0, description="gamma shape > 0; 1.0 = Poisson, inf = evenly spaced"
    )
    # A rate or burst with at most this many requests in flight, as `vllm bench serve
    # --max-concurrency`: a request waits for a slot, and its latency counts from when it went.
    max_concurrency: int | None = Field(default=None, gt=0)
    speed: float = Field(
        default=1.0, description="trace load: the replay speed, 2 = twice as fast; finite, > 0"
    )

    @field_validator("speed")
    @classmethod
    def _speed_is_positive(cls, speed: float) -> float:
        if not (math.isfinite(speed) and speed > 0):
            raise ValueError(
                f"speed must be a finite factor > 0 (2 replays a trace twice as fast), got "
                f"{speed!r}"
            )
        return speed

    @field_validator("rate")
    @classmethod
    def _rate_is_positive(cls, rate: float | None) -> float | None:
        # An infinite rate is vLLM's burst; here that is shape "burst", with zeros for offsets.
        if rate is not None and not (math.isfinite(rate) and rate > 0):
            raise ValueError(
                f"rate must be a finite number of requests/s > 0 (for all requests at once "
                f"use shape 'burst'), got {rate!r}"
            )
        return rate

    @field_validator("burstiness")
    @classmethod
    def _burstiness_is_positive(cls, burstiness: float) -> float:
        if math.isnan(burstiness) or burstiness <= 0:
            raise ValueError(
                f"burstiness must be a gamma shape > 0 (1.0 = Poisson, inf = evenly spaced), "
                f"got {burstiness!r}"
            )
        return burstiness

    @field_serializer("burstiness", when_used="json")
    def _burstiness_to_json(self, burstiness: float) -> float | str:
        return "inf" if math.isinf(burstiness) else burstiness

    @model_validator(mode="after")
    def _shape_needs(self) -> LoadSpec:
        if self.shape == "concurrency" and self.concurrency is None:
            raise ValueError("a concurrency load needs concurrency")
        if self.shape == "concurrency" and self.max_concurrency is not None:
            raise ValueError(
                "max_concurrency caps a burst or rate load; a concurrency load sets its "
                "requests in flight with concurrency"
            )
        if self.shape == "rate" and self.rate is None:
            raise ValueError("a rate load needs rate (requests/s)")
        if self.shape != "trace" and self.speed != 1.0:
            raise ValueError(f"speed replays a trace; a {self.shape} load has no trace times")
        if self.shape == "trace" and (self.rate is not None or self.concurrency is not None):
            raise ValueError(
                "a trace load sends at the trace's own times: it takes speed (and "
                "max_concurrency), not rate or concurrency"
            )
        return self

    def label(self) -> str:
        """e.g. 'rate 4.0/s x 100 burstiness 0.5 (max 8 in flight)'; in point keys and charts."""
        cap = f" (max {self.max_concurrency} in flight)" if self.max_concurrency else ""
        if self.shape == "burst":
            return f"burst {self.num_requests}{cap}"
        if self.shape == "concurrency":
            return f"concurrency {self.concurrency} x {self.num_requests}"
        if self.shape == "trace":
            return f"trace x{self.speed:g} x {self.num_requests}{cap}"
        # Poisson (burstiness 1) is the usual case and keeps its short name; any other shape
        # is part of the key, so two loads that differ only in burstiness are two points.
        shape = "" if self.burstiness == 1.0 else f" burstiness {self.burstiness:g}"
        return f"rate {self.rate}/s x {self.num_requests}{shape}{cap}"

    def offered_concurrency(self) -> float:
        """How many requests the client can have in flight at most; orders load levels."""
        if self.shape == "concurrency":
            return float(self.concurrency or 0)
        if self.max_concurrency is not None:
            return float(min(self.num_requests, self.max_concurrency))
        return float(self.num_requests)


# The longest idle nap a client may take (ClientSpec.idle_nap_us): each stamp can be late by it.
IDLE_NAP_MAX_US: Final = 1000


class ClientSpec(Schema):
    processes: int = Field(default=1, gt=0)
    request_timeout_s: float = Field(default=600, gt=0)
    # A request that sends nothing for this long is cut off as stalled, even inside its timeout.
    stall_timeout_s: float = Field(default=60, gt=0)
    # Linux CPU numbers the client worker processes run on: worker w on cpus[w % len(cpus)].
    # Keep them off the cores of the server being measured: a client the scheduler wakes on the
    # server's core waits for it, and its arrival stamps are late (docs/performance.md, "Client").
    # Empty: wherever the scheduler puts them. Set, the load never runs in the caller's process.
    cpus: list[int] = Field(default_factory=list)
    # While responses stream, a client loop pass that found nothing sleeps this long instead of
    # blocking in epoll_wait, so the server's writes need not wake the client; every arrival
    # stamp can then be late by up to one nap plus timer slack (docs/performance.md, "The idle
    # nap"). 0: off, the loop blocks (stamps as early as the loop can take them).
    idle_nap_us: float = Field(default=0, ge=0, le=IDLE_NAP_MAX_US)

    @field_validator("cpus")
    @classmethod
    def _distinct_cpus(cls, cpus: list[int]) -> list[int]:
        if any(cpu < 0 for cpu in cpus) or len(set(cpus)) != len(cpus):
            raise ValueError(f"cpus must be distinct CPU numbers >= 0, got {cpus}")
        return cpus


QualityRule = Literal["exact", "contains"]
# A quality set is a small check beside a point, not a benchmark of its own: its items are sent
# one at a time after the point's window, so 200 of them stay a few minutes on a GPU.
QUALITY_MAX_ITEMS: Final = 200
QUALITY_MAX_TOKENS: Final = 64
# Answers and expected texts are stored cut to this many characters: the rows are for reading.
QUALITY_EXCERPT_CHARS: Final = 500


class QualitySpec(Schema):
    """An optional small evaluation file scored beside every point (runner.measure.quality).

    A JSONL file, one item a line: {"prompt": ..., "expected": ..., "rule": "exact" |
    "contains", "max_tokens": N}; rule defaults to exact, max_tokens to this spec's. It is named
    as a dataset is (runner.workloads.prompts.dataset_file: relative to the node's data directory
    for a plan from the dashboard) and read before any engine starts.
    """

    path: str = Field(min_length=1, description="JSONL file of at most 200 items, in the data "
                      "directory")
    max_tokens: int = Field(
        default=QUALITY_MAX_TOKENS, gt=0, description="an item's answer limit unless it sets one"
    )


# Seconds between /metrics scrapes unless a plan says: 0.5 s for GPU points of minutes; 0.1 s
# on a CPU engine, whose tiny-model bursts last about a second, so that a queue cannot fill
# and drain between two samples (the verdict would be "unclear (sparse samples)").
SAMPLE_INTERVAL_S: Final = 0.5
CPU_ENGINE_SAMPLE_INTERVAL_S: Final = 0.1


def default_sample_interval(style: str) -> float:
    return CPU_ENGINE_SAMPLE_INTERVAL_S if style == "cpu" else SAMPLE_INTERVAL_S


# A deciding level's draws in convergence mode: beyond this the host is too noisy for the
# tolerance asked, and the page's interval says so.
MAX_CONVERGE_REPEATS = 20
# At most this many extra draws of one disturbed point: a host busy for longer than that is busy,
# and the point is kept with its caveat rather than measured on and on.
MAX_REDRAWS = 3


def default_end_control(style: str) -> bool:
    """The end control costs one engine start more: about a minute on a CPU engine, which serves
    only tiny checkpoints, and up to many minutes of loading and compiling a GPU-sized one."""
    return style == "cpu"


class StabilitySpec(Schema):
    """What a sweep does about a noisy host (runner.measure.host_cpu, runner.sweep)."""

    # Extra draws of a point that other processes disturbed (HostCpu.disturbed); 0: none.
    redraw_disturbed: int = Field(default=1, ge=0, le=MAX_REDRAWS)
    # Each engine config's first load level measured again after its last one, on the same
    # engine (no extra start): the drift over the config's points. Only for two or more levels.
    control_point: bool = True
    # The first config's first load level measured once more after the last config, on a fresh
    # start of that config's engine: the drift over the whole sweep, across engine starts. For a
    # grid of two or more configs, or a search (whose end control is its answer point again after
    # its last point), on engines the sweep starts (not attach).
    # A plan that leaves it unset takes default_end_control(launch style) (SweepPlan fills it in).
    end_control: bool = False
    # Convergence (runner.convergence): after a config's repeats, its deciding levels (the knee's
    # operating point and its neighbours) are measured again, a round at a time, until their 95%
    # interval is within +/- this percent or each has max_repeats draws; None: off.
    converge_pct: float | None = Field(default=None, gt=0, lt=100, allow_inf_nan=False)
    max_repeats: int = Field(default=5, ge=1, le=MAX_CONVERGE_REPEATS)


def _launch_style(data: dict[str, Any]) -> str:
    """The launch style of a plan not yet validated (its default when the plan names none)."""
    launch = data.get("launch")
    if isinstance(launch, EngineLaunch):
        return launch.style
    style = (launch or {}).get("style", EngineLaunch.model_fields["style"].default)
    return str(style)


class SweepPlan(Schema):
    """engine configs x load levels x repeats on one checkpoint and workload."""

    name: str = "sweep"
    checkpoint: Checkpoint
    launch: EngineLaunch = Field(default_factory=EngineLaunch)
    engine_configs: list[EngineConfig] = Field(min_length=1)
    loads: list[LoadSpec] = Field(min_length=1)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    client: ClientSpec = Field(default_factory=ClientSpec)
    repeats: int = Field(default=1, gt=0)
    replicas: int = Field(default=1, gt=0)
    warmup_requests: int = Field(default=0, ge=0)
    # Default: default_sample_interval(launch.style), filled in by _sample_interval_for_launch.
    sample_interval_s: float = Field(default=SAMPLE_INTERVAL_S, gt=0)
    # Goodput SLOs in ms, as `vllm bench serve --goodput ttft:MS tpot:MS e2el:MS`.
    goodput: dict[str, float] = Field(default_factory=dict)
    # A small evaluation file scored beside every point; None: none.
    quality: QualitySpec | None = None
    # An adaptive sweep (runner.search): engine_configs and loads are its candidates and
    # repeats the most one point gets; None: every point of the grid, as listed.
    search: SearchSpec | None = None
    stability: StabilitySpec = Field(default_factory=StabilitySpec)

    @field_validator("goodput")
    @classmethod
    def _known_slos(cls, slos: dict[str, float]) -> dict[str, float]:
        return check_goodput(slos)

    @model_validator(mode="before")
    @classmethod
    def _sample_interval_for_launch(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("sample_interval_s") is not None:
            return data
        return {**data, "sample_interval_s": default_sample_interval(_launch_style(data))}

    @model_validator(mode="before")
    @classmethod
    def _end_control_for_launch(cls, data: Any) -> Any:
        """stability.end_control where the plan leaves it unset, by the launch's style: the
        plan then records it, so a run launched again repeats it."""
        if not isinstance(data, dict):
            return data
        stability = data.get("stability")
        default = default_end_control(_launch_style(data))
        if isinstance(stability, StabilitySpec):
            if "end_control" in stability.model_fields_set:
                return data
            stability = stability.model_copy(update={"end_control": default})
        elif stability is None:
            stability = {"end_control": default}
        elif isinstance(stability, dict) and "end_control" not in stability:
            stability = {**stability, "end_control": default}
        else:
            return data  # set, or not a mapping (which validation refuses)
        return {**data, "stability": stability}

    @property
    def has_end_control(self) -> bool:
        """Whether the sweep ends with the end control (StabilitySpec.end_control): a grid of
        two or more configs, or a search, on engines it starts; an attached server is never
        restarted."""
        return (self.stability.end_control
                and (self.search is not None or len(self.engine_configs) > 1)
                and self.launch.style != "attach")

    @model_validator(mode="after")
    def _code_loading_needs_trust(self) -> SweepPlan:
        for config in self.engine_configs:
            check_code_loading(config.extra_args, trusted=self.checkpoint.trusted)
        return self

    @model_validator(mode="after")
    def _lora_split_is_served(self) -> SweepPlan:
        """An engine Headroom starts must serve every adapter of the split (--lora-modules);
        an attached server's adapters are its own and are not known here."""
        if self.launch.style == "attach":
            return self
        problem = unserved_adapters(self.workload.lora_split, self.engine_configs)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _a_search_converges_on_its_own(self) -> SweepPlan:
        if self.search is not None and self.stability.converge_pct is not None:
            raise ValueError("an adaptive search repeats the points that decide its answer "
                             "itself: leave stability.converge_pct unset")
        return self

    @model_validator(mode="after")
    def _trace_loads_need_a_trace(self) -> SweepPlan:
        if self.workload.kind != "trace" and any(load.shape == "trace" for load in self.loads):
            raise ValueError(
                "a trace load replays a trace workload's arrival times: set workload kind "
                "'trace' with the trace file"
            )
        return self
