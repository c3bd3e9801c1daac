"""The browsable API's HTML renderer, fitted to views that are not over a Django queryset.

DRF's renderer offers a filter form for list responses and builds it from
``view.get_queryset()``, which asserts for every view of this API (they list floe's
catalogs, tables, snapshots and files, not database rows): every list URL answered 500 in a
browser. No view here has filter backends, so there is no filter form to offer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import BrowsableAPIRenderer


class FloeBrowsableAPIRenderer(BrowsableAPIRenderer):
    def get_filter_form(self, data: Any, view: Any, request: Any) -> Any:
        if not getattr(view, "filter_backends", None):
            return None  # DRF would read the queryset only to find no filter to show
        return super().get_filter_form(data, view, request)
