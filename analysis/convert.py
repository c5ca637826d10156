"""From the runner's result schema to the analysis inputs.

The only module here that imports runner.schema (pydantic, no Django); the rest take the plain
dataclasses, so a view can build them from database rows just as well.
"""

from __future__ import annotations

from typing import Any

from analysis.checks import failed_checks
from analysis.hardware import HardwareUse, hardware_use
from analysis.sentences import QUALITY_ON_CPU_ENGINE
from analysis.types import (
    EXTRA_FLAGS,
    LATENCY_FIELDS,
    QUEUE_FIELDS,
    PointFigures,
    ReplicaFigures,
    RunFacts,
    WorkloadShape,
)
from runner.engine.vllm_defaults import BatchDefaults, batch_defaults, known_version
from runner.fixed_factors import devices_used, point_facts
from runner.measure.sampler import point_running_while_waiting
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import WorkloadSpec
from runner.schema.result import PointResult

# Settings PointFigures keeps in fields of their own (the verdict rules read them).
OWN_FIELDS = ("max_num_seqs", "max_num_batched_tokens")


def other_settings(config: EngineConfig) -> tuple[tuple[str, Any], ...]:
    """The config's settings but OWN_FIELDS, in EngineConfig's order, with its extra flags."""
    settings = [
        (setting.name, getattr(config, setting.name))
        for setting in EngineConfig.settings()
        if setting.name not in OWN_FIELDS
    ]
    return (*settings, (EXTRA_FLAGS, " ".join(config.extra_args) or None))


def workload_shape(spec: WorkloadSpec) -> WorkloadShape:
    """A file-driven workload (trace, length log, conversations) is its file: the token fields
    are only bounds."""
    return WorkloadShape(
        input_tokens_min=spec.input_tokens_min,
        input_tokens_max=spec.input_tokens_max,
        output_tokens=spec.output_tokens,
        source=spec.spec_label() if spec.kind in ("trace", "lengths", "conversation") else None,
    )


# The client process itself is busy above this share of a core (runner.client.health uses the same).
CLIENT_BUSY_FRACTION = 0.9


# A starved client held the load back when the engine held fewer than this share of the
# requests a closed loop keeps in flight, or a scheduled load went out below this share of its
# rate: the engine then saw less load than the point names.
CLIENT_SHORTFALL = 0.9
# ... or when a burst's sends spread over more than this share of the point's duration.
BURST_SEND_SPREAD = 0.1


def client_limited(p: PointResult) -> bool:
    """Whether the client held the load back: its own process was busy, or it was starved by
    other processes on the host and the load it sent fell short of the plan (load_fell_short).

    A starved client whose load still arrived in full (as when a CPU engine shares two cores
    with it) distorts per-token timings, and the point keeps that caveat; but it was not what
    limited the engine, so the engine's queue evidence decides the bottleneck verdict.
    """
    client = p.client
    if not client.saturated:
        return False
    if client.cpu_fraction is None or client.cpu_fraction > CLIENT_BUSY_FRACTION:
        return True
    return load_fell_short(p)


def load_fell_short(p: PointResult) -> bool:
    """The engine saw less load than the point names: a closed loop's requests in the engine
    (running + waiting) below CLIENT_SHORTFALL of its concurrency, a scheduled load's achieved
    rate below CLIENT_SHORTFALL of its rate, or a burst's sends spread over more than
    BURST_SEND_SPREAD of the point. A node run is judged by the first two only where each
    replica's share is known, so not here: its client's own CPU decides alone."""
    load, queue, schedule = p.load, p.queue, p.client.schedule
    if p.replicas > 1:
        return False
    if load.shape == "concurrency":
        if not load.concurrency or queue.mean_running is None or queue.mean_waiting is None:
            return False
        in_engine = queue.mean_running + queue.mean_waiting
        return in_engine < CLIENT_SHORTFALL * min(load.concurrency, load.num_requests)
    if schedule is None:
        return False
    if schedule.scheduled_rate and schedule.achieved_rate is not None:
        return schedule.achieved_rate < CLIENT_SHORTFALL * schedule.scheduled_rate
    if schedule.max_send_lag_ms is not None and p.metrics.duration > 0:
        return schedule.max_send_lag_ms / 1000 > BURST_SEND_SPREAD * p.metrics.duration
    return False


