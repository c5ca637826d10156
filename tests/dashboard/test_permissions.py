"""Who may do what: every URL walked as each persona, the cancel rule, the admin's checkpoint
rights, and the audit log each action writes.

Personas: anonymous; a new account (in no group: it can only view); an Engineer; a Fleet
manager; an Administrator (the roles of benchmarks/migrations/0009). What each role may do is
written out below as the specification, independently of the migration that grants it.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from kombu.exceptions import OperationalError as BrokerError

from benchmarks.models import (
    AuditEvent,
    Benchmark,
    CapacityPlan,
    Checkpoint,
    Comparison,
    ExternalReference,
    Point,
    ResultImport,
    Runtime,
)
from reports.models import Report
from tests.judgement.helpers import make_capacity_plan
from tests.personas import grant_role
from tests.reports.conftest import make_sweep, point
from tests.reports.helpers import make_report
from tests.rows import (
    REVISION,
    make_benchmark,
    make_node,
    make_point_result,
)

pytestmark = pytest.mark.django_db

LAUNCH = "benchmarks.launch_benchmark"
CANCEL_ANY = "benchmarks.cancel_any_benchmark"
IMPORT = "benchmarks.import_results"
CHOOSE = "benchmarks.add_operatingpoint"
COMPARE = "benchmarks.add_comparison"
ADD_REFERENCE = "benchmarks.add_externalreference"
EDIT_REFERENCE = "benchmarks.change_externalreference"
PUBLISH = "reports.publish_report"
TRUST = "benchmarks.trust_checkpoint"
ADD_CHECKPOINT = "benchmarks.add_checkpoint"
CHANGE_CHECKPOINT = "benchmarks.change_checkpoint"
ADD_RUNTIME = "benchmarks.add_runtime"
CHANGE_RUNTIME = "benchmarks.change_runtime"
CHANGE_NODE = "benchmarks.change_node"
ADD_ENDPOINT = "benchmarks.add_endpoint"
CHANGE_ENDPOINT = "benchmarks.change_endpoint"
VIEW_AUDIT = "benchmarks.view_auditevent"
ACCEPT_BASELINE = "benchmarks.accept_baseline"
PLAN_CAPACITY = "benchmarks.add_capacityplan"

ENGINEER = frozenset({LAUNCH, IMPORT, CHOOSE, COMPARE, ADD_REFERENCE, EDIT_REFERENCE, PUBLISH,
                      ACCEPT_BASELINE, PLAN_CAPACITY})
FLEET_MANAGER = ENGINEER | {
    CANCEL_ANY,
    "benchmarks.add_checkpoint", "benchmarks.change_checkpoint",
    "benchmarks.add_runtime", "benchmarks.change_runtime",
    # Registering an endpoint points a node's worker at an address someone typed.
    ADD_ENDPOINT, CHANGE_ENDPOINT,
}
ADMINISTRATOR = FLEET_MANAGER | {
    TRUST, VIEW_AUDIT, "benchmarks.add_node", "benchmarks.change_node", "benchmarks.delete_node",
    "reports.view_report",
}
ROLES = {"Engineer": ENGINEER, "Fleet manager": FLEET_MANAGER, "Administrator": ADMINISTRATOR}

# ---------------------------------------------------------------------------------------------
# Every URL and who may use it
# ---------------------------------------------------------------------------------------------

PUBLIC = "anyone, logged in or not"
LOGIN = "any active account"


@dataclass
class World:
    """The rows the URLs name: a stored sweep, a saved comparison, a reference and a report,
    the run and the report being the persona's own (ownership is tested apart)."""

    run: Benchmark
    point: Point
    comparison: Comparison
    reference: ExternalReference
    report: Report
    result_import: ResultImport
    capacity_plan: CapacityPlan


@dataclass(frozen=True)
class Rule:
    """Who may GET and who may POST; None: the view does not take that method (405)."""

    get: str | None
    post: str | None
    kwargs: Callable[[World], dict[str, Any]] = lambda world: {}

    def needs_login(self) -> bool:
        return any(rule not in (None, PUBLIC) for rule in (self.get, self.post))


