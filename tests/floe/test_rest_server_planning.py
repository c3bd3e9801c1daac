"""Server-side scan planning served by floe.rest_server (planTableScan, fetchPlanningResult,
cancelPlanning, fetchScanTasks) on a real partitioned v2 table with position and equality
deletes: the served file scan tasks are floe's own plan (data files, their delete files,
residuals), paged through stateless plan tasks; the files' JSON is the spec's ContentFile; the
filter arrives as the spec's expression JSON; bad filters, unknown plan ids and plan tasks are
the error model's 4xx; each plan is reported as a ScanReport whose explorer parameters plan
the same thing again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.base import Catalog, TableIdentifier
from floe.catalog.filesystem import FileSystemCatalog
from floe.conversions import to_bytes
from floe.errors import NotFound
from floe.expressions.json import expression_from_json, expression_to_json
from floe.manifest import FileContent
from floe.partitioning import parse_partition_by
from floe.rest_server import Operation, Request, Response, RestServer
from floe.rest_server.metrics import report_from_json
from floe.scan import plan_files
from floe.scan.incremental import plan_appends
from floe.schema import Schema
from floe.types import DOUBLE, LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                NestedField(3, "v", DOUBLE))
IDENT = TableIdentifier(("db",), "events")
TABLE = "namespaces/db/tables/events"


def _rows(ids: range, cat: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "cat": pa.array([cat] * len(ids), pa.string()),
                     "v": pa.array([i * 1.5 for i in ids], pa.float64())})


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return FileSystemCatalog("wh", str(tmp_path / "wh"))


@pytest.fixture
def table(catalog: Catalog) -> Any:
    """Partitioned by cat; 6 appends (2 per partition), then position deletes (merge-on-read
    delete of id < 5) and equality deletes (id 41, 42)."""
    catalog.create_namespace(("db",))
    t = catalog.create_table(IDENT, SCHEMA, spec=parse_partition_by("identity(cat)", SCHEMA),
                             format_version=2)
    for k, cat in enumerate(["a", "b", "c", "a", "b", "c"]):
        t.append(_rows(range(k * 10, k * 10 + 10), cat))
    t.delete_where("id < 5", mode="merge-on-read")
    t.delete_equal(["id"], pa.table({"id": pa.array([41, 42], pa.int64())}))
    return t.refresh()


class Served:
    def __init__(self, catalog: Catalog) -> None:
        def lookup(name: str) -> Catalog:
            if name != catalog.name:
                raise NotFound(f"catalog {name!r} does not exist")
            return catalog

        self.server = RestServer(lookup)
        self.prefix = catalog.name
        self.operations: list[Operation] = []
        self.reports: list[tuple[dict[str, Any], dict[str, str] | None]] = []
        self.server.on_plan = lambda call, report, params: self.reports.append((report, params))

    def __call__(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                 query: dict[str, str] | None = None) -> Response:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        full = "/v1/" + (path if path.startswith("config") else f"{self.prefix}/{path}")
        return self.server.handle(Request(method, full, query or {}, {}, data, "vic"),
                                  authorize=self.operations.append)

    def plan_all(self, body: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The planTableScan answer and every page of it (itself first), plan tasks followed."""
        r = self("POST", f"{TABLE}/plan", body)
        assert r.status == 200, r.json()
        first = r.json()
        pages = [first]
        todo = list(first.get("plan-tasks", []))
        while todo:
            got = self("POST", f"{TABLE}/tasks", {"plan-task": todo.pop(0)})
            assert got.status == 200, got.json()
            pages.append(got.json())
            todo.extend(got.json().get("plan-tasks", []))
        return first, pages


@pytest.fixture
def served(catalog: Catalog) -> Served:
    return Served(catalog)


def _tasks_of(pages: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], Any]]:
    """(data file, its delete files, residual JSON) of every task of every page, each delete
    file found by its reference into its own page's delete-files."""
    out = []
    for page in pages:
        deletes = page.get("delete-files", [])
        for t in page.get("file-scan-tasks", []):
            refs = t.get("delete-file-references", [])
            out.append((t["data-file"]["file-path"],
                        tuple(sorted(deletes[i]["file-path"] for i in refs)),
                        t.get("residual-filter")))
    return out


