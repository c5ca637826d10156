"""How close a point came to what its GPU can physically do: the peak table and the shares.

The engine's side is vLLM's own estimate of the work each GPU did (FLOPs, and bytes read and
written, per second over the point's window; runner.schema.samples.QueueSummary). This module
holds the other side: the datasheet peaks of the GPUs people serve on, and the rules that set
the two against each other.

Every figure is per GPU and dense (no 2:4 structured sparsity: inference kernels do not use
it). NVIDIA prints most Tensor Core figures with sparsity; those are halved here, and each entry
says so. The memory bandwidth peak applies whatever the precision; the compute peak is the one of
the precision the checkpoint computes in (Checkpoint.precision: bf16, FP8, NVFP4, ...). A SKU
without that precision's Tensor Cores has no compute peak for it (an FP4 checkpoint on an H100
runs through other kernels, at no peak that could be named).

The peak is matched to the exact name nvidia-smi reports, never to a part of it: "NVIDIA H200
NVL" is another board than "NVIDIA H200" (lower power, lower clocks). A GPU not in the table,
and the CPU engine, get no peak and the page says so instead of guessing one.

Each figure comes from the NVIDIA document named in its Peak's source; `published` is that
document's edition, not a date the figure was checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from analysis.errors import AnalysisError

Precision = Literal["BF16", "FP8", "FP4"]
PRECISIONS: tuple[Precision, ...] = ("BF16", "FP8", "FP4")

TERA = 1e12


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where a figure comes from. derived: how it follows from the printed one (else None)."""

    document: str
    url: str
    published: str  # the document's edition, as precise as NVIDIA dates it
    derived: str | None = None

    def text(self) -> str:
        base = f"{self.document} ({self.published}), {self.url}"
        return f"{base}; {self.derived}" if self.derived else base


@dataclass(frozen=True, kw_only=True)
class Peak:
    value: float  # TB/s for memory bandwidth, dense TFLOPS for compute
    source: Source


@dataclass(frozen=True, kw_only=True)
class Sku:
    """One GPU board: the nvidia-smi names it reports, its bandwidth and its dense peaks."""

    name: str
    smi_names: tuple[str, ...]
    memory_bandwidth_tbs: Peak
    tensor_tflops: dict[Precision, Peak]


def _halved(document: str, url: str, published: str, printed: float) -> Source:
    return Source(
        document=document, url=url, published=published,
        derived=f"dense = the printed {printed:g} TFLOPS (with sparsity) / 2",
    )


H100_SHEET = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column",
              "https://www.nvidia.com/en-us/data-center/h100/", "2023")
H200_SHEET = ("NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column",
              "https://www.nvidia.com/en-us/data-center/h200/", "November 2024")
HGX_B200 = ("NVIDIA HGX B200 specifications",
            "https://www.nvidia.com/en-us/data-center/hgx/", "2024")
GB200_NVL72 = ("NVIDIA GB200 NVL72 specifications",
               "https://www.nvidia.com/en-us/data-center/gb200-nvl72/", "2024")
RTX_PRO_6000_SE = ("NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet",
                   "https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/",
                   "2025")
L40S_SHEET = ("NVIDIA L40S datasheet", "https://www.nvidia.com/en-us/data-center/l40s/", "2023")
A100_SHEET = ("NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column",
              "https://www.nvidia.com/en-us/data-center/a100/", "June 2021")


def _printed(sheet: tuple[str, str, str]) -> Source:
    document, url, published = sheet
    return Source(document=document, url=url, published=published)


def _per_gpu(sheet: tuple[str, str, str], total_tbs: float, gpus: int) -> Source:
    document, url, published = sheet
    return Source(document=document, url=url, published=published,
                  derived=f"per GPU = the printed {total_tbs:g} TB/s of all {gpus} GPUs / {gpus}")


def _dense_per_gpu(sheet: tuple[str, str, str], printed_pflops: float, gpus: int) -> Source:
    document, url, published = sheet
    return Source(
        document=document, url=url, published=published,
        derived=f"dense per GPU = the printed {printed_pflops:,g} PFLOPS (with sparsity, all "
                f"{gpus} GPUs) / 2 / {gpus}",
    )


