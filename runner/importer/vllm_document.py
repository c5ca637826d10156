"""The shape of a `vllm bench serve` file: its known keys, and what it says about its run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.result import EngineInfo, Hardware, Provenance

# The keys without which a file is not a vllm bench serve result at all.
VLLM_BENCH_REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens")
METRIC_FAMILIES = ("ttft", "tpot", "itl", "e2el")
STATISTICS = ("mean", "median", "std", "p90", "p95", "p99")
STATISTIC_FIELDS = frozenset(f"{s}_{family}_ms" for family in METRIC_FAMILIES for s in STATISTICS)
# vLLM names a percentile p{int} when it is whole, else p{float}: p50_ttft_ms, p99.9_ttft_ms.
PERCENTILE_KEY = re.compile(r"^p\d+(?:\.\d+)?_(?:ttft|tpot|itl|e2el)_ms$")
# Any statistic vLLM writes, of the families above or others (client_queue_time, ...).
STATISTIC_KEY = re.compile(r"^(?:mean|median|std|p\d+(?:\.\d+)?)_[a-z0-9_]+_ms$")

# vLLM's own keys that have no Headroom field: scalars are kept in notes, arrays dropped.
VLLM_KEYS_WITHOUT_FIELD = frozenset(
    {
        "tokenizer_id",
        "best_of",
        "use_beam_search",
        "generated_texts",
        "queue_times",
        "rps_change_events",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
        "input_throughput",
        "request_inthroughput",  # vLLM 0.3's spelling
        "total_input_sequences",
        "input_sequence_throughput",
    }
)
VLLM_KEY_PREFIXES = ("spec_decode_", "diffusion_", "probe_")

# --metadata keys (lower case, '-' read as '_') that name a field: group -> field of its model.
# Every engine setting is a key under its own name (max_num_seqs=256).
METADATA_FIELDS: dict[str, tuple[str, str]] = {
    **{setting.name: ("engine", setting.name) for setting in EngineConfig.settings()},
    "tp": ("engine", "tensor_parallel_size"),  # vLLM's own --metadata example: tp=1
    "gpu": ("hardware", "gpu_name"),
    "gpu_name": ("hardware", "gpu_name"),
    "hardware": ("hardware", "gpu_name"),
    "host": ("hardware", "host"),
    "revision": ("checkpoint", "revision"),
    "precision": ("checkpoint", "precision"),
    "engine": ("engine_info", "name"),
    "engine_name": ("engine_info", "name"),
    "runtime": ("engine_info", "name"),
    "version": ("engine_info", "version"),  # vLLM's own --metadata example: version=0.3.3
    "vllm_version": ("engine_info", "version"),
    "sglang_version": ("engine_info", "version"),
    "tensorrt_llm_version": ("engine_info", "version"),
    "trtllm_version": ("engine_info", "version"),
    "image": ("engine_info", "image"),
    "goodput": ("goodput", "slos"),  # as vLLM's --goodput: ttft:500,tpot:50 (ms)
}
# A version key that names its engine says which engine ran, as engine=NAME would.
VERSION_KEY_ENGINES = {
    "vllm_version": "vllm",
    "sglang_version": "sglang",
    "tensorrt_llm_version": "tensorrt-llm",
    "trtllm_version": "tensorrt-llm",
}
# vllm bench's --backend values that name the engine they were written for. The others
# ("openai", "openai-chat", ...) are request formats any OpenAI-compatible server speaks, so
# they say nothing about what served the requests. Older vLLM releases defaulted to "vllm",
# which is why the note on such a point says where its engine name came from.
BACKEND_ENGINES = {
    "vllm": "vllm",
    "vllm-pooling": "vllm",
    "vllm-rerank": "vllm",
    "tensorrt-llm": "tensorrt-llm",
    "sglang": "sglang",
    "tgi": "tgi",
    "lmdeploy": "lmdeploy",
    "deepspeed-mii": "deepspeed-mii",
    "scalellm": "scalellm",
    "llama.cpp": "llama.cpp",
}
UNKNOWN_HOST = "unknown (not recorded by vllm bench)"
UNKNOWN_MODEL = "unknown"


class ImportFileError(ValueError):
    """A result file that cannot be read; the message says why and where."""


class BenchDocument(BaseModel):
    """The keys of a `vllm bench serve` result this import reads, typed as vLLM writes them.

    A wrong type is refused with the key (and index) named; the statistics (`*_ms`) and the
    metadata are read from the raw object, their names are not fixed.
    """

    model_config = ConfigDict(extra="ignore")

    date: str | None = None
    backend: str | None = None
    endpoint_type: str | None = None
    label: str | None = None
    model_id: str | None = None
    dataset_name: str | None = None
    dataset_path: str | None = None
    num_prompts: int | None = Field(default=None, gt=0)
    request_rate: float | str | None = None  # "inf" for a burst
    burstiness: float | None = Field(default=None, gt=0)
    max_concurrency: int | None = Field(default=None, gt=0)
    ramp_up_strategy: str | None = None
    ramp_up_start_rps: float | None = None
    ramp_up_end_rps: float | None = None
    duration: float = Field(gt=0, allow_inf_nan=False)
    completed: int = Field(ge=0)
    failed: int | None = Field(default=None, ge=0)
    total_input_tokens: int = Field(ge=0)
    total_output_tokens: int = Field(ge=0)
    request_throughput: float | None = None
    # benchmark_serving.py of vLLM 0.7 and 0.8 wrote it as "request_goodput:" (colon included).
    request_goodput: float | None = Field(
        default=None, validation_alias=AliasChoices("request_goodput", "request_goodput:")
    )
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    input_lens: list[int] | None = None
    output_lens: list[int] | None = None
    ttfts: list[float] | None = None
    itls: list[list[float]] | None = None
    latencies: list[float] | None = None
    start_times: list[float] | None = None
    errors: list[str | None] | None = None
    # `vllm bench sweep serve` adds each run's repeat number (0 on) beside the swept settings.
    run_number: int | None = None


# Keys read into a field under another name (BenchDocument's validation aliases).
ALIASED_KEYS = frozenset({"request_goodput:"})
KNOWN_VLLM_KEYS = frozenset(BenchDocument.model_fields) | VLLM_KEYS_WITHOUT_FIELD | ALIASED_KEYS


@dataclass
class BenchMetadata:
    """The file's --metadata entries: by group, field -> (key as written, value); the rest."""

    fields: dict[str, dict[str, tuple[str, Any]]]
    kept: list[str] = field(default_factory=list)  # "key=value" naming no field
    unread: list[str] = field(default_factory=list)  # unknown keys whose value is not a string

    def group(self, name: str) -> dict[str, tuple[str, Any]]:
        return self.fields.get(name, {})


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _is_vllm_key(key: str) -> bool:
    return (
        key in KNOWN_VLLM_KEYS
        or STATISTIC_KEY.match(key) is not None
        or key.startswith(VLLM_KEY_PREFIXES)
    )


