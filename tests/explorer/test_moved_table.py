"""Issue 19, point 14: a table directory moved or copied without rewriting its metadata (whose
file paths are absolute, so they still name the old place) says so on its pages and in the
errors of what cannot be read, instead of "outside the warehouse" or "file does not exist";
what the warehouse confinement refuses stays refused (tests/explorer/test_warehouse_confinement
.py keeps its own cases)."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from floe.io import FileIO
from tests.factories import HistoryTable, write_history_table

pytestmark = pytest.mark.django_db

BASE = "/catalogs/local/namespaces/shop/tables/{}/"
API = "/api/catalogs/local/namespaces/shop/tables/{}/"
MOVED = "this table's metadata points to {}: it was moved or copied to {}"
NOTICE = "This table's metadata points to {}: it was moved or copied to {}"


def _urls(name: str, table: HistoryTable) -> list[str]:
    """Every page and endpoint of the table that reads its manifests or data files."""
    first, last = table.snapshot_ids[0], table.snapshot_ids[-1]
    base, api = BASE.format(name), API.format(name)
    pages = [f"snapshots/{last}/", f"snapshots/{last}/manifests/0/",
             f"snapshots/{last}/manifests/0/files/0/", f"diff/?from={first}&to={last}",
             "partitions/", "plan/", "preview/"]
    endpoints = [f"snapshots/{last}/manifests/", f"snapshots/{last}/files/",
                 f"diff/?from={first}&to={last}", "plan/"]
    return [base + p for p in pages] + [api + e for e in endpoints]


def _text(response: Any) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "",
                                                    response.content.decode())))


@pytest.fixture
def warehouse(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    root.mkdir()
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every file the explorer opens during the test."""
    opened: list[str] = []
    original = FileIO.open

    def spy(self: FileIO, location: str) -> Any:
        opened.append(location)
        return original(self, location)

    monkeypatch.setattr(FileIO, "open", spy)
    yield opened


def test_a_table_moved_in_from_outside_says_where_its_metadata_points(
        warehouse: Path, tmp_path: Path, reads: list[str]) -> None:
    outside = write_history_table(tmp_path / "elsewhere")
    here = warehouse / "shop" / "orders"
    shutil.copytree(outside.location, here)
    reads.clear()  # the factory's own reads
    client = Client()
    overview = client.get(BASE.format("orders"))
    assert overview.status_code == 200
    notice = _text(overview)
    assert NOTICE.format(outside.location, here) in notice
    assert "That place is not in the warehouse, so its snapshots' manifests and data files "\
           "are not read." in notice
    for url in _urls("orders", outside):
        response = client.get(url)
        assert response.status_code == 422, url
        text = _text(response)
        assert MOVED.format(outside.location, here) in text, (url, text[:600])
        assert "that place is not in the warehouse" in text and \
            "outside the warehouse" not in text, url
    body = client.get(API.format("orders") + f"snapshots/{outside.snapshot_ids[-1]}/files/")
    assert body.json()["error"] == "TableMoved"
    assert body.json()["location"].startswith(outside.location + "/metadata/")
    assert not [r for r in reads if r.startswith(str(tmp_path / "elsewhere"))]  # still refused


def test_a_table_moved_within_the_warehouse_says_its_files_are_gone(warehouse: Path) -> None:
    table = write_history_table(warehouse)
    moved = warehouse / "shop" / "renamed"
    Path(table.location).rename(moved)
    client = Client()
    overview = _text(client.get(BASE.format("renamed")))
    assert NOTICE.format(table.location, moved) in overview
    assert "Nothing is there any more" in overview
    for url in _urls("renamed", table):
        response = client.get(url)
        assert response.status_code == 422, url
        text = _text(response)
        assert MOVED.format(table.location, moved) in text and \
            "the file is no longer there" in text, (url, text[:600])


def test_a_copied_table_is_read_from_where_its_metadata_points(warehouse: Path) -> None:
    table = write_history_table(warehouse)
    copy = warehouse / "shop" / "copy"
    shutil.copytree(table.location, copy)
    client = Client()
    overview = _text(client.get(BASE.format("copy")))
    assert NOTICE.format(table.location, copy) in overview
    assert "read from there, not from this directory" in overview
    for url in _urls("copy", table):
        assert client.get(url).status_code == 200, url
    original = client.get(BASE.format("orders")).content.decode()
    assert 'id="moved"' not in original  # where its metadata says it is
