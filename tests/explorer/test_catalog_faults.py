"""One broken catalog entry makes only that catalog unusable in the explorer: every catalog is
listed, the broken one with its reason (on the table list and in the API), its own pages and
endpoints answer 503 with that reason, and the other catalogs (``local`` and a good SQL
catalog of the same file) are browsed as if it were not there."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client

from floe.catalog.sql import SqlCatalog
from floe.schema import Schema
from floe.types import LONG, NestedField
from tests.factories import SnapshotSpec, write_table

pytestmark = pytest.mark.django_db

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))

BROKEN = {
    "unknown type": ('type = "hive"\nuri = "thrift://metastore:9083"\n', "type must be one of"),
    "unknown option": ('type = "sql"\nuri = "sqlite:///{tmp}/b.db"\nurl = "typo"\n',
                       "unknown option 'url'"),
    "storage option": ('type = "filesystem"\nwarehouse = "{tmp}/b"\n"s3.endpoint" = 3\n',
                       "option 's3.endpoint' must be a string"),
    "unset variable": ('type = "sql"\nuri = "${{FLOE_TEST_NEVER_SET}}"\n',
                       "environment variable FLOE_TEST_NEVER_SET is not set"),
    "database cannot be opened": ('type = "sql"\nuri = "sqlite:///{tmp}/no/such/dir/b.db"\n'
                                  'warehouse = "{tmp}/b"\n', "unable to open database file"),
}


@pytest.fixture
def good_and_broken(tmp_path: Path, settings: Any, request: pytest.FixtureRequest) -> str:
    """``local`` with fs.t, ``good`` (SQL) with db.events, and ``broken`` (the parameter)."""
    write_table(tmp_path / "local", "fs", "t", [SnapshotSpec(1, 5, 50)])
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    uri, warehouse = f"sqlite:///{tmp_path / 'good.db'}", tmp_path / "good-wh"
    with SqlCatalog("good", uri, str(warehouse)) as good:
        good.create_namespace("db")
        good.create_table("db.events", SCHEMA).append(
            pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    entry, problem = BROKEN[request.param]
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.good]\ntype = "sql"\nuri = "{uri}"\nwarehouse = "{warehouse}"\n'
                      f'\n[catalogs.broken]\n{entry.format(tmp=tmp_path)}')
    settings.FLOE_CATALOGS = str(config)
    return problem


def _text(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    body = html.unescape(response.content.decode())
    assert response.status_code == status, (url, body[:1500])
    return body


@pytest.mark.parametrize("good_and_broken", list(BROKEN), indirect=True)
def test_one_broken_entry_leaves_the_other_catalogs_browsable(
        client: Client, good_and_broken: str) -> None:
    problem = good_and_broken
    catalogs = client.get("/api/catalogs/").json()
    assert [c["name"] for c in catalogs] == ["local", "broken", "good"]
    broken = next(c for c in catalogs if c["name"] == "broken")
    if "database" not in problem:  # a broken entry says why at once; a database when used
        assert problem in broken["problem"]
    assert {c["name"]: c["problem"] for c in catalogs}["good"] is None

    for url in ("/api/catalogs/broken/namespaces/", "/api/catalogs/broken/namespaces/db/tables/",
                "/api/catalogs/broken/namespaces/db/tables/t/"):
        response = client.get(url)
        assert response.status_code == 503, url
        assert response.json()["error"] == "CatalogUnavailable"
        assert "catalog 'broken'" in response.json()["detail"]
        assert problem in response.json()["detail"]
    for url in ("/catalogs/broken/", "/catalogs/broken/namespaces/db/",
                "/catalogs/broken/namespaces/db/tables/t/"):
        assert problem in _text(client, url, 503)

    page = _text(client, "/")
    assert 'data-catalog-error="broken"' in page and problem in page
    assert 'data-table="fs.t"' in page and 'data-table="db.events"' in page
    assert "db.events" in _text(client, "/catalogs/good/namespaces/db/tables/events/")
    listed = client.get("/api/catalogs/good/namespaces/db/tables/").json()["results"]
    assert [(t["name"], t["records"], t["error"]) for t in listed] == [("events", 3, None)]
    assert client.get("/api/catalogs/local/namespaces/fs/tables/t/").status_code == 200
    _text(client, "/catalogs/local/")
    _text(client, "/catalogs/good/")
