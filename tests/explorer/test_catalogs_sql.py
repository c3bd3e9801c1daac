"""SQL catalogs from the catalog file (``FLOE_CATALOGS``) are browsable like ``local``: on
SQLite and on a real PostgreSQL, a table created and appended by floe's ``SqlCatalog`` or by
PyIceberg's shows on the table list, the namespace and table endpoints, the table's pages;
a commit from outside (PyIceberg, the ``floe`` command) shows on the next request."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.test import Client

from floe.catalog.sql import SqlCatalog
from floe.cli import main as floe_cli
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.factories import SnapshotSpec, write_table

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

pytestmark = pytest.mark.django_db

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "kind", STRING))


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "kind": pa.array(["view" if i % 2 else "click" for i in ids])})


@dataclass(frozen=True)
class SqlSetup:
    name: str
    uri: str
    warehouse: Path
    config: Path


def write_catalog_file(path: Path, body: str, settings: Any) -> Path:
    path.write_text(body)
    settings.FLOE_CATALOGS = str(path)
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def sql(request: pytest.FixtureRequest, tmp_path: Path, settings: Any) -> SqlSetup:
    """A catalog file with one SQL catalog (unique name: PostgreSQL's database is shared by
    the session) beside ``local``, whose warehouse holds one table."""
    uri = (f"sqlite:///{tmp_path / 'catalog.db'}" if request.param == "sqlite"
           else str(request.getfixturevalue("postgres_url")))
    name = f"sql_{uuid.uuid4().hex[:8]}"
    warehouse = tmp_path / "sql-warehouse"
    config = write_catalog_file(tmp_path / "catalogs.toml", (
        f'[catalogs.{name}]\ntype = "sql"\nuri = "{uri}"\nwarehouse = "{warehouse}"\n'), settings)
    write_table(tmp_path / "local", "fs", "t", [SnapshotSpec(1, 5, 50)])
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    return SqlSetup(name, uri, warehouse, config)


@pytest.fixture
def floe_sql(sql: SqlSetup) -> Iterator[SqlCatalog]:
    catalog = SqlCatalog(sql.name, sql.uri, str(sql.warehouse))
    yield catalog
    catalog.close()


@pytest.fixture
def pyiceberg(sql: SqlSetup) -> Iterator[Any]:
    catalog = pyiceberg_sql.SqlCatalog(sql.name, uri=sql.uri, warehouse=str(sql.warehouse))
    yield catalog
    catalog.close()


def pyiceberg_append(catalog: Any, ident: str, data: pa.Table) -> None:
    table = catalog.load_table(ident)
    table.append(data.cast(table.schema().as_arrow()))


def _get(client: Client, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, (url, response.content.decode()[:1500])
    return response


def _text(client: Client, url: str) -> str:
    return html.unescape(_get(client, url).content.decode())


def _list_row(client: Client, catalog: str, identifier: str) -> str:
    page = _text(client, "/")
    m = re.search(rf'<tr[^>]*data-catalog="{catalog}" data-table="{re.escape(identifier)}".*?</tr>',
                  page, re.S)
    assert m, f"{catalog}:{identifier} is not on the table list"
    return m.group(0)


def _shows_the_table(client: Client, sql: SqlSetup, ns: str, name: str, records: int,
                     snapshots: int) -> dict[str, Any]:
    """Every view of one table agrees with the catalog; returns the API's detail."""
    base = f"/catalogs/{sql.name}/namespaces/{ns}/tables/{name}/"
    api = f"/api/catalogs/{sql.name}/namespaces/{ns}/tables/{name}/"
    row = _list_row(client, sql.name, f"{ns}.{name}")
    assert f'data-col="records">{records:,}<' in row
    namespaces = _get(client, f"/api/catalogs/{sql.name}/namespaces/").json()["results"]
    assert {"catalog": sql.name, "name": ns, "table_count": 1} in namespaces
    listed = _get(client, f"/api/catalogs/{sql.name}/namespaces/{ns}/tables/").json()
    assert [(t["name"], t["records"], t["error"]) for t in listed["results"]] == \
        [(name, records, None)]
    detail = _get(client, api).json()
    assert detail["records"] == records and detail["snapshot_count"] == snapshots
    assert detail["metadata_location"] == listed["results"][0]["metadata_location"]
    overview = _text(client, base)
    assert detail["table_uuid"] in overview and str(detail["current_snapshot_id"]) in overview
    snapshot_page = _text(client, base + "snapshots/")
    assert snapshot_page.count("<tr data-snapshot=") == snapshots
    sid = detail["current_snapshot_id"]
    _get(client, base + f"snapshots/{sid}/")
    files = _get(client, api + f"snapshots/{sid}/files/").json()
    assert sum(f["record_count"] for f in files["results"]) == records
    assert _get(client, api + "snapshots/").json()["count"] == snapshots
    preview = _text(client, base + "preview/")
    assert f'<span id="row-count">{records:,}</span>' in preview
    _get(client, base + "plan/?filter=id > 1")
    return detail  # type: ignore[no-any-return]


