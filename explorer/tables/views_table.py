"""Pages of one table: overview (+ timeline and health), snapshots, manifests, files,
history, diff. Thin: open the table (explorer.tables.selectors.table_load), call
explorer.tables.details, render. Domain errors are rendered by explorer.middleware (one
mapping in explorer.errors)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from explorer.access.auth import read_access_required
from explorer.audit.selectors import task_runs
from explorer.maintenance.selectors import health_sparklines
from explorer.models import TaskRun
from explorer.sorting import by_key, parse_sort, sort_rows
from explorer.tables import details as st
from explorer.tables import selectors
from floe.errors import NotFound, ValidationError
from floe.table import Table

#: The overview's timeline draws its points with WebGL from this many snapshots on (SVG
#: below: it draws sooner without a WebGL context to set up).
TIMELINE_WEBGL_FROM = 1_000


def _context(table: Table, **more: Any) -> dict[str, Any]:
    ref = selectors.table_ref(table)
    kw = {"catalog": ref.catalog, "ns": ref.namespace, "table": ref.name}
    return {"t": ref, "kw": kw, "location": table.location, **more}


def _open(catalog: str, ns: str, table: str) -> Table:
    return selectors.table_load(catalog=catalog, namespace=ns, name=table)


@read_access_required
def table_overview(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    timeline = st.snapshot_timeline(table=t)
    url = reverse("table:snapshot", kwargs={"catalog": catalog, "ns": ns, "table": table, "snapshot_id": 0})
    running = task_runs(user=request.user, catalog=catalog, namespace=ns, table=table).filter(
        state__in=(TaskRun.State.QUEUED, TaskRun.State.RUNNING))[:20]
    ref = selectors.table_ref(t)
    states, sparklines = health_sparklines(catalog=ref.catalog, namespace=ref.namespace,
                                           table=ref.name)
    return render(request, "explorer/table_overview.html", _context(
        t, overview=st.table_overview(table=t), health=st.table_health_get(table=t),
        health_states=states, sparklines=sparklines,
        timeline=timeline, charts=st.snapshot_charts(table=t) if timeline["count"] else None,
        snapshot_url=url.replace("/0/", "/{id}/"), running=list(running),
        webgl_from=TIMELINE_WEBGL_FROM,
    ))


#: The snapshot list's sorts (explorer.sorting); without one, newest first.
SNAPSHOT_SORTS = ("timestamp_ms", "operation", "sequence_number", "added_records",
                  "deleted_records", "total_records", "schema_id")


@read_access_required
def table_snapshots(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    rows = st.snapshot_list(table=t)
    sort, descending = parse_sort(request.GET.get("sort"), SNAPSHOT_SORTS)
    if sort:
        rows = sort_rows(rows, by_key(sort), descending)
    page = Paginator(rows, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "explorer/snapshot_list.html", _context(t, page=page, sort=sort))


@read_access_required
def snapshot_detail(request: HttpRequest, catalog: str, ns: str, table: str, snapshot_id: int) -> HttpResponse:
    t = _open(catalog, ns, table)
    parents, more = st.snapshot_parents(table=t, snapshot_id=snapshot_id)
    manifests = st.snapshot_manifests(table=t, snapshot_id=snapshot_id)
    page = Paginator(manifests, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    first = page.start_index() - 1 if manifests else 0
    return render(request, "explorer/snapshot_detail.html", _context(
        t, snapshot=st.snapshot_row(table=t, snapshot_id=snapshot_id), parents=parents,
        more_parents=more, page=page, manifest_count=len(manifests),
        manifests=[(first + i, m) for i, m in enumerate(page)],
    ))


@read_access_required
def manifest_detail(request: HttpRequest, catalog: str, ns: str, table: str, snapshot_id: int,
                    index: int) -> HttpResponse:
    t = _open(catalog, ns, table)
    status = request.GET.get("status", "")
    content = request.GET.get("content", "")
    query = request.GET.get("q", "").strip()
    sort, desc = parse_sort(request.GET.get("sort"), st.ENTRY_SORTS)
    rows = st.manifest_entry_rows(table=t, snapshot_id=snapshot_id, index=index, status=status,
                                  content=content, text=query, sort=sort, descending=desc)
    page = Paginator(rows, settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    manifest = st.manifest_at(table=t, snapshot_id=snapshot_id, index=index)
    return render(request, "explorer/manifest_detail.html", _context(
        t, snapshot_id=snapshot_id, index=index, manifest=manifest, page=page, status=status,
        content=content, query=query,
        statuses=sorted(st.STATUS_NAMES.values()), contents=["data", "position_deletes", "equality_deletes"],
    ))


@read_access_required
def file_detail(request: HttpRequest, catalog: str, ns: str, table: str, snapshot_id: int,
                index: int, position: int) -> HttpResponse:
    t = _open(catalog, ns, table)
    detail = st.file_detail(table=t, snapshot_id=snapshot_id, index=index, position=position)
    return render(request, "explorer/file_detail.html", _context(
        t, snapshot_id=snapshot_id, index=index, position=position, detail=detail))


@read_access_required
def table_history(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    history = st.table_history(table=t)
    page = Paginator(history["snapshot_log"], settings.FLOE_PAGE_SIZE).get_page(request.GET.get("page"))
    metadata_log = history["metadata_log"][: settings.FLOE_PAGE_SIZE]
    return render(request, "explorer/history.html", _context(
        t, history=history, page=page, metadata_log=metadata_log,
        metadata_log_more=len(history["metadata_log"]) - len(metadata_log)))


@read_access_required
def table_metadata(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    """The current metadata file (or one of its log, ``?file=``) as pretty-printed JSON."""
    t = _open(catalog, ns, table)
    return render(request, "explorer/metadata_file.html", _context(
        t, file=st.metadata_file_text(table=t, path=request.GET.get("file"))))


@read_access_required
def table_diff(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    t = _open(catalog, ns, table)
    diff, error = None, None
    from_text, to_text = request.GET.get("from", "").strip(), request.GET.get("to", "").strip()
    if from_text or to_text:
        try:
            diff = st.table_diff(
                table=t, from_id=st.snapshot_id_of(table=t, text=from_text, param="from"),
                to_id=st.snapshot_id_of(table=t, text=to_text, param="to"))
        except (ValidationError, NotFound) as exc:
            error = str(exc)  # shown above the form the user typed into
    snapshots = st.snapshot_list(table=t)[: 500]
    return render(request, "explorer/diff.html", _context(
        t, diff=diff, error=error, snapshots=snapshots, refs=sorted(t.metadata.refs),
        from_id=from_text, to_id=to_text, limit=settings.FLOE_PAGE_SIZE * 4),
        status=400 if error else 200)
