"""`python -m demo` (make demo): the whole dashboard on this machine, with a real engine.

Migrates the database (SQLite unless DATABASE_URL says otherwise), creates the demo user and
prints its credentials, registers the tiny model and the installed vLLM, starts the web server
and one Celery worker for the CPU node, launches a first sweep through the launch form's own
path, and prints the URL. When the sweep ends it saves the comparison of the smallest and the
best max_num_seqs setting and a customer report built from it, and prints their links.

Each child runs in its own process group and only those groups are signalled. A child that
stops is reported and the others keep going: when the worker dies, the web server keeps serving
and the run pages say the run lost its worker. Ctrl-C (or SIGTERM) stops everything; the
worker's engines stop with it (runner/engine/guard.py).

The broker is Redis when it answers at CELERY_BROKER_URL (default 127.0.0.1:6379); otherwise
kombu's filesystem transport under var/broker, which needs no server.

`--exit-when-done` (what `make test` runs, on a SQLite database of its own) waits for the
comparison and the report instead of serving on, then checks what a newcomer would see: the
sweep succeeded, the run, comparison and report pages answer 200, the report names the run
page's operating point, and once everything is stopped no process the demo started is left.
It prints how long each stage took and exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

BASE_DIR = Path(__file__).resolve().parent.parent
DEMO_ADDRESS = os.environ.get("HEADROOM_DEMO_ADDRESS", "127.0.0.1:8000")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
QUEUE = "cpu-local"
# Uploaded result files are parsed by the same worker, beside the web server (config/settings.py).
IMPORT_QUEUE = "imports"


# The longest a headless demo waits for its sweep, comparison and report (about 5 minutes on
# two cores), so a stuck run fails the check instead of hanging it.
HEADLESS_WAIT_S = 1800
# A stopping child's grace before its group is killed: the worker's warm shutdown lets its task
# stop its engines first.
STOP_GRACE_S = 60
POLL_S = 1.0
# How long a process the demo killed may take to go before it counts as left behind.
LEFTOVER_SETTLE_S = 10.0
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
        # Every process seen under a child, kept to check that none outlives the demo.
        self.seen: set[psutil.Process] = set()

    def start(
        self, name: str, command: list[str], *, service: bool = True, on_exit: str = "",
        capture: bool = False,
    ) -> Child:
        # Its own process group, to be stopped as one; not its own session, which would put it
        # in a scheduler autogroup of its own where a busy CPU engine can starve it
        # (runner/engine/).
        process = subprocess.Popen(command, cwd=BASE_DIR, env=self.env, process_group=0,
                                   stdout=subprocess.PIPE if capture else None, text=capture)
        child = Child(name, process, service, on_exit)
        self.children.append(child)
        return child

    def note_descendants(self) -> None:
        """Remember every process now running under a child (the worker's engines included)."""
        for child in self.children:
            with suppress(psutil.NoSuchProcess):
                leader = psutil.Process(child.process.pid)
                self.seen |= {leader, *leader.children(recursive=True)}

    def left_running(self, settle_s: float = LEFTOVER_SETTLE_S) -> list[str]:
        """Processes seen under the demo that still run (psutil tells a reused pid apart).

        A process killed a moment ago may take a little while to go, so it gets settle_s.
        """
        deadline = time.monotonic() + settle_s
        while (running := [p for p in self.seen if _still_running(p)]) and (
                time.monotonic() < deadline):
            time.sleep(0.1)
        return [f"{p.pid} {' '.join(_command_line(p))[:120]}" for p in running]

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


def _command_line(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # gone, or not ours to read
        return []


def _still_running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


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


class Stages:
    """How long each stage of the demo took, printed at the end of a headless run."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = time.monotonic() - started

    def table(self) -> str:
        width = max(len(name) for name in self.seconds)
        return "\n".join(f"  {name:<{width}}  {s:7.1f} s" for name, s in self.seconds.items())


def demo_environment(tiny_model: Path, broker: str) -> dict[str, str]:
    return {
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exit-when-done", action="store_true",
                        help="stop once the comparison and report are saved, check, and exit")
    headless = parser.parse_args(argv).exit_when_done
    tiny_model = Path(os.environ.get("HEADROOM_TINY_MODEL", BASE_DIR / "var" / "tiny-model"))
    env = demo_environment(tiny_model, choose_broker(os.environ.get("CELERY_BROKER_URL",
                                                                     DEFAULT_REDIS)))
    password = secrets.token_urlsafe(12)
    stages = Stages()
    with stages.timed("migrate"):
        manage("migrate", "--noinput", "-v", "0", env=env)
    with stages.timed("demo user and tiny model"):
        manage("create_demo_user", "--tiny-model", str(tiny_model), "--password", password,
               env=env)
    signal.signal(signal.SIGTERM, _interrupt)
    children = Children(env)
    try:
        with stages.timed("web, worker and launch"):
            code = _start_and_launch(children)
        finisher = children.start(
            "finisher",
            [sys.executable, "manage.py", "finish_demo", code,
             *(["--wait", str(HEADLESS_WAIT_S)] if headless else [])],
            service=False, capture=headless,
        )  # fmt: skip
        if headless:
            return _finish_headless(children, finisher, code, password, stages)
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


def _start_and_launch(children: Children) -> str:
    """The worker and the web server started, the first sweep launched: its run's code."""
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
        cwd=BASE_DIR, env=children.env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    print(launched.stdout, end="")
    found = re.search(r"/runs/([0-9a-f-]{36})/", launched.stdout)
    if found is None:
        raise SystemExit(f"launch_demo_sweep printed no run link:\n{launched.stdout}")
    return found.group(1)


def _finish_headless(
    children: Children, finisher: Child, code: str, password: str, stages: Stages
) -> int:
    with stages.timed("sweep, comparison and report"):
        output = _wait_for(children, finisher)
    print(output, end="", flush=True)
    problems = [] if finisher.process.returncode == 0 else [
        f"finish_demo failed ({describe_exit(finisher.process.returncode)})"]
    if not problems:
        with stages.timed("pages checked"):
            problems = check_pages(f"http://{DEMO_ADDRESS}", code, password, output)
    with stages.timed("stopped"):
        children.note_descendants()
        children.stop_all()
    problems += [f"still running after the demo stopped: {p}" for p in children.left_running()]
    print("Stages of the demo:\n" + stages.table(), flush=True)
    for problem in problems:
        print(f"DEMO CHECK FAILED: {problem}", flush=True)
    if not problems:
        print("Demo check passed.", flush=True)
    return 1 if problems else 0


def _wait_for(children: Children, finisher: Child) -> str:
    """The finisher's output once it exits; meanwhile every process under the demo is noted.

    The web server and the worker must live until then: if either stops, the sweep cannot end.
    """
    assert finisher.process.stdout is not None
    while finisher.process.poll() is None:
        children.note_descendants()
        stopped = [c.name for c in children.children if c.service and c.process.poll() is not None]
        if stopped:
            finisher.process.kill()
            finisher.process.wait()
            return f"{' and '.join(stopped)} stopped before the demo sweep ended\n"
        time.sleep(POLL_S)
    return finisher.process.stdout.read()


class _Attributes(HTMLParser):
    """The attributes of the elements with these ids in a page."""

    def __init__(self, ids: set[str]) -> None:
        super().__init__()
        self.ids = ids
        self.found: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id") in self.ids:
            self.found[str(values["id"])] = values


def element_attributes(page: str, *ids: str) -> dict[str, dict[str, str | None]]:
    parser = _Attributes(set(ids))
    parser.feed(page)
    return parser.found


def check_pages(base_url: str, code: str, password: str, finisher_output: str) -> list[str]:
    """What a newcomer opening the printed links would find wrong; empty when nothing is.

    The run's page and its comparison are read logged in as the demo user, the report logged
    out, as a customer opens it.
    """
    links = dict(re.findall(r"(/comparisons|/r)/([^/\s]+)/", finisher_output))
    if set(links) != {"/comparisons", "/r"}:
        return [f"finish_demo printed no comparison and report links:\n{finisher_output}"]
    with httpx.Client(base_url=base_url, timeout=60) as engineer:
        problems = _log_in(engineer, password)
        if problems:
            return problems
        run = engineer.get(f"/runs/{code}/")
        comparison = engineer.get(f"/comparisons/{links['/comparisons']}/")
        state = engineer.get(f"/runs/{code}/progress.json")
    report = httpx.get(f"{base_url}/r/{links['/r']}/", timeout=60)
    pages = {"run page": run, "run's progress": state, "comparison": comparison, "report": report}
    problems = [f"the {name} answered {r.status_code}" for name, r in pages.items()
                if r.status_code != 200]
    if problems:
        return problems
    if state.json()["state"] != "succeeded":
        problems.append(f"the sweep ended {state.json()['state']}")
    return problems + _same_operating_point(run.text, report.text) + _demo_diagnosis(run.text)


# The demo's sweep is built so the answer is known: at max_num_seqs 4 every burst of 16 or more
# queues behind the cap, and raising it is what the story must name.
DEMO_CAPPED_LADDER = re.compile(r"seqs=4(,[^:]*)?: the scheduler cap at every loaded level")
DEMO_STORY_START = "raising max_num_seqs from 4 to "


def _demo_diagnosis(run_page: str) -> list[str]:
    """The run page diagnoses the demo's capped config as the scheduler cap at every level and
    tells what raising it did."""
    ladders = [html.unescape(line) for line in re.findall(
        r"<li>(seqs=[^<]*)</li>", run_page.split('id="ladder-diagnoses"', 1)[-1])]
    story = re.search(r'<p id="sweep-change-output">([^<]*)</p>', run_page)
    problems = []
    if not any(DEMO_CAPPED_LADDER.match(line) for line in ladders):
        problems.append(f"the run page does not diagnose seqs=4 as the scheduler cap at every "
                        f"loaded level: {ladders}")
    if story is None or DEMO_STORY_START not in html.unescape(story.group(1)):
        problems.append("the run page's story does not say what raising max_num_seqs from 4 "
                        f"did: {html.unescape(story.group(1)) if story else 'no story'}")
    return problems


def _log_in(client: httpx.Client, password: str) -> list[str]:
    client.get("/accounts/login/")
    answer = client.post("/accounts/login/", data={
        "username": "demo", "password": password,
        "csrfmiddlewaretoken": client.cookies.get("csrftoken", ""),
    })
    if answer.status_code != 302:
        return [f"the demo user could not log in ({answer.status_code})"]
    return []


def _same_operating_point(run_page: str, report: str) -> list[str]:
    """The run page and the report name one operating point: its config and output tok/s."""
    run = element_attributes(run_page, "operating-point-chosen").get("operating-point-chosen")
    shown = element_attributes(report, "curve-selected").get("curve-selected")
    if run is None or shown is None:
        return ["the run page or the report names no operating point"]
    keys = ("data-config", "data-output-throughput")
    if [run[k] for k in keys] != [shown[k] for k in keys]:
        return [f"the report's operating point {[shown[k] for k in keys]} is not the run "
                f"page's {[run[k] for k in keys]}"]
    return []


if __name__ == "__main__":
    sys.exit(main())
