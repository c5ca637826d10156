"""Registered endpoints, the launch's pruned configs and its estimate, and who may register.

Registering an endpoint points a node's worker at an address someone typed, so it is a fleet
manager's permission (add_endpoint, change_endpoint), as adding a checkpoint is. The roles are
written out again here as of this migration (0009 wrote them first).
"""

import importlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

ROLES_0009 = importlib.import_module("benchmarks.migrations.0009_permissions_and_groups")
ENGINEER, FLEET_MANAGER, ADMINISTRATOR = (
    ROLES_0009.ENGINEER, ROLES_0009.FLEET_MANAGER, ROLES_0009.ADMINISTRATOR
)
ENGINEER_PERMISSIONS = ROLES_0009.ENGINEER_PERMISSIONS
ENDPOINT_PERMISSIONS = (
    ("benchmarks", "endpoint", "add_endpoint"),
    ("benchmarks", "endpoint", "change_endpoint"),
)
FLEET_MANAGER_PERMISSIONS = ROLES_0009.FLEET_MANAGER_PERMISSIONS + ENDPOINT_PERMISSIONS
ADMINISTRATOR_PERMISSIONS = ROLES_0009.ADMINISTRATOR_PERMISSIONS + ENDPOINT_PERMISSIONS
ROLES = {
    ENGINEER: ENGINEER_PERMISSIONS,
    FLEET_MANAGER: FLEET_MANAGER_PERMISSIONS,
    ADMINISTRATOR: ADMINISTRATOR_PERMISSIONS,
}
ACTIONS = [
    ("launched", "Launched"), ("cancelled", "Cancelled"), ("imported", "Imported"),
    ("published", "Published"), ("revoked", "Revoked"), ("reissued", "Reissued"),
    ("approved", "Approved"), ("trusted", "Trusted"), ("registered", "Registered"),
]


def create_roles(apps, schema_editor) -> None:
    """Each role's group holding exactly its permissions (run again, it puts them back)."""
    group_model = apps.get_model("auth", "Group")
    for name, permissions in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        group.permissions.set([ROLES_0009.permission(apps, *key) for key in permissions])


def roles_as_of_0009(apps, schema_editor) -> None:
    ROLES_0009.create_roles(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0012_node_description'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Endpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.SlugField(help_text='e.g. customer-prod-h200', max_length=100, unique=True)),
                ('base_url', models.CharField(help_text='http(s)://host:port of the OpenAI-compatible server', max_length=300)),
                ('served_model', models.CharField(help_text='the model name the server answers to (its /v1/models id)', max_length=300)),
                ('api_key_encrypted', models.TextField(blank=True, editable=False)),
                ('extra_headers_encrypted', models.TextField(blank=True, editable=False)),
                ('extra_header_names', models.CharField(blank=True, editable=False, max_length=500)),
                ('description', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('checked_at', models.DateTimeField(blank=True, null=True)),
                ('check_ok', models.BooleanField(blank=True, null=True)),
                ('check_note', models.CharField(blank=True, max_length=500)),
                ('checkpoint', models.ForeignKey(help_text='the weights the endpoint is registered as serving', on_delete=django.db.models.deletion.PROTECT, to='benchmarks.checkpoint')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                ('node', models.ForeignKey(help_text='the worker node that can reach the endpoint', on_delete=django.db.models.deletion.PROTECT, to='benchmarks.node')),
                ('runtime', models.ForeignKey(help_text='the engine and version it is registered as running', on_delete=django.db.models.deletion.PROTECT, to='benchmarks.runtime')),
            ],
            options={
                'ordering': ['name'],
                'constraints': [models.CheckConstraint(condition=models.Q(('base_url__regex', '^https?://')), name='endpoint_url_is_http')],
            },
        ),
        migrations.AddField(
            model_name='benchmark',
            name='endpoint',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to='benchmarks.endpoint'),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='plan_notes',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='estimated_wall_s',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='estimated_gpu_hours',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='estimate_basis',
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.RemoveConstraint(
            model_name='auditevent',
            name='audit_event_action_known',
        ),
        migrations.AlterField(
            model_name='auditevent',
            name='action',
            field=models.CharField(choices=ACTIONS, max_length=20),
        ),
        migrations.AddConstraint(
            model_name='auditevent',
            constraint=models.CheckConstraint(condition=models.Q(('action__in', [a for a, _ in ACTIONS])), name='audit_event_action_known'),
        ),
        migrations.RunPython(create_roles, roles_as_of_0009),
    ]
