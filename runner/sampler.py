"""The engine's side of the queue evidence: /metrics scraped during a point, and its summary.

The verdict "the engine admits too few of the queued requests" rests on waiting vs running vs KV
usage over time, so a background thread scrapes every replica's Prometheus endpoint at a fixed
interval and `summarize` turns the samples into time-weighted means, peaks and counter deltas
for exactly the point's window.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from itertools import pairwise

import httpx
from prometheus_client.parser import text_string_to_metric_families

from runner.endpoint import NO_CREDENTIALS, Credentials
from runner.schema import EngineSample, QueueSummary

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_USAGE = "vllm:kv_cache_usage_perc"
KV_USAGE_OLD = "vllm:gpu_cache_usage_perc"  # name before vLLM 0.10
PREEMPTIONS = "vllm:num_preemptions"
PROMPT_TOKENS = "vllm:prompt_tokens"
GENERATION_TOKENS = "vllm:generation_tokens"
ITERATION_TOKENS = "vllm:iteration_tokens_total"  # histogram: tokens scheduled per engine step
CACHE_CONFIG = "vllm:cache_config_info"

SCRAPE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class MetricsSnapshot:
    """The values Headroom reads from one /metrics page; None when the engine does not expose it."""

    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None
    preemptions_total: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    iteration_tokens_sum: float | None = None
    iteration_tokens_count: float | None = None


def _sums(text: str) -> tuple[dict[str, float], dict[str, int]]:
    """Sample name -> value summed across label sets, and how many label sets each had.

    Data-parallel engines report one label set per `engine`. The parser strips `_total` from
    counter family names but keeps it on the samples, and emits `_created` samples (a
    timestamp, not a count) that must not be mistaken for values.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
            counts[sample.name] = counts.get(sample.name, 0) + 1
    return sums, counts


def parse_metrics(text: str) -> MetricsSnapshot:
    """Queue gauges and counters from one /metrics page, summed over engines (KV: averaged)."""
    sums, counts = _sums(text)
    kv_name = KV_USAGE if KV_USAGE in sums else KV_USAGE_OLD
    kv = sums.get(kv_name)
    if kv is not None:
        kv = kv / counts[kv_name]  # each engine reports 0-1; the mean keeps that scale
    return MetricsSnapshot(
        running=sums.get(RUNNING),
        waiting=sums.get(WAITING),
        kv_usage=kv,
        preemptions_total=sums.get(PREEMPTIONS + "_total"),
        prompt_tokens_total=sums.get(PROMPT_TOKENS + "_total"),
        generation_tokens_total=sums.get(GENERATION_TOKENS + "_total"),
        iteration_tokens_sum=sums.get(ITERATION_TOKENS + "_sum"),
        iteration_tokens_count=sums.get(ITERATION_TOKENS + "_count"),
    )


def cache_config(text: str) -> dict[str, str]:
    """Labels of `vllm:cache_config_info` (num_gpu_blocks, block_size, cache_dtype, ...).

    Empty when the engine does not expose it (older vLLM, another server).
    """
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == CACHE_CONFIG:
                return dict(sample.labels)
    return {}


class QueueSampler:
    """Scrapes each (replica, base_url) every interval_s in a background thread.

    Times are seconds since t0 on time.monotonic(), the point's clock. A failed scrape (engine
    busy, connection reset) is skipped: a missing sample widens the step-hold in `summarize`, it
    never aborts a measurement. An attached server may not expose /metrics to us at all (a
    gateway that routes only /v1, a key that does not cover it): the point is still measured,
    and `unavailable_note` says why it has no queue evidence.
    """

    def __init__(
        self,
        targets: list[tuple[int, str]],
        interval_s: float,
        t0: float,
        credentials: Credentials = NO_CREDENTIALS,
    ) -> None:
        self.targets = targets
        self.interval_s = interval_s
        self.t0 = t0
        self.headers = credentials.http_headers()
        self.samples: list[EngineSample] = []
        self.failures = 0
        self.last_failure: str | None = None  # why the latest failed scrape failed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="queue-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[EngineSample]:
        """Stop after one last scrape round (so the window's end is covered); samples by time."""
        self._stop.set()
        self._thread.join()
        return sorted(self.samples, key=lambda s: (s.t, s.replica))

    def unavailable_note(self) -> str | None:
        """A sentence for the point when not one scrape succeeded; None when any did."""
        if self.samples or not self.failures:
            return None
        return (
            "engine queue metrics were not available from this endpoint: every GET /metrics "
            f"failed ({self.last_failure}), so the point has no running, waiting or KV-cache "
            "samples and no queue verdict; its client-side figures are measured as usual"
        )

    def _run(self) -> None:
        with httpx.Client(timeout=SCRAPE_TIMEOUT_S, headers=self.headers) as client:
            while True:
                started = time.monotonic()
                for replica, base_url in self.targets:
                    self._scrape(client, replica, base_url)
                if self._stop.is_set():
                    return
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def _scrape(self, client: httpx.Client, replica: int, base_url: str) -> None:
        try:
            response = client.get(base_url.rstrip("/") + "/metrics")
            # The values are the engine's state when it answered: stamp the arrival, not the end
            # of parsing (tens of milliseconds for prometheus_client's parser).
            arrived = time.monotonic()
            if response.status_code != 200:
                self._failed(f"HTTP {response.status_code}")
                return
            snapshot = parse_metrics(response.text)
        except httpx.HTTPError as exc:
            self._failed(_connection_problem(exc))
            return
        except ValueError:
            self._failed("not a Prometheus text page")
            return
        self.samples.append(
            EngineSample(
                t=arrived - self.t0,
                replica=replica,
                running=snapshot.running,
                waiting=snapshot.waiting,
                kv_usage=snapshot.kv_usage,
                preemptions_total=snapshot.preemptions_total,
                prompt_tokens_total=snapshot.prompt_tokens_total,
                generation_tokens_total=snapshot.generation_tokens_total,
                iteration_tokens_sum=snapshot.iteration_tokens_sum,
                iteration_tokens_count=snapshot.iteration_tokens_count,
            )
        )

    def _failed(self, reason: str) -> None:
        self.failures += 1
        self.last_failure = reason


