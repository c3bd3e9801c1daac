"""Issue 13's crawl over the warehouse Spark + Iceberg Java wrote (tests/interop/spark_tables.py:
v1 and v2 tables, merge-on-read and equality deletes, evolution, branches and tags, nested
types): from the home page every table's overview, and every kind of page of a few tables
that between them hold every feature; no 4xx/5xx, no console error, nothing wider than a
1,400 px window. Screenshots in test-artifacts/crawl-java/."""

from __future__ import annotations

import re
from typing import Any

import pytest
from spark_tables import SparkTable

from tests.browser.crawl import crawl, kind

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

#: Crawled in depth: deletes of both kinds, refs, nested types, both evolutions, v1.
DEEP = ("mor_v2", "eqdel_v2", "refs_v2", "nested_v2", "evolve_v1")


def _kind(url: str) -> str:
    """Per table for the DEEP tables; for the others their overview, and one page of each
    other kind for all of them together."""
    k = kind(url)
    match = re.match(r"(/(?:api/)?catalogs/[^/]+/namespaces/[^/]+/tables/)([^/]+)/(.*)", k)
    if match is None or match.group(2) in DEEP or match.group(3) == "":
        return k
    return f"{match.group(1)}*/{match.group(3)}"


def test_crawl_a_spark_written_warehouse(browser: Any, live_server: Any,
                                        spark_tables: dict[str, SparkTable],
                                        settings: Any) -> None:
    tables = list(spark_tables.values())
    settings.FLOE_WAREHOUSE = str(tables[0].location.parent.parent)
    settings.FLOE_ALLOW_ANONYMOUS = True
    settings.FLOE_PAGE_SIZE = 100  # every table on the home page
    site = str(live_server.url)
    result = crawl(browser, site, name="java", kind_of=_kind, max_pages=400)
    assert not result.problems, (
        f"{len(result.problems)} problems on {len(result.pages)} pages:\n{result.report()}")
    overviews = {m.group(1) for u in result.pages
                 if (m := re.fullmatch(r"/catalogs/local/namespaces/db/tables/([^/]+)/", u))}
    # every Spark table's overview (other interop tests may add tables to the same warehouse)
    assert set(spark_tables) <= overviews
    for name in DEEP:
        for page in ("partitions/", "plan/", "preview/", "diff/", "history/", "snapshots/"):
            assert f"/catalogs/local/namespaces/db/tables/{name}/{page}" in result.pages
    print(f"crawled {len(result.pages)} pages")
