"""Who may do what: the actions' permissions, the audit log, and the three roles as groups.

Viewing needs only a login: a new account, in no group, can read every run, comparison and
reference and nothing more. Each role holds the one before it, so a person needs one group:

- Engineer: launches sweeps and cancels their own, imports result files, chooses operating
  points, saves comparisons, records and edits external references, builds, publishes and
  revokes customer reports.
- Fleet manager: an Engineer who also looks after the shared GPU fleet: adds and approves the
  checkpoints and runtimes that may be launched (Django admin) and cancels anyone's run.
- Administrator: a Fleet manager who also marks checkpoints trusted (code-loading engine flags),
  administers nodes, reads the audit log and can revoke any report in the admin.

The roles are written out here as of this migration, as a migration should be (a later change
is a new migration that sets the groups again). Permission rows are created here when missing:
on a fresh database Django only creates them after every migration has run.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

ENGINEER = "Engineer"
FLEET_MANAGER = "Fleet manager"
ADMINISTRATOR = "Administrator"

ENGINEER_PERMISSIONS = (
    ("benchmarks", "benchmark", "launch_benchmark"),
    ("benchmarks", "benchmark", "import_results"),
    ("benchmarks", "operatingpoint", "add_operatingpoint"),
    ("benchmarks", "comparison", "add_comparison"),
    ("benchmarks", "externalreference", "add_externalreference"),
    ("benchmarks", "externalreference", "change_externalreference"),
    ("reports", "report", "publish_report"),
)
FLEET_MANAGER_PERMISSIONS = ENGINEER_PERMISSIONS + (
    ("benchmarks", "benchmark", "cancel_any_benchmark"),
    # Adding or changing a checkpoint or runtime is approving it (its approved box).
    ("benchmarks", "checkpoint", "add_checkpoint"),
    ("benchmarks", "checkpoint", "change_checkpoint"),
    ("benchmarks", "runtime", "add_runtime"),
    ("benchmarks", "runtime", "change_runtime"),
)
ADMINISTRATOR_PERMISSIONS = FLEET_MANAGER_PERMISSIONS + (
    ("benchmarks", "checkpoint", "trust_checkpoint"),
    ("benchmarks", "node", "add_node"),
    ("benchmarks", "node", "change_node"),
    ("benchmarks", "node", "delete_node"),
    ("benchmarks", "auditevent", "view_auditevent"),
    ("reports", "report", "view_report"),
)
ROLES = {
    ENGINEER: ENGINEER_PERMISSIONS,
    FLEET_MANAGER: FLEET_MANAGER_PERMISSIONS,
    ADMINISTRATOR: ADMINISTRATOR_PERMISSIONS,
}


def permission(apps, app_label: str, model_name: str, codename: str):
    """The permission row, created with the name Django would give it if it is not there yet."""
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    model = apps.get_model(app_label, model_name)
    content_type, _ = content_type_model.objects.get_or_create(
        app_label=app_label, model=model_name
    )
    action = codename.split("_", 1)[0]
    name = dict(model._meta.permissions).get(codename) or (
        f"Can {action} {model._meta.verbose_name_raw}"
    )
    row, _ = permission_model.objects.get_or_create(
        content_type=content_type, codename=codename, defaults={"name": name}
    )
    return row


def create_roles(apps, schema_editor) -> None:
    """Each role's group holding exactly its permissions (run again, it puts them back)."""
    group_model = apps.get_model("auth", "Group")
    for name, permissions in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        group.permissions.set([permission(apps, *key) for key in permissions])


def remove_roles(apps, schema_editor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLES)).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0008_launch_approval'),
        ('reports', '0003_report_permissions'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='benchmark',
            options={'permissions': [('launch_benchmark', 'Can launch benchmarks and cancel their own'), ('cancel_any_benchmark', 'Can cancel a benchmark someone else launched'), ('import_results', 'Can import result files')]},
        ),
        migrations.AlterModelOptions(
            name='checkpoint',
            options={'ordering': ['repo', 'revision'], 'permissions': [('trust_checkpoint', 'Can mark a checkpoint trusted for code-loading engine flags')]},
        ),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_name', models.CharField(blank=True, max_length=150)),
                ('action', models.CharField(choices=[('launched', 'Launched'), ('cancelled', 'Cancelled'), ('imported', 'Imported'), ('published', 'Published'), ('revoked', 'Revoked'), ('approved', 'Approved'), ('trusted', 'Trusted')], max_length=20)),
                ('target_id', models.PositiveBigIntegerField()),
                ('target_label', models.CharField(max_length=300)),
                ('detail', models.CharField(blank=True, max_length=300)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('target_type', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='contenttypes.contenttype')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['-created_at'], name='audit_event_created'), models.Index(fields=['target_type', 'target_id'], name='audit_event_target')],
                'constraints': [models.CheckConstraint(condition=models.Q(('action__in', ['launched', 'cancelled', 'imported', 'published', 'revoked', 'approved', 'trusted'])), name='audit_event_action_known')],
            },
        ),
        migrations.RunPython(create_roles, remove_roles),
    ]
