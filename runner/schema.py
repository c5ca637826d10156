"""The versioned result schema: what a plan asks for and what a measured point holds.

Everything the runner writes, and everything the dashboard stores, goes through these pydantic
models, so a result file is validated when it is read (`PointResult.model_validate_json`).
`docs/result-schema.md` documents every field; bump SCHEMA_VERSION on any incompatible change.

Times inside a point are seconds on the host's monotonic clock relative to the point's start
(`PointResult.t0_monotonic`), so requests from several client processes and the engine samples
line up on one clock.
"""

from __future__ import annotations

import array
import contextlib
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import core_schema

SCHEMA_VERSION: Final = "headroom.result/1"

REVISION_RE = re.compile(r"^[0-9a-f]{40}$")

# Engine flags that Headroom sets through named fields; passing them again as extra flags would
# make the stored config lie about what ran.
NAMED_ENGINE_FLAGS = {
    "--model",
    "--revision",
    "--served-model-name",
    "--port",
    "--host",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--max-model-len",
    "--block-size",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--tensor-parallel-size",
    "--stream-interval",
    "--num-gpu-blocks-override",
}

# Extra flags a user may add, each with the values it takes in vLLM 0.32's argparser: 0 (a
# switch), 1, or "+" (one or more). A flag outside this list is refused before any engine starts,
# so a typo costs a clear message instead of a minute of engine start-up and a log to read.
# tests/runner/test_engine_flags.py checks every entry against vLLM's own parser.
# --swap-space, --disable-log-requests, --cuda-graph-sizes, --max-num-partial-prefills and
# --calculate-kv-scales no longer exist there; use --no-enable-log-requests and
# --cudagraph-capture-sizes / --max-cudagraph-capture-size instead.
FlagValues = Literal[0, 1, "+"]
ALLOWED_EXTRA_FLAGS: dict[str, FlagValues] = {
    "--dtype": 1,
    "--quantization": 1,
    "--seed": 1,
    "--enforce-eager": 0,
    "--long-prefill-token-threshold": 1,
    "--scheduling-policy": 1,
    "--enable-chunked-prefill": 0,
    "--no-enable-chunked-prefill": 0,
    "--async-scheduling": 0,
    "--no-async-scheduling": 0,
    "--cudagraph-capture-sizes": "+",
    "--max-cudagraph-capture-size": 1,
    "--compilation-config": 1,
    "--pipeline-parallel-size": 1,
    "--data-parallel-size": 1,
    "--enable-expert-parallel": 0,
    "--trust-remote-code": 0,
    "--generation-config": 1,
    "--override-generation-config": 1,
    "--tokenizer": 1,
    "--tokenizer-mode": 1,
    "--chat-template": 1,
    "--reasoning-parser": 1,
    "--enable-log-requests": 0,
    "--no-enable-log-requests": 0,
    "--disable-uvicorn-access-log": 0,
    "--uvicorn-log-level": 1,
    "--load-format": 1,
    "--limit-mm-per-prompt": 1,
    "--max-logprobs": 1,
    "--cpu-offload-gb": 1,
}

# Allowed flags that load code or read files on the node, with the worker's rights there; only a
# checkpoint an administrator marked trusted may use them (Checkpoint.trusted):
# - --trust-remote-code runs the Python files of the model repo;
# - --tokenizer loads another repo or folder (its code too, with --trust-remote-code);
# - --chat-template and --generation-config read a file or folder named by the user;
# - --compilation-config imports a backend by its qualified name and reads and writes its
#   cache_dir and debug_dump_path;
# - --load-format picks how weight files are deserialized, and some formats (tensorizer,
#   runai_streamer, plugins) read from elsewhere than the checkpoint.
CODE_LOADING_FLAGS = frozenset(
    {
        "--trust-remote-code",
        "--tokenizer",
        "--chat-template",
        "--generation-config",
        "--compilation-config",
        "--load-format",
    }
)

# vLLM 0.32's KV-cache dtypes (CacheDType in vllm/config/cache.py): another name makes the engine
# refuse to start, so it is refused here; tests/runner/test_engine_flags.py compares the lists.
KV_CACHE_DTYPES = (
    "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
    "nvfp4_ds_mla", "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
    "turboquant_3bit_nc", "ultraquant_4bit", "int4_per_token_head", "int8_per_token_head",
    "fp8_per_token_head", "nvfp4", "nvfp4_4over6",
)

