"""Keep-alive connections of runner/client/httpstream.py against a real local server (fakeserver.py).

The server's `peers` (the client port of each generation request) counts connections: one port
is one TCP connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from runner.client import httpstream
from runner.client.job import run_job
from runner.client.responses import ResponseCollector, request_body
from runner.client.schedule import Target, plan_jobs
from runner.client.workers import run_load
from runner.schema.plan import ClientSpec, LoadSpec, WorkloadSpec
from runner.workloads.prompts import Prompt, build_prompts
from tests.runner.fakeserver import FakeVllm

WORKLOAD = WorkloadSpec(output_tokens=4)
FAST_CLIENT = ClientSpec(request_timeout_s=10, stall_timeout_s=0.5)
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def run_on(loop_name: str, coro: Coroutine[Any, Any, Any]) -> Any:
    with asyncio.Runner(loop_factory=LOOPS[loop_name]) as runner:
        return runner.run(coro)


def wait_for(condition: Callable[[], bool], timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


async def send(
    server: FakeVllm, pool: httpstream.Pool | None, text: str = "hello there", stall_s: float = 0.5
) -> tuple[httpstream.HttpResult, ResponseCollector]:
    """One streamed completion through the load generator's own collector."""
    url = httpstream.parse_url(server.base_url, "/v1/completions")
    collector = ResponseCollector(0, 0, 0.0, chat=False)
    body = request_body(WORKLOAD, "m", Prompt(index=0, text=text))
    result = await httpstream.post(url, body, collector.on_event, sse=True, stall_timeout_s=stall_s,
                                   request_timeout_s=10, pool=pool)
    return result, collector


def new_pool(server: FakeVllm) -> httpstream.Pool:
    url = httpstream.parse_url(server.base_url, "/v1/completions")
    return httpstream.Pool(url.host, url.port)


# ---------------------------------------------------------------------------------------------
# Reuse
# ---------------------------------------------------------------------------------------------


def test_it_sends_connection_close_only_without_a_pool():
    url = httpstream.parse_url("http://127.0.0.1:8000", "/v1/completions")
    assert b"Connection: close\r\n" in httpstream.request_bytes(url, b"{}")
    assert b"Connection:" not in httpstream.request_bytes(url, b"{}", keep_alive=True)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_it_reuses_one_connection_for_sequential_requests(fake_vllm, loop_name):
    async def main():
        pool = new_pool(fake_vllm)
        results = [(await send(fake_vllm, pool))[0] for _ in range(5)]
        open_before_close = pool.open
        await pool.close()
        return results, open_before_close

    results, open_before_close = run_on(loop_name, main())
    assert all(r.error is None and r.status == 200 for r in results)
    assert len(set(fake_vllm.peers)) == 1 and len(fake_vllm.peers) == 5
    assert [r.reused for r in results] == [False, True, True, True, True]
    assert open_before_close == 1
    assert wait_for(lambda: fake_vllm.open_connections() == 0)


