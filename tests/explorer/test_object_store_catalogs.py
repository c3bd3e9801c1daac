"""The explorer over catalogs whose warehouse is a bucket (a real S3 server, SeaweedFS; an Azure
container, Azurite): a SQL catalog and a file-system catalog with PyIceberg's ``s3.*`` or
``adls.*`` options in the catalog file. Every page and
endpoint of a table answers, a task changes the table, and the confinement holds in buckets
too: a file the table names outside the catalog's warehouse is refused, the same error as on
a disk."""

from __future__ import annotations

import html
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client

from explorer.tasks import services
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.explorer.tasks_support import user_with

pytestmark = [pytest.mark.objectstore, pytest.mark.django_db]

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": [f"c{i % 2}" for i in range(start, start + n)]})


def _toml(name: str, kind: str, warehouse: str, props: dict[str, str], extra: str = "") -> str:
    options = "".join(f'"{k}" = "{v}"\n' for k, v in props.items())
    return f'[catalogs.{name}]\ntype = "{kind}"\nwarehouse = "{warehouse}"\n{extra}{options}'


@pytest.fixture(params=["seaweedfs", "azurite"])
def lake(request: pytest.FixtureRequest, tmp_path: Path, settings: Any) -> dict[str, Any]:
    """Catalogs ``bucket_sql`` and ``bucket_fs``, each with a table ``db.t`` in the bucket
    (of each store in turn)."""
    server = request.getfixturevalue(request.param)
    props = server.properties()
    io = FileIO(props)
    root = server.location(f"explorer-{uuid.uuid4().hex[:8]}")
    db = tmp_path / "catalog.db"
    catalogs = {
        "bucket_sql": SqlCatalog("bucket_sql", f"sqlite:///{db}", f"{root}/sql", io),
        "bucket_fs": FileSystemCatalog("bucket_fs", f"{root}/fs", io),
    }
    for catalog in catalogs.values():
        catalog.create_namespace(("db",))
        table = catalog.create_table("db.t", SCHEMA, parse_partition_by("cat", SCHEMA))
        for k in range(3):
            table.append(_rows(10 * k, 10))
    config = tmp_path / "catalogs.toml"
    config.write_text(
        _toml("bucket_sql", "sql", f"{root}/sql", props, f'uri = "sqlite:///{db}"\n')
        + _toml("bucket_fs", "filesystem", f"{root}/fs", props))
    settings.FLOE_CATALOGS = str(config)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return {"root": root, "io": io, "catalogs": catalogs}


PAGES = ["", "snapshots/", "history/", "partitions/", "plan/", "plan/?filter=id%20%3C%205",
         "preview/", "preview/?format=csv", "diff/"]
ENDPOINTS = ["", "snapshots/", "refs/", "history/", "plan/", "partitions/", "preview/?limit=5"]


@pytest.mark.parametrize("catalog", ["bucket_sql", "bucket_fs"])
def test_every_page_of_a_table_in_a_bucket(lake: dict[str, Any], catalog: str) -> None:
    client = Client()
    base = f"/catalogs/{catalog}/namespaces/db/tables/t/"
    api = f"/api/catalogs/{catalog}/namespaces/db/tables/t/"
    table = lake["catalogs"][catalog].load_table("db.t")
    sid = table.metadata.current_snapshot_id
    for url in [base + p for p in PAGES + [f"snapshots/{sid}/", f"snapshots/{sid}/manifests/0/",
                                            f"snapshots/{sid}/manifests/0/files/0/"]] + \
            [api + e for e in ENDPOINTS + [f"snapshots/{sid}/files/"]]:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
    preview = client.get(api + "preview/?limit=100").json()
    at = preview["columns"].index("id")
    assert sorted(r[at] for r in preview["rows"]) == list(range(30))
    assert client.get(f"/catalogs/{catalog}/").status_code == 200
    listed = client.get(f"/api/catalogs/{catalog}/namespaces/db/tables/").json()["results"]
    assert [(r["name"], r["error"]) for r in listed] == [("t", None)]


@pytest.mark.parametrize("catalog", ["bucket_sql", "bucket_fs"])
def test_a_task_changes_a_table_in_a_bucket(lake: dict[str, Any], catalog: str,
                                            eager: Any) -> None:
    mia = user_with("mia", "maintainer", catalog=catalog)
    run = eager(lambda: services.task_submit(
        kind="delete_rows", params={"catalog": catalog, "namespace": "db", "table": "t",
                                    "filter": "id < 5"},
        user=mia))
    run.refresh_from_db()
    assert run.state == "SUCCEEDED", run.error
    table = lake["catalogs"][catalog].load_table("db.t")
    from floe.scan import plan_files
    from floe.scan.readers import plan_to_table

    ids = plan_to_table(table.io, plan_files(table.io, table.metadata)).column("id").to_pylist()
    assert sorted(ids) == list(range(5, 30))


def test_a_file_named_outside_the_bucket_warehouse_is_refused(lake: dict[str, Any]) -> None:
    """A table of ``bucket_fs`` whose metadata names a manifest list in ``bucket_sql``'s
    warehouse (the same bucket, another prefix): refused, naming the file."""
    io, root = lake["io"], lake["root"]
    fs_table = lake["catalogs"]["bucket_fs"].load_table("db.t")
    sql_table = lake["catalogs"]["bucket_sql"].load_table("db.t")
    data = io.read(fs_table.metadata_location)
    foreign = sql_table.current_snapshot().manifest_list  # type: ignore[union-attr]
    own = fs_table.current_snapshot().manifest_list  # type: ignore[union-attr]
    version = int(fs_table.metadata_location.rsplit("/v", 1)[1].split(".")[0]) + 1
    target = fs_table.metadata_location.rsplit("/", 1)[0] + f"/v{version}.metadata.json"
    io.write(target, data.replace(own.encode(), foreign.encode()))
    response = Client().get(f"/catalogs/bucket_fs/namespaces/db/tables/t/"
                            f"snapshots/{fs_table.metadata.current_snapshot_id}/")
    text = html.unescape(response.content.decode())
    assert response.status_code == 422, text[:300]
    assert "outside the warehouse" in text and foreign in text
    assert f"{root}/fs" in text
