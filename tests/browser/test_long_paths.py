"""Issue 19, point 9, in a real browser at 1,280 px: the file, manifest and scan-plan tables
show each path relative to the table's location (the full path on hover and on the file's own
page), and their right-most column stays in the window however long the paths are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)

NS, NAME = "lake", "events_with_a_rather_long_descriptive_name_for_paths"
TABLE = f"/catalogs/local/namespaces/{NS}/tables/{NAME}/"
#: Partition values long enough that even a path relative to the table is cut off.
CATEGORIES = [f"category_{k}_" + "x" * 70 for k in range(2)]


@pytest.fixture
def long_paths(tmp_path: Path, settings: Any, live_server: Any) -> tuple[str, Any]:
    """A table in a deep warehouse directory with long partition values, two appends and a
    merge-on-read delete (so the plan lists delete files)."""
    root = tmp_path.joinpath(*["a_warehouse_directory_with_a_long_name"] * 3)
    root.mkdir(parents=True)
    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "category", STRING))
    catalog = FileSystemCatalog("local", str(root))
    catalog.create_namespace((NS,))
    table = catalog.create_table(f"{NS}.{NAME}", schema, parse_partition_by("category", schema),
                                 properties={"commit.manifest-merge.enabled": "false"})
    for first in (0, 20):
        ids = list(range(first, first + 20))
        table = table.append(pa.table({"id": pa.array(ids, pa.int64()),
                                       "category": [CATEGORIES[i % 2] for i in ids]}))
    table = table.delete_where("id = 3", mode="merge-on-read")
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return str(live_server.url), table


def _check_fits(page: Any, table_id: str) -> list[dict[str, Any]]:
    """The right edge of the table's last column is inside the 1,280 px window and nothing
    scrolls sideways; returns the path cells (text, title) of the table."""
    got = page.evaluate("""id => {
        const table = document.getElementById(id);
        const heads = table.tHead.rows[0].cells, last = heads[heads.length - 1];
        const box = table.parentElement;
        return {right: last.getBoundingClientRect().right, window: window.innerWidth,
                overflow: box.scrollWidth - box.clientWidth,
                page: document.documentElement.scrollWidth,
                cells: Array.from(table.querySelectorAll('td.path')).map(c => (
                    {text: c.textContent.trim(), title: c.getAttribute('title'),
                     cut: c.scrollWidth > c.clientWidth}))};
    }""", table_id)
    assert got["right"] <= got["window"], f"#{table_id}: its last column ends at {got['right']}"
    assert got["overflow"] <= 1, f"#{table_id} scrolls sideways by {got['overflow']} px"
    assert got["page"] <= got["window"]
    assert got["cells"], f"#{table_id} has no path cells"
    return list(got["cells"])


def _relative(cells: list[dict[str, Any]], location: str) -> None:
    for cell in cells:
        title = cell["title"]
        assert title and title.startswith(location + "/"), cell
        assert title == location + "/" + cell["text"], cell  # shown relative, in full on hover


def test_paths_are_relative_and_the_last_column_stays_in_view(page: Any, long_paths: Any
                                                              ) -> None:
    site, table = long_paths
    location = table.location
    snap = table.current_snapshot()
    assert page.viewport_size["width"] == 1280

    page.goto(site + TABLE + f"snapshots/{snap.snapshot_id}/")
    cells = _check_fits(page, "manifests")
    _relative(cells, location)
    assert all(c["text"].startswith("metadata/") for c in cells)
    screenshot(page, "long-paths-snapshot")

    page.goto(site + TABLE + f"snapshots/{snap.snapshot_id}/manifests/0/")
    cells = _check_fits(page, "entries")
    _relative(cells, location)
    assert any(c["cut"] for c in cells), "the long paths are cut off with an ellipsis"
    screenshot(page, "long-paths-manifest")

    page.goto(site + TABLE + "plan/?files=all")
    _relative(_check_fits(page, "manifests"), location)
    cells = _check_fits(page, "files")
    _relative(cells, location)
    assert all(c["text"].startswith("data/") for c in cells)
    screenshot(page, "long-paths-plan")

    first = min(table.metadata.snapshots, key=lambda s: s.sequence_number)
    page.goto(site + TABLE + f"diff/?from={first.snapshot_id}&to={snap.snapshot_id}")
    _relative(_check_fits(page, "added-files"), location)


def test_the_file_page_shows_the_whole_path(page: Any, long_paths: Any) -> None:
    site, table = long_paths
    snap = table.current_snapshot()
    page.goto(site + TABLE + f"snapshots/{snap.snapshot_id}/manifests/0/")
    cell = page.locator("#entries td.path").first
    full = cell.get_attribute("title")
    with page.expect_navigation():
        cell.locator("a").click()
    assert page.locator("#file-path").inner_text() == full
