"""The REST catalog protocol's error model: every refusal is ``{"error": {"message", "type",
"code"}}`` (the OpenAPI spec's ``IcebergErrorResponse``), with Java's exception names as
``type`` (clients map the status, the type says what it was), and the one mapping of floe's
errors to statuses for the served protocol.
"""

from __future__ import annotations

import logging

from floe.catalog.base import (
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableAlreadyExists,
    UnsupportedOperation,
)
from floe.catalog.config import redact
from floe.catalog.rest import CommitRefused
from floe.errors import (
    CatalogUnavailable,
    CommitConflict,
    FloeError,
    MetadataError,
    NotFound,
    OutcomeUnknown,
    StoreUnavailable,
    ValidationError,
)
from floe.table.updates import StaleUpdate

__all__ = [
    "BadRequest",
    "CommitFailed",
    "CommitStateUnknownError",
    "Forbidden",
    "NotAuthorized",
    "RestError",
    "error_for",
    "one_line",
]

log = logging.getLogger("floe.rest_server")

#: How long a message may be (a request's values are quoted in some).
MESSAGE_LIMIT = 1000


def one_line(text: str) -> str:
    """A message as one line, secrets hidden (floe.catalog.config.redact), bounded."""
    return " ".join(redact(text).split())[:MESSAGE_LIMIT]


class RestError(Exception):
    """A refusal or failure answered in the spec's error model."""

    def __init__(self, status: int, type_: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = one_line(message)

    def to_json(self) -> dict[str, object]:
        return {"error": {"message": self.message, "type": self.type, "code": self.status}}


class BadRequest(RestError):
    """400: the request is malformed (JSON, a field, a name, an unknown update)."""

    def __init__(self, message: str) -> None:
        super().__init__(400, "BadRequestException", message)


class NotAuthorized(RestError):
    """401: no credentials, or ones that are not (or no longer) valid."""

    def __init__(self, message: str) -> None:
        super().__init__(401, "NotAuthorizedException", message)


class Forbidden(RestError):
    """403: authenticated, but the role on the catalog does not allow the operation."""

    def __init__(self, message: str) -> None:
        super().__init__(403, "ForbiddenException", message)


class CommitFailed(RestError):
    """409: a requirement does not hold (the client may retry on fresh metadata)."""

    def __init__(self, message: str) -> None:
        super().__init__(409, "CommitFailedException", message)


class CommitStateUnknownError(RestError):
    """500: the commit may or may not have happened."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "CommitStateUnknownException", message)


def error_for(exc: BaseException, *, not_found: str = "NotFoundException",
              committing: bool = False) -> RestError:
    """The answer for an error raised while serving a request. ``not_found`` is the type of
    a NotFound (``NoSuchTableException``, ``NoSuchNamespaceException``...); ``committing``:
    the request changes a table, so a failure whose effect is unknown is a 500
    ``CommitStateUnknownException`` (never a 503, which says nothing happened)."""
    if isinstance(exc, RestError):
        return exc
    text = str(exc) or type(exc).__name__
    if isinstance(exc, NamespaceNotEmpty):
        return RestError(409, "NamespaceNotEmptyException", text)
    if isinstance(exc, NamespaceAlreadyExists | TableAlreadyExists):
        return RestError(409, "AlreadyExistsException", text)
    if isinstance(exc, NotFound):
        return RestError(404, not_found, text)
    if isinstance(exc, StaleUpdate | CommitConflict):
        return CommitFailed(text)
    if isinstance(exc, OutcomeUnknown):  # CommitStateUnknown and a store's lost answer
        return CommitStateUnknownError(text)
    if isinstance(exc, CatalogUnavailable | StoreUnavailable) or (
            type(exc).__module__.startswith("sqlalchemy") and not committing):
        return RestError(503, "ServiceUnavailableException", text)
    if isinstance(exc, UnsupportedOperation):
        return RestError(406, "UnsupportedOperationException", text)
    if isinstance(exc, CommitRefused):  # a catalog behind this one refused: its answer
        return RestError(exc.status, exc.error_type, text)
    if isinstance(exc, MetadataError):  # a file the request needs cannot be read
        return RestError(422, "UnprocessableEntityException", text)
    if isinstance(exc, ValidationError):
        return BadRequest(text)
    if committing:
        log.exception("a commit failed unexpectedly; its outcome is unknown")
        return CommitStateUnknownError(
            f"the commit failed on the server and may or may not have happened "
            f"({type(exc).__name__}: {text})")
    if isinstance(exc, FloeError):
        return RestError(500, "ServerErrorException", text)
    log.exception("an Iceberg REST request failed")
    return RestError(500, "ServerErrorException",
                     f"the server failed ({type(exc).__name__}); see its log")

