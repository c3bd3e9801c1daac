"""A table's metrics reports under
``/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/reports/``: the scans and commits
engines reported to the Iceberg REST catalog (and the scans Floe planned), newest first,
paged; ``?type=scan|commit``. Viewers may read it (api.permissions.CatalogRoles)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.views import CATALOG, NAMESPACE, TABLE
from explorer.models import EngineReport
from explorer.tables import selectors
from explorer.tables.reports import REPORT_TYPE_PARAMS, table_reports
from floe.errors import ValidationError


class EngineReportSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    type = serializers.CharField(source="get_report_type_display",
                                 help_text="scan or commit")
    user = serializers.CharField(source="actor_name", help_text="the Floe user that sent it")
    scanned_data_files = serializers.IntegerField(
        allow_null=True, help_text="data files the scan read (its result-data-files)")

    class Meta:
        model = EngineReport
        fields = ("id", "type", "source", "user", "engine", "received_at", "snapshot_id",
                  "schema_id", "filter_text", "projected_fields", "planning_ms",
                  "scanned_data_files", "skipped_data_files", "result_delete_files",
                  "total_data_manifests", "scanned_data_manifests", "skipped_data_manifests",
                  "total_file_size_bytes", "sequence_number", "operation", "attempts",
                  "added_data_files", "removed_data_files", "added_delete_files",
                  "removed_delete_files", "added_records", "removed_records", "commit_ms",
                  "raw")


@extend_schema(parameters=[CATALOG, NAMESPACE, TABLE, OpenApiParameter(
    "type", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
    enum=sorted(REPORT_TYPE_PARAMS), description="Only scans or only commits")],
    responses=EngineReportSerializer(many=True))
class TableReportsView(GenericAPIView):  # type: ignore[type-arg]
    """The table's metrics reports, newest first: per scan the filter, the snapshot, data
    files and manifests read vs skipped and the planning time; per commit the operation,
    attempts, files and records added and removed; the engine and user of each, and the
    report as sent (``raw``)."""

    serializer_class = EngineReportSerializer

    def get(self, request: Request, catalog: str, ns: str, table: str) -> Any:
        t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
        ref = selectors.table_ref(t)
        kind = request.query_params.get("type") or None
        if kind is not None and kind not in REPORT_TYPE_PARAMS:
            raise ValidationError(f"type must be one of {', '.join(sorted(REPORT_TYPE_PARAMS))}"
                                  f", not {kind!r}")
        rows = table_reports(catalog=ref.catalog, namespace=ref.namespace, table=ref.name,
                             report_type=REPORT_TYPE_PARAMS[kind] if kind else None)
        page = self.paginate_queryset(rows)
        response: Response = self.get_paginated_response(
            self.get_serializer(page, many=True).data)
        return response