# Environment variables a plan may set for its engines (EngineLaunch.env); any other is refused.
# Many variables run code or read files: LD_PRELOAD, PYTHONPATH, PATH, and vLLM's own
# VLLM_PLUGINS, VLLM_RUST_FRONTEND_PATH, VLLM_NCCL_SO_PATH, VLLM_LOGGING_CONFIG_PATH,
# VLLM_ALLOW_INSECURE_SERIALIZATION..., so this is a list of names, not a prefix.
# CUDA_VISIBLE_DEVICES is not here: the runner sets it from launch.gpus, one block per replica.
ALLOWED_LAUNCH_ENV = frozenset(
    {
        "HF_HUB_OFFLINE",
        "HF_TOKEN",  # gated hub models
        "TOKENIZERS_PARALLELISM",
        "OMP_NUM_THREADS",
        "PYTORCH_CUDA_ALLOC_CONF",
        "NCCL_DEBUG",
        "VLLM_LOGGING_LEVEL",
        "VLLM_NO_USAGE_STATS",
        "VLLM_DO_NOT_TRACK",
        "VLLM_ENGINE_READY_TIMEOUT_S",
        "VLLM_WORKER_MULTIPROC_METHOD",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
        "VLLM_CPU_KVCACHE_SPACE",
        "VLLM_CPU_OMP_THREADS_BIND",
    }
)

# A Hugging Face hub repo id's parts (org and name): letters, digits, '-', '_' and '.', at most 96
# characters, not starting or ending with '-' or '.', no '--' or '..' inside (the hub's rules).
HUB_NAME_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
CONTROL_CHARS_RE = re.compile(r"[\x00-\x1f\x7f]")


def check_command_value(value: str, what: str) -> str:
    """The value, or ValueError when a command line would read it as a flag (or cannot hold it).

    For values Headroom puts on vLLM's or docker's command line itself: the model, the served
    name, the image.
    """
    if value.startswith("-"):
        raise ValueError(f"{what} {value!r} starts with '-': vLLM would read it as a flag")
    if CONTROL_CHARS_RE.search(value):
        raise ValueError(f"{what} {value!r} contains control characters")
    return value


def is_hub_repo_id(text: str) -> bool:
    """Whether `text` is spelled as a hub repo id, org/name (it may still be a local folder)."""
    parts = text.split("/")
    return len(parts) == 2 and all(
        HUB_NAME_RE.fullmatch(part) and "--" not in part and ".." not in part for part in parts
    )


def check_model_source(model: str, allowed_dirs: list[Path]) -> str:
    """The model, or ValueError unless it is a hub repo id or a path inside an allowed directory.

    vLLM loads a local folder whenever one exists under the name, even one spelled like a hub id
    (var/tiny-model), so such a name counts as a path here too. The path is resolved (symlinks
    and '..' followed) before it is compared. No allowed directories: no local model at all.
    """
    check_command_value(model, "model")
    path = Path(model)
    if is_hub_repo_id(model) and not path.exists():
        return model
    resolved = path.resolve()
    if any(resolved.is_relative_to(Path(directory).resolve()) for directory in allowed_dirs):
        return model
    where = ", ".join(str(directory) for directory in allowed_dirs) or "none are configured"
    raise ValueError(
        f"model {model!r} is neither a hub repo id (org/name) nor a path inside the model "
        f"directories allowed here ({where})"
    )


def engine_flag_name(token: str) -> str:
    """'--trust_remote_code=1' -> '--trust-remote-code': vLLM reads '_' in a flag's name as '-'."""
    return "--" + token[2:].split("=", 1)[0].replace("_", "-")


def code_loading_flags(args: list[str]) -> list[str]:
    """The flags among `args` that load code or read files on the node (CODE_LOADING_FLAGS)."""
    names = [engine_flag_name(arg) for arg in args if arg.startswith("--")]
    return [name for name in names if name in CODE_LOADING_FLAGS]


def check_code_loading(args: list[str], *, trusted: bool) -> list[str]:
    """The args, or ValueError naming each code-loading flag when the checkpoint is not trusted."""
    found = code_loading_flags(args)
    if found and not trusted:
        raise ValueError(
            f"{', '.join(found)} can load code or read files on the node: allowed only with a "
            "checkpoint an administrator marked trusted"
        )
    return args


