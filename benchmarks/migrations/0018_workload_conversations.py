"""Conversation workloads (a prompt source) and a point's per-turn and per-conversation
latency."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0017_point_quality'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='workload',
            name='workload_dataset_has_path',
        ),
        migrations.AddField(
            model_name='point',
            name='conversations',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='workload',
            name='prompt_source',
            field=models.CharField(choices=[('case_study', 'Case study (one guide text, new request id)'), ('random', 'Random tokens'), ('dataset', 'Dataset (JSONL)'), ('trace', 'Trace (Mooncake JSONL, BurstGPT CSV or timestamp_s CSV)'), ('lengths', 'Request-length log (input/output token counts)'), ('conversation', 'Conversations (multi-turn JSONL, replayed turn by turn)')], default='case_study', max_length=20),
        ),
        migrations.AddConstraint(
            model_name='workload',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('prompt_source__in', ['dataset', 'trace', 'lengths', 'conversation']), _negated=True), models.Q(('dataset_path', ''), _negated=True), _connector='OR'), name='workload_dataset_has_path'),
        ),
    ]
