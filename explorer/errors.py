"""The one mapping from floe's domain errors to HTTP statuses, for pages and the API alike."""

from __future__ import annotations

from typing import Any

from floe import errors

# First match wins: subclasses before their bases.
_STATUS_BY_ERROR: tuple[tuple[type[errors.FloeError], int], ...] = (
    (errors.NotFound, 404),
    (errors.ValidationError, 400),
    (errors.CommitConflict, 409),
    (errors.CommitStateUnknown, 503),
    # The request was fine; a file it needs cannot be read. The message names the file.
    (errors.MetadataError, 422),
)


def domain_error_status(exc: BaseException) -> int | None:
    """The HTTP status for a floe error, or None for anything that is not one."""
    for error_type, status in _STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            return status
    return None


def domain_error_body(exc: BaseException) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": str(exc), "error": type(exc).__name__}
    if isinstance(exc, errors.MetadataError):
        body["location"] = exc.location
    return body
