"""A node's GPU-hour price and dcgm-exporter address; a point's telemetry summary and samples."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchmarks', '0013_endpoints_grids_estimates'),
    ]

    operations = [
        migrations.AddField(
            model_name='node',
            name='gpu_hour_price',
            field=models.DecimalField(blank=True, decimal_places=4, help_text='per GPU per hour', max_digits=10, null=True),
        ),
        migrations.AddField(
            model_name='node',
            name='price_currency',
            field=models.CharField(blank=True, help_text='ISO 4217, e.g. USD', max_length=3),
        ),
        migrations.AddField(
            model_name='node',
            name='price_as_of',
            field=models.DateField(blank=True, help_text='when the price held', null=True),
        ),
        migrations.AddField(
            model_name='node',
            name='dcgm_exporter_url',
            field=models.CharField(blank=True, help_text='http(s)://host:9400/metrics of dcgm-exporter', max_length=300),
        ),
        migrations.AddConstraint(
            model_name='node',
            constraint=models.CheckConstraint(condition=models.Q(('gpu_hour_price__isnull', True), models.Q(('gpu_hour_price__gte', 0), models.Q(('price_currency', ''), _negated=True), ('price_as_of__isnull', False)), _connector='OR'), name='node_price_complete'),
        ),
        migrations.AddConstraint(
            model_name='node',
            constraint=models.CheckConstraint(condition=models.Q(('dcgm_exporter_url', ''), ('dcgm_exporter_url__regex', '^https?://'), _connector='OR'), name='node_dcgm_url_is_http'),
        ),
        migrations.AddField(
            model_name='point',
            name='telemetry',
            field=models.JSONField(blank=True, default=dict, help_text='runner.schema telemetry'),
        ),
        migrations.AddField(
            model_name='pointdata',
            name='telemetry',
            field=models.BinaryField(blank=True, default=b''),
        ),
    ]
