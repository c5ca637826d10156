"""The load generator: send a workload to one or more vLLM servers and record every request.

`run_load` is the entry point. Shapes (LoadSpec): burst (all requests at t0), closed-loop
concurrency, open-loop rate whose send times, precomputed from the workload seed, are the
ones `vllm bench serve` 0.32 uses for the same seed, rate and burstiness (send_offsets), and
trace: the prompts' own arrival times (a trace workload, runner.traces) divided by the speed.
A burst, rate or trace may cap the requests in flight (LoadSpec.max_concurrency, vLLM's
--max-concurrency). Every record keeps the intended send time (the schedule) and the actual
one, so send lag and waiting for a slot stay visible; ClientHealth.schedule sums them up
(send_schedule). A conversation workload (runner.conversations) loads conversations instead:
the shape starts them (a closed loop of C keeps C in flight), and each sends its turns one
after another, a turn due when the one before it ended (_plan_conversations).

Processes: with one target, ClientSpec.processes == 1, no ClientSpec.cpus and no `isolate` the
load runs in this process. Otherwise each target gets ClientSpec.processes worker processes
("spawn" context: the caller has threads), each pinned to its CPU from ClientSpec.cpus when
given; every worker runs its share of that target's requests, and all are released at one
common t0 on time.monotonic(), which is system-wide on Linux, so records from every process
share a clock.
Request indices: each target runs requests 0..N-1 (the full load spec against its replica).

Honesty: every worker measures its own CPU use and event-loop lag (ClientHealth) and the result
says the client was saturated when either could distort the per-token timings. On a virtual
machine it also measures the steal on the CPUs it may run on (time the hypervisor gave to other
guests while this one had work), so a lagging client's reason names the host when the host
was short of CPU rather than the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import multiprocessing
import os
import queue as queue_module
import resource
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import orjson

from runner import conversations, httpstream
from runner.endpoint import NO_CREDENTIALS, Credentials
from runner.responses import OutputCapture, ResponseCollector, endpoint_path, request_body
from runner.schema import (
    OUTPUT_TEXTS_KEPT,
    ClientHealth,
    ClientSpec,
    LoadSpec,
    RequestRecord,
    SendSchedule,
    WorkloadSpec,
)
from runner.workloads import Prompt

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
# Workers are released this long after the last one says it is ready, so t0 is in the future for
# all of them when it arrives.
START_DELAY_S = 0.25
# Spawned workers import numpy, pydantic and orjson before they are ready.
READY_TIMEOUT_S = 120.0
# The oldest generation's threshold while a load runs: full collections wait until it ends.
NO_FULL_COLLECTION = 1 << 30
CANCEL_POLL_S = 0.05
PROGRESS_INTERVAL_S = 0.1
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Chunk times per message of records from a client worker to the parent (record_batches).
RECORD_BATCH_VALUES = 1 << 20
# How long a dead worker's result may still be in flight in the queue before it counts as lost.
DEAD_WORKER_GRACE_S = 2.0


@dataclass
class Target:
    replica: int
    base_url: str
    model: str
    # An attached server's API key and headers, sent with every request (never recorded).
    credentials: Credentials = field(default=NO_CREDENTIALS, repr=False)


@dataclass
class LoadOutcome:
    records: list[RequestRecord]
    health: ClientHealth
    t0: float  # the monotonic start instant; record times are relative to it


class ClientError(RuntimeError):
    """The client itself failed (a worker could not start); no request was sent."""


# ---------------------------------------------------------------------------------------------
# Plans: who sends what, when
# ---------------------------------------------------------------------------------------------


@dataclass
class _Item:
    index: int
    prompt: Prompt
    offset: float | None  # intended send, seconds after t0; None in a closed loop


@dataclass
class _Job:
    target: Target
    items: list[_Item]
    concurrency: int | None  # closed loop slots; None for burst/rate
    max_in_flight: int | None = None  # burst/rate: this worker's share of max_concurrency
    # A conversation workload: the items again, as each conversation's turns in order.
    conversations: list[list[_Item]] | None = None


def send_offsets(
    load: LoadSpec, seed: int, prompts: Sequence[Prompt] = ()
) -> list[float] | None:
    """Intended send times (s after t0): zeros for a burst, None for a closed loop (there the
    send time is when a slot frees), the prompts' arrival times over the speed for a trace
    (trace_offsets), and for a rate exactly the schedule of `vllm bench serve` 0.32
    (`get_request` after `np.random.seed(seed)` in `main_async`):

    - gap i is gamma(shape=burstiness, scale=1 / (rate * burstiness)) drawn from the legacy
      Mersenne Twister seeded with `seed` (1.0 = Poisson; inf = every gap exactly 1 / rate);
    - send i is the sum of gaps 0..i, so the first request waits one gap, not 0;
    - the whole schedule is then scaled so that the last send is N / rate.

    vLLM draws from the global numpy RNG; this uses a private RandomState with the same seed,
    which gives the same numbers and leaves the global RNG alone. For vLLM's random dataset
    nothing else draws from that RNG before get_request, so the two schedules are equal; a
    dataset that does (prefix_repetition reseeds and draws from np.random) shifts vLLM's.
    """
    n = load.num_requests
    if load.shape == "burst":
        return [0.0] * n
    if load.shape == "concurrency":
        return None
    if load.shape == "trace":
        return trace_offsets(prompts[:n], load.speed)
    assert load.rate is not None
    sends = np.cumsum(_rate_gaps(load.rate, load.burstiness, n, seed))
    if sends[-1] > 0:  # vLLM skips the scaling when every gap is 0
        sends = sends * ((n / load.rate) / sends[-1])
    return [float(t) for t in sends]


def trace_offsets(prompts: Sequence[Prompt], speed: float) -> list[float]:
    """Each prompt's trace time (after the first request's) divided by the speed: speed 2 sends
    the trace twice as fast. The first request goes at t0, as the trace's first arrival is its
    start (vLLM's timed trace waits the file's first timestamp; a trace cut from the middle of
    a day would idle that long). ValueError when a prompt has no trace time."""
    if any(prompt.arrival_s is None for prompt in prompts):
        raise ValueError("a trace load replays the arrival times of a trace workload; these "
                         "prompts have none (workload kind 'trace')")
    return [(prompt.arrival_s or 0.0) / speed for prompt in prompts]


def send_schedule(load: LoadSpec, records: Sequence[RequestRecord]) -> SendSchedule | None:
    """How closely the sends kept the schedule (SendSchedule); None for a closed loop, whose
    intended send is whenever a slot freed."""
    if load.shape == "concurrency" or not records:
        return None
    intended = np.asarray([r.intended_send for r in records], dtype=float)
    sent = [r for r in records if r.actual_send is not None]
    actual = np.asarray([r.actual_send for r in sent], dtype=float)
    lags_ms = (actual - np.asarray([r.intended_send for r in sent], dtype=float)) * 1000.0
    scheduled_span = float(intended.max() - intended.min())
    sent_span = float(actual.max() - actual.min()) if actual.size else None

    def rate(count: int, span: float | None) -> float | None:
        return (count - 1) / span if span and count > 1 else None

    return SendSchedule(
        requests=len(records),
        sent=len(sent),
        scheduled_span_s=scheduled_span,
        sent_span_s=sent_span,
        scheduled_rate=rate(len(records), scheduled_span),
        achieved_rate=rate(len(sent), sent_span),
        mean_send_lag_ms=float(lags_ms.mean()) if lags_ms.size else None,
        p99_send_lag_ms=float(np.percentile(lags_ms, 99)) if lags_ms.size else None,
        max_send_lag_ms=float(lags_ms.max()) if lags_ms.size else None,
    )


def _rate_gaps(rate: float, burstiness: float, n: int, seed: int) -> np.ndarray:
    """The n inter-arrival gaps of get_request, drawn in vLLM's order from vLLM's generator."""
    if np.isinf(burstiness):
        return np.full(n, 1.0 / rate)  # no draws: vLLM consumes no random numbers here either
    rng = np.random.RandomState(seed)  # legacy MT19937, as np.random.seed(seed) sets up
    return rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)


def plan_jobs(
    targets: list[Target], load: LoadSpec, client: ClientSpec, prompts: list[Prompt], seed: int
) -> list[_Job]:
    """One job per worker: client.processes per target, requests dealt round-robin.

    A rate schedule is split without changing any send time. A closed loop of C, or a cap of
    max_concurrency in flight on a burst or rate, splits into per-worker slots that add up to
    it (an approximation of one global loop or semaphore: a worker's slot cannot serve
    another worker's request); no worker is started that would get no slot.
    """
    n = load.num_requests
    if len(prompts) < n:
        raise ValueError(f"{n} requests need {n} prompts, got {len(prompts)}")
    if prompts[0].conversation is not None:
        return _plan_conversations(targets, load, client, prompts[:n], seed)
    offsets = send_offsets(load, seed, prompts)
    cap = load.concurrency if load.shape == "concurrency" else load.max_concurrency
    per_target = min(client.processes, n, cap or n)
    jobs = []
    for target in targets:
        for w in range(per_target):
            items = [
                _Item(i, prompts[i], offsets[i] if offsets is not None else None)
                for i in range(w, n, per_target)
            ]
            share = _share(cap, per_target, w) if cap is not None else None
            if load.shape == "concurrency":
                jobs.append(_Job(target, items, concurrency=share))
            else:
                jobs.append(_Job(target, items, concurrency=None, max_in_flight=share))
    return jobs


def _plan_conversations(
    targets: list[Target], load: LoadSpec, client: ClientSpec, prompts: list[Prompt], seed: int
) -> list[_Job]:
    """A conversation workload's jobs: whole conversations dealt round-robin to the workers,
    each of which sends a conversation's turns one after another (runner.conversations).

    A closed loop of C keeps C conversations in flight; a burst starts every conversation at
    t0, a rate starts them on the rate's schedule for the conversation count (send_offsets). A
    turn after the first is due when its previous turn ended. max_concurrency caps the turns
    in flight, as it caps requests.
    """
    if load.shape == "trace":
        raise ValueError("a trace load replays a trace's arrival times; a conversation's turns "
                         "go when the turn before them ended")
    groups: list[list[Prompt]] = []
    for prompt in prompts:
        if not groups or groups[-1][0].conversation != prompt.conversation:
            groups.append([])
        groups[-1].append(prompt)
    starts = send_offsets(load.model_copy(update={"num_requests": len(groups)}), seed)
    cap = load.concurrency if load.shape == "concurrency" else load.max_concurrency
    per_target = min(client.processes, len(groups), cap or len(groups))
    closed = load.shape == "concurrency"
    jobs = []
    for target in targets:
        for w in range(per_target):
            mine = [
                [_Item(p.index, p, starts[g] if starts is not None and t == 0 else None)
                 for t, p in enumerate(turns)]
                for g, turns in enumerate(groups)
                if g % per_target == w
            ]
            share = _share(cap, per_target, w) if cap is not None else None
            jobs.append(_Job(
                target, [item for turns in mine for item in turns],
                concurrency=share if closed else None,
                max_in_flight=None if closed else share, conversations=mine,
            ))  # fmt: skip
    return jobs


def _share(total: int, parts: int, w: int) -> int:
    """Worker w's part of total slots split over parts workers; the first ones get the rest."""
    return total // parts + (w < total % parts)


# ---------------------------------------------------------------------------------------------
# One request
# ---------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """What every request of a job shares, the keep-alive connections to its target included
    (run_job closes them when the job ends)."""

    job: _Job
    workload: WorkloadSpec
    client: ClientSpec
    t0: float
    url: httpstream.Url = field(init=False)
    chat: bool = field(init=False)
    pool: httpstream.Pool = field(init=False)
    headers: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.url = httpstream.parse_url(self.job.target.base_url, endpoint_path(self.workload))
        self.chat = self.workload.endpoint == "chat"
        self.pool = httpstream.Pool(self.url.host, self.url.port)
        self.headers = self.job.target.credentials.http_headers()


async def _one_request(ctx: _Context, item: _Item, intended: float) -> RequestRecord:
    """Send one request; every outcome, including cancellation, becomes a record, which keeps
    the prompt's own max_tokens when it has one (trace and lengths workloads)."""
    record = await _send(ctx, item, intended)
    record.max_tokens = item.prompt.max_tokens
    return record


async def _one_turn(
    ctx: _Context, item: _Item, history: list[conversations.Message], intended: float
) -> tuple[RequestRecord, list[conversations.Message]]:
    """Send one conversation turn: the conversation so far, then the turn's own messages.
    Returns its record and the conversation after it, the model's reply as it streamed."""
    messages = conversations.turn_messages(history, item.prompt)
    reply: list[str] = []
    turn = _Item(item.index, replace(item.prompt, messages=messages), item.offset)
    record = await _send(ctx, turn, intended, reply)
    record.conversation, record.turn = item.prompt.conversation, item.prompt.turn
    return record, conversations.with_reply(messages, "".join(reply))


async def _send(
    ctx: _Context, item: _Item, intended: float, reply: list[str] | None = None
) -> RequestRecord:
    """Send one request and record it; with reply, collect the response's text into it.

    The actual send is stamped before a connection is taken from the pool (as vLLM's client
    stamps before `session.post`); the record's connect_s (from the result) says how much of
    that was getting a connection.
    """
    capture = (
        OutputCapture(keep_text=item.index < OUTPUT_TEXTS_KEPT)
        if ctx.workload.keep_outputs else None
    )
    collector = ResponseCollector(
        item.index, ctx.job.target.replica, ctx.t0, ctx.chat,
        prompt_tokens=item.prompt.input_tokens, capture=capture, reply=reply,
    )
    collector.intended = intended
    body = request_body(ctx.workload, ctx.job.target.model, item.prompt)
    result: httpstream.HttpResult | None = None
    try:
        collector.actual = time.monotonic() - ctx.t0
        result = await httpstream.post(
            ctx.url,
            body,
            collector.on_event,
            sse=ctx.workload.stream,
            stall_timeout_s=ctx.client.stall_timeout_s,
            request_timeout_s=ctx.client.request_timeout_s,
            pool=ctx.pool,
            headers=ctx.headers,
        )
        if not ctx.workload.stream and result.error is None:
            collector.on_json_body(result.body, result.ended_at or time.monotonic())
    except httpstream.StreamAbort as exc:
        return collector.record(result, str(exc))
    except asyncio.CancelledError:
        return collector.record(result, "cancelled")
    except Exception as exc:  # noqa: BLE001 - a client bug must not lose the other requests
        return collector.record(result, f"client error: {exc!r}")
    return collector.record(result, None)


# ---------------------------------------------------------------------------------------------
# One job on one event loop
# ---------------------------------------------------------------------------------------------


@dataclass
class _JobStats:
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    lags_ms: list[float] = field(default_factory=list)
    steal_share: float | None = None  # None: the kernel does not report steal


async def _tick_loop_lag(lags_ms: list[float]) -> None:
    """Record how late a short sleep wakes up: the event loop's own queueing delay."""
    while True:
        before = time.monotonic()
        await asyncio.sleep(LOOP_TICK_S)
        lags_ms.append(max(0.0, (time.monotonic() - before - LOOP_TICK_S) * 1000))


class _Run:
    """The shared state of one job on its loop: finished records and the stop flag."""

    def __init__(self, ctx: _Context, on_done: Callable[[], None]) -> None:
        self.ctx = ctx
        self.on_done = on_done
        self.records: list[RequestRecord] = []
        self.remaining = len(ctx.job.items)
        self.finished = asyncio.Event()
        self.stopping = False
        if self.remaining == 0:
            self.finished.set()

    async def request(
        self, item: _Item, intended: float, slots: asyncio.Semaphore | None = None
    ) -> None:
        """Send one request and keep its record; with slots, first wait for a free one, so
        the record's actual send is when it went and its intended send stays the schedule."""
        async with slots or contextlib.nullcontext():
            record = await _one_request(self.ctx, item, intended)
        self.keep(record)

    def keep(self, record: RequestRecord) -> None:
        self.records.append(record)
        self.remaining -= 1
        self.on_done()
        if self.remaining == 0:
            self.finished.set()

    async def conversation(
        self, turns: list[_Item], intended: float, slots: asyncio.Semaphore | None = None
    ) -> None:
        """Send a conversation's turns in order, each due when the one before it ended. A
        failed turn ends the conversation: its later turns become records that say so. When
        stopping, the turns not sent are left to run_job, which records them as cancelled."""
        history: list[conversations.Message] = []
        for number, item in enumerate(turns):
            if self.stopping:
                return
            async with slots or contextlib.nullcontext():
                record, history = await _one_turn(self.ctx, item, history, intended)
            self.keep(record)
            if not record.ok:
                if not self.stopping:
                    self._not_sent(turns[number + 1 :], record)
                return
            assert record.completed_at is not None  # a completed request was sent and ended
            intended = record.completed_at

    def _not_sent(self, turns: list[_Item], failed: RequestRecord) -> None:
        error = conversations.not_sent_error(failed.turn or 0)
        when = failed.completed_at if failed.completed_at is not None else failed.intended_send
        for item in turns:
            self.keep(RequestRecord(
                index=item.index, replica=self.ctx.job.target.replica, intended_send=when,
                error=error, conversation=item.prompt.conversation, turn=item.prompt.turn,
            ))  # fmt: skip


async def _dispatch_scheduled(run: _Run, tasks: list[asyncio.Task[None]]) -> None:
    """Burst and rate: start each request at its intended time (t0 + offset). With a cap
    (max_in_flight) a started request waits for a slot, as under vLLM's --max-concurrency
    semaphore; the schedule itself never waits, so later arrivals queue behind the cap."""
    t0 = run.ctx.t0
    cap = run.ctx.job.max_in_flight
    slots = asyncio.Semaphore(cap) if cap is not None else None
    for item in sorted(run.ctx.job.items, key=lambda it: it.offset or 0.0):
        offset = item.offset or 0.0
        await _sleep_until(t0 + offset)
        if run.stopping:
            return
        tasks.append(asyncio.create_task(run.request(item, offset, slots)))


async def _dispatch_conversations(run: _Run, tasks: list[asyncio.Task[None]]) -> None:
    """Burst and rate of conversations: start each one at its first turn's intended time;
    with a cap (max_in_flight) each turn waits for a slot."""
    t0 = run.ctx.t0
    cap = run.ctx.job.max_in_flight
    slots = asyncio.Semaphore(cap) if cap is not None else None
    for turns in sorted(run.ctx.job.conversations or [], key=lambda c: c[0].offset or 0.0):
        offset = turns[0].offset or 0.0
        await _sleep_until(t0 + offset)
        if run.stopping:
            return
        tasks.append(asyncio.create_task(run.conversation(turns, offset, slots)))


async def _conversation_slot(run: _Run, pending: list[list[_Item]]) -> None:
    """One closed-loop slot of conversations: the next one as soon as the previous ended."""
    while pending and not run.stopping:
        turns = pending.pop(0)
        await run.conversation(turns, time.monotonic() - run.ctx.t0)


async def _closed_loop_slot(run: _Run, pending: list[_Item]) -> None:
    """One closed-loop slot: take the next request as soon as the previous one finished."""
    while pending and not run.stopping:
        item = pending.pop(0)
        await run.request(item, time.monotonic() - run.ctx.t0)


async def run_job(
    job: _Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    t0: float,
    is_cancelled: Callable[[], bool],
    on_done: Callable[[], None],
) -> tuple[list[RequestRecord], _JobStats]:
    """Run one job from t0 on the running loop; returns a record for every item, always."""
    httpstream.nap_while_streaming(client.idle_nap_us * 1e-6)
    await _sleep_until(t0)
    run = _Run(_Context(job, workload, client, t0), on_done)
    stats = _JobStats()
    cpu_start = time.thread_time()  # this thread's CPU: the loop's, not the caller's other threads
    steal_start = cpu_steal_s()
    ticker = asyncio.create_task(_tick_loop_lag(stats.lags_ms))
    tasks: list[asyncio.Task[None]] = []
    if job.conversations is not None and job.concurrency is not None:
        talks = list(job.conversations)
        tasks.extend(
            asyncio.create_task(_conversation_slot(run, talks)) for _ in range(job.concurrency)
        )
    elif job.conversations is not None:
        tasks.append(asyncio.create_task(_dispatch_conversations(run, tasks)))
    elif job.concurrency is None:
        tasks.append(asyncio.create_task(_dispatch_scheduled(run, tasks)))
    else:
        pending = list(job.items)
        tasks.extend(
            asyncio.create_task(_closed_loop_slot(run, pending)) for _ in range(job.concurrency)
        )
    cancelled = False
    while not run.finished.is_set():
        if is_cancelled():
            cancelled = run.stopping = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            break
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CANCEL_POLL_S):
                await run.finished.wait()
    await asyncio.gather(*tasks, return_exceptions=True)
    await run.ctx.pool.close()  # no keep-alive socket outlives the job (or its event loop)
    ticker.cancel()
    records = run.records + _unsent_records(job, run.records, t0, cancelled)
    stats.cpu_seconds = time.thread_time() - cpu_start
    stats.wall_seconds = time.monotonic() - t0
    stats.steal_share = steal_share(
        steal_start, cpu_steal_s(), os.sched_getaffinity(0), stats.wall_seconds
    )
    records.sort(key=lambda r: r.index)
    return records, stats


