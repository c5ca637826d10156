"""What a launch will cost before it starts: the plan's size, and its wall time and GPU-hours.

The estimate comes from what this node measured with the same checkpoint, because nothing
else knows how long an engine takes to start there or how fast that model decodes on that
hardware:

- per engine start: the median of the last starts measured on this node for this checkpoint
  (EngineStart: launch to /health answering), kept by every run that started an engine, failed
  and cancelled ones too. With none, each earlier run's wall time less the measured durations
  of its points, over its engine starts (start-up, warm-up and the gaps between points all land
  there). The measured start comes first because it is the start itself and current, though it
  leaves out the warm-up and gaps the runs' figure holds. On a GPU node another checkpoint's
  starts are not used: a start is mostly loading and compiling that model, seconds for a small
  one and many minutes for a large one. A CPU node serves only small models, whose start is
  mostly vLLM's own: there the node's starts of other checkpoints come next, and before any
  start at all the CPU engine's start as measured here, not the far slower GPU default;
- per point: the planned output tokens over the output tokens/s, per replica, that the earlier
  runs of the checkpoint (started the same way: engines of their own, or the same endpoint)
  measured at the nearest load level (the same engine config when they ran it, the same load
  shape when they had it), never faster than an open loop's arrival schedule allows.

With none of these, a stated conservative default stands in, and the basis sentence says so.
The end control (StabilitySpec.end_control) is one engine start and one point more, counted as
such; the basis sentence says so, or, for a plan that could take one, that it has none.
GPU-hours are wall hours times the GPUs the run holds: its replicas times the widest config's
tensor-parallel size. A CPU node holds none, nor does a run attached to an endpoint (the
server's GPUs are not this run's): the estimate says so instead of a number.

The core takes plain numbers (PastRun, PastPoint, measured starts in seconds) so it is tested
on hand-computed cases; the query layer at the bottom reads them from the rows.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from benchmarks.models import Benchmark, Checkpoint, Endpoint, EngineStart, Node, Point
from runner.schema.plan import LoadSpec, SweepPlan
from runner.sweep import plan_points

# With no earlier run: an engine start as slow as a large checkpoint loading from a cold disk,
# and a decode rate far below any GPU's, so a default never promises a short run.
DEFAULT_ENGINE_START_S = 600.0
# A CPU engine before this node measured any start: the slow side of the tiny model's CPU engine
# start, warm or cold compile cache (docs/vllm.md, "vLLM on a CPU").
DEFAULT_CPU_ENGINE_START_S = 90.0
DEFAULT_OUTPUT_TOKENS_PER_S_PER_GPU = 50.0
# The most recent earlier runs read: enough to average noise, few enough to follow changes.
HISTORY_RUNS = 10
BASIS_MAX_CHARS = 500  # Benchmark.estimate_basis
SECONDS_PER_HOUR = 3600.0


# ---------------------------------------------------------------------------------------------
# The plan's size
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PointToRun:
    """One planned point, as the estimate needs it."""

    engine_label: str
    shape: str
    offered_concurrency: float
    requests_per_replica: int
    output_tokens_per_request: int
    # An open loop sends its last request num_requests / rate after the first: no point of it
    # ends sooner, however fast the engine.
    schedule_s: float


@dataclass(frozen=True)
class PlanSize:
    engine_starts: int
    points: int
    requests: int
    output_tokens: int
    gpus_held: int  # 0: a CPU node, or an endpoint's server
    engine_labels: tuple[str, ...]


def _schedule_s(load: LoadSpec) -> float:
    return load.num_requests / load.rate if load.shape == "rate" and load.rate else 0.0


def points_to_run(plan: SweepPlan) -> list[PointToRun]:
    """Every point of the plan in run order (runner.sweep.plan_points)."""
    output_tokens = plan.workload.output_tokens
    return [
        PointToRun(
            engine_label=planned.config.label(),
            shape=planned.load.shape,
            offered_concurrency=planned.load.offered_concurrency(),
            requests_per_replica=planned.load.num_requests,
            output_tokens_per_request=output_tokens,
            schedule_s=_schedule_s(planned.load),
        )
        for planned in plan_points(plan)
    ]


def convergence_points_at_most(plan: SweepPlan) -> int:
    """The most draws convergence can add: three deciding levels per config (the knee's
    operating level and its neighbours), each up to max_repeats draws."""
    deciding = min(3, len(plan.loads))
    extra_per_level = max(0, plan.stability.max_repeats - plan.repeats)
    return len(plan.engine_configs) * deciding * extra_per_level


def starts_engines(plan: SweepPlan) -> bool:
    """An attached plan measures a server that is already running: it starts no engine."""
    return plan.launch.style != "attach"


def gpus_held(plan: SweepPlan) -> int:
    """The GPUs the run keeps for its whole length: every replica of the widest config."""
    if plan.launch.style in ("cpu", "attach"):
        return 0
    return plan.replicas * max(config.tensor_parallel_size for config in plan.engine_configs)


def engine_starts(plan: SweepPlan) -> int:
    """One start per engine config, and one more for the end control (its first config again, or
    a search's answer config)."""
    if not starts_engines(plan):
        return 0
    return len(plan.engine_configs) + int(plan.has_end_control)


def end_control_note(plan: SweepPlan) -> str:
    """What the end control adds to the estimate, or why a plan that could have one has none;
    "" where it cannot (a grid of one config, an endpoint)."""
    if plan.has_end_control and plan.search is not None:
        return ("The end control adds one engine start (the answer point's config again after "
                "the search) and one point.")
    if plan.has_end_control:
        return (f"The end control adds one engine start ({plan.engine_configs[0].label()} "
                "again after the last config) and one point.")
    could = plan.model_copy(update={"stability": plan.stability.model_copy(
        update={"end_control": True})})
    if not could.has_end_control:
        return ""
    return ("No end control (one engine start more; on by default only for a CPU engine, "
            "off where a start loads a GPU-sized checkpoint).")


def plan_size(plan: SweepPlan) -> PlanSize:
    points = points_to_run(plan)
    requests = sum(point.requests_per_replica for point in points) * plan.replicas
    return PlanSize(
        engine_starts=engine_starts(plan),
        points=len(points),
        requests=requests,
        output_tokens=requests * plan.workload.output_tokens,
        gpus_held=gpus_held(plan),
        engine_labels=tuple(config.label() for config in plan.engine_configs),
    )


def no_gpus_note(plan: SweepPlan) -> str:
    """Why a plan has no GPU-hours, or "" when it has them."""
    if plan.launch.style == "attach":
        return "not counted: the endpoint's GPUs belong to its server, not to this run"
    if plan.launch.style == "cpu":
        return "none: a CPU node holds no GPUs"
    return ""


# ---------------------------------------------------------------------------------------------
# Earlier runs, as plain numbers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PastPoint:
    engine_label: str
    shape: str
    offered_concurrency: float
    duration_s: float
    output_tokens_per_s: float  # the whole point: every replica over one window
    replicas: int

    @property
    def per_replica_tokens_per_s(self) -> float:
        return self.output_tokens_per_s / self.replicas


@dataclass(frozen=True)
class PastRun:
    wall_s: float
    engine_starts: int
    points: tuple[PastPoint, ...]


def engine_start_s(runs: Sequence[PastRun]) -> float | None:
    """Seconds per engine start: all the runs' time outside their points over all their starts.
    None when the runs started no engine."""
    starts = sum(run.engine_starts for run in runs)
    if starts == 0:
        return None
    outside = sum(max(0.0, run.wall_s - sum(p.duration_s for p in run.points)) for run in runs)
    return outside / starts


@dataclass(frozen=True)
class PerStart:
    """The seconds the estimate counts per engine start, and the basis sentence's words for it."""

    seconds: float
    basis: str


def per_start(measured: Sequence[float], runs: Sequence[PastRun], *, cpu: bool = False,
              node_starts: Sequence[float] = ()) -> PerStart:
    """The measured starts' median; else the earlier runs' time outside points per start; on
    a CPU node (cpu), else the median of its starts of other checkpoints (node_starts), else
    the CPU engine's start; else the default."""
    if measured:
        median = statistics.median(measured)
        return PerStart(median, f"measured engine starts on this node: {len(measured)}, "
                                f"median {duration_label(median)}")
    derived = engine_start_s(runs)
    if derived is not None:
        return PerStart(derived, f"{duration_label(derived)} per engine start (wall time less "
                                 "the points)")
    if cpu and node_starts:
        median = statistics.median(node_starts)
        return PerStart(median, "measured CPU engine starts on this node, of other checkpoints: "
                                f"{len(node_starts)}, median {duration_label(median)}")
    if cpu:
        return PerStart(DEFAULT_CPU_ENGINE_START_S,
                        "no engine start measured on this CPU node: a CPU engine's start as "
                        f"measured on two cores, {DEFAULT_CPU_ENGINE_START_S:.0f} s")
    return PerStart(DEFAULT_ENGINE_START_S, "no engine start measured on this node: default "
                                            f"{duration_label(DEFAULT_ENGINE_START_S)}")


def _load_distance(a: float, b: float) -> float:
    """Load levels grow by factors (8, 32, 128): nearness is a ratio, not a difference."""
    return abs(math.log(max(a, 1e-9) / max(b, 1e-9)))


def nearest_tokens_per_s(point: PointToRun, past: Sequence[PastPoint]) -> float | None:
    """Output tokens/s per replica measured nearest to this point's load: among the points of
    its engine config when any ran it, then of its load shape when any had it; the mean of the
    points at the nearest level (repeats, several runs), the lower level on a tie (the slower
    guess). None when no earlier point measured any output."""
    measured = [p for p in past if p.output_tokens_per_s > 0 and p.replicas > 0]
    same_config = [p for p in measured if p.engine_label == point.engine_label] or measured
    candidates = [p for p in same_config if p.shape == point.shape] or same_config
    if not candidates:
        return None
    nearest = min(
        candidates,
        key=lambda p: (_load_distance(p.offered_concurrency, point.offered_concurrency),
                       p.offered_concurrency),
    ).offered_concurrency
    rates = [p.per_replica_tokens_per_s for p in candidates if p.offered_concurrency == nearest]
    return sum(rates) / len(rates)


def point_duration_s(point: PointToRun, tokens_per_s_per_replica: float) -> float:
    """Each replica decodes its own requests' tokens at the rate; all replicas run together."""
    decode_s = point.requests_per_replica * point.output_tokens_per_request
    return max(decode_s / tokens_per_s_per_replica, point.schedule_s)


# ---------------------------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    wall_s: float
    gpu_hours: float | None  # None: no GPUs held (no_gpus_note says why)
    no_gpus_note: str
    basis: str


def default_tokens_per_s_per_replica(plan: SweepPlan) -> float:
    """DEFAULT_OUTPUT_TOKENS_PER_S_PER_GPU times the GPUs of one replica (a CPU one counts 1)."""
    widest = max(config.tensor_parallel_size for config in plan.engine_configs)
    gpus = 1 if plan.launch.style in ("cpu", "attach") else widest
    return DEFAULT_OUTPUT_TOKENS_PER_S_PER_GPU * gpus


def estimate(
    plan: SweepPlan,
    runs: Sequence[PastRun],
    *,
    where: str,
    measured_starts: Sequence[float] = (),
    node_starts: Sequence[float] = (),
) -> Estimate:
    """The plan's wall time and GPU-hours from the measured engine starts (seconds; on a CPU
    node its starts of other checkpoints too) and the earlier runs (or the defaults); `where`
    names the checkpoint and node in the basis."""
    size = plan_size(plan)
    past = [p for run in runs for p in run.points]
    start = per_start(measured_starts, runs, cpu=plan.launch.style == "cpu",
                      node_starts=node_starts)
    fallback_rate = default_tokens_per_s_per_replica(plan)
    points_s = 0.0
    defaulted_points = 0
    for point in points_to_run(plan):
        rate = nearest_tokens_per_s(point, past)
        if rate is None:
            defaulted_points += 1
        points_s += point_duration_s(point, rate if rate is not None else fallback_rate)
    wall_s = size.engine_starts * start.seconds + points_s
    basis = _basis(runs, where=where, start=start.basis if size.engine_starts else None,
                   defaulted_points=defaulted_points, fallback_rate=fallback_rate)
    budget = plan.search.time_budget_s if plan.search is not None else None
    if budget is not None and budget < wall_s:
        # The search stops taking points once its budget is spent; the point running then
        # still finishes, so the budget is about, not exactly, what it costs.
        basis = (f"An adaptive sweep with a time budget: about its {duration_label(budget)}, "
                 f"less than the full grid's {duration_label(wall_s)}. {basis}"
                 )[:BASIS_MAX_CHARS]
        wall_s = budget
    elif plan.search is not None:
        # What it measures is decided as it goes: the grid is the most it can cost.
        basis = (f"An adaptive sweep: at most the full grid's cost, shown here. {basis}"
                 )[:BASIS_MAX_CHARS]
    elif plan.stability.converge_pct is not None:
        # Rounds stop once the interval is narrow enough: the planned points are the least.
        extra = convergence_points_at_most(plan)
        basis = (f"Converging to ±{plan.stability.converge_pct:g}%: the planned points shown, "
                 f"and up to {extra} more draws of deciding levels if the host is noisy. {basis}"
                 )[:BASIS_MAX_CHARS]
    if end_control_note(plan):
        basis = f"{basis} {end_control_note(plan)}"[:BASIS_MAX_CHARS]
    note = no_gpus_note(plan)
    gpu_hours = None if note else wall_s / SECONDS_PER_HOUR * size.gpus_held
    return Estimate(wall_s=wall_s, gpu_hours=gpu_hours, no_gpus_note=note, basis=basis)


def _basis(
    runs: Sequence[PastRun],
    *,
    where: str,
    start: str | None,
    defaulted_points: int,
    fallback_rate: float,
) -> str:
    """One sentence: where the time per engine start came from (None: the plan starts none),
    and which runs the rates came from, or which defaults stood in."""
    default_rate = f"{fallback_rate:g} output tokens/s per replica"
    parts = [start] if start else []
    if not runs:
        head = f"No earlier run of {where}"
        parts.append(f"a conservative default of {default_rate}")
    else:
        head = f"From {len(runs)} earlier run{'s' if len(runs) != 1 else ''} of {where}"
        parts.append("the output tokens/s they measured at the nearest load level")
        if defaulted_points:
            parts.append(f"{default_rate} (default) for {defaulted_points} point(s) they give "
                         "no rate for")
    return f"{head}: {'; '.join(parts)}."[:BASIS_MAX_CHARS]


# ---------------------------------------------------------------------------------------------
# As pages show them
# ---------------------------------------------------------------------------------------------


def duration_label(seconds: float) -> str:
    """45 s, 12 min, 2 h 05 min: as precise as an estimate deserves."""
    if seconds < 90:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def gpu_hours_label(gpu_hours: float) -> str:
    """0.23, 4.5, 120: two significant figures under ten, whole hours above a hundred."""
    if gpu_hours < 1:
        return f"{gpu_hours:.2f}"
    return f"{gpu_hours:.1f}" if gpu_hours < 100 else f"{gpu_hours:.0f}"


@dataclass(frozen=True)
class EstimateBesideActual:
    """The run page's line: the launch's estimate, and once the run ended what it took."""

    wall: str
    gpu_hours: str | None  # None: no_gpus_note says why
    no_gpus_note: str
    basis: str
    took: str | None  # None while the run has not both started and finished
    took_gpu_hours: str | None


def beside_actual(
    *,
    estimated_wall_s: float,
    estimated_gpu_hours: float | None,
    basis: str,
    started_at: datetime | None,
    finished_at: datetime | None,
    plan: SweepPlan | None,
) -> EstimateBesideActual:
    took_s = None
    if started_at is not None and finished_at is not None:
        took_s = max(0.0, (finished_at - started_at).total_seconds())
    note = no_gpus_note(plan) if plan is not None else ""
    took_gpu_hours = None
    if took_s is not None and plan is not None and not note:
        took_gpu_hours = gpu_hours_label(took_s / SECONDS_PER_HOUR * gpus_held(plan))
    return EstimateBesideActual(
        wall=duration_label(estimated_wall_s),
        gpu_hours=None if estimated_gpu_hours is None else gpu_hours_label(estimated_gpu_hours),
        no_gpus_note=note,
        basis=basis,
        took=None if took_s is None else duration_label(took_s),
        took_gpu_hours=took_gpu_hours,
    )


# ---------------------------------------------------------------------------------------------
# The query layer
# ---------------------------------------------------------------------------------------------


def past_runs(
    node: Node, checkpoint: Checkpoint, endpoint: Endpoint | None = None
) -> list[PastRun]:
    """The latest HISTORY_RUNS succeeded launches of this checkpoint on this node, started the
    same way (engines of their own, or this endpoint), with their points' figures."""
    walls = {
        pk: (finished - started).total_seconds()
        for pk, started, finished in Benchmark.objects.filter(
            node=node, checkpoint=checkpoint, endpoint=endpoint,
            source=Benchmark.Source.LAUNCHED, state=Benchmark.State.SUCCEEDED,
            started_at__isnull=False, finished_at__isnull=False,
        )
        .order_by("-finished_at")
        .values_list("pk", "started_at", "finished_at")[:HISTORY_RUNS]
        if started is not None and finished is not None  # as filtered; for the type checker
    }  # fmt: skip
    points: dict[int, list[PastPoint]] = defaultdict(list)
    ended: set[int] = set()  # runs with an end control: one start more than their configs
    rows = Point.objects.filter(benchmark_id__in=list(walls)).values_list(
        "benchmark_id", "engine_label", "load__shape", "offered_concurrency", "duration",
        "output_throughput", "replicas", "end_control",
    )  # fmt: skip
    for benchmark_id, label, shape, offered, duration, throughput, replicas, end in rows:
        points[benchmark_id].append(PastPoint(label, str(shape), offered, duration, throughput,
                                              replicas))
        if end:
            ended.add(benchmark_id)
    return [
        PastRun(
            wall_s=wall_s,
            # Attached runs start nothing; a launched one restarts its engine per config, and
            # once more for its end control.
            engine_starts=0 if endpoint else (len({p.engine_label for p in points[pk]})
                                              + int(pk in ended)),
            points=tuple(points[pk]),
        )
        for pk, wall_s in walls.items()
    ]


def measured_starts(node: Node, checkpoint: Checkpoint) -> list[float]:
    """Seconds of the last EngineStart.KEPT starts of this checkpoint on this node."""
    starts = EngineStart.objects.of(node, checkpoint).values_list("seconds", flat=True)
    return list(starts[: EngineStart.KEPT])


def other_checkpoint_starts(node: Node, checkpoint: Checkpoint) -> list[float]:
    """Seconds of the node's last EngineStart.KEPT starts of any other checkpoint."""
    starts = (EngineStart.objects.filter(node=node).exclude(checkpoint=checkpoint)
              .order_by("-started_at", "-pk").values_list("seconds", flat=True))
    return list(starts[: EngineStart.KEPT])


def start_prior_s(node: Node, checkpoint: Checkpoint) -> float | None:
    """An adaptive sweep's engine start before it measures one: the median of this node's last
    starts of this checkpoint (another node's disk or another model's size says nothing of it);
    None: none measured, and the search then guesses none."""
    starts = measured_starts(node, checkpoint)
    return statistics.median(starts) if starts else None


def estimate_launch(
    plan: SweepPlan, *, node: Node, checkpoint: Checkpoint, endpoint: Endpoint | None = None
) -> Estimate:
    where = f"{checkpoint} on {endpoint.name if endpoint else node.queue}"
    # An endpoint's server is already running: how engines start on this node is beside it.
    starts = [] if endpoint else measured_starts(node, checkpoint)
    # Read only where they count: a CPU node with none of this checkpoint's starts.
    others = (other_checkpoint_starts(node, checkpoint)
              if not starts and plan.launch.style == "cpu" else [])
    return estimate(plan, past_runs(node, checkpoint, endpoint), where=where,
                    measured_starts=starts, node_starts=others)
