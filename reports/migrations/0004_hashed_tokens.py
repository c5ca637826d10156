"""Link tokens stored as their SHA-256 digests; reports named by a code on the engineer's pages.

Every stored token is replaced by its digest in place, so every link already sent keeps opening
what it opened: the page hashes the token from the URL and finds the same digest. A version 1
shares its report's token today, so both get the same digest and stay equal.

The engineer's pages named a report by its token, which is no longer known: each report gets a
UUID code for them instead (filled for existing rows before it becomes unique).

Backwards, the digests stay where they are: a token cannot be recovered from its digest, so
after going back every link answers 404 until a new version is published.
"""

import hashlib
import uuid

from django.db import migrations, models

import reports.models


def _digest(token: str) -> str:
    # reports.models.token_digest as of this migration, copied so that a later change to it
    # cannot change what this migration wrote.
    return hashlib.sha256(token.encode()).hexdigest()


def give_codes(apps, schema_editor) -> None:
    Report = apps.get_model("reports", "Report")
    for report in Report.objects.filter(code__isnull=True).only("pk"):
        Report.objects.filter(pk=report.pk).update(code=uuid.uuid4())


def hash_tokens(apps, schema_editor) -> None:
    for name in ("Report", "ReportVersion"):
        model = apps.get_model("reports", name)
        for pk, token in model.objects.values_list("pk", "token").iterator():
            model.objects.filter(pk=pk).update(token=_digest(token))


class Migration(migrations.Migration):

    dependencies = [
        ("reports", "0003_report_permissions"),
    ]

    operations = [
        migrations.AddField(
            model_name="report",
            name="code",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.RunPython(give_codes, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="report",
            name="code",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.RunPython(hash_tokens, migrations.RunPython.noop),
        migrations.RenameField(model_name="report", old_name="token", new_name="token_digest"),
        migrations.RenameField(
            model_name="reportversion", old_name="token", new_name="token_digest"
        ),
        migrations.AlterField(
            model_name="report",
            name="token_digest",
            field=models.CharField(
                default=reports.models.unclaimed_digest, editable=False, max_length=64,
                unique=True,
            ),
        ),
        migrations.AlterField(
            model_name="reportversion",
            name="token_digest",
            field=models.CharField(
                default=reports.models.unclaimed_digest, editable=False, max_length=64,
                unique=True,
            ),
        ),
    ]
