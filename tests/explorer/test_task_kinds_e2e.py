"""Every kind of task end to end: submitted through /api/tasks/ by a maintainer, run by a real
Celery worker (``celery -A explorer worker --beat``, SQLite broker), the table checked with
floe afterwards, the audit entry written."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

from explorer.models import AuditEntry, TaskRun
from floe.scan.readers import plan_to_table
from floe.manifest import read_manifest_list
from floe.scan import plan_files
from floe.table import Table
from tests.explorer.tasks_support import (
    Worker,
    client_for,
    finished,
    load,
    make_table,
    rows,
    unique,
    user_with,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def maint(on_worker: Worker) -> APIClient:
    return client_for(user_with("mia", "maintainer"))


@pytest.fixture
def ns(on_worker: Worker) -> str:
    namespace = unique("kinds")
    make_table(on_worker.warehouse, namespace)
    return namespace


def run(client: APIClient, worker: Worker, kind: str, ns: str, expect: str = "SUCCEEDED",
        **params: Any) -> TaskRun:
    response = client.post("/api/tasks/", {"kind": kind, "params": {
        "namespace": ns, "table": "events", **params}}, format="json")
    assert response.status_code == 201, response.content
    done = finished(response.json()["id"], worker=worker)
    assert done.state == expect, (done.state, done.error, worker.log_tail())
    return done


def table_rows(t: Table, ref: str | None = None) -> pa.Table:
    return plan_to_table(t.io, plan_files(t.io, t.metadata, ref=ref)).sort_by("id")


def ids(t: Table) -> list[int]:
    return [s.snapshot_id for s in t.snapshots()]


def audit_of(run_: TaskRun) -> AuditEntry:
    (entry,) = AuditEntry.objects.filter(task_run_id=run_.pk)
    return entry


# --- snapshot management ---------------------------------------------------------------------------


def test_rollback_by_id_and_by_time(maint: APIClient, on_worker: Worker, ns: str) -> None:
    t = load(on_worker.warehouse, ns)
    first, second, third = t.snapshots()
    done = run(maint, on_worker, "rollback", ns, snapshot_id=first.snapshot_id)
    after = load(on_worker.warehouse, ns)
    assert after.current_snapshot().snapshot_id == first.snapshot_id  # type: ignore[union-attr]
    assert table_rows(after).num_rows == 100
    entry = audit_of(done)
    assert (entry.actor_name, entry.action, entry.outcome) == ("mia", "rollback", "succeeded")
    assert entry.snapshot_before == third.snapshot_id and entry.snapshot_after == first.snapshot_id
    assert entry.metadata_before == t.metadata_location
    assert entry.metadata_after == after.metadata_location != t.metadata_location
    assert entry.duration_ms is not None and entry.started_at <= entry.finished_at
    assert done.result["snapshot_id"] == first.snapshot_id

    # set-current moves main forward again (not an ancestor: a rollback is refused before it
    # is queued)
    refused = maint.post("/api/tasks/", {"kind": "rollback", "params": {
        "namespace": ns, "table": "events", "snapshot_id": third.snapshot_id}}, format="json")
    assert refused.status_code == 400
    assert "not an ancestor" in refused.json()["params"]["snapshot_id"][0]
    assert not TaskRun.objects.filter(kind="rollback", params__snapshot_id=third.snapshot_id
                                      ).exists()
    run(maint, on_worker, "set_current", ns, snapshot_id=third.snapshot_id)
    assert load(on_worker.warehouse, ns).current_snapshot().snapshot_id == third.snapshot_id  # type: ignore[union-attr]
    run(maint, on_worker, "rollback", ns, timestamp_ms=second.timestamp_ms)
    assert load(on_worker.warehouse, ns).current_snapshot().snapshot_id == second.snapshot_id  # type: ignore[union-attr]


def test_branches_tags_and_cherry_pick(maint: APIClient, on_worker: Worker, ns: str) -> None:
    t = load(on_worker.warehouse, ns)
    first, _, third = t.snapshots()
    run(maint, on_worker, "branch_create", ns, name="dev", snapshot_id=first.snapshot_id,
        min_snapshots_to_keep=3)
    t = load(on_worker.warehouse, ns)
    assert t.metadata.refs["dev"].snapshot_id == first.snapshot_id
    assert t.metadata.refs["dev"].min_snapshots_to_keep == 3
    run(maint, on_worker, "branch_replace", ns, name="dev", snapshot_id=third.snapshot_id)
    t = load(on_worker.warehouse, ns)
    t.append(rows(1000, 7), branch="dev")  # a commit on dev only
    dev_head = load(on_worker.warehouse, ns).metadata.refs["dev"].snapshot_id
    run(maint, on_worker, "cherry_pick", ns, snapshot_id=dev_head)
    t = load(on_worker.warehouse, ns)
    assert table_rows(t).num_rows == 307
    run(maint, on_worker, "branch_create", ns, name="old", snapshot_id=first.snapshot_id)
    run(maint, on_worker, "branch_fast_forward", ns, name="old", to="main")
    t = load(on_worker.warehouse, ns)
    assert t.metadata.refs["old"].snapshot_id == t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    run(maint, on_worker, "branch_rename", ns, name="old", new_name="older")
    run(maint, on_worker, "branch_remove", ns, name="dev")
    run(maint, on_worker, "tag_create", ns, name="v1", snapshot_id=first.snapshot_id,
        max_ref_age_ms=86_400_000)
    run(maint, on_worker, "tag_replace", ns, name="v1", snapshot_id=third.snapshot_id)
    run(maint, on_worker, "ref_retention", ns, name="older", max_snapshot_age_ms=3_600_000)
    t = load(on_worker.warehouse, ns)
    assert set(t.metadata.refs) == {"main", "older", "v1"}
    assert t.metadata.refs["v1"].snapshot_id == third.snapshot_id
    assert t.metadata.refs["v1"].max_ref_age_ms == 86_400_000
    assert t.metadata.refs["older"].max_snapshot_age_ms == 3_600_000
    run(maint, on_worker, "tag_remove", ns, name="v1")
    assert "v1" not in load(on_worker.warehouse, ns).metadata.refs
    assert AuditEntry.objects.filter(namespace=ns, outcome="succeeded").count() == 11


# --- evolution and row-level changes -----------------------------------------------------------------


def test_evolve_schema_partition_spec_and_sort_order(maint: APIClient, on_worker: Worker,
                                                     ns: str) -> None:
    done = run(maint, on_worker, "evolve", ns, changes=[
        {"op": "add-column", "path": "note", "type": "string", "after": "kind"},
        {"op": "rename-column", "path": "amount", "new_name": "total"},
        {"op": "add-partition-field", "term": "bucket(4, id)"},
        {"op": "sort-order", "order": "id desc nulls last"},
    ])
    t = load(on_worker.warehouse, ns)
    assert [f.name for f in t.schema().fields] == ["id", "kind", "note", "total"]
    assert [f.name for f in t.spec().fields] == ["kind", "id_bucket_4"]
    assert str(t.sort_order().fields[0].direction).lower().startswith("desc")
    assert done.result["schema_changed"] and done.result["spec_changed"]
    assert table_rows(t).column("total").to_pylist()[:3] == [0, 1, 2]  # old data, new name


def test_delete_rows(maint: APIClient, on_worker: Worker, ns: str) -> None:
    done = run(maint, on_worker, "delete_rows", ns, filter="kind = 'click' AND id < 150")
    left = table_rows(load(on_worker.warehouse, ns))
    assert left.num_rows == 300 - 50
    assert not [r for r in left.to_pylist() if r["kind"] == "click" and r["id"] < 150]
    assert done.result["summary"]["operation"] == "overwrite"  # copy-on-write rewrote files
    run(maint, on_worker, "delete_rows", ns, filter="id >= 250", mode="merge-on-read")
    assert table_rows(load(on_worker.warehouse, ns)).num_rows == 200


# --- export ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_a_past_state_with_filter_and_columns(maint: APIClient, on_worker: Worker,
                                                     ns: str, fmt: str) -> None:
    t = load(on_worker.warehouse, ns)
    second = t.snapshots()[1]
    done = run(maint, on_worker, "export", ns, snapshot_id=second.snapshot_id,
               filter="kind = 'view'", columns=["id", "amount"], format=fmt)
    assert done.result["rows"] == 67 and done.result["snapshot_id"] == second.snapshot_id
    detail = maint.get(f"/api/tasks/{done.pk}/").json()
    response = maint.get(detail["download"])
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    got = pq.read_table(io.BytesIO(data)) if fmt == "parquet" else pacsv.read_csv(io.BytesIO(data))
    expected = plan_to_table(t.io, plan_files(t.io, t.metadata, snapshot_id=second.snapshot_id,
                                              row_filter="kind = 'view'"), ["id", "amount"])
    assert got.column_names == ["id", "amount"]
    assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
    # someone else (even a maintainer) cannot download it
    other = client_for(user_with("otto", "maintainer"))
    assert other.get(detail["download"]).status_code == 403


# --- expire and orphans: dry run, then confirm ------------------------------------------------------


def test_expire_dry_run_then_confirm_deletes_exactly_the_listed_files(
        maint: APIClient, on_worker: Worker, ns: str) -> None:
    t = load(on_worker.warehouse, ns)
    first, second, third = t.snapshots()
    dry = run(maint, on_worker, "expire_snapshots_dry_run", ns,
              older_than_ms=int(time.time() * 1000), retain_last=1)
    assert dry.result["expired_snapshot_ids"]["items"] == [first.snapshot_id, second.snapshot_id]
    listed = dry.result["files"]["items"]
    assert dry.result["files_count"] == len(listed) > 0
    assert all(os.path.exists(p) for p in listed)
    assert load(on_worker.warehouse, ns).metadata_location == t.metadata_location  # untouched
    confirm = run(maint, on_worker, "expire_snapshots", ns, dry_run_task_id=dry.pk)
    after = load(on_worker.warehouse, ns)
    assert ids(after) == [third.snapshot_id]
    assert not any(os.path.exists(p) for p in listed)
    assert confirm.result["deleted_files"] == len(listed)
    assert table_rows(after).num_rows == 300
    assert confirm.source_run_id == dry.pk and audit_of(confirm).action == "expire_snapshots"
    assert not AuditEntry.objects.filter(task_run_id=dry.pk).exists()  # a dry run changes nothing


def test_a_confirm_refuses_when_the_table_moved(maint: APIClient, on_worker: Worker,
                                                ns: str) -> None:
    dry = run(maint, on_worker, "expire_snapshots_dry_run", ns,
              older_than_ms=int(time.time() * 1000), retain_last=1)
    load(on_worker.warehouse, ns).append(rows(5000, 3))  # another writer commits
    response = maint.post("/api/tasks/", {"kind": "expire_snapshots", "params": {
        "dry_run_task_id": dry.pk}}, format="json")
    assert response.status_code == 409
    assert "changed since dry run" in response.json()["detail"]
    assert TaskRun.objects.filter(kind="expire_snapshots").count() == 0


def test_orphans_dry_run_then_confirm(maint: APIClient, on_worker: Worker, ns: str) -> None:
    t = load(on_worker.warehouse, ns)
    stray = Path(t.location) / "data" / "stray-1.parquet"
    stray.write_bytes(b"not referenced")
    old = time.time() - 5 * 86_400
    os.utime(stray, (old, old))
    dry = run(maint, on_worker, "remove_orphan_files_dry_run", ns)
    assert dry.result["orphan_files"]["items"] == [str(stray)]
    assert stray.exists()
    run(maint, on_worker, "remove_orphan_files", ns, dry_run_task_id=dry.pk)
    assert not stray.exists()
    assert table_rows(load(on_worker.warehouse, ns)).num_rows == 300


# --- compaction and manifests -----------------------------------------------------------------------


def test_compact_and_rewrite_manifests(maint: APIClient, on_worker: Worker, ns: str) -> None:
    t = load(on_worker.warehouse, ns)
    before = {f.file_path for f in (x.data_file for x in plan_files(t.io, t.metadata).tasks)}
    assert len(before) == 9
    done = run(maint, on_worker, "compact", ns, options={"min-input-files": 2})
    after_t = load(on_worker.warehouse, ns)
    after = {x.data_file.file_path for x in plan_files(after_t.io, after_t.metadata).tasks}
    assert len(after) == 3 and not after & before
    assert done.result["engine"] == "local" and done.result["rewritten_data_files_count"] == 9
    assert table_rows(after_t).equals(table_rows(t))
    manifests = len(read_manifest_list(after_t.io, after_t.current_snapshot().manifest_list))  # type: ignore[union-attr, arg-type]
    run(maint, on_worker, "rewrite_manifests", ns)
    t2 = load(on_worker.warehouse, ns)
    assert len(read_manifest_list(t2.io, t2.current_snapshot().manifest_list)) <= manifests  # type: ignore[union-attr, arg-type]
    assert t2.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]
    assert table_rows(t2).equals(table_rows(t))


def test_refresh_table_stats(maint: APIClient, on_worker: Worker, ns: str) -> None:
    response = maint.post("/api/tasks/", {"kind": "refresh_table_stats",
                                          "params": {"namespace": ns}}, format="json")
    done = finished(response.json()["id"], worker=on_worker)
    assert done.state == "SUCCEEDED", done.error
    assert done.result["tables"] == 1 and done.result["totals"]["records"] == 300
