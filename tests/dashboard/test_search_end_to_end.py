"""An adaptive sweep through the form and a real worker on the CPU engine, set up so that the
answer is known: under a burst of 64, max_num_seqs 2 and 4 are scheduler caps that 16 beats
at every load, so the knee search starts 16 alone and says why it never started the others."""

from __future__ import annotations

import pytest
from django.test import Client

from benchmarks.models import Benchmark
from runner.schema.search_record import SearchRecord, SearchStep
from tests.workers import wait_until_final

from .test_end_to_end import RUN_TIMEOUT_S, tiny_form, tiny_rows

pytestmark = [pytest.mark.engine, pytest.mark.django_db(transaction=True)]


def test_an_adaptive_sweep_starts_only_the_configs_that_can_win(
    celery_worker_queue, tiny_model_dir, owner
):
    node, checkpoint, runtime = tiny_rows(celery_worker_queue, tiny_model_dir)
    client = Client()
    client.force_login(owner)
    form = {
        **tiny_form(node, checkpoint, runtime),
        "name": "adaptive",
        "output_tokens": 64,
        "max_num_seqs": "2, 4, 16",
        "load_levels": "8, 32, 64",
        "repeats": "2",
        "search": "knee",
    }
    response = client.post("/runs/new/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    benchmark = wait_until_final(Benchmark.objects.get(), RUN_TIMEOUT_S)

    assert benchmark.state == "succeeded", (benchmark.error_type, benchmark.error_message)
    record = SearchRecord.model_validate(benchmark.search)
    cells = {cell.label: cell for cell in record.cells}
    assert record.finished
    assert cells["seqs=16"].status == "searched" and cells["seqs=16"].engine_start_s
    for smaller in ("seqs=2", "seqs=4"):
        assert (cells[smaller].status, cells[smaller].points) == ("not_started", 0)
        assert cells[smaller].engine_start_s is None
        assert cells[smaller].reason.startswith("a smaller max_num_seqs than the best config")

    points = list(benchmark.points.order_by("id"))
    steps = [SearchStep.model_validate(p.search) for p in points]
    assert [s.order for s in steps] == list(range(1, len(points) + 1))
    assert (points[0].engine_label, points[0].load_label, steps[0].phase) == (
        "seqs=16", "burst 64", "probe")
    assert record.points_measured == len(points) < record.grid_points == 18

    page = client.get(f"/runs/{benchmark.code}/").content.decode()
    assert 'id="search"' in page and 'data-status="not_started"' in page
    shown = client.get(f"/runs/{benchmark.code}/").context["judgement"].shown
    assert shown.error is None and shown.key.startswith("seqs=16|")
