from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.conf import settings
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from explorer.access import permissions
from explorer.access.auth import read_access_required
from explorer.sorting import by_key, parse_sort, sort_rows
from explorer.tables import selectors


class TableSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, strip=True)

#: The table lists' sorts (explorer.sorting), within each catalog and namespace.
TABLE_SORTS = ("name", "format_version", "data_files", "delete_files", "records", "files_size")


def _table_page(request: HttpRequest, refs: Sequence[selectors.TableRef]
                ) -> tuple[Page[Any], list[selectors.TableRow]]:
    """One page of a table list, sorted as ``?sort=`` asks; unless sorted by a number only the
    page's tables are read (a sort by a number reads every listed table, cached by its
    metadata file)."""
    sort, descending = parse_sort(request.GET.get("sort"), TABLE_SORTS)
    if sort and sort != "name":
        ordered = sort_rows(selectors.table_rows(refs=refs), by_key(sort), descending,
                            group=lambda r: r.group_key)
        page = Paginator(ordered, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
        return page, list(page.object_list)
    if descending:
        refs = sort_rows(refs, by_key("name"), True, group=lambda r: (r.catalog, r.namespace))
    page = Paginator(refs, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    return page, selectors.table_rows(refs=page.object_list)


@read_access_required
def table_list(request: HttpRequest) -> HttpResponse:
    """The tables of every configured catalog, searchable, sortable, paged."""
    form = TableSearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    readable = permissions.readable_catalogs(
        user=request.user, names=[c.name for c in selectors.catalog_list()])
    catalogs, refs = selectors.all_table_refs(query=query, only=readable)
    page, rows = _table_page(request, refs)
    return render(
        request,
        "explorer/table_list.html",
        {"catalogs": catalogs, "many_catalogs": len(catalogs) > 1,
         "some_listed": any(c.error is None for c in catalogs), "form": form, "query": query,
         "page": page, "rows": rows},
    )


@read_access_required
def catalog_page(request: HttpRequest, catalog: str) -> HttpResponse:
    """A catalog: its namespaces as a tree (nested ones under their parents) with their table
    counts, and its tables grouped by namespace, sortable and paged. An unknown catalog is a
    404 naming it."""
    info = selectors.catalog_get(name=catalog)
    namespaces = selectors.namespace_tree(catalog=catalog)
    page, rows = _table_page(request, selectors.catalog_table_refs(catalog=catalog))
    return render(request, "explorer/catalog.html", {
        "catalog": info, "namespaces": namespaces,
        "table_count": sum(n.table_count for n in namespaces), "page": page, "rows": rows})


@read_access_required
def namespace_page(request: HttpRequest, catalog: str, ns: str) -> HttpResponse:
    """A namespace: the namespaces below it (with their table counts) and its own tables,
    sortable and paged. An unknown catalog or namespace is a 404 naming it."""
    info = selectors.catalog_get(name=catalog)
    children = selectors.namespace_tree(catalog=catalog, namespace=ns)
    refs = selectors.catalog_table_refs(catalog=catalog, namespace=ns, below=False)
    page, rows = _table_page(request, refs)
    return render(request, "explorer/namespace.html", {
        "catalog": info, "namespace": ns, "children": children, "table_count": len(refs),
        "tables_below": sum(c.table_count for c in children), "page": page, "rows": rows})


def namespace_tables(request: HttpRequest, catalog: str, ns: str) -> HttpResponse:
    """``…/namespaces/{ns}/tables/`` (a URL cut back from a table's): the namespace's page."""
    return redirect("explorer:namespace", catalog=catalog, ns=ns)


def catalog_namespaces(request: HttpRequest, catalog: str) -> HttpResponse:
    """``…/{catalog}/namespaces/``: the catalog's page lists them."""
    return redirect("explorer:catalog", catalog=catalog)


def catalogs_index(request: HttpRequest) -> HttpResponse:
    """``/catalogs/``: every catalog is on the table list."""
    return redirect("explorer:tables")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Any URL no page has (Django's ``handler404``): the site's 404 page naming the path,
    with the way back, instead of a bare "Not Found"."""
    return render(request, "explorer/error.html", {
        "status": 404, "detail": f"there is no page at {request.path}"}, status=404)
