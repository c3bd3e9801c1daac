from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from explorer import permissions, selectors
from explorer.auth import read_access_required
from explorer.forms import TableSearchForm
from explorer.sorting import by_key, parse_sort, sort_rows


#: The table list's sorts (explorer.sorting), within each catalog and namespace.
TABLE_SORTS = ("name", "format_version", "data_files", "delete_files", "records", "files_size")


@read_access_required
def table_list(request: HttpRequest) -> HttpResponse:
    """The tables of every configured catalog, searchable, sortable, paged; unless sorted by
    a number only the page's tables are read."""
    form = TableSearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    readable = permissions.readable_catalogs(
        user=request.user, names=[c.name for c in selectors.catalog_list()])
    catalogs, refs = selectors.all_table_refs(query=query, only=readable)
    sort, descending = parse_sort(request.GET.get("sort"), TABLE_SORTS)
    if sort and sort != "name":
        # a sort by a number spans every page: every listed table is read (cached by its
        # metadata file); by name (the default) only the page's tables are
        ordered = sort_rows(selectors.table_rows(refs=refs), by_key(sort), descending,
                            group=lambda r: r.group_key)
        page = Paginator(ordered, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
        rows = list(page.object_list)
    else:
        if descending:
            refs = sort_rows(refs, by_key("name"), True, group=lambda r: (r.catalog, r.namespace))
        page = Paginator(refs, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
        rows = selectors.table_rows(refs=page.object_list)
    return render(
        request,
        "explorer/table_list.html",
        {"catalogs": catalogs, "many_catalogs": len(catalogs) > 1,
         "some_listed": any(c.error is None for c in catalogs), "form": form, "query": query,
         "page": page, "rows": rows},
    )
