"""Server-side scan planning (rest-catalog-open-api.yaml, Iceberg 1.11): ``planTableScan``,
``fetchPlanningResult``, ``cancelPlanning`` and ``fetchScanTasks``, answered by floe's planner
(:func:`floe.scan.plan_files`; :func:`floe.scan.incremental.plan_appends` for an incremental
append scan).

Stateless: a plan is answered ``completed`` at once. Its first page of file scan tasks comes
with the answer; the rest are ``plan-tasks``, each a token that holds everything needed to
plan again and cut its page (the table's uuid, the snapshot or the snapshot range, the filter
as JSON, case sensitivity, the stats fields, the page's offset and size), so any server
process answers ``fetchScanTasks`` without shared state. A plan of the current state pins the
snapshot it planned, and a snapshot never changes, so the pages of one plan fit together
whatever is committed meanwhile. Planning again is cheap: manifests are cached. The
``plan-id`` is the same token without a page; a plan-id or plan task that does not decode, or
names another table (or a snapshot since expired), is 404 ``NoSuchPlanIdException`` /
``NoSuchPlanTaskException``. ``cancelPlanning`` has nothing to release (204).

File scan tasks and their files are the JSON of :mod:`floe.scan.tasks_json`.

Every plan is also described as a spec ``ScanReport`` (the metrics Java's scans report) and
handed to :attr:`RestServer.on_plan` with the explorer's plan-page parameters that reproduce it
(``snapshot`` and ``filter`` in floe's filter syntax).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from floe.errors import NotFound, ValidationError
from floe.expressions.base import BooleanExpression
from floe.expressions.json import expression_from_json, expression_to_json
from floe.manifest import FileContent
from floe.metadata import TableMetadata
from floe.rest_server.errors import BadRequest, RestError
from floe.rest_server.server import Access, Call, Response, Route, json_response
from floe.scan import ScanPlan, plan_files
from floe.scan.delete_index import DeleteFile
from floe.scan.incremental import plan_appends
from floe.scan.tasks_json import scan_tasks_json
from floe.schema import Schema
from floe.table import Table

__all__ = ["DEFAULT_PLAN_PAGE_SIZE", "PLANNING_ROUTES", "scan_report"]

log = logging.getLogger("floe.rest_server")

#: File scan tasks per answer (the first page and each plan task).
DEFAULT_PLAN_PAGE_SIZE = 1000
_TOKEN_VERSION = 1
_PLAN_ID_PREFIX = "floe-plan-"
_PLAN_TASK_PREFIX = "floe-task-"


class NoSuchPlanId(RestError):
    def __init__(self, message: str) -> None:
        super().__init__(404, "NoSuchPlanIdException", message)


class NoSuchPlanTask(RestError):
    def __init__(self, message: str) -> None:
        super().__init__(404, "NoSuchPlanTaskException", message)


# -- the request ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to plan: a ``PlanTableScanRequest`` checked, and what a token carries."""

    table_uuid: str | None
    snapshot_id: int | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    filter: Any = None  # the filter's JSON as sent (None: every row)
    case_sensitive: bool = True
    select: tuple[str, ...] | None = None
    stats_fields: tuple[str, ...] | None = None
    #: A scan of the current state: the snapshot that was current when it was planned (its
    #: plan tasks keep reading that snapshot after a commit).
    pinned: int | None = None
    #: Bind a ``snapshot_id`` scan with that snapshot's schema (else the table's).
    use_snapshot_schema: bool = False

    @property
    def incremental(self) -> bool:
        return self.start_snapshot_id is not None

    def to_json(self) -> dict[str, Any]:
        return {"v": _TOKEN_VERSION, "u": self.table_uuid, "s": self.snapshot_id,
                "a": self.start_snapshot_id, "b": self.end_snapshot_id, "f": self.filter,
                "c": self.case_sensitive, "p": self.select, "t": self.stats_fields,
                "q": self.pinned, "w": self.use_snapshot_schema}

    @classmethod
    def from_json(cls, doc: Any) -> ScanRequest:
        if not isinstance(doc, dict) or doc.get("v") != _TOKEN_VERSION:
            raise ValueError("not a plan token of this server")

        def ints(key: str) -> int | None:
            v = doc.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ValueError(key)
            return v

        def names(key: str) -> tuple[str, ...] | None:
            v = doc.get(key)
            if v is None:
                return None
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(key)
            return tuple(v)

        return cls(doc.get("u") if isinstance(doc.get("u"), str) else None, ints("s"),
                   ints("a"), ints("b"), doc.get("f"), doc.get("c") is not False, names("p"),
                   names("t"), ints("q"), doc.get("w") is True)


