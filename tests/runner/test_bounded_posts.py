"""The POSTs the runner makes to a server it does not control (/tokenize while sizing prompts, a
quality set's questions) are held to a size and a total time, as every GET is
(runner.engine.bounded_read)."""

from __future__ import annotations

import time

import pytest

from runner.measure.quality import QualityItem, QualitySet, score_quality
from runner.schema.plan import WorkloadSpec
from runner.workloads.prompts import ServerTokenizer, WorkloadError
from tests.hostile_server import HostileServer, drip_body, endless


@pytest.mark.parametrize(("answer", "said"), [
    (endless(b'{"count": 1, "tokens": [1, 2, 3, 4, 5, 6, 7, 8]}'), "is over 4.0 MB"),
    (drip_body(0.2, 10.0), "did not arrive in full within"),
])
def test_a_tokenize_answer_too_large_or_too_slow_is_refused_by_its_bound(
        monkeypatch, answer, said):
    monkeypatch.setattr("runner.workloads.prompts.TOKENIZE_TIMEOUT_S", 1.0)
    with HostileServer({"/tokenize": answer}) as server:
        counter = ServerTokenizer(server.base_url, "m")
        started = time.monotonic()
        with pytest.raises(WorkloadError, match=said):
            counter("hello")
    assert time.monotonic() - started < 5  # at the bound, not at the drip's end


def test_a_quality_answer_that_drips_becomes_that_items_error_row():
    quality = QualitySet(name="q.jsonl", items=[
        QualityItem(line=1, prompt="x", expected="y", rule="contains", max_tokens=4)])
    with HostileServer({"/v1/completions": drip_body(0.2, 10.0)}) as server:
        started = time.monotonic()
        result = score_quality(quality, server.base_url, "m", WorkloadSpec(), timeout_s=1.0)
    assert time.monotonic() - started < 5
    (row,) = result.rows
    assert not row.passed and "did not arrive in full within 1 s" in (row.error or "")
