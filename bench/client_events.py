"""How many streamed SSE events per second one client process can take, and how late it sees them.

A local server process emits completions-style SSE chunks (chunked transfer encoding) and stamps
each with its time.monotonic() just before writing it; CLOCK_MONOTONIC is system-wide, so the
client's arrival stamp minus the server's stamp is the delivery-plus-client delay. Each client
runs in its own fresh process, one after another, against the same server:

- httpx (AsyncClient.stream + aiter_lines), aiohttp (iterating response.content by line, as
  `vllm bench serve` does), runner.client.httpstream (the load generator's hot path, feeding the
  real
  per-request collector) on the stdlib loop and on uvloop, all four on pooled keep-alive
  connections; the same on uvloop with the idle nap (NAP_S, as a client's idle_nap_us: while
  streaming, an idle loop pass sleeps instead of blocking in epoll_wait); and
  runner.client.httpstream
  on uvloop with a new connection per request (`Connection: close`, what the load generator did
  before it pooled connections).
- Every client parses every event with orjson, so the rows compare transports, not JSON parsers.

Two placements, each client measured in both (`--placements` picks):
- own cores: the server pinned to one CPU and the client to another, as on a GPU node where the
  load generator runs on cores the vLLM API server does not use (runner: ClientSpec.cpus,
  `--client-cpus`);
- shared: no pinning, the scheduler places both. Linux tends to wake a socket reader on the
  CPU of the process that woke it, so the client often waits for the server to yield its core.

Two phases per client:
1. paced, at each rate of RATES events/s: rate x INTERVAL_S slots, each sending requests of
   EVENTS_PER_REQUEST events (one every INTERVAL_S) back to back for PACED_S seconds, as a closed
   loop does: events/s received, client CPU (1.0 = one core), delay median and p99, the
   client's blocking waits per second (voluntary context switches: epoll_wait or a nap), the
   server's CPU per event (its writes, and its wake-ups of a client blocked in epoll_wait),
   connections the server accepted, (runner.client.httpstream only) the time to get a connection,
   and
   the time the hypervisor took from each of the two CPUs during the phase (steal, in
   /proc/stat), a share of the phase: a stolen millisecond stamps every event in it late.
2. flood: FLOOD_STREAMS streams written as fast as the server can; the client reads for FLOOD_S
   seconds: the most events/s it can sustain (delays there are queueing, so not reported).

Run: .venv/bin/python bench/client_events.py [--placements "own cores"] [--clients raw-uvloop]
(all placements and clients: about four minutes; prints a Markdown table).
Quick: .venv/bin/python bench/client_events.py --quick (every client in both placements at
QUICK_RATES, QUICK_PHASES long: seconds, figures too short to read; tests/bench runs it so the
script keeps working).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INTERVAL_S = 0.005  # between one stream's events, as a vLLM stream at 200 tokens/s
RATES = (2_000, 20_000, 40_000, 60_000)  # events/s offered per client process; 2,000 shows
# the idle nap at its costliest (most passes find nothing)
EVENTS_PER_REQUEST = 40  # a 200 ms response; a closed-loop slot then sends its next request
PACED_S = 4.0
FLOOD_STREAMS = 32
FLOOD_S = 2.0
CLIENTS = ("httpx", "aiohttp", "raw", "raw-uvloop", "raw-uvloop-nap", "raw-uvloop-close")
PLACEMENTS = ("own cores", "shared")
SERVER_CPU, CLIENT_CPU = 0, 1  # own cores
NAP_S = 100e-6  # raw-uvloop-nap: `--client-idle-nap-us 100`


@dataclass(frozen=True)
class Phases:
    """Seconds each phase reads for."""

    paced_s: float
    flood_s: float


PHASES = Phases(paced_s=PACED_S, flood_s=FLOOD_S)
QUICK_PHASES = Phases(paced_s=0.2, flood_s=0.2)
QUICK_RATES = (2_000,)

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
    """Requests one after another on a keep-alive connection (closed after a request that says
    `Connection: close`): POST /paced?events=N&first=S or POST /flood?seconds=S, then SSE."""

    accepted: Any = None  # multiprocessing.Value: connections accepted, read by the clients

    def __init__(self) -> None:
        self.buffer = b""
        self.busy = False
        self.close_after = False
        self.transport: asyncio.Transport | None = None
        self.can_write = asyncio.Event()
        self.can_write.set()
        # The loop keeps only weak references to tasks: the response being written is held here.
        self.writing: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, so no isinstance here.
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.accepted.get_lock():
            self.accepted.value += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self.next_request()

    def next_request(self) -> None:
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                self.close_after = True
        if len(rest) < length:
            return
        self.buffer = rest[length:]
        self.busy = True
        path = head.split(b" ")[1].decode()
        params = dict(p.split("=") for p in path.partition("?")[2].split("&") if p)
        assert self.transport is not None
        connection = b"close" if self.close_after else b"keep-alive"
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: %s\r\n\r\n" % connection
        )
        if path.startswith("/flood"):
            self.writing = asyncio.ensure_future(self.flood(float(params["seconds"])))
        else:
            self.writing = asyncio.ensure_future(
                self.paced(int(params["events"]), float(params["first"]))
            )

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
        if not self.send(USAGE % (events, events + 1)) or self.transport is None:
            return
        self.transport.write(b"0\r\n\r\n")
        if self.close_after:
            self.transport.close()
        else:
            self.busy = False
            self.next_request()

    async def paced(self, events: int, first: float) -> None:
        due = time.monotonic() + first
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


def _server_main(port_queue: Any, pinned: bool, accepted: Any) -> None:
    if pinned:
        os.sched_setaffinity(0, {SERVER_CPU})
    try:
        import uvloop  # the server is not under test: give it the fastest loop available

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    _ServerConn.accepted = accepted
    server = loop.run_until_complete(loop.create_server(_ServerConn, "127.0.0.1", 0, backlog=4096))
    port_queue.put(server.sockets[0].getsockname()[1])
    loop.run_forever()


# ---------------------------------------------------------------------------------------------
# Clients (each in its own process)
# ---------------------------------------------------------------------------------------------


class _Tally:
    """What one phase saw: event delays, the span of their arrivals, connect times."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.first = float("inf")
        self.last = 0.0
        self.connects: list[float] = []

    def add(self, stamp: float, server_send: float) -> None:
        self.delays.append(stamp - server_send)
        if stamp < self.first:
            self.first = stamp
        self.last = stamp


