"""Every link from the home page of the demo warehouse (what ``make run`` serves), in a
1,400 px window: no 4xx/5xx, no console error, no page wider than the window (issue 13's
acceptance). One page per kind of URL per table (tests/browser/crawl.py); screenshots in
test-artifacts/crawl-demo/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import crawl, kind

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_kind_of_url_ignores_ids_and_query_values() -> None:
    a = kind("/catalogs/local/namespaces/web/tables/events/snapshots/5714/manifests/0/?page=2")
    b = kind("/catalogs/local/namespaces/web/tables/events/snapshots/99/manifests/3/?page=7")
    assert a == b == "/catalogs/local/namespaces/web/tables/events/snapshots/N/manifests/N/?page"
    assert kind("/catalogs/local/namespaces/web/tables/orders/") != kind(
        "/catalogs/local/namespaces/web/tables/events/")


def test_crawl_the_demo_warehouse(browser: Any, site: str) -> None:
    result = crawl(browser, site, name="demo")
    assert not result.problems, (
        f"{len(result.problems)} problems on {len(result.pages)} pages:\n{result.report()}")
    table_pages = {kind(u).split("/tables/", 1)[-1] for u in result.pages if "/tables/" in u}
    # Every table page is reachable by links, the API in a browser too.
    for suffix in ("events/partitions/", "events/plan/", "events/preview/", "events/diff/",
                   "events/history/", "events/snapshots/N/manifests/N/files/N/"):
        assert any(p.startswith(suffix) for p in table_pages), (suffix, sorted(table_pages))
    assert any(u.startswith("/api/catalogs/") for u in result.pages)
    # the catalog's and the namespaces' pages, linked from the home page and the breadcrumbs
    assert "/catalogs/local/" in result.pages
    assert {"/catalogs/local/namespaces/web/", "/catalogs/local/namespaces/sales/"} <= set(
        result.pages)
    print(f"crawled {len(result.pages)} pages:", *result.pages, sep="\n")
