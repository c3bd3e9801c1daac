"""The Iceberg REST catalog protocol served from floe catalogs, free of any web framework.

:class:`RestServer` takes a :class:`Request` (method, path below the mount point, query,
headers, body, and who asks) and gives a :class:`Response` (status, JSON body, headers),
plus what the request changed (:class:`Change`, for an audit trail) and the operation it was
(:class:`Operation`, for authorization and logging). A web layer authenticates, passes an
``authorize`` callback (raise :class:`~floe.rest_server.errors.Forbidden` to refuse), calls
:meth:`RestServer.handle`, and writes the answer.

Routes (OpenAPI ``rest-catalog-open-api.yaml``): ``GET /v1/config`` (``warehouse`` = the name
of a catalog; the answer's ``overrides.prefix`` is that name and ``endpoints`` what is served
here), then under ``/v1/{prefix}/``: namespaces (list, paged, ``parent`` for nested ones;
create; load; exists; drop; update properties), tables (list, paged; create, also staged;
load with ``ETag`` / ``If-None-Match``; exists; commit; drop, ``purgeRequested``; rename;
register), ``transactions/commit``, a table's ``metrics`` (reportMetrics: the report
checked, :mod:`floe.rest_server.metrics`, handed to the ``reports`` sink the web layer gives,
answered 204) and server-side scan planning (:mod:`floe.rest_server.planning`). Namespace
levels in paths are joined by ``%1F``. More routes are added with
:meth:`RestServer.add_route`.

Commits apply the updates to the table's current metadata after checking the requirements
against it (a failed one is 409 ``CommitFailedException``), through the catalog's
check-and-put (:meth:`floe.catalog.base.Catalog.commit_updates`); when another writer moved
the pointer meanwhile, the commit is tried again on the fresh metadata as long as the
requirements still hold (Java's ``CatalogHandlers.commit``). A failure whose outcome is
unknown is 500 ``CommitStateUnknownException``; a catalog that cannot be reached before
anything was written is 503. ``transactions/commit`` is atomic across tables of a catalog that
can commit several at once (SQL: one database transaction); other catalogs take one table
per transaction and refuse more (406).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import hashlib
import json
import logging
import os
import random
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.cache import LRUCache
from floe.catalog.base import (
    Catalog,
    Namespace,
    TableCommit,
    TableIdentifier,
    UnsupportedOperation,
    validate_name,
)
from floe.errors import CommitConflict, NotFound, ValidationError
from floe.io import is_local
from floe.io.local import local_path
from floe.metadata import (
    DEFAULT_FORMAT_VERSION,
    METADATA_DIR,
    RESERVED_PROPERTIES,
    TableMetadata,
    metadata_text,
    new_table_metadata,
)
from floe.partitioning import PARTITION_FIELD_ID_START, UNPARTITIONED, PartitionSpec
from floe.rest_server.errors import (
    BadRequest,
    CommitFailed,
    CommitStateUnknownError,
    RestError,
    error_for,
)
from floe.rest_server.idempotency import IdempotencyStore, fingerprint
from floe.rest_server.metrics import MetricsReport, report_from_json
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder
from floe.table.updates import (
    AssertCreate,
    StaleUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
    validate_requirements,
)
from floe.table.updates_json import commit_request_from_json

__all__ = [
    "Access",
    "Call",
    "Change",
    "Operation",
    "Request",
    "ReportSink",
    "Response",
    "RestServer",
    "Route",
    "json_response",
]

log = logging.getLogger("floe.rest_server")

#: The request body size the server reads at most (a commit of a few thousand updates, a
#: table of tens of thousands of columns fit).
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: Page size of a listing asked with ``pageToken`` but no ``pageSize``.
DEFAULT_PAGE_SIZE = 1000
#: Times a commit is tried again on fresh metadata after the pointer moved underneath it.
DEFAULT_COMMIT_RETRIES = 4
#: The namespace separator of paths and ``parent`` (the spec's default, ``%1F``).
SEPARATOR = "\x1f"
IDEMPOTENCY_HEADER = "idempotency-key"
_MAX_KEY_LENGTH = 128


class Access(enum.IntEnum):
    """What an operation needs, ordered: reading, changing tables, administering namespaces
    (and purging tables)."""

    READ = 1
    WRITE = 2
    ADMIN = 3


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request, below the mount point (``path`` starts with ``/v1/``).

    ``path`` is as sent, percent-encoded (each segment is decoded after splitting, so a
    ``%2F`` stays inside its segment); a web layer that only has the decoded path passes
    ``path_decoded=True``. ``query`` holds decoded values, ``headers`` lower-case names.
    ``principal`` names who asks (the scope of an ``Idempotency-Key``)."""

    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    principal: str = ""
    path_decoded: bool = False

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class Operation:
    """What a request asks, known before anything is read: the spec's ``operationId``, the
    catalog it addresses, the access it needs, and the namespace and table it is about."""

    name: str
    catalog: str | None
    access: Access
    namespace: Namespace | None = None
    table: str | None = None
    #: Whether it changes something (the ``Idempotency-Key`` applies).
    changes: bool = False


@dataclass(frozen=True, slots=True)
class Change:
    """One change a request made (or may have made: ``outcome`` ``unknown``), for an audit
    trail: the table's metadata file before and after, its current snapshot before and
    after, and ``detail`` (the update actions, a drop's purge, a rename's destination...)."""

    action: str
    catalog: str
    namespace: Namespace
    table: str | None = None
    metadata_before: str | None = None
    metadata_after: str | None = None
    snapshot_before: int | None = None
    snapshot_after: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    outcome: str = "succeeded"
    error: str = ""


