"""make demo: its first sweep passes the launch form, it finds a broker with or without Redis,
and one child's death leaves the others running while Ctrl-C still stops every process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import suppress
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from dashboard.forms_launch import LaunchForm
from demo.management.commands.launch_demo_sweep import DEMO_FORM
from demo.run import (
    Children,
    Stages,
    _demo_diagnosis,
    _same_operating_point,
    check_pages,
    choose_broker,
    describe_exit,
    watch,
)
from runner.schema.plan import SweepPlan
from tests.rows import make_checkpoint, make_node, make_runtime


def test_the_demo_sweep_is_a_valid_launch(db):
    node = make_node(queue="cpu-local", launch_style="cpu", gpu_count=0, gpu_name="")
    node.last_heartbeat_at = timezone.now()
    node.save()
    data = {
        **DEMO_FORM,
        "node": node.pk,
        "checkpoint": make_checkpoint(repo=f"{settings.HEADROOM_MODEL_DIRS[0]}/tiny", revision="").pk,
        "runtime": make_runtime().pk,
    }
    form = LaunchForm(data)
    assert form.is_valid(), form.errors
    plan: SweepPlan = form.cleaned_data["plan"]
    assert [c.max_num_seqs for c in plan.engine_configs] == [4, 16, 64]
    assert [load.num_requests for load in plan.loads] == [16, 32, 64, 128]
    # A CPU engine's burst lasts about a second: its queue is sampled every 0.1 s, not 0.5 s.
    assert plan.sample_interval_s == 0.1


def _run_page(ladder: str, story: str) -> str:
    return (f'<ul id="ladder-diagnoses"><li>{ladder}</li><li>seqs=64: no limit</li></ul>'
            f'<p id="sweep-change-output">{story}</p>')


def test_the_demo_check_wants_the_cap_at_every_level_and_the_story_of_raising_it():
    story = "At burst 128, raising max_num_seqs from 4 to 64 raised output 1.98x"
    capped = "seqs=4,len=1024: the scheduler cap at every loaded level (burst 16 to burst 128)"
    assert _demo_diagnosis(_run_page(capped, story)) == []
    mixed = "seqs=4,len=1024: the scheduler cap from burst 16 to burst 32; an unclear limit"
    assert "does not diagnose seqs=4" in _demo_diagnosis(_run_page(mixed, story))[0]
    mixed = "seqs=40: the scheduler cap at every loaded level (burst 16 to burst 128)"
    assert "does not diagnose seqs=4" in _demo_diagnosis(_run_page(mixed, story))[0]
    other = "At burst 128, changing the engine config from a to b left output level"
    assert "does not say what raising" in _demo_diagnosis(_run_page(capped, other))[0]


def test_it_uses_redis_when_it_answers():
    url = "redis://127.0.0.1:6379/0"
    assert choose_broker(url) == url


def test_it_falls_back_to_a_filesystem_broker_when_redis_is_down():
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert choose_broker(f"redis://127.0.0.1:{port}/0") == "filesystem://"


def test_the_filesystem_broker_gets_its_folders(tmp_path):
    code = (
        "import django, os; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'])"
    )
    env = {"CELERY_BROKER_URL": "filesystem://", "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "PATH": "/usr/bin:/bin"}  # the demo's own settings: DEBUG on, set
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().endswith("var/broker/messages")


# ---------------------------------------------------------------------------------------------
# The supervisor: real child processes in their own process groups
# ---------------------------------------------------------------------------------------------

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def children():
    started = Children(dict(os.environ))
    yield started
    # What a failing test left behind: the groups it started, and nothing else.
    for child in started.children:
        if child.process.returncode is None:
            with suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait()


@pytest.fixture
def pid_file(tmp_path):
    """Where leaves_a_grandchild writes its grandchild's pid; a grandchild still running after
    the test (the code under test failed to stop it) is killed here."""
    path = tmp_path / "grandchild.pid"
    yield path
    if path.exists() and path.read_text() and is_running(int(path.read_text())):
        os.kill(int(path.read_text()), signal.SIGKILL)


def returns_within(seconds: float, function, **kwargs) -> None:
    """Fail rather than hang when a supervisor call does not return."""
    thread = threading.Thread(target=function, kwargs=kwargs, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function.__name__} did not return within {seconds} s"


def leaves_a_grandchild(pid_file: Path) -> list[str]:
    """A child that starts a process in its group which ignores SIGTERM (as an engine might
    while it shuts down), writes that process's pid, then sleeps."""
    code = (
        "import subprocess, sys, time\n"
        "keep = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', keep])\n"
        f"open({str(pid_file)!r}, 'w').write(str(grandchild.pid))\n"
        "time.sleep(600)\n"
    )
    return [sys.executable, "-c", code]