def _local(table: Any, row_filter: Any = None, snapshot_id: int | None = None
           ) -> list[tuple[str, tuple[str, ...], Any]]:
    plan = plan_files(table.io, table.metadata, snapshot_id=snapshot_id, row_filter=row_filter)
    return [(t.file_path, tuple(sorted(d.path for d in t.delete_files)),
             expression_to_json(t.residual))
            for t in plan.tasks]


FILTERS = [
    None,
    {"type": "eq", "term": "cat", "value": "a"},
    {"type": "and", "left": {"type": "gt-eq", "term": "id", "value": 30},
     "right": {"type": "in", "term": "cat", "values": ["a", "b"]}},
    {"type": "or", "left": {"type": "lt", "left": {"type": "reference", "name": "id"},
                            "right": {"type": "literal", "value": 3}},
     "right": {"type": "not", "child": {"type": "not-null", "child": {"type": "reference",
                                                                       "name": "v"}}}},
]


@pytest.mark.parametrize("flt", FILTERS, ids=["all", "eq", "and-in", "new-form-or-not"])
def test_served_tasks_are_floes_plan(table: Any, served: Served, flt: Any) -> None:
    body = {} if flt is None else {"filter": flt}
    first, pages = served.plan_all(body)
    assert first["status"] == "completed" and first["plan-id"]
    expr = None if flt is None else expression_from_json(flt)
    assert sorted(_tasks_of(pages), key=str) == sorted(_local(table, expr), key=str)
    assert served.operations[0].name == "planTableScan"


def test_the_filter_prunes_and_deletes_are_referenced(table: Any, served: Served) -> None:
    _, everything = served.plan_all({})
    _, only_a = served.plan_all({"filter": {"type": "eq", "term": "cat", "value": "a"}})
    all_tasks, a_tasks = _tasks_of(everything), _tasks_of(only_a)
    assert len(all_tasks) == 6 and len(a_tasks) == 2
    contents = {d["content"] for p in everything for d in p["delete-files"]}
    assert contents == {"position-deletes", "equality-deletes"}
    # every partition's equality deletes reach only files of that partition
    for page in everything:
        for t in page["file-scan-tasks"]:
            for i in t.get("delete-file-references", []):
                assert page["delete-files"][i]["partition"] == t["data-file"]["partition"]


def test_data_and_delete_files_are_the_specs_json(table: Any, served: Served) -> None:
    first, _ = served.plan_all({"filter": {"type": "eq", "term": "cat", "value": "a"}})
    plan = plan_files(table.io, table.metadata, row_filter="cat = 'a'")
    by_path = {t.file_path: t for t in plan.tasks}
    for task in first["file-scan-tasks"]:
        doc = task["data-file"]
        df = by_path[doc["file-path"]].data_file
        assert doc["content"] == "data" and doc["file-format"] == "parquet"
        assert doc["spec-id"] == 0 and doc["partition"] == ["a"]
        assert doc["record-count"] == df.record_count
        assert doc["file-size-in-bytes"] == df.file_size_in_bytes
        assert doc["value-counts"] == {"keys": [1, 2, 3], "values": [10, 10, 10]}
        assert doc["null-value-counts"]["values"] == [0, 0, 0]
        lower = dict(zip(doc["lower-bounds"]["keys"], doc["lower-bounds"]["values"],
                         strict=True))
        assert lower[1] == to_bytes(LONG, min(_ids_of(table, doc["file-path"]))).hex().upper()
        assert lower[2] == b"a".hex().upper()
        assert task["residual-filter"] is True  # identity partition: nothing left to test
    for d in first["delete-files"]:
        assert d["content"] in ("position-deletes", "equality-deletes")
        if d["content"] == "equality-deletes":
            assert d["equality-ids"] == [1]


def _ids_of(table: Any, path: str) -> list[int]:
    import pyarrow.parquet as pq

    with table.io.open(path) as f:
        ids: list[int] = pq.read_table(f).column("id").to_pylist()
        return ids


