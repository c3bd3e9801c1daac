"""Reads for the pages, the API and the tasks: catalogs, namespaces, tables.

Listing is two steps so a page never reads more metadata than it shows: find the table
directories (cheap, no file is opened), then load the metadata of the ones on the page.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from explorer.catalogs import Catalog, configured_catalogs
from floe.catalog.filesystem import resolve_metadata_location
from floe.errors import FloeError, NotFound
from floe.io import FileIO
from floe.metadata import TableMetadata, parse_metadata

logger = logging.getLogger(__name__)
_io = FileIO()

# Nested namespaces are nested directories (Hadoop catalog layout); deeper trees are not walked.
MAX_NAMESPACE_DEPTH = 4
METADATA_DIR = "metadata"

# Snapshot summary keys (spec "Snapshots", optional summary fields written by Java and floe).
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
TOTAL_RECORDS = "total-records"
TOTAL_FILES_SIZE = "total-files-size"


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table directory found in a warehouse; nothing has been read from it yet."""

    catalog: str
    namespace: str
    name: str
    location: str

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True, slots=True)
class TableRow:
    """One line of a table list. ``error`` is set (and the metadata fields are None) when the
    table's metadata cannot be read."""

    catalog: str
    namespace: str
    name: str
    location: str
    metadata_location: str | None = None
    format_version: int | None = None
    current_snapshot_id: int | None = None
    data_files: int | None = None
    delete_files: int | None = None
    records: int | None = None
    files_size: int | None = None
    error: str | None = None

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True, slots=True)
class NamespaceRow:
    catalog: str
    name: str
    table_count: int


# --- catalogs -------------------------------------------------------------------------------


def catalog_list() -> list[Catalog]:
    return configured_catalogs()


def catalog_get(*, name: str) -> Catalog:
    for catalog in configured_catalogs():
        if catalog.name == name:
            return catalog
    raise NotFound(f"catalog {name!r} does not exist")


# --- namespaces and tables ------------------------------------------------------------------


def catalog_table_refs(
    *, catalog: Catalog, namespace: str | None = None, query: str = ""
) -> list[TableRef]:
    """The tables of a catalog sorted by identifier, optionally in one namespace (and its
    children) and whose ``namespace.table`` contains ``query`` (case-insensitive)."""
    if not catalog.exists:
        raise NotFound(f"warehouse {catalog.warehouse} of catalog {catalog.name!r} does not exist")
    refs = _walk_warehouse(catalog)
    if namespace is not None:
        refs = [r for r in refs if r.namespace == namespace or r.namespace.startswith(namespace + ".")]
        if not refs and not os.path.isdir(os.path.join(catalog.warehouse, *namespace.split("."))):
            raise NotFound(f"namespace {namespace!r} does not exist in catalog {catalog.name!r}")
    needle = query.strip().lower()
    if needle:
        refs = [r for r in refs if needle in r.identifier.lower()]
    return refs


def catalog_namespaces(*, catalog: Catalog) -> list[NamespaceRow]:
    """Namespaces that hold tables directly, with how many."""
    counts: dict[str, int] = {}
    for ref in catalog_table_refs(catalog=catalog):
        counts[ref.namespace] = counts.get(ref.namespace, 0) + 1
    return [NamespaceRow(catalog=catalog.name, name=ns, table_count=n) for ns, n in sorted(counts.items())]


def table_rows(*, refs: Iterable[TableRef]) -> list[TableRow]:
    """Load the metadata of each table; a table that cannot be read becomes an error row."""
    return [_table_row(ref) for ref in refs]


def table_get(*, catalog: Catalog, namespace: str, name: str) -> TableRow:
    """One table; raises NotFound when absent and MetadataError when it cannot be read."""
    location = os.path.join(catalog.warehouse, *namespace.split("."), name)
    if not os.path.isdir(os.path.join(location, METADATA_DIR)):
        raise NotFound(f"table {namespace}.{name} does not exist in catalog {catalog.name!r}")
    ref = TableRef(catalog=catalog.name, namespace=namespace, name=name, location=location)
    metadata_location = current_metadata_location(ref.location)
    return _row_from_metadata(ref, metadata_location, cached_metadata(metadata_location))


