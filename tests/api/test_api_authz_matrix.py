"""Who may do what: anonymous / viewer / maintainer / admin (per catalog) × every endpoint with
a mutating method and every task kind; a role on another catalog does not leak into this one.
Decided in one place (explorer.access.permissions)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from explorer.models import CatalogGrant, TaskRun
from tests.explorer.tasks_support import (
    PASSWORD,
    client_for,
    load,
    make_table,
    rows,
    user_with,
)

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "viewer", "maintainer", "admin"]


@pytest.fixture(scope="module")
def _lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Written once: the tests queue tasks but never run them, so the tables stay as made."""
    root = tmp_path_factory.mktemp("authz")
    local, other = root / "local", root / "other"
    table = make_table(local, "ns")
    first = table.snapshots()[0].snapshot_id
    table.manage_snapshots().create_branch("dev", first).create_tag("t1", first).commit()
    table.append(rows(1000, 10), wap_id="staged")  # the last snapshot: one to cherry-pick
    make_table(other, "ns")
    (root / "catalogs.toml").write_text(
        f'[catalogs.other]\ntype = "filesystem"\nwarehouse = "{other}"\n')
    return root


@pytest.fixture
def lake(_lake: Path, settings: Any) -> Path:
    """``local`` (a table with a branch and a tag) and a second catalog ``other``."""
    settings.FLOE_WAREHOUSE = str(_lake / "local")
    settings.FLOE_CATALOGS = str(_lake / "catalogs.toml")
    settings.FLOE_ALLOW_ANONYMOUS = True
    return _lake / "local"


def who(role: str, catalog: str = "local") -> tuple[User | None, APIClient]:
    if role == "anonymous":
        return None, APIClient()
    user = user_with(f"{role}-{catalog}", role, catalog)
    return user, client_for(user)


def dry_run(lake: Path, kind: str) -> int:
    table = load(lake, "ns")
    return TaskRun.objects.create(
        kind=kind, catalog="local", namespace="ns", table="events", state="SUCCEEDED",
        result={"metadata_location": table.metadata_location}).pk


def valid_params(lake: Path, kind: str) -> dict[str, Any]:
    """Parameters that pass validation for each kind on ``local:ns.events``."""
    t = load(lake, "ns")
    first, last = t.snapshots()[0].snapshot_id, t.snapshots()[-1].snapshot_id
    table = {"namespace": "ns", "table": "events"}
    by_kind: dict[str, dict[str, Any]] = {
        "refresh_table_stats": {},
        "rollback": {**table, "snapshot_id": first},
        "set_current": {**table, "snapshot_id": first},
        "cherry_pick": {**table, "snapshot_id": last},
        "branch_create": {**table, "name": "feature"},
        "branch_replace": {**table, "name": "dev", "snapshot_id": last},
        "branch_rename": {**table, "name": "dev", "new_name": "develop"},
        "branch_remove": {**table, "name": "dev"},
        "branch_fast_forward": {**table, "name": "dev", "to": "main"},
        "tag_create": {**table, "name": "t2"},
        "tag_replace": {**table, "name": "t1", "snapshot_id": last},
        "tag_remove": {**table, "name": "t1"},
        "ref_retention": {**table, "name": "dev", "min_snapshots_to_keep": 2},
        "evolve": {**table, "changes": [{"op": "add-column", "path": "x", "type": "int"}]},
        "delete_rows": {**table, "filter": "id < 10"},
        "export": {**table, "format": "csv"},
        "expire_snapshots_dry_run": {**table, "older_than_ms": int(time.time() * 1000)},
        "expire_snapshots": {"dry_run_task_id": dry_run(lake, "expire_snapshots_dry_run")},
        "remove_orphan_files_dry_run": table,
        "remove_orphan_files": {"dry_run_task_id": dry_run(lake, "remove_orphan_files_dry_run")},
        "compact": {**table, "options": {"min-input-files": 2}},
        "rewrite_manifests": table,
        "compute_partition_stats": table,
    }
    assert set(by_kind) == set(TaskRun.Kind.values)
    return by_kind[kind]


@pytest.mark.parametrize("kind", TaskRun.Kind.values)
@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 403),
                                              ("maintainer", 201), ("admin", 201)])
def test_every_kind_needs_maintainer(lake: Path, kind: str, role: str, status: int) -> None:
    _, client = who(role)
    response = client.post("/api/tasks/", {"kind": kind, "params": valid_params(lake, kind)},
                           format="json")
    assert response.status_code == status, response.content
    queued = TaskRun.objects.filter(kind=kind, state="QUEUED").count()
    assert queued == (1 if status == 201 else 0)


