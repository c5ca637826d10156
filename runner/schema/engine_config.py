"""What engine a plan starts: the checkpoint, the engine's settings and how it is launched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from runner.schema.base import REVISION_RE, Schema
from runner.schema.flags import (
    ALLOWED_LAUNCH_ENV,
    CONTROL_CHARS_RE,
    KV_CACHE_DTYPES,
    check_command_value,
    check_extra_args,
)


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
