"""The one mapping from floe's domain errors to HTTP statuses, for pages and the API alike,
and the errors the explorer adds to floe's.

The body of an error (the API's JSON, the error page's context) is one shape: ``error``, the
error's class name, which says what went wrong (``Forbidden``, ``NotFound``,
``FilterTooDeep``, ``InvalidArgument``...), and ``detail``, a sentence; ``param`` when one
input is at fault (the query parameter or field it came as), ``location`` when a file cannot
be read, ``limit`` (bytes) when a request body is too large, and, for a task submission, the
message under ``kind`` or ``params`` (``{"params": {"filter": ["..."]}}``) as a form shows it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import InterfaceError, OperationalError

from floe import errors
from floe.catalog.base import UnsupportedOperation
from floe.catalog.config import redact
from floe.scan.readers import UnsupportedDeletes


class OutsideWarehouse(errors.MetadataError):
    """A file a table names resolves outside its catalog's warehouse (symlinks resolved): not
    read. The same error, and status, wherever it happens (explorer.catalogs.WarehouseIO)."""


class TableMoved(errors.MetadataError):
    """A file named by a table whose metadata points to where the table no longer lives (its
    directory was moved or copied without rewriting its metadata, which names every file by
    its absolute path), and that place is outside the warehouse or gone: not read. The
    message says where the metadata points (explorer.catalogs.WarehouseIO)."""


class CatalogUnavailable(errors.CatalogUnavailable):
    """A catalog cannot be used right now (its database does not answer, its entry or the
    catalog file is broken); the message says which and why."""


class DatabaseUnavailable(errors.FloeError):
    """The explorer's own database does not answer (restarting, unreachable, locked): 503
    with ``Retry-After``; the next request after it answers again is served as usual (a
    dead connection is replaced, settings.CONN_HEALTH_CHECKS)."""


#: Seconds a client is asked to wait before asking again after a DatabaseUnavailable.
DATABASE_RETRY_AFTER = 5

_log = logging.getLogger(__name__)


def as_domain_error(exc: Exception) -> Exception:
    """``exc``, or the domain error it stands for: the database's connection errors (Django's
    OperationalError, InterfaceError) are DatabaseUnavailable, logged here in one line (the
    driver's text names hosts and users: not shown to the client)."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        _log.warning("the database does not answer: %s: %s", type(exc).__name__,
                     " ".join(str(exc).split()))
        return DatabaseUnavailable("the explorer's database does not answer right now (it "
                                   "may be restarting); try again in a few seconds")
    return exc


class Forbidden(errors.FloeError):
    """The user's role on the catalog does not allow this (explorer.access.permissions decides);
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


class PolicyInvalid(errors.ValidationError):
    """A maintenance policy that cannot be stored as given (400): ``param`` names the field
    (``name``, ``action``, ``catalog``, ``tables``, ``params.<key>``, ``every_seconds``,
    ``window``); nothing is stored."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class RequestTooLarge(errors.FloeError):
    """A request body larger than the site accepts (Django's DATA_UPLOAD_MAX_MEMORY_SIZE); the
    message says the limit, ``limit`` is it in bytes (413)."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class TableChangedSinceDryRun(errors.FloeError):
    """A confirm step refused to run: the table is no longer at the metadata file its dry
    run planned from, or the plan is no longer the dry run's (409; run the dry run again).
    Not a CommitConflict: the commit loop must not retry it."""


# First match wins: subclasses before their bases.
_STATUS_BY_ERROR: tuple[tuple[type[errors.FloeError], int], ...] = (
    (errors.CatalogUnavailable, 503),  # explorer's CatalogUnavailable too
    (DatabaseUnavailable, 503),
    (Forbidden, 403),
    (RequestTooLarge, 413),
    (RateLimited, 429),
    (TableChangedSinceDryRun, 409),
    (errors.NotFound, 404),
    (errors.ValidationError, 400),
    (errors.CommitConflict, 409),
    (errors.CommitStateUnknown, 503),
    # The request was fine; a file it needs cannot be read. The message names the file.
    (errors.MetadataError, 422),
    # The request was fine; floe cannot do it for this table or catalog (deletes it cannot
    # apply, a rename a file-system catalog cannot make). The message says what.
    (UnsupportedDeletes, 422),
    (UnsupportedOperation, 422),
)


def domain_error_status(exc: BaseException) -> int | None:
    """The HTTP status for a floe error, or None for anything that is not one."""
    for error_type, status in _STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            return status
    return None


def domain_error_body(exc: BaseException) -> dict[str, Any]:
    """The error's body (the module's one shape)."""
    body: dict[str, Any] = {"error": type(exc).__name__, "detail": redact(str(exc))}
    param = getattr(exc, "param", None) or getattr(exc, "argument", None)
    if isinstance(param, str):
        body["param"] = param
    if isinstance(exc, errors.MetadataError):
        body["location"] = exc.location
    if isinstance(exc, RequestTooLarge):
        body["limit"] = exc.limit
    if isinstance(exc, TaskParamsInvalid):
        if exc.param == "kind":
            body["kind"] = [str(exc)]
        else:
            body["params"] = {exc.param: [str(exc)]}
    return body


def domain_error_headers(exc: BaseException) -> dict[str, str]:
    """Headers that go with the status (``Retry-After`` for a rate limit and an unavailable
    database)."""
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, DatabaseUnavailable):
        return {"Retry-After": str(DATABASE_RETRY_AFTER)}
    return {}
