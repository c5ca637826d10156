"""The peak table and the "% of peak" rules: every listed SKU and precision, the names nvidia-smi
reports, and what a point without a peak or without estimates gets instead of a number."""

from __future__ import annotations

import pytest

from analysis.errors import AnalysisError
from analysis.hardware import (
    NOT_REPORTED,
    PRECISIONS,
    SKUS,
    compute_precision,
    hardware_use,
    sku_for,
)

# (SKU, nvidia-smi name, memory TB/s, dense TFLOPS at BF16, FP8, FP4; None: no such cores), from
# the datasheets as each entry's source names them; a sparse figure halved.
EXPECTED = [
    ("H100 SXM", "NVIDIA H100 80GB HBM3", 3.35, 989.5, 1979.0, None),
    ("H200 SXM", "NVIDIA H200", 4.8, 989.5, 1979.0, None),
    ("B200", "NVIDIA B200", 8.0, 2250.0, 4500.0, 9000.0),
    ("GB200", "NVIDIA GB200", 8.0, 2500.0, 5000.0, 10000.0),
    ("RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
     1.597, 500.0, 1000.0, 2000.0),
    ("L40S", "NVIDIA L40S", 0.864, 362.05, 733.0, None),
    ("A100 SXM 80GB", "NVIDIA A100-SXM4-80GB", 2.039, 312.0, None, None),
]


def test_the_table_holds_exactly_the_listed_skus():
    assert [s.name for s in SKUS] == [row[0] for row in EXPECTED]


@pytest.mark.parametrize("name, smi_name, bandwidth, bf16, fp8, fp4", EXPECTED)
def test_every_sku_and_precision_has_its_datasheet_figure_and_source(
    name, smi_name, bandwidth, bf16, fp8, fp4
):
    sku = sku_for(smi_name)
    assert sku is not None and sku.name == name
    assert sku.memory_bandwidth_tbs.value == bandwidth
    for precision, expected in zip(PRECISIONS, (bf16, fp8, fp4), strict=True):
        peak = sku.tensor_tflops.get(precision)
        assert (peak.value if peak else None) == expected, (name, precision)
        if peak is not None:
            assert peak.source.url.startswith("https://www.nvidia.com/")
            assert peak.source.document and peak.source.published
    assert sku.memory_bandwidth_tbs.source.url.startswith("https://www.nvidia.com/")


def test_a_figure_nvidia_prints_with_sparsity_says_it_was_halved():
    h200 = sku_for("NVIDIA H200")
    assert "with sparsity) / 2" in (h200.tensor_tflops["BF16"].source.derived or "")
    # The L40S and A100 datasheets print the dense figure itself: nothing derived.
    assert sku_for("NVIDIA L40S").tensor_tflops["FP8"].source.derived is None
    assert sku_for("NVIDIA A100-SXM4-80GB").tensor_tflops["BF16"].source.derived is None
    # A rack's figure is divided by its GPUs, and the division is stated.
    assert "/ 72" in (sku_for("NVIDIA GB200").memory_bandwidth_tbs.source.derived or "")


@pytest.mark.parametrize("name", [
    "NVIDIA H200 NVL",  # another board: lower power and clocks than the SXM one
    "NVIDIA H100 PCIe",
    "NVIDIA A100 80GB PCIe",
    "NVIDIA A100-SXM4-40GB",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "NVIDIA H20",
    "",
    None,
])
def test_only_the_exact_nvidia_smi_name_matches_a_sku(name):
    assert sku_for(name) is None


def test_spacing_and_case_of_the_reported_name_do_not_matter():
    assert sku_for("  nvidia   h200 ").name == "H200 SXM"


@pytest.mark.parametrize("precision, expected", [
    ("bf16", "BF16"), ("BF16", "BF16"), ("fp16", "BF16"), ("FP8", "FP8"), ("fp8_e4m3", "FP8"),
    ("NVFP4", "FP4"), ("mxfp4", "FP4"), ("int4-awq", None), ("", None), (None, None),
])
def test_the_checkpoint_precision_picks_the_compute_peak(precision, expected):
    assert compute_precision(precision) == expected


def use(**overrides):
    values = dict(gpu_name="NVIDIA H200", precision="bf16", cpu_engine=False,
                  bytes_per_s=3.84e12, flops_per_s=98.95e12)
    values.update(overrides)
    return hardware_use(**values)


def test_shares_are_achieved_over_peak_per_gpu():
    u = use()
    # 3.84 of 4.8 TB/s; 98.95 of 989.5 dense BF16 TFLOPS.
    assert u.bandwidth_pct == pytest.approx(80.0)
    assert u.compute_pct == pytest.approx(10.0)
    assert (u.sku, u.precision) == ("H200 SXM", "BF16")
    assert u.bandwidth_note is None and u.compute_note is None


def test_the_fp4_peak_applies_to_an_nvfp4_checkpoint_on_blackwell():
    u = use(gpu_name="NVIDIA RTX PRO 6000 Blackwell Server Edition", precision="NVFP4",
            bytes_per_s=0.7985e12, flops_per_s=500e12)
    assert u.bandwidth_pct == pytest.approx(50.0)  # 0.7985 of 1.597 TB/s
    assert u.compute_pct == pytest.approx(25.0)  # 500 of 2,000 dense FP4 TFLOPS


def test_a_cpu_engine_gets_no_peak_even_on_a_host_with_a_listed_gpu():
    u = use(cpu_engine=True)
    assert u.bandwidth_pct is None and u.compute_pct is None
    assert u.bandwidth_note.startswith("no peak: a CPU engine")
    assert u.bytes_per_s == 3.84e12  # the estimate itself is still shown


def test_an_unknown_gpu_gets_no_peak_and_is_named():
    u = use(gpu_name="NVIDIA H200 NVL")
    assert u.bandwidth_pct is None
    assert "NVIDIA H200 NVL is not in the peak table" in u.bandwidth_note
    assert u.compute_note == u.bandwidth_note


def test_an_attached_server_gets_no_peak():
    u = use(attached=True)
    assert u.bandwidth_pct is None and "attached server" in u.bandwidth_note


def test_a_precision_the_sku_has_no_tensor_cores_for_gets_no_compute_peak():
    u = use(precision="NVFP4")  # H200: no FP4
    assert u.compute_pct is None
    assert u.compute_note == "no compute peak: the H200 SXM has no FP4 Tensor Cores"
    assert u.bandwidth_pct == pytest.approx(80.0)  # the bandwidth peak does not depend on it
    assert use(precision=None).compute_note == (
        "no compute peak: the checkpoint's precision is not recorded")
    assert "'int4-awq' is not one the table knows" in use(precision="int4-awq").compute_note


def test_no_estimates_read_not_reported_never_zero():
    u = use(bytes_per_s=None, flops_per_s=None)
    assert u.bandwidth_pct is None and u.compute_pct is None
    assert u.bandwidth_note == NOT_REPORTED == u.compute_note


def test_a_negative_or_infinite_estimate_is_refused():
    with pytest.raises(AnalysisError, match="bytes per second"):
        use(bytes_per_s=-1.0)
    with pytest.raises(AnalysisError, match="FLOPs per second"):
        use(flops_per_s=float("inf"))