def run(world: World) -> dict[str, Any]:
    return {"code": world.run.code}


def report(world: World) -> dict[str, Any]:
    return {"code": world.report.code}


def report_version(world: World) -> dict[str, Any]:
    return {"code": world.report.code, "number": 1}


def report_link(world: World) -> dict[str, Any]:
    # The token the report's builder was shown; the database keeps only its digest.
    return {"token": world.report.issued_token}


def comparison(world: World) -> dict[str, Any]:
    return {"code": world.comparison.code}


def capacity_plan(world: World) -> dict[str, Any]:
    return {"code": world.capacity_plan.code}


def reference(world: World) -> dict[str, Any]:
    return {"pk": world.reference.pk}


def result_import(world: World) -> dict[str, Any]:
    return {"code": world.result_import.code}


# The run's own (untrusted) checkpoint, runtime and node.
def checkpoint(world: World) -> dict[str, Any]:
    return {"pk": world.run.checkpoint_id}


def runtime(world: World) -> dict[str, Any]:
    return {"pk": world.run.runtime_id}


def node(world: World) -> dict[str, Any]:
    return {"pk": world.run.node_id}


def endpoint(world: World) -> dict[str, Any]:
    """An endpoint on the run's node. Nothing listens at its address: "check now" is refused
    at once."""
    from benchmarks.models import Endpoint

    row, _ = Endpoint.objects.get_or_create(
        name="walked", base_url="http://127.0.0.1:9", served_model="tiny",
        node_id=world.run.node_id, checkpoint_id=world.run.checkpoint_id,
        runtime_id=world.run.runtime_id,
    )
    return {"pk": row.pk}


