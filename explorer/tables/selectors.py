"""Reads for the pages, the API and the tasks: catalogs, namespaces, tables, and
:func:`table_load`, the one way every page and endpoint opens a table.

Everything goes through ``floe.catalog``: namespaces from ``catalog.list_namespaces``,
tables from ``catalog.list_tables``, the current metadata file from
``catalog.metadata_location`` (asked on every request, so a commit by anyone, floe, Spark
or PyIceberg, shows on the next one), a :class:`floe.table.Table` built from the parsed
metadata (cached per metadata file in :mod:`explorer.cache`). Names from URLs are checked
by :class:`~floe.catalog.base.TableIdentifier` before the catalog sees them; files are read
only inside the catalog's warehouse (:class:`explorer.catalogs.WarehouseIO`).

Listing is two steps so a page never reads more metadata than it shows: list the names
(no metadata file is opened), then load the tables of the page.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.urls import reverse

from explorer.cache import CACHE
from explorer.catalogs import (
    CatalogInfo,
    catalog_call,
    catalog_info,
    catalog_infos,
    confine,
    note_moved,
)
from explorer.catalogs import catalog_get as _catalog
from floe.catalog.base import Catalog, Namespace, TableIdentifier, to_namespace
from floe.errors import FloeError, NotFound
from floe.table import Table

logger = logging.getLogger(__name__)

#: Namespace levels walked below a catalog's root (a symlink loop must end somewhere).
MAX_NAMESPACE_DEPTH = 4

# Snapshot summary keys (spec "Snapshots", optional summary fields written by Java and floe).
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
TOTAL_RECORDS = "total-records"
TOTAL_FILES_SIZE = "total-files-size"


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table's name in a catalog, as listed; nothing has been read from it."""

    catalog: str
    namespace: str
    name: str

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"

    @property
    def url(self) -> str:
        """The table's overview page."""
        return str(reverse("table:overview", kwargs={
            "catalog": self.catalog, "ns": self.namespace, "table": self.name}))


@dataclass(frozen=True, slots=True)
class TableRow:
    """One line of a table list. ``error`` is set (and the metadata fields are None) when the
    table cannot be read."""

    catalog: str
    namespace: str
    name: str
    location: str | None = None
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

    @property
    def group_key(self) -> str:
        """``catalog/namespace``: the table list groups its rows by it."""
        return f"{self.catalog}/{self.namespace}"


@dataclass(frozen=True, slots=True)
class NamespaceRow:
    catalog: str
    name: str
    table_count: int


# --- catalogs -------------------------------------------------------------------------------


def catalog_list() -> list[CatalogInfo]:
    return catalog_infos()


def catalog_get(*, name: str) -> CatalogInfo:
    """A configured catalog; NotFound names it when there is none."""
    return catalog_info(name)


# --- namespaces and tables ------------------------------------------------------------------


def _ns_text(namespace: Namespace) -> str:
    return ".".join(namespace)


def _walk(catalog: Catalog, parent: Namespace) -> list[Namespace]:
    """``parent``'s namespaces and theirs, down to MAX_NAMESPACE_DEPTH levels."""
    found: list[Namespace] = []

    def visit(ns: Namespace) -> None:
        for child in catalog.list_namespaces(ns):
            found.append(child)
            if len(child) < MAX_NAMESPACE_DEPTH:
                visit(child)

    with catalog_call(catalog):
        visit(parent)
    return found


def _namespaces(info: CatalogInfo, namespace: str | None) -> tuple[Catalog, list[Namespace]]:
    """The catalog and the namespaces to list: all of them, or ``namespace`` and those below."""
    catalog = _catalog(info.name)  # first: a broken catalog entry is 503 whatever it names
    if info.type == "filesystem" and not info.exists:
        raise NotFound(f"warehouse {info.warehouse} of catalog {info.name!r} does not exist")
    if namespace is None:
        return catalog, _walk(catalog, ())
    levels = to_namespace(namespace)
    if not _namespace_exists(catalog, levels):
        raise NotFound(f"namespace {namespace!r} does not exist in catalog {info.name!r}")
    return catalog, [levels, *_walk(catalog, levels)]


