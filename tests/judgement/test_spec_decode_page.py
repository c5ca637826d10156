"""The run page's speculative-decoding column: vLLM's draft acceptance rate and mean acceptance
length per point, shown only in runs where some point's engine ran speculative decoding."""

from __future__ import annotations

import html as html_lib

import pytest

from benchmarks.models import Benchmark
from runner.schema.samples import QueueSummary
from tests.rows import make_benchmark

from .helpers import store

pytestmark = pytest.mark.django_db

# The two-engine window of tests/runner/measure/test_spec_decode.py: 160 drafts, 320 draft
# tokens, 150 accepted (100 at the first position, 50 at the second).
SPEC = dict(spec_drafts=160.0, spec_draft_tokens=320.0, spec_accepted_tokens=150.0,
            spec_accepted_per_position={"0": 100.0, "1": 50.0})


def run_with(*queues: QueueSummary) -> Benchmark:
    benchmark = make_benchmark(state="running", points_total=len(queues))
    for seqs, queue in zip((8, 16, 32), queues, strict=False):
        store(benchmark, max_num_seqs=seqs, num_requests=64, throughput=1000.0 + seqs,
              median_e2el_ms=2000.0, update={"queue": queue})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    return benchmark


def page(client, benchmark: Benchmark) -> tuple[list[dict], str]:
    response = client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    return response.context["judgement"].rows, response.content.decode()


def test_each_point_shows_its_acceptance_rate_and_mean_acceptance_length(owner_client):
    rows, html = page(owner_client, run_with(QueueSummary(samples=20, **SPEC)))
    cell = rows[0].spec_decode
    assert cell.acceptance_rate == pytest.approx(150 / 320)
    assert cell.mean_acceptance_length == pytest.approx(1 + 150 / 160)
    assert cell.by_position == [("1", 0.625), ("2", 0.3125)]
    assert "Draft acceptance" in html
    # 46.9% of draft tokens accepted; 1.94 tokens per verification step.
    assert '<td class="num spec-decode"><span title="' in html
    assert "46.9% · 1.94</span></td>" in html
    assert ("150 of 320 draft tokens accepted over 160 drafts" in html_lib.unescape(html))
    assert "accepted by draft position 1: 62.5%, 2: 31.2%" in html_lib.unescape(html)


def test_a_run_without_speculative_decoding_has_no_column(owner_client):
    rows, html = page(owner_client, run_with(QueueSummary(samples=20)))
    assert rows[0].spec_decode is None
    assert "Draft acceptance" not in html and "spec-decode" not in html


def test_beside_a_point_that_ran_it_a_point_without_it_shows_a_dash_and_no_drafts_a_hint(
    owner_client
):
    none_drafted = QueueSummary(samples=20, spec_drafts=0.0, spec_draft_tokens=0.0,
                                spec_accepted_tokens=0.0)
    rows, html = page(owner_client, run_with(
        QueueSummary(samples=20, **SPEC), QueueSummary(samples=20), none_drafted))
    assert [r.spec_decode is None for r in rows] == [False, True, False]
    assert '<td class="num spec-decode">-</td>' in html
    assert ('<span class="hint" title="the engine ran speculative decoding but proposed no '
            'draft in this point">no drafts</span>') in html
