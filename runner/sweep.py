"""Sweeps: engine configs x load levels x repeats, and synchronized node runs.

`run_plan` is the one seam between the Django world and the runner: it takes a plan and yields
each measured point as soon as it finishes. The engine is restarted for every engine config
(settings such as max_num_seqs only apply at start-up); load levels and repeats of one config
share that engine, run in ascending load order.

With `plan.replicas > 1` every point is a node run: N independent engines (one per GPU, or per
tensor-parallel group), each with its own client processes, all released at one common instant.
Node throughput is all completed output tokens over ONE common window, from the first request
sent to the last completion, never the sum of per-replica rates.

With `plan.search` set the sweep is adaptive (runner.search): the search names each engine
config to start and each point to measure, and the grid's other points are never measured.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from runner import __version__, convergence
from runner.client.schedule import LoadOutcome, Target
from runner.client.workers import check_client_cpus, run_load
from runner.engine.command import EngineError
from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.engine.process import RunningEngine, engines, measure_rtt
from runner.engine.provenance import collect_hardware, package_versions, utc_now
from runner.measure import host_cpu
from runner.measure.metrics import aggregate, window_of
from runner.measure.quality import QualitySet, load_quality, score_quality
from runner.measure.sampler import QueueSampler, summarize
from runner.measure.telemetry import open_telemetry
from runner.measure.telemetry_summary import record_telemetry
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan
from runner.schema.records import EngineSample
from runner.schema.result import (
    DISTURBED_CORES,
    Hardware,
    PointResult,
    Provenance,
    ReplicaResult,
    SetAside,
    point_key,
)
from runner.schema.samples import QueueSummary
from runner.schema.search_record import SearchRecord, SearchStep
from runner.search.observation import Observation, observe
from runner.search.state import Request, Search, ladder
from runner.workloads import conversations
from runner.workloads.prompts import Prompt, build_prompts, token_counter_for
from runner.workloads.trace_prompts import annotate_point
from runner.workloads.traces import SourceFile, check_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Progress:
    """What the runner is doing now; the dashboard copies it onto the benchmark row."""

    points_done: int
    points_total: int
    requests_done: int
    requests_total: int
    note: str


@dataclass(frozen=True)
class PlannedPoint:
    config: EngineConfig
    load: LoadSpec
    repeat: int
    # The config's first load level again after its last (StabilitySpec.control_point).
    control: bool = False
    # The first config's first load level again after the last config, on a fresh engine
    # start (StabilitySpec.end_control).
    end_control: bool = False
    # Why a point beyond the plan's own is measured (a convergence round), for its notes.
    note: str = ""

    @property
    def key(self) -> str:
        return point_key(self.config, self.load, self.repeat)


class Cancelled(Exception):
    """The caller asked to stop; the engine was stopped and finished points were kept."""


class SweepIncomplete(Exception):
    """Some engine configs could not be measured; the others' points were still yielded."""

    def __init__(self, failures: list[str]):
        self.failures = failures
        super().__init__("; ".join(failures))


class EndControlMissed(Exception):
    """Every planned point was measured but the end control, whose extra engine start failed:
    the run's figures stand, only its drift over the whole sweep is unmeasured."""


def plan_points(plan: SweepPlan) -> list[PlannedPoint]:
    """Every point of the plan in run order. Per config, repeats are interleaved (every load
    level ascending, then every level again), so a slow spell of the host touches all levels
    alike instead of one level's repeats; then, with two or more levels, the control point: the
    first level once more, as the repeat after the last, to show the drift. Last, where the
    plan has one (SweepPlan.has_end_control), the end control."""
    loads = ladder(plan.loads)
    points = []
    for config in plan.engine_configs:
        points += [PlannedPoint(config, load, repeat)
                   for repeat in range(plan.repeats) for load in loads]
        if plan.stability.control_point and len(loads) > 1:
            points.append(PlannedPoint(config, loads[0], plan.repeats, control=True))
    if plan.has_end_control:
        # Numbered after the control point's repeat, whatever converges: a resumed run finds
        # it by its key, and convergence rounds number their draws around it.
        points.append(PlannedPoint(plan.engine_configs[0], loads[0], plan.repeats + 1,
                                   end_control=True))
    return points