# Keyed by URL name (the route where it has none). The Django admin is not walked: every one of
# its URLs is behind the admin site's own staff check and model permissions (tested below).
RULES: dict[str, Rule] = {
    "/": Rule(PUBLIC, PUBLIC),
    "login": Rule(PUBLIC, PUBLIC),
    "logout": Rule(None, PUBLIC),
    "password_change": Rule(LOGIN, LOGIN),
    "password_change_done": Rule(LOGIN, None),
    "runs": Rule(LOGIN, None),
    "run_new": Rule(LAUNCH, LAUNCH),
    "run_new_from_plan": Rule(None, LAUNCH),
    "run_import": Rule(IMPORT, IMPORT),
    # The persona's own upload; another's is a 404 (tests/dashboard/test_upload_limits.py).
    "run_import_status": Rule(IMPORT, None, result_import),
    "run_import_progress": Rule(IMPORT, None, result_import),
    "run_detail": Rule(LOGIN, None, run),
    "run_progress": Rule(LOGIN, None, run),
    "run_cancel": Rule(None, LAUNCH, run),  # the persona's own run; another's is tested below
    "run_baseline": Rule(None, ACCEPT_BASELINE, run),
    "point_samples": Rule(LOGIN, None, lambda w: {"code": w.run.code, "point_id": w.point.pk}),
    "point_timeline": Rule(LOGIN, None, lambda w: {"code": w.run.code, "point_id": w.point.pk}),
    "run_json": Rule(LOGIN, None, run),
    "run_csv": Rule(LOGIN, None, run),
    "run_llm_d": Rule(LOGIN, None, run),
    "run_plan_yaml": Rule(LOGIN, None, run),
    "run_again": Rule(LAUNCH, None, run),  # the launch form filled in: it launches nothing
    "operating_point": Rule(LOGIN, CHOOSE, run),
    "comparisons": Rule(LOGIN, None),
    "comparison_new": Rule(COMPARE, COMPARE),
    "comparison_detail": Rule(LOGIN, None, comparison),
    "capacity_new": Rule(PLAN_CAPACITY, PLAN_CAPACITY, run),
    "capacity_new_from_comparison": Rule(PLAN_CAPACITY, PLAN_CAPACITY, comparison),
    "capacity_detail": Rule(LOGIN, None, capacity_plan),
    # Saving makes a new plan; the one edited is kept as it was.
    "capacity_edit": Rule(PLAN_CAPACITY, PLAN_CAPACITY, capacity_plan),
    # The check is a launch: the plan's config on the run's node.
    "capacity_check": Rule(None, LAUNCH, capacity_plan),
    "references": Rule(LOGIN, None),
    "reference_new": Rule(ADD_REFERENCE, ADD_REFERENCE),
    "reference_edit": Rule(EDIT_REFERENCE, EDIT_REFERENCE, reference),
    "reference_compare": Rule(LOGIN, None, reference),
    "audit": Rule(VIEW_AUDIT, None),
    "catalog_checkpoints": Rule(LOGIN, None),
    "catalog_checkpoint_new": Rule(ADD_CHECKPOINT, ADD_CHECKPOINT),
    "catalog_checkpoint_edit": Rule(CHANGE_CHECKPOINT, CHANGE_CHECKPOINT, checkpoint),
    "catalog_runtimes": Rule(LOGIN, None),
    "catalog_runtime_new": Rule(ADD_RUNTIME, ADD_RUNTIME),
    "catalog_runtime_edit": Rule(CHANGE_RUNTIME, CHANGE_RUNTIME, runtime),
    "catalog_nodes": Rule(LOGIN, None),
    "catalog_node_edit": Rule(CHANGE_NODE, CHANGE_NODE, node),
    "catalog_endpoints": Rule(LOGIN, None),
    "catalog_endpoint_new": Rule(ADD_ENDPOINT, ADD_ENDPOINT),
    "catalog_endpoint_edit": Rule(CHANGE_ENDPOINT, CHANGE_ENDPOINT, endpoint),
    "catalog_endpoint_check": Rule(None, CHANGE_ENDPOINT, endpoint),
    "report_list": Rule(LOGIN, None),
    "report_new": Rule(PUBLISH, PUBLISH, run),
    "report_new_from_comparison": Rule(PUBLISH, PUBLISH, comparison),
    "report_preview": Rule(LOGIN, None, report),  # the owner's only: others get 404
    "report_publish": Rule(None, PUBLISH, report),
    "report_reissue": Rule(None, PUBLISH, report_version),  # the owner's only: others get 404
    "report_revoke": Rule(None, PUBLISH, report),
    "report_public": Rule(PUBLIC, None, report_link),
    "report_pdf": Rule(PUBLIC, None, report_link),
}


