"""Registered endpoints: the catalog pages, the secrets, the launch form, the worker.

Most tests here drive the fake vLLM (tests/runner/fakeserver.py) behind a proxy that demands a
bearer key (tests/runner/bearerproxy.py), with the run's task executed in this process (Celery's
apply()) so the whole path from the form to the stored rows and the downloads is real. The
tests marked `engine` at the end do the same with a real CPU engine and a real Celery worker.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from benchmarks.launch import plans
from benchmarks.models import AuditEvent, Benchmark, Endpoint, Node, Point, PointData
from benchmarks.security import outbound, vault
from benchmarks.worker import tasks
from dashboard.forms_catalog import EndpointForm
from runner.engine import process
from runner.engine.process import RunningEngine, measure_rtt
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import SweepPlan
from tests.hostile_server import HostileServer, drip_body, drip_headers, endless
from tests.listener import Listener
from tests.personas import grant_role
from tests.rows import make_checkpoint, make_node, make_runtime, make_workload
from tests.runner.bearerproxy import BearerProxy
from tests.runner.fakeserver import FakeVllm
from tests.workers import wait_until_final

KEY = "sk-live-7f3a9c1e5b2d4086"
TENANT = "tenant-secret-91d2"  # a header value is a secret too


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fleet_networks(settings) -> None:
    """The endpoints here are on a lab fleet's private range or are this host's test servers on
    loopback: both named, as a deployment names its fleet's ranges (by default both are
    refused, tests/benchmarks/security/test_outbound.py)."""
    settings.HEADROOM_OUTBOUND_NETWORKS = ["public", "10.0.0.0/8", "127.0.0.0/8"]


def person(username: str, role: str | None) -> Client:
    user = get_user_model().objects.create_user(username, password=f"{username}-password")
    if role:
        grant_role(user, role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def fleet(db) -> Client:
    return person("fleet", "Fleet manager")


@pytest.fixture
def engineer(db) -> Client:
    return person("engineer", "Engineer")


@pytest.fixture
def fake_server() -> Iterator[FakeVllm]:
    server = FakeVllm().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def proxy(fake_server) -> Iterator[BearerProxy]:
    """The fake vLLM behind a gateway that wants KEY and X-Tenant; it lists the fake's model
    on /v1/models and hides /metrics, as a gateway routing only the API does."""
    server = BearerProxy(fake_server.base_url, KEY, {"X-Tenant": TENANT})
    server.models = ["fake-model"]
    server.hide_metrics = True
    server.start()
    try:
        yield server
    finally:
        server.stop()


def edge_node() -> Node:
    """The node whose worker reaches the endpoints (one per test database)."""
    return Node.objects.filter(queue="edge-1").first() or make_node("edge-1", launch_style="cpu")


def register_data(base_url: str, **overrides: Any) -> dict[str, Any]:
    data = {
        "name": "customer-prod",
        "base_url": base_url,
        "served_model": "fake-model",
        "node": overrides["node"] if "node" in overrides else edge_node().pk,
        # Not approved for launching: an endpoint loads no weights, so it need not be.
        "checkpoint": make_checkpoint(approved=False).pk,
        "runtime": make_runtime(approved=False).pk,
        "api_key": KEY,
        "extra_headers": f"X-Tenant: {TENANT}\n",
        "description": "the customer's H200 deployment",
    }
    data.update(overrides)
    return data


def register(client: Client, base_url: str, **overrides: Any) -> Endpoint:
    response = client.post("/catalog/endpoints/new/", register_data(base_url, **overrides))
    assert response.status_code == 302, response.content.decode()[-3000:]
    return Endpoint.objects.get(name=overrides.get("name", "customer-prod"))


def launch_data(endpoint: Endpoint, **overrides: Any) -> dict[str, Any]:
    """A tiny workload the fake (and the CPU engine) serve in seconds: a burst of 4, 16 out."""
    data = {
        "registered_endpoint": endpoint.pk,
        "workload_preset": "custom", "prompt_source": "random",
        "input_tokens_min": 8, "input_tokens_max": 12, "output_tokens": 16,
        "request_count": 4, "temperature": 0, "endpoint": "completions",
        "stream": "on", "ignore_eos": "on", "load_shape": "burst",
        "load_levels": "4", "repeats": "1", "replicas": "1",
        "confirm": "1",
    }
    data.update(overrides)
    return data


@pytest.fixture
def run_inline(monkeypatch, settings, tmp_path):
    """A launch runs its task at once in this process, as the endpoint node's worker."""
    settings.HEADROOM_WORK_DIR = tmp_path / "work"

    def run_now(benchmark: Benchmark) -> None:
        settings.HEADROOM_NODE_QUEUE = benchmark.node.queue
        tasks.run_benchmark.apply(args=[benchmark.pk], throw=True)

    monkeypatch.setattr(tasks, "enqueue_benchmark", run_now)