def run_plan(
    plan: SweepPlan,
    workdir: Path,
    *,
    skip_keys: frozenset[str] = frozenset(),
    cancel: threading.Event | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_engine_started: Callable[[float], None] | None = None,
    data_dir: Path | None = None,
    credentials: Credentials = NO_CREDENTIALS,
    on_search: Callable[[SearchRecord], None] | None = None,
    known: Mapping[str, Observation] | None = None,
    start_prior_s: float | None = None,
) -> Iterator[PointResult]:
    """Run every point of the plan not in skip_keys, yielding each one as soon as it finishes.

    An engine config whose engine fails to start, or dies mid-point, is recorded and the sweep
    moves on to the next config. Raised at the end, after every other point was yielded:
    SweepIncomplete naming those configs, or EndControlMissed when only the end control's extra
    engine start failed. Cancelled when cancel is set (engines stopped first). ValueError before
    any engine starts: the client CPUs are not on this host, the dataset, trace or length log is
    not a regular file inside data_dir, the trace or conversations cannot serve the loads
    (runner.workloads.traces check_source, runner.workloads.conversations check_conversations),
    or the quality set cannot be read (runner.measure.quality.load_quality: file:line).

    workdir: engine logs go under workdir/logs. data_dir: the node's data directory for a plan
    from the dashboard; None for the operator's own plan, whose files are paths. credentials: an
    attached server's API key and headers, sent with every call to it and never recorded (the
    plan is stored and downloadable). on_engine_started: called in the caller's thread once per
    engine config started, with the seconds its replicas took (never for an attached server).

    A plan with a search (runner.search) measures only the points the search asks for, each with
    its SearchStep. on_search gets the search's record after every point and engine config, and
    once more at the end; known: a resumed search's stored points by key, read instead of
    measured (skip_keys is for a grid); start_prior_s: what an engine start of the checkpoint
    took on this node lately, which prices the search's first start (None: unknown).
    """
    check_client_cpus(plan.client)
    inputs = _Inputs(
        source=check_source(plan.workload, data_dir, plan.loads, plan.warmup_requests),
        talks=conversations.check_conversations(
            plan.workload, data_dir, plan.loads, plan.warmup_requests
        ),
        quality=load_quality(plan.quality, data_dir),
        hardware=_hardware(plan),
        packages=package_versions(),
        data_dir=data_dir,
        credentials=credentials,
    )
    cancel = cancel or threading.Event()
    report = on_progress or (lambda progress: None)
    on_started = on_engine_started or (lambda seconds: None)
    if plan.search is not None:
        search = Search(plan, start_prior_s=start_prior_s)
        yield from _run_search(search, plan, workdir, inputs, known or {}, cancel, report,
                               on_started, on_search or (lambda record: None))
        return
    todo = [p for p in plan_points(plan) if p.key not in skip_keys]
    total = len(todo)
    done = 0
    failures: list[str] = []
    measured_keys: set[str] = set()
    configs = [p for p in todo if not p.end_control]

    for config in _unique_configs(configs):
        group = [p for p in configs if p.config is config]
        if cancel.is_set():
            raise Cancelled()
        report(Progress(done, total, 0, 0, f"starting engine {config.label()}"))
        measured = 0
        try:
            with _started(plan, config, workdir, inputs, cancel, on_started) as (running, prompts):
                # The control point closes the config, after any convergence rounds.
                ordered = ([p for p in group if not p.control]
                           + [None] + [p for p in group if p.control])
                drawn: list[PointResult] = []
                for planned in ordered:
                    batch = (_converging(plan, config, drawn, skip_keys)
                             if planned is None else [planned])
                    for planned_point in batch:
                        if cancel.is_set():
                            raise Cancelled()
                        total = max(total, done + 1)
                        context = _PointContext(plan, planned_point, done, total, report)
                        point = _finished_point(context, running, prompts, inputs, cancel)
                        if planned_point.note:
                            point.notes.append(planned_point.note)
                        drawn.append(point)
                        measured_keys.add(point.key)
                        done += 1
                        measured += int(planned is not None)
                        yield point
                        _check_alive(running)
                        report(Progress(done, total, 0, 0, f"finished {planned_point.key}"))
        except EngineError as exc:
            log.warning("engine config %s failed: %s", config.label(), exc)
            failures.append(f"{config.label()}: {exc}")
            done += len(group) - measured  # the config's remaining points cannot be measured
    missed: str | None = None
    for planned in [p for p in todo if p.end_control]:
        if PlannedPoint(planned.config, planned.load, 0).key not in measured_keys | skip_keys:
            continue  # the first config's first draw failed: nothing to compare it with
        context = _PointContext(plan, planned, done, total, report)
        _, missed = yield from _end_control(context, workdir, inputs, cancel, on_started,
                                            GRID_END_CONTROL)
    if failures:
        raise SweepIncomplete(failures + ([missed] if missed else []))
    if missed:
        raise EndControlMissed(missed)


