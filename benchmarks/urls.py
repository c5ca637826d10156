from django.urls import path

from benchmarks import views

urlpatterns = [
    path("runs/", views.runs, name="runs"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/import/", views.run_import, name="run_import"),
    path("runs/<uuid:code>/", views.run_detail, name="run_detail"),
    path("runs/<uuid:code>/progress.json", views.run_progress, name="run_progress"),
    path("runs/<uuid:code>/cancel/", views.run_cancel, name="run_cancel"),
    path(
        "runs/<uuid:code>/points/<int:point_id>/samples.json",
        views.point_samples,
        name="point_samples",
    ),
    path("runs/<uuid:code>.json", views.run_json, name="run_json"),
    path("runs/<uuid:code>.csv", views.run_csv, name="run_csv"),
]
