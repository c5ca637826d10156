"""An adaptive run's page: its answer by the search's own objective, the interval, the order and
reasons of its points, and what it skipped beside what a grid would have cost."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark
from runner.schema.search import SearchCell, SearchRecord, SearchSpec, SearchStep
from tests.rows import make_benchmark

from .helpers import point, store

pytestmark = pytest.mark.django_db

SPEC = SearchSpec(objective="slo", limits={"median_e2el_ms": 5000.0})
# (seqs, burst, tok/s, median e2el ms, order, phase); 512@2000 is the fastest within 5 s.
MEASURED = (
    (512, 4000, 3020.0, 7000.0, 1, "probe"),
    (512, 2000, 3000.0, 4100.0, 2, "refine"),
    (512, 1000, 2100.0, 3900.0, 3, "refine"),
    (256, 4000, 2610.0, 8000.0, 5, "probe"),
)


def adaptive_run() -> Benchmark:
    benchmark = make_benchmark(state="succeeded", points_total=8)
    for seqs, burst, throughput, latency, order, phase in MEASURED:
        step = SearchStep(order=order, phase=phase, reason=f"why {order}")
        store(benchmark, max_num_seqs=seqs, num_requests=burst, throughput=throughput,
              median_e2el_ms=latency, update={"search": step})
    repeat = SearchStep(order=4, phase="repeat", reason="the answer point")
    store(benchmark, max_num_seqs=512, num_requests=2000, throughput=2950.0,
          median_e2el_ms=4200.0, repeat=1, update={"search": repeat})
    record = SearchRecord(
        spec=SPEC,
        cells=[SearchCell(label="seqs=256", status="pruned", reason="short", points=1,
                          engine_start_s=60.0),
               SearchCell(label="seqs=512", status="searched", reason="corner", points=4,
                          engine_start_s=60.0, answer=2950.0)],
        points_measured=5, engine_start_s=120.0, point_s=50.0, grid_points=8,
        grid_estimate_s=340.0, finished=True,
    )
    Benchmark.objects.filter(pk=benchmark.pk).update(
        plan={**benchmark.plan, "search": SPEC.model_dump(mode="json")},
        search=record.model_dump(mode="json"),
    )
    benchmark.refresh_from_db()
    return benchmark


def test_the_page_shows_the_searchs_answer_with_its_interval_and_cost(owner_client):
    benchmark = adaptive_run()
    response = owner_client.get(f"/runs/{benchmark.code}/")
    j = response.context["judgement"]
    page = response.content.decode()

    # The SLO it searched for, not the knee: the fastest point within 5 s, lowest repeat.
    assert j["shown"].method == "slo"
    assert j["shown"].key == point(benchmark, 512, 2000, repeat=1).key  # the lower repeat
    search = j["search"]
    assert search.interval.repeats == 2
    assert (round(search.interval.low), round(search.interval.high)) == (2891, 3060)
    assert [row.step.order for row in search.steps] == [1, 2, 3, 4, 5]
    assert search.share_pct == pytest.approx(50.0)
    assert "5 of the grid's 8 points, 2 of 2 engine configs started" in page
    assert 'data-status="pruned"' in page
    assert ("engine time 3 min (0.05 GPU-hours) against about 6 min (0.09 GPU-hours) for the "
            "full grid, <strong>50%</strong>") in page


def test_a_grid_run_has_no_search_section(owner_client):
    benchmark = make_benchmark(state="succeeded")
    store(benchmark, max_num_seqs=256, num_requests=1000, throughput=2000.0,
          median_e2el_ms=4000.0)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.context["judgement"]["search"] is None
    assert 'id="search"' not in response.content.decode()


def test_an_unreadable_search_record_is_said_not_hidden(owner_client):
    benchmark = adaptive_run()
    Benchmark.objects.filter(pk=benchmark.pk).update(search={"spec": "knee"})
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="search-error"' in page
    assert "the stored search record cannot be read" in page