@dataclass(frozen=True)
class _EndControlWords:
    what: str  # the point measured again
    after: str  # after what


GRID_END_CONTROL = _EndControlWords("the first config's first load level", "the last config")
SEARCH_END_CONTROL = _EndControlWords("the search's answer point", "the search")


def _end_control(
    context: _PointContext,
    workdir: Path,
    inputs: _Inputs,
    cancel: threading.Event,
    on_started: Callable[[float], None],
    words: _EndControlWords,
    step: SearchStep | None = None,
) -> Generator[PointResult, None, tuple[PointResult | None, str | None]]:
    """The end control, measured on a fresh start of its config's engine; returns the point, or
    why it was not measured when that start failed."""
    plan, planned = context.plan, context.planned
    if cancel.is_set():
        raise Cancelled()
    label = planned.config.label()
    context.report(Progress(context.done, context.total, 0, 0,
                            f"starting engine {label} again for the end control"))
    try:
        with _started(plan, planned.config, workdir, inputs, cancel, on_started) as (
                running, prompts):
            # Timed from here: the engine's start is not the point's.
            timed = _PointContext(plan, planned, context.done, context.total, context.report)
            point = _finished_point(timed, running, prompts, inputs, cancel)
    except EngineError as exc:
        log.warning("the end control's engine %s failed: %s", label, exc)
        return None, f"end control ({label} started again after {words.after}): {exc}"
    point.notes.append(f"end control: {words.what} measured again on a fresh engine start "
                       f"after {words.after}")
    point.search = step
    yield point
    context.report(Progress(context.done + 1, context.total, 0, 0, f"finished {planned.key}"))
    return point, None


def _converging(
    plan: SweepPlan,
    config: EngineConfig,
    drawn: list[PointResult],
    skip_keys: frozenset[str],
) -> Iterator[PlannedPoint]:
    """The config's convergence rounds (runner.convergence): each round's deciding levels once
    more, as repeats after the plan's (and its control point's) numbers, with why."""
    spec = plan.stability
    if spec.converge_pct is None:
        return
    loads = ladder(plan.loads)
    by_level: list[list[PointResult]] = [
        [p for p in drawn if p.load == load and not p.control] for load in loads]
    # The plan's own keys too: the end control's repeat is kept for it.
    taken = {p.key for p in drawn} | skip_keys | {p.key for p in plan_points(plan)}
    while (round_ := convergence.next_round(by_level, spec.converge_pct,
                                            spec.max_repeats)) is not None:
        for index in round_.levels:
            repeat = plan.repeats + 1
            while point_key(config, loads[index], repeat) in taken:
                repeat += 1
            planned = PlannedPoint(config, loads[index], repeat,
                                   note=f"repeated to converge: {round_.reason}")
            taken.add(planned.key)
            yield planned
            # The caller measured it and appended the kept draw before asking for the next.
            by_level[index].append(drawn[-1])


