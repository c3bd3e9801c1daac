"""In headless Chromium, against the live server and a real Celery worker: a table of
SeaweedFS's REST catalog whose files are in its bucket (tests/object_store.py), walked as a
person would: the catalog page → the outer namespace (a level the server keeps no entry for)
→ the nested one → the table's overview (its timeline drawn) → snapshots → a snapshot → a
manifest → a file → the scan plan with a filter → the preview; then a maintainer rolls the
table back from the Actions tab, watches the run succeed, and the REST catalog (as PyIceberg
reads it) is at the snapshot chosen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from floe.catalog.rest import RestCatalog
from tests.conftest import screenshot
from tests.explorer.conftest import _use, worker, worker_warehouse  # noqa: F401 - fixtures
from tests.explorer.tasks_support import Worker, user_with
from tests.explorer.test_rest_catalogs import catalog_toml, make_table, rest_options
from tests.object_store import SeaweedFS, pyiceberg_rest_catalog, unique_name

pytestmark = [pytest.mark.browser, pytest.mark.objectstore, pytest.mark.slow,
              pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rest_worker(worker: Worker, seaweedfs: SeaweedFS, settings: Any) -> Iterator[Worker]:  # noqa: F811
    """The worker and this process both reading a catalog file with the REST catalog
    ``lake`` (the worker's file, given back as it was after the test)."""
    before = worker.catalogs_file.read_text()
    worker.catalogs_file.write_text(catalog_toml({"lake": rest_options(seaweedfs)}))
    settings.FLOE_ALLOW_ANONYMOUS = True
    try:
        yield from _use(worker, settings)
    finally:
        worker.catalogs_file.write_text(before)


@pytest.fixture
def maintainer(browser: Any, live_server: Any, rest_worker: Worker) -> Iterator[Any]:
    client = Client()
    client.force_login(user_with("mia", "maintainer", catalog="lake"))
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                          "url": str(live_server.url)}])
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


def test_a_rest_table_in_a_bucket_walked_and_changed(
        maintainer: Any, live_server: Any, seaweedfs: SeaweedFS, rest_worker: Worker) -> None:
    from playwright.sync_api import expect

    page, site = maintainer, str(live_server.url)
    outer = unique_name("outer")
    ns = f"{outer}.inner"
    with RestCatalog("setup", rest_options(seaweedfs)) as catalog:
        catalog.create_namespace((outer, "inner"))
        table = make_table(catalog, f"{ns}.events")
    first, _, third = table.snapshots()

    page.goto(site + "/catalogs/lake/")
    with page.expect_navigation():
        page.click(f'#namespaces tr[data-namespace="{outer}"] a')
    expect(page.locator("h1")).to_contain_text(outer)
    with page.expect_navigation():
        page.click(f'#namespaces tr[data-namespace="{ns}"] a')
    with page.expect_navigation():
        page.click('#tables a[href$="/tables/events/"]')
    assert page.url.endswith(f"/catalogs/lake/namespaces/{ns}/tables/events/")
    expect(page.locator("#current-snapshot")).to_have_text(str(third.snapshot_id))
    page.wait_for_function("() => { const gd = document.getElementById('timeline');"
                           " return gd && gd._fullData && gd._fullLayout; }")
    drawn = page.evaluate("() => document.getElementById('timeline')._fullData"
                          ".filter(t => !['current', 'refs'].includes(t.name))"
                          ".flatMap(t => Array.from(t.customdata))")
    assert sorted(drawn) == sorted(str(s.snapshot_id) for s in table.snapshots())
    screenshot(page, "rest-overview")

    with page.expect_navigation():
        page.click("#table-tabs >> text=Snapshots")
    with page.expect_navigation():
        page.click(f'#snapshots a:text-is("{third.snapshot_id}")')
    expect(page.locator("#snapshot-id")).to_have_text(str(third.snapshot_id))
    with page.expect_navigation():
        page.locator("#manifests tbody a").first.click()
    manifest = page.locator("#manifest-path").inner_text()
    assert manifest.startswith(f"{table.location}/metadata/")
    with page.expect_navigation():
        page.locator("#entries tbody td.path a").first.click()
    path = page.locator("#file-path").inner_text()
    assert path.startswith(f"{table.location}/data/") and path.endswith(".parquet")
    assert int(page.locator("#record-count").inner_text()) > 0
    screenshot(page, "rest-file")

    with page.expect_navigation():
        page.click("#tab-plan")
    page.fill("#id_filter", "cat = 'c0' AND id < 15")
    with page.expect_navigation():
        page.click("#plan-form button[type=submit]")
    page.wait_for_selector("#chart-funnel[data-drawn=true]")
    kept = page.locator('#files tbody tr[data-kept="true"]').count()
    pruned = page.locator('#files tbody tr[data-kept="false"]').count()
    assert kept > 0 and pruned > 0 and kept + pruned == 6  # the c1 partition pruned
    screenshot(page, "rest-plan")
    with page.expect_navigation():
        page.click("#tab-preview")
    expect(page.locator("#rows tbody tr")).to_have_count(30)

    # a maintainer rolls back from the Actions tab; the worker commits through the catalog
    with page.expect_navigation():
        page.click("#tab-actions")
    page.fill("#rollback-snapshot_id", str(first.snapshot_id))
    with page.expect_navigation(url=re.compile(r"/tasks/\d+/$")):
        page.click("#form-rollback button[value=queue]")
    expect(page.locator("#run-state")).to_have_text(
        re.compile("SUCCEEDED|FAILED|CANCELLED"), timeout=90_000)
    expect(page.locator("#run-state")).to_have_text("SUCCEEDED")
    expect(page.locator("#result-snapshot")).to_have_text(str(first.snapshot_id))
    screenshot(page, "rest-rollback")
    loaded = pyiceberg_rest_catalog(seaweedfs).load_table(f"{ns}.events")
    assert loaded.metadata.current_snapshot_id == first.snapshot_id
    with page.expect_navigation():
        page.click("#table-link")
    expect(page.locator("#current-snapshot")).to_have_text(str(first.snapshot_id))
    with page.expect_navigation():
        page.click("#tab-audit")
    row = page.locator('#audit tr[data-action="rollback"]')
    expect(row).to_have_count(1)
    assert row.get_attribute("data-actor") == "mia"
