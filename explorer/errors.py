"""The one mapping from floe's domain errors to HTTP statuses, for pages and the API alike,
and the two errors the explorer adds to floe's."""

from __future__ import annotations

from typing import Any

from floe import errors


class OutsideWarehouse(errors.MetadataError):
    """A file a table names resolves outside its catalog's warehouse (symlinks resolved): not
    read. The same error, and status, wherever it happens (explorer.catalogs.WarehouseIO)."""


class CatalogUnavailable(errors.FloeError):
    """A catalog cannot be used right now (its database does not answer, the catalog file is
    broken); the message says which and why."""


# First match wins: subclasses before their bases.
_STATUS_BY_ERROR: tuple[tuple[type[errors.FloeError], int], ...] = (
    (CatalogUnavailable, 503),
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
