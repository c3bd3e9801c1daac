"""The fleet: every table of every catalog the user may read, from the stored health of its
current state (:class:`TableMetrics` with ``current``), ranked by how much it needs attention,
worst first. Never opens a table: one query on the stored rows, paged in the database."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from explorer.access import permissions
from explorer.models import TableMetrics
from explorer.tables import selectors

__all__ = ["WARNING_LABELS", "fleet", "fleet_catalogs"]

#: What each warning of floe.health.table_health is called on the fleet view.
WARNING_LABELS = {
    "small_file_ratio": "small files",
    "delete_file_ratio": "delete files",
    "deleted_row_ratio": "deleted rows",
    "manifests_per_snapshot": "many manifests",
    "snapshots_not_expired": "snapshots to expire",
    "unreadable": "unreadable",
}


def fleet_catalogs(*, user: Any) -> list[str]:
    """The configured catalogs the user may read (the fleet's filter choices)."""
    return permissions.readable_catalogs(
        user=user, names=[c.name for c in selectors.catalog_list()])


def fleet(*, user: Any, catalog: str | None = None, namespace: str | None = None
          ) -> QuerySet[TableMetrics]:
    """The current state of every table the user may read, worst first (then by name); in
    one catalog and one namespace (with those below it) when given."""
    readable = fleet_catalogs(user=user)
    rows = TableMetrics.objects.filter(current=True, catalog__in=readable)
    if catalog:
        rows = rows.filter(catalog=catalog)
    if namespace:
        rows = rows.filter(Q(namespace=namespace) | Q(namespace__startswith=namespace + "."))
    return rows.order_by("-attention", "catalog", "namespace", "table")
