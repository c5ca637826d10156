"""Every check constraint at its bounds, on whichever database Django is connected to.

Each case sets a row's fields to values the constraint allows at its edge (read back exactly),
then to values just past it (refused by the database). The same cases run on PostgreSQL inside
the test suite and on a new SQLite database in a child process with the demo's own settings
(`python -m tests.benchmarks.constraint_bounds`, which prints the failures as JSON), so a
constraint that only one backend reads, or reads differently, fails a test.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, models, transaction

LARGEST_FINITE = sys.float_info.max
REVISION = "0123456789abcdef0123456789abcdef01234567"
MOMENT = datetime(2026, 1, 1, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    """A foreign key's value: one of the rows base_rows() builds, by name."""

    name: str


@dataclass(frozen=True)
class Bound:
    """Values at the edge a constraint allows, and values just past it."""

    constraint: str
    row: str  # a key of the rows built by base_rows()
    accepted: dict[str, Any]
    refused: dict[str, Any]


def _trace(**fields: Any) -> dict[str, Any]:
    return {"prompt_source": "trace", "dataset_path": "/data/trace.jsonl", **fields}


BOUNDS: tuple[Bound, ...] = (
    Bound("node_price_complete", "node",
          {"gpu_hour_price": Decimal("0.0000"), "price_currency": "USD", "price_as_of": date(2026, 1, 1)},
          {"gpu_hour_price": Decimal("-0.0001"), "price_currency": "USD", "price_as_of": date(2026, 1, 1)}),
    Bound("node_price_complete", "node",
          {"gpu_hour_price": Decimal("2.5000"), "price_currency": "USD", "price_as_of": date(2026, 1, 1)},
          {"gpu_hour_price": Decimal("2.5000"), "price_currency": "", "price_as_of": date(2026, 1, 1)}),
    Bound("node_dcgm_url_is_http", "node",
          {"dcgm_exporter_url": "http://gpu-a:9400/metrics"},
          {"dcgm_exporter_url": "file:///etc/passwd"}),
    Bound("runtime_digest_sha256", "runtime",
          {"digest": "sha256:" + "0" * 64}, {"digest": "md5:0"}),
    Bound("runtime_engine_known", "runtime", {"engine": "sglang"}, {"engine": "llama.cpp"}),
    Bound("runtime_other_engine_named", "runtime",
          {"engine": "other", "other_engine": "llama.cpp"}, {"engine": "other", "other_engine": ""}),
    Bound("runtime_other_engine_named", "runtime",
          {"engine": "vllm", "other_engine": ""}, {"engine": "vllm", "other_engine": "llama.cpp"}),
    Bound("checkpoint_revision_is_commit", "checkpoint",
          {"revision": REVISION}, {"revision": "main"}),
    Bound("engine_start_seconds_nonneg", "engine_start", {"seconds": 0.0}, {"seconds": -1e-9}),
    Bound("endpoint_url_is_http", "endpoint",
          {"base_url": "https://gpu-a.lab:8000"}, {"base_url": "javascript:alert(1)"}),
    Bound("workload_input_range", "workload",
          {"input_tokens_min": 64, "input_tokens_max": 64},
          {"input_tokens_min": 64, "input_tokens_max": 63}),
    Bound("workload_output_pos", "workload", {"output_tokens": 1}, {"output_tokens": 0}),
    Bound("workload_requests_pos", "workload", {"request_count": 1}, {"request_count": 0}),
    Bound("workload_temp_nonneg", "workload", {"temperature": 0.0}, {"temperature": -1e-9}),
    Bound("workload_dataset_has_path", "workload",
          {"prompt_source": "dataset", "dataset_path": "/data/prompts.jsonl"},
          {"prompt_source": "dataset", "dataset_path": ""}),
    Bound("workload_thinking_on_chat", "workload",
          {"thinking": True, "endpoint": "chat"}, {"thinking": True, "endpoint": "completions"}),
    Bound("workload_parity_greedy", "workload",
          {"keep_outputs": True, "temperature": 0.0}, {"keep_outputs": True, "temperature": 0.5}),
    # The bound that once broke `make demo`: the largest finite span is kept, infinity is not.
    Bound("workload_trace_span", "workload",
          _trace(trace_span_s=LARGEST_FINITE), _trace(trace_span_s=float("inf"))),
    Bound("workload_trace_span", "workload",
          _trace(trace_span_s=5e-324), _trace(trace_span_s=0.0)),
    Bound("workload_trace_span", "workload",
          _trace(trace_span_s=None), {"prompt_source": "synthetic", "trace_span_s": 60.0}),
    Bound("workload_trace_longer", "workload",
          _trace(trace_longer="refuse"), {"prompt_source": "synthetic", "trace_longer": "refuse"}),
    Bound("workload_turns_max_conversation", "workload",
          {"prompt_source": "conversation", "dataset_path": "/data/chats.jsonl",
           "conversation_turns_max": 1},
          {"prompt_source": "conversation", "dataset_path": "/data/chats.jsonl",
           "conversation_turns_max": 0}),
    Bound("benchmark_state_known", "benchmark", {"state": "cancelled"}, {"state": "paused"}),
    Bound("benchmark_progress_0_1", "benchmark", {"progress": 1.0}, {"progress": 1.0000001}),
    Bound("benchmark_progress_0_1", "benchmark", {"progress": 0.0}, {"progress": -1e-9}),
    Bound("benchmark_points_done_le_total", "benchmark",
          {"points_done": 4, "points_total": 4}, {"points_done": 5, "points_total": 4}),
    Bound("benchmark_launched_is_complete", "benchmark",
          {"source": "imported", "node": None}, {"source": "launched", "node": None}),
    Bound("benchmark_finished_only_when_final", "benchmark",
          {"state": "failed", "finished_at": MOMENT},
          {"state": "running", "finished_at": MOMENT}),
    Bound("benchmark_baseline_succeeded", "benchmark",
          {"state": "succeeded", "accepted_baseline": True},
          {"state": "cancelled", "accepted_baseline": True}),
    Bound("benchmark_baseline_launched", "benchmark",
          {"source": "launched", "state": "succeeded", "accepted_baseline": True},
          {"source": "imported", "state": "succeeded", "accepted_baseline": True}),
    Bound("point_duration_nonneg", "point", {"duration": 0.0}, {"duration": -1e-9}),
    Bound("capacity_plan_comparison_with_its_scope", "capacity_plan",
          {"scope": "comparison", "comparison": Row("comparison")},
          {"scope": "run", "comparison": Row("comparison")}),
    Bound("capacity_plan_check_names_its_config", "capacity_plan",
          {"check_run": Row("benchmark"), "check_config": "seqs=4"},
          {"check_run": Row("benchmark"), "check_config": ""}),
    Bound("point_replicas_pos", "point", {"replicas": 1}, {"replicas": 0}),
    Bound("caveat_exactly_one_target", "caveat",
          {"benchmark": Row("benchmark"), "point": None}, {"benchmark": Row("benchmark"), "point": Row("point")}),
    Bound("reference_value_pos", "reference", {"value": 5e-324}, {"value": 0.0}),
    Bound("reference_unlisted_after_recorded", "reference",
          {"recorded_on": date(2026, 1, 1), "no_longer_listed_on": date(2026, 1, 1)},
          {"recorded_on": date(2026, 1, 1), "no_longer_listed_on": date(2025, 12, 31)}),
    Bound("reference_url_http", "reference",
          {"url": "HTTPS://vendor.example/figures"}, {"url": "data:text/html,x"}),
    Bound("reference_revision_is_commit", "reference",
          {"checkpoint_revision": REVISION}, {"checkpoint_revision": REVISION[:39] + "g"}),
    Bound("reference_request_count_pos", "reference", {"request_count": 1}, {"request_count": 0}),
    Bound("reference_latency_with_statistic", "reference",
          {"latency_ms": 5e-324, "latency_statistic": "median"},
          {"latency_ms": 0.0, "latency_statistic": "median"}),
    Bound("reference_latency_with_statistic", "reference",
          {"latency_ms": 12000.0, "latency_statistic": "mean"},
          {"latency_ms": 12000.0, "latency_statistic": ""}),
    Bound("operating_point_method_known", "operating_point",
          {"method": "pareto"}, {"method": "best"}),
    Bound("operating_point_override_has_reason", "operating_point",
          {"method": "override", "reason": " x "}, {"method": "override", "reason": " \t\n"}),
    Bound("comparison_two_different_points", "comparison",
          {"baseline_point": Row("point"), "candidate_point": Row("other_point")},
          {"baseline_point": Row("point"), "candidate_point": Row("point")}),
    Bound("audit_event_action_known", "audit_event",
          {"action": "baseline"}, {"action": "deleted"}),
    Bound("result_import_state_known", "result_import", {"state": "failed"}, {"state": "lost"}),
    Bound("result_import_run_only_when_succeeded", "result_import",
          {"state": "succeeded", "benchmark": Row("benchmark")},
          {"state": "running", "benchmark": Row("benchmark")}),
    Bound("result_import_finished_only_when_final", "result_import",
          {"state": "succeeded", "finished_at": MOMENT},
          {"state": "queued", "finished_at": MOMENT}),
    Bound("report_language_known", "report", {"language": "ko"}, {"language": "fr"}),
    Bound("report_two_different_points", "report",
          {"baseline_point": Row("point"), "candidate_point": Row("other_point")},
          {"baseline_point": Row("point"), "candidate_point": Row("point")}),
    Bound("report_scaling_has_reference", "report",
          {"scaling_point": Row("other_point"), "scaling_reference": Row("point")},
          {"scaling_point": Row("other_point"), "scaling_reference": None}),
    Bound("report_expires_after_created", "report",
          {"created_at": MOMENT, "expires_at": MOMENT + timedelta(microseconds=1)},
          {"created_at": MOMENT, "expires_at": MOMENT - timedelta(days=1)}),
    Bound("report_version_from_one", "report_version", {"number": 1}, {"number": 0}),
    Bound("report_version_language_known", "report_version",
          {"language": "en"}, {"language": "de"}),
)


