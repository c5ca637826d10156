"""The catalog (/catalog/): the checkpoints, runtimes, nodes and endpoints a launch chooses from.

Viewing needs a login, like every page. Adding a checkpoint or runtime needs add_*, editing it
change_* (which is also what approving it takes), marking a checkpoint trusted
trust_checkpoint, and writing a node's description change_node (benchmarks/migrations/0009).
Ticking approved or trusted is recorded in the audit log with the change, as in the admin.
Registering an endpoint needs add_endpoint, editing or checking it change_endpoint
(benchmarks/migrations/0013); registering one, or changing its address or secrets, is recorded.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import models, transaction
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from benchmarks.admin import AUDITED_FLAGS
from benchmarks.models import AuditEvent, Checkpoint, Endpoint, Node, Runtime
from benchmarks.security import outbound, vault
from benchmarks.worker.tasks import endpoint_credentials
from dashboard.access import (
    ADD_CHECKPOINT,
    ADD_ENDPOINT,
    ADD_RUNTIME,
    CHANGE_CHECKPOINT,
    CHANGE_ENDPOINT,
    CHANGE_NODE,
    CHANGE_RUNTIME,
    get_checkpoint_for_user,
)
from dashboard.forms_catalog import (
    CheckpointForm,
    EndpointForm,
    NodeForm,
    RuntimeForm,
)
from judgement.cost_view import node_price, stale_price
from runner.engine.command import EngineError, Unreachable
from runner.engine.endpoint import NO_CREDENTIALS, redact
from runner.engine.process import probe

# What an approval or a trust is given to: changing one of these on an approved (or trusted)
# row gives it to something else, so the save is recorded as if the box had been ticked anew.
LAUNCH_FIELDS = {
    Checkpoint: ("repo", "revision", "precision", "kv_cache_dtype"),
    Runtime: ("engine", "other_engine", "version", "image", "digest"),
}


def _record_approvals(user: Any, row: models.Model, form: ModelForm) -> None:
    """An event per approved / trusted box that this save ticked, or that stays ticked while
    what it vouches for changed. Called inside the save's transaction."""
    moved = [name for name in LAUNCH_FIELDS[type(row)] if name in form.changed_data]
    for field, action in AUDITED_FLAGS.items():
        if not getattr(row, field, False):
            continue
        if field in form.changed_data:
            AuditEvent.objects.record(user, action, row)
        elif moved:
            AuditEvent.objects.record(user, action, row, detail=f"kept; {', '.join(moved)} changed")


def _save_catalog_form(request: HttpRequest, form: ModelForm) -> models.Model:
    with transaction.atomic():
        row = form.save()
        _record_approvals(request.user, row, form)
    messages.success(request, f"Saved {row}.")
    return row


def _form_page(request: HttpRequest, form: ModelForm, ctx: dict[str, Any]) -> HttpResponse:
    return render(request, "catalog/form.html", {"form": form, **ctx},
                  status=400 if form.errors else 200)


# -- checkpoints ------------------------------------------------------------------------------


@login_required
@require_safe
def checkpoints(request: HttpRequest) -> HttpResponse:
    ctx = {"section": "checkpoints", "checkpoints": Checkpoint.objects.all()}
    return render(request, "catalog/checkpoints.html", ctx)


@login_required
@permission_required(ADD_CHECKPOINT, raise_exception=True)
def checkpoint_new(request: HttpRequest) -> HttpResponse:
    form = CheckpointForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        _save_catalog_form(request, form)
        return redirect("catalog_checkpoints")
    return _form_page(request, form, {"section": "checkpoints", "title": "New checkpoint"})


@login_required
@permission_required(CHANGE_CHECKPOINT, raise_exception=True)
def checkpoint_edit(request: HttpRequest, pk: int) -> HttpResponse:
    checkpoint = get_checkpoint_for_user(request, pk)
    form = CheckpointForm(request.POST or None, instance=checkpoint, user=request.user)
    if request.method == "POST" and form.is_valid():
        _save_catalog_form(request, form)
        return redirect("catalog_checkpoints")
    return _form_page(request, form, {"section": "checkpoints", "title": f"Edit {checkpoint}"})


# -- runtimes ---------------------------------------------------------------------------------


@login_required
@require_safe
def runtimes(request: HttpRequest) -> HttpResponse:
    ctx = {"section": "runtimes", "runtimes": Runtime.objects.all()}
    return render(request, "catalog/runtimes.html", ctx)


@login_required
@permission_required(ADD_RUNTIME, raise_exception=True)
def runtime_new(request: HttpRequest) -> HttpResponse:
    form = RuntimeForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        _save_catalog_form(request, form)
        return redirect("catalog_runtimes")
    return _form_page(request, form, {"section": "runtimes", "title": "New runtime"})


@login_required
@permission_required(CHANGE_RUNTIME, raise_exception=True)
def runtime_edit(request: HttpRequest, pk: int) -> HttpResponse:
    runtime = get_object_or_404(Runtime, pk=pk)
    form = RuntimeForm(request.POST or None, instance=runtime, user=request.user)
    if request.method == "POST" and form.is_valid():
        _save_catalog_form(request, form)
        return redirect("catalog_runtimes")
    return _form_page(request, form, {"section": "runtimes", "title": f"Edit {runtime}"})


