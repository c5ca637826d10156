from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client

from benchmarks import tasks
from benchmarks.models import ResultImport

ROLES_MIGRATION = "benchmarks.migrations.0013_endpoints_grids_estimates"


def grant_role(user, role: str = "Engineer"):
    """Put user in one of the roles' groups (benchmarks/migrations/0009). A transactional
    test's flush empties auth_group; the migration's own function puts the groups back."""
    if not Group.objects.filter(name=role).exists():
        importlib.import_module(ROLES_MIGRATION).create_roles(django_apps, None)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def owner(db):
    # An engineer: launches, cancels their own runs, chooses, compares and reports.
    return grant_role(get_user_model().objects.create_user("owner", password="owner-password"))


@pytest.fixture
def teammate(db):
    return grant_role(
        get_user_model().objects.create_user("teammate", password="teammate-password")
    )


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def run_imports_inline(monkeypatch, settings, tmp_path):
    """Uploads go to a folder of the test's own, and each import's task runs at once, in this
    process and this test's transaction, instead of on the broker (Celery's apply())."""
    settings.HEADROOM_IMPORT_DIR = tmp_path / "imports"

    def run_now(result_import: ResultImport) -> None:
        tasks.import_result_file.apply(args=[result_import.pk], throw=True)

    monkeypatch.setattr(tasks, "enqueue_import", run_now)
    return settings.HEADROOM_IMPORT_DIR


# ---------------------------------------------------------------------------------------------
# A real Celery worker process, for the engine and browser tests.
# Run those tests under `flock /tmp/headroom-engine.lock`: the worker starts real vLLM engines.
# ---------------------------------------------------------------------------------------------

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


def migrate(targets):
    """Migrate the test database to targets; returns the apps as they were at that state."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def newest_schema_after(transactional_db):
    """A migration test moves the schema back and forth; the tests after it need the newest."""
    yield migrate
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def browser_page(chromium):
    """A page in headless Chromium (tests/conftest.py)."""
    return chromium.new_page()


@pytest.fixture
def logged_in_page(browser_page, live_server, owner):
    """browser_page after logging in as the owner (an engineer)."""
    browser_page.goto(f"{live_server.url}/accounts/login/")
    browser_page.fill("#id_username", "owner")
    browser_page.fill("#id_password", "owner-password")
    browser_page.click("button[type=submit]")
    return browser_page


@pytest.fixture
def engineer(django_user_model) -> Client:
    """A logged-in engineer (a module may define its own)."""
    client = Client()
    client.force_login(grant_role(django_user_model.objects.create_user("engineer")))
    return client


@pytest.fixture
def launches(monkeypatch) -> list:
    """The runs handed to the queue; none reaches a broker."""
    sent: list = []
    monkeypatch.setattr("benchmarks.tasks.enqueue_benchmark", sent.append)
    return sent
