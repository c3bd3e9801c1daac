"""The Iceberg REST catalog the site serves (``/iceberg/``, api/views_iceberg.py): the one
:class:`floe.rest_server.RestServer` over the explorer's catalogs, who may do what (the
explorer's roles), and the audit trail of what REST clients changed.

Roles per catalog (:mod:`explorer.access.permissions`): a viewer loads and lists; a maintainer also
commits, creates, registers, renames and drops tables; an admin also creates, drops and
changes namespaces and drops tables with purge. Every change is an :class:`AuditEntry`
(``actor_via`` ``rest``, actions :data:`explorer.models.REST_ACTIONS`) with the user, the
engine that sent it (from the client's headers), the metadata file and current snapshot
before and after; a commit whose outcome is unknown is recorded as failed with the reason.
Refusals (4xx) are in the request log only.

Metrics reports (``reportMetrics``: an engine's ``ScanReport`` / ``CommitReport``; and the
reports Floe's own scan planning makes) are kept as :class:`EngineReport` rows by
:func:`record_report`, bounded per table (``FLOE_ICEBERG_REPORTS_PER_TABLE``).
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import logging
import os
import queue
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from explorer.access import permissions
from explorer.catalogs import catalog_get, catalog_storage_properties
from explorer.maintenance.metrics import metrics_record_commit
from explorer.models import AuditEntry, EngineReport, TableMetrics
from floe.catalog.rest import RestCatalog
from floe.rest_server import (
    Access,
    Call,
    Change,
    Forbidden,
    MetricsReport,
    Operation,
    RestServer,
    report_from_json,
)
from floe.rest_server import metrics as m

__all__ = ["audit_changes", "authorize", "engine_of", "record_report", "rest_server"]

log = logging.getLogger("explorer.iceberg")

_server: RestServer | None = None
_lock = threading.Lock()

#: Request headers that say which client sent a request, in the order they are shown.
ENGINE_HEADERS = ("x-client-version", "user-agent", "x-client-git-commit-short")
_ROLE_FOR = {Access.READ: "viewer", Access.WRITE: "maintainer", Access.ADMIN: "admin"}


def _vended(catalog: str) -> dict[str, str]:
    names = settings.FLOE_ICEBERG_VENDED_PROPERTIES
    if not names:
        return {}
    props = catalog_storage_properties(catalog)
    return {k: props[k] for k in names if k in props}


def rest_server() -> RestServer:
    """The server (one per process: it keeps the Idempotency-Key answers), its limits read
    from the settings on each call."""
    global _server
    with _lock:
        if _server is None:
            _server = RestServer(catalog_get, vended_config=_vended, reports=_keep_report)
            _server.on_plan = _keep_plan
        _server.max_body_bytes = int(settings.FLOE_ICEBERG_MAX_BODY)
        return _server


def authorize(user: Any, operation: Operation) -> None:
    """Forbidden (403) unless ``user``'s role on the operation's catalog allows it."""
    catalog = operation.catalog
    if catalog is None:  # /v1/config without a warehouse: answered 400 by the server
        return
    allowed = {Access.READ: permissions.can_read, Access.WRITE: permissions.can_change,
               Access.ADMIN: permissions.can_administer}[operation.access]
    if not allowed(user=user, catalog=catalog):
        what = operation.name
        if operation.name == "dropTable" and operation.access is Access.ADMIN:
            what = "dropTable with purgeRequested"
        raise Forbidden(f"user {user.get_username()!r} may not {what} in catalog {catalog!r}: "
                        f"that needs the {_ROLE_FOR[operation.access]} role on it")


def engine_of(headers: Mapping[str, str]) -> str:
    """The client, as its headers name it: ``PyIceberg 0.12.0``, ``Apache Iceberg 1.10.2
    (commit …) · Spark…``, ``duckdb/1.5.5 …``; empty when it sends none."""
    parts: list[str] = []
    seen: list[str] = []
    for name in ENGINE_HEADERS:
        value = " ".join((headers.get(name) or "").split())
        same = value.lower().replace("/", " ")  # PyIceberg/0.12.0 is PyIceberg 0.12.0
        if value and not any(same in s or s in same for s in seen):
            parts.append(value)
            seen.append(same)
    text = " · ".join(parts)
    return text[:200]


def _outcome(change: Change) -> str:
    return (AuditEntry.Outcome.SUCCEEDED if change.outcome == "succeeded"
            else AuditEntry.Outcome.FAILED)


def audit_changes(*, user: Any, engine: str, operation: Operation, changes: Iterable[Change],
                  started_at: dt.datetime, finished_at: dt.datetime) -> list[AuditEntry]:
    """One audit entry per change a REST request made (or may have made)."""
    entries = []
    duration = int((finished_at - started_at).total_seconds() * 1000)
    with transaction.atomic():  # one database commit: the entries
        for change in changes:
            params: dict[str, Any] = {"engine": engine, "operation": operation.name,
                                      **dict(change.detail)}
            if change.outcome != "succeeded":
                params["outcome"] = change.outcome
            entries.append(AuditEntry.objects.create(
                actor_id=user.pk, actor_name=user.get_username(), actor_via="rest",
                action=f"rest_{change.action}", params=params, catalog=change.catalog,
                namespace=".".join(change.namespace), table=change.table or "",
                metadata_before=change.metadata_before or "",
                metadata_after=change.metadata_after or "",
                snapshot_before=change.snapshot_before, snapshot_after=change.snapshot_after,
                outcome=_outcome(change), error=change.error, started_at=started_at,
                finished_at=finished_at, duration_ms=duration))
            if change.outcome == "succeeded" and change.metadata_after and change.table and \
                    change.action in _STATE_MAKING:
                transaction.on_commit(lambda change=change: HEALTH.put(change))
    return entries


#: Changes after which the table is at a new state of its own (its health is recorded).
_STATE_MAKING = ("commit", "create_table", "register_table")


def _record_health(change: Change) -> None:
    """The health of the state a REST commit made, from its committed metadata (the catalog's
    cache holds it: nothing is read on an engine's commit path). Not for proxied catalogs:
    their tables are read through the upstream, which the sweep does."""
    try:
        catalog = catalog_get(change.catalog)
        if isinstance(catalog, RestCatalog) or change.metadata_after is None:
            return
        metadata = catalog.read_metadata(change.metadata_after)
    except Exception:  # the commit is made: its health row is a side matter
        log.warning("the health of %s after a REST commit could not be read", change.table)
        return
    metrics_record_commit(catalog=change.catalog, namespace=".".join(change.namespace),
                          table=change.table or "", location=change.metadata_after,
                          metadata=metadata, source=TableMetrics.Source.REST)


class HealthWriter:
    """Records the health rows of REST commits behind the answers, on one thread of the
    process, in commit order: an engine's commit waits for its audit entry, not for its
    health row (about half of a commit's time when written on the request's thread,
    benchmarks/rest.py).

    A state whose row is not written yet is seen by the fleet view a moment later; a
    process that dies first loses it, and the next sweep records the table's current state
    (README: table health). The queue is bounded: when it is full (the database slower than
    the commits) the request's thread records the row itself. The thread closes its
    database connection after :data:`IDLE_SECONDS` without work and when flushed."""

    #: Rows waiting at most; beyond, the committing thread writes its own.
    LIMIT = 10_000
    #: Idle seconds after which the thread closes its database connection.
    IDLE_SECONDS = 5.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[Change | threading.Event]  # made by _start, per process
        self._pid: int | None = None

    def put(self, change: Change) -> None:
        self._start()
        try:
            self._queue.put_nowait(change)
        except queue.Full:
            _record_health(change)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every row put before is written and the thread's database connection
        is closed (tests; a process stopping); False when that took longer than
        ``timeout``."""
        if self._pid != os.getpid():
            return True  # nothing was put in this process
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def _start(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid != os.getpid():  # first use in this process (also after a fork)
                self._queue = queue.Queue(self.LIMIT)
                threading.Thread(target=self._run, name="floe-rest-health",
                                 daemon=True).start()
                self._pid = os.getpid()

    def _run(self) -> None:
        from django.db import close_old_connections, connections

        while True:
            try:
                item = self._queue.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                connections.close_all()
                continue
            if isinstance(item, threading.Event):
                connections.close_all()
                item.set()
                continue
            try:
                _record_health(item)
            except Exception:  # noqa: BLE001 - the thread outlives any one row
                log.exception("the health of %s after a REST commit was not recorded",
                              item.table)
            close_old_connections()  # one that failed, or too old, is opened again


#: The process's writer of REST commits' health rows.
HEALTH = HealthWriter()
atexit.register(HEALTH.flush, 10.0)


# -- metrics reports -------------------------------------------------------------------------

#: The largest report (as JSON) kept whole in ``raw``; a larger one (thousands of projected
#: columns, a filter on thousands of values) is kept without its field lists and filter,
#: which have bounded columns of their own.
RAW_REPORT_LIMIT = 64 * 1024
#: Projected field names kept per scan.
PROJECTED_FIELDS_LIMIT = 1000
_BULKY_KEYS = ("projected-field-ids", "projected-field-names", "filter")

#: A report's ``metadata`` keys that name the engine behind a client (Java's
#: EnvironmentContext: Spark, Flink, Trino put their name and version there).
_ENGINE_METADATA = ("engine-name", "engine-version")


def _keep_report(call: Call, report: MetricsReport, source: str) -> None:
    """The REST server's sink: the principal is the user's id (api/views_iceberg.py)."""
    user = get_user_model().objects.filter(pk=call.request.principal or None).first() \
        if call.request.principal.isdigit() else None
    record_report(user=user, engine=engine_of(call.request.headers),
                  operation=call.operation, report=report, source=source)


#: The key of a served plan's report that holds the explorer plan page's query (snapshot,
#: filter) showing the same plan explained (:attr:`EngineReport.explain_query`).
EXPLAIN_KEY = "floe-explain"


def _keep_plan(call: Call, report: dict[str, Any], explain: Mapping[str, str] | None) -> None:
    """The REST server's ``on_plan`` hook: a scan Floe planned for a client (planTableScan)
    is kept as a report of its own, with the plan page's query that explains it."""
    doc = dict(report)
    if explain is not None:
        doc[EXPLAIN_KEY] = dict(explain)
    call.server.record_report(call, doc, source=EngineReport.Source.FLOE_PLANNED)


def _engine(engine: str, report: MetricsReport) -> str:
    named = " ".join(report.metadata.get(k, "") for k in _ENGINE_METADATA).strip()
    if named and named.lower() not in engine.lower():
        engine = f"{named} · {engine}" if engine else named
    return engine[:255]


def _raw(report: MetricsReport) -> dict[str, Any]:
    raw = dict(report.raw)
    if len(json.dumps(raw)) <= RAW_REPORT_LIMIT:
        return raw
    raw = {k: v for k, v in raw.items() if k not in _BULKY_KEYS}
    raw["floe-omitted"] = [k for k in _BULKY_KEYS if k in report.raw]
    if len(json.dumps(raw)) > RAW_REPORT_LIMIT:  # many or long metric names, metadata
        raw = {"report-type": report.report_type, "floe-omitted": sorted(report.raw)}
    return raw


def record_report(*, user: Any, engine: str, operation: Operation,
                  report: MetricsReport | Mapping[str, Any],
                  source: str = EngineReport.Source.CLIENT) -> EngineReport:
    """Keep a metrics report about ``operation``'s table: one an engine sent (``source``
    ``client``) or one Floe's scan planning made (``floe-planned``), as a parsed
    :class:`~floe.rest_server.MetricsReport` or the spec's ``ReportMetricsRequest`` dict
    (malformed: :class:`~floe.rest_server.BadRequest`). ``user`` may be None (a server-made
    report), ``engine`` is :func:`engine_of` the request's headers (a report naming its
    engine in ``metadata``, as Spark's does, adds it). Then the table's oldest reports of
    that type beyond ``FLOE_ICEBERG_REPORTS_PER_TABLE`` are deleted. What one row keeps is
    bounded too (:data:`RAW_REPORT_LIMIT`, :data:`PROJECTED_FIELDS_LIMIT`)."""
    if not isinstance(report, MetricsReport):
        report = report_from_json(report)
    if operation.catalog is None or operation.namespace is None or operation.table is None:
        raise ValueError(f"{operation.name} names no table: a report is about one")
    if source not in EngineReport.Source.values:
        raise ValueError(f"unknown report source {source!r}")
    where = {"catalog": operation.catalog, "namespace": ".".join(operation.namespace),
             "table": operation.table, "report_type": report.report_type}
    fields: dict[str, Any] = {
        **where, "source": source, "engine": _engine(engine, report),
        "actor_id": getattr(user, "pk", None),
        "actor_name": user.get_username() if user is not None else "",
        "snapshot_id": report.snapshot_id, "raw": _raw(report)}
    if report.is_scan:
        fields.update(
            schema_id=report.schema_id, filter_text=report.filter_text,
            projected_fields=[name[:255] for name in
                              report.projected_field_names[:PROJECTED_FIELDS_LIMIT]],
            planning_ms=report.duration_ms(m.TOTAL_PLANNING_DURATION),
            result_data_files=report.counter(m.RESULT_DATA_FILES),
            result_delete_files=report.counter(m.RESULT_DELETE_FILES),
            total_data_manifests=report.counter(m.TOTAL_DATA_MANIFESTS),
            scanned_data_manifests=report.counter(m.SCANNED_DATA_MANIFESTS),
            skipped_data_manifests=report.counter(m.SKIPPED_DATA_MANIFESTS),
            skipped_data_files=report.counter(m.SKIPPED_DATA_FILES),
            total_file_size_bytes=report.counter(m.TOTAL_FILE_SIZE_IN_BYTES))
    else:
        fields.update(
            sequence_number=report.sequence_number, operation=(report.operation or "")[:64],
            attempts=report.counter(m.ATTEMPTS),
            added_data_files=report.counter(m.ADDED_DATA_FILES),
            removed_data_files=report.counter(m.REMOVED_DATA_FILES),
            added_delete_files=report.counter(m.ADDED_DELETE_FILES),
            removed_delete_files=report.counter(m.REMOVED_DELETE_FILES),
            added_records=report.counter(m.ADDED_RECORDS),
            removed_records=report.counter(m.REMOVED_RECORDS),
            commit_ms=report.duration_ms(m.TOTAL_DURATION))
    keep = int(settings.FLOE_ICEBERG_REPORTS_PER_TABLE)
    with transaction.atomic():
        row = EngineReport.objects.create(**fields)
        # the newest ``keep`` stay: everything older than the keep-th newest goes
        cutoff = list(EngineReport.objects.filter(**where).order_by("-id")
                      .values_list("id", flat=True)[keep:keep + 1])
        if cutoff:
            EngineReport.objects.filter(**where, id__lte=cutoff[0]).delete()
    return row