def from_point_result(p: PointResult) -> PointFigures:
    """The point's figures; one whose aggregates fail a check is left out of every choice."""
    m, q = p.metrics, p.queue
    failed = tuple(check.sentence for check in failed_checks(p))
    limits = engine_limits(p)
    return PointFigures(
        key=p.key,
        config_label=p.engine_config.label(),
        load_label=p.load.label(),
        offered_concurrency=p.load.offered_concurrency(),
        output_throughput=m.output_throughput,
        request_throughput=m.request_throughput,
        offered_rate=p.load.rate if p.load.shape == "rate" else None,
        max_num_seqs=p.engine_config.max_num_seqs,
        max_num_batched_tokens=p.engine_config.max_num_batched_tokens,
        **limits,
        at_cap_share=at_cap_share(running_while_waiting(p), limits["seqs_limit"]),
        other_settings=other_settings(p.engine_config),
        workload=workload_shape(p.workload),
        gpu_count=devices_used(p),
        replicas=p.replicas,
        repeat=p.repeat,
        valid=m.valid and not failed,
        run_valid=m.valid,
        failed_checks=failed,
        client_saturated=client_limited(p),
        total_output_tokens=m.total_output_tokens,
        queue_samples=q.samples,
        **queue_source(p),
        queue_gap_fraction=queue_gap_fraction(p),
        mean_tokens_per_step=q.mean_tokens_per_step,
        **{name: getattr(m, name) for name in LATENCY_FIELDS if name != "goodput_miss_pct"},
        goodput_miss_pct=goodput_miss_pct(p),
        **{name: getattr(q, name) for name in QUEUE_FIELDS},
        prefix_cache_hit_rate=q.prefix_cache_hit_rate,
        hardware=hardware_use_of(p),
        taken_cores=p.host.taken_cores if p.host is not None else None,
        disturbed=p.host is not None and p.host.disturbed,
        control=p.control,
        end_control=p.end_control,
    )


def queue_source(p: PointResult) -> dict[str, Any]:
    """Whose scrape an imported point's queue is (PointFigures.queue_source, queue_lacks)."""
    server = p.peer.server if p.peer is not None else None
    if server is None:
        return {}
    return {"queue_source": server.tool, "queue_lacks": tuple(server.lacks)}


def running_while_waiting(p: PointResult) -> dict[str, float] | None:
    """Seconds at each running count while requests waited: the queue summary's record, or,
    for a point whose summary predates it (stored or imported before the sampler kept it), the
    same record from the point's engine samples by the sampler's own function
    (runner.measure.sampler.point_running_while_waiting), so one rule judges old and new
    points. None with neither: only then does the mean decide (verdicts.PINNED_FRACTION)."""
    record = p.queue.running_while_waiting_s
    if record is None and p.samples:
        return point_running_while_waiting(p)
    return record


def needs_samples(p: PointResult) -> bool:
    """Whether from_point_result needs the point's engine samples, which a reader of stored
    aggregates leaves out: its summary lacks the record of running while requests waited
    though the running and waiting gauges were sampled in its window (running_while_waiting).
    A point recorded with the field never does, so only old points cost a read."""
    q = p.queue
    return (q.running_while_waiting_s is None and q.samples > 0 and not p.samples
            and q.mean_running is not None and q.mean_waiting is not None)


def at_cap_share(running_while_waiting_s: dict[str, float] | None, cap: int | None) -> float | None:
    """The share of the time requests waited that running spent at the cap (or above it: a
    gauge read mid-step); None without the record, a cap, or any time waiting."""
    if running_while_waiting_s is None or cap is None:
        return None
    waited = sum(running_while_waiting_s.values())
    if waited <= 0:
        return None
    at_cap = sum(s for running, s in running_while_waiting_s.items() if float(running) >= cap)
    return at_cap / waited


