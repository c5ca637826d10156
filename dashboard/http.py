"""The request a view behind @login_required receives (django-stubs' documented pattern)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedHttpRequest(HttpRequest):
    """HttpRequest.user is a User or an AnonymousUser; @login_required leaves only a User."""

    user: User
