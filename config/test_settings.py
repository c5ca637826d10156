"""The test suite's settings (pytest.ini): production's settings over plain HTTP, with a test key.

Tests run with DEBUG off as production does (pytest-django turns it off anyway), so they need a
SECRET_KEY; the test client and the live server speak plain HTTP, so the HTTPS protections are
off (a redirect to https:// would answer every request with 301). Both are written into the
environment before config.settings reads it, so the worker processes that tests start, which
inherit the environment and this settings module, read the same.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-" + "t" * 40)
os.environ["HEADROOM_HTTPS"] = "0"
# The tiny model lives in var/ (make tiny-model); local models elsewhere stay refused.
os.environ.setdefault("HEADROOM_MODEL_DIRS", str(Path(__file__).resolve().parent.parent / "var"))

from config.settings import *  # noqa: F403 - production's settings, then the test's changes

# Axes' switch for test suites (its documentation): its backend refuses authenticate() calls that
# carry no request, which Client.login() and direct authenticate() calls in tests make. The
# lockout tests (tests/config/test_settings.py) turn it back on.
AXES_ENABLED = False

# Printed PDFs are kept on disk; a test run keeps its own out of var/.
HEADROOM_PDF_DIR = Path(tempfile.mkdtemp(prefix="headroom-test-pdf-"))

# Tests create a few hundred users; production's PBKDF2 spends a quarter of a second on each
# password by design. A test's password guards nothing, so the cheapest hasher Django has.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
