"""DuckDB 1.5.5 as a client of the Iceberg REST catalog the site serves under ``/iceberg/``
(``ATTACH '<catalog>' AS x (TYPE iceberg, ENDPOINT '<site>/iceberg', CLIENT_ID '<user>',
CLIENT_SECRET '<API token>', READ_ONLY false)``), over a live server: DuckDB creates tables,
inserts, deletes, updates and reads them on a local warehouse, and what it writes is read back
the same by floe's planner and by PyIceberg; what PyIceberg and floe wrote (copy-on-write and
merge-on-read deletes, partitioned tables) DuckDB reads the same. Every DuckDB commit is the
user's audit entry with DuckDB named as the engine; a viewer's INSERT is 403 and changes
nothing; a conflicting commit is 409 (DuckDB does not retry it).

What DuckDB 1.5.5 sends (seen in the request log): client credentials as HTTP Basic to
``/v1/oauth/tokens``; ``CREATE TABLE`` as a staged create, then ``updateTable`` with
``assert-create`` (and the first snapshot with it for ``CREATE TABLE AS``); every other change
(INSERT, DELETE, UPDATE, ALTER TABLE ADD COLUMN) as ``transactions/commit``, one per DuckDB
transaction, with all the tables it wrote; ``DROP TABLE`` without ``purgeRequested``. Its
engine is its User-Agent, ``duckdb/v1.5.5(<platform>) <client> <commit>``. Data files go
under the table's location (local paths on a local warehouse, ``s3://`` on a bucket, where
DuckDB needs either an S3 secret of its own or the storage config Floe vends), deletes as
position-delete files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from explorer.audit.selectors import table_audit
from explorer.catalogs import catalog_get
from explorer.models import AuditEntry
from floe.catalog.base import TableIdentifier
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.rest import RestCatalog
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.table import Table
from tests.api import test_iceberg_rest as served
from tests.api.test_iceberg_rest import Site, _pyiceberg
from tests.object_store import MotoS3, duckdb_connect, unique_name

duckdb = pytest.importorskip("duckdb")

pytestmark = pytest.mark.django_db(transaction=True)

DUCKDB_ENGINE = "duckdb/v1.5.5"

#: The live server with a SQL catalog (SQLite, PostgreSQL) and a file-system catalog, and the
#: users ann (admin), mia (maintainer) and vic (viewer) of test_iceberg_rest.
site = served.site
#: What only the client's side changes runs on SQLite alone (commits are the same code).
SQLITE_ONLY = pytest.mark.parametrize("site", ["sqlite"], indirect=True)

Duck = Callable[..., Any]


@pytest.fixture
def duck(site: Site) -> Iterator[Duck]:
    """``duck(user, warehouse)``: an in-memory DuckDB with the site's catalog ``warehouse``
    attached read-write as ``lake``, logged in with OAuth2 client credentials (the user's
    name and API token); closed at the end."""
    connections: list[Any] = []

    def connect(user: str, warehouse: str) -> Any:
        con = duckdb_connect()
        connections.append(con)
        con.execute(f"ATTACH '{warehouse}' AS lake (TYPE iceberg, ENDPOINT '{site.uri}', "
                    f"CLIENT_ID '{user}', CLIENT_SECRET '{site.keys[user]}', "
                    f"READ_ONLY false)")
        return con

    yield connect
    for con in connections:
        con.close()


def _floe_rows(table: Table) -> list[tuple[Any, ...]]:
    data = plan_to_table(table.io, plan_files(table.io, table.metadata))
    return sorted(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def _pyiceberg_rows(site: Site, warehouse: str, name: str) -> list[tuple[Any, ...]]:
    data = _pyiceberg(site, warehouse, token=site.keys["vic"]).load_table(name).scan().to_arrow()
    return sorted(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def _entries(catalog: str, table: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(catalog=catalog, table=table)
                .order_by("created_at", "id"))


# -- DuckDB writes, floe and PyIceberg read ---------------------------------------------------


def test_duckdb_creates_inserts_deletes_updates_and_each_commit_is_the_users(
        site: Site, duck: Duck) -> None:
    duck("ann", site.sql).execute("CREATE SCHEMA lake.db")  # createNamespace: an admin's
    con = duck("mia", site.sql)
    con.execute("CREATE TABLE lake.db.events (id BIGINT, cat VARCHAR)")
    con.execute("INSERT INTO lake.db.events SELECT i, 'c' || (i % 3) FROM range(10) t(i)")
    con.execute("DELETE FROM lake.db.events WHERE id IN (2, 7)")
    con.execute("UPDATE lake.db.events SET cat = 'z' WHERE id = 5")
    expected = sorted([(i, f"c{i % 3}") for i in range(10) if i not in (2, 5, 7)] + [(5, "z")])
    assert con.execute("SELECT * FROM lake.db.events ORDER BY id").fetchall() == expected
    # floe's SQL catalog (the same database) and PyIceberg through the REST catalog agree
    with site.sql_catalog() as catalog:
        table = catalog.load_table("db.events")
        assert _floe_rows(table) == expected
        plan = plan_files(table.io, table.metadata)
    assert _pyiceberg_rows(site, site.sql, "db.events") == expected
    # DuckDB wrote its data and position-delete files under the table's local location
    files = [t.data_file.file_path for t in plan.tasks]
    deletes = {d.path for t in plan.tasks for d in t.delete_files}
    assert files and deletes
    assert all(f.startswith(str(site.sql_warehouse)) and Path(f).is_file()
               for f in [*files, *deletes])
    # every change is mia's, through DuckDB, with the metadata before and after
    entries = _entries(site.sql, "events")
    assert [e.action for e in entries] == ["rest_create_table"] + ["rest_commit"] * 3
    assert {(e.actor_name, e.actor_via, e.outcome) for e in entries} == {
        ("mia", "rest", "succeeded")}
    assert all(e.params["engine"].startswith(DUCKDB_ENGINE) for e in entries)
    assert entries[0].params["operation"] == "updateTable"  # the staged create, committed
    assert [e.params["operation"] for e in entries[1:]] == ["commitTransaction"] * 3
    assert {tuple(e.params["updates"]) for e in entries[1:]} == {
        ("add-snapshot", "set-snapshot-ref")}
    assert [e.metadata_before for e in entries[1:]] == [e.metadata_after for e in entries[:-1]]
    assert entries[-1].metadata_after == table.metadata_location
    assert entries[-1].snapshot_after == table.metadata.current_snapshot_id
    assert AuditEntry.objects.get(action="rest_create_namespace").actor_name == "ann"
    # the table's Audit tab: every version is mia's change through DuckDB, none external
    rows = table_audit(table=table)
    assert [r.source for r in rows] == ["floe"] * 4
    assert {r.actor for r in rows} == {"mia"}
    assert all(r.engine and r.engine.startswith(DUCKDB_ENGINE) for r in rows)
    page = Client()
    page.force_login(User.objects.get(username="vic"))
    doc = page.get(f"/catalogs/{site.sql}/namespaces/db/tables/events/audit/",
                   {"format": "json"}).json()
    assert (doc[0]["source"], doc[0]["actor"], doc[0]["action"]) == (
        "floe", "mia", "rest_commit")
    assert doc[0]["engine"].startswith(DUCKDB_ENGINE)


def test_duckdb_create_table_as_and_a_transaction_over_two_tables(site: Site,
                                                                   duck: Duck) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    con = duck("mia", site.sql)
    # the first snapshot's manifests are written before the staged create is committed
    con.execute("CREATE TABLE lake.db.a AS SELECT range AS x FROM range(3)")
    con.execute("BEGIN")
    con.execute("CREATE TABLE lake.db.b (x BIGINT)")
    con.execute("INSERT INTO lake.db.b VALUES (10), (11)")
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM lake.db.a").fetchone() == (3,)
    # one DuckDB transaction writing two tables is one atomic transactions/commit
    con.execute("BEGIN")
    con.execute("INSERT INTO lake.db.a VALUES (3)")
    con.execute("DELETE FROM lake.db.b WHERE x = 10")
    con.execute("COMMIT")
    with site.sql_catalog() as catalog:
        assert _floe_rows(catalog.load_table("db.a")) == [(0,), (1,), (2,), (3,)]
        assert _floe_rows(catalog.load_table("db.b")) == [(11,)]
    assert _pyiceberg_rows(site, site.sql, "db.a") == [(0,), (1,), (2,), (3,)]
    creates = AuditEntry.objects.filter(action="rest_create_table").order_by("table")
    assert [(e.table, e.params["operation"], e.snapshot_after is not None)
            for e in creates] == [("a", "updateTable", True), ("b", "updateTable", True)]
    together = AuditEntry.objects.filter(action="rest_commit", params__transaction=2)
    assert sorted(e.table for e in together) == ["a", "b"]
    assert {e.params["operation"] for e in together} == {"commitTransaction"}


@SQLITE_ONLY
def test_duckdb_merges_evolves_renames_and_drops_a_table(site: Site, duck: Duck) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    con = duck("mia", site.sql)
    con.execute("CREATE TABLE lake.db.t (id BIGINT)")
    con.execute("INSERT INTO lake.db.t VALUES (1)")
    con.execute("ALTER TABLE lake.db.t ADD COLUMN c VARCHAR")
    con.execute("INSERT INTO lake.db.t VALUES (2, 'a'), (3, 'a')")
    con.execute("MERGE INTO lake.db.t USING (SELECT 2 AS id, 'm' AS c UNION ALL "
                "SELECT 9, 'n') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET c = s.c "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.c)")
    con.execute("ALTER TABLE lake.db.t SET PARTITIONED BY (c)")
    con.execute("INSERT INTO lake.db.t VALUES (20, 'p')")
    con.execute("ALTER TABLE lake.db.t RENAME COLUMN c TO note")
    con.execute("ALTER TABLE lake.db.t RENAME TO renamed")
    expected = [(1, None), (2, "m"), (3, "a"), (9, "n"), (20, "p")]
    with site.sql_catalog() as catalog:
        assert not catalog.table_exists("db.t")
        table = catalog.load_table("db.renamed")
        assert [f.name for f in table.schema().fields] == ["id", "note"]
        assert [f.name for f in table.spec().fields] and len(table.metadata.partition_specs) == 2
        assert _floe_rows(table) == expected
    assert _pyiceberg_rows(site, site.sql, "db.renamed") == expected
    con.execute("CREATE TABLE lake.db.v3 (x INT) WITH ('format-version' = '3')")
    con.execute("INSERT INTO lake.db.v3 VALUES (1)")
    con.execute("DROP TABLE lake.db.renamed")  # no purge asked: a maintainer may
    with site.sql_catalog() as catalog:
        v3 = catalog.load_table("db.v3")
        assert v3.format_version == 3 and _floe_rows(v3) == [(1,)]
        assert not catalog.table_exists("db.renamed")
    actions = [(e.action, e.params["operation"], e.params.get("updates"))
               for e in AuditEntry.objects.filter(actor_name="mia").order_by("id")]
    assert ("rest_commit", "commitTransaction", ["add-schema", "set-current-schema"]) in actions
    assert ("rest_commit", "commitTransaction", ["add-spec", "set-default-spec"]) in actions
    assert [a[:2] for a in actions[-3:]] == [
        ("rest_create_table", "updateTable"), ("rest_commit", "commitTransaction"),
        ("rest_drop_table", "dropTable")]
    assert ("rest_rename_table", "renameTable", None) in actions


@SQLITE_ONLY
def test_a_file_system_catalog_served_to_duckdb(site: Site, duck: Duck) -> None:
    duck("ann", site.files).execute("CREATE SCHEMA lake.lake")
    con = duck("mia", site.files)
    con.execute("CREATE TABLE lake.lake.t AS SELECT range AS id FROM range(5)")
    con.execute("DELETE FROM lake.lake.t WHERE id = 1")
    con.execute("UPDATE lake.lake.t SET id = 40 WHERE id = 4")
    table = FileSystemCatalog("f", str(site.files_warehouse)).load_table("lake.t")
    assert table.metadata_location.endswith("/metadata/v3.metadata.json")
    assert _floe_rows(table) == [(0,), (2,), (3,), (40,)]
    assert con.execute("SELECT id FROM lake.lake.t ORDER BY id").fetchall() == _floe_rows(table)
    assert [e.actor_name for e in _entries(site.files, "t")] == ["mia"] * 3


# -- PyIceberg and floe write, DuckDB reads ---------------------------------------------------


@SQLITE_ONLY
def test_duckdb_reads_what_pyiceberg_and_floe_wrote_and_writes_partitions(
        site: Site, duck: Duck) -> None:
    ann = _pyiceberg(site, site.sql, token=site.keys["ann"])
    ann.create_namespace("db")
    table = ann.create_table("db.p", schema=served._rows(0, 1).schema)
    with table.update_spec() as update:
        update.add_identity("cat")
    table = ann.load_table("db.p")
    table.append(served._rows(0, 9))  # cat c0, c1, c2: three partitions
    table.delete("id = 1")  # PyIceberg: copy-on-write
    floe_client = RestCatalog("served", {"uri": site.uri, "warehouse": site.sql,
                                         "credential": f"mia:{site.keys['mia']}"})
    mine = floe_client.load_table(TableIdentifier(("db",), "p"))
    mine.append(served._rows(20, 3))
    mine.refresh().delete_where("id = 21", mode="merge-on-read")  # floe: a delete file
    floe_client.close()
    con = duck("mia", site.sql)
    expected = sorted((i, f"c{i % 3}") for i in [*range(9), *range(20, 23)] if i not in (1, 21))
    assert con.execute("SELECT id, cat FROM lake.db.p ORDER BY id").fetchall() == expected
    # DuckDB writes into the partitions, and deletes in them
    con.execute("INSERT INTO lake.db.p VALUES (100, 'c0'), (101, 'new')")
    con.execute("DELETE FROM lake.db.p WHERE id = 3")
    expected = sorted([r for r in expected if r[0] != 3] + [(100, "c0"), (101, "new")])
    assert _pyiceberg_rows(site, site.sql, "db.p") == expected
    with site.sql_catalog() as catalog:
        table = catalog.load_table("db.p")
        assert _floe_rows(table) == expected
        # DuckDB's partition values prune: a filter on one partition plans its files only
        plan = plan_files(table.io, table.metadata, row_filter="cat = 'new'")
    assert [t.data_file.partition for t in plan.tasks] == [("new",)]
    assert "/cat=new/" in plan.tasks[0].data_file.file_path
    assert {e.params["engine"].split(" ")[0] for e in _entries(site.sql, "p")} >= {
        "PyIceberg", DUCKDB_ENGINE + "(linux_amd64)"}


# -- roles, credentials, conflicts -------------------------------------------------------------


@SQLITE_ONLY
def test_a_viewers_duckdb_insert_is_refused_and_changes_nothing(site: Site,
                                                                duck: Duck) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    duck("mia", site.sql).execute("CREATE TABLE lake.db.t AS SELECT 1 AS id")
    with site.sql_catalog() as catalog:
        before = catalog.metadata_location(TableIdentifier(("db",), "t"))
    entries = AuditEntry.objects.count()
    vic = duck("vic", site.sql)
    assert vic.execute("SELECT id FROM lake.db.t").fetchall() == [(1,)]  # a viewer reads
    for statement in ("INSERT INTO lake.db.t VALUES (2)", "DELETE FROM lake.db.t",
                      "CREATE TABLE lake.db.u (x INT)"):
        with pytest.raises(duckdb.Error, match="Forbidden_403|403"):
            vic.execute(statement)
    with site.sql_catalog() as catalog:
        assert catalog.metadata_location(TableIdentifier(("db",), "t")) == before
        assert not catalog.table_exists(TableIdentifier(("db",), "u"))
    assert AuditEntry.objects.count() == entries
    assert vic.execute("SELECT id FROM lake.db.t").fetchall() == [(1,)]


@SQLITE_ONLY
def test_duckdb_with_a_token_secret_and_with_a_wrong_client_secret(site: Site) -> None:
    con = duckdb_connect()
    try:
        # the API token itself as the bearer token (DuckDB's TOKEN secret)
        con.execute(f"CREATE SECRET floe (TYPE iceberg, TOKEN '{site.keys['ann']}')")
        con.execute(f"ATTACH '{site.sql}' AS lake (TYPE iceberg, ENDPOINT '{site.uri}', "
                    "SECRET floe, READ_ONLY false)")
        con.execute("CREATE SCHEMA lake.db")
        con.execute("CREATE TABLE lake.db.t AS SELECT 7 AS id")
        assert con.execute("SELECT id FROM lake.db.t").fetchall() == [(7,)]
        assert {e.actor_name for e in AuditEntry.objects.all()} == {"ann"}
        with pytest.raises(duckdb.Error, match="401.*invalid_client"):
            con.execute(f"ATTACH '{site.sql}' AS bad (TYPE iceberg, ENDPOINT '{site.uri}', "
                        "CLIENT_ID 'mia', CLIENT_SECRET 'not-her-token')")
    finally:
        con.close()


@SQLITE_ONLY
def test_a_conflicting_duckdb_commit_is_409_and_only_the_first_lands(site: Site,
                                                                     duck: Duck) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    duck("mia", site.sql).execute("CREATE TABLE lake.db.t AS SELECT 0 AS id")
    first, second = duck("mia", site.sql), duck("mia", site.sql)
    for con, row in ((first, 1), (second, 2)):
        con.execute("BEGIN")
        con.execute(f"INSERT INTO lake.db.t VALUES ({row})")
    first.execute("COMMIT")
    # both asserted the same snapshot: the second is refused, and DuckDB does not retry
    with pytest.raises(duckdb.Error, match="Conflict_409"):
        second.execute("COMMIT")
    with site.sql_catalog() as catalog:
        assert _floe_rows(catalog.load_table("db.t")) == [(0,), (1,)]
    commits = AuditEntry.objects.filter(table="t", action="rest_commit")
    assert commits.count() == 1


# -- a warehouse in a bucket ---------------------------------------------------------------------


@pytest.mark.parametrize("vended", [False, True], ids=["own-secret", "vended-config"])
def test_duckdb_on_a_catalog_whose_warehouse_is_a_bucket(
        moto_s3: MotoS3, live_server: Any, tmp_path: Path, settings: Any, vended: bool) -> None:
    """A SQL catalog over ``s3://``: DuckDB writes its files to the bucket, either with an S3
    secret of its own or with none, from the storage config Floe vends in loadTable (DuckDB
    makes a secret scoped to the table's location from it)."""
    name = unique_name("s3")
    props = "".join(f'"{k}" = "{v}"\n' for k, v in moto_s3.s3_properties().items())
    path = tmp_path / "catalogs.toml"
    path.write_text(f'[catalogs.{name}]\ntype = "sql"\n'
                    f'uri = "sqlite:///{tmp_path / "catalog.db"}"\n'
                    f'warehouse = "s3://{moto_s3.bucket}/{name}"\n{props}')
    settings.FLOE_CATALOGS = str(path)
    settings.FLOE_ICEBERG_VENDED_PROPERTIES = list(moto_s3.s3_properties()) if vended else []
    key = served._user("mia", "admin", "*")
    con = duckdb_connect(None if vended else moto_s3)
    try:
        con.execute(f"ATTACH '{name}' AS lake (TYPE iceberg, ENDPOINT '{live_server.url}"
                    f"/iceberg', CLIENT_ID 'mia', CLIENT_SECRET '{key}', READ_ONLY false)")
        con.execute("CREATE SCHEMA lake.db")
        con.execute("CREATE TABLE lake.db.t AS SELECT range AS id FROM range(4)")
        con.execute("INSERT INTO lake.db.t VALUES (10)")
        con.execute("DELETE FROM lake.db.t WHERE id = 2")
        assert con.execute("SELECT id FROM lake.db.t ORDER BY id").fetchall() == [
            (0,), (1,), (3,), (10,)]
        # its S3 secrets: its own (provider config), or those it made from Floe's answers
        secrets = set(con.execute("SELECT type, provider FROM duckdb_secrets()").fetchall())
        assert secrets == {("s3", "iceberg" if vended else "config")}
    finally:
        con.close()
    table = catalog_get(name).load_table("db.t")
    plan = plan_files(table.io, table.metadata)
    assert _floe_rows(table) == [(0,), (1,), (3,), (10,)]
    prefix = f"s3://{moto_s3.bucket}/{name}/db.db/t/"
    assert all(t.data_file.file_path.startswith(prefix) for t in plan.tasks)
    assert all(d.path.startswith(prefix) for t in plan.tasks for d in t.delete_files)
    assert [e.params["engine"].startswith(DUCKDB_ENGINE)
            for e in _entries(name, "t")] == [True] * 3