def _long(doc: Mapping[str, Any], key: str) -> int | None:
    v = doc.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"{key} must be an integer (a snapshot id), not {v!r}"[:300])
    return v


def _bool(doc: Mapping[str, Any], key: str, default: bool) -> bool:
    v = doc.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise BadRequest(f"{key} must be true or false, not {v!r}"[:300])
    return v


def _names(doc: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    v = doc.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise BadRequest(f"{key} must be an array of field names")
    return tuple(v)


def parse_plan_request(doc: Mapping[str, Any], md: TableMetadata) -> ScanRequest:
    """A ``PlanTableScanRequest`` checked against the table (400 naming what is wrong)."""
    snapshot_id = _long(doc, "snapshot-id")
    start, end = _long(doc, "start-snapshot-id"), _long(doc, "end-snapshot-id")
    if (start is not None or end is not None) and snapshot_id is not None:
        raise BadRequest("a point-in-time scan (snapshot-id) and an incremental scan "
                         "(start-snapshot-id, end-snapshot-id) cannot be asked at once")
    if start is not None and end is None:
        raise BadRequest("end-snapshot-id is required with start-snapshot-id")
    if end is not None and start is None:
        raise BadRequest("start-snapshot-id is required with end-snapshot-id (an incremental "
                         "scan reads the appends after it)")
    for key, sid in (("snapshot-id", snapshot_id), ("start-snapshot-id", start),
                     ("end-snapshot-id", end)):
        if sid is not None and md.snapshot_by_id(sid) is None:
            raise BadRequest(f"{key} {sid} is not a snapshot of the table")
    min_rows = doc.get("min-rows-requested")
    if min_rows is not None and (isinstance(min_rows, bool) or not isinstance(min_rows, int)):
        raise BadRequest("min-rows-requested must be an integer")
    request = ScanRequest(md.table_uuid, snapshot_id, start, end, doc.get("filter"),
                          _bool(doc, "case-sensitive", True), _names(doc, "select"),
                          _names(doc, "stats-fields"),
                          use_snapshot_schema=_bool(doc, "use-snapshot-schema", False))
    schema = _schema_for(md, request)
    try:
        _field_ids(schema, request.select, request.case_sensitive)
        _field_ids(schema, request.stats_fields, request.case_sensitive)
    except ValidationError as e:
        raise BadRequest(str(e)) from None
    return request


def _schema_for(md: TableMetadata, request: ScanRequest) -> Schema:
    """The schema a scan reads and binds with: with ``use-snapshot-schema`` the snapshot's
    own (time travel), else the table's current one (the spec: a branch, an incremental
    scan, the current state)."""
    if request.snapshot_id is not None and request.use_snapshot_schema:
        snap = md.snapshot_by_id(request.snapshot_id)
        if snap is not None and snap.schema_id is not None:
            got = md.schema_by_id(snap.schema_id)
            if got is not None:
                return got
    return md.schema()


def _field_ids(schema: Schema, names: Sequence[str] | None, case_sensitive: bool
               ) -> list[int] | None:
    if names is None:
        return None
    return [schema.find_field_id(n, case_sensitive) for n in names]


def _filter_expression(request: ScanRequest, schema: Schema) -> BooleanExpression | None:
    if request.filter is None:
        return None
    try:
        return expression_from_json(request.filter, schema)
    except ValidationError as e:
        raise BadRequest(f"filter: {e}") from None


# -- tokens -----------------------------------------------------------------------------------


def _encode(prefix: str, doc: Any) -> str:
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return prefix + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(prefix: str, token: Any) -> Any:
    if not isinstance(token, str) or not token.startswith(prefix):
        raise ValueError("not a token of this server")
    body = token[len(prefix):]
    try:
        return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, binascii.Error):
        raise ValueError("not a token of this server") from None