def _namespace_exists(catalog: Catalog, levels: Namespace) -> bool:
    """Whether the namespace exists, or namespaces exist below it: a REST catalog may hold
    ``a.b`` with no entry for ``a`` (SeaweedFS does), and lists ``a`` as its first level, so
    the catalog page, the breadcrumbs and the API link to ``a``."""
    with catalog_call(catalog):
        if catalog.namespace_exists(levels):
            return True
        try:
            return bool(catalog.list_namespaces(levels))
        except NotFound:
            return False


def catalog_namespaces(*, catalog: str) -> list[NamespaceRow]:
    """Every namespace of a catalog (nested ones too) with how many tables it holds itself."""
    cat, namespaces = _namespaces(catalog_get(name=catalog), None)
    rows = []
    with catalog_call(cat):
        for ns in sorted(namespaces, key=_ns_text):
            rows.append(NamespaceRow(cat.name, _ns_text(ns), len(cat.list_tables(ns))))
    return rows


@dataclass(frozen=True, slots=True)
class NamespaceNode:
    """A namespace on a catalog or namespace page: its tables, those of every namespace below
    it, and its children. ``depth`` is its level below the page's own (0: a top one)."""

    catalog: str
    name: str
    depth: int
    table_count: int
    tables_below: int
    child_count: int

    @property
    def leaf(self) -> str:
        """The last level of the name (the tree shows ``raw`` under ``lake``)."""
        return self.name.rsplit(".", 1)[-1]

    @property
    def url(self) -> str:
        return str(reverse("explorer:namespace", kwargs={"catalog": self.catalog,
                                                         "ns": self.name}))


def namespace_tree(*, catalog: str, namespace: str | None = None) -> list[NamespaceNode]:
    """The namespaces below ``namespace`` (every namespace of the catalog for None), parents
    before their children, each with its own table count and the count with everything below
    it. NotFound names an unknown catalog or namespace."""
    cat, namespaces = _namespaces(catalog_get(name=catalog), namespace)
    root = to_namespace(namespace) if namespace is not None else ()
    below = [ns for ns in namespaces if ns != root]
    with catalog_call(cat):
        own = {ns: len(cat.list_tables(ns)) for ns in below}
    nodes = []
    for ns in sorted(below):
        inside = [o for o in below if o[:len(ns)] == ns]
        nodes.append(NamespaceNode(
            catalog=cat.name, name=_ns_text(ns), depth=len(ns) - len(root) - 1,
            table_count=own[ns], tables_below=sum(own[o] for o in inside),
            child_count=sum(1 for o in inside if len(o) == len(ns) + 1)))
    return nodes


def catalog_table_refs(
    *, catalog: str, namespace: str | None = None, query: str = "", below: bool = True
) -> list[TableRef]:
    """The tables of a catalog sorted by identifier, optionally in one namespace (and, with
    ``below``, those below it) and whose ``namespace.table`` contains ``query``
    (case-insensitive)."""
    cat, namespaces = _namespaces(catalog_get(name=catalog), namespace)
    if namespace is not None and not below:
        namespaces = namespaces[:1]
    refs: list[TableRef] = []
    with catalog_call(cat):
        for ns in namespaces:
            refs += [TableRef(cat.name, _ns_text(ns), t.name) for t in cat.list_tables(ns)]
    needle = query.strip().lower()
    if needle:
        refs = [r for r in refs if needle in r.identifier.lower()]
    refs.sort(key=lambda r: (r.namespace, r.name))
    return refs


def table_rows(*, refs: Iterable[TableRef]) -> list[TableRow]:
    """Load each table; one that cannot be read becomes an error row naming why."""
    return [_table_row(ref) for ref in refs]


def table_load(*, catalog: str, namespace: str, name: str) -> Table:
    """The table ``namespace.name`` of a catalog at its current metadata file: floe's
    ``Catalog.load_table`` (the parse cached per metadata file, the catalog's WarehouseIO
    guarding every read, cached or not), a handle of the caller's own (a commit refreshes
    the handle it was made on).

    ValidationError (400) for names that are not names (``..``, ``/``, empty levels),
    NotFound (404) for an unknown catalog, namespace or table, OutsideWarehouse (422) when
    the table's files resolve outside the catalog's warehouse, MetadataError (422) when the
    metadata file cannot be read, CatalogUnavailable (503) when the catalog does not answer.
    """
    return _open(_catalog(catalog), TableIdentifier(to_namespace(namespace), name))


