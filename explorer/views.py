from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from explorer import permissions, selectors
from explorer.auth import read_access_required
from explorer.forms import TableSearchForm


@read_access_required
def table_list(request: HttpRequest) -> HttpResponse:
    """The tables of every configured catalog, searchable, paged; only the page's tables
    are read."""
    form = TableSearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    readable = permissions.readable_catalogs(
        user=request.user, names=[c.name for c in selectors.catalog_list()])
    catalogs, refs = selectors.all_table_refs(query=query, only=readable)
    page = Paginator(refs, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    rows = selectors.table_rows(refs=page.object_list)
    return render(
        request,
        "explorer/table_list.html",
        {"catalogs": catalogs, "many_catalogs": len(catalogs) > 1,
         "some_listed": any(c.error is None for c in catalogs), "form": form, "query": query,
         "page": page, "rows": rows},
    )