def everything_stored_and_served(client: Client, benchmark: Benchmark) -> str:
    """Every place a secret must never reach, as one text: the run's row, its points, the
    audit log, the JSON and CSV downloads, the plan file and the run and catalog pages."""
    benchmark.refresh_from_db()
    parts = [str(value) for value in Benchmark.objects.filter(pk=benchmark.pk).values().get().values()]
    for row in Point.objects.filter(benchmark=benchmark).values():
        parts += [str(value) for value in row.values()]
    parts += [str(row) for row in AuditEvent.objects.values()]
    parts += [str(row) for row in Endpoint.objects.values()]
    for url in (f"/runs/{benchmark.code}.json", f"/runs/{benchmark.code}.csv",
                f"/runs/{benchmark.code}/plan.yaml", f"/runs/{benchmark.code}/",
                "/catalog/endpoints/"):
        response = client.get(url)
        assert response.status_code == 200, url
        parts.append(b"".join(response.streaming_content).decode() if response.streaming
                     else response.content.decode())
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# The vault
# ---------------------------------------------------------------------------------------------


def test_a_secret_round_trips_and_is_unreadable_once_secret_key_changes(settings):
    token = vault.encrypt(KEY)
    headers = vault.encrypt_headers({"X-Tenant": TENANT})
    assert KEY not in token and TENANT not in headers
    assert vault.decrypt(token) == KEY
    assert vault.decrypt_headers(headers) == {"X-Tenant": TENANT}
    assert vault.encrypt("") == "" and vault.decrypt("") == ""
    settings.SECRET_KEY = "another-secret-key-after-a-rotation-0123456789"
    with pytest.raises(vault.SecretUnreadable, match="enter the endpoint's API key"):
        vault.decrypt(token)


# ---------------------------------------------------------------------------------------------
# The catalog form
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "stored"),
    [("http://10.0.0.5:8000/v1", "http://10.0.0.5:8000"),
     ("https://llm.example.com/", "https://llm.example.com")],
)
def test_a_base_url_is_stored_without_v1_or_a_trailing_slash(typed, stored):
    form = EndpointForm(register_data(typed))
    assert form.is_valid(), form.errors
    assert form.cleaned_data["base_url"] == stored


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "words"),
    [("http://admin:hunter2@10.0.0.5:8000", "No user:password@"),
     ("ftp://10.0.0.5", "Starts with http"),
     ("http://10.0.0.5:8000/v1?key=abc", "?query"),
     ("http://:8000", "names a host")],
)
def test_a_base_url_that_is_no_plain_address_gets_an_error_on_its_field(typed, words):
    form = EndpointForm(register_data(typed))
    assert not form.is_valid()
    assert words.lower() in " ".join(form.errors["base_url"]).lower()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lines", "words"),
    [("X Tenant: acme", "not an HTTP token"),
     ("X-Tenant acme", 'not "Name: value"'),
     ("X-Tenant: a\x07b", "one line"),
     ("Content-Length: 5", "set by the client"),
     ("X-Tenant: a\nx-tenant: b", "given twice"),
     ("Authorization: Basic abc", "one or the other")],
)
def test_a_header_that_cannot_be_sent_as_typed_is_refused(lines, words):
    form = EndpointForm(register_data("http://10.0.0.5:8000", extra_headers=lines))
    assert not form.is_valid()
    assert words in " ".join(form.errors["extra_headers"])


