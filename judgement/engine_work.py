"""A point's distance to its GPUs' memory-bandwidth and compute peaks, and its prefix-cache hit
rate, as the run page shows them beside its throughput."""

from __future__ import annotations

from dataclasses import dataclass

from analysis import hardware
from analysis.types import PointFigures


@dataclass(frozen=True)
class Share:
    """One "% of peak" cell: the share (None when there is none), the achieved rate as text,
    a short word for the cell when there is no share, and the full why or the peak's source."""

    pct: float | None
    achieved: str | None
    short: str | None
    detail: str


@dataclass(frozen=True)
class EngineWork:
    """What the run page shows beside a point's throughput: its GPUs' distance to their peaks
    (per GPU) and the share of prompt tokens the prefix cache held."""

    bandwidth: Share
    compute: Share
    prefix_cache_hit_rate: float | None
    prefix_cache_note: str | None
    cpu_engine: bool = False

    @property
    def has_gpu_figure(self) -> bool:
        """A share of a peak, or a GPU's own estimate: what the two % of peak columns show. A
        CPU engine has neither a GPU peak nor a GPU."""
        return any(share.pct is not None or (share.achieved is not None and not self.cpu_engine)
                   for share in (self.bandwidth, self.compute))


def _rate_text(value: float | None, unit: str, cpu_engine: bool) -> str | None:
    """1.23e12 B/s -> "1.23 TB/s per GPU"; smaller rates in G, as a CPU engine's are, which
    are the engine's own (it has no GPU)."""
    if value is None:
        return None
    scale, prefix = (1e12, "T") if value >= 1e12 else (1e9, "G")
    return f"{value / scale:.3g} {prefix}{unit} {'on the CPU' if cpu_engine else 'per GPU'}"


def _share(pct: float | None, achieved: str | None, peak: hardware.Peak | None, peak_unit: str,
           note: str | None, sku: str | None) -> Share:
    if pct is not None and peak is not None:
        return Share(pct=pct, achieved=achieved, short=None,
                     detail=f"{achieved} of the {sku}'s {peak.value:,g} {peak_unit}: "
                            f"{peak.source.text()}")
    why = note or "no peak: not judged"
    # Every note reads "<what is missing>: <why>" (analysis.hardware).
    return Share(pct=None, achieved=achieved, short=why.split(":", 1)[0], detail=why)


def engine_work(fig: PointFigures | None) -> EngineWork | None:
    """The point's % of memory-bandwidth and compute peak and its prefix-cache hit rate, each
    with what it rests on; None for a point whose figures could not be read."""
    if fig is None or fig.hardware is None:
        return None
    hw = fig.hardware
    precision = f"{hw.precision} " if hw.precision else ""
    return EngineWork(
        bandwidth=_share(hw.bandwidth_pct, _rate_text(hw.bytes_per_s, "B/s", hw.cpu_engine),
                         hw.bandwidth_peak, "TB/s", hw.bandwidth_note, hw.sku),
        compute=_share(hw.compute_pct, _rate_text(hw.flops_per_s, "FLOP/s", hw.cpu_engine),
                       hw.compute_peak, f"dense {precision}TFLOPS", hw.compute_note, hw.sku),
        prefix_cache_hit_rate=fig.prefix_cache_hit_rate,
        prefix_cache_note=None if fig.prefix_cache_hit_rate is not None else (
            "the engine reported no prefix-cache lookups for this point"),
        cpu_engine=hw.cpu_engine,
    )