def _connection_problem(exc: httpx.HTTPError) -> str:
    """A failed request in a few words: what an operator needs to fix it."""
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {SCRAPE_TIMEOUT_S:g} s"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or unreachable"
    return type(exc).__name__


def summarize(samples: list[EngineSample], start: float, end: float) -> QueueSummary:
    """Queue summary over [start, end], all replicas together.

    Gauges are held from one sample to the next (step-hold, the way Prometheus reads a gauge),
    clipped to the window, and averaged by time. With several replicas the running and waiting
    values are summed across replicas (the node's queue) and KV usage is averaged; each
    replica's value is its latest sample at that instant. Counters (preemptions, generation
    tokens) are the increase from the last sample at or before `start` (or the first one inside
    the window) to the last sample at or before `end`, summed over replicas. Mean tokens per
    step is the increase of the step histogram's sum over the increase of its count: how full
    the engine's steps were against max_num_batched_tokens during the window.
    """
    inside = [s for s in samples if start <= s.t <= end]
    summary = QueueSummary(samples=len(inside))
    if end <= start:
        return summary
    if not inside:
        # Nothing was read while the point ran. A value held from before the window is the idle
        # engine ahead of the load, not this point's queue: report the gap and no figures.
        summary.max_gap_s = end - start
        return summary
    by_replica: dict[int, list[EngineSample]] = {}
    for sample in sorted(samples, key=lambda s: s.t):
        by_replica.setdefault(sample.replica, []).append(sample)

    for field, mean_name, peak_name, combine in (
        ("running", "mean_running", "peak_running", sum),
        ("waiting", "mean_waiting", "peak_waiting", sum),
        ("kv_usage", "mean_kv_usage", "peak_kv_usage", _mean),
    ):
        mean, peak = _step_hold(by_replica, field, start, end, combine)
        setattr(summary, mean_name, mean)
        setattr(summary, peak_name, peak)
    summary.max_gap_s = _max_gap(by_replica, start, end)
    summary.preemptions = _counter_delta(by_replica, "preemptions_total", start, end)
    summary.generation_tokens = _counter_delta(by_replica, "generation_tokens_total", start, end)
    step_tokens = _counter_delta(by_replica, "iteration_tokens_sum", start, end)
    steps = _counter_delta(by_replica, "iteration_tokens_count", start, end)
    if step_tokens is not None and steps:
        summary.mean_tokens_per_step = step_tokens / steps
    return summary


def _max_gap(by_replica: dict[int, list[EngineSample]], start: float, end: float) -> float:
    """The longest part of [start, end] between two samples of one replica, edges included."""
    longest = 0.0
    for rows in by_replica.values():
        edges = [start, *(s.t for s in rows if start < s.t < end), end]
        longest = max(longest, *(b - a for a, b in pairwise(edges)))
    return longest


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _step_hold(by_replica, field, start, end, combine) -> tuple[float | None, float | None]:
    """Time-weighted mean and peak of the combined gauge over [start, end].

    Each replica's series is a step function: a sample's value holds until that replica's next
    sample. Before a replica's first sample its value is unknown; those stretches are left out
    of the mean (rather than counted as zero) and the mean is over the covered time only.
    """
    series = {
        replica: [(s.t, getattr(s, field)) for s in rows if getattr(s, field) is not None]
        for replica, rows in by_replica.items()
    }
    series = {replica: rows for replica, rows in series.items() if rows}
    if not series:
        return None, None
    # Instants where any replica's value may change, clipped to the window.
    inner = {t for rows in series.values() for t, _ in rows if start < t < end}
    edges = sorted({start, end} | inner)
    weighted, covered, peak = 0.0, 0.0, None
    for left, right in pairwise(edges):
        values = [v for rows in series.values() if (v := _value_at(rows, left)) is not None]
        if not values:
            continue
        combined = combine(values)
        weighted += combined * (right - left)
        covered += right - left
        peak = combined if peak is None else max(peak, combined)
    if covered == 0:
        return None, None
    return weighted / covered, peak


def _value_at(rows: list[tuple[float, float]], t: float) -> float | None:
    """The held value at time t: the last sample at or before t."""
    value = None
    for sample_t, sample_value in rows:
        if sample_t > t:
            break
        value = sample_value
    return value


def _counter_delta(by_replica, field, start, end) -> float | None:
    total, seen = 0.0, False
    for rows in by_replica.values():
        points = [(s.t, getattr(s, field)) for s in rows if getattr(s, field) is not None]
        before = [v for t, v in points if t <= start]
        upto_end = [v for t, v in points if t <= end]
        if not upto_end:
            continue
        baseline = before[-1] if before else next(v for t, v in points if t >= start)
        total += max(0.0, upto_end[-1] - baseline)
        seen = True
    return total if seen else None
