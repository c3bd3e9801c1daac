"""Template context every page gets."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.http import HttpRequest
from django.templatetags.static import static


def assets(request: HttpRequest) -> dict[str, str]:
    """``plotly_js_url``: the plotly.js the site ships (only the traces it draws; built by
    scripts/build-plotly.sh), a static file: hashed name, compressed, cached for a year."""
    return {"plotly_js_url": static("floe/plotly-partial.min.js")}


def roles(request: HttpRequest) -> dict[str, Any]:
    """``can_change``: whether the user may act on the catalog of the page (a URL with a
    ``catalog``), so pages show action links and buttons to maintainers only; when not,
    ``actions_hint`` says why and how to get it (``text``, ``url``). The decision that counts
    is the one each POST makes again (explorer.access.permissions)."""
    from explorer.access import selectors as selectors_access

    match = getattr(request, "resolver_match", None)
    catalog = match.kwargs.get("catalog") if match is not None else None
    if not isinstance(catalog, str):
        return {"can_change": False, "actions_hint": None}
    hint = selectors_access.actions_hint(user=request.user, catalog=catalog,
                                         next_url=quote(request.get_full_path()))
    return {"can_change": hint is None, "actions_hint": hint}
