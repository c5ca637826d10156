"""How many streamed SSE events per second one client process can take, and how late it sees them.

A local server process emits completions-style SSE chunks (chunked transfer encoding) and stamps
each with its time.monotonic() just before writing it; CLOCK_MONOTONIC is system-wide, so the
client's arrival stamp minus the server's stamp is the delivery-plus-client delay. Each client
runs in its own fresh process, one after another, against the same server:

- httpx (AsyncClient.stream + aiter_lines), aiohttp (iterating response.content by line, as
  `vllm bench serve` does), runner.httpstream (the load generator's hot path, feeding the real
  per-request collector), and runner.httpstream on uvloop for comparison.
- Every client parses every event with orjson, so the rows compare transports, not JSON parsers.

Two placements, each client measured in both:
- own cores: the server pinned to one CPU and the client to another, as on a GPU node where the
  load generator runs on cores the vLLM API server does not use (runner: ClientSpec.cpus,
  `--client-cpus`);
- shared: no pinning, the scheduler places both. Linux tends to wake a socket reader on the
  CPU of the process that woke it, so the client often waits for the server to yield its core.

Two phases per client:
1. paced: STREAMS streams x one event every INTERVAL_S = OFFERED events/s for PACED_S seconds:
   events/s received, client CPU (1.0 = one core), delay median and p99.
2. flood: FLOOD_STREAMS streams written as fast as the server can; the client reads for FLOOD_S
   seconds: the most events/s it can sustain (delays there are queueing, so not reported).

Run: .venv/bin/python bench/client_events.py  (about two minutes; prints a Markdown table).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
import socket
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STREAMS = 100
INTERVAL_S = 0.005
OFFERED = STREAMS / INTERVAL_S  # 20,000 events/s
PACED_S = 5.0
FLOOD_STREAMS = 32
FLOOD_S = 3.0
CLIENTS = ("httpx", "aiohttp", "raw", "raw-uvloop")
PLACEMENTS = ("own cores", "shared")
SERVER_CPU, CLIENT_CPU = 0, 1  # own cores

EVENT = (
    b'data: {"id":"cmpl-bench","object":"text_completion","created":1700000000,"model":"bench",'
    b'"choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null,'
    b'"stop_reason":null}],"server_send":%.9f}\n\n'
)
USAGE = (
    b'data: {"id":"cmpl-bench","choices":[],"usage":{"prompt_tokens":1,'
    b'"completion_tokens":%d,"total_tokens":%d}}\n\ndata: [DONE]\n\n'
)


# ---------------------------------------------------------------------------------------------
# Server (its own process)
# ---------------------------------------------------------------------------------------------


class _ServerConn(asyncio.Protocol):
    """One request: POST /paced?events=N&offset=S or POST /flood?seconds=S, then SSE."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.can_write = asyncio.Event()
        self.can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, so no isinstance here.
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(rest) < length:
            return
        path = head.split(b" ")[1].decode()
        params = dict(p.split("=") for p in path.partition("?")[2].split("&") if p)
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        if path.startswith("/flood"):
            asyncio.ensure_future(self.flood(float(params["seconds"])))
        else:
            asyncio.ensure_future(self.paced(int(params["events"]), float(params["offset"])))

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.can_write.set()

    def send(self, payload: bytes) -> bool:
        if self.transport is None:
            return False
        self.transport.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        return True

    def end(self, events: int) -> None:
        if self.send(USAGE % (events, events + 1)) and self.transport is not None:
            self.transport.write(b"0\r\n\r\n")
            self.transport.close()

    async def paced(self, events: int, offset: float) -> None:
        due = time.monotonic() + offset
        for _ in range(events):
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if not self.send(EVENT % time.monotonic()):
                return
            due += INTERVAL_S
        self.end(events)

    async def flood(self, seconds: float) -> None:
        stop = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < stop:
            await self.can_write.wait()
            for _ in range(32):
                if not self.send(EVENT % time.monotonic()):
                    return
            sent += 32
            await asyncio.sleep(0)
        self.end(sent)


def _server_main(port_queue: Any, pinned: bool) -> None:
    if pinned:
        os.sched_setaffinity(0, {SERVER_CPU})
    try:
        import uvloop  # the server is not under test: give it the fastest loop available

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    server = loop.run_until_complete(loop.create_server(_ServerConn, "127.0.0.1", 0))
    port_queue.put(server.sockets[0].getsockname()[1])
    loop.run_forever()


# ---------------------------------------------------------------------------------------------
# Clients (each in its own process)
# ---------------------------------------------------------------------------------------------


def _server_send(chunk: dict[str, Any]) -> float | None:
    return chunk.get("server_send")


async def _stream_httpx(client: Any, url: str, on_line: Any) -> None:
    async with client.stream("POST", url, content=b"{}") as response:
        async for line in response.aiter_lines():
            on_line(line.encode(), time.monotonic())


async def _stream_aiohttp(session: Any, url: str, on_line: Any) -> None:
    async with session.post(url, data=b"{}") as response:
        async for line in response.content:
            on_line(line, time.monotonic())


