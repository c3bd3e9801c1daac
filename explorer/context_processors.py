"""Template context every page gets."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from explorer.views_table import PLOTLY_VERSION


def assets(request: HttpRequest) -> dict[str, str]:
    """``plotly_js_url``: plotly.js from the installed package, versioned so it caches well."""
    return {"plotly_js_url": reverse("table:plotly_js", kwargs={"version": PLOTLY_VERSION})}