@dataclass
class Response:
    """An answer: status, body (JSON bytes, or empty), headers; what it changed, the
    operation it was (None when the request matched no route), the error type and message
    of a refusal, and whether it is a stored answer replayed for an ``Idempotency-Key``."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    operation: Operation | None = None
    error: RestError | None = None
    replayed: bool = False

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def json_response(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None
                  ) -> Response:
    return Response(status, _dumps(obj),
                    {"Content-Type": "application/json", **(headers or {})})


def _error_response(error: RestError) -> Response:
    r = json_response(error.to_json(), error.status)
    r.error = error
    return r


# -- names ---------------------------------------------------------------------------------


def check_name(part: Any, what: str) -> str:
    """A namespace level or table name the server accepts: floe's rules
    (:func:`floe.catalog.base.validate_name`: no ``/``, ``..``, NUL, leading ``.``) and no
    control character (the unit separator 0x1F separates namespace levels)."""
    if not isinstance(part, str):
        raise BadRequest(f"invalid {what} {part!r}: must be a string")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in part):
        raise BadRequest(f"invalid {what} {part!r}: control characters (such as the unit "
                         "separator 0x1F, which separates namespace levels) are not allowed")
    try:
        return validate_name(part, what)
    except ValidationError as e:
        raise BadRequest(str(e)) from None


def namespace_of(levels: Any, what: str = "namespace") -> Namespace:
    """A namespace from a JSON array of levels."""
    if not isinstance(levels, list) or not levels:
        raise BadRequest(f"{what} must be a non-empty array of names")
    return tuple(check_name(level, "namespace level") for level in levels)


def namespace_param(text: str) -> Namespace:
    """A namespace from a path segment or ``parent``: levels joined by 0x1F."""
    return tuple(check_name(level, "namespace level") for level in text.split(SEPARATOR))


def identifier_of(obj: Any, what: str) -> TableIdentifier:
    """A ``TableIdentifier`` JSON object (``{"namespace": [...], "name": ...}``)."""
    if not isinstance(obj, dict):
        raise BadRequest(f"{what} must be an object with 'namespace' and 'name'")
    ns = namespace_of(obj.get("namespace"), f"{what}'s namespace")
    return TableIdentifier(ns, check_name(obj.get("name"), "table name"))


def identifier_json(ident: TableIdentifier) -> dict[str, Any]:
    return {"namespace": list(ident.namespace), "name": ident.name}


# -- paging --------------------------------------------------------------------------------


def _page_token(last: Any) -> str:
    return base64.urlsafe_b64encode(_dumps(last)).decode("ascii").rstrip("=")


def _after_token(token: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error):
        raise BadRequest(f"pageToken {token[:60]!r} is not a token this server gave") from None


def paginate(items: Sequence[Any], key: Callable[[Any], Any], query: Mapping[str, str],
             default_size: int) -> tuple[list[Any], str | None]:
    """One page of ``items`` (sorted by ``key``, whose values are JSON) and the next page's
    token (None on the last page). Without ``pageToken`` and ``pageSize`` every item, as the
    spec asks; ``pageSize`` alone starts at the first item; a token (empty: the first page)
    alone gets pages of ``default_size``. A token is the last key returned, so a page never
    repeats or skips an item that stayed while others came or went."""
    token, raw_size = query.get("pageToken"), query.get("pageSize")
    ordered = sorted(items, key=key)
    if token is None and raw_size in (None, ""):
        return ordered, None
    size = default_size
    if raw_size:
        try:
            size = int(raw_size)
        except ValueError:
            size = 0
        if size < 1:
            raise BadRequest(f"pageSize must be a positive integer, not {raw_size!r}")
    start = 0
    if token:
        after = _after_token(token)
        after_key = tuple(after) if isinstance(after, list) else after
        try:
            start = next((i for i, item in enumerate(ordered) if key(item) > after_key),
                         len(ordered))
        except TypeError:
            raise BadRequest(f"pageToken {token[:60]!r} is not a token of this "
                             "listing") from None
    page = ordered[start:start + size]
    more = start + size < len(ordered)
    last = key(page[-1]) if page else None
    return page, (_page_token(list(last) if isinstance(last, tuple) else last)
                  if more else None)


# -- routes --------------------------------------------------------------------------------


Handler = Callable[["Call"], Response]
#: Where metrics reports go (:meth:`RestServer.record_report`): the request's call (its
#: operation names the table, its request the principal and the client's headers), the
#: report, and its source (``"client"``: sent by an engine; ``"floe-planned"``: made by the
#: server's own scan planning).
ReportSink = Callable[["Call", MetricsReport, str], None]

#: Operations whose 404 the spec names NoSuchTableException, whether the table or its
#: namespace is missing. Iceberg Java reads the type: it loads ``db.t.snapshots`` or
#: ``db.t.branch_b`` as table ``snapshots`` of namespace ``db.t`` first and falls back to a
#: metadata table or branch of ``db.t`` only on NoSuchTableException (Spark's ``IF EXISTS``
#: likewise).
_TABLE_404_ONLY = frozenset({"loadTable", "tableExists", "updateTable", "dropTable",
                             "commitTransaction"})


@dataclass(frozen=True, slots=True)
class Route:
    """``method`` and ``path`` (as the spec writes it, ``/v1/{prefix}/namespaces/{namespace}
    /tables/{table}``) → ``handler``. ``access`` is what it needs (``access_of`` decides from
    the request when it depends on it); ``not_found`` is the error type of a NotFound it
    raises; ``advertise`` lists it in ``/v1/config``'s ``endpoints``."""

    method: str
    path: str
    name: str
    handler: Handler
    access: Access = Access.READ
    changes: bool = False
    not_found: str = "NotFoundException"
    advertise: bool = True
    access_of: Callable[[Request], Access] | None = None
    #: For the reference (:meth:`RestServer.openapi`): a one-line summary, the query
    #: parameters it reads, the spec's schema of its body, its success status.
    summary: str = ""
    query: tuple[str, ...] = ()
    body: str | None = None
    success: int = 200

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"


class Call:
    """One request matched to a route: what a handler is given."""

    def __init__(self, server: RestServer, request: Request, route: Route,
                 params: dict[str, str], operation: Operation) -> None:
        self.server = server
        self.request = request
        self.route = route
        self.params = params
        self.operation = operation
        self.changes: list[Change] = []
        self._catalog: Catalog | None = None
        self._json: Any = None

    @property
    def query(self) -> Mapping[str, str]:
        return self.request.query

    @property
    def catalog_name(self) -> str:
        name = self.operation.catalog
        if name is None:
            raise BadRequest("this request names no catalog")
        return name

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = self.server.catalog(self.catalog_name)
        return self._catalog

    @property
    def namespace(self) -> Namespace:
        ns = self.operation.namespace
        if ns is None:
            raise BadRequest("this request names no namespace")
        return ns

    @property
    def ident(self) -> TableIdentifier:
        if self.operation.table is None:
            raise BadRequest("this request names no table")
        return TableIdentifier(self.namespace, self.operation.table)

    def json(self) -> dict[str, Any]:
        """The body, a JSON object (400 naming the problem otherwise)."""
        if self._json is None:
            body = self.request.body
            if not body.strip():
                raise BadRequest(f"{self.operation.name}: the request has no body (a JSON "
                                 "object is expected)")
            try:
                doc = json.loads(body)
            except UnicodeDecodeError:
                raise BadRequest("the request body is not UTF-8 text") from None
            except ValueError as e:
                raise BadRequest(f"malformed JSON in the request body: {e}") from None
            if not isinstance(doc, dict):
                raise BadRequest(f"{self.operation.name}: the request body must be a JSON "
                                 f"object, not {type(doc).__name__}")
            self._json = doc
        result: dict[str, Any] = self._json
        return result


def _bool_param(value: str | None, name: str) -> bool:
    if value is None or value == "":
        return False
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise BadRequest(f"{name} must be true or false, not {value!r}")


def _strings_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequest(f"{what} must be an object of strings")
    return dict(value)


def _snapshot_id(md: TableMetadata | None) -> int | None:
    return None if md is None else md.current_snapshot_id


# -- the server ----------------------------------------------------------------------------


