"""Every API error as one JSON shape (explorer.errors): ``error`` names what went wrong,
``detail`` says it in a sentence, and the status comes from the one mapping there.

floe's domain errors map directly; the database not answering is DatabaseUnavailable (503
with Retry-After). Django's refusal of a body over DATA_UPLOAD_MAX_MEMORY_SIZE
(a 400 HTML page before) becomes RequestTooLarge, a 413 naming the limit. DRF's own errors
keep DRF's status and get the shape: ``error`` is DRF's class name (``NotAuthenticated``,
``AuthenticationFailed``, ``MethodNotAllowed``, ``UnsupportedMediaType``, ``ParseError``...),
except that a refusal by role is ``Forbidden`` like the services' and a missing object
``NotFound``; a serializer's field errors stay under their fields, ``detail`` joins them.
Anything else is a bug: logged with its traceback, answered as ``InternalError`` (500) in the
same shape, without the exception's text (it may name files or settings).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from explorer.errors import (
    RequestTooLarge,
    as_domain_error,
    domain_error_body,
    domain_error_headers,
    domain_error_status,
)
from explorer.units import size_text

log = logging.getLogger(__name__)

#: DRF errors whose class name would not say what the rest of the API says.
_NAMES: dict[type[BaseException], str] = {
    exceptions.PermissionDenied: "Forbidden",
    Http404: "NotFound",
}


def _too_large() -> RequestTooLarge:
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return RequestTooLarge(f"the request body is larger than the {size_text(limit)} "
                           f"({limit:,} bytes) the API accepts", limit)


def _messages(data: Any, where: str = "") -> list[str]:
    """A serializer's errors as "field: message" lines (nested fields dotted)."""
    if isinstance(data, dict):
        return [m for k, v in data.items()
                for m in _messages(v, f"{where}.{k}" if where else str(k))]
    if isinstance(data, list):
        return [m for v in data for m in _messages(v, where)]
    return [f"{where}: {data}" if where and where != "non_field_errors" else str(data)]


def _drf_body(exc: BaseException, data: Any) -> dict[str, Any]:
    name = next((n for t, n in _NAMES.items() if isinstance(exc, t)), type(exc).__name__)
    if isinstance(exc, exceptions.ValidationError):
        fields = data if isinstance(data, dict) else {"non_field_errors": data}
        return {"error": name, "detail": "; ".join(_messages(fields)), **fields}
    detail = data.get("detail", "") if isinstance(data, dict) else data
    return {"error": name, "detail": str(detail)}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The API's exception handler (REST_FRAMEWORK["EXCEPTION_HANDLER"])."""
    if isinstance(exc, RequestDataTooBig):
        exc = _too_large()
    exc = as_domain_error(exc)
    status = domain_error_status(exc)
    if status is not None:
        return Response(domain_error_body(exc), status=status, headers=domain_error_headers(exc))
    response = drf_exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        log.error("unexpected error answering %s %s", getattr(request, "method", "?"),
                  getattr(request, "path", "?"), exc_info=exc)
        return Response({"error": "InternalError",
                         "detail": "the server failed to answer this request; the error is "
                                   "in the server's log"}, status=500)
    response.data = _drf_body(exc, response.data)
    return response
