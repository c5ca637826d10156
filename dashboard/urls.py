from django.urls import path

from dashboard import (
    views,
    views_capacity,
    views_catalog,
    views_imports,
    views_judgement,
    views_launch,
)

urlpatterns = [
    path("runs/", views.runs, name="runs"),
    path("runs/new/", views_launch.run_new, name="run_new"),
    path("runs/new/plan/", views_launch.run_new_from_plan, name="run_new_from_plan"),
    path("runs/import/", views_imports.run_import, name="run_import"),
    path("runs/imports/<uuid:code>/", views_imports.run_import_status, name="run_import_status"),
    path(
        "runs/imports/<uuid:code>/progress.json",
        views_imports.run_import_progress,
        name="run_import_progress",
    ),
    path("runs/<uuid:code>/", views.run_detail, name="run_detail"),
    path("runs/<uuid:code>/progress.json", views.run_progress, name="run_progress"),
    path("runs/<uuid:code>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<uuid:code>/baseline/", views.run_baseline, name="run_baseline"),
    path(
        "runs/<uuid:code>/points/<int:point_id>/samples.json",
        views.point_samples,
        name="point_samples",
    ),
    path(
        "runs/<uuid:code>/points/<int:point_id>/timeline.json",
        views.point_timeline,
        name="point_timeline",
    ),
    path("runs/<uuid:code>.json", views.run_json, name="run_json"),
    path("runs/<uuid:code>.csv", views.run_csv, name="run_csv"),
    path("runs/<uuid:code>.llm-d.yaml", views.run_llm_d, name="run_llm_d"),
    path("runs/<uuid:code>/plan.yaml", views.run_plan_yaml, name="run_plan_yaml"),
    path("runs/<uuid:code>/again/", views_launch.run_again, name="run_again"),
    # The judgement layer (dashboard/views_judgement.py).
    path(
        "runs/<uuid:code>/operating-point/",
        views_judgement.operating_point,
        name="operating_point",
    ),
    # Capacity plans (dashboard/views_capacity.py).
    path("runs/<uuid:code>/capacity/", views_capacity.capacity_new, name="capacity_new"),
    path("comparisons/<uuid:code>/capacity/", views_capacity.capacity_new_from_comparison,
         name="capacity_new_from_comparison"),
    path("capacity/<uuid:code>/", views_capacity.capacity_detail, name="capacity_detail"),
    path("capacity/<uuid:code>/edit/", views_capacity.capacity_edit, name="capacity_edit"),
    path("capacity/<uuid:code>/check/", views_capacity.capacity_check, name="capacity_check"),
    path("comparisons/", views_judgement.comparisons, name="comparisons"),
    path("comparisons/new/", views_judgement.comparison_new, name="comparison_new"),
    path(
        "comparisons/<uuid:code>/", views_judgement.comparison_detail, name="comparison_detail"
    ),
    path("references/", views_judgement.references, name="references"),
    path("references/new/", views_judgement.reference_new, name="reference_new"),
    path("references/<int:pk>/edit/", views_judgement.reference_edit, name="reference_edit"),
    path(
        "references/<int:pk>/compare/",
        views_judgement.reference_compare,
        name="reference_compare",
    ),
    path("audit/", views.audit, name="audit"),
    # What a launch chooses from (dashboard/views_catalog.py).
    path("catalog/checkpoints/", views_catalog.checkpoints, name="catalog_checkpoints"),
    path(
        "catalog/checkpoints/new/", views_catalog.checkpoint_new, name="catalog_checkpoint_new"
    ),
    path(
        "catalog/checkpoints/<int:pk>/edit/",
        views_catalog.checkpoint_edit,
        name="catalog_checkpoint_edit",
    ),
    path("catalog/runtimes/", views_catalog.runtimes, name="catalog_runtimes"),
    path("catalog/runtimes/new/", views_catalog.runtime_new, name="catalog_runtime_new"),
    path(
        "catalog/runtimes/<int:pk>/edit/", views_catalog.runtime_edit, name="catalog_runtime_edit"
    ),
    path("catalog/nodes/", views_catalog.nodes, name="catalog_nodes"),
    path("catalog/nodes/<int:pk>/edit/", views_catalog.node_edit, name="catalog_node_edit"),
    path("catalog/endpoints/", views_catalog.endpoints, name="catalog_endpoints"),
    path("catalog/endpoints/new/", views_catalog.endpoint_new, name="catalog_endpoint_new"),
    path(
        "catalog/endpoints/<int:pk>/edit/",
        views_catalog.endpoint_edit,
        name="catalog_endpoint_edit",
    ),
    path(
        "catalog/endpoints/<int:pk>/check/",
        views_catalog.endpoint_check,
        name="catalog_endpoint_check",
    ),
]