def table_pointer(*, catalog: str, namespace: str, name: str) -> tuple[str, int | None]:
    """The table's current metadata file and current snapshot id, asked of the catalog now."""
    table = table_load(catalog=catalog, namespace=namespace, name=name)
    snapshot = table.current_snapshot()
    return table.metadata_location, snapshot.snapshot_id if snapshot is not None else None


def table_ref(table: Table) -> TableRef:
    return TableRef(table.catalog.name, _ns_text(table.identifier.namespace),
                    table.identifier.name)


def table_row(*, table: Table) -> TableRow:
    """The table list's line for a loaded table (from its current snapshot's summary)."""
    snapshot = table.current_snapshot()
    summary: dict[str, str] = dict(snapshot.summary) if snapshot is not None else {}

    def count(key: str) -> int | None:
        if snapshot is None:
            return 0  # no snapshot: the table holds nothing
        value = summary.get(key)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None  # a writer's odd summary must not hide the table

    ref = table_ref(table)
    return TableRow(
        catalog=ref.catalog,
        namespace=ref.namespace,
        name=ref.name,
        location=table.location,
        metadata_location=table.metadata_location,
        format_version=table.format_version,
        current_snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
        data_files=count(TOTAL_DATA_FILES),
        delete_files=count(TOTAL_DELETE_FILES),
        records=count(TOTAL_RECORDS),
        files_size=count(TOTAL_FILES_SIZE),
    )


# --- opening a table --------------------------------------------------------------------------


def _open(catalog: Catalog, ident: TableIdentifier) -> Table:
    """``catalog.load_table``; a NotFound names what is missing (the namespace or the
    table), and a moved table's files say where its metadata points (note_moved)."""
    CACHE.sized()  # floe's metadata cache, bounded by FLOE_METADATA_CACHE_SIZE
    with catalog_call(catalog):
        try:
            table = catalog.load_table(ident)
        except NotFound:
            if not _namespace_exists(catalog, ident.namespace):
                raise NotFound(f"namespace {_ns_text(ident.namespace)!r} does not exist in "
                               f"catalog {catalog.name!r}") from None
            raise
    table = confine(table)  # a REST catalog whose warehouse is a name: the table's places
    note_moved(table)  # files of a moved table refused or missing say why
    return table


def _table_row(ref: TableRef) -> TableRow:
    metadata_location: str | None = None
    try:
        catalog = _catalog(ref.catalog)
        return table_row(table=_open(catalog, TableIdentifier(to_namespace(ref.namespace),
                                                              ref.name)))
    except (FloeError, OSError) as exc:
        error = str(exc)
        metadata_location = getattr(exc, "location", None)  # a file that cannot be read
    except Exception as exc:  # a bug while reading one table must not take the list down
        with contextlib.suppress(Exception):  # name the file it happened on, if it can be
            metadata_location = _catalog(ref.catalog).metadata_location(
                TableIdentifier(to_namespace(ref.namespace), ref.name))
        logger.exception("reading %s failed", metadata_location or ref.identifier)
        error = f"{metadata_location or ref.identifier}: {type(exc).__name__}: {exc}"
    return TableRow(ref.catalog, ref.namespace, ref.name, None, metadata_location, error=error)


# --- every catalog at once (the first page) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class CatalogListing:
    """A catalog on the table list: how many of its tables match, or why none can be listed."""

    info: CatalogInfo
    table_count: int = 0
    error: str | None = None


def all_table_refs(*, query: str = "", only: Iterable[str] | None = None
                   ) -> tuple[list[CatalogListing], list[TableRef]]:
    """The matching tables of every catalog (``local`` first, then by name; each catalog's
    sorted by identifier), and per catalog how many or why it could not be listed. One
    catalog failing (a database down, a missing warehouse) leaves the others listed.
    ``only``: the catalogs to list (those the user may read)."""
    listings: list[CatalogListing] = []
    refs: list[TableRef] = []
    wanted = None if only is None else set(only)
    for info in catalog_list():
        if wanted is not None and info.name not in wanted:
            continue
        try:
            found = catalog_table_refs(catalog=info.name, query=query)
        except FloeError as exc:
            listings.append(CatalogListing(info, error=str(exc)))
            continue
        listings.append(CatalogListing(info, table_count=len(found)))
        refs += found
    return listings, refs
