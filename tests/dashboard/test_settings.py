import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import database_from_url, envbool, envint


def test_it_rejects_a_boolean_it_cannot_read(monkeypatch):
    monkeypatch.setenv("HEADROOM_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="HEADROOM_FLAG must be a boolean"):
        envbool("HEADROOM_FLAG", "0")


def test_it_reads_common_boolean_spellings(monkeypatch):
    monkeypatch.setenv("HEADROOM_FLAG", "Yes")
    assert envbool("HEADROOM_FLAG", "0") is True
    monkeypatch.setenv("HEADROOM_FLAG", "off")
    assert envbool("HEADROOM_FLAG", "1") is False


def test_it_rejects_a_non_integer(monkeypatch):
    monkeypatch.setenv("HEADROOM_N", "5s")
    with pytest.raises(ImproperlyConfigured, match="HEADROOM_N must be an integer"):
        envint("HEADROOM_N", "1")


def test_it_parses_a_postgres_url_with_escaped_password():
    db = database_from_url("postgres://bench:p%40ss@db.lab:5433/headroom")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "headroom", "bench", "p@ss", "db.lab", "5433")


def test_it_parses_a_sqlite_url():
    assert database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"


@pytest.mark.parametrize("url", ["mysql://u@h/db", "postgres://u@h", "sqlite://"])
def test_it_rejects_a_database_url_it_does_not_support(url):
    with pytest.raises(ImproperlyConfigured):
        database_from_url(url)