class RestServer:
    """The protocol over floe catalogs.

    ``catalogs`` looks a catalog up by name (NotFound for an unknown one): the ``warehouse``
    a client passes and the ``prefix`` of its paths. ``vended_config(name)`` is the storage
    configuration handed to clients with every table of that catalog (a loadTable's
    ``config``), which the operator chooses; by default nothing. ``max_body_bytes``,
    ``page_size``, ``commit_retries`` and ``idempotency`` (an :class:`IdempotencyStore`)
    as their defaults say. ``reports`` keeps the metrics reports engines send (without it
    they are checked and dropped)."""

    def __init__(
        self,
        catalogs: Callable[[str], Catalog],
        *,
        vended_config: Callable[[str], Mapping[str, str]] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        page_size: int = DEFAULT_PAGE_SIZE,
        commit_retries: int = DEFAULT_COMMIT_RETRIES,
        idempotency: IdempotencyStore | None = None,
        reports: ReportSink | None = None,
    ) -> None:
        self._catalogs = catalogs
        self._vended = vended_config
        self.max_body_bytes = max_body_bytes
        self.page_size = page_size
        self.commit_retries = commit_retries
        self.idempotency = idempotency if idempotency is not None else IdempotencyStore()
        self.reports = reports
        self._bodies: LRUCache[tuple[str, str | None, int, str], bytes] = LRUCache(256)
        self.routes: list[Route] = []
        for route in _ROUTES:
            self.add_route(route)
        from floe.rest_server.planning import DEFAULT_PLAN_PAGE_SIZE, PLANNING_ROUTES

        for route in PLANNING_ROUTES:
            self.add_route(route)
        #: File scan tasks per answer of server-side scan planning (the rest: plan-tasks).
        self.plan_page_size = DEFAULT_PLAN_PAGE_SIZE
        #: Called with (call, a spec ScanReport dict, the explorer plan page's query params or
        #: None) after each served planTableScan; None: nothing is called.
        self.on_plan: Callable[[Call, dict[str, Any], dict[str, str] | None], None] | None \
            = None

    # -- wiring ------------------------------------------------------------------------------

    def add_route(self, route: Route) -> None:
        """Serve ``route`` (a later route of the same method and path replaces it)."""
        self.routes = [r for r in self.routes
                       if (r.method, r.segments) != (route.method, route.segments)]
        self.routes.append(route)

    def endpoints(self) -> list[str]:
        """What ``/v1/config`` advertises: every route served, but the config itself."""
        return [r.endpoint for r in self.routes if r.advertise and r.name != "getConfig"]

    def catalog(self, name: str) -> Catalog:
        return self._catalogs(name)

    def openapi(self, server_url: str = "") -> dict[str, Any]:
        """An OpenAPI 3 document of the routes served (for a reference page): operations,
        parameters, the spec's request schema by name, answers in the error model."""
        error = {"$ref": "#/components/schemas/IcebergErrorResponse"}
        paths: dict[str, dict[str, Any]] = {}
        for route in self.routes:
            params = [dict(_PATH_PARAMS[seg[1:-1]], name=seg[1:-1], required=True)
                      for seg in route.segments if seg.startswith("{")]
            params += [dict(_QUERY_PARAMS[q], name=q) for q in route.query]
            if route.changes:
                params.append(dict(_HEADER_PARAMS["Idempotency-Key"], name="Idempotency-Key"))
            if route.name == "loadTable":
                params.append(dict(_HEADER_PARAMS["If-None-Match"], name="If-None-Match"))
            responses: dict[str, Any] = {
                str(route.success): {"description": "success" if route.success != 204
                                     else "success, no content"}}
            if route.success == 200 and route.method != "HEAD":
                responses[str(route.success)]["content"] = {
                    "application/json": {"schema": {"type": "object"}}}
            for status in _ERROR_STATUSES:
                responses[str(status)] = {"description": _ERROR_STATUSES[status],
                                          "content": {"application/json": {"schema": error}}}
            op: dict[str, Any] = {"operationId": route.name, "summary": route.summary,
                                  "description": f"Needs the {route.access.name.lower()} "
                                                 "access to the catalog.",
                                  "parameters": params, "responses": responses,
                                  "tags": ["Iceberg REST catalog"]}
            if route.body is not None:
                op["requestBody"] = {"required": True, "description": f"the spec's "
                                     f"{route.body}", "content": {"application/json": {
                                         "schema": {"type": "object"}}}}
            paths.setdefault(route.path, {})[route.method.lower()] = op
        return {
            "openapi": "3.0.3",
            "info": {"title": "Floe's Iceberg REST catalog", "version": "1",
                     "description": "The Apache Iceberg REST catalog protocol "
                                    "(rest-catalog-open-api.yaml) as Floe serves it; "
                                    "views are not served."},
            "servers": [{"url": server_url}] if server_url else [],
            "paths": paths,
            "components": {"schemas": {
                "IcebergErrorResponse": {"type": "object", "properties": {"error": {
                    "type": "object", "properties": {"message": {"type": "string"},
                                                     "type": {"type": "string"},
                                                     "code": {"type": "integer"}}}}}}},
        }

    def record_report(self, call: Call, report: MetricsReport | Mapping[str, Any],
                      source: str = "client") -> MetricsReport:
        """Hand a metrics report about ``call``'s table to the ``reports`` sink: one an
        engine sent (``reportMetrics``) or one the server made (``source="floe-planned"``,
        a spec-shaped ``ReportMetricsRequest`` dict). 400 for a malformed one."""
        parsed = report if isinstance(report, MetricsReport) else report_from_json(report)
        if self.reports is not None:
            self.reports(call, parsed, source)
        return parsed

    def vended_config(self, catalog: str) -> dict[str, str]:
        return dict(self._vended(catalog)) if self._vended is not None else {}

    # -- requests ----------------------------------------------------------------------------

    def too_large(self) -> Response:
        """The answer to a body over :attr:`max_body_bytes` (a web layer that reads the
        body itself answers it without reading more)."""
        return _error_response(RestError(
            413, "RequestTooLargeException",
            f"the request body is larger than this server accepts ({self.max_body_bytes} "
            "bytes)"))

    def handle(self, request: Request, *,
               authorize: Callable[[Operation], None] | None = None) -> Response:
        """Answer ``request``. ``authorize(operation)`` runs before anything is read or
        changed; it refuses by raising a :class:`RestError` (``Forbidden``)."""
        try:
            route, params = self._match(request)
            operation = self._operation(request, route, params)
        except RestError as e:
            return _error_response(e)
        try:
            if authorize is not None:
                authorize(operation)
            if len(request.body) > self.max_body_bytes:
                response = self.too_large()
            else:
                call = Call(self, request, route, params, operation)
                response = self._run(call)
        except RestError as e:
            response = _error_response(e)
        response.operation = operation
        if request.method == "HEAD":
            response.body = b""
        return response

    def _run(self, call: Call) -> Response:
        request = call.request
        key = request.header(IDEMPOTENCY_HEADER)
        if not key or not call.operation.changes:
            return self._dispatch(call)
        if len(key) > _MAX_KEY_LENGTH:
            raise BadRequest(f"Idempotency-Key is longer than {_MAX_KEY_LENGTH} characters")

        def conflict() -> Response:
            return _error_response(RestError(
                422, "UnprocessableEntityException",
                f"Idempotency-Key {key!r} was used with another request; a key names one "
                "operation"))

        def replayed(stored: Response) -> Response:
            return dataclasses.replace(stored, changes=[], replayed=True,
                                       headers=dict(stored.headers))

        def running() -> Response:
            return _error_response(CommitStateUnknownError(
                f"the request first sent with Idempotency-Key {key!r} is still running; its "
                "outcome is not known yet"))

        return self.idempotency.run(
            request.principal, key, fingerprint(request.method, request.path, request.body),
            lambda: self._dispatch(call), conflict=conflict, replayed=replayed,
            running=running)

    def _dispatch(self, call: Call) -> Response:
        from floe.rest_server import proxy  # it builds on this module

        route = call.route
        try:
            handler = route.handler
            if route.name in proxy.HANDLERS and proxy.proxied(call):
                handler = proxy.HANDLERS[route.name]
            response = handler(call)
        except RecursionError:  # JSON or a schema nested deeper than Python recurses
            response = _error_response(BadRequest(
                f"{route.name}: the request nests deeper than the server reads"))
        except Exception as exc:  # every failure is an answer in the error model
            # a change that failed unexpectedly may or may not have happened
            error = error_for(exc, not_found=route.not_found, committing=route.changes)
            if error.type == "NoSuchTableException" and route.name not in _TABLE_404_ONLY:
                error = self._missing_namespace(call) or error
            response = _error_response(error)
        response.changes = call.changes + response.changes
        return response

    @staticmethod
    def _missing_namespace(call: Call) -> RestError | None:
        """A table's NotFound whose namespace is missing is NoSuchNamespaceException."""
        ns = call.operation.namespace
        if ns is None:
            return None
        try:
            if call.catalog.namespace_exists(ns):
                return None
        except Exception:  # the table's error stands
            return None
        return RestError(404, "NoSuchNamespaceException",
                         f"namespace {'.'.join(ns)} does not exist in catalog "
                         f"{call.catalog_name!r}")

    def _segments(self, request: Request) -> list[str]:
        path = request.path
        if not path.startswith("/"):
            path = "/" + path
        parts = path.split("/")[1:]
        if parts and parts[-1] == "":
            parts = parts[:-1]
        if request.path_decoded:
            return parts
        return [urllib.parse.unquote(p, errors="strict") if "%" in p else p for p in parts]

    def _match(self, request: Request) -> tuple[Route, dict[str, str]]:
        try:
            segments = self._segments(request)
        except UnicodeDecodeError:
            raise BadRequest("the request path is not UTF-8 once decoded") from None
        method = request.method.upper()
        allowed: list[str] = []
        for route in self.routes:
            pattern = route.segments
            if len(pattern) != len(segments):
                continue
            params: dict[str, str] = {}
            for want, got in zip(pattern, segments, strict=True):
                if want.startswith("{") and want.endswith("}"):
                    if not got:
                        break
                    params[want[1:-1]] = got
                elif want != got:
                    break
            else:
                if route.method == method:
                    return route, params
                allowed.append(route.method)
        if allowed:
            raise RestError(405, "MethodNotAllowedException",
                            f"{method} is not served on {request.path} (only "
                            f"{', '.join(sorted(set(allowed)))})")
        hint = ""
        if len(segments) >= 2 and segments[0] == "v1" and segments[1] in (
                "namespaces", "tables", "transactions"):
            hint = ("; paths start with /v1/{prefix}/: pass warehouse=<catalog name> to "
                    "/v1/config and use the prefix it answers")
        raise RestError(404, "NotFoundException",
                        f"no such endpoint: {method} {request.path[:200]}{hint}")

    @staticmethod
    def _operation(request: Request, route: Route, params: dict[str, str]) -> Operation:
        catalog = params.get("prefix")
        if route.name == "getConfig":
            catalog = request.query.get("warehouse") or None
        if catalog is not None and not catalog:
            raise BadRequest("the catalog name (prefix) is empty")
        namespace = namespace_param(params["namespace"]) if "namespace" in params else None
        table = check_name(params["table"], "table name") if "table" in params else None
        access = route.access_of(request) if route.access_of is not None else route.access
        return Operation(route.name, catalog, access, namespace, table, route.changes)

    # -- tables as answers -------------------------------------------------------------------

    def metadata_json(self, location: str | None, md: TableMetadata,
                      snapshots: str = "all") -> bytes:
        """The metadata as JSON bytes (``snapshots="refs"``: only the snapshots a branch
        or tag points to), kept for the metadata files answered most recently."""
        def build() -> bytes:
            shown = md
            if snapshots == "refs":
                keep = {r.snapshot_id for r in md.refs.values()}
                shown = dataclasses.replace(
                    md, snapshots=tuple(s for s in md.snapshots if s.snapshot_id in keep))
            return metadata_text(shown).encode("utf-8")  # as the file holds it

        if location is None:
            return build()
        return self._bodies.get_or_load(
            (location, md.table_uuid, md.last_updated_ms, snapshots), build)

    def table_result(self, catalog: str, location: str | None, md: TableMetadata,
                     snapshots: str = "all", *, load: bool = True,
                     config: Mapping[str, str] | None = None,
                     storage_credentials: Sequence[Mapping[str, Any]] = (),
                     if_none_match: str | None = None) -> Response:
        """A ``LoadTableResult`` (``load=False``: a ``CommitTableResponse``) with its
        ``ETag``; ``config`` is the catalog's vended config unless given. A 304 with the ETag
        alone when ``if_none_match`` (the request's header) names it: no body is built."""
        if not load:
            config = {}
        elif config is None:
            config = self.vended_config(catalog)
        config_json = _dumps(config)
        credentials_json = _dumps(list(storage_credentials)) if storage_credentials else b""
        tag = hashlib.sha256("\0".join(
            (location or "", md.table_uuid or "", str(md.last_updated_ms), snapshots,
             config_json.decode(), credentials_json.decode())).encode()).hexdigest()[:40]
        if _etag_matches(if_none_match, f'"{tag}"'):
            return Response(304, b"", {"ETag": f'"{tag}"'})
        body = b"".join((
            b'{"metadata-location":', _dumps(location), b',"metadata":',
            self.metadata_json(location, md, snapshots),
            (b',"config":' + config_json) if load else b"",
            (b',"storage-credentials":' + credentials_json) if credentials_json else b"",
            b"}"))
        return Response(200, body, {"Content-Type": "application/json", "ETag": f'"{tag}"'})

    # -- commits -----------------------------------------------------------------------------

    def _backoff(self, attempt: int) -> None:
        delay = min(0.01 * 2 ** attempt, 0.2)
        time.sleep(delay + random.uniform(0, delay))

    def commit_table(self, call: Call, ident: TableIdentifier,
                     requirements: Sequence[TableRequirement],
                     updates: Sequence[TableUpdate]) -> tuple[str, TableMetadata]:
        """Apply a ``CommitTableRequest`` to the table's current metadata (a create when its
        requirements are ``assert-create``); record the change on ``call``; the new metadata
        location and metadata."""
        catalog = call.catalog
        if any(isinstance(r, AssertCreate) for r in requirements):
            _only_create(requirements, ident)
            md = metadata_from_updates(updates)
            try:
                location = catalog.create_table_from_metadata(ident, md)
            except Exception as e:
                self._unknown(call, "create_table", ident, None, None, e, updates)
                raise
            call.changes.append(_change(call, "create_table", ident, None, None, location, md,
                                        {"updates": _actions(updates), "staged": True}))
            return location, md
        attempt = 0
        while True:
            base_location = catalog.metadata_location(ident)
            base = catalog.read_metadata(base_location)
            try:
                validate_requirements(requirements, base)
            except CommitConflict as e:
                raise CommitFailed(f"table {ident}: {e}") from None
            if not updates:  # nothing to change: no new metadata file (as Java)
                return base_location, base
            try:
                location, new = catalog.commit_updates(ident, base_location, base,
                                                       requirements, updates)
            except StaleUpdate as e:
                raise CommitFailed(f"table {ident}: {e}; retry on fresh metadata") from None
            except CommitConflict as e:
                if attempt >= self.commit_retries:
                    raise CommitFailed(f"table {ident}: {e} (tried {attempt + 1} times)"
                                       ) from None
                attempt += 1
                log.info("table %s changed underneath a commit; trying again (%d)", ident,
                         attempt)
                self._backoff(attempt)
                continue
            except Exception as e:
                self._unknown(call, "commit", ident, base_location, base, e, updates)
                raise
            call.changes.append(_change(call, "commit", ident, base_location, base, location,
                                        new, {"updates": _actions(updates),
                                              "attempts": attempt + 1}))
            return location, new

    @staticmethod
    def _unknown(call: Call, action: str, ident: TableIdentifier, before: str | None,
                 base: TableMetadata | None, exc: Exception,
                 updates: Sequence[TableUpdate]) -> None:
        """Record a change whose outcome is unknown (what the audit must keep)."""
        error = error_for(exc, committing=True)
        if error.type == "CommitStateUnknownException":
            call.changes.append(Change(
                action, call.catalog_name, ident.namespace, ident.name, before, None,
                _snapshot_id(base), None, {"updates": _actions(updates)}, "unknown",
                error.message))

    def commit_transaction(self, call: Call,
                           changes: Sequence[tuple[TableIdentifier, Sequence[TableRequirement],
                                                   Sequence[TableUpdate]]]) -> None:
        """Commit every table of a ``CommitTransactionRequest`` at once, tried again on
        fresh metadata (as :meth:`commit_table`) when a pointer moved."""
        catalog = call.catalog
        if len(changes) > 1 and not catalog.commits_tables_atomically:
            raise UnsupportedOperation(
                f"catalog {call.catalog_name!r} cannot commit several tables atomically "
                f"({len(changes)} asked): commit each table on its own")
        attempt = 0
        while True:
            commits: list[TableCommit] = []
            for ident, requirements, updates in changes:
                if any(isinstance(r, AssertCreate) for r in requirements):
                    _only_create(requirements, ident)
                    if catalog.table_exists(ident):
                        raise CommitFailed(f"table {ident}: requirement failed: the table "
                                           "already exists")
                    commits.append(TableCommit(ident, None, None,
                                               metadata_from_updates(updates)))
                    continue
                base_location = catalog.metadata_location(ident)
                base = catalog.read_metadata(base_location)
                try:
                    validate_requirements(requirements, base)
                    new = apply_updates(base, updates, base_location)
                except (CommitConflict, StaleUpdate) as e:
                    raise CommitFailed(f"table {ident}: {e}") from None
                commits.append(TableCommit(ident, base_location, base, new))
            todo = [c for c, (_, _, updates) in zip(commits, changes, strict=True) if updates]
            if not todo:
                return
            try:
                locations = catalog.commit_tables(todo)
            except CommitConflict as e:
                if attempt >= self.commit_retries:
                    raise CommitFailed(f"{e} (tried {attempt + 1} times)") from None
                attempt += 1
                self._backoff(attempt)
                continue
            except Exception as e:
                error = error_for(e, committing=True)
                if error.type == "CommitStateUnknownException":
                    for c in todo:
                        call.changes.append(Change(
                            "commit", call.catalog_name, c.ident.namespace, c.ident.name,
                            c.base_location, None, _snapshot_id(c.base), None,
                            {"transaction": len(todo)}, "unknown", error.message))
                raise
            by_ident = {ident: updates for ident, _, updates in changes}
            for c, location in zip(todo, locations, strict=True):
                call.changes.append(_change(
                    call, "create_table" if c.base_location is None else "commit", c.ident,
                    c.base_location, c.base, location, c.new_metadata,
                    {"updates": _actions(by_ident[c.ident]), "transaction": len(todo),
                     "attempts": attempt + 1}))
            return