@dataclass
class _Inputs:
    """What a plan reads before any engine starts, and what every point of it records."""

    source: SourceFile | None
    talks: conversations.ConversationFile | None
    quality: QualitySet | None
    hardware: Hardware
    packages: dict[str, str]
    data_dir: Path | None
    credentials: Credentials
    prompts: list[Prompt] | None = None  # built once, on the first engine started


@contextmanager
def _started(
    plan: SweepPlan,
    config: EngineConfig,
    workdir: Path,
    inputs: _Inputs,
    cancel: threading.Event,
    on_started: Callable[[float], None],
) -> Iterator[tuple[list[RunningEngine], list[Prompt]]]:
    """One config's engines, started and warmed up, with the plan's prompts."""
    log_dir = workdir / "logs" / _slug(config.label())
    with engines(
        plan.launch, plan.checkpoint, config, replicas=plan.replicas, log_dir=log_dir,
        credentials=inputs.credentials,
    ) as running:
        start_s = started_s(running)
        if start_s is not None:
            on_started(start_s)
        if inputs.prompts is None:
            inputs.prompts = _build_prompts(plan, running[0], inputs.data_dir)
        _warm_up(plan, running, inputs.prompts, cancel)
        yield running, inputs.prompts


def _finished_point(
    context: _PointContext,
    running: list[RunningEngine],
    prompts: list[Prompt],
    inputs: _Inputs,
    cancel: threading.Event,
) -> PointResult:
    """One point measured, with its trace, conversation and quality figures and provenance."""
    plan, planned = context.plan, context.planned
    point = _undisturbed_draw(context, running, prompts, cancel)
    annotate_point(point, inputs.source)
    conversations.annotate_point(point, inputs.talks)
    if inputs.quality is not None:  # after the window: the eval never shares it
        context.report(Progress(context.done, context.total, 0, 0,
                                f"quality set on {planned.key}"))
        point.quality = score_quality(
            inputs.quality, running[0].base_url, running[0].served_model,
            plan.workload, timeout_s=plan.client.request_timeout_s,
            credentials=running[0].credentials, cancel=cancel,
        )
    point.provenance = Provenance(
        hardware=inputs.hardware,
        engine=running[0].info,
        checkpoint=plan.checkpoint,
        packages=inputs.packages,
        client_version=f"headroom-runner {__version__}",
        started_at=context.started_at,
        finished_at=utc_now(),
    )
    return point


def _undisturbed_draw(
    context: _PointContext,
    running: list[RunningEngine],
    prompts: list[Prompt],
    cancel: threading.Event,
) -> PointResult:
    """The point, measured again while other processes disturbed it, up to the plan's
    redraw_disturbed extra draws. The first undisturbed draw is kept; when every draw was
    disturbed, the least disturbed one. The others are recorded as set aside, and a note says
    which draw was kept and why."""
    draws = [_measure_point(context, running, prompts, cancel)]
    while (_disturbed(draws[-1])
           and len(draws) <= context.plan.stability.redraw_disturbed):
        _check_alive(running)
        draws.append(_measure_point(context, running, prompts, cancel))
    if len(draws) == 1:
        if _disturbed(draws[0]):
            draws[0].notes.append(
                f"disturbed: other processes took {_taken_cores(draws[0]):.2f} cores during "
                f"this point, more than {DISTURBED_CORES:g}; not measured again "
                "(redraw_disturbed 0)")
        return draws[0]
    calm = [draw for draw in draws if not _disturbed(draw)]
    kept = calm[0] if calm else min(draws, key=_taken_cores)
    assert kept.host is not None  # only a measured host makes a draw disturbed
    kept.host.set_aside = [
        SetAside(taken_cores=_taken_cores(draw), output_throughput=draw.metrics.output_throughput)
        for draw in draws if draw is not kept
    ]
    position = draws.index(kept) + 1
    why = ("the first one other processes left alone" if calm else
           "every draw was disturbed; the one they took least from")
    kept.notes.append(
        f"measured {len(draws)} times because other processes took more than "
        f"{DISTURBED_CORES:g} of a core: kept draw {position} ({why}, "
        f"{_taken_cores(kept):.2f} cores taken)"
    )
    return kept


