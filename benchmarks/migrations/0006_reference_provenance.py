"""External references carry every fixed factor of a controlled comparison (host, checkpoint and
revision, precision, KV dtype, request count) and a published latency with its statistic;
their links are http(s) only. Existing rows keep these blank: "not recorded"."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0005_points_measured_before_vllm_parity'),
    ]

    operations = [
        migrations.AddField(
            model_name='externalreference',
            name='checkpoint',
            field=models.CharField(blank=True, help_text='Hub repo id, e.g. nvidia/Qwen3-30B-A3B-NVFP4', max_length=300),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='checkpoint_revision',
            field=models.CharField(blank=True, help_text='40-hex commit, when the source pins one', max_length=40, validators=[django.core.validators.RegexValidator('^[0-9a-f]{40}$', 'A checkpoint revision is a 40-hex commit id.')]),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='host',
            field=models.CharField(blank=True, help_text='the machine or system named by the source', max_length=200),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='kv_dtype',
            field=models.CharField(blank=True, help_text='e.g. fp8', max_length=50),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='latency_ms',
            field=models.FloatField(blank=True, help_text='a published request latency (E2EL), in ms', null=True),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='latency_statistic',
            field=models.CharField(blank=True, choices=[('median', 'Median'), ('mean', 'Mean')], help_text='whether the published latency is a median or a mean', max_length=10),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='precision',
            field=models.CharField(blank=True, help_text='e.g. bf16, FP8, NVFP4', max_length=50),
        ),
        migrations.AddField(
            model_name='externalreference',
            name='request_count',
            field=models.PositiveIntegerField(blank=True, help_text='requests per measurement, when the source says', null=True),
        ),
        migrations.AlterField(
            model_name='externalreference',
            name='no_longer_listed_on',
            field=models.DateField(blank=True, help_text='first date the figure was no longer shown (optional)', null=True),
        ),
        migrations.AlterField(
            model_name='externalreference',
            name='url',
            field=models.URLField(help_text='the page the figure was read on (http(s))', max_length=1000),
        ),
        migrations.AddConstraint(
            model_name='externalreference',
            constraint=models.CheckConstraint(condition=models.Q(('url__iregex', '^https?://')), name='reference_url_http'),
        ),
        migrations.AddConstraint(
            model_name='externalreference',
            constraint=models.CheckConstraint(condition=models.Q(('checkpoint_revision', ''), ('checkpoint_revision__regex', '^[0-9a-f]{40}$'), _connector='OR'), name='reference_revision_is_commit'),
        ),
        migrations.AddConstraint(
            model_name='externalreference',
            constraint=models.CheckConstraint(condition=models.Q(('request_count__isnull', True), ('request_count__gt', 0), _connector='OR'), name='reference_request_count_pos'),
        ),
        migrations.AddConstraint(
            model_name='externalreference',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('latency_ms__isnull', True), ('latency_statistic', '')), models.Q(('latency_ms__gt', 0), ('latency_statistic__in', ('median', 'mean'))), _connector='OR'), name='reference_latency_with_statistic'),
        ),
    ]
