"""An imported run was launched from no plan: its plan key is blank, it is never a baseline, and
it has no verdict. Before this, every import's "plan" ({name, imported_from}) gave one key, so an
engineer accepting any import set the baseline, and the verdicts, of everyone's imports.
"""

from django.conf import settings
from django.db import migrations, models


def unkey_imported_runs(apps, schema_editor) -> None:
    benchmark_model = apps.get_model("benchmarks", "Benchmark")
    benchmark_model.objects.filter(source="imported").update(
        plan_key="", accepted_baseline=False, regression="")


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0026_workload_lora_split'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(unkey_imported_runs, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='benchmark',
            constraint=models.CheckConstraint(condition=models.Q(('accepted_baseline', False), ('source', 'launched'), _connector='OR'), name='benchmark_baseline_launched'),
        ),
    ]
