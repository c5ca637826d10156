"""make demo: its first sweep passes the launch form, and it finds a broker with or without Redis."""

from __future__ import annotations

import socket
import subprocess
import sys

from django.conf import settings
from django.utils import timezone

from benchmarks.demo import choose_broker
from benchmarks.forms import LaunchForm
from benchmarks.management.commands.launch_demo_sweep import DEMO_FORM
from runner.schema import SweepPlan
from tests.dashboard.factories import make_checkpoint, make_node, make_runtime


def test_the_demo_sweep_is_a_valid_launch(db):
    node = make_node(queue="cpu-local", launch_style="cpu", gpu_count=0, gpu_name="")
    node.last_heartbeat_at = timezone.now()
    node.save()
    data = {
        **DEMO_FORM,
        "node": node.pk,
        "checkpoint": make_checkpoint(repo=f"{settings.HEADROOM_MODEL_DIRS[0]}/tiny", revision="").pk,
        "runtime": make_runtime().pk,
    }
    form = LaunchForm(data)
    assert form.is_valid(), form.errors
    plan: SweepPlan = form.cleaned_data["plan"]
    assert [c.max_num_seqs for c in plan.engine_configs] == [4, 16, 64]
    assert [load.num_requests for load in plan.loads] == [16, 32, 64, 128]


def test_it_uses_redis_when_it_answers():
    url = "redis://127.0.0.1:6379/0"
    assert choose_broker(url) == url


def test_it_falls_back_to_a_filesystem_broker_when_redis_is_down():
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert choose_broker(f"redis://127.0.0.1:{port}/0") == "filesystem://"


def test_the_filesystem_broker_gets_its_folders(tmp_path):
    code = (
        "import django, os; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'])"
    )
    env = {"CELERY_BROKER_URL": "filesystem://", "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "PATH": "/usr/bin:/bin"}  # the demo's own settings: DEBUG on, set
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().endswith("var/broker/messages")
