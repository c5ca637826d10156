""""What it means for your fleet": a stored capacity plan in a customer report, built from the
form, translated, and unchanged in a published version whatever happens to the plan later."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from benchmarks.models import CapacityPlan
from benchmarks.storage.points import store_point
from reports.models import Item, Report
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.result import point_key
from tests.judgement.helpers import make_capacity_plan
from tests.reports.conftest import point
from tests.reports.helpers import make_report
from tests.rows import make_benchmark, make_point_result

pytestmark = pytest.mark.django_db

ITEMS = [Item.HEADLINE, Item.FLEET]


def section(body: str) -> str:
    found = re.search(r'<section id="fleet">(.*?)</section>', body, re.S)
    assert found, "no fleet section"
    return found.group(1)


def test_a_report_shows_the_plans_headline_table_and_sentences(sweep, owner):
    plan = make_capacity_plan(sweep, owner, rate=40.0, slos={"median_e2el_ms": 4000.0})
    report = make_report(sweep, owner, items=ITEMS, capacity_plan=plan)
    fleet = section(Client().get(f"/r/{report.issued_token}/").content.decode())
    headline = re.search(r'<p id="fleet-headline"><strong>(.*?)</strong>', fleet).group(1)
    assert headline.startswith("At max_num_seqs 8 this traffic needs")
    assert "Not checked against the engine" in fleet
    # The local path the sweep's provenance plants never reaches the page.
    assert "/home/" not in fleet


def test_the_published_fleet_is_unchanged_when_the_plan_is_edited_or_checked_later(
        sweep, owner):
    plan = make_capacity_plan(sweep, owner, rate=40.0, slos={"median_e2el_ms": 4000.0})
    report = make_report(sweep, owner, items=ITEMS, capacity_plan=plan)
    link = f"/r/{report.issued_token}/"
    sent = section(Client().get(link).content.decode())
    # Later: the plan's row is rewritten in place (as an admin could) and a check measures it.
    other = make_capacity_plan(sweep, owner, rate=400.0)
    check = make_benchmark(state="succeeded", created_by=owner)
    load = LoadSpec(shape="rate", rate=5.0, num_requests=32)
    store_point(check, make_point_result(max_num_seqs=8, num_requests=32).model_copy(
        update={"load": load, "key": point_key(EngineConfig(max_num_seqs=8), load, 0)}))
    CapacityPlan.objects.filter(pk=plan.pk).update(outputs=other.outputs, check_run=check,
                                                   check_config="seqs=8")
    assert section(Client().get(link).content.decode()) == sent
    # A new version, published now, says what the plan says now.
    from reports import publishing

    version = publishing.publish(Report.objects.get(pk=report.pk), owner)
    now = section(Client().get(f"/r/{version.issued_token}/").content.decode())
    assert now != sent and 'id="fleet-check"' in now and "Loaded at" in now


def test_the_build_form_takes_one_of_the_runs_plans_and_refuses_the_item_without_one(
        sweep, owner, owner_client):
    plan = make_capacity_plan(sweep, owner, rate=40.0)
    form = owner_client.get(f"/runs/{sweep.code}/report/?capacity_plan={plan.code}")
    assert f'<option value="{plan.pk}" selected>' in form.content.decode()
    data = {"title": "Fleet", "language": "en", "items": ["headline", "fleet"],
            "baseline_point": point(sweep, 8, 32).pk, "candidate_point": point(sweep, 64, 32).pk}
    refused = owner_client.post(f"/runs/{sweep.code}/report/", data)
    assert refused.status_code == 400 and "Choose a capacity plan" in refused.content.decode()
    built = owner_client.post(f"/runs/{sweep.code}/report/", {**data, "capacity_plan": plan.pk})
    assert built.status_code == 200
    assert Report.objects.get().capacity_plan == plan
