"""Node scaling: N independent replicas started together, measured over ONE common window.

Node throughput is all completed output tokens over the common window (first client start to
last completion), never the sum of per-replica rates: replicas finishing at different times
would otherwise be credited with throughput nobody observed. The runner computes it; here it is
checked against its reference and put beside the per-replica figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from analysis import sentences
from analysis.errors import AnalysisError
from analysis.types import PointFigures, ReplicaFigures, ScalingResult, WorkloadShape


def scaling(
    *,
    node_throughput: float,
    n_replicas: int,
    gpus_per_replica: int,
    window_seconds: float,
    workload: WorkloadShape,
    per_replica: Sequence[ReplicaFigures],
    reference: PointFigures,
) -> ScalingResult:
    """Node throughput, per GPU, and efficiency = node / (N x reference throughput).

    The reference is an explicitly chosen single-replica point; it is refused when its workload
    spec differs (or is unknown), when it ran more than one replica, when it used a different
    number of GPUs than one replica here, when its stored aggregates fail a check (the failed
    check is named), or when it is not a valid run. The node point itself is checked apart, by
    check_node_point, since this function takes its figures as numbers.
    """
    if n_replicas < 1 or gpus_per_replica < 1:
        raise AnalysisError("node scaling needs at least one replica and one GPU per replica")
    if not math.isfinite(window_seconds) or window_seconds <= 0:
        raise AnalysisError("the common window must be a positive number of seconds")
    if not math.isfinite(node_throughput) or node_throughput < 0:
        raise AnalysisError("node throughput must be a finite number >= 0")
    if per_replica and len(per_replica) != n_replicas:
        raise AnalysisError(
            f"{len(per_replica)} per-replica figures for {n_replicas} replicas; "
            "the run is incomplete"
        )
    _check_reference(reference, workload, gpus_per_replica)

    ideal = n_replicas * reference.output_throughput
    total_gpus = n_replicas * gpus_per_replica
    efficiency = node_throughput / ideal
    per_gpu = node_throughput / total_gpus
    validity = [r.valid for r in per_replica]
    all_valid = None if not per_replica or None in validity else all(validity)
    return ScalingResult(
        node_throughput=node_throughput,
        n_replicas=n_replicas,
        gpus_per_replica=gpus_per_replica,
        total_gpus=total_gpus,
        throughput_per_gpu=per_gpu,
        window_seconds=window_seconds,
        reference_key=reference.key,
        reference_throughput=reference.output_throughput,
        ideal_throughput=ideal,
        efficiency=efficiency,
        per_replica=tuple(sorted(per_replica, key=lambda r: r.replica)),
        all_replicas_valid=all_valid,
        sentence=sentences.scaling_sentence(
            n_replicas,
            total_gpus,
            node_throughput,
            window_seconds,
            per_gpu,
            efficiency,
            reference.output_throughput,
        ),
    )


def node_efficiency(node: PointFigures, reference: PointFigures) -> float:
    """A node point's efficiency against a single-replica reference of the same workload and
    GPUs per replica: node throughput / (replicas x reference throughput), with the checks
    scaling() makes of both (AnalysisError names the first that fails)."""
    check_node_point(node)
    if node.replicas < 2:
        raise AnalysisError(f"point {node.key} ran one replica: it is not a node run")
    if node.workload is None:
        raise AnalysisError(f"node point {node.key} has no workload spec")
    _check_reference(reference, node.workload, node.gpu_count // node.replicas)
    return node.output_throughput / (node.replicas * reference.output_throughput)


def _checks_text(point: PointFigures) -> str:
    """The failed checks' sentences as one clause (the page ends the sentence)."""
    return " ".join(point.failed_checks).rstrip(".")


def check_node_point(node: PointFigures) -> None:
    """Refuse a node point whose stored aggregates fail a check (analysis.checks):
    its throughput disagrees with its own counts, so no efficiency may rest on it, as no
    capacity or operating point does. A node whose replicas lost requests passes: the result
    says so (all_replicas_valid), and its throughput counts only what completed."""
    if node.failed_checks:
        raise AnalysisError(
            f"node point {node.key} fails a check of its stored aggregates, so its scaling "
            f"cannot be computed: {_checks_text(node)}"
        )


def _check_reference(
    reference: PointFigures, workload: WorkloadShape, gpus_per_replica: int
) -> None:
    if reference.workload is None:
        raise AnalysisError(
            f"reference {reference.key} has no recorded workload spec; it cannot be shown to match"
        )
    if reference.workload != workload:
        raise AnalysisError(
            f"reference {reference.key} ran {reference.workload.label()}, the node run "
            f"{workload.label()}: a scaling reference needs the same workload spec"
        )
    if reference.replicas != 1:
        raise AnalysisError(
            f"reference {reference.key} ran {reference.replicas} replicas; "
            "choose a single-replica point"
        )
    if reference.gpu_count != gpus_per_replica:
        raise AnalysisError(
            f"reference {reference.key} used {reference.gpu_count} GPU(s) but each replica uses "
            f"{gpus_per_replica}; the efficiency would compare different engines"
        )
    if reference.failed_checks:
        raise AnalysisError(
            f"reference {reference.key} fails a check of its stored aggregates, so its "
            f"throughput cannot be the ideal: {_checks_text(reference)}"
        )
    if not reference.valid:
        raise AnalysisError(
            f"reference {reference.key} is not a valid run (failed or short responses)"
        )
    if reference.output_throughput <= 0:
        raise AnalysisError(
            f"reference {reference.key} has zero throughput; efficiency is undefined"
        )
