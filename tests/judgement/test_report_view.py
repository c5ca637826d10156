"""report_view: a report's every value, label and sentence in one call, decided from the stored
rows; the report only writes it (reports.wording.say)."""

from __future__ import annotations

from datetime import date

import pytest

from benchmarks.models import Benchmark, ExternalReference, Point
from benchmarks.storage.points import store_point
from judgement.report_method import GPU_LINES
from judgement.report_phrases import AFTER, BEFORE, Figure, Phrase, joined, seconds
from judgement.report_view import SCALING_CPU, ReportAsk, report_view
from runner.schema.plan import WorkloadSpec
from tests import rows as factories
from tests.reports.conftest import make_sweep, point, point_result

pytestmark = pytest.mark.django_db

SPEC_1000 = WorkloadSpec(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)
EVERY_ITEM = frozenset({"headline", "comparison_table", "curves", "queue_evidence",
                        "node_scaling", "references", "fleet"})


def _ask(benchmark: Benchmark, baseline: Point, candidate: Point, *,
         node: Point | None = None, reference: Point | None = None,
         references: list[ExternalReference] | None = None,
         shows: frozenset[str] = EVERY_ITEM) -> ReportAsk:
    return ReportAsk(benchmark=benchmark, baseline=baseline, candidate=candidate,
                     scaling_point=node, scaling_reference=reference,
                     references=references or [], capacity_plan=None, shows=shows,
                     today=date(2026, 12, 1))


def test_the_headline_holds_the_stored_points_figures_and_which_sentence_says_them(owner):
    sweep = make_sweep(owner, node_run=False)
    before, after = point(sweep, 8, 32), point(sweep, 64, 32)
    view = report_view(_ask(sweep, before, after))
    headline = view.headline
    assert headline is not None
    # Both sides ran a CPU engine: each label is one whole label that says so.
    assert headline.baseline.label == Phrase("Before (CPU engine)")
    assert headline.baseline.output_throughput == before.output_throughput == 18012.4
    assert headline.candidate.throughput == Figure(after.output_throughput)
    assert headline.ratio == Figure(pytest.approx(41873.6 / 18012.4), "ratio")
    # 5.0 s -> 2.5 s: latency fell, said as the falling sentence with both stored medians.
    assert headline.latency_sentence == Phrase(
        "Median request latency fell from %(before)s to %(after)s.",
        {"before": seconds(before.median_e2el_ms), "after": seconds(after.median_e2el_ms)})
    assert headline.spec_sentence is None
    # Only what the report shows is judged: no node run was asked for.
    assert view.scaling is not None and view.scaling.missing == Phrase(
        "No node run was chosen for this report.")


def test_across_specs_the_view_has_no_ratio_only_the_sentence_that_says_why(owner):
    sweep = make_sweep(owner, node_run=False)
    other = store_point(sweep, point_result(16, 32, throughput=18000.0, median_e2el_ms=8000.0,
                                            workload=SPEC_1000))
    view = report_view(_ask(sweep, other, point(sweep, 64, 32)))
    assert view.headline is not None and view.headline.ratio is None
    assert view.headline.spec_sentence == Phrase(
        "The input/output specs differ (%(before)s against %(after)s): no ratio or percentage "
        "is given.", {"before": "1000 in / 1000 out", "after": "63-66 in / 256 out"})
    assert view.table is not None
    tuning = view.table[0]
    assert tuning.shows == joined([view.headline.spec_sentence, view.headline.latency_sentence])


def test_items_left_out_are_not_judged(owner):
    sweep = make_sweep(owner, node_run=False)
    view = report_view(_ask(sweep, point(sweep, 8, 32), point(sweep, 64, 32),
                            shows=frozenset({"curves"})))
    assert view.headline is None and view.table is None and view.queue is None
    assert view.scaling is None and view.references is None and view.worth == []
    assert view.curve is not None
    # The curve's operating point is the run page's: the stored points of its single replicas.
    assert view.sources["curve_points"] == sorted(
        p.pk for p in sweep.points.filter(replicas=1))


def test_node_scaling_says_the_node_runs_own_window_and_counts(owner):
    sweep = make_sweep(owner)
    node, reference = point(sweep, 64, 32, replicas=2), point(sweep, 64, 32)
    view = report_view(_ask(sweep, point(sweep, 8, 32), reference, node=node,
                            reference=reference))
    scaling = view.scaling
    assert scaling is not None and scaling.sentence is not None
    # A CPU engine's node run: the whole sentence that says so, not a clause glued on.
    assert scaling.sentence.msgid == SCALING_CPU
    assert scaling.sentence.values["n"] == "2"
    assert scaling.sentence.values["node"] == Figure(80000.0)
    facts = dict((label.msgid, value) for label, value in scaling.facts)
    assert facts["Requests completed / failed"] == joined(
        [Figure(node.completed), Figure(node.failed)], " / ")
    # The methodology adds the node run as a third side.
    hardware = view.methodology[0]
    assert hardware.label == Phrase("Hardware")
    assert [side.msgid for side, _value in hardware.values] == ["Before", "After", "Node run"]


