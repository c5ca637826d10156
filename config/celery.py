"""The Celery app. Every setting lives in config/settings.py under the CELERY_ prefix."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("headroom")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The tasks live with the rest of the worker (benchmarks/worker/tasks.py), not in an app's
# top-level tasks module, so the package is named; each task keeps its registered name.
app.autodiscover_tasks(["benchmarks.worker"])
