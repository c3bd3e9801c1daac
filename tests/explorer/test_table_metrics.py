"""A table's health over time (issue 22, part 1): a row per table state Floe observes, from
its own tasks (in the worker, after the commit), and from the sweep of every catalog, which
records a state made elsewhere as external with the engine its summary names, once; the API
serves the history. (REST commits: tests/api/test_iceberg_rest.py; a Spark commit seen by
the sweep: tests/interop/test_explorer_tasks_interop.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from explorer.maintenance.metrics import metrics_sweep
from explorer.models import TableMetrics, TaskRun
from floe.health import table_metrics
from floe.manifest import read_manifest_list
from tests.explorer.tasks_support import client_for, load, make_table, rows, user_with

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
