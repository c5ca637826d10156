"""An adaptive run's page: its answer by the search's own objective, the interval, the order and
reasons of its points, and what it skipped beside what a grid would have cost."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark
from runner.schema.search_record import SearchRecord, SearchStep
from tests.rows import make_benchmark

from .helpers import adaptive_run, point, store

pytestmark = pytest.mark.django_db

def test_the_page_shows_the_searchs_answer_with_its_interval_and_cost(owner_client):
    benchmark = adaptive_run()
    response = owner_client.get(f"/runs/{benchmark.code}/")
    j = response.context["judgement"]
    page = response.content.decode()

    # The SLO it searched for, not the knee: the fastest point within 5 s, lowest repeat.
    assert j.shown.method == "slo"
    assert j.shown.key == point(benchmark, 512, 2000, repeat=1).key  # the lower repeat
    search = j.search
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
    assert response.context["judgement"].search is None
    assert 'id="search"' not in response.content.decode()


def test_an_unreadable_search_record_is_said_not_hidden(owner_client):
    benchmark = adaptive_run()
    Benchmark.objects.filter(pk=benchmark.pk).update(search={"spec": "knee"})
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="search-error"' in page
    assert "the stored search record cannot be read" in page


def with_record(benchmark, **changes):
    benchmark.refresh_from_db()
    record = SearchRecord.model_validate(benchmark.search)
    if "method" in changes:
        spec = record.spec.model_copy(update={"method": changes.pop("method")})
        changes["spec"] = spec
    Benchmark.objects.filter(pk=benchmark.pk).update(
        search=record.model_copy(update=changes).model_dump(mode="json"))


def test_the_page_says_what_the_search_priced_its_choices_by(owner_client):
    benchmark = adaptive_run()
    with_record(benchmark, start_prior_s=300.0, start_measured_s=60.0)
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert ("Chose by value per cost: engine start ~60 s (measured here), points by their "
            "measured wall time.") in page

    with_record(benchmark, start_measured_s=None)
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert "engine start ~5 min (from this node&#x27;s last starts)" in page

    with_record(benchmark, start_prior_s=None)
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert "engine start not known (none measured on this node)" in page


def test_a_halving_search_claims_no_cost_basis(owner_client):
    benchmark = adaptive_run()
    with_record(benchmark, method="bracket-bisect-walk/1", start_measured_s=60.0)
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="search-cost-basis"' not in page


def test_the_end_control_widens_the_answers_interval_by_the_hosts_drift(owner_client):
    benchmark = adaptive_run()
    # The answer point once more after the search, 20% below its first draw (3000 tok/s).
    control = SearchStep(order=6, phase="control", reason="the answer point again")
    store(benchmark, max_num_seqs=512, num_requests=2000, throughput=2400.0,
          median_e2el_ms=4300.0, repeat=3, update={"search": control, "end_control": True})
    with_record(benchmark, end_control_s=70.0, points_measured=6)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    search = response.context["judgement"].search
    page = response.content.decode()

    # The draws 2950, 3000 and the control 2400, widened by the 2% tolerance and the pair
    # (3000, 2400)'s spread, 600 / 2700: no repeat spread was recorded.
    widen = 0.02 + 600 / 2700
    assert search.interval.repeats == 3
    assert search.interval.low == pytest.approx(2400 * (1 - widen))
    assert search.interval.high == pytest.approx(3000 * (1 + widen))
    assert "22.2% spread between seqs=512&#x27;s first draw and its end control" in page
    assert [row.step.phase for row in search.steps][-1] == "control"
    assert "Drifted by -20.0% over the search: its answer point, seqs=512 at burst 2000" in page
    # Its start and point count in the search's engine time: 120 + 50 + 70 s.
    assert search.spent == "4 min"
    assert "The engine time counts the end control's start and point." in page
