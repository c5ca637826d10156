"""A bound on the CPU time a block of work may take in this process: the import worker's guard
against a file built to be slow to read.

RLIMIT_CPU counts the process's CPU time (every thread's); past its soft limit the kernel sends
SIGXCPU, once a second until the hard limit. The handler turns the first signal into
CpuTimeExceeded in the main thread, so the block unwinds (its transaction rolled back) and the
worker lives on to take its next task. Only the soft limit moves: a process that lowered its
hard limit could never raise it again.
"""

from __future__ import annotations

import math
import resource
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class CpuTimeExceeded(BaseException):
    """The block used its CPU time. A BaseException, as KeyboardInterrupt is, so that no
    `except Exception` on the way out mistakes it for a failure of the work itself."""

    def __init__(self, seconds: int) -> None:
        super().__init__(f"more than {seconds} s of CPU")
        self.seconds = seconds


def cpu_seconds_used() -> float:
    """This process's CPU time so far, user and system, every thread's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def cpu_time_limit(seconds: int) -> Iterator[None]:
    """Raise CpuTimeExceeded in the block once it has used `seconds` of CPU, or up to a second
    more: the kernel counts whole seconds of the process's time. Only in the main thread, where
    signal handlers run (Celery's prefork and solo pools run tasks there)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("a CPU time limit needs the main thread: run the worker with the "
                           "prefork or solo pool")  # fmt: skip
    saved = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(cpu_seconds_used()) + seconds
    # A limit already set (ulimit -t) is never loosened.
    limit = min([limit, *(bound for bound in saved if bound != resource.RLIM_INFINITY)])

    def stop(signum: int, frame: FrameType | None) -> None:
        resource.setrlimit(resource.RLIMIT_CPU, saved)  # no second signal while it unwinds
        raise CpuTimeExceeded(seconds)

    previous = signal.signal(signal.SIGXCPU, stop)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (limit, saved[1]))
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, saved)
        signal.signal(signal.SIGXCPU, previous)
