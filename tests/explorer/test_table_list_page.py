"""The first page: the tables of the configured catalogs, searchable, broken ones visible."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from explorer.cache import CACHE
from tests.factories import SnapshotSpec, write_table

pytestmark = pytest.mark.django_db


def _row(html: str, identifier: str) -> str:
    m = re.search(rf'<tr[^>]*data-table="{re.escape(identifier)}".*?</tr>', html, re.S)
    assert m, f"no row for {identifier}"
    return m.group(0)


def _cell(row: str, col: str) -> str:
    m = re.search(rf'data-col="{col}">([^<]*)<', row)
    assert m, f"no {col} cell in {row}"
    return m.group(1).strip()


def test_lists_every_table_with_counts_from_the_current_snapshot(client: Client, warehouse: Path) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.findall(r'data-table="([^"]+)"', html) == [
        "lake.raw.events", "sales.orders", "sales.refunds", "staging.broken", "staging.empty_table"
    ]
    orders = _row(html, "sales.orders")
    assert _cell(orders, "data-files") == "3"
    assert _cell(orders, "delete-files") == "1"
    assert _cell(orders, "records") == "150"
    assert '<span class="size" title="3,048 bytes">3.0 KiB</span>' in orders
    assert "1002" in orders and "v2" in orders
    events = _row(html, "lake.raw.events")
    assert _cell(events, "records") == "3,000"
    refunds = _row(html, "sales.refunds")
    assert "v1" in refunds and _cell(refunds, "records") == "7"
    empty = _row(html, "staging.empty_table")
    assert _cell(empty, "records") == "0" and "—" in empty


def test_a_broken_table_is_an_error_row_naming_the_file(client: Client, warehouse: Path) -> None:
    response = client.get("/")
    assert response.status_code == 200
    broken = _row(response.content.decode(), "staging.broken")
    assert 'class="broken"' in broken
    assert "staging/broken/metadata/v1.metadata.json" in broken
    assert "malformed JSON" in broken


def test_search_filters_by_namespace_and_name_case_insensitively(client: Client, warehouse: Path) -> None:
    html = client.get("/", {"q": "SALES."}).content.decode()
    assert re.findall(r'data-table="([^"]+)"', html) == ["sales.orders", "sales.refunds"]
    html = client.get("/", {"q": "event"}).content.decode()
    assert re.findall(r'data-table="([^"]+)"', html) == ["lake.raw.events"]
    html = client.get("/", {"q": "nothing-like-this"}).content.decode()
    assert "No table matches" in html and "data-table=" not in html


def test_pages_long_lists_and_reads_only_the_page(client: Client, tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "many"
    for i in range(7):
        write_table(root, "ns", f"t{i}", [SnapshotSpec(1, i, 10)])
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_PAGE_SIZE = 3
    html = client.get("/", {"page": 3}).content.decode()
    assert re.findall(r'data-table="([^"]+)"', html) == ["ns.t6"]
    assert "Page 3 of 3" in html
    assert len(CACHE.metadata) == 1  # only the table on the page was read


def test_an_empty_and_a_missing_warehouse_are_explained(client: Client, tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_WAREHOUSE = str(tmp_path)
    assert "No tables in this warehouse yet" in client.get("/").content.decode()
    settings.FLOE_WAREHOUSE = str(tmp_path / "absent")
    response = client.get("/")
    assert response.status_code == 200
    assert "does not exist" in response.content.decode()


def test_login_is_required_unless_anonymous_reading_is_allowed(client: Client, warehouse: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_ALLOW_ANONYMOUS = False
    response = client.get("/", {"q": "x"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    User.objects.create_user("ada", password="s3cret-pass")
    assert client.post("/accounts/login/", {"username": "ada", "password": "s3cret-pass"}).status_code == 302
    response = client.get("/")
    assert response.status_code == 200 and "ada" in response.content.decode()


def test_our_stylesheet_is_linked_and_no_cdn_is(client: Client, warehouse: Path) -> None:
    html = client.get("/").content.decode()
    assert '<link rel="stylesheet" href="/static/floe/floe.css">' in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_an_unknown_page_number_shows_the_last_page(client: Client, warehouse: Path) -> None:
    assert client.get("/", {"page": "999"}).status_code == 200
    assert client.get("/", {"page": "abc"}).status_code == 200


def test_the_stylesheet_is_served_by_the_app(client: Client) -> None:
    response = client.get("/static/floe/floe.css")
    try:
        assert response.status_code == 200
        assert b"".join(response.streaming_content).startswith(b"/* Floe")
    finally:
        response.close()
