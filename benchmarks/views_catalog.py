"""The catalog (/catalog/): the checkpoints, runtimes and nodes a launch chooses from.

Viewing needs a login, like every page. Adding a checkpoint or runtime needs add_*, editing it
change_* (which is also what approving it takes), marking a checkpoint trusted
trust_checkpoint, and writing a node's description change_node (benchmarks/migrations/0009).
Ticking approved or trusted is recorded in the audit log with the change, as in the admin.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from benchmarks.admin import AUDITED_FLAGS
from benchmarks.forms_catalog import (
    CHANGE_CHECKPOINT,
    CHANGE_RUNTIME,
    TRUST_CHECKPOINT,
    CheckpointForm,
    NodeForm,
    RuntimeForm,
)
from benchmarks.models import AuditEvent, Checkpoint, Node, Runtime

ADD_CHECKPOINT = "benchmarks.add_checkpoint"
ADD_RUNTIME = "benchmarks.add_runtime"
CHANGE_NODE = "benchmarks.change_node"

# What an approval or a trust is given to: changing one of these on an approved (or trusted)
# row gives it to something else, so the save is recorded as if the box had been ticked anew.
LAUNCH_FIELDS = {
    Checkpoint: ("repo", "revision", "precision", "kv_cache_dtype"),
    Runtime: ("engine", "other_engine", "version", "image", "digest"),
}


def _get_checkpoint_for_user(request: HttpRequest, pk: int) -> Checkpoint:
    """A checkpoint to edit. A trusted one only by someone who may trust: pointing its repo
    or revision at other weights would carry the trust to them (as CheckpointAdmin refuses)."""
    checkpoint = get_object_or_404(Checkpoint, pk=pk)
    if checkpoint.trusted and not request.user.has_perm(TRUST_CHECKPOINT):
        raise PermissionDenied
    return checkpoint


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
    checkpoint = _get_checkpoint_for_user(request, pk)
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
    return render(request, "catalog/nodes.html", {"section": "nodes", "nodes": Node.objects.all()})


@login_required
@permission_required(CHANGE_NODE, raise_exception=True)
def node_edit(request: HttpRequest, pk: int) -> HttpResponse:
    node = get_object_or_404(Node, pk=pk)
    form = NodeForm(request.POST or None, instance=node)
    if request.method == "POST" and form.is_valid():
        # Only the description: a full save would write back the hardware and heartbeat read
        # above over whatever the node's worker wrote since.
        Node.objects.filter(pk=node.pk).update(description=form.cleaned_data["description"])
        messages.success(request, f"Saved the description of {node.queue}.")
        return redirect("catalog_nodes")
    ctx = {"section": "nodes", "title": f"Describe {node.queue}", "node": node}
    return _form_page(request, form, ctx)