def _disturbed(point: PointResult) -> bool:
    return point.host is not None and point.host.disturbed


def _taken_cores(point: PointResult) -> float:
    taken = point.host.taken_cores if point.host is not None else None
    return 0.0 if taken is None else taken


def _check_alive(running: list[RunningEngine]) -> None:
    dead = [e.replica for e in running if not e.alive()]
    if dead:
        raise EngineError(f"engine replica(s) {dead} exited during the point")


def _run_search(
    search: Search,
    plan: SweepPlan,
    workdir: Path,
    inputs: _Inputs,
    known: Mapping[str, Observation],
    cancel: threading.Event,
    report: Callable[[Progress], None],
    on_started: Callable[[float], None],
    on_search: Callable[[SearchRecord], None],
) -> Iterator[PointResult]:
    """An adaptive sweep (runner.search): the search names each config to start and each
    point to measure. A point in `known` (a resumed run's stored points) is read, not
    measured again; a config whose points are all known is not started."""
    budget = plan.search.point_budget if plan.search else None
    total = min(len(plan_points(plan)), budget or len(plan_points(plan)))
    failures: list[str] = []
    while (step := search.next_config()) is not None:
        config = plan.engine_configs[step[0]]
        request = _next_unknown(search, config, known)
        if request is None:
            continue
        if cancel.is_set():
            raise Cancelled()
        report(Progress(search.points_measured(), total, 0, 0,
                        f"starting engine {config.label()} ({step[1]})"))
        try:
            with _started(plan, config, workdir, inputs, cancel, on_started) as (running, prompts):
                search.config_started(started_s(running))
                while request is not None:
                    if cancel.is_set():
                        raise Cancelled()
                    planned = PlannedPoint(config, search.loads[request.level], request.repeat)
                    context = _PointContext(plan, planned, request.order - 1, total, report)
                    point = _finished_point(context, running, prompts, inputs, cancel)
                    point.search = SearchStep(order=request.order, phase=request.phase,
                                              reason=request.reason)
                    search.observe(request, observe(point))
                    yield point
                    _check_alive(running)
                    on_search(search.record())
                    request = _next_unknown(search, config, known)
        except EngineError as exc:
            log.warning("engine config %s failed: %s", config.label(), exc)
            failures.append(f"{config.label()}: {exc}")
            search.config_failed(str(exc))
        on_search(search.record())
    search.finish()
    missed = None
    if plan.has_end_control:
        missed = yield from _search_end_control(search, plan, workdir, inputs, known, cancel,
                                                report, on_started)
    on_search(search.record())
    if failures:
        raise SweepIncomplete(failures + ([missed] if missed else []))
    if missed:
        raise EndControlMissed(missed)


def _search_end_control(
    search: Search,
    plan: SweepPlan,
    workdir: Path,
    inputs: _Inputs,
    known: Mapping[str, Observation],
    cancel: threading.Event,
    report: Callable[[Progress], None],
    on_started: Callable[[float], None],
) -> Generator[PointResult, None, str | None]:
    """The search's answer point once more on a fresh engine start (Search.end_control);
    returns why it was not measured, or None. A resumed run that holds it measures nothing."""
    request = search.end_control()
    if request is None:
        return None
    config = plan.engine_configs[request.config]
    planned = PlannedPoint(config, search.loads[request.level], request.repeat, end_control=True)
    if planned.key in known:
        return None
    starts: list[float] = []

    def started(seconds: float) -> None:
        starts.append(seconds)
        on_started(seconds)

    context = _PointContext(plan, planned, request.order - 1, request.order, report)
    point, missed = yield from _end_control(
        context, workdir, inputs, cancel, started, SEARCH_END_CONTROL,
        step=SearchStep(order=request.order, phase=request.phase, reason=request.reason))
    if point is not None:
        search.end_control_measured(starts[0] if starts else None, observe(point).wall_s)
    return missed