SKUS: tuple[Sku, ...] = (
    Sku(
        name="H100 SXM",
        smi_names=("NVIDIA H100 80GB HBM3",),
        memory_bandwidth_tbs=Peak(value=3.35, source=_printed(H100_SHEET)),
        tensor_tflops={
            "BF16": Peak(value=989.5, source=_halved(*H100_SHEET, 1979)),
            "FP8": Peak(value=1979.0, source=_halved(*H100_SHEET, 3958)),
        },
    ),
    Sku(
        name="H200 SXM",
        smi_names=("NVIDIA H200",),
        memory_bandwidth_tbs=Peak(value=4.8, source=_printed(H200_SHEET)),
        tensor_tflops={
            "BF16": Peak(value=989.5, source=_halved(*H200_SHEET, 1979)),
            "FP8": Peak(value=1979.0, source=_halved(*H200_SHEET, 3958)),
        },
    ),
    Sku(
        name="B200",
        smi_names=("NVIDIA B200",),
        memory_bandwidth_tbs=Peak(value=8.0, source=_per_gpu(HGX_B200, 64, 8)),
        tensor_tflops={
            "BF16": Peak(value=2250.0, source=_dense_per_gpu(HGX_B200, 36, 8)),
            "FP8": Peak(value=4500.0, source=_dense_per_gpu(HGX_B200, 72, 8)),
            "FP4": Peak(value=9000.0, source=_dense_per_gpu(HGX_B200, 144, 8)),
        },
    ),
    Sku(
        name="GB200",
        smi_names=("NVIDIA GB200",),
        memory_bandwidth_tbs=Peak(value=8.0, source=_per_gpu(GB200_NVL72, 576, 72)),
        tensor_tflops={
            "BF16": Peak(value=2500.0, source=_dense_per_gpu(GB200_NVL72, 360, 72)),
            "FP8": Peak(value=5000.0, source=_dense_per_gpu(GB200_NVL72, 720, 72)),
            "FP4": Peak(value=10000.0, source=_dense_per_gpu(GB200_NVL72, 1440, 72)),
        },
    ),
    Sku(
        name="RTX PRO 6000 Blackwell Server Edition",
        smi_names=("NVIDIA RTX PRO 6000 Blackwell Server Edition",),
        memory_bandwidth_tbs=Peak(value=1.597, source=_printed(RTX_PRO_6000_SE)),
        tensor_tflops={
            # The datasheet prints only FP4 (4 PFLOPS, with sparsity); Blackwell's Tensor Cores
            # run FP8 at half the FP4 rate and BF16 at half the FP8 rate.
            "FP4": Peak(value=2000.0, source=_halved(*RTX_PRO_6000_SE, 4000)),
            "FP8": Peak(value=1000.0, source=Source(
                document=RTX_PRO_6000_SE[0], url=RTX_PRO_6000_SE[1], published=RTX_PRO_6000_SE[2],
                derived="dense FP4 (4,000 TFLOPS with sparsity / 2) / 2: Blackwell runs FP8 at "
                        "half its FP4 rate")),
            "BF16": Peak(value=500.0, source=Source(
                document=RTX_PRO_6000_SE[0], url=RTX_PRO_6000_SE[1], published=RTX_PRO_6000_SE[2],
                derived="dense FP4 (4,000 TFLOPS with sparsity / 2) / 4: Blackwell runs BF16 at "
                        "a quarter of its FP4 rate")),
        },
    ),
    Sku(
        name="L40S",
        smi_names=("NVIDIA L40S",),
        memory_bandwidth_tbs=Peak(value=0.864, source=_printed(L40S_SHEET)),
        tensor_tflops={
            # The datasheet prints the dense figure beside the sparse one.
            "BF16": Peak(value=362.05, source=_printed(L40S_SHEET)),
            "FP8": Peak(value=733.0, source=_printed(L40S_SHEET)),
        },
    ),
    Sku(
        name="A100 SXM 80GB",
        smi_names=("NVIDIA A100-SXM4-80GB",),
        memory_bandwidth_tbs=Peak(value=2.039, source=_printed(A100_SHEET)),
        tensor_tflops={"BF16": Peak(value=312.0, source=_printed(A100_SHEET))},
    ),
)

# Checkpoint.precision spellings, lower case, and the Tensor Core precision they compute in.
# 16-bit floats share one peak on every SKU here (FP16 and BF16 rates are equal).
PRECISION_ALIASES: dict[str, Precision] = {
    "bf16": "BF16", "bfloat16": "BF16", "fp16": "BF16", "float16": "BF16", "half": "BF16",
    "fp8": "FP8", "fp8_e4m3": "FP8", "fp8-e4m3": "FP8", "w8a8-fp8": "FP8", "fp8-dynamic": "FP8",
    "nvfp4": "FP4", "fp4": "FP4", "mxfp4": "FP4", "w4a4-fp4": "FP4",
}


