"""Compaction (floe.maintenance.compaction, compaction_plan, rewrite_deletes) on real
file-system tables: Java's selection and grouping rules as tables, the rows before and after
as multisets, sequence numbers, the delete files left, dry runs, partial progress,
cancellation and bad input."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, NotFound, ValidationError
from floe.inspect import live_entries
from floe.scan.readers import plan_to_table
from floe.maintenance import Cancelled, Progress
from floe.maintenance.compaction import compact, sort_rows
from floe.maintenance.compaction_plan import (
    RewriteOptions,
    pack_groups,
    parse_options,
    plan_compaction,
    select_groups,
)
from floe.maintenance.rewrite_deletes import (
    find_dangling_deletes,
    plan_position_delete_rewrite,
    remove_dangling_deletes,
    rewrite_position_deletes,
)
from floe.manifest import DataFile, FileContent, FileFormat
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.scan.delete_index import DeleteFile
from floe.scan.planning import FileScanTask, plan_files
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.types import DOUBLE, LONG, STRING, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "v", LONG),
)
ARROW = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.int64())])
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}
MB = 1024 * 1024


def rows(ids: Any) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "s": f"p{i % 3}", "v": None if i % 5 == 0 else i * 10} for i in ids],
        schema=ARROW)


def make(catalog: FileSystemCatalog, name: str, *, partitioned: bool = True,
         version: int = 2, appends: int = 6, per: int = 20,
         props: dict[str, str] | None = None) -> Any:
    spec = parse_partition_by("identity(s)", SCHEMA) if partitioned else UNPARTITIONED
    t = catalog.create_table(f"db.{name}", SCHEMA, spec=spec, format_version=version,
                             properties={**FAST, **(props or {})})
    for k in range(appends):
        t.append(rows(range(k * per, (k + 1) * per)))
    return t


@pytest.fixture
def catalog(tmp_path: Any) -> FileSystemCatalog:
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


def bag(table: Any) -> Counter[tuple[Any, ...]]:
    md = table.refresh().metadata
    got = plan_to_table(table.io, plan_files(table.io, md))
    return Counter(tuple(r[c] for c in ("id", "s", "v")) for r in got.to_pylist())


def live(table: Any, content: FileContent | None = None) -> list[Any]:
    table.refresh()
    return [e for _, e in live_entries(table.io, table.current_snapshot())
            if content is None or e.data_file.content == content]


def files_on_disk(table: Any) -> set[str]:
    out = set()
    for root, _, names in os.walk(table.location):
        out |= {os.path.join(root, n) for n in names}
    return out


def referenced(table: Any) -> set[str]:
    """Every file any snapshot of the table references (data, deletes, manifests, lists)."""
    from floe.manifest import read_manifest, read_manifest_list

    md = table.refresh().metadata
    out = set()
    for snap in md.snapshots:
        out.add(snap.manifest_list)
        for m in read_manifest_list(table.io, snap.manifest_list):
            out.add(m.manifest_path)
            out |= {e.data_file.file_path for e in read_manifest(table.io, m)}
    return out


# -- the rules (Java SizeBasedFileRewritePlanner / BinPackRewriteFilePlanner) -----------------


def options(**given: str) -> RewriteOptions:
    props = {"target-file-size-bytes": str(100 * MB), **given}
    return parse_options(_FAKE_MD, {k.replace("_", "-"): v for k, v in props.items()})


class _FakeMetadata:
    """Just what option parsing reads."""

    properties: dict[str, str] = {}
    default_spec_id = 0

    def spec_by_id(self, spec_id: int) -> Any:
        return UNPARTITIONED if spec_id == 0 else None


_FAKE_MD: Any = _FakeMetadata()


def task(size_mb: float, deletes: int = 0, records: int = 100, scoped_deleted: int = 0,
         name: str = "") -> FileScanTask:
    path = f"/t/data/{name or size_mb}-{id(object())}.parquet"
    df = DataFile(FileContent.DATA, path, FileFormat.PARQUET, (), records,
                  int(size_mb * MB))
    dels = []
    for k in range(deletes):
        ref = path if scoped_deleted else None
        dels.append(DeleteFile(DataFile(
            FileContent.POSITION_DELETES, f"/t/data/del-{k}-{path}", FileFormat.PARQUET, (),
            scoped_deleted, 1000, referenced_data_file=ref), 5, 0))
    return FileScanTask(df, tuple(dels), None, 0, 1)


def sizes(groups: list[list[FileScanTask]]) -> list[list[float]]:
    return [[t.data_file.file_size_in_bytes / MB for t in g] for g in groups]


SELECTION = [
    # (files as MB, options, groups formed and kept)
    ("five small files", [10] * 5, {}, [[10] * 5]),
    ("four small files are too few", [10] * 4, {}, []),
    ("min-input-files 4", [10] * 4, {"min-input-files": "4"}, [[10] * 4]),
    ("two files over the target", [60, 60], {}, [[60, 60]]),
    ("two files under the target", [40, 40], {}, []),
    ("one file above the max", [200], {}, [[200]]),
    ("one small file alone", [10], {"min-input-files": "1"}, []),  # Java: a group needs > 1
    ("files in range are not selected", [80, 90, 100, 170] * 2, {}, []),
    ("small files beside files in range", [10, 80, 10, 90, 10, 10, 10], {}, [[10] * 5]),
    ("rewrite-all takes everything", [80, 90, 10], {"rewrite-all": "true"}, [[80, 90, 10]]),
    ("min-file-size-bytes", [50] * 5, {"min-file-size-bytes": str(40 * MB)}, []),
    ("max-file-size-bytes", [150], {"max-file-size-bytes": str(140 * MB)}, [[150]]),
    ("group size limit, groups too small to keep", [40] * 5,
     {"max-file-group-size-bytes": str(100 * MB)}, []),
    ("group size limit with min-input-files 2", [40] * 5,
     {"max-file-group-size-bytes": str(100 * MB), "min-input-files": "2"},
     [[40, 40], [40, 40]]),
    ("a file over the group limit closes the open group", [10, 300, 10, 10],
     {"max-file-group-size-bytes": str(250 * MB), "min-input-files": "1"}, [[300], [10, 10]]),
]


@pytest.mark.parametrize(("files", "given", "expected"), [c[1:] for c in SELECTION],
                         ids=[c[0] for c in SELECTION])
def test_selection_and_grouping_follow_java(files: list[float], given: dict[str, str],
                                             expected: list[list[float]]) -> None:
    got = select_groups(options(**given), [task(s) for s in files])
    assert sizes(got) == expected


DELETE_RULES = [
    # (delete files on one in-range file, options, selected?)
    ("no deletes", dict(), {}, False),
    ("delete-file-threshold reached", dict(deletes=2), {"delete-file-threshold": "2"}, True),
    ("delete-file-threshold not reached", dict(deletes=1), {"delete-file-threshold": "2"},
     False),
    ("file-scoped deletes reach the ratio", dict(deletes=1, scoped_deleted=30), {}, True),
    ("file-scoped deletes under the ratio", dict(deletes=1, scoped_deleted=29), {}, False),
    ("partition-scoped deletes do not count", dict(deletes=3), {}, False),
    ("ratio option", dict(deletes=1, scoped_deleted=10), {"delete-ratio-threshold": "0.1"},
     True),
]


@pytest.mark.parametrize(("shape", "given", "selected"), [c[1:] for c in DELETE_RULES],
                         ids=[c[0] for c in DELETE_RULES])
def test_delete_thresholds_select_a_file_in_range(shape: dict[str, int], given: dict[str, str],
                                                  selected: bool) -> None:
    got = select_groups(options(**given), [task(90, **shape)])
    assert (sizes(got) == [[90]]) is selected


@pytest.mark.parametrize(("input_mb", "expected"), [
    (50, 1),      # under the target
    (100, 1),     # exactly the target
    (170, 2),     # remainder 70 MB <= min 75 MB, but one 170 MB file is > 110% of the target
    (180, 2),     # remainder 80 MB > min: kept as its own file
    (1050, 10),   # remainder 50 MB spread: 105 MB average, within 10%
    (1095, 11),   # remainder 95 MB > min
    (1120, 11),   # remainder 20 MB but 112 MB average is more than 10% over
])
def test_expected_output_files(input_mb: int, expected: int) -> None:
    assert options().expected_output_files(input_mb * MB) == expected


def test_split_size_and_write_max_size() -> None:
    o = options()
    assert o.write_max_file_size == 140 * MB  # target + (max - target) / 2
    assert o.input_split_size(50 * MB) == 100 * MB  # at least the target
    assert o.input_split_size(1050 * MB) == 105 * MB + 5 * 1024  # input / files + overhead
    assert o.input_split_size(300 * MB) == 100 * MB + 5 * 1024  # three files of the target


def test_sort_strategy_scales_by_compression_factor() -> None:
    o = parse_options(_FAKE_MD, {"target-file-size-bytes": str(100 * MB),
                                 "compression-factor": "2.0"}, strategy="sort")
    assert o.expected_output_files(100 * MB) == 2


def test_pack_groups_is_javas_list_packer() -> None:
    assert pack_groups([3, 3, 3, 9, 1, 1], lambda x: x, 6) == [[3, 3], [3], [9], [1, 1]]


@pytest.mark.parametrize(("order", "first_partition"), [
    ("files-desc", "p0"), ("files-asc", "p2"), ("bytes-desc", "p0"), ("bytes-asc", "p2"),
])
def test_rewrite_job_order(catalog: FileSystemCatalog, order: str, first_partition: str) -> None:
    t = make(catalog, "order", appends=0)
    for k in range(7):  # p0 gets 7 files, p1 6, p2 5
        t.append(rows([3 * k + 0] + ([3 * k + 1] if k < 6 else []) +
                      ([3 * k + 2] if k < 5 else [])))
    plan = plan_compaction(t, options={"rewrite-job-order": order})
    assert [g.partition for g in plan.groups][0] == (first_partition,)
    counts = [g.input_files_count for g in plan.groups]
    assert counts == sorted(counts, reverse=order.endswith("desc"))


# -- rows never change -----------------------------------------------------------------------


def _with_deletes(t: Any, kind: str) -> None:
    if kind in ("position", "both"):
        t.delete_where("id < 30 AND v > 100", mode="merge-on-read")
    if kind in ("equality", "both"):
        t.delete_equal(["id"], pa.table({"id": pa.array([40, 41, 42, 77], pa.int64())}))


ROW_CASES = [
    # (name, format version, partitioned, deletes)
    ("v1 unpartitioned", 1, False, None),
    ("v1 partitioned", 1, True, None),
    ("v2 unpartitioned", 2, False, None),
    ("v2 partitioned", 2, True, None),
    ("v2 position deletes", 2, True, "position"),
    ("v2 equality deletes", 2, True, "equality"),
    ("v2 both, unpartitioned", 2, False, "both"),
]


@pytest.mark.parametrize(("version", "partitioned", "deletes"), [c[1:] for c in ROW_CASES],
                         ids=[c[0] for c in ROW_CASES])
def test_rows_before_equal_rows_after(catalog: FileSystemCatalog, version: int,
                                      partitioned: bool, deletes: str | None) -> None:
    t = make(catalog, "rows", partitioned=partitioned, version=version)
    if deletes:
        _with_deletes(t, deletes)
    before = bag(t)
    files_before = len(live(t, FileContent.DATA))
    result = compact(t)
    assert bag(t) == before
    assert result.rewritten_data_files_count == files_before
    assert len(live(t, FileContent.DATA)) == (3 if partitioned else 1)
    assert t.current_snapshot().summary["operation"] == "replace"
    # already rewritten: nothing more to do, nothing changes
    again = compact(t)
    assert again.groups == () and again.snapshot_ids == ()
    assert again.note.endswith("nothing to combine"), again.note
    assert bag(t) == before


def test_spec_evolution_rewrites_old_spec_files_into_the_output_spec(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "evolve", partitioned=False, appends=3)
    t.update_spec().add_field("s").commit()
    for k in range(3, 6):
        t.append(rows(range(k * 20, (k + 1) * 20)))
    t.delete_where("id IN (3, 64)", mode="merge-on-read")
    before = bag(t)
    plan = plan_compaction(t, options={"rewrite-all": "true"})
    old = [g for g in plan.groups if g.needs_repartition]
    assert old and all(g.partition == (None,) for g in old)  # Java: the empty partition
    compact(t, plan)
    assert bag(t) == before
    data = live(t, FileContent.DATA)
    assert {e.data_file.spec_id for e in data} == {t.metadata.default_spec_id}
    assert all(e.data_file.partition in {("p0",), ("p1",), ("p2",)} for e in data)


def test_output_spec_id_writes_into_an_older_spec(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "outspec", partitioned=False, appends=5)
    t.update_spec().add_field("s").commit()
    t.append(rows(range(200, 210)))
    before = bag(t)
    compact(t, options={"output-spec-id": "0", "rewrite-all": "true"})
    assert bag(t) == before
    assert {e.data_file.spec_id for e in live(t, FileContent.DATA)} == {0}


# -- sort ------------------------------------------------------------------------------------


def test_sort_strategy_writes_sorted_files(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "sorted", appends=6)
    t.delete_where("id = 33", mode="merge-on-read")
    before = bag(t)
    compact(t, strategy="sort", sort_order="v desc nulls first, id")
    assert bag(t) == before
    for e in live(t, FileContent.DATA):
        got = pq.read_table(e.data_file.file_path).to_pylist()
        keys = [(r["v"] is not None, -(r["v"] or 0), r["id"]) for r in got]
        assert keys == sorted(keys)


def test_sort_uses_the_tables_order_and_refuses_an_unsorted_table(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "tsort", partitioned=False)
    with pytest.raises(ValidationError, match="unsorted and no sort order"):
        plan_compaction(t, strategy="sort")
    t.replace_sort_order().from_text("id desc").commit()
    plan = plan_compaction(t, strategy="sort")
    assert plan.sort_order is not None and plan.sort_order.same_order(t.sort_order())
    compact(t, plan)
    (e,) = live(t, FileContent.DATA)
    ids = pq.read_table(e.data_file.file_path).column("id").to_pylist()
    assert ids == sorted(ids, reverse=True)


@pytest.mark.parametrize(("order", "want"), [
    ("x", ["null", "null", -1.0, 2.0, 5.0, "nan"]),
    ("x asc nulls last", [-1.0, 2.0, 5.0, "nan", "null", "null"]),
    ("x desc nulls first", ["null", "null", "nan", 5.0, 2.0, -1.0]),
    ("x desc", ["nan", 5.0, 2.0, -1.0, "null", "null"]),
])
def test_sort_rows_null_and_nan_order(order: str, want: list[Any]) -> None:
    schema = Schema(NestedField(1, "x", DOUBLE))
    values = [2.0, None, float("nan"), -1.0, None, 5.0]
    got = sort_rows(pa.table({"x": pa.array(values, pa.float64())}),
                    parse_sort_by(order, schema), schema).column("x").to_pylist()
    assert ["null" if v is None else "nan" if v != v else v for v in got] == want


# -- sequence numbers and delete files ---------------------------------------------------------


def test_new_files_take_the_starting_sequence_number(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "seq")
    start = t.current_snapshot().sequence_number
    compact(t)
    assert t.current_snapshot().sequence_number == start + 1
    added = [e for e in live(t, FileContent.DATA)]
    assert {e.sequence_number for e in added} == {start}


def test_without_starting_sequence_number_new_files_take_the_new_one(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "seqnew")
    compact(t, options={"use-starting-sequence-number": "false"})
    seq = t.current_snapshot().sequence_number
    assert {e.sequence_number for e in live(t, FileContent.DATA)} == {seq}


def test_no_delete_file_applies_to_rewritten_files(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "nodeletes")
    _with_deletes(t, "both")
    before = bag(t)
    result = compact(t)
    assert result.removed_delete_files_count > 0  # the position deletes went with their data
    assert bag(t) == before
    tasks = plan_files(t.io, t.refresh().metadata).tasks
    assert tasks and all(task.delete_files == () for task in tasks)
    # the equality deletes stay live but sequence numbers keep them off the new files
    assert live(t, FileContent.EQUALITY_DELETES)
    compact(t, options={"remove-dangling-deletes": "true", "rewrite-all": "true"})
    assert live(t, FileContent.EQUALITY_DELETES) == []
    assert bag(t) == before


def test_summary_is_javas_for_a_rewrite(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "summary", partitioned=False)
    compact(t)
    s = t.current_snapshot().summary
    assert s["operation"] == "replace"
    assert s["deleted-data-files"] == "6" and s["added-data-files"] == "1"
    assert s["added-records"] == s["deleted-records"] == "120"
    assert s["total-records"] == "120" and s["total-data-files"] == "1"
    assert s["changed-partition-count"] == "1"


# -- concurrent commits (in process; separate processes in test_compaction_races.py) -----------


def test_equality_delete_after_planning_still_applies(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "eqlate")
    plan = plan_compaction(t)
    t.delete_equal(["id"], pa.table({"id": pa.array([5, 6, 7], pa.int64())}))
    expected = bag(t)
    compact(t, plan)
    assert bag(t) == expected
    assert not {5, 6, 7} & {k[0] for k in bag(t)}


def test_equality_delete_after_planning_conflicts_without_starting_sequence(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "eqlate2")
    plan = plan_compaction(t, options={"use-starting-sequence-number": "false"})
    t.delete_equal(["id"], pa.table({"id": pa.array([5], pa.int64())}))
    expected, on_disk = bag(t), files_on_disk(t)
    with pytest.raises(CommitConflict, match="new delete for replaced data file"):
        compact(t, plan)
    assert bag(t) == expected
    assert files_on_disk(t) == on_disk  # nothing stray


def test_position_delete_after_planning_fails_the_compaction(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "poslate")
    plan = plan_compaction(t)
    t.delete_where("id = 8", mode="merge-on-read")
    expected = bag(t)
    with pytest.raises(CommitConflict, match="cannot commit the compaction"):
        compact(t, plan)
    assert bag(t) == expected and (8, "p2", 80) not in bag(t)


def test_a_file_removed_after_planning_fails_the_compaction(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "cowlate")
    plan = plan_compaction(t)
    t.delete_where("id = 8", mode="copy-on-write")
    expected = bag(t)
    with pytest.raises(CommitConflict, match="not live"):
        compact(t, plan)
    assert bag(t) == expected


# -- dry run ---------------------------------------------------------------------------------


def test_dry_run_writes_nothing_and_lists_what_a_real_run_rewrites(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "dry")
    _with_deletes(t, "both")
    on_disk, location = files_on_disk(t), t.metadata_location
    opts = {"remove-dangling-deletes": "true"}
    dry = compact(t, options=opts, dry_run=True)
    assert files_on_disk(t) == on_disk and t.refresh().metadata_location == location
    doc = json.loads(json.dumps(dry.to_json()))
    assert doc["dry_run"] is True and doc["snapshot_ids"] == []
    planned = {p for g in doc["groups"] for p in g["rewritten_files"]}
    planned_deletes = {p for g in doc["groups"] for p in g["removed_delete_files"]}
    assert all(os.path.isabs(p) for p in planned | planned_deletes)
    real = compact(t, options=opts)
    assert {p for g in real.groups for p in g.rewritten_files} == planned
    assert {p for g in real.groups for p in g.removed_delete_files} == planned_deletes
    assert set(real.removed_dangling_delete_files) == set(dry.removed_dangling_delete_files)
    assert real.removed_dangling_delete_files  # the equality deletes


def test_plan_to_json_lists_groups_with_full_paths(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "planjson")
    t.delete_where("id < 4", mode="merge-on-read")
    doc = json.loads(json.dumps(plan_compaction(t).to_json()))
    assert doc["total_group_count"] == 3 and len(doc["groups"]) == 3
    g = doc["groups"][0]
    assert set(g) >= {"partition", "input_files", "expected_output_files", "input_size_bytes",
                      "removed_delete_files"}
    f = g["input_files"][0]
    assert set(f) >= {"file_path", "file_size_in_bytes", "record_count", "delete_files"}
    assert f["file_path"].startswith(t.location)
    assert any(f["delete_files"] for g in doc["groups"] for f in g["input_files"])


# -- partial progress, failures, cancellation --------------------------------------------------


def test_partial_progress_commits_every_n_groups(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "partial")
    before = len(t.snapshots())
    result = compact(t, options={"partial-progress.enabled": "true",
                                 "partial-progress.max-commits": "2"})
    # 3 groups, ceil(3 / 2) = 2 groups per commit: commits of 2 and 1 groups
    assert len(result.snapshot_ids) == 2 and len(t.snapshots()) == before + 2
    assert [len({g.global_index for g in result.groups if g.snapshot_id == s})
            for s in result.snapshot_ids] == [2, 1]


def test_partial_progress_a_failing_group_fails_alone(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "partialfail")
    plan = plan_compaction(t, options={"partial-progress.enabled": "true",
                                       "partial-progress.max-commits": "3"})
    broken = plan.groups[1].tasks[0].data_file.file_path
    os.remove(broken)
    result = compact(t, plan)
    assert len(result.failures) == 1 and broken in result.failures[0].rewritten_files
    assert "does not exist" in (result.failures[0].error or "")
    assert len(result.groups) == 2 and result.failed_data_files_count == 6
    assert {e.data_file.file_path for e in live(t, FileContent.DATA)} >= set(
        result.failures[0].rewritten_files)


def test_partial_progress_a_conflicting_commit_fails_alone(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "partialconflict")
    plan = plan_compaction(t, options={"partial-progress.enabled": "true",
                                       "partial-progress.max-commits": "3"})
    t.delete_where("s = 'p1' AND id = 1", mode="merge-on-read")
    expected = bag(t)
    result = compact(t, plan)
    assert len(result.snapshot_ids) == 2 and len(result.failures) == 1
    assert result.failures[0].partition == (("s", "p1"),)
    assert bag(t) == expected


def test_without_partial_progress_a_failure_commits_nothing(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "allornothing")
    plan = plan_compaction(t)
    os.remove(plan.groups[-1].tasks[0].data_file.file_path)
    on_disk, location = files_on_disk(t), t.metadata_location
    with pytest.raises(NotFound):
        compact(t, plan)
    assert t.refresh().metadata_location == location
    assert files_on_disk(t) == on_disk  # the groups written before were deleted


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("stop_at", [1, 2, 3, 4])
def test_cancelled_leaves_a_consistent_table_and_no_stray_files(
        catalog: FileSystemCatalog, partial: bool, stop_at: int) -> None:
    t = make(catalog, f"cancel_{partial}_{stop_at}")
    before = bag(t)
    seen: list[Progress] = []

    def on_progress(p: Progress) -> None:
        seen.append(p)
        if sum(1 for q in seen if q.stage in ("writing", "committing")) == stop_at:
            raise Cancelled("stop")

    opts = {"partial-progress.enabled": str(partial).lower(),
            "partial-progress.max-commits": "3"}
    with pytest.raises(Cancelled):
        compact(t, options=opts, on_progress=on_progress)
    assert bag(t) == before
    assert files_on_disk(t) - referenced(t) <= {
        p for p in files_on_disk(t) if "/metadata/" in p and not p.endswith(".avro")}
    committed = len(t.snapshots()) - 6
    assert committed == 0 or partial


def test_progress_reports_each_group(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "progress")
    seen: list[Progress] = []
    compact(t, on_progress=seen.append)
    rewriting = [p for p in seen if p.stage == "rewriting"]
    assert [p.done for p in rewriting] == [0, 1, 2, 3] and rewriting[-1].fraction == 1.0
    assert any(p.stage == "committing" for p in seen)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"options": {"target-file-size": "1"}},
     "cannot use option target-file-size with the binpack strategy; valid options: "),
    ({"options": {"compression-factor": "2"}}, "cannot use option compression-factor"),
    ({"options": {"target-file-size-bytes": "abc"}}, "is not an integer"),
    ({"options": {"min-file-size-bytes": "100", "target-file-size-bytes": "100"}},
     "must be > 'min-file-size-bytes'"),
    ({"options": {"max-file-size-bytes": "10", "target-file-size-bytes": "100"}},
     "must be < 'max-file-size-bytes'"),
    ({"options": {"min-input-files": "0"}}, "must be > 0"),
    ({"options": {"delete-ratio-threshold": "1.5"}}, "must be > 0 and <= 1"),
    ({"options": {"rewrite-job-order": "random"}}, "invalid rewrite job order name"),
    ({"options": {"partial-progress.enabled": "yes"}}, "is not a boolean"),
    ({"options": {"output-spec-id": "7"}}, "cannot use output spec id 7"),
    ({"filter": "idd > 3"}, "unknown column 'idd'; did you mean 'id'?"),
    ({"strategy": "zorder"}, "unsupported strategy"),
    ({"sort_order": "id"}, "needs strategy 'sort'"),
])
def test_bad_input_is_one_line(catalog: FileSystemCatalog, kwargs: dict[str, Any],
                               message: str) -> None:
    t = make(catalog, "bad", appends=1)
    with pytest.raises(ValidationError) as info:
        plan_compaction(t, **kwargs)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_option_lists_every_valid_option(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "badopt", appends=1)
    with pytest.raises(ValidationError) as info:
        compact(t, {"nope": "1"})
    for name in ("target-file-size-bytes", "min-input-files", "partial-progress.enabled",
                 "use-starting-sequence-number", "remove-dangling-deletes"):
        assert name in str(info.value)


def test_a_table_without_snapshots_plans_nothing_like_java(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.empty", SCHEMA)
    plan = plan_compaction(t)
    assert plan.groups == () and "has no snapshot" in plan.note
    result = compact(t)
    assert result.groups == () and result.snapshot_ids == () and "has no snapshot" in result.note
    with pytest.raises(ValidationError, match="did you mean"):
        plan_compaction(t, filter="idd = 1")


def test_filter_limits_the_files(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "filtered")
    before = bag(t)
    result = compact(t, filter="s = 'p1'")
    assert {g.partition for g in result.groups} == {(("s", "p1"),)}
    assert bag(t) == before
    assert len(live(t, FileContent.DATA)) == 6 * 2 + 1


def test_a_plan_for_another_table_is_refused(catalog: FileSystemCatalog) -> None:
    a, b = make(catalog, "a1", appends=5), make(catalog, "b1", appends=5)
    with pytest.raises(ValidationError, match="plan is for table"):
        compact(b, plan_compaction(a))


# -- position delete rewrite and dangling deletes ------------------------------------------------


def test_rewrite_position_deletes_bin_packs_and_keeps_the_rows(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "posrw")
    for k in range(15):  # 5 small delete files per partition
        t.delete_where(f"id = {k * 7}", mode="merge-on-read")
    before = bag(t)
    deletes_before = live(t, FileContent.POSITION_DELETES)
    dry = rewrite_position_deletes(t, dry_run=True)
    assert dry.groups and len(live(t, FileContent.POSITION_DELETES)) == len(deletes_before)
    result = rewrite_position_deletes(t)
    assert bag(t) == before
    after = live(t, FileContent.POSITION_DELETES)
    assert len(after) < len(deletes_before)
    assert result.rewritten_delete_files_count == sum(len(g.rewritten_delete_files)
                                                      for g in dry.groups)
    assert t.current_snapshot().summary["operation"] == "replace"
    max_seq = max(e.sequence_number for e in deletes_before
                  if e.data_file.partition == after[0].data_file.partition)
    assert {e.sequence_number for e in after if e.data_file.partition
            == after[0].data_file.partition} == {max_seq}


def test_rewrite_position_deletes_drops_entries_of_files_no_longer_live(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "posstale", partitioned=False, appends=6, per=10)
    for k in range(6):
        t.delete_where(f"id = {k * 10 + 3}", mode="merge-on-read")
    victim = sorted(e.data_file.file_path for e in live(t, FileContent.DATA))[0]
    t.delete_files([victim])
    before = bag(t)
    records_before = sum(e.data_file.record_count for e in live(t, FileContent.POSITION_DELETES))
    rewrite_position_deletes(t, {"rewrite-all": "true"})
    assert bag(t) == before
    records_after = sum(e.data_file.record_count for e in live(t, FileContent.POSITION_DELETES))
    assert records_after == records_before - 1


def test_rewrite_position_deletes_refuses_unknown_options_and_plans_nothing_on_v1(
        catalog: FileSystemCatalog) -> None:
    t = make(catalog, "posbad", appends=1)
    with pytest.raises(ValidationError, match="delete-ratio-threshold"):
        plan_position_delete_rewrite(t, options={"delete-ratio-threshold": "0.5"})
    v1 = make(catalog, "posv1", version=1, appends=1)
    assert plan_position_delete_rewrite(v1).groups == ()


def test_remove_dangling_deletes(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "dangling", appends=3)
    t.delete_equal(["id"], pa.table({"id": pa.array([4, 5], pa.int64())}))
    t.delete_where("s = 'p2' AND id = 2", mode="merge-on-read")
    before = bag(t)
    assert find_dangling_deletes(t.io, t.metadata, t.current_snapshot()) == []
    # partition p1's data rewritten at a later sequence number: its equality delete applies
    # to nothing, while p0's old data keeps the table's lowest sequence number
    compact(t, options={"rewrite-all": "true", "use-starting-sequence-number": "false"},
            filter="s = 'p1'")
    assert bag(t) == before
    dangling = find_dangling_deletes(t.io, t.refresh().metadata, t.current_snapshot())
    assert {f.content for f in dangling} == {FileContent.EQUALITY_DELETES}
    assert {json_partition(f) for f in dangling} == {"p1"}
    dry = remove_dangling_deletes(t, dry_run=True)
    assert set(dry.removed_delete_files) == {f.file_path for f in dangling}
    result = remove_dangling_deletes(t)
    assert result.snapshot_id == t.current_snapshot().snapshot_id
    left = {json_partition(e.data_file) for e in live(t, FileContent.EQUALITY_DELETES)}
    assert left and "p1" not in left and bag(t) == before
    assert remove_dangling_deletes(t).snapshot_id is None  # nothing left: no commit


def json_partition(f: Any) -> Any:
    return next(iter(f.partition.values())) if isinstance(f.partition, dict) \
        else f.partition[0]


def test_deletes_newer_than_the_starting_sequence_number_are_kept(
        catalog: FileSystemCatalog) -> None:
    """Compaction writes at its starting sequence number; an equality delete committed while
    it ran must still apply to the new files, even when a later commit raised the table's
    sequence number past the delete's (the dropping floor counts the new files)."""
    t = make(catalog, "startingseq", partitioned=False, appends=3)
    plan = plan_compaction(t, options={"rewrite-all": "true"})
    t.delete_equal(["id"], pa.table({"id": pa.array([7], pa.int64())}))
    t.append(rows(range(500, 503)))
    before = bag(t)
    compact(t, plan)
    assert bag(t) == before and 7 not in {k[0] for k in before}
    assert live(t, FileContent.EQUALITY_DELETES)


