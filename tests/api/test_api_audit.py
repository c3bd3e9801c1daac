"""/api/audit/: the trail filtered by table, user, action and time, exported as CSV and JSON;
/api/catalogs/{c}/namespaces/{ns}/tables/{t}/audit/: one table's versions attributed."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from explorer.models import AuditEntry, TaskRun
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def entry(actor: str, action: str, table: str, minutes_ago: int, catalog: str = "local",
          **extra: Any) -> AuditEntry:
    finished = NOW - dt.timedelta(minutes=minutes_ago)
    return AuditEntry.objects.create(
        actor_name=actor, actor_via="token", action=action, catalog=catalog, namespace="ns",
        table=table, outcome="succeeded", params={"snapshot_id": 7, "note": "a,b \"c\""},
        started_at=finished - dt.timedelta(seconds=2), finished_at=finished, duration_ms=2000,
        metadata_before="/w/v1.metadata.json", metadata_after="/w/v2.metadata.json",
        snapshot_before=1, snapshot_after=2, result={"deleted_files": 3}, **extra)


@pytest.fixture
def trail() -> list[AuditEntry]:
    return [entry("mia", "rollback", "a", 50), entry("bob", "compact", "a", 30),
            entry("mia", "compact", "b", 10), entry("eve", "compact", "c", 5, catalog="other")]


@pytest.fixture
def api() -> APIClient:
    return client_for(user_with("root", superuser=True))


def ids(response: Any) -> list[int]:
    return [r["id"] for r in response.json()["results"]]


@pytest.mark.parametrize(("query", "expected"), [
    ({}, [3, 2, 1, 0]),
    ({"table": "a"}, [1, 0]),
    ({"user": "mia"}, [2, 0]),
    ({"action": "compact"}, [3, 2, 1]),
    ({"catalog": "other"}, [3]),
    ({"since": (NOW - dt.timedelta(minutes=31)).isoformat()}, [3, 2, 1]),
    ({"until": str(int((NOW - dt.timedelta(minutes=20)).timestamp() * 1000))}, [1, 0]),
    ({"user": "mia", "action": "compact", "table": "b"}, [2]),
])
def test_filters(api: APIClient, trail: list[AuditEntry], query: dict[str, str],
                 expected: list[int]) -> None:
    assert ids(api.get("/api/audit/", query)) == [trail[i].pk for i in expected]


def test_a_bad_time_is_400(api: APIClient) -> None:
    response = api.get("/api/audit/", {"since": "last tuesday"})
    assert response.status_code == 400 and "since" in response.json()["detail"]


def test_csv_export_has_every_matching_entry(api: APIClient, trail: list[AuditEntry]) -> None:
    response = api.get("/api/audit/", {"format": "csv", "action": "compact", "page_size": 1})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    got = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [int(r["id"]) for r in got] == [trail[3].pk, trail[2].pk, trail[1].pk]
    assert json.loads(got[0]["params"]) == {"snapshot_id": 7, "note": "a,b \"c\""}
    assert got[0]["snapshot_after"] == "2" and got[0]["duration_ms"] == "2000"
    assert json.loads(got[0]["result"]) == {"deleted_files": 3}


def test_json_export(api: APIClient, trail: list[AuditEntry]) -> None:
    response = api.get("/api/audit/", {"format": "json", "user": "mia"})
    assert response.status_code == 200
    got = json.loads(b"".join(response.streaming_content))
    assert [g["id"] for g in got] == [trail[2].pk, trail[0].pk]
    assert got[0]["actor_name"] == "mia" and got[0]["metadata_after"] == "/w/v2.metadata.json"


def test_users_see_the_trail_of_catalogs_they_may_read(trail: list[AuditEntry],
                                                       settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    settings.FLOE_ALLOW_ANONYMOUS = False
    viewer = client_for(user_with("vic", "viewer", catalog="other"))
    assert ids(viewer.get("/api/audit/")) == [trail[3].pk]
    csv_text = b"".join(viewer.get("/api/audit/", {"format": "csv"}).streaming_content).decode()
    assert len(list(csv.DictReader(io.StringIO(csv_text)))) == 1
    assert APIClient().get("/api/audit/").status_code == 401


def test_the_table_audit_endpoint(tmp_path: Path, settings: Any, submit: Any) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "ns")
    first = load(tmp_path, "ns").snapshots()[0].snapshot_id
    client = client_for(user_with("mia", "maintainer"))
    assert submit(client, "rollback", namespace="ns", table="events",
                  snapshot_id=first).status_code == 201
    run = TaskRun.objects.get()
    assert run.state == "SUCCEEDED", run.error
    body = client.get("/api/catalogs/local/namespaces/ns/tables/events/audit/").json()
    newest = body["results"][0]
    assert (newest["source"], newest["actor"], newest["action"], newest["task_run_id"]) == (
        "floe", "mia", "rollback", run.pk)
    assert newest["is_current"] and newest["current_snapshot_id"] == first
    assert body["count"] == 5 and {r["source"] for r in body["results"][1:]} == {"external"}
    only = client.get("/api/catalogs/local/namespaces/ns/tables/events/audit/",
                      {"source": "floe"}).json()
    assert only["count"] == 1