@pytest.mark.parametrize("kind", ["rollback", "compact", "expire_snapshots"])
def test_a_role_on_another_catalog_does_not_leak(lake: Path, kind: str) -> None:
    for role in ("maintainer", "admin"):
        _, client = who(role, catalog="other")
        response = client.post("/api/tasks/", {"kind": kind, "params": valid_params(lake, kind)},
                               format="json")
        assert response.status_code == 403, response.content
    assert not TaskRun.objects.filter(state="QUEUED").exists()


def _run(lake: Path, owner: User | None, state: str = "RUNNING", kind: str = "compact",
         catalog: str = "local") -> TaskRun:
    return TaskRun.objects.create(kind=kind, catalog=catalog, namespace="ns", table="events",
                                  state=state, params={"namespace": "ns", "table": "events"},
                                  created_by=owner)


@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 403),
                                              ("maintainer", 200), ("admin", 200)])
def test_cancel(lake: Path, role: str, status: int) -> None:
    _, client = who(role)
    run = _run(lake, None)
    assert client.post(f"/api/tasks/{run.pk}/cancel/").status_code == status
    run.refresh_from_db()
    assert run.cancel_requested == (status == 200)


@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 403),
                                              ("maintainer", 201), ("admin", 201)])
def test_retry(lake: Path, role: str, status: int) -> None:
    _, client = who(role)
    run = _run(lake, None, state="FAILED")
    assert client.post(f"/api/tasks/{run.pk}/retry/").status_code == status
    assert TaskRun.objects.count() == (2 if status == 201 else 1)


@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 200),
                                              ("maintainer", 200), ("admin", 200)])
def test_preview_needs_a_signed_in_reader(lake: Path, role: str, status: int) -> None:
    _, client = who(role)
    response = client.post("/api/tasks/preview/", {"kind": "delete_rows", "params": {
        "namespace": "ns", "table": "events", "filter": "id < 10"}}, format="json")
    assert response.status_code == status, response.content


@pytest.mark.parametrize("role", ROLES)
def test_an_export_is_downloaded_by_its_owner_only(lake: Path, settings: Any, tmp_path: Path,
                                                   role: str) -> None:
    owner = user_with("owner", "maintainer")
    run = _run(lake, owner, state="SUCCEEDED", kind="export")
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    (tmp_path / "exports" / str(run.pk)).mkdir(parents=True)
    (tmp_path / "exports" / str(run.pk) / "ns.events.csv").write_text("id\n1\n")
    TaskRun.objects.filter(pk=run.pk).update(artifact=f"{run.pk}/ns.events.csv")
    _, client = who(role)
    assert client.get(f"/api/tasks/{run.pk}/download/").status_code == 403
    response = client_for(owner).get(f"/api/tasks/{run.pk}/download/")
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"id\n1\n"


@pytest.mark.parametrize(("role", "catalog", "status"), [
    ("anonymous", "local", 401), ("viewer", "local", 403), ("maintainer", "local", 403),
    ("admin", "local", 201), ("admin", "other", 403)])
def test_grants_are_managed_by_admins_of_that_catalog(lake: Path, role: str, catalog: str,
                                                      status: int) -> None:
    _, client = who(role, catalog)
    bob = user_with("bob")
    response = client.post("/api/grants/", {"user": "bob", "catalog": "local",
                                            "role": "maintainer"}, format="json")
    assert response.status_code == status, response.content
    assert CatalogGrant.objects.filter(user=bob).exists() == (status == 201)
    existing = CatalogGrant.objects.create(user=user_with("carl"), catalog="local",
                                           role="viewer")
    deleted = client.delete(f"/api/grants/{existing.pk}/")
    assert deleted.status_code == (204 if status == 201 else status)
    assert CatalogGrant.objects.filter(pk=existing.pk).exists() == (status != 201)


def test_granting_every_catalog_needs_admin_everywhere(lake: Path) -> None:
    _, local_admin = who("admin")
    user_with("bob")
    assert local_admin.post("/api/grants/", {"user": "bob", "catalog": "*",
                                             "role": "viewer"}, format="json").status_code == 403
    root = client_for(user_with("root", superuser=True))
    assert root.post("/api/grants/", {"user": "bob", "catalog": "*",
                                      "role": "viewer"}, format="json").status_code == 201


