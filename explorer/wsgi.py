"""WSGI entry point (``explorer.wsgi:application``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")

application = get_wsgi_application()
