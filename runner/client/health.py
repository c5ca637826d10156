"""Whether the client kept up: CPU saturation, loop lag and CPU steal per job."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from runner.schema.result import ClientHealth

# A worker's busiest core above this fraction cannot promise on-time stamps.
SATURATED_CPU_FRACTION = 0.9
# Event-loop lag (overshoot of a short sleep) that distorts per-token times: vLLM inter-token
# gaps are ~5-50 ms, so a 99th-percentile lag of 5 ms is already a 10-100% error on some of them.
SATURATED_LOOP_LAG_P99_MS = 5.0
LOOP_TICK_S = 0.005
# A lagging client whose CPUs lost this share of the load's time to the hypervisor (steal) is
# said to have been starved by its host: a stolen millisecond stamps every arrival in it late,
# and a few percent already breaks a 1 ms p99 (docs/performance.md, "Client: streamed SSE
# events per client process").
STEAL_BLAME_SHARE = 0.02
PROC_STAT = "/proc/stat"


@dataclass
class JobStats:
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    lags_ms: list[float] = field(default_factory=list)
    steal_share: float | None = None  # None: the kernel does not report steal


def cpu_steal_s(proc_stat: str = PROC_STAT) -> dict[int, float]:
    """CPU -> seconds so far that the hypervisor ran another guest while this virtual CPU had
    work (the steal column of /proc/stat); empty where there is no such file or column."""
    try:
        with open(proc_stat) as stat:
            text = stat.read()
    except OSError:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    steal = {}
    for line in text.splitlines():
        name, *fields = line.split()
        # cpuN user nice system idle iowait irq softirq steal ...: steal is the 8th figure.
        if name.startswith("cpu") and name[3:].isdigit() and len(fields) >= 8:
            steal[int(name[3:])] = int(fields[7]) / ticks
    return steal


def steal_share(
    before: dict[int, float], after: dict[int, float], cpus: set[int], wall_s: float
) -> float | None:
    """The share of `cpus`' time over wall_s that the hypervisor took: steal summed over the
    CPUs, divided by wall_s times their count (a process allowed on two CPUs can use either).
    None when the kernel did not report steal for one of them, or nothing was timed."""
    if wall_s <= 0 or not cpus or not all(cpu in before and cpu in after for cpu in cpus):
        return None
    stolen = sum(after[cpu] - before[cpu] for cpu in cpus)
    return max(0.0, stolen) / (wall_s * len(cpus))


def job_health(stats: JobStats) -> dict[str, float | None]:
    cpu = stats.cpu_seconds / stats.wall_seconds if stats.wall_seconds > 0 else None
    lags = np.asarray(stats.lags_ms)
    return {
        "cpu_fraction": cpu,
        "lag_p99_ms": float(np.percentile(lags, 99)) if lags.size else None,
        "lag_max_ms": float(lags.max()) if lags.size else None,
        "steal_share": stats.steal_share,
    }


def merge_health(
    per_worker: list[dict[str, float | None]], idle_nap_us: float = 0.0
) -> ClientHealth:
    """The busiest worker speaks for the client: one saturated process distorts its requests.
    idle_nap_us: the client's nap (ClientSpec), recorded because it can delay every stamp."""

    def worst(key: str) -> float | None:
        values = [v for h in per_worker if (v := h.get(key)) is not None]
        return max(values) if values else None

    cpu, lag_p99, lag_max = worst("cpu_fraction"), worst("lag_p99_ms"), worst("lag_max_ms")
    steal = worst("steal_share")
    reasons = []
    if cpu is not None and cpu > SATURATED_CPU_FRACTION:
        reasons.append(
            f"a client process used {cpu:.0%} of a core (limit {SATURATED_CPU_FRACTION:.0%}): "
            "arrival stamps may be late; use more client processes"
        )
    if lag_p99 is not None and lag_p99 > SATURATED_LOOP_LAG_P99_MS:
        # High lag with low own CPU means something else took the client's core: the
        # hypervisor (steal) or other processes (often the engine on the same host). Say which,
        # since more client processes would not help then.
        cause = ""
        busy = cpu is not None and cpu > SATURATED_CPU_FRACTION  # said above: its own CPU
        if steal is not None and steal >= STEAL_BLAME_SHARE and not busy:
            cause = (
                f"; the hypervisor took {steal:.1%} of the client's CPU time (steal): this "
                "virtual machine, not the client, was short of CPU"
            )
        elif cpu is not None and cpu < SATURATED_CPU_FRACTION / 2:
            cause = (
                "; the client itself was mostly idle, so other processes on this host starved it"
            )
        reasons.append(
            f"event-loop lag p99 {lag_p99:.1f} ms (limit {SATURATED_LOOP_LAG_P99_MS:g} ms): "
            f"per-token times are distorted{cause}"
        )
    pinned = sorted({int(c) for h in per_worker if (c := h.get("pinned_cpu")) is not None})
    return ClientHealth(
        processes=len(per_worker),
        cpus=pinned,
        cpu_fraction=cpu,
        loop_lag_p99_ms=lag_p99,
        loop_lag_max_ms=lag_max,
        cpu_steal=steal,
        saturated=bool(reasons),
        reasons=reasons,
        idle_nap_us=idle_nap_us,
    )
