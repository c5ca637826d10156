"""Who may see and do what on the logged-in site: the permissions each action needs (the roles
are in benchmarks/migrations/0009) and the lookups of a row as this user may see it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from benchmarks.models import Benchmark, CapacityPlan, Checkpoint, Comparison, ResultImport

# Runs and imports.
LAUNCH = "benchmarks.launch_benchmark"
CANCEL_ANY = "benchmarks.cancel_any_benchmark"
IMPORT = "benchmarks.import_results"
ACCEPT_BASELINE = "benchmarks.accept_baseline"
VIEW_ANY_IMPORT = "benchmarks.view_resultimport"
VIEW_AUDIT = "benchmarks.view_auditevent"
# The catalog.
ADD_CHECKPOINT = "benchmarks.add_checkpoint"
CHANGE_CHECKPOINT = "benchmarks.change_checkpoint"
TRUST_CHECKPOINT = "benchmarks.trust_checkpoint"
ADD_RUNTIME = "benchmarks.add_runtime"
CHANGE_RUNTIME = "benchmarks.change_runtime"
CHANGE_NODE = "benchmarks.change_node"
ADD_ENDPOINT = "benchmarks.add_endpoint"
CHANGE_ENDPOINT = "benchmarks.change_endpoint"
# The judgement pages: reading them needs only a login; storing a choice needs these.
CHOOSE_OPERATING_POINT = "benchmarks.add_operatingpoint"
SAVE_COMPARISON = "benchmarks.add_comparison"
MAKE_CAPACITY_PLAN = "benchmarks.add_capacityplan"
ADD_REFERENCE = "benchmarks.add_externalreference"
EDIT_REFERENCE = "benchmarks.change_externalreference"


class AuthenticatedHttpRequest(HttpRequest):
    """HttpRequest.user is a User or an AnonymousUser; @login_required leaves only a User
    (django-stubs' documented pattern)."""

    user: User


def get_benchmark_for_user(request: HttpRequest, code: UUID) -> Benchmark:
    """Every logged-in teammate sees every run: Headroom is a team's shared lab notebook."""
    queryset = Benchmark.objects.select_related("node", "runtime", "checkpoint", "workload")
    return get_object_or_404(queryset, code=code)


def get_import_for_user(request: AuthenticatedHttpRequest, code: UUID) -> ResultImport:
    """An upload's import is its uploader's; another's needs view_resultimport (superusers).
    Anyone else gets a 404: the page names a file that someone else chose to upload."""
    queryset = ResultImport.objects.select_related("benchmark")
    if not request.user.has_perm(VIEW_ANY_IMPORT):
        queryset = queryset.filter(created_by=request.user)
    return get_object_or_404(queryset, code=code)


def get_comparison_for_user(request: HttpRequest, code: UUID) -> Comparison:
    """Every logged-in teammate sees every saved comparison, as every run."""
    queryset = Comparison.objects.select_related(
        "baseline_point__benchmark__node", "candidate_point__benchmark__node", "created_by"
    )
    return get_object_or_404(queryset, code=code)


def get_capacity_plan_for_user(request: HttpRequest, code: UUID) -> CapacityPlan:
    """Every logged-in teammate sees every capacity plan, as every run it was made from."""
    queryset = CapacityPlan.objects.select_related(
        "benchmark__node", "comparison", "check_run", "derived_from", "created_by")
    return get_object_or_404(queryset, code=code)


def get_checkpoint_for_user(request: HttpRequest, pk: int) -> Checkpoint:
    """A checkpoint to edit. A trusted one only by someone who may trust: pointing its repo
    or revision at other weights would carry the trust to them (as CheckpointAdmin refuses)."""
    checkpoint = get_object_or_404(Checkpoint, pk=pk)
    if checkpoint.trusted and not request.user.has_perm(TRUST_CHECKPOINT):
        raise PermissionDenied
    return checkpoint


def can_cancel(user: Any, benchmark: Benchmark) -> bool:
    """A launcher cancels their own runs; another's takes cancel_any_benchmark as well, so a
    teammate cannot free a shared GPU by stopping someone else's sweep."""
    if not user.has_perm(LAUNCH):
        return False
    return benchmark.created_by_id == user.pk or user.has_perm(CANCEL_ANY)


def can_accept_baseline(user: Any, benchmark: Benchmark) -> bool:
    """Accepting (or withdrawing) a plan's baseline needs accept_baseline, and a run launched
    from a plan: an import has none, so the endpoint refuses what its page does not offer."""
    return user.has_perm(ACCEPT_BASELINE) and benchmark.source == Benchmark.Source.LAUNCHED
