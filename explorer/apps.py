from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "explorer"
    verbose_name = "Floe explorer"