def plan_id(request: ScanRequest) -> str:
    return _encode(_PLAN_ID_PREFIX, request.to_json())


def plan_task(request: ScanRequest, offset: int, size: int) -> str:
    return _encode(_PLAN_TASK_PREFIX, {**request.to_json(), "o": offset, "n": size})


def _request_of_plan_id(token: str, md: TableMetadata) -> ScanRequest:
    try:
        request = ScanRequest.from_json(_decode(_PLAN_ID_PREFIX, token))
    except ValueError:
        raise NoSuchPlanId(f"plan {token[:60]!r} does not exist") from None
    if request.table_uuid != md.table_uuid:
        raise NoSuchPlanId(f"plan {token[:60]!r} is not a plan of this table")
    return request


def _request_of_plan_task(token: Any, md: TableMetadata) -> tuple[ScanRequest, int, int]:
    try:
        doc = _decode(_PLAN_TASK_PREFIX, token)
        request = ScanRequest.from_json(doc)
        offset, size = doc.get("o"), doc.get("n")
        if not (isinstance(offset, int) and isinstance(size, int) and offset >= 0 and size > 0):
            raise ValueError("page")
    except ValueError:
        raise NoSuchPlanTask(f"plan task {str(token)[:60]!r} does not exist") from None
    if request.table_uuid != md.table_uuid:
        raise NoSuchPlanTask(f"plan task {str(token)[:60]!r} is not a task of this table")
    return request, offset, size


# -- planning ---------------------------------------------------------------------------------


@dataclass(slots=True)
class ServedPlan:
    request: ScanRequest
    plan: ScanPlan
    schema: Schema
    duration_ns: int


def run_plan(table: Table, request: ScanRequest) -> ServedPlan:
    """Plan ``request`` on ``table`` with floe's planner (ValidationError: a filter that does
    not bind, an incremental range floe cannot read as appends)."""
    md = table.metadata
    schema = _schema_for(md, request)
    expr = _filter_expression(request, schema)
    started = time.perf_counter_ns()
    if request.incremental:  # start exclusive, as the spec says (Java's reference handler
        # of 1.11 reads it inclusive)
        assert request.start_snapshot_id is not None
        plan = plan_appends(table.io, md, request.start_snapshot_id, request.end_snapshot_id,
                            expr, request.case_sensitive)
    else:
        snapshot_id = request.snapshot_id
        if snapshot_id is None and request.pinned is not None \
                and md.current_snapshot_id != request.pinned:
            snapshot_id = request.pinned  # committed to since: the snapshot planned
        plan = plan_files(table.io, md, snapshot_id=snapshot_id, row_filter=expr,
                          case_sensitive=request.case_sensitive, schema=schema)
    return ServedPlan(request, plan, plan.schema, time.perf_counter_ns() - started)


def _replan(table: Table, request: ScanRequest, error: Callable[[str], RestError],
            what: str) -> ServedPlan:
    """A plan again for a token: a snapshot expired since, or a filter that no longer binds
    (the schema changed), means the plan is gone."""
    try:
        return run_plan(table, request)
    except (NotFound, ValidationError, BadRequest) as e:
        raise error(f"{what} can no longer be planned: {e}") from None


