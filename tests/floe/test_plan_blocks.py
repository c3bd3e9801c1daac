"""Plans that keep whole manifests (no filter left to evaluate per file, no deletes) hold each
manifest's tasks as a TaskBlock built on first use and, explained, its decisions as
KeptFiles. Such a plan equals the plan decided file by file, in every task, decision, residual
and count; ``floe plan --json`` writes it byte for byte as the json module would; planned from
the persistent manifest cache it builds no entry at all until the tasks are read."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from floe import avro_native, stats
from floe.io import FileIO
from floe.scan import explain as explain_mod
from floe.scan import native
from floe.scan.explain import KeptFiles, encode_compact, write_plan_json
from floe.scan.filters import SpecFilter
from floe.scan.manifest_store import StoredEntries
from floe.scan.planning import TaskBlock, TaskList, plan_files, stream_plan


@pytest.fixture(scope="module")
def table(deletes_table: Any) -> Any:
    return deletes_table


@pytest.fixture(scope="module")
def snapshot(table: Any) -> int:
    """The last append, before the deletes: eight manifests over two specs, no deletes."""
    appends = [s for s in table.metadata.snapshots if s.summary.get("operation") == "append"]
    return appends[-1].snapshot_id


def _per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans from now on decide file by file (the path every filtered plan takes)."""
    monkeypatch.setattr(SpecFilter, "always_true", False)


def _decisions(plan: Any) -> list[tuple[Any, ...]]:
    return [(m.path, f.path, f.content, f.kept, f.stage, f.reason, f.residual)
            for m in plan.explain.manifests for f in m.files]