def _actions(updates: Iterable[TableUpdate]) -> list[str]:
    return [u.action for u in updates]


def _change(call: Call, action: str, ident: TableIdentifier, before: str | None,
            base: TableMetadata | None, after: str | None, new: TableMetadata | None,
            detail: Mapping[str, Any]) -> Change:
    return Change(action, call.catalog_name, ident.namespace, ident.name, before, after,
                  _snapshot_id(base), _snapshot_id(new), dict(detail))


def _only_create(requirements: Sequence[TableRequirement], ident: TableIdentifier) -> None:
    others = [r.type for r in requirements if not isinstance(r, AssertCreate)]
    if others:
        raise BadRequest(f"table {ident}: a create (assert-create) takes no other "
                         f"requirement, got {', '.join(others)}")


def metadata_from_updates(updates: Sequence[TableUpdate]) -> TableMetadata:
    """A new table's first metadata: ``updates`` (a staged create's assign-uuid,
    upgrade-format-version, add-schema, set-current-schema, add-spec, add-sort-order,
    set-location, set-properties, and maybe a first snapshot) folded over empty metadata of
    the format version asked (Java ``TableMetadata.buildFromEmpty``); 400 when it lacks a
    schema or a location."""
    version = next((u.format_version for u in updates if isinstance(u, UpgradeFormatVersion)),
                   DEFAULT_FORMAT_VERSION)
    empty = TableMetadata(
        format_version=version, table_uuid=None, location="", last_sequence_number=0,
        last_updated_ms=0, last_column_id=0, schemas=(), current_schema_id=-1,
        partition_specs=(), default_spec_id=-1,
        last_partition_id=PARTITION_FIELD_ID_START - 1, properties={}, sort_orders=(),
        default_sort_order_id=-1, next_row_id=0 if version >= 3 else None)
    md = apply_updates(empty, updates)
    if md.schema_by_id(md.current_schema_id) is None:
        raise BadRequest("a created table needs a schema: add-schema and set-current-schema")
    if not md.location:
        raise BadRequest("a created table needs a location: set-location")
    changes: dict[str, Any] = {
        "properties": {k: v for k, v in md.properties.items() if k not in RESERVED_PROPERTIES}}
    if md.table_uuid is None:
        changes["table_uuid"] = str(uuid.uuid4())
    if not md.partition_specs:
        changes.update(partition_specs=(UNPARTITIONED,), default_spec_id=0)
    if not md.sort_orders:
        changes.update(sort_orders=(UNSORTED_SORT_ORDER,), default_sort_order_id=0)
    md = dataclasses.replace(md, **changes)
    md.spec()
    md.sort_order()
    return md


