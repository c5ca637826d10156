"""Benchmark state transitions, each one conditional UPDATE (see Benchmark's docstring).

A transition that finds the row in another state changes nothing and returns False, so two
deliveries of one task, or a reaper racing a finishing worker, can never both win.
"""

from __future__ import annotations

import logging
import socket
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmarks.models import Benchmark, Node
from benchmarks.models.catalog import heartbeat_cutoff

log = logging.getLogger(__name__)
State = Benchmark.State

ERROR_DETAIL_CHARS = 20_000


def claim(benchmark_id: int, task_id: str, node_queue: str) -> bool:
    """queued -> running, by the worker of node_queue only.

    False when another delivery already claimed it, it was cancelled, or it belongs to another
    node: a message that reached the wrong queue must not start a sweep on these GPUs.
    """
    now = timezone.now()
    mine = Benchmark.objects.filter(pk=benchmark_id, state=State.QUEUED, node__queue=node_queue)
    return bool(
        mine.update(
            state=State.RUNNING,
            started_at=now,
            heartbeat_at=now,
            celery_task_id=task_id,
            progress_note="starting",
        )
    )


def finish(
    benchmark_id: int,
    state: str,
    *,
    error_type: str = "",
    error_message: str = "",
    error_detail: str = "",
    note: str = "",
) -> bool:
    """running -> a final state."""
    assert state in Benchmark.FINAL_STATES, state
    changes: dict[str, object] = {
        "state": state,
        "finished_at": timezone.now(),
        "error_type": error_type[:100],
        "error_message": error_message,
        "error_detail": error_detail[-ERROR_DETAIL_CHARS:],
        "progress_note": note[:300] or state,
    }
    if state == State.SUCCEEDED:
        changes["progress"] = 1.0
    return bool(
        Benchmark.objects.filter(pk=benchmark_id, state=State.RUNNING).update(**changes)
    )


def request_cancel(benchmark: Benchmark) -> str:
    """Cancel a queued run at once; ask a running one to stop (its worker stops the engine).

    Returns the resulting state as the user should read it.
    """
    cancelled_now = Benchmark.objects.filter(pk=benchmark.pk, state=State.QUEUED).update(
        state=State.CANCELLED,
        finished_at=timezone.now(),
        progress_note="cancelled before it started",
    )
    if cancelled_now:
        # The message stays in the queue; the worker's claim will fail and it will exit.
        return State.CANCELLED
    asked = Benchmark.objects.filter(pk=benchmark.pk, state=State.RUNNING).update(
        cancel_requested=True, progress_note="cancel requested"
    )
    # Not revoke(terminate=True): killing the task process would leave engines running.
    return "cancelling" if asked else Benchmark.objects.get(pk=benchmark.pk).state


def reap_stale(now: datetime | None = None) -> int:
    """running -> failed for every run whose heartbeat is older than HEADROOM_STALE_AFTER_S.

    Any node's worker and the web pages call this, so a run ends even when its own node's
    worker never comes back: no filter by node. The UPDATE repeats the stale condition, so a
    run whose worker beat again, or finished, since the read is left alone. The read first
    keeps the common case (nothing stale, every page poll) free of writes, which matters on
    SQLite (make demo), where any write takes the database's single write lock.
    """
    now = now or timezone.now()
    stale = Benchmark.objects.stale(now)
    if not stale.exists():
        return 0
    cutoff = heartbeat_cutoff(now)
    reaped = stale.update(
        state=State.FAILED,
        finished_at=now,
        error_type=Benchmark.WORKER_LOST,
        error_message=(
            f"No heartbeat since before {cutoff:%Y-%m-%d %H:%M:%S} UTC: the worker stopped "
            "(killed, out of memory, or past its hard time limit). Finished points are kept."
        ),
        progress_note="worker lost",
    )
    if reaped:
        log.warning("reaped %d benchmark(s) with a stale heartbeat", reaped)
    return reaped


def fail_orphans(node: Node) -> int:
    """At worker start: a run still 'running' on this node cannot be running any more.

    One worker per node at concurrency 1, so a restarted worker proves its predecessor died.
    """
    return Benchmark.objects.filter(node=node, state=State.RUNNING).update(
        state=State.FAILED,
        finished_at=timezone.now(),
        error_type=Benchmark.WORKER_LOST,
        error_message="The worker restarted while this run was in progress. "
        "Finished points are kept.",
        progress_note="worker lost",
    )


def register_node(queue: str, launch_style: str, hardware: dict[str, Any] | None) -> Node:
    """Create or refresh the Node a worker serves; hardware comes from runner.engine.provenance."""
    hardware = hardware or {}
    facts = {
        "hostname": str(hardware.get("host") or socket.gethostname()),
        "launch_style": launch_style,
        "gpu_name": str(hardware.get("gpu_name") or ""),
        "gpu_count": int(hardware.get("gpu_count") or 0),
        "gpu_memory_mib": hardware.get("gpu_memory_mib"),
        "driver_version": str(hardware.get("driver_version") or ""),
        "cuda_version": str(hardware.get("cuda_version") or ""),
        "cpu_model": str(hardware.get("cpu_model") or ""),
        "cpu_count": hardware.get("cpu_count"),
        "last_heartbeat_at": timezone.now(),
    }
    with transaction.atomic():
        node, _ = Node.objects.update_or_create(queue=queue, defaults=facts)
    return node


def touch_node(queue: str) -> None:
    Node.objects.filter(queue=queue).update(last_heartbeat_at=timezone.now())
