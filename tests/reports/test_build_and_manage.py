"""Engineer pages: build a report (field errors on the field at fault), preview, list, revoke."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from analysis.caveats import HEADROOM_IMPORT_TEXT
from benchmarks.models import Caveat, Comparison, ExternalReference
from benchmarks.storage import imports
from reports.models import Report, ReportVersion, token_digest
from tests.reports.conftest import point, point_result
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def _form(benchmark, **overrides):
    data = {
        "title": "Tuning result",
        "language": "ko",
        "items": ["headline", "comparison_table", "curves", "queue_evidence"],
        "baseline_point": point(benchmark, 8, 32).pk,
        "candidate_point": point(benchmark, 64, 32).pk,
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def _shown_link(response) -> str:
    """The token of the link the page after building shows (the only time it is shown)."""
    (token,) = re.findall(r'value="http://testserver/r/([^/"]+)/"', response.content.decode())
    return token


def test_the_build_pages_need_a_login(sweep, owner):
    report = make_report(sweep, owner)
    for url in (f"/runs/{sweep.code}/report/", "/reports/", f"/reports/{report.code}/"):
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_engineer_builds_a_report_and_is_shown_its_link_once(sweep, owner_client):
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(sweep))
    report = Report.objects.get()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert report.language == "ko" and report.benchmark == sweep
    assert report.items == ["headline", "comparison_table", "curves", "queue_evidence"]
    body = response.content.decode()
    token = _shown_link(response)
    assert token_digest(token) == report.token_digest
    assert f'href="/reports/{report.code}/?version=1"' in body
    assert "결과" in Client().get(f"/r/{token}/").content.decode()
    preview = owner_client.get(f"/reports/{report.code}/")
    assert preview.status_code == 200 and token not in preview.content.decode()


def test_the_cpu_engine_caveat_is_always_included(sweep, owner_client):
    owner_client.post(f"/runs/{sweep.code}/report/", _form(sweep))
    report = Report.objects.get()
    assert list(report.caveats.values_list("code", flat=True)) == ["cpu-engine"]


def test_a_napping_clients_caveat_cannot_be_left_out_and_reaches_the_customer(sweep, owner_client):
    candidate = point(sweep, 64, 32)
    text = "The client napped 100 µs on idle event-loop passes instead of waiting."
    Caveat.objects.create(point=candidate, kind="method", code="client-nap", text=text)
    form = owner_client.get(f"/runs/{sweep.code}/report/").context["form"]
    assert all("client-nap" not in label for _, label in form.fields["caveats"].choices)
    assert "client-nap," in form.fields["caveats"].help_text
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(sweep))
    report = Report.objects.get()
    assert list(report.caveats.values_list("code", flat=True)) == ["cpu-engine", "client-nap"]
    assert html.escape(text) in Client().get(f"/r/{_shown_link(response)}/").content.decode()


def test_chosen_and_written_caveats_are_copied_onto_the_report(sweep, owner_client):
    caveat = Caveat.objects.create(benchmark=sweep, kind="scope", code="short-prompts",
                                   text="Short prompts only.")
    response = owner_client.post(
        f"/runs/{sweep.code}/report/",
        _form(sweep, caveats=[caveat.pk], extra_caveats="One more limit.\n\n"))
    report = Report.objects.get()
    assert [c.text for c in report.caveats.all()][1:] == ["Short prompts only.", "One more limit."]
    caveat.text = "Edited later in the admin."
    caveat.save()
    assert "Short prompts only." in Client().get(f"/r/{_shown_link(response)}/").content.decode()


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"items": []}, "items"),
        ({"items": ["headline", "nonsense"]}, "items"),
        ({"candidate_point": "same"}, "candidate_point"),
        ({"items": ["headline", "node_scaling"]}, "scaling_point"),
        ({"items": ["headline", "references"]}, "references"),
        ({"expires_at": "2001-01-01T00:00"}, "expires_at"),
        ({"language": "fr"}, "language"),
    ],
)
def test_a_bad_choice_is_refused_on_the_field_at_fault(sweep, owner_client, overrides, field):
    if overrides.get("candidate_point") == "same":
        overrides["candidate_point"] = point(sweep, 8, 32).pk
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(sweep, **overrides))
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert f'id="id_{field}-error"' in response.content.decode()
    assert not Report.objects.exists()


def test_a_node_run_needs_a_matching_single_replica_reference(sweep, owner_client):
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(
        sweep, items=["headline", "node_scaling"],
        scaling_point=point(sweep, 64, 32, replicas=2).pk,
        scaling_reference=point(sweep, 64, 32, replicas=2).pk))
    assert response.status_code == 400
    assert "scaling_reference" in response.context["form"].errors
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(
        sweep, items=["headline", "node_scaling"],
        scaling_point=point(sweep, 64, 32, replicas=2).pk,
        scaling_reference=point(sweep, 64, 32).pk))
    assert response.status_code == 200  # built: the page shows its link


def test_a_report_can_be_built_from_a_saved_comparison(sweep, owner, owner_client):
    comparison = Comparison.objects.create(
        name="Initial vs tuned", baseline_point=point(sweep, 8, 32),
        candidate_point=point(sweep, 64, 32), notes="internal only", created_by=owner)
    data = _form(sweep, baseline_point=point(sweep, 8, 16).pk)  # ignored: the comparison fixes it
    response = owner_client.post(f"/comparisons/{comparison.code}/report/", data)
    assert response.status_code == 200
    report = Report.objects.get()
    assert report.comparison == comparison
    assert report.baseline_point == comparison.baseline_point
    assert report.candidate_point == comparison.candidate_point
    body = Client().get(f"/r/{_shown_link(response)}/?lang=en").content.decode()
    assert "18,012" in body and "41,874" in body and "internal only" not in body


def test_references_are_shown_with_their_recording_dates(sweep, owner_client):
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=20000.0,
        recorded_on="2025-03-01", no_longer_listed_on="2025-06-01", gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    response = owner_client.post(f"/runs/{sweep.code}/report/", _form(
        sweep, language="en", items=["headline", "references"], references=[reference.pk]))
    body = html.unescape(Client().get(f"/r/{_shown_link(response)}/").content.decode())
    assert "Recorded on March 1, 2025" in body
    assert "no longer listed since June 1, 2025" in body
    # The reference and this result per GPU, side by side: 41,873.6 / 20,000 = 2.09x.
    assert ("Reference: 20,000 output tokens/s per GPU (63-66 in / 256 out); After: max_num_seqs 64: "
            "41,874 output tokens/s per GPU (CPU engine) (2.09x, +109.4%)") in body
    assert "Not a controlled comparison." in body
    assert "Matches: GPU count" in body
    assert "Differs: GPU: NVIDIA H200 → CPU only (Test CPU)" in body


def _references_section(body: str) -> str:
    return body[body.index('<section id="references">'):body.index('<section id="methodology">')]


def test_a_version_published_before_the_reference_sentences_prints_its_pieces_alike(
    sweep, owner
):
    gone = ExternalReference.objects.create(
        source="Vendor", url="https://vendor.example/a", value=20000.0, recorded_on="2025-03-01",
        no_longer_listed_on="2025-06-01", gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    listed = ExternalReference.objects.create(
        source="Vendor 1k", url="https://vendor.example/b", value=9000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    report = make_report(sweep, owner, language="en", references=[gone, listed])
    link = f"/r/{report.issued_token}/"
    now = _references_section(Client().get(link).content.decode())
    assert "Recorded on March 1, 2025; no longer listed since June 1, 2025." in now
    assert "Recorded on March 1, 2025.\n" in now
    version = report.versions.get()
    for stored in version.content.values():  # as a version published before the sentences
        for row in stored["references"]:
            assert row.pop("dated_text") and row.pop("figures_text")
    ReportVersion.objects.filter(pk=version.pk).update(content=version.content)
    assert _references_section(Client().get(link).content.decode()) == now


def test_my_reports_lists_only_mine(sweep, owner, teammate, owner_client):
    mine = make_report(sweep, owner, title="Mine")
    make_report(sweep, teammate, title="Theirs")
    body = owner_client.get("/reports/").content.decode()
    assert "Mine" in body and "Theirs" not in body
    assert f"/reports/{mine.code}/" in body


def test_an_outsider_can_neither_preview_nor_revoke_my_report(sweep, owner, teammate):
    report = make_report(sweep, owner)
    client = Client()
    client.force_login(teammate)
    assert client.get(f"/reports/{report.code}/").status_code == 404
    assert client.post(f"/reports/{report.code}/revoke/").status_code == 404
    report.refresh_from_db()
    assert report.revoked_at is None


def test_revoking_turns_the_link_into_410_at_once(sweep, owner, owner_client):
    report = make_report(sweep, owner)
    assert Client().get(f"/r/{report.issued_token}/").status_code == 200
    assert owner_client.get(f"/reports/{report.code}/revoke/").status_code == 405
    response = owner_client.post(f"/reports/{report.code}/revoke/")
    assert response.status_code == 302
    assert Client().get(f"/r/{report.issued_token}/").status_code == 410
    assert "revoked" in owner_client.get("/reports/").content.decode()


def test_a_report_built_from_an_imported_headroom_file_says_it_was_imported(owner, owner_client):
    # A file in Headroom's own format (source "headroom") claiming an H200 and vLLM 0.32.0.
    points = [point_result(seqs, 32, launch_style="serve") for seqs in (8, 64)]
    run = imports.import_points([(p, None) for p in points], name="claimed",
                                source_file="claimed.jsonl", user=owner)
    run_page = owner_client.get(f"/runs/{run.code}/").content.decode()
    assert html.escape(HEADROOM_IMPORT_TEXT) in run_page
    form = owner_client.get(f"/runs/{run.code}/report/").context["form"]
    assert all("headroom-import" not in label for _, label in form.fields["caveats"].choices)

    response = owner_client.post(f"/runs/{run.code}/report/", _form(run, language="en"))
    report = Report.objects.get()
    assert list(report.caveats.values_list("code", flat=True)) == ["headroom-import"]
    public = Client().get(f"/r/{_shown_link(response)}/").content.decode()
    assert "NVIDIA H200" in public and html.escape(HEADROOM_IMPORT_TEXT) in public