def routed_urls() -> dict[str, str]:
    """Every URL pattern outside the admin, by name (its route where it has none)."""
    found: dict[str, str] = {}

    def walk(patterns: list, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if not route.startswith("admin/"):
                    walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found[pattern.name or f"/{route}"] = route

    walk(get_resolver().url_patterns, "")
    return found


def url_of(key: str, rule: Rule, world: World) -> str:
    return key if key.startswith("/") else reverse(key, kwargs=rule.kwargs(world))


def test_every_url_has_a_permission_rule():
    assert sorted(routed_urls()) == sorted(RULES)


def expected(rule: Rule, method: str, perms: frozenset[str] | None) -> str:
    """What the persona must get (perms None: anonymous)."""
    allowed = rule.get if method == "GET" else rule.post
    if allowed is None:
        # login_required comes first: an anonymous visitor learns nothing about the method.
        return "login" if perms is None and rule.needs_login() else "method not taken"
    if allowed == PUBLIC:
        return "served"
    if perms is None:
        return "login"
    return "served" if allowed == LOGIN or allowed in perms else "forbidden"


def outcome(response) -> str:
    status = response.status_code
    if status == 302 and response["Location"].startswith(f"{settings.LOGIN_URL}?next="):
        return "login"
    if status == 403:
        return "forbidden"
    if status == 405:
        return "method not taken"
    # 400: a POST without its form's fields, answered with the form's errors.
    return "served" if status in (200, 302, 400) else f"status {status}"


def make_world(owner) -> World:
    sweep = make_sweep(owner)
    return World(
        run=sweep,
        point=point(sweep, 8, 32),
        comparison=Comparison.objects.create(
            name="8 -> 64", baseline_point=point(sweep, 8, 32),
            candidate_point=point(sweep, 64, 32), created_by=owner),
        reference=ExternalReference.objects.create(
            source="Vendor blog", url="https://example.com/h200",
            recorded_on=datetime.date(2026, 10, 1), value=1050.0, gpu_name="NVIDIA H200",
            workload_spec="63-66 in / 256 out"),
        report=make_report(sweep, owner),
        result_import=ResultImport.objects.create(created_by=owner, file_name="a.jsonl", size=1),
        capacity_plan=make_capacity_plan(sweep, owner),
    )


def new_account(username: str = "newcomer"):
    return get_user_model().objects.create_user(username, password=f"{username}-password")


def persona(name: str):
    if name == "anonymous":
        return None
    user = new_account(name.lower().replace(" ", "-"))
    return user if name == "new account" else grant_role(user, name)


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize("name", ["anonymous", "new account", *ROLES])
def test_every_url_answers_each_persona_as_its_rule_says(name):
    user = persona(name)
    world = make_world(user or new_account("stranger"))
    perms = None if user is None else ROLES.get(name, frozenset())
    wrong = []
    # Every GET before any POST: a POST may revoke the report or cancel the run.
    for method in ("GET", "POST"):
        for key, rule in RULES.items():
            url = url_of(key, rule, world)
            # A client of its own per request: the walk logs out on the way.
            response = getattr(client_for(user), method.lower())(url)
            if outcome(response) != expected(rule, method, perms):
                wrong.append(f"{method} {url}: {outcome(response)}, "
                             f"expected {expected(rule, method, perms)}")
    assert wrong == []


def test_the_demo_user_is_an_administrator_not_a_superuser():
    call_command("create_demo_user", password="demo-password", stdout=io.StringIO())
    demo = get_user_model().objects.get(username="demo")
    assert list(demo.groups.values_list("name", flat=True)) == ["Administrator"]
    assert demo.is_staff and not demo.is_superuser
    assert demo.get_all_permissions() == ADMINISTRATOR


def test_each_role_holds_exactly_its_permissions():
    for name, expected_perms in ROLES.items():
        held = Group.objects.get(name=name).permissions.select_related("content_type")
        assert {f"{p.content_type.app_label}.{p.codename}" for p in held} == expected_perms, name


# ---------------------------------------------------------------------------------------------
# A new account can only view; what a persona cannot do is not offered
# ---------------------------------------------------------------------------------------------


def test_a_new_account_holds_no_permission_and_is_offered_no_action():
    newcomer = new_account()
    assert newcomer.get_all_permissions() == set()
    sweep = make_sweep(newcomer)  # even on its own run
    queued = make_benchmark(node=make_node("gpu-q"), created_by=newcomer)
    client = client_for(newcomer)
    pages = [client.get(url).content.decode()
             for url in ("/runs/", f"/runs/{sweep.code}/", f"/runs/{queued.code}/",
                         "/comparisons/", "/references/",
                         f"/runs/{sweep.code}/operating-point/")]
    assert all(p for p in pages)
    for action in ('href="/runs/new/"', 'href="/runs/import/"', "/cancel/", "/report/",
                   "/again/", "/comparisons/new/", "/references/new/", 'id="operating-point-form"',
                   'href="/audit/"'):
        assert not any(action in page for page in pages), action


def test_an_engineer_is_offered_what_the_role_may_do_and_not_the_audit_log():
    engineer = grant_role(new_account("engineer"))
    sweep = make_sweep(engineer)
    queued = make_benchmark(node=make_node("gpu-q"), created_by=engineer)
    client = client_for(engineer)
    run_page = client.get(f"/runs/{sweep.code}/").content.decode()
    queued_page = client.get(f"/runs/{queued.code}/").content.decode()
    assert 'href="/runs/new/"' in run_page and 'href="/runs/import/"' in run_page
    assert f"/runs/{sweep.code}/report/" in run_page and "/comparisons/new/" in run_page
    assert f'href="/runs/{sweep.code}/again/"' in run_page
    assert 'id="operating-point-form"' in run_page
    assert f"/runs/{queued.code}/cancel/" in queued_page
    assert 'href="/audit/"' not in run_page


# ---------------------------------------------------------------------------------------------
# Cancel: the launch permission and (the run's owner or cancel_any_benchmark)
# ---------------------------------------------------------------------------------------------


def cancel(user, benchmark: Benchmark):
    response = client_for(user).post(f"/runs/{benchmark.code}/cancel/")
    benchmark.refresh_from_db()
    return response


def test_an_engineer_cancels_their_own_queued_run_and_the_cancel_is_recorded():
    engineer = grant_role(new_account("engineer"))
    benchmark = make_benchmark(created_by=engineer)
    assert cancel(engineer, benchmark).status_code == 302
    assert benchmark.state == "cancelled"
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.target) == ("cancelled", engineer, benchmark)
    assert event.detail == "queued -> cancelled"


