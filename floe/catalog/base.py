"""The catalog contract: names → tables, and the one commit primitive (spec "Metastore Tables",
"File System Tables").

A catalog maps a :class:`TableIdentifier` to the location of the table's current metadata file
and swaps that pointer atomically. Everything else a write needs (updates, requirements, the
retry loop, snapshot production) lives in :mod:`floe.table` and talks to a catalog only
through :meth:`Catalog._commit`, so the same transaction runs against a file-system table and
a SQL pointer table.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from floe.cache import LRUCache
from floe.errors import FloeError, NotFound, ValidationError
from floe.io import FileIO
from floe.metadata import TableMetadata, new_table_metadata, parse_metadata
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.properties import DELETE_AFTER_COMMIT, DELETE_AFTER_COMMIT_DEFAULT, bool_property
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder

if TYPE_CHECKING:
    from floe.table import Table
    from floe.table.updates import TableRequirement, TableUpdate

__all__ = [
    "Catalog",
    "Namespace",
    "NamespaceAlreadyExists",
    "NamespaceNotEmpty",
    "TableAlreadyExists",
    "TableCommit",
    "TableIdentifier",
    "read_metadata",
    "remember_metadata",
    "UnsupportedOperation",
    "validate_name",
    "to_namespace",
]


Namespace = tuple[str, ...]



class TableAlreadyExists(ValidationError):
    """``create_table`` / ``register_table`` / ``rename_table`` onto a name that is taken."""


class NamespaceAlreadyExists(ValidationError):
    """``create_namespace`` of a namespace that exists."""


class NamespaceNotEmpty(ValidationError):
    """``drop_namespace`` of a namespace that still holds tables or namespaces."""


class UnsupportedOperation(FloeError):
    """The catalog cannot do this (e.g. renaming a file-system table)."""


def validate_name(part: str, what: str = "name") -> str:
    """A namespace level or table name that is safe as a directory name.

    Rejects empty names, ``/``, ``\\``, ``..``, NUL and a leading ``.`` (hidden files and
    path traversal), before anything is read or written.
    """
    if not isinstance(part, str) or not part:
        raise ValidationError(f"invalid {what} {part!r}: must be a non-empty string")
    if "/" in part or "\\" in part or "\x00" in part or ".." in part or part.startswith("."):
        raise ValidationError(
            f"invalid {what} {part!r}: must not contain '/', '\\', '..' or NUL, nor start "
            f"with '.'"
        )
    return part


def to_namespace(ns: str | Iterable[str]) -> Namespace:
    """``"a.b"`` or ``("a", "b")`` → ``("a", "b")``, each level validated."""
    levels = tuple(ns.split(".")) if isinstance(ns, str) else tuple(ns)
    return tuple(validate_name(level, "namespace") for level in levels)


@dataclass(frozen=True, slots=True)
class TableIdentifier:
    """A table's name in a catalog: a namespace (one or more levels) and a table name."""

    namespace: Namespace
    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.namespace, tuple):
            object.__setattr__(self, "namespace", to_namespace(self.namespace))
        else:
            to_namespace(self.namespace)
        validate_name(self.name, "table name")

    @classmethod
    def parse(cls, text: str) -> TableIdentifier:
        """``"db.events"`` or ``"a.b.events"``: the last level is the table name."""
        parts = text.split(".")
        if len(parts) < 2:
            raise ValidationError(
                f"invalid table identifier {text!r}: expected namespace.table")
        return cls(tuple(parts[:-1]), parts[-1])

    @classmethod
    def of(cls, ident: TableIdentifier | str | tuple[str, ...]) -> TableIdentifier:
        if isinstance(ident, TableIdentifier):
            return ident
        if isinstance(ident, str):
            return cls.parse(ident)
        if len(ident) < 2:
            raise ValidationError(f"invalid table identifier {ident!r}: expected namespace + name")
        return cls(tuple(ident[:-1]), ident[-1])

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.name))


def new_metadata_file_name(version: int) -> str:
    """Metastore-style metadata file name ``<NNNNN>-<uuid>.metadata.json`` (Java's
    ``BaseMetastoreTableOperations``)."""
    return f"{version:05d}-{uuid.uuid4()}.metadata.json"


#: Parsed metadata files by (location, FileIO.identity), shared by every reader of the
#: process (the explorer sizes it with FLOE_METADATA_CACHE_SIZE).
METADATA_CACHE: LRUCache[tuple[str, object], TableMetadata] = LRUCache(256)


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """The metadata file at ``location``, parsed once per process: a metadata file never
    changes, and one written again at the same location (a file-system table dropped and
    created again) has another identity. ``io`` guards the location first, also when the
    parse is cached (the explorer's warehouse confinement)."""
    io.guard(location)
    key = (location, io.identity(location))
    return METADATA_CACHE.get_or_load(key, lambda: parse_metadata(io.read(location), location))


