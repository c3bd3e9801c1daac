"""Who may do what: anonymous / viewer / maintainer / admin (per catalog) × every endpoint of
the site (pages, the API, the Iceberg REST catalog: the matrix at the end, which a new endpoint
must join) and every task kind; a role on another catalog does not leak into this one.
Decided in one place (explorer.access.permissions)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
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


# --- every endpoint of the site: pages, the API, the Iceberg REST catalog -------------------
#
# Each URL pattern Django resolves (and each route of the REST catalog behind /iceberg/) has an
# entry: the requests made to it and the status each role gets, (anonymous, viewer,
# maintainer, admin), the roles granted on ``local``, anonymous visitors not allowed
# (FLOE_ALLOW_ANONYMOUS false, as a team deploys it). A new endpoint without an entry fails
# test_every_endpoint_is_in_the_matrix. Requests that act are made so that they pass the gate
# and then stop (a task queued but never run, a REST body the catalog rejects after
# authorising it): the warehouse is never changed.

Statuses = tuple[int, int, int, int]
_TBL = "catalogs/<str:catalog>/namespaces/<str:ns>/tables/<str:table>/"
_SNAP = _TBL + "snapshots/<int:snapshot_id>/"
_PK = "(?P<pk>[^/.]+)"
T = "catalogs/local/namespaces/ns/tables/events/"
ICE = "/iceberg/v1/local/namespaces/ns"
READ_API: Statuses = (401, 200, 200, 200)
READ_PAGE: Statuses = (302, 200, 200, 200)
ADMIN_PAGE: Statuses = (302, 403, 403, 200)

#: pattern → [(method, url, body, statuses)]; ``{snap}``, ``{run}``, ``{failed}``, ``{dry}``,
#: ``{grant}``, ``{policy}``, ``{rule}``, ``{user}``, ``{username}`` are filled in from the
#: objects the test makes. Read from it: anonymous visitors are sent to the login page (302) by
#: pages that read, refused (403) by pages that act, 401 by the API and the REST catalog; the
#: API root, its schema and the references are public; user accounts are managed by
#: superusers only (a catalog's admin gets 403); Django's admin is for staff (302 to its login).
MATRIX: dict[str, list[tuple[str, str, Any, Statuses]]] = {
    # pages
    "": [("GET", "/", None, READ_PAGE)],
    "catalogs/": [("GET", "/catalogs/", None, (302, 302, 302, 302))],
    "catalogs/<str:catalog>/": [("GET", "/catalogs/local/", None, READ_PAGE)],
    "catalogs/<str:catalog>/namespaces/": [("GET", "/catalogs/local/namespaces/", None,
                                            (302, 302, 302, 302))],
    "catalogs/<str:catalog>/namespaces/<str:ns>/": [
        ("GET", "/catalogs/local/namespaces/ns/", None, READ_PAGE)],
    "catalogs/<str:catalog>/namespaces/<str:ns>/tables/": [
        ("GET", "/catalogs/local/namespaces/ns/tables/", None, (302, 302, 302, 302))],
    _TBL: [("GET", f"/{T}", None, READ_PAGE)],
    _TBL + "partitions/": [("GET", f"/{T}partitions/", None, READ_PAGE)],
    _TBL + "plan/": [("GET", f"/{T}plan/", None, READ_PAGE)],
    _TBL + "preview/": [("GET", f"/{T}preview/", None, READ_PAGE)],
    _TBL + "snapshots/": [("GET", f"/{T}snapshots/", None, READ_PAGE)],
    _SNAP: [("GET", f"/{T}snapshots/{{snap}}/", None, READ_PAGE)],
    _SNAP + "manifests/<int:index>/": [("GET", f"/{T}snapshots/{{snap}}/manifests/0/", None,
                                        READ_PAGE)],
    _SNAP + "manifests/<int:index>/files/<int:position>/": [
        ("GET", f"/{T}snapshots/{{snap}}/manifests/0/files/0/", None, READ_PAGE)],
    _TBL + "history/": [("GET", f"/{T}history/", None, READ_PAGE)],
    _TBL + "metadata/": [("GET", f"/{T}metadata/", None, READ_PAGE)],
    _TBL + "diff/": [("GET", f"/{T}diff/", None, READ_PAGE)],
    _TBL + "reports/": [("GET", f"/{T}reports/", None, READ_PAGE)],
    _TBL + "actions/": [("GET", f"/{T}actions/", None, (302, 403, 200, 200))],
    _TBL + "actions/run/": [("POST", f"/{T}actions/run/",
                             {"kind": "rollback", "op": "queue", "snapshot_id": "{snap}"},
(302, 403, 302, 302))],
    _TBL + "audit/": [("GET", f"/{T}audit/", None, READ_PAGE)],
    _TBL + "tasks/": [("GET", f"/{T}tasks/", None, READ_PAGE)],
    "tasks/": [("GET", "/tasks/", None, READ_PAGE)],
    "tasks/<int:pk>/": [("GET", "/tasks/{run}/", None, READ_PAGE)],
    "tasks/<int:pk>/cancel/": [("POST", "/tasks/{run}/cancel/", {}, (403, 403, 302, 302))],
    "tasks/<int:pk>/confirm/": [("POST", "/tasks/{dry}/confirm/", {}, (403, 403, 302, 302))],
    "access/": [("GET", "/access/", None, (200, 200, 200, 200))],
    "access/manage/": [("GET", "/access/manage/", None, ADMIN_PAGE)],
    "access/manage/users/": [("POST", "/access/manage/users/", {"username": "newcomer"},
                              (403, 403, 403, 403))],
    "access/manage/users/<int:pk>/active/": [
        ("POST", "/access/manage/users/{user}/active/", {"active": "0"}, (403, 403, 403, 403))],
    "access/manage/users/<int:pk>/token/": [
        ("POST", "/access/manage/users/{user}/token/", {}, (403, 403, 403, 403))],
    "access/manage/users/<int:pk>/token/revoke/": [
        ("POST", "/access/manage/users/{user}/token/revoke/", {}, (403, 403, 403, 403))],
    "access/manage/grants/": [("POST", "/access/manage/grants/",
                               {"user": "{username}", "catalog": "local", "role": "viewer"},
(403, 403, 403, 302))],
    "access/manage/grants/<int:pk>/revoke/": [
        ("POST", "/access/manage/grants/{grant}/revoke/", {}, (403, 403, 403, 302))],
    "fleet/": [("GET", "/fleet/", None, READ_PAGE)],
    "policies/": [("GET", "/policies/", None, READ_PAGE)],
    "accounts/login/": [("GET", "/accounts/login/", None, (200, 200, 200, 200))],
    "accounts/logout/": [("POST", "/accounts/logout/", {}, (302, 302, 302, 302))],
    "favicon.ico": [("GET", "/favicon.ico", None, (301, 301, 301, 301))],
    "admin/": [("GET", "/admin/", None, (302, 302, 302, 302))],
    # the probes (explorer.readiness, a middleware): public, nothing in them is a secret
    "/healthz": [("GET", "/healthz", None, (200, 200, 200, 200))],
    "/readyz": [("GET", "/readyz", None, (200, 200, 200, 200))],
    # the API
    "api/": [("GET", "/api/", None, (200, 200, 200, 200))],
    "api/schema/": [("GET", "/api/schema/?format=json", None, (200, 200, 200, 200))],
    "api/reference/": [("GET", "/api/reference/", None, (200, 200, 200, 200))],
    "api/catalogs/": [("GET", "/api/catalogs/", None, READ_API)],
    "api/catalogs/<str:catalog>/": [("GET", "/api/catalogs/local/", None, READ_API)],
    "api/catalogs/<str:catalog>/namespaces/": [
        ("GET", "/api/catalogs/local/namespaces/", None, READ_API)],
    "api/catalogs/<str:catalog>/namespaces/<str:ns>/tables/": [
        ("GET", "/api/catalogs/local/namespaces/ns/tables/", None, READ_API)],
    "api/" + _TBL: [("GET", f"/api/{T}", None, READ_API)],
    "api/" + _TBL + "snapshots/": [("GET", f"/api/{T}snapshots/", None, READ_API)],
    "api/" + _SNAP: [("GET", f"/api/{T}snapshots/{{snap}}/", None, READ_API)],
    "api/" + _SNAP + "manifests/": [("GET", f"/api/{T}snapshots/{{snap}}/manifests/", None,
                                     READ_API)],
    "api/" + _SNAP + "files/": [("GET", f"/api/{T}snapshots/{{snap}}/files/", None, READ_API)],
    "api/" + _TBL + "refs/": [("GET", f"/api/{T}refs/", None, READ_API)],
    "api/" + _TBL + "history/": [("GET", f"/api/{T}history/", None, READ_API)],
    "api/" + _TBL + "diff/": [("GET", f"/api/{T}diff/", None, (401, 400, 400, 400))],
    "api/" + _TBL + "audit/": [("GET", f"/api/{T}audit/", None, READ_API)],
    "api/" + _TBL + "reports/": [("GET", f"/api/{T}reports/", None, READ_API)],
    "api/" + _TBL + "metrics/": [("GET", f"/api/{T}metrics/", None, READ_API)],
    "api/" + _TBL + "plan/": [("GET", f"/api/{T}plan/", None, READ_API)],
    "api/" + _TBL + "partitions/": [("GET", f"/api/{T}partitions/", None, READ_API)],
    "api/" + _TBL + "preview/": [("GET", f"/api/{T}preview/", None, READ_API)],
    "api/" + _TBL + "export/": [("GET", f"/api/{T}export/?format=csv", None, READ_API)],
    "api/^tasks/$": [("GET", "/api/tasks/", None, READ_API),
                     ("POST", "/api/tasks/", {"kind": "rollback", "params": {
                         "namespace": "ns", "table": "events", "snapshot_id": "{snap}"}},
(401, 403, 201, 201))],
    "api/^tasks/preview/$": [("POST", "/api/tasks/preview/", {"kind": "delete_rows", "params": {
        "namespace": "ns", "table": "events", "filter": "id < 10"}}, READ_API)],
    f"api/^tasks/{_PK}/$": [("GET", "/api/tasks/{run}/", None, READ_API)],
    f"api/^tasks/{_PK}/cancel/$": [("POST", "/api/tasks/{run}/cancel/", {}, (401, 403, 200, 200))],
    f"api/^tasks/{_PK}/download/$": [("GET", "/api/tasks/{run}/download/", None,
                                      (401, 404, 404, 404))],
    f"api/^tasks/{_PK}/retry/$": [("POST", "/api/tasks/{failed}/retry/", {}, (401, 403, 201, 201))],
    "api/^audit/$": [("GET", "/api/audit/", None, READ_API)],
    "api/^grants/$": [("GET", "/api/grants/", None, READ_API),
                      ("POST", "/api/grants/", {"user": "{username}", "catalog": "local",
                                                "role": "viewer"}, (401, 403, 403, 201))],
    f"api/^grants/{_PK}/$": [("DELETE", "/api/grants/{grant}/", None, (401, 403, 403, 204))],
    "api/^policies/$": [("GET", "/api/policies/", None, READ_API),
                        ("POST", "/api/policies/", {"name": "new", "action": "compact",
                                                    "catalog": "local", "params": {
                                                        "small_file_ratio": 0.5}},
(401, 403, 403, 201))],
    "api/^policies/pause-table/$": [("POST", "/api/policies/pause-table/", {
        "catalog": "local", "namespace": "ns", "table": "events"}, (401, 403, 200, 200))],
    "api/^policies/resume-table/$": [("POST", "/api/policies/resume-table/", {
        "catalog": "local", "namespace": "ns", "table": "events"}, (401, 403, 200, 200))],
    "api/^policies/preview/$": [("GET", "/api/policies/preview/", None, READ_API)],
    f"api/^policies/{_PK}/$": [("GET", "/api/policies/{policy}/", None, READ_API)],
    f"api/^policies/{_PK}/pause/$": [("POST", "/api/policies/{policy}/pause/", {},
                                      (401, 403, 403, 200))],
    f"api/^policies/{_PK}/resume/$": [("POST", "/api/policies/{policy}/resume/", {},
                                       (401, 403, 403, 200))],
    f"api/^policies/{_PK}/preview/$": [("GET", "/api/policies/{policy}/preview/", None, READ_API)],
    "api/^alert-rules/$": [("GET", "/api/alert-rules/", None, READ_API),
                           ("POST", "/api/alert-rules/", {"name": "new", "metric": "data_files",
                                                          "threshold": 10, "catalog": "local"},
(401, 403, 403, 201))],
    f"api/^alert-rules/{_PK}/$": [("GET", "/api/alert-rules/{rule}/", None, READ_API)],
    "api/^alerts/$": [("GET", "/api/alerts/", None, READ_API)],
    "api/^(?P<rest>.*)$": [("GET", "/api/nothing-here/", None, (404, 404, 404, 404))],
    # the Iceberg REST catalog (a token, never a session)
    "iceberg/v1/oauth/tokens": [("POST", "/iceberg/v1/oauth/tokens",
                                 {"grant_type": "client_credentials"}, (400, 400, 400, 400))],
    "iceberg/openapi.json": [("GET", "/iceberg/openapi.json", None, (200, 200, 200, 200))],
    "iceberg/reference/": [("GET", "/iceberg/reference/", None, (200, 200, 200, 200))],
    "iceberg/^(?P<rest>.*)$": [("GET", "/iceberg/v1/nothing", None, (401, 404, 404, 404))],
    "GET /v1/config": [("GET", "/iceberg/v1/config?warehouse=local", None, READ_API)],
    "GET /v1/{prefix}/namespaces": [("GET", "/iceberg/v1/local/namespaces", None, READ_API)],
    "POST /v1/{prefix}/namespaces": [("POST", "/iceberg/v1/local/namespaces", {},
                                      (401, 403, 403, 400))],
    "GET /v1/{prefix}/namespaces/{namespace}": [("GET", ICE, None, READ_API)],
    "HEAD /v1/{prefix}/namespaces/{namespace}": [("HEAD", ICE, None, (401, 204, 204, 204))],
    "DELETE /v1/{prefix}/namespaces/{namespace}": [
        ("DELETE", "/iceberg/v1/local/namespaces/absent", None, (401, 403, 403, 404))],
    "POST /v1/{prefix}/namespaces/{namespace}/properties": [
        ("POST", ICE + "/properties", {"removals": "x"}, (401, 403, 403, 400))],
    "GET /v1/{prefix}/namespaces/{namespace}/tables": [("GET", ICE + "/tables", None, READ_API)],
    "POST /v1/{prefix}/namespaces/{namespace}/tables": [("POST", ICE + "/tables", {},
                                                         (401, 403, 400, 400))],
    "POST /v1/{prefix}/namespaces/{namespace}/register": [("POST", ICE + "/register", {},
                                                           (401, 403, 400, 400))],
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}": [
        ("GET", ICE + "/tables/events", None, READ_API)],
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}": [
        ("HEAD", ICE + "/tables/events", None, (401, 204, 204, 204))],
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}": [
        ("POST", ICE + "/tables/events", {"requirements": "x"}, (401, 403, 400, 400))],
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}": [
        ("DELETE", ICE + "/tables/absent", None, (401, 403, 404, 404)),
        ("DELETE", ICE + "/tables/absent?purgeRequested=true", None, (401, 403, 403, 404))],
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics": [
        ("POST", ICE + "/tables/events/metrics", {}, (401, 400, 400, 400))],
    "POST /v1/{prefix}/tables/rename": [("POST", "/iceberg/v1/local/tables/rename", {},
                                         (401, 403, 400, 400))],
    "POST /v1/{prefix}/transactions/commit": [
        ("POST", "/iceberg/v1/local/transactions/commit", {}, (401, 403, 400, 400))],
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan": [
        ("POST", ICE + "/tables/events/plan", {"filter": 1}, (401, 400, 400, 400))],
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}": [
        ("GET", ICE + "/tables/events/plan/absent", None, (401, 404, 404, 404))],
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}": [
        ("DELETE", ICE + "/tables/events/plan/absent", None, (401, 404, 404, 404))],
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks": [
        ("POST", ICE + "/tables/events/tasks", {}, (401, 400, 400, 400))],
}


def _patterns(patterns: list[Any], prefix: str = "") -> list[str]:
    from django.urls import URLResolver

    out = []
    for p in patterns:
        route = prefix + str(p.pattern)
        if route.startswith("admin/"):  # Django's admin site: staff only, one entry
            route = "admin/"
        out += _patterns(p.url_patterns, route) if isinstance(p, URLResolver) else [route]
    return out


def test_every_endpoint_is_in_the_matrix() -> None:
    from django.urls import get_resolver

    from explorer import readiness
    from explorer.rest.services import rest_server

    served = set(_patterns(get_resolver().url_patterns))
    served |= {f"{r.method} {r.path}" for r in rest_server().routes}
    served |= {readiness.HEALTH_PATH, readiness.READY_PATH}  # answered by a middleware
    assert served == set(MATRIX), (f"not in the matrix: {sorted(served - set(MATRIX))}; "
                                   f"no longer served: {sorted(set(MATRIX) - served)}")


@pytest.fixture
def objects(lake: Path, settings: Any) -> Any:
    """Makes what the matrix's URLs name, afresh for each role (a confirmed dry run cannot be
    confirmed again): a snapshot, runs, a grant, a policy, an alert rule, a user; and the
    recorded health of local:ns.events, which pausing a table needs."""
    from explorer.models import AlertRule, MaintenancePolicy, TableMetrics

    settings.FLOE_ALLOW_ANONYMOUS = False
    settings.FLOE_EXPORT_DIR = lake.parent / "exports"
    table = load(lake, "ns")
    TableMetrics.objects.create(catalog="local", namespace="ns", table="events", current=True,
                                metadata_location=table.metadata_location, source="sweep")

    def make(role: str) -> dict[str, Any]:
        return {
            "snap": table.snapshots()[0].snapshot_id,
            "run": _run(lake, None).pk,
            "failed": _run(lake, None, state="FAILED").pk,
            "dry": dry_run(lake, "expire_snapshots_dry_run"),
            "grant": CatalogGrant.objects.create(user=user_with(f"carl-{role}"),
                                                 catalog="local", role="viewer").pk,
            "user": user_with(f"bob-{role}").pk, "username": f"bob-{role}",
            "policy": MaintenancePolicy.objects.create(name=f"p-{role}", action="compact",
                                                       catalog="local").pk,
            "rule": AlertRule.objects.create(name=f"r-{role}", metric="data_files",
                                             threshold=10, catalog="local").pk,
        }

    return make


def _fill(value: Any, names: dict[str, Any]) -> Any:
    if isinstance(value, str):
        filled = value.format(**names)
        return int(filled) if value.startswith("{") and filled.isdigit() else filled
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


def _ask(role: str, method: str, url: str, body: Any, names: dict[str, Any]) -> int:
    """The status ``role`` gets: signed in to the pages and the API with a session, to the
    REST catalog with an API token (a session authenticates nothing there)."""
    from django.test import Client

    url, body = _fill(url, names), _fill(body, names)
    client, headers = Client(), {}
    if role != "anonymous":
        user = user_with(f"{role}-m", role)
        client.force_login(user)
        if url.startswith("/iceberg/"):
            headers["HTTP_AUTHORIZATION"] = f"Bearer {Token.objects.create(user=user).key}"
    if body is None:
        data: dict[str, Any] = {}
    elif url.startswith(("/api/", "/iceberg/v1/")) and "/oauth/" not in url:
        data = {"data": json.dumps(body), "content_type": "application/json"}
    else:  # a form
        data = {"data": body} if method == "POST" else {}
    if method == "POST":
        return client.post(url, **data, **headers).status_code
    return client.generic(method, url, **data, **headers).status_code


@pytest.mark.parametrize(("pattern", "index"), [
    (p, i) for p, calls in MATRIX.items() for i in range(len(calls))])
def test_the_matrix(objects: Any, pattern: str, index: int) -> None:
    method, url, body, expected = MATRIX[pattern][index]
    got = tuple(_ask(role, method, url, body, objects(role)) for role in ROLES)
    assert got == expected, f"{method} {url}: {dict(zip(ROLES, got))}"


@pytest.mark.parametrize("pattern", [p for p in MATRIX if p.split(" ")[0] in
                                     ("GET", "HEAD", "POST", "DELETE")])
def test_every_rest_route_refuses_a_bad_token(objects: Any, pattern: str) -> None:
    from django.test import Client

    names = objects("anonymous")
    for method, url, body, _ in MATRIX[pattern]:
        data = {"data": json.dumps(_fill(body, names)), "content_type": "application/json"} \
            if body is not None else {}
        response = Client().generic(method, _fill(url, names), **data,
                                    HTTP_AUTHORIZATION="Bearer not-a-token")
        assert response.status_code == 401, (method, url)
