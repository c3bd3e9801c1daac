from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse

from explorer.errors import (
    DatabaseUnavailable,
    as_domain_error,
    domain_error_body,
    domain_error_headers,
    domain_error_status,
)


class DomainErrorMiddleware:
    """Renders floe's domain errors raised by pages, and the database not answering as a 503
    (the API has its own exception handler, driven by the same mapping in explorer.errors)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        error = as_domain_error(exception)
        status = domain_error_status(error)
        if status is None:
            return None
        context = {"status": status, **domain_error_body(error)}
        headers = domain_error_headers(error)
        if isinstance(error, DatabaseUnavailable):
            # without the request's context processors: they ask the database (the user,
            # their roles)
            return HttpResponse(render_to_string("explorer/error.html",
                                                 {**context, "request": request}),
                                status=status, headers=headers)
        response = TemplateResponse(request, "explorer/error.html", context, status=status,
                                    headers=headers)
        return response.render()
