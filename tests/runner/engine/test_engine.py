"""Engine commands (no engine started) and the real lifecycle on vLLM CPU engines.

Real-engine tests are marked `engine`; run them one session at a time:
    flock /tmp/headroom-engine.lock .venv/bin/python -m pytest tests/runner/engine/test_engine.py -q
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from importlib import metadata
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from runner.engine.command import EngineError, build_command
from runner.engine.process import HTTP_TIMEOUT_S, STOP_GRACE_S, engines, start_engine
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from tests.repository import ROOT

REVISION = "0123456789abcdef0123456789abcdef01234567"
FULL_CONFIG = EngineConfig(
    max_num_seqs=256,
    max_num_batched_tokens=8192,
    gpu_memory_utilization=0.9,
    kv_cache_dtype="fp8",
    max_model_len=4096,
    block_size=16,
    enable_prefix_caching=False,
    tensor_parallel_size=2,
    stream_interval=4,
    num_gpu_blocks_override=1000,
    extra_args=["--seed", "7", "--enforce-eager"],
)


def flag_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# ---------------------------------------------------------------------------------------------
# Commands: built and checked, never run
# ---------------------------------------------------------------------------------------------


def test_the_serve_style_pins_each_replica_to_its_own_block_of_gpus(tmp_path):
    checkpoint = Checkpoint(model="nvidia/Qwen3-30B-A3B-NVFP4", revision=REVISION)
    command = build_command(
        EngineLaunch(style="serve"), checkpoint, FULL_CONFIG,
        port=8123, replica=1, gpu=None, log_dir=tmp_path,
    )  # fmt: skip

    argv = command.argv
    assert argv[:3] == ["vllm", "serve", "nvidia/Qwen3-30B-A3B-NVFP4"]
    assert command.env["CUDA_VISIBLE_DEVICES"] == "2,3"  # tp=2: replica 1 takes GPUs 2 and 3
    assert flag_value(argv, "--revision") == REVISION
    assert flag_value(argv, "--port") == "8123"
    assert flag_value(argv, "--served-model-name") == "nvidia/Qwen3-30B-A3B-NVFP4"
    expected = {
        "--max-num-seqs": "256",
        "--max-num-batched-tokens": "8192",
        "--gpu-memory-utilization": "0.9",
        "--kv-cache-dtype": "fp8",
        "--max-model-len": "4096",
        "--block-size": "16",
        "--tensor-parallel-size": "2",
        "--stream-interval": "4",
        "--num-gpu-blocks-override": "1000",
        "--seed": "7",
    }
    assert {flag: flag_value(argv, flag) for flag in expected} == expected
    assert "--no-enable-prefix-caching" in argv and "--enable-prefix-caching" not in argv
    assert "--enforce-eager" in argv


def test_the_serve_style_takes_gpus_from_the_launch_list(tmp_path):
    launch = EngineLaunch(style="serve", gpus=[4, 5, 6, 7])
    command = build_command(
        launch, Checkpoint(model="m"), EngineConfig(), port=1, replica=2, gpu=None, log_dir=tmp_path
    )

    assert command.env["CUDA_VISIBLE_DEVICES"] == "6"
    with pytest.raises(EngineError, match="too few"):
        build_command(
            launch, Checkpoint(model="m"), EngineConfig(),
            port=1, replica=4, gpu=None, log_dir=tmp_path,
        )  # fmt: skip


def test_the_docker_style_runs_one_named_container_per_gpu_with_host_ipc(tmp_path):
    launch = EngineLaunch(style="docker", image="vllm/vllm-openai:v0.11.0", env={"HF_TOKEN": "x"})
    checkpoint = Checkpoint(model="Qwen/Qwen3-30B-A3B", served_model_name="qwen3")
    command = build_command(
        launch, checkpoint, EngineConfig(max_num_seqs=512, enable_prefix_caching=True),
        port=9001, replica=3, gpu=None, log_dir=tmp_path,
    )  # fmt: skip

    argv = command.argv
    assert argv[:4] == ["docker", "run", "--rm", "--name"]
    assert command.container == flag_value(argv, "--name")
    assert command.container.startswith("headroom-")
    assert flag_value(argv, "--gpus") == '"device=3"'
    assert "--ipc=host" in argv
    assert flag_value(argv, "-p") == "127.0.0.1:9001:8000"
    assert flag_value(argv, "-v").endswith(".cache/huggingface:/root/.cache/huggingface")
    assert flag_value(argv, "-e") == "HF_TOKEN=x"
    image_at = argv.index("vllm/vllm-openai:v0.11.0")
    assert argv[image_at + 1] == "--model=Qwen/Qwen3-30B-A3B"  # one token: never a flag
    assert flag_value(argv, "--max-num-seqs") == "512"
    assert "--enable-prefix-caching" in argv
    assert flag_value(argv, "--served-model-name") == "qwen3"
    assert "--port" not in argv  # the image listens on 8000 inside the container
    other = build_command(
        launch, checkpoint, EngineConfig(), port=9002, replica=3, gpu=None, log_dir=tmp_path
    )
    assert other.container != command.container


def test_the_cpu_style_runs_this_interpreter_offline_with_a_whole_gib_kv_cache(tmp_path):
    launch = EngineLaunch(style="cpu", cpu_kvcache_space_gib=1.5, env={"OMP_NUM_THREADS": "1"})
    command = build_command(
        launch, Checkpoint(model="/models/tiny", served_model_name="tiny"),
        EngineConfig(max_num_seqs=8), port=8200, replica=1, gpu=None, log_dir=tmp_path,
    )  # fmt: skip

    assert command.argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert "--model=/models/tiny" in command.argv  # one token: never a flag
    assert flag_value(command.argv, "--served-model-name") == "tiny"
    assert flag_value(command.argv, "--max-num-seqs") == "8"
    assert command.env["VLLM_CPU_KVCACHE_SPACE"] == "2"  # vLLM reads an integer
    assert command.env["HF_HUB_OFFLINE"] == "1"
    assert command.env["VLLM_USE_AOT_COMPILE"] == "0"  # its cache never loads on vllm-cpu 0.32
    assert command.env["OMP_NUM_THREADS"] == "1"
    assert command.env["VLLM_CPU_OMP_THREADS_BIND"] == str(1 % (os.cpu_count() or 1))


def test_the_attach_style_builds_no_command(tmp_path):
    with pytest.raises(EngineError):
        build_command(
            EngineLaunch(style="attach", base_url="http://gpu-node:8000"), Checkpoint(model="m"),
            EngineConfig(), port=1, replica=0, gpu=None, log_dir=tmp_path,
        )  # fmt: skip


def test_it_rejects_unknown_engine_flag_before_any_engine_starts(tmp_path, tiny_checkpoint):
    with pytest.raises(ValidationError, match="unknown engine flag --max-num-seq"):
        EngineConfig(extra_args=["--max-num-seq", "4"])
    # A config that skipped validation is still checked before anything starts.
    sneaky = EngineConfig.model_construct(extra_args=["--swap-space", "4"])
    with pytest.raises(ValidationError, match="unknown engine flag --swap-space"), engines(
        EngineLaunch(style="cpu"), tiny_checkpoint, sneaky, replicas=1, log_dir=tmp_path
    ):
        pass
    assert list(tmp_path.iterdir()) == []  # no engine log: nothing was started


# ---------------------------------------------------------------------------------------------
# Real engines
# ---------------------------------------------------------------------------------------------


# launch.env takes only allow-listed variables; HF_TOKEN carries any string and the tiny model
# is local (HF_HUB_OFFLINE), so it marks an engine's processes without changing what they do.
LAUNCH_MARKER = "HF_TOKEN"


def processes_marked(marker: str, variable: str = "HEADROOM_TEST_MARKER") -> list[int]:
    """Pids whose environment carries the marker: only processes this test started."""
    needle = f"{variable}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def wait_until_gone(marker: str, timeout_s: float,
                    variable: str = "HEADROOM_TEST_MARKER") -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := processes_marked(marker, variable)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.mark.engine
def test_a_cpu_engine_starts_and_reports_its_version_and_kv_cache(cpu_engine):
    engine = cpu_engine(EngineConfig(max_num_seqs=4, max_model_len=1024))

    assert engine.alive()
    assert engine.served_model == "tiny"
    assert engine.info.version == metadata.version("vllm-cpu")
    assert engine.info.served_models == ["tiny"]
    assert engine.info.num_gpu_blocks and engine.info.num_gpu_blocks > 0
    assert engine.info.block_size and engine.info.block_size > 0
    assert engine.info.launch_style == "cpu"
    assert Path(engine.info.log_path).exists()


@pytest.mark.engine
def test_it_serves_completions_and_qwen3_chat_with_thinking_disabled(cpu_engine):
    engine = cpu_engine(EngineConfig(max_num_seqs=4, max_model_len=1024))
    common = {"model": "tiny", "max_tokens": 8, "temperature": 0, "ignore_eos": True}

    completion = httpx.post(
        f"{engine.base_url}/v1/completions", json={**common, "prompt": "hello"}, timeout=60
    )
    chat = httpx.post(
        f"{engine.base_url}/v1/chat/completions",
        json={
            **common,
            "messages": [{"role": "user", "content": "hello"}],
            "chat_template_kwargs": {"enable_thinking": False},
        },
        timeout=60,
    )

    assert completion.status_code == 200 and completion.json()["usage"]["completion_tokens"] == 8
    assert chat.status_code == 200 and chat.json()["usage"]["completion_tokens"] == 8


@pytest.mark.engine
def test_stopping_an_engine_leaves_no_process_behind(tiny_checkpoint, tmp_path):
    marker = f"headroom-test-{uuid.uuid4()}"
    launch = EngineLaunch(style="cpu", startup_timeout_s=400, env={LAUNCH_MARKER: marker})

    config = EngineConfig(max_model_len=512)
    with engines(launch, tiny_checkpoint, config, replicas=1, log_dir=tmp_path) as running:
        engine = running[0]
        pids = processes_marked(marker, LAUNCH_MARKER)
        group = os.getpgid(engine._process.pid)
        # The guard, the API server and at least the EngineCore it spawned; whether the model
        # runs in a further worker process depends on vLLM's executor, so at least three.
        assert len(pids) >= 3
        assert all(os.getpgid(pid) == group for pid in pids)
        started = time.monotonic()

    assert time.monotonic() - started < 30
    assert not engine.alive()
    assert processes_marked(marker, LAUNCH_MARKER) == []
    assert engine.info.log_tail  # kept for the result's provenance


@pytest.mark.engine
@pytest.mark.parametrize(
    "model, max_model_len, expected",
    [
        ("exists", 100_000, "max_model_len"),  # the tiny model allows 4096 positions
        ("missing", None, "does-not-exist"),
    ],
)
def test_an_engine_that_cannot_start_fails_promptly_quoting_its_log(
    tiny_model, tmp_path, model, max_model_len, expected
):
    path = tiny_model if model == "exists" else tmp_path / "does-not-exist"
    checkpoint = Checkpoint(model=str(path))
    marker = f"headroom-test-{uuid.uuid4()}"
    launch = EngineLaunch(style="cpu", startup_timeout_s=300, env={LAUNCH_MARKER: marker})
    started = time.monotonic()

    with pytest.raises(EngineError) as failure:
        config = EngineConfig(max_model_len=max_model_len)
        with engines(launch, checkpoint, config, replicas=1, log_dir=tmp_path):
            pytest.fail("the engine should not have started")

    assert time.monotonic() - started < 120  # well before the start-up timeout
    message = str(failure.value)
    assert "exited with status" in message and "last lines" in message
    assert expected in message
    assert processes_marked(marker, LAUNCH_MARKER) == []


CHILD_RUNNER = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from runner.engine.process import engines
    from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch

    # A shell starts a background job (`.ci/run &`, `nohup make test &`) with SIGINT ignored,
    # and Python then installs no KeyboardInterrupt handler, so a Ctrl-C test run that way
    # would test nothing but the ignore. A runner in a terminal's foreground has the handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    model, log_dir = sys.argv[1], Path(sys.argv[2])
    launch = EngineLaunch(style="cpu", startup_timeout_s=400)
    config = EngineConfig(max_model_len=512)
    with engines(launch, Checkpoint(model=model), config, replicas=1, log_dir=log_dir):
        print("ready", flush=True)
        time.sleep(600)
    """
)


