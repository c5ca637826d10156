"""The report as a PDF: headless Chromium prints the stored page once per version and language.

A published version never changes, so its PDF is printed once and kept under HEADROOM_PDF_DIR;
every later download is a file read. The link is public, so printing is bounded: one Chromium
at a time on this host (a file lock, so it holds across web worker processes), and a visitor
who finds it busy gets 429 with Retry-After rather than a second browser.

Chromium gets no access to anything but the page: the stylesheet and scripts are inlined, the
page carries a Content-Security-Policy that forbids loading any other resource (file:// URLs
included), and file access from files stays off. It runs in its own process group; on a
timeout the whole group is killed, so no browser process outlives the request. What Chromium
printed on failure goes to the log, not to the visitor.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

# The printed page may load nothing: its scripts and styles are inline, its charts draw from
# the inline JSON, and a chart image Plotly makes is a data: URL.
PRINT_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
             "img-src data:; font-src data:")

# How long a visitor who found the printer busy should wait: about one print on two cores.
RETRY_AFTER_S = 5


class PdfUnavailable(Exception):
    """No PDF can be made here now; the message is safe to show to anyone."""


class PdfBusy(PdfUnavailable):
    """Another PDF is being printed on this host; try again after RETRY_AFTER_S."""


def chromium_path() -> Path | None:
    path = Path(settings.HEADROOM_CHROMIUM)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def cached_pdf(version_digest: str, language: str, render_html: Callable[[], str]) -> bytes:
    """The PDF of one report version in one language, printed on the first request only.

    Files are named after the stored digest of the version's link token, not its row id: a
    database made afresh (a new demo) reuses ids, and must not serve another report's PDF. A
    re-issued link has a new digest, so its PDF is printed again. render_html is called only
    when the PDF has to be printed. Raises PdfBusy while another print runs, PdfUnavailable
    when Chromium is missing or fails.
    """
    name = hashlib.sha256(f"{version_digest}/{language}".encode()).hexdigest()[:40]
    path = Path(settings.HEADROOM_PDF_DIR) / f"{name}.pdf"
    if path.is_file():
        return path.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _one_print_at_a_time(path.parent / "print.lock"):
        # Whoever held the lock before may have printed this very file.
        if path.is_file():
            return path.read_bytes()
        document = html_to_pdf(render_html())
        partial = path.with_suffix(".partial")
        partial.write_bytes(document)
        partial.replace(path)  # readers see the whole file or none
        return document


@contextmanager
def _one_print_at_a_time(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PdfBusy("Another PDF is being printed; try again in a few seconds.") from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def chromium_command(chromium: Path, page: Path, out: Path, profile: Path) -> list[str]:
    command = [
        str(chromium), "--headless", "--disable-gpu", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--no-pdf-header-footer", f"--user-data-dir={profile}",
        # Virtual time lets the scripts draw the charts before the page is printed.
        f"--virtual-time-budget={settings.HEADROOM_PDF_SCRIPT_BUDGET_MS}",
        f"--print-to-pdf={out}", page.as_uri(),
    ]
    # Chromium's sandbox refuses to start as root; everywhere else it stays on.
    if os.geteuid() == 0:
        command.insert(2, "--no-sandbox")
    return command


def html_to_pdf(html: str) -> bytes:
    chromium = chromium_path()
    if chromium is None:
        log.warning("no Chromium at %s (set HEADROOM_CHROMIUM)", settings.HEADROOM_CHROMIUM)
        raise PdfUnavailable("PDF download is unavailable on this server.")
    with tempfile.TemporaryDirectory(prefix="headroom-pdf-") as tmp:
        page, out = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        command = chromium_command(chromium, page, out, Path(tmp) / "profile")
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True, cwd=tmp)
        try:
            _, stderr = process.communicate(timeout=settings.HEADROOM_PDF_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            log.warning("Chromium ran past %s s printing a report",
                        settings.HEADROOM_PDF_TIMEOUT_S)
            raise PdfUnavailable("The PDF took too long to print.") from None
        finally:
            # Chromium's helper processes share its group; none may outlive the request.
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if process.returncode != 0 or not out.exists():
            log.warning("Chromium could not print a report (exit %s): %s", process.returncode,
                        stderr.decode(errors="replace")[-2000:])
            raise PdfUnavailable("The PDF could not be printed.")
        return out.read_bytes()


def inline_asset(path: Path) -> str:
    """A stylesheet or script to inline in the printed page. A closing tag inside would end
    the element early and print the rest as text, so such a file is refused."""
    text = path.read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        log.error("%s holds a closing tag and cannot be inlined in a printed report", path)
        raise PdfUnavailable("The PDF could not be printed.")
    return text
