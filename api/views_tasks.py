"""Task runs, the audit trail and grants under ``/api/``: thin viewsets over
:mod:`explorer.services` (writes) and :mod:`explorer.audit.selectors` (reads); permissions are
decided in :mod:`explorer.access.permissions`, domain errors mapped once (api.exceptions).

* ``/api/tasks/`` GET (filters ``catalog``, ``namespace``, ``table``, ``user``, ``state``,
  ``kind``), POST ``{kind, params}`` (queues; 201); ``/api/tasks/preview/`` POST (the same
  body, nothing queued); ``/api/tasks/{id}/`` GET; ``/api/tasks/{id}/cancel/``,
  ``/api/tasks/{id}/retry/`` POST; ``/api/tasks/{id}/download/`` GET (an export's file, its
  creator only);
* ``/api/audit/`` GET (filters ``catalog``, ``namespace``, ``table``, ``user``, ``action``,
  ``since``, ``until``; ``?format=csv`` / ``?format=json``: every matching entry as a
  download); ``/api/catalogs/{c}/namespaces/{ns}/tables/{t}/audit/`` GET: the table's
  versions attributed to Floe users or "external";
* ``/api/grants/`` GET, POST ``{user, catalog, role}``; ``/api/grants/{id}/`` DELETE.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, renderers, status, viewsets
from rest_framework.decorators import action
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers
from api.renderers import FloeJSONRenderer
from api.views import CATALOG, NAMESPACE, TABLE
from explorer import ratelimit
from explorer.access import services as access_services
from explorer.audit.selectors import (
    audit_csv,
    audit_entries,
    audit_json,
    audit_rows_described,
    grants_list,
    table_audit,
    task_run_get,
    task_runs,
    time_parse,
)
from explorer.models import TaskRun
from explorer.tables import selectors
from explorer.tasks import services as task_services
from explorer.values import json_text


def _via(request: Request) -> str:
    return "token" if request.auth is not None else "session"


def _q(name: str, description: str, type_: Any = OpenApiTypes.STR) -> OpenApiParameter:
    return OpenApiParameter(name, type_, OpenApiParameter.QUERY, required=False,
                            description=description)


_TASK_FILTERS = [
    _q("catalog", "Only runs on this catalog"), _q("namespace", "Only runs on this namespace"),
    _q("table", "Only runs on this table"), _q("user", "Only runs submitted by this user"),
    _q("state", "QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED"), _q("kind", "A task kind"),
]
_AUDIT_FILTERS = [
    _q("catalog", "Only changes of this catalog"), _q("namespace", "Only this namespace"),
    _q("table", "Only this table"), _q("user", "Only changes by this user"),
    _q("action", "A task kind, grant_add or grant_remove"),
    _q("since", "Finished at or after (epoch ms or ISO-8601)"),
    _q("until", "Finished before (epoch ms or ISO-8601)"),
    _q("format", "csv or json: every matching entry as a download instead of a page"),
]


@extend_schema_view(list=extend_schema(parameters=_TASK_FILTERS))
class TaskRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    serializer_class = serializers.TaskRunSerializer

    def get_queryset(self) -> Any:
        q = self.request.query_params if self.action == "list" else {}
        return task_runs(user=self.request.user, catalog=q.get("catalog"),
                         namespace=q.get("namespace"), table=q.get("table"),
                         created_by=q.get("user"), state=q.get("state"), kind=q.get("kind"))

    def get_object(self) -> TaskRun:
        """The run of the URL, as the pages find it (NotFound naming the run)."""
        return task_run_get(user=self.request.user, task_run_id=self.kwargs["pk"])

    @extend_schema(request=serializers.TaskRunCreateSerializer,
                   responses={201: serializers.TaskRunSerializer})
    def create(self, request: Request) -> Response:
        form = serializers.TaskRunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        run = task_services.task_submit(kind=form.validated_data["kind"],
                                   params=form.validated_data["params"], user=request.user,
                                   via=_via(request))
        return Response(self.get_serializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=serializers.TaskRunCreateSerializer,
                   responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def preview(self, request: Request) -> Response:
        """What a submission of kind evolve, delete_rows, compact, rewrite_manifests or
        compute_partition_stats would do; nothing queued."""
        form = serializers.TaskRunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return Response(task_services.task_preview(
            kind=form.validated_data["kind"], params=form.validated_data["params"],
            user=request.user, identity=ratelimit.request_identity(request)))

    @extend_schema(request=None, responses={200: serializers.TaskRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        run = task_services.task_cancel(task_run_id=self.get_object().pk, user=request.user)
        return Response(self.get_serializer(run).data)

    @extend_schema(request=None, responses={201: serializers.TaskRunSerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str) -> Response:
        run = task_services.task_retry(task_run_id=self.get_object().pk, user=request.user,
                                  via=_via(request))
        return Response(self.get_serializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"])
    def download(self, request: Request, pk: str) -> FileResponse:
        path = task_services.export_file_get(task_run_id=self.get_object().pk, user=request.user)
        return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)


class CSVRenderer(renderers.BaseRenderer):
    """Lets ``?format=csv`` through content negotiation; the view streams the CSV itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict[str, Any] | None = None) -> bytes:
        return json.dumps(data).encode() if not isinstance(data, bytes) else data