def check_extra_args(args: list[str], own_flags: set[str]) -> list[str]:
    """The args, or ValueError naming the first token that is not an allowed flag or its value.

    Every token is either `--flag`, `--flag=VALUE` or a value of the flag before it, as many as
    that flag takes in vLLM's parser. Short flags (`-tp 8`), a flag's value that starts with '-'
    unless written `--flag=VALUE`, and stray words are refused: vLLM would read each as
    something the stored config does not say (a setting, a flag, or the model).
    """
    flag = ""
    wanted: FlagValues | Literal["*"] = 0  # values the last flag still takes; "*": more optional
    for token in args:
        if token.startswith("-"):
            if wanted in (1, "+"):
                raise ValueError(f"{flag} needs a value (one starting with '-': {flag}=VALUE)")
            flag = _allowed_flag(token, own_flags)
            takes = ALLOWED_EXTRA_FLAGS[flag]
            if "=" in token and takes == 0:
                raise ValueError(f"{flag} is a switch: it takes no value")
            wanted = 0 if "=" in token else takes
        elif wanted == 0:
            raise ValueError(
                f"{token!r} is neither an engine flag (--name) nor a value of the flag before it"
            )
        else:
            wanted = "*" if wanted in ("+", "*") else 0
    if wanted in (1, "+"):
        raise ValueError(f"{flag} needs a value")
    return args


def _allowed_flag(token: str, own_flags: set[str]) -> str:
    if not token.startswith("--"):
        raise ValueError(
            f"{token}: short flags are not accepted (vLLM reads -tp 8 as --tensor-parallel-size "
            "8); use the long flag, or write a value starting with '-' as --flag=VALUE"
        )
    flag = engine_flag_name(token)
    if flag in NAMED_ENGINE_FLAGS or flag in own_flags:
        raise ValueError(f"{flag} has its own field in the engine config; set it there")
    if flag not in ALLOWED_EXTRA_FLAGS:
        raise ValueError(f"unknown engine flag {flag}")
    return flag


GOODPUT_METRICS = ("ttft", "tpot", "e2el")


def check_goodput(slos: dict[str, float]) -> dict[str, float]:
    """The SLOs as given, or ValueError naming the metric or value vLLM would refuse too."""
    for name, value in slos.items():
        if name not in GOODPUT_METRICS:
            raise ValueError(
                f"unknown goodput metric {name!r}: use {', '.join(GOODPUT_METRICS)} (ms)"
            )
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"goodput {name}: {value!r} ms must be a finite number >= 0")
    return slos


def parse_goodput(pairs: list[str]) -> dict[str, float]:
    """`["ttft:500", "e2el:20000"]` -> {"ttft": 500.0, "e2el": 20000.0}, as vLLM's --goodput.

    ValueError names the pair that is not KEY:MS, or the key or value check_goodput refuses.
    """
    slos: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        try:
            if not sep or not name:
                raise ValueError
            slos[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"expected KEY:MS such as ttft:500, got {pair!r}") from None
    return check_goodput(slos)


class Schema(BaseModel):
    # Unknown keys are refused: a foreign or misspelled file fails loudly instead of half-loading.
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------------------------
# What to run
# ---------------------------------------------------------------------------------------------


