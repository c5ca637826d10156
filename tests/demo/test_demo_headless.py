"""`make demo` to its end, as a newcomer runs it: on a new SQLite database, until the
comparison and the customer report are saved, checked and everything is stopped (demo.run
--exit-when-done).

It runs once, on the filesystem broker the demo falls back to without Redis: no other test
carries a sweep through that transport, while a sweep through Redis and a real worker is
tests/dashboard/test_end_to_end.py's, and which broker the demo picks is test_demo.py's. A
second whole demo on Redis cost three and a half minutes of CI for the broker's URL alone."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repository import ROOT

pytestmark = pytest.mark.engine

# Three engine starts and twelve points take about five minutes on two cores.
DEMO_TIMEOUT_S = 1500


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def demo_environment(tmp_path: Path, broker_url: str, tiny_model: Path) -> dict[str, str]:
    """The environment of `make demo` on a fresh machine: no SECRET_KEY, no settings module, a
    SQLite database, and every folder the demo writes in this test's own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    return {
        **env,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_URL": broker_url,
        "HEADROOM_BROKER_DIR": str(tmp_path / "broker"),
        "HEADROOM_DEMO_ADDRESS": f"127.0.0.1:{free_port()}",
        "HEADROOM_WORK_DIR": str(tmp_path / "work"),
        "HEADROOM_PDF_DIR": str(tmp_path / "pdf"),
        "HEADROOM_TINY_MODEL": str(tiny_model),
    }


def run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The headless demo; past its time it is stopped as Ctrl-C stops it, engines included."""
    demo = subprocess.Popen([sys.executable, "-m", "demo.run", "--exit-when-done"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = demo.communicate(timeout=DEMO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        demo.send_signal(signal.SIGTERM)
        out, _ = demo.communicate(timeout=120)
        pytest.fail(f"the demo did not finish within {DEMO_TIMEOUT_S} s:\n{out[-5000:]}")
    return subprocess.CompletedProcess(demo.args, demo.returncode, out)


def test_make_demo_reaches_its_report_on_sqlite(tmp_path, tiny_model_dir, capsys):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens: the demo falls back

    done = run_demo(demo_environment(tmp_path, url, tiny_model_dir))

    stages = done.stdout[done.stdout.find("Stages of the demo:"):]
    with capsys.disabled():  # each stage's time, in the test log
        print(f"\nmake demo (filesystem broker):\n{stages}")
    assert done.returncode == 0, done.stdout[-8000:]
    assert "Demo check passed." in done.stdout
    assert "using a filesystem broker" in done.stdout
    # The fallback's messages went to the test's folder, never to the checkout's var/broker.
    assert (tmp_path / "broker" / "messages").is_dir()
