"""The Iceberg REST catalog protocol served from floe catalogs (no web framework): see
:mod:`floe.rest_server.server` for what is served and how commits are applied,
:mod:`floe.rest_server.errors` for the error model, :mod:`floe.rest_server.idempotency` for
``Idempotency-Key``, :mod:`floe.rest_server.planning` for server-side scan planning. A web
layer authenticates, builds a :class:`Request`, calls :meth:`RestServer.handle` with an
``authorize`` callback, writes the :class:`Response` and audits its
:attr:`Response.changes`; the metrics reports engines send go to the ``reports`` sink it
gives (:mod:`floe.rest_server.metrics`)."""

from floe.rest_server.errors import (
    BadRequest,
    CommitFailed,
    CommitStateUnknownError,
    Forbidden,
    NotAuthorized,
    RestError,
    error_for,
)
from floe.rest_server.idempotency import IdempotencyStore
from floe.rest_server.metrics import MetricsReport, report_from_json
from floe.rest_server.server import (
    Access,
    Call,
    Change,
    Operation,
    ReportSink,
    Request,
    Response,
    RestServer,
    Route,
    json_response,
)

__all__ = [
    "Access",
    "BadRequest",
    "Call",
    "Change",
    "CommitFailed",
    "CommitStateUnknownError",
    "Forbidden",
    "IdempotencyStore",
    "MetricsReport",
    "NotAuthorized",
    "Operation",
    "ReportSink",
    "Request",
    "Response",
    "RestError",
    "RestServer",
    "Route",
    "error_for",
    "json_response",
    "report_from_json",
]
