"""The engine's side of the queue evidence: /metrics scraped during a point, and its summary.

The verdict "the engine admits too few of the queued requests" rests on waiting vs running vs KV
usage over time, so a background thread scrapes every replica's Prometheus endpoint at a fixed
interval and `summarize` turns the samples into time-weighted means, peaks and counter deltas
for exactly the point's window.

Beside the queue it reads what vLLM 0.32 adds (vllm/v1/metrics/loggers.py and perf.py): waiting
by reason, the prefix cache's queried and hit tokens, the queue-time histogram, and, when the
engine runs with --enable-mfu-metrics, its estimates of FLOPs and memory bytes per GPU. An
engine that exposes none of these leaves their figures None: nothing is filled in.
"""

from __future__ import annotations

import math
import threading
import time
from itertools import pairwise
from urllib.parse import urlencode

import httpx
from prometheus_client.parser import text_string_to_metric_families

from runner.engine.bounded_read import (
    METRICS_MAX_BYTES,
    Answer,
    AnswerOverBound,
    DeadlineTransport,
    read_bounded,
)
from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.schema.records import EngineSample
from runner.schema.result import PointResult
from runner.schema.samples import QueueSummary

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_USAGE = "vllm:kv_cache_usage_perc"
KV_USAGE_OLD = "vllm:gpu_cache_usage_perc"  # name before vLLM 0.10
PREEMPTIONS = "vllm:num_preemptions"
PROMPT_TOKENS = "vllm:prompt_tokens"
GENERATION_TOKENS = "vllm:generation_tokens"
ITERATION_TOKENS = "vllm:iteration_tokens_total"  # histogram: tokens scheduled per engine step
CACHE_CONFIG = "vllm:cache_config_info"
WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason"  # reason "capacity" or "deferred"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries"  # tokens looked up
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits"  # tokens found
FLOPS_PER_GPU = "vllm:estimated_flops_per_gpu"
READ_BYTES_PER_GPU = "vllm:estimated_read_bytes_per_gpu"
WRITE_BYTES_PER_GPU = "vllm:estimated_write_bytes_per_gpu"
QUEUE_TIME = "vllm:request_queue_time_seconds"  # histogram, observed when a request finishes
# Speculative decoding (vllm/v1/spec_decode/metrics.py SpecDecodingProm), exposed only when the
# engine runs with --speculative-config: drafts proposed, their tokens, the tokens the target
# model accepted, and accepted tokens by draft position (label `position`, "0" first).
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
SPEC_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
SPEC_ACCEPTED_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"

# Labels whose values name different series of one metric (kept apart, not summed together):
# the waiting reason, a histogram bucket's upper bound, and a draft position.
SERIES_LABELS = ("reason", "le", "position")

# The most one scrape may take, its whole answer included (runner.engine.bounded_read).
SCRAPE_TIMEOUT_S = 2.0
# Above any count an engine reaches (a GPU at 1e15 FLOP/s counts 1e30 FLOPs in 30 million
# years). A larger value, like NaN or an infinity, comes from a broken or hostile page, and
# leaving it out keeps every sum and time-weighted mean of a summary finite.
VALUE_MAX = 1e30
# A point's note names the first SHOWN kinds of value left out; the sampler counts at most
# SKIPPED_KEPT kinds, as a hostile page may hold new ones in every scrape.
SHOWN = 5
SKIPPED_KEPT = 100

# The samples parse_metrics reads, and all the sampler asks for. A vLLM 0.32 page holds some 450
# samples (Python's GC and process figures, an HTTP histogram per route); asking for these alone
# cuts the scrape's cost to the API server and the client about sixfold (docs/performance.md,
# "Cost of a `/metrics` scrape").
SCRAPED_SAMPLES: tuple[str, ...] = (
    RUNNING,
    WAITING,
    KV_USAGE,
    KV_USAGE_OLD,
    PREEMPTIONS + "_total",
    PROMPT_TOKENS + "_total",
    GENERATION_TOKENS + "_total",
    ITERATION_TOKENS + "_sum",
    ITERATION_TOKENS + "_count",
    WAITING_BY_REASON,
    PREFIX_CACHE_QUERIES + "_total",
    PREFIX_CACHE_HITS + "_total",
    FLOPS_PER_GPU + "_total",
    READ_BYTES_PER_GPU + "_total",
    WRITE_BYTES_PER_GPU + "_total",
    QUEUE_TIME + "_sum",
    QUEUE_TIME + "_bucket",
    SPEC_DRAFTS + "_total",
    SPEC_DRAFT_TOKENS + "_total",
    SPEC_ACCEPTED_TOKENS + "_total",
    SPEC_ACCEPTED_PER_POSITION + "_total",
)