def _next_unknown(
    search: Search, config: EngineConfig, known: Mapping[str, Observation]
) -> Request | None:
    """The search's next point for the running config, after feeding it the known ones."""
    while (request := search.next_point()) is not None:
        key = point_key(config, search.loads[request.level], request.repeat)
        if key not in known:
            return request
        search.observe(request, known[key])
    return None


def started_s(running: list[RunningEngine]) -> float | None:
    """How long a config's engines took to start: replicas start together, so the slowest
    one's time. None when they were not started here (an attached server)."""
    times = [engine.start_s for engine in running if engine.start_s is not None]
    return max(times) if running and len(times) == len(running) else None


@dataclass
class _PointContext:
    plan: SweepPlan
    planned: PlannedPoint
    done: int
    total: int
    report: Callable[[Progress], None]
    started_at: str = ""

    def __post_init__(self) -> None:
        self.started_at = utc_now()


def _measure_point(
    context: _PointContext,
    running: list[RunningEngine],
    prompts: list[Prompt],
    cancel: threading.Event,
) -> PointResult:
    plan, planned = context.plan, context.planned
    targets = [Target(e.replica, e.base_url, e.served_model, e.credentials) for e in running]
    # Replicas of a node run share one host: the first one's round trip stands for all.
    network_rtt = measure_rtt(running[0])
    requests_total = planned.load.num_requests * len(targets)

    def on_request_done(requests_done: int, _total: int) -> None:
        context.report(
            Progress(context.done, context.total, requests_done, requests_total, planned.key)
        )

    # The sampler stamps absolute monotonic times; they are rebased on the client's t0 below.
    sampler = QueueSampler(
        [(e.replica, e.base_url) for e in running], plan.sample_interval_s, 0.0,
        running[0].credentials,
    )
    telemetry = open_telemetry(plan.launch, planned.config, running, plan.sample_interval_s)
    groups = _engine_groups(plan, running)
    sampler.start()
    telemetry.start()
    cpu_before = host_cpu.snapshot(groups)
    try:
        outcome = run_load(
            targets,
            plan.workload,
            planned.load,
            plan.client,
            prompts[: planned.load.num_requests],
            cancel=cancel,
            on_request_done=on_request_done,
            isolate=True,  # the sampler thread (and a dashboard's) must not share the client's GIL
        )
    finally:
        cpu_after = host_cpu.snapshot(groups)
        raw_samples = sampler.stop()
        raw_telemetry = telemetry.stop()
    if cancel.is_set():
        raise Cancelled()
    samples = [s.model_copy(update={"t": s.t - outcome.t0}) for s in raw_samples]
    outcome.health = outcome.health.model_copy(update={"network_rtt": network_rtt})
    point = _point_from_outcome(plan, planned, running, outcome, samples)
    point.host = host_cpu.host_cpu(cpu_before, cpu_after)
    point.control = planned.control
    point.end_control = planned.end_control
    record_telemetry(point, telemetry, raw_telemetry, outcome.t0)
    for note in (sampler.unavailable_note(), sampler.skipped_note()):
        if note:
            point.notes.append(note)
    return point


def _engine_groups(plan: SweepPlan, running: list[RunningEngine]) -> list[int] | None:
    """The engines' process groups, whose CPU time is theirs; None where the engine's processes
    are not in them (an attached server, a container), so the host's other work cannot be told
    from the engine's."""
    groups = [engine.process_group for engine in running]
    if plan.launch.style in ("attach", "docker") or None in groups:
        return None
    return [group for group in groups if group is not None]


