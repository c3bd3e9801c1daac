"""The REST API: thin viewsets over explorer.selectors and explorer.services."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers
from explorer import permissions, selectors

CATALOG = OpenApiParameter("catalog", OpenApiTypes.STR, OpenApiParameter.PATH, description="Catalog name")
NAMESPACE = OpenApiParameter(
    "ns", OpenApiTypes.STR, OpenApiParameter.PATH, description="Namespace, levels joined by '.'"
)
TABLE = OpenApiParameter("table", OpenApiTypes.STR, OpenApiParameter.PATH, description="Table name")
QUERY = OpenApiParameter(
    "q", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
    description="Only tables whose namespace.table contains this text (case-insensitive)",
)


@extend_schema_view(retrieve=extend_schema(parameters=[CATALOG]))
class CatalogViewSet(viewsets.GenericViewSet):
    serializer_class = serializers.CatalogSerializer
    pagination_class = None  # a handful, from settings

    def list(self, request: Request) -> Response:
        readable = set(permissions.readable_catalogs(
            user=request.user, names=[c.name for c in selectors.catalog_list()]))
        return Response(self.get_serializer(
            [c for c in selectors.catalog_list() if c.name in readable], many=True).data)

    def retrieve(self, request: Request, catalog: str) -> Response:
        return Response(self.get_serializer(selectors.catalog_get(name=catalog)).data)


@extend_schema_view(list=extend_schema(parameters=[CATALOG]))
class NamespaceViewSet(viewsets.GenericViewSet):
    serializer_class = serializers.NamespaceSerializer

    def list(self, request: Request, catalog: str) -> Response:
        rows = selectors.catalog_namespaces(catalog=catalog)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


@extend_schema_view(list=extend_schema(parameters=[CATALOG, NAMESPACE, QUERY]))
class TableViewSet(viewsets.GenericViewSet):
    """The tables of a namespace (and of the namespaces below it); one table's detail is
    api.views_table.TableDetailView."""

    serializer_class = serializers.TableSerializer

    def list(self, request: Request, catalog: str, ns: str) -> Response:
        refs = selectors.catalog_table_refs(
            catalog=catalog, namespace=ns, query=request.query_params.get("q", ""))
        # Only the tables of this page are read.
        page = selectors.table_rows(refs=self.paginate_queryset(refs))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


