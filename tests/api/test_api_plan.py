"""``/api/.../plan/``: the explained plan as JSON, paged, documented, with 400/404 on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from floe.demo import create_demo_warehouse
from floe.scan import plan_files

pytestmark = pytest.mark.django_db
URL = "/api/catalogs/local/namespaces/web/tables/events/plan/"


@pytest.fixture(scope="module")
def _demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api-demo") / "warehouse"
    create_demo_warehouse(str(root))
    return root


@pytest.fixture
def demo(_demo: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    settings.FLOE_WAREHOUSE = str(_demo)
    return _demo


def test_plan_json_equals_floe_plan(client: Client, demo: Path) -> None:
    t = directory_table(str(demo / "web" / "events"))
    flt = "ts >= TIMESTAMP '2025-03-05 00:00:00+00:00' AND user_id < 100"
    expected = plan_files(t.io, t.metadata, row_filter=flt, explain=True).to_json()
    body = client.get(URL, {"filter": flt, "page_size": 1000}).json()
    assert body["funnel"] == expected["funnel"]
    assert body["snapshot_id"] == expected["snapshot_id"]
    assert body["count"] == len(expected["manifests"])
    residuals = {task["file_path"]: task["residual"] for task in expected["tasks"]}
    for got, want in zip(body["results"], expected["manifests"], strict=True):
        assert {k: got[k] for k in ("path", "kept", "stage", "reason")} == \
            {k: want[k] for k in ("path", "kept", "stage", "reason")}
        for gf, wf in zip(got["files"], want["files"], strict=True):
            assert (gf["path"], gf["kept"], gf["stage"], gf["reason"]) == \
                (wf["path"], wf["kept"], wf["stage"], wf["reason"])
            if gf["kept"]:
                assert gf["residual"] == residuals[gf["path"]]


def test_paged_and_by_snapshot(client: Client, demo: Path) -> None:
    t = directory_table(str(demo / "web" / "events"))
    first = min(t.metadata.snapshots, key=lambda s: s.sequence_number)
    body = client.get(URL, {"snapshot": first.snapshot_id, "page_size": 1}).json()
    assert body["snapshot_id"] == first.snapshot_id and body["count"] == 1
    body = client.get(URL, {"page_size": 2}).json()
    assert len(body["results"]) == 2 and body["next"] is not None


@pytest.mark.parametrize(("query", "status", "needle"), [
    ({"filter": "user_id >"}, 400, "position"),
    ({"filter": "userid = 1"}, 400, "unknown column"),
    ({"snapshot": "42"}, 404, "42"),
    ({"ref": "nope"}, 404, "nope"),
])
def test_bad_input(client: Client, demo: Path, query: dict[str, str], status: int, needle: str) -> None:
    response = client.get(URL, query)
    assert response.status_code == status
    assert needle in response.json()["detail"]


def test_unknown_table_and_escape(client: Client, demo: Path) -> None:
    assert client.get("/api/catalogs/local/namespaces/web/tables/nope/plan/").status_code == 404
    assert client.get("/api/catalogs/local/namespaces/%2E%2E/tables/events/plan/").status_code == 400


def test_documented_in_the_openapi_schema(client: Client) -> None:
    schema = client.get("/api/schema/", {"format": "json"}).json()
    op = schema["paths"]["/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/plan/"]["get"]
    assert {p["name"] for p in op["parameters"]} >= {"snapshot", "ref", "filter", "page"}
    assert "ScanPlan" in schema["components"]["schemas"]
    assert "funnel" in schema["components"]["schemas"]["ScanPlan"]["properties"]
