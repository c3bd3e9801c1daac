"""A table's partitions, preview rows and exports as API endpoints, beside the pages that
show them: ``/api/catalogs/{c}/namespaces/{ns}/tables/{t}/partitions/``, ``…/preview/`` and
``…/export/``. The same selectors as the pages (explorer.tables.scan); previews and exports
count against the expensive-read rate limit like the pages."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.renderers import FloeJSONRenderer
from api.views import CATALOG, NAMESPACE, TABLE
from explorer import ratelimit
from explorer.tables import scan, selectors
from explorer.values import rows_json
from floe.errors import InvalidArgument

_SELECTION = [
    OpenApiParameter("snapshot", OpenApiTypes.INT64, required=False,
                     description="Snapshot id (default: the current snapshot)"),
    OpenApiParameter("as_of", OpenApiTypes.STR, required=False,
                     description="Epoch milliseconds or ISO-8601 time, instead of a snapshot"),
    OpenApiParameter("ref", OpenApiTypes.STR, required=False,
                     description="Branch or tag name, instead of a snapshot id"),
]
_ROWS = [
    OpenApiParameter("filter", OpenApiTypes.STR, required=False,
                     description="SQL-style filter, e.g. id > 10 AND kind = 'view'"),
    OpenApiParameter("columns", OpenApiTypes.STR, required=False,
                     description="Comma-separated top-level columns (default: all)"),
]


def _selection(request: Request, table: Any, *, as_of: bool = True) -> scan.Selection:
    q = request.query_params
    selection = scan.selection_parse(snapshot=q.get("snapshot"),
                                     as_of=q.get("as_of") if as_of else None, ref=q.get("ref"))
    scan.selection_check(table=table, selection=selection)
    return selection


def _open(catalog: str, ns: str, table: str) -> Any:
    return selectors.table_load(catalog=catalog, namespace=ns, name=table)


class PartitionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    label = serializers.CharField()
    spec_id = serializers.IntegerField()
    record_count = serializers.IntegerField()
    file_count = serializers.IntegerField()
    total_size = serializers.IntegerField()
    delete_file_count = serializers.IntegerField()
    delete_record_count = serializers.IntegerField()


class PartitionTotalsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    partitions = serializers.IntegerField()
    record_count = serializers.IntegerField()
    file_count = serializers.IntegerField()
    total_size = serializers.IntegerField()
    delete_file_count = serializers.IntegerField()


class SkewSerializer(serializers.Serializer):  # type: ignore[type-arg]
    largest = serializers.CharField(allow_null=True)
    largest_size = serializers.IntegerField()
    median_size = serializers.FloatField()
    ratio = serializers.FloatField(allow_null=True)


class StatsFileSerializer(serializers.Serializer):  # type: ignore[type-arg]
    state = serializers.ChoiceField(
        ["current", "stale", "missing", "unpartitioned"],
        help_text="current: a partition statistics file of this snapshot; stale: only of an"
                  " older snapshot (an ancestor); missing: none; unpartitioned: none possible")
    path = serializers.CharField(allow_null=True)
    snapshot_id = serializers.IntegerField(allow_null=True)


class PartitionsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField(allow_null=True)
    source = serializers.ChoiceField(
        ["statistics_file", "manifests"],
        help_text="where the numbers come from: the snapshot's partition statistics file, or"
                  " its live manifest entries")
    statistics_file = StatsFileSerializer()
    totals = PartitionTotalsSerializer()
    skew = SkewSerializer()
    count = serializers.IntegerField(help_text="partitions")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PartitionSerializer(many=True, help_text="this page of partitions, largest first")


class PartitionsView(GenericAPIView):  # type: ignore[type-arg]
    """Per-partition counts and sizes of a table state, from its live manifest entries."""

    serializer_class = PartitionsSerializer

    @extend_schema(operation_id="table_partitions",
                   parameters=[CATALOG, NAMESPACE, TABLE, *_SELECTION[::2],
                               OpenApiParameter(
                                   "source", OpenApiTypes.STR, required=False,
                                   enum=["manifests"],
                                   description="manifests: compute from the manifests even"
                                               " when a statistics file exists"),
                               OpenApiParameter("page", OpenApiTypes.INT, required=False),
                               OpenApiParameter("page_size", OpenApiTypes.INT, required=False)],
                   responses={200: PartitionsSerializer})
    def get(self, request: Request, catalog: str, ns: str, table: str) -> Response:
        t = _open(catalog, ns, table)
        selection = _selection(request, t, as_of=False)
        file_stats, stats_file = scan.table_partitions_from_stats_file(table=t,
                                                                       selection=selection)
        from_file = file_stats is not None and request.query_params.get("source") != "manifests"
        stats = file_stats if from_file and file_stats is not None else scan.table_partitions(
            table=t, selection=selection)
        ordered = sorted(stats.partitions, key=lambda p: (-p.total_size, p.label))
        page = self.paginate_queryset(ordered)  # type: ignore[arg-type]
        assert page is not None and self.paginator is not None
        paged = self.paginator.get_paginated_response(
            PartitionSerializer(page, many=True).data).data
        return Response({"snapshot_id": stats.snapshot_id,
                         "source": "statistics_file" if from_file else "manifests",
                         "statistics_file": {"state": stats_file.state, "path": stats_file.path,
                                             "snapshot_id": stats_file.snapshot_id},
                         "totals": stats.totals(),
                         "skew": stats.skew(), **paged})


class PreviewSerializer(serializers.Serializer):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField(allow_null=True)
    columns = serializers.ListField(child=serializers.CharField())
    row_count = serializers.IntegerField()
    limit = serializers.IntegerField()
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()),
                                 help_text="one list of values per row, in column order")


class PreviewView(GenericAPIView):  # type: ignore[type-arg]
    """The first rows of a table state, deletes applied (as the preview page). Values are
    JSON values: numbers, booleans and strings; Iceberg's JSON single-value serialization for
    the rest (decimals as strings, binary as hex, ISO-8601 dates, times and timestamps, UUIDs
    as text, a float32 in its shortest form); "NaN", "Infinity", "-Infinity" for floats that
    are not finite; structs as objects, maps as objects when their keys are strings (else
    lists of [key, value] pairs), lists as arrays."""

    serializer_class = PreviewSerializer

    @extend_schema(operation_id="table_preview",
                   parameters=[CATALOG, NAMESPACE, TABLE, *_SELECTION, *_ROWS,
                               OpenApiParameter("limit", OpenApiTypes.INT, required=False,
                                                description=f"rows, 1 to {scan.PREVIEW_MAX_ROWS}"
                                                f" (default {scan.PREVIEW_DEFAULT_ROWS})")],
                   responses={200: PreviewSerializer})
    def get(self, request: Request, catalog: str, ns: str, table: str) -> Response:
        ratelimit.expensive_read_check(identity=ratelimit.request_identity(request),
                                       what="the preview")
        t = _open(catalog, ns, table)
        q = request.query_params
        selection = _selection(request, t)
        row_filter = scan.filter_check(table=t, selection=selection, text=q.get("filter", ""))
        columns = scan.columns_parse(table=t, selection=selection, text=q.get("columns", ""))
        limit = scan.limit_parse(q.get("limit"))
        plan, rows = scan.table_preview(table=t, selection=selection, row_filter=row_filter,
                                        columns=columns, limit=limit)
        return Response({
            "snapshot_id": plan.snapshot_id, "columns": rows.column_names,
            "row_count": rows.num_rows, "limit": limit,
            "rows": rows_json(plan.schema, rows)})


class ExportFileSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The export view's serializer for the schema generator: its response is a file."""


