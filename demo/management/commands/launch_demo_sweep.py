"""python manage.py launch_demo_sweep : the demo's first sweep, through the launch form's own path.

Waits for the local CPU worker to register its node, then launches max_num_seqs 4, 16, 64 on
bursts of 16 to 128 requests against the tiny model, exactly as if the form had been submitted:
the same validation, the row committed first, only its id enqueued.
"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmarks.models import AuditEvent, Checkpoint, Node, Runtime
from benchmarks.worker import tasks
from dashboard.forms_launch import LaunchForm

# Small enough to finish in a few minutes on two cores, large enough to show the effect: at
# max_num_seqs 4 most of each burst waits; at 64 the engine admits it.
DEMO_FORM = {
    "name": "Demo: max_num_seqs sweep on the CPU engine",
    "workload_preset": "custom",
    "prompt_source": "case_study",
    "input_tokens_min": 63,
    "input_tokens_max": 66,
    "output_tokens": 128,
    "request_count": 128,
    "temperature": 0,
    "ignore_eos": True,
    "endpoint": "completions",
    "stream": True,
    "load_shape": "burst",
    # The demo's comparison (max_num_seqs 4 against the best) then says whether batching
    # changed any output.
    "keep_outputs": True,
    "max_num_seqs": "4, 16, 64",
    "max_model_len": 1024,
    "load_levels": "16, 32, 64, 128",
    "repeats": 1,
    "replicas": 1,
    # One draw per level: each config's control point (burst 16 again at its end) is what
    # measures the host's noise, so every headline still carries an interval.
    "control_point": True,
    # No end control: one engine start more (about a minute on two cores) where the control
    # points already measure the noise.
    "end_control": "off",
    "redraw_disturbed": 1,
}


class Command(BaseCommand):
    help = "Launch the demo sweep on the local CPU worker's node."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queue", default="cpu-local")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--wait", type=float, default=120, help="seconds to wait for the node")

    def handle(self, *args: object, queue: str, username: str, wait: float, **options: object):
        node = _wait_for_node(queue, wait)
        checkpoint = Checkpoint.objects.filter(approved=True).order_by("-id").first()
        runtime = Runtime.objects.filter(approved=True).order_by("-id").first()
        if checkpoint is None or runtime is None:
            raise CommandError("no checkpoint or runtime: run create_demo_user --tiny-model first")
        form = LaunchForm(
            {**DEMO_FORM, "node": node.pk, "checkpoint": checkpoint.pk, "runtime": runtime.pk}
        )
        if not form.is_valid():
            raise CommandError(f"the demo launch was refused: {form.errors.as_text()}")
        user = get_user_model().objects.get(username=username)
        with transaction.atomic():  # as the launch view: the row and its record, then enqueue
            benchmark = form.save(user)
            AuditEvent.objects.record(user, AuditEvent.Action.LAUNCHED, benchmark,
                                      detail="manage.py launch_demo_sweep")
        tasks.enqueue_benchmark(benchmark)
        self.stdout.write(f"Launched the demo sweep: /runs/{benchmark.code}/")


def _wait_for_node(queue: str, seconds: float) -> Node:
    """The worker registers its node when it is ready; until then the form has nowhere to send."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        node = Node.objects.filter(queue=queue).first()
        if node is not None and node.is_alive():
            return node
        time.sleep(1)
    raise CommandError(f"no worker registered node {queue} within {seconds:.0f} s")