# -- handlers ------------------------------------------------------------------------------


def _get_config(call: Call) -> Response:
    if call.operation.catalog is None:
        raise BadRequest("pass warehouse = the name of a floe catalog (GET "
                         "/v1/config?warehouse=NAME); its tables are served under the "
                         "prefix this answers")
    try:
        call.catalog  # noqa: B018 - the lookup is the check
    except NotFound:
        raise RestError(404, "NoSuchWarehouseException",
                        f"catalog {call.catalog_name!r} does not exist") from None
    return json_response({
        "defaults": {},
        "overrides": {"prefix": urllib.parse.quote(call.catalog_name, safe="")},
        "endpoints": call.server.endpoints(),
        "idempotency-key-lifetime": call.server.idempotency.lifetime_iso,
    })


def _list_namespaces(call: Call) -> Response:
    parent_text = call.query.get("parent") or ""
    parent = namespace_param(parent_text) if parent_text else ()
    found = call.catalog.list_namespaces(parent)
    page, token = paginate(found, lambda ns: tuple(ns), call.query, call.server.page_size)
    return json_response({"namespaces": [list(ns) for ns in page], "next-page-token": token})


def _create_namespace(call: Call) -> Response:
    doc = call.json()
    ns = namespace_of(doc.get("namespace"), "namespace")
    props = _strings_map(doc.get("properties"), "properties")
    call.catalog.create_namespace(ns, props)
    call.changes.append(Change("create_namespace", call.catalog_name, ns,
                               detail={"properties": sorted(props)}))
    return json_response({"namespace": list(ns),
                          "properties": call.catalog.load_namespace_properties(ns)})


