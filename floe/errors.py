"""Errors raised by floe. Every error names the file or object it is about."""

from __future__ import annotations


class FloeError(Exception):
    """Base class of every error floe raises on purpose."""


class ValidationError(FloeError, ValueError):
    """Input that does not follow the Iceberg spec (bad type string, bad field id, ...)."""


class InvalidArgument(ValidationError):
    """A bad argument of a floe operation: ``argument`` names the keyword it was given as, so
    a caller can show the message next to the input it came from. The checks an operation
    makes before any heavy work raise it (``check_*`` functions a caller may run first)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


class FilterInvalid(ValidationError):
    """A filter that does not parse (the message names the position) or does not bind to the
    schema (an unknown column, a value that is not of the column's type, ...)."""


class FilterTooDeep(FilterInvalid):
    """A filter nests more levels than floe walks (floe.expressions.MAX_DEPTH): refused whole,
    with the same message wherever it is typed."""


class MetadataError(FloeError):
    """A metadata, manifest list or manifest file that cannot be read.

    The message always starts with the file's location so a user knows which file is broken.
    """

    def __init__(self, location: str, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{location}: {problem}")


class UnsupportedFormatVersion(MetadataError):
    """A table metadata file whose format-version floe does not know."""


class NotFound(FloeError, LookupError):
    """A table, snapshot, ref, schema or file that does not exist."""


class StoreUnavailable(FloeError):
    """An object store that cannot be used now: it refuses the credentials, does not answer
    in time, or keeps failing after the retries. The message names the location, never a
    secret."""


class CatalogUnavailable(FloeError):
    """A catalog that cannot be used now: its database or server cannot be reached or
    refuses the credentials. One line naming the catalog, never a secret."""


class CommitConflict(FloeError):
    """Another writer changed the table first; the commit may be retried."""


class CommitNotApplied(FloeError):
    """The catalog certainly did not take the commit (its database refused the write, the
    metadata file could not be stored): nothing was published, and the files written for
    it are deleted. Not retried: the cause (a read-only database, a full disk) stays."""


class OutcomeUnknown(FloeError):
    """A write whose answer was lost (a timeout, a dropped connection, a server that failed
    mid-request): it may or may not have happened."""


class CommitStateUnknown(OutcomeUnknown):
    """The commit may or may not have happened; written files must not be deleted."""
