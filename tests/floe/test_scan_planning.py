"""Scan planning on floe-written tables: snapshot selection, pruning, explain, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import load_table_metadata
from floe.cli import main
from floe.clock import ManualClock, use_clock
from floe.errors import NotFound, ValidationError
from floe.io import FileIO
from floe.scan.readers import plan_to_table
from floe.partitioning import parse_partition_by
from floe.scan import ManifestCache, plan_files, select_snapshot
from floe.scan.manifests import read_live_entries, shutdown_pool
from floe.schema import Schema
from floe.table.append import append, create_table
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG), NestedField(2, "cat", STRING))
T0 = 1_700_000_000_000


@pytest.fixture
def table(tmp_path: Path) -> str:
    """Three appends (at T0, T0+1000, T0+2000) to a table partitioned by cat."""
    io = FileIO()
    location = str(tmp_path / "t")
    clock = ManualClock(T0 - 1000)
    batches = [
        {"id": [1, 2, 3], "cat": ["a", "a", "b"]},
        {"id": [10, 11], "cat": ["b", None]},
        {"id": [20, 21, 22], "cat": ["c", "c", "a"]},
    ]
    with use_clock(clock):
        create_table(io, location, SCHEMA, spec=parse_partition_by("cat", SCHEMA))
        for i, b in enumerate(batches):
            rows = pa.table({"id": pa.array(b["id"], pa.int64()), "cat": pa.array(b["cat"])})
            clock.set(T0 + 1000 * i)
            append(io, location, rows)
    return location


def _md(location: str) -> Any:
    return load_table_metadata(FileIO(), location)[1]


def _ids(location: str, **kw: Any) -> list[int]:
    io = FileIO()
    plan = plan_files(io, _md(location), **kw)
    return sorted(plan_to_table(io, plan).column("id").to_pylist())


def test_time_travel_by_id_and_timestamp(table: str) -> None:
    snaps = sorted(_md(table).snapshots, key=lambda s: s.sequence_number)
    assert _ids(table, snapshot_id=snaps[0].snapshot_id) == [1, 2, 3]
    assert _ids(table, as_of_ms=T0 + 1500) == [1, 2, 3, 10, 11]
    assert _ids(table) == [1, 2, 3, 10, 11, 20, 21, 22]


@pytest.mark.parametrize(("kw", "message"), [
    ({"snapshot_id": 42}, "snapshot 42 does not exist"),
    ({"ref": "nope"}, "no branch or tag named 'nope'"),
    ({"as_of_ms": T0 - 1}, f"before the first snapshot .*committed at {T0}"),
])
def test_bad_snapshot_selection(table: str, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(NotFound, match=message):
        plan_files(FileIO(), _md(table), **kw)


def test_only_one_selector(table: str) -> None:
    with pytest.raises(ValidationError):
        select_snapshot(_md(table), snapshot_id=1, ref="main")


@pytest.mark.parametrize(("row_filter", "message"), [
    ("idd > 1", "unknown column 'idd'"),
    ("id > 'x'", "cannot convert 'x'"),
    ("id >", "position"),
])
def test_bad_filters(table: str, row_filter: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        plan_files(FileIO(), _md(table), row_filter=row_filter)


def test_main_branch_is_the_current_state(table: str) -> None:
    assert _ids(table, ref="main") == _ids(table)


@pytest.mark.parametrize(("row_filter", "files", "ids"), [
    ("cat = 'a'", 2, [1, 2, 22]),
    ("cat IS NULL", 1, [11]),
    ("id > 15", 2, [20, 21, 22]),  # metrics prune the first two appends' files
    ("cat != 'a'", 3, [3, 10, 20, 21]),  # SQL semantics: a null cat is not != 'a'
    ("id = 2 OR cat = 'c'", 2, [2, 20, 21]),
])
def test_filters_prune_and_filter_rows(table: str, row_filter: str, files: int,
                                       ids: list[int]) -> None:
    plan = plan_files(FileIO(), _md(table), row_filter=row_filter)
    assert len(plan.tasks) == files
    assert _ids(table, row_filter=row_filter) == ids


def test_explain_records_every_decision(table: str) -> None:
    plan = plan_files(FileIO(), _md(table), row_filter="cat = 'c'", explain=True)
    doc = json.loads(json.dumps(plan.to_json()))
    f = doc["funnel"]
    assert f["manifests_total"] == 3 and f["data_files_in_snapshot"] == 6
    assert f["manifests_after_summaries"] == 1  # only the third append has cat = 'c'
    assert f["data_files_after_metrics"] == f["tasks"] == 1
    pruned = [m for m in doc["manifests"] if not m["kept"]]
    assert {m["stage"] for m in pruned} == {"partition-summary"}
    assert all(m["reason"] for m in doc["manifests"])
    files = [file for m in doc["manifests"] for file in m["files"]]
    assert {file["kept"] for file in files} == {True, False}
    assert all(file["stage"] == "partition" for file in files if not file["kept"])


def test_missing_data_file_is_a_clear_error(table: str) -> None:
    io = FileIO()
    plan = plan_files(io, _md(table))
    victim = plan.tasks[0].file_path
    os.unlink(victim.removeprefix("file:"))
    with pytest.raises(NotFound, match=os.path.basename(victim)):
        plan_to_table(io, plan)


def test_manifest_cache_is_bounded_and_reused(table: str) -> None:
    cache = ManifestCache(max_entries=3)
    io = FileIO()
    md = _md(table)
    first = plan_files(io, md, cache=cache)
    assert cache.misses == 3 and cache.size <= 3
    again = plan_files(io, md, cache=cache)
    assert cache.hits >= 1
    assert [t.file_path for t in first.tasks] == [t.file_path for t in again.tasks]


def test_process_pool_reads_the_same_entries(table: str) -> None:
    from floe.manifest import read_manifest_list

    io = FileIO()
    snap = _md(table).current_snapshot()
    manifests = read_manifest_list(io, snap.manifest_list)
    try:
        by_process = read_live_entries(io, manifests, None, processes=True)
    finally:
        shutdown_pool()
    in_thread = read_live_entries(io, manifests, None, processes=False)
    assert by_process == in_thread


def test_cli_scan_plan_and_files(table: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.parquet"
    assert main(["scan", table, "--filter", "cat = 'a'", "--columns", "id",
                 "--output", str(out)]) == 0
    import pyarrow.parquet as pq

    assert sorted(pq.read_table(out).column("id").to_pylist()) == [1, 2, 22]
    capsys.readouterr()
    assert main(["scan", table, "--as-of", str(T0), "--output", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == [1, 2, 3]
    assert main(["plan", table, "--filter", "id > 15", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["funnel"]["tasks"] == 2 and "manifests" in doc
    assert main(["files", table, "--filter", "cat IS NULL", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["partition"] for r in rows] == [{"cat": None}]
    assert main(["scan", table, "--ref", "nope", "--output", "-"]) == 1
    assert "no branch or tag named 'nope'" in capsys.readouterr().err
    assert main(["scan", table, "--filter", "id >", "--output", "-"]) == 1
    assert "position" in capsys.readouterr().err
