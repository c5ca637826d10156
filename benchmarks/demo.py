"""`python -m benchmarks.demo` (make demo): the whole dashboard on this machine, with a real engine.

Migrates the database (SQLite unless DATABASE_URL says otherwise), creates the demo user and
prints its credentials, registers the tiny model and the installed vLLM, starts the web server
and one Celery worker for the CPU node, launches a first sweep through the launch form's own
path, and prints the URL. When the sweep ends it saves the comparison of the smallest and the
best max_num_seqs setting and a customer report built from it, and prints their links.

Each child runs in its own process group and only those groups are signalled. A child that
stops is reported and the others keep going: when the worker dies, the web server keeps serving
and the run pages say the run lost its worker. Ctrl-C (or SIGTERM) stops everything; the
worker's engines stop with it (runner/guard.py).

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
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DEMO_ADDRESS = os.environ.get("HEADROOM_DEMO_ADDRESS", "127.0.0.1:8000")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
QUEUE = "cpu-local"
# Uploaded result files are parsed by the same worker, beside the web server (config/settings.py).
IMPORT_QUEUE = "imports"


# A stopping child's grace before its group is killed: the worker's warm shutdown lets its task
# stop its engines first.
STOP_GRACE_S = 60
POLL_S = 1.0
WORKER_STOPPED = (
    "\nThe worker stopped ({how}). The web server keeps serving at http://{address}/: a run it "
    "had in progress shows 'worker lost' once its heartbeat is {stale_after_s} s old, with its "
    "finished points kept. Ctrl-C stops the demo."
)
WEB_STOPPED = "\nThe web server stopped ({how}). The worker keeps running; Ctrl-C stops the demo."


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, check=True)


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    service: bool  # the web server and the worker: the demo lasts while either runs
    on_exit: str  # printed when it stops ({how}); empty for a one-shot command


class Children:
    """The demo's child processes, each the leader of its own process group.

    A child that exits is reported once and the others keep going: a dead worker must not take
    the web server down with it. A leader's exit is seen without reaping it (waitid WNOWAIT),
    so until it is reaped its group id cannot go to another process, and killing that group
    reaches only what this demo started.
    """

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.children: list[Child] = []

    def start(
        self, name: str, command: list[str], *, service: bool = True, on_exit: str = ""
    ) -> Child:
        # Its own process group, to be stopped as one; not its own session, which would put it
        # in a scheduler autogroup of its own where a busy CPU engine can starve it
        # (runner/engine.py).
        process = subprocess.Popen(command, cwd=BASE_DIR, env=self.env, process_group=0)
        child = Child(name, process, service, on_exit)
        self.children.append(child)
        return child

    def newly_exited(self) -> list[Child]:
        """Children whose leader exited since the last call, now reaped.

        What a dead leader left in its group (a worker's pool process, say) is killed first: a
        half-dead worker would keep a run and its engine alive with nobody to stop them.
        """
        exited = []
        for child in self.children:
            if child.process.returncode is None and _has_exited(child.process.pid):
                _signal_group(child.process.pid, signal.SIGKILL)
                child.process.wait()
                exited.append(child)
        return exited

    def any_service_running(self) -> bool:
        return any(c.service and c.process.returncode is None for c in self.children)

    def stop_all(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every group, then SIGKILL what is left after grace_s or at a second Ctrl-C."""
        live = [c for c in self.children if c.process.returncode is None]
        for child in live:
            _signal_group(child.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        try:
            while time.monotonic() < deadline and not all(_has_exited(c.process.pid) for c in live):
                time.sleep(0.1)
        except KeyboardInterrupt:
            print("Stopping at once.", flush=True)
        for child in live:
            _signal_group(child.process.pid, signal.SIGKILL)  # leftovers of a clean exit too
            child.process.wait()


def _has_exited(pid: int) -> bool:
    """Whether the child exited, leaving it unreaped (a zombie that keeps its pid and group)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError):  # the group is already empty
        os.killpg(pgid, signum)


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit code {returncode}"


def watch(children: Children, poll_s: float = POLL_S, **message_fields: object) -> None:
    """Until neither the web server nor the worker runs: say which child stopped, keep the rest."""
    while True:
        for child in children.newly_exited():
            if child.on_exit:
                how = describe_exit(child.process.returncode)
                print(child.on_exit.format(how=how, **message_fields), flush=True)
        if not children.any_service_running():
            return
        time.sleep(poll_s)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the demo as Ctrl-C does, children included


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
        "HEADROOM_IMPORT_QUEUE": IMPORT_QUEUE,
        "HEADROOM_LAUNCH_STYLE": "cpu",
        # Local models are refused unless their folder is allowed: the tiny model's is.
        "HEADROOM_MODEL_DIRS": str(tiny_model.resolve().parent),
        "PYTHONUNBUFFERED": "1",
        # Pages say a run lost its worker once its heartbeat (every 2 s) is this old: a minute
        # here rather than production's five, so a worker killed in the demo shows soon.
        "HEADROOM_STALE_AFTER_S": os.environ.get("HEADROOM_STALE_AFTER_S", "60"),
    }
    manage("migrate", "--noinput", "-v", "0", env=env)
    manage("create_demo_user", "--tiny-model", str(tiny_model), env=env)
    signal.signal(signal.SIGTERM, _interrupt)
    children = Children(env)
    try:
        children.start(
            "worker",
            [sys.executable, "-m", "celery", "-A", "config", "worker",
             "-Q", f"{QUEUE},{IMPORT_QUEUE}", "--concurrency", "1", "--prefetch-multiplier", "1",
             "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
            on_exit=WORKER_STOPPED,
        )  # fmt: skip
        children.start(
            "web",
            [sys.executable, "manage.py", "runserver", DEMO_ADDRESS, "--noreload"],
            on_exit=WEB_STOPPED,
        )
        launched = subprocess.run(
            [sys.executable, "manage.py", "launch_demo_sweep", "--queue", QUEUE],
            cwd=BASE_DIR, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        print(launched.stdout, end="")
        found = re.search(r"/runs/([0-9a-f-]{36})/", launched.stdout)
        if found is None:
            raise SystemExit(f"launch_demo_sweep printed no run link:\n{launched.stdout}")
        code = found.group(1)
        # When the sweep ends: the saved comparison and a customer report, links printed.
        children.start("finisher", [sys.executable, "manage.py", "finish_demo", code],
                       service=False)
        print(
            f"\nHeadroom demo at http://{DEMO_ADDRESS}/  (log in with the demo user above)\n"
            "The first sweep starts one CPU engine per max_num_seqs value (about a minute each);\n"
            "when it ends, the links to its saved comparison and customer report appear here.\n"
            "Ctrl-C stops the web server, the worker and its engines.",
            flush=True,
        )
        watch(children, address=DEMO_ADDRESS, stale_after_s=env["HEADROOM_STALE_AFTER_S"])
        print("Neither the web server nor the worker is running: the demo ends.", flush=True)
        return 1
    except KeyboardInterrupt:
        return 0
    except subprocess.CalledProcessError as exc:
        print(f"the demo sweep could not be launched:\n{exc.stderr}", file=sys.stderr)
        return 1
    finally:
        children.stop_all()


if __name__ == "__main__":
    sys.exit(main())
