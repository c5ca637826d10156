from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The logged-in site: every page, form and URL an engineer uses. It owns no models."""

    name = "dashboard"
    verbose_name = "Dashboard"