async def _run_streams(
    kind: str, port: int, urls: list[str], seconds: float
) -> tuple[int, list[float], float]:
    """Open every stream, read for at most `seconds`; (events, delays in s, arrival span s)."""
    import orjson

    from runner import httpstream
    from runner.responses import ResponseCollector

    delays: list[float] = []
    count = 0
    span = [float("inf"), 0.0]  # first and last arrival of an event

    def on_line(line: bytes, stamp: float) -> None:  # httpx / aiohttp: one SSE line at a time
        nonlocal count
        if line.startswith(b"data: {"):
            chunk = orjson.loads(line[6:])
            sent = _server_send(chunk)
            if sent is not None:
                count += 1
                delays.append(stamp - sent)
                span[0], span[1] = min(span[0], stamp), stamp

    async def raw(url: str) -> None:
        # The load generator's own per-request collector sits behind the raw transport.
        collector = ResponseCollector(0, 0, 0.0, chat=False)

        def on_event(data: bytes, stamp: float) -> None:
            nonlocal count
            collector.on_event(data, stamp)
            at = data.rfind(b'"server_send":')
            if at >= 0:
                count += 1
                delays.append(stamp - float(data[at + 14 : -1]))
                span[0], span[1] = min(span[0], stamp), stamp

        target = httpstream.parse_url(f"http://127.0.0.1:{port}", url)
        await httpstream.post(target, b"{}", on_event, sse=True, stall_timeout_s=30,
                              request_timeout_s=seconds + 30)

    if kind in ("raw", "raw-uvloop"):
        tasks = [asyncio.ensure_future(raw(u)) for u in urls]
        closer = None
    elif kind == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=len(urls) + 10)
        closer = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60)
        tasks = [asyncio.ensure_future(_stream_httpx(closer, u, on_line)) for u in urls]
    else:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=len(urls) + 10)
        closer = aiohttp.ClientSession(f"http://127.0.0.1:{port}", connector=connector)
        tasks = [asyncio.ensure_future(_stream_aiohttp(closer, u, on_line)) for u in urls]
    await asyncio.wait(tasks, timeout=seconds)
    counted = count  # events read within the window
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if closer is not None:
        await (closer.aclose() if kind == "httpx" else closer.close())
    return counted, delays[:counted], span[1] - span[0]


def _measure(kind: str, port: int, mode: str) -> dict[str, float]:
    if mode == "paced":
        events = int(PACED_S / INTERVAL_S)
        urls = [f"/paced?events={events}&offset={i * INTERVAL_S / STREAMS:.6f}" for i in range(STREAMS)]
        seconds = PACED_S + 2.0  # every stream finishes inside this
    else:
        urls = [f"/flood?seconds={FLOOD_S + 5}" for _ in range(FLOOD_STREAMS)]
        seconds = FLOOD_S
    if kind == "raw-uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    switches0 = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
    cpu0, wall0 = time.process_time(), time.monotonic()
    count, delays, span = loop.run_until_complete(_run_streams(kind, port, urls, seconds))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    preempted = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - switches0
    loop.close()
    import numpy as np

    ms = np.asarray(delays) * 1000 if delays else np.asarray([np.nan])
    # Paced: events over the span of their arrivals, so a client that drains a backlog late
    # does not get credit for keeping up. Flood: events read inside the fixed window.
    active = span if mode == "paced" else wall
    return {
        "events": count,
        "events_per_s": count / active if active > 0 else 0.0,
        "cpu": cpu / wall,
        # CPU time per event hardly depends on how often other processes preempt this one, so
        # it is the steadiest figure on a shared host: 1e6 / it = events/s one free core can take.
        "cpu_us_per_event": cpu / count * 1e6 if count else float("nan"),
        "preempted_per_s": preempted / wall,
        "delay_median_ms": float(np.median(ms)),
        "delay_p99_ms": float(np.percentile(ms, 99)),
    }


def _client_main(kind: str, port: int, pinned: bool, results: Any) -> None:
    if pinned:
        os.sched_setaffinity(0, {CLIENT_CPU})
    results.put((kind, _measure(kind, port, "paced"), _measure(kind, port, "flood")))


def _measure_placement(ctx: Any, pinned: bool) -> list[tuple[str, dict, dict]]:
    """Every client, one after another, against one fresh server."""
    port_queue: Any = ctx.Queue()
    server = ctx.Process(target=_server_main, args=(port_queue, pinned), daemon=True)
    server.start()
    port = port_queue.get(timeout=30)
    rows = []
    try:
        for kind in CLIENTS:
            results: Any = ctx.Queue()
            proc = ctx.Process(target=_client_main, args=(kind, port, pinned, results))
            proc.start()
            rows.append(results.get(timeout=90))
            proc.join(timeout=30)
    finally:
        server.kill()
        server.join()
    return rows


def main() -> None:
    ctx = multiprocessing.get_context("spawn")
    own_cores = {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0)
    if not own_cores:
        print(f"only CPUs {sorted(os.sched_getaffinity(0))} here: the own-cores rows are skipped")
    table = []
    for placement in PLACEMENTS:
        pinned = placement == "own cores"
        if pinned and not own_cores:
            continue
        table += [(placement, *row) for row in _measure_placement(ctx, pinned)]
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"paced: {STREAMS} streams x 1 event / {INTERVAL_S * 1000:g} ms = {OFFERED:,.0f} events/s "
          f"offered for {PACED_S:g} s; flood: {FLOOD_STREAMS} streams as fast as possible, {FLOOD_S:g} s; "
          f"own cores: server on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}")
    print()
    print(
        "| placement | client | paced events/s | CPU (cores) | CPU us/event | events/s per free core "
        "| delay median ms | delay p99 ms | preempted/s | flood events/s | flood CPU |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for placement, kind, paced, flood in table:
        print(
            f"| {placement} | {kind} | {paced['events_per_s']:,.0f} | {paced['cpu']:.2f} | "
            f"{paced['cpu_us_per_event']:.1f} | {1e6 / paced['cpu_us_per_event']:,.0f} | "
            f"{paced['delay_median_ms']:.3f} | {paced['delay_p99_ms']:.3f} | "
            f"{paced['preempted_per_s']:,.0f} | {flood['events_per_s']:,.0f} | {flood['cpu']:.2f} |"
        )


if __name__ == "__main__":
    main()