def _stats_ids(served: ServedPlan) -> set[int] | None:
    ids = _field_ids(served.schema, served.request.stats_fields,
                     served.request.case_sensitive)
    return None if ids is None else set(ids)


def scan_tasks_page(md: TableMetadata, served: ServedPlan, offset: int, size: int
                    ) -> dict[str, Any]:
    """The spec's ``ScanTasks`` of tasks ``[offset, offset + size)`` and the plan task of
    the next page."""
    tasks = served.plan.tasks
    body = scan_tasks_json(md, tasks[offset:offset + size], _stats_ids(served))
    if offset + size < len(tasks):
        body["plan-tasks"] = [plan_task(served.request, offset + size, size)]
    return body


# -- the report -------------------------------------------------------------------------------


def _counter(value: int, unit: str = "count") -> dict[str, Any]:
    return {"unit": unit, "value": value}


def scan_report(ident_text: str, served: ServedPlan) -> dict[str, Any]:
    """The plan as the spec's ``ScanReport`` (metric names as Java's ``ScanMetricsResult``),
    with ``report-type`` as a ``ReportMetricsRequest`` has it
    (:func:`floe.rest_server.metrics.report_from_json` reads it)."""
    plan, f = served.plan, served.plan.funnel
    schema = served.schema
    if served.request.select is not None:
        ids = _field_ids(schema, served.request.select, served.request.case_sensitive) or []
    else:
        ids = [fld.field_id for fld in schema.fields]
    names = [schema.find_column_name(i) or "" for i in ids]
    data_size = 0
    deletes: dict[tuple[str, int | None], DeleteFile] = {}
    for t in plan.tasks:
        data_size += t.data_file.file_size_in_bytes
        for d in t.delete_files:
            deletes[(d.path, d.data_file.content_offset)] = d
    eq = sum(1 for d in deletes.values() if d.content == FileContent.EQUALITY_DELETES)
    dvs = sum(1 for d in deletes.values() if d.is_deletion_vector)
    metrics = {
        "total-planning-duration": {"count": 1, "time-unit": "nanoseconds",
                                    "total-duration": served.duration_ns},
        "result-data-files": _counter(len(plan.tasks)),
        "result-delete-files": _counter(len(deletes)),
        "total-data-manifests": _counter(f.manifests_total),
        "total-delete-manifests": _counter(f.delete_manifests_total),
        "scanned-data-manifests": _counter(f.manifests_after_summaries),
        "skipped-data-manifests": _counter(f.manifests_total - f.manifests_after_summaries),
        "scanned-delete-manifests": _counter(f.delete_manifests_kept),
        "skipped-delete-manifests": _counter(f.delete_manifests_total
                                             - f.delete_manifests_kept),
        "skipped-data-files": _counter(f.data_files_total - f.data_files_after_metrics),
        "skipped-delete-files": _counter(max(f.delete_files_total - len(deletes), 0)),
        "total-file-size-in-bytes": _counter(data_size, "bytes"),
        "total-delete-file-size-in-bytes": _counter(
            sum(d.data_file.file_size_in_bytes for d in deletes.values()), "bytes"),
        "indexed-delete-files": _counter(f.delete_files_total),
        "equality-delete-files": _counter(eq),
        "positional-delete-files": _counter(len(deletes) - eq - dvs),
        "dvs": _counter(dvs),
    }
    return {
        "report-type": "scan-report",  # a ReportMetricsRequest, as reportMetrics receives
        "table-name": ident_text,
        "snapshot-id": plan.snapshot_id if plan.snapshot_id is not None else -1,
        "filter": expression_to_json(plan.row_filter),
        "schema-id": schema.schema_id,
        "projected-field-ids": ids,
        "projected-field-names": names,
        "metrics": metrics,
        "metadata": {"engine-name": "floe", "planned-by": "server"},
    }


