"""Store PointData's blobs without PostgreSQL's own compression (STORAGE EXTERNAL).

The blobs are already compressed where compression pays (benchmarks/storage/columnar.py): what
is left is timestamps' low bytes, which no compressor shrinks. PostgreSQL would still run pglz
over every large value before giving up: 0.7-1 s of server CPU per 32,768-request point
(bench/dashboard_pages.py, docs/performance.md). Reads are unchanged. SQLite has no such
setting.
"""

from django.db import migrations

COLUMNS = ("requests", "samples")


def _set_storage(storage: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = schema_editor.quote_name(apps.get_model("benchmarks", "PointData")._meta.db_table)
        for column in COLUMNS:
            schema_editor.execute(
                f"ALTER TABLE {table} ALTER COLUMN {schema_editor.quote_name(column)} "
                f"SET STORAGE {storage}"
            )

    return apply


class Migration(migrations.Migration):
    dependencies = [("benchmarks", "0002_judgement")]

    operations = [
        migrations.RunPython(_set_storage("EXTERNAL"), _set_storage("EXTENDED")),
    ]