def _gpu_point(benchmark: Benchmark, seqs: int, *, tp: int = 1, memory: bool = True,
               driver: bool = True, throughput: float = 20000.0) -> Point:
    result = point_result(seqs, 32, launch_style="serve", host_gpus=8,
                          tensor_parallel_size=tp, throughput=throughput,
                          median_e2el_ms=3000.0)
    hardware = result.provenance.hardware.model_copy(update={
        "gpu_memory_mib": 143771 if memory else None,
        "driver_version": "570.1" if driver else None, "cuda_version": "12.8" if driver else None})
    result.provenance = result.provenance.model_copy(update={"hardware": hardware})
    return store_point(benchmark, result)


def test_the_hardware_line_is_one_whole_sentence_for_the_facts_each_side_recorded(owner):
    benchmark = factories.make_benchmark(node=factories.make_node(queue="node-gpu"),
                                         state="succeeded", created_by=owner)
    before = _gpu_point(benchmark, 8, memory=True, driver=False)
    after = _gpu_point(benchmark, 64, tp=2, memory=False, driver=True, throughput=40000.0)
    view = report_view(_ask(benchmark, before, after, shows=frozenset({"headline"})))
    (_b, before_line), (_a, after_line) = view.methodology[0].values
    # The host has 8 GPUs, more than either side used: one whole sentence around each line.
    for line, used, facts in ((before_line, "1", (True, False)), (after_line, "2", (False, True))):
        assert isinstance(line, Phrase)
        assert line.msgid == "%(hardware)s; the host has %(count)s GPUs"
        assert line.values["count"] == "8"
        inner = line.values["hardware"]
        assert isinstance(inner, Phrase) and inner.msgid == GPU_LINES[facts]
        assert inner.values["count"] == used and inner.values["gpu"] == "NVIDIA H200"
    assert view.cpu_engine is False
    assert view.headline is not None and view.headline.baseline.label == BEFORE
    assert view.headline.candidate.label == AFTER


def test_a_reference_is_judged_against_the_report_point_of_its_own_spec(owner):
    sweep = make_sweep(owner, node_run=False)
    same = ExternalReference.objects.create(
        source="Vendor", url="https://vendor.example/a", value=20000.0,
        recorded_on=date(2025, 3, 1), gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")
    other = ExternalReference.objects.create(
        source="Vendor 1k", url="https://vendor.example/b", value=9000.0,
        recorded_on=date(2025, 3, 1), gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    after = point(sweep, 64, 32)
    view = report_view(_ask(sweep, point(sweep, 8, 32), after, references=[same, other]))
    assert view.references is not None
    matched, unmatched = view.references
    # The "after" point is compared first: 41,873.6 / 20,000.
    assert matched.ratio == Figure(pytest.approx(after.output_throughput / 20000.0), "ratio")
    assert matched.local_label == Phrase("After: %(config)s",
                                         {"config": Figure(after.engine_label, "engine")})
    assert unmatched.ratio is None and unmatched.no_match is not None
    assert view.sources["references"] == {str(same.pk): after.pk, str(other.pk): None}
    # Each line is one whole sentence, the CPU engine said inside it.
    assert matched.dated == Phrase("Recorded on %(recorded)s.",
                                   {"recorded": Figure(date(2025, 3, 1), "day")})
    assert matched.figures.msgid == ("Reference: %(value)s %(unit)s (%(spec)s); %(local)s: "
                                     "%(local_value)s %(unit)s (CPU engine) (%(ratio)s, "
                                     "%(change)s)")
    assert matched.figures.values["ratio"] == matched.ratio
    assert matched.figures.values["change"] == matched.difference
    assert unmatched.figures.msgid == "Reference: %(value)s %(unit)s (%(spec)s)"
    after.provenance["engine"]["launch_style"] = "docker"
    after.provenance["hardware"].update(gpu_count=1, gpu_name="NVIDIA H200")
    after.save(update_fields=["provenance"])
    view = report_view(_ask(sweep, point(sweep, 8, 32), after, references=[same]))
    assert view.references is not None
    (on_gpu,) = view.references
    assert on_gpu.figures.msgid == ("Reference: %(value)s %(unit)s (%(spec)s); %(local)s: "
                                    "%(local_value)s %(unit)s (%(ratio)s, %(change)s)")
    assert on_gpu.figures.values["ratio"] == on_gpu.ratio


def test_it_is_asked_for_exactly_the_items_a_report_can_show():
    from judgement import report_view as module
    from reports.models import Item

    asked = {module.HEADLINE, module.COMPARISON_TABLE, module.CURVES, module.QUEUE_EVIDENCE,
             module.NODE_SCALING, module.REFERENCES, module.FLEET}
    assert asked == set(Item.values) == EVERY_ITEM
