"""A run whose worker died: the pages say so from its row at once, and anyone can end it.

A dead worker stops beating. A run still 'running' whose heartbeat is older than
HEADROOM_STALE_AFTER_S is shown as 'worker lost' before any reaper has run; the reaper, run by
any node's worker or by the web pages, ends it as failed and keeps its finished points. A
heartbeat exactly at the cutoff still counts, and a live run is never touched.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from benchmarks.models import Benchmark, Node
from benchmarks.models.runs import BenchmarkQuerySet
from benchmarks.storage.points import store_point
from benchmarks.worker import beats, lifecycle, tasks
from tests.rows import (
    launch_form_data,
    make_benchmark,
    make_node,
    make_point_result,
)

pytestmark = pytest.mark.django_db

STALE_AFTER_S = 300


@pytest.fixture(autouse=True)
def stale_after(settings):
    settings.HEADROOM_STALE_AFTER_S = STALE_AFTER_S


def ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def run_with_heartbeat(heartbeat_at, node: Node | None = None) -> Benchmark:
    """A running run that stored one point before its last heartbeat."""
    benchmark = make_benchmark(node=node, state="running", heartbeat_at=heartbeat_at,
                               started_at=heartbeat_at - timedelta(minutes=5))
    store_point(benchmark, make_point_result())
    benchmark.refresh_from_db()
    return benchmark


@pytest.fixture
def dead_run() -> Benchmark:
    return run_with_heartbeat(ago(STALE_AFTER_S + 60))


@pytest.fixture
def live_run() -> Benchmark:
    return run_with_heartbeat(ago(10))


@pytest.fixture
def no_reaper(monkeypatch):
    """The pages as they read the row, before any reaper has ended the run."""
    monkeypatch.setattr(lifecycle, "reap_stale", lambda now=None: 0)


def assert_ended_as_worker_lost(benchmark: Benchmark) -> None:
    benchmark.refresh_from_db()
    assert (benchmark.state, benchmark.error_type) == ("failed", "WorkerLost")
    assert benchmark.finished_at is not None
    assert (benchmark.points.count(), benchmark.points_done) == (1, 1)  # finished points kept
    assert benchmark.worker_lost


# ---------------------------------------------------------------------------------------------
# Seen at once, from the row
# ---------------------------------------------------------------------------------------------


def test_a_running_run_with_a_stale_heartbeat_is_worker_lost_before_any_reaper(dead_run):
    assert dead_run.state == "running"
    assert dead_run.heartbeat_is_stale()
    assert dead_run.worker_lost


def test_the_run_page_says_the_worker_was_lost_and_when_it_last_beat(
    owner_client, dead_run, no_reaper
):
    page = owner_client.get(f"/runs/{dead_run.code}/").content.decode()
    heartbeat = f"{dead_run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC"
    assert 'id="run-state" title="running: its worker stopped">worker lost<' in page
    assert f"The worker stopped: no heartbeat since {heartbeat}." in page
    assert Benchmark.objects.get(pk=dead_run.pk).state == "running"  # nothing reaped it


def test_the_run_list_says_the_worker_was_lost_and_when_it_last_beat(
    owner_client, dead_run, no_reaper
):
    page = owner_client.get("/runs/").content.decode()
    assert ">worker lost</span>" in page
    assert f"last heartbeat {dead_run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC" in page


def test_the_progress_json_says_the_worker_was_lost(owner_client, dead_run, no_reaper):
    data = owner_client.get(f"/runs/{dead_run.code}/progress.json").json()
    assert (data["state"], data["worker_lost"]) == ("running", True)
    assert data["heartbeat_at"] == dead_run.heartbeat_at.isoformat()


def test_a_reaped_run_still_says_its_worker_was_lost(owner_client, dead_run):
    lifecycle.reap_stale()
    page = owner_client.get("/runs/").content.decode()
    assert 'title="failed: its worker stopped">worker lost<' in page
    assert f"last heartbeat {dead_run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC" in page


def test_a_run_that_failed_for_another_reason_is_not_called_worker_lost(dead_run):
    Benchmark.objects.filter(pk=dead_run.pk).update(state="failed", error_type="RuntimeError")
    dead_run.refresh_from_db()
    assert not dead_run.worker_lost


# ---------------------------------------------------------------------------------------------
# Ended by anyone: another node's worker, or the web pages
# ---------------------------------------------------------------------------------------------


def test_another_nodes_worker_heartbeat_ends_a_dead_run(dead_run):
    other = make_node("gpu-b", last_heartbeat_at=ago(STALE_AFTER_S + 1))
    beats.NodeHeartbeat(other.queue).beat(reap=True)
    assert_ended_as_worker_lost(dead_run)
    other.refresh_from_db()
    assert other.is_alive()  # and it kept its own node's heartbeat


def test_the_run_page_poll_ends_a_dead_run_with_no_worker_left(owner_client, dead_run):
    data = owner_client.get(f"/runs/{dead_run.code}/progress.json").json()
    assert (data["state"], data["final"], data["worker_lost"]) == ("failed", True, True)
    assert_ended_as_worker_lost(dead_run)


def test_the_run_list_ends_a_dead_run_with_no_worker_left(owner_client, dead_run):
    assert owner_client.get("/runs/").status_code == 200
    assert_ended_as_worker_lost(dead_run)


def test_a_live_run_is_left_running_by_every_reaper(owner_client, live_run):
    owner_client.get("/runs/")
    data = owner_client.get(f"/runs/{live_run.code}/progress.json").json()
    beats.NodeHeartbeat("gpu-b").beat(reap=True)
    live_run.refresh_from_db()
    assert (live_run.state, live_run.error_type, live_run.finished_at) == ("running", "", None)
    assert (data["state"], data["worker_lost"]) == ("running", False)
    assert ">worker lost<" not in owner_client.get(f"/runs/{live_run.code}/").content.decode()


def test_a_heartbeat_exactly_at_the_cutoff_is_not_stale_and_one_just_older_is():
    now = timezone.now()
    cutoff = now - timedelta(seconds=STALE_AFTER_S)
    at_cutoff = run_with_heartbeat(cutoff)
    assert not at_cutoff.heartbeat_is_stale(now)
    assert lifecycle.reap_stale(now) == 0
    assert Benchmark.objects.get(pk=at_cutoff.pk).state == "running"
    node = make_node("gpu-b", last_heartbeat_at=cutoff)
    assert node.is_alive(now)

    Benchmark.objects.filter(pk=at_cutoff.pk).update(heartbeat_at=cutoff - timedelta(microseconds=1))
    at_cutoff.refresh_from_db()
    assert at_cutoff.heartbeat_is_stale(now)
    assert lifecycle.reap_stale(now) == 1
    assert not Node.objects.get(pk=node.pk).is_alive(now + timedelta(microseconds=1))


def test_a_run_whose_worker_beat_after_the_reapers_read_is_not_reaped(live_run, monkeypatch):
    # The read says "stale"; the worker's heartbeat lands before the UPDATE. The UPDATE's own
    # condition must still refuse the row.
    monkeypatch.setattr(BenchmarkQuerySet, "exists", lambda self: True)
    assert lifecycle.reap_stale() == 0
    assert Benchmark.objects.get(pk=live_run.pk).state == "running"


def test_a_worker_still_alive_after_its_run_was_reaped_stops_its_sweep(dead_run):
    lifecycle.reap_stale()
    cancel = threading.Event()
    beats.RunMonitor(dead_run.pk, cancel).beat_once()
    assert cancel.is_set()


def test_a_live_runs_monitor_beats_without_stopping_it(live_run):
    cancel = threading.Event()
    beats.RunMonitor(live_run.pk, cancel).beat_once()
    assert not cancel.is_set()
    assert Benchmark.objects.get(pk=live_run.pk).heartbeat_at > live_run.heartbeat_at


# ---------------------------------------------------------------------------------------------
# Offline nodes: shown on the launch form, and a launch onto one warns that the run will wait
# ---------------------------------------------------------------------------------------------


def test_the_launch_form_shows_which_nodes_are_offline(owner_client):
    make_node("gpu-a", last_heartbeat_at=ago(5))
    stale = make_node("gpu-b", last_heartbeat_at=ago(STALE_AFTER_S + 1))
    make_node("gpu-c")  # registered by hand, its worker never started
    page = owner_client.get("/runs/new/").content.decode()
    assert "gpu-a: online" in page
    since = f"{stale.last_heartbeat_at:%Y-%m-%d %H:%M:%S} UTC"
    assert f"gpu-b is offline (no worker heartbeat since {since}): a run launched" in page
    assert "gpu-c is offline (no worker heartbeat yet)" in page


@pytest.mark.parametrize(("heartbeat_s", "warned"), [(5, False), (STALE_AFTER_S + 1, True)])
def test_launching_onto_an_offline_node_warns_that_the_run_waits(
    owner_client, monkeypatch, heartbeat_s, warned
):
    monkeypatch.setattr(tasks, "enqueue_benchmark", lambda benchmark: None)
    node = make_node("gpu-b", last_heartbeat_at=ago(heartbeat_s))
    response = owner_client.post("/runs/new/", launch_form_data(node))
    assert Benchmark.objects.get().state == "queued"
    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert said[0] == "Queued on gpu-b."
    assert any("gpu-b is offline" in m and "waits in its queue" in m for m in said) is warned


def test_a_queued_run_on_an_offline_node_says_it_waits_for_its_worker(owner_client):
    node = make_node("gpu-b", last_heartbeat_at=ago(STALE_AFTER_S + 1))
    benchmark = make_benchmark(node=node)
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="node-offline"' in page and "gpu-b is offline" in page
