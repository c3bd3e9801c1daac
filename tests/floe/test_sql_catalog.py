"""floe.catalog.sql: the catalog API on SQLite and PostgreSQL, the check-and-put commit, and
bad names refused with nothing written."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, select, text

from floe.catalog.base import METADATA_CACHE, TableAlreadyExists, TableIdentifier
from floe.catalog.sql import (
    ICEBERG_TABLES,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    SqlCatalog,
    next_metadata_location,
    parse_metadata_version,
)
from floe.errors import CommitConflict, NotFound, ValidationError
from floe.metadata import parse_metadata
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "name", STRING))
VERSIONED = re.compile(r"/metadata/(\d{5})-[0-9a-f-]{36}\.metadata\.json$")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def catalog(sql_uri: str, catalog_name: str, warehouse: Path):
    cat = SqlCatalog(catalog_name, sql_uri, str(warehouse))
    yield cat
    cat.close()


def pointer_rows(cat: SqlCatalog) -> list[tuple]:
    c = ICEBERG_TABLES.c
    with cat.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            select(c.table_namespace, c.table_name, c.metadata_location,
                   c.previous_metadata_location)
            .where(c.catalog_name == cat.name).order_by(c.table_namespace, c.table_name)
        )]


def test_metadata_file_names():
    assert parse_metadata_version(None) == -1
    assert parse_metadata_version("/w/t/metadata/v3.metadata.json") == -1
    assert parse_metadata_version(
        "/w/t/metadata/00041-6c97e413-d51b-4538-ac70-12fe2a85cb83.metadata.json") == 41
    assert VERSIONED.search(next_metadata_location("/w/t/", None)).group(1) == "00000"
    nxt = next_metadata_location(
        "/w/t", "/w/t/metadata/00041-6c97e413-d51b-4538-ac70-12fe2a85cb83.gz.metadata.json")
    assert VERSIONED.search(nxt).group(1) == "00042"


# -- namespaces -----------------------------------------------------------------------------


def test_namespaces(catalog: SqlCatalog):
    assert catalog.list_namespaces() == []
    catalog.create_namespace("sales", {"owner": "ana"})
    catalog.create_namespace(("lake", "raw"))
    catalog.create_namespace("lake.raw.deep")
    assert catalog.list_namespaces() == [("lake",), ("sales",)]
    assert catalog.list_namespaces("lake") == [("lake", "raw")]
    assert catalog.list_namespaces(("lake", "raw")) == [("lake", "raw", "deep")]
    # "lake" has no row of its own but exists because something lives below it (PyIceberg).
    assert catalog.namespace_exists("lake") and catalog.namespace_exists("lake.raw")
    assert not catalog.namespace_exists("lak") and not catalog.namespace_exists("sales.x")
    assert catalog.load_namespace_properties("sales") == {"exists": "true", "owner": "ana"}

    catalog.update_namespace_properties("sales", removals={"owner"}, updates={"team": "bi"})
    assert catalog.load_namespace_properties("sales") == {"exists": "true", "team": "bi"}

    with pytest.raises(NamespaceAlreadyExists):
        catalog.create_namespace("sales")
    with pytest.raises(NamespaceNotEmpty):
        catalog.drop_namespace("lake.raw")
    with pytest.raises(NotFound):
        catalog.drop_namespace("nope")
    with pytest.raises(NotFound):
        catalog.list_namespaces("nope")
    with pytest.raises(NotFound):
        catalog.load_namespace_properties("nope")
    catalog.drop_namespace("lake.raw.deep")
    catalog.drop_namespace("lake.raw")
    catalog.drop_namespace("sales")
    assert catalog.list_namespaces() == []


def test_like_wildcards_in_namespace_names_are_literal(catalog: SqlCatalog):
    catalog.create_namespace("a_b.c")
    assert catalog.namespace_exists("a_b")
    assert not catalog.namespace_exists("axb")
    assert catalog.list_namespaces("a_b") == [("a_b", "c")]


def test_catalog_names_are_separate(sql_uri: str, catalog_name: str, warehouse: Path):
    with SqlCatalog(catalog_name, sql_uri, str(warehouse)) as one, \
            SqlCatalog(catalog_name + "_other", sql_uri, str(warehouse)) as other:
        one.create_namespace("db")
        one.create_table("db.t", SCHEMA)
        assert other.list_namespaces() == []
        assert not other.table_exists("db.t")


# -- tables ---------------------------------------------------------------------------------


def test_create_load_list_tables(catalog: SqlCatalog, warehouse: Path):
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", SCHEMA, properties={"k": "v"})
    assert table.location == f"{warehouse}/db.db/events"  # where PyIceberg puts it
    assert VERSIONED.search(table.metadata_location).group(1) == "00000"
    assert Path(table.metadata_location).is_file()
    assert pointer_rows(catalog) == [("db", "events", table.metadata_location, None)]

    loaded = catalog.load_table(TableIdentifier(("db",), "events"))
    assert loaded.metadata == table.metadata and loaded.properties["k"] == "v"
    assert catalog.list_tables("db") == [TableIdentifier(("db",), "events")]
    assert catalog.table_exists("db.events") and not catalog.table_exists("db.other")
    with pytest.raises(TableAlreadyExists):
        catalog.create_table("db.events", SCHEMA)
    with pytest.raises(NotFound):
        catalog.create_table("missing.t", SCHEMA)
    with pytest.raises(NotFound):
        catalog.load_table("db.other")
    with pytest.raises(NotFound):
        catalog.list_tables("missing")


def test_a_commit_leaves_its_metadata_parsed_in_the_cache(catalog: SqlCatalog):
    import pyarrow as pa

    catalog.create_namespace("db")
    table = catalog.create_table("db.cached", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    location = catalog.metadata_location("db.cached")
    key = (location, catalog.io.identity(location))
    assert key in METADATA_CACHE  # put there by the commit, not by a read
    with open(location, "rb") as f:
        assert METADATA_CACHE.get(key) == parse_metadata(f.read(), location)


def test_nested_namespace_and_namespace_location(catalog: SqlCatalog, tmp_path: Path):
    catalog.create_namespace("a.b")
    catalog.create_namespace("placed", {"location": str(tmp_path / "elsewhere") + "/"})
    assert catalog.create_table("a.b.t", SCHEMA).location.endswith("/warehouse/a.b.db/t")
    assert catalog.create_table("placed.t", SCHEMA).location == str(tmp_path / "elsewhere/t")
    explicit = catalog.create_table("placed.u", SCHEMA, location=str(tmp_path / "u") + "/")
    assert explicit.location == str(tmp_path / "u")
    assert catalog.list_tables(("a", "b")) == [TableIdentifier(("a", "b"), "t")]
    assert catalog.list_tables("a") == []


def test_register_rename_drop(catalog: SqlCatalog):
    catalog.create_namespace("db")
    catalog.create_namespace("archive")
    t = catalog.create_table("db.t", SCHEMA)

    registered = catalog.register_table("archive.copy", t.metadata_location)
    assert registered.metadata == t.metadata
    with pytest.raises(TableAlreadyExists):
        catalog.register_table("archive.copy", t.metadata_location)
    with pytest.raises(NotFound):
        catalog.register_table("archive.ghost", t.metadata_location + ".missing")
    assert not catalog.table_exists("archive.ghost")

    renamed = catalog.rename_table("db.t", "archive.t2")
    assert renamed.metadata_location == t.metadata_location
    assert not catalog.table_exists("db.t")
    with pytest.raises(TableAlreadyExists):
        catalog.rename_table("archive.t2", "archive.copy")
    with pytest.raises(NotFound):
        catalog.rename_table("db.t", "archive.t3")
    with pytest.raises(NotFound):
        catalog.rename_table("archive.t2", "nowhere.t")

    catalog.drop_table("archive.copy")  # no purge: the files stay
    assert Path(t.metadata_location).is_file()
    assert not catalog.table_exists("archive.copy")
    with pytest.raises(NotFound):
        catalog.drop_table("archive.copy")
    assert catalog.list_tables("archive") == [TableIdentifier(("archive",), "t2")]


def test_drop_with_purge_deletes_metadata_files(catalog: SqlCatalog):
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    second = catalog.commit_metadata(
        t.identifier, t.metadata_location, t.metadata,
        dataclasses.replace(t.metadata, properties={**t.properties, "x": "1"}),
    )
    assert VERSIONED.search(second).group(1) == "00001"
    catalog.drop_table("db.t", purge=True)
    assert not Path(second).exists() and not Path(t.metadata_location).exists()
    assert pointer_rows(catalog) == []


def test_gzip_metadata(catalog: SqlCatalog):
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t", SCHEMA, properties={"write.metadata.compression-codec": "gzip"})
    assert t.metadata_location.endswith(".gz.metadata.json")
    assert Path(t.metadata_location).read_bytes()[:2] == b"\x1f\x8b"
    assert catalog.load_table("db.t").metadata == t.metadata


# -- the check-and-put ----------------------------------------------------------------------


def _with_property(md, key: str, value: str):
    return dataclasses.replace(md, properties={**md.properties, key: value})


def test_two_writers_from_the_same_base(catalog: SqlCatalog, warehouse: Path):
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    base_location, base = t.metadata_location, t.metadata

    winner = catalog._commit(t.identifier, base_location, _with_property(base, "w", "1"))
    files_before = sorted(warehouse.rglob("*.metadata.json"))
    with pytest.raises(CommitConflict):
        catalog._commit(t.identifier, base_location, _with_property(base, "w", "2"))

    assert pointer_rows(catalog) == [("db", "t", winner, base_location)]
    assert catalog.load_table("db.t").properties["w"] == "1"
    # the loser's metadata file was removed again: the outcome was certain
    assert sorted(warehouse.rglob("*.metadata.json")) == files_before
    assert VERSIONED.search(winner).group(1) == "00001"


def test_check_and_put_between_two_catalog_objects(sql_uri: str, catalog_name: str,
                                                    warehouse: Path):
    """Two processes' view: separate engines, same database."""
    with SqlCatalog(catalog_name, sql_uri, str(warehouse)) as a, \
            SqlCatalog(catalog_name, sql_uri, str(warehouse)) as b:
        a.create_namespace("db")
        ta = a.create_table("db.t", SCHEMA)
        tb = b.load_table("db.t")
        tb.catalog.commit_metadata(tb.identifier, tb.metadata_location, tb.metadata,
                                   _with_property(tb.metadata, "by", "b"))
        with pytest.raises(CommitConflict):
            a._commit(ta.identifier, ta.metadata_location, _with_property(ta.metadata, "by", "a"))
        assert a.load_table("db.t").properties["by"] == "b"