def _slot_urls(mode: str, slot: int, slots: int, seconds: float) -> tuple[str, str]:
    """(first url, later urls) of one slot: the slots' first requests are spread over one
    interval; a later request's first event comes one interval after it arrived; a flood
    stream outlasts the phase's `seconds`."""
    if mode == "flood":
        url = f"/flood?seconds={seconds + 5}"
        return url, url
    spread = slot * INTERVAL_S / slots
    return (f"/paced?events={EVENTS_PER_REQUEST}&first={spread:.6f}",
            f"/paced?events={EVENTS_PER_REQUEST}&first={INTERVAL_S}")


async def _run_slots(kind: str, port: int, mode: str, slots: int, seconds: float) -> _Tally:
    """Every slot sends requests back to back until `seconds` have passed (a flood stream's one
    request outlasts them); the events read by then are counted."""
    import orjson

    from runner.client import httpstream
    from runner.client.responses import ResponseCollector

    tally = _Tally()
    if kind == "raw-uvloop-nap":
        httpstream.nap_while_streaming(NAP_S)
    stop_at = time.monotonic() + seconds

    def on_line(line: bytes, stamp: float) -> None:  # httpx / aiohttp: one SSE line at a time
        if line.startswith(b"data: {"):
            sent = orjson.loads(line[6:]).get("server_send")
            if sent is not None:
                tally.add(stamp, sent)

    pooled = kind in ("raw", "raw-uvloop", "raw-uvloop-nap")
    pool = httpstream.Pool("127.0.0.1", port) if pooled else None

    async def raw_slot(first: str, later: str) -> None:
        url = first
        while time.monotonic() < stop_at:
            # The load generator's own per-request collector sits behind the raw transport.
            collector = ResponseCollector(0, 0, 0.0, chat=False)

            def on_event(data: bytes, stamp: float, collector: Any = collector) -> None:
                collector.on_event(data, stamp)
                at = data.rfind(b'"server_send":')
                if at >= 0:
                    tally.add(stamp, float(data[at + 14 : -1]))

            target = httpstream.parse_url(f"http://127.0.0.1:{port}", url)
            result = await httpstream.post(target, b"{}", on_event, sse=True, stall_timeout_s=30,
                                           request_timeout_s=seconds + 30, pool=pool)
            if result.connect_s is not None:
                tally.connects.append(result.connect_s)
            url = later

    async def httpx_slot(client: Any, first: str, later: str) -> None:
        url = first
        while time.monotonic() < stop_at:
            async with client.stream("POST", url, content=b"{}") as response:
                async for line in response.aiter_lines():
                    on_line(line.encode(), time.monotonic())
            url = later

    async def aiohttp_slot(session: Any, first: str, later: str) -> None:
        url = first
        while time.monotonic() < stop_at:
            async with session.post(url, data=b"{}") as response:
                async for line in response.content:
                    on_line(line, time.monotonic())
            url = later

    urls = [_slot_urls(mode, i, slots, seconds) for i in range(slots)]
    closer: Any = None  # aiohttp's session
    clients: list[Any] = []  # httpx's clients
    if kind.startswith("raw"):
        tasks = [asyncio.ensure_future(raw_slot(*u)) for u in urls]
    elif kind == "httpx":
        import httpx

        # One client (pool) per slot: one pool shared by 100+ busy connections spent the
        # client's core in its own bookkeeping (2,000 events/s read of 20,000 offered).
        # verify=False: plain http, so no CA bundle to load for each of them.
        base = f"http://127.0.0.1:{port}"
        clients = [httpx.AsyncClient(base_url=base, timeout=60, verify=False) for _ in urls]
        tasks = [
            asyncio.ensure_future(httpx_slot(c, *u)) for c, u in zip(clients, urls, strict=True)
        ]
    else:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=slots + 10)  # keep-alive, as vllm bench serve
        closer = aiohttp.ClientSession(f"http://127.0.0.1:{port}", connector=connector)
        tasks = [asyncio.ensure_future(aiohttp_slot(closer, *u)) for u in urls]
    # Paced: the last requests end within one response time after stop_at.
    grace = EVENTS_PER_REQUEST * INTERVAL_S + 2.0 if mode == "paced" else 0.0
    await asyncio.wait(tasks, timeout=seconds + grace)
    counted = len(tally.delays)  # events read within the window
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if pool is not None:
        await pool.close()
    if closer is not None:
        await closer.close()
    await asyncio.gather(*(c.aclose() for c in clients))
    del tally.delays[counted:]
    return tally