def test_it_records_how_long_getting_a_connection_took(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        first, second = (await send(fake_vllm, pool))[0], (await send(fake_vllm, pool))[0]
        unpooled = (await send(fake_vllm, None))[0]
        await pool.close()
        return first, second, unpooled

    first, second, unpooled = run_on("uvloop", main())
    for result in (first, second, unpooled):
        assert result.error is None and result.connect_s is not None
        assert 0 <= result.connect_s <= result.ended_at - result.sent_at
    assert not first.reused and second.reused and not unpooled.reused


def test_it_never_holds_more_connections_than_requests_in_flight(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        most_open = 0
        for _ in range(3):  # three waves of four concurrent requests
            results = await asyncio.gather(*(send(fake_vllm, pool) for _ in range(4)))
            assert all(r.error is None for r, _ in results)
            most_open = max(most_open, pool.open)
        await pool.close()
        return most_open

    assert run_on("uvloop", main()) == 4
    assert len(fake_vllm.peers) == 12 and len(set(fake_vllm.peers)) == 4


def test_a_closed_loop_uses_one_connection_per_slot_and_records_connect_time(fake_vllm):
    load = LoadSpec(shape="concurrency", num_requests=12, concurrency=3)
    outcome = run_load([Target(0, fake_vllm.base_url, "m")], WORKLOAD, load, FAST_CLIENT,
                       build_prompts(WORKLOAD, 12))
    assert all(r.ok for r in outcome.records)
    assert len(set(fake_vllm.peers)) == 3
    assert all(r.connect_s is not None and r.connect_s >= 0 for r in outcome.records)


class _RecordingTransport:
    """Just enough of a transport to drive a connection's callbacks in a chosen order."""

    def __init__(self) -> None:
        self.closing = False

    def get_extra_info(self, name: str) -> None:
        return None

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        self.closing = True

    abort = close


def test_it_parses_bytes_that_arrived_with_the_close_before_handling_the_close():
    # Reads are stamped on arrival and parsed later, a slice per loop pass; a close delivered
    # right behind the last read must not cut off the response those reads completed, however
    # many reads were still queued.
    events_sent = [b"%d" % i for i in range(3 * httpstream.PARSE_SLICE)]
    body = b"".join(b"data: %s\n\n" % e for e in events_sent)
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
            % len(body))

    async def main():
        events: list[bytes] = []
        conn = httpstream._Connection(None)
        conn.connection_made(_RecordingTransport())  # type: ignore[arg-type]
        result = httpstream.HttpResult()
        conn.begin(result, lambda data, stamp: events.append(data), True, 5.0)
        conn.data_received(head)
        for event in events_sent:  # one read per event, as a server's bursts arrive
            conn.data_received(b"data: %s\n\n" % event)
        conn.connection_lost(None)  # before the loop ran the queued parse
        return result, events

    result, events = run_on("uvloop", main())
    assert result.error is None and result.status == 200 and events == events_sent


class _ParseRecorder:
    """Stands in for a connection: records what _Reads hands it to parse."""

    def __init__(self, name: str, parsed: list[tuple[str, bytes, float]]) -> None:
        self.name, self.parsed = name, parsed

    def _parse(self, data: bytes, stamp: float) -> None:
        self.parsed.append((self.name, data, stamp))


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_backlog_is_parsed_a_slice_per_loop_pass_in_arrival_order(loop_name):
    """Between slices the loop polls its sockets again, so a read that arrives while a backlog
    is parsed is stamped after one slice, not after the whole backlog."""
    reads_in = 3 * httpstream.PARSE_SLICE + 1

    async def main():
        reads = httpstream._Reads()
        parsed: list[tuple[str, bytes, float]] = []
        conns = [_ParseRecorder("a", parsed), _ParseRecorder("b", parsed)]
        for i in range(reads_in):
            reads.add(conns[i % 2], b"read %d" % i, float(i))  # type: ignore[arg-type]
        after_each_pass = []
        while len(parsed) < reads_in and len(after_each_pass) < 10 * reads_in:
            await asyncio.sleep(0)  # one loop pass
            after_each_pass.append(len(parsed))
        return parsed, after_each_pass

    parsed, after_each_pass = run_on(loop_name, main())
    assert parsed == [("ab"[i % 2], b"read %d" % i, float(i)) for i in range(reads_in)]
    assert after_each_pass[0] == httpstream.PARSE_SLICE  # not the whole backlog at once
    steps = [b - a for a, b in zip([0, *after_each_pass], after_each_pass, strict=False)]
    assert max(steps) == httpstream.PARSE_SLICE and sum(steps) == reads_in


def test_a_closing_connection_has_every_queued_read_parsed_at_once():
    async def main():
        reads = httpstream._Reads()
        parsed: list[tuple[str, bytes, float]] = []
        conn = _ParseRecorder("a", parsed)
        for i in range(2 * httpstream.PARSE_SLICE + 3):
            reads.add(conn, b"%d" % i, float(i))  # type: ignore[arg-type]
        reads.drain()
        drained = list(parsed)
        await asyncio.sleep(0)  # the parse still scheduled finds nothing left
        return drained, parsed

    drained, parsed = run_on("uvloop", main())
    assert [data for _, data, _ in drained] == [b"%d" % i for i in range(2 * httpstream.PARSE_SLICE + 3)]
    assert parsed == drained


# ---------------------------------------------------------------------------------------------
# Connections that must not be reused
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loop_name", LOOPS)
def test_it_reconnects_when_the_server_closed_an_idle_connection_unnoticed(fake_vllm, loop_name):
    async def main():
        pool = new_pool(fake_vllm)
        await send(fake_vllm, pool)
        # The server closes it while this loop is not running, so the client has not yet read
        # the close: the next request goes out on the dead connection and must be sent again.
        fake_vllm.close_idle_connections()
        idle_before = pool.idle
        result, collector = await send(fake_vllm, pool)
        await pool.close()
        return idle_before, result, collector, pool.opened

    idle_before, result, collector, opened = run_on(loop_name, main())
    assert idle_before == 1
    assert result.error is None and collector.record(result, None).strictly_ok
    assert not result.reused and opened == 2
    assert len(fake_vllm.requests) == 2 and len(set(fake_vllm.peers)) == 2


def test_it_drops_an_idle_connection_once_it_sees_the_server_close_it(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        await send(fake_vllm, pool)
        fake_vllm.close_idle_connections()
        await asyncio.sleep(0.05)  # the loop reads the close
        idle_after_close = pool.idle
        result, _ = await send(fake_vllm, pool)
        await pool.close()
        return idle_after_close, result

    idle_after_close, result = run_on("uvloop", main())
    assert idle_after_close == 0
    assert result.error is None and not result.reused and len(set(fake_vllm.peers)) == 2


def test_it_does_not_reuse_a_connection_the_server_said_to_close(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        closing, _ = await send(fake_vllm, pool, "mode=conn_close please")
        after, _ = await send(fake_vllm, pool)
        await pool.close()
        return closing, after

    closing, after = run_on("uvloop", main())
    assert closing.error is None and after.error is None and not after.reused
    assert len(set(fake_vllm.peers)) == 2


@pytest.mark.parametrize("mode", ["http_500", "garbage_sse", "stall", "die_mid_stream"])
def test_it_never_reuses_the_connection_of_a_failed_response(fake_vllm, mode):
    async def main():
        pool = new_pool(fake_vllm)
        failed, _ = await send(fake_vllm, pool, f"mode={mode} please", stall_s=0.2)
        assert pool.idle == 0
        after, _ = await send(fake_vllm, pool)
        await pool.close()
        return failed, after

    failed, after = run_on("uvloop", main())
    assert failed.error is not None
    assert after.error is None and not after.reused
    assert len(set(fake_vllm.peers)) == 2


def test_it_never_sends_a_request_again_once_response_bytes_arrived(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        await send(fake_vllm, pool)
        broken, _ = await send(fake_vllm, pool, "mode=die_mid_stream please")  # reused, then cut
        await pool.close()
        return broken

    broken = run_on("uvloop", main())
    assert broken.reused and "connection closed before the response ended" in broken.error
    assert len(fake_vllm.requests) == 2  # the cut request was not retried


def test_it_aborts_and_forgets_a_connection_when_the_request_is_cancelled(fake_vllm):
    async def main():
        pool = new_pool(fake_vllm)
        await send(fake_vllm, pool)
        task = asyncio.ensure_future(send(fake_vllm, pool, "mode=stall please", stall_s=60))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.01)
        open_after_cancel = pool.open
        after, _ = await send(fake_vllm, pool)
        await pool.close()
        return open_after_cancel, after

    open_after_cancel, after = run_on("uvloop", main())
    assert open_after_cancel == 0
    assert after.error is None and not after.reused and len(set(fake_vllm.peers)) == 2


# ---------------------------------------------------------------------------------------------
# Nothing left open
# ---------------------------------------------------------------------------------------------


async def run_one_job(server: FakeVllm, prompts: list[Prompt], client: ClientSpec,
                      cancel_after_s: float | None = None) -> tuple[list[Any], int]:
    """run_job on this loop; then, with the loop still running (so nothing is closed for the
    job when the loop ends), how many of its connections the server still sees open."""
    load = LoadSpec(num_requests=len(prompts))
    (job,) = plan_jobs([Target(0, server.base_url, "m")], load, client, prompts, seed=0)
    started = time.monotonic()

    def cancelled() -> bool:
        return cancel_after_s is not None and time.monotonic() - started > cancel_after_s

    records, _ = await run_job(job, WORKLOAD, client, started, cancelled, lambda: None)
    for _ in range(100):
        if server.open_connections() == 0:
            break
        await asyncio.sleep(0.01)
    return records, server.open_connections()


def test_it_closes_every_connection_when_the_job_ends(fake_vllm):
    prompts = [Prompt(index=i, text=f"hello {i}") for i in range(6)]
    records, still_open = run_on("uvloop", run_one_job(fake_vllm, prompts, FAST_CLIENT))
    assert all(r.ok for r in records) and len(set(fake_vllm.peers)) == 6
    assert still_open == 0


def test_it_closes_every_connection_of_a_cancelled_job(fake_vllm):
    prompts = [Prompt(index=i, text="quick" if i < 2 else "mode=stall") for i in range(4)]
    client = ClientSpec(stall_timeout_s=60)
    records, still_open = run_on("uvloop", run_one_job(fake_vllm, prompts, client, 0.3))
    assert [r.error for r in records] == [None, None, "cancelled", "cancelled"]
    assert still_open == 0



# ---------------------------------------------------------------------------------------------
# The idle nap (when set): no blocking epoll_wait while streaming, no spinning once nothing is
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loop_name", LOOPS)
def test_the_loop_naps_while_a_response_streams_and_blocks_again_once_none_does(
    fake_vllm, loop_name
):
    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        httpstream.nap_while_streaming(100e-6)
        pool = new_pool(fake_vllm)
        task = asyncio.ensure_future(send(fake_vllm, pool, "mode=stall please", stall_s=60))
        await asyncio.sleep(0.2)  # no byte arrives while the server stalls: every pass naps
        during = (reads.streaming, reads.napping, reads.naps)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.01)
        after = reads.naps
        await asyncio.sleep(0.1)
        await pool.close()
        return during, (reads.streaming, reads.napping, after, reads.naps)

    (streaming, napping, naps), (streaming_after, napping_after, before, later) = run_on(
        loop_name, main()
    )
    assert streaming == 1 and napping
    assert naps > 100  # 0.2 s of naps of about 0.15 ms, on a slow host too
    assert streaming_after == 0 and not napping_after
    assert later == before  # nothing streaming: the loop blocks instead of napping


def test_a_nap_turned_off_mid_stream_stops_at_once_rather_than_spinning(fake_vllm):
    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        httpstream.nap_while_streaming(100e-6)
        pool = new_pool(fake_vllm)
        task = asyncio.ensure_future(send(fake_vllm, pool, "mode=stall please", stall_s=0.3))
        await asyncio.sleep(0.05)
        httpstream.nap_while_streaming(0)
        await asyncio.sleep(0.01)
        off_at = (reads.napping, reads.naps)
        await asyncio.sleep(0.1)
        result, _ = await task
        await pool.close()
        return off_at, reads.naps, result

    (napping, naps_then), naps_later, result = run_on("uvloop", main())
    assert naps_then > 0 and not napping and naps_later == naps_then
    assert result.error.startswith("stalled")


def test_nothing_naps_unless_a_nap_is_set(fake_vllm):
    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        pool = new_pool(fake_vllm)
        result, _ = await send(fake_vllm, pool, "mode=stall please", stall_s=0.1)
        await pool.close()
        return result, reads.naps, reads.napping

    result, naps, napping = run_on("uvloop", main())
    assert result.error.startswith("stalled") and naps == 0 and not napping


@pytest.mark.parametrize("seconds", [-1e-6, float("nan")])
def test_a_nap_that_is_no_number_of_seconds_is_refused(seconds):
    async def main():
        httpstream.nap_while_streaming(seconds)

    with pytest.raises(ValueError, match="number of seconds >= 0"):
        run_on("uvloop", main())


@pytest.mark.parametrize(("nap_us", "napped"), [(0, False), (200, True)])
def test_a_job_naps_as_its_client_spec_says(fake_vllm, nap_us, napped):
    """run_job sets the nap from ClientSpec.idle_nap_us (a plan's client, --client-idle-nap-us)."""
    fake_vllm.interval_s = 0.02  # slow chunks: the loop has idle passes between them

    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        prompts = [Prompt(index=0, text="hello there")]
        client = ClientSpec(request_timeout_s=10, stall_timeout_s=5, idle_nap_us=nap_us)
        records, _ = await run_one_job(fake_vllm, prompts, client)
        return records, reads.nap_s, reads.naps

    records, nap_s, naps = run_on("uvloop", main())
    assert records[0].ok
    assert nap_s == pytest.approx(nap_us * 1e-6)
    assert (naps > 10) is napped


@pytest.mark.parametrize(
    "mode", ["normal", "http_500", "garbage_sse", "stall", "die_mid_stream", "truncated_sse"]
)
def test_every_way_an_exchange_ends_takes_it_off_the_streaming_count(fake_vllm, mode):
    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        httpstream.nap_while_streaming(100e-6)
        pool = new_pool(fake_vllm)
        for _ in range(2):  # the second on a reused connection where the first one allows it
            await send(fake_vllm, pool, f"mode={mode} please", stall_s=0.2)
        await pool.close()
        await asyncio.sleep(0.01)
        return reads.streaming, reads.napping

    assert run_on("uvloop", main()) == (0, False)


def test_a_refused_connection_and_a_closed_pool_leave_nothing_streaming(fake_vllm):
    async def main():
        reads = httpstream._reads_for(asyncio.get_running_loop())
        httpstream.nap_while_streaming(100e-6)
        refused = httpstream.parse_url("http://127.0.0.1:9", "/v1/completions")
        result = await httpstream.post(refused, b"{}", lambda d, s: None, sse=True,
                                       stall_timeout_s=1, request_timeout_s=1)
        pool = new_pool(fake_vllm)
        task = asyncio.ensure_future(send(fake_vllm, pool, "mode=stall please", stall_s=60))
        await asyncio.sleep(0.1)
        await pool.close()  # ends the stalled exchange from outside
        closed, _ = await task
        await asyncio.sleep(0.01)
        return result, closed, reads.streaming, reads.napping

    result, closed, streaming, napping = run_on("uvloop", main())
    assert result.error is not None and closed.error == "connection pool closed"
    assert (streaming, napping) == (0, False)
