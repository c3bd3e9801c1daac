"""Task runs under /api/tasks/: submit (authenticated only), list, detail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from explorer import celery_app
from explorer.models import CatalogGrant, TaskRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_celery() -> Iterator[None]:
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


@pytest.fixture
def ada_client() -> APIClient:
    client = APIClient()
    ada = User.objects.create_user("ada")
    CatalogGrant.objects.create(user=ada, catalog="local", role="maintainer")
    client.force_authenticate(ada)
    return client


def test_anonymous_clients_cannot_submit(warehouse: Path) -> None:
    response = APIClient().post("/api/tasks/", {"kind": "refresh_table_stats"}, format="json")
    assert response.status_code == 401
    assert not TaskRun.objects.exists()


def test_submit_runs_the_task_and_the_run_can_be_polled(
    ada_client: APIClient, warehouse: Path, eager_celery: None, django_capture_on_commit_callbacks  # type: ignore[no-untyped-def]
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = ada_client.post(
            "/api/tasks/", {"kind": "refresh_table_stats", "params": {"namespace": "sales"}}, format="json"
        )
    assert response.status_code == 201
    created = response.json()
    assert created["state"] == "QUEUED" and created["created_by"] == "ada"
    assert created["params"] == {"catalog": "local", "namespace": "sales"}
    polled = ada_client.get(f"/api/tasks/{created['id']}/").json()
    assert polled["state"] == "SUCCEEDED" and polled["progress"] == 100
    assert polled["result"]["totals"]["records"] == 157


@pytest.mark.parametrize(
    ("payload", "field"),
    [({"kind": "drop_everything"}, "kind"), ({}, "kind"),
     ({"kind": "refresh_table_stats", "params": {"namespace": ["x"]}}, "params")],
)
def test_bad_submissions_are_400(ada_client: APIClient, payload: dict, field: str) -> None:  # type: ignore[type-arg]
    response = ada_client.post("/api/tasks/", payload, format="json")
    assert response.status_code == 400 and field in response.json()


def test_list_paginates_newest_first(ada_client: APIClient) -> None:
    runs = [TaskRun.objects.create(kind="refresh_table_stats", catalog="local") for _ in range(3)]
    body = ada_client.get("/api/tasks/", {"page_size": 2}).json()
    assert body["count"] == 3
    assert [r["id"] for r in body["results"]] == [runs[2].pk, runs[1].pk]
    assert ada_client.get("/api/tasks/999999/").status_code == 404


# --- every kind's parameters are checked before anything is queued ------------------------------


@pytest.fixture
def orders(tmp_path: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    from tests.explorer.tasks_support import make_table

    make_table(tmp_path, "ns")
    settings.FLOE_WAREHOUSE = str(tmp_path)
    return tmp_path


T = {"namespace": "ns", "table": "events"}


@pytest.mark.parametrize(("kind", "params", "field", "needle"), [
    ("rollback", {"namespace": "../etc", "table": "events", "snapshot_id": 1}, "namespace",
     "invalid namespace"),
    ("rollback", {"namespace": "x./root", "table": "events", "snapshot_id": 1}, "namespace",
     "'/'"),
    ("compact", {"namespace": "ns", "table": ".hidden"}, "table", "start"),
    ("compact", {"namespace": "ns", "table": "a/b"}, "table", "'/'"),
    ("compact", {"namespace": "", "table": "events"}, "namespace", "required"),
    ("compact", {"namespace": "ns", "table": "missing"}, "table", "does not exist"),
    ("compact", {**T, "surprise": 1}, "surprise", "unknown parameter"),
    ("compact", {**T, "strategy": "shuffle"}, "strategy", "binpack"),
    ("compact", {**T, "options": {"min-input-files": "0"}}, "options", "must be > 0"),
    ("compact", {**T, "options": {"no-such-option": "1"}}, "options", "no-such-option"),
    ("compact", {**T, "filter": "nope = 1"}, "filter", "nope"),
    ("rollback", {**T}, "snapshot_id", "either"),
    ("rollback", {**T, "snapshot_id": 42}, "snapshot_id", "does not exist"),
    ("rollback", {**T, "snapshot_id": "abc"}, "snapshot_id", "integer"),
    ("set_current", {**T, "snapshot_id": True}, "snapshot_id", "integer"),
    ("branch_create", {**T, "name": "main"}, "name", "already has"),
    ("branch_remove", {**T, "name": "main"}, "name", "cannot be removed"),
    ("tag_remove", {**T, "name": "nope"}, "name", "no tag"),
    ("ref_retention", {**T, "name": "main"}, "min_snapshots_to_keep", "at least one"),
    ("evolve", {**T, "changes": []}, "changes", "non-empty"),
    ("evolve", {**T, "changes": [{"op": "explode"}]}, "changes", "add-column"),
    ("evolve", {**T, "changes": [{"op": "drop-column", "path": "nope"}]}, "changes", "nope"),
    ("evolve", {**T, "changes": [{"op": "add-column", "path": "x", "type": "int",
                                  "required": True}]}, "changes", "required"),
    ("delete_rows", {**T}, "filter", "required"),
    ("delete_rows", {**T, "filter": "id <"}, "filter", ""),
    ("delete_rows", {**T, "filter": "id < 3", "mode": "shred"}, "mode", "copy-on-write"),
    ("export", {**T, "format": "xlsx"}, "format", "parquet"),
    ("export", {**T, "columns": ["id", "nope"]}, "columns", "nope"),
    ("export", {**T, "snapshot_id": 1, "ref": "main"}, "ref", "at most one"),
    ("export", {**T, "as_of": "yesterday"}, "as_of", "ISO-8601"),
    ("export", {**T, "as_of": 1}, "as_of", "before"),
    ("expire_snapshots_dry_run", {**T, "retain_last": 0}, "retain_last", "at least 1"),
    ("expire_snapshots", {}, "dry_run_task_id", "required"),
    ("expire_snapshots", {"dry_run_task_id": 99999}, "dry_run_task_id", "is not a"),
    ("remove_orphan_files_dry_run", {**T, "prefix_mismatch_mode": "maybe"},
     "prefix_mismatch_mode", "error"),
    ("rewrite_manifests", {**T, "spec_id": 9}, "spec_id", "no partition spec"),
    ("refresh_table_stats", {"namespace": "a/../x"}, "namespace", ".."),
])
def test_bad_parameters_are_400_naming_them_and_queue_nothing(
        ada_client: APIClient, orders: Path, kind: str, params: dict, field: str,  # type: ignore[type-arg]
        needle: str) -> None:
    response = ada_client.post("/api/tasks/", {"kind": kind, "params": params}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert field in body["params"], body
    assert needle in body["params"][field][0], body
    assert not TaskRun.objects.exists()


def test_an_unknown_catalog_is_400_for_who_may_act_everywhere_and_403_for_others(
        ada_client: APIClient, orders: Path) -> None:
    body = {"kind": "compact", "params": {"catalog": "nope", **T}}
    assert ada_client.post("/api/tasks/", body, format="json").status_code == 403
    root = APIClient()
    root.force_authenticate(User.objects.create_superuser("root", "r@example.com", None))
    response = root.post("/api/tasks/", body, format="json")
    assert response.status_code == 400
    assert "catalog 'nope' does not exist" in response.json()["params"]["catalog"][0]


def test_a_confirm_needs_a_finished_unconfirmed_dry_run_of_its_kind(
        ada_client: APIClient, orders: Path) -> None:
    from tests.explorer.tasks_support import load

    location = load(orders, "ns").metadata_location
    base = {"catalog": "local", "namespace": "ns", "table": "events"}
    queued = TaskRun.objects.create(kind="expire_snapshots_dry_run", **base)
    wrong = TaskRun.objects.create(kind="remove_orphan_files_dry_run", state="SUCCEEDED",
                                   result={"metadata_location": location}, **base)
    good = TaskRun.objects.create(kind="expire_snapshots_dry_run", state="SUCCEEDED",
                                  result={"metadata_location": location}, **base)

    def confirm(run: TaskRun) -> Any:
        return ada_client.post("/api/tasks/", {"kind": "expire_snapshots", "params": {
            "dry_run_task_id": run.pk}}, format="json")

    assert "has not succeeded" in confirm(queued).json()["params"]["dry_run_task_id"][0]
    assert "is not a" in confirm(wrong).json()["params"]["dry_run_task_id"][0]
    first = confirm(good)
    assert first.status_code == 201 and first.json()["source_run"] == good.pk
    assert first.json()["namespace"] == "ns" and first.json()["table"] == "events"
    again = confirm(good)
    assert again.status_code == 400 and "already confirmed" in again.content.decode()


def test_list_filters(ada_client: APIClient) -> None:
    bob = User.objects.create_user("bob")
    a = TaskRun.objects.create(kind="compact", catalog="local", namespace="ns", table="a",
                               state="SUCCEEDED", created_by=bob)
    b = TaskRun.objects.create(kind="rollback", catalog="local", namespace="ns", table="b")
    for query, expected in [({"table": "a"}, [a]), ({"user": "bob"}, [a]),
                            ({"state": "queued"}, [b]), ({"kind": "rollback"}, [b]),
                            ({"namespace": "ns"}, [b, a])]:
        got = ada_client.get("/api/tasks/", query).json()["results"]
        assert [r["id"] for r in got] == [r.pk for r in expected], query
    assert ada_client.get("/api/tasks/", {"state": "sleeping"}).status_code == 400


def test_cancelling_a_finished_run_is_400(ada_client: APIClient) -> None:
    run = TaskRun.objects.create(kind="compact", catalog="local", state="SUCCEEDED")
    response = ada_client.post(f"/api/tasks/{run.pk}/cancel/")
    assert response.status_code == 400 and "already finished" in response.json()["detail"]


def test_previews_show_the_change_and_queue_nothing(ada_client: APIClient, orders: Path) -> None:
    evolve = ada_client.post("/api/tasks/preview/", {"kind": "evolve", "params": {**T, "changes": [
        {"op": "add-column", "path": "note", "type": "string"},
        {"op": "promote", "path": "id", "type": "long"},
        {"op": "add-column", "path": "must", "type": "int", "required": True}],
        "allow_incompatible": True}}, format="json")
    assert evolve.status_code == 200, evolve.content
    doc = evolve.json()
    assert [f["name"] for f in doc["schema"]["fields"]] == ["id", "kind", "amount", "note", "must"]
    assert doc["compatible"] is False
    assert {c["column"]: c["compatible"] for c in doc["schema_changes"]} == {
        "note": True, "must": False}
    delete = ada_client.post("/api/tasks/preview/", {"kind": "delete_rows", "params": {
        **T, "filter": "kind = 'click'"}}, format="json").json()
    assert delete["removed_files"]["count"] == 3 and delete["partial_files"]["count"] == 0
    assert delete["estimated_deleted_rows"] == 100 and delete["metadata_only"] is True
    compact = ada_client.post("/api/tasks/preview/", {"kind": "compact", "params": {
        **T, "options": {"min-input-files": 2}}}, format="json").json()
    assert (compact["group_count"], compact["rewritten_files_count"]) == (3, 9)
    assert compact["expected_output_files"] == 3 and compact["engine"] == "local"
    assert compact["groups"][0]["input_files"]["count"] == 3
    none = ada_client.post("/api/tasks/preview/", {"kind": "rollback", "params": T}, format="json")
    assert none.status_code == 400 and "has no preview" in none.json()["kind"][0]
    assert not TaskRun.objects.exists()


def test_expensive_reads_are_rate_limited_per_user(ada_client: APIClient, orders: Path,
                                                   settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_EXPENSIVE_READS_PER_MINUTE = 2
    plan = "/api/catalogs/local/namespaces/ns/tables/events/plan/"
    preview = {"kind": "delete_rows", "params": {**T, "filter": "id < 3"}}
    assert ada_client.get(plan).status_code == 200
    assert ada_client.post("/api/tasks/preview/", preview, format="json").status_code == 200
    limited = ada_client.post("/api/tasks/preview/", preview, format="json")
    assert limited.status_code == 429 and "2 a minute" in limited.json()["detail"]
    assert int(limited["Retry-After"]) >= 1
    export = ada_client.post("/api/tasks/", {"kind": "export", "params": T}, format="json")
    assert export.status_code == 429 and not TaskRun.objects.exists()
    other = APIClient()
    other.force_authenticate(User.objects.create_user("bob"))
    assert other.get(plan).status_code == 200  # per user
