"""One table's endpoints under ``/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/``:
the detail, snapshots (paged), one snapshot, its manifests, its files (paged), refs, history
(its snapshot log paged), diff. Thin: open the table (explorer.tables.selectors.table_load), validate the query, call
explorer.tables.details, serialize."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers_table as s
from api.views import CATALOG, NAMESPACE, TABLE
from explorer.tables import details as st
from explorer.tables import selectors
from floe.table import Table

SNAPSHOT = OpenApiParameter("snapshot_id", OpenApiTypes.INT64, OpenApiParameter.PATH, description="Snapshot id")
_TABLE = [CATALOG, NAMESPACE, TABLE]


def _open(kwargs: dict[str, Any]) -> Table:
    return selectors.table_load(catalog=kwargs["catalog"], namespace=kwargs["ns"],
                                name=kwargs["table"])


class _TableView(GenericAPIView):  # type: ignore[type-arg]
    pagination_class = None


@extend_schema(parameters=_TABLE, responses=s.TableDetailSerializer)
class TableDetailView(_TableView):
    serializer_class = s.TableDetailSerializer

    def get(self, request: Request, **kwargs: Any) -> Response:
        return Response(self.get_serializer(st.table_detail(table=_open(kwargs))).data)


@extend_schema(parameters=_TABLE, responses=s.SnapshotSerializer(many=True))
class SnapshotListView(GenericAPIView):  # type: ignore[type-arg]
    """Snapshots, newest first (``floe snapshots`` rows), paged."""

    serializer_class = s.SnapshotSerializer

    def get(self, request: Request, **kwargs: Any) -> Response:
        page = self.paginate_queryset(st.snapshot_list(table=_open(kwargs)))  # type: ignore[arg-type]
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


@extend_schema(parameters=[*_TABLE, SNAPSHOT], responses=s.SnapshotDetailSerializer)
class SnapshotDetailView(_TableView):
    serializer_class = s.SnapshotDetailSerializer

    def get(self, request: Request, snapshot_id: int, **kwargs: Any) -> Response:
        table = _open(kwargs)
        parents, more = st.snapshot_parents(table=table, snapshot_id=snapshot_id)
        row = {**st.snapshot_row(table=table, snapshot_id=snapshot_id), "parents": parents,
               "parents_truncated": more}
        return Response(self.get_serializer(row).data)


@extend_schema(parameters=[*_TABLE, SNAPSHOT], responses=s.ManifestSerializer(many=True))
class ManifestListView(_TableView):
    """The snapshot's manifest list (``floe manifests`` rows): one file read."""

    serializer_class = s.ManifestSerializer

    def get(self, request: Request, snapshot_id: int, **kwargs: Any) -> Response:
        rows = st.snapshot_manifests(table=_open(kwargs), snapshot_id=snapshot_id)
        return Response(self.get_serializer(rows, many=True).data)


@extend_schema(parameters=[*_TABLE, SNAPSHOT], responses=s.FileSerializer(many=True))
class FileListView(GenericAPIView):  # type: ignore[type-arg]
    """Live data and delete files (``floe files`` rows, same order), paged; a page reads only
    the manifests that hold it."""

    serializer_class = s.FileSerializer

    def get(self, request: Request, snapshot_id: int, **kwargs: Any) -> Response:
        table = _open(kwargs)
        st.snapshot_get(table=table, snapshot_id=snapshot_id)
        page = self.paginate_queryset(st.SnapshotFiles(table, snapshot_id))  # type: ignore[arg-type]
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


@extend_schema(parameters=_TABLE, responses=s.RefSerializer(many=True))
class RefListView(_TableView):
    serializer_class = s.RefSerializer

    def get(self, request: Request, **kwargs: Any) -> Response:
        return Response(self.get_serializer(st.table_overview(table=_open(kwargs))["refs"], many=True).data)


@extend_schema(parameters=[*_TABLE, OpenApiParameter("page", OpenApiTypes.INT, required=False),
                            OpenApiParameter("page_size", OpenApiTypes.INT, required=False)],
               responses=s.HistorySerializer)
class HistoryView(GenericAPIView):  # type: ignore[type-arg]
    """Snapshot log (newest first, paged like the snapshot list: a table keeps thousands),
    metadata log (newest first), schema and partition-spec history."""

    serializer_class = s.HistorySerializer

    def get(self, request: Request, **kwargs: Any) -> Response:
        history = st.table_history(table=_open(kwargs))
        page = self.paginate_queryset(history["snapshot_log"])  # type: ignore[arg-type]
        assert page is not None and self.paginator is not None
        paged = self.paginator.get_paginated_response([]).data
        return Response(self.get_serializer({
            **history, "snapshot_log": page, "snapshot_log_count": paged["count"],
            "next": paged["next"], "previous": paged["previous"]}).data)


@extend_schema(
    parameters=[*_TABLE,
                OpenApiParameter("from", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True,
                                 description="Snapshot id, branch or tag to compare from"),
                OpenApiParameter("to", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True,
                                 description="Snapshot id, branch or tag to compare to")],
    responses=s.DiffSerializer,
)
class DiffView(_TableView):
    """Files added / removed between two snapshots, their rows, schema and spec changes."""

    serializer_class = s.DiffSerializer

    def get(self, request: Request, **kwargs: Any) -> Response:
        table = _open(kwargs)
        q = request.query_params
        diff = st.table_diff(
            table=table, from_id=st.snapshot_id_of(table=table, text=q.get("from"), param="from"),
            to_id=st.snapshot_id_of(table=table, text=q.get("to"), param="to"))
        return Response(self.get_serializer(diff).data)