@pytest.mark.django_db
def test_an_api_key_with_a_line_break_is_refused():
    form = EndpointForm(register_data("http://10.0.0.5:8000", api_key="sk-1\r\nX-Admin: yes"))
    assert not form.is_valid()
    assert "one line" in " ".join(form.errors["api_key"])


# ---------------------------------------------------------------------------------------------
# Who may register, and what the pages show
# ---------------------------------------------------------------------------------------------


def test_an_engineer_may_not_register_an_endpoint_and_is_not_offered_to(engineer):
    response = engineer.post("/catalog/endpoints/new/", register_data("http://10.0.0.5:8000"))
    assert response.status_code == 403
    assert not Endpoint.objects.exists()
    page = engineer.get("/catalog/endpoints/").content.decode()
    assert 'href="/catalog/endpoints/new/"' not in page and "/check/" not in page


def test_a_fleet_manager_registers_one_and_the_secrets_are_never_shown(fleet):
    endpoint = register(fleet, "http://10.0.0.5:8000/v1")
    assert endpoint.base_url == "http://10.0.0.5:8000"
    assert endpoint.extra_header_names == "X-Tenant"
    assert KEY not in endpoint.api_key_encrypted and TENANT not in endpoint.extra_headers_encrypted
    assert vault.decrypt(endpoint.api_key_encrypted) == KEY
    (event,) = AuditEvent.objects.filter(action=AuditEvent.Action.REGISTERED)
    assert "http://10.0.0.5:8000" in event.detail and "API key set" in event.detail

    pages = [fleet.get(url).content.decode() for url in
             ("/catalog/endpoints/", f"/catalog/endpoints/{endpoint.pk}/edit/")]
    # A form sent back with an error must not echo what was typed into the secret fields.
    again = fleet.post("/catalog/endpoints/new/", register_data("ftp://nowhere", name="other"))
    assert again.status_code == 400
    pages.append(again.content.decode())
    for page in pages:
        assert KEY not in page and TENANT not in page
    assert "API key stored" in pages[0] and "X-Tenant" in pages[0]
    assert 'type="password"' in pages[1] and "a key is stored" in pages[1]


