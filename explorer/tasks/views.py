"""Pages that act: a table's Actions page (a form per task kind, previews of evolve, delete and
compaction), the task pages (all runs, per table, per user; one run with its live progress,
its cancel button and, for a dry run, its confirm step), and a table's audit page.

Thin: every decision is the services' and permissions' (a viewer's POST is 403 from
``explorer.access.permissions`` whatever the page shows), every parameter is checked by
``explorer.tasks.kinds`` exactly as for the API. Forms carry Django's CSRF token.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from explorer import ratelimit
from explorer.access import permissions
from explorer.access.auth import read_access_required
from explorer.audit.selectors import (
    audit_rows_described,
    table_audit,
    task_run_get,
    task_runs,
    time_parse,
)
from explorer.errors import TaskParamsInvalid
from explorer.models import REST_TABLE_ACTIONS, TaskRun
from explorer.tables import details as st
from explorer.tables import selectors
from explorer.tasks import kinds as task_kinds
from explorer.tasks import services
from explorer.tasks.forms import form_values, task_params
from explorer.tasks.outcomes import result_facts
from floe.errors import NotFound, ValidationError
from floe.schema import Schema

ACTIVE = (TaskRun.State.QUEUED, TaskRun.State.RUNNING)


def _table_context(catalog: str, ns: str, table: str) -> dict[str, Any]:
    t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
    ref = selectors.table_ref(t)
    return {"t": ref, "kw": {"catalog": ref.catalog, "ns": ref.namespace, "table": ref.name},
            "table_obj": t}


def _run_url(run: TaskRun) -> str:
    return reverse("tasks:detail", kwargs={"pk": run.pk})


# --- a table's Actions page -----------------------------------------------------------------------


def _actions_page(request: HttpRequest, catalog: str, ns: str, table: str, *,
                  status: int = 200, **more: Any) -> HttpResponse:
    permissions.require_change(user=request.user, catalog=catalog)
    ctx = _table_context(catalog, ns, table)
    t = ctx.pop("table_obj")
    groups: dict[str, list[Any]] = {}
    for form in task_kinds.action_forms():
        groups.setdefault(form.group, []).append(form)
    return render(request, "explorer/table_actions.html", {
        **ctx, "groups": groups, "snapshots": st.snapshot_list(table=t)[:500],
        "refs": sorted(t.metadata.refs), "running": _running(request, catalog, ns, table),
        "column_paths": [row["path"] for row in st.schema_tree(t.schema())],
        "values": {}, **more}, status=status)


@read_access_required
@require_GET
def table_actions(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    """A form per task kind (maintainers only: viewers get 403 and never see the link)."""
    return _actions_page(request, catalog, ns, table)


@read_access_required
@require_POST
def table_action(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    """Queue (``op=queue``) or preview (``op=preview``) the posted form's kind on this
    table. A bad parameter re-renders the page with the message next to the form (400)."""
    permissions.require_change(user=request.user, catalog=catalog)
    kind = request.POST.get("kind", "")
    spec = task_kinds.KINDS.get(kind)
    form = spec.form if spec is not None else None
    if form is None:
        return _actions_page(request, catalog, ns, table, status=400,
                             error={"kind": kind, "message": f"unknown kind {kind!r}"})
    values = form_values(form, request.POST)
    try:
        params = {**task_params(form, request.POST), "catalog": catalog, "namespace": ns,
                  "table": table}
        if request.POST.get("op") == "preview" and form.preview:
            preview = services.task_preview(kind=kind, params=params, user=request.user,
                                            identity=ratelimit.request_identity(request))
            return _actions_page(request, catalog, ns, table, values={kind: values},
                                 preview={"kind": kind, "data": preview,
                                          "json": json.dumps(preview, indent=1, default=str),
                                          **_preview_schema(preview)})
        run = services.task_submit(kind=kind, params=params, user=request.user, via="session")
    except (TaskParamsInvalid, ValidationError) as exc:
        param = getattr(exc, "param", "")
        return _actions_page(request, catalog, ns, table, status=400, values={kind: values},
                             error={"kind": kind, "param": param, "message": str(exc)})
    return redirect(_run_url(run))


def _preview_schema(preview: dict[str, Any]) -> dict[str, Any]:
    """An evolve preview's new schema as a tree with the fields its changes touch marked."""
    if not isinstance(preview.get("schema"), dict):
        return {}
    return {"schema_tree": st.schema_tree_marked(
        before=Schema.from_json(preview["current"]["schema"]),
        after=Schema.from_json(preview["schema"]))}


# --- task pages -----------------------------------------------------------------------------------


def _running(request: HttpRequest, catalog: str, ns: str, table: str) -> list[TaskRun]:
    return list(task_runs(user=request.user, catalog=catalog, namespace=ns, table=table)
                .filter(state__in=ACTIVE)[:20])


def _runs_page(request: HttpRequest, **scope: str) -> dict[str, Any]:
    """The runs a task list shows (``scope``: the table's catalog, namespace and name, which
    the query cannot change), filtered by the query's ``user``, ``state``, ``kind``."""
    q = request.GET
    filters = {k: q.get(k, "").strip() for k in ("catalog", "namespace", "table", "user",
                                                  "state", "kind")}
    filters.update(scope)
    runs = task_runs(user=request.user, catalog=filters["catalog"] or None,
                     namespace=filters["namespace"] or None, table=filters["table"] or None,
                     created_by=filters["user"] or None, state=filters["state"] or None,
                     kind=filters["kind"] or None)
    return {"page": Paginator(runs, settings.FLOE_PAGE_SIZE).get_page(q.get("page")),
            "filters": filters, "states": TaskRun.State.values, "kinds": TaskRun.Kind.choices}