def test_an_engineer_can_neither_cancel_nor_be_offered_to_cancel_someone_elses_run():
    launcher, teammate = (grant_role(new_account(n)) for n in ("launcher", "teammate"))
    benchmark = make_benchmark(state="running", created_by=launcher)
    page = client_for(teammate).get(f"/runs/{benchmark.code}/").content.decode()
    assert f"/runs/{benchmark.code}/cancel/" not in page
    assert cancel(teammate, benchmark).status_code == 403
    assert (benchmark.state, benchmark.cancel_requested) == ("running", False)
    assert not AuditEvent.objects.exists()


def test_a_fleet_manager_cancels_anyones_run():
    launcher = grant_role(new_account("launcher"))
    manager = grant_role(new_account("manager"), "Fleet manager")
    benchmark = make_benchmark(state="running", created_by=launcher)
    page = client_for(manager).get(f"/runs/{benchmark.code}/").content.decode()
    assert f"/runs/{benchmark.code}/cancel/" in page
    assert cancel(manager, benchmark).status_code == 302
    assert benchmark.cancel_requested
    assert AuditEvent.objects.get().actor == manager


def test_cancelling_any_run_without_the_launch_permission_cancels_nothing():
    someone = new_account("someone")
    someone.user_permissions.add(Permission.objects.get(codename="cancel_any_benchmark"))
    mine = make_benchmark(created_by=someone)
    assert cancel(someone, mine).status_code == 403
    assert mine.state == "queued"


def test_cancelling_a_run_that_had_already_ended_records_nothing():
    engineer = grant_role(new_account("engineer"))
    benchmark = make_benchmark(state="succeeded", created_by=engineer)
    assert cancel(engineer, benchmark).status_code == 302
    assert not AuditEvent.objects.exists()


# ---------------------------------------------------------------------------------------------
# The admin: staff status to enter, change_checkpoint to approve, trust_checkpoint to trust
# ---------------------------------------------------------------------------------------------


def staff(name: str, role: str):
    user = grant_role(new_account(name), role)
    user.is_staff = True
    user.save()
    return user


CHECKPOINT_FORM = {"repo": "Qwen/Qwen3-0.6B", "revision": REVISION, "precision": "bf16",
                   "kv_cache_dtype": "", "approved": "on", "trusted": "on"}


def test_the_admin_is_closed_to_an_account_without_staff_status():
    engineer = grant_role(new_account("engineer"), "Administrator")
    response = client_for(engineer).get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_a_fleet_manager_approves_a_checkpoint_but_cannot_trust_it():
    manager = staff("manager", "Fleet manager")
    response = client_for(manager).post("/admin/benchmarks/checkpoint/add/", CHECKPOINT_FORM)
    assert response.status_code == 302, response.content.decode()[-2000:]
    checkpoint = Checkpoint.objects.get()
    assert (checkpoint.approved, checkpoint.trusted) == (True, False)
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.target) == ("approved", manager, checkpoint)


