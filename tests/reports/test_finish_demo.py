"""The demo's last step: a saved comparison and a customer report, built through the forms."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command

from benchmarks.models import Comparison
from reports.models import Report, token_digest


def test_finish_demo_saves_the_comparison_and_a_report_of_a_finished_sweep(sweep, owner, client):
    out = io.StringIO()
    call_command("finish_demo", str(sweep.code), username=owner.username, wait=5, stdout=out)
    comparison = Comparison.objects.get()
    assert comparison.baseline_point.engine_config["max_num_seqs"] == 8
    assert comparison.candidate_point.engine_config["max_num_seqs"] == 64
    report = Report.objects.get()
    assert report.comparison == comparison and report.language == "en"
    (token,) = re.findall(r"/r/([^/\s]+)/", out.getvalue())
    assert token_digest(token) == report.token_digest
    assert client.get(f"/r/{token}/").status_code == 200  # readable logged out


def test_finish_demo_says_why_when_the_sweep_failed(sweep, owner):
    sweep.state = "failed"
    sweep.error_message = "engine seqs=64 failed to start"
    sweep.save()
    with pytest.raises(CommandError, match="ended failed: engine seqs=64 failed to start"):
        call_command("finish_demo", str(sweep.code), username=owner.username, wait=5)
