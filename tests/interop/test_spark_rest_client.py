"""Spark 3.5 with Iceberg Java 1.10.2's ``RESTCatalog`` (the oracle's runtime jar) as a client of
the catalog the site serves at ``/iceberg/`` (issue 21): Spark creates a partitioned table of
a SQL catalog through Floe, inserts, merges and calls a procedure that commits; Floe's planner
and PyIceberg read the rows Spark reads; every commit is an audit entry of the Floe user with
the engine Java's headers name, never "external"; a viewer's INSERT is refused with 403 and
changes nothing.

The runtime jar lacks Apache HttpClient 5, which only the REST client uses:
:mod:`http_client_jar` puts Debian's back under Iceberg's shaded names (conftest's ``oracle``
fixture adds it to Spark's class path); without it these tests fail naming the class."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import http_client_jar
import pytest
from oracle_client import OracleRequestError

from explorer.audit.selectors import table_audit
from explorer.models import AuditEntry, EngineReport
from floe.catalog.base import TableIdentifier
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from tests.api.test_iceberg_rest import Site, site  # noqa: F401 - the live site fixture

rest = pytest.importorskip("pyiceberg.catalog.rest")

# the site of tests/api/test_iceberg_rest.py, on SQLite
pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("site"),
              pytest.mark.parametrize("site", ["sqlite"], indirect=True)]

COLUMNS = ("id", "cat", "qty")


@dataclass
class Floe:
    site: Site
    catalog: Callable[..., str]


@pytest.fixture
def floe(oracle: Any, request: pytest.FixtureRequest) -> Floe:
    """The live site, and ``catalog(user)``: the name of a new Spark catalog on the site's
    SQL catalog that authenticates as ``user`` with its token (``credential=True``: OAuth2
    client credentials); a catalog per test and user, as Spark keeps each one it made."""
    missing = oracle.java_class_missing(http_client_jar.PROBE)
    if missing:
        pytest.fail(f"Iceberg Java's REST client needs {http_client_jar.PROBE}, which the "
                    f"runtime jar lacks and no relocated HttpClient 5 supplies: {missing}",
                    pytrace=False)
    web: Site = request.getfixturevalue("site")
    run = uuid.uuid4().hex[:8]

    def catalog(user: str, *, credential: bool = False) -> str:
        name = f"floe_{user}_{run}"
        auth = ({"credential": f"{user}:{web.keys[user]}"} if credential
                else {"token": web.keys[user]})
        oracle.add_rest_catalog(name, web.uri, web.sql, **auth)
        return name

    return Floe(web, catalog)


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def test_spark_creates_inserts_merges_and_compacts_through_floe(oracle: Any,
                                                                floe: Floe) -> None:
    web = floe.site
    admin, mia = floe.catalog("ann"), floe.catalog("mia", credential=True)
    oracle.sql(f"CREATE NAMESPACE {admin}.db")
    t = f"{mia}.db.events"
    oracle.sql([
        f"CREATE TABLE {t} (id bigint, cat string, qty int) USING iceberg "
        "PARTITIONED BY (cat) TBLPROPERTIES ('format-version' = '2')",
        f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)",
        f"INSERT INTO {t} VALUES (4, 'c', 40)",
        f"MERGE INTO {t} AS t USING (SELECT * FROM VALUES (2, 'b', 21), (5, 'b', 50) "
        "AS s(id, cat, qty)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.qty = s.qty WHEN NOT MATCHED THEN INSERT *",
    ])
    compacted = oracle.sql(
        f"CALL {mia}.system.rewrite_data_files(table => 'db.events', "
        "options => map('rewrite-all', 'true'))")
    assert compacted[0]["rewritten_data_files_count"] > 0, compacted
    expected = [(1, "a", 10), (2, "b", 21), (3, "a", 30), (4, "c", 40), (5, "b", 50)]
    assert _sorted(oracle.sql(f"SELECT * FROM {t}")) == expected

    # Floe's own SQL catalog (the same database) plans and reads what Spark committed
    with web.sql_catalog() as catalog:
        table = catalog.load_table("db.events")
        data = plan_to_table(table.io, plan_files(table.io, table.metadata))
        assert _sorted(data.to_pylist()) == expected
        assert [f.name for f in table.metadata.spec().fields] == ["cat"]
        operations = [s.summary.get("operation") for s in table.metadata.snapshots]
        assert operations == ["append", "append", "overwrite", "replace"]
        # PyIceberg through Floe's REST catalog reads the same rows
        pyiceberg = rest.RestCatalog("py", uri=web.uri, warehouse=web.sql,
                                     token=web.keys["mia"])
        py_table = pyiceberg.load_table("db.events")
        assert py_table.metadata_location == table.metadata_location
        assert _sorted(py_table.scan().to_arrow().to_pylist()) == expected

        # every change is mia's (ann's namespace), through Iceberg Java, as its headers say
        entries = list(AuditEntry.objects.filter(catalog=web.sql, table="events")
                       .order_by("created_at", "id"))
        assert [e.action for e in entries] == ["rest_create_table"] + ["rest_commit"] * 4
        assert {(e.actor_name, e.actor_via, e.outcome) for e in entries} == {
            ("mia", "rest", "succeeded")}
        assert all("Apache Iceberg 1.10.2" in e.params["engine"] for e in entries), [
            e.params["engine"] for e in entries]
        assert entries[-1].metadata_after == table.metadata_location
        assert [e.snapshot_after for e in entries[1:]] == [
            s.snapshot_id for s in table.metadata.snapshots]
        assert AuditEntry.objects.get(action="rest_create_namespace").actor_name == "ann"
        rows = table_audit(table=table)
        assert rows and {(r.source, r.actor) for r in rows} == {("floe", "mia")}

    # Java reports its scans and commits (/v1/config lists reportMetrics): kept as mia's,
    # the engine named, a scan's files read and skipped, a commit's operation and files
    reports = EngineReport.objects.filter(catalog=web.sql, table="events")
    commits = reports.filter(report_type="commit-report").order_by("id")
    scans = reports.filter(report_type="scan-report")
    assert {r.actor_name for r in reports} == {"mia"}
    assert all("Apache Iceberg 1.10.2" in r.engine for r in reports), [r.engine for r in reports]
    assert [r.snapshot_id for r in commits] == [s.snapshot_id for s in table.metadata.snapshots]
    assert commits[0].operation == "append" and commits[0].added_data_files == 2
    assert scans.exists() and all(r.result_data_files is not None for r in scans)
    assert any(r.filter_text for r in scans)  # the MERGE's scan is filtered


def test_spark_writes_a_branch_and_reads_metadata_tables_through_floe(oracle: Any,
                                                                      floe: Floe) -> None:
    """``db.t.branch_dev`` and ``db.t.snapshots`` reach Spark's fallback only when loading
    table ``branch_dev`` of the missing namespace ``db.t`` is NoSuchTableException."""
    admin, mia = floe.catalog("ann"), floe.catalog("mia")
    t = f"{mia}.db.t"
    oracle.sql([f"CREATE NAMESPACE {admin}.db",
                f"CREATE TABLE {t} (id bigint, cat string, qty int) USING iceberg",
                f"INSERT INTO {t} VALUES (1, 'a', 1)",
                f"ALTER TABLE {t} CREATE BRANCH dev",
                f"INSERT INTO {t}.branch_dev VALUES (2, 'b', 2)",
                f"DROP TABLE IF EXISTS {mia}.nowhere.t"])
    assert _sorted(oracle.sql(f"SELECT * FROM {t}")) == [(1, "a", 1)]
    assert _sorted(oracle.sql(f"SELECT * FROM {t} VERSION AS OF 'dev'")) == [
        (1, "a", 1), (2, "b", 2)]
    refs = oracle.sql(f"SELECT name, snapshot_id FROM {t}.refs")
    snapshots = oracle.sql(f"SELECT snapshot_id FROM {t}.snapshots")
    with floe.site.sql_catalog() as catalog:
        table = catalog.load_table("db.t")
        assert {r["name"]: r["snapshot_id"] for r in refs} == {
            name: ref.snapshot_id for name, ref in table.metadata.refs.items()}
        assert sorted(r["snapshot_id"] for r in snapshots) == sorted(
            s.snapshot_id for s in table.metadata.snapshots)
        data = plan_to_table(table.io, plan_files(table.io, table.metadata, ref="dev"))
        assert _sorted(data.to_pylist()) == [(1, "a", 1), (2, "b", 2)]
    assert AuditEntry.objects.filter(table="t", action="rest_commit",
                                     actor_name="mia").count() == 3


def test_spark_evolves_deletes_replaces_renames_and_purges_through_floe(oracle: Any,
                                                                        floe: Floe) -> None:
    """Schema and partition evolution, a merge-on-read DELETE on format v3 (a deletion
    vector; row lineage carried on), CREATE TABLE AS and CREATE OR REPLACE TABLE AS (staged
    creates), a rename and DROP ... PURGE, each read back by Floe."""
    admin, mia = floe.catalog("ann"), floe.catalog("mia")
    t = f"{mia}.db.t"
    oracle.sql([
        f"CREATE NAMESPACE {admin}.db",
        f"CREATE TABLE {t} (id bigint, cat string, qty int) USING iceberg "
        "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')",
        # one data file, so that deleting one of its rows writes a deletion vector
        f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ * FROM VALUES (1, 'a', 1), (2, 'b', 2), "
        "(3, 'a', 3) AS s(id, cat, qty)",
        f"ALTER TABLE {t} ADD COLUMN note string",
        f"ALTER TABLE {t} ADD PARTITION FIELD cat",
        f"INSERT INTO {t} VALUES (4, 'b', 4, 'n')",
        f"DELETE FROM {t} WHERE id = 1",
        f"CREATE TABLE {mia}.db.copy USING iceberg AS SELECT id, cat FROM {t}",
        f"CREATE OR REPLACE TABLE {mia}.db.copy USING iceberg AS SELECT id FROM {t}",
        f"ALTER TABLE {mia}.db.copy RENAME TO db.renamed",
    ])
    expected = [(2, "b", 2, None), (3, "a", 3, None), (4, "b", 4, "n")]
    assert sorted(tuple(r.values()) for r in oracle.sql(f"SELECT * FROM {t}")) == expected
    with floe.site.sql_catalog() as catalog:
        table = catalog.load_table("db.t")
        md = table.metadata
        assert md.format_version == 3
        assert [f.name for f in md.schema().fields] == ["id", "cat", "qty", "note"]
        assert [f.name for f in md.spec().fields] == ["cat"]
        assert (md.current_snapshot() or pytest.fail("no snapshot")).summary[
            "added-dvs"] == "1"
        # row lineage: each commit's rows take ids where the previous one's ended
        lineage = [(s.first_row_id, s.added_rows) for s in md.snapshots]
        assert [first for first, _ in lineage] == [0, 3, 4], lineage
        assert md.next_row_id == 4 + (lineage[-1][1] or 0)
        data = plan_to_table(table.io, plan_files(table.io, md))
        assert sorted(tuple(r.values()) for r in data.to_pylist()) == expected
        renamed = catalog.load_table("db.renamed")
        assert [f.name for f in renamed.metadata.schema().fields] == ["id"]
        read = plan_to_table(renamed.io, plan_files(renamed.io, renamed.metadata))
        assert sorted(read.column("id").to_pylist()) == [2, 3, 4]
        assert not catalog.table_exists(TableIdentifier(("db",), "copy"))
    # Iceberg 1.10's SparkCatalog purges by itself: a dropTable without purgeRequested (a
    # maintainer's), then Spark deletes every file the table reaches
    location = Path(md.location)
    oracle.sql(f"DROP TABLE {t} PURGE")
    assert not any(p.is_file() for p in location.rglob("*"))
    dropped = AuditEntry.objects.get(action="rest_drop_table")
    assert (dropped.table, dropped.actor_name, dropped.params["purge"]) == ("t", "mia", False)
    actions = {(e.action, e.table, e.actor_name) for e in AuditEntry.objects.exclude(
        action__in=["rest_create_namespace", "rest_commit"])}
    assert actions == {("rest_create_table", "t", "mia"), ("rest_create_table", "copy", "mia"),
                       ("rest_rename_table", "copy", "mia"), ("rest_drop_table", "t", "mia")}


def test_a_viewers_insert_from_spark_is_refused_and_changes_nothing(oracle: Any,
                                                                    floe: Floe) -> None:
    web = floe.site
    admin, mia, vic = floe.catalog("ann"), floe.catalog("mia"), floe.catalog("vic")
    oracle.sql([f"CREATE NAMESPACE {admin}.db",
                f"CREATE TABLE {mia}.db.t (id bigint, cat string, qty int) USING iceberg",
                f"INSERT INTO {mia}.db.t VALUES (1, 'a', 1)"])
    with web.sql_catalog() as catalog:
        before = catalog.load_table("db.t").metadata_location
    audited = AuditEntry.objects.count()
    # the viewer loads and reads the table, but may not commit to it
    assert _sorted(oracle.sql(f"SELECT * FROM {vic}.db.t")) == [(1, "a", 1)]
    with pytest.raises(OracleRequestError) as refused:
        oracle.sql(f"INSERT INTO {vic}.db.t VALUES (2, 'b', 2)")
    assert "ForbiddenException" in str(refused.value)
    assert "maintainer" in str(refused.value)
    with web.sql_catalog() as catalog:
        assert catalog.load_table("db.t").metadata_location == before
    assert AuditEntry.objects.count() == audited
    assert _sorted(oracle.sql(f"SELECT * FROM {mia}.db.t")) == [(1, "a", 1)]