def test_stats_fields_limit_the_stats_sent(table: Any, served: Served) -> None:
    first, _ = served.plan_all({"stats-fields": ["id"]})
    doc = first["file-scan-tasks"][0]["data-file"]
    assert doc["value-counts"]["keys"] == [1] and doc["upper-bounds"]["keys"] == [1]


def test_plan_tasks_page_through_the_whole_plan(table: Any, served: Served) -> None:
    served.server.plan_page_size = 2
    first, pages = served.plan_all({})
    assert len(first["file-scan-tasks"]) == 2 and len(first["plan-tasks"]) == 1
    assert len(pages) == 3
    tasks = _tasks_of(pages)
    assert len({t[0] for t in tasks}) == len(tasks) == 6
    assert sorted(tasks, key=str) == sorted(_local(table), key=str)
    # each page carries just the delete files its tasks reference
    for page in pages:
        used = {i for t in page["file-scan-tasks"] for i in t.get("delete-file-references", [])}
        assert used == set(range(len(page["delete-files"])))
    # a plan task is answered by another server (no state is shared)
    other = Served(served.server.catalog(served.prefix))
    again = other("POST", f"{TABLE}/tasks", {"plan-task": first["plan-tasks"][0]})
    assert again.status == 200 and again.json() == pages[1]


def test_plan_tasks_keep_reading_the_snapshot_planned(table: Any, served: Served) -> None:
    served.server.plan_page_size = 4
    planned_snapshot = table.metadata.current_snapshot_id
    first, _ = served.plan_all({})
    planned = _tasks_of([first])
    table.append(_rows(range(100, 110), "d"))  # a commit between the pages
    got = served("POST", f"{TABLE}/tasks", {"plan-task": first["plan-tasks"][0]})
    assert got.status == 200
    rest = _tasks_of([got.json()])
    assert sorted(planned + rest, key=str) == sorted(
        _local(table, snapshot_id=planned_snapshot), key=str)
    assert len(planned + rest) == 6  # not the 7th file committed since
    again = served("GET", f"{TABLE}/plan/{first['plan-id']}").json()
    assert again["file-scan-tasks"] == first["file-scan-tasks"]


def test_fetch_planning_result_and_cancel(table: Any, served: Served) -> None:
    first, _ = served.plan_all({"filter": {"type": "eq", "term": "cat", "value": "b"}})
    plan_id = first["plan-id"]
    got = served("GET", f"{TABLE}/plan/{plan_id}")
    assert got.status == 200
    doc = got.json()
    assert doc["status"] == "completed" and "plan-id" not in doc
    assert doc["file-scan-tasks"] == first["file-scan-tasks"]
    assert served("DELETE", f"{TABLE}/plan/{plan_id}").status == 204


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_an_unknown_plan_id_is_404(table: Any, served: Served, method: str) -> None:
    r = served(method, f"{TABLE}/plan/not-a-plan")
    assert r.status == 404 and r.json()["error"]["type"] == "NoSuchPlanIdException"


def test_a_plan_of_another_table_is_404(table: Any, served: Served, catalog: Catalog) -> None:
    catalog.create_table(TableIdentifier(("db",), "other"), SCHEMA)
    first, _ = served.plan_all({})
    r = served("GET", f"namespaces/db/tables/other/plan/{first['plan-id']}")
    assert r.status == 404 and r.json()["error"]["type"] == "NoSuchPlanIdException"


@pytest.mark.parametrize("task", ["floe-task-AAAA", "nonsense", "floe-task-" + "e30"])
def test_an_unknown_plan_task_is_404(table: Any, served: Served, task: str) -> None:
    r = served("POST", f"{TABLE}/tasks", {"plan-task": task})
    assert r.status == 404 and r.json()["error"]["type"] == "NoSuchPlanTaskException"


