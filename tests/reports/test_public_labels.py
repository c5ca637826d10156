"""Engine labels on the public page: settings as they are, extra flags by name only."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from benchmarks.models import Benchmark, ExternalReference, Point
from benchmarks.storage.points import store_point
from reports.facts import public_engine_key, public_engine_label, public_point_key
from runner.schema.result import point_key
from tests import rows as factories
from tests.reports.conftest import SECRET_HOST, SWEEP, point_result
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db

TEMPLATE_PATH = "/srv/templates/customer-x.jinja"
TOKENIZER_REPO = "acme-internal/tokenizer-x"
EXTRA_ARGS = [f"--chat-template={TEMPLATE_PATH}", "--tokenizer", TOKENIZER_REPO]
# Pieces of the values: none may reach the customer in any form.
HIDDEN = (TEMPLATE_PATH, "customer-x", ".jinja", TOKENIZER_REPO, "acme-internal")


@pytest.mark.parametrize(
    ("label", "public"),
    [
        ("seqs=64", "max_num_seqs 64"),
        ("defaults", "engine defaults"),
        ("seqs=64,tokens=8192", "max_num_seqs 64, max_num_batched_tokens 8192"),
        ("seqs=4,len=1024", "max_num_seqs 4, max_model_len 1024"),
        ("seqs=8,prefix=False,kv=fp8", "max_num_seqs 8, enable_prefix_caching off, "
                                       "kv_cache_dtype fp8"),
        ("--enforce-eager", "--enforce-eager"),
        ("seqs=64,--chat-template=/srv/x.jinja", "max_num_seqs 64, --chat-template (set)"),
        ("seqs=64,--tokenizer org/x", "max_num_seqs 64, --tokenizer (set)"),
        ("seqs=8,--enforce-eager --tokenizer org/x --chat-template=/srv/a b.jinja",
         "max_num_seqs 8, --enforce-eager --tokenizer (set) --chat-template (set)"),
        ('--hf-overrides {"rope": "--scaled"}', "--hf-overrides (set)"),
    ],
)
def test_a_public_engine_label_names_flags_but_never_their_values(label, public):
    assert public_engine_label(label) == public


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("seqs=64,tokens=8192", "seqs=64,tokens=8192"),
        ("defaults", "defaults"),
        ("seqs=64,--chat-template=/srv/x.jinja", "seqs=64,--chat-template (set)"),
        ("seqs=8,--enforce-eager --tokenizer org/x --chat-template=/srv/a b.jinja",
         "seqs=8,--enforce-eager --tokenizer (set) --chat-template (set)"),
    ],
)
def test_a_public_engine_key_spells_settings_as_the_run_page_and_hides_flag_values(label, key):
    # What the report's data-config holds, compared with the run page's label by the demo.
    assert public_engine_key(label) == key


def test_a_point_key_keeps_its_load_and_repeat_and_loses_the_flag_values():
    assert (public_point_key("seqs=64,--tokenizer org/x|burst 64|r0")
            == "max_num_seqs 64, --tokenizer (set)|burst 64|r0")


def _flagged_sweep(owner) -> Benchmark:
    """The report sweep, every engine config run with a chat template file and a tokenizer."""
    node = factories.make_node(queue="node-flags", hostname=SECRET_HOST)
    benchmark = factories.make_benchmark(node=node, state="succeeded", created_by=owner,
                                         points_total=len(SWEEP))
    for seqs, requests in SWEEP:
        result = point_result(seqs, requests)
        result.engine_config = result.engine_config.model_copy(
            update={"extra_args": EXTRA_ARGS})
        result.key = point_key(result.engine_config, result.load, result.repeat)
        store_point(benchmark, result)
    return benchmark


def _flagged_point(benchmark: Benchmark, seqs: int, requests: int) -> Point:
    return Point.objects.get(benchmark=benchmark, engine_config__max_num_seqs=seqs,
                             load_label=f"burst {requests}")


def test_the_public_page_and_stored_version_show_flag_names_and_the_run_page_the_values(
        owner, owner_client):
    benchmark = _flagged_sweep(owner)
    # An SLO choice whose sentence names the next faster point by its key.
    response = owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                                 {"method": "slo", "slo_median_e2el_ms": "3000"})
    assert response.status_code == 302
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=20000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")
    report = make_report(
        benchmark, owner, baseline_point=_flagged_point(benchmark, 8, 32),
        candidate_point=_flagged_point(benchmark, 64, 32), scaling_point=None,
        scaling_reference=None, references=[reference],
        items=["headline", "comparison_table", "curves", "queue_evidence", "references"])

    stored = json.dumps(report.versions.get().content, ensure_ascii=False)
    pages = [Client().get(f"/r/{report.issued_token}/?lang={lang}").content.decode()
             for lang in ("en", "ko")]
    for text in (stored, *pages):
        for hidden in HIDDEN:
            assert hidden not in text, hidden
        assert "--chat-template (set) --tokenizer (set)" in text
    assert "max_num_seqs 64, --chat-template (set) --tokenizer (set)|burst 64|r0" in pages[0]
    run_page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert TEMPLATE_PATH in run_page and TOKENIZER_REPO in run_page
