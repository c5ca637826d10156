"""Output parity on the comparison page and in a report, from stored request records."""

from __future__ import annotations

import gettext as gettext_module
import re

import pytest
from django.conf import settings
from django.test import Client

from benchmarks.models import Comparison
from judgement.comparison_view import _kept
from judgement.vocabulary import PARITY_TEMPLATES
from runner.client.responses import token_digest
from runner.schema.plan import OUTPUT_TEXTS_KEPT, WorkloadSpec
from runner.schema.records import RequestRecord
from tests.reports.helpers import make_report
from tests.rows import make_requests

from .helpers import store, sweep

pytestmark = pytest.mark.django_db

REQUESTS = 10
KEPT = WorkloadSpec(keep_outputs=True)


def with_outputs(diverge: dict[int, int] | None = None,
                 prompts: str = "p") -> list[RequestRecord]:
    """REQUESTS completed records with 4 output ids each; diverge maps an index to the token at
    which its ids change."""
    records = []
    for record in make_requests(REQUESTS):
        ids = [100 + record.index, 5, 6, 7]
        cut = (diverge or {}).get(record.index)
        if cut is not None:
            ids = ids[:cut] + [999] * (4 - cut)
        records.append(record.model_copy(update={
            "output_ids": ids,
            "prompt_digest": token_digest([ord(c) for c in f"{prompts}{record.index}"]),
            "output_text": f"answer {record.index}{'!' if cut is not None else ''}"
            if record.index < OUTPUT_TEXTS_KEPT else None,
        }))
    return records


def stored(benchmark, seqs: int, records, workload: WorkloadSpec = KEPT):
    return store(benchmark, max_num_seqs=seqs, num_requests=64, throughput=1000.0 + seqs,
                 median_e2el_ms=500.0, update={"workload": workload, "requests": records})


def comparison_page(owner_client, baseline, candidate):
    comparison = Comparison.objects.create(name="parity", baseline_point=baseline,
                                           candidate_point=candidate)
    page = owner_client.get(f"/comparisons/{comparison.code}/")
    assert page.status_code == 200
    return page


def test_the_comparison_page_says_how_many_outputs_were_identical(owner_client):
    benchmark = sweep()
    before = stored(benchmark, 8, with_outputs())
    after = stored(benchmark, 64, with_outputs(diverge={2: 3}))
    page = comparison_page(owner_client, before, after)
    parity = page.context["parity"].parity
    assert (parity.compared, parity.identical, len(parity.diverged)) == (10, 9, 1)
    html = page.content.decode()
    assert ("Outputs identical for 9 of 10 requests compared; 1 diverged, the earliest after "
            "token 3 (median after token 3).") in html
    # 10% diverged is beyond the 1% default: flagged.
    assert "outputs changed" in html and "more than the 1.0% this installation" in html
    samples = page.context["parity"].samples
    assert [(s.index, s.identical) for s in samples] == [(0, True), (1, True), (2, False),
                                                          (3, True)]
    assert "answer 2!" in html


def test_the_tolerance_comes_from_the_settings(owner_client, settings):
    settings.HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT = 20
    benchmark = sweep()
    before = stored(benchmark, 8, with_outputs())
    after = stored(benchmark, 64, with_outputs(diverge={2: 3}))
    parity = comparison_page(owner_client, before, after).context["parity"].parity
    assert parity.tolerance_pct == 20 and not parity.beyond_tolerance
    assert "vLLM is not batch-invariant" in str(parity.notes[0])


def test_points_that_kept_no_outputs_are_said_not_compared(owner_client):
    benchmark = sweep()
    before = stored(benchmark, 8, with_outputs(), workload=WorkloadSpec())
    after = stored(benchmark, 64, with_outputs())
    html = comparison_page(owner_client, before, after).content.decode()
    assert "Outputs were not compared: the baseline did not keep its outputs" in html
    assert "Outputs identical" not in html


def test_other_prompts_are_not_called_identical(owner_client):
    benchmark = sweep()
    before = stored(benchmark, 8, with_outputs())
    after = stored(benchmark, 64, with_outputs(prompts="q"))
    page = comparison_page(owner_client, before, after)
    assert page.context["parity"].parity.different_prompts == REQUESTS
    assert all(not s.identical for s in page.context["parity"].samples)
    assert "sent different prompts for all 10" in page.content.decode()


def test_a_report_states_parity_and_ticks_the_acceptance_row(owner):
    benchmark = sweep()
    before = stored(benchmark, 8, with_outputs())
    after = stored(benchmark, 64, with_outputs())
    report = make_report(benchmark, owner, baseline_point=before, candidate_point=after,
                         scaling_point=None, scaling_reference=None,
                         items=["headline", "comparison_table"])
    html = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="parity"' in html
    assert "Outputs identical for 10 of 10 requests compared." in html
    row = re.search(r"<dt>Output parity or quality</dt><dd class=\"(\w[\w-]*)\">([^<]*)", html)
    assert row is not None and row.group(1) == "measured"
    assert "Outputs identical for 10 of 10" in row.group(2)


def test_a_report_without_kept_outputs_leaves_the_row_unmeasured(owner):
    benchmark = sweep()
    plain = WorkloadSpec()
    before = stored(benchmark, 8, make_requests(REQUESTS), workload=plain)
    after = stored(benchmark, 64, make_requests(REQUESTS), workload=plain)
    report = make_report(benchmark, owner, baseline_point=before, candidate_point=after,
                         scaling_point=None, scaling_reference=None,
                         items=["headline", "comparison_table"])
    html = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="parity"' not in html
    assert re.search(r"<dt>Output parity or quality</dt><dd class=\"not-measured\">", html)


def test_every_parity_sentence_has_a_korean_translation_with_its_placeholders():
    catalog = gettext_module.translation(
        "django", localedir=str(settings.LOCALE_PATHS[0]), languages=["ko"])._catalog
    for template in (*PARITY_TEMPLATES, "Output parity"):
        assert template in catalog, template
        assert sorted(re.findall(r"%\((\w+)\)s", catalog[template])) == \
            sorted(re.findall(r"%\((\w+)\)s", template)), template


def test_parity_reads_a_few_stored_columns_never_the_records(monkeypatch):
    from analysis.parity import KeptOutput
    from benchmarks.storage import columnar

    records = with_outputs()
    records[1] = records[1].model_copy(update={"output_ids": []})  # completed without ids
    records[3] = records[3].model_copy(  # failed: its ids are not compared
        update={"status": 500, "error": "HTTP 500", "chunk_times": [], "chunk_tokens": []})
    point = stored(sweep(), 8, records)

    def refuse(*args, **kwargs):
        raise AssertionError("parity decoded the point's records")

    monkeypatch.setattr(columnar, "decode_requests", refuse)
    outputs, texts = _kept(point)
    assert set(outputs.outputs) == set(range(REQUESTS)) - {1, 3}
    assert outputs.completed_without_ids == 1
    assert outputs.outputs[0] == KeptOutput(records[0].prompt_digest, records[0].output_ids)
    assert texts == {i: records[i].output_text for i in range(OUTPUT_TEXTS_KEPT)}