class ExportView(GenericAPIView):  # type: ignore[type-arg]
    """At most 100,000 rows of a table state as a CSV or Parquet file (larger exports: the
    ``export`` task, POST /api/tasks/). CSV: a header of column names, one line per row;
    struct, map and list columns hold each value's JSON text (the preview's JSON values),
    binary and fixed columns hex, UUIDs as text; other columns as Apache Arrow writes them
    (ISO-8601 times, true / false, empty for null)."""

    serializer_class = ExportFileSerializer
    pagination_class = None

    @extend_schema(operation_id="table_export", request=None,
                   parameters=[CATALOG, NAMESPACE, TABLE, *_SELECTION, *_ROWS,
                               OpenApiParameter("format", OpenApiTypes.STR, required=True,
                                                enum=list(scan.EXPORT_FORMATS))],
                   responses={(200, "text/csv"): OpenApiTypes.BINARY,
                              (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY})
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # ``format`` is this endpoint's file format, not DRF's renderer override: the file
        # is the response; errors are JSON.
        return FloeJSONRenderer(), FloeJSONRenderer.media_type

    def get(self, request: Request, catalog: str, ns: str, table: str) -> HttpResponse:
        ratelimit.expensive_read_check(identity=ratelimit.request_identity(request),
                                       what="the export")
        t = _open(catalog, ns, table)
        q = request.query_params
        fmt = q.get("format", "")
        if fmt not in scan.EXPORT_FORMATS:
            raise InvalidArgument(
                "format",
                f"query parameter 'format' must be one of {', '.join(scan.EXPORT_FORMATS)}")
        selection = _selection(request, t)
        row_filter = scan.filter_check(table=t, selection=selection, text=q.get("filter", ""))
        columns = scan.columns_parse(table=t, selection=selection, text=q.get("columns", ""))
        data, rows = scan.table_export(table=t, selection=selection, row_filter=row_filter,
                                       columns=columns, fmt=fmt)
        response = HttpResponse(data, content_type="text/csv; charset=utf-8" if fmt == "csv"
                                else "application/vnd.apache.parquet")
        response["Content-Disposition"] = f'attachment; filename="{t.identifier.name}.{fmt}"'
        response["X-Row-Count"] = str(rows)
        return response