def check_constraint_names() -> set[str]:
    """Every CheckConstraint the project's models declare: each needs a case above."""
    from django.apps import apps

    names = set()
    for label in ("benchmarks", "reports"):
        for model in apps.get_app_config(label).get_models():
            names |= {c.name for c in model._meta.constraints
                      if isinstance(c, models.CheckConstraint)}
    return names


def base_rows() -> dict[str, models.Model]:
    """One valid row of every model that has a check constraint, and two points to refer to.

    The models are imported here: run as a script, this module is imported before django.setup().
    """
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    from benchmarks.models import (
        AuditEvent,
        CapacityPlan,
        Caveat,
        Comparison,
        Endpoint,
        EngineStart,
        ExternalReference,
        OperatingPoint,
        ResultImport,
    )
    from benchmarks.storage.points import store_point
    from reports.models import Report, ReportVersion
    from runner.schema.engine_config import EngineConfig
    from tests import factories
    from tests import rows as rows

    user = get_user_model().objects.create_user("bounds", password="bounds-password")
    node = rows.make_node()
    benchmark = rows.make_benchmark(node)
    point = store_point(benchmark, factories.point_result())
    other = store_point(benchmark, factories.point_result(engine_config=EngineConfig(max_num_seqs=8)))
    reference = ExternalReference.objects.create(
        source="vendor", url="https://vendor.example/", recorded_on=date(2026, 1, 1), value=1000.0,
        gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out",
    )
    report = Report.objects.create(title="t", benchmark=benchmark, baseline_point=other,
                                   candidate_point=point, items=[], created_by=user)
    runtime, checkpoint = rows.make_runtime(), rows.make_checkpoint()
    return {
        "node": node,
        "runtime": runtime,
        "checkpoint": checkpoint,
        "endpoint": Endpoint.objects.create(name="bounds", base_url="http://gpu-a.lab:8000",
                                            served_model="m", node=node, checkpoint=checkpoint,
                                            runtime=runtime),
        "engine_start": EngineStart.objects.create(node=node, checkpoint=checkpoint, seconds=60.0,
                                                   started_at=MOMENT),
        "workload": rows.make_workload(),
        "benchmark": benchmark,
        "point": point,
        "other_point": other,
        "caveat": Caveat.objects.create(point=point, kind="scope", code="bounds", text="t"),
        "reference": reference,
        "operating_point": OperatingPoint.objects.create(benchmark=benchmark, method="knee",
                                                         point=point),
        "comparison": Comparison.objects.create(name="c", baseline_point=other,
                                                candidate_point=point),
        "audit_event": AuditEvent.objects.create(
            action="launched", target_type=ContentType.objects.get_for_model(benchmark),
            target_id=benchmark.pk, target_label="t"),
        "result_import": ResultImport.objects.create(file_name="f.jsonl", size=1),
        "report": report,
        "report_version": ReportVersion.objects.create(report=report, number=1, language="en",
                                                       content={}),
        "capacity_plan": CapacityPlan.objects.create(name="c", benchmark=benchmark, inputs={},
                                                     outputs={}, met=True),
    }


