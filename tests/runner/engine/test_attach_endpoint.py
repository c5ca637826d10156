"""Attaching to a server someone else runs: credentials on every call, clear refusals, the
network round trip, and /metrics that may not answer.

The server is the fake vLLM (tests/runner/fakeserver.py), alone or behind a proxy that demands
a bearer key (tests/runner/bearerproxy.py); tests/dashboard/test_endpoints.py does the same
through the dashboard against a real CPU engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runner.cli.parser import main
from runner.client import httpstream
from runner.engine.command import EngineError
from runner.engine.endpoint import Credentials, check_header, normalize_base_url, redact
from runner.engine.process import attach, measure_rtt
from runner.measure.sampler import QueueSampler
from runner.results import read_points
from runner.schema.engine_config import Checkpoint
from runner.sweep import SweepIncomplete, run_plan
from tests.runner.bearerproxy import BearerProxy
from tests.runner.test_sweep_attach import attach_plan, write_plan

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def proxy(fake_vllm) -> Iterator[BearerProxy]:
    """The fake vLLM behind a proxy that wants KEY and an X-Tenant header; it lists the fake's
    model on /v1/models (the fake has no such route) and hides /metrics."""
    server = BearerProxy(fake_vllm.base_url, KEY, {"X-Tenant": "acme"})
    server.models = ["fake-model"]
    server.hide_metrics = True
    server.start()
    try:
        yield server
    finally:
        server.stop()


RIGHT = Credentials.of(KEY, {"X-Tenant": "acme"})


# -- credentials and addresses ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("X-Tenant", "acme\r\nX-Admin: 1", "one line"),
        ("X-Tenant", "acme\nGET / HTTP/1.1", "one line"),
        ("X-Tenant", "a\x00b", "one line"),
        ("X Tenant", "acme", "not an HTTP token"),
        ("X-Tenant:", "acme", "not an HTTP token"),
        ("X-Tenant\r\nX-Admin", "1", "not an HTTP token"),
        ("Content-Length", "0", "set by the client"),
        ("Host", "evil.example", "set by the client"),
        ("X-Tenant", "", "not blank"),
    ],
)
def test_a_header_that_could_inject_or_reframe_the_request_is_refused(name, value, words):
    with pytest.raises(ValueError, match=words) as refused:
        check_header(name, value)
    with pytest.raises(ValueError):
        Credentials.of("", {name: value})
    url = httpstream.parse_url("http://127.0.0.1:1", "/v1/completions")
    with pytest.raises(ValueError):
        httpstream.request_bytes(url, b"{}", headers={name: value})
    if value:  # the message names the header, never the value (a value is usually a secret)
        assert value not in str(refused.value)


def test_an_api_key_with_a_line_break_is_refused_and_a_good_one_goes_as_a_bearer_token():
    with pytest.raises(ValueError, match="one line"):
        Credentials(api_key="sk\r\nX-Admin: 1")
    url = httpstream.parse_url("http://127.0.0.1:1", "/v1/completions")
    request = httpstream.request_bytes(url, b"{}", headers=RIGHT.http_headers())
    head = request.split(b"\r\n\r\n")[0].split(b"\r\n")
    assert f"Authorization: Bearer {KEY}".encode() in head and b"X-Tenant: acme" in head
    assert head[-1].startswith(b"Content-Length")  # nothing after the framing headers


def test_the_key_and_an_authorization_header_are_one_or_the_other():
    with pytest.raises(ValueError, match="one or the other"):
        Credentials.of(KEY, {"authorization": "Basic abc"})


def test_credentials_never_show_their_values():
    shown = f"{RIGHT!r} {RIGHT!s}"
    assert KEY not in shown and "acme" not in shown
    assert "X-Tenant" in shown
    assert redact(f"HTTP 401: bad key {KEY} for acme", RIGHT) == "HTTP 401: bad key [secret] for [secret]"


@pytest.mark.parametrize(
    ("typed", "normalized"),
    [
        ("http://10.0.0.5:8000", "http://10.0.0.5:8000"),
        (" https://llm.example.com/v1/ ", "https://llm.example.com"),
        ("http://gw.example:8080/tenant-a/v1", "http://gw.example:8080/tenant-a"),
        ("http://[::1]:8000/", "http://[::1]:8000"),
    ],
)
def test_a_base_url_is_normalized(typed, normalized):
    assert normalize_base_url(typed) == normalized


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("ftp://host:21", "http:// or https://"),
        ("10.0.0.5:8000", "http:// or https://"),
        ("http://user:pw@host:8000", "user:password@"),
        ("http://host:8000/?debug=1", "query"),
        ("http://host:8000/#top", "fragment"),
        ("http://:8000", "names a host"),
        ("http://host:99999", "port"),
        ("http://host:8000/a b", "spaces"),
    ],
)
def test_a_base_url_that_is_not_a_plain_server_address_is_refused(typed, words):
    with pytest.raises(ValueError, match=words):
        normalize_base_url(typed)


def test_an_https_address_is_sent_over_tls_on_port_443_by_default():
    url = httpstream.parse_url("https://llm.example.com/gw", "/v1/completions")
    assert (url.host, url.port, url.path, url.tls) == ("llm.example.com", 443, "/gw/v1/completions",
                                                       True)
    assert httpstream.parse_url("http://h", "/health").tls is False


# -- attach: what is checked before the first point -------------------------------------------


def test_attaching_with_the_right_credentials_reads_the_server_with_them(proxy):
    engine = attach(proxy.base_url, Checkpoint(model="fake-model"), RIGHT)
    assert engine.info.served_models == ["fake-model"]
    assert engine.info.max_model_len == 4096
    assert {"/health", "/version", "/v1/models", "/metrics"} <= proxy.paths(accepted=True)
    assert not proxy.paths(accepted=False)
    assert engine.alive()


@pytest.mark.parametrize(
    "credentials",
    [Credentials(), Credentials.of("sk-wrong", {"X-Tenant": "acme"}), Credentials.of(KEY)],
    ids=["no key", "wrong key", "key without its header"],
)
def test_a_refused_key_is_a_clear_error_before_any_point(proxy, credentials):
    with pytest.raises(EngineError, match=r"refused the API key \(HTTP 401") as refused:
        attach(proxy.base_url, Checkpoint(model="fake-model"), credentials)
    assert proxy.base_url in str(refused.value)


def test_an_endpoint_serving_another_model_is_named_with_what_it_serves(proxy):
    with pytest.raises(EngineError, match="serves fake-model, not llama-70b"):
        attach(proxy.base_url, Checkpoint(model="x", served_model_name="llama-70b"), RIGHT)


def test_an_unreachable_endpoint_names_its_url():
    with pytest.raises(EngineError, match=r"cannot reach the server at http://127.0.0.1:9 "):
        attach("http://127.0.0.1:9", Checkpoint(model="fake-model"))


def test_an_unhealthy_endpoint_says_what_health_answered(fake_vllm):
    proxy = BearerProxy(fake_vllm.base_url + "/nothing-here", KEY).start()
    try:
        with pytest.raises(EngineError, match=r"not healthy \(GET /health answered HTTP 404\)"):
            attach(proxy.base_url, Checkpoint(model="fake-model"), Credentials(api_key=KEY))
    finally:
        proxy.stop()


# -- a whole sweep through the proxy ------------------------------------------------------------


def test_a_sweep_through_the_proxy_sends_the_key_everywhere_and_says_metrics_were_missing(
    proxy, fake_vllm, tmp_path
):
    plan = attach_plan(proxy.base_url, [4])
    (point,) = list(run_plan(plan, tmp_path, credentials=RIGHT))

    assert point.metrics.valid and point.metrics.completed == 4
    assert {"/tokenize", "/v1/completions", "/metrics", "/health"} <= proxy.paths(accepted=True)
    assert not proxy.paths(accepted=False)
    # /metrics was hidden: measured anyway, with no samples and a note saying why.
    assert point.samples == [] and point.queue.samples == 0
    (note,) = point.notes
    assert "engine queue metrics were not available from this endpoint" in note
    assert "HTTP 404" in note
    rtt = point.client.network_rtt
    assert rtt is not None and rtt.probes == 10 and 0 < rtt.min_ms <= rtt.median_ms < 1000
    # Nothing of the key in what is written, and the served host is not this client's GPU.
    written = point.model_dump_json()
    assert KEY not in written and "acme" not in written
    assert point.provenance.hardware.gpu_name is None
    assert point.provenance.hardware.host == "127.0.0.1"


def test_a_sweep_with_a_wrong_key_measures_nothing_and_says_why(proxy, fake_vllm, tmp_path):
    plan = attach_plan(proxy.base_url, [4])
    points = []
    with pytest.raises(SweepIncomplete, match="refused the API key"):
        points.extend(run_plan(plan, tmp_path, credentials=Credentials.of("sk-wrong")))
    assert points == [] and fake_vllm.requests == []


def test_a_server_without_metrics_gives_no_samples_and_a_note_naming_the_status(fake_vllm):
    sampler = QueueSampler([(0, fake_vllm.base_url)], 0.05, 0.0)
    sampler.start()
    samples = sampler.stop()
    # The fake has no /metrics: every scrape failed with its status, and the note says so.
    assert samples == [] and sampler.failures >= 1
    assert "HTTP 404" in (sampler.unavailable_note() or "")


def test_a_metrics_scrape_sends_the_credentials(proxy):
    proxy.hide_metrics = False  # forwarded: the fake answers 404 itself, after the key check
    sampler = QueueSampler([(0, proxy.base_url)], 0.05, 0.0, RIGHT)
    sampler.start()
    sampler.stop()
    assert "/metrics" in proxy.paths(accepted=True) and not proxy.paths(accepted=False)
    no_key = QueueSampler([(0, proxy.base_url)], 0.05, 0.0)
    no_key.start()
    no_key.stop()
    assert "HTTP 401" in (no_key.unavailable_note() or "")


def test_the_round_trip_is_the_median_of_ten_probes_after_one_that_connects(fake_vllm):
    engine = attach(fake_vllm.base_url, Checkpoint(model="fake-model"))
    rtt = measure_rtt(engine)
    assert rtt is not None and rtt.probes == 10 and rtt.min_ms <= rtt.median_ms
    assert measure_rtt(engine, probes=3).probes == 3


# -- the command line -----------------------------------------------------------------------------


def test_the_cli_reads_the_key_from_the_variable_it_is_named_by(proxy, tmp_path, monkeypatch,
                                                                 capsys):
    proxy.required_headers = {}
    plan = write_plan(tmp_path, attach_plan(proxy.base_url, [2]))
    out = tmp_path / "r.jsonl"
    monkeypatch.setenv("ENDPOINT_KEY", KEY)
    assert main(["sweep", str(plan), "--out", str(out), "--api-key-env", "ENDPOINT_KEY"]) == 0
    assert read_points(out).points[0].metrics.completed == 2
    assert KEY not in out.read_text()

    monkeypatch.delenv("ENDPOINT_KEY")
    assert main(["sweep", str(plan), "--out", str(out), "--api-key-env", "ENDPOINT_KEY"]) == 2
    assert "ENDPOINT_KEY is not set" in capsys.readouterr().err


def test_bench_takes_the_key_variable_for_an_attached_server_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ENDPOINT_KEY", KEY)
    status = main(["bench", "--model", "m", "--api-key-env", "ENDPOINT_KEY",
                   "--out", str(tmp_path / "r.jsonl")])
    assert status == 2
    assert "--api-key-env is for an attached server" in capsys.readouterr().err