def test_an_administrator_trusts_a_checkpoint_and_a_fleet_manager_may_not_edit_it_then():
    admin_user = staff("admin", "Administrator")
    checkpoint = Checkpoint.objects.create(repo="Qwen/Qwen3-0.6B", revision=REVISION,
                                           approved=True)
    url = f"/admin/benchmarks/checkpoint/{checkpoint.pk}/change/"
    response = client_for(admin_user).post(url, CHECKPOINT_FORM)
    assert response.status_code == 302, response.content.decode()[-2000:]
    checkpoint.refresh_from_db()
    assert checkpoint.trusted
    event = AuditEvent.objects.get()
    assert (event.action, event.actor) == ("trusted", admin_user)
    # Its repo could now be pointed at other weights: a fleet manager may only look.
    manager = staff("manager", "Fleet manager")
    edited = client_for(manager).post(url, {**CHECKPOINT_FORM, "repo": "evil/weights"})
    assert edited.status_code == 403
    checkpoint.refresh_from_db()
    assert checkpoint.repo == "Qwen/Qwen3-0.6B"


def test_approving_a_runtime_in_the_admin_is_recorded_once():
    manager = staff("manager", "Fleet manager")
    runtime = Runtime.objects.create(engine="vllm", version="0.11.0")
    url = f"/admin/benchmarks/runtime/{runtime.pk}/change/"
    form = {"engine": "vllm", "other_engine": "", "version": "0.11.0", "image": "",
            "digest": "", "approved": "on"}
    assert client_for(manager).post(url, form).status_code == 302
    assert client_for(manager).post(url, form).status_code == 302  # saved again, unchanged
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.target) == ("approved", manager, runtime)


# ---------------------------------------------------------------------------------------------
# The audit log: each action writes exactly one event, with the right actor
# ---------------------------------------------------------------------------------------------


def only_event(action: str) -> AuditEvent:
    events = list(AuditEvent.objects.all())
    assert [e.action for e in events] == [action]
    return events[0]


@pytest.fixture
def engineer():
    return grant_role(new_account("engineer"))


def launch_form(node) -> dict[str, Any]:
    from tests.rows import launch_form_data

    return launch_form_data(node)


def test_a_launch_is_recorded_with_its_launcher(engineer, monkeypatch):
    sent = []
    monkeypatch.setattr("benchmarks.worker.tasks.enqueue_benchmark", sent.append)
    response = client_for(engineer).post("/runs/new/", launch_form(make_node("gpu-l")))
    assert response.status_code == 302
    benchmark = Benchmark.objects.get()
    assert sent == [benchmark]
    event = only_event("launched")
    assert (event.actor, event.actor_name, event.target) == (engineer, "engineer", benchmark)


def test_a_launch_the_broker_refused_leaves_neither_run_nor_record(engineer, monkeypatch):
    def refuse(benchmark):
        raise BrokerError("connection refused")

    monkeypatch.setattr("benchmarks.worker.tasks.enqueue_benchmark", refuse)
    response = client_for(engineer).post("/runs/new/", launch_form(make_node("gpu-l")))
    assert response.status_code == 400
    assert not Benchmark.objects.exists() and not AuditEvent.objects.exists()


def results_file() -> SimpleUploadedFile:
    lines = "".join(make_point_result(max_num_seqs=s).model_dump_json() + "\n" for s in (8, 64))
    return SimpleUploadedFile("sweep.jsonl", lines.encode())


def test_an_upload_is_recorded_with_its_importer(engineer, run_imports_inline):
    response = client_for(engineer).post("/runs/import/", {"file": results_file()})
    assert response.status_code == 302
    event = only_event("imported")
    assert (event.actor, event.target) == (engineer, Benchmark.objects.get())
    assert event.detail == "from sweep.jsonl"


def test_a_command_line_import_is_recorded_without_an_account(tmp_path):
    path = tmp_path / "sweep.jsonl"
    path.write_bytes(results_file().read())
    call_command("import_results", str(path))
    event = only_event("imported")
    assert (event.actor, event.actor_name, event.target) == (None, "", Benchmark.objects.get())


