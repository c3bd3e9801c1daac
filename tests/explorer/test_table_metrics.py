"""A table's health over time (issue 22, part 1): a row per table state Floe observes, from
its own tasks (in the worker, after the commit), and from the sweep of every catalog, which
records a state made elsewhere as external with the engine its summary names, once; the API
serves the history. (REST commits: tests/api/test_iceberg_rest.py; a Spark commit seen by
the sweep: tests/interop/test_explorer_tasks_interop.py.) Part 2: live rows and partition
skew on the row, a REST commit's row completed by the sweep and recorded without a read, and
one current row per table when two states are recorded at once on PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from explorer.maintenance.metrics import metrics_record_commit, metrics_sweep
from explorer.models import TableMetrics, TaskRun
from explorer.rest.services import HEALTH
from floe.catalog.base import TableIdentifier
from floe.catalog.rest import RestCatalog
from floe.health import table_metrics
from floe.maintenance.partition_stats import compute_partition_stats
from floe.manifest import read_manifest_list
from tests.explorer.tasks_support import client_for, load, make_table, rows, user_with
from tests.postgres import fresh_postgres_database

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "ns")  # three appends of three partitions (kind): nine small files
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    return root


def _rows(name: str = "events") -> list[TableMetrics]:
    return list(TableMetrics.objects.filter(catalog="local", namespace="ns", table=name)
                .order_by("id"))


def test_a_task_records_the_health_of_the_state_it_made(lake: Path, eager: Any) -> None:
    api = client_for(user_with("mia", "maintainer"))
    before = load(lake, "ns")
    response = eager(lambda: api.post("/api/tasks/", {"kind": "compact", "params": {
        "namespace": "ns", "table": "events", "options": {"min-input-files": "2"}}},
        format="json"))
    assert response.status_code == 201, response.content
    run = TaskRun.objects.get(pk=response.json()["id"])
    assert run.state == "SUCCEEDED", run.error
    after = load(lake, "ns")
    assert after.metadata_location != before.metadata_location
    (row,) = _rows()
    assert (row.source, row.external, row.metadata_location) == (
        "task", False, after.metadata_location)
    summary = after.current_snapshot().summary
    assert (row.data_files, row.records, row.total_bytes) == (
        3, 300, int(summary["total-files-size"]))
    assert row.small_files == 3 and row.small_file_ratio == 1.0  # KiB files, 512 MiB target
    assert row.manifests == len(read_manifest_list(after.io,
                                                   after.current_snapshot().manifest_list))
    assert row.snapshots == len(after.metadata.snapshots) == 4
    assert row.metadata_bytes == Path(after.metadata_location).stat().st_size
    assert row.engine.startswith("Floe ")
    assert row.snapshot_id == after.current_snapshot().snapshot_id


def test_the_sweep_records_states_made_elsewhere_once(lake: Path, settings: Any,
                                                      tmp_path: Path) -> None:
    outside = load(lake, "ns")
    first = metrics_sweep()
    assert (first.catalogs, first.tables, first.recorded, first.external, first.errors) == (
        1, 1, 1, 1, 0)
    (row,) = _rows()
    assert (row.source, row.external, row.metadata_location) == (
        "sweep", True, outside.metadata_location)
    assert row.engine.startswith("Floe ")  # the writer its snapshot summary names
    expected = table_metrics(outside.metadata, now_ms=0)
    assert (row.data_files, row.records, row.delete_files) == (
        expected["data_files"], expected["records"], 0)
    assert metrics_sweep().recorded == 0  # nothing changed: nothing new
    outside.append(rows(1000, 10))
    later = metrics_sweep()
    assert (later.recorded, later.external) == (1, 1)
    assert [r.records for r in _rows()] == [300, 310]
    # a catalog that cannot be read is counted; the others are swept
    catalogs = tmp_path / "catalogs.toml"
    catalogs.write_text(f'[catalogs.local]\ntype = "filesystem"\nwarehouse = "{lake}"\n\n'
                        f'[catalogs.gone]\ntype = "sql"\nuri = "sqlite:///{tmp_path}/no/x.db"\n'
                        f'warehouse = "{tmp_path}/nowhere"\n')
    settings.FLOE_CATALOGS = str(catalogs)
    swept = metrics_sweep()
    assert (swept.catalogs, swept.errors, swept.recorded) == (1, 1, 0)


def test_the_api_serves_the_history_oldest_first(lake: Path, settings: Any) -> None:
    table = load(lake, "ns")
    metrics_sweep()
    table.append(rows(1000, 10))
    metrics_sweep()
    api: APIClient = client_for(user_with("vic", "viewer"))
    url = "/api/catalogs/local/namespaces/ns/tables/events/metrics/"
    got = api.get(url)
    assert got.status_code == 200, got.content
    doc = json.loads(got.content)
    assert [r["records"] for r in doc] == [300, 310]
    assert doc[-1]["snapshot_id"] == str(load(lake, "ns").current_snapshot().snapshot_id)  # text
    assert doc[-1]["external"] is True and doc[-1]["source"] == "sweep"
    assert [r["records"] for r in json.loads(api.get(url + "?limit=1").content)] == [310]
    for bad in ("0", "x", "5001"):
        refused = api.get(url + f"?limit={bad}")
        assert refused.status_code == 400 and "limit" in refused.json()["detail"]
    settings.FLOE_ALLOW_ANONYMOUS = False  # read as the table's other pages: a role needed
    assert client_for(None).get(url).status_code in (401, 403)


def test_the_fleet_ranks_tables_worst_first_without_opening_one(
        lake: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    # ns.events: nine KiB files (all small); web.big: one file; web.deep.more: many deletes
    make_table(lake, "web", "big", appends=1, partition_by="")
    many = make_table(lake, "web.deep", "more", appends=2, partition_by="")
    many.delete_where("id < 150", mode="merge-on-read")  # position deletes: half the rows
    swept = metrics_sweep()
    assert (swept.tables, swept.recorded, swept.errors) == (3, 3, 0)
    current = {f"{r.namespace}.{r.table}": r for r in TableMetrics.objects.filter(current=True)}
    assert set(current) == {"ns.events", "web.big", "web.deep.more"}
    assert "small_file_ratio" in current["ns.events"].warnings
    assert {"deleted_row_ratio", "delete_file_ratio"} <= set(current["web.deep.more"].warnings)
    assert current["web.big"].warnings == ["small_file_ratio"]  # one KiB file, a 512 MiB target

    def never(**_: Any) -> Any:
        raise AssertionError("the fleet view opened a table")

    from explorer.tables import selectors
    monkeypatch.setattr(selectors, "table_load", never)
    client = Client()
    client.force_login(user_with("vic", "viewer"))
    doc = client.get("/fleet/").content.decode()
    order = re.findall(r'data-table="([^"]+)" data-attention="([^"]+)"', doc)
    assert [t for t, _ in order] == [t for t, _ in sorted(
        order, key=lambda x: (-float(x[1]), x[0]))]
    assert {t for t, _ in order} == {"ns.events", "web.big", "web.deep.more"}
    assert order[0][0] == "web.deep.more"  # the most warnings: deleted rows, delete files, …
    assert "small files" in doc and 'id="nav-fleet"' in doc
    by_ns = client.get("/fleet/", {"namespace": "web"}).content.decode()
    assert set(re.findall(r'data-table="([^"]+)"', by_ns)) == {"web.big", "web.deep.more"}
    deeper = client.get("/fleet/", {"namespace": "web.deep"}).content.decode()
    assert set(re.findall(r'data-table="([^"]+)"', deeper)) == {"web.deep.more"}
    other = client.get("/fleet/", {"catalog": "nope"}).content.decode()
    assert 'id="fleet-unknown-catalog"' in other and 'data-table="' not in other
    # a table moving on: its new state is the current one, the old one stays in its history
    monkeypatch.undo()
    load(lake, "web", "big").append(rows(5000, 5))
    metrics_sweep()
    assert TableMetrics.objects.filter(namespace="web", table="big").count() == 2
    (now,) = TableMetrics.objects.filter(namespace="web", table="big", current=True)
    assert now.records == 105


def test_the_fleet_shows_only_catalogs_the_user_may_read(lake: Path, settings: Any,
                                                        tmp_path: Path) -> None:
    other = tmp_path / "other"
    make_table(other, "sales", "orders", appends=1)
    catalogs = tmp_path / "catalogs.toml"
    catalogs.write_text(f'[catalogs.other]\ntype = "filesystem"\nwarehouse = "{other}"\n')
    settings.FLOE_CATALOGS = str(catalogs)
    settings.FLOE_DEFAULT_ROLE = "none"
    settings.FLOE_ALLOW_ANONYMOUS = False
    assert metrics_sweep().recorded == 2
    client = Client()
    client.force_login(user_with("ola", "viewer", catalog="other"))
    doc = client.get("/fleet/").content.decode()
    assert re.findall(r'data-catalog="([^"]+)" data-table="([^"]+)"', doc) == [
        ("other", "sales.orders")]
    assert Client().get("/fleet/").status_code == 302  # anonymous: to the login page


def test_the_overview_draws_the_health_over_time(lake: Path) -> None:
    client = Client()
    client.force_login(user_with("vic", "viewer"))
    url = "/catalogs/local/namespaces/ns/tables/events/"
    doc = client.get(url).content.decode()
    assert 'data-states="0"' in doc and 'id="health-history-none"' in doc
    table = load(lake, "ns")
    metrics_sweep()
    for i in range(3):
        table = table.append(rows(1000 + i * 10, 10))
        metrics_sweep()
    doc = client.get(url).content.decode()
    assert 'data-states="4"' in doc
    line = re.search(r'<li data-metric="records">(.*?)</li>', doc, re.S)
    assert line is not None
    points = re.search(r'points="([^"]+)"', line.group(1)).group(1).split()
    assert len(points) == 4  # one per recorded state, rising
    heights = [float(p.split(",")[1]) for p in points]
    assert heights == sorted(heights, reverse=True) and heights[0] > heights[-1]
    assert "300 → 330 over 4" in line.group(1)
    assert 'data-metric="data_files"' in doc and 'data-metric="small_file_ratio"' in doc


# -- part 2: live rows, partitions, REST rows completed, one current row ----------------------


def _buys(first: int, n: int) -> pa.Table:
    """Rows of the ``buy`` partition alone."""
    return rows(first, n).set_column(1, "kind", pa.array(["buy"] * n))


def test_the_sweep_records_live_rows_and_partition_skew(lake: Path) -> None:
    table = load(lake, "ns").append(_buys(1000, 600))  # buy: 100 + 600; click, view: 100
    metrics_sweep()
    (plain,) = _rows()
    assert (plain.live_records, plain.live_exact, plain.live_min, plain.live_max) == (
        900, True, None, None)  # no delete files: the summary's records
    assert (plain.partitions, plain.partition_skew) == (None, None)  # no statistics file
    # the first append's files go whole; 50 position deletes on the second's
    table = table.delete_where("id < 150", mode="merge-on-read")
    assert compute_partition_stats(table).committed
    metrics_sweep()
    row = _rows()[-1]
    assert row.metadata_location == load(lake, "ns").metadata_location
    # counted as the overview counts them (bounded): 800 - 50, exact
    assert (row.records, row.position_deletes) == (800, 50)
    assert (row.live_records, row.live_exact, row.live_min, row.live_max) == (
        750, True, None, None)
    # partitions of the current snapshot's statistics: rows in data files (deleted rows
    # still count: they are in the data files) buy 667, view 67, click 66
    assert row.partitions == 3
    assert row.partition_skew == pytest.approx(667 / (800 / 3))
    assert "partition_skew" not in row.warnings  # 2.5x, flagged above 10x
    api = client_for(user_with("vic", "viewer"))
    doc = api.get("/api/catalogs/local/namespaces/ns/tables/events/metrics/").json()
    assert {k: doc[-1][k] for k in ("live_records", "live_exact", "live_min", "live_max",
                                    "partitions")} == {
        "live_records": 750, "live_exact": True, "live_min": None, "live_max": None,
        "partitions": 3}
    assert doc[-1]["partition_skew"] == pytest.approx(row.partition_skew)
    assert doc[0]["partitions"] is None
    client = Client()
    client.force_login(user_with("ola", "viewer"))
    fleet = client.get("/fleet/").content.decode()
    assert re.search(r'data-col="live-rows"[^>]*>750<', fleet)
    assert re.search(r'data-col="partition-skew"[^>]*>2\.5×<', fleet)
    overview = client.get("/catalogs/local/namespaces/ns/tables/events/").content.decode()
    assert 'data-metric="live_records"' in overview
    assert 'data-metric="partition_skew"' in overview


@pytest.mark.django_db(transaction=True)
def test_the_sweep_completes_the_row_of_a_rest_commit(lake: Path, live_server: Any) -> None:
    mia = user_with("mia", "maintainer")
    catalog = RestCatalog("served", {"uri": f"{live_server.url}/iceberg", "warehouse": "local",
                                     "token": str(Token.objects.create(user=mia).key)})
    try:
        table = catalog.load_table(TableIdentifier(("ns",), "events"))
        table.delete_where("id < 150", mode="merge-on-read")
        assert HEALTH.flush()  # written behind the answer
        (row,) = _rows()
        assert (row.source, row.external, row.metadata_location) == (
            "rest", False, load(lake, "ns").metadata_location)
        # from the metadata alone: the summary bounds the live rows (the first append's
        # files went whole, 50 position deletes on the second's), the files are unread
        assert (row.records, row.live_records, row.live_exact) == (200, None, False)
        assert (row.live_min, row.live_max) == (150, 200)
        assert (row.manifests, row.data_manifests, row.small_files, row.partitions) == (
            None, None, None, None)
        swept = metrics_sweep()
        assert (swept.recorded, swept.completed, swept.errors) == (0, 1, 0)
        (done,) = _rows()
        assert done.pk == row.pk and done.observed_at == row.observed_at
        assert (done.source, done.external, done.current) == ("rest", False, True)
        after = load(lake, "ns")
        assert done.manifests == len(read_manifest_list(
            after.io, after.current_snapshot().manifest_list))
        assert done.data_manifests is not None and done.metadata_bytes is not None
        assert (done.small_files, done.small_file_ratio) == (6, 1.0)
        assert (done.live_records, done.live_exact, done.live_min, done.live_max) == (
            150, True, None, None)
        assert "small_file_ratio" in done.warnings
        assert metrics_sweep().completed == 0  # complete now: nothing to do
        # statistics committed through REST: a new state, its partitions filled in later
        assert compute_partition_stats(catalog.load_table(
            TableIdentifier(("ns",), "events"))).committed
        assert HEALTH.flush()
        stats_row = _rows()[-1]
        assert (stats_row.source, stats_row.partitions) == ("rest", None)
        assert metrics_sweep().completed == 1
        stats_row.refresh_from_db()
        assert stats_row.partitions == 3  # buy 67, view 67, click 66 rows in data files
        assert stats_row.partition_skew == pytest.approx(67 / (200 / 3))
    finally:
        catalog.close()


def test_a_rest_commit_row_reads_no_file(lake: Path) -> None:
    table = load(lake, "ns").delete_where("id < 30", mode="merge-on-read")
    md, location = table.metadata, table.metadata_location
    shutil.rmtree(lake)  # every file of the table gone: a read would fail
    row = metrics_record_commit(catalog="local", namespace="ns", table="events",
                                location=location, metadata=md, source="rest")
    assert row is not None and row.pk is not None
    assert (row.records, row.position_deletes, row.delete_files) == (300, 30, 3)
    assert (row.live_records, row.live_exact, row.live_min, row.live_max) == (
        None, False, 270, 300)
    assert (row.manifests, row.metadata_bytes, row.partitions) == (None, None, None)


_RACE = """
import json, os, sys, threading
import django
django.setup()
from django.core.management import call_command
from django.db import connection
call_command("migrate", verbosity=0)
from explorer.maintenance.metrics import metrics_record_commit
from explorer.models import TableMetrics
from floe.catalog.filesystem import FileSystemCatalog
md = FileSystemCatalog("local", sys.argv[1]).load_table("ns.events").metadata
rounds, currents, barrier = int(sys.argv[2]), [], threading.Barrier(2)
def record(r, i):
    barrier.wait()
    metrics_record_commit(catalog="local", namespace="ns", table="events",
                          location=f"s3://b/state-{r}-{i}.json", metadata=md, source="rest")
    connection.close()