def _measure(
    kind: str, port: int, mode: str, rate: int, accepted: Any, server: Any, phases: Phases
) -> dict[str, Any]:
    from runner.client.health import cpu_steal_s

    slots = round(rate * INTERVAL_S) if mode == "paced" else FLOOD_STREAMS
    seconds = phases.paced_s if mode == "paced" else phases.flood_s
    if kind.startswith("raw-uvloop"):
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    accepted0 = accepted.value
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    server_cpu0 = sum(server.cpu_times()[:2])
    steal0 = cpu_steal_s()
    cpu0, wall0 = time.process_time(), time.monotonic()
    tally = loop.run_until_complete(_run_slots(kind, port, mode, slots, seconds))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    server_cpu = sum(server.cpu_times()[:2]) - server_cpu0
    steal = cpu_steal_s()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    preempted = usage.ru_nivcsw - usage0.ru_nivcsw
    sleeps = usage.ru_nvcsw - usage0.ru_nvcsw
    loop.close()
    import numpy as np

    count = len(tally.delays)
    ms = np.asarray(tally.delays) * 1000 if count else np.asarray([np.nan])
    connect_ms = np.asarray(tally.connects) * 1000 if tally.connects else np.asarray([np.nan])
    # Paced: events over the span of their arrivals, so a client that drains a backlog late
    # does not get credit for keeping up. Flood: events read inside the fixed window.
    active = tally.last - tally.first if mode == "paced" else seconds
    return {
        "events": count,
        "events_per_s": count / active if active > 0 else 0.0,
        "cpu": cpu / wall,
        # CPU time per event hardly depends on how often other processes preempt this one, so
        # it is the steadiest figure on a shared host: 1e6 / it = events/s one free core can take.
        "cpu_us_per_event": cpu / count * 1e6 if count else float("nan"),
        "preempted_per_s": preempted / wall,
        # Blocking waits (epoll_wait, or the idle nap's sleep): each one the server's write
        # had to wake, unless it was a nap on the client's own timer.
        "sleeps_per_s": sleeps / wall,
        # The server's CPU per event, its wake-ups of the client included (user + system).
        "server_us_per_event": server_cpu / count * 1e6 if count else float("nan"),
        "delay_median_ms": float(np.median(ms)),
        "delay_p99_ms": float(np.percentile(ms, 99)),
        "connections": accepted.value - accepted0,
        "requests": len(tally.connects),
        "connect_median_ms": float(np.median(connect_ms)),
        "connect_p99_ms": float(np.percentile(connect_ms, 99)),
        # Per CPU (server's, client's when pinned): share of the phase the hypervisor took.
        "steal": {cpu: (steal[cpu] - steal0.get(cpu, 0.0)) / wall for cpu in steal},
    }


