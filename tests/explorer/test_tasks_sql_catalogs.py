"""Tasks on tables of SQL catalogs (Iceberg's JDBC layout, shared with PyIceberg): on SQLite and
on PostgreSQL, a change submitted through the API runs on the worker, commits through the
catalog's check-and-put, is recorded in the audit trail, and PyIceberg sees it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.models import AuditEntry
from floe.catalog.sql import SqlCatalog
from floe.scan.readers import plan_to_table
from floe.scan import plan_files
from tests.explorer.tasks_support import SCHEMA, Worker, client_for, finished, rows, user_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_catalog(request: pytest.FixtureRequest, on_worker: Worker, tmp_path: Path
                ) -> Iterator[tuple[str, str, Path]]:
    """A SQL catalog in the worker's catalog file (the worker and this process both read it
    again when it changes), with one table ``ns.events`` of two appends."""
    uri = (f"sqlite:///{tmp_path / 'catalog.db'}" if request.param == "sqlite"
           else str(request.getfixturevalue("postgres_url")))
    name = f"sql_{uuid.uuid4().hex[:8]}"
    warehouse = tmp_path / "sql-warehouse"
    catalog = SqlCatalog(name, uri, str(warehouse))
    catalog.create_namespace(("ns",))
    table = catalog.create_table("ns.events", SCHEMA)
    table.append(rows(0, 40))
    table.append(rows(40, 40))
    catalog.close()
    saved = on_worker.catalogs_file.read_text()
    on_worker.catalogs_file.write_text(
        f'[catalogs.{name}]\ntype = "sql"\nuri = "{uri}"\nwarehouse = "{warehouse}"\n')
    yield name, uri, warehouse
    on_worker.catalogs_file.write_text(saved)


def test_a_task_changes_a_sql_catalog_table_through_the_api(
        on_worker: Worker, sql_catalog: tuple[str, str, Path], settings: Any) -> None:
    name, uri, warehouse = sql_catalog
    client = client_for(user_with("mia", "maintainer", catalog=name))
    response = client.post("/api/tasks/", {"kind": "delete_rows", "params": {
        "catalog": name, "namespace": "ns", "table": "events", "filter": "id < 30"}},
        format="json")
    assert response.status_code == 201, response.content
    run = finished(response.json()["id"], worker=on_worker)
    assert run.state == "SUCCEEDED", (run.error, on_worker.log_tail())
    catalog = SqlCatalog(name, uri, str(warehouse))
    try:
        table = catalog.load_table("ns.events")
        left = plan_to_table(table.io, plan_files(table.io, table.metadata))
        assert left.num_rows == 50 and min(left.column("id").to_pylist()) == 30
        entry = AuditEntry.objects.get(task_run_id=run.pk)
        assert (entry.catalog, entry.actor_name, entry.outcome) == (name, "mia", "succeeded")
        assert entry.metadata_after == table.metadata_location != entry.metadata_before
    finally:
        catalog.close()
    pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
    other = pyiceberg_sql.SqlCatalog(name, uri=uri, warehouse=str(warehouse))
    try:
        assert other.load_table("ns.events").scan().to_arrow().num_rows == 50
    finally:
        other.close()
    # a maintainer of another catalog cannot touch it
    outsider = client_for(user_with("otto", "maintainer"))
    assert outsider.post("/api/tasks/", {"kind": "compact", "params": {
        "catalog": name, "namespace": "ns", "table": "events"}},
        format="json").status_code == 403


def test_a_rollback_queued_from_the_actions_page_changes_a_sql_catalog_table(
        on_worker: Worker, sql_catalog: tuple[str, str, Path], settings: Any) -> None:
    """The Actions page of a SQL catalog's table: the rollback form's POST queues a run, the
    real worker commits it through the catalog, and the table's pages show the new state."""
    from django.test import Client

    from explorer.models import TaskRun

    name, uri, warehouse = sql_catalog
    catalog = SqlCatalog(name, uri, str(warehouse))
    try:
        first = catalog.load_table("ns.events").snapshots()[0].snapshot_id
    finally:
        catalog.close()
    client = Client()
    client.force_login(user_with("mia", "maintainer", catalog=name))
    page = f"/catalogs/{name}/namespaces/ns/tables/events/"
    actions = client.get(page + "actions/")
    assert actions.status_code == 200 and 'value="rollback"' in actions.content.decode()
    response = client.post(page + "actions/run/", {"kind": "rollback", "op": "queue",
                                                    "snapshot_id": str(first)})
    assert response.status_code == 302, response.content.decode()[:2000]
    run = TaskRun.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert (run.catalog, run.kind, run.created_via) == (name, "rollback", "session")
    run = finished(run.pk, worker=on_worker)
    assert run.state == "SUCCEEDED", (run.error, on_worker.log_tail())
    catalog = SqlCatalog(name, uri, str(warehouse))
    try:
        assert catalog.load_table("ns.events").current_snapshot().snapshot_id == first
    finally:
        catalog.close()
    overview = client.get(page).content.decode()
    assert f'id="current-snapshot"><a href="{page}snapshots/{first}/"' in overview
    audit = client.get(page + "audit/").content.decode()
    assert 'data-source="floe" data-action="rollback" data-actor="mia"' in audit