def read_metadata(data: dict[str, Any], source: str) -> BenchMetadata:
    """The keys vLLM did not write itself: --metadata entries, strings as vLLM stores them."""
    metadata = BenchMetadata(fields={})
    for key, value in data.items():
        if _is_vllm_key(key):
            continue
        target = METADATA_FIELDS.get(_metadata_key(key))
        if target is None:
            if isinstance(value, str):
                metadata.kept.append(f"{key}={value}")
            else:
                metadata.unread.append(key)  # a newer vLLM's figure, not a --metadata string
            continue
        group, name = target
        fields = metadata.fields.setdefault(group, {})
        if name in fields and str(fields[name][1]) != str(value):
            raise ImportFileError(
                f"{source}: --metadata {fields[name][0]}={fields[name][1]} and {key}={value} "
                "disagree"
            )
        fields[name] = (key, value)
    return metadata


def _metadata_key(key: str) -> str:
    return key.strip().lower().replace("-", "_")


ModelT = TypeVar("ModelT", bound=BaseModel)


def from_metadata(
    model: type[ModelT], given: dict[str, tuple[str, Any]], source: str, /, **known: Any
) -> ModelT:
    """A model from metadata strings, converted by pydantic ('256', '0.9', 'true').

    A bad value refuses the file, naming the key as written in the file.
    """
    try:
        return model(**{**known, **{name: value for name, (_, value) in given.items()}})
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        entries = [given[name]] if name in given else list(given.values())
        where = ", ".join(f"{key}={value}" for key, value in entries)
        raise ImportFileError(f"{source}: --metadata {where}: {error['msg']}") from None


