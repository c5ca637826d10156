"""A node's GPU-hour price: who may set it, what the form refuses before the database, and the
node list that shows it with its date."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchmarks.models import Node
from tests.dashboard.test_catalog import client_for, person
from tests.rows import make_node

pytestmark = pytest.mark.django_db

AS_OF = "2026-11-01"


def price_form(**fields: str) -> dict[str, str]:
    return {"description": "Rack 4", "gpu_hour_price": "2.50", "price_currency": "USD",
            "price_as_of": AS_OF, **fields}


@pytest.fixture
def administrator() -> Any:
    return person("admin", "Administrator")


def post(user: Any, node: Node, data: dict[str, str]) -> Any:
    return client_for(user).post(f"/catalog/nodes/{node.pk}/edit/", data)


def test_an_administrator_sets_the_price_and_the_node_list_shows_it_with_its_date(
        administrator):
    node = make_node("gpu-a")
    response = post(administrator, node, price_form(price_currency="usd"))
    assert response.status_code == 302
    node.refresh_from_db()
    assert (node.gpu_hour_price, node.price_currency, node.price_as_of) == (
        Decimal("2.5"), "USD", datetime.date(2026, 11, 1))
    assert node.description == "Rack 4"
    page = client_for(administrator).get("/catalog/nodes/").content.decode()
    assert "2.50 USD per GPU per hour, as of 2026-11-01" in page


def test_an_engineer_without_change_node_cannot_set_the_price(administrator):
    node = make_node("gpu-a")
    engineer = person("engineer", "Engineer")
    assert not engineer.has_perm("benchmarks.change_node")
    assert post(engineer, node, price_form()).status_code == 403
    node.refresh_from_db()
    assert node.gpu_hour_price is None
    page = client_for(engineer).get("/catalog/nodes/").content.decode()
    assert f"/catalog/nodes/{node.pk}/edit/" not in page


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"price_as_of": ""}, "price_as_of", "A price needs the date it held"),
    ({"price_currency": ""}, "price_currency", "A price needs its currency"),
    ({"price_currency": "US$"}, "price_currency", "A currency is its ISO 4217 code"),
    ({"price_currency": "DOLLAR"}, "price_currency", "at most 3 characters"),
    ({"gpu_hour_price": "-1"}, "gpu_hour_price", "greater than or equal to 0"),
    ({"gpu_hour_price": "2.12345"}, "gpu_hour_price", "no more than 4 decimal places"),
    ({"gpu_hour_price": "NaN"}, "gpu_hour_price", "Enter a number"),
    ({"gpu_hour_price": ""}, "gpu_hour_price", "A currency or date without a price"),
])
def test_the_form_refuses_an_incomplete_or_malformed_price_with_the_fields_error(
        administrator, fields, field, message):
    node = make_node("gpu-a")
    response = post(administrator, node, price_form(**fields))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == [field]
    assert message in " ".join(errors[field])
    assert f'id="id_{field}-error"' in response.content.decode()
    node.refresh_from_db()
    assert (node.gpu_hour_price, node.price_currency, node.price_as_of) == (None, "", None)


def test_a_price_date_in_the_future_is_refused(administrator):
    node = make_node("gpu-a")
    tomorrow = timezone.localdate() + datetime.timedelta(days=1)
    response = post(administrator, node, price_form(price_as_of=tomorrow.isoformat()))
    assert response.status_code == 400
    assert list(response.context["form"].errors) == ["price_as_of"]


def test_the_database_refuses_a_price_without_its_date_where_a_form_is_bypassed():
    node = make_node("gpu-a")
    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.filter(pk=node.pk).update(gpu_hour_price=Decimal("2.5"),
                                               price_currency="USD", price_as_of=None)


def test_clearing_all_three_removes_the_price(administrator):
    node = make_node("gpu-a", gpu_hour_price=Decimal("2.5"), price_currency="USD",
                     price_as_of=datetime.date(2026, 11, 1))
    response = post(administrator, node, price_form(gpu_hour_price="", price_currency="",
                                                     price_as_of=""))
    assert response.status_code == 302
    node.refresh_from_db()
    assert (node.gpu_hour_price, node.price_currency, node.price_as_of) == (None, "", None)


def test_an_old_price_is_flagged_on_the_node_list(administrator):
    old = timezone.localdate() - datetime.timedelta(days=400)
    make_node("gpu-a", gpu_hour_price=Decimal("2.5"), price_currency="USD", price_as_of=old)
    page = client_for(administrator).get("/catalog/nodes/").content.decode()
    assert f"The price as of {old.isoformat()} is 400 days old, older than 180 days" in page


def test_the_dcgm_exporter_address_is_checked_as_a_plan_checks_it(administrator):
    node = make_node("gpu-a")
    response = post(administrator, node, price_form(
        dcgm_exporter_url="http://metrics:s3cret@gpu-a:9400/metrics"))
    assert response.status_code == 400
    errors = response.context["form"].errors["dcgm_exporter_url"]
    assert errors == ["The address must not carry a user name or password."]
    assert post(administrator, node, price_form(
        dcgm_exporter_url="http://gpu-a:9400/metrics")).status_code == 302
    node.refresh_from_db()
    assert node.dcgm_exporter_url == "http://gpu-a:9400/metrics"
