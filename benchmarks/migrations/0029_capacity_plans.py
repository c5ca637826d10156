"""Capacity plans: a demand sized per engine config, kept with its inputs and answer, and who
may make one (Engineers and up, as a saved comparison). The roles are written out again here as
of this migration.
"""

import importlib

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.conf import settings
from django.db import migrations, models


ROLES_0009 = importlib.import_module("benchmarks.migrations.0009_permissions_and_groups")
ROLES_0024 = importlib.import_module("benchmarks.migrations.0024_regression_baseline")
PLAN_PERMISSION = (("benchmarks", "capacityplan", "add_capacityplan"),)
ROLES = {name: permissions + PLAN_PERMISSION for name, permissions in ROLES_0024.ROLES.items()}


def create_roles(apps, schema_editor) -> None:
    group_model = apps.get_model("auth", "Group")
    for name, permissions in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        group.permissions.set([ROLES_0009.permission(apps, *key) for key in permissions])


def roles_as_of_0024(apps, schema_editor) -> None:
    ROLES_0024.create_roles(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0028_imported_runs'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='CapacityPlan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('code', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('name', models.CharField(max_length=200)),
                ('scope', models.CharField(choices=[('run', 'this run'), ('plan', "every run of this run's plan"), ('comparison', "the comparison's two configs")], default='run', max_length=12)),
                ('plan_key', models.CharField(blank=True, max_length=64)),
                ('point_ids', models.JSONField(default=list)),
                ('inputs', models.JSONField(help_text='analysis.capacity_plan.PlanInputs')),
                ('outputs', models.JSONField(help_text='analysis.capacity_plan.CapacityPlan')),
                ('met', models.BooleanField(help_text='some engine config meets the demand')),
                ('check_config', models.CharField(blank=True, max_length=300)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('benchmark', models.ForeignKey(help_text="the run it was made from (a comparison's candidate run)", on_delete=django.db.models.deletion.PROTECT, related_name='capacity_plans', to='benchmarks.benchmark')),
                ('check_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='capacity_checks', to='benchmarks.benchmark')),
                ('comparison', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='capacity_plans', to='benchmarks.comparison')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                ('derived_from', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='derived', to='benchmarks.capacityplan')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['benchmark', '-created_at'], name='capacity_plan_run_created')],
                'constraints': [models.CheckConstraint(condition=models.Q(models.Q(('comparison__isnull', False), ('scope', 'comparison')), models.Q(models.Q(('scope', 'comparison'), _negated=True), ('comparison__isnull', True)), _connector='OR'), name='capacity_plan_comparison_with_its_scope'), models.CheckConstraint(condition=models.Q(('check_run__isnull', True), models.Q(('check_config', ''), _negated=True), _connector='OR'), name='capacity_plan_check_names_its_config')],
            },
        ),
        migrations.RunPython(create_roles, roles_as_of_0024),
    ]
