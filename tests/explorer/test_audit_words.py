"""The audit trail says what happened in words, for Floe's changes and other engines' commits
alike (the table's Audit page, its CSV and JSON, the API's table audit and /api/audit/), and
names the engine a snapshot summary names (what Spark 3.5 + Iceberg 1.10.2 write; PyIceberg
and floe write none)."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from explorer.audit.selectors import entry_words, summary_engine
from explorer.models import AuditEntry
from explorer.tasks import services
from explorer.tasks.runtime import execute
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

T = "/catalogs/local/namespaces/ns/tables/events/"

#: A snapshot summary as Spark 3.5.8 with Iceberg 1.10.2 writes it (an INSERT).
SPARK_SUMMARY = {
    "operation": "append", "engine-version": "3.5.8", "added-data-files": "2",
    "app-id": "local-1795631505398", "added-records": "2", "total-records": "2",
    "spark.app.id": "local-1795631505398", "changed-partition-count": "1",
    "engine-name": "spark",
    "iceberg-version": "Apache Iceberg 1.10.2 (commit 57396d628cb9f92e121f9c2919398475393f0a3a)",
}
#: PyIceberg 0.12's (an append).
PYICEBERG_SUMMARY = {
    "operation": "append", "added-files-size": "606", "added-data-files": "1",
    "added-records": "2", "total-data-files": "1", "total-delete-files": "0",
    "total-records": "2", "total-files-size": "606", "total-position-deletes": "0",
    "total-equality-deletes": "0"}


def _short(snapshot_id: int) -> str:
    text = str(snapshot_id)
    return f"{text[:4]}…{text[-3:]}"


def _run(user: Any, kind: str, **params: Any) -> None:
    run = services.task_submit(kind=kind, params={"namespace": "ns", "table": "events",
                                                  **params}, user=user)
    execute(run.pk, threaded=False)
    run.refresh_from_db()
    assert run.state == "SUCCEEDED", run.error


def _page_rows(page: str) -> list[str]:
    body = page[page.index('id="audit"'):]
    return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", m))).strip()
            for m in re.findall(r'<td data-col="description"[^>]*>(.*?)</td>', body, re.S)]


@pytest.fixture
def audited(tmp_path: Path, settings: Any) -> dict[str, Any]:
    """A table with a Floe tag, a Floe rollback, an external schema change, an external
    rollback and tag, and a Floe run that failed (its tag was taken meanwhile)."""
    settings.FLOE_WAREHOUSE = str(tmp_path)
    table = make_table(tmp_path, "ns")
    a, b, c = (s.snapshot_id for s in table.snapshots())
    mia = user_with("mia", "maintainer")
    _run(mia, "tag_create", name="v1", snapshot_id=b)
    _run(mia, "rollback", snapshot_id=b)
    table = load(tmp_path, "ns")
    table.update_schema().add_column("referrer", "string").commit()  # another writer
    table.manage_snapshots().set_current(a).commit()
    failed = services.task_submit(kind="tag_create", params={
        "namespace": "ns", "table": "events", "name": "v2", "snapshot_id": a}, user=mia)
    table.manage_snapshots().create_tag("v2", b).commit()  # meanwhile, by another writer
    execute(failed.pk, threaded=False)
    failed.refresh_from_db()
    assert failed.state == "FAILED"
    return {"a": a, "b": b, "c": c, "mia": mia}


def test_the_audit_page_says_what_each_version_did(audited: dict[str, Any]) -> None:
    a, b, c = audited["a"], audited["b"], audited["c"]
    page = Client().get(T + "audit/").content.decode()
    rows = _page_rows(page)
    assert rows == [
        f"Create a tag (name v2, snapshot_id {_short(a)}): failed · tag_create",
        f"tag v2 created on {_short(b)}",
        f"rolled back main from {_short(b)} to {_short(a)}",
        "schema 0 → 1: added referrer",
        f"rolled back main from {_short(c)} to {_short(b)} · rollback",
        f"tag v1 created on {_short(b)} · tag_create",
        f"snapshot {_short(c)} on main: appended 100 rows in 3 data files",
        f"snapshot {_short(b)} on main: appended 100 rows in 3 data files",
        f"snapshot {_short(a)} on main: appended 100 rows in 3 data files",
        "table created (format v2, 3 columns, partitioned by kind = identity(kind))",
    ]
    assert "— — —" not in page and "<td>—</td>" not in page
    # the whole id on hover
    assert f'<span class="id" title="{b}">{_short(b)}</span>' in page


def test_the_downloads_and_the_api_carry_the_words(audited: dict[str, Any]) -> None:
    a, b = audited["a"], audited["b"]
    client = client_for(audited["mia"])
    rows = list(csv.DictReader(io.StringIO(b"".join(
        Client().get(T + "audit/?format=csv").streaming_content).decode())))
    assert rows[2]["description"] == f"rolled back main from {b} to {a}"
    doc = json.loads(Client().get(T + "audit/?format=json").content)
    assert doc[4]["description"] == f"rolled back main from {audited['c']} to {b}"
    api = client.get(f"/api{T}audit/").json()["results"]
    assert [r["description"] for r in api][3:6] == [
        "schema 0 → 1: added referrer", f"rolled back main from {audited['c']} to {b}",
        f"tag v1 created on {b}"]
    trail = client.get("/api/audit/").json()["results"]
    assert [r["description"] for r in trail] == [
        f"Create a tag (name v2, snapshot_id {a}): failed",
        f"rolled back main from {audited['c']} to {b}", f"tag v1 created on {b}"]
    exported = list(csv.DictReader(io.StringIO(b"".join(
        client.get("/api/audit/?format=csv").streaming_content).decode())))
    assert exported[2]["description"] == f"tag v1 created on {b}"


def test_entries_of_grants_and_maintenance_in_words() -> None:
    def words(action: str, catalog: str = "local", **extra: Any) -> str:
        return entry_words(AuditEntry.objects.create(action=action, catalog=catalog,
                                                     outcome="succeeded", **extra))

    assert words("grant_add", params={"user": "bob", "role": "maintainer"}) == (
        "gave bob the maintainer role on catalog local")
    assert words("grant_remove", "*", params={"user": "bob", "role": "admin"}) == (
        "took the admin role on every catalog from bob")
    assert words("compact", result={"rewritten_data_files_count": 144,
                                    "added_data_files_count": 36}) == (
        "compacted 144 data files into 36")
    assert words("expire_snapshots", result={"expired_snapshot_ids": {"count": 3, "items": []},
                                             "deleted_files": 12}) == (
        "expired 3 snapshots, deleted 12 files")
    assert words("evolve", params={"changes": [
        {"op": "add-column", "path": "referrer", "type": "string"},
        {"op": "add-partition-field", "term": "bucket(4, id)"}]}) == (
        "evolved: add-column referrer, add-partition-field bucket(4, id)")
    assert words("delete_rows", params={"filter": "id < 5"},
                 result={"summary": {"deleted-records": "40"}}) == (
        "deleted rows where id < 5 (40 rows)")


@pytest.mark.parametrize(("summary", "engine"), [
    (SPARK_SUMMARY, "Spark 3.5.8 · Apache Iceberg 1.10.2 · app local-1795631505398"),
    (PYICEBERG_SUMMARY, None),
    ({"operation": "append", "floe.spark.write-id": "w-1"}, "Spark through floe's data source"),
    ({"operation": "append", "engine-name": "flink", "engine-version": "1.20.0",
      "iceberg-version": "Apache Iceberg 1.9.0"}, "Flink 1.20.0 · Apache Iceberg 1.9.0"),
])
def test_the_engine_a_summary_names(summary: dict[str, str], engine: str | None) -> None:
    assert summary_engine(summary) == engine


def test_floe_names_itself_in_the_summaries_it_writes() -> None:
    """A floe commit the explorer did not make (the CLI, another site) shows as external
    with floe as its engine, as Spark's commits name Spark."""
    import importlib.metadata

    from floe.snapshots import Operation
    from floe.table.snapshot_producer import snapshot_summary

    summary = snapshot_summary(Operation.APPEND, None, [], [])
    assert summary_engine(summary) == f"Floe {importlib.metadata.version('floe')}"
