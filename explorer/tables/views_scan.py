"""Pages: partitions of a snapshot, the scan-plan visualiser, the time-travel preview.

Thin views: parse the query string, call :mod:`explorer.tables.scan`, render. Domain
errors (unknown table or snapshot, unreadable manifest) go to the one mapping in
``explorer.middleware``; a bad filter is shown next to the form it was typed in, with a 400.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from explorer.access.auth import expensive_read, read_access_required
from explorer.tables import scan, selectors
from explorer.units import size_text
from explorer.values import json_text, rows_text
from floe.errors import ValidationError
from floe.partition_stats import size_histogram
from floe.table import Table

SKEW_BARS = 30


def _open(catalog: str, ns: str, table: str) -> Table:
    return selectors.table_load(catalog=catalog, namespace=ns, name=table)


def _size_label(n: int | None) -> str:
    return "∞" if n is None else size_text(n)


def _histogram_figure(sizes: list[int], title: str) -> str:
    buckets = size_histogram(sizes)
    x = [f"{_size_label(b['lower'])}–{_size_label(b['upper'])}" for b in buckets]
    return json_text({
        "data": [{"type": "bar", "x": x, "y": [b["count"] for b in buckets],
                  "marker": {"color": "#3b6ea5"}}],
        "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "file size"}},
                   "yaxis": {"title": {"text": "data files"}}, "height": 320,
                   "margin": {"t": 40, "b": 80}},
    })


@require_GET
@read_access_required
def partitions(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    try:
        selection = scan.selection_parse(snapshot=request.GET.get("snapshot"),
                                         ref=request.GET.get("ref"))
        scan.selection_check(table=t, selection=selection)
    except ValidationError as exc:  # shown above the form, which keeps what was typed
        return render(request, "explorer/partitions.html", {
            "state": selectors.table_ref(t), "error": str(exc),
            "typed": request.GET.get("snapshot", "")}, status=400)
    file_stats, stats_file = scan.table_partitions_from_stats_file(table=t, selection=selection)
    from_file = file_stats is not None and request.GET.get("source") != "manifests"
    stats = file_stats if from_file and file_stats is not None else scan.table_partitions(
        table=t, selection=selection)
    ordered = sorted(stats.partitions, key=lambda p: (-p.total_size, p.label))
    page = Paginator(ordered, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    chosen = stats.find(request.GET.get("partition", "")) if request.GET.get("partition") else None
    skew = stats.skew()
    bars = ordered[:SKEW_BARS]
    skew_figure = json_text({
        "data": [{"type": "bar", "x": [p.label for p in bars], "y": [p.total_size for p in bars],
                  "name": "partition size", "marker": {"color": "#3b6ea5"}}],
        "layout": {"title": {"text": f"Largest {len(bars)} partitions against the median"},
                   "yaxis": {"title": {"text": "bytes"}}, "height": 340,
                   "margin": {"t": 40, "b": 120},
                   "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                               "y0": skew["median_size"], "y1": skew["median_size"],
                               "line": {"color": "#c0392b", "dash": "dash"}}],
                   "annotations": [{"xref": "paper", "x": 1, "y": skew["median_size"],
                                    "text": "median", "showarrow": False, "yanchor": "bottom"}]},
    })
    return render(request, "explorer/partitions.html", {
        "state": selectors.table_ref(t), "stats": stats, "totals": stats.totals(), "skew": skew,
        "page": page,
        "chosen": chosen, "selection": selection, "from_file": from_file,
        "stats_file": stats_file,
        # A statistics file has no per-file sizes: the histograms come from the manifests.
        "table_histogram": None if from_file else _histogram_figure(
            stats.file_sizes, "File sizes, whole table"),
        "partition_histogram": (_histogram_figure(chosen.file_sizes, f"File sizes, {chosen.label}")
                                if chosen is not None and not from_file else None),
        "skew_figure": skew_figure,
    })


@require_GET
@read_access_required
@expensive_read("the scan plan")
def plan(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    form = {k: request.GET.get(k, "") for k in ("snapshot", "ref", "filter")}
    status_filter = request.GET.get("files", "all")
    if status_filter not in ("all", "kept", "pruned"):
        status_filter = "all"
    context: dict[str, Any] = {"state": selectors.table_ref(t), "form": form,
                               "files_status": status_filter,
                               "snapshots": sorted(t.metadata.snapshots,
                                                   key=lambda s: -s.timestamp_ms)[:200],
                               "refs": sorted(t.metadata.refs)}
    try:
        selection = scan.selection_parse(snapshot=form["snapshot"], ref=form["ref"])
        scan.selection_check(table=t, selection=selection)
        row_filter = scan.filter_check(table=t, selection=selection, text=form["filter"])
    except ValidationError as exc:
        context["error"] = str(exc)
        return render(request, "explorer/plan.html", context, status=400)
    result = scan.table_plan(table=t, selection=selection, row_filter=row_filter)
    stages = scan.plan_funnel_stages(result)
    manifests = Paginator(scan.plan_manifests(result), 20).get_page(request.GET.get("mpage"))
    files = Paginator(scan.PlanFiles(result, status_filter), settings.FLOE_PAGE_SIZE).get_page(
        request.GET.get("fpage"))
    context.update({
        "plan": result, "summary": scan.plan_summary(result), "stages": stages,
        "manifests": manifests, "files": files,
        "file_rows": [(m, f, f.residual) for m, f in files.object_list],
        "funnel_figure": json_text({
            "data": [{"type": "funnel", "y": [s["stage"] for s in stages],
                      "x": [s["count"] for s in stages], "textinfo": "value"}],
            "layout": {"height": 380, "margin": {"l": 260, "t": 20}},
        }),
        "query": request.GET.copy(),
    })
    return render(request, "explorer/plan.html", context)


@require_GET
@read_access_required
@expensive_read("the preview")
def preview(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    form = {k: request.GET.get(k, "") for k in ("snapshot", "as_of", "ref", "filter", "columns",
                                                  "limit")}
    context: dict[str, Any] = {"state": selectors.table_ref(t), "form": form,
                               "max_rows": scan.PREVIEW_MAX_ROWS,
                               "export_max_rows": scan.EXPORT_MAX_ROWS}
    try:
        selection = scan.selection_parse(snapshot=form["snapshot"], as_of=form["as_of"],
                                         ref=form["ref"])
        scan.selection_check(table=t, selection=selection)
        row_filter = scan.filter_check(table=t, selection=selection, text=form["filter"])
        columns = scan.columns_parse(table=t, selection=selection, text=form["columns"])
        limit = scan.limit_parse(form["limit"])
    except ValidationError as exc:
        context["error"] = str(exc)
        return render(request, "explorer/preview.html", context, status=400)
    fmt = request.GET.get("format")
    if fmt:
        data, _ = scan.table_export(table=t, selection=selection, row_filter=row_filter,
                                    columns=columns, fmt=fmt)
        response = HttpResponse(
            data, content_type="text/csv; charset=utf-8" if fmt == "csv"
            else "application/vnd.apache.parquet")
        response["Content-Disposition"] = f'attachment; filename="{t.identifier.name}.{fmt}"'
        return response
    result, rows = scan.table_preview(table=t, selection=selection, row_filter=row_filter,
                                      columns=columns, limit=limit)
    export_query = request.GET.copy()
    export_query.pop("format", None)
    context.update({
        "plan": result, "columns": rows.column_names,
        "rows": rows_text(result.schema, rows),
        "row_count": rows.num_rows, "limit": limit, "export_query": export_query.urlencode(),
    })
    return render(request, "explorer/preview.html", context)


_table = "catalogs/<str:catalog>/namespaces/<str:ns>/tables/<str:table>/"

scan_patterns = (
    [
        path(_table + "partitions/", partitions, name="partitions"),
        path(_table + "plan/", plan, name="plan"),
        path(_table + "preview/", preview, name="preview"),
    ],
    "scan",
)
