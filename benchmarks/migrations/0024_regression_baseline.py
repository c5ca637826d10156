"""Regression watch: each run's plan key, the plan's accepted baseline, the verdict against it,
and who may accept a baseline (Engineers and up: accepting one changes every verdict of the
plan that teammates see). The roles are written out again here as of this migration.
"""

import importlib

from django.conf import settings
from django.db import migrations, models

ROLES_0009 = importlib.import_module("benchmarks.migrations.0009_permissions_and_groups")
ROLES_0013 = importlib.import_module("benchmarks.migrations.0013_endpoints_grids_estimates")
BASELINE_PERMISSION = (("benchmarks", "benchmark", "accept_baseline"),)
ROLES = {name: permissions + BASELINE_PERMISSION
         for name, permissions in ROLES_0013.ROLES.items()}


def create_roles(apps, schema_editor) -> None:
    group_model = apps.get_model("auth", "Group")
    for name, permissions in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        group.permissions.set([ROLES_0009.permission(apps, *key) for key in permissions])


def roles_as_of_0013(apps, schema_editor) -> None:
    ROLES_0013.create_roles(apps, schema_editor)


def set_plan_keys(apps, schema_editor) -> None:
    """The existing runs' keys, as Benchmark.save sets them for new ones. The runner's own
    function: a key is only worth having if old and new runs of a plan get the same one."""
    from runner.regression import plan_key

    benchmark_model = apps.get_model("benchmarks", "Benchmark")
    for run in benchmark_model.objects.only("pk", "plan").iterator():
        benchmark_model.objects.filter(pk=run.pk).update(plan_key=plan_key(run.plan))


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0023_peer_figures'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='benchmark',
            options={'permissions': [('launch_benchmark', 'Can launch benchmarks and cancel their own'), ('cancel_any_benchmark', 'Can cancel a benchmark someone else launched'), ('import_results', 'Can import result files'), ('accept_baseline', "Can accept a run as its plan's regression baseline")]},
        ),
        migrations.RemoveConstraint(
            model_name='auditevent',
            name='audit_event_action_known',
        ),
        migrations.AddField(
            model_name='benchmark',
            name='accepted_baseline',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='plan_key',
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='regression',
            field=models.CharField(blank=True, editable=False, help_text='runner.regression verdict against the baseline', max_length=20),
        ),
        migrations.AlterField(
            model_name='auditevent',
            name='action',
            field=models.CharField(choices=[('launched', 'Launched'), ('cancelled', 'Cancelled'), ('imported', 'Imported'), ('published', 'Published'), ('revoked', 'Revoked'), ('reissued', 'Reissued'), ('approved', 'Approved'), ('trusted', 'Trusted'), ('registered', 'Registered'), ('baseline', 'Baseline')], max_length=20),
        ),
        migrations.AddIndex(
            model_name='benchmark',
            index=models.Index(fields=['plan_key'], name='benchmark_plan_key'),
        ),
        migrations.AddConstraint(
            model_name='auditevent',
            constraint=models.CheckConstraint(condition=models.Q(('action__in', ['launched', 'cancelled', 'imported', 'published', 'revoked', 'reissued', 'approved', 'trusted', 'registered', 'baseline'])), name='audit_event_action_known'),
        ),
        migrations.AddConstraint(
            model_name='benchmark',
            constraint=models.CheckConstraint(condition=models.Q(('accepted_baseline', False), ('state', 'succeeded'), _connector='OR'), name='benchmark_baseline_succeeded'),
        ),
        migrations.AddConstraint(
            model_name='benchmark',
            constraint=models.UniqueConstraint(condition=models.Q(('accepted_baseline', True)), fields=('plan_key',), name='benchmark_one_baseline_per_plan'),
        ),
        migrations.RunPython(set_plan_keys, migrations.RunPython.noop),
        migrations.RunPython(create_roles, roles_as_of_0013),
    ]
