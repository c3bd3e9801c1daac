"""The explorer's tasks on tables Spark + Iceberg Java wrote, checked by Spark afterwards:
rollback, schema evolution, delete (both modes), compaction and expire (dry run, then
confirm) leave tables Spark reads with the expected rows, snapshots and schema; and a commit
Spark makes is attributed to "external" (with the engine its summary names) in the table's
audit, beside the Floe user's change.

Tasks are submitted with :func:`explorer.services.task_submit` and run in this process by the
Celery task function itself (``run_task``, inline); the worker transport is exercised by
tests/explorer."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from explorer.audit.selectors import audit_rows_described, table_audit
from explorer.maintenance.metrics import metrics_sweep
from explorer.models import AuditEntry, CatalogGrant, TableMetrics, TaskRun
from explorer.tables import selectors
from explorer.tasks import services
from explorer.tasks.jobs import run_task
from floe.catalog.filesystem import FileSystemCatalog
from floe.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.django_db]

NS = "db"


@pytest.fixture
def maintainer(oracle: Any, settings: Any) -> Any:
    from django.contrib.auth.models import User

    settings.FLOE_WAREHOUSE = str(oracle.warehouse)
    user = User.objects.create_user("mia")
    CatalogGrant.objects.create(user=user, catalog="local", role="maintainer")
    return user


def spark_table(oracle: Any, *, partitioned: bool = True, inserts: int = 3,
                properties: str = "") -> str:
    """A v2 table written by Spark: ``inserts`` commits of 6 rows each (ids 0..)."""
    name = f"xtasks_{uuid.uuid4().hex[:8]}"
    ident = f"oracle.{NS}.{name}"
    parts = "PARTITIONED BY (s)" if partitioned else ""
    stmts = [f"CREATE TABLE {ident} (id bigint, s string, amount bigint) USING iceberg {parts} "
             f"TBLPROPERTIES ('format-version'='2'{properties})"]
    for k in range(inserts):
        values = ", ".join(f"({i}, 's{i % 3}', {i * 10})" for i in range(k * 6, k * 6 + 6))
        stmts.append(f"INSERT INTO {ident} VALUES {values}")
    oracle.sql(stmts)
    return name


def floe_table(oracle: Any, name: str) -> Table:
    return FileSystemCatalog("x", str(oracle.warehouse)).load_table(f"{NS}.{name}")


def run(user: Any, kind: str, name: str | None = None, **params: Any) -> TaskRun:
    if name is not None:
        params = {"namespace": NS, "table": name, **params}
    submitted = services.task_submit(kind=kind, params=params, user=user)
    run_task(submitted.pk)  # the Celery task, run inline
    done = TaskRun.objects.get(pk=submitted.pk)
    assert done.state == "SUCCEEDED", done.error
    return done


def spark_rows(oracle: Any, name: str, columns: str = "id") -> list[dict[str, Any]]:
    (rows,) = oracle.sql([f"SELECT {columns} FROM oracle.{NS}.{name} ORDER BY id"], all=True)
    return list(rows)


def spark_snapshots(oracle: Any, name: str) -> list[int]:
    (rows,) = oracle.sql([f"SELECT snapshot_id FROM oracle.{NS}.{name}.snapshots "
                          "ORDER BY committed_at"], all=True)
    return [r["snapshot_id"] for r in rows]


def spark_main(oracle: Any, name: str) -> int:
    (rows,) = oracle.sql([f"SELECT snapshot_id FROM oracle.{NS}.{name}.refs "
                          "WHERE name = 'main'"], all=True)
    return int(rows[0]["snapshot_id"])


def test_rollback_seen_by_spark(oracle: Any, maintainer: Any) -> None:
    name = spark_table(oracle)
    first = floe_table(oracle, name).snapshots()[0].snapshot_id
    run(maintainer, "rollback", name, snapshot_id=first)
    assert spark_main(oracle, name) == first
    assert [r["id"] for r in spark_rows(oracle, name)] == list(range(6))
    oracle.sql([f"INSERT INTO oracle.{NS}.{name} VALUES (100, 's1', 1)"])  # Spark carries on
    assert len(spark_rows(oracle, name)) == 7


def test_schema_evolution_seen_by_spark(oracle: Any, maintainer: Any) -> None:
    name = spark_table(oracle)
    run(maintainer, "evolve", name, changes=[
        {"op": "add-column", "path": "note", "type": "string", "after": "id"},
        {"op": "rename-column", "path": "amount", "new_name": "total"},
        {"op": "add-partition-field", "term": "bucket(4, id)"},
    ])
    oracle.sql([f"INSERT INTO oracle.{NS}.{name} VALUES (500, 'hello', 's2', 5000)"])
    rows = spark_rows(oracle, name, "id, note, s, total")
    assert list(rows[0]) == ["id", "note", "s", "total"]
    assert rows[0] == {"id": 0, "note": None, "s": "s0", "total": 0}
    assert rows[-1] == {"id": 500, "note": "hello", "s": "s2", "total": 5000}
    (spec,) = oracle.sql([f"SELECT partition FROM oracle.{NS}.{name}.files "
                          "WHERE record_count = 1"], all=True)
    assert set(spec[0]["partition"]) == {"s", "id_bucket_4"}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_delete_seen_by_spark(oracle: Any, maintainer: Any, mode: str) -> None:
    name = spark_table(oracle)
    # every matching file matches partly: rewritten (copy-on-write) or position deletes
    done = run(maintainer, "delete_rows", name, filter="id IN (4, 7, 13, 15)", mode=mode)
    expected = [i for i in range(18) if i not in (4, 7, 13, 15)]
    assert [r["id"] for r in spark_rows(oracle, name)] == expected
    (ops,) = oracle.sql([f"SELECT operation, summary FROM oracle.{NS}.{name}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1"], all=True)
    summary = ops[0]["summary"]
    if mode == "merge-on-read":
        assert int(summary["added-position-deletes"]) == 4
    else:
        assert "added-position-deletes" not in summary and int(summary["deleted-data-files"]) == 4
    assert done.result["snapshot_id"] == spark_main(oracle, name)


def test_compaction_seen_by_spark(oracle: Any, maintainer: Any) -> None:
    name = spark_table(oracle, inserts=4)
    (before,) = oracle.sql([f"SELECT count(*) AS n FROM oracle.{NS}.{name}.files"], all=True)
    done = run(maintainer, "compact", name, options={"min-input-files": 2})
    (after,) = oracle.sql([f"SELECT count(*) AS n FROM oracle.{NS}.{name}.files"], all=True)
    assert after[0]["n"] == 3 < before[0]["n"]
    assert done.result["rewritten_data_files_count"] == before[0]["n"]
    assert [r["id"] for r in spark_rows(oracle, name)] == list(range(24))
    (ops,) = oracle.sql([f"SELECT operation FROM oracle.{NS}.{name}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1"], all=True)
    assert ops[0]["operation"] == "replace"


def test_expire_dry_run_then_confirm_seen_by_spark(oracle: Any, maintainer: Any) -> None:
    name = spark_table(oracle)
    snaps = floe_table(oracle, name).snapshots()
    dry = run(maintainer, "expire_snapshots_dry_run", name,
              older_than_ms=int(time.time() * 1000) + 0, retain_last=1)
    listed = dry.result["files"]["items"]
    assert dry.result["expired_snapshot_ids"]["items"] == [s.snapshot_id for s in snaps[:2]]
    assert spark_snapshots(oracle, name) == [s.snapshot_id for s in snaps]  # nothing changed
    run(maintainer, "expire_snapshots", dry_run_task_id=dry.pk)
    assert spark_snapshots(oracle, name) == [snaps[-1].snapshot_id]
    assert not any(Path(p.removeprefix("file:")).exists() for p in listed)
    assert [r["id"] for r in spark_rows(oracle, name)] == list(range(18))


def test_a_spark_commit_is_attributed_to_external_in_the_table_audit(oracle: Any,
                                                                     maintainer: Any) -> None:
    name = spark_table(oracle, inserts=2)
    first = floe_table(oracle, name).snapshots()[0].snapshot_id
    done = run(maintainer, "rollback", name, snapshot_id=first)
    oracle.sql([f"INSERT INTO oracle.{NS}.{name} VALUES (77, 's0', 1)"])
    table = selectors.table_load(catalog="local", namespace=NS, name=name)
    audited = audit_rows_described(table=table, rows=table_audit(table=table))
    newest, rollback, *older = audited
    assert (newest.source, newest.operation, newest.actor) == ("external", "append", None)
    # the engine as Spark 3.5 + Iceberg 1.10 name themselves in the summary, in words
    assert newest.engine is not None and newest.engine.startswith("Spark 3.5.")
    assert " · Apache Iceberg 1.10." in newest.engine and " · app local-" in newest.engine
    assert newest.description == (
        f"snapshot {newest.snapshot_id} on main: appended 1 row in 1 data file")
    assert rollback.description.startswith("rolled back main from ")
    assert rollback.description.endswith(f" to {first}")
    assert (rollback.source, rollback.actor, rollback.task_run_id) == ("floe", "mia", done.pk)
    assert AuditEntry.objects.get(task_run_id=done.pk).metadata_after == rollback.metadata_file
    assert all(r.source == "external" for r in older)
    assert [r.operation for r in older if r.operation] == ["append", "append"]


def test_the_health_sweep_records_a_spark_commit_as_external_with_its_engine(
        oracle: Any, maintainer: Any) -> None:
    """Floe's task records the state it made; a commit Spark + Iceberg Java makes afterwards
    is found by the sweep, recorded as external with the engine its summary names."""
    name = spark_table(oracle, inserts=2)
    first = floe_table(oracle, name).snapshots()[0].snapshot_id
    done = run(maintainer, "rollback", name, snapshot_id=first)
    ours = TableMetrics.objects.get(catalog="local", namespace=NS, table=name)
    assert (ours.source, ours.external) == ("task", False)
    assert ours.metadata_location == AuditEntry.objects.get(task_run_id=done.pk).metadata_after
    oracle.sql([f"INSERT INTO oracle.{NS}.{name} VALUES (77, 's0', 1)"])
    swept = metrics_sweep(catalogs=["local"])
    assert swept.recorded >= 1
    theirs = TableMetrics.objects.filter(catalog="local", namespace=NS, table=name
                                         ).order_by("-id").first()
    assert theirs is not None and theirs.pk != ours.pk
    assert (theirs.source, theirs.external, theirs.records) == ("sweep", True, 7)  # 6 + 1
    assert theirs.engine.startswith("Spark 3.5.") and " · Apache Iceberg 1.10." in theirs.engine
    assert theirs.metadata_location == floe_table(oracle, name).metadata_location
    again = metrics_sweep(catalogs=["local"])
    assert not TableMetrics.objects.filter(catalog="local", namespace=NS, table=name,
                                           pk__gt=theirs.pk).exists()
    assert again.recorded <= swept.recorded