BAD_PLANS: list[tuple[str, Any]] = [
    ("unknown expression type", {"filter": {"type": "frobnicate", "term": "id"}}),
    ("unknown column", {"filter": {"type": "eq", "term": "nope", "value": 1}}),
    ("value of the wrong type", {"filter": {"type": "eq", "term": "id", "value": "x"}}),
    ("no value", {"filter": {"type": "lt", "term": "id"}}),
    ("null value", {"filter": {"type": "lt", "term": "id", "value": None}}),
    ("in without values", {"filter": {"type": "in", "term": "id"}}),
    ("a transform term", {"filter": {"type": "eq", "term": {
        "type": "transform", "transform": "bucket[4]", "term": "id"}, "value": 1}}),
    ("not an object", {"filter": [1, 2]}),
    ("too deep", {"filter": json.loads('{"type":"not","child":' * 200 + "true" + "}" * 200)}),
    ("a snapshot that does not exist", {"snapshot-id": 42}),
    ("snapshot id not a number", {"snapshot-id": "1"}),
    ("point-in-time and incremental", {"snapshot-id": 1, "start-snapshot-id": 1,
                                       "end-snapshot-id": 2}),
    ("start without end", {"start-snapshot-id": 1}),
    ("unknown select column", {"select": ["id", "nope"]}),
    ("case-sensitive not a boolean", {"case-sensitive": "yes"}),
]


@pytest.mark.parametrize("body", [b for _, b in BAD_PLANS], ids=[n for n, _ in BAD_PLANS])
def test_a_bad_plan_request_is_400(table: Any, served: Served, body: Any) -> None:
    r = served("POST", f"{TABLE}/plan", body)
    assert r.status == 400, r.json()
    assert r.json()["error"]["type"] == "BadRequestException"
    assert served.reports == []


def test_malformed_json_and_a_missing_plan_task_are_400(table: Any, served: Served) -> None:
    r = served("POST", f"{TABLE}/plan", raw=b'{"filter": ')
    assert r.status == 400 and "malformed JSON" in r.json()["error"]["message"]
    r = served("POST", f"{TABLE}/tasks", {})
    assert r.status == 400 and "plan-task" in r.json()["error"]["message"]


def test_an_unknown_table_is_404(table: Any, served: Served) -> None:
    r = served("POST", "namespaces/db/tables/nope/plan", {})
    assert r.status == 404 and r.json()["error"]["type"] == "NoSuchTableException"


def test_time_travel_plans_the_snapshot_asked(table: Any, served: Served) -> None:
    snaps = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
    old = snaps[2].snapshot_id  # three appends, no deletes yet
    _, pages = served.plan_all({"snapshot-id": old})
    assert sorted(_tasks_of(pages), key=str) == sorted(_local(table, snapshot_id=old), key=str)
    assert len(_tasks_of(pages)) == 3 and all(not t[1] for t in _tasks_of(pages))


def test_incremental_append_scan(table: Any, served: Served) -> None:
    snaps = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
    start, end = snaps[1].snapshot_id, snaps[4].snapshot_id
    _, pages = served.plan_all({"start-snapshot-id": start, "end-snapshot-id": end,
                                "filter": {"type": "not-eq", "term": "cat", "value": "c"}})
    plan = plan_appends(table.io, table.metadata, start, end, "cat != 'c'")
    assert sorted(t[0] for t in _tasks_of(pages)) == sorted(t.file_path for t in plan.tasks)
    assert len(plan.tasks) == 2  # appends 3 (a) and 4 (b) of 2..4; 2 (c) is filtered out
    # across the delete snapshots: not a read of appended rows, refused
    r = served("POST", f"{TABLE}/plan", {"start-snapshot-id": start,
                                         "end-snapshot-id": snaps[-1].snapshot_id})
    assert r.status == 400 and "changes existing rows" in r.json()["error"]["message"]


