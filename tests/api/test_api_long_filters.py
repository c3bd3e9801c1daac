"""Long and deep filters through the API (issue 19, point 4): a filter of hundreds of terms was
a 500 (RecursionError) on the plan and preview endpoints; now it is planned and read, and a
filter nested past floe's one limit (floe.expressions.MAX_DEPTH) is the same 400 everywhere,
tasks included."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from explorer.models import CatalogGrant, TaskRun
from floe.catalog.filesystem import directory_table
from floe.expressions import MAX_DEPTH
from floe.scan.readers import plan_to_table
from floe.scan import plan_files

pytestmark = pytest.mark.django_db

T = "/api/catalogs/local/namespaces/web/tables/events/"
LONG = " OR ".join(f"event_id = {i}" for i in range(0, 1500, 3))  # 500 terms
NOTS = "NOT " * 3001 + "(event_id >= 300 AND " + " AND ".join(
    f"event_id != {i}" for i in range(300, 800)) + ")"  # 500 terms, negated 3001 times


def _deep(levels: int) -> str:
    return "(" * levels + "event_id = 1" + ")" * levels


def _expected_ids(demo: Path, text: str) -> list[int]:
    t = directory_table(str(demo / "web" / "events"))
    read = plan_to_table(t.io, plan_files(t.io, t.metadata, row_filter=text), ["event_id"])
    return sorted(read["event_id"].to_pylist())


@pytest.mark.parametrize("text", [LONG, NOTS], ids=["500-ors", "3001-nots-of-500-ands"])
def test_the_plan_endpoint_plans_a_long_filter(demo: Path, text: str) -> None:
    response = Client().get(T + "plan/", {"filter": text})
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["bound_filter"].count(" OR ") >= 499  # NOT of the ANDs: ORs
    kept = [f for m in body["results"] for f in m["files"] if f["kept"]]
    assert kept and all(f["residual"] for f in kept if f["content"] == "data")


@pytest.mark.parametrize("text", [LONG, NOTS], ids=["500-ors", "3001-nots-of-500-ands"])
def test_the_preview_endpoint_reads_a_long_filter(demo: Path, text: str) -> None:
    response = Client().get(T + "preview/", {"filter": text, "columns": "event_id",
                                             "limit": "1000"})
    assert response.status_code == 200, response.content[:300]
    got = Counter(row[0] for row in response.json()["rows"])
    expected = Counter(_expected_ids(demo, text))
    assert got and got.total() == min(1000, expected.total()) and got <= expected


@pytest.mark.parametrize("endpoint", ["plan/", "preview/", "export/"])
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 10_000])
def test_a_filter_nested_too_deep_is_the_same_400_everywhere(demo: Path, endpoint: str,
                                                             levels: int) -> None:
    query = {"filter": _deep(levels), **({"format": "csv"} if endpoint == "export/" else {})}
    response = Client().get(T + endpoint, query)
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["error"] == "FilterTooDeep"
    assert body["detail"].startswith(f"the filter nests more than {MAX_DEPTH} levels deep")
    assert "\n" not in body["detail"] and len(body["detail"]) < 300


@pytest.fixture
def maintainer() -> APIClient:
    client = APIClient()
    ada = User.objects.create_user("ada")
    CatalogGrant.objects.create(user=ada, catalog="local", role="maintainer")
    client.force_authenticate(ada)
    return client


@pytest.mark.parametrize("kind", ["export", "delete_rows", "compact"])
def test_a_task_with_a_filter_nested_too_deep_is_a_400_and_nothing_is_queued(
        demo: Path, maintainer: APIClient, kind: str) -> None:
    text = _deep(2000)  # 4,012 characters: under the tasks' 4,096
    params = {"namespace": "web", "table": "events", "filter": text,
              **({"format": "csv"} if kind == "export" else {})}
    response = maintainer.post("/api/tasks/", {"kind": kind, "params": params}, format="json")
    assert response.status_code == 400, response.content[:300]
    message = response.json()["params"]["filter"][0]
    assert message.startswith(f"the filter nests more than {MAX_DEPTH} levels deep")
    assert not TaskRun.objects.exists()


def test_a_task_with_a_long_filter_is_accepted(demo: Path, maintainer: APIClient) -> None:
    text = " OR ".join(f"event_id = {i}" for i in range(300))  # 4,000-odd characters
    text = text[:text.rindex(" OR ", 0, 4096)]
    response = maintainer.post("/api/tasks/preview/", {"kind": "compact", "params": {
        "namespace": "web", "table": "events", "filter": text}}, format="json")
    assert response.status_code == 200, response.content[:300]
