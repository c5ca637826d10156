"""Imported runs say what they are.

- An imported run was launched from no plan: its plan key is blank, it is never a baseline,
  and it has no verdict. Before this, every import's "plan" ({name, imported_from}) gave one
  key, so an engineer accepting any import set the baseline, and the verdicts, of everyone's.
- A point in Headroom's own format that arrived through an import gets the headroom-import
  caveat that benchmarks.storage.points now adds on import (the other sources had theirs already).
"""

from django.conf import settings
from django.db import migrations, models

# analysis.caveats.HEADROOM_IMPORT(_TEXT) as of this migration: a later edit of the rule's
# wording must not change what this step wrote.
HEADROOM_IMPORT = "headroom-import"
HEADROOM_IMPORT_TEXT = (
    "Imported from a Headroom result file, not measured on this dashboard: its figures and "
    "provenance (hardware, runtime, checkpoint) are as the file states them."
)


def unkey_imported_runs(apps, schema_editor) -> None:
    benchmark_model = apps.get_model("benchmarks", "Benchmark")
    benchmark_model.objects.filter(source="imported").update(
        plan_key="", accepted_baseline=False, regression="")


def caveat_imported_headroom_points(apps, schema_editor) -> None:
    point_model = apps.get_model("benchmarks", "Point")
    caveat_model = apps.get_model("benchmarks", "Caveat")
    points = (point_model.objects.filter(benchmark__source="imported", source="headroom")
              .exclude(caveats__code=HEADROOM_IMPORT).values_list("pk", flat=True))
    caveat_model.objects.bulk_create(
        caveat_model(point_id=pk, kind="scope", code=HEADROOM_IMPORT, text=HEADROOM_IMPORT_TEXT,
                     automatic=True)
        for pk in points.iterator()
    )


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0027_point_host_cpu'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(unkey_imported_runs, migrations.RunPython.noop),
        migrations.RunPython(caveat_imported_headroom_points, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='benchmark',
            constraint=models.CheckConstraint(condition=models.Q(('accepted_baseline', False), ('source', 'launched'), _connector='OR'), name='benchmark_baseline_launched'),
        ),
    ]
