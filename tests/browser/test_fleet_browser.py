"""The fleet view and a table's health over time in a real browser (issue 22): the sweep
records every table of a warehouse, the fleet lists them worst first, its filter narrows them
to a namespace, a row leads to the table, whose overview draws the health's sparklines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from explorer.maintenance.metrics import metrics_sweep
from tests.explorer.tasks_support import make_table, rows

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_fleet_leads_to_a_table_and_its_health_over_time(
        page: Any, live_server: Any, tmp_path: Path, settings: Any) -> None:
    lake = tmp_path / "warehouse"
    events = make_table(lake, "web", "events")  # nine small files
    make_table(lake, "web.deep", "clicks", appends=1, partition_by="")
    orders = make_table(lake, "sales", "orders", appends=2, partition_by="")
    orders.delete_where("id < 150", mode="merge-on-read")  # delete files, deleted rows
    settings.FLOE_WAREHOUSE = str(lake)
    settings.FLOE_ALLOW_ANONYMOUS = True
    assert metrics_sweep().recorded == 3
    events.append(rows(1000, 10))
    assert metrics_sweep().recorded == 1
    site = str(live_server.url)

    page.goto(site + "/fleet/")
    listed = page.locator("#fleet tbody tr")
    assert [r.get_attribute("data-table") for r in listed.all()][0] == "sales.orders"
    assert listed.count() == 3
    first = page.locator('#fleet tr[data-table="sales.orders"] [data-col="warnings"]')
    assert "deleted rows" in first.inner_text() and "delete files" in first.inner_text()

    page.fill("#fleet-namespace", "web")
    with page.expect_navigation():
        page.click("#fleet-filter button[type=submit]")
    assert "namespace=web" in page.url
    assert sorted(r.get_attribute("data-table") for r in listed.all()) == [
        "web.deep.clicks", "web.events"]

    with page.expect_navigation():
        page.click('#fleet tr[data-table="web.events"] th a')
    assert page.url.endswith("/catalogs/local/namespaces/web/tables/events/")
    history = page.locator("#health-history")
    assert history.get_attribute("data-states") == "2"
    line = page.locator('#health-history li[data-metric="records"]')
    assert line.locator("svg.sparkline polyline").count() == 1
    assert re.search(r"300 → 310 over 2", line.locator("svg title").text_content() or "")
    box = line.locator("svg.sparkline").bounding_box()
    assert box is not None and box["width"] > 50  # drawn, not collapsed
