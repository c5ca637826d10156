"""Moving the test database's schema back and forth, for the migration tests."""

from __future__ import annotations

import pytest


def migrate(targets):
    """Migrate the test database to targets; returns the apps as they were at that state."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def newest_schema_after(transactional_db):
    """A migration test moves the schema back and forth; the tests after it need the newest."""
    yield migrate
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