def _unsent_records(
    job: _Job, records: list[RequestRecord], t0: float, cancelled: bool
) -> list[RequestRecord]:
    """Records for the items that never got a request (cancelled before their send time)."""
    have = {r.index for r in records}
    error = "cancelled" if cancelled else "not sent"
    return [
        RequestRecord(
            index=item.index,
            replica=job.target.replica,
            intended_send=item.offset if item.offset is not None else time.monotonic() - t0,
            error=error,
            conversation=item.prompt.conversation,
            turn=item.prompt.turn,
        )
        for item in job.items
        if item.index not in have
    ]


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (it comes with vLLM's uvicorn): bench/client_events.py measured it
    delivering SSE events with lower delay than the stdlib loop. Its timers tick in whole
    milliseconds, so scheduled sends re-check the clock (see _sleep_until)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _sleep_until(deadline: float) -> None:
    """Sleep until time.monotonic() >= deadline; a millisecond timer can wake a little early."""
    while (delay := deadline - time.monotonic()) > 0:
        await asyncio.sleep(delay)


@contextlib.contextmanager
def _quiet_collector() -> Iterator[None]:
    """While the load runs, no full garbage collection, and the young ones skip every object
    from before it: a collection stops the event loop and stamps every arrival in it late
    (docs/performance.md, "Garbage collection during a point"). Young collections still run.

    Enter before t0 is set, since the collection here takes time. On the way out the heap thaws
    and the thresholds come back, so a long-lived caller (a Celery worker) frees what the load
    left. Entered while the heap is frozen already, it changes nothing."""
    if gc.get_freeze_count() > 0:
        yield
        return
    thresholds = gc.get_threshold()
    gc.collect()  # garbage now is freed, not frozen
    gc.freeze()
    gc.set_threshold(thresholds[0], thresholds[1], NO_FULL_COLLECTION)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _run_job_blocking(
    job: _Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    t0: float,
    is_cancelled: Callable[[], bool],
    on_done: Callable[[], None],
) -> tuple[list[RequestRecord], _JobStats]:
    loop = _new_loop()
    try:
        return loop.run_until_complete(run_job(job, workload, client, t0, is_cancelled, on_done))
    finally:
        loop.close()


# ---------------------------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------------------------


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


def job_health(stats: _JobStats) -> dict[str, float | None]:
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


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


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
    job: _Job,
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

    with _quiet_collector():
        t0 = time.monotonic() + 0.01  # leave the loop a moment to start before the first send
        records, stats = _run_job_blocking(job, workload, client, t0, cancel.is_set, on_done)
    health = merge_health([job_health(stats)], client.idle_nap_us)
    return LoadOutcome(records=records, health=health, t0=t0)


def _run_processes(
    jobs: list[_Job],
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
    jobs: list[_Job],
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


def _lost_records(job: _Job, t0: float, reason: str) -> list[RequestRecord]:
    return [
        RequestRecord(
            index=item.index,
            replica=job.target.replica,
            intended_send=item.offset if item.offset is not None else 0.0,
            error=reason,
            conversation=item.prompt.conversation,
            turn=item.prompt.turn,
        )
        for item in job.items
    ]


def _worker_main(
    w: int,
    job: _Job,
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

        with _quiet_collector():  # before saying ready: the parent then sets t0
            events.put(("ready", w))
            while not start_conn.poll(0.1):
                if stop.is_set():
                    return
            t0 = start_conn.recv()
            records, stats = _run_job_blocking(job, workload, client, t0, stop.is_set, on_done)
        health = {**job_health(stats), "pinned_cpu": pinned_cpu}
        for batch in record_batches(records):
            events.put(("records", w, batch))  # pickled: compact arrays travel as raw bytes
        events.put(("result", w, orjson.dumps({"health": health})))
    except BaseException:
        with contextlib.suppress(Exception):
            events.put(("error", w, traceback.format_exc()))
        raise
