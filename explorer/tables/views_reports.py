"""A table's "Scans & commits" tab: the metrics reports engines sent through the Iceberg REST
catalog (and the ones Floe's own scan planning made), read by
:mod:`explorer.tables.reports`. Viewers see it, as every read page of the table."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from explorer.access.auth import read_access_required
from explorer.models import EngineReport
from explorer.tables import selectors
from explorer.tables.reports import table_report_engines, table_reports


@read_access_required
@require_GET
def table_reports_page(request: HttpRequest, catalog: str, ns: str,
                       table: str) -> HttpResponse:
    """Engines grouped (engine, user, source: scans, commits, last seen), then the recent
    scans (filter, snapshot, data files and manifests read vs skipped, planning time) and
    the recent commits, each list paged on its own (``scans``, ``commits``)."""
    t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
    ref = selectors.table_ref(t)
    where = {"catalog": ref.catalog, "namespace": ref.namespace, "table": ref.name}
    size = settings.FLOE_PAGE_SIZE
    scans = Paginator(table_reports(**where, report_type=EngineReport.Type.SCAN),
                      size).get_page(request.GET.get("scans"))
    commits = Paginator(table_reports(**where, report_type=EngineReport.Type.COMMIT),
                        size).get_page(request.GET.get("commits"))
    return render(request, "explorer/table_reports.html", {
        "t": ref, "kw": {"catalog": ref.catalog, "ns": ref.namespace, "table": ref.name},
        "engines": table_report_engines(**where), "scans": scans, "commits": commits,
        "keep": settings.FLOE_ICEBERG_REPORTS_PER_TABLE})
