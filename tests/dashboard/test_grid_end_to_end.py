"""A two-axis engine-config grid through the form and a real worker on the CPU engine.

max_num_seqs 4, 16 x max_num_batched_tokens 256, 2048: four engine starts (about a minute
each here), one small burst each, then the run page's curves and "what the sweep changed".
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from benchmarks.models import Benchmark
from tests.workers import wait_until_final

from .test_end_to_end import RUN_TIMEOUT_S, tiny_form, tiny_rows

pytestmark = [pytest.mark.engine, pytest.mark.django_db(transaction=True)]

GRID = ["seqs=4,tokens=256", "seqs=4,tokens=2048", "seqs=16,tokens=256", "seqs=16,tokens=2048"]


def test_a_two_axis_grid_runs_every_combination_and_the_page_names_each_axis(
    celery_worker_queue, tiny_model_dir, owner
):
    node, checkpoint, runtime = tiny_rows(celery_worker_queue, tiny_model_dir)
    client = Client()
    client.force_login(owner)
    # 32 requests of 128 tokens: a few seconds behind 4 sequences, long enough for samples.
    form = {
        **tiny_form(node, checkpoint, runtime),
        "name": "grid",
        "output_tokens": 128,
        "request_count": 32,
        "load_levels": "32",
        "max_num_seqs": "4, 16",
        "max_num_batched_tokens": "256, 2048",
        "end_control": "off",  # a fifth engine start would show nothing this test reads
    }
    response = client.post("/runs/new/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    benchmark = wait_until_final(Benchmark.objects.get(), 2 * RUN_TIMEOUT_S)

    assert benchmark.state == "succeeded", (benchmark.error_type, benchmark.error_message)
    points = {p.engine_label: p for p in benchmark.points.all()}
    assert sorted(points) == sorted(GRID)
    assert all(p.valid and p.completed == 32 for p in points.values())

    html = client.get(f"/runs/{benchmark.code}/").content.decode()
    figure = json.loads(re.search(
        r'<script id="throughput-data" type="application/json">(.*?)</script>', html, re.S
    ).group(1))
    names = {trace["name"] for trace in figure["traces"]}
    assert sorted(names, key=GRID.index) == GRID, "one line per engine config"
    # Steps along one axis, the other held where it was.
    assert "raising max_num_batched_tokens from 256 to 2048 (at max_num_seqs 4)" in html
    assert "raising max_num_seqs from 4 to 16 (at max_num_batched_tokens 256)" in html
    assert "raising max_num_seqs from 4 to 16 (at max_num_batched_tokens 2048)" in html