def _json_lines(entries: Any) -> Iterator[str]:
    yield "["
    for i, entry in enumerate(entries.iterator()):
        yield ("," if i else "") + json_text(audit_json(entry), default=str)
    yield "]\n"


@extend_schema_view(list=extend_schema(parameters=_AUDIT_FILTERS))
class AuditViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    """The audit trail, newest first: paged, or with ``?format=csv|json`` every matching entry
    as a download. Read-only: nothing can change or delete an entry."""

    serializer_class = serializers.AuditEntrySerializer
    renderer_classes = [FloeJSONRenderer, renderers.BrowsableAPIRenderer, CSVRenderer]

    def get_queryset(self) -> Any:
        q = self.request.query_params
        return audit_entries(
            user=self.request.user, catalog=q.get("catalog"), namespace=q.get("namespace"),
            table=q.get("table"), actor=q.get("user"), action=q.get("action"),
            since=time_parse(q.get("since"), "since"), until=time_parse(q.get("until"), "until"))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        fmt = request.query_params.get("format")
        if fmt == "csv":
            response = StreamingHttpResponse(audit_csv(self.get_queryset().iterator()),
                                             content_type="text/csv; charset=utf-8")
        elif fmt == "json":
            response = StreamingHttpResponse(_json_lines(self.get_queryset()),
                                             content_type="application/json")
        else:
            return super().list(request, *args, **kwargs)
        response["Content-Disposition"] = f'attachment; filename="floe-audit.{fmt}"'
        return response


@extend_schema(parameters=[CATALOG, NAMESPACE, TABLE, _q("user", "Only this Floe user's"),
                           _q("action", "Only this action"),
                           _q("source", "floe or external")],
               responses=serializers.AuditRowSerializer(many=True))
class TableAuditView(GenericAPIView):  # type: ignore[type-arg]
    """One table's versions, newest first, each attributed to a Floe user (with the action
    and its outcome) or to "external" (with the engine the snapshot summary names), plus
    Floe's entries that made no version (failed, cancelled); ``description`` says what each
    did in words."""

    serializer_class = serializers.AuditRowSerializer

    def get(self, request: Request, catalog: str, ns: str, table: str) -> Response:
        t = selectors.table_load(catalog=catalog, namespace=ns, name=table)
        q = request.query_params
        rows = table_audit(table=t, actor=q.get("user") or None,
                           action=q.get("action") or None, source=q.get("source") or None)
        page = audit_rows_described(  # the page's versions only: each reads its metadata
            table=t, rows=self.paginate_queryset(rows) or [])  # type: ignore[arg-type]
        return self.get_paginated_response(
            self.get_serializer([r.to_json() for r in page], many=True).data)


@extend_schema_view(destroy=extend_schema(parameters=[
    OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="Grant id")]))
class GrantViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    """Roles per catalog: admins of a catalog list, grant and revoke its roles."""

    serializer_class = serializers.GrantSerializer

    def get_queryset(self) -> Any:
        return grants_list(user=self.request.user,
                           catalog=self.request.query_params.get("catalog"))

    @extend_schema(request=serializers.GrantCreateSerializer,
                   responses={201: serializers.GrantSerializer})
    def create(self, request: Request) -> Response:
        form = serializers.GrantCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        grant = access_services.grant_add(actor=request.user, username=form.validated_data["user"],
                                   catalog=form.validated_data["catalog"],
                                   role=form.validated_data["role"], via=_via(request))
        return Response(self.get_serializer(grant).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        access_services.grant_remove(actor=request.user, grant_id=kwargs["pk"], via=_via(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
