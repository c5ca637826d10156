"""A point's quality-set score (runner.schema QualityResult)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0016_workload_keep_outputs'),
    ]

    operations = [
        migrations.AddField(
            model_name='point',
            name='quality',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
