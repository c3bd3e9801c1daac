"""The Celery app: configured from Django settings (``CELERY_*``), tasks found in installed apps.

Start a worker with ``celery -A explorer worker`` (``python -m explorer.run`` does it for you).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")

app = Celery("explorer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
