"""`python -m benchmarks.demo` (make demo): the dashboard and one CPU worker on this machine.

Migrates the database, creates the demo user and prints its credentials, registers the tiny
model and the installed vLLM, then runs `manage.py runserver` and one Celery worker (queue
cpu-local) until Ctrl-C. Needs Redis at CELERY_BROKER_URL. Each child runs in its own process
group, and only those groups are stopped on exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DEMO_ADDRESS = os.environ.get("HEADROOM_DEMO_ADDRESS", "127.0.0.1:8000")


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, check=True)


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=BASE_DIR, env=env, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def main() -> int:
    tiny_model = Path(os.environ.get("HEADROOM_TINY_MODEL", BASE_DIR / "var" / "tiny-model"))
    env = {**os.environ, "HEADROOM_NODE_QUEUE": "cpu-local", "HEADROOM_LAUNCH_STYLE": "cpu"}
    manage("migrate", "--noinput")
    manage("create_demo_user", "--tiny-model", str(tiny_model))
    worker = start(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "cpu-local",
         "--concurrency", "1", "--prefetch-multiplier", "1", "--without-gossip",
         "--without-mingle", "--loglevel", "INFO"],
        env,
    )
    web = start([sys.executable, "manage.py", "runserver", DEMO_ADDRESS, "--noreload"], env)
    print(f"Headroom demo at http://{DEMO_ADDRESS}/ (Ctrl-C stops web and worker)", flush=True)
    try:
        while worker.poll() is None and web.poll() is None:
            try:
                web.wait(timeout=1)
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:
        pass
    finally:
        stop(web)
        stop(worker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
