"""The public PDF: printed once per version and language, one print at a time, and Chromium
reads nothing but the page it prints."""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils.html import escape

from reports import pdf
from tests.reports.helpers import make_report


@pytest.fixture(autouse=True)
def pdf_dir(settings, tmp_path) -> Path:
    """Each test its own cache, so what one printed is never another's."""
    settings.HEADROOM_PDF_DIR = tmp_path / "pdf"
    return settings.HEADROOM_PDF_DIR


@pytest.fixture
def printer(monkeypatch) -> list[str]:
    """Stands in for Chromium only: what it was asked to print, answered with a tiny PDF."""
    printed: list[str] = []
    monkeypatch.setattr("reports.pdf.html_to_pdf",
                        lambda html: printed.append(html) or b"%PDF-1.7 test")
    return printed


def test_a_version_is_printed_once_per_language_and_then_served_from_disk(
        sweep, owner, printer, settings):
    report = make_report(sweep, owner)
    for _ in range(3):
        response = Client().get(f"/r/{report.issued_token}/report.pdf?lang=en")
        assert response.status_code == 200 and response.content == b"%PDF-1.7 test"
    assert Client().head(f"/r/{report.issued_token}/report.pdf?lang=en").status_code == 200
    assert len(printer) == 1
    assert Client().get(f"/r/{report.issued_token}/report.pdf?lang=ko").status_code == 200
    assert len(printer) == 2
    assert len(list(settings.HEADROOM_PDF_DIR.glob("*.pdf"))) == 2


def test_the_cache_is_keyed_by_the_stored_digest_so_the_printer_needs_no_token(
        sweep, owner, printer, settings):
    report = make_report(sweep, owner)
    version = report.versions.get()
    assert Client().get(f"/r/{report.issued_token}/report.pdf?lang=en").status_code == 200
    # What the server can find again from the database alone, without the link's token.
    assert pdf.cached_pdf(version.token_digest, "en", lambda: "unused") == b"%PDF-1.7 test"
    assert len(printer) == 1


def test_while_another_print_runs_a_visitor_gets_429_with_retry_after(
        sweep, owner, printer, settings):
    report = make_report(sweep, owner)
    settings.HEADROOM_PDF_DIR.mkdir(parents=True, exist_ok=True)
    with open(settings.HEADROOM_PDF_DIR / "print.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another web worker's print would hold it
        response = Client().get(f"/r/{report.issued_token}/report.pdf")
    assert response.status_code == 429
    assert response["Retry-After"] == str(pdf.RETRY_AFTER_S)
    assert printer == []
    # Once the other print is done, the next visitor gets the PDF.
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 200


def test_a_pdf_already_printed_is_served_even_while_another_print_runs(
        sweep, owner, printer, settings):
    report = make_report(sweep, owner)
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 200
    with open(settings.HEADROOM_PDF_DIR / "print.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 200


def test_a_revoked_report_has_no_pdf_even_when_one_was_printed(sweep, owner, printer):
    from django.utils import timezone

    report = make_report(sweep, owner)
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 200
    type(report).objects.filter(pk=report.pk).update(revoked_at=timezone.now())
    assert Client().get(f"/r/{report.issued_token}/report.pdf").status_code == 410


def test_the_printed_page_inlines_its_assets_and_may_load_nothing(sweep, owner, printer):
    report = make_report(sweep, owner)
    Client().get(f"/r/{report.issued_token}/report.pdf")
    (html,) = printer
    assert f'content="{escape(pdf.PRINT_CSP)}"' in html
    assert "default-src 'none'" in pdf.PRINT_CSP
    assert not re.search(r"""=\s*["']?file://""", html)  # no attribute points at a file
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html)
    assert "Plotly" in html  # the chart library is in the page itself


def test_chromium_runs_without_file_access_from_files(tmp_path):
    command = pdf.chromium_command(
        tmp_path / "chromium", tmp_path / "page.html", tmp_path / "out.pdf", tmp_path / "p")
    assert "--allow-file-access-from-files" not in command
    assert command[-1] == (tmp_path / "page.html").as_uri()


def test_a_failed_print_shows_the_visitor_a_plain_sentence_and_logs_the_rest(
        sweep, owner, settings, tmp_path, caplog):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\necho 'secret detail: /home/engineer/.cache' >&2\nexit 3\n")
    chromium.chmod(0o755)
    settings.HEADROOM_CHROMIUM = str(chromium)
    report = make_report(sweep, owner)
    response = Client().get(f"/r/{report.issued_token}/report.pdf")
    assert response.status_code == 503
    text = response.content.decode()
    assert "secret detail" not in text and "Print" in text
    assert "secret detail" in caplog.text
    assert list(settings.HEADROOM_PDF_DIR.glob("*.pdf")) == []  # a failure is not cached


def test_an_asset_with_a_closing_script_tag_is_never_inlined(tmp_path):
    asset = tmp_path / "bad.js"
    asset.write_text("var s = '</SCRIPT><img src=x>';")
    with pytest.raises(pdf.PdfUnavailable):
        pdf.inline_asset(asset)


@pytest.mark.browser
def test_the_print_policy_keeps_chromium_from_reading_local_files(tmp_path):
    """The attack the flags used to allow: a printed page reading /etc/passwd. Printed by the
    real Chromium with the real command, a page that tries an iframe, an image, a fetch and a
    stylesheet from file:// prints none of the file."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-LINE")
    page = tmp_path / "page.html"
    page.write_text(f"""<!doctype html><html><head>
<meta http-equiv="Content-Security-Policy" content="{pdf.PRINT_CSP}">
<link rel="stylesheet" href="{secret.as_uri()}">
<script>
fetch("{secret.as_uri()}").then(r => r.text()).then(t => {{
  document.body.insertAdjacentText("beforeend", "FETCHED:" + t); }}).catch(() => {{}});
var x = new XMLHttpRequest();
try {{ x.open("GET", "{secret.as_uri()}", false); x.send();
  document.addEventListener("DOMContentLoaded", () =>
    document.body.insertAdjacentText("beforeend", "XHR:" + x.responseText)); }} catch (e) {{}}
</script></head>
<body><p>visible</p><iframe src="{secret.as_uri()}"></iframe>
<object data="{secret.as_uri()}"></object><img src="{secret.as_uri()}"></body></html>""")
    out = tmp_path / "out.pdf"
    command = pdf.chromium_command(Path(chromium), page, out, tmp_path / "profile")
    subprocess.run(command, capture_output=True, timeout=settings.HEADROOM_PDF_TIMEOUT_S,
                   check=True)
    text = _pdf_text(out)
    assert "visible" in text
    assert "TOPSECRET" not in text


def _pdf_text(path) -> str:
    # make test installs poppler-utils beside Chromium (the Makefile's chromium target).
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