def _load_namespace(call: Call) -> Response:
    props = call.catalog.load_namespace_properties(call.namespace)
    return json_response({"namespace": list(call.namespace), "properties": props})


def _namespace_exists(call: Call) -> Response:
    if not call.catalog.namespace_exists(call.namespace):
        raise NotFound(f"namespace {'.'.join(call.namespace)} does not exist in catalog "
                       f"{call.catalog_name!r}")
    return Response(204)


def _drop_namespace(call: Call) -> Response:
    call.catalog.drop_namespace(call.namespace)
    call.changes.append(Change("drop_namespace", call.catalog_name, call.namespace))
    return Response(204)


def _update_properties(call: Call) -> Response:
    doc = call.json()
    removals = doc.get("removals") or []
    if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
        raise BadRequest("removals must be an array of strings")
    updates = _strings_map(doc.get("updates"), "updates")
    both = sorted(set(removals) & updates.keys())
    if both:
        raise RestError(422, "UnprocessableEntityException",
                        f"properties both removed and updated: {', '.join(both)}")
    catalog = call.catalog
    update = getattr(catalog, "update_namespace_properties", None)
    if update is None:
        raise UnsupportedOperation(f"catalog {call.catalog_name!r} ({type(catalog).__name__}) "
                                   "keeps no namespace properties")
    start = catalog.load_namespace_properties(call.namespace)
    missing = sorted(set(removals) - start.keys())
    removed = sorted(set(removals) - set(missing))
    update(call.namespace, removals=removed, updates=updates)
    call.changes.append(Change("update_namespace_properties", call.catalog_name,
                               call.namespace, detail={"updated": sorted(updates),
                                                       "removed": removed}))
    return json_response({"updated": sorted(updates), "removed": removed, "missing": missing})


def _list_tables(call: Call) -> Response:
    found = call.catalog.list_tables(call.namespace)
    page, token = paginate(found, lambda i: i.name, call.query, call.server.page_size)
    return json_response({"identifiers": [identifier_json(i) for i in page],
                          "next-page-token": token})


def _sort_order_of(doc: Any) -> SortOrder:
    if doc is None:
        return UNSORTED_SORT_ORDER
    if not isinstance(doc, dict):
        raise BadRequest("write-order must be an object")
    fields = doc.get("fields") or []
    return SortOrder.from_json({"order-id": 1 if fields else 0, **doc})


def _create_table(call: Call) -> Response:
    doc = call.json()
    ident = TableIdentifier(call.namespace, check_name(doc.get("name"), "table name"))
    if "schema" not in doc:
        raise BadRequest("createTable needs a schema")
    schema = Schema.from_json(doc["schema"])
    raw_spec = doc.get("partition-spec")
    if raw_spec is not None and not isinstance(raw_spec, dict):
        raise BadRequest("partition-spec must be an object")
    spec = PartitionSpec.from_json({"spec-id": 0, **raw_spec}) if raw_spec else UNPARTITIONED
    order = _sort_order_of(doc.get("write-order"))
    props = _strings_map(doc.get("properties"), "properties")
    location = doc.get("location")
    if location is not None and (not isinstance(location, str) or not location):
        raise BadRequest("location must be a non-empty string")
    raw_version = props.get("format-version", str(DEFAULT_FORMAT_VERSION))
    try:
        version = int(raw_version)
    except ValueError:
        raise BadRequest(f"format-version {raw_version!r} is not a number") from None
    stage = doc.get("stage-create", False)
    if not isinstance(stage, bool):
        raise BadRequest("stage-create must be true or false")
    catalog = call.catalog
    if not catalog.namespace_exists(ident.namespace):
        raise RestError(404, "NoSuchNamespaceException",
                        f"namespace {'.'.join(ident.namespace)} does not exist in catalog "
                        f"{call.catalog_name!r}")
    if stage:
        if catalog.table_exists(ident):
            raise RestError(409, "AlreadyExistsException",
                            f"table {ident} already exists in catalog {call.catalog_name!r}")
        default = catalog.default_table_location(ident)
        md = new_table_metadata(schema, spec, order, location or default, props, version)
        if md.location.rstrip("/") == default.rstrip("/"):  # never a directory elsewhere
            _prepare_staged_location(md.location)
        return call.server.table_result(call.catalog_name, None, md)
    table = catalog.create_table(ident, schema, spec, order, props, location, version)
    call.changes.append(_change(call, "create_table", ident, None, None,
                                table.metadata_location, table.metadata, {}))
    return call.server.table_result(call.catalog_name, table.metadata_location,
                                    table.metadata)


