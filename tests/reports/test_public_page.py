"""The public link: who can open it, what it answers, and what it never shows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from benchmarks.models import ExternalReference
from reports.models import Report, ReportVersion, new_token, token_digest
from tests.reports.conftest import SECRETS, point
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def test_a_token_carries_256_random_bits_and_differs_every_time():
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token)  # 32 bytes, urlsafe base64


def test_the_token_is_the_only_key_in_the_public_url(sweep, owner):
    report = make_report(sweep, owner)
    assert len(report.issued_token) >= 22  # >= 128 bits in base64
    assert Client().get(f"/r/{report.pk}/").status_code == 404
    assert Client().get(f"/r/{report.code}/").status_code == 404


def test_only_the_digest_of_a_token_is_stored_and_the_digest_opens_nothing(sweep, owner):
    report = make_report(sweep, owner)
    token = report.issued_token
    stored = Report.objects.values_list("token_digest", flat=True).get(pk=report.pk)
    version = ReportVersion.objects.get(report=report)
    assert stored == version.token_digest == token_digest(token)
    assert re.fullmatch(r"[0-9a-f]{64}", stored) and token not in stored
    # A copy of the database opens nothing: the page hashes what the URL gives it.
    assert Client().get(f"/r/{stored}/").status_code == 404
    assert Client().get(f"/r/{token}/").status_code == 200


def test_a_logged_out_visitor_reads_the_report(sweep, owner):
    report = make_report(sweep, owner)
    response = Client().get(f"/r/{report.issued_token}/")
    assert response.status_code == 200
    assert "Scheduling settings: 2.3x output throughput" in response.content.decode()


def test_a_guessed_token_finds_nothing(sweep, owner):
    report = make_report(sweep, owner)
    token = report.issued_token
    guesses = [new_token(), token[:-1] + ("A" if token[-1] != "A" else "B"),
               token[:20], token.upper() if token != token.upper() else token.lower()]
    for guess in guesses:
        assert Client().get(f"/r/{guess}/").status_code == 404
        assert Client().get(f"/r/{guess}/report.pdf").status_code == 404


def test_a_revoked_link_answers_410_gone(sweep, owner):
    report = make_report(sweep, owner)
    Report.objects.filter(pk=report.pk).update(revoked_at=timezone.now())
    response = Client().get(f"/r/{report.issued_token}/")
    assert response.status_code == 410
    body = response.content.decode()
    assert "no longer available" in body
    assert "41,874" not in body and report.title not in body
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 410


def test_an_expired_link_answers_410_gone_and_a_live_one_200(sweep, owner):
    report = make_report(sweep, owner, expires_at=timezone.now() + timedelta(hours=1))
    assert Client().get(f"/r/{report.issued_token}/").status_code == 200
    Report.objects.filter(pk=report.pk).update(
        created_at=timezone.now() - timedelta(days=2),
        expires_at=timezone.now() - timedelta(seconds=1),
    )
    assert Client().get(f"/r/{report.issued_token}/").status_code == 410


def test_the_page_is_not_cached_indexed_or_leaked_in_a_referer(sweep, owner):
    report = make_report(sweep, owner)
    response = Client().get(f"/r/{report.issued_token}/")
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    assert "noindex" in response["X-Robots-Tag"]


def test_nothing_from_the_stored_provenance_or_the_run_reaches_the_page(sweep, owner):
    ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=20000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out",
        notes="internal: screenshot in the team drive",
    )
    report = make_report(sweep, owner)
    report.references.set(ExternalReference.objects.all())
    for lang in ("en", "ko"):
        body = Client().get(f"/r/{report.issued_token}/?lang={lang}").content.decode()
        for secret in (*SECRETS, str(sweep.code), "screenshot in the team drive",
                       "/runs/", "/admin", "/reports/", "base_url", "log_tail"):
            assert secret not in body, secret
        # The only links: our static files, the language switch, the PDF, the reference.
        hrefs = re.findall(r'href="([^"]*)"', body)
        for href in hrefs:
            assert (href.startswith("/static/") or href.startswith("?lang=")
                    or href.startswith("report.pdf") or href == "https://vendor.example/perf"), href


def test_caveat_text_with_html_or_script_is_shown_as_text(sweep, owner):
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)><b>bold</b>'
    report = make_report(sweep, owner, caveats=[evil])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert evil not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert "<img src=x" not in body and "<b>bold</b>" not in body
    assert body.count("<script") == 3  # plotly, report.js, the json_script data block


def test_a_title_with_html_cannot_break_out_of_the_figure_data(sweep, owner):
    report = make_report(sweep, owner, title="</script><script>alert(1)</script>")
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert "</script><script>alert(1)" not in body


def test_the_english_page_shows_english_words_dates_and_grouped_numbers(sweep, owner):
    report = make_report(sweep, owner, language="en")
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert '<html lang="en">' in body
    assert "Result" in body and "Methodology and limits" in body
    assert "18,012" in body and "41,874" in body and "2.32x" in body
    date = timezone.localdate(report.created_at)
    assert f"{date.strftime('%b')}. {date.day}, {date.year}" in body or \
        f"{date.strftime('%B')} {date.day}, {date.year}" in body


def test_the_korean_page_shows_korean_words_dates_and_grouped_numbers(sweep, owner):
    report = make_report(sweep, owner, language="ko")
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert '<html lang="ko">' in body
    assert "결과" in body and "방법과 한계" in body
    assert "Methodology and limits" not in body
    assert "18,012" in body and "41,874" in body
    date = timezone.localdate(report.created_at)
    assert f"{date.year}년 {date.month}월 {date.day}일" in body
    assert "CPU 엔진" in body


def test_the_same_report_reads_in_the_other_language_on_request(sweep, owner):
    report = make_report(sweep, owner, language="ko")
    body = Client().get(f"/r/{report.issued_token}/?lang=en").content.decode()
    assert "Methodology and limits" in body and "41,874" in body
    assert Client().get(f"/r/{report.issued_token}/?lang=xx").content.decode().count("방법과 한계") == 1


def test_only_the_chosen_items_are_shown(sweep, owner):
    report = make_report(sweep, owner, items=["headline"], scaling_point=None,
                         scaling_reference=None)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="headline"' in body
    for section in ('id="comparison-table"', 'id="curve"', 'id="queue"', 'id="scaling"',
                    'id="references"'):
        assert section not in body
    assert 'id="methodology"' in body  # methodology and limits are always there


def test_a_cpu_engine_run_is_labelled_wherever_its_numbers_appear(sweep, owner):
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="cpu-banner"' in body
    assert body.count("(CPU engine)") >= 6  # headline x2, table x2, curve, queue x2, scaling


def test_a_gpu_run_carries_no_cpu_label(owner):
    from tests.reports.conftest import make_sweep

    gpu_sweep = make_sweep(owner, launch_style="serve")
    report = make_report(gpu_sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert "CPU engine" not in body
    assert "1 x NVIDIA H200" in body


def test_without_chromium_the_pdf_answers_503_and_says_what_to_do(sweep, owner, settings):
    settings.HEADROOM_CHROMIUM = "/nonexistent/chromium"
    report = make_report(sweep, owner)
    response = Client().get(f"/r/{report.issued_token}/report.pdf")
    assert response.status_code == 503
    text = response.content.decode()
    # A visitor learns what to do, not where this server keeps its browser.
    assert "Print" in text and "/nonexistent" not in text


def test_the_public_page_points_at_the_operating_point_of_the_tuned_config(sweep, owner):
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    tuned = point(sweep, 64, 32)
    assert "max_num_seqs 64 at burst 32: 41,600 output tokens/s" in body or \
        f"max_num_seqs 64 at burst 32: {tuned.output_throughput:,.0f}" in body
    assert "before the knee" in body


def test_a_stored_operating_point_is_the_one_marked_with_its_reason(sweep, owner):
    from benchmarks.models import OperatingPoint

    chosen = point(sweep, 64, 16)
    OperatingPoint.objects.create(benchmark=sweep, method="override", point=chosen,
                                  sentence="chosen by an engineer", reason="<b>latency SLO</b>")
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert "max_num_seqs 64 at burst 16: 30,000 output tokens/s" in body
    assert "chosen by an engineer: &lt;b&gt;latency SLO&lt;/b&gt;" in body


def test_queue_charts_are_steps_and_a_point_without_samples_says_why_instead(sweep, owner):
    from benchmarks.models import PointData
    from reports import publishing

    PointData.objects.filter(point=point(sweep, 8, 32)).delete()
    report = make_report(sweep, owner, language="en")
    content = publishing.content_of(report.versions.get(), "en")
    before, after = content.queue
    assert "no queue chart" in before.no_chart and after.no_chart == ""
    figures = content.figures["queue"]
    assert figures[0]["replicas"] == [] and figures[1]["line_shape"] == "hv"
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="queue-chart-0"' not in body and 'id="queue-chart-1"' in body
    assert before.no_chart in body