def _values(fields: dict[str, Any], rows: dict[str, models.Model]) -> dict[str, Any]:
    return {name: rows[value.name] if isinstance(value, Row) else value
            for name, value in fields.items()}


def _set(row: models.Model, values: dict[str, Any]) -> None:
    type(row)._default_manager.filter(pk=row.pk).update(**values)


def _read_back(row: models.Model, values: dict[str, Any]) -> dict[str, Any]:
    stored = type(row)._default_manager.get(pk=row.pk)
    return {name: getattr(stored, name) for name in values}


def check_bounds() -> list[str]:
    """What went wrong, one sentence a case; empty when every bound holds on this database."""
    rows = base_rows()
    return [failure for bound in BOUNDS for failure in _check(bound, rows)]


def _check(bound: Bound, rows: dict[str, models.Model]) -> list[str]:
    row = rows[bound.row]
    accepted, refused = _values(bound.accepted, rows), _values(bound.refused, rows)
    failures = []
    with transaction.atomic():
        try:
            with transaction.atomic():
                _set(row, accepted)
        except IntegrityError as exc:
            return [f"{bound.constraint}: {bound.accepted} was refused: {exc}"]
        if (back := _read_back(row, accepted)) != accepted:
            failures.append(f"{bound.constraint}: {bound.accepted} read back as {back}")
        try:
            with transaction.atomic():
                _set(row, refused)
            failures.append(f"{bound.constraint}: {bound.refused} was not refused")
        except IntegrityError as exc:
            if bound.constraint not in str(exc):
                failures.append(f"{bound.constraint}: {bound.refused} refused by another rule: {exc}")
        transaction.set_rollback(True)  # the next case starts from the valid row
    return failures


def main(check: Callable[[], list[str]] = check_bounds) -> None:
    import django

    django.setup()
    with transaction.atomic():
        failures = check()
        transaction.set_rollback(True)
    print(json.dumps({"failures": failures, "constraints": sorted(check_constraint_names())}))


if __name__ == "__main__":
    main()
