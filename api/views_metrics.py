"""A table's health over time under
``/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/metrics/``: one row per table state
Floe observed (its tasks, REST commits, the sweep of catalogs), oldest first, at most the
newest ``limit`` (default 500, at most 5,000). Viewers may read it
(api.permissions.CatalogRoles)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.views import CATALOG, NAMESPACE, TABLE
from explorer.maintenance.metrics import metrics_history
from explorer.models import TableMetrics
from explorer.tables import selectors
from floe.errors import ValidationError

MAX_LIMIT = 5000


class TableMetricsSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    snapshot_id = serializers.CharField(allow_null=True, help_text="a 64-bit id, as text")

    class Meta:
        model = TableMetrics
        exclude = ("id", "catalog", "namespace", "table")


@extend_schema(parameters=[CATALOG, NAMESPACE, TABLE, OpenApiParameter(
    "limit", OpenApiTypes.INT, OpenApiParameter.QUERY, required=False,
    description=f"The newest this many states (default 500, at most {MAX_LIMIT:,})")],
    responses=TableMetricsSerializer(many=True))
class TableMetricsView(APIView):
    """The table's health at each state Floe observed, oldest first: files, records,
    deletes, sizes, small-file and delete-file ratios, manifests, snapshots, metadata size;
    which source saw it and whether another engine made it (``external``, ``engine``)."""

    def get(self, request: Request, catalog: str, ns: str, table: str) -> Any:
        t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
        ref = selectors.table_ref(t)
        raw = request.query_params.get("limit", "500")
        try:
            limit = int(raw)
        except ValueError:
            limit = -1
        if not 1 <= limit <= MAX_LIMIT:
            raise ValidationError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not "
                                  f"{raw[:20]!r}")
        rows = metrics_history(catalog=ref.catalog, namespace=ref.namespace, table=ref.name,
                               limit=limit)
        return Response(TableMetricsSerializer(rows, many=True).data)
