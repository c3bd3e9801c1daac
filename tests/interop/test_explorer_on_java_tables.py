"""The explorer's pages and API over the tables Spark + Iceberg Java wrote: every page
renders, and the numbers shown are the ones floe's metadata tables compute (which the other
interop tests hold against Spark's own metadata tables)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from spark_tables import SparkTable

from floe import inspect
from floe.catalog.filesystem import load_table_metadata
from floe.io import FileIO

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(spark_tables: dict[str, SparkTable], settings: Any) -> Client:
    tables = list(spark_tables.values())
    settings.FLOE_WAREHOUSE = str(tables[0].location.parent.parent)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return Client()


def _names(spark_tables: dict[str, SparkTable]) -> list[str]:
    return sorted(spark_tables)


def _get(client: Client, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, (url, response.content.decode()[:1500])
    return response


@pytest.mark.parametrize(
    "name",
    ["evolve_v1", "evolve_v2", "mor_v2", "eqdel_v2", "gzip_v2", "refs_v2", "nested_v2",
     "bucket_v2", "truncate_v1"],
)
def test_every_page_renders_over_a_java_table(
    client: Client, spark_tables: dict[str, SparkTable], name: str
) -> None:
    table = spark_tables[name]
    io = FileIO()
    _, md = load_table_metadata(io, str(table.location))
    base = f"/catalogs/local/namespaces/db/tables/{name}/"
    api = f"/api/catalogs/local/namespaces/db/tables/{name}/"

    overview = _get(client, base).content.decode()
    assert str(md.table_uuid) in overview
    for page in ("snapshots/", "history/", "partitions/", "plan/?filter=", "preview/"):
        _get(client, base + page)

    current = md.current_snapshot()
    assert current is not None
    expected_manifests = inspect.manifest_rows(io, md, current)
    snapshot_page = _get(client, base + f"snapshots/{current.snapshot_id}/").content.decode()
    assert snapshot_page.count("data-manifest=") == min(len(expected_manifests), 50)
    _get(client, base + f"snapshots/{current.snapshot_id}/manifests/0/")

    snapshots = _get(client, api + "snapshots/?page_size=500").json()
    assert snapshots["count"] == len(md.snapshots)
    manifests = _get(client, api + f"snapshots/{current.snapshot_id}/manifests/").json()
    rows = manifests["results"] if isinstance(manifests, dict) else manifests
    assert [m["path"] for m in rows] == [m["path"] for m in expected_manifests]
    assert [m["added_files_count"] for m in rows] == [
        m["added_files_count"] for m in expected_manifests
    ]

    files = _get(client, api + f"snapshots/{current.snapshot_id}/files/?page_size=1000").json()
    expected_files = inspect.file_rows(io, md, current)
    got = files["results"] if isinstance(files, dict) else files
    assert sorted(f["file_path"] for f in got) == sorted(f["file_path"] for f in expected_files)
    assert sum(f["record_count"] for f in got) == sum(f["record_count"] for f in expected_files)

    parent = current.parent_snapshot_id
    if parent is not None:
        diff = _get(client, api + f"diff/?from={parent}&to={current.snapshot_id}").json()
        assert isinstance(diff, dict)
