from tests.dashboard.conftest import owner, owner_client, teammate  # noqa: F401
