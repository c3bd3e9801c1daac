from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from explorer.errors import domain_error_body, domain_error_headers, domain_error_status


class DomainErrorMiddleware:
    """Renders floe's domain errors raised by pages (the API has its own exception handler,
    driven by the same mapping in explorer.errors)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        status = domain_error_status(exception)
        if status is None:
            return None
        response = TemplateResponse(
            request, "explorer/error.html", {"status": status, **domain_error_body(exception)},
            status=status, headers=domain_error_headers(exception),
        )
        return response.render()