def _client_main(
    kind: str, port: int, pinned: bool, rates: list[int], accepted: Any, results: Any,
    server_pid: int, phases: Phases,
) -> None:
    import psutil

    if pinned:
        os.sched_setaffinity(0, {CLIENT_CPU})
    server = psutil.Process(server_pid)
    paced = {
        rate: _measure(kind, port, "paced", rate, accepted, server, phases) for rate in rates
    }
    results.put((kind, paced, _measure(kind, port, "flood", 0, accepted, server, phases)))


def _measure_placement(
    ctx: Any, pinned: bool, clients: list[str], rates: list[int], phases: Phases
) -> list[tuple[str, dict, dict]]:
    """Every client, one after another, against one fresh server."""
    port_queue: Any = ctx.Queue()
    accepted: Any = ctx.Value("q", 0)
    server = ctx.Process(target=_server_main, args=(port_queue, pinned, accepted), daemon=True)
    server.start()
    port = port_queue.get(timeout=30)
    rows = []
    try:
        for kind in clients:
            results: Any = ctx.Queue()
            proc = ctx.Process(
                target=_client_main,
                args=(kind, port, pinned, rates, accepted, results, server.pid, phases),
            )
            proc.start()
            rows.append(results.get(timeout=60 + 15 * len(rates)))
            proc.join(timeout=30)
    finally:
        server.kill()
        server.join()
    return rows


def _row(placement: str, kind: str, rate: str, m: dict[str, Any], flood: dict[str, Any]) -> str:
    raw = kind.startswith("raw")
    connect = f"{m['connect_median_ms']:.3f} / {m['connect_p99_ms']:.3f}" if raw else "-"
    steal = " / ".join(
        f"{m['steal'][cpu]:.1%}" for cpu in (SERVER_CPU, CLIENT_CPU) if cpu in m["steal"]
    ) or "-"
    return (
        f"| {placement} | {kind} | {rate} | {m['events_per_s']:,.0f} | {m['cpu']:.2f} | "
        f"{m['cpu_us_per_event']:.1f} | {m['delay_median_ms']:.3f} | {m['delay_p99_ms']:.3f} | "
        f"{m['preempted_per_s']:,.0f} | {m['sleeps_per_s']:,.0f} | "
        f"{m['server_us_per_event']:.1f} | {m['connections']:,} | {connect} | "
        f"{flood['events_per_s']:,.0f} | {steal} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--placements", default=",".join(PLACEMENTS))
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--rates", default=",".join(str(r) for r in RATES))
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK_RATES} events/s, phases of "
                        f"{QUICK_PHASES.paced_s:g} s")
    args = parser.parse_args()
    placements = [p.strip() for p in args.placements.split(",")]
    clients = [c.strip() for c in args.clients.split(",")]
    rates = list(QUICK_RATES) if args.quick else [int(r) for r in args.rates.split(",")]
    phases = QUICK_PHASES if args.quick else PHASES
    unknown = sorted(set(placements) - set(PLACEMENTS)) + sorted(set(clients) - set(CLIENTS))
    if unknown:
        parser.error(f"unknown placement or client: {unknown}")
    ctx = multiprocessing.get_context("spawn")
    own_cores = {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0)
    if not own_cores and "own cores" in placements:
        print(f"only CPUs {sorted(os.sched_getaffinity(0))} here: the own-cores rows are skipped")
    table = []
    for placement in placements:
        pinned = placement == "own cores"
        if pinned and not own_cores:
            continue
        rows = _measure_placement(ctx, pinned, clients, rates, phases)
        table += [(placement, *row) for row in rows]
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"paced: rate x {INTERVAL_S * 1000:g} ms slots, each sending {EVENTS_PER_REQUEST}-event "
          f"requests (1 event / {INTERVAL_S * 1000:g} ms) back to back for {phases.paced_s:g} s; "
          f"flood: {FLOOD_STREAMS} streams as fast as possible, {phases.flood_s:g} s; own cores: "
          f"server on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}")
    print()
    print(
        "| placement | client | offered events/s | paced events/s | CPU (cores) | CPU us/event "
        "| delay median ms | delay p99 ms | preempted/s | sleeps/s | server CPU us/event "
        "| connections | connect p50 / p99 ms | flood events/s | steal CPU 0 / 1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for placement, kind, paced, flood in table:
        for rate, m in paced.items():
            print(_row(placement, kind, f"{rate:,}", m, flood))


if __name__ == "__main__":
    main()
