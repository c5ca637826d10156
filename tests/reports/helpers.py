from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.models import Benchmark, Point
from benchmarks.storage.points import store_point
from reports import publishing
from reports.models import Item, Report, ReportCaveat
from runner.schema.plan import LoraShare, WorkloadSpec
from tests.reports.conftest import point, point_result

ALL_ITEMS = list(Item.values)


def make_report(benchmark: Benchmark, owner, *, publish: bool = True, **fields: Any) -> Report:
    """A report as the build form leaves it: saved with its caveats and version 1 published
    (publish=False: a report from before versions, frozen when its link is first opened). Its
    issued_token is the token of that link, which the database does not keep."""
    caveats = fields.pop("caveats", [])
    references = fields.pop("references", [])
    defaults: dict[str, Any] = {
        "title": "Scheduling settings: 2.3x output throughput",
        "language": "en",
        "benchmark": benchmark,
        "baseline_point": lambda: point(benchmark, 8, 32),
        "candidate_point": lambda: point(benchmark, 64, 32),
        "scaling_point": lambda: point(benchmark, 64, 32, replicas=2),
        "scaling_reference": lambda: point(benchmark, 64, 32),
        "items": ALL_ITEMS,
        "created_by": owner,
    }
    # The default points are looked up only when not given: another sweep may lack them.
    for name, value in defaults.items():
        if name not in fields:
            fields[name] = value() if callable(value) else value
    report = Report(**fields)
    report.issue_token()  # report.issued_token: its link's token, as the build page shows it
    report.save()
    report.references.set(references)
    for position, text in enumerate(caveats):
        ReportCaveat.objects.create(report=report, position=position, kind="scope", text=text)
    if publish:
        publishing.publish(report, owner)
    return report


def store_ladder(benchmark: Benchmark, seqs: int,
                 levels: Sequence[tuple[int, float, float]]) -> list[Point]:
    """One engine config's load ladder, stored: (requests, output tokens/s, median latency ms)
    per load level."""
    return [store_point(benchmark, point_result(seqs, requests, throughput=tps,
                                                median_e2el_ms=e2el))
            for requests, tps, e2el in levels]


def drafting_lora_sides(benchmark: Benchmark) -> dict[str, Any]:
    """A report's sides where only the after side ran speculative decoding (160 drafts, 320
    draft tokens, 150 accepted) and spread its 4 requests over adapters alpha (3) and beta (1)."""
    before = store_point(benchmark, point_result(8, 32, throughput=20000.0))
    result = point_result(64, 32, throughput=40000.0, workload=WorkloadSpec(
        input_tokens_min=63, input_tokens_max=66, output_tokens=256,
        lora_split=[LoraShare(name="alpha", weight=3), LoraShare(name="beta", weight=1)]))
    result.queue = result.queue.model_copy(update={
        "spec_drafts": 160.0, "spec_draft_tokens": 320.0, "spec_accepted_tokens": 150.0})
    result.requests = [r.model_copy(update={"adapter": name})
                       for r, name in zip(result.requests, ["alpha", "alpha", "beta", "alpha"],
                                          strict=True)]
    after = store_point(benchmark, result)
    return {"baseline_point": before, "candidate_point": after, "scaling_point": None,
            "scaling_reference": None}
