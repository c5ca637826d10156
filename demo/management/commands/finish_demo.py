"""python manage.py finish_demo CODE : after the demo sweep, save its comparison and a report.

Waits for the run to end. If it succeeded, saves the comparison of the smallest and the best
max_num_seqs setting (demo.comparison.save_demo_comparison) and builds an English customer
report from it through the report form, exactly as an engineer would, then prints both links.
"""

from __future__ import annotations

import time
from uuid import UUID

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmarks.models import AuditEvent, Benchmark
from demo.comparison import save_demo_comparison
from judgement.comparison_view import compare_points
from reports.forms import DEFAULT_ITEMS, ReportForm

POLL_S = 2


class Command(BaseCommand):
    help = "Wait for the demo sweep, then save its comparison and a customer report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("code", type=UUID)
        parser.add_argument("--username", default="demo")
        parser.add_argument("--wait", type=float, default=3600, help="seconds to wait at most")

    def handle(self, *args: object, code: UUID, username: str, wait: float, **options: object):
        benchmark = _wait_until_final(code, wait)
        if benchmark.state != Benchmark.State.SUCCEEDED:
            raise CommandError(
                f"the demo sweep ended {benchmark.state}: "
                f"{benchmark.error_message or 'see its page'}"
            )
        comparison = save_demo_comparison(benchmark)
        if comparison is None:
            raise CommandError("the demo sweep has no two max_num_seqs settings to compare")
        label = compare_points(comparison.baseline_point, comparison.candidate_point)
        self.stdout.write(
            f"Saved comparison {comparison.name} "
            f"({'controlled' if label.controlled else 'NOT controlled'}): "
            f"/comparisons/{comparison.code}/"
        )
        user = get_user_model().objects.get(username=username)
        form = ReportForm(
            {
                "title": "Demo: scheduling settings on the CPU engine",
                "language": "en",
                "items": [str(item) for item in DEFAULT_ITEMS],
                "baseline_point": comparison.baseline_point.pk,
                "candidate_point": comparison.candidate_point.pk,
            },
            benchmark=comparison.candidate_point.benchmark,
            comparison=comparison,
        )
        if not form.is_valid():
            raise CommandError(f"the demo report was refused: {form.errors.as_text()}")
        with transaction.atomic():  # as the build view: the report and its record together
            report = form.save_for(user)
            AuditEvent.objects.record(user, AuditEvent.Action.PUBLISHED, report,
                                      detail="version 1 (built by manage.py finish_demo)")
        # Shown once: only the token's digest is stored.
        self.stdout.write(f"Customer report (no login needed): /r/{report.issued_token}/")


def _wait_until_final(code: UUID, seconds: float) -> Benchmark:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        benchmark = Benchmark.objects.get(code=code)
        if benchmark.state in Benchmark.FINAL_STATES:
            return benchmark
        time.sleep(POLL_S)
    raise CommandError(f"the demo sweep did not finish within {seconds:.0f} s")
