"""Task runs under /api/tasks/: submit (authenticated only), list, detail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from explorer import celery_app
from explorer.models import TaskRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_celery() -> Iterator[None]:
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


@pytest.fixture
def ada_client() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("ada"))
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
    runs = [TaskRun.objects.create(kind="refresh_table_stats") for _ in range(3)]
    body = ada_client.get("/api/tasks/", {"page_size": 2}).json()
    assert body["count"] == 3
    assert [r["id"] for r in body["results"]] == [runs[2].pk, runs[1].pk]
    assert ada_client.get("/api/tasks/999999/").status_code == 404
