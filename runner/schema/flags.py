"""The allow-lists a plan is checked against: engine flags, launch environment, model sources."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path, PurePosixPath
from typing import Literal

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
# tests/runner/engine/test_engine_flags.py checks every entry against vLLM's own parser.
# vLLM 0.32 has no --swap-space, --disable-log-requests, --cuda-graph-sizes,
# --max-num-partial-prefills or --calculate-kv-scales; its spellings are --no-enable-log-requests
# and --cudagraph-capture-sizes / --max-cudagraph-capture-size.
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
    "--speculative-config": 1,
    "--enable-lora": 0,
    "--lora-modules": "+",
    "--max-lora-rank": 1,
    "--max-loras": 1,
    "--max-cpu-loras": 1,
}

# Allowed flags that load code or read files on the node, with the worker's rights there; only a
# checkpoint an administrator marked trusted may use them (Checkpoint.trusted):
# - --trust-remote-code runs the Python files of the model repo;
# - --tokenizer loads another repo or folder (its code too, with --trust-remote-code);
# - --chat-template and --generation-config read a file or folder named by the user;
# - --compilation-config imports a backend by its qualified name and reads and writes its
#   cache_dir and debug_dump_path;
# - --load-format picks how weight files are deserialized, and some formats (tensorizer,
#   runai_streamer, plugins) read from elsewhere than the checkpoint;
# - --speculative-config when it names a draft "model" (a draft model, an EAGLE head): those
#   weights are loaded from a folder or repo the user names (SPECULATIVE_MODEL_KEYS). Without
#   one (ngram, suffix decoding, a checkpoint's own MTP layers) nothing else is read.
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
# refuse to start, so it is refused here; tests/runner/engine/test_engine_flags.py compares the
# lists.
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


def model_display_name(model: str) -> str:
    """How a page names a model: a hub repo id (or any name) as it is, a local folder given as
    a path by its last part only, since a machine path says where the weights lie, not what
    they are, and can name a person ("/home/alice/models/qwen3" -> "qwen3"). "" for a path
    with no last part."""
    if model.startswith(("/", "./", "../", "~")) or "\\" in model:
        return PurePosixPath(model.replace("\\", "/")).name
    return model


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


SPECULATIVE_CONFIG_FLAG = "--speculative-config"
# Keys of vLLM 0.32's SpeculativeConfig that name weights or a tokenizer to load.
SPECULATIVE_MODEL_KEYS = frozenset({"model", "draft_model", "tokenizer", "quantization"})


def _flag_values(args: list[str]) -> list[tuple[str, str | None]]:
    """(flag name, its value or None) for each flag in args, which check_extra_args passed."""
    pairs: list[tuple[str, str | None]] = []
    for token in args:
        if token.startswith("--"):
            _, sep, value = token.partition("=")
            pairs.append((engine_flag_name(token), value if sep else None))
        elif pairs and pairs[-1][1] is None:
            pairs[-1] = (pairs[-1][0], token)
    return pairs


def speculative_config_reads_files(value: str | None) -> bool:
    """Whether a --speculative-config value names weights to load (or cannot be read as the
    JSON object vLLM expects, which is refused as if it did: nothing unread is let through)."""
    try:
        config = json.loads(value or "")
    except ValueError:
        return True
    return not isinstance(config, dict) or bool(SPECULATIVE_MODEL_KEYS & set(config))


def code_loading_flags(args: list[str]) -> list[str]:
    """The flags among `args` that load code or read files on the node (CODE_LOADING_FLAGS, and
    a --speculative-config that names a draft model)."""
    found = []
    for name, value in _flag_values(args):
        if name in CODE_LOADING_FLAGS or (
            name == SPECULATIVE_CONFIG_FLAG and speculative_config_reads_files(value)
        ):
            found.append(name)
    return found


def check_code_loading(args: list[str], *, trusted: bool) -> list[str]:
    """The args, or ValueError naming each code-loading flag when the checkpoint is not trusted."""
    found = code_loading_flags(args)
    if found and not trusted:
        raise ValueError(
            f"{', '.join(found)} can load code or read files on the node: allowed only with a "
            "checkpoint an administrator marked trusted"
        )
    return args


LORA_MODULES_FLAG = "--lora-modules"
# An adapter's name: what a request's `model` field says to reach it, what a LoRA split names
# (WorkloadSpec.lora_split) and what pages show. Letters, digits, '_', '-' and '.'; no '=' (it
# separates the path), no '/' (the base model's names have them), at most 64 characters.
ADAPTER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_adapter_name(name: str) -> str:
    if not ADAPTER_NAME_RE.fullmatch(name):
        raise ValueError(
            f"LoRA adapter name {name!r}: use letters, digits, '_', '-' and '.', starting with "
            "a letter or digit, at most 64 characters"
        )
    return name


def lora_modules(args: list[str]) -> list[tuple[str, str]]:
    """(name, path) of every adapter --lora-modules names in args, or ValueError for a value
    that is not NAME=PATH with a valid name (vLLM's JSON form is not accepted: one spelling,
    checked one way)."""
    modules: list[tuple[str, str]] = []
    taking = False
    for token in args:
        if token.startswith("--"):
            taking = engine_flag_name(token) == LORA_MODULES_FLAG
            values = [token.partition("=")[2]] if taking and "=" in token else []
        elif taking:
            values = [token]
        else:
            continue
        for value in values:
            name, sep, path = value.partition("=")
            if not sep or not path:
                raise ValueError(f"{LORA_MODULES_FLAG} takes NAME=PATH, got {value!r}")
            modules.append((check_adapter_name(name), check_command_value(path, "LoRA path")))
    return modules


def check_lora_sources(args: list[str], allowed_dirs: list[Path]) -> list[str]:
    """The args, or ValueError unless every --lora-modules path is a hub repo id or a folder
    inside the allowed directories (check_model_source: the adapters' weights are read as the
    model's are)."""
    for name, path in lora_modules(args):
        try:
            check_model_source(path, allowed_dirs)
        except ValueError:
            where = ", ".join(str(directory) for directory in allowed_dirs) or "none are configured"
            raise ValueError(
                f"LoRA adapter {name!r}: {path!r} is neither a hub repo id (org/name) nor a path "
                f"inside the model directories allowed here ({where})"
            ) from None
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
    lora_modules(args)
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


# A latency target as a capacity plan takes it: METRIC:STATISTIC:MS, the goodput metrics (and
# vLLM's ITL, which --goodput leaves out) at one of the percentiles a point records.
SLO_METRICS = (*GOODPUT_METRICS, "itl")
SLO_STATISTICS = ("p50", "p95", "p99")


def parse_slos(pairs: list[str]) -> dict[str, float]:
    """`["ttft:p95:2000", "tpot:p99:50"]` -> {"p95_ttft_ms": 2000.0, "p99_tpot_ms": 50.0}: the
    point figures' names (p50 is their median_), in milliseconds.

    ValueError names the pair that is not METRIC:STATISTIC:MS, its unknown metric or statistic,
    a limit that is not a finite number above 0, or a figure limited twice.
    """
    slos: dict[str, float] = {}
    for pair in pairs:
        parts = [part.strip() for part in pair.split(":")]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"expected METRIC:STATISTIC:MS such as ttft:p95:2000, got {pair!r}")
        metric, statistic, text = parts
        if metric not in SLO_METRICS:
            raise ValueError(f"{pair!r}: unknown metric {metric!r}; use {', '.join(SLO_METRICS)}")
        if statistic not in SLO_STATISTICS:
            raise ValueError(
                f"{pair!r}: unknown statistic {statistic!r}; use {', '.join(SLO_STATISTICS)}")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{pair!r}: the limit must be a number of ms above 0")
        name = f"{'median' if statistic == 'p50' else statistic}_{metric}_ms"
        if name in slos:
            raise ValueError(f"{pair!r}: {metric} {statistic} is limited twice")
        slos[name] = value
    return slos


def slo_text(name: str) -> str:
    """A point figure's name as parse_slos reads it back: p95_ttft_ms -> ttft:p95."""
    statistic, metric, _unit = name.split("_")
    return f"{metric}:{'p50' if statistic == 'median' else statistic}"
