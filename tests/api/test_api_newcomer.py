"""Issue 13 as a newcomer meets the API: every API URL renders in a browser (HTML) and
answers JSON clients, JSON 404s under /api/, pages that are not pages are 400s, diff takes
branch and tag names and names its parameters as the URL does, and the partitions, preview
and export endpoints (defects 1, 3, 7, 11, 12)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table

pytestmark = pytest.mark.django_db

T = "/api/catalogs/local/namespaces/web/tables/events/"
S = "/api/catalogs/local/namespaces/web/tables/sessions/"
HTML = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}


def _first_snapshot(demo: Path) -> int:
    t = directory_table(str(demo / "web" / "events"))
    return min(t.metadata.snapshots, key=lambda s: s.sequence_number).snapshot_id


@pytest.mark.parametrize("url", [
    "/api/", "/api/catalogs/", "/api/catalogs/local/", "/api/catalogs/local/namespaces/",
    "/api/catalogs/local/namespaces/web/tables/", T, T + "snapshots/", T + "refs/",
    T + "history/", T + "plan/", T + "partitions/", T + "preview/?limit=3", "/api/tasks/",
    "/api/audit/", S + "refs/",
])
def test_every_api_url_renders_in_a_browser_and_answers_json(demo: Path, url: str) -> None:
    """Defect 1: DRF's HTML renderer asserted on every list view (500)."""
    client = Client(raise_request_exception=False)
    page = client.get(url, **HTML)
    assert page.status_code == 200, page.content[:500]
    assert page["Content-Type"].startswith("text/html")
    assert b"<html" in page.content
    data = client.get(url, HTTP_ACCEPT="application/json")
    assert data.status_code == 200 and data["Content-Type"] == "application/json"


def test_snapshot_manifests_and_files_render_in_a_browser(demo: Path) -> None:
    client = Client(raise_request_exception=False)
    sid = _first_snapshot(demo)
    for suffix in (f"snapshots/{sid}/", f"snapshots/{sid}/manifests/", f"snapshots/{sid}/files/",
                   f"diff/?from={sid}&to=main"):
        assert client.get(T + suffix, **HTML).status_code == 200, suffix


def test_api_root_lists_the_entry_points_and_unknown_api_urls_are_json_404s(demo: Path) -> None:
    """Defect 11: /api/ and unmatched API routes answered Django's HTML 404 page."""
    client = Client()
    root = client.get("/api/", HTTP_ACCEPT="application/json").json()
    assert root["catalogs"].endswith("/api/catalogs/")
    assert root["reference"].endswith("/api/reference/")
    for url in ("/api/nope/", "/api/catalogs/local/namespaces/web/tables/events/nope/"):
        response = client.get(url)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"] == "NotFound"


@pytest.mark.parametrize(("query", "needle"), [
    ("page=abc", "'page' must be a page number"),
    ("page=0", "page 0 does not exist"),
    ("page=99", "page 99 does not exist: there is 1 page of 50"),
])
def test_a_page_that_is_not_a_page_is_a_400_saying_why(demo: Path, query: str, needle: str
                                                       ) -> None:
    """Defect 11: ``?page=abc`` and a page past the end were 404 "Invalid page."."""
    response = Client().get(f"/api/catalogs/local/namespaces/web/tables/?{query}")
    assert response.status_code == 400
    assert needle in response.json()["detail"]


def test_page_last_is_the_last_page(demo: Path) -> None:
    body = Client().get("/api/catalogs/local/namespaces/?page_size=1&page=last").json()
    assert body["next"] is None and body["previous"] is not None


def test_names_are_checked_before_anything_is_read(demo: Path) -> None:
    """Defect 3 (the API half): ``web..`` was a 200 with an empty list."""
    for url in ("/api/catalogs/local/namespaces/web../tables/",
                "/api/catalogs/local/namespaces/.ssh/tables/"):
        response = Client().get(url)
        assert response.status_code == 400, url
        assert "invalid namespace" in response.json()["detail"]


def test_diff_takes_branch_and_tag_names_and_names_its_parameters(demo: Path) -> None:
    """Defect 7: ids only, and errors named the internal ``from_``."""
    client = Client()
    body = client.get(S + "diff/?from=v1&to=main").json()
    assert body["added_rows"] > 0 and body["removed_rows"] == 0  # main gained rows since v1
    dev = client.get(S + "diff/?from=v1&to=dev").json()
    assert dev["added_rows"] == 25
    bad = client.get(S + "diff/?from=nope&to=main")
    assert bad.status_code == 400
    assert "'from'" in bad.json()["detail"] and "from_" not in bad.content.decode()
    missing = client.get(S + "diff/?to=main")
    assert missing.status_code == 400 and "'from' is required" in missing.json()["detail"]


def test_partitions_endpoint(demo: Path) -> None:
    """Defect 12: partitions were a page only."""
    body = Client().get(S + "partitions/").json()
    assert body["count"] == len(body["results"]) == 4  # one per country
    assert body["totals"]["partitions"] == 4
    assert sum(p["record_count"] for p in body["results"]) == body["totals"]["record_count"]
    assert [p["total_size"] for p in body["results"]] == sorted(
        (p["total_size"] for p in body["results"]), reverse=True)
    assert Client().get(S + "partitions/?ref=nope").status_code == 400


def test_preview_endpoint_returns_rows_as_json_values(demo: Path) -> None:
    """Defect 12: preview was a page only; nested values are JSON, not Python reprs."""
    body = Client().get(S + "preview/?columns=session_id,active,device,tags,pages"
                            "&filter=session_id+%3D+5").json()
    assert body["columns"] == ["session_id", "active", "device", "tags", "pages"]
    assert body["rows"] == [[5, True, {"os": "android", "version": 10}, {"k1": 5},
                             ["/p0", "/p1", "/p2"]]]
    deleted = Client().get(S + "preview/?filter=session_id+%3C+5").json()
    assert deleted["row_count"] == 0  # the position deletes are applied
    v1 = Client().get(S + "preview/?ref=v1&limit=1000").json()
    assert v1["row_count"] == 70


def test_export_endpoint_writes_csv_and_parquet(demo: Path) -> None:
    """Defect 12: export was a page only."""
    client = Client()
    csv = client.get(S + "export/?format=csv&columns=session_id,country&ref=v1")
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert csv.content.decode().splitlines()[0] == '"session_id","country"'
    assert len(csv.content.decode().splitlines()) == 71
    parquet = client.get(S + "export/?format=parquet&ref=dev")
    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == 95
    assert parquet["Content-Disposition"] == 'attachment; filename="sessions.parquet"'
    bad = client.get(S + "export/?format=xlsx")
    assert bad.status_code == 400 and "'format'" in bad.json()["detail"]


@pytest.mark.parametrize("url", ["/api/", S, S + "partitions/", S + "preview/?limit=5",
                                 S + "diff/?from=v1&to=dev"])
def test_new_responses_match_the_schema(demo: Path, url: str) -> None:
    from tests.api.test_api_openapi import _assert_matches

    client = Client()
    openapi = client.get("/api/schema/", {"format": "json"}).json()
    response = client.get(url)
    _assert_matches(openapi, "get", url, response.status_code, response.json())
