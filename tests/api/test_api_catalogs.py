"""Catalogs, namespaces and tables under /api/catalogs/."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def test_catalogs_lists_the_local_warehouse(api: APIClient, warehouse: Path) -> None:
    response = api.get("/api/catalogs/")
    assert response.status_code == 200
    assert response.json() == [
        {"name": "local", "type": "filesystem", "warehouse": str(warehouse), "exists": True,
         "problem": None}
    ]
    assert api.get("/api/catalogs/local/").json()["name"] == "local"


def test_unknown_catalog_is_404_with_the_reason(api: APIClient, warehouse: Path) -> None:
    for url in ("/api/catalogs/hive/", "/api/catalogs/hive/namespaces/", "/api/catalogs/hive/namespaces/x/tables/"):
        response = api.get(url)
        assert response.status_code == 404, url
        assert response.json() == {"detail": "catalog 'hive' does not exist", "error": "NotFound"}


def test_namespaces_paginate(api: APIClient, warehouse: Path) -> None:
    """Every namespace the catalog lists, nested ones too (``lake`` holds only ``lake.raw``)."""
    body = api.get("/api/catalogs/local/namespaces/", {"page_size": 2}).json()
    assert body["count"] == 4
    assert body["results"] == [{"catalog": "local", "name": "lake", "table_count": 0},
                               {"catalog": "local", "name": "lake.raw", "table_count": 1}]
    assert body["next"].endswith("page=2&page_size=2") and body["previous"] is None
    body = api.get(body["next"]).json()
    assert body["results"] == [{"catalog": "local", "name": "sales", "table_count": 2},
                               {"catalog": "local", "name": "staging", "table_count": 2}]


def test_tables_of_a_namespace_with_counts(api: APIClient, warehouse: Path) -> None:
    body = api.get("/api/catalogs/local/namespaces/sales/tables/").json()
    assert body["count"] == 2
    orders = body["results"][0]
    assert orders == {
        "catalog": "local", "namespace": "sales", "name": "orders", "identifier": "sales.orders",
        "location": str(warehouse / "sales" / "orders"),
        "metadata_location": str(warehouse / "sales" / "orders" / "metadata" / "v3.metadata.json"),
        "format_version": 2, "current_snapshot_id": 1002, "data_files": 3, "delete_files": 1,
        "records": 150, "files_size": 3048, "error": None,
    }


def test_tables_paginate_and_search(api: APIClient, warehouse: Path) -> None:
    body = api.get("/api/catalogs/local/namespaces/staging/tables/", {"page_size": 1, "page": 2}).json()
    assert body["count"] == 2 and [t["name"] for t in body["results"]] == ["empty_table"]
    body = api.get("/api/catalogs/local/namespaces/staging/tables/", {"q": "brok"}).json()
    assert [t["name"] for t in body["results"]] == ["broken"]
    assert body["results"][0]["error"].endswith("malformed JSON at line 1 column 2: Expecting property name enclosed in double quotes")
    past = api.get("/api/catalogs/local/namespaces/staging/tables/", {"page": 9})
    assert past.status_code == 400  # a page past the end says so (issue 13), not "not found"
    assert "page 9 does not exist" in past.json()["detail"]


def test_nested_namespace_by_dotted_name(api: APIClient, warehouse: Path) -> None:
    body = api.get("/api/catalogs/local/namespaces/lake.raw/tables/").json()
    assert [t["identifier"] for t in body["results"]] == ["lake.raw.events"]


def test_unknown_namespace_and_table_are_404(api: APIClient, warehouse: Path) -> None:
    response = api.get("/api/catalogs/local/namespaces/nope/tables/")
    assert response.status_code == 404
    assert response.json()["detail"] == "namespace 'nope' does not exist in catalog 'local'"
    assert api.get("/api/catalogs/local/namespaces/sales/tables/nope/").status_code == 404


def test_table_detail_and_a_broken_table_is_422_naming_the_file(api: APIClient, warehouse: Path) -> None:
    assert api.get("/api/catalogs/local/namespaces/sales/tables/orders/").json()["records"] == 150
    response = api.get("/api/catalogs/local/namespaces/staging/tables/broken/")
    assert response.status_code == 422
    body = response.json()
    location = str(warehouse / "staging" / "broken" / "metadata" / "v1.metadata.json")
    assert body["error"] == "MetadataError" and body["location"] == location
    assert body["detail"].startswith(location + ": malformed JSON")


def test_reads_need_a_user_when_anonymous_access_is_off(api: APIClient, warehouse: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_ALLOW_ANONYMOUS = False
    assert api.get("/api/catalogs/").status_code == 401  # token auth offers a challenge
    token = Token.objects.create(user=User.objects.create_user("ada"))
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/catalogs/").status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert api.get("/api/catalogs/").status_code == 401


def test_session_auth_works_too(api: APIClient, warehouse: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_ALLOW_ANONYMOUS = False
    api.force_login(User.objects.create_user("ada"))
    assert api.get("/api/catalogs/local/namespaces/").status_code == 200
