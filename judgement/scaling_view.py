"""Node scaling: a replica run's figures against an explicitly chosen single-replica reference."""

from __future__ import annotations

from analysis import AnalysisError
from analysis import scaling as scaling_rules
from analysis.convert import from_point_result, replica_figures_from_point_result
from analysis.types import ScalingResult
from benchmarks.models import Point
from judgement.figures import figures, judged_result


def scaling_for(node_point: Point, reference_point: Point) -> ScalingResult:
    """Node figures of a replica run against an explicitly chosen single-replica reference.

    Raises AnalysisError with the reason when the node point's stored aggregates fail a check,
    when the reference does not fit (another workload spec, several replicas, another GPU
    count, a failed check, invalid) or the run has no common window.
    """
    result = judged_result(node_point)
    if result.window is None:
        raise AnalysisError(f"point {node_point.key} has no common window recorded")
    fig = from_point_result(result)
    scaling_rules.check_node_point(fig)
    if fig.workload is None:
        raise AnalysisError(f"point {node_point.key} has no workload spec")
    return scaling_rules.scaling(
        node_throughput=fig.output_throughput,
        n_replicas=result.replicas,
        gpus_per_replica=result.engine_config.tensor_parallel_size,
        window_seconds=result.window.seconds,
        workload=fig.workload,
        per_replica=replica_figures_from_point_result(result),
        reference=figures(reference_point),
    )


def node_scaling_refusal(node_point: Point) -> str | None:
    """Why no reference can make this node point's scaling (a failed check), or None."""
    try:
        scaling_rules.check_node_point(figures(node_point))
    except (AnalysisError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return str(exc)
    return None


def scaling_problem(node: Point, reference: Point) -> str | None:
    """Why these two points cannot make a report's scaling section (for its build form), or
    None."""
    if node.replicas < 2:
        return "The node run must have at least two replicas."
    try:
        scaling_for(node, reference)
    except (AnalysisError, ValueError) as exc:
        return str(exc)
    return None
