"""A worker registers each task under the name that queued messages, CELERY_TASK_ROUTES and a
worker of the previous release use: the name it was first registered under, which no longer
follows its module's path. Moving the code must change neither the names nor whether the worker
finds them."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

from benchmarks.worker.tasks import import_result_file, run_benchmark
from tests.repository import ROOT

TASK_NAMES = ["benchmarks.tasks.import_result_file", "benchmarks.tasks.run_benchmark"]

# What `celery -A config worker` does before it consumes: load the Celery app, then import the
# task modules its autodiscovery names. A fresh process, so no test's import has done it first,
# and without Django's system checks, whose URL check imports the views and with them the tasks
# whether or not the discovery finds them.
WORKER_DISCOVERY = """
import django
django.setup()
from config.celery import app
app.loader.import_default_modules()
print(*sorted(name for name in app.tasks if not name.startswith("celery.")))
"""


def test_the_worker_discovers_every_task_under_its_old_name():
    found = subprocess.run(
        [sys.executable, "-c", WORKER_DISCOVERY], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings",
             "CELERY_SKIP_CHECKS": "1"}, check=True,
    )
    assert found.stdout.split() == TASK_NAMES


def test_the_tasks_and_the_import_route_keep_their_names():
    assert sorted([import_result_file.name, run_benchmark.name]) == TASK_NAMES
    assert list(settings.CELERY_TASK_ROUTES) == [import_result_file.name]