for r in range(rounds):
    threads = [threading.Thread(target=record, args=(r, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    currents.append(TableMetrics.objects.filter(current=True).count())
print(json.dumps({"rows": TableMetrics.objects.count(), "currents": currents}))
"""


@pytest.mark.django_db(transaction=True)
def test_two_states_recorded_at_once_leave_one_current_on_postgresql(
        lake: Path, postgres_url: str, tmp_path: Path) -> None:
    """Two threads of one process (their own connections) record two states of one table
    at once, round after round, on a real PostgreSQL (read committed)."""
    with fresh_postgres_database(postgres_url, "floe_test_metrics") as database:
        url = database.set(drivername="postgres")
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("FLOE_", "DATABASE_URL", "CELERY_"))}
        done = subprocess.run(
            [sys.executable, "-c", _RACE, str(lake), "30"],
            cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
            timeout=300, env={**base, "DJANGO_SETTINGS_MODULE": "explorer.settings",
                              "FLOE_VAR_DIR": str(tmp_path),
                              "DATABASE_URL": url.render_as_string(hide_password=False)})
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["rows"] == 60
        assert result["currents"] == [1] * 30


def test_the_sweep_marks_the_current_state_again_when_an_older_one_took_the_mark(
        lake: Path) -> None:
    """Two recorders at once (a task's after its commit, the sweep's from a read just before
    it) can save the older state last; the next sweep puts the mark back on the state the
    table is at, instead of leaving the fleet view on the older one."""
    table = load(lake, "ns")
    older = (table.metadata_location, table.metadata)
    table.append(rows(1000, 10))
    newer = load(lake, "ns")
    metrics_record_commit(catalog="local", namespace="ns", table="events",
                          location=newer.metadata_location, metadata=newer.metadata,
                          source="task")
    metrics_record_commit(catalog="local", namespace="ns", table="events",  # saved last
                          location=older[0], metadata=older[1], source="sweep")
    assert [r.current for r in _rows()] == [False, True]
    swept = metrics_sweep()
    assert (swept.healed, swept.recorded, swept.errors) == (1, 0, 0)
    assert [(r.metadata_location, r.current) for r in _rows()] == [
        (newer.metadata_location, True), (older[0], False)]
    assert metrics_sweep().healed == 0


def test_the_health_writer_keeps_commit_order_and_writes_inline_when_full(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """REST commits' health rows are written on the writer's thread in the order put; when
    its queue is full the committing thread writes its own; flush waits for all of them."""
    import threading

    from explorer.rest import services

    release, first_started = threading.Event(), threading.Event()
    written: list[tuple[str, str]] = []

    def record(change: Any) -> None:
        if change == "c1":
            first_started.set()
            assert release.wait(30)
        written.append((change, threading.current_thread().name))

    monkeypatch.setattr(services, "_record_health", record)
    writer = services.HealthWriter()
    writer.LIMIT = 1
    writer.put("c1")  # type: ignore[arg-type]
    assert first_started.wait(30)
    writer.put("c2")  # type: ignore[arg-type]  # waits in the queue
    writer.put("c3")  # type: ignore[arg-type]  # the queue is full: written here
    assert written == [("c3", threading.current_thread().name)]
    assert not writer.flush(0.2)  # c1 is still being written
    release.set()
    assert writer.flush(30)
    assert written[1:] == [("c1", "floe-rest-health"), ("c2", "floe-rest-health")]