def remember_metadata(io: FileIO, location: str, md: TableMetadata) -> None:
    """Put ``md``, just written to ``location``, in :data:`METADATA_CACHE`: the next read of
    the table (the next commit's base, a REST client's load) does not parse the file it came
    from (a metadata file parses back to an equal object)."""
    identity = io.identity(location)
    if identity is not None:
        METADATA_CACHE.put((location, identity), md)


@dataclass(frozen=True, slots=True)
class TableCommit:
    """One table's part of :meth:`Catalog.commit_tables`: its new metadata, made on ``base``
    read from ``base_location`` (both None: the table is created)."""

    ident: TableIdentifier
    base_location: str | None
    base: TableMetadata | None
    new_metadata: TableMetadata


class Catalog(ABC):
    """Names → tables. Subclasses implement storage of namespaces and the pointer swap.

    ``_commit(ident, base_location, new_metadata)`` is the only write primitive the
    transaction machinery uses: it stores ``new_metadata`` as a new file and makes it
    current *only if* the current pointer is still ``base_location`` (``None`` = the table
    must not exist yet). It raises :class:`~floe.errors.CommitConflict` when the pointer
    moved and :class:`~floe.errors.CommitStateUnknown` when the swap was attempted but its
    outcome is unknown (then nothing written may be deleted).
    """

    def __init__(self, name: str, io: FileIO | None = None) -> None:
        self.name = name
        self.io = io if io is not None else FileIO()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- namespaces ----------------------------------------------------------------------

    @abstractmethod
    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """Namespaces directly under ``parent`` (top level for ``()``)."""

    @abstractmethod
    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace; TableAlreadyExists-style ValidationError when it exists."""

    @abstractmethod
    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace; NotFound when missing, ValidationError when not empty."""

    @abstractmethod
    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """Properties of a namespace; NotFound when missing."""

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        try:
            self.load_namespace_properties(namespace)
        except NotFound:
            return False
        return True

    # -- tables --------------------------------------------------------------------------

    @abstractmethod
    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        """Tables directly in a namespace, sorted by name."""

    @abstractmethod
    def metadata_location(self, ident: TableIdentifier | str) -> str:
        """Location of the table's current metadata file; NotFound when there is no table."""

    @abstractmethod
    def default_table_location(self, ident: TableIdentifier) -> str:
        """Where ``create_table`` puts a table when no location is given."""

    @abstractmethod
    def drop_table(self, ident: TableIdentifier | str, purge: bool = False) -> None:
        """Forget a table; with ``purge`` also delete its data and metadata files."""

    @abstractmethod
    def register_table(self, ident: TableIdentifier | str, metadata_location: str) -> Table:
        """Make an existing metadata file the current metadata of a new table name."""

    def rename_table(self, src: TableIdentifier | str, dst: TableIdentifier | str) -> Table:
        raise UnsupportedOperation(f"catalog {self.name!r} ({type(self).__name__}) cannot "
                                   f"rename tables")

    @abstractmethod
    def _commit(
        self, ident: TableIdentifier, base_location: str | None, new_metadata: TableMetadata
    ) -> str:
        """Write ``new_metadata`` and swap the pointer from ``base_location``; return the new
        metadata location. See the class docstring for the errors."""

    # -- shared behaviour ----------------------------------------------------------------

    def read_metadata(self, location: str) -> TableMetadata:
        """The metadata file at ``location`` (:func:`read_metadata` with this catalog's io)."""
        return read_metadata(self.io, location)

    def load_table(self, ident: TableIdentifier | str) -> Table:
        """The table at its current metadata file (a new handle: a commit refreshes the
        handle it was made on)."""
        from floe.table import Table

        ident = TableIdentifier.of(ident)
        location = self.metadata_location(ident)
        return Table(self, ident, self.read_metadata(location), location)

    def table_exists(self, ident: TableIdentifier | str) -> bool:
        try:
            self.metadata_location(TableIdentifier.of(ident))
        except NotFound:
            return False
        return True

    def create_table(
        self,
        ident: TableIdentifier | str,
        schema: Schema,
        spec: PartitionSpec = UNPARTITIONED,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        format_version: int = 2,
    ) -> Table:
        """Create an empty table (Java ``TableMetadata.newTableMetadata``): fresh field ids,
        spec 0, sort order 1; TableAlreadyExists when the name is taken."""
        from floe.table import Table

        ident = TableIdentifier.of(ident)
        if self.table_exists(ident):
            raise TableAlreadyExists(f"table {ident} already exists in catalog {self.name!r}")
        table_location = (location or self.default_table_location(ident)).rstrip("/")
        metadata = new_table_metadata(
            schema, spec, sort_order, table_location, properties, format_version
        )
        new_location = self.commit_metadata(ident, None, None, metadata)
        return Table(self, ident, metadata, new_location)

    def commit_updates(
        self,
        ident: TableIdentifier,
        base_location: str,
        base: TableMetadata,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> tuple[str, TableMetadata]:
        """Commit ``updates`` made on ``base`` (read from ``base_location``), which
        ``requirements`` must still hold for; return the new metadata location and the
        metadata committed. :meth:`floe.table.transaction.Transaction.commit` calls it, once
        per attempt. A catalog that stores metadata files itself folds the updates over
        ``base`` here and swaps the pointer (:meth:`commit_metadata`); the caller has already
        checked ``requirements`` against ``base``, and the pointer swap makes sure ``base``
        is still current. A catalog that applies updates itself (REST) sends them with the
        requirements instead. Errors as for :meth:`_commit`."""
        from floe.table.updates import apply_updates

        new_metadata = apply_updates(base, updates, base_location)
        return self.commit_metadata(ident, base_location, base, new_metadata), new_metadata

    def commit_metadata(
        self,
        ident: TableIdentifier,
        base_location: str | None,
        base: TableMetadata | None,
        new_metadata: TableMetadata,
    ) -> str:
        """:meth:`_commit`, then delete metadata files that fell off the metadata log when
        ``write.metadata.delete-after-commit.enabled`` (Java
        ``deleteRemovedMetadataFiles``; failures to delete are only logged)."""
        location = self._commit(ident, base_location, new_metadata)
        remember_metadata(self.io, location, new_metadata)
        self._delete_removed_metadata(base, new_metadata)
        return location

    def _delete_removed_metadata(self, base: TableMetadata | None,
                                 new_metadata: TableMetadata) -> None:
        if base is None or not bool_property(
                new_metadata, DELETE_AFTER_COMMIT, DELETE_AFTER_COMMIT_DEFAULT):
            return
        kept = {e.metadata_file for e in new_metadata.metadata_log}
        for entry in base.metadata_log:
            if entry.metadata_file not in kept:
                try:
                    self.io.delete(entry.metadata_file, missing_ok=True)
                except (OSError, FloeError) as e:
                    import logging  # here: a read-only process never imports it

                    logging.getLogger(__name__).warning(
                        "could not delete old metadata file %s: %s", entry.metadata_file, e)

    def create_table_from_metadata(self, ident: TableIdentifier | str,
                                   metadata: TableMetadata) -> str:
        """Create a table whose first metadata is ``metadata``, built elsewhere (a REST
        client's staged create: its updates folded over empty metadata); return its metadata
        location. TableAlreadyExists when the name is taken; a catalog that keeps tables in
        fixed places (file-system) refuses metadata whose location is not that place."""
        ident = TableIdentifier.of(ident)
        if self.table_exists(ident):
            raise TableAlreadyExists(f"table {ident} already exists in catalog {self.name!r}")
        return self.commit_metadata(ident, None, None, metadata)

    @property
    def commits_tables_atomically(self) -> bool:
        """Whether :meth:`commit_tables` takes changes to several tables (all or none)."""
        return False

    def commit_tables(self, commits: Sequence[TableCommit]) -> list[str]:
        """Commit new metadata to several tables at once, all or none: each pointer swaps
        from its ``base_location`` (None: the table is created) only if every one can; the
        new metadata locations in order. Errors as for :meth:`_commit` (CommitConflict: no
        table changed). Only catalogs with :attr:`commits_tables_atomically` (SQL: one
        database transaction) take more than one; this base commits a single one and
        refuses more (UnsupportedOperation)."""
        if len(commits) != 1:
            raise UnsupportedOperation(
                f"catalog {self.name!r} ({type(self).__name__}) cannot commit "
                f"{len(commits)} tables atomically: commit each table on its own")
        c = commits[0]
        if c.base_location is None:
            return [self.create_table_from_metadata(c.ident, c.new_metadata)]
        return [self.commit_metadata(c.ident, c.base_location, c.base, c.new_metadata)]

    def purge_table_files(self, metadata_location: str, metadata: TableMetadata) -> None:
        """Delete every file the table's metadata reaches: data and delete files, manifests,
        manifest lists, statistics files, logged metadata files and the current one (Java
        ``CatalogUtil.dropTableData``). Missing files are skipped."""
        from floe.reachable import delete_files, reachable_files

        reached = reachable_files(self.io, metadata, metadata_location=metadata_location,
                                  include_deleted_entries=True, missing_ok=True)
        for group in (reached.content_files, reached.manifests, reached.statistics_files,
                      reached.manifest_lists, reached.metadata_files - {metadata_location},
                      {metadata_location}):
            failed = delete_files(self.io, sorted(group))
            if failed:  # the next group holds the only record of these: keep it
                raise FloeError(f"purging table files: could not delete {len(failed)} of "
                                f"them, e.g. {failed[0][0]}: {failed[0][1]}")

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Release connections (SQL catalogs); nothing for a file-system catalog."""
