"""When each request is sent: arrival offsets, and the jobs each client process runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.schema.plan import ClientSpec, LoadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import ClientHealth, SendSchedule
from runner.workloads.prompts import Prompt


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
class Item:
    index: int
    prompt: Prompt
    offset: float | None  # intended send, seconds after t0; None in a closed loop


@dataclass
class Job:
    target: Target
    items: list[Item]
    concurrency: int | None  # closed loop slots; None for burst/rate
    max_in_flight: int | None = None  # burst/rate: this worker's share of max_concurrency
    # A conversation workload: the items again, as each conversation's turns in order.
    conversations: list[list[Item]] | None = None


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
) -> list[Job]:
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
                Item(i, prompts[i], offsets[i] if offsets is not None else None)
                for i in range(w, n, per_target)
            ]
            share = _share(cap, per_target, w) if cap is not None else None
            if load.shape == "concurrency":
                jobs.append(Job(target, items, concurrency=share))
            else:
                jobs.append(Job(target, items, concurrency=None, max_in_flight=share))
    return jobs


def _plan_conversations(
    targets: list[Target], load: LoadSpec, client: ClientSpec, prompts: list[Prompt], seed: int
) -> list[Job]:
    """A conversation workload's jobs: whole conversations dealt round-robin to the workers,
    each of which sends a conversation's turns one after another (runner.workloads.conversations).

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
                [Item(p.index, p, starts[g] if starts is not None and t == 0 else None)
                 for t, p in enumerate(turns)]
                for g, turns in enumerate(groups)
                if g % per_target == w
            ]
            share = _share(cap, per_target, w) if cap is not None else None
            jobs.append(Job(
                target, [item for turns in mine for item in turns],
                concurrency=share if closed else None,
                max_in_flight=None if closed else share, conversations=mine,
            ))  # fmt: skip
    return jobs


def _share(total: int, parts: int, w: int) -> int:
    """Worker w's part of total slots split over parts workers; the first ones get the rest."""
    return total // parts + (w < total % parts)