REPORT_FORM = {"title": "Tuning result", "language": "en", "items": ["headline"]}


def test_building_a_report_records_its_first_publication(engineer):
    sweep = make_sweep(engineer)
    form = {**REPORT_FORM, "baseline_point": point(sweep, 8, 32).pk,
            "candidate_point": point(sweep, 64, 32).pk}
    response = client_for(engineer).post(f"/runs/{sweep.code}/report/", form)
    assert response.status_code == 200  # the page showing its link
    event = only_event("published")
    assert (event.actor, event.target) == (engineer, Report.objects.get())


def test_publishing_again_and_revoking_twice_record_one_event_each(engineer):
    built = make_report(make_sweep(engineer), engineer)
    client = client_for(engineer)
    assert client.post(f"/reports/{built.code}/publish/").status_code == 200
    assert only_event("published").detail == "version 2"
    AuditEvent.objects.all().delete()
    for _ in range(2):
        assert client.post(f"/reports/{built.code}/revoke/").status_code == 302
    event = only_event("revoked")
    assert (event.actor, event.target) == (engineer, built)


def test_an_administrator_revokes_any_report_in_the_admin_and_it_is_recorded(engineer):
    built = make_report(make_sweep(engineer), engineer)
    admin_user = staff("admin", "Administrator")
    response = client_for(admin_user).post(
        "/admin/reports/report/", {"action": "revoke", "_selected_action": [built.pk]})
    assert response.status_code == 302
    built.refresh_from_db()
    assert built.revoked_at is not None
    event = only_event("revoked")
    assert (event.actor, event.target) == (admin_user, built)


def test_revoking_in_the_admin_needs_the_publish_permission(engineer):
    built = make_report(make_sweep(engineer), engineer)
    reader = new_account("reader")
    reader.is_staff = True
    reader.save()
    reader.user_permissions.add(Permission.objects.get(codename="view_report"))
    client_for(reader).post("/admin/reports/report/",
                            {"action": "revoke", "_selected_action": [built.pk]})
    built.refresh_from_db()
    assert built.revoked_at is None
    assert not AuditEvent.objects.exists()


def test_the_demo_report_is_recorded_as_published_by_the_demo_user(engineer):
    sweep = make_sweep(engineer)
    call_command("finish_demo", str(sweep.code), username=engineer.username, wait=5,
                 stdout=io.StringIO())
    event = only_event("published")
    assert (event.actor, event.target) == (engineer, Report.objects.get())


@pytest.mark.django_db(transaction=True)
def test_an_event_is_refused_outside_the_transaction_of_its_change():
    benchmark = make_benchmark()
    with pytest.raises(RuntimeError, match="transaction"):
        AuditEvent.objects.record(None, AuditEvent.Action.CANCELLED, benchmark)
    with transaction.atomic():
        AuditEvent.objects.record(None, AuditEvent.Action.CANCELLED, benchmark)
    assert AuditEvent.objects.count() == 1


def test_the_audit_page_shows_administrators_who_did_what():
    launcher = grant_role(new_account("launcher"))
    benchmark = make_benchmark(created_by=launcher)
    cancel(launcher, benchmark)
    admin_user = grant_role(new_account("admin"), "Administrator")
    page = client_for(admin_user).get("/audit/").content.decode()
    assert "launcher" in page and "cancelled" in page
    assert f'href="/runs/{benchmark.code}/"' in page
    assert client_for(launcher).get("/audit/").status_code == 403


def test_the_audit_log_is_read_only_in_the_admin():
    engineer = grant_role(new_account("engineer"))
    benchmark = make_benchmark(created_by=engineer)
    cancel(engineer, benchmark)
    event = AuditEvent.objects.get()
    admin_user = staff("admin", "Administrator")
    client = client_for(admin_user)
    assert client.get("/admin/benchmarks/auditevent/").status_code == 200
    assert client.get("/admin/benchmarks/auditevent/add/").status_code == 403
    assert client.post(f"/admin/benchmarks/auditevent/{event.pk}/delete/",
                       {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()