def _prepare_staged_location(location: str) -> None:
    """Make a staged table's ``metadata/`` directory when it is on a local disk. A client may
    write the first snapshot's manifests there before it commits the create (DuckDB 1.5's
    ``CREATE TABLE ... AS`` or ``CREATE TABLE`` then ``INSERT`` in one transaction) and open
    them without making directories; an object store needs none. A failure here is the
    client's to see when it writes, not a reason to refuse the staged create."""
    if not is_local(location):
        return
    try:
        os.makedirs(local_path(location.rstrip("/") + "/" + METADATA_DIR), exist_ok=True)
    except (OSError, ValidationError) as e:
        log.warning("could not make the metadata directory of staged table %s: %s",
                    location, e)


def _snapshots_mode(call: Call) -> str:
    mode = (call.query.get("snapshots") or "all").lower()
    if mode not in ("all", "refs"):
        raise BadRequest(f"snapshots must be 'all' or 'refs', not {mode!r}")
    return mode


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _load_table(call: Call) -> Response:
    mode = _snapshots_mode(call)
    catalog = call.catalog
    location = catalog.metadata_location(call.ident)
    md = catalog.read_metadata(location)
    return call.server.table_result(call.catalog_name, location, md, mode,
                                    if_none_match=call.request.header("if-none-match"))


def _table_exists(call: Call) -> Response:
    if not call.catalog.table_exists(call.ident):
        raise NotFound(f"table {call.ident} does not exist in catalog {call.catalog_name!r}")
    return Response(204)


def _parse_commit(doc: Any, what: str) -> tuple[TableIdentifier | None,
                                                list[TableRequirement], list[TableUpdate]]:
    if isinstance(doc, dict):
        for key in ("requirements", "updates"):
            if key not in doc:
                raise BadRequest(f"{what} has no {key!r} array")
    try:
        raw_ident, requirements, updates = commit_request_from_json(doc)
    except ValidationError as e:
        raise BadRequest(f"{what}: {e}") from None
    ident = None
    if raw_ident is not None:
        ns = tuple(check_name(level, "namespace level") for level in raw_ident[0])
        if not ns:
            raise BadRequest(f"{what}: the identifier's namespace is empty")
        ident = TableIdentifier(ns, check_name(raw_ident[1], "table name"))
    return ident, requirements, updates


def _update_table(call: Call) -> Response:
    ident, requirements, updates = _parse_commit(call.json(), "the commit request")
    if ident is not None and ident != call.ident:
        raise BadRequest(f"the commit request names table {ident}, the path {call.ident}")
    location, md = call.server.commit_table(call, call.ident, requirements, updates)
    return call.server.table_result(call.catalog_name, location, md, load=False)


def _drop_table(call: Call) -> Response:
    purge = _bool_param(call.query.get("purgeRequested"), "purgeRequested")
    catalog = call.catalog
    location = catalog.metadata_location(call.ident)
    try:
        snapshot = catalog.read_metadata(location).current_snapshot_id
    except Exception:  # a table whose metadata cannot be read may still be dropped
        snapshot = None
    change = Change("drop_table", call.catalog_name, call.ident.namespace, call.ident.name,
                    location, None, snapshot, None, {"purge": purge})
    try:
        catalog.drop_table(call.ident, purge=purge)
    except Exception as e:
        _unknown_change(call, change, e)
        raise
    call.changes.append(change)
    return Response(204)


def _unknown_change(call: Call, change: Change, exc: Exception) -> None:
    """Record ``change`` as one whose outcome is unknown when ``exc`` says so (a catalog
    that had the request and failed on it: the audit must keep it)."""
    error = error_for(exc, committing=True)
    if error.type == "CommitStateUnknownException":
        call.changes.append(dataclasses.replace(change, outcome="unknown",
                                                error=error.message))


def _drop_access(request: Request) -> Access:
    value = (request.query.get("purgeRequested") or "").strip().lower()
    return Access.ADMIN if value == "true" else Access.WRITE


def _rename_table(call: Call) -> Response:
    doc = call.json()
    src = identifier_of(doc.get("source"), "source")
    dst = identifier_of(doc.get("destination"), "destination")
    catalog = call.catalog
    if not catalog.namespace_exists(dst.namespace):
        raise RestError(404, "NoSuchNamespaceException",
                        f"namespace {'.'.join(dst.namespace)} does not exist in catalog "
                        f"{call.catalog_name!r}")
    try:
        before = catalog.metadata_location(src)
    except NotFound:
        raise RestError(404, "NoSuchTableException",
                        f"table {src} does not exist in catalog {call.catalog_name!r}"
                        ) from None
    if catalog.table_exists(dst):
        raise RestError(409, "AlreadyExistsException",
                        f"table {dst} already exists in catalog {call.catalog_name!r}")
    try:
        table = catalog.rename_table(src, dst)
    except Exception as e:
        _unknown_change(call, Change("rename_table", call.catalog_name, src.namespace,
                                     src.name, before, detail={"to": str(dst)}), e)
        raise
    call.changes.append(Change(
        "rename_table", call.catalog_name, src.namespace, src.name, before,
        table.metadata_location, table.metadata.current_snapshot_id,
        table.metadata.current_snapshot_id, {"to": str(dst)}))
    return Response(204)


def _register_table(call: Call) -> Response:
    doc = call.json()
    ident = TableIdentifier(call.namespace, check_name(doc.get("name"), "table name"))
    location = doc.get("metadata-location")
    if not isinstance(location, str) or not location:
        raise BadRequest("registerTable needs a metadata-location")
    overwrite = doc.get("overwrite", False)
    if overwrite not in (True, False):
        raise BadRequest("overwrite must be true or false")
    catalog = call.catalog
    if not catalog.namespace_exists(ident.namespace):
        raise RestError(404, "NoSuchNamespaceException",
                        f"namespace {'.'.join(ident.namespace)} does not exist in catalog "
                        f"{call.catalog_name!r}")
    if overwrite:
        raise UnsupportedOperation("registerTable with overwrite: floe registers new names "
                                   "only (drop the table first)")
    if catalog.table_exists(ident):
        raise RestError(409, "AlreadyExistsException",
                        f"table {ident} already exists in catalog {call.catalog_name!r}")
    try:
        table = catalog.register_table(ident, location)
    except NotFound as e:
        raise BadRequest(f"cannot register {ident}: {e}") from None
    call.changes.append(_change(call, "register_table", ident, None, None,
                                table.metadata_location, table.metadata,
                                {"metadata_location": location}))
    return call.server.table_result(call.catalog_name, table.metadata_location,
                                    table.metadata)


def _report_metrics(call: Call) -> Response:
    report = report_from_json(call.json())
    if not call.catalog.table_exists(call.ident):
        raise NotFound(f"table {call.ident} does not exist in catalog {call.catalog_name!r}")
    call.server.record_report(call, report)
    return Response(204)