def test_editing_keeps_or_removes_the_secrets_and_records_address_and_secret_changes(fleet):
    endpoint = register(fleet, "http://10.0.0.5:8000")
    url = f"/catalog/endpoints/{endpoint.pk}/edit/"
    data = register_data("http://10.0.0.5:8000", api_key="", extra_headers="")

    assert fleet.post(url, {**data, "description": "renamed"}).status_code == 302
    endpoint.refresh_from_db()
    assert vault.decrypt(endpoint.api_key_encrypted) == KEY  # a blank field keeps the key
    assert vault.decrypt_headers(endpoint.extra_headers_encrypted) == {"X-Tenant": TENANT}
    assert AuditEvent.objects.filter(action="registered").count() == 1  # nothing to record

    # A gateway's path prefix on the same server: the secrets stay with that server.
    data["base_url"] = "http://10.0.0.5:8000/gateway"
    assert fleet.post(url, data).status_code == 302
    assert fleet.post(url, {**data, "clear_api_key": "on"}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.api_key_encrypted == "" and endpoint.base_url == "http://10.0.0.5:8000/gateway"
    assert vault.decrypt_headers(endpoint.extra_headers_encrypted) == {"X-Tenant": TENANT}
    details = list(AuditEvent.objects.filter(action="registered").order_by("pk")
                   .values_list("detail", flat=True))
    assert details[1:] == ["address now http://10.0.0.5:8000/gateway", "API key removed"]


def test_a_fleet_manager_who_moves_anothers_endpoint_to_their_server_receives_no_secret(
    fleet, proxy
):
    endpoint = register(fleet, proxy.base_url)
    rogue = person("rogue", "Fleet manager")  # may edit every endpoint, not only their own
    url = f"/catalog/endpoints/{endpoint.pk}/edit/"
    with Listener() as theirs:  # the same host, another port: another server
        moved = register_data(theirs.base_url, api_key="", extra_headers="")
        response = rogue.post(url, moved, follow=True)
        rogue.post(f"/catalog/endpoints/{endpoint.pk}/check/")
    assert "/health" in {path for path, _ in theirs.requests}  # the check did go there...
    assert KEY not in theirs.headers_seen() and TENANT not in theirs.headers_seen()  # ...bare
    assert "authorization" not in theirs.headers_seen().lower()
    endpoint.refresh_from_db()
    assert (endpoint.api_key_encrypted, endpoint.extra_headers_encrypted,
            endpoint.extra_header_names) == ("", "", "")
    assert "its stored API key and headers were removed" in response.content.decode()
    event = AuditEvent.objects.filter(action="registered").latest("pk")
    assert event.actor_name == "rogue"
    assert event.detail == (f"API key and headers removed: entered for {proxy.base_url}, not "
                            f"the new address; address now {theirs.base_url}")


def test_a_key_given_with_the_move_is_kept_and_what_was_not_given_again_is_removed(fleet):
    endpoint = register(fleet, "http://10.0.0.5:8000")
    url = f"/catalog/endpoints/{endpoint.pk}/edit/"
    form = EndpointForm(instance=endpoint)
    assert "another scheme, host or port" in form.fields["api_key"].help_text
    data = register_data("https://10.0.0.5:8000", api_key="sk-for-the-new-server",
                         extra_headers="")
    assert fleet.post(url, data).status_code == 302  # http -> https is another server too
    endpoint.refresh_from_db()
    assert vault.decrypt(endpoint.api_key_encrypted) == "sk-for-the-new-server"
    assert endpoint.extra_headers_encrypted == "" and endpoint.extra_header_names == ""
    event = AuditEvent.objects.filter(action="registered").latest("pk")
    assert event.detail == ("API key replaced; headers removed: entered for "
                            "http://10.0.0.5:8000, not the new address; address now "
                            "https://10.0.0.5:8000")


def test_check_now_says_from_where_and_stores_the_answer(fleet, proxy):
    endpoint = register(fleet, proxy.base_url)
    fleet.post(f"/catalog/endpoints/{endpoint.pk}/check/")
    endpoint.refresh_from_db()
    assert endpoint.check_ok is True and endpoint.checked_at
    assert "serves fake-model" in endpoint.check_note and "edge-1's worker" in endpoint.check_note
    assert proxy.paths(accepted=True) >= {"/health", "/v1/models"}

    other = register(fleet, "http://127.0.0.1:9", name="unreachable", api_key="")
    fleet.post(f"/catalog/endpoints/{other.pk}/check/")
    other.refresh_from_db()
    assert other.check_ok is False
    assert other.check_note.startswith(outbound.UNREACHABLE)
    assert "must reach it too" in other.check_note


@pytest.mark.parametrize("answers, said", [
    ({"/metrics": endless(b"vllm:num_requests_running 1\n")},
     "the answer to GET /metrics is over 4.0 MB, the most read from one answer"),
    ({"/health": drip_body(0.05, 10.0)},
     "the answer to GET /health did not arrive in full within 0.5 s, the longest one answer may "
     "take"),
    ({"/v1/models": drip_headers(0.05, 10.0)}, outbound.UNREACHABLE),
], ids=["endless page", "body a byte at a time", "headers a byte at a time"])
def test_check_now_stops_a_hostile_endpoint_at_a_bound_and_says_which(
    fleet, monkeypatch, answers, said
):
    monkeypatch.setattr(process, "HTTP_TIMEOUT_S", 0.5)
    with HostileServer(answers) as server:
        endpoint = register(fleet, server.base_url, api_key="", extra_headers="")
        started = time.monotonic()
        fleet.post(f"/catalog/endpoints/{endpoint.pk}/check/")
        took = time.monotonic() - started
    endpoint.refresh_from_db()
    assert endpoint.check_ok is False and said in endpoint.check_note
    assert took < 3.0  # each request cut off at its bound, not at the 10 s drip's end


# ---------------------------------------------------------------------------------------------
# The launch form and the worker's check of the stored plan
# ---------------------------------------------------------------------------------------------


def test_the_form_builds_an_attach_plan_from_the_endpoint(fleet, engineer, monkeypatch):
    endpoint = register(fleet, "http://10.0.0.5:8000")
    monkeypatch.setattr(tasks, "enqueue_benchmark", lambda benchmark: None)
    response = engineer.post("/runs/new/", launch_data(endpoint))
    assert response.status_code == 302, response.content.decode()[-3000:]
    benchmark = Benchmark.objects.get()
    assert benchmark.endpoint == endpoint and benchmark.node == endpoint.node
    assert (benchmark.checkpoint, benchmark.runtime) == (endpoint.checkpoint, endpoint.runtime)
    plan = SweepPlan.model_validate(benchmark.plan)
    assert plan.launch == EngineLaunch(style="attach", base_url="http://10.0.0.5:8000")
    assert plan.checkpoint.served_model_name == "fake-model"
    assert plan.engine_configs == [EngineConfig()] and plan.replicas == 1
    assert KEY not in str(benchmark.plan) and TENANT not in str(benchmark.plan)
    assert plans.launchable_plan(benchmark, launch_style="serve") == plan


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [({"max_num_seqs": "64"}, "max_num_seqs", "runs its own settings"),
     ({"extra_args": "--enforce-eager"}, "extra_args", "runs its own settings"),
     ({"replicas": "2"}, "replicas", "one server"),
     ({"registered_endpoint": "987654"}, "registered_endpoint", "not registered")],
)
def test_an_endpoint_run_refuses_what_an_endpoint_cannot_do(fleet, engineer, overrides, field,
                                                            words):
    endpoint = register(fleet, "http://10.0.0.5:8000")
    response = engineer.post("/runs/new/", launch_data(endpoint, **overrides))
    assert response.status_code == 400
    assert words in " ".join(response.context["form"].errors[field])
    assert not Benchmark.objects.exists()