def test_commit_drops_deletes_older_than_every_data_file(catalog: FileSystemCatalog) -> None:
    """Java MergingSnapshotProducer (dropDeleteFilesOlderThan): once every data file has a
    higher data sequence number than a delete file, the next non-append commit removes the
    delete file (and manifests left without live files are not carried forward)."""
    t = make(catalog, "olddeletes", appends=3)
    t.delete_equal(["id"], pa.table({"id": pa.array([4, 5], pa.int64())}))
    t.delete_where("s = 'p2' AND id = 2", mode="merge-on-read")
    before = bag(t)
    compact(t, options={"rewrite-all": "true", "use-starting-sequence-number": "false"})
    assert bag(t) == before
    assert live(t, FileContent.EQUALITY_DELETES) == []
    assert live(t, FileContent.POSITION_DELETES) == []
    summary = t.current_snapshot().summary
    assert int(summary["removed-equality-delete-files"]) >= 1
    assert find_dangling_deletes(t.io, t.metadata, t.current_snapshot()) == []


def test_more_failed_commits_than_allowed_fail_the_run(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "maxfailed")
    plan = plan_compaction(t, options={"partial-progress.enabled": "true",
                                       "partial-progress.max-commits": "3",
                                       "partial-progress.max-failed-commits": "0"})
    t.delete_where("id = 1", mode="merge-on-read")
    snapshots = len(t.snapshots())
    with pytest.raises(CommitConflict, match="1 rewrite commits .* failed, more than the "
                                             "allowed 0"):
        compact(t, plan)
    assert len(t.refresh().snapshots()) == snapshots + 2  # the other groups stay committed


def test_compaction_of_a_branch_leaves_main_alone(catalog: FileSystemCatalog) -> None:
    t = make(catalog, "branch")
    main_id = t.current_snapshot().snapshot_id
    t.manage_snapshots().create_branch("dev", main_id).commit()
    t.append(rows(range(500, 503)), branch="dev")
    before_main = bag(t)
    result = compact(t, branch="dev")
    assert result.rewritten_data_files_count == 21
    t.refresh()
    assert t.current_snapshot().snapshot_id == main_id and bag(t) == before_main
    dev = t.metadata.snapshot_by_id(t.metadata.refs["dev"].snapshot_id)
    assert dev.summary["operation"] == "replace" and dev.parent_snapshot_id != main_id
    tasks = plan_files(t.io, t.metadata, ref="dev").tasks
    assert len(tasks) == 3
    got = plan_to_table(t.io, plan_files(t.io, t.metadata, ref="dev"))
    assert sorted(got.column("id").to_pylist()) == list(range(120)) + [500, 501, 502]
