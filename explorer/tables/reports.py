"""Reads of the metrics reports kept about a table (:class:`explorer.models.EngineReport`,
written by :func:`explorer.rest.services.record_report`): which engines scan and commit to it
(grouped by engine, user and source), and its recent scans and commits."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from explorer.models import EngineReport

__all__ = ["table_report_engines", "table_reports"]

#: ``?type=`` values of the listings and the report types they select.
REPORT_TYPE_PARAMS = {"scan": EngineReport.Type.SCAN, "commit": EngineReport.Type.COMMIT}


def table_reports(*, catalog: str, namespace: str, table: str,
                  report_type: str | None = None) -> QuerySet[EngineReport]:
    """The table's reports, newest first (``report_type`` an :class:`EngineReport.Type`)."""
    rows = EngineReport.objects.filter(catalog=catalog, namespace=namespace, table=table)
    if report_type is not None:
        rows = rows.filter(report_type=report_type)
    return rows.order_by("-received_at", "-id")


def table_report_engines(*, catalog: str, namespace: str, table: str) -> list[dict[str, Any]]:
    """One row per engine, user and source that reported on the table: its scans and
    commits, the data files its scans read and skipped, when it was last seen; the most
    recently seen first."""
    rows = (table_reports(catalog=catalog, namespace=namespace, table=table)
            .order_by().values("engine", "actor_name", "source")
            .annotate(scans=Count("id", filter=Q(report_type=EngineReport.Type.SCAN)),
                      commits=Count("id", filter=Q(report_type=EngineReport.Type.COMMIT)),
                      last_seen=Max("received_at"))
            .order_by("-last_seen", "engine"))
    return list(rows)