def test_runs_and_reads_of_an_unreadable_catalog_stay_hidden(lake: Path, settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    settings.FLOE_ALLOW_ANONYMOUS = False
    local_run = _run(lake, None)
    other_run = _run(lake, None, catalog="other")
    _, client = who("maintainer", catalog="other")
    listed = client.get("/api/tasks/").json()
    assert [r["id"] for r in listed["results"]] == [other_run.pk]
    assert client.get(f"/api/tasks/{local_run.pk}/").status_code == 404
    assert client.post(f"/api/tasks/{local_run.pk}/cancel/").status_code == 404
    assert client.get("/api/catalogs/local/namespaces/").status_code == 403
    assert client.get("/api/catalogs/other/namespaces/").status_code == 200
    assert [c["name"] for c in client.get("/api/catalogs/").json()] == ["other"]
    assert APIClient().get("/api/catalogs/other/namespaces/").status_code == 401


def test_session_clients_need_the_csrf_token_and_token_clients_do_not(lake: Path) -> None:
    user = user_with("mia", "maintainer", password=True)
    session = APIClient(enforce_csrf_checks=True)
    assert session.login(username="mia", password=PASSWORD)
    body = {"kind": "refresh_table_stats", "params": {}}
    response = session.post("/api/tasks/", body, format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    token = client_for(user, token=True)
    token.handler.enforce_csrf_checks = True
    created = token.post("/api/tasks/", body, format="json")
    assert created.status_code == 201 and created.json()["created_via"] == "token"
    session.get("/accounts/login/")  # a page with a form sets the csrftoken cookie
    csrf = session.cookies["csrftoken"].value
    ok = session.post("/api/tasks/", body, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert ok.status_code == 201 and ok.json()["created_via"] == "session"


# --- the pages that act (explorer.tasks.views): the same decisions, 403 for everyone below
# maintainer (anonymous included: the pages have no 401), nothing queued or cancelled.

PAGE_TABLE = "/catalogs/local/namespaces/ns/tables/events/"


def _page_client(role: str, catalog: str = "local") -> Any:
    from django.test import Client

    client = Client()
    if role != "anonymous":
        client.force_login(user_with(f"{role}-{catalog}", role, catalog))
    return client


_PAGE_OK = [("anonymous", 403), ("viewer", 403), ("maintainer", 302), ("admin", 302)]


@pytest.mark.parametrize(("role", "status"), _PAGE_OK)
def test_page_queue_an_action(lake: Path, role: str, status: int) -> None:
    first = load(lake, "ns").snapshots()[0].snapshot_id
    response = _page_client(role).post(PAGE_TABLE + "actions/run/", {
        "kind": "rollback", "op": "queue", "snapshot_id": str(first)})
    assert response.status_code == status
    assert TaskRun.objects.count() == (1 if status == 302 else 0)


@pytest.mark.parametrize(("role", "status"), [("anonymous", 403), ("viewer", 403),
                                              ("maintainer", 200), ("admin", 200)])
def test_page_actions_and_previews(lake: Path, role: str, status: int) -> None:
    client = _page_client(role)
    assert client.get(PAGE_TABLE + "actions/").status_code == status
    preview = client.post(PAGE_TABLE + "actions/run/", {
        "kind": "delete_rows", "op": "preview", "filter": "id < 10"})
    assert preview.status_code == status
    assert not TaskRun.objects.exists()


@pytest.mark.parametrize(("role", "status"), _PAGE_OK)
def test_page_cancel(lake: Path, role: str, status: int) -> None:
    run = _run(lake, None)
    assert _page_client(role).post(f"/tasks/{run.pk}/cancel/").status_code == status
    run.refresh_from_db()
    assert run.cancel_requested == (status == 302)


@pytest.mark.parametrize(("role", "status"), _PAGE_OK)
def test_page_confirm(lake: Path, role: str, status: int) -> None:
    dry = dry_run(lake, "expire_snapshots_dry_run")
    response = _page_client(role).post(f"/tasks/{dry}/confirm/")
    assert response.status_code == status
    assert TaskRun.objects.filter(source_run_id=dry).count() == (1 if status == 302 else 0)


@pytest.mark.parametrize("role", ["maintainer", "admin"])
def test_page_roles_on_another_catalog_do_not_leak(lake: Path, role: str) -> None:
    client = _page_client(role, catalog="other")
    first = load(lake, "ns").snapshots()[0].snapshot_id
    assert client.get(PAGE_TABLE + "actions/").status_code == 403
    assert client.post(PAGE_TABLE + "actions/run/", {
        "kind": "rollback", "op": "queue", "snapshot_id": str(first)}).status_code == 403
    run = _run(lake, None)
    assert client.post(f"/tasks/{run.pk}/cancel/").status_code == 403
    dry = dry_run(lake, "expire_snapshots_dry_run")
    assert client.post(f"/tasks/{dry}/confirm/").status_code == 403
    assert not TaskRun.objects.filter(state="QUEUED").exists()
    run.refresh_from_db()
    assert not run.cancel_requested
