"""The audit trail: append-only in the model layer (no save of an existing row, no delete, no
bulk update or delete, a read-only admin); a table's audit merges Floe's entries with the
table's own history, so a commit by another engine (PyIceberg here, Spark in the interop
tests) shows as "external"."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from explorer.audit.selectors import table_audit
from explorer.models import AuditEntry, AuditEntryImmutable, CatalogGrant, TaskRun
from explorer.tables import selectors
from explorer.tasks import services
from explorer.tasks.runtime import execute
from floe.catalog.sql import SqlCatalog
from tests.explorer.tasks_support import SCHEMA, load, make_table, rows, user_with

pytestmark = pytest.mark.django_db


def entry(**extra: Any) -> AuditEntry:
    return AuditEntry.objects.create(
        actor_name="mia", action="rollback", catalog="local", namespace="ns", table="t",
        outcome="succeeded", params={"snapshot_id": 1}, **extra)


@pytest.mark.parametrize("change", [
    lambda e: e.save(),
    lambda e: e.delete(),
    lambda e: AuditEntry.objects.filter(pk=e.pk).update(actor_name="eve"),
    lambda e: AuditEntry.objects.filter(pk=e.pk).delete(),
    lambda e: AuditEntry.objects.all().delete(),
    lambda e: AuditEntry.objects.bulk_update([e], ["actor_name"]),
    lambda e: AuditEntry.objects.update_or_create(pk=e.pk, defaults={"actor_name": "eve"}),
])
def test_entries_cannot_be_changed_or_deleted(change: Any) -> None:
    e = entry()
    e.actor_name = "eve"
    with pytest.raises(AuditEntryImmutable, match="append-only"):
        change(e)
    stored = AuditEntry.objects.get(pk=e.pk)
    assert (stored.actor_name, AuditEntry.objects.count()) == ("mia", 1)


def test_deleting_a_user_or_a_task_run_leaves_their_entries_as_they_were() -> None:
    mia = user_with("mia")
    run = TaskRun.objects.create(kind="rollback", catalog="local")
    mia_id, run_id = mia.pk, run.pk
    e = entry(actor_id=mia_id, task_run_id=run_id)
    mia.delete()
    run.delete()
    stored = AuditEntry.objects.get(pk=e.pk)
    assert (stored.actor_id, stored.actor_name, stored.task_run_id) == (mia_id, "mia", run_id)


def test_the_admin_shows_entries_and_changes_none() -> None:
    e = entry()
    client = Client()
    client.force_login(user_with("root", superuser=True))
    base = "/admin/explorer/auditentry/"
    assert client.get(base).status_code == 200
    assert client.get(f"{base}{e.pk}/change/").status_code == 200  # a read-only view
    assert client.post(f"{base}{e.pk}/change/", {"actor_name": "eve"}).status_code == 403
    assert client.post(f"{base}{e.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get(f"{base}add/").status_code == 403
    assert client.post(base, {"action": "delete_selected", "_selected_action": [e.pk]}
                       ).status_code in (200, 302)
    assert AuditEntry.objects.get(pk=e.pk).actor_name == "mia"


def test_the_api_has_no_way_to_change_entries() -> None:
    from rest_framework.test import APIClient

    e = entry()
    client = APIClient()
    client.force_authenticate(user_with("root", superuser=True))
    assert client.post("/api/audit/", {"actor_name": "eve"}, format="json").status_code == 405
    for method in ("put", "patch", "delete"):
        assert getattr(client, method)(f"/api/audit/{e.pk}/").status_code in (404, 405)
    assert AuditEntry.objects.get(pk=e.pk).actor_name == "mia"


def test_grants_are_recorded_and_floe_grant_bootstraps(tmp_path: Path, settings: Any) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    user_with("bob")
    call_command("floe_grant", "bob", "local", "admin")
    grant = CatalogGrant.objects.get(user__username="bob")
    assert (grant.catalog, grant.role, grant.granted_by) == ("local", "admin", None)
    call_command("floe_grant", "bob", "*", "viewer")
    with pytest.raises(CommandError, match="does not exist"):
        call_command("floe_grant", "nobody", "local", "viewer")
    with pytest.raises(CommandError, match="does not exist"):
        call_command("floe_grant", "bob", "nope", "viewer")
    call_command("floe_grant", "bob", "local", "--revoke")
    assert list(CatalogGrant.objects.values_list("catalog", "role")) == [("*", "viewer")]
    trail = list(AuditEntry.objects.order_by("id").values_list("action", "catalog", "actor_via"))
    assert trail == [("grant_add", "local", "command"), ("grant_add", "*", "command"),
                     ("grant_remove", "local", "command")]


# --- a table's audit: Floe's entries and other engines' commits ----------------------------------


@pytest.fixture
def sql_lake(tmp_path: Path, settings: Any) -> tuple[str, str, Path]:
    """A SQL catalog (SQLite) both floe and PyIceberg commit to, configured for the explorer."""
    name = f"lake_{uuid.uuid4().hex[:6]}"
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = tmp_path / "warehouse"
    (tmp_path / "catalogs.toml").write_text(
        f'[catalogs.{name}]\ntype = "sql"\nuri = "{uri}"\nwarehouse = "{warehouse}"\n')
    settings.FLOE_CATALOGS = str(tmp_path / "catalogs.toml")
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    return name, uri, warehouse


def test_a_table_audit_attributes_each_version_to_floe_or_external(
        sql_lake: tuple[str, str, Path]) -> None:
    pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
    name, uri, warehouse = sql_lake
    floe_catalog = SqlCatalog(name, uri, str(warehouse))
    floe_catalog.create_namespace(("ns",))
    table = floe_catalog.create_table("ns.events", SCHEMA)
    table.append(rows(0, 10))
    table.append(rows(10, 10))
    first = table.snapshots()[0].snapshot_id
    floe_catalog.close()
    # a rollback through Floe, as a maintainer's task
    mia = user_with("mia", "maintainer", catalog=name)
    run = services.task_submit(kind="rollback", params={
        "catalog": name, "namespace": "ns", "table": "events", "snapshot_id": first}, user=mia)
    execute(run.pk, threaded=False)
    # then PyIceberg appends
    other = pyiceberg_sql.SqlCatalog(name, uri=uri, warehouse=str(warehouse))
    ice = other.load_table("ns.events")
    ice.append(pa.table({"id": pa.array([99], pa.int64()), "kind": ["x"],
                         "amount": pa.array([1], pa.int64())}).cast(ice.schema().as_arrow()))
    other.close()

    audited = table_audit(table=selectors.table_load(catalog=name, namespace="ns",
                                                     name="events"))
    newest, rollback, *older = audited
    assert (newest.source, newest.operation, newest.actor, newest.is_current) == (
        "external", "append", None, True)
    assert newest.summary["added-records"] == "1"
    assert (rollback.source, rollback.actor, rollback.action, rollback.outcome) == (
        "floe", "mia", "rollback", "succeeded")
    assert rollback.current_snapshot_id == first and rollback.task_run_id == run.pk
    assert [r.source for r in older] == ["external"] * len(older)  # floe outside a task
    assert [r.operation for r in older if r.operation] == ["append", "append"]
    assert table_audit(table=selectors.table_load(catalog=name, namespace="ns", name="events"),
                       source="floe") == [rollback]


def test_a_failed_run_shows_in_the_table_audit_beside_the_versions(tmp_path: Path,
                                                                   settings: Any) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    table = make_table(tmp_path, "ns")
    first, second, _ = (s.snapshot_id for s in table.snapshots())
    mia = user_with("mia", "maintainer")
    run = services.task_submit(kind="rollback", params={
        "namespace": "ns", "table": "events", "snapshot_id": second}, user=mia)
    # before the run starts, main moves back: second is no longer an ancestor
    table.manage_snapshots().set_current(first).commit()
    execute(run.pk, threaded=False)
    run.refresh_from_db()
    assert run.state == "FAILED" and "not an ancestor" in run.error
    audited = table_audit(table=selectors.table_load(catalog="local", namespace="ns",
                                                     name="events"))
    (failed,) = [r for r in audited if r.source == "floe"]
    assert (failed.actor, failed.outcome, failed.task_run_id) == ("mia", "failed", run.pk)
    assert "not an ancestor" in failed.error
    assert failed.metadata_file == load(tmp_path, "ns").metadata_location  # nothing changed
    versions = [r for r in audited if r.source == "external"]
    assert len(versions) == 5 and versions[0].is_current  # create, 3 appends, set-current
    assert versions[0].current_snapshot_id == first and versions[0].snapshot_id is None
