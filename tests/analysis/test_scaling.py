"""Node scaling against an explicitly chosen single-replica reference."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.scaling import scaling
from analysis.types import ReplicaFigures, WorkloadShape
from tests.analysis.helpers import CASE_STUDY_SPEC, point


def replicas(n=8, valid=True):
    return [
        ReplicaFigures(replica=i, output_throughput=41_000.0 + i, valid=valid, window_seconds=100.0)
        for i in reversed(range(n))
    ]


def reference(**kwargs):
    return point("single", 2000, 46_000, **kwargs)


def node(**overrides):
    args = dict(
        node_throughput=330_000.0,
        n_replicas=8,
        gpus_per_replica=1,
        window_seconds=120.0,
        workload=CASE_STUDY_SPEC,
        per_replica=replicas(),
        reference=reference(),
    )
    args.update(overrides)
    return scaling(**args)


def test_scaling_divides_node_throughput_by_n_times_the_reference():
    s = node()
    assert s.node_throughput == 330_000
    assert s.total_gpus == 8
    assert s.throughput_per_gpu == 41_250
    assert s.ideal_throughput == 8 * 46_000
    assert s.efficiency == pytest.approx(330_000 / 368_000)  # 0.897
    assert s.reference_key == "single"
    assert s.window_seconds == 120
    assert [r.replica for r in s.per_replica] == list(range(8))
    assert s.all_replicas_valid is True
    assert s.sentence == (
        "8 replicas on 8 GPUs: 330,000 output tokens/s over one 120.0 s window, 41,250 per GPU; "
        "89.7% of 8 x the reference (46,000)"
    )


def test_scaling_counts_gpus_per_replica():
    s = node(gpus_per_replica=2, reference=reference(gpu_count=2))
    assert s.total_gpus == 16
    assert s.throughput_per_gpu == pytest.approx(330_000 / 16)


def test_scaling_reports_an_invalid_replica():
    bad = replicas()
    bad[0] = ReplicaFigures(replica=7, output_throughput=1.0, valid=False)
    assert node(per_replica=bad).all_replicas_valid is False


def test_scaling_refuses_a_reference_with_a_different_workload_spec():
    other = WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)
    with pytest.raises(
        AnalysisError, match="ran 1000 in / 1000 out, the node run 63-66 in / 256 out"
    ):
        node(reference=reference(workload=other))
    with pytest.raises(AnalysisError, match="no recorded workload spec"):
        node(reference=reference(workload=None))


def test_scaling_refuses_a_multi_replica_or_invalid_or_mismatched_reference():
    with pytest.raises(AnalysisError, match="ran 8 replicas"):
        node(reference=reference(replicas=8, gpu_count=8))
    with pytest.raises(AnalysisError, match="not a valid run"):
        node(reference=reference(valid=False))
    with pytest.raises(AnalysisError, match=r"used 2 GPU\(s\) but each replica uses 1"):
        node(reference=reference(gpu_count=2))
    with pytest.raises(AnalysisError, match="zero throughput"):
        node(reference=point("zero", 2000, 0.0))


def test_scaling_refuses_an_incomplete_run_or_a_bad_window():
    with pytest.raises(AnalysisError, match="7 per-replica figures for 8 replicas"):
        node(per_replica=replicas(7))
    with pytest.raises(AnalysisError, match="common window"):
        node(window_seconds=0.0)


def test_the_ideal_is_replicas_times_the_reference_whatever_each_replica_spans():
    # 2 replicas of tensor parallel 2 (4 GPUs); the reference is one TP-2 engine at 10,000
    # tok/s. Ideal = 2 x 10,000 = 20,000 (the reference already ran on 2 GPUs; 2 x 2 x 10,000
    # would count its GPUs twice), so 18,000 tok/s is 90% and 4,500 per GPU.
    s = node(
        node_throughput=18_000.0,
        n_replicas=2,
        gpus_per_replica=2,
        per_replica=replicas(2),
        reference=point("tp2", 2000, 10_000, gpu_count=2),
    )
    assert s.ideal_throughput == 20_000
    assert s.efficiency == pytest.approx(0.9)
    assert s.total_gpus == 4
    assert s.throughput_per_gpu == 4_500
    assert s.sentence == (
        "2 replicas on 4 GPUs: 18,000 output tokens/s over one 120.0 s window, 4,500 per GPU; "
        "90.0% of 2 x the reference (10,000)"
    )
