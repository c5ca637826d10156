"""Settings: the strict env helpers, fail-closed production settings, the CSP, login throttling
and password reset that exists only with mail."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory, override_settings
from django.urls import clear_url_caches
from django.utils import timezone

import config.settings as settings_module
import config.urls
from config.client_ip import client_ip
from config.settings import (
    DEVELOPMENT_SECRET_KEY,
    HSTS_ONE_YEAR_S,
    database_from_url,
    envbool,
    envint,
    envnetworks,
    envpercent,
    header_meta_key,
    proxy_ssl_header,
    secret_key,
)
from tests.reports.conftest import make_sweep
from tests.reports.helpers import make_report
from tests.repository import ROOT


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


@pytest.mark.parametrize("value", ["-0.5", "100.1", "nan", "1%", ""])
def test_it_rejects_a_share_outside_0_to_100(monkeypatch, value):
    monkeypatch.setenv("HEADROOM_SHARE", value)
    with pytest.raises(ImproperlyConfigured, match="HEADROOM_SHARE must be a percentage"):
        envpercent("HEADROOM_SHARE", "1")


@pytest.mark.parametrize(("value", "share"), [("0", 0.0), ("2.5", 2.5), ("100", 100.0)])
def test_it_reads_a_share_at_its_bounds(monkeypatch, value, share):
    monkeypatch.setenv("HEADROOM_SHARE", value)
    assert envpercent("HEADROOM_SHARE", "1") == share


def test_it_reads_outbound_networks_and_the_word_public(monkeypatch):
    monkeypatch.setenv("HEADROOM_NETS", "Public, 10.20.0.0/16 ,fd00::/8,10.1.2.3")
    assert envnetworks("HEADROOM_NETS", "public") == [
        "public", "10.20.0.0/16", "fd00::/8", "10.1.2.3/32"]


@pytest.mark.parametrize("value", ["gpu.example.com", "10.0.0.5/8", "10.0.0.0/33", "any"])
def test_it_rejects_an_outbound_network_it_cannot_read_as_one(monkeypatch, value):
    monkeypatch.setenv("HEADROOM_NETS", f"public,{value}")
    with pytest.raises(ImproperlyConfigured, match="HEADROOM_NETS takes IP networks"):
        envnetworks("HEADROOM_NETS", "public")


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


# ---------------------------------------------------------------------------------------------
# Fail-closed settings: read in a fresh process, as a server starting with that environment would.
# ---------------------------------------------------------------------------------------------

A_REAL_KEY = "k" * 20 + "-production-like-key-" + "9" * 20
HTTPS_SETTINGS = ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
                  "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS")


def start_settings(env: dict[str, str], *names: str) -> subprocess.CompletedProcess:
    """Import config.settings in a new process with only `env`; print the named settings."""
    code = ("import json, django; django.setup(); from django.conf import settings; "
            f"print(json.dumps({{n: getattr(settings, n) for n in {names!r}}}))")
    return subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )  # fmt: skip


def started_settings(env: dict[str, str], *names: str) -> dict:
    started = start_settings(env, *names)
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout.splitlines()[-1])


@pytest.mark.parametrize("env", [{}, {"SECRET_KEY": DEVELOPMENT_SECRET_KEY},
                                 {"DEBUG": "0", "SECRET_KEY": ""}])
def test_production_refuses_to_start_without_a_real_secret_key(env):
    started = start_settings(env, "DEBUG")
    assert started.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in started.stderr


def test_debug_is_off_and_https_protections_on_unless_set():
    got = started_settings({"SECRET_KEY": A_REAL_KEY}, "DEBUG", *HTTPS_SETTINGS)
    assert got == {"DEBUG": False, "SECURE_SSL_REDIRECT": True, "SESSION_COOKIE_SECURE": True,
                   "CSRF_COOKIE_SECURE": True, "SECURE_HSTS_SECONDS": HSTS_ONE_YEAR_S,
                   "SECURE_HSTS_INCLUDE_SUBDOMAINS": True}


def test_the_dashboard_sends_requests_to_public_addresses_only_unless_told():
    got = started_settings({"SECRET_KEY": A_REAL_KEY}, "HEADROOM_OUTBOUND_NETWORKS")
    assert got == {"HEADROOM_OUTBOUND_NETWORKS": ["public"]}
    started = start_settings({"SECRET_KEY": A_REAL_KEY, "HEADROOM_OUTBOUND_NETWORKS": "gpu-*"},
                             "HEADROOM_OUTBOUND_NETWORKS")
    assert "ImproperlyConfigured: HEADROOM_OUTBOUND_NETWORKS takes IP networks" in started.stderr


def test_a_plain_http_deployment_turns_the_https_protections_off_explicitly():
    got = started_settings({"SECRET_KEY": A_REAL_KEY, "HEADROOM_HTTPS": "0"}, *HTTPS_SETTINGS)
    assert not any(got.values())


def test_one_protection_can_be_turned_off_alone():
    got = started_settings({"SECRET_KEY": A_REAL_KEY, "SECURE_SSL_REDIRECT": "0"},
                           *HTTPS_SETTINGS)
    assert got.pop("SECURE_SSL_REDIRECT") is False
    assert all(got.values())


def test_development_with_debug_on_uses_the_development_key_over_plain_http():
    got = started_settings({"DEBUG": "1"}, "SECRET_KEY", *HTTPS_SETTINGS)
    assert got.pop("SECRET_KEY") == DEVELOPMENT_SECRET_KEY
    assert not any(got.values())


def test_the_secret_key_is_kept_as_set():
    assert secret_key(A_REAL_KEY, debug=False) == A_REAL_KEY
    assert secret_key(A_REAL_KEY, debug=True) == A_REAL_KEY


@pytest.mark.parametrize("key", ["", DEVELOPMENT_SECRET_KEY])
def test_the_secret_key_check_names_the_variable(key):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        secret_key(key, debug=False)


# A short key, one of two characters, and one startproject made for a throwaway project.
WEAK_KEYS = ["a-short-but-otherwise-random-Qx81", "ab" * 30,
             "django-insecure-" + "q7Zk3vP0xL9mW2rT8yB4nC6dF1hJ5sGa2e4i6o8u0"]


@pytest.mark.parametrize("key", WEAK_KEYS)
def test_production_refuses_to_start_with_a_weak_secret_key(key):
    started = start_settings({"SECRET_KEY": key}, "DEBUG")
    assert started.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be at least 50 characters" in started.stderr
    assert key not in started.stderr  # the message names the rule, never the key


@pytest.mark.parametrize("key", WEAK_KEYS)
def test_development_takes_any_secret_key(key):
    assert secret_key(key, debug=True) == key


def test_the_secret_key_rule_is_the_one_check_deploy_warns_about():
    from django.core.checks.security import base

    assert (settings_module.SECRET_KEY_MIN_LENGTH, settings_module.SECRET_KEY_MIN_UNIQUE_CHARACTERS,
            settings_module.SECRET_KEY_INSECURE_PREFIX) == (
        base.SECRET_KEY_MIN_LENGTH, base.SECRET_KEY_MIN_UNIQUE_CHARACTERS,
        base.SECRET_KEY_INSECURE_PREFIX)
    for key in WEAK_KEYS:
        assert not base._check_secret_key(key)
    assert base._check_secret_key(A_REAL_KEY) and base._check_secret_key(django_settings.SECRET_KEY)


def test_the_proxy_header_becomes_the_meta_key_django_reads(monkeypatch):
    monkeypatch.setenv("HEADROOM_PROXY_SSL_HEADER", "X-Forwarded-Proto")
    key = header_meta_key("HEADROOM_PROXY_SSL_HEADER")
    assert proxy_ssl_header(key) == ("HTTP_X_FORWARDED_PROTO", "https")
    monkeypatch.setenv("HEADROOM_PROXY_SSL_HEADER", "")
    assert proxy_ssl_header(header_meta_key("HEADROOM_PROXY_SSL_HEADER")) is None


@pytest.mark.parametrize("name", ["X Forwarded Proto", "X-Forwarded-Proto: https", "-X"])
def test_it_rejects_a_proxy_header_that_is_not_a_header_name(monkeypatch, name):
    monkeypatch.setenv("HEADROOM_PROXY_SSL_HEADER", name)
    with pytest.raises(ImproperlyConfigured, match="HEADROOM_PROXY_SSL_HEADER"):
        header_meta_key("HEADROOM_PROXY_SSL_HEADER")


@pytest.fixture
def engineer(db):
    # A superuser, so this test is about the link's scheme whatever permissions the page asks.
    return get_user_model().objects.create_superuser("engineer", password="engineer-password")


def share_links(page: bytes) -> list[str]:
    return re.findall(r"\bhttps?://[^/\"'<\s]+/r/[^\"'<\s]+", page.decode())


# The request as the TLS proxy forwards it: the browser's Host, and the scheme in its header.
PROXIED = {"HTTP_HOST": "headroom.example.com", "HTTP_X_FORWARDED_PROTO": "https"}


@override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
                   ALLOWED_HOSTS=["headroom.example.com"])
def test_behind_a_tls_proxy_the_share_link_says_https(engineer):
    report = make_report(make_sweep(engineer), engineer)
    client = Client()
    client.force_login(engineer)
    # A link is shown on the page that issued it: here, publishing a new version.
    behind_proxy = client.post(f"/reports/{report.code}/publish/", **PROXIED)
    assert behind_proxy.status_code == 200
    links = share_links(behind_proxy.content)
    assert links and all(link.startswith("https://headroom.example.com/r/") for link in links)
    # The same request without the proxy's word is plain HTTP: the header decides, not luck.
    plain = client.post(f"/reports/{report.code}/publish/", HTTP_HOST="headroom.example.com")
    links = share_links(plain.content)
    assert links and all(link.startswith("http://headroom.example.com/r/") for link in links)


# ---------------------------------------------------------------------------------------------
# Content-Security-Policy
# ---------------------------------------------------------------------------------------------


def csp_directives(header: str) -> dict[str, list[str]]:
    return {name: sources for name, *sources in (d.split() for d in header.split(";") if d.strip())}


def test_every_page_carries_a_content_security_policy_with_scripts_from_self_only(db):
    response = Client().get("/accounts/login/")
    policy = csp_directives(response["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval'
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'self'"]
    assert policy["form-action"] == ["'self'"]
    assert "'unsafe-inline'" in policy["style-src"]  # Plotly's <style> elements


# Handed to Chromium by reports.pdf and never served: it carries its own stricter policy
# (nothing but inline code, no resource at all), checked in tests/reports/test_pdf.py.
PRINTED_ONLY = ("templates/reports/printed.html",)


def template_files() -> list[Path]:
    found = sorted((ROOT / "templates").rglob("*.html")) + sorted(ROOT.glob("*/templates/**/*.html"))
    return [p for p in found if not p.as_posix().endswith(PRINTED_ONLY)]


# Code in markup that script-src 'self' blocks: an inline <script> (json_script output is
# data, written by the filter at render time, never in the template source), an event-handler
# attribute, a javascript: URL.
INLINE_CODE = re.compile(
    r"<script\b(?![^>]*\bsrc=)[^>]*>|\son[a-z]+\s*=|javascript:", re.IGNORECASE | re.DOTALL)
# Templates allowed inline code, with the reason; none today.
KNOWN_INLINE: dict[str, str] = {}


@pytest.mark.parametrize("path", [
    pytest.param(p, id=str(p.relative_to(ROOT)), marks=[
        pytest.mark.xfail(strict=True, reason=KNOWN_INLINE[k])
        for k in KNOWN_INLINE if p.as_posix().endswith(k)])
    for p in template_files()
])  # fmt: skip
def test_no_template_has_code_the_content_security_policy_would_block(path):
    assert not INLINE_CODE.findall(path.read_text())


# ---------------------------------------------------------------------------------------------
# Login throttling (django-axes), on as in production: the test settings turn it off for the
# rest of the suite, whose Client.login() calls carry no request.
# ---------------------------------------------------------------------------------------------

throttled = override_settings(AXES_ENABLED=True)


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="right-password")


def log_in(password: str, username: str = "alice", address: str = "203.0.113.7"):
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password},
                           REMOTE_ADDR=address)
    return response, "_auth_user_id" in client.session


@throttled
def test_repeated_failed_logins_lock_the_account_even_for_the_right_password(alice):
    limit = django_settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        response, _ = log_in("wrong-password")
        assert response.status_code == 200  # the form again, with its error
    response, _ = log_in("wrong-password")
    assert response.status_code == 429
    response, logged_in = log_in("right-password")
    assert response.status_code == 429 and not logged_in
    assert b"Too many failed logins" in response.content


@throttled
def test_the_lockout_ends_after_the_cool_off(alice):
    for _ in range(django_settings.AXES_FAILURE_LIMIT):
        log_in("wrong-password")
    assert log_in("right-password")[1] is False
    # The cool-off passes: the failures are now older than it.
    cooled = timezone.now() - django_settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=cooled)
    response, logged_in = log_in("right-password")
    assert response.status_code == 302 and logged_in


@throttled
def test_the_lockout_holds_one_user_name_from_one_address_only(alice):
    get_user_model().objects.create_user("bob", password="bob-password")
    for _ in range(django_settings.AXES_FAILURE_LIMIT):
        log_in("wrong-password")
    assert log_in("right-password", address="198.51.100.9")[1]  # alice elsewhere
    assert log_in("bob-password", username="bob")[1]  # a colleague behind the same address


@throttled
def test_failures_below_the_limit_are_forgotten_after_a_successful_login(alice):
    for _ in range(django_settings.AXES_FAILURE_LIMIT - 1):
        log_in("wrong-password")
    assert log_in("right-password")[1]
    for _ in range(django_settings.AXES_FAILURE_LIMIT - 1):
        log_in("wrong-password")
    assert log_in("right-password")[1]


def test_the_client_address_comes_from_the_proxy_header_when_one_is_configured():
    request = RequestFactory().get("/", REMOTE_ADDR="172.18.0.1", HTTP_X_REAL_IP="203.0.113.7")
    with override_settings(HEADROOM_CLIENT_IP_META_KEY="HTTP_X_REAL_IP"):
        assert client_ip(request) == "203.0.113.7"
    with override_settings(HEADROOM_CLIENT_IP_META_KEY=""):
        assert client_ip(request) == "172.18.0.1"  # no proxy configured: the header is a lie


# ---------------------------------------------------------------------------------------------
# Password reset: routed only when mail is configured.
# ---------------------------------------------------------------------------------------------

RESET_PATHS = ("/accounts/password_reset/", "/accounts/password_reset/done/",
               "/accounts/reset/done/", "/accounts/reset/MQ/set-password/")


def reload_urlconf() -> None:
    importlib.reload(config.urls)
    clear_url_caches()


def test_without_mail_the_password_reset_pages_do_not_exist(db):
    assert not django_settings.HEADROOM_PASSWORD_RESET  # no EMAIL_HOST in the test environment
    client = Client()
    for path in RESET_PATHS:
        assert client.get(path).status_code == 404, path
    assert b"password_reset" not in client.get("/accounts/login/").content


def test_with_mail_configured_the_password_reset_pages_are_routed_and_linked(db):
    try:
        with override_settings(HEADROOM_PASSWORD_RESET=True):
            reload_urlconf()
            client = Client()
            assert client.get("/accounts/password_reset/").status_code == 200
            assert b'href="/accounts/password_reset/"' in client.get("/accounts/login/").content
    finally:
        reload_urlconf()
    assert Client().get("/accounts/password_reset/").status_code == 404


def test_the_mail_setting_decides_whether_password_reset_is_on():
    assert started_settings({"DEBUG": "1"}, "HEADROOM_PASSWORD_RESET") == {
        "HEADROOM_PASSWORD_RESET": False}
    assert started_settings({"DEBUG": "1", "EMAIL_HOST": "smtp.example.com"},
                            "HEADROOM_PASSWORD_RESET") == {"HEADROOM_PASSWORD_RESET": True}


# ---------------------------------------------------------------------------------------------
# Password rules: every form that sets a password runs Django's validators.
# ---------------------------------------------------------------------------------------------


def test_the_admin_refuses_a_new_user_with_a_one_character_password(engineer):
    client = Client()
    client.force_login(engineer)
    response = client.post("/admin/auth/user/add/", {
        "username": "newcomer", "usable_password": "true", "password1": "x", "password2": "x"})
    assert response.status_code == 200  # the form again, with its errors
    assert "This password is too short. It must contain at least 12 characters." in (
        response.content.decode())
    assert not get_user_model().objects.filter(username="newcomer").exists()


@pytest.mark.parametrize(("password", "error"), [
    ("x", "This password is too short"),
    ("password1234", "This password is too common"),
    ("804711358219", "This password is entirely numeric"),
    ("alice.wonderland", "The password is too similar to the email address"),
])
def test_changing_a_password_refuses_a_weak_one(alice, password, error):
    alice.email = "alice.wonderland@example.com"
    alice.save()
    client = Client()
    client.force_login(alice)
    response = client.post("/accounts/password_change/", {
        "old_password": "right-password", "new_password1": password, "new_password2": password})
    assert response.status_code == 200
    assert error in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password("right-password")


def test_a_long_uncommon_password_is_accepted(alice):
    client = Client()
    client.force_login(alice)
    response = client.post("/accounts/password_change/", {
        "old_password": "right-password", "new_password1": "violet staple meadow",
        "new_password2": "violet staple meadow"})
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("violet staple meadow")
