from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from explorer import selectors
from explorer.auth import read_access_required
from explorer.catalogs import LOCAL_CATALOG
from explorer.forms import TableSearchForm


@read_access_required
def table_list(request: HttpRequest) -> HttpResponse:
    form = TableSearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    catalog = selectors.catalog_get(name=LOCAL_CATALOG)
    refs = selectors.catalog_table_refs(catalog=catalog, query=query) if catalog.exists else []
    page = Paginator(refs, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    rows = selectors.table_rows(refs=page.object_list)
    return render(
        request,
        "explorer/table_list.html",
        {"catalog": catalog, "form": form, "query": query, "page": page, "rows": rows},
    )
