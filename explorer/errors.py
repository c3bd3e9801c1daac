"""The one mapping from floe's domain errors to HTTP statuses, for pages and the API alike,
and the errors the explorer adds to floe's."""

from __future__ import annotations

from typing import Any

from floe import errors


class OutsideWarehouse(errors.MetadataError):
    """A file a table names resolves outside its catalog's warehouse (symlinks resolved): not
    read. The same error, and status, wherever it happens (explorer.catalogs.WarehouseIO)."""


class CatalogUnavailable(errors.FloeError):
    """A catalog cannot be used right now (its database does not answer, the catalog file is
    broken); the message says which and why."""


class Forbidden(errors.FloeError):
    """The user's role on the catalog does not allow this (explorer.permissions decides);
    the message names the role needed and the catalog."""


class RateLimited(errors.FloeError):
    """Too many expensive reads (plans, previews, exports) in the last minute; the message
    says when to try again."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TaskParamsInvalid(errors.ValidationError):
    """A task's parameter is missing or wrong (400): ``param`` names it, so forms and API
    clients can show the message next to the field."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class AccessInvalid(errors.ValidationError):
    """A user, role or token change that cannot be made as asked (400): ``param`` names the
    field (``user``, ``password``, ``catalog``, ``role``, ``active``), so the page shows the
    message next to it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class TableChangedSinceDryRun(errors.FloeError):
    """A confirm step refused to run: the table is no longer at the metadata file its dry
    run planned from, or the plan is no longer the dry run's (409; run the dry run again).
    Not a CommitConflict: the commit loop must not retry it."""


# First match wins: subclasses before their bases.
_STATUS_BY_ERROR: tuple[tuple[type[errors.FloeError], int], ...] = (
    (CatalogUnavailable, 503),
    (Forbidden, 403),
    (RateLimited, 429),
    (TableChangedSinceDryRun, 409),
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
    if isinstance(exc, TaskParamsInvalid):
        if exc.param == "kind":
            body["kind"] = [str(exc)]
        else:
            body["params"] = {exc.param: [str(exc)]}
    return body


def domain_error_headers(exc: BaseException) -> dict[str, str]:
    """Headers that go with the status (``Retry-After`` for a rate limit)."""
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    return {}
