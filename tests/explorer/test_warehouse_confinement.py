"""One confinement rule: a file is read only when its real path (symlinks resolved) is inside
the catalog's warehouse. Whatever escapes, a table directory, a namespace, a manifest list
or a data file, every page and endpoint answers the same error with the same status (422,
naming the file) and reads nothing outside."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from explorer.cache import CACHE
from floe.inspect import file_rows
from floe.io import FileIO
from tests.factories import HistoryTable, history_metadata, write_history_table

pytestmark = pytest.mark.django_db

OUTSIDE = "outside the warehouse"


def _table_urls(base: str, api: str, outside: HistoryTable) -> list[str]:
    """Every page and endpoint of one table, with ids that exist in the ``outside`` table (so
    only the confinement can make them fail)."""
    first, last = outside.snapshot_ids[0], outside.snapshot_ids[-1]
    pages = ["", "snapshots/", f"snapshots/{last}/", f"snapshots/{last}/manifests/0/",
             f"snapshots/{last}/manifests/0/files/0/", "history/", "diff/",
             f"diff/?from={first}&to={last}", "partitions/", "plan/", "preview/",
             "preview/?format=csv"]
    endpoints = ["", "snapshots/", f"snapshots/{last}/", f"snapshots/{last}/manifests/",
                 f"snapshots/{last}/files/", "refs/", "history/", f"diff/?from={first}&to={last}",
                 "plan/"]
    return [base + p for p in pages] + [api + e for e in endpoints]


@pytest.fixture
def escapes(fresh_history: HistoryTable, tmp_path: Path) -> HistoryTable:
    """The ``local`` warehouse holds ``shop.orders``, ``shop.link`` (a symlink to a table
    outside) and ``escape`` (a symlink to a namespace outside, holding ``secret``)."""
    outside = write_history_table(tmp_path / "outside", "x", "secret")
    warehouse = Path(fresh_history.location).parent.parent
    (warehouse / "shop" / "link").symlink_to(outside.location, target_is_directory=True)
    (warehouse / "escape").symlink_to(Path(outside.location).parent, target_is_directory=True)
    return outside


@pytest.mark.parametrize(("ns", "table"), [("shop", "link"), ("escape", "secret")])
def test_every_page_and_endpoint_refuses_an_escaped_table_alike(
    client: Client, escapes: HistoryTable, ns: str, table: str
) -> None:
    base = f"/catalogs/local/namespaces/{ns}/tables/{table}/"
    api = f"/api/catalogs/local/namespaces/{ns}/tables/{table}/"
    statuses = {}
    for url in _table_urls(base, api, escapes):
        response = client.get(url)
        statuses[url] = response.status_code
        assert OUTSIDE in html.unescape(response.content.decode()), url
    assert set(statuses.values()) == {422}, statuses
    body = client.get(api).json()
    # refused at the first file of the table (its version hint), before any metadata file
    assert body["error"] == "OutsideWarehouse"
    assert f"/{ns}/{table}/metadata/" in body["location"]
    # nothing of it was read (the metadata cache is floe's: the fixture's writes are in it)
    escaped = f"{settings.FLOE_WAREHOUSE}/{ns}/{table}/"
    assert not any(k[0].startswith(escaped) for k in CACHE.metadata.keys())
    assert len(CACHE.derived) == 0


def test_the_lists_show_an_escaped_table_as_an_error_row(client: Client,
                                                         escapes: HistoryTable) -> None:
    page = client.get("/")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    assert 'data-table="shop.link"' in text and 'data-table="x.secret"' not in text
    assert 'data-table="escape.secret"' in text and OUTSIDE in text
    rows = client.get("/api/catalogs/local/namespaces/shop/tables/").json()["results"]
    link = next(r for r in rows if r["name"] == "link")
    assert OUTSIDE in link["error"] and link["format_version"] is None
    assert next(r for r in rows if r["name"] == "orders")["error"] is None
    outside = str(Path(escapes.location).parent.parent)
    assert CACHE.metadata.keys() and not any(k[0].startswith(outside)
                                             for k in CACHE.metadata.keys())


def test_a_manifest_list_named_outside_is_not_read(client: Client, fresh_history: HistoryTable,
                                                   tmp_path: Path) -> None:
    secret = tmp_path / "secret.avro"
    secret.write_bytes(b"top secret")
    metadata = Path(fresh_history.location) / "metadata"
    current = max(metadata.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    doc = json.loads(current.read_text())
    doc["snapshots"][0]["manifest-list"] = str(secret)
    current.write_text(json.dumps(doc))
    sid = doc["snapshots"][0]["snapshot-id"]
    base = "/catalogs/local/namespaces/shop/tables/orders/"
    api = "/api/catalogs/local/namespaces/shop/tables/orders/"
    for url in (base + f"snapshots/{sid}/", api + f"snapshots/{sid}/manifests/",
                api + f"snapshots/{sid}/files/", base + f"plan/?snapshot={sid}",
                base + f"preview/?snapshot={sid}", base + f"partitions/?snapshot={sid}"):
        response = client.get(url)
        assert response.status_code == 422, url
        assert str(secret) in response.content.decode() and OUTSIDE in response.content.decode()
    assert client.get(base).status_code == 200  # the table itself is fine


def test_a_data_file_linked_from_outside_is_not_read(client: Client, fresh_history: HistoryTable,
                                                     tmp_path: Path) -> None:
    md = history_metadata(fresh_history)
    path = Path(file_rows(FileIO(), md, md.current_snapshot())[0]["file_path"])
    moved = tmp_path / "elsewhere.parquet"
    os.replace(path, moved)
    path.symlink_to(moved)
    base = "/catalogs/local/namespaces/shop/tables/orders/"
    for url in (base + "preview/", base + "preview/?format=parquet"):
        response = client.get(url)
        assert response.status_code == 422, url
        assert str(path) in html.unescape(response.content.decode())
    # pages that read metadata only still render
    assert client.get(base + "snapshots/").status_code == 200


def test_a_cached_copy_is_no_way_around_the_warehouse(client: Client, tmp_path: Path,
                                                      settings: Any) -> None:
    """Catalog ``other`` holds a table whose manifest lists (inside its warehouse) name the
    manifests of a table in catalog ``local``. After ``local``'s table was planned and
    previewed (its manifests, metadata and delete files in every cache), ``other``'s pages
    still refuse those manifests: the guard is asked before every cache."""
    local = write_history_table(tmp_path / "a", "shop", "orders")
    other_wh = tmp_path / "b"
    copy = other_wh / "shop" / "orders"
    (copy / "metadata").mkdir(parents=True)
    for f in Path(local.location, "metadata").iterdir():
        data = f.read_bytes()
        if f.name.endswith(".metadata.json"):  # its manifest lists: the copies, in b
            data = data.replace(str(tmp_path / "a").encode(), str(other_wh).encode())
        (copy / "metadata" / f.name).write_bytes(data)
    (tmp_path / "catalogs.toml").write_text(
        f'[catalogs.local]\ntype = "filesystem"\nwarehouse = "{tmp_path / "a"}"\n'
        f'[catalogs.other]\ntype = "filesystem"\nwarehouse = "{other_wh}"\n')
    settings.FLOE_CATALOGS = str(tmp_path / "catalogs.toml")
    settings.FLOE_WAREHOUSE = ""
    sid = local.snapshot_ids[-1]
    suffixes = ["plan/", "preview/", f"snapshots/{sid}/manifests/0/", "partitions/"]
    for s in suffixes:
        assert client.get(f"/catalogs/local/namespaces/shop/tables/orders/{s}").status_code \
            == 200, s
    assert len(CACHE.live) and len(CACHE.entries)
    for s in suffixes:
        response = client.get(f"/catalogs/other/namespaces/shop/tables/orders/{s}")
        assert response.status_code == 422, s
        assert OUTSIDE in html.unescape(response.content.decode()), s
        assert str(tmp_path / "a") in html.unescape(response.content.decode()), s