def engine_settings_note(config: EngineConfig, metadata: BenchMetadata, sweep: bool) -> str:
    """Where the engine settings came from: --metadata, or the parameters `vllm bench sweep`
    added to the run (sweep)."""
    if not metadata.group("engine"):
        return "engine settings are not recorded in vllm bench files; shown as 'defaults'"
    where = "the sweep's serve parameters" if sweep else "the file's --metadata"
    return f"engine settings from {where}: {config.label()}; settings not named there are unknown"


def leftover_notes(data: dict[str, Any], metadata: BenchMetadata) -> list[str]:
    """Metadata naming no field, vLLM figures without a Headroom field, unknown keys."""
    notes = []
    if metadata.kept:
        notes.append("metadata kept as notes: " + ", ".join(metadata.kept))
    figures = [
        f"{key}={value:g}"
        for key, value in data.items()
        if _is_vllm_key(key)
        and key not in BenchDocument.model_fields
        and key not in ALIASED_KEYS
        and key not in STATISTIC_FIELDS
        and not PERCENTILE_KEY.match(key)
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    ]
    if figures:
        notes.append("vLLM figures without a Headroom field: " + ", ".join(figures))
    if metadata.unread:
        notes.append("keys this import does not know, not read: " + ", ".join(metadata.unread))
    return notes


def bench_provenance(
    doc: BenchDocument, metadata: BenchMetadata, source: str, notes: list[str],
    format_label: str = "",
) -> Provenance:
    name, note = _engine_name(doc, metadata, source)
    notes.append(note)
    # vLLM 0.8 to 0.10 chose the request function with --endpoint-type, 0.11 on with --backend
    # (and writes it under both names).
    backend = doc.backend or doc.endpoint_type or "unknown backend"
    return Provenance(
        hardware=from_metadata(Hardware, metadata.group("hardware"), source, host=UNKNOWN_HOST),
        engine=from_metadata(
            EngineInfo, metadata.group("engine_info"), source, launch_style="attach", name=name
        ),
        checkpoint=from_metadata(
            Checkpoint, metadata.group("checkpoint"), source, model=doc.model_id or UNKNOWN_MODEL
        ),
        client_version=f"vllm bench serve ({backend}) {format_label}".strip(),
        started_at=_iso_date(doc.date),
    )


def _engine_name(
    doc: BenchDocument, metadata: BenchMetadata, source: str
) -> tuple[str | None, str]:
    """The engine that served the file's requests, and a note saying how it is known.

    --metadata engine=NAME (or a version key naming its engine, vllm_version=...) is what the
    engineer recorded; the backend is only the client's request format, read when nothing else
    says. None when the file does not tell: an import never claims vLLM by default.
    """
    info = metadata.group("engine_info")
    given, version = info.get("name"), info.get("version")
    implied = VERSION_KEY_ENGINES.get(_metadata_key(version[0])) if version else None
    if given is not None:
        key, value = given
        name = EngineInfo.normalize_name(str(value))
        if version and implied and name != implied:
            raise ImportFileError(
                f"{source}: --metadata {key}={value} and {version[0]}={version[1]} disagree"
            )
        return name, f"serving engine {name}: from the file's --metadata {key}={value}"
    if version and implied:
        return implied, f"serving engine {implied}: from the file's --metadata {version[0]}"
    backend = doc.backend or doc.endpoint_type
    if backend in BACKEND_ENGINES:
        name = BACKEND_ENGINES[backend]
        return name, (
            f"serving engine {name}: from the file's backend {backend!r}, the request format "
            "vllm bench used (record --metadata engine=NAME when another engine served it)"
        )
    said = f"backend {backend!r} is a request format, not an engine" if backend else "no backend"
    return None, (
        f"serving engine not recorded ({said}): state it at import, or record it with "
        "--metadata engine=NAME"
    )


def _iso_date(value: str | None) -> str:
    """vllm bench writes local time as 20250101-120000; keep it, marked as local time."""
    try:
        return datetime.strptime(str(value), "%Y%m%d-%H%M%S").isoformat() + " (local time)"
    except ValueError:
        return str(value or "unknown")
