"""The report as a PDF: headless Chromium prints the rendered page, bounded by a timeout.

The page is written to a temporary directory with its scripts and stylesheet as file:// paths,
so Chromium never calls back into this server (a single-worker server would deadlock waiting
for itself) and needs no network at all. Chromium runs in its own process group; on a timeout
the whole group is killed, so no browser process outlives the request.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

from django.conf import settings


class PdfUnavailable(Exception):
    """Chromium is missing, failed or ran past the timeout; the message says which."""


def chromium_path() -> Path | None:
    path = Path(settings.HEADROOM_CHROMIUM)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def html_to_pdf(html: str) -> bytes:
    chromium = chromium_path()
    if chromium is None:
        raise PdfUnavailable(
            f"PDF download is unavailable: no Chromium at {settings.HEADROOM_CHROMIUM} "
            "(set HEADROOM_CHROMIUM). Use the browser's Print to PDF: the page has a print "
            "stylesheet."
        )
    with tempfile.TemporaryDirectory(prefix="headroom-pdf-") as tmp:
        page, out = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        command = [
            str(chromium), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--no-pdf-header-footer", "--allow-file-access-from-files",
            f"--user-data-dir={tmp}/profile",
            # Virtual time lets the scripts draw the charts before the page is printed.
            f"--virtual-time-budget={settings.HEADROOM_PDF_SCRIPT_BUDGET_MS}",
            f"--print-to-pdf={out}", page.as_uri(),
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True, cwd=tmp)
        try:
            _, stderr = process.communicate(timeout=settings.HEADROOM_PDF_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise PdfUnavailable(
                f"Chromium did not finish the PDF within {settings.HEADROOM_PDF_TIMEOUT_S} s."
            ) from None
        finally:
            # Chromium's helper processes share its group; none may outlive the request.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if process.returncode != 0 or not out.exists():
            tail = stderr.decode(errors="replace")[-500:]
            raise PdfUnavailable(f"Chromium could not print the report: {tail}")
        return out.read_bytes()