# -- nodes ------------------------------------------------------------------------------------


@login_required
@require_safe
def nodes(request: HttpRequest) -> HttpResponse:
    """Each node with its GPU-hour price as the cost figures read it, and whether it is old."""
    rows = []
    for node in Node.objects.all():
        price = node_price(node)
        rows.append({"node": node, "price": price, "stale": stale_price(price)})
    return render(request, "catalog/nodes.html", {"section": "nodes", "rows": rows})


@login_required
@permission_required(CHANGE_NODE, raise_exception=True)
def node_edit(request: HttpRequest, pk: int) -> HttpResponse:
    node = get_object_or_404(Node, pk=pk)
    form = NodeForm(request.POST or None, instance=node)
    if request.method == "POST" and form.is_valid():
        # Only what people write (description, price): a full save would write back the
        # hardware and heartbeat read above over whatever the node's worker wrote since.
        Node.objects.filter(pk=node.pk).update(**form.written_fields())
        messages.success(request, f"Saved the description and price of {node.queue}.")
        return redirect("catalog_nodes")
    ctx = {"section": "nodes", "title": f"Edit {node.queue}", "node": node}
    return _form_page(request, form, ctx)


# -- endpoints --------------------------------------------------------------------------------


@login_required
@require_safe
def endpoints(request: HttpRequest) -> HttpResponse:
    rows = Endpoint.objects.select_related("node", "checkpoint", "runtime")
    return render(request, "catalog/endpoints.html", {"section": "endpoints", "endpoints": rows})


@login_required
@permission_required(ADD_ENDPOINT, raise_exception=True)
def endpoint_new(request: HttpRequest) -> HttpResponse:
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            endpoint = form.save(commit=False)
            endpoint.created_by = request.user if request.user.is_authenticated else None
            endpoint.save()
            detail = "; ".join([f"at {endpoint.base_url}", *form.changes])
            AuditEvent.objects.record(request.user, AuditEvent.Action.REGISTERED, endpoint,
                                      detail=detail)
        messages.success(request, f"Registered {endpoint.name}. Check it, then launch against "
                                  "it from the launch form.")
        return redirect("catalog_endpoints")
    return _form_page(request, form, {"section": "endpoints", "title": "Register an endpoint"})


@login_required
@permission_required(CHANGE_ENDPOINT, raise_exception=True)
def endpoint_edit(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(Endpoint, pk=pk)
    form = EndpointForm(request.POST or None, instance=endpoint)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            endpoint = form.save()
            moved = endpoint.base_url != form.stored_url
            # The secrets first: a long address must not cut their note off (300 characters).
            changes = form.changes + ([f"address now {endpoint.base_url}"] if moved else [])
            if changes:  # a new address or new secrets: what the node's worker is pointed at
                AuditEvent.objects.record(request.user, AuditEvent.Action.REGISTERED, endpoint,
                                          detail="; ".join(changes))
        messages.success(request, f"Saved {endpoint.name}.")
        if form.dropped:
            messages.warning(request, f"{endpoint.name} moved to another server: its stored "
                                      f"{' and '.join(form.dropped)} were removed. Enter them "
                                      "again if the new server needs them.")
        return redirect("catalog_endpoints")
    return _form_page(request, form, {"section": "endpoints", "title": f"Edit {endpoint.name}"})


@login_required
@require_POST
@permission_required(CHANGE_ENDPOINT, raise_exception=True)
def endpoint_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Try /health and /v1/models from the dashboard's host, with the stored credentials.

    Only a hint: runs go from the endpoint's node, whose worker must reach it (the dashboard's
    host may be in another network). The note never carries a secret. Requests go only where
    HEADROOM_OUTBOUND_NETWORKS allows (benchmarks/security/outbound.py).
    """
    endpoint = get_object_or_404(Endpoint.objects.select_related("node"), pk=pk)
    ok, note = _check_endpoint(endpoint)
    Endpoint.objects.filter(pk=endpoint.pk).update(
        checked_at=timezone.now(), check_ok=ok, check_note=note[:500]
    )
    (messages.success if ok else messages.error)(request, f"{endpoint.name}: {note}")
    return redirect("catalog_endpoints")


def _check_endpoint(endpoint: Endpoint) -> tuple[bool, str]:
    where = (f"from the dashboard's host; runs go from {endpoint.node.queue}'s worker, which "
             "must reach it too")
    credentials = NO_CREDENTIALS
    try:
        credentials = endpoint_credentials(endpoint)
        info = probe(endpoint.base_url, endpoint.served_model, credentials,
                     transport=outbound.GuardedTransport)
    except (vault.SecretUnreadable, ValueError) as exc:
        return False, str(exc)
    except Unreachable:
        # One answer for refused, timed out and not allowed: the check must not map a network.
        return False, f"{outbound.UNREACHABLE} ({where})"
    except EngineError as exc:
        return False, redact(f"{exc} ({where})", credentials)
    version = f", vLLM {info.version}" if info.version else ""
    served = ", ".join(info.served_models) or f"{endpoint.served_model} (not listed)"
    return True, redact(f"answered {where}: serves {served}{version}", credentials)