class Checkpoint(Schema):
    model: str = Field(min_length=1, description="Local path or hub repo id")
    revision: str | None = Field(
        default=None,
        description="40-hex hub commit; for a local folder, an id of its weights (optional)",
    )
    served_model_name: str | None = None
    precision: str | None = Field(default=None, description="e.g. bf16, fp8, NVFP4")
    trusted: bool = Field(
        default=False,
        description="code-loading engine flags (CODE_LOADING_FLAGS) may run with this checkpoint",
    )

    @field_validator("model", "served_model_name")
    @classmethod
    def _not_a_flag(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Both go on vLLM's command line as they are: `vllm serve MODEL` reads a model id that
        # starts with '-' as a flag, past the allow-list.
        return value if value is None else check_command_value(value, str(info.field_name))

    @field_validator("revision")
    @classmethod
    def _revision_is_commit(cls, value: str | None) -> str | None:
        if value is not None and not REVISION_RE.match(value):
            raise ValueError(
                f"revision must be a 40-hex commit id (a branch or tag can move), got {value!r}"
            )
        return value


@dataclass(frozen=True)
class EngineSetting:
    """One EngineConfig field as a CLI flag and a form field show it (EngineConfig.settings)."""

    name: str
    flag: str  # vLLM's own spelling of the field: --max-num-seqs
    kind: type  # int, float, str or bool
    description: str
    default: Any
    gt: float | None = None
    ge: float | None = None
    le: float | None = None

    @classmethod
    def of(cls, name: str, field: FieldInfo) -> EngineSetting:
        kinds = [arg for arg in get_args(field.annotation) if arg is not type(None)]
        kind = kinds[0] if kinds else field.annotation
        if not isinstance(kind, type):
            raise TypeError(f"EngineConfig.{name} is not one plain type: {field.annotation!r}")
        bounds: dict[str, float] = {}
        for constraint in field.metadata:
            for bound in ("gt", "ge", "le"):
                if getattr(constraint, bound, None) is not None:
                    bounds[bound] = getattr(constraint, bound)
        return cls(
            name=name,
            flag="--" + name.replace("_", "-"),
            kind=kind,
            description=field.description or "",
            default=field.default,
            **bounds,
        )


class EngineConfig(Schema):
    """One set of engine settings; a sweep restarts the engine for each.

    Every field but extra_args is a vLLM flag of the same name (`--max-num-seqs`): the runner's
    CLI flags and the launch form's fields are made from these definitions (`settings()`), so a
    setting added here is settable everywhere. `short` names it in labels and point keys; the
    field order is the label's order (tensor_parallel_size after the others keeps old keys).
    """

    max_num_seqs: int | None = Field(
        default=None,
        gt=0,
        description="most requests the engine runs at once; default: vLLM's, by GPU memory",
        json_schema_extra={"short": "seqs"},
    )
    max_num_batched_tokens: int | None = Field(
        default=None,
        gt=0,
        description="most tokens scheduled in one engine step; at least max_num_seqs",
        json_schema_extra={"short": "tokens"},
    )
    gpu_memory_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="share of GPU memory for weights and KV cache, e.g. 0.9",
        json_schema_extra={"short": "mem"},
    )
    kv_cache_dtype: str | None = Field(
        default=None,
        description="KV-cache dtype, e.g. fp8; default: the checkpoint's (auto)",
        json_schema_extra={"short": "kv"},
    )
    max_model_len: int | None = Field(
        default=None,
        gt=0,
        description="longest prompt plus output, in tokens",
        json_schema_extra={"short": "len"},
    )
    block_size: int | None = Field(
        default=None,
        gt=0,
        description="tokens per KV-cache block (16 on GPU by default)",
        json_schema_extra={"short": "block"},
    )
    enable_prefix_caching: bool | None = Field(
        default=None,
        description="reuse the KV cache of shared prompt prefixes; default: the engine's choice",
        json_schema_extra={"short": "prefix"},
    )
    stream_interval: int | None = Field(
        default=None,
        gt=0,
        description="tokens per streamed chunk (vLLM's per-chunk ITL then spans several tokens)",
        json_schema_extra={"short": "stream"},
    )
    num_gpu_blocks_override: int | None = Field(
        default=None,
        gt=0,
        description="KV-cache blocks to allocate instead of the profiled number (KV-bound tests)",
        json_schema_extra={"short": "blocks"},
    )
    tensor_parallel_size: int = Field(
        default=1,
        gt=0,
        description="GPUs each engine replica spans",
        json_schema_extra={"short": "tp"},
    )
    extra_args: list[str] = Field(default_factory=list)

    @classmethod
    def settings(cls) -> tuple[EngineSetting, ...]:
        """Every field but extra_args, in order: what a flag or a form field sets."""
        return tuple(
            EngineSetting.of(name, field)
            for name, field in cls.model_fields.items()
            if name != "extra_args"
        )

    @field_validator("extra_args")
    @classmethod
    def _known_flags_only(cls, args: list[str]) -> list[str]:
        # A bool setting is also turned off by its --no- flag (vLLM's BooleanOptionalAction).
        own_flags = {setting.flag for setting in cls.settings()}
        own_flags |= {f"--no-{s.flag[2:]}" for s in cls.settings() if s.kind is bool}
        return check_extra_args(args, own_flags)

    @field_validator("kv_cache_dtype")
    @classmethod
    def _known_kv_cache_dtype(cls, dtype: str | None) -> str | None:
        if dtype is not None and dtype not in KV_CACHE_DTYPES:
            raise ValueError(
                f"unknown KV-cache dtype {dtype!r}: vLLM takes {', '.join(KV_CACHE_DTYPES)}"
            )
        return dtype

    @model_validator(mode="after")
    def _batched_tokens_cover_seqs(self) -> EngineConfig:
        seqs, tokens = self.max_num_seqs, self.max_num_batched_tokens
        if seqs is not None and tokens is not None and tokens < seqs:
            raise ValueError(
                f"max_num_batched_tokens ({tokens}) must be >= max_num_seqs ({seqs}); "
                "vLLM refuses to start otherwise"
            )
        return self

    def label(self) -> str:
        """A short stable name, e.g. 'seqs=256,tokens=8192'; used in point keys and charts.

        Only settings that differ from their default are named, so a field added later leaves
        the keys of older points as they were.
        """
        parts = []
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if name == "extra_args" or value == field.default:
                continue
            extra = field.json_schema_extra
            short = extra.get("short", name) if isinstance(extra, dict) else name
            parts.append(f"{short}={value}")
        if self.extra_args:
            parts.append(" ".join(self.extra_args))
        return ",".join(parts) or "defaults"


