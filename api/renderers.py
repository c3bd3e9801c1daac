"""The API's renderers: JSON with one spelling of NaN and infinities, and the browsable API's
HTML fitted to views that are not over a Django queryset.

JSON has no numbers for NaN, Infinity and -Infinity (DRF's strict renderer raised on them: a
bare 500). Every float that is not finite, anywhere in a response, is written as the string
``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (explorer.values.json_safe, the rule the pages'
embedded JSON follows too).

DRF's browsable renderer offers a filter form for list responses and builds it from
``view.get_queryset()``, which asserts for every view of this API (they list floe's
catalogs, tables, snapshots and files, not database rows): every list URL answered 500 in a
browser. No view here has filter backends, so there is no filter form to offer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer

from explorer.values import json_safe


class FloeJSONRenderer(JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict[str, Any] | None = None) -> bytes:
        return super().render(json_safe(data), accepted_media_type, renderer_context)


class FloeBrowsableAPIRenderer(BrowsableAPIRenderer):
    def get_filter_form(self, data: Any, view: Any, request: Any) -> Any:
        if not getattr(view, "filter_backends", None):
            return None  # DRF would read the queryset only to find no filter to show
        return super().get_filter_form(data, view, request)
