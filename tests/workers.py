"""Fixtures that run the worker side for real: a Celery worker process on its own queue (for
the engine and browser tests; run those under `flock /tmp/headroom-engine.lock`, since the
worker starts real vLLM engines), the tiny model, imports run inline, and launches caught before
the broker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from benchmarks.models import ResultImport
from benchmarks.worker import tasks

WORKER_START_TIMEOUT_S = 120


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from runner.engine.tinymodel import build_tiny_model

    # Idempotent and shared with the runner's tests (make tiny-model): built once per checkout.
    default = Path(settings.BASE_DIR) / "var" / "tiny-model"
    return build_tiny_model(Path(os.environ.get("HEADROOM_TINY_MODEL", default)))


@pytest.fixture
def celery_worker_queue(transactional_db, tmp_path):
    """Start `celery worker` on a fresh queue against the test database; yield the queue name.

    The worker registers its Node on start; the fixture waits for that row. The worker runs in
    its own process group, and only that group is stopped afterwards.
    """
    from benchmarks.models import Node

    queue = f"e2e-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "HEADROOM_NODE_QUEUE": queue,
        "HEADROOM_LAUNCH_STYLE": "cpu",
        "HEADROOM_WORK_DIR": str(tmp_path / "work"),
        "HEADROOM_HEARTBEAT_S": "2",
        "HEADROOM_STALE_AFTER_S": "120",
    }
    log_path = tmp_path / "worker.log"
    command = [
        sys.executable, "-m", "celery", "-A", "config", "worker", "-Q",
        f"{queue},{settings.HEADROOM_IMPORT_QUEUE}",  # its node's runs, and uploaded files
        "--concurrency", "1", "--prefetch-multiplier", "1", "--pool", "prefork",
        "--without-gossip", "--without-mingle", "--loglevel", "INFO",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=settings.BASE_DIR, start_new_session=True)
    try:
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while not Node.objects.filter(queue=queue, last_heartbeat_at__isnull=False).exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"worker did not register its node:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.5)
        yield queue
    finally:
        _stop_group(process)
        print(f"--- worker log ---\n{log_path.read_text()[-6000:]}")


def _stop_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # warm shutdown: the task stops its engines
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def wait_until_final(benchmark, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        benchmark.refresh_from_db()
        if benchmark.is_final:
            return benchmark
        time.sleep(1)
    pytest.fail(f"run still {benchmark.state} after {timeout_s} s: {benchmark.progress_note}")


@pytest.fixture
def run_imports_inline(monkeypatch, settings, tmp_path):
    """Uploads go to a folder of the test's own, and each import's task runs at once, in this
    process and this test's transaction, instead of on the broker (Celery's apply())."""
    settings.HEADROOM_IMPORT_DIR = tmp_path / "imports"

    def run_now(result_import: ResultImport) -> None:
        tasks.import_result_file.apply(args=[result_import.pk], throw=True)

    monkeypatch.setattr(tasks, "enqueue_import", run_now)
    return settings.HEADROOM_IMPORT_DIR


@pytest.fixture
def launches(monkeypatch) -> list:
    """The runs handed to the queue; none reaches a broker."""
    sent: list = []
    monkeypatch.setattr("benchmarks.worker.tasks.enqueue_benchmark", sent.append)
    return sent
