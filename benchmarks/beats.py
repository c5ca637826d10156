"""A thread beside a long task that writes its state to the task's row every heartbeat.

Both a sweep (heartbeat, progress, cancel) and an import (points read) run for minutes inside
one call that must not stop to write: the sweep's client event loop is timing requests, the
import's points go in one transaction the polling page cannot see into. The thread has its
own database connection, so its writes commit on their own, and closes it when it ends.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Self

from django.conf import settings
from django.db import connection


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
