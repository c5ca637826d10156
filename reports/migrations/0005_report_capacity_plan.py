"""A report may include a stored capacity plan: "What it means for your fleet"."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0029_capacity_plans'),
        ('reports', '0004_hashed_tokens'),
    ]

    operations = [
        migrations.AddField(
            model_name='report',
            name='capacity_plan',
            field=models.ForeignKey(blank=True, help_text="what it means for the customer's fleet: a stored capacity plan", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='reports', to='benchmarks.capacityplan'),
        ),
    ]
