"""Points measured before Headroom used vLLM's definitions keep their meaning, renamed.

Until 0004 a Headroom point's TTFT and E2EL counted from the intended send time and its ITL was
per token: exactly what the sched_ttft, sched_e2el and token_itl columns now hold. Those values
move there unchanged. The columns under vLLM's names are then recomputed as vLLM defines them
(from the actual send, one ITL per chunk) from the stored per-request records. TPOT is the same
under both origins ((E2EL - TTFT) / (n - 1) does not depend on where latency counts from).
Imported vllm bench points already hold vLLM's figures and are left alone.
"""

from __future__ import annotations

import numpy as np
from django.db import migrations

STATS = ("mean", "median", "std", "p90", "p95", "p99")
MOVED = {"ttft": "sched_ttft", "e2el": "sched_e2el", "itl": "token_itl"}


def _summary(values: list[float]) -> list[float | None]:
    if not values:
        return [None] * len(STATS)
    ms = np.asarray(values, dtype=float) * 1000.0
    return [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms)),
            *(float(np.percentile(ms, p)) for p in (90, 95, 99))]


def _vllm_families(blob: bytes) -> dict[str, list[float]]:
    # Decoding through the app's storage module keeps one reader of the blob format; records
    # of that era stored chunk_times of content chunks and the actual send time.
    from benchmarks.storage import columnar

    families: dict[str, list[float]] = {"ttft": [], "e2el": [], "itl": []}
    for r in columnar.decode_requests(blob):
        if r.error is not None or r.actual_send is None or not r.chunk_times:
            continue
        families["ttft"].append(r.chunk_times[0] - r.actual_send)
        families["e2el"].append(r.chunk_times[-1] - r.actual_send)
        families["itl"].extend(b - a for a, b in zip(r.chunk_times, r.chunk_times[1:]))
    return families


def forwards(apps, schema_editor) -> None:
    Point = apps.get_model("benchmarks", "Point")
    PointData = apps.get_model("benchmarks", "PointData")
    for point in Point.objects.filter(source="headroom").iterator():
        for old, new in MOVED.items():
            for stat in STATS:
                setattr(point, f"{stat}_{new}_ms", getattr(point, f"{stat}_{old}_ms"))
        data = PointData.objects.filter(point_id=point.pk).only("requests").first()
        families = _vllm_families(bytes(data.requests)) if data else {}
        for family in MOVED:
            for stat, value in zip(STATS, _summary(families.get(family, []))):
                setattr(point, f"{stat}_{family}_ms", value)
        point.notes = [*point.notes, "measured before Headroom 0005: TTFT, E2EL and ITL under "
                       "vLLM's names recomputed from the stored requests; the schedule-relative "
                       "figures moved to sched_ttft, sched_e2el and token_itl"]
        point.save()


class Migration(migrations.Migration):
    dependencies = [("benchmarks", "0004_vllm_parity_metrics")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
