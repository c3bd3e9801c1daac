"""Partitions, scan-plan and preview pages over real tables written by floe (the demo)."""

from __future__ import annotations

import html
import io
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from floe.demo import create_demo_warehouse
from floe.inspect import live_entries
from floe.manifest import DataFile, FileContent, read_manifest_list
from floe.partition_stats import partition_stats
from floe.scan import plan_files
from floe.scan.readers import plan_to_table

pytestmark = pytest.mark.django_db
EVENTS = "/catalogs/local/namespaces/web/tables/events"


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "warehouse"
    create_demo_warehouse(str(root))
    _add_position_delete(str(root / "web" / "events"))
    return root


def _add_position_delete(location: str) -> None:
    """A merge-on-read delete of the first row of one events file."""
    t = directory_table(location)
    _, entry = next(iter(live_entries(t.io, t.metadata.current_snapshot())))
    target = entry.data_file
    path = f"{location}/data/pos-delete-0.parquet"
    ids = [{b"PARQUET:field_id": b"2147483546"}, {b"PARQUET:field_id": b"2147483545"}]
    schema = pa.schema([pa.field("file_path", pa.string(), False, ids[0]),
                        pa.field("pos", pa.int64(), False, ids[1])])
    pq.write_table(pa.table([pa.array([target.file_path]), pa.array([0], pa.int64())],
                            schema=schema), path)
    df = DataFile(FileContent.POSITION_DELETES, path, "PARQUET", tuple(target.partition), 1,
                  os.path.getsize(path), spec_id=target.spec_id)
    t.new_transaction().append_files([df]).commit()