TableChange = tuple[TableIdentifier, Sequence[TableRequirement], Sequence[TableUpdate]]


def transaction_changes(doc: Mapping[str, Any]) -> list[TableChange]:
    """The tables of a ``CommitTransactionRequest``, read (400 for a malformed one)."""
    raw = doc.get("table-changes")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("a transaction needs a non-empty 'table-changes' array")
    changes: list[TableChange] = []
    for i, item in enumerate(raw):
        ident, requirements, updates = _parse_commit(item, f"table change {i}")
        if ident is None:
            raise BadRequest(f"table change {i} has no identifier")
        changes.append((ident, requirements, updates))
    idents = [c[0] for c in changes]
    if len(set(idents)) != len(idents):
        raise BadRequest("a table may be named once in a transaction")
    return changes


def _commit_transaction(call: Call) -> Response:
    call.server.commit_transaction(call, transaction_changes(call.json()))
    return Response(204)


_PATH_PARAMS: dict[str, dict[str, Any]] = {
    "prefix": {"in": "path", "schema": {"type": "string"},
               "description": "the catalog's name (the prefix /v1/config answers)"},
    "namespace": {"in": "path", "schema": {"type": "string"},
                  "description": "namespace levels joined by %1F"},
    "table": {"in": "path", "schema": {"type": "string"}, "description": "a table name"},
    "plan-id": {"in": "path", "schema": {"type": "string"},
                "description": "the plan-id planTableScan answered"},
}
_QUERY_PARAMS: dict[str, dict[str, Any]] = {
    "warehouse": {"in": "query", "schema": {"type": "string"},
                  "description": "the name of a Floe catalog"},
    "parent": {"in": "query", "schema": {"type": "string"},
               "description": "list the namespaces below this one (levels joined by %1F)"},
    "pageToken": {"in": "query", "schema": {"type": "string"},
                  "description": "the next-page-token of the previous page (empty: the "
                                 "first page)"},
    "pageSize": {"in": "query", "schema": {"type": "integer", "minimum": 1}},
    "snapshots": {"in": "query", "schema": {"type": "string", "enum": ["all", "refs"]}},
    "purgeRequested": {"in": "query", "schema": {"type": "boolean"},
                       "description": "also delete the table's files (admin)"},
}
_HEADER_PARAMS: dict[str, dict[str, Any]] = {
    "Idempotency-Key": {"in": "header", "schema": {"type": "string"},
                        "description": "the same key and request within the lifetime "
                                       "/v1/config advertises: the stored answer"},
    "If-None-Match": {"in": "header", "schema": {"type": "string"},
                      "description": "an ETag: 304 while the table is unchanged"},
}
_ERROR_STATUSES = {400: "bad request", 401: "no or a bad token", 403: "the role does not "
                   "allow it", 404: "not found", 406: "the catalog does not support this "
                   "operation", 409: "conflict", 413: "the request body is larger than the "
                   "server accepts", 422: "an Idempotency-Key used with another request, or "
                   "a change that cannot be applied", 500: "a commit's outcome is unknown",
                   503: "the catalog cannot be reached"}
_PAGED = ("pageToken", "pageSize")

_TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
_ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/config", "getConfig", _get_config, not_found="NoSuchWarehouseException",
          summary="The prefix and endpoints of a catalog", query=("warehouse",)),
    Route("GET", "/v1/{prefix}/namespaces", "listNamespaces", _list_namespaces,
          not_found="NoSuchNamespaceException", summary="List namespaces (paged)",
          query=("parent", *_PAGED)),
    Route("POST", "/v1/{prefix}/namespaces", "createNamespace", _create_namespace,
          Access.ADMIN, changes=True, summary="Create a namespace",
          body="CreateNamespaceRequest"),
    Route("GET", "/v1/{prefix}/namespaces/{namespace}", "loadNamespaceMetadata",
          _load_namespace, not_found="NoSuchNamespaceException",
          summary="A namespace's properties"),
    Route("HEAD", "/v1/{prefix}/namespaces/{namespace}", "namespaceExists",
          _namespace_exists, not_found="NoSuchNamespaceException",
          summary="Whether a namespace exists", success=204),
    Route("DELETE", "/v1/{prefix}/namespaces/{namespace}", "dropNamespace", _drop_namespace,
          Access.ADMIN, changes=True, not_found="NoSuchNamespaceException",
          summary="Drop an empty namespace", success=204),
    Route("POST", "/v1/{prefix}/namespaces/{namespace}/properties", "updateProperties",
          _update_properties, Access.ADMIN, changes=True,
          not_found="NoSuchNamespaceException", summary="Set and remove namespace properties",
          body="UpdateNamespacePropertiesRequest"),
    Route("GET", "/v1/{prefix}/namespaces/{namespace}/tables", "listTables", _list_tables,
          not_found="NoSuchNamespaceException", summary="List tables (paged)", query=_PAGED),
    Route("POST", "/v1/{prefix}/namespaces/{namespace}/tables", "createTable", _create_table,
          Access.WRITE, changes=True, not_found="NoSuchNamespaceException",
          summary="Create a table (stage-create: metadata to commit later)",
          body="CreateTableRequest"),
    Route("POST", "/v1/{prefix}/namespaces/{namespace}/register", "registerTable",
          _register_table, Access.WRITE, changes=True, not_found="NoSuchNamespaceException",
          summary="Register an existing metadata file as a table",
          body="RegisterTableRequest"),
    Route("GET", _TABLE, "loadTable", _load_table, not_found="NoSuchTableException",
          summary="Load a table (ETag; If-None-Match: 304)", query=("snapshots",)),
    Route("HEAD", _TABLE, "tableExists", _table_exists, not_found="NoSuchTableException",
          summary="Whether a table exists", success=204),
    Route("POST", _TABLE, "updateTable", _update_table, Access.WRITE, changes=True,
          not_found="NoSuchTableException",
          summary="Commit requirements and updates to a table", body="CommitTableRequest"),
    Route("DELETE", _TABLE, "dropTable", _drop_table, Access.WRITE, changes=True,
          not_found="NoSuchTableException", access_of=_drop_access,
          summary="Drop a table (purgeRequested: with its files, admin)",
          query=("purgeRequested",), success=204),
    Route("POST", _TABLE + "/metrics", "reportMetrics", _report_metrics,
          not_found="NoSuchTableException",
          summary="Report a scan's or a commit's metrics (kept and shown on the table's "
                  "pages)", body="ReportMetricsRequest", success=204),
    Route("POST", "/v1/{prefix}/tables/rename", "renameTable", _rename_table, Access.WRITE,
          changes=True, not_found="NoSuchTableException", summary="Rename a table",
          body="RenameTableRequest", success=204),
    Route("POST", "/v1/{prefix}/transactions/commit", "commitTransaction",
          _commit_transaction, Access.WRITE, changes=True, not_found="NoSuchTableException",
          summary="Commit to several tables at once (one SQL catalog: atomic)",
          body="CommitTransactionRequest", success=204),
)
