from __future__ import annotations

from typing import Any

from rest_framework import pagination

from floe.errors import InvalidArgument


class PageNumberPagination(pagination.PageNumberPagination):
    """DRF's page numbers, but a page that is not a page is a 400 naming the pages there are
    (DRF answers 404 "Invalid page.", which reads as "this table does not exist");
    ``page=last`` is the last page."""

    page_size_query_param = "page_size"
    max_page_size = 1000

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        self.request = request
        page_size = self.get_page_size(request)
        if not page_size:
            return None
        paginator = self.django_paginator_class(queryset, page_size)
        raw = request.query_params.get(self.page_query_param, "") or "1"
        if raw in self.last_page_strings:
            number = paginator.num_pages
        else:
            try:
                number = int(raw)
            except ValueError:
                raise InvalidArgument(
                    "page", f"query parameter 'page' must be a page number or 'last', got {raw!r}"
                ) from None
        if not 1 <= number <= paginator.num_pages:
            one = paginator.num_pages == 1
            raise InvalidArgument(
                "page", f"page {number} does not exist: there {'is' if one else 'are'}"
                f" {paginator.num_pages} page{'' if one else 's'} of"
                f" {page_size} (query parameter 'page')")
        self.page = paginator.page(number)
        if paginator.num_pages > 1 and self.template is not None:
            self.display_page_controls = True
        return list(self.page)