def test_a_floe_table_in_a_sql_catalog_is_browsable_and_outside_commits_show(
    client: Client, sql: SqlSetup, floe_sql: SqlCatalog, pyiceberg: Any
) -> None:
    floe_sql.create_namespace("db")
    table = floe_sql.create_table("db.events", SCHEMA, spec=parse_partition_by("kind", SCHEMA))
    table.append(rows([1, 2, 3]))
    catalogs = _get(client, "/api/catalogs/").json()
    assert [c["name"] for c in catalogs] == ["local", sql.name]
    assert catalogs[1] == {"name": sql.name, "type": "sql", "warehouse": str(sql.warehouse),
                           "exists": True, "problem": None}
    _list_row(client, "local", "fs.t")  # the file-system catalog is still there
    before = _shows_the_table(client, sql, "db", "events", 3, 1)

    pyiceberg_append(pyiceberg, "db.events", rows([4, 5]))  # committed from outside
    after = _shows_the_table(client, sql, "db", "events", 5, 2)
    assert after["current_snapshot_id"] != before["current_snapshot_id"]
    assert after["metadata_location"] != before["metadata_location"]
    history = _get(client, f"/api/catalogs/{sql.name}/namespaces/db/tables/events/history/").json()
    assert history["metadata_log"][0]["metadata_file"] == after["metadata_location"]


def test_a_pyiceberg_table_in_a_nested_namespace_and_a_cli_commit(
    client: Client, sql: SqlSetup, pyiceberg: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pyiceberg.create_namespace(("lake",))
    pyiceberg.create_namespace(("lake", "raw"))
    pyiceberg.create_table(("lake", "raw", "clicks"), schema=rows([1]).schema)
    pyiceberg_append(pyiceberg, "lake.raw.clicks", rows([1, 2]))
    namespaces = _get(client, f"/api/catalogs/{sql.name}/namespaces/").json()["results"]
    assert [(n["name"], n["table_count"]) for n in namespaces] == [("lake", 0), ("lake.raw", 1)]
    _shows_the_table(client, sql, "lake.raw", "clicks", 2, 1)

    more = tmp_path / "more.parquet"
    pq.write_table(rows([7, 8, 9]), more)
    monkeypatch.setenv("FLOE_CATALOGS", str(sql.config))  # the CLI reads the same file
    assert floe_cli(["append", f"{sql.name}:lake.raw.clicks", str(more)]) == 0, \
        capsys.readouterr().err
    _shows_the_table(client, sql, "lake.raw", "clicks", 5, 2)


def test_a_sql_catalog_without_a_warehouse_reads_nothing(
    client: Client, sql: SqlSetup, floe_sql: SqlCatalog, settings: Any
) -> None:
    floe_sql.create_namespace("db")
    floe_sql.create_table("db.events", SCHEMA).append(rows([1]))
    write_catalog_file(sql.config, f'[catalogs.{sql.name}]\ntype = "sql"\nuri = "{sql.uri}"\n',
                       settings)
    listed = _get(client, f"/api/catalogs/{sql.name}/namespaces/db/tables/").json()["results"]
    assert "has no warehouse" in listed[0]["error"]
    for url in (f"/catalogs/{sql.name}/namespaces/db/tables/events/",
                f"/api/catalogs/{sql.name}/namespaces/db/tables/events/snapshots/"):
        response = client.get(url)
        assert response.status_code == 422 and "has no warehouse" in \
            html.unescape(response.content.decode())


def test_a_catalog_that_does_not_answer_leaves_the_others_browsable(
    client: Client, tmp_path: Path, settings: Any
) -> None:
    write_table(tmp_path / "local", "fs", "t", [SnapshotSpec(1, 5, 50)])
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    write_catalog_file(tmp_path / "catalogs.toml", (
        '[catalogs.down]\ntype = "sql"\nuri = "postgresql+psycopg://nobody@127.0.0.1:1/none"\n'
        f'warehouse = "{tmp_path / "wh"}"\n'), settings)
    page = _text(client, "/")
    assert 'data-table="fs.t"' in page and 'data-catalog-error="down"' in page
    assert "catalog 'down' (sql" in page and "is unavailable" in page
    response = client.get("/api/catalogs/down/namespaces/")
    assert response.status_code == 503
    assert response.json()["error"] == "CatalogUnavailable"
    assert client.get("/catalogs/down/namespaces/db/tables/t/").status_code == 503
    assert client.get("/api/catalogs/local/namespaces/fs/tables/").status_code == 200


def test_a_broken_catalog_file_is_named(client: Client, tmp_path: Path, settings: Any) -> None:
    """A file that does not parse (which catalogs it names is unknown); a broken entry in a
    file that parses only breaks its own catalog (tests/explorer/test_catalog_faults.py)."""
    config = write_catalog_file(tmp_path / "catalogs.toml", '[catalogs.x\ntype = "hive"\n',
                                settings)
    response = client.get("/api/catalogs/")
    assert response.status_code == 503
    assert str(config) in response.json()["detail"] and "not a valid TOML file" in \
        response.json()["detail"]
    config.write_text("")  # fixed: the next request reads it again
    assert [c["name"] for c in client.get("/api/catalogs/").json()] == ["local"]
