from django.apps import AppConfig


class DemoConfig(AppConfig):
    """`make demo`: the management commands that set up, launch and finish the first sweep."""

    name = "demo"
    verbose_name = "Demo"
