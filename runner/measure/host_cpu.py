"""Who used the host's CPUs during a point: the engines, this runner, or someone else.

The host's busy time comes from /proc/stat; the engines' from their process groups (each guard
leads one, runner.engine.process); this runner's from os.times(), which also holds the client
worker processes once they are reaped. What is left is other processes' work: on a shared host
it slows the engine's scheduler and the client alike, and a point measured under it says more
about the neighbour than about the engine (HostCpu.disturbed).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.schema.result import HostCpu

PROC = Path("/proc")


@dataclass(frozen=True)
class CpuSnapshot:
    """Running totals in CPU seconds at one monotonic instant."""

    t: float
    busy_s: float
    steal_s: float | None
    cpus: int
    own_s: float
    engine_s: float | None


def host_times(proc: Path = PROC) -> tuple[float, float | None, int]:
    """(busy seconds, steal seconds or None, CPU count) of the whole host from /proc/stat.

    Busy is user + nice + system + irq + softirq (guest time is inside user); idle, iowait and
    steal are not work done on this host's behalf.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    lines = (proc / "stat").read_text().splitlines()
    fields = [int(value) for value in lines[0].split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
    steal = fields[7] / ticks if len(fields) > 7 else None
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return busy / ticks, steal, cpus


def group_cpu_s(groups: Sequence[int], proc: Path = PROC) -> float:
    """CPU seconds of every live process in the given process groups, with what their reaped
    children used (those children were group members too)."""
    wanted = set(groups)
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # the process ended between the listing and the read
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        rest = text[text.rfind(")") + 2:].split()
        if int(rest[2]) in wanted:
            total += int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])
    return total / ticks


def own_cpu_s() -> float:
    """This process's CPU seconds with its reaped children's (the client workers')."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def snapshot(engine_groups: Sequence[int] | None, proc: Path = PROC) -> CpuSnapshot | None:
    """The host's totals now; None where /proc/stat cannot be read (not Linux).

    engine_groups: the engines' process groups; None when the engine is not a process this
    runner started (an attached server, a container), so its work cannot be told apart.
    """
    try:
        busy, steal, cpus = host_times(proc)
        engine = group_cpu_s(engine_groups, proc) if engine_groups is not None else None
    except (OSError, ValueError, IndexError):
        return None
    return CpuSnapshot(t=time.monotonic(), busy_s=busy, steal_s=steal, cpus=cpus,
                       own_s=own_cpu_s(), engine_s=engine)


def host_cpu(start: CpuSnapshot | None, end: CpuSnapshot | None) -> HostCpu | None:
    """What each party used between two snapshots; None when either is missing."""
    if start is None or end is None or end.t <= start.t:
        return None
    engine = (end.engine_s - start.engine_s
              if end.engine_s is not None and start.engine_s is not None else None)
    steal = (end.steal_s - start.steal_s
             if end.steal_s is not None and start.steal_s is not None else None)
    return HostCpu(
        window_s=end.t - start.t,
        cpus=end.cpus,
        busy_s=max(0.0, end.busy_s - start.busy_s),
        own_s=max(0.0, end.own_s - start.own_s),
        engine_s=None if engine is None else max(0.0, engine),
        steal_s=None if steal is None else max(0.0, steal),
    )