@read_access_required
@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    """Task runs newest first: all, per table (``catalog``, ``namespace``, ``table``), per
    user (``user``), per ``state`` / ``kind``; unfinished ones update live."""
    return render(request, "explorer/task_list.html", _runs_page(request))


@read_access_required
@require_GET
def table_tasks(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    """A table's Tasks tab: its runs, with the table's navigation (filters ``user``,
    ``state``, ``kind``)."""
    ctx = _table_context(catalog, ns, table)
    ctx.pop("table_obj")
    return render(request, "explorer/table_tasks.html", {
        **ctx, **_runs_page(request, catalog=catalog, namespace=ns, table=table)})


@read_access_required
@require_GET
def task_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = task_run_get(user=request.user, task_run_id=pk)
    spec = task_kinds.KINDS[run.kind]
    confirm_kind = next((k for k, s in task_kinds.KINDS.items() if s.dry_run_of == run.kind),
                        None)
    confirmation = run.confirmations.exclude(
        state__in=(TaskRun.State.FAILED, TaskRun.State.CANCELLED)).first() \
        if confirm_kind else None
    can_change = permissions.can_change(user=request.user, catalog=run.catalog)
    result = run.result or {}
    plan_files = (result.get("files") or result.get("orphan_files") or {}) \
        if confirm_kind else {}
    return render(request, "explorer/task_detail.html", {
        "plan_files": plan_files,
        "plan_snapshots": (result.get("expired_snapshot_ids") or {}).get("count"),
        "run": run, "spec": spec, "can_change": can_change,
        "can_cancel": can_change and not run.is_finished,
        "confirm_kind": confirm_kind, "confirmation": confirmation,
        "can_confirm": bool(confirm_kind and can_change and confirmation is None
                            and run.state == TaskRun.State.SUCCEEDED
                            and not result.get("nothing_to_do")),
        "can_download": run.kind == TaskRun.Kind.EXPORT and run.state == TaskRun.State.SUCCEEDED
        and bool(run.artifact) and permissions.can_download(user=request.user, run=run),
        "params_json": json.dumps(run.params, indent=1, default=str),
        "result_json": json.dumps(run.result, indent=1, default=str) if run.result else "",
        "result_facts": result_facts(run.result),
    })


@require_POST
def task_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = services.task_cancel(task_run_id=pk, user=request.user)
    return redirect(_run_url(run))


@require_POST
def task_confirm(request: HttpRequest, pk: int) -> HttpResponse:
    """Run exactly the plan of dry run ``pk`` (409 when the table moved since)."""
    dry = TaskRun.objects.filter(pk=pk).first()
    if dry is None:
        raise NotFound(f"task run {pk} does not exist")
    permissions.require_change(user=request.user, catalog=dry.catalog)
    kind = next((k for k, s in task_kinds.KINDS.items() if s.dry_run_of == dry.kind), None)
    if kind is None:
        raise ValidationError(f"task run {pk} is not a dry run")
    run = services.task_submit(kind=kind, params={"dry_run_task_id": dry.pk},
                               user=request.user, via="session")
    return redirect(_run_url(run))


# --- a table's audit page -------------------------------------------------------------------------

AUDIT_EXPORT_COLUMNS = ("timestamp_ms", "source", "actor", "actor_via", "action", "outcome",
                        "description", "metadata_file", "is_current", "snapshot_id",
                        "operation", "engine", "current_snapshot_id", "task_run_id", "entry_id",
                        "error", "summary")


def _ms(value: str, what: str) -> int | None:
    when = time_parse(value, what)
    return None if when is None else int(when.timestamp() * 1000)


@read_access_required
@require_GET
def table_audit_page(request: HttpRequest, catalog: str, ns: str, table: str) -> HttpResponse:
    """Every version of the table attributed to a Floe user or to "external", with Floe's
    entries that made none; filters ``user``, ``action``, ``source``, ``since``, ``until``;
    ``?format=csv`` / ``?format=json`` downloads every matching row."""
    ctx = _table_context(catalog, ns, table)
    t = ctx.pop("table_obj")
    q = request.GET
    filters = {k: q.get(k, "").strip() for k in ("user", "action", "source", "since",
                                                  "until")}
    rows = table_audit(table=t, actor=filters["user"] or None,
                       action=filters["action"] or None, source=filters["source"] or None,
                       since_ms=_ms(filters["since"], "since"),
                       until_ms=_ms(filters["until"], "until"))
    fmt = q.get("format")
    if fmt in ("csv", "json"):
        rows = audit_rows_described(table=t, rows=rows)
        name = f"floe-audit-{ns}.{table}.{fmt}"
        if fmt == "json":
            response = HttpResponse(json.dumps([r.to_json() for r in rows], default=str),
                                    content_type="application/json")
        else:
            response = StreamingHttpResponse(_audit_csv(rows),
                                             content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    page = Paginator(rows, settings.FLOE_PAGE_SIZE).get_page(q.get("page"))
    page.object_list = audit_rows_described(table=t, rows=page.object_list)
    return render(request, "explorer/table_audit.html", {
        **ctx, "page": page, "filters": filters,
        "actions": [*TaskRun.Kind.choices, *((a, a.replace("rest_", "REST ").replace("_", " "))
                                             for a in REST_TABLE_ACTIONS)],
        "query": q.urlencode()})


def _audit_csv(rows: list[Any]) -> Any:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(AUDIT_EXPORT_COLUMNS)
    for r in rows:
        doc = r.to_json()
        doc["summary"] = json.dumps(doc["summary"], sort_keys=True)
        writer.writerow(["" if doc[c] is None else doc[c] for c in AUDIT_EXPORT_COLUMNS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
