"""Who used the host's CPUs during a point (runner.measure.host_cpu), read from a /proc of our
own making, and the sweep's redraw of a disturbed point (runner.sweep)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner import sweep
from runner.measure import host_cpu
from runner.schema.plan import StabilitySpec
from runner.schema.result import DISTURBED_CORES, HostCpu
from tests.factories import metrics_at, point_result

TICK = os.sysconf("SC_CLK_TCK")


def fake_proc(tmp_path: Path, busy_ticks: int, processes: dict[int, tuple[int, int]]) -> Path:
    """A /proc whose host has been busy busy_ticks (user only) and whose processes are pid ->
    (process group, ticks of user time)."""
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "stat").write_text(
        f"cpu  {busy_ticks} 0 0 9000 7 0 0 {3 * TICK} 0 0\n"
        "cpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\nintr 5\n")
    for pid, (group, ticks) in processes.items():
        (proc / str(pid)).mkdir(exist_ok=True)
        # The name holds a space and a ')' as real ones can; fields 14-17: utime stime cutime cstime.
        (proc / str(pid) / "stat").write_text(
            f"{pid} (vllm: (core) x) S 1 {group} {group} 0 -1 0 0 0 0 0 {ticks} 1 2 3 20 0\n")
    (proc / "self").mkdir(exist_ok=True)
    return proc


def test_it_reads_the_host_and_a_process_groups_time_from_proc(tmp_path):
    proc = fake_proc(tmp_path, 10 * TICK, {10: (10, 2 * TICK), 11: (10, TICK), 12: (99, 5 * TICK)})
    busy, steal, cpus = host_cpu.host_times(proc)
    assert (busy, steal, cpus) == (10.0, 3.0, 2)
    # pid 10 and 11 are in group 10: user + stime + cutime + cstime (1 + 2 + 3 ticks each).
    assert host_cpu.group_cpu_s([10], proc) == pytest.approx((3 * TICK + 12) / TICK)


def test_what_others_took_is_the_host_less_the_engine_and_the_runner():
    start = host_cpu.CpuSnapshot(t=0.0, busy_s=100.0, steal_s=1.0, cpus=2, own_s=10.0,
                                 engine_s=20.0)
    end = host_cpu.CpuSnapshot(t=10.0, busy_s=118.0, steal_s=2.0, cpus=2, own_s=13.0,
                               engine_s=30.0)
    host = host_cpu.host_cpu(start, end)
    assert host is not None
    # 18 s busy: 3 the runner's, 10 the engine's, 5 others'; 1 s stolen; over 10 s.
    assert host.others_s == pytest.approx(5.0)
    assert host.taken_cores == pytest.approx(0.6)
    assert host.engine_cores == pytest.approx(1.0)
    assert host.disturbed


def test_an_engine_this_runner_did_not_start_is_never_judged_disturbed():
    host = HostCpu(window_s=10.0, cpus=2, busy_s=20.0, own_s=1.0, engine_s=None, steal_s=0.0)
    assert host.taken_cores is None and not host.disturbed


@pytest.mark.parametrize(("others_s", "disturbed"), [(2.5, False), (2.51, True)])
def test_disturbed_starts_just_above_a_quarter_of_a_core(others_s, disturbed):
    assert DISTURBED_CORES == 0.25
    host = HostCpu(window_s=10.0, cpus=2, busy_s=others_s + 5.0, own_s=1.0, engine_s=4.0,
                   steal_s=0.0)
    assert host.disturbed is disturbed


def _draws(monkeypatch, taken: list[float]) -> list[object]:
    """Make _measure_point return a point per entry, whose others took that many cores."""
    made = []

    def measure(context, running, prompts, cancel):
        share = taken[len(made)]
        point = point_result(metrics=metrics_at(1000.0 + len(made)))
        point.host = HostCpu(window_s=10.0, cpus=2, busy_s=10 * share + 5, own_s=1.0,
                             engine_s=4.0, steal_s=0.0)
        made.append(point)
        return point

    monkeypatch.setattr(sweep, "_measure_point", measure)
    monkeypatch.setattr(sweep, "_check_alive", lambda running: None)
    return made


class _Context:
    def __init__(self, redraws: int) -> None:
        self.plan = type("Plan", (), {"stability": StabilitySpec(redraw_disturbed=redraws)})()


def test_a_disturbed_point_is_drawn_again_and_the_first_quiet_draw_kept(monkeypatch):
    made = _draws(monkeypatch, [0.9, 0.05, 0.0])
    kept = sweep._undisturbed_draw(_Context(2), [], [], None)
    assert kept is made[1] and len(made) == 2
    assert kept.host is not None and [d.taken_cores for d in kept.host.set_aside] == [0.9]
    assert kept.notes[-1] == ("measured 2 times because other processes took more than 0.25 of "
                              "a core: kept draw 2 (the first one other processes left alone, "
                              "0.05 cores taken)")


def test_when_every_draw_is_disturbed_the_least_disturbed_is_kept(monkeypatch):
    made = _draws(monkeypatch, [0.9, 0.4, 0.7])
    kept = sweep._undisturbed_draw(_Context(2), [], [], None)
    assert kept is made[1] and len(made) == 3
    assert kept.host is not None and kept.host.disturbed
    assert [d.taken_cores for d in kept.host.set_aside] == pytest.approx([0.9, 0.7])


def test_no_redraw_when_the_plan_asks_for_none(monkeypatch):
    made = _draws(monkeypatch, [0.9])
    kept = sweep._undisturbed_draw(_Context(0), [], [], None)
    assert kept is made[0] and kept.host is not None and kept.host.set_aside == []
    assert kept.notes == ["disturbed: other processes took 0.90 cores during this point, more "
                          "than 0.25; not measured again (redraw_disturbed 0)"]