@pytest.fixture
def demo(tmp_path: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    """A fresh demo warehouse of this test's own, for tests that damage it."""
    root = tmp_path / "warehouse"
    create_demo_warehouse(str(root))
    settings.FLOE_WAREHOUSE = str(root)
    return root


def _events(root: Path):  # type: ignore[no-untyped-def]
    return directory_table(str(root / "web" / "events"))


@pytest.fixture
def template_demo(_demo_template: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    """The session's demo warehouse itself (read-only tests: no copy)."""
    settings.FLOE_WAREHOUSE = str(_demo_template)
    return _demo_template


# --- partitions -------------------------------------------------------------------------------


def test_partitions_page_numbers_equal_floe(client: Client, template_demo: Path) -> None:
    t = _events(template_demo)
    stats = partition_stats(t.io, t.metadata)
    html = client.get(f"{EVENTS}/partitions/").content.decode()
    totals = stats.totals()
    assert re.search(rf'data-col="records">{totals["record_count"]:,}<', html)
    assert re.search(rf'data-col="files">{totals["file_count"]:,}<', html)
    assert re.search(r'data-col="delete-files">1<', html)
    for p in stats.partitions[:5]:
        row = re.search(rf'<tr data-partition="{re.escape(p.label)}">.*?</tr>', html, re.S)
        assert row, p.label
        assert f'data-col="records">{p.record_count:,}<' in row.group(0)
        assert f'title="{p.total_size} bytes"' in row.group(0)
    assert 'data-chart="chart-table-histogram"' in html and 'data-chart="chart-skew"' in html


def test_partitions_of_an_older_snapshot_and_one_partition(client: Client, template_demo: Path) -> None:
    t = _events(template_demo)
    first = min(t.metadata.snapshots, key=lambda s: s.sequence_number)
    stats = partition_stats(t.io, t.metadata, first.snapshot_id)
    label = stats.partitions[0].label
    response = client.get(f"{EVENTS}/partitions/", {"snapshot": first.snapshot_id, "partition": label})
    html = response.content.decode()
    assert response.status_code == 200
    assert f'<code id="snapshot-id">{first.snapshot_id}</code>' in html
    assert html.count("<tr data-partition=") == len(stats.partitions)
    assert 'data-chart="chart-partition-histogram"' in html


# --- plan -------------------------------------------------------------------------------------


def test_plan_page_shows_the_funnel_and_why(client: Client, template_demo: Path) -> None:
    t = _events(template_demo)
    flt = "ts >= TIMESTAMP '2025-03-05 00:00:00+00:00'"
    expected = plan_files(t.io, t.metadata, row_filter=flt, explain=True)
    response = client.get(f"{EVENTS}/plan/", {"filter": flt, "files": "pruned"})
    assert response.status_code == 200
    html = response.content.decode()
    f = expected.funnel
    assert f'data-stage="data files">{f.data_files_total:,}<' in html
    assert f'data-stage="after partition pruning">{f.data_files_after_partition:,}<' in html
    assert f.data_files_after_partition < f.data_files_total
    assert 'data-chart="chart-funnel"' in html and '"type": "funnel"' in html
    assert "pruned: ts_day" in html or "pruned:" in html
    kept = client.get(f"{EVENTS}/plan/", {"filter": flt, "files": "kept"}).content.decode()
    assert kept.count('data-kept="true"') >= f.data_files_after_metrics


@pytest.mark.parametrize("flt", [None, "ts >= TIMESTAMP '2025-03-05 00:00:00+00:00'"])
def test_plan_file_pages_list_every_decision_once(template_demo: Path, flt: str | None) -> None:
    """The plan page's file list pages by manifest counts (whole kept manifests are counted,
    not built): every page size gives every decision once, in plan order."""
    from explorer.tables.scan import PlanFiles
    from floe.scan.explain import KeptFiles

    t = _events(template_demo)
    before_delete = t.metadata.current_snapshot().parent_snapshot_id  # no deletes: blocks
    plan = plan_files(t.io, t.metadata, snapshot_id=before_delete, row_filter=flt,
                      explain=True, cache=None)
    for status in ("all", "kept", "pruned"):
        flat = [(m.path, f.path, f.kept, f.residual) for m in plan.explain.manifests
                for f in m.files if status == "all" or f.kept == (status == "kept")]
        files = PlanFiles(plan, status)
        assert files.count() == len(flat)
        for size in (1, 3, 7, 1000):
            got = [(m.path, f.path, f.kept, f.residual)
                   for start in range(0, len(flat), size) for m, f in files[start:start + size]]
            assert got == flat, (status, size)
    if flt is None:  # manifests kept whole, their decisions built by the pages only
        assert all(isinstance(m.files, KeptFiles) for m in plan.explain.manifests
                   if m.content == "data")
        assert plan.funnel.tasks == len(PlanFiles(plan, "kept")) > 0
        assert len(PlanFiles(plan, "pruned")) == 0


@pytest.mark.parametrize("flt", [None, "cat = 'c0' AND id < 1250"])
def test_plan_file_pages_count_delete_files_without_building_them(tmp_path: Path,
                                                                  flt: str | None) -> None:
    """Delete manifests decided over their columns (DecidedDeletes) are counted by the file
    pages without building their decisions, and page like the others."""
    from explorer.tables.scan import PlanFiles
    from floe.io import FileIO
    from floe.scan.explain import DecidedDeletes
    from tests.factories import write_path_deletes_table

    md, _ = write_path_deletes_table(tmp_path / "t")
    plan = plan_files(FileIO(), md, row_filter=flt, explain=True, cache=None)
    columnar = [m for m in plan.explain.manifests if isinstance(m.files, DecidedDeletes)]
    assert len(columnar) == 2
    counts = {status: PlanFiles(plan, status).count() for status in ("all", "kept", "pruned")}
    assert not any(m.files.built for m in columnar)
    for status in ("all", "kept", "pruned"):
        files = PlanFiles(plan, status)
        flat = [(m.path, f.path, f.kept, f.stage, f.reason) for m in plan.explain.manifests
                for f in m.files if status == "all" or f.kept == (status == "kept")]
        assert counts[status] == files.count() == len(flat)
        pruned_deletes = [x for x in flat if "/d" in x[1] or "/e" in x[1]]
        assert bool(pruned_deletes) is (status != "pruned" or flt is not None)
        for size in (1, 7, 1000):
            got = [(m.path, f.path, f.kept, f.stage, f.reason)
                   for start in range(0, len(flat), size) for m, f in files[start:start + size]]
            assert got == flat, (status, size)


@pytest.mark.parametrize(("flt", "needle"), [
    ("id >", "position"),
    ("event_id = 'x' AND (", "position"),
    ("no_such_column = 1", "unknown column"),
    ("kind IS NAN", "NAN"),
])
def test_a_bad_filter_is_a_400_next_to_the_form(client: Client, template_demo: Path, flt: str, needle: str) -> None:
    response = client.get(f"{EVENTS}/plan/", {"filter": flt})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="filter-error"' in html and needle.lower() in html.lower()
    assert 'id="plan-form"' in html


def test_plan_by_ref_and_unknown_snapshot(client: Client, template_demo: Path) -> None:
    assert client.get(f"{EVENTS}/plan/", {"ref": "main"}).status_code == 200
    response = client.get(f"{EVENTS}/plan/", {"snapshot": "123"})
    # shown above the form (issue 13), in the table's name
    assert response.status_code == 400
    assert "123 is not a snapshot of web.events" in response.content.decode()
    assert 'id="plan-form"' in response.content.decode()
    assert client.get(f"{EVENTS}/plan/", {"snapshot": "abc"}).status_code == 400


# --- preview ----------------------------------------------------------------------------------


def test_preview_reads_through_floe_with_deletes(client: Client, template_demo: Path) -> None:
    t = _events(template_demo)
    expected = plan_to_table(t.io, plan_files(t.io, t.metadata), None)
    response = client.get(f"{EVENTS}/preview/", {"limit": "1000", "columns": "event_id,kind"})
    html = response.content.decode()
    assert response.status_code == 200
    assert f'<span id="row-count">{min(1000, expected.num_rows):,}</span>' in html
    assert "<th scope=\"col\">event_id</th><th scope=\"col\">kind</th>" in html
    assert "100,000" in html  # the export bound is stated


def test_preview_time_travel_and_exports(client: Client, template_demo: Path) -> None:
    t = _events(template_demo)
    first = min(t.metadata.snapshots, key=lambda s: s.sequence_number)
    expected = plan_to_table(t.io, plan_files(t.io, t.metadata, snapshot_id=first.snapshot_id), None)
    csv = client.get(f"{EVENTS}/preview/", {"snapshot": first.snapshot_id, "format": "csv"})
    assert csv.status_code == 200 and csv["Content-Disposition"].endswith('events.csv"')
    assert pacsv.read_csv(io.BytesIO(csv.content)).num_rows == expected.num_rows
    as_of = client.get(f"{EVENTS}/preview/", {"as_of": str(first.timestamp_ms), "format": "parquet",
                                              "filter": "kind = 'view'", "columns": "kind"})
    table = pq.read_table(io.BytesIO(as_of.content))
    assert table.column_names == ["kind"] and set(table.column("kind").to_pylist()) == {"view"}
    current = plan_to_table(t.io, plan_files(t.io, t.metadata), None)
    full = pq.read_table(io.BytesIO(client.get(f"{EVENTS}/preview/", {"format": "parquet"}).content))
    assert full.num_rows == current.num_rows  # the position delete is applied


@pytest.mark.parametrize("query", [
    {"limit": "5000"}, {"limit": "x"}, {"columns": "nope"}, {"snapshot": "1", "ref": "main"},
    {"as_of": "yesterday"}, {"format": "xlsx"},
])
def test_preview_bad_input_is_400(client: Client, template_demo: Path, query: dict[str, str]) -> None:
    assert client.get(f"{EVENTS}/preview/", query).status_code == 400


def test_preview_before_the_first_snapshot_says_so_above_the_form(client: Client,
                                                                  template_demo: Path) -> None:
    response = client.get(f"{EVENTS}/preview/", {"as_of": "1970-01-02T00:00:00"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "1970-01-02 00:00:00 UTC is before the first snapshot of web.events" in html
    assert 'value="1970-01-02T00:00:00"' in html  # the form keeps what was typed


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "status", "needle"), [
    ("/catalogs/nope/namespaces/web/tables/events/plan/", 404, "catalog 'nope'"),
    ("/catalogs/local/namespaces/nope/tables/events/plan/", 404, "namespace 'nope'"),
    ("/catalogs/local/namespaces/web/tables/nope/partitions/", 404, "web.nope"),
    ("/catalogs/local/namespaces/%2E%2E/tables/events/plan/", 400, "invalid namespace ''"),
    ("/catalogs/local/namespaces/web.../tables/events/plan/", 400, "invalid namespace ''"),
    ("/catalogs/local/namespaces/web/tables/%2E%2E/preview/", 400, "invalid table name '..'"),
    ("/catalogs/local/namespaces/web/tables/%2Fetc/preview/", 404, ""),
])
def test_unknown_and_escaping_names(client: Client, template_demo: Path, url: str, status: int, needle: str) -> None:
    response = client.get(url)
    assert response.status_code == status
    assert needle in html.unescape(response.content.decode())


def test_a_corrupt_manifest_is_named_not_a_500(client: Client, demo: Path) -> None:
    t = _events(demo)
    snap = t.metadata.current_snapshot()
    assert snap is not None and snap.manifest_list
    manifest = read_manifest_list(t.io, snap.manifest_list)[0].manifest_path
    Path(manifest).write_bytes(b"Obj\x01 this is not avro")
    for page in ("partitions", "plan", "preview"):
        response = client.get(f"{EVENTS}/{page}/")
        assert response.status_code == 422, page
        assert os.path.basename(manifest) in response.content.decode()


def test_large_plans_are_made_one_at_a_time_and_one_plan_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    """Explained plans of large states (every state here, with the bound at 0 files) are made
    one at a time per process (FLOE_LARGE_PLANS_AT_ONCE = 1); threads asking for one plan
    being made wait for it."""
    import threading
    import time

    from explorer.tables import scan

    settings.FLOE_WAREHOUSE = str(tmp_path)
    create_demo_warehouse(str(tmp_path))
    table = directory_table(str(tmp_path / "sales" / "orders"))
    monkeypatch.setattr(scan, "LARGE_PLAN_FILES", 0)
    monkeypatch.setattr(scan, "_large_plans", None)
    running, most, made = [0], [0], []
    lock = threading.Lock()
    real = scan.plan_files

    def plan(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            made.append(kwargs["row_filter"])
        time.sleep(0.1)
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(scan, "plan_files", plan)
    filters = ["order_id > 1", "order_id > 2", "order_id > 3", None, "order_id > 1", None]
    start = threading.Barrier(len(filters))
    plans: list[object] = [None] * len(filters)

    def ask(i: int) -> None:
        start.wait()
        plans[i] = scan.table_plan(table=table, selection=scan.Selection(),
                                   row_filter=filters[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(filters))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert sorted(made, key=str) == sorted(set(filters), key=str)  # each plan made once
    assert plans[0] is plans[4] and plans[3] is plans[5]