def engine_limits(p: PointResult) -> dict[str, Any]:
    """max_num_seqs and max_num_batched_tokens as the engine ran them (PointFigures' seqs_limit,
    token_budget, limits_from_defaults): as configured, else vLLM's own default there."""
    config = p.engine_config
    seqs, budget = config.max_num_seqs, config.max_num_batched_tokens
    defaults = _vllm_defaults(p) if seqs is None or budget is None else None
    if defaults is None:
        return {"seqs_limit": seqs, "token_budget": budget, "limits_from_defaults": ()}
    return {
        "seqs_limit": defaults.max_num_seqs if seqs is None else seqs,
        "token_budget": defaults.max_num_batched_tokens if budget is None else budget,
        "limits_from_defaults": tuple(name for name, value in (
            ("max_num_seqs", seqs), ("max_num_batched_tokens", budget)) if value is None),
    }


def _vllm_defaults(p: PointResult) -> BatchDefaults | None:
    """vLLM's defaults for an engine Headroom started (an attached server's flags are not
    known) of a version whose rule Headroom knows."""
    prov = p.provenance
    if prov is None or prov.engine.launch_style == "attach" or prov.engine.name != "vllm":
        return None
    if not known_version(prov.engine.version):
        return None
    return batch_defaults(cpu_engine=cpu_engine(p), gpu_memory_mib=prov.hardware.gpu_memory_mib,
                          gpu_name=prov.hardware.gpu_name,
                          world_size=p.engine_config.tensor_parallel_size)


def cpu_engine(p: PointResult) -> bool:
    """A CPU engine served the point: launched as cpu, or started on a host with no GPU."""
    if p.provenance is None:
        return False
    engine, hw = p.provenance.engine, p.provenance.hardware
    if engine.launch_style == "cpu":
        return True
    return engine.launch_style in ("serve", "docker") and not hw.gpu_count and not hw.gpu_name


def quality_caveat(p: PointResult) -> str | None:
    """What a reader must know beside the point's quality score; None: nothing, or no score.

    On a CPU engine the served model is Headroom's tiny random-weight one (runner.engine.tinymodel):
    its score measures nothing about the model a deployment will serve.
    """
    if p.quality is None or not cpu_engine(p):
        return None
    return QUALITY_ON_CPU_ENGINE


def hardware_use_of(p: PointResult) -> HardwareUse:
    """The point's per-GPU work (its queue summary) against the peaks of the GPU it ran on
    (Hardware.gpu_name, which an attached server's provenance never names)."""
    prov = p.provenance
    return hardware_use(
        gpu_name=prov.hardware.gpu_name if prov else None,
        precision=prov.checkpoint.precision if prov else None,
        cpu_engine=cpu_engine(p),
        bytes_per_s=p.queue.memory_bytes_per_gpu_s,
        flops_per_s=p.queue.flops_per_gpu_s,
        attached=prov is not None and prov.engine.launch_style == "attach",
    )


def goodput_miss_pct(p: PointResult) -> float | None:
    """Percent of the point's requests that missed its goodput SLOs; None when none were set."""
    share = p.metrics.slo_attainment.get("all")
    return None if share is None else 100.0 * (1.0 - share)


def queue_gap_fraction(p: PointResult) -> float | None:
    """The point's longest stretch without an engine sample, as a fraction of its window."""
    gap, duration = p.queue.max_gap_s, p.metrics.duration
    if gap is None or not duration or duration <= 0:
        return None
    return min(1.0, gap / duration)


def run_facts_from_point_result(p: PointResult) -> RunFacts:
    """The fixed factors of a point (runner.fixed_factors.point_facts) with its spec."""
    return RunFacts(**point_facts(p), workload=workload_shape(p.workload))


def replica_figures_from_point_result(p: PointResult) -> tuple[ReplicaFigures, ...]:
    out = []
    for r in p.per_replica:
        m = r.metrics
        out.append(
            ReplicaFigures(
                replica=r.replica,
                output_throughput=m.output_throughput if m else None,
                total_output_tokens=m.total_output_tokens if m else None,
                completed=m.completed if m else None,
                failed=m.failed if m else None,
                valid=m.valid if m else None,
                window_seconds=r.window.seconds if r.window else None,
                gpu=r.gpu,
            )
        )
    return tuple(out)
