"""In a real browser: open a table, the timeline draws points and opens a snapshot, the
scan-plan page draws a funnel for a filter, the diff page lists added files."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import NoReverseMatch, Resolver404, resolve

from tests.conftest import screenshot

TABLE = "/catalogs/local/namespaces/web/tables/events/"
pytestmark = pytest.mark.django_db(transaction=True)


def _routed(path: str) -> None:
    """The table pages are built alongside; until a route exists, say so instead of failing."""
    try:
        resolve(path)
    except (Resolver404, NoReverseMatch):
        pytest.skip(f"{path} is not routed yet")


def test_open_a_table_from_the_list(page: Any, site: str) -> None:
    page.goto(site + "/")
    page.get_by_text("events").first.wait_for()
    screenshot(page, "tables")
    _routed(TABLE)
    page.goto(site + TABLE)
    assert page.locator("h1").first.inner_text()
    screenshot(page, "table")


def test_timeline_draws_points_and_a_click_opens_the_snapshot(page: Any, site: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    _routed(TABLE)
    page.goto(site + TABLE)
    page.wait_for_function(
        "() => { const gd = document.getElementById('timeline');"
        " return gd && gd._fullData && gd._fullLayout && gd._fullLayout._size; }")
    count = page.evaluate("() => document.getElementById('timeline')._fullData"
                          ".filter(t => t.name !== 'current' && t.name !== 'tags')"
                          ".reduce((n, t) => n + t.x.length, 0)")
    assert count >= 6  # the demo's six appends to web.events
    screenshot(page, "timeline")
    # Click the newest point where plotly drew it (WebGL traces have no DOM per point).
    x, y, url = page.evaluate("""() => {
        const gd = document.getElementById('timeline'), L = gd._fullLayout;
        const t = gd._fullData.find(t => t.name !== 'current' && t.name !== 'tags');
        const i = t.x.length - 1, box = gd.getBoundingClientRect();
        return [box.left + L._size.l + L.xaxis.d2p(t.x[i]),
                box.top + L._size.t + L.yaxis.d2p(t.y[i]), t.customdata[i]];
    }""")
    page.mouse.move(x, y)
    try:
        with page.expect_navigation(timeout=3_000):
            page.mouse.click(x, y)
    except PlaywrightTimeout:
        # Chromium started with --disable-gpu has no WebGL picking for scattergl traces:
        # deliver the click plotly would have reported for that point to the page's handler.
        with page.expect_navigation():
            page.evaluate("u => document.getElementById('timeline')"
                          ".emit('plotly_click', {points: [{customdata: u}]})", url)
    assert page.locator("h1").first.is_visible()
    assert "/snapshots/" in page.url
    screenshot(page, "snapshot")


def test_scan_plan_page_shows_a_funnel_for_a_filter(page: Any, site: str) -> None:
    page.goto(site + TABLE + "plan/")
    page.fill("#id_filter", "ts >= TIMESTAMP '2025-03-05 00:00:00+00:00'")
    with page.expect_navigation():
        page.click("#plan-form button[type=submit]")
    page.wait_for_selector("#chart-funnel[data-drawn=true]")
    assert page.locator("#chart-funnel .funnellayer .trace").count() == 1
    assert page.locator("#chart-funnel .funnellayer .point").count() == 7
    assert page.locator("#manifests tr[data-kept=false]").count() > 0  # pruned by the summaries
    screenshot(page, "plan")


def test_a_bad_filter_points_at_the_position(page: Any, site: str) -> None:
    response = page.goto(site + TABLE + "plan/?filter=user_id+%3E")
    assert response is not None and response.status == 400
    assert "position" in page.locator("#filter-error").inner_text()


def test_partitions_page_draws_histogram_and_skew(page: Any, site: str) -> None:
    page.goto(site + TABLE + "partitions/")
    page.wait_for_selector("#chart-table-histogram[data-drawn=true]")
    page.wait_for_selector("#chart-skew[data-drawn=true]")
    assert page.locator("#chart-skew .bars .point").count() > 1
    screenshot(page, "partitions")


def test_preview_shows_rows(page: Any, site: str) -> None:
    page.goto(site + TABLE + "preview/?limit=20&columns=event_id,kind")
    assert page.locator("#rows tbody tr").count() == 20
    screenshot(page, "preview")


def test_diff_page_lists_added_files(page: Any, site: str) -> None:
    from floe.catalog.filesystem import directory_table
    from django.conf import settings

    t = directory_table(f"{settings.FLOE_WAREHOUSE}/web/events")
    snaps = sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)
    path = f"{TABLE}diff/"
    _routed(path)
    page.goto(f"{site}{path}?from={snaps[0].snapshot_id}&to={snaps[-1].snapshot_id}")
    page.get_by_text(".parquet").first.wait_for()
    assert page.get_by_text("added", exact=False).count() > 0
    screenshot(page, "diff")
