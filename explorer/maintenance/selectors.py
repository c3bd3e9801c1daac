"""The fleet: every table of every catalog the user may read, from the stored health of its
current state (:class:`TableMetrics` with ``current``), ranked by how much it needs attention,
worst first. Never opens a table: one query on the stored rows, paged in the database."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from explorer.access import permissions
from explorer.maintenance.alerts import fix_link
from explorer.models import Alert, TableMetrics
from explorer.tables import selectors

__all__ = ["WARNING_LABELS", "fleet", "fleet_alerts", "fleet_catalogs"]

#: What each warning of floe.health.table_health is called on the fleet view.
WARNING_LABELS = {
    "small_file_ratio": "small files",
    "delete_file_ratio": "delete files",
    "deleted_row_ratio": "deleted rows",
    "manifests_per_snapshot": "many manifests",
    "snapshots_not_expired": "snapshots to expire",
    "partition_skew": "partition skew",
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


#: What a table's overview draws as sparklines, from its recorded states: (field, label,
#: how the newest value reads).
SPARKLINES = (("data_files", "Data files", "count"), ("small_file_ratio", "Small files", "ratio"),
              ("delete_files", "Delete files", "count"), ("records", "Rows in data files", "count"),
              ("live_records", "Live rows (when exact)", "count"),
              ("partition_skew", "Partition skew", "times"),
              ("manifests", "Manifests", "count"), ("snapshots", "Snapshots", "count"))
_W, _H = 120, 24


def _points(values: list[float]) -> str:
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = _W / max(1, len(values) - 1)
    return " ".join(f"{i * step:.1f},{_H - 2 - (v - low) / span * (_H - 4):.1f}"
                    for i, v in enumerate(values))


def health_sparklines(*, catalog: str, namespace: str, table: str, limit: int = 60
                      ) -> tuple[int, list[dict[str, Any]]]:
    """The table's recorded states (how many, of the newest ``limit``) and, per metric, an
    SVG polyline of its values oldest → newest (None where a state did not know it), with the
    first and newest value."""
    rows = list(TableMetrics.objects.filter(catalog=catalog, namespace=namespace, table=table)
                .order_by("-id").values(*(f for f, _, _ in SPARKLINES))[:limit])
    rows.reverse()
    lines = []
    for field, label, unit in SPARKLINES:
        values = [r[field] for r in rows if r[field] is not None]
        if not values:
            continue
        shown = [f"{v:.0%}" if unit == "ratio" else f"{v:.1f}×" if unit == "times"
                 else f"{v:,}" for v in (values[0], values[-1])]
        lines.append({"field": field, "label": label, "first": shown[0], "last": shown[1],
                      "points": _points([float(v) for v in values]) if len(values) > 1 else "",
                      "count": len(values), "width": _W, "height": _H})
    return len(rows), lines


def fleet_alerts(*, user: Any, catalog: str | None = None, namespace: str | None = None,
                 limit: int = 50) -> list[Alert]:
    """Open alerts on the tables the user may read (newest first), each with ``fix``: the
    page of the task that fixes it."""
    rows = Alert.objects.select_related("rule").filter(
        resolved_at__isnull=True, catalog__in=fleet_catalogs(user=user))
    if catalog:
        rows = rows.filter(catalog=catalog)
    if namespace:
        rows = rows.filter(Q(namespace=namespace) | Q(namespace__startswith=namespace + "."))
    alerts = list(rows[:limit])
    for a in alerts:
        a.fix = fix_link(a.rule.metric, a.catalog, a.namespace, a.table)  # type: ignore[attr-defined]
    return alerts