def test_each_plan_is_reported_and_reproduced_by_its_explorer_parameters(
        table: Any, served: Served) -> None:
    flt = {"type": "and", "left": {"type": "eq", "term": "cat", "value": "a"},
           "right": {"type": "gt", "term": "v", "value": 20.5}}
    first, pages = served.plan_all({"filter": flt, "select": ["id", "v"]})
    assert len(served.reports) == 1  # fetchScanTasks pages are not plans
    report, params = served.reports[0]
    assert params is not None
    assert report["table-name"] == "db.events"
    assert report["snapshot-id"] == table.metadata.current_snapshot_id
    assert report["schema-id"] == 0
    assert report["projected-field-ids"] == [1, 3]
    assert report["projected-field-names"] == ["id", "v"]
    assert expression_from_json(report["filter"]) == expression_from_json(flt)
    m = {k: v.get("value") for k, v in report["metrics"].items()}
    tasks = _tasks_of(pages)
    assert m["result-data-files"] == len(tasks)
    assert m["result-delete-files"] == len({d for t in tasks for d in t[1]})
    # the same plan from the parameters the explorer's plan page takes
    again = plan_files(table.io, table.metadata, snapshot_id=int(params["snapshot"]),
                       row_filter=params["filter"])
    f = again.funnel
    assert m["total-data-manifests"] == f.manifests_total
    assert m["scanned-data-manifests"] == f.manifests_after_summaries
    assert m["skipped-data-manifests"] == f.manifests_total - f.manifests_after_summaries
    assert m["skipped-data-files"] == f.data_files_total - f.data_files_after_metrics
    assert m["result-data-files"] == f.tasks
    assert m["total-file-size-in-bytes"] == sum(t.data_file.file_size_in_bytes
                                                for t in again.tasks)
    assert sorted(t.file_path for t in again.tasks) == sorted(t[0] for t in tasks)
    assert report["metrics"]["total-planning-duration"]["time-unit"] == "nanoseconds"
    # what reportMetrics receives: the server's report sink takes it as it is
    parsed = report_from_json(report)
    assert parsed.table_name == "db.events" and parsed.snapshot_id == report["snapshot-id"]


def test_a_failing_hook_does_not_fail_the_plan(table: Any, served: Served) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("the store is down")

    served.server.on_plan = broken
    assert served("POST", f"{TABLE}/plan", {}).status == 200


def test_an_empty_table_plans_nothing(served: Served, catalog: Catalog) -> None:
    catalog.create_namespace(("db",))
    catalog.create_table(IDENT, SCHEMA)
    first, pages = served.plan_all({})
    assert first["status"] == "completed" and first["file-scan-tasks"] == []
    assert "plan-tasks" not in first


def test_the_endpoints_are_advertised_and_read_access_is_enough(served: Served) -> None:
    endpoints = served("GET", "config", query={"warehouse": served.prefix}).json()["endpoints"]
    for e in ("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
              "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
              "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
              "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"):
        assert e in endpoints
    names = {r.name: r for r in served.server.routes}
    for name in ("planTableScan", "fetchPlanningResult", "cancelPlanning", "fetchScanTasks"):
        assert names[name].access.name == "READ" and not names[name].changes
    assert "/v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}" in \
        served.server.openapi()["paths"]


def test_position_and_equality_delete_json(table: Any, served: Served) -> None:
    first, _ = served.plan_all({"filter": {"type": "eq", "term": "cat", "value": "a"}})
    eq = [d for d in first["delete-files"] if d["content"] == "equality-deletes"]
    pos = [d for d in first["delete-files"] if d["content"] == "position-deletes"]
    assert pos and all(d["partition"] == ["a"] for d in pos)
    plan = plan_files(table.io, table.metadata, row_filter="cat = 'a'")
    local = {d.path: d for t in plan.tasks for d in t.delete_files}
    for d in eq + pos:
        df = local[d["file-path"]].data_file
        assert d["record-count"] == df.record_count
        assert (df.content == FileContent.EQUALITY_DELETES) == (d in eq)




def test_use_snapshot_schema_chooses_the_schema_a_time_travel_binds_with(
        table: Any, served: Served) -> None:
    old = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)[0].snapshot_id
    table.update_schema().rename_column("v", "value").commit()
    renamed = {"type": "lt", "term": "value", "value": 6.0}
    _, pages = served.plan_all({"snapshot-id": old, "filter": renamed})
    assert len(_tasks_of(pages)) == 1  # the first append: ids 0..9, v 0..13.5
    r = served("POST", f"{TABLE}/plan", {"snapshot-id": old, "filter": renamed,
                                         "use-snapshot-schema": True})
    assert r.status == 400 and "value" in r.json()["error"]["message"]
    _, pages = served.plan_all({"snapshot-id": old, "use-snapshot-schema": True,
                                "filter": {"type": "gt", "term": "v", "value": 100.0}})
    assert _tasks_of(pages) == []  # the old name binds, and the bounds prune the file
