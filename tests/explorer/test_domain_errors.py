"""The one mapping from floe's errors to HTTP statuses, as pages render it."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from explorer.errors import (
    CatalogUnavailable,
    OutsideWarehouse,
    domain_error_body,
    domain_error_status,
)
from explorer.middleware import DomainErrorMiddleware
from floe import errors


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (errors.NotFound("snapshot 1 does not exist"), 404),
        (errors.ValidationError("bad filter"), 400),
        (errors.CommitConflict("table changed"), 409),
        (errors.CommitStateUnknown("timeout"), 503),
        (errors.MetadataError("/w/t/metadata/v1.metadata.json", "malformed JSON"), 422),
        (errors.UnsupportedFormatVersion("/w/t/metadata/v1.metadata.json", "format-version 9"), 422),
        (OutsideWarehouse("/elsewhere/v1.metadata.json", "outside the warehouse"), 422),
        (CatalogUnavailable("catalog 'prod' is unavailable: connection refused"), 503),
        (ValueError("not ours"), None),
        (KeyError("bug"), None),
    ],
)
def test_status_for_each_domain_error(exc: Exception, status: int | None) -> None:
    assert domain_error_status(exc) == status


def test_a_metadata_error_body_names_the_file() -> None:
    body = domain_error_body(errors.MetadataError("/w/t/metadata/v1.metadata.json", "truncated"))
    assert body == {
        "detail": "/w/t/metadata/v1.metadata.json: truncated",
        "error": "MetadataError",
        "location": "/w/t/metadata/v1.metadata.json",
    }


@pytest.mark.django_db
def test_pages_render_domain_errors_with_their_status() -> None:
    middleware = DomainErrorMiddleware(lambda request: None)  # type: ignore[arg-type, return-value]
    request = RequestFactory().get("/")
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    response = middleware.process_exception(request, errors.NotFound("table ns.t does not exist"))
    assert response is not None and response.status_code == 404
    assert "table ns.t does not exist" in response.content.decode()
    assert middleware.process_exception(request, RuntimeError("bug")) is None
