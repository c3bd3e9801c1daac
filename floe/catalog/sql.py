"""Metastore tables in a SQL database (spec "Metastore Tables").

The catalog keeps one row per table, a pointer to its current metadata file, in the schema of
Iceberg Java's ``JdbcCatalog`` that PyIceberg's ``SqlCatalog`` also uses, so Floe, PyIceberg
and Java can share one database and the same tables at the same time:

* ``iceberg_tables (catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location, iceberg_type)``, primary key the first three. ``iceberg_type``
  is ``TABLE``, ``VIEW`` or NULL (rows written before the column existed); databases created by
  an older catalog lack the column and are used without it.
* ``iceberg_namespace_properties (catalog_name, namespace, property_key, property_value)``.
  A namespace exists when it has a property row (``exists=true`` marks one without other
  properties) or holds tables, itself or below it.

Namespaces are stored as their levels joined by ``.`` (so a level may not contain one).
A commit writes ``<location>/metadata/<VVVVV>-<uuid>.metadata.json`` and then swaps the
pointer with a check-and-put, ``UPDATE ... WHERE metadata_location = <the base>``: one row
changed, or the commit conflicts. A table is created by an INSERT that fails on the primary
key when the name is taken. SQLite and PostgreSQL are tested; any SQLAlchemy dialect that
reports updated row counts should do.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    String,
    Table,
    bindparam,
    create_engine,
    delete,
    event,
    insert,
    or_,
    select,
    text,
    union,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError

from floe.catalog.base import (
    Catalog,
    Namespace,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableAlreadyExists,
    TableCommit,
    TableIdentifier,
    to_namespace,
)
from floe.errors import (
    CommitConflict,
    CommitNotApplied,
    CommitStateUnknown,
    NotFound,
    ValidationError,
)
from floe.io import FileIO
from floe.metadata import TableMetadata, serialize_metadata
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.properties import METADATA_COMPRESSION
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder
from floe.table import Table as FloeTable

__all__ = [
    "ICEBERG_TABLES",
    "NAMESPACE_PROPERTIES",
    "NamespaceAlreadyExists",
    "NamespaceNotEmpty",
    "SqlCatalog",
    "SqlPointers",
    "create_sql_engine",
    "next_metadata_location",
    "parse_metadata_version",
]


#: Spec "Metastore Tables" as Iceberg's JDBC catalog lays it out (``JdbcUtil``, V1 schema);
#: the same DDL PyIceberg's ``SqlCatalog`` runs, so either may create the tables first.
_SCHEMA = MetaData()
ICEBERG_TABLES = Table(
    "iceberg_tables",
    _SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000), nullable=True),
    Column("previous_metadata_location", String(1000), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)
NAMESPACE_PROPERTIES = Table(
    "iceberg_namespace_properties",
    _SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(255), primary_key=True, nullable=False),
    Column("property_value", String(1000), nullable=False),
)
TABLE_TYPE = "TABLE"
#: The property Java and PyIceberg write to mark a namespace.
NAMESPACE_EXISTS_PROPERTY = "exists"
#: A namespace property that overrides where its tables go (Java / PyIceberg ``location``).
NAMESPACE_LOCATION_PROPERTY = "location"
_NAME_LIMIT = 255
_VERSIONED_NAME = re.compile(r"^(\d+)-[0-9a-fA-F-]{36}(?:\.gz)?\.metadata\.json$")
#: SQLite waits this long for another writer's lock before giving up (seconds).
SQLITE_BUSY_TIMEOUT = 30.0


# -- names ----------------------------------------------------------------------------------


def _no_dots(levels: Iterable[str], what: str) -> None:
    for level in levels:
        if "." in level:
            raise ValidationError(
                f"invalid {what} {level!r}: a SQL catalog stores namespace levels joined by "
                f"'.', so names must not contain one"
            )


def _namespace(ns: str | Iterable[str]) -> Namespace:
    levels = to_namespace(ns)
    if not levels:
        raise ValidationError("a namespace needs at least one level")
    _no_dots(levels, "namespace")
    if len(_ns_str(levels)) > _NAME_LIMIT:
        raise ValidationError(f"namespace {_ns_str(levels)!r} is longer than {_NAME_LIMIT}")
    return levels


def _ident(ident: TableIdentifier | str | tuple[str, ...]) -> TableIdentifier:
    ident = TableIdentifier.of(ident)
    _namespace(ident.namespace)
    _no_dots([ident.name], "table name")
    if len(ident.name) > _NAME_LIMIT:
        raise ValidationError(f"table name {ident.name[:40]!r}... is longer than {_NAME_LIMIT}")
    return ident


def _ns_str(levels: Namespace) -> str:
    return ".".join(levels)


def _like_below(levels: Namespace) -> str:
    """A LIKE pattern (escape ``!``) for the namespaces strictly below ``levels``."""
    escaped = _ns_str(levels).replace("!", "!!").replace("_", "!_").replace("%", "!%")
    return escaped + ".%"


# -- metadata file names --------------------------------------------------------------------


def parse_metadata_version(metadata_location: str | None) -> int:
    """The ``VVVVV`` of ``.../VVVVV-<uuid>.metadata.json``; -1 for None or any other name
    (a registered ``vN.metadata.json``), so that the next version is 0 as in Java."""
    if metadata_location is None:
        return -1
    m = _VERSIONED_NAME.match(metadata_location.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else -1


def next_metadata_location(
    table_location: str, base_location: str | None, compressed: bool = False
) -> str:
    """Java ``BaseMetastoreTableOperations.newTableMetadataFilePath``: version + 1."""
    version = parse_metadata_version(base_location) + 1
    suffix = ".gz.metadata.json" if compressed else ".metadata.json"
    return f"{table_location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}{suffix}"


# -- the pointer table ----------------------------------------------------------------------


@dataclass(frozen=True)
class Pointer:
    metadata_location: str | None
    previous_metadata_location: str | None


def create_sql_engine(uri: str) -> Engine:
    """An engine for ``uri``. SQLite files get WAL mode and a long busy timeout so that
    concurrent writers (other processes, PyIceberg) queue for the lock instead of failing;
    server databases get pre-ping so a dropped pooled connection is replaced, not used."""
    url = make_url(uri)
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    connect_args: dict[str, Any] = {}
    if "timeout" not in url.query:
        connect_args["timeout"] = SQLITE_BUSY_TIMEOUT
    engine = create_engine(url, connect_args=connect_args)
    if url.database in (None, "", ":memory:"):
        return engine

    @event.listens_for(engine, "connect")
    def _wal(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # Persistent in the file once set: readers never block the writer. Switching needs a
        # moment without other connections; when that fails the next connection tries again.
        with contextlib.suppress(sqlite3.OperationalError):
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    return engine


def _sqlite_busy(error: DBAPIError) -> bool:
    message = str(error.orig).lower()
    return "database is locked" in message or "database table is locked" in message


def _close_quietly(conn: Connection) -> None:
    try:
        conn.close()
    except DBAPIError:
        pass


class SqlPointers:
    """The two catalog tables as seen by one catalog name: pointer reads, the check-and-put
    and namespace rows. Knows nothing about metadata files (:class:`SqlCatalog` does)."""

    def __init__(self, engine: Engine, catalog_name: str, *, create: bool = True) -> None:
        if not catalog_name or len(catalog_name) > _NAME_LIMIT:
            raise ValidationError(f"invalid catalog name {catalog_name!r}")
        if not engine.dialect.supports_sane_rowcount:
            raise ValidationError(
                f"the {engine.dialect.name} driver does not report updated row counts, which "
                f"the check-and-put commit relies on"
            )
        self.engine = engine
        self.catalog_name = catalog_name
        self.has_type_column = self._init_schema(create)
        self._get_stmt: Any = None
        self._get_sqlite: tuple[str, Any, Any] | None = None

    # -- schema ------------------------------------------------------------------------------

    def _init_schema(self, create: bool) -> bool:
        """Create the catalog tables when missing; True when ``iceberg_tables`` has the
        ``iceberg_type`` column (Java's V1 schema), False for a V0 database."""
        if not self._tables_exist():
            if not create:
                raise NotFound(f"{self.engine.url!r} has no Iceberg catalog tables")
            try:
                _SCHEMA.create_all(self.engine, checkfirst=True)
            except (OperationalError, ProgrammingError, IntegrityError):
                # Another process created them between our check and our CREATE.
                if not self._tables_exist():
                    raise
        with self.engine.connect() as conn:
            try:
                conn.execute(text("SELECT iceberg_type FROM iceberg_tables WHERE 1 = 0"))
            except (OperationalError, ProgrammingError):
                conn.rollback()
                return False
        return True

    def _tables_exist(self) -> bool:
        with self.engine.connect() as conn:
            for table in (ICEBERG_TABLES, NAMESPACE_PROPERTIES):
                try:
                    conn.execute(select(text("1")).select_from(table).limit(1))
                except (OperationalError, ProgrammingError):
                    conn.rollback()
                    return False
        return True

    def _where_table(self, ident: TableIdentifier) -> list[Any]:
        c = ICEBERG_TABLES.c
        return [
            c.catalog_name == self.catalog_name,
            c.table_namespace == _ns_str(ident.namespace),
            c.table_name == ident.name,
            *self._type_filter(),
        ]

    def _type_filter(self) -> list[Any]:
        # Views share the table (iceberg_type 'VIEW'); table operations never touch them.
        if not self.has_type_column:
            return []
        c = ICEBERG_TABLES.c
        return [or_(c.iceberg_type == TABLE_TYPE, c.iceberg_type.is_(None))]

    def write(self, stmt: Any, what: str) -> int:
        """Run one DML statement in its own transaction; the number of rows it changed.

        IntegrityError passes through. A failure of the COMMIT, or of the statement with the
        connection lost, leaves the outcome unknown: CommitStateUnknown. SQLite's "database
        is locked" means the statement never ran: CommitConflict (retry).
        """
        conn = self.engine.connect()
        try:
            trans = conn.begin()
            try:
                count = int(conn.execute(stmt).rowcount)
            except DBAPIError as e:
                try:
                    trans.rollback()
                except DBAPIError:
                    pass
                if isinstance(e, IntegrityError):
                    raise
                if isinstance(e, OperationalError) and _sqlite_busy(e):
                    raise CommitConflict(f"{what}: the catalog database stayed locked") from e
                if e.connection_invalidated or isinstance(e, OperationalError):
                    raise CommitStateUnknown(
                        f"{what}: the database connection failed during the update, its "
                        f"outcome is unknown: {e.orig}"
                    ) from e
                raise CommitNotApplied(
                    f"catalog {self.catalog_name!r}: {what} failed: {e.orig}") from e
            try:
                trans.commit()
            except IntegrityError:
                raise
            except DBAPIError as e:
                if isinstance(e, OperationalError) and _sqlite_busy(e):
                    # SQLite leaves the transaction open when COMMIT is busy: nothing applied.
                    try:
                        trans.rollback()
                    except DBAPIError:
                        pass
                    raise CommitConflict(f"{what}: the catalog database stayed locked") from e
                raise CommitStateUnknown(
                    f"{what}: COMMIT failed and may or may not have been applied: {e.orig}"
                ) from e
            return count
        finally:
            _close_quietly(conn)

    # -- tables ------------------------------------------------------------------------------

    def get(self, ident: TableIdentifier) -> Pointer | None:
        # One statement, built once (its compiled form is cached with it), run outside a
        # transaction: one SELECT is atomic, and a server database is asked nothing else
        # (no BEGIN, no ROLLBACK): this read is the start of every load and commit.
        if self._get_stmt is None:
            c = ICEBERG_TABLES.c
            self._get_stmt = select(c.metadata_location, c.previous_metadata_location).where(
                c.catalog_name == bindparam("catalog"),
                c.table_namespace == bindparam("namespace"),
                c.table_name == bindparam("name"),
                *self._type_filter(),
            )
            if self.engine.dialect.name == "sqlite":
                compiled = self._get_stmt.compile(dialect=self.engine.dialect)
                self._get_sqlite = (str(compiled), compiled.positiontup, compiled.params)
        params = {"catalog": self.catalog_name, "namespace": _ns_str(ident.namespace),
                  "name": ident.name}
        fast = self._get_sqlite
        row = self._get_sqlite_row(fast, params) if fast is not None else None
        if row is None:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                row = conn.execute(self._get_stmt, params).first()
        return None if row is None else Pointer(row[0], row[1])

    def _get_sqlite_row(self, fast: tuple[str, Any, Any], params: dict[str, str]) -> Any:
        """SQLite: the same statement on a pooled connection of the driver (a tenth of the
        time of SQLAlchemy's execution, on every load); None when it finds no row or fails
        (the caller asks again through SQLAlchemy, which answers both its usual way)."""
        sql, order, defaults = fast
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            try:
                cursor.execute(sql, tuple(params[k] if k in params else defaults[k]
                                          for k in order))
                return cursor.fetchone()
            finally:
                cursor.close()
        except sqlite3.Error:
            return None
        finally:
            raw.close()

    def list_tables(self, namespace: Namespace) -> list[TableIdentifier]:
        c = ICEBERG_TABLES.c
        stmt = (
            select(c.table_name)
            .where(
                c.catalog_name == self.catalog_name,
                c.table_namespace == _ns_str(namespace),
                *self._type_filter(),
            )
            .order_by(c.table_name)
        )
        with self.engine.connect() as conn:
            return [TableIdentifier(namespace, n) for n in conn.execute(stmt).scalars()]

    def insert(self, ident: TableIdentifier, metadata_location: str) -> None:
        """Add a table row; TableAlreadyExists when the name is taken (also by a view)."""
        row: dict[str, Any] = {
            "catalog_name": self.catalog_name,
            "table_namespace": _ns_str(ident.namespace),
            "table_name": ident.name,
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self.has_type_column:
            row["iceberg_type"] = TABLE_TYPE
        try:
            self.write(insert(ICEBERG_TABLES).values(**row), f"creating table {ident}")
        except IntegrityError:
            raise TableAlreadyExists(
                f"table {ident} already exists in catalog {self.catalog_name!r}"
            ) from None

    def swap(self, ident: TableIdentifier, expected: str, new: str) -> None:
        """The check-and-put: point the table at ``new`` only if it still points at
        ``expected``. CommitConflict when it does not (nothing changed), NotFound when the
        table is gone, CommitStateUnknown when the database may or may not have applied it.
        """
        c = ICEBERG_TABLES.c
        stmt = (
            update(ICEBERG_TABLES)
            .where(*self._where_table(ident), c.metadata_location == expected)
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        count = self.write(stmt, f"commit of table {ident}")
        if count == 1:
            return
        if count == 0:
            if self.get(ident) is None:
                raise NotFound(f"table {ident} does not exist in catalog {self.catalog_name!r}")
            raise CommitConflict(
                f"table {ident} was changed by another writer since {expected}; reload it"
            )
        raise CommitStateUnknown(f"commit of table {ident} changed {count} rows")

    def put_many(self, changes: Sequence[tuple[TableIdentifier, str | None, str]]) -> None:
        """Several check-and-puts (``expected`` None: an INSERT, the table is created) in one
        database transaction: all applied, or none. CommitConflict naming the first table
        that moved (nothing changed), NotFound when one is gone, TableAlreadyExists when a
        created one's name is taken, CommitStateUnknown when the COMMIT (or the connection
        during it) failed."""
        what = "commit of tables " + ", ".join(str(i) for i, _, _ in changes)
        c = ICEBERG_TABLES.c
        conn = self.engine.connect()
        try:
            trans = conn.begin()
            failed: tuple[TableIdentifier, str | None] | None = None
            try:
                for ident, expected, new in changes:
                    if expected is None:
                        row: dict[str, Any] = {
                            "catalog_name": self.catalog_name,
                            "table_namespace": _ns_str(ident.namespace),
                            "table_name": ident.name, "metadata_location": new,
                            "previous_metadata_location": None}
                        if self.has_type_column:
                            row["iceberg_type"] = TABLE_TYPE
                        try:
                            conn.execute(insert(ICEBERG_TABLES).values(**row))
                        except IntegrityError:
                            failed = (ident, None)
                            break
                        continue
                    stmt = (update(ICEBERG_TABLES)
                            .where(*self._where_table(ident), c.metadata_location == expected)
                            .values(metadata_location=new, previous_metadata_location=expected))
                    if int(conn.execute(stmt).rowcount) != 1:
                        failed = (ident, expected)
                        break
            except DBAPIError as e:
                with contextlib.suppress(DBAPIError):
                    trans.rollback()
                if isinstance(e, OperationalError) and _sqlite_busy(e):
                    raise CommitConflict(f"{what}: the catalog database stayed locked") from e
                if e.connection_invalidated or isinstance(e, OperationalError):
                    raise CommitStateUnknown(
                        f"{what}: the database connection failed during the update, its "
                        f"outcome is unknown: {e.orig}") from e
                raise CommitNotApplied(
                    f"catalog {self.catalog_name!r}: {what} failed: {e.orig}") from e
            if failed is not None:
                with contextlib.suppress(DBAPIError):
                    trans.rollback()
                ident, expected = failed
                if expected is None:
                    raise TableAlreadyExists(
                        f"table {ident} already exists in catalog {self.catalog_name!r}")
                if self.get(ident) is None:
                    raise NotFound(
                        f"table {ident} does not exist in catalog {self.catalog_name!r}")
                raise CommitConflict(
                    f"table {ident} was changed by another writer since {expected}; reload it "
                    "(no table of this commit changed)")
            try:
                trans.commit()
            except DBAPIError as e:
                if isinstance(e, OperationalError) and _sqlite_busy(e):
                    with contextlib.suppress(DBAPIError):
                        trans.rollback()
                    raise CommitConflict(f"{what}: the catalog database stayed locked") from e
                raise CommitStateUnknown(
                    f"{what}: COMMIT failed and may or may not have been applied: {e.orig}"
                ) from e
        finally:
            _close_quietly(conn)

    def delete(self, ident: TableIdentifier) -> None:
        """Remove a table's row; NotFound when there is none."""
        if self.write(delete(ICEBERG_TABLES).where(*self._where_table(ident)),
                      f"dropping table {ident}") == 0:
            raise NotFound(f"table {ident} does not exist in catalog {self.catalog_name!r}")

    def rename(self, src: TableIdentifier, dst: TableIdentifier) -> None:
        stmt = (
            update(ICEBERG_TABLES)
            .where(*self._where_table(src))
            .values(table_namespace=_ns_str(dst.namespace), table_name=dst.name)
        )
        try:
            count = self.write(stmt, f"renaming table {src} to {dst}")
        except IntegrityError:
            raise TableAlreadyExists(
                f"table {dst} already exists in catalog {self.catalog_name!r}"
            ) from None
        if count == 0:
            raise NotFound(f"table {src} does not exist in catalog {self.catalog_name!r}")

    # -- namespaces --------------------------------------------------------------------------

    def namespace_exists(self, namespace: Namespace) -> bool:
        """PyIceberg's rule: a property row or a table at or below the namespace."""
        ns, below = _ns_str(namespace), _like_below(namespace)
        t, p = ICEBERG_TABLES.c, NAMESPACE_PROPERTIES.c
        in_tables = select(t.table_namespace).where(
            t.catalog_name == self.catalog_name,
            or_(t.table_namespace == ns, t.table_namespace.like(below, escape="!")),
        ).limit(1)
        in_props = select(p.namespace).where(
            p.catalog_name == self.catalog_name,
            or_(p.namespace == ns, p.namespace.like(below, escape="!")),
        ).limit(1)
        with self.engine.connect() as conn:
            return (conn.execute(in_tables).first() is not None
                    or conn.execute(in_props).first() is not None)

    def list_namespaces(self, parent: Namespace = ()) -> list[Namespace]:
        """The namespaces one level below ``parent`` (the top-level ones for ``()``)."""
        t, p = ICEBERG_TABLES.c, NAMESPACE_PROPERTIES.c
        tables = select(t.table_namespace.label("ns")).where(t.catalog_name == self.catalog_name)
        props = select(p.namespace.label("ns")).where(p.catalog_name == self.catalog_name)
        if parent:
            below = _like_below(parent)
            tables = tables.where(t.table_namespace.like(below, escape="!"))
            props = props.where(p.namespace.like(below, escape="!"))
        depth = len(parent) + 1
        with self.engine.connect() as conn:
            found = {tuple(ns.split(".")) for ns in conn.execute(union(tables, props)).scalars()}
        return sorted({ns[:depth] for ns in found
                       if len(ns) >= depth and ns[:len(parent)] == parent})

    def namespace_properties(self, namespace: Namespace) -> dict[str, str]:
        p = NAMESPACE_PROPERTIES.c
        stmt = select(p.property_key, p.property_value).where(
            p.catalog_name == self.catalog_name, p.namespace == _ns_str(namespace)
        )
        with self.engine.connect() as conn:
            return {k: v for k, v in conn.execute(stmt)}

    def _property_rows(self, namespace: Namespace, props: Mapping[str, str]
                       ) -> list[dict[str, str]]:
        return [
            {"catalog_name": self.catalog_name, "namespace": _ns_str(namespace),
             "property_key": k, "property_value": v}
            for k, v in props.items()
        ]

    def insert_namespace(self, namespace: Namespace, properties: Mapping[str, str]) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(NAMESPACE_PROPERTIES),
                             self._property_rows(namespace, properties))
        except IntegrityError:
            raise NamespaceAlreadyExists(f"namespace {_ns_str(namespace)} already exists") from None

    def update_namespace_properties(
        self, namespace: Namespace, removals: Iterable[str], updates: Mapping[str, str]
    ) -> None:
        p = NAMESPACE_PROPERTIES.c
        keys = sorted(set(removals) | set(updates))
        with self.engine.begin() as conn:
            if keys:
                conn.execute(delete(NAMESPACE_PROPERTIES).where(
                    p.catalog_name == self.catalog_name, p.namespace == _ns_str(namespace),
                    p.property_key.in_(keys),
                ))
            if updates:
                conn.execute(insert(NAMESPACE_PROPERTIES), self._property_rows(namespace, updates))

    def delete_namespace(self, namespace: Namespace) -> None:
        p = NAMESPACE_PROPERTIES.c
        self.write(delete(NAMESPACE_PROPERTIES).where(
            p.catalog_name == self.catalog_name, p.namespace == _ns_str(namespace)
        ), f"dropping namespace {_ns_str(namespace)}")


# -- the catalog ----------------------------------------------------------------------------


class SqlCatalog(Catalog):
    """Metastore tables whose pointers live in a SQL database (see the module docstring).

    ``SqlCatalog("prod", "postgresql+psycopg://host/db", "/warehouse")`` or
    ``SqlCatalog("local", "sqlite:///catalog.db", "/warehouse")``. Tables without an explicit
    location go to ``<warehouse>/<ns.levels>.db/<table>`` (the namespace's ``location``
    property wins), where PyIceberg's ``SqlCatalog`` puts them.
    """

    def __init__(
        self,
        name: str,
        uri: str,
        warehouse: str | None = None,
        io: FileIO | None = None,
        *,
        create_tables: bool = True,
    ) -> None:
        super().__init__(name, io)
        self.uri = uri
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self.engine = create_sql_engine(uri)
        try:
            self.pointers = SqlPointers(self.engine, name, create=create_tables)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"SqlCatalog({self.name!r}, {self.engine.url!r})"

    def close(self) -> None:
        self.engine.dispose()

    # -- namespaces --------------------------------------------------------------------------

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        raw = parent if isinstance(parent, str) else tuple(parent)
        levels = _namespace(raw) if raw else ()
        if levels and not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")
        return self.pointers.list_namespaces(levels)

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        return self.pointers.namespace_exists(_namespace(namespace))

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        levels = _namespace(namespace)
        if self.pointers.namespace_exists(levels):
            raise NamespaceAlreadyExists(f"namespace {_ns_str(levels)} already exists")
        # Java always writes exists=true; PyIceberg only for no properties. Both read either.
        props = {NAMESPACE_EXISTS_PROPERTY: "true", **(properties or {})}
        self.pointers.insert_namespace(levels, props)

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        levels = _namespace(namespace)
        if not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")
        tables = self.pointers.list_tables(levels)
        children = self.pointers.list_namespaces(levels)
        if tables or children:
            raise NamespaceNotEmpty(
                f"namespace {_ns_str(levels)} is not empty: {len(tables)} tables, "
                f"{len(children)} namespaces"
            )
        self.pointers.delete_namespace(levels)

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        levels = _namespace(namespace)
        if not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")
        return self.pointers.namespace_properties(levels)

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        levels = _namespace(namespace)
        removals, updates = set(removals), dict(updates or {})
        if removals & updates.keys():
            raise ValidationError(
                f"properties both removed and updated: {sorted(removals & updates.keys())}"
            )
        if not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")
        self.pointers.update_namespace_properties(levels, removals, updates)

    # -- tables ------------------------------------------------------------------------------

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        levels = _namespace(namespace)
        if not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")
        return self.pointers.list_tables(levels)

    def metadata_location(self, ident: TableIdentifier | str) -> str:
        ident = _ident(ident)
        pointer = self.pointers.get(ident)
        if pointer is None or not pointer.metadata_location:
            raise NotFound(f"table {ident} does not exist in catalog {self.name!r}")
        return pointer.metadata_location

    def default_table_location(self, ident: TableIdentifier) -> str:
        ident = _ident(ident)
        props = self.pointers.namespace_properties(ident.namespace)
        if ns_location := props.get(NAMESPACE_LOCATION_PROPERTY):
            return f"{ns_location.rstrip('/')}/{ident.name}"
        if not self.warehouse:
            raise ValidationError(
                f"catalog {self.name!r} has no warehouse: give the table a location"
            )
        return f"{self.warehouse}/{_ns_str(ident.namespace)}.db/{ident.name}"

    def create_table(
        self,
        ident: TableIdentifier | str,
        schema: Schema,
        spec: PartitionSpec = UNPARTITIONED,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        format_version: int = 2,
    ) -> FloeTable:
        """Create an empty table in an existing namespace (NotFound otherwise)."""
        ident = _ident(ident)
        self._require_namespace(ident.namespace)
        return super().create_table(
            ident, schema, spec, sort_order, properties, location, format_version
        )

    def register_table(self, ident: TableIdentifier | str, metadata_location: str) -> FloeTable:
        """Point a new table name at an existing metadata file (read first, so a missing or
        broken file is refused before anything is written)."""
        ident = _ident(ident)
        self._require_namespace(ident.namespace)
        metadata = self.read_metadata(metadata_location)
        self.pointers.insert(ident, metadata_location)
        return FloeTable(self, ident, metadata, metadata_location)

    def rename_table(self, src: TableIdentifier | str, dst: TableIdentifier | str) -> FloeTable:
        src, dst = _ident(src), _ident(dst)
        self._require_namespace(dst.namespace)
        self.pointers.rename(src, dst)
        return self.load_table(dst)

    def drop_table(self, ident: TableIdentifier | str, purge: bool = False) -> None:
        """Forget the table; with ``purge`` then delete every file its metadata references
        (data, delete, manifest, manifest-list, statistics and metadata files)."""
        ident = _ident(ident)
        pointer = self.pointers.get(ident)
        if pointer is None or not pointer.metadata_location:
            raise NotFound(f"table {ident} does not exist in catalog {self.name!r}")
        location = pointer.metadata_location
        metadata = self.read_metadata(location) if purge else None
        self.pointers.delete(ident)
        if metadata is not None:
            self.purge_table_files(location, metadata)
            if pointer.previous_metadata_location:
                self.io.delete(pointer.previous_metadata_location, missing_ok=True)

    def _require_namespace(self, levels: Namespace) -> None:
        if not self.pointers.namespace_exists(levels):
            raise NotFound(f"namespace {_ns_str(levels)} does not exist in catalog {self.name!r}")

    # -- the commit primitive ----------------------------------------------------------------

    @property
    def commits_tables_atomically(self) -> bool:
        return True

    def commit_tables(self, commits: Sequence[TableCommit]) -> list[str]:
        """Write each table's next metadata file, then swap (or, for a created table,
        insert) every pointer in one database transaction (:meth:`SqlPointers.put_many`):
        all or none. The files are deleted again when the database certainly took none of
        them; kept when the outcome is unknown."""
        idents = [_ident(c.ident) for c in commits]
        if len(set(idents)) != len(idents):
            raise ValidationError("a table may be named once in a commit of several tables")
        for ident, c in zip(idents, commits, strict=True):
            if c.base_location is None:
                self._require_namespace(ident.namespace)
        written: list[str] = []
        try:
            for c in commits:
                md = c.new_metadata
                compressed = md.properties.get(METADATA_COMPRESSION, "none").lower() == "gzip"
                location = next_metadata_location(md.location, c.base_location, compressed)
                self.io.write(location, serialize_metadata(md, compressed), overwrite=False)
                written.append(location)
            self.pointers.put_many([(ident, c.base_location, loc) for ident, c, loc
                                    in zip(idents, commits, written, strict=True)])
        except CommitStateUnknown:
            raise
        except BaseException:
            for location in written:
                self.io.delete(location, missing_ok=True)
            raise
        for c in commits:
            self._delete_removed_metadata(c.base, c.new_metadata)
        return written

    def _commit(
        self, ident: TableIdentifier, base_location: str | None, new_metadata: TableMetadata
    ) -> str:
        """Write the next ``VVVVV-<uuid>.metadata.json``, then INSERT (create) or
        check-and-put the pointer. The file is deleted again when the database certainly did
        not take it; kept when the outcome is unknown."""
        ident = _ident(ident)
        if base_location is None:
            self._require_namespace(ident.namespace)
        compressed = new_metadata.properties.get(METADATA_COMPRESSION, "none").lower() == "gzip"
        location = next_metadata_location(new_metadata.location, base_location, compressed)
        self.io.write(location, serialize_metadata(new_metadata, compressed), overwrite=False)
        try:
            if base_location is None:
                self.pointers.insert(ident, location)
            else:
                self.pointers.swap(ident, base_location, location)
        except CommitStateUnknown:
            raise
        except BaseException:
            self.io.delete(location, missing_ok=True)
            raise
        return location

