"""Template context every page gets."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from explorer.views_table import PLOTLY_VERSION


def assets(request: HttpRequest) -> dict[str, str]:
    """``plotly_js_url``: plotly.js from the installed package, versioned so it caches well."""
    return {"plotly_js_url": reverse("table:plotly_js", kwargs={"version": PLOTLY_VERSION})}


def roles(request: HttpRequest) -> dict[str, bool]:
    """``can_change``: whether the user may act on the catalog of the page (a URL with a
    ``catalog``), so pages show action links and buttons to maintainers only. The decision
    that counts is the one each POST makes again (explorer.permissions)."""
    from explorer import permissions

    match = getattr(request, "resolver_match", None)
    catalog = match.kwargs.get("catalog") if match is not None else None
    if not isinstance(catalog, str):
        return {"can_change": False}
    return {"can_change": permissions.can_change(user=request.user, catalog=catalog)}