LaunchStyle = Literal["cpu", "serve", "docker", "attach"]


class EngineLaunch(Schema):
    """How engines are started on this node. The same engine configs run under every style."""

    style: LaunchStyle = "cpu"
    image: str | None = Field(default=None, description="docker style: vllm/vllm-openai:TAG")
    base_url: str | None = Field(default=None, description="attach style: http://host:port")
    gpus: list[int] | None = Field(default=None, description="GPU indices for replicas")
    env: dict[str, str] = Field(default_factory=dict)
    startup_timeout_s: float = Field(default=600, gt=0)
    cpu_kvcache_space_gib: float = Field(default=1, gt=0)
    # The node's dcgm-exporter page, scraped for GPU telemetry when NVML cannot be used here.
    dcgm_exporter_url: str | None = Field(
        default=None, description="http(s)://host:9400/metrics of the node's dcgm-exporter"
    )

    @field_validator("dcgm_exporter_url")
    @classmethod
    def _plain_http_url(cls, url: str | None) -> str | None:
        # The plan is stored and downloadable: an address with a user name or password in it
        # would publish them. The URL itself is not repeated, in case it holds one.
        if url is None:
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("dcgm_exporter_url must be an http(s):// address with a host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("dcgm_exporter_url must not carry a user name or password")
        if CONTROL_CHARS_RE.search(url):
            raise ValueError("dcgm_exporter_url contains control characters")
        return url

    @field_validator("image")
    @classmethod
    def _image_not_a_flag(cls, image: str | None) -> str | None:
        return image if image is None else check_command_value(image, "image")

    @field_validator("env")
    @classmethod
    def _allowed_env_only(cls, env: dict[str, str]) -> dict[str, str]:
        refused = sorted(name for name in env if name not in ALLOWED_LAUNCH_ENV)
        if refused:
            raise ValueError(
                f"launch.env may not set {', '.join(refused)}: only "
                f"{', '.join(sorted(ALLOWED_LAUNCH_ENV))}"
            )
        return env

    @model_validator(mode="after")
    def _style_needs(self) -> EngineLaunch:
        if self.style == "docker" and not self.image:
            raise ValueError("docker launch style needs an image, e.g. vllm/vllm-openai:v0.11.0")
        if self.style == "attach" and not self.base_url:
            raise ValueError("attach launch style needs base_url of the running server")
        return self


WorkloadKind = Literal["case_study", "random", "dataset", "trace", "lengths", "conversation"]
Endpoint = Literal["completions", "chat"]
# The kinds whose prompts are read from a file in the data directory (runner.workloads
# dataset_file); trace and lengths prompts are token ids (runner.traces); conversation turns
# are chat messages (runner.conversations).
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


class WorkloadSpec(Schema):
    """What every request sends.

    kind "trace" replays a request trace (Mooncake JSONL, BurstGPT CSV, or a CSV of
    timestamp_s,input_tokens,output_tokens; runner.traces): each request gets the trace's input
    length as a token-id prompt (requests sharing Mooncake hash ids share those prompt blocks,
    so the prefix cache sees the trace's reuse) and the trace's output length as its
    max_tokens. The trace is a workload kind because the file decides what is sent (lengths,
    shared prefixes, request order) and is read once per plan, like a dataset; its arrival
    times are replayed by the load shape "trace" (LoadSpec.speed), so one plan can sweep the
    replay speed as load levels, or send the trace's requests as a burst or a closed loop.
    kind "lengths" draws prompts and max_tokens from a request log's (input, output) token
    counts (CSV or JSONL, no text), reproducing its distribution with the seed.

    For trace and lengths the input range and output_tokens are not used: every request's
    lengths come from the file. Both send token ids, so they need the completions endpoint
    (a chat template takes text, and re-tokenized text would not keep the lengths or the
    shared blocks), as vLLM's timed-trace benchmark does.

    kind "conversation" replays a multi-turn JSONL file (ShareGPT or OpenAI messages style;
    runner.conversations) turn by turn on the chat endpoint: each turn sends the conversation
    so far, with the model's own replies from this run, then the next user message, so the
    prefix cache sees what it sees in production. A request is one turn (num_requests counts
    turns); the input range is not used (the history decides each prompt's length).
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

    A trace load sends the trace's first num_requests requests (runner.traces says how a
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
    """An optional small evaluation file scored beside every point (runner.quality).

    A JSONL file, one item a line: {"prompt": ..., "expected": ..., "rule": "exact" |
    "contains", "max_tokens": N}; rule defaults to exact, max_tokens to this spec's. It is named
    as a dataset is (runner.workloads.dataset_file: relative to the node's data directory for a
    plan from the dashboard) and read before any engine starts.
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

    @field_validator("goodput")
    @classmethod
    def _known_slos(cls, slos: dict[str, float]) -> dict[str, float]:
        return check_goodput(slos)

    @model_validator(mode="before")
    @classmethod
    def _sample_interval_for_launch(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("sample_interval_s") is not None:
            return data
        launch = data.get("launch")
        style = (launch.style if isinstance(launch, EngineLaunch)
                 else (launch or {}).get("style", EngineLaunch.model_fields["style"].default))
        return {**data, "sample_interval_s": default_sample_interval(style)}

    @model_validator(mode="after")
    def _code_loading_needs_trust(self) -> SweepPlan:
        for config in self.engine_configs:
            check_code_loading(config.extra_args, trusted=self.checkpoint.trusted)
        return self

    @model_validator(mode="after")
    def _trace_loads_need_a_trace(self) -> SweepPlan:
        if self.workload.kind != "trace" and any(load.shape == "trace" for load in self.loads):
            raise ValueError(
                "a trace load replays a trace workload's arrival times: set workload kind "
                "'trace' with the trace file"
            )
        return self


# ---------------------------------------------------------------------------------------------
# What was measured
# ---------------------------------------------------------------------------------------------


class CompactArray(array.array):
    """A typed run of numbers held as one C array: the type of the ragged per-request fields.

    A point of 32,768 requests with 256 chunks each holds 8.4 million chunk times; as Python
    lists of floats that is about 32 bytes a value, as this 8 (4 for the int32 counts). The
    values pickle as raw bytes (client workers send records to the parent), numpy reads them
    without a copy (`np.frombuffer`), and result files and stored blobs keep them as flat
    little-endian arrays. Validation accepts a list, tuple, array or numpy array (files and
    tests write lists) and refuses anything that is not a number of the type; a record already
    holding the type keeps it as is, uncopied. It compares equal to a list or tuple of the same
    values, as the list it replaced did. JSON output is a plain list of numbers.

    A field annotated with a subclass is ragged: one array per request, of any length
    (`ragged_fields`), stored flat with per-request lengths by runner.results and
    benchmarks.storage without naming it.
    """

    TYPECODE: ClassVar[str]
    # numpy's little-endian dtype string for the values, as files and blobs store them.
    DTYPE: ClassVar[str]
    JSON_ITEMS: ClassVar[str]

    def __new__(cls, *args: Any) -> CompactArray:
        # array's own pickle reconstructor calls cls(typecode, data); everyone else, cls(values).
        if len(args) == 2 and args[0] == cls.TYPECODE:
            return super().__new__(cls, cls.TYPECODE, args[1])
        return super().__new__(cls, cls.TYPECODE, *args)

    @classmethod
    def coerce(cls, value: Any) -> CompactArray:
        """The value as this type; ValueError naming what is wrong with it."""
        if type(value) is cls:
            return value
        if isinstance(value, (str, bytes, bytearray)):
            raise ValueError(f"expected a list of {cls.JSON_ITEMS}s, got {type(value).__name__}")
        view = None
        if not isinstance(value, (list, tuple)):
            with contextlib.suppress(TypeError):  # not a buffer: any iterable of numbers
                view = memoryview(value)
        try:
            if view is not None and view.format == cls.TYPECODE and view.c_contiguous:
                return cls.from_native_bytes(view.cast("B"))  # numpy's or array's layout: one copy
            return cls(value)
        except (TypeError, OverflowError, ValueError) as exc:
            raise ValueError(f"expected a list of {cls.JSON_ITEMS}s: {exc}") from None

    @classmethod
    def from_native_bytes(cls, data: bytes | memoryview) -> CompactArray:
        """Values from a buffer in this host's own layout, copied once."""
        values = cls()
        values.frombytes(data)
        return values

    @classmethod
    def from_le_bytes(cls, data: bytes | memoryview) -> CompactArray:
        """Values from their little-endian bytes (the layout of files and blobs)."""
        values = cls.from_native_bytes(data)
        if sys.byteorder == "big":
            values.byteswap()
        return values

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and self.tolist() == list(other)
        return super().__eq__(other)

    __hash__ = None  # mutable, as the list it replaced

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tolist()!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.coerce,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _compact_serialized, info_arg=True
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {"type": "array", "items": {"type": cls.JSON_ITEMS}}


def _compact_serialized(value: CompactArray, info: Any) -> object:
    """JSON: a list of numbers; Python (model_dump): the array itself, compact."""
    return value.tolist() if info.mode_is_json() else value


class Float64Array(CompactArray):
    TYPECODE = "d"
    DTYPE = "<f8"
    JSON_ITEMS = "number"


class Int32Array(CompactArray):
    TYPECODE = "i"
    DTYPE = "<i4"
    JSON_ITEMS = "integer"


assert array.array("d").itemsize == 8 and array.array("i").itemsize == 4


def ragged_fields(model: type[BaseModel]) -> dict[str, type[CompactArray]]:
    """The model's ragged per-request fields and their array types, from the annotations."""
    return {
        name: field.annotation
        for name, field in model.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, CompactArray)
    }


class RequestRecord(Schema):
    """One request as the client saw it. Times: seconds since the point's t0 (monotonic).

    Two readings of one stream, kept apart (docs/result-schema.md):
    - vLLM's (`vllm bench serve` 0.32, `endpoint_request_func.py`): `ttft` and `e2el` count from
      `actual_send`, the moment just before the request went out; every chunk with non-empty
      `choices` is a chunk (the chat role chunk too); a request failed (`error`) only when it got
      no HTTP 200, no such chunk, or broke off.
    - Headroom's: latency from `intended_send` (the schedule), tokens per chunk, and the strict
      completion (`incomplete` says why a response vLLM counts as completed was not whole).
    """

    index: int
    replica: int = 0
    intended_send: float
    actual_send: float | None = None
    connect_s: float | None = Field(
        default=None, description="actual send until a connection was in hand (pool or new)"
    )
    ttft: float | None = Field(default=None, description="first chunk - actual send (vLLM)")
    e2el: float | None = Field(default=None, description="last chunk - actual send (vLLM)")
    completed_at: float | None = None
    chunk_times: Float64Array = Field(
        default_factory=Float64Array, description="arrivals of chunks with non-empty choices"
    )
    chunk_tokens: Int32Array = Field(
        default_factory=Int32Array, description="tokens in each chunk (0 for the chat role chunk)"
    )
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    max_tokens: int | None = Field(
        default=None, description="this request's own max_tokens; None: the workload's"
    )
    # A conversation workload's turn: which conversation (0.., in the point's order) and its
    # turn number (1..); None for every other workload.
    conversation: int | None = None
    turn: int | None = None
    finish_reason: str | None = None
    status: int | None = None
    error: str | None = None
    incomplete: str | None = Field(
        default=None,
        description="completed as vLLM counts it, but no [DONE], no usage, or an error event",
    )
    # Output parity (WorkloadSpec.keep_outputs): the prompt's token ids as the server saw them,
    # digested (two points "sent the same prompts" when these are equal), the response's token
    # ids, and the text of the first OUTPUT_TEXTS_KEPT responses for a reader to look at.
    prompt_digest: str | None = Field(
        default=None, description="BLAKE2b-64 of the prompt token ids the server returned"
    )
    output_ids: Int32Array = Field(
        default_factory=Int32Array, description="the response's token ids (keep_outputs only)"
    )
    output_text: str | None = Field(
        default=None, description="the response's text, for the first few requests only"
    )

    def model_post_init(self, context: Any, /) -> None:
        # pydantic gives every instance its own set of the field names it was given: the
        # collector names all 22, a 2.3 KB set per record (230 MB for 100,000 requests). Every
        # record shares one set of all names instead; nothing reads a record's unset fields
        # (exclude_unset), and a name pydantic adds on assignment is already in it.
        object.__setattr__(self, "__pydantic_fields_set__", _ALL_RECORD_FIELDS)

    @property
    def ok(self) -> bool:
        """Completed as `vllm bench serve` counts it: HTTP 200 and at least one chunk."""
        return self.completed(self.error, self.status, len(self.chunk_times))

    @staticmethod
    def completed(error: str | None, status: int | None, chunks: int) -> bool:
        """`ok` from its three inputs, for a reader of stored columns that makes no records."""
        return error is None and status == 200 and chunks > 0

    @property
    def strictly_ok(self) -> bool:
        """Headroom's strict completion: also `[DONE]`, a usage count and no error event."""
        return self.ok and self.incomplete is None and self.output_tokens is not None


# The one fields-set every RequestRecord shares (model_post_init).
_ALL_RECORD_FIELDS: set[str] = set(RequestRecord.model_fields)

class EngineSample(Schema):
    """One scrape of the engine's /metrics (gauges, and counters as running totals)."""

    t: float
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = Field(default=None, description="0-1")
    preemptions_total: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    # vllm:iteration_tokens_total histogram's running sum and count (tokens scheduled per step)
    iteration_tokens_sum: float | None = None
    iteration_tokens_count: float | None = None
    # vllm:num_requests_waiting_by_reason (vLLM 0.32): waiting for scheduling capacity, and
    # deferred by a transient constraint (LoRA budget, KV transfer); they add up to `waiting`.
    waiting_capacity: float | None = None
    waiting_deferred: float | None = None
    # Prompt tokens looked up in the prefix cache, and those found there (running totals).
    prefix_cache_queries_total: float | None = None
    prefix_cache_hits_total: float | None = None
    # vLLM's own estimates of the work per GPU, counted only when the engine runs with
    # --enable-mfu-metrics (zero otherwise); each engine of a data-parallel server counts its own
    # GPU's, so these are the mean over engines (running totals).
    estimated_flops_per_gpu_total: float | None = None
    estimated_read_bytes_per_gpu_total: float | None = None
    estimated_write_bytes_per_gpu_total: float | None = None
    # vllm:request_queue_time_seconds, recorded as each request finishes: its running sum and
    # its cumulative bucket counts keyed by the `le` label as vLLM prints it ("0.3", "+Inf").
    queue_time_sum: float | None = None
    queue_time_buckets: dict[str, float] = Field(default_factory=dict)
    replica: int = 0


class QueueSummary(Schema):
    """The engine's queue over a point's window, from its /metrics samples (runner.sampler).

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
    def memory_bytes_per_gpu_s(self) -> float | None:
        """Bytes read and written per GPU per second (vLLM's bandwidth estimate adds both)."""
        parts = [v for v in (self.read_bytes_per_gpu_s, self.write_bytes_per_gpu_s) if v]
        return sum(parts) if parts else None


TelemetrySource = Literal["nvml", "dcgm-exporter", "psutil"]
# How a GPU's energy over the window was found: its energy counter's increase, or its power
# readings integrated (trapezoid) when it reports no counter.
EnergyMethod = Literal["counter", "power-integral"]


class TelemetrySample(Schema):
    """One reading of one device during a point (runner.telemetry), on the point's clock.

    A GPU reading (gpu set: NVML's index, which is dcgm-exporter's `gpu` label) holds the GPU's
    gauges and its energy counter; a CPU reading (gpu None) holds the CPU time of one CPU
    engine replica's processes. A field the source did not report is None.
    """

    t: float
    replica: int = 0
    gpu: int | None = Field(default=None, description="GPU index; None: a CPU-engine reading")
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
    """What the hardware did during the point's window (runner.telemetry.summarize_telemetry).

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


class Metrics(Schema):
    """Client-side aggregates of one point (docs/result-schema.md gives every definition).

    Keys that `vllm bench serve --save-result` also writes mean what vLLM 0.32 computes for the
    same stream (`calculate_metrics` in `vllm/benchmarks/serve.py`);
    tests/runner/test_vllm_parity.py feeds recorded streams to both and checks it. Headroom's
    own figures have their own names: `sched_*` (latency from the intended send time),
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
    (runner.loadgen.send_schedule); a closed loop has no schedule to keep.

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


class LengthHistogram(Schema):
    """Token counts binned on shared edges: counts[i] values in [edges[i], edges[i+1]) (the
    last bin also holds its upper edge), so two histograms on one set of edges compare."""

    edges: list[float]
    source: list[int] = Field(description="the file's requests")
    sent: list[int] = Field(description="the point's requests")


class LengthComparison(Schema):
    """The request lengths of a trace or length-log workload's file beside the point's own
    (runner.traces.length_comparison): input tokens as the server counted them
    (usage.prompt_tokens, else the prompt's own length), output as the max_tokens sent."""

    file: str
    source_requests: int
    sent_requests: int
    input_tokens: LengthHistogram
    output_tokens: LengthHistogram


class TurnSummary(Schema):
    """One turn number of a conversation workload, over every conversation that reached it
    (runner.conversations.conversation_summary). Latencies (vLLM's: from the actual send) and
    token counts are of its completed requests; prompt tokens grow turn by turn, since each
    turn carries the conversation so far."""

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
    """One item of a quality set as scored (runner.quality.judge says what passes)."""

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
    source: Literal["headroom", "vllm-bench-import"] = "headroom"
    notes: list[str] = Field(default_factory=list)
    # A trace or lengths workload: its file's request lengths beside the point's.
    lengths: LengthComparison | None = None
    # A conversation workload: per-turn and per-conversation latency.
    conversations: ConversationSummary | None = None
    # The plan's quality set scored on this point (replica 0, after the window); None: none.
    quality: QualityResult | None = None


def point_key(config: EngineConfig, load: LoadSpec, repeat: int) -> str:
    return f"{config.label()}|{load.label()}|r{repeat}"