def explain_params(served: ServedPlan) -> dict[str, str] | None:
    """The explorer plan page's query (``snapshot``, ``filter`` in floe's filter syntax)
    that shows the same plan; None for an incremental scan, which that page does not show."""
    if served.request.incremental:
        return None
    params: dict[str, str] = {}
    if served.plan.snapshot_id is not None:
        params["snapshot"] = str(served.plan.snapshot_id)
    if served.plan.row_filter is not None:
        params["filter"] = str(served.plan.row_filter)
    return params


# -- handlers ---------------------------------------------------------------------------------


def _page_size(call: Call) -> int:
    return max(int(call.server.plan_page_size), 1)


def _completed(table: Table, served: ServedPlan, size: int, with_id: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"status": "completed"}
    if with_id:
        body["plan-id"] = plan_id(served.request)
    body.update(scan_tasks_page(table.metadata, served, 0, size))
    return body


def _plan_table_scan(call: Call) -> Response:
    doc = call.json() if call.request.body.strip() else {}
    table = call.catalog.load_table(call.ident)
    request = parse_plan_request(doc, table.metadata)
    try:
        served = run_plan(table, request)
    except NotFound as e:  # a snapshot named in the request
        raise BadRequest(str(e)) from None
    if not request.incremental and request.snapshot_id is None:
        served.request = dataclasses.replace(request, pinned=served.plan.snapshot_id)
    body = _completed(table, served, _page_size(call), with_id=True)
    hook = call.server.on_plan
    if hook is not None:
        try:
            hook(call, scan_report(str(call.ident), served), explain_params(served))
        except Exception:  # a report is never worth failing the plan
            log.exception("the on_plan hook failed for table %s", call.ident)
    return json_response(body)


def _fetch_planning_result(call: Call) -> Response:
    table = call.catalog.load_table(call.ident)
    request = _request_of_plan_id(call.params["plan-id"], table.metadata)
    served = _replan(table, request, NoSuchPlanId, "the plan")
    return json_response(_completed(table, served, _page_size(call), with_id=False))


def _cancel_planning(call: Call) -> Response:
    table = call.catalog.load_table(call.ident)
    _request_of_plan_id(call.params["plan-id"], table.metadata)
    return Response(204)


def _fetch_scan_tasks(call: Call) -> Response:
    doc = call.json()
    if "plan-task" not in doc:
        raise BadRequest("fetchScanTasks: the request has no 'plan-task'")
    if not isinstance(doc["plan-task"], str):
        raise BadRequest("fetchScanTasks: 'plan-task' must be a string")
    table = call.catalog.load_table(call.ident)
    request, offset, size = _request_of_plan_task(doc["plan-task"], table.metadata)
    served = _replan(table, request, NoSuchPlanTask, "the plan task")
    return json_response(scan_tasks_page(table.metadata, served, offset, size))


_TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"

PLANNING_ROUTES: tuple[Route, ...] = (
    Route("POST", _TABLE + "/plan", "planTableScan", _plan_table_scan, Access.READ,
          not_found="NoSuchTableException",
          summary="Plan a scan on the server (answered completed; more tasks as plan-tasks)",
          body="PlanTableScanRequest"),
    Route("GET", _TABLE + "/plan/{plan-id}", "fetchPlanningResult", _fetch_planning_result,
          Access.READ, not_found="NoSuchTableException",
          summary="The result of a plan (plans are stateless: planned again)"),
    Route("DELETE", _TABLE + "/plan/{plan-id}", "cancelPlanning", _cancel_planning,
          Access.READ, not_found="NoSuchTableException",
          summary="Cancel a plan (nothing is held: 204)", success=204),
    Route("POST", _TABLE + "/tasks", "fetchScanTasks", _fetch_scan_tasks, Access.READ,
          not_found="NoSuchTableException", summary="The file scan tasks of a plan task",
          body="FetchScanTasksRequest"),
)

