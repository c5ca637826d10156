"""Trace and request-length workloads (prompt sources and the trace load shape), and a point's
length comparison."""

from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0014_node_price_and_telemetry'),
    ]

    operations = [
        migrations.AlterField(
            model_name='workload',
            name='prompt_source',
            field=models.CharField(choices=[('case_study', 'Case study (one guide text, new request id)'), ('random', 'Random tokens'), ('dataset', 'Dataset (JSONL)'), ('trace', 'Trace (Mooncake JSONL, BurstGPT CSV or timestamp_s CSV)'), ('lengths', 'Request-length log (input/output token counts)')], default='case_study', max_length=20),
        ),
        migrations.AlterField(
            model_name='workload',
            name='load_shape',
            field=models.CharField(choices=[('burst', 'Burst (all queued at once)'), ('concurrency', 'Closed loop (fixed concurrency)'), ('rate', 'Open loop (request rate)'), ('trace', "Trace replay (the trace's arrival times)")], default='burst', max_length=20),
        ),
        migrations.RemoveConstraint(
            model_name='workload',
            name='workload_dataset_has_path',
        ),
        migrations.AddConstraint(
            model_name='workload',
            constraint=models.CheckConstraint(condition=~Q(prompt_source__in=['dataset', 'trace', 'lengths']) | ~Q(dataset_path=''), name='workload_dataset_has_path'),
        ),
        migrations.AddField(
            model_name='point',
            name='lengths',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