def _normalized(name: str) -> str:
    return " ".join(name.split()).casefold()


_BY_SMI_NAME = {_normalized(n): sku for sku in SKUS for n in sku.smi_names}


def sku_for(gpu_name: str | None) -> Sku | None:
    """The table's SKU for the exact GPU name nvidia-smi reports (spacing and case aside)."""
    if not gpu_name:
        return None
    return _BY_SMI_NAME.get(_normalized(gpu_name))


def compute_precision(precision: str | None) -> Precision | None:
    """The Tensor Core precision a checkpoint precision computes in; None when not known."""
    if not precision:
        return None
    return PRECISION_ALIASES.get(precision.strip().casefold())


@dataclass(frozen=True, kw_only=True)
class HardwareUse:
    """One point's distance to its GPU's peaks, per GPU, or why there is none.

    bandwidth_pct / compute_pct: achieved / peak x 100, None with the reason beside it in
    bandwidth_note / compute_note.
    """

    sku: str | None
    precision: Precision | None
    bytes_per_s: float | None
    flops_per_s: float | None
    bandwidth_pct: float | None
    compute_pct: float | None
    bandwidth_peak: Peak | None
    compute_peak: Peak | None
    bandwidth_note: str | None
    compute_note: str | None
    # vLLM's estimates on a CPU engine are the engine's, not a GPU's.
    cpu_engine: bool = False


NOT_REPORTED = (
    "not reported: the engine gave no FLOP and byte estimates (vLLM keeps them only when started "
    "with --enable-mfu-metrics, which engines Headroom starts get)"
)


def _no_peak(cpu_engine: bool, gpu_name: str | None, attached: bool) -> str:
    if cpu_engine:
        return "no peak: a CPU engine, and the table holds GPU peaks only"
    if attached:
        return "no peak: an attached server's GPU is not recorded (it is not ours to read)"
    if not gpu_name:
        return "no peak: the GPU was not recorded"
    known = ", ".join(s.name for s in SKUS)
    return f"no peak: {gpu_name} is not in the peak table ({known})"


def _share(achieved: float, peak: float, what: str) -> float:
    if not math.isfinite(achieved) or achieved < 0:
        raise AnalysisError(f"{what} must be a finite number >= 0, got {achieved!r}")
    return achieved / peak * 100.0


def hardware_use(
    *,
    gpu_name: str | None,
    precision: str | None,
    cpu_engine: bool,
    bytes_per_s: float | None,
    flops_per_s: float | None,
    attached: bool = False,
) -> HardwareUse:
    """The point's per-GPU bytes/s and FLOP/s against its SKU's peaks.

    attached: a server Headroom did not start, whose GPU is never recorded.
    A measured figure without a peak, or a peak without a measured figure, gives no share and
    says which is missing; nothing is estimated in its place.
    """
    sku = None if cpu_engine or attached else sku_for(gpu_name)
    wanted = compute_precision(precision)
    bandwidth_peak = sku.memory_bandwidth_tbs if sku else None
    compute_peak = sku.tensor_tflops.get(wanted) if sku and wanted else None
    no_peak = None if sku else _no_peak(cpu_engine, gpu_name, attached)

    bandwidth_pct = bandwidth_note = None
    if bytes_per_s is None:
        bandwidth_note = NOT_REPORTED
    elif bandwidth_peak is None:
        bandwidth_note = no_peak
    else:
        bandwidth_pct = _share(bytes_per_s, bandwidth_peak.value * TERA, "bytes per second")

    compute_pct = compute_note = None
    if flops_per_s is None:
        compute_note = NOT_REPORTED
    elif sku is None:
        compute_note = no_peak
    elif wanted is None:
        compute_note = (
            f"no compute peak: precision {precision!r} is not one the table knows"
            if precision else "no compute peak: the checkpoint's precision is not recorded"
        )
    elif compute_peak is None:
        compute_note = f"no compute peak: the {sku.name} has no {wanted} Tensor Cores"
    else:
        compute_pct = _share(flops_per_s, compute_peak.value * TERA, "FLOPs per second")
    return HardwareUse(
        sku=sku.name if sku else None,
        precision=wanted,
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        bandwidth_pct=bandwidth_pct,
        compute_pct=compute_pct,
        bandwidth_peak=bandwidth_peak,
        compute_peak=compute_peak,
        bandwidth_note=bandwidth_note,
        compute_note=compute_note,
        cpu_engine=cpu_engine,
    )
