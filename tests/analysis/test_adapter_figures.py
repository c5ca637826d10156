"""Figures per LoRA adapter from a point's requests (analysis.adapter_figures), worked out by hand."""

from __future__ import annotations

import pytest

from analysis.adapter_figures import AdapterRequest, adapter_figures


def req(adapter, completed, tokens, ttft, e2el) -> AdapterRequest:
    return AdapterRequest(adapter=adapter, completed=completed, output_tokens=tokens,
                          ttft_s=ttft, e2el_s=e2el)


# Over a 10 s point: alpha sent 3 (two completed, 100 tokens each; one failed), beta sent 1
# (completed, 300 tokens). Completed output tokens: 500.
REQUESTS = [
    req("alpha", True, 100, 0.1, 1.0),
    req("beta", True, 300, 0.2, 3.0),
    req("alpha", True, 100, 0.3, 2.0),
    req("alpha", False, None, None, None),
]


def test_each_adapter_gets_its_share_of_requests_and_output_and_its_medians():
    alpha, beta = adapter_figures(REQUESTS, duration_s=10.0)
    assert (alpha.name, alpha.requests, alpha.completed) == ("alpha", 3, 2)
    assert alpha.request_share == 0.75
    assert (alpha.output_tokens, alpha.output_share) == (200, 0.4)  # 200 of 500
    assert alpha.output_throughput == 20.0  # 200 tokens / 10 s
    assert alpha.median_ttft_ms == pytest.approx(200.0)  # median of 100 and 300 ms
    assert alpha.median_e2el_ms == pytest.approx(1500.0)  # the failed request is not counted
    assert (beta.requests, beta.completed, beta.request_share) == (1, 1, 0.25)
    assert (beta.output_tokens, beta.output_share, beta.output_throughput) == (300, 0.6, 30.0)
    assert (beta.median_ttft_ms, beta.median_e2el_ms) == (pytest.approx(200.0), 3000.0)
    # The adapters' throughputs add up to the point's: 500 tokens / 10 s.
    assert alpha.output_throughput + beta.output_throughput == 50.0


def test_requests_that_named_no_adapter_give_no_rows():
    assert adapter_figures([req(None, True, 10, 0.1, 1.0)], duration_s=1.0) == []


def test_an_adapter_whose_requests_all_failed_has_no_medians_and_a_zero_share():
    (only,) = adapter_figures([req("alpha", False, None, None, None)], duration_s=5.0)
    assert (only.completed, only.output_tokens, only.output_share) == (0, 0, None)
    assert (only.median_ttft_ms, only.median_e2el_ms) == (None, None)
