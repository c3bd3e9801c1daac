from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from explorer.errors import domain_error_body, domain_error_headers, domain_error_status


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler plus floe's domain errors, mapped once in explorer.errors."""
    status = domain_error_status(exc)
    if status is not None:
        return Response(domain_error_body(exc), status=status, headers=domain_error_headers(exc))
    return drf_exception_handler(exc, context)
