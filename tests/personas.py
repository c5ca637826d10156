"""The people of the tests, defined once: an engineer who owns the runs and reports (owner), a
second engineer with the same rights over nothing of the owner's (teammate), and a logged-in
engineer for tests that need no particular one. The roles are the groups the migrations create.

A package may rename the owner by overriding `owner_username` (the report tests plant a secret
there); the password stays "owner-password".
"""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

ROLES_MIGRATION = "benchmarks.migrations.0029_capacity_plans"
OWNER_PASSWORD = "owner-password"


def grant_role(user, role: str = "Engineer"):
    """Put user in one of the roles' groups (benchmarks/migrations/0009). A transactional
    test's flush empties auth_group; the migration's own function puts the groups back."""
    if not Group.objects.filter(name=role).exists():
        importlib.import_module(ROLES_MIGRATION).create_roles(django_apps, None)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def owner_username() -> str:
    return "owner"


@pytest.fixture
def owner(db, owner_username):
    # An engineer: launches, cancels their own runs, chooses, compares, builds and publishes
    # reports (their own).
    return grant_role(
        get_user_model().objects.create_user(owner_username, password=OWNER_PASSWORD)
    )


@pytest.fixture
def teammate(db):
    # Another engineer: the same rights, none of them over the owner's runs or reports.
    return grant_role(
        get_user_model().objects.create_user("teammate", password="teammate-password")
    )


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def engineer(django_user_model) -> Client:
    """A logged-in engineer (a module may define its own)."""
    client = Client()
    client.force_login(grant_role(django_user_model.objects.create_user("engineer")))
    return client


@pytest.fixture
def logged_in_page(browser_page, live_server, owner):
    """browser_page after logging in as the owner."""
    browser_page.goto(f"{live_server.url}/accounts/login/")
    browser_page.fill("#id_username", owner.username)
    browser_page.fill("#id_password", OWNER_PASSWORD)
    browser_page.click("button[type=submit]")
    return browser_page
