"""The REST API: thin viewsets over explorer.tables.selectors and explorer.services."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers as drf_serializers
from rest_framework import viewsets
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers
from explorer.access import permissions
from explorer.errors import domain_error_body, domain_error_status
from explorer.tables import selectors
from floe.errors import NotFound

CATALOG = OpenApiParameter("catalog", OpenApiTypes.STR, OpenApiParameter.PATH, description="Catalog name")
NAMESPACE = OpenApiParameter(
    "ns", OpenApiTypes.STR, OpenApiParameter.PATH, description="Namespace, levels joined by '.'"
)
TABLE = OpenApiParameter("table", OpenApiTypes.STR, OpenApiParameter.PATH, description="Table name")
QUERY = OpenApiParameter(
    "q", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
    description="Only tables whose namespace.table contains this text (case-insensitive)",
)


class ApiRootSerializer(drf_serializers.Serializer):  # type: ignore[type-arg]
    catalogs = drf_serializers.URLField()
    tasks = drf_serializers.URLField()
    audit = drf_serializers.URLField()
    grants = drf_serializers.URLField()
    schema = drf_serializers.URLField()
    reference = drf_serializers.URLField()


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




class ApiRootView(APIView):
    """Where the API starts: its entry points, the OpenAPI schema and the reference."""

    permission_classes = [AllowAny]  # names of URLs only; every entry point checks its own

    @extend_schema(responses=ApiRootSerializer)
    def get(self, request: Request) -> Response:
        def url(name: str) -> str:
            return request.build_absolute_uri(reverse(name))

        return Response({
            "catalogs": url("catalog-list"), "tasks": url("task-list"),
            "audit": url("audit-list"), "grants": url("grant-list"),
            "schema": url("schema"), "reference": url("api-reference"),
        })


@csrf_exempt
def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Every /api/ URL no route matches, whatever the method: a JSON 404 in the API's one
    error shape. Exempt from CSRF: it changes nothing, and CsrfViewMiddleware answered POST,
    PUT, PATCH and DELETE with its HTML 403 page instead, token clients included (DRF's
    views are exempt and check CSRF for session clients only). A plain view, not a DRF one:
    the browsable API lists every DRF view a URL prefix resolves to as a breadcrumb, and the
    catch-all resolves them all."""
    error = NotFound(f"no API endpoint at {request.path}; the entry points are listed at "
                     f"{reverse('api-root')}")
    status = domain_error_status(error)
    assert status is not None
    return JsonResponse(domain_error_body(error), status=status)
