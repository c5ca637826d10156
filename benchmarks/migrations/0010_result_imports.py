"""Uploaded result files are imported by a worker: a row per upload records its state, progress,
error and the run it made (benchmarks.models.ResultImport)."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("benchmarks", "0009_permissions_and_groups"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ResultImport",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("code", models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ("file_name", models.CharField(max_length=255)),
                ("size", models.PositiveBigIntegerField(help_text="bytes received")),
                ("name", models.CharField(blank=True, help_text="the run's name, if given", max_length=200)),
                ("stated", models.JSONField(blank=True, default=dict, help_text="benchmarks.imports.StatedFacts given at upload")),
                ("state", models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed")], default="queued", max_length=10)),
                ("progress", models.PositiveIntegerField(default=0, help_text="points read so far")),
                ("error_message", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("benchmark", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="benchmarks.benchmark")),
                ("created_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "ordering": ["-created_at"],
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("state__in", ["queued", "running", "succeeded", "failed"])), name="result_import_state_known"),
                    models.CheckConstraint(condition=models.Q(("benchmark__isnull", True), ("state", "succeeded"), _connector="OR"), name="result_import_run_only_when_succeeded"),
                    models.CheckConstraint(condition=models.Q(("finished_at__isnull", True), ("state__in", ["succeeded", "failed"]), _connector="OR"), name="result_import_finished_only_when_final"),
                ],
            },
        ),
    ]
