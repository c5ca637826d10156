"""Points stored or imported before the sampler kept its record of running while requests waited
(QueueSummary.running_while_waiting_s): the run page reads their engine samples to find it, in
one query for all of them, and never reads a sample of a point recorded with it."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

import judgement.figures
from benchmarks.models import Benchmark
from benchmarks.storage.points import store_point
from judgement.figures import figures_by_key
from runner.schema.plan import LoadSpec
from runner.schema.result import point_key
from tests.analysis.test_cap_share_from_samples import SMALL_CAP_BURST, old_point
from tests.rows import make_benchmark

pytestmark = pytest.mark.django_db

BURSTS = (32, 64, 128)


def stored_run(*, record: bool) -> Benchmark:
    """max_num_seqs 4 under three bursts, each the issue's small-cap burst."""
    benchmark = make_benchmark(state="succeeded", points_total=len(BURSTS))
    for burst in BURSTS:
        point = old_point(SMALL_CAP_BURST, record=record)
        load = LoadSpec(shape="burst", num_requests=burst)
        store_point(benchmark, point.model_copy(update={
            "load": load, "key": point_key(point.engine_config, load, 0),
            "metrics": point.metrics.model_copy(update={"completed": burst})}))
    return benchmark


def reads_of_samples(monkeypatch) -> list[int]:
    """How many points' samples each read asked for."""
    reads: list[int] = []
    real = judgement.figures.engine_samples

    def counted(points):
        reads.append(len(points))
        return real(points)

    monkeypatch.setattr(judgement.figures, "engine_samples", counted)
    return reads


def verdicts_on_the_page(client, benchmark: Benchmark) -> list:
    response = client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    return [row.verdict for row in response.context["judgement"].rows]


def test_old_points_are_judged_by_the_share_their_samples_hold_read_once(owner_client,
                                                                         monkeypatch):
    benchmark = stored_run(record=False)
    reads = reads_of_samples(monkeypatch)
    verdicts = verdicts_on_the_page(owner_client, benchmark)
    assert [v.kind for v in verdicts] == ["scheduler_cap"] * 3
    assert all("for 87.5% of the time requests waited" in v.sentence for v in verdicts)
    assert reads == [3]  # all three at once


def test_old_points_samples_come_in_one_query(django_assert_num_queries):
    points = list(stored_run(record=False).points.all())
    with django_assert_num_queries(1):
        figs, problems = figures_by_key(points)
    assert not problems
    assert [f.at_cap_share for f in figs.values()] == [7 / 8] * 3


def test_a_page_of_points_recorded_with_the_field_reads_no_samples(owner_client, monkeypatch,
                                                                   django_assert_num_queries):
    benchmark = stored_run(record=True)
    reads = reads_of_samples(monkeypatch)
    verdicts = verdicts_on_the_page(owner_client, benchmark)
    assert [v.kind for v in verdicts] == ["scheduler_cap"] * 3
    assert reads == []
    points = list(benchmark.points.all())
    with django_assert_num_queries(0):
        figures_by_key(points)


@pytest.mark.usefixtures("run_imports_inline")
def test_an_old_file_imported_with_its_samples_is_judged_as_when_it_was_measured(owner_client):
    old = old_point(SMALL_CAP_BURST)
    upload = SimpleUploadedFile("old.jsonl", (old.model_dump_json() + "\n").encode())
    assert owner_client.post("/runs/import/", {"file": upload}).status_code == 302
    (v,) = verdicts_on_the_page(owner_client, Benchmark.objects.get(source="imported"))
    assert v.kind == "scheduler_cap" and v.evidence.at_cap_share == 7 / 8