@pytest.mark.engine
def test_killing_the_runner_with_sigkill_leaves_no_engine_process(tiny_model, tmp_path):
    marker = f"headroom-test-{uuid.uuid4()}"
    env = {**os.environ, "HEADROOM_TEST_MARKER": marker, "PYTHONPATH": str(ROOT)}
    runner = subprocess.Popen(
        [sys.executable, "-c", CHILD_RUNNER, str(tiny_model), str(tmp_path)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert runner.stdout.readline().strip() == "ready"
        engine_pids = [pid for pid in processes_marked(marker) if pid != runner.pid]
        assert len(engine_pids) >= 3  # guard, API server, EngineCore (and maybe a worker)

        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)

        assert wait_until_gone(marker, timeout_s=15) == []
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait()


@pytest.mark.engine
def test_ctrl_c_while_engines_start_stops_them_and_leaves_no_process(tiny_model, tmp_path):
    marker = f"headroom-test-{uuid.uuid4()}"
    env = {**os.environ, "HEADROOM_TEST_MARKER": marker, "PYTHONPATH": str(ROOT)}
    runner = subprocess.Popen(
        [sys.executable, "-c", CHILD_RUNNER, str(tiny_model), str(tmp_path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # the runner, its guard and the API server: the engine is starting
        while len(processes_marked(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(processes_marked(marker)) >= 3

        runner.send_signal(signal.SIGINT)
        # The stop's designed worst case (runner/engine/): a /health poll in flight, the
        # guard's grace and the wait for it, the group's SIGKILL and its wait; plus slack for
        # a busy host.
        _, stderr = runner.communicate(timeout=HTTP_TIMEOUT_S + STOP_GRACE_S + 10 + 10 + 20)

        assert "KeyboardInterrupt" in stderr
        assert wait_until_gone(marker, timeout_s=5) == []
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait()


# ---------------------------------------------------------------------------------------------
# The guard, on a fake engine (fast): stubborn and escaping children are still taken down
# ---------------------------------------------------------------------------------------------

GUARD = ROOT / "runner" / "engine" / "guard.py"
# Ignores SIGTERM, starts one child that also ignores it and one that leaves the process
# group (setsid), then either waits or exits with status 3 leaving both behind.
FAKE_ENGINE = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    subprocess.Popen([sys.executable, "-c", stubborn])
    subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"])
    time.sleep(1.0)
    print("ready", flush=True)
    if sys.argv[1] == "exit":
        sys.exit(3)
    time.sleep(600)
    """
)


def start_guard(watch_pid: int, mode: str, marker: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(GUARD), "--watch", str(watch_pid), "--grace", "1",
         "--", sys.executable, "-c", FAKE_ENGINE, mode],
        env={**os.environ, "HEADROOM_TEST_MARKER": marker},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def test_the_guard_kills_stubborn_and_escaped_engine_processes_when_the_runner_dies():
    marker = f"headroom-test-{uuid.uuid4()}"
    stand_in_runner = subprocess.Popen(["sleep", "600"])
    guard = start_guard(stand_in_runner.pid, "wait", marker)
    try:
        assert guard.stdout.readline().strip() == "ready"
        assert len(processes_marked(marker)) == 4  # guard, engine, two children

        stand_in_runner.kill()
        stand_in_runner.wait()

        assert guard.wait(timeout=15) == 0
        assert wait_until_gone(marker, timeout_s=5) == []
    finally:
        stand_in_runner.kill()
        for pid in processes_marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_the_guard_returns_the_engine_status_and_clears_what_it_left_behind():
    marker = f"headroom-test-{uuid.uuid4()}"
    guard = start_guard(os.getpid(), "exit", marker)
    try:
        assert guard.stdout.readline().strip() == "ready"

        assert guard.wait(timeout=15) == 3
        assert wait_until_gone(marker, timeout_s=5) == []
    finally:
        for pid in processes_marked(marker):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# A start, timed on a fake `vllm serve` (fast)
# ---------------------------------------------------------------------------------------------

FAKE_START_S = 1.0
# Listens on its --port only after FAKE_START_S, then answers what start_engine reads.
FAKE_VLLM_SERVE = textwrap.dedent(
    f"""
    import http.server, json, sys, time
    port = int(sys.argv[sys.argv.index("--port") + 1])
    time.sleep({FAKE_START_S})
    ANSWERS = {{"/health": {{}}, "/version": {{"version": "0.0-fake"}}, "/v1/models": {{"data": []}}}}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = ANSWERS.get(self.path)
            self.send_response(404 if body is None else 200)
            self.end_headers()
            self.wfile.write(json.dumps(body or {{}}).encode())

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def test_a_start_is_timed_from_launching_the_engine_until_it_answers_health(
    tmp_path, monkeypatch
):
    script = tmp_path / "bin" / "vllm"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n{FAKE_VLLM_SERVE}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    launch = EngineLaunch(style="serve", startup_timeout_s=30)

    engine = start_engine(launch, Checkpoint(model="fake-model"), EngineConfig(), replica=0,
                          log_dir=tmp_path / "logs")
    try:
        assert engine.info.version == "0.0-fake"
        assert engine.start_s is not None and FAKE_START_S <= engine.start_s < 30
    finally:
        engine.stop()
    assert not engine.alive()