def warehouse_tables(*, warehouse: str, catalog: str = "local") -> list[TableRow]:
    """Every table of a file-system warehouse, loaded (for tasks and scripts; pages page)."""
    refs = catalog_table_refs(catalog=Catalog(name=catalog, type="filesystem", warehouse=warehouse))
    return table_rows(refs=refs)


def _walk_warehouse(catalog: Catalog) -> list[TableRef]:
    refs: list[TableRef] = []

    def visit(directory: str, namespace: tuple[str, ...]) -> None:
        for entry in _subdirectories(directory):
            if namespace and os.path.isdir(os.path.join(entry.path, METADATA_DIR)):
                refs.append(TableRef(catalog.name, ".".join(namespace), entry.name, entry.path))
            elif len(namespace) < MAX_NAMESPACE_DEPTH:
                visit(entry.path, (*namespace, entry.name))

    visit(catalog.warehouse, ())
    refs.sort(key=lambda r: (r.namespace, r.name))
    return refs


def _subdirectories(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            # Hidden and underscore directories are never namespaces (e.g. Spark's _temporary).
            return [e for e in it if e.is_dir() and not e.name.startswith((".", "_"))]
    except OSError:
        return []


def _table_row(ref: TableRef) -> TableRow:
    metadata_location: str | None = None
    try:
        metadata_location = current_metadata_location(ref.location)
        return _row_from_metadata(ref, metadata_location, cached_metadata(metadata_location))
    except (FloeError, OSError) as exc:
        error = str(exc)
    except Exception as exc:  # a bug while reading one table must not take the list down
        logger.exception("reading %s failed", metadata_location or ref.location)
        error = f"{metadata_location or ref.location}: {type(exc).__name__}: {exc}"
    return TableRow(ref.catalog, ref.namespace, ref.name, ref.location, metadata_location, error=error)


def _row_from_metadata(ref: TableRef, metadata_location: str, metadata: TableMetadata) -> TableRow:
    snapshot = metadata.current_snapshot()
    summary: dict[str, str] = dict(snapshot.summary) if snapshot is not None else {}

    def count(key: str) -> int | None:
        if snapshot is None:
            return 0  # no snapshot: the table holds nothing
        value = summary.get(key)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None  # a writer's odd summary must not hide the table

    return TableRow(
        catalog=ref.catalog,
        namespace=ref.namespace,
        name=ref.name,
        location=ref.location,
        metadata_location=metadata_location,
        format_version=metadata.format_version,
        current_snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
        data_files=count(TOTAL_DATA_FILES),
        delete_files=count(TOTAL_DELETE_FILES),
        records=count(TOTAL_RECORDS),
        files_size=count(TOTAL_FILES_SIZE),
    )


# --- metadata files -------------------------------------------------------------------------

def current_metadata_location(table_location: str) -> str:
    """The current metadata file of a file-system table (``version-hint.text`` honoured)."""
    return resolve_metadata_location(_io, table_location)


class _LRU:
    """A bounded, thread-safe map from metadata file path to parsed metadata."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_load(self, key: str, load: Callable[[str], Any], maxsize: int) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = load(key)  # outside the lock: a slow file must not block other requests
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > maxsize:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


_metadata_cache = _LRU()


def cached_metadata(metadata_location: str) -> TableMetadata:
    """Parsed metadata of one metadata file; files are immutable, so the path is the key."""
    return _metadata_cache.get_or_load(
        metadata_location, _load_metadata, settings.FLOE_METADATA_CACHE_SIZE
    )


def clear_metadata_cache() -> None:
    _metadata_cache.clear()


def _load_metadata(metadata_location: str) -> TableMetadata:
    return parse_metadata(_io.read(metadata_location), metadata_location)
