"""One client process's job on an asyncio loop: send each request on time, record the reply."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from runner.client import httpstream
from runner.client.health import LOOP_TICK_S, JobStats, cpu_steal_s, steal_share
from runner.client.responses import OutputCapture, ResponseCollector, endpoint_path, request_body
from runner.client.schedule import Item, Job
from runner.schema.plan import OUTPUT_TEXTS_KEPT, ClientSpec, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.workloads import conversations

# The oldest generation's threshold while a load runs: full collections wait until it ends.
NO_FULL_COLLECTION = 1 << 30
CANCEL_POLL_S = 0.05


@dataclass
class _Context:
    """What every request of a job shares, the keep-alive connections to its target included
    (run_job closes them when the job ends)."""

    job: Job
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


async def _one_request(ctx: _Context, item: Item, intended: float) -> RequestRecord:
    """Send one request; every outcome, including cancellation, becomes a record, which keeps
    the prompt's own max_tokens when it has one (trace and lengths workloads) and the LoRA
    adapter it asked for."""
    record = await _send(ctx, item, intended)
    record.max_tokens = item.prompt.max_tokens
    record.adapter = item.prompt.adapter
    return record


async def _one_turn(
    ctx: _Context, item: Item, history: list[conversations.Message], intended: float
) -> tuple[RequestRecord, list[conversations.Message]]:
    """Send one conversation turn: the conversation so far, then the turn's own messages.
    Returns its record and the conversation after it, the model's reply as it streamed."""
    messages = conversations.turn_messages(history, item.prompt)
    reply: list[str] = []
    turn = Item(item.index, replace(item.prompt, messages=messages), item.offset)
    record = await _send(ctx, turn, intended, reply)
    record.conversation, record.turn = item.prompt.conversation, item.prompt.turn
    return record, conversations.with_reply(messages, "".join(reply))


async def _send(
    ctx: _Context, item: Item, intended: float, reply: list[str] | None = None
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
        self, item: Item, intended: float, slots: asyncio.Semaphore | None = None
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
        self, turns: list[Item], intended: float, slots: asyncio.Semaphore | None = None
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

    def _not_sent(self, turns: list[Item], failed: RequestRecord) -> None:
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


async def _conversation_slot(run: _Run, pending: list[list[Item]]) -> None:
    """One closed-loop slot of conversations: the next one as soon as the previous ended."""
    while pending and not run.stopping:
        turns = pending.pop(0)
        await run.conversation(turns, time.monotonic() - run.ctx.t0)


async def _closed_loop_slot(run: _Run, pending: list[Item]) -> None:
    """One closed-loop slot: take the next request as soon as the previous one finished."""
    while pending and not run.stopping:
        item = pending.pop(0)
        await run.request(item, time.monotonic() - run.ctx.t0)


async def run_job(
    job: Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    t0: float,
    is_cancelled: Callable[[], bool],
    on_done: Callable[[], None],
) -> tuple[list[RequestRecord], JobStats]:
    """Run one job from t0 on the running loop; returns a record for every item, always."""
    httpstream.nap_while_streaming(client.idle_nap_us * 1e-6)
    await _sleep_until(t0)
    run = _Run(_Context(job, workload, client, t0), on_done)
    stats = JobStats()
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
    job: Job, records: list[RequestRecord], t0: float, cancelled: bool
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
    """uvloop when installed (it comes with vLLM's uvicorn): it delivers SSE events with lower
    delay than the stdlib loop (bench/client_events.py). Its timers tick in whole milliseconds,
    so scheduled sends re-check the clock (see _sleep_until)."""
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
def quiet_collector() -> Iterator[None]:
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


def run_job_blocking(
    job: Job,
    workload: WorkloadSpec,
    client: ClientSpec,
    t0: float,
    is_cancelled: Callable[[], bool],
    on_done: Callable[[], None],
) -> tuple[list[RequestRecord], JobStats]:
    loop = _new_loop()
    try:
        return loop.run_until_complete(run_job(job, workload, client, t0, is_cancelled, on_done))
    finally:
        loop.close()
