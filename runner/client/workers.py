"""The load generator: run a point's jobs in worker processes and collect every record."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import queue as queue_module
import resource
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from runner.client.health import job_health, merge_health
from runner.client.job import quiet_collector, run_job_blocking
from runner.client.schedule import ClientError, Job, LoadOutcome, Target, plan_jobs, send_schedule
from runner.schema.plan import ClientSpec, LoadSpec, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.workloads.lora_split import with_adapters
from runner.workloads.prompts import Prompt

# Workers are released this long after the last one says it is ready, so t0 is in the future for
# all of them when it arrives.
START_DELAY_S = 0.25
# Spawned workers import numpy, pydantic and orjson before they are ready.
READY_TIMEOUT_S = 120.0


PROGRESS_INTERVAL_S = 0.1
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Chunk times per message of records from a client worker to the parent (record_batches).
RECORD_BATCH_VALUES = 1 << 20
# How long a dead worker's result may still be in flight in the queue before it counts as lost.
DEAD_WORKER_GRACE_S = 2.0


def run_load(
    targets: list[Target],
    workload: WorkloadSpec,
    load: LoadSpec,
    client: ClientSpec,
    prompts: list[Prompt],
    *,
    cancel: threading.Event | None = None,
    on_request_done: Callable[[int, int], None] | None = None,
    isolate: bool = False,
) -> LoadOutcome:
    """Run the load against every target and return every request's record.

    isolate: run the client in worker processes even for one target and one process. A caller
    with busy threads of its own (the queue sampler parses /metrics for tens of milliseconds
    per scrape; the dashboard's monitor writes to the database) would otherwise hold the GIL
    while the client's event loop should be stamping arrivals.

    Bad servers never raise: each request ends as a record (error set). Raises ValueError for a
    plan that cannot run and ClientError when a client worker process fails to start.

    Call it from a thread with no running event loop. In-process runs (one target, one process)
    share the GIL with the caller's other threads; ClientHealth's loop lag shows when that hurts.
    Lifts this process's open-files soft limit to the hard limit (a burst holds N sockets).
    """
    if not targets:
        raise ValueError("run_load needs at least one target")
    check_client_cpus(client)
    _raise_open_files_limit()
    prompts = with_adapters(prompts, workload.lora_split, workload.seed)
    jobs = plan_jobs(targets, load, client, prompts, workload.seed)
    total = sum(len(job.items) for job in jobs)
    cancel = cancel or threading.Event()
    progress = on_request_done or (lambda done, total: None)
    # In this process only when asked and unpinned: pinning must never change the caller's affinity.
    if len(jobs) == 1 and not client.cpus and not isolate:
        outcome = _run_in_process(jobs[0], workload, client, cancel, progress, total)
    else:
        outcome = _run_processes(jobs, workload, client, cancel, progress, total)
    outcome.health.schedule = send_schedule(load, outcome.records)
    return outcome


def check_client_cpus(client: ClientSpec) -> None:
    """ValueError naming the CPUs of ClientSpec.cpus this process may not run on."""
    if not client.cpus:
        return
    if not hasattr(os, "sched_setaffinity"):
        raise ValueError("client cpus need Linux (os.sched_setaffinity); leave cpus empty here")
    allowed = os.sched_getaffinity(0)
    missing = sorted(set(client.cpus) - allowed)
    if missing:
        raise ValueError(
            f"client cpus {missing} are not available here; this process may run on CPUs "
            f"{_cpu_ranges(allowed)}"
        )


def _cpu_ranges(cpus: set[int]) -> str:
    """{0, 1, 2, 5} -> '0-2,5', as taskset and /proc/self/status write CPU lists."""
    ranges: list[str] = []
    for cpu in sorted(cpus):
        if ranges and ranges[-1].split("-")[-1] == str(cpu - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{cpu}"
        else:
            ranges.append(str(cpu))
    return ",".join(ranges)


def _raise_open_files_limit() -> None:
    """A burst of N requests holds N sockets at once; lift the soft limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _run_in_process(
    job: Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    cancel: threading.Event,
    progress: Callable[[int, int], None],
    total: int,
) -> LoadOutcome:
    done = 0

    def on_done() -> None:
        nonlocal done
        done += 1
        progress(done, total)

    with quiet_collector():
        t0 = time.monotonic() + 0.01  # leave the loop a moment to start before the first send
        records, stats = run_job_blocking(job, workload, client, t0, cancel.is_set, on_done)
    health = merge_health([job_health(stats)], client.idle_nap_us)
    return LoadOutcome(records=records, health=health, t0=t0)


def _run_processes(
    jobs: list[Job],
    workload: WorkloadSpec,
    client: ClientSpec,
    cancel: threading.Event,
    progress: Callable[[int, int], None],
    total: int,
) -> LoadOutcome:
    ctx = multiprocessing.get_context("spawn")
    events: Any = ctx.Queue()
    stop = ctx.Event()
    pipes = [ctx.Pipe(duplex=False) for _ in jobs]
    procs = [
        ctx.Process(
            target=_worker_main,
            args=(w, job, workload, client, pipes[w][0], events, stop, os.getpid()),
            daemon=True,
            name=f"headroom-client-{w}",
        )
        for w, job in enumerate(jobs)
    ]
    for proc in procs:
        proc.start()
    results: list[tuple[list[RequestRecord], dict[str, float | None]]]
    try:
        if not _wait_ready(procs, events, cancel):
            t0 = time.monotonic()
            results = [(_lost_records(job, t0, "cancelled"), {}) for job in jobs]
        else:
            t0 = time.monotonic() + START_DELAY_S
            for _, sender in pipes:
                sender.send(t0)
            results = _collect(jobs, procs, events, cancel, stop, progress, total, t0)
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    records = sorted(
        (r for recs, _ in results for r in recs), key=lambda r: (r.replica, r.index)
    )
    healths = [
        h or {"cpu_fraction": None, "lag_p99_ms": None, "lag_max_ms": None} for _, h in results
    ]
    return LoadOutcome(records=records, health=merge_health(healths, client.idle_nap_us), t0=t0)


def _wait_ready(procs: list[Any], events: Any, cancel: threading.Event) -> bool:
    """True when every worker is ready, False when cancelled first; ClientError on failure."""
    ready: set[int] = set()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while len(ready) < len(procs):
        if cancel.is_set():
            return False
        if time.monotonic() > deadline:
            raise ClientError(f"client workers not ready after {READY_TIMEOUT_S:g} s")
        try:
            message = events.get(timeout=0.1)
        except queue_module.Empty:
            dead = [p.name for p in procs if p.exitcode is not None]
            if dead:
                raise ClientError(f"client worker(s) exited before starting: {dead}") from None
            continue
        if message[0] == "ready":
            ready.add(message[1])
        elif message[0] == "error":
            raise ClientError(f"client worker {message[1]} failed to start:\n{message[2]}")
    return True


def _collect(
    jobs: list[Job],
    procs: list[Any],
    events: Any,
    cancel: threading.Event,
    stop: Any,
    progress: Callable[[int, int], None],
    total: int,
    t0: float,
) -> list[tuple[list[RequestRecord], dict[str, float | None]]]:
    """Gather every worker's result; a worker that dies leaves error records, never a hang."""
    results: dict[int, tuple[list[RequestRecord], dict[str, float | None]]] = {}
    received: dict[int, list[RequestRecord]] = {}  # record batches before the worker's result
    done_by_worker = [0] * len(jobs)
    dead_since: dict[int, float] = {}
    while len(results) < len(jobs):
        if cancel.is_set():
            stop.set()
        try:
            message = events.get(timeout=0.1)
        except queue_module.Empty:
            message = None
        if message is not None:
            kind, w = message[0], message[1]
            if kind == "progress":
                done_by_worker[w] = message[2]
                progress(sum(done_by_worker), total)
            elif kind == "records":
                received.setdefault(w, []).extend(message[2])
            elif kind == "result":
                payload = orjson.loads(message[2])
                results[w] = (received.pop(w, []), payload["health"])
            elif kind == "error":
                results[w] = (_lost_records(jobs[w], t0, f"client worker failed: {message[2]}"), {})
        now = time.monotonic()
        for w, proc in enumerate(procs):
            if w in results or proc.exitcode is None:
                continue
            if now - dead_since.setdefault(w, now) > DEAD_WORKER_GRACE_S:
                reason = f"client worker died (exit code {proc.exitcode})"
                results[w] = (_lost_records(jobs[w], t0, reason), {})
    return [results[w] for w in range(len(jobs))]


def _die_with_parent(parent_pid: int) -> None:
    """SIGKILL this worker when the thread that started it goes (the runner killed, say).

    PR_SET_PDEATHSIG follows the parent *thread*; that is right here, since the thread that
    calls run_load starts the workers and waits for them. Without it a killed runner would
    leave its client workers sending requests until their timeouts.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the prctl took effect
        os._exit(1)


def record_batches(records: Sequence[RequestRecord]) -> list[list[RequestRecord]]:
    """A worker's records in messages of about RECORD_BATCH_VALUES chunk times each.

    A queue message is pickled whole before it is sent (and whole again when received): the
    records of a 100,000-request point in one message would be held twice on each side.
    """
    batches: list[list[RequestRecord]] = [[]]
    values = 0
    for record in records:
        if values >= RECORD_BATCH_VALUES:
            batches.append([])
            values = 0
        batches[-1].append(record)
        values += len(record.chunk_times) + 1
    return batches if batches[0] else []


def _lost_records(job: Job, t0: float, reason: str) -> list[RequestRecord]:
    return [
        RequestRecord(
            index=item.index,
            replica=job.target.replica,
            intended_send=item.offset if item.offset is not None else 0.0,
            error=reason,
            conversation=item.prompt.conversation,
            turn=item.prompt.turn,
            adapter=item.prompt.adapter,
        )
        for item in job.items
    ]


def _worker_main(
    w: int,
    job: Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    start_conn: Any,
    events: Any,
    stop: Any,
    parent_pid: int,
) -> None:
    """A spawned client worker: say ready, wait for t0, run the job, send the records back."""
    try:
        _die_with_parent(parent_pid)
        pinned_cpu = None
        if client.cpus:
            os.sched_setaffinity(0, {client.cpus[w % len(client.cpus)]})
            (pinned_cpu,) = os.sched_getaffinity(0)  # what the kernel applied, not what was asked
        _raise_open_files_limit()
        done = 0
        last_sent = 0.0

        def on_done() -> None:
            nonlocal done, last_sent
            done += 1
            now = time.monotonic()
            if now - last_sent >= PROGRESS_INTERVAL_S or done == len(job.items):
                last_sent = now
                events.put(("progress", w, done))

        with quiet_collector():  # before saying ready: the parent then sets t0
            events.put(("ready", w))
            while not start_conn.poll(0.1):
                if stop.is_set():
                    return
            t0 = start_conn.recv()
            records, stats = run_job_blocking(job, workload, client, t0, stop.is_set, on_done)
        health = {**job_health(stats), "pinned_cpu": pinned_cpu}
        for batch in record_batches(records):
            events.put(("records", w, batch))  # pickled: compact arrays travel as raw bytes
        events.put(("result", w, orjson.dumps({"health": health})))
    except BaseException:
        with contextlib.suppress(Exception):
            events.put(("error", w, traceback.format_exc()))
        raise
