"""Values on the pages as Iceberg and SQL print them (issue 19, points 2 and 14): a file's
bounds and the preview's cells show true / false, a float32 in its shortest form, NaN,
Infinity and -Infinity; the preview's CSV link writes nested values as JSON text."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from tests.special_values import write_special_table

pytestmark = pytest.mark.django_db

LAB = "/catalogs/local/namespaces/lab/tables/special/"
SESSIONS = "/catalogs/local/namespaces/web/tables/sessions/"


@pytest.fixture
def lab(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    write_special_table(root)
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return root


def _bounds(page: str) -> dict[str, tuple[str, str]]:
    """Column name → (lower, upper) as the file page shows them."""
    out = {}
    for row in re.findall(r"<tr data-field-id=.*?</tr>", page, re.S):
        name = re.search(r'data-col="name"><code>([^<]*)<', row).group(1)  # type: ignore[union-attr]
        lower = re.search(r'data-col="lower">([^<]*)<', row).group(1)  # type: ignore[union-attr]
        upper = re.search(r'data-col="upper">([^<]*)<', row).group(1)  # type: ignore[union-attr]
        out[name] = (html.unescape(lower), html.unescape(upper))
    return out


#: id → the bounds of f (a float32), d (a double) and ok (a boolean) of that row's file
#: (NaN is never a bound: the NaN file has none for f and d).
EXPECTED_BOUNDS = {"1": ("0.1", "0.1", "true"), "2": ("—", "—", "false"),
                   "3": ("Infinity", "Infinity", "—"), "4": ("-Infinity", "-Infinity", "true")}


def test_file_bounds_read_as_iceberg_prints_them(lab: Path) -> None:
    client = Client()
    sid = directory_table(str(lab / "lab" / "special")).metadata.current_snapshot_id
    seen = {}
    for position in range(4):
        page = client.get(LAB + f"snapshots/{sid}/manifests/0/files/{position}/")
        assert page.status_code == 200
        bounds = _bounds(page.content.decode())
        lower_id, upper_id = bounds["id"]
        assert lower_id == upper_id
        seen[lower_id] = tuple(bounds[c][0] for c in ("f", "d", "ok"))
        assert all(bounds[c][0] == bounds[c][1] for c in ("f", "d", "ok"))  # one row each
        assert bounds["device.seen"][0] == "2024-05-06T07:08:09+00:00"
    assert seen == EXPECTED_BOUNDS


def _preview_cells(page: str) -> list[list[str]]:
    body = re.search(r'id="rows".*?<tbody>(.*?)</tbody>', page, re.S).group(1)  # type: ignore[union-attr]
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_preview_cells_read_as_iceberg_prints_them(lab: Path) -> None:
    page = Client().get(LAB + "preview/", {"columns": "id,f,d,ok"})
    assert page.status_code == 200
    assert sorted(_preview_cells(page.content.decode())) == [
        ["1", "0.1", "0.1", "true"], ["2", "NaN", "NaN", "false"],
        ["3", "Infinity", "Infinity", "null"], ["4", "-Infinity", "-Infinity", "true"]]
    nested = Client().get(LAB + "preview/", {"filter": "id = 3",
                                             "columns": "raw,device,tags,pages"})
    assert _preview_cells(nested.content.decode()) == [[
        "AP8D", "{os: 'linux', version: 3, seen: 2024-05-06T07:08:09+00:00}",
        "{'k': Infinity, 'x''y': 1.5}", "['/a', null, '/b \"c\"']"]]


def _csv_link(page: str) -> str:
    href = re.search(r'id="export-csv" href="([^"]*)"', page).group(1)  # type: ignore[union-attr]
    return html.unescape(href)


@pytest.mark.parametrize(("base", "query", "expected"), [
    (LAB, "filter=id+%3D+4", {"device": {"os": "linux", "version": 4,
                                         "seen": "2024-05-06T07:08:09.000000+00:00"},
                              "tags": {"k": "-Infinity", "x'y": 1.5},
                              "pages": ["/a", None, '/b "c"'], "raw": "00ff04"}),
    (SESSIONS, "filter=session_id+%3D+5", {"device": {"os": "android", "version": 10},
                                           "tags": {"k1": 5}, "pages": ["/p0", "/p1", "/p2"]}),
], ids=["special", "demo-sessions"])
def test_the_preview_csv_link_writes_nested_values_as_json(
        request: pytest.FixtureRequest, base: str, query: str, expected: dict[str, Any]) -> None:
    request.getfixturevalue("lab" if base == LAB else "demo")
    client = Client()
    page = client.get(base + "preview/?" + query).content.decode()
    response = client.get(base + "preview/" + _csv_link(page))
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/csv")
    (row,) = list(csv.DictReader(io.StringIO(response.content.decode())))
    for column, value in expected.items():
        assert (json.loads(row[column]) if column != "raw" else row[column]) == value


def test_partition_summaries_read_as_iceberg_prints_them(lab: Path) -> None:
    """The snapshot page's manifest list: the double partition's range over 0.1, NaN and the
    infinities is [-Infinity … Infinity] with NaN noted apart, not Python's inf."""
    sid = directory_table(str(lab / "lab" / "special")).metadata.current_snapshot_id
    page = Client().get(LAB + f"snapshots/{sid}/")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    assert "<code>d</code>: [-Infinity … Infinity] +NaN" in text