def test_without_an_endpoint_node_checkpoint_and_runtime_are_required(engineer):
    response = engineer.post("/runs/new/", {"workload_preset": "case-study", "load_levels": "8",
                                            "repeats": "1", "replicas": "1", "confirm": "1"})
    errors = response.context["form"].errors
    assert all("required" in " ".join(errors[name]) for name in ("node", "checkpoint", "runtime"))


def test_the_worker_refuses_an_attach_plan_without_an_endpoint_or_to_another_address(fleet):
    endpoint = register(fleet, "http://10.0.0.5:8000")
    workload = make_workload()
    plan = plans.build_plan(plans.LaunchRequest(
        name="x", node=endpoint.node, runtime=endpoint.runtime, checkpoint=endpoint.checkpoint,
        workload=workload, engine_configs=[EngineConfig()], load_levels=[4], repeats=1,
        replicas=1, endpoint=endpoint,
    ))
    fields = {"node": endpoint.node, "runtime": endpoint.runtime, "workload": workload,
              "checkpoint": endpoint.checkpoint, "plan": plan.model_dump(mode="json")}
    orphan = Benchmark.objects.create(name="no endpoint", **fields)
    with pytest.raises(plans.PlanRefused, match="names no registered endpoint"):
        plans.launchable_plan(orphan, launch_style="cpu")

    moved = Benchmark.objects.create(name="moved", endpoint=endpoint, **fields)
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url="http://10.9.9.9:8000")
    moved.refresh_from_db()
    with pytest.raises(plans.PlanRefused, match=re.escape("not attach to http://10.9.9.9:8000")):
        plans.launchable_plan(moved, launch_style="cpu")

    other_node = make_node("edge-2")
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url="http://10.0.0.5:8000")
    elsewhere = Benchmark.objects.create(name="elsewhere", endpoint=endpoint,
                                         **{**fields, "node": other_node})
    with pytest.raises(plans.PlanRefused, match="edge-1, the node registered"):
        plans.launchable_plan(elsewhere, launch_style="cpu")


