"""The worker's threads: one beside a long task that writes its state to the task's row every
heartbeat (RowBeat, and the sweep's RunMonitor), and the node's own heartbeat (NodeHeartbeat).

Both a sweep (heartbeat, progress, cancel) and an import (points read) run for minutes inside
one call that must not stop to write: the sweep's client event loop is timing requests, the
import's points go in one transaction the polling page cannot see into. The thread has its
own database connection, so its writes commit on their own, and closes it when it ends.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType
from typing import Self

from django.conf import settings
from django.db import connection
from django.utils import timezone

from benchmarks.models import Benchmark
from benchmarks.worker import lifecycle
from runner.sweep import Progress

log = logging.getLogger(__name__)
State = Benchmark.State

# The worker's node heartbeat also runs the reaper, but not on every beat (30 s at the default
# HEADROOM_HEARTBEAT_S).
REAP_EVERY_BEATS = 15


class RowBeat:
    """Calls beat_once() every HEADROOM_HEARTBEAT_S while its `with` block runs."""

    thread_name = "headroom-beat"

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def beat_once(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()
        self.thread.join(timeout=settings.HEADROOM_HEARTBEAT_S + 5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(settings.HEADROOM_HEARTBEAT_S):
                self.beat_once()
        finally:
            connection.close()  # this thread's own connection


class RunMonitor(RowBeat):
    """A thread beside the sweep: heartbeat, progress and cancel, all through the database.

    The runner calls `report` from inside its client's event loop, where a database query
    would both be refused by Django (async context) and stall the requests being timed. So
    `report` only keeps the latest Progress in memory; this thread writes it with the
    heartbeat every HEADROOM_HEARTBEAT_S, and turns a cancel request from the page into the
    runner's cancel Event. The thread lives in the task's process and dies with it: that is
    what lets the reaper tell a dead worker from a long engine start.
    """

    thread_name = "headroom-monitor"

    def __init__(self, benchmark_id: int, cancel: threading.Event) -> None:
        self.benchmark_id = benchmark_id
        self.cancel = cancel
        self.latest: Progress | None = None
        self.written: Progress | None = None
        super().__init__()

    def report(self, progress: Progress) -> None:
        self.latest = progress  # one attribute store: safe from any thread, never blocks

    def beat_once(self) -> None:
        rows = Benchmark.objects.filter(pk=self.benchmark_id, state=State.RUNNING)
        changes: dict[str, object] = {"heartbeat_at": timezone.now()}
        progress = self.latest
        if progress is not None and progress != self.written:
            changes["progress"] = progress_fraction(progress)
            changes["progress_note"] = progress.note[:300]
            self.written = progress
        if not rows.update(**changes):
            # No longer running: reaped while this worker lived (its heartbeat stalled past
            # HEADROOM_STALE_AFTER_S) or deleted. Stop the engine rather than hold the GPUs
            # for a run that has already ended.
            log.warning("benchmark %s is no longer running: stopping its sweep", self.benchmark_id)
            self.cancel.set()
        elif rows.filter(cancel_requested=True).exists():
            self.cancel.set()


def progress_fraction(progress: Progress) -> float:
    """Finished points plus the finished share of the current point's requests, over all."""
    if not progress.points_total:
        return 0.0
    within = progress.requests_done / progress.requests_total if progress.requests_total else 0.0
    return min(max((progress.points_done + within) / progress.points_total, 0.0), 1.0)


class NodeHeartbeat(threading.Thread):
    """In the worker's main process: keeps the node's heartbeat fresh and reaps dead runs.

    The reaper it runs ends stale runs of every node, not only its own: a node whose worker
    died has nobody else to end them (the web pages reap too, for a fleet with no worker).
    """

    def __init__(self, queue: str) -> None:
        super().__init__(name="headroom-node-heartbeat", daemon=True)
        self.queue = queue

    def run(self) -> None:
        beats = 0
        while True:
            time.sleep(settings.HEADROOM_HEARTBEAT_S)
            beats += 1
            self.beat(reap=beats % REAP_EVERY_BEATS == 0)

    def beat(self, *, reap: bool) -> None:
        try:
            lifecycle.touch_node(self.queue)
            if reap:
                lifecycle.reap_stale()
        except Exception:  # a database blip must not end the heartbeat
            log.exception("node heartbeat failed")
            connection.close()
