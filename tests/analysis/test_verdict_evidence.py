"""A verdict's evidence (analysis.types.VerdictEvidence) carries each of its point's figures
under that figure's own name, and the step from the previous level under the step's names."""

from __future__ import annotations

import dataclasses

import pytest

from analysis.hardware import HardwareUse
from analysis.types import PointFigures, VerdictEvidence
from analysis.verdicts import verdict

from .helpers import point

# Every figure a distinct value, so a figure stored under another figure's name shows.
FIGURES = {
    "mean_running": 10.0, "peak_running": 11.0, "mean_waiting": 12.0, "peak_waiting": 13.0,
    "mean_kv_usage": 0.14, "peak_kv_usage": 0.15, "preemptions": 16.0,
    "mean_tokens_per_step": 17.0, "mean_waiting_capacity": 1.8, "mean_waiting_deferred": 1.9,
    "mean_queue_time_s": 2.0, "queue_time_p50_s": 2.1, "queue_time_p90_s": 2.2,
    "queue_time_p99_s": 2.3, "prefix_cache_hit_rate": 0.24, "at_cap_share": 0.25,
    "queue_samples": 26, "queue_gap_fraction": 0.27, "taken_cores": 2.8, "replicas": 3,
    "gpu_count": 3, "disturbed": True, "limits_from_defaults": ("max_num_batched_tokens",),
    "queue_source": "a tool's scrape",
}
HARDWARE = HardwareUse(sku=None, precision=None, bytes_per_s=None, flops_per_s=None,
                       bandwidth_pct=30.0, compute_pct=31.0, bandwidth_peak=None,
                       compute_peak=None, bandwidth_note=None, compute_note=None)


def _shared_names() -> list[str]:
    point_names = {f.name for f in dataclasses.fields(PointFigures)}
    return [f.name for f in dataclasses.fields(VerdictEvidence) if f.name in point_names]


def test_the_evidence_holds_each_figure_of_its_point_under_its_own_name():
    judged = point("p", 64, 100.0, max_num_seqs=29, max_num_batched_tokens=3200,
                   hardware=HARDWARE, **FIGURES)
    found = verdict(judged).evidence
    shared = _shared_names()
    assert set(FIGURES) - {"gpu_count"} <= set(shared)
    for name in shared:
        assert getattr(found, name) == getattr(judged, name), name
    # The limits as the engine ran, and the GPUs' work from the hardware judgement.
    assert (found.max_num_seqs, found.max_num_batched_tokens) == (29, 3200)
    assert (found.memory_bandwidth_pct, found.compute_pct) == (30.0, 31.0)
    assert found.client_saturated is False and found.noise_band_pct is None


def test_the_step_from_the_previous_level_is_held_under_the_step_names():
    common = {"config_label": "seqs=64", "max_num_seqs": 64, "queue_samples": 20,
              "peak_running": 64.0, "mean_waiting": 5.0, "peak_kv_usage": 0.2,
              "preemptions": 0.0}
    lower = point("lo", 100, 1000.0, mean_running=40.0, median_e2el_ms=2000.0,
                  **{**common, "mean_waiting": 2.0})
    upper = point("hi", 200, 1100.0, mean_running=50.0, median_e2el_ms=3000.0, **common)
    found = verdict(upper, lower, noise_band_pct=7.5).evidence
    assert found.previous_key == "lo"
    assert found.throughput_gain_pct == pytest.approx(10.0)
    assert found.latency_growth_pct == pytest.approx(50.0)
    assert found.running_growth_pct == pytest.approx(25.0)
    assert found.previous_mean_waiting == 2.0
    assert found.noise_band_pct == 7.5
    # log(1.1) / log(1.25)
    assert found.output_elasticity == pytest.approx(0.42712, abs=1e-5)