# vLLM 0.32 answers GET /metrics from prometheus-fastapi-instrumentator's route, which ignores the
# query; /metrics/ reaches prometheus_client's own ASGI app (mounted beside it), which honours it.
FILTERED_METRICS_PATH = "/metrics/?" + urlencode([("name[]", name) for name in SCRAPED_SAMPLES])


# (sample name, the value of its SERIES_LABELS label or "")
SeriesKey = tuple[str, str]
_READ = frozenset(SCRAPED_SAMPLES)


def usable(value: float) -> bool:
    """Whether a page's value is a figure: finite and within VALUE_MAX (NaN is Prometheus's
    "no value")."""
    return math.isfinite(value) and abs(value) <= VALUE_MAX


def _value_problem(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return ("+Inf" if value > 0 else "-Inf") if math.isinf(value) else f"beyond {VALUE_MAX:g}"


def _series_problem(name: str, series: str) -> str | None:
    """Why a series label cannot be read, or None: a bucket's `le` is a number or "+Inf", and
    a draft position a whole number, "0" first."""
    if name == QUEUE_TIME + "_bucket":
        try:
            bound = float(series)
        except ValueError:
            bound = math.nan
        return None if not math.isnan(bound) else f"le={series[:40]!r}"
    if name == SPEC_ACCEPTED_PER_POSITION + "_total" and not (
        series.isascii() and series.isdigit()
    ):
        return f"position={series[:40]!r}"
    return None


def _sums(
    text: str, skipped: list[str]
) -> tuple[dict[SeriesKey, float], dict[SeriesKey, int]]:
    """(sample name, series) -> value summed across label sets, and how many label sets each had.

    Data-parallel engines report one label set per `engine`; a waiting reason or a histogram
    bucket is its own series (SERIES_LABELS), summed over engines but never into the others.
    Only the samples parse_metrics reads are summed (the parser's `_created` samples, a
    timestamp, are not among them). A value that is no figure (`usable`) or a series label that
    cannot be read is left out and said in `skipped`, so no summary meets it.
    """
    sums: dict[SeriesKey, float] = {}
    counts: dict[SeriesKey, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name not in _READ:
                continue
            series = next((sample.labels[k] for k in SERIES_LABELS if k in sample.labels), "")
            problem = _series_problem(sample.name, series)
            if problem is None and not usable(sample.value):
                problem = _value_problem(sample.value)
            if problem is not None:
                skipped.append(f"{sample.name} {problem}")
                continue
            key = (sample.name, series)
            sums[key] = sums.get(key, 0.0) + sample.value
            counts[key] = counts.get(key, 0) + 1
    return sums, counts


def _mean_over_engines(
    sums: dict[SeriesKey, float], counts: dict[SeriesKey, int], name: str
) -> float | None:
    """A per-engine quantity (a 0-1 share, a per-GPU count) averaged over the engines."""
    key = (name, "")
    return sums[key] / counts[key] if key in sums else None


def parse_metrics(text: str, skipped: list[str] | None = None) -> EngineSample:
    """Queue gauges and counters from one /metrics page, summed over engines; KV usage and
    the per-GPU work estimates averaged (each engine reports its own share or its own GPU's).

    A reading the engine does not expose is None, and so is one whose every value is NaN, an
    infinity or beyond VALUE_MAX; what was left out is appended to `skipped` (sample name and
    value or label). The sample's time and replica are left at 0: the sampler stamps them with
    the moment the page arrived and the replica it came from.
    """
    sums, counts = _sums(text, [] if skipped is None else skipped)

    def total(name: str, series: str = "") -> float | None:
        return sums.get((name, series))

    kv_name = KV_USAGE if (KV_USAGE, "") in sums else KV_USAGE_OLD
    def by_series(name: str) -> dict[str, float]:
        return {series: value for (sample, series), value in sums.items() if sample == name}

    return EngineSample(
        t=0.0,
        running=total(RUNNING),
        waiting=total(WAITING),
        kv_usage=_mean_over_engines(sums, counts, kv_name),
        preemptions_total=total(PREEMPTIONS + "_total"),
        prompt_tokens_total=total(PROMPT_TOKENS + "_total"),
        generation_tokens_total=total(GENERATION_TOKENS + "_total"),
        iteration_tokens_sum=total(ITERATION_TOKENS + "_sum"),
        iteration_tokens_count=total(ITERATION_TOKENS + "_count"),
        waiting_capacity=total(WAITING_BY_REASON, "capacity"),
        waiting_deferred=total(WAITING_BY_REASON, "deferred"),
        prefix_cache_queries_total=total(PREFIX_CACHE_QUERIES + "_total"),
        prefix_cache_hits_total=total(PREFIX_CACHE_HITS + "_total"),
        estimated_flops_per_gpu_total=_mean_over_engines(sums, counts, FLOPS_PER_GPU + "_total"),
        estimated_read_bytes_per_gpu_total=_mean_over_engines(
            sums, counts, READ_BYTES_PER_GPU + "_total"),
        estimated_write_bytes_per_gpu_total=_mean_over_engines(
            sums, counts, WRITE_BYTES_PER_GPU + "_total"),
        queue_time_sum=total(QUEUE_TIME + "_sum"),
        queue_time_buckets=by_series(QUEUE_TIME + "_bucket"),
        spec_drafts_total=total(SPEC_DRAFTS + "_total"),
        spec_draft_tokens_total=total(SPEC_DRAFT_TOKENS + "_total"),
        spec_accepted_tokens_total=total(SPEC_ACCEPTED_TOKENS + "_total"),
        spec_accepted_per_position_total=by_series(SPEC_ACCEPTED_PER_POSITION + "_total"),
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

    It asks for only the samples it reads (FILTERED_METRICS_PATH). A server that does not answer
    that with a queue gauge (another server, an older prometheus_client, a gateway that routes
    only /metrics) is scraped for its whole page from then on, the first scrape included.

    Times are seconds since t0 on time.monotonic(), the point's clock. A failed scrape (engine
    busy, connection reset, an answer over METRICS_MAX_BYTES or SCRAPE_TIMEOUT_S) is skipped: a
    missing sample widens the step-hold in `summarize`, it never aborts a measurement. An
    attached server may not expose /metrics to us at all (a gateway that routes only /v1, a key
    that does not cover it): the point is still measured, and `unavailable_note` says why it
    has no queue evidence. Values a page held that are no figures (NaN, an infinity, a label
    that cannot be read) are left out of its sample, and `skipped_note` says which.
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
        self.whole_page: set[int] = set()  # replicas whose server ignored or refused the filter
        self.skipped: dict[str, int] = {}  # what parse_metrics left out -> how many times
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

    def skipped_note(self) -> str | None:
        """A sentence for the point when a page held values that are no figures; None else."""
        if not self.skipped:
            return None
        shown = [f"{what} ({count}x)" for what, count in list(self.skipped.items())[:SHOWN]]
        more = len(self.skipped) - len(shown)
        return (
            "the engine's /metrics held values that are no figures, left out of its samples: "
            + "; ".join(shown) + (f"; and {more} more" if more else "")
        )

    def _run(self) -> None:
        with httpx.Client(timeout=SCRAPE_TIMEOUT_S, headers=self.headers,
                          transport=DeadlineTransport()) as client:  # fmt: skip
            while True:
                started = time.monotonic()
                for replica, base_url in self.targets:
                    self._scrape(client, replica, base_url)
                if self._stop.is_set():
                    return
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def _scrape(self, client: httpx.Client, replica: int, base_url: str) -> None:
        base_url = base_url.rstrip("/")
        if replica not in self.whole_page:
            try:
                answer = _get_page(client, base_url + FILTERED_METRICS_PATH)
                arrived = time.monotonic()
            except httpx.HTTPError as exc:
                self._failed(_connection_problem(exc))
                return
            skipped: list[str] = []
            snapshot = _queue_snapshot(answer, skipped)
            if snapshot is not None:
                self._keep(snapshot, arrived, replica, skipped)
                return
            self.whole_page.add(replica)
        try:
            answer = _get_page(client, base_url + "/metrics")
            # The values are the engine's state when it answered: stamp the arrival, not the end
            # of parsing (milliseconds to tens of them for prometheus_client's parser).
            arrived = time.monotonic()
        except httpx.HTTPError as exc:
            self._failed(_connection_problem(exc))
            return
        if answer.status_code != 200:
            self._failed(f"HTTP {answer.status_code}")
            return
        skipped = []
        try:
            snapshot = parse_metrics(answer.text, skipped)
        except ValueError:
            self._failed("not a Prometheus text page")
            return
        self._keep(snapshot, arrived, replica, skipped)

    def _keep(
        self, snapshot: EngineSample, arrived: float, replica: int, skipped: list[str]
    ) -> None:
        self.samples.append(
            snapshot.model_copy(update={"t": arrived - self.t0, "replica": replica})
        )
        for what in skipped:
            if what in self.skipped or len(self.skipped) < SKIPPED_KEPT:
                self.skipped[what] = self.skipped.get(what, 0) + 1

    def _failed(self, reason: str) -> None:
        self.failures += 1
        self.last_failure = reason


def _get_page(client: httpx.Client, url: str) -> Answer:
    return read_bounded(client, url, max_bytes=METRICS_MAX_BYTES, total_s=SCRAPE_TIMEOUT_S)


def _queue_snapshot(answer: Answer, skipped: list[str]) -> EngineSample | None:
    """The filtered page's sample, or None when it is no page of queue gauges."""
    if answer.status_code != 200:
        return None
    try:
        snapshot = parse_metrics(answer.text, skipped)
    except ValueError:
        return None
    return None if snapshot.running is None and snapshot.waiting is None else snapshot


def _connection_problem(exc: httpx.HTTPError) -> str:
    """A failed request in a few words: what an operator needs to fix it."""
    if isinstance(exc, AnswerOverBound):
        return str(exc)
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

    The prefix cache, the work estimates and the queue-time histogram are read over the whole
    window instead: from the last sample at or before `start` to the first at or after `end`
    (the sampler's last round comes after the load ends), so the work of the window's last
    fraction of a second is not lost from a rate; the engine is idle on either side of its
    window, so nothing outside it is counted. Rates divide by the window's length.
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

    for field_name, mean_name, peak_name, combine in (
        ("running", "mean_running", "peak_running", sum),
        ("waiting", "mean_waiting", "peak_waiting", sum),
        ("kv_usage", "mean_kv_usage", "peak_kv_usage", _mean),
    ):
        mean, peak = _step_hold(by_replica, field_name, start, end, combine)
        setattr(summary, mean_name, mean)
        setattr(summary, peak_name, peak)
    summary.mean_waiting_capacity, _ = _step_hold(by_replica, "waiting_capacity", start, end, sum)
    summary.mean_waiting_deferred, _ = _step_hold(by_replica, "waiting_deferred", start, end, sum)
    summary.max_gap_s = _max_gap(by_replica, start, end)
    summary.running_while_waiting_s = running_while_waiting(samples, start, end)
    summary.preemptions = _counter_delta(by_replica, "preemptions_total", start, end)
    summary.generation_tokens = _counter_delta(by_replica, "generation_tokens_total", start, end)
    step_tokens = _counter_delta(by_replica, "iteration_tokens_sum", start, end)
    steps = _counter_delta(by_replica, "iteration_tokens_count", start, end)
    if step_tokens is not None and steps:
        summary.mean_tokens_per_step = step_tokens / steps
    _summarize_cache_and_work(summary, by_replica, start, end)
    _summarize_queue_time(summary, by_replica, start, end)
    _summarize_spec_decode(summary, by_replica, start, end)
    return summary


def _summarize_cache_and_work(
    summary: QueueSummary, by_replica: dict[int, list[EngineSample]], start: float, end: float
) -> None:
    """Prefix-cache tokens (summed over replicas) and work per GPU per second (their mean)."""
    queries = _window_increases(by_replica, "prefix_cache_queries_total", start, end)
    hits = _window_increases(by_replica, "prefix_cache_hits_total", start, end)
    summary.prefix_cache_queries = sum(queries) if queries else None
    summary.prefix_cache_hits = sum(hits) if hits else None
    seconds = end - start
    for field_name, rate_name in (
        ("estimated_flops_per_gpu_total", "flops_per_gpu_s"),
        ("estimated_read_bytes_per_gpu_total", "read_bytes_per_gpu_s"),
        ("estimated_write_bytes_per_gpu_total", "write_bytes_per_gpu_s"),
    ):
        increases = _window_increases(by_replica, field_name, start, end)
        # A counter that did not rise is one the engine does not keep (vLLM counts these only
        # with --enable-mfu-metrics): not reported, never a measured zero.
        if increases and sum(increases) > 0:
            setattr(summary, rate_name, _mean(increases) / seconds)


def _summarize_queue_time(
    summary: QueueSummary, by_replica: dict[int, list[EngineSample]], start: float, end: float
) -> None:
    """Queue time of the requests that finished in the window, all replicas' requests pooled:
    the bucket counts' increases are added bound by bound, then read as one histogram."""
    pooled: dict[str, float] = {}
    total_sum, sums_seen = 0.0, False
    for rows in by_replica.values():
        with_buckets = [s for s in rows if s.queue_time_buckets]
        first, last = _window_ends(with_buckets, start, end)
        if first is None or last is None:
            continue
        for bound, count in last.queue_time_buckets.items():
            increase = max(0.0, count - first.queue_time_buckets.get(bound, 0.0))
            pooled[bound] = pooled.get(bound, 0.0) + increase
        if first.queue_time_sum is not None and last.queue_time_sum is not None:
            total_sum += max(0.0, last.queue_time_sum - first.queue_time_sum)
            sums_seen = True
    if not pooled:
        return
    # The highest bound's bucket (+Inf) holds every request the histogram recorded.
    requests = max(pooled.values())
    summary.queue_time_requests = requests
    if not requests:
        return
    if sums_seen:
        summary.mean_queue_time_s = total_sum / requests
    summary.queue_time_p50_s = histogram_percentile(pooled, 50)
    summary.queue_time_p90_s = histogram_percentile(pooled, 90)
    summary.queue_time_p99_s = histogram_percentile(pooled, 99)


def _summarize_spec_decode(
    summary: QueueSummary, by_replica: dict[int, list[EngineSample]], start: float, end: float
) -> None:
    """Speculative decoding's drafts, draft tokens and accepted tokens over the window, and the
    accepted tokens by draft position, each summed over the replicas that expose them; read
    over the whole window as the prefix cache is. An engine without --speculative-config
    exposes none of these counters, and its point keeps them None."""
    for field_name, summary_name in (
        ("spec_drafts_total", "spec_drafts"),
        ("spec_draft_tokens_total", "spec_draft_tokens"),
        ("spec_accepted_tokens_total", "spec_accepted_tokens"),
    ):
        increases = _window_increases(by_replica, field_name, start, end)
        setattr(summary, summary_name, sum(increases) if increases else None)
    per_position: dict[str, float] = {}
    for rows in by_replica.values():
        first, last = _window_ends(
            [s for s in rows if s.spec_accepted_per_position_total], start, end)
        if first is None or last is None:
            continue
        for position, count in last.spec_accepted_per_position_total.items():
            increase = max(0.0, count - first.spec_accepted_per_position_total.get(position, 0.0))
            per_position[position] = per_position.get(position, 0.0) + increase
    if per_position:
        summary.spec_accepted_per_position = dict(
            sorted(per_position.items(), key=lambda item: int(item[0])))


def histogram_percentile(buckets: dict[str, float], percentile: float) -> float | None:
    """The upper bound of the bucket the percentile's rank falls in (bucket resolution).

    buckets: cumulative counts keyed by their `le` bound, "+Inf" holding every observation.
    The rank is percentile/100 x the count, and the answer the first bound whose cumulative
    count reaches it, as Prometheus's histogram_quantile finds the bucket. Prometheus then
    interpolates inside the bucket; Headroom does not, because queue times of a few
    milliseconds all land in vLLM's first bucket (0-0.3 s) and interpolation would report them
    as 0.15 s. So the figure reads "at most this", and None when the rank lies in the +Inf
    bucket (above every finite bound) or nothing was observed.
    """
    ordered = sorted(((float(bound), count) for bound, count in buckets.items()))
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = percentile / 100.0 * ordered[-1][1]
    for bound, count in ordered:
        if count >= rank:
            return bound if math.isfinite(bound) else None
    return None


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


def running_while_waiting(
    samples: list[EngineSample], start: float, end: float
) -> dict[str, float] | None:
    """Seconds of [start, end] each running count held while its replica had a request
    waiting, summed over replicas (QueueSummary.running_while_waiting_s); None without gauges,
    or without a sample inside the window (summarize then reports no figures).

    Each sample's values hold until that replica's next sample, as in _step_hold.
    """
    if end <= start or not any(start <= s.t <= end for s in samples):
        return None
    by_replica: dict[int, list[EngineSample]] = {}
    for sample in sorted(samples, key=lambda s: s.t):
        by_replica.setdefault(sample.replica, []).append(sample)
    held: dict[str, float] = {}
    covered = False
    for rows in by_replica.values():
        series = [(s.t, s.running, s.waiting) for s in rows
                  if s.running is not None and s.waiting is not None]
        if not series:
            continue
        ends = [t for t, _, _ in series[1:]] + [math.inf]
        for (t, running, waiting), next_t in zip(series, ends, strict=True):
            left, right = max(t, start), min(next_t, end)
            if right <= left:
                continue
            covered = True
            if waiting >= 1:
                key = str(round(running))
                held[key] = held.get(key, 0.0) + (right - left)
    return held if covered else None


def point_running_while_waiting(point: PointResult) -> dict[str, float] | None:
    """QueueSummary.running_while_waiting_s of a point, from its stored engine samples: for a
    point whose summary was recorded before the field existed.

    As runner.sweep records it: each replica's samples over that replica's window, the
    replicas' seconds added count by count (the field's node rule); the point's window for a
    point that kept no replica's. None without samples, a window or the running and waiting
    gauges.
    """
    windows = [(r.replica, r.window) for r in point.per_replica if r.window is not None]
    if not windows:
        if point.window is None:
            return None
        return running_while_waiting(point.samples, point.window.start, point.window.end)
    held: dict[str, float] | None = None
    for replica, window in windows:
        mine = [s for s in point.samples if s.replica == replica]
        record = running_while_waiting(mine, window.start, window.end)
        if record is None:
            continue
        if held is None:
            held = {}
        for running, seconds in record.items():
            held[running] = held.get(running, 0.0) + seconds
    return held


def _value_at(rows: list[tuple[float, float]], t: float) -> float | None:
    """The held value at time t: the last sample at or before t."""
    value = None
    for sample_t, sample_value in rows:
        if sample_t > t:
            break
        value = sample_value
    return value


def _window_ends(
    rows: list[EngineSample], start: float, end: float
) -> tuple[EngineSample | None, EngineSample | None]:
    """The samples a counter is read between for [start, end]: the last at or before start
    (else the first inside), and the first at or after end (else the last inside)."""
    before = [s for s in rows if s.t <= start]
    inside = [s for s in rows if start <= s.t <= end]
    after = [s for s in rows if s.t >= end]
    first = before[-1] if before else (inside[0] if inside else None)
    last = after[0] if after else (inside[-1] if inside else None)
    return first, last


def _window_increases(
    by_replica: dict[int, list[EngineSample]], field_name: str, start: float, end: float
) -> list[float]:
    """Each replica's increase of a counter over the window (_window_ends), for the replicas
    that report it; an engine restart (a counter going down) counts as no increase."""
    increases = []
    for rows in by_replica.values():
        reporting = [s for s in rows if getattr(s, field_name) is not None]
        first, last = _window_ends(reporting, start, end)
        if first is not None and last is not None:
            increases.append(max(0.0, getattr(last, field_name) - getattr(first, field_name)))
    return increases


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