def _point_from_outcome(
    plan: SweepPlan,
    planned: PlannedPoint,
    running: list[RunningEngine],
    outcome: LoadOutcome,
    samples: list[EngineSample],
) -> PointResult:
    records = sorted(outcome.records, key=lambda r: (r.replica, r.index))
    window = window_of(records)
    per_replica = []
    for engine in running:
        mine = [r for r in records if r.replica == engine.replica]
        replica_window = window_of(mine)
        per_replica.append(
            ReplicaResult(
                replica=engine.replica,
                base_url=engine.base_url,
                window=replica_window,
                metrics=aggregate(mine, plan.workload, plan.goodput) if mine else None,
                queue=_queue(samples, engine.replica, replica_window),
            )
        )
    notes = []
    if len(running) > 1:
        notes.append(
            f"node run: {len(running)} replicas released together; throughput is all output "
            "tokens over one common window"
        )
    return PointResult(
        key=planned.key,
        plan_name=plan.name,
        engine_config=planned.config,
        load=planned.load,
        workload=plan.workload,
        repeat=planned.repeat,
        replicas=len(running),
        t0_monotonic=outcome.t0,
        window=window,
        metrics=aggregate(records, plan.workload, plan.goodput),
        queue=_node_queue([r.queue for r in per_replica]),
        client=outcome.health,
        per_replica=per_replica,
        samples=samples,
        requests=records,
        notes=notes,
    )


def _queue(samples: list[EngineSample], replica: int, window) -> QueueSummary:
    mine = [s for s in samples if s.replica == replica]
    if window is None:
        return QueueSummary(samples=len(mine))
    return summarize(mine, window.start, window.end)


# How a node combines its replicas' values, by the rule each QueueSummary field declares.
_NODE_COMBINE: dict[str, Callable[[list[Any]], Any]] = {
    "sum": sum,
    "max": max,
    "mean": lambda values: sum(values) / len(values),
    "histogram": lambda histograms: {
        key: sum(h.get(key, 0.0) for h in histograms) for key in sorted(set().union(*histograms))
    },
}


def _node_queue(summaries: list[QueueSummary]) -> QueueSummary:
    """A node's queue from its replicas' summaries, field by field as QueueSummary declares.

    A replica that did not record a field is left out of that field's sum, peak or mean; a field
    no replica recorded stays None.
    """
    if len(summaries) == 1:
        return summaries[0]
    combined: dict[str, Any] = {}
    for name in QueueSummary.model_fields:
        combine = _NODE_COMBINE[QueueSummary.node_rule(name)]
        values = [getattr(s, name) for s in summaries if getattr(s, name) is not None]
        if values:
            combined[name] = combine(values)
    return QueueSummary.model_validate(combined)


def _build_prompts(plan: SweepPlan, engine: RunningEngine, data_dir: Path | None) -> list[Prompt]:
    """Prompts for the largest load, calibrated once with the served model's own tokenizer."""
    largest = max(load.num_requests for load in plan.loads)
    count = max(largest, plan.warmup_requests)
    counter = token_counter_for(
        engine.base_url, engine.served_model, plan.workload, engine.credentials
    )
    return build_prompts(plan.workload, count, counter, data_dir=data_dir)


def _warm_up(
    plan: SweepPlan, running: list[RunningEngine], prompts: list[Prompt], cancel: threading.Event
) -> None:
    """Requests that warm the engine; their results are discarded and never stored."""
    if not plan.warmup_requests:
        return
    targets = [Target(e.replica, e.base_url, e.served_model, e.credentials) for e in running]
    load = LoadSpec(shape="burst", num_requests=plan.warmup_requests)
    run_load(targets, plan.workload, load, plan.client, prompts[: load.num_requests], cancel=cancel)


def _hardware(plan: SweepPlan) -> Hardware:
    """The hardware that served the points. An attached server runs on a host we cannot
    inspect: its GPU is not recorded (never this client's GPU, which did not serve)."""
    if plan.launch.style == "attach":
        return Hardware(host=urlsplit(str(plan.launch.base_url)).hostname or "attached server")
    return collect_hardware()


def _unique_configs(points: list[PlannedPoint]) -> list[EngineConfig]:
    configs: list[EngineConfig] = []
    for point in points:
        if not any(point.config is seen for seen in configs):
            configs.append(point.config)
    return configs


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9=.-]+", "_", text)[:80] or "defaults"