@pytest.mark.parametrize("explain", [False, True])
def test_blocks_equal_the_plan_decided_file_by_file(table: Any, snapshot: int, explain: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    io = FileIO()
    blocks = plan_files(io, table.metadata, snapshot_id=snapshot, explain=explain, cache=None)
    parts = blocks.tasks.blocks()
    assert len(parts) == 8 and all(isinstance(b, TaskBlock) and not b.built for b in parts)
    if explain:
        assert all(isinstance(m.files, KeptFiles) for m in blocks.explain.manifests)
    doc = blocks.to_json()  # tasks and decisions written from the blocks' columns
    assert all(not b.built for b in parts)
    _per_file(monkeypatch)
    per_file = plan_files(io, table.metadata, snapshot_id=snapshot, explain=explain,
                          cache=None)
    assert not any(isinstance(b, TaskBlock) for b in per_file.tasks.blocks())
    assert doc == per_file.to_json()
    assert blocks.funnel == per_file.funnel
    assert blocks.funnel.tasks == len(blocks.tasks) == sum(len(b) for b in parts) > 8
    assert list(blocks.tasks) == list(per_file.tasks)
    if explain:
        assert _decisions(blocks) == _decisions(per_file)


def _plan_text(table: Any, snapshot: int, tmp_path: Path, name: str) -> str:
    out = tmp_path / name
    with open(out, "w", encoding="utf-8") as f:
        write_plan_json(stream_plan(FileIO(), table.metadata, snapshot_id=snapshot,
                                    explain=True), f)
    return out.read_text(encoding="utf-8")


def test_plan_json_of_blocks_is_the_json_modules_text(table: Any, snapshot: int,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    by_arrow = _plan_text(table, snapshot, tmp_path, "arrow.json")
    monkeypatch.setattr(explain_mod, "_json_rows", lambda fields: None)  # dicts, encoded
    by_dicts = _plan_text(table, snapshot, tmp_path, "dicts.json")
    assert by_arrow == by_dicts
    _per_file(monkeypatch)
    assert _plan_text(table, snapshot, tmp_path, "per-file.json") == by_arrow
    doc = json.loads(by_arrow)
    assert len(doc["tasks"]) == doc["funnel"]["tasks"] > 8
    assert doc["manifests"][0]["files"][0]["reason"] == "no filter"


STRINGS = ["s3://b/t/data/plain.parquet", 'with "quotes"', "back\\slash", "é ü 中文 😀",
           "tab\there", "del\x7f", None, ""]


def test_json_rows_write_what_the_json_module_writes() -> None:
    ints = [0, -1, 2**62, None, 7, 1, 2, 3]
    strings = [s for s in STRINGS if s is None or "\t" not in s] + ["x"]
    fields = [("path", pa.array(strings)), ("n", pa.array(ints, pa.int64())), ("kept", True),
              ("stage", None), ("reason", "no \"filter\""), ("delete_files", [])]
    expected = encode_compact([{"path": s, "n": n, "kept": True, "stage": None,
                                "reason": 'no "filter"', "delete_files": []}
                               for s, n in zip(strings, ints, strict=True)])[1:-1]
    assert explain_mod._json_rows(fields) == expected
    assert explain_mod._json_rows([("path", pa.array([], pa.string()))]) == ""
    # control characters are escaped by the json module in its own way: left to it
    assert explain_mod._json_rows([("path", pa.array(STRINGS))]) is None
    assert explain_mod._json_rows([("x", pa.array([1.5]))]) is None
    # a slice is read from its own bytes: the tab before or after it does not count
    whole = pa.array(["tab\there", 'a "q"', "back\\slash", "ok", "tab\tagain"])
    for lo, n in [(1, 3), (1, 2), (3, 1), (2, 0)]:
        part = whole.slice(lo, n)
        assert explain_mod._json_rows([("p", part)]) == \
            encode_compact([{"p": v} for v in part.to_pylist()])[1:-1]
    assert explain_mod._json_rows([("p", whole.slice(0, 2))]) is None
    assert explain_mod._json_rows([("p", whole.slice(3, 2))]) is None
    # string columns without nulls are joined unquoted, their quotes written around them
    bare = [s for s in strings if s is not None]
    fields = [("a", pa.array(bare)), ("b", pa.array(bare[::-1])), ("c", "x"),
              ("d", pa.array(bare))]
    assert explain_mod._json_rows(fields) == encode_compact(
        [{"a": a, "b": b, "c": "x", "d": a} for a, b in zip(bare, bare[::-1], strict=True)]
    )[1:-1]


def test_from_the_persistent_cache_a_full_plan_builds_no_entry(
        table: Any, snapshot: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path / "cache"))
    io = FileIO()
    expected = plan_files(io, table.metadata, snapshot_id=snapshot, explain=True, cache=None)
    expected_tasks = list(expected.tasks)  # decoded from the Avro, and stored
    stats.reset()
    plan = plan_files(io, table.metadata, snapshot_id=snapshot, explain=True, cache=None)
    assert stats.reads() == {stats.MANIFEST_LIST: 1, stats.MANIFEST_CACHE: 8}  # no manifest
    stored = [b.source for b in plan.tasks.blocks()]
    assert all(isinstance(s, StoredEntries) and not s.built for s in stored)
    assert plan.to_json() == expected.to_json()
    assert all(not s.built for s in stored)  # the document came from the Arrow columns
    assert list(plan.tasks) == expected_tasks
    assert _decisions(plan) == _decisions(expected)


def test_task_list_reads_like_a_list(table: Any, snapshot: int) -> None:
    plan = plan_files(FileIO(), table.metadata, snapshot_id=snapshot, cache=None)
    flat = list(plan.tasks)
    first, second, third = plan.tasks.blocks()[:3]
    tasks = TaskList(first)
    tasks.extend(second)
    n = len(first) + len(second)
    tasks.append(flat[n])
    tasks.extend(flat[n + 1:n + 3])
    tasks.extend(TaskBlock([], 0))  # an empty block adds nothing
    expected = flat[:n + 3]
    assert len(tasks) == len(expected) and tasks == expected and list(tasks) == expected
    assert [tasks[i] for i in range(len(expected))] == expected and tasks[-1] == expected[-1]
    assert tasks[1:-1:2] == expected[1:-1:2] and tasks[::-1] == expected[::-1]
    with pytest.raises(IndexError):
        tasks[len(expected)]
    with pytest.raises(IndexError):
        tasks[-len(expected) - 1]
    assert tasks != flat and TaskList() == [] and not TaskList()
    assert pickle.loads(pickle.dumps(tasks)) == expected
    assert pickle.loads(pickle.dumps(third)) == flat[n:n + len(third)]


def test_a_block_read_by_many_threads_at_once_is_built_once(table: Any, snapshot: int) -> None:
    """Blocks are shared (the in-memory manifest cache keeps them): threads reading one at
    the same time all get the same tasks, whichever of them built them."""
    import threading

    plan = plan_files(FileIO(), table.metadata, snapshot_id=snapshot, cache=None)
    expected = [list(b) for b in plan_files(FileIO(), table.metadata, snapshot_id=snapshot,
                                            cache=None).tasks.blocks()]
    for _ in range(20):
        plan = plan_files(FileIO(), table.metadata, snapshot_id=snapshot, cache=None)
        blocks = plan.tasks.blocks()
        got: list[list[Any]] = []
        start = threading.Barrier(4)

        def read() -> None:
            start.wait()
            got.append([t for b in blocks for t in b.tasks()] +
                       [tuple(b.column("file_path")) for b in blocks])

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        flat = [t for b in expected for t in b] + [tuple(t.file_path for t in b)
                                                   for b in expected]
        assert got == [flat] * 4
        assert all(b.built and b.source is None for b in blocks)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=30),
       st.integers(0, 30), st.integers(0, 30))
def test_what_json_must_escape_is_found_alike_in_c_and_in_python(
        values: list[str | None], lo: int, n: int) -> None:
    """floe._native.json_escapes (eight bytes at a time) and the re fallback agree with the
    json module on every slice of a string array."""
    column = pa.array(values, pa.string()).slice(min(lo, len(values)), n)
    shown = [v for v in column.to_pylist() if v is not None]
    want = 2 if any(ord(c) < 0x20 for v in shown for c in v) else \
        1 if any(c in '"\\' for v in shown for c in v) else 0
    ext = native.extension()
    assert ext is not None
    assert explain_mod._escapes(column) == want
    saved = avro_native._native
    avro_native._native = None  # the fallback
    try:
        assert explain_mod._escapes(column) == want
    finally:
        avro_native._native = saved