def test_an_uploaded_attach_plan_to_a_registered_address_fills_the_endpoint_in(fleet, engineer):
    import yaml

    endpoint = register(fleet, "http://10.0.0.5:8000")
    plan = {
        "name": "prod check",
        "checkpoint": plans.endpoint_checkpoint_spec(endpoint).model_dump(mode="json"),
        "launch": {"style": "attach", "base_url": "http://10.0.0.5:8000/v1"},
        "engine_configs": [{}],
        "loads": [{"shape": "burst", "num_requests": 4}],
    }
    files = {"plan_file": _upload(yaml.safe_dump(plan))}
    response = engineer.post("/runs/new/plan/", files)
    assert response.status_code == 200
    assert response.context["form"].initial["registered_endpoint"] == endpoint.pk
    assert not any("attach" in item for item in response.context["plan_left_out"])

    plan["launch"]["base_url"] = "http://10.7.7.7:8000"
    response = engineer.post("/runs/new/plan/", {"plan_file": _upload(yaml.safe_dump(plan))})
    assert "registered_endpoint" not in response.context["form"].initial
    assert any("no registered endpoint has this address" in item
               for item in response.context["plan_left_out"])


def _upload(text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("plan.yaml", text.encode(), content_type="application/yaml")


# ---------------------------------------------------------------------------------------------
# The worker against the proxy (in this process), and where the key must never land
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_run_through_the_proxy_measures_and_the_key_lands_nowhere(fleet, engineer, proxy,
                                                                   run_inline, caplog):
    caplog.set_level(logging.INFO)
    endpoint = register(fleet, proxy.base_url)
    assert engineer.post("/runs/new/", launch_data(endpoint)).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.state == "succeeded", (benchmark.error_type, benchmark.error_message)
    (point,) = benchmark.points.all()
    assert point.valid and point.completed == 4
    assert point.client["network_rtt"]["probes"] == 10
    assert point.provenance["engine"]["launch_style"] == "attach"
    assert point.provenance["engine"]["max_model_len"] == 4096
    assert any("engine queue metrics were not available" in note for note in point.notes)
    assert {"/tokenize", "/v1/completions", "/health", "/metrics"} <= proxy.paths(accepted=True)
    assert not proxy.paths(accepted=False)

    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    assert "engine queue metrics were not available from this endpoint" in page
    assert "Network RTT" in page and "part of every latency" in page
    seen = everything_stored_and_served(engineer, benchmark) + caplog.text
    assert KEY not in seen and TENANT not in seen


@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_fails_the_run_with_the_401_and_no_points(fleet, engineer, proxy,
                                                             run_inline, caplog):
    endpoint = register(fleet, proxy.base_url, api_key="sk-wrong-key-0000")
    assert engineer.post("/runs/new/", launch_data(endpoint)).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.state == "failed"
    assert "refused the API key (HTTP 401" in benchmark.error_message
    assert proxy.base_url in benchmark.error_message
    assert benchmark.points.count() == 0
    seen = everything_stored_and_served(engineer, benchmark) + caplog.text
    assert "sk-wrong-key-0000" not in seen and TENANT not in seen


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_whose_secrets_cannot_be_read_fails_before_anything_is_sent(
    fleet, engineer, proxy, run_inline
):
    endpoint = register(fleet, proxy.base_url)
    with override_settings(SECRET_KEY="the-key-before-a-rotation-0123456789abcdef"):
        stale = vault.encrypt(KEY)  # stored under a SECRET_KEY this deployment no longer has
    Endpoint.objects.filter(pk=endpoint.pk).update(api_key_encrypted=stale)
    assert engineer.post("/runs/new/", launch_data(endpoint)).status_code == 302
    benchmark = Benchmark.objects.get()
    assert (benchmark.state, benchmark.error_type) == ("failed", "SecretUnreadable")
    assert "enter the endpoint's API key and headers again" in benchmark.error_message
    assert proxy.seen == []


# ---------------------------------------------------------------------------------------------
# A real CPU engine, registered as an endpoint, measured through the form and a real worker
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_engine_started(tiny_model_dir, tmp_path_factory) -> Iterator[RunningEngine]:
    """One vLLM CPU engine serving the tiny model as "tiny", shared by the engine tests below
    (started the way the runner starts any engine, stopped when the module ends)."""
    from runner.engine.process import engines

    launch = EngineLaunch(style="cpu", startup_timeout_s=400)
    checkpoint = Checkpoint(model=str(tiny_model_dir), served_model_name="tiny")
    with engines(launch, checkpoint, EngineConfig(max_num_seqs=8), replicas=1,
                 log_dir=tmp_path_factory.mktemp("endpoint-engine")) as running:
        yield running[0]


@pytest.fixture
def cpu_server(cpu_engine_started) -> str:
    return cpu_engine_started.base_url


@pytest.fixture
def engine_proxy(cpu_server) -> Iterator[BearerProxy]:
    server = BearerProxy(cpu_server, KEY).start()
    try:
        yield server
    finally:
        server.stop()


ENGINE_RUN_TIMEOUT_S = 300


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_cpu_engine_registered_as_an_endpoint_is_measured_directly_and_behind_the_proxy(
    celery_worker_queue, cpu_engine_started, cpu_server, engine_proxy
):
    # The round trip run_plan records before every point, here to an engine it started itself.
    launched_rtt = measure_rtt(cpu_engine_started)
    assert launched_rtt is not None and 0 < launched_rtt.median_ms < 100
    node = Node.objects.get(queue=celery_worker_queue)
    fleet_client = person("fleet", "Fleet manager")
    engineer_client = person("engineer", "Engineer")
    common = {"node": node.pk, "served_model": "tiny", "extra_headers": ""}
    direct = register(fleet_client, cpu_server, name="direct", api_key="", **common)
    keyed = register(fleet_client, engine_proxy.base_url, name="keyed", **common)

    for endpoint in (direct, keyed):
        response = engineer_client.post("/runs/new/", launch_data(endpoint, name=endpoint.name))
        assert response.status_code == 302, response.content.decode()[-3000:]
        benchmark = wait_until_final(Benchmark.objects.get(name=endpoint.name),
                                     ENGINE_RUN_TIMEOUT_S)
        assert benchmark.state == "succeeded", (benchmark.error_type, benchmark.error_message)
        (point,) = benchmark.points.all()
        assert point.valid and point.completed == 4 and point.total_output_tokens == 4 * 16
        engine = point.provenance["engine"]
        assert engine["launch_style"] == "attach" and engine["served_models"] == ["tiny"]
        assert engine["version"] and engine["num_gpu_blocks"] and engine["max_model_len"]
        # The engine's /metrics answered, through the proxy too (a burst this small may end
        # between two scrapes, so the samples are counted, not those inside the window).
        assert PointData.objects.get(point=point).sample_count > 0
        assert not any("not available" in note for note in point.notes)
        rtt = point.client["network_rtt"]
        assert rtt["probes"] == 10 and 0 < rtt["median_ms"] < 100
    assert {"/tokenize", "/v1/completions", "/metrics", "/version"} <= engine_proxy.paths(
        accepted=True)
    assert not engine_proxy.paths(accepted=False)
    seen = everything_stored_and_served(engineer_client, Benchmark.objects.get(name="keyed"))
    assert KEY not in seen


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_a_wrong_model_name_and_an_unreachable_endpoint_each_fail_clearly(
    celery_worker_queue, cpu_server, engine_proxy
):
    node = Node.objects.get(queue=celery_worker_queue)
    fleet_client = person("fleet", "Fleet manager")
    engineer_client = person("engineer", "Engineer")
    common = {"node": node.pk, "extra_headers": ""}
    cases = [
        (register(fleet_client, engine_proxy.base_url, name="wrong-key", served_model="tiny",
                  api_key="sk-not-the-key", **common),
         f"the endpoint at {engine_proxy.base_url} refused the API key (HTTP 401"),
        (register(fleet_client, cpu_server, name="wrong-model", served_model="qwen-72b",
                  api_key="", **common),
         f"the endpoint at {cpu_server} serves tiny, not qwen-72b"),
        (register(fleet_client, "http://127.0.0.1:9", name="unreachable", served_model="tiny",
                  api_key="", **common),
         "cannot reach the server at http://127.0.0.1:9"),
    ]
    for endpoint, message in cases:
        response = engineer_client.post("/runs/new/", launch_data(endpoint, name=endpoint.name))
        assert response.status_code == 302
        benchmark = wait_until_final(Benchmark.objects.get(name=endpoint.name), 120)
        assert benchmark.state == "failed", endpoint.name
        assert message in benchmark.error_message, benchmark.error_message
        assert benchmark.points.count() == 0
        assert "sk-not-the-key" not in benchmark.error_message + benchmark.error_detail
