from django.conf import settings
from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView

# The views that mail a reset link. Without a mail server the link never arrives, and a live
# form would only tell a visitor which addresses have accounts, so they are not routed at all.
PASSWORD_RESET_URL_NAMES = frozenset(
    {"password_reset", "password_reset_done", "password_reset_confirm", "password_reset_complete"}
)


def account_urls(password_reset: bool) -> list[URLPattern | URLResolver]:
    """django.contrib.auth's account URLs (login, logout, password change), and reset if asked."""
    return [
        pattern for pattern in auth_urls.urlpatterns
        if password_reset or not _is_password_reset(pattern)
    ]


def _is_password_reset(pattern: URLPattern | URLResolver) -> bool:
    return isinstance(pattern, URLPattern) and pattern.name in PASSWORD_RESET_URL_NAMES


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="runs", permanent=False)),
    path("accounts/", include(account_urls(settings.HEADROOM_PASSWORD_RESET))),
    path("admin/", admin.site.urls),
    path("", include("dashboard.urls")),
    path("", include("reports.urls")),
]
