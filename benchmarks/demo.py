"""`python -m benchmarks.demo` (make demo): the whole dashboard on this machine, with a real engine.

Migrates the database (SQLite unless DATABASE_URL says otherwise), creates the demo user and
prints its credentials, registers the tiny model and the installed vLLM, starts the web server
and one Celery worker for the CPU node, launches a first sweep through the launch form's own
path, and prints the URL. When the sweep ends it saves the comparison of the smallest and the
best max_num_seqs setting and a customer report built from it, and prints their links. Ctrl-C stops everything: each child runs in its own process group and
only those groups are signalled; the worker's engines stop with it (runner/guard.py).

The broker is Redis when it answers at CELERY_BROKER_URL (default 127.0.0.1:6379); otherwise
kombu's filesystem transport under var/broker, which needs no server.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DEMO_ADDRESS = os.environ.get("HEADROOM_DEMO_ADDRESS", "127.0.0.1:8000")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
QUEUE = "cpu-local"


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, check=True)


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    # Its own process group, to be stopped as one; not its own session, which would put it in
    # a scheduler autogroup of its own where a busy CPU engine can starve it (runner/engine.py).
    return subprocess.Popen(command, cwd=BASE_DIR, env=env, process_group=0)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def choose_broker(url: str) -> str:
    """Redis if it answers, else the filesystem transport (demo only: one machine, no server)."""
    if not url.startswith("redis://"):
        return url
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 1):
            return url
    except OSError:
        print(f"Redis is not answering at {parts.netloc}: using a filesystem broker in var/broker")
        return "filesystem://"


def main() -> int:
    tiny_model = Path(os.environ.get("HEADROOM_TINY_MODEL", BASE_DIR / "var" / "tiny-model"))
    broker = choose_broker(os.environ.get("CELERY_BROKER_URL", DEFAULT_REDIS))
    env = {
        **os.environ,
        # Settings fail closed (DEBUG off, a real SECRET_KEY, HTTPS only); the demo is a
        # developer's machine over plain HTTP, so it says so: DEBUG on, the development key.
        "DEBUG": "1",
        "CELERY_BROKER_URL": broker,
        "HEADROOM_NODE_QUEUE": QUEUE,
        "HEADROOM_LAUNCH_STYLE": "cpu",
        # Local models are refused unless their folder is allowed: the tiny model's is.
        "HEADROOM_MODEL_DIRS": str(tiny_model.resolve().parent),
        "PYTHONUNBUFFERED": "1",
    }
    manage("migrate", "--noinput", "-v", "0", env=env)
    manage("create_demo_user", "--tiny-model", str(tiny_model), env=env)
    worker = start(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", QUEUE,
         "--concurrency", "1", "--prefetch-multiplier", "1", "--without-gossip",
         "--without-mingle", "--loglevel", "WARNING"],
        env,
    )  # fmt: skip
    web = start([sys.executable, "manage.py", "runserver", DEMO_ADDRESS, "--noreload"], env)
    finisher = None
    try:
        launched = subprocess.run(
            [sys.executable, "manage.py", "launch_demo_sweep", "--queue", QUEUE],
            cwd=BASE_DIR, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        print(launched.stdout, end="")
        code = re.search(r"/runs/([0-9a-f-]{36})/", launched.stdout).group(1)
        # When the sweep ends: the saved comparison and a customer report, links printed.
        finisher = start([sys.executable, "manage.py", "finish_demo", code], env)
        print(
            f"\nHeadroom demo at http://{DEMO_ADDRESS}/  (log in with the demo user above)\n"
            "The first sweep starts one CPU engine per max_num_seqs value (about a minute each);\n"
            "when it ends, the links to its saved comparison and customer report appear here.\n"
            "Ctrl-C stops the web server, the worker and its engines.",
            flush=True,
        )
        while worker.poll() is None and web.poll() is None:
            try:
                web.wait(timeout=1)
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:
        pass
    except subprocess.CalledProcessError as exc:
        print(f"the demo sweep could not be launched:\n{exc.stderr}", file=sys.stderr)
        return 1
    finally:
        if finisher is not None:
            stop(finisher)
        stop(web)
        stop(worker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
