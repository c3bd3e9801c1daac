"""The Floe explorer: Django project, browsing pages and the Celery app."""

from explorer.celery import app as celery_app

__all__ = ["celery_app"]
