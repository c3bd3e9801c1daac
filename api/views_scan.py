"""The scan plan as JSON: ``/api/catalogs/{c}/namespaces/{ns}/tables/{t}/plan/``.

The same explained plan the plan page shows (``floe plan --json``'s records), with the
manifest explain records paged (each with its files and, for kept data files, the residual).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.views import CATALOG, NAMESPACE, TABLE
from explorer import ratelimit
from explorer.tables import scan, selectors


class PlanDeleteMatchSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField()
    content = serializers.CharField()
    sequence_number = serializers.IntegerField(allow_null=True)
    applied = serializers.BooleanField()
    reason = serializers.CharField()


class PlanFileSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField()
    content = serializers.CharField()
    kept = serializers.BooleanField()
    stage = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    residual = serializers.CharField(allow_null=True, required=False,
                                     help_text="kept data files: what rows still have to pass")
    delete_files = PlanDeleteMatchSerializer(many=True, required=False)


class PlanManifestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField()
    content = serializers.CharField()
    spec_id = serializers.IntegerField()
    kept = serializers.BooleanField()
    stage = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    files = PlanFileSerializer(many=True)


class PlanFunnelSerializer(serializers.Serializer):  # type: ignore[type-arg]
    manifests_total = serializers.IntegerField()
    manifests_after_content = serializers.IntegerField()
    manifests_after_summaries = serializers.IntegerField()
    data_files_total = serializers.IntegerField()
    data_files_after_partition = serializers.IntegerField()
    data_files_after_metrics = serializers.IntegerField()
    delete_manifests_total = serializers.IntegerField()
    delete_manifests_kept = serializers.IntegerField()
    delete_files_total = serializers.IntegerField()
    delete_files_matched = serializers.IntegerField()
    tasks = serializers.IntegerField()


class ScanPlanSerializer(serializers.Serializer):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField(allow_null=True)
    schema_id = serializers.IntegerField()
    filter = serializers.CharField(allow_null=True)
    bound_filter = serializers.CharField(allow_null=True)
    snapshot_selection = serializers.CharField(allow_null=True)
    funnel = PlanFunnelSerializer()
    count = serializers.IntegerField(help_text="manifests in the plan")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PlanManifestSerializer(many=True, help_text="this page of manifest explain records")


class PlanView(GenericAPIView):  # type: ignore[type-arg]
    serializer_class = ScanPlanSerializer
    """Plan a read of a table state with a filter and explain every decision."""

    @extend_schema(
        operation_id="table_plan",
        parameters=[
            CATALOG, NAMESPACE, TABLE,
            OpenApiParameter("snapshot", OpenApiTypes.INT64, required=False,
                             description="Snapshot id (default: the current snapshot)"),
            OpenApiParameter("ref", OpenApiTypes.STR, required=False,
                             description="Branch or tag name, instead of a snapshot id"),
            OpenApiParameter("filter", OpenApiTypes.STR, required=False,
                             description="SQL-style filter, e.g. id > 10 AND kind = 'view'"),
            OpenApiParameter("page", OpenApiTypes.INT, required=False),
            OpenApiParameter("page_size", OpenApiTypes.INT, required=False),
        ],
        responses={200: ScanPlanSerializer},
    )
    def get(self, request: Request, catalog: str, ns: str, table: str) -> Response:
        ratelimit.expensive_read_check(identity=ratelimit.request_identity(request),
                                       what="the scan plan")
        t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
        q = request.query_params
        selection = scan.selection_parse(snapshot=q.get("snapshot"), ref=q.get("ref"))
        row_filter = scan.filter_check(table=t, selection=selection, text=q.get("filter", ""))
        plan = scan.table_plan(table=t, selection=selection, row_filter=row_filter)
        page = self.paginate_queryset(scan.plan_manifests(plan))
        assert page is not None and self.paginator is not None
        paged = self.paginator.get_paginated_response(scan.plan_manifest_json(page)).data
        return Response({**scan.plan_summary(plan), **paged})
