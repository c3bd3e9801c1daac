"""Find a table's current metadata file in a directory (spec "File System Tables").

Two layouts exist in the wild:

* Hadoop tables (spec "File System Tables"): ``metadata/v<N>.metadata.json`` (also
  ``v<N>.gz.metadata.json`` and the older ``v<N>.metadata.json.gz``) plus
  ``metadata/version-hint.text`` holding the latest ``N``. The hint is written after the
  metadata file, so it may lag behind: Java's ``HadoopTableOperations`` reads it and then
  probes ``N+1, N+2, ...``; when it is missing or unreadable it lists the directory.
* Metastore tables (Hive, Glue, JDBC, REST): ``metadata/<NNNNN>-<uuid>.metadata.json``; the
  catalog holds the pointer, so without it the highest ``NNNNN`` is the best guess.

Hadoop's checksum side files (``.v3.metadata.json.crc``) and other hidden files are ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from floe.catalog.base import (
    Catalog,
    Namespace,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableAlreadyExists,
    TableIdentifier,
    UnsupportedOperation,
    to_namespace,
)
from floe.errors import (
    CommitConflict,
    CommitNotApplied,
    CommitStateUnknown,
    FloeError,
    NotFound,
    OutcomeUnknown,
    ValidationError,
)
from floe.io import FileIO, is_local, local_path
from floe.metadata import (
    METADATA_DIR,
    VERSION_HINT,
    TableMetadata,
    metadata_file_location,
    parse_metadata,
    serialize_metadata,
    version_hint_location,
)
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder

if TYPE_CHECKING:
    from floe.table import Table

__all__ = [
    "DirectoryCatalog",
    "FileSystemCatalog",
    "directory_table",
    "hadoop_version",
    "is_table_dir",
    "load_table_metadata",
    "metadata_file_location",
    "resolve_metadata_location",
    "version_hint_location",
]


#: What keeps an empty namespace's prefix on an object store.
NAMESPACE_MARKER = ".floe-namespace"
_HADOOP_NAME = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json(?:\.gz)?$")
_METASTORE_NAME = re.compile(
    r"^(\d+)-[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"(?:\.gz)?\.metadata\.json(?:\.gz)?$"
)
# Probed in this order for each Hadoop version (Java's codec order: plain, then gzip).
_HADOOP_SUFFIXES = (".metadata.json", ".gz.metadata.json", ".metadata.json.gz")


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def _basename(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


def is_metadata_file_name(name: str) -> bool:
    return name.endswith((".metadata.json", ".metadata.json.gz"))


def _hadoop_file(io: FileIO, metadata_dir: str, version: int) -> str | None:
    for suffix in _HADOOP_SUFFIXES:
        candidate = _join(metadata_dir, f"v{version}{suffix}")
        if io.exists(candidate):
            return candidate
    return None


def _read_hint(io: FileIO, metadata_dir: str) -> int | None:
    try:
        text = io.read(_join(metadata_dir, VERSION_HINT)).decode("utf-8").strip()
    except (NotFound, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _scan(io: FileIO, metadata_dir: str) -> str | None:
    """The newest metadata file by name: Hadoop versions first, else metastore sequence."""
    hadoop: list[tuple[int, str]] = []
    metastore: list[tuple[int, str]] = []
    for location in io.list(metadata_dir):
        rel = location[len(metadata_dir.rstrip("/")) + 1:]
        if "/" in rel or rel.startswith(".") or rel.endswith(".crc"):
            continue
        if m := _HADOOP_NAME.match(rel):
            hadoop.append((int(m.group(1)), location))
        elif m := _METASTORE_NAME.match(rel):
            metastore.append((int(m.group(1)), location))
    if hadoop:
        return max(hadoop)[1]
    if metastore:
        return max(metastore)[1]
    return None


def _probe_upward(io: FileIO, metadata_dir: str, location: str) -> str:
    m = _HADOOP_NAME.match(_basename(location))
    if m is None:
        return location
    version = int(m.group(1))
    while (newer := _hadoop_file(io, metadata_dir, version + 1)) is not None:
        location, version = newer, version + 1
    return location


def resolve_metadata_location(io: FileIO, table_arg: str) -> str:
    """The metadata file ``table_arg`` refers to.

    ``table_arg`` is a metadata file (returned as is), a table directory, or the table's
    ``metadata`` directory. Raises NotFound when nothing usable is there.
    """
    if not io.exists(table_arg):
        raise NotFound(f"{table_arg}: no such file or directory")
    if not io.is_dir(table_arg):
        return table_arg
    metadata_dir = _join(table_arg, METADATA_DIR)
    if not io.is_dir(metadata_dir):
        if _basename(table_arg) == METADATA_DIR:
            metadata_dir = table_arg
        else:
            raise NotFound(
                f"{table_arg}: not an Iceberg table directory (it has no {METADATA_DIR}/ "
                f"directory)"
            )
    hint = _read_hint(io, metadata_dir)
    found = _hadoop_file(io, metadata_dir, hint) if hint is not None else None
    if found is None:
        found = _scan(io, metadata_dir)
    if found is None:
        raise NotFound(
            f"{table_arg}: no table metadata found in {metadata_dir} (looked for "
            f"v<N>.metadata.json, v<N>.gz.metadata.json and <NNNNN>-<uuid>.metadata.json)"
        )
    return _probe_upward(io, metadata_dir, found)


def load_table_metadata(io: FileIO, table_arg: str) -> tuple[str, TableMetadata]:
    """Resolve ``table_arg`` and parse the metadata file: ``(location, metadata)``."""
    location = resolve_metadata_location(io, table_arg)
    return location, parse_metadata(io.read(location), location)


# -- the file-system catalog ------------------------------------------------------------------

_UUID_FIELD = re.compile(rb'"table-uuid"\s*:\s*"([^"]*)"')


def hadoop_version(location: str) -> int | None:
    """``N`` of ``.../v<N>[.gz].metadata.json[.gz]``, else None."""
    m = _HADOOP_NAME.match(_basename(location))
    return int(m.group(1)) if m else None


def is_table_dir(io: FileIO, location: str) -> bool:
    """Whether ``location`` holds a file-system table (a metadata file under ``metadata/``)."""
    metadata_dir = _join(location, METADATA_DIR)
    if not io.is_dir(metadata_dir):
        return False
    try:  # the hint's file, when there, saves listing them all
        hint = _read_hint(io, metadata_dir)
    except FloeError:  # a hint this io may not read (outside a confined warehouse): list
        hint = None
    if hint is not None and _hadoop_file(io, metadata_dir, hint) is not None:
        return True
    return _scan(io, metadata_dir) is not None


class FileSystemCatalog(Catalog):
    """Tables as directories: ``<warehouse>/<ns>/.../<table>/metadata/v<N>.metadata.json``,
    the layout of Iceberg's ``HadoopCatalog`` (spec "File System Tables").

    A commit writes the next version with an atomic no-replace publish (on a local disk a
    hard link of a fully written, fsynced temporary file; on an object store a conditional
    create, ``If-None-Match: *``: either fails when ``v<N+1>`` exists, so of two writers
    exactly one wins), then updates ``version-hint.text``. An object store that does not
    refuse the second create is read, never committed to (the commit says why). Namespaces
    are directories without properties (on an object store a prefix, kept by an empty
    ``.floe-namespace`` object until a table is in it); tables cannot be renamed.
    """

    def __init__(self, name: str, warehouse: str, io: FileIO | None = None) -> None:
        super().__init__(name, io)
        if not warehouse:
            raise ValidationError("a file-system catalog needs a warehouse directory")
        self.warehouse = warehouse.rstrip("/") or warehouse

    def __repr__(self) -> str:
        return f"FileSystemCatalog({self.name!r}, {self.warehouse!r})"

    # -- layout --------------------------------------------------------------------------

    def namespace_location(self, namespace: str | Iterable[str]) -> str:
        ns = to_namespace(namespace)
        return "/".join((self.warehouse, *ns))

    def table_location(self, ident: TableIdentifier | str) -> str:
        ident = TableIdentifier.of(ident)
        return _join(self.namespace_location(ident.namespace), ident.name)

    def default_table_location(self, ident: TableIdentifier) -> str:
        return self.table_location(ident)

    def _subdirs(self, location: str) -> list[str]:
        dirs, _ = self.io.list_dir(location)
        names = (_basename(d) for d in dirs)
        return [n for n in names if not n.startswith(".")]

    # -- namespaces ----------------------------------------------------------------------

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        ns = to_namespace(parent) if parent else ()
        base = self.namespace_location(ns) if ns else self.warehouse
        if ns and not self.io.is_dir(base):
            raise NotFound(f"namespace {'.'.join(ns)} does not exist in catalog {self.name!r}")
        out: list[Namespace] = []
        for name in self._subdirs(base):
            # a directory with metadata/ is a table, or one staged and not yet committed
            if name != METADATA_DIR and not self.io.is_dir(
                    _join(_join(base, name), METADATA_DIR)):
                try:
                    out.append(to_namespace((*ns, name)))
                except ValidationError:
                    continue  # a directory whose name cannot be a namespace
        return out

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("cannot create the empty namespace")
        if properties:
            raise UnsupportedOperation(
                f"catalog {self.name!r}: file-system namespaces have no properties")
        location = self.namespace_location(ns)
        if self.io.is_dir(location):
            raise NamespaceAlreadyExists(f"namespace {'.'.join(ns)} already exists")
        if is_local(location):
            os.makedirs(local_path(location))
        else:  # an object store has no directories: an object keeps the prefix
            self.io.write(_join(location, NAMESPACE_MARKER), b"", overwrite=True)

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        ns = to_namespace(namespace)
        location = self.namespace_location(ns)
        if not ns or not self.io.is_dir(location):
            raise NotFound(f"namespace {'.'.join(ns)} does not exist in catalog {self.name!r}")
        dirs, files = self.io.list_dir(location)
        marker = _join(location, NAMESPACE_MARKER)
        if dirs or [f for f in files if f != marker]:
            raise NamespaceNotEmpty(f"namespace {'.'.join(ns)} is not empty")
        if is_local(location):
            os.rmdir(local_path(location))
        else:
            self.io.delete(marker, missing_ok=True)

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        ns = to_namespace(namespace)
        location = self.namespace_location(ns)
        if not ns or not self.io.is_dir(location) or is_table_dir(self.io, location):
            raise NotFound(f"namespace {'.'.join(ns)} does not exist in catalog {self.name!r}")
        return {"location": location}

    # -- tables --------------------------------------------------------------------------

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        ns = to_namespace(namespace)
        base = self.namespace_location(ns)
        if not self.io.is_dir(base):
            raise NotFound(f"namespace {'.'.join(ns)} does not exist in catalog {self.name!r}")
        out = []
        for name in self._subdirs(base):
            if is_table_dir(self.io, _join(base, name)):
                try:
                    out.append(TableIdentifier(ns, name))
                except ValidationError:
                    continue
        return out

    def metadata_location(self, ident: TableIdentifier | str) -> str:
        ident = TableIdentifier.of(ident)
        location = self.table_location(ident)
        if not is_table_dir(self.io, location):
            raise NotFound(f"table {ident} does not exist in catalog {self.name!r}")
        return resolve_metadata_location(self.io, location)

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
        ident = TableIdentifier.of(ident)
        expected = self.table_location(ident)
        if location is not None and location.rstrip("/") != expected:
            raise ValidationError(
                f"a file-system table lives in its directory {expected}; cannot create it "
                f"at {location}")
        return super().create_table(
            ident, schema, spec, sort_order, properties, None, format_version)

    def create_table_from_metadata(self, ident: TableIdentifier | str,
                                   metadata: TableMetadata) -> str:
        """As every catalog, but only for metadata whose location is the table's directory
        (a file-system table lives there)."""
        ident = TableIdentifier.of(ident)
        expected = self.table_location(ident)
        if metadata.location.rstrip("/") != expected:
            raise ValidationError(
                f"a file-system table lives in its directory {expected}; cannot create it "
                f"at {metadata.location}")
        return super().create_table_from_metadata(ident, metadata)

    def drop_table(self, ident: TableIdentifier | str, purge: bool = False) -> None:
        """Remove the table's ``metadata/`` directory; with ``purge`` first delete every file
        its snapshots reference (data, delete, manifest, manifest list, metadata files)."""
        ident = TableIdentifier.of(ident)
        location = self.metadata_location(ident)
        if purge:
            self.purge_table_files(location, self.read_metadata(location))
        table_location = self.table_location(ident)
        metadata_dir = _join(table_location, METADATA_DIR)
        if is_local(table_location):
            import shutil  # here: what reads tables never needs it

            shutil.rmtree(local_path(metadata_dir))
            if purge:
                _remove_empty_dirs(local_path(table_location))
        else:
            failed = self.io.delete_many(self.io.list(metadata_dir))
            if failed:
                raise FloeError(f"table {ident}: could not delete {len(failed)} metadata "
                                f"files, e.g. {failed[0][0]}: {failed[0][1]}")

    def register_table(self, ident: TableIdentifier | str, metadata_location: str) -> Table:
        """Copy an existing metadata file in as ``v1.metadata.json`` of a new table directory."""
        from floe.table import Table

        ident = TableIdentifier.of(ident)
        if self.table_exists(ident):
            raise TableAlreadyExists(f"table {ident} already exists in catalog {self.name!r}")
        metadata = self.read_metadata(metadata_location)
        new_location = self._commit(ident, None, metadata)
        return Table(self, ident, metadata, new_location)

    def _commit(
        self, ident: TableIdentifier, base_location: str | None, new_metadata: TableMetadata
    ) -> str:
        table_location = self.table_location(ident)
        if base_location is None:
            version = 1
            if is_table_dir(self.io, table_location):
                raise TableAlreadyExists(
                    f"table {ident} already exists in catalog {self.name!r}")
        else:
            base_version = hadoop_version(base_location)
            metadata_dir = _join(table_location, METADATA_DIR)
            if base_version is None or base_location.rsplit("/", 1)[0] != metadata_dir:
                raise ValidationError(
                    f"{base_location} is not a version of file-system table {ident}")
            current = self.metadata_location(ident)
            if current != base_location:
                raise CommitConflict(
                    f"table {ident} changed: {current} is current, this commit was based on "
                    f"{base_location}")
            self._check_uuid(ident, base_location, new_metadata.table_uuid)
            version = base_version + 1
        target = metadata_file_location(table_location, version)
        if not self.io.exclusive_create(target):
            raise ValidationError(
                f"table {ident}: cannot commit to a file-system table in {self.warehouse}: the "
                f"store there does not refuse a second create of the same object "
                f"(If-None-Match: *), so two writers could both think they committed version "
                f"{version}. The table can be read; use a SQL or REST catalog to change it")
        data = serialize_metadata(new_metadata)
        try:
            self.io.write(target, data, overwrite=False)
        except FileExistsError:
            if base_location is None:
                raise TableAlreadyExists(
                    f"table {ident} was created concurrently in catalog {self.name!r}"
                ) from None
            raise CommitConflict(
                f"table {ident}: {target} was published by a concurrent commit") from None
        except OutcomeUnknown as e:  # the store's answer was lost, and the file is not there
            raise CommitStateUnknown(f"table {ident}: {e}") from e
        except OSError as e:
            # The link is atomic: either our complete file is there or it is not.
            if not self._published(target, data):
                raise CommitNotApplied(
                    f"table {ident}: could not publish {target}: {e.strerror or e}") from e
        try:
            self.io.write(version_hint_location(table_location), str(version).encode(),
                          overwrite=True)
        except OSError as e:  # readers probe past a stale hint
            import logging  # here: a read-only process never imports it

            logging.getLogger(__name__).warning(
                "table %s: could not update the version hint: %s", ident, e)
        return target

    def _published(self, target: str, data: bytes) -> bool:
        try:
            return self.io.read(target) == data
        except (NotFound, OSError):
            return False

    def _check_uuid(self, ident: TableIdentifier, base_location: str, expected: str | None
                    ) -> None:
        """The table on disk must still be the one this commit was based on."""
        if expected is None or base_location.endswith(".gz"):
            return
        with self.io.open(base_location) as f:
            head = f.read(4096)
        m = _UUID_FIELD.search(head)
        if m is not None and m.group(1).decode("utf-8", "replace") != expected:
            raise CommitConflict(
                f"table {ident}: table UUID changed underneath this writer (on disk "
                f"{m.group(1).decode('utf-8', 'replace')}, expected {expected}); the table "
                f"was dropped and re-created")


def _remove_empty_dirs(root: str) -> None:
    for dirpath, _, _ in sorted(os.walk(root, topdown=False), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


class DirectoryCatalog(FileSystemCatalog):
    """A catalog of the one file-system table in ``directory`` (the CLI's ``TABLE`` path):
    every identifier resolves to that directory."""

    def __init__(self, directory: str, io: FileIO | None = None) -> None:
        directory = directory.rstrip("/") or directory
        if is_local(directory) and not directory.startswith("file:"):
            directory = os.path.abspath(directory)  # table locations are absolute
        parent, _, name = directory.rpartition("/")
        super().__init__("path", parent or ".", io)
        self.directory = directory
        try:
            self.identifier = TableIdentifier(("path",), name)
        except ValidationError:
            self.identifier = TableIdentifier(("path",), "table")

    def table_location(self, ident: TableIdentifier | str) -> str:
        return self.directory

    def metadata_location(self, ident: TableIdentifier | str) -> str:
        if not is_table_dir(self.io, self.directory):
            raise NotFound(f"{self.directory}: no Iceberg table there (no metadata/v<N>"
                           f".metadata.json)")
        return resolve_metadata_location(self.io, self.directory)

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
        if is_table_dir(self.io, self.directory):
            raise TableAlreadyExists(f"a table already exists at {self.directory}")
        return super().create_table(ident, schema, spec, sort_order, properties, location,
                                    format_version)

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        return [self.identifier] if is_table_dir(self.io, self.directory) else []

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        return [("path",)]


def directory_table(directory: str, io: FileIO | None = None) -> Table:
    """Load the file-system table in ``directory`` (NotFound when there is none)."""
    catalog = DirectoryCatalog(directory, io)
    return catalog.load_table(catalog.identifier)