def test_commit_to_a_dropped_table_is_not_found(catalog: SqlCatalog, warehouse: Path):
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    catalog.drop_table("db.t")
    with pytest.raises(NotFound):
        catalog._commit(t.identifier, t.metadata_location, _with_property(t.metadata, "a", "b"))
    assert [p.name for p in warehouse.rglob("*.metadata.json")] == [
        Path(t.metadata_location).name]


def test_create_race_is_table_already_exists(catalog: SqlCatalog, warehouse: Path):
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(TableAlreadyExists):
        catalog._commit(t.identifier, None, _with_property(t.metadata, "a", "b"))
    assert len(list(warehouse.rglob("*.metadata.json"))) == 1


def test_sqlite_lock_timeout_is_a_conflict(tmp_path: Path, catalog_name: str):
    """SQLite's "database is locked" means the UPDATE never ran: a retryable conflict."""
    db = tmp_path / "c.db"
    cat = SqlCatalog(catalog_name, f"sqlite:///{db}?timeout=0.2", str(tmp_path / "w"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    blocker_engine = create_engine(f"sqlite:///{db}")
    blocker = blocker_engine.raw_connection()
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(CommitConflict, match="locked"):
            cat._commit(t.identifier, t.metadata_location, _with_property(t.metadata, "a", "b"))
    finally:
        blocker.rollback()
        blocker.close()
        blocker_engine.dispose()
    assert cat.metadata_location("db.t") == t.metadata_location
    assert len(list((tmp_path / "w").rglob("*.metadata.json"))) == 1
    cat.close()


# -- bad names ------------------------------------------------------------------------------


BAD_NAMESPACES = ["", "a/b", "..", "../x", "a\\b", ".hidden", "x\x00"]
BAD_TABLES = [("db", "a/b"), ("db", ".."), ("db", "../../etc"), ("db", ""), ("db", "a.b"),
              ("d/b", "t"), ("..", "t")]


@pytest.mark.parametrize("namespace", BAD_NAMESPACES + [("a.b",), ("ok", "x/y")])
def test_bad_namespace_names_write_nothing(catalog: SqlCatalog, namespace, warehouse: Path):
    with pytest.raises(ValidationError):
        catalog.create_namespace(namespace)
    assert catalog.list_namespaces() == []


@pytest.mark.parametrize("ident", BAD_TABLES)
def test_bad_table_names_write_nothing(catalog: SqlCatalog, ident, warehouse: Path):
    catalog.create_namespace("db")
    good = catalog.create_table("db.good", SCHEMA)
    with pytest.raises(ValidationError):
        catalog.create_table(ident, SCHEMA)
    with pytest.raises(ValidationError):
        catalog.register_table(ident, good.metadata_location)
    with pytest.raises(ValidationError):
        catalog.rename_table("db.good", ident)
    with pytest.raises(ValidationError):
        catalog.drop_table(ident, purge=True)
    assert pointer_rows(catalog) == [("db", "good", good.metadata_location, None)]
    assert [p.name for p in warehouse.rglob("*") if p.is_file()] == [
        Path(good.metadata_location).name]


# -- the database schema --------------------------------------------------------------------


def _columns(uri: str) -> dict[str, list[tuple]]:
    engine = create_engine(uri)
    try:
        insp = inspect(engine)
        out = {}
        for table in ("iceberg_tables", "iceberg_namespace_properties"):
            cols = [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(table)]
            pk = insp.get_pk_constraint(table)["constrained_columns"]
            out[table] = cols + [("pk", *pk)]
        return out
    finally:
        engine.dispose()


def test_schema_is_the_one_pyiceberg_creates(tmp_path: Path):
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    ours, theirs = f"sqlite:///{tmp_path / 'floe.db'}", f"sqlite:///{tmp_path / 'pyi.db'}"
    SqlCatalog("c", ours, str(tmp_path)).close()
    PyIcebergSqlCatalog("c", uri=theirs, warehouse=str(tmp_path)).close()
    assert _columns(ours) == _columns(theirs)
    assert _columns(ours)["iceberg_tables"][:3] == [
        ("catalog_name", "VARCHAR(255)", False), ("table_namespace", "VARCHAR(255)", False),
        ("table_name", "VARCHAR(255)", False)]


def test_views_and_old_schema(tmp_path: Path, catalog_name: str):
    """Rows of views are invisible to table operations; a database made by an old JDBC
    catalog (no iceberg_type column) is used as it is."""
    uri = f"sqlite:///{tmp_path / 'v0.db'}"
    engine = create_engine(uri)
    with engine.begin() as conn:  # Java JdbcUtil's V0 DDL
        conn.execute(text(
            "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
            "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
            "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
            "PRIMARY KEY (catalog_name, table_namespace, table_name))"))
        conn.execute(text(
            "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
            "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),"
            "property_value VARCHAR(1000),PRIMARY KEY (catalog_name, namespace, property_key))"))
    engine.dispose()
    with SqlCatalog(catalog_name, uri, str(tmp_path / "w")) as cat:
        assert not cat.pointers.has_type_column
        cat.create_namespace("db")
        t = cat.create_table("db.t", SCHEMA)
        assert cat.load_table("db.t").metadata_location == t.metadata_location

    with SqlCatalog(catalog_name, f"sqlite:///{tmp_path / 'v1.db'}", str(tmp_path)) as cat:
        cat.create_namespace("db")
        with cat.engine.begin() as conn:
            conn.execute(ICEBERG_TABLES.insert().values(
                catalog_name=catalog_name, table_namespace="db", table_name="v",
                metadata_location="/views/v.metadata.json", iceberg_type="VIEW"))
        assert cat.list_tables("db") == [] and not cat.table_exists("db.v")
        with pytest.raises(TableAlreadyExists):
            cat.create_table("db.v", SCHEMA)
        with pytest.raises(NotFound):
            cat.drop_table("db.v")
        assert parse_metadata  # the view row was never read as a table


def test_connection_lost_during_the_update_is_commit_state_unknown(
    postgres_url: str, catalog_name: str, warehouse: Path
):
    """The committer's backend is killed while its UPDATE waits for a row lock: floe cannot
    know what the server did, so CommitStateUnknown, and the new metadata file is kept."""
    import threading
    import time

    from floe.errors import CommitStateUnknown

    cat = SqlCatalog(catalog_name, postgres_url, str(warehouse))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    outcome: list[BaseException | str] = []

    def commit() -> None:
        try:
            outcome.append(cat._commit(t.identifier, t.metadata_location,
                                       _with_property(t.metadata, "a", "b")))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    other = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    locker_engine = create_engine(postgres_url)
    locker = locker_engine.connect()
    try:
        locker.execute(text("SELECT 1 FROM iceberg_tables WHERE catalog_name = :c FOR UPDATE"),
                       {"c": catalog_name})
        thread = threading.Thread(target=commit)
        thread.start()
        pid = None
        with other.connect() as conn:
            for _ in range(200):
                pid = conn.execute(text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE 'UPDATE iceberg_tables%'"
                )).scalar()
                if pid is not None:
                    break
                time.sleep(0.05)
            assert pid is not None, "the commit never waited for the row lock"
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        thread.join(30)
    finally:
        locker.rollback()
        locker.close()
        locker_engine.dispose()
        other.dispose()
    assert len(outcome) == 1 and isinstance(outcome[0], CommitStateUnknown), outcome
    assert cat.metadata_location("db.t") == t.metadata_location
    kept = [p for p in warehouse.rglob("*.metadata.json") if p.name.startswith("00001-")]
    assert len(kept) == 1  # never deleted: another reader could not tell it was unused
    cat.close()
