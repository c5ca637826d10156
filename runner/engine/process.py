"""Engine lifecycle: start replicas under the guard, wait for health, read what ran, stop.

Every started engine runs under runner/engine/guard.py as its own process group, so stopping it
is a group kill however it dies.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from runner.engine.bounded_read import (
    API_MAX_BYTES,
    METRICS_MAX_BYTES,
    Answer,
    AnswerOverBound,
    DeadlineTransport,
    read_bounded,
)
from runner.engine.command import (
    MFU_METRICS_FLAG,
    EngineError,
    TransportFactory,
    Unreachable,
    build_command,
    checked_inputs,
    engine_flags,
    served_model_name,
)
from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.measure.sampler import cache_config
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.result import EngineInfo, NetworkRtt

GUARD = Path(__file__).with_name("guard.py")
# vLLM finishes in-flight requests and frees its workers on SIGTERM; past this it gets SIGKILL.
STOP_GRACE_S = 15.0
HEALTH_POLL_S = 0.5
# The most one request to an engine may take, its whole answer included (read_bounded).
HTTP_TIMEOUT_S = 5.0
LOG_TAIL_LINES = 20


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
            # that starves the measuring client and the queue sampler for seconds while a CPU
            # engine computes (docs/performance.md, "CPU engine and the client").
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
    with httpx.Client(timeout=HTTP_TIMEOUT_S, transport=DeadlineTransport()) as client:
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
    if client is None:
        with httpx.Client(timeout=HTTP_TIMEOUT_S, headers=headers,
                          transport=DeadlineTransport()) as own:  # fmt: skip
            return _healthy(base_url, own)
    try:
        answer = _read(client, base_url + "/health")
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


def _read(client: httpx.Client, url: str, max_bytes: int = API_MAX_BYTES) -> Answer:
    return read_bounded(client, url, max_bytes=max_bytes, total_s=HTTP_TIMEOUT_S)


def _read_info(
    base_url: str,
    info: EngineInfo,
    credentials: Credentials = NO_CREDENTIALS,
    transport: TransportFactory | None = None,
) -> None:
    """Fill version, served models, the context length and the KV cache geometry the server
    reports. A server that refuses the API key on /version or /v1/models is an EngineError
    (nothing could be measured); /metrics is optional (the points then say so), unless its
    answer is too large or too slow: every scrape of the points would fail the same way."""
    with _client(base_url, credentials, transport) as client:
        version = _get(client, base_url, "/version")
        models = _get(client, base_url, "/v1/models")
        try:
            metrics: Answer | None = _read(client, "/metrics", METRICS_MAX_BYTES)
        except AnswerOverBound as exc:
            raise EngineError(f"the server at {base_url}: {exc}") from None
        except httpx.HTTPError:
            metrics = None
    for path, answer in (("/version", version), ("/v1/models", models)):
        _check_key_accepted(answer, base_url, path)
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
            base_url=base_url, timeout=HTTP_TIMEOUT_S, headers=credentials.http_headers(),
            transport=DeadlineTransport(),
        )
    # A proxy named in the environment would carry the requests past the given transport.
    return httpx.Client(
        base_url=base_url,
        timeout=HTTP_TIMEOUT_S,
        headers=credentials.http_headers(),
        transport=transport(),
        trust_env=False,
    )


def _get(client: httpx.Client, base_url: str, path: str) -> Answer:
    """GET path, or Unreachable naming the URL and what kept it from answering; EngineError
    naming the bound that stopped an answer too large or too slow."""
    try:
        return _read(client, path)
    except AnswerOverBound as exc:
        raise EngineError(f"the server at {base_url}: {exc}") from None
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


def _check_key_accepted(answer: Answer, base_url: str, path: str) -> None:
    if answer.status_code in (401, 403):
        raise EngineError(
            f"the endpoint at {base_url} refused the API key (HTTP {answer.status_code} on "
            f"GET {path}): register the right key or headers"
        )


def _json(answer: Answer) -> dict[str, Any]:
    try:
        data = answer.json()
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
    _check_key_accepted(health, base_url, "/health")
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
                answer = _read(client, "/health")
                elapsed = time.perf_counter() - started
                if answer.status_code != 200:
                    return None
                if attempt:
                    times.append(elapsed * 1000)
    except httpx.HTTPError:
        return None
    times.sort()
    return NetworkRtt(median_ms=statistics.median(times), min_ms=times[0], probes=len(times))