def wait_for(condition, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s")


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphaned zombie may wait a while for its new parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def read_pid(pid_file: Path) -> int:
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text()))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_a_dead_worker_leaves_the_web_server_serving(children, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    web = children.start("web", [sys.executable, "-m", "http.server", str(port), "--bind",
                                 "127.0.0.1", "--directory", str(tmp_path)])
    worker = children.start("worker", SLEEPER, on_exit="worker stopped")
    wait_for(lambda: answers(url))
    os.kill(worker.process.pid, signal.SIGKILL)
    exited = wait_for(children.newly_exited)
    assert [child.name for child in exited] == ["worker"]
    assert describe_exit(worker.process.returncode) == "killed by SIGKILL"
    assert answers(url)
    assert web.process.returncode is None
    assert children.any_service_running()
    assert children.newly_exited() == []  # reported once


def test_a_dead_workers_leftovers_in_its_group_are_stopped_at_once(children, pid_file):
    worker = children.start("worker", leaves_a_grandchild(pid_file))
    grandchild = read_pid(pid_file)
    os.kill(worker.process.pid, signal.SIGKILL)
    wait_for(children.newly_exited)
    wait_for(lambda: not is_running(grandchild))


def test_stopping_the_demo_ends_every_process_its_children_started(children, pid_file):
    web = children.start("web", SLEEPER)
    worker = children.start("worker", leaves_a_grandchild(pid_file))
    grandchild = read_pid(pid_file)
    # The leaders' exit ends the wait, not the grace; the SIGTERM-proof grandchild is killed.
    returns_within(10, children.stop_all, grace_s=30)
    assert web.process.returncode == worker.process.returncode == -signal.SIGTERM
    wait_for(lambda: not is_running(grandchild))


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(children):
    ignores_sigterm = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    )
    child = children.start("worker", [sys.executable, "-c", ignores_sigterm])
    time.sleep(0.5)  # let it install its handler
    returns_within(10, children.stop_all, grace_s=1)
    assert child.process.returncode == -signal.SIGKILL


def test_the_demo_watch_says_which_child_stopped_and_ends_when_both_services_have(
    children, capsys
):
    children.start("worker", [sys.executable, "-c", "raise SystemExit(3)"],
                   on_exit="worker stopped ({how}); pages served at {address}")
    children.start("web", [sys.executable, "-c", "import time; time.sleep(1)"],
                   on_exit="web stopped ({how})")
    children.start("finisher", SLEEPER, service=False)  # does not keep the demo going
    returns_within(20, watch, children=children, poll_s=0.05, address="127.0.0.1:8000")
    out = capsys.readouterr().out
    assert "worker stopped (exit code 3); pages served at 127.0.0.1:8000" in out
    assert "web stopped (exit code 0)" in out
    assert out.index("worker stopped") < out.index("web stopped")


def escapes_its_group(pid_file: Path) -> list[str]:
    """A child whose grandchild leaves the group in a session of its own, which stopping the
    group cannot reach: what a process left behind by the demo looks like."""
    code = (
        "import subprocess, sys, time\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(grandchild.pid))\n"
        "time.sleep(600)\n"
    )
    return [sys.executable, "-c", code]


def test_a_process_left_running_after_the_demo_stops_is_named(children, pid_file):
    children.start("worker", escapes_its_group(pid_file))
    grandchild = read_pid(pid_file)
    children.note_descendants()
    children.stop_all(grace_s=5)
    assert [line.split()[0] for line in children.left_running(settle_s=1)] == [str(grandchild)]
    os.kill(grandchild, signal.SIGKILL)
    wait_for(lambda: not is_running(grandchild))
    assert children.left_running() == []


def test_nothing_is_named_left_running_when_the_demo_stopped_everything(children, pid_file):
    children.start("worker", leaves_a_grandchild(pid_file))
    read_pid(pid_file)
    children.note_descendants()
    assert len(children.seen) == 2
    children.stop_all(grace_s=1)
    assert children.left_running() == []


RUN_PAGE = ('<p id="operating-point-chosen" data-point-key="k" data-config="max_num_seqs=64" '
            'data-load="burst 128" data-output-throughput="2258.1"><strong>x</strong></p>')


def report_page(config: str, throughput: str) -> str:
    return (f'<p><span id="curve-selected" data-config="{config}" '
            f'data-output-throughput="{throughput}">max_num_seqs=64</span></p>')


def test_the_report_names_the_run_pages_operating_point():
    assert _same_operating_point(RUN_PAGE, report_page("max_num_seqs=64", "2258.1")) == []


@pytest.mark.parametrize("config, throughput", [("max_num_seqs=16", "2258.1"),
                                                ("max_num_seqs=64", "2258.0")])
def test_a_report_naming_another_operating_point_fails_the_demo_check(config, throughput):
    (problem,) = _same_operating_point(RUN_PAGE, report_page(config, throughput))
    assert problem.startswith(f"the report's operating point ['{config}', '{throughput}']")


def test_a_page_without_an_operating_point_fails_the_demo_check():
    assert _same_operating_point(RUN_PAGE, "<p>No operating point</p>") == [
        "the run page or the report names no operating point"]


def test_the_demo_check_wants_both_printed_links():
    only_comparison = "Saved comparison x (controlled): /comparisons/abc/\n"
    (problem,) = check_pages("http://127.0.0.1:1", "code", "pw", only_comparison)
    assert problem.startswith("finish_demo printed no comparison and report links")


def test_each_stage_is_timed_even_when_it_fails():
    stages = Stages()
    with stages.timed("migrate"):
        time.sleep(0.01)
    with pytest.raises(RuntimeError), stages.timed("launch"):
        raise RuntimeError
    assert list(stages.seconds) == ["migrate", "launch"]
    assert stages.seconds["migrate"] >= 0.01
    assert stages.table().splitlines()[0].startswith("  migrate ")
