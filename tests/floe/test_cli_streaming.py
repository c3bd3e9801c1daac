"""``floe plan --json`` and ``floe files --json`` stream their documents (issue: the command
line as fast as the library): the streamed document equals the library's, whatever the chunk
size, and only one chunk of manifests is decoded at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from floe import inspect
from floe.catalog.filesystem import FileSystemCatalog
from floe.io import FileIO
from floe.scan import planning
from floe.scan import explain as explain_module
from floe.scan.explain import write_plan_json
from floe.scan.planning import plan_files, stream_plan
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, False), NestedField(2, "cat", STRING, True))


@pytest.fixture(scope="module")
def table(deletes_table: Any) -> Any:
    """Eight appends over two specs, with position and equality deletes."""
    return deletes_table


def run(*args: str) -> str:
    got = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True,
                         text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    return got.stdout


def _normal(doc: Any) -> Any:
    return json.loads(json.dumps(doc, default=str))


@pytest.mark.parametrize("row_filter", [None, "id > 15", "cat = 'c1' AND id < 40",
                                        "id = 1000"])
def test_plan_json_process_equals_library(table: Any, row_filter: str | None) -> None:
    args = ["plan", table.metadata_location, "--json"]
    if row_filter:
        args += ["--filter", row_filter]
    streamed = json.loads(run(*args))
    expected = plan_files(FileIO(), table.metadata, row_filter=row_filter, explain=True,
                          cache=None).to_json()
    assert streamed == _normal(expected)
    assert streamed["funnel"]["tasks"] == len(streamed["tasks"])


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_stream_equals_plan_for_any_chunk(table: Any, chunk: int, tmp_path: Path) -> None:
    for explain in (False, True):
        stream = stream_plan(FileIO(), table.metadata, row_filter="id >= 5",
                             explain=explain, chunk_entries=chunk)
        out = tmp_path / f"plan-{explain}.json"
        with open(out, "w") as f:
            write_plan_json(stream, f)
        expected = plan_files(FileIO(), table.metadata, row_filter="id >= 5",
                              explain=explain, cache=None).to_json()
        assert json.loads(out.read_text()) == _normal(expected)


@pytest.mark.parametrize("limit", ["0", "1", "first", "default"])
def test_explanations_spooled_past_the_limit_write_the_same(
        table: Any, limit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Explanations held in memory or moved to a temporary file part way (``limit``:
    characters held; "first": what the first manifests' explanations take; "default": all in
    memory here) give the same document."""
    files: list[Any] = []
    sizes: list[int] = []
    real_add = explain_module._Spool.add

    def add(self: Any, texts: list[str]) -> None:
        real_add(self, texts)
        files.append(self.file)
        sizes.append(self.chars)

    monkeypatch.setattr(explain_module._Spool, "add", add)

    def write() -> Path:
        stream = stream_plan(FileIO(), table.metadata, row_filter="id >= 5", explain=True,
                             chunk_entries=7)
        out = tmp_path / "plan.json"
        with open(out, "w") as f:
            write_plan_json(stream, f)
        return out

    if limit == "first":
        write()
        monkeypatch.setattr(explain_module, "SPOOL_CHARS", sizes[0])
    elif limit != "default":
        monkeypatch.setattr(explain_module, "SPOOL_CHARS", int(limit))
    files.clear()
    out = write()
    expected = plan_files(FileIO(), table.metadata, row_filter="id >= 5", explain=True,
                          cache=None).to_json()
    assert json.loads(out.read_text()) == _normal(expected)
    assert len(files) > 2
    if limit == "default":
        assert all(f is None for f in files)
    elif limit == "first":  # the first texts in memory, the rest in the file
        assert files[0] is None and files[-1] is not None and files[-1].closed
    else:
        assert all(f is not None for f in files)


def test_stream_decodes_one_chunk_at_a_time(table: Any, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    sizes: list[int] = []
    real = planning.read_live_entries

    def spy(io: Any, manifests: Any, *a: Any, **kw: Any) -> Any:
        sizes.append(sum((m.added_files_count or 0) + (m.existing_files_count or 0)
                         for m in manifests))
        return real(io, manifests, *a, **kw)

    monkeypatch.setattr(planning, "read_live_entries", spy)
    stream = stream_plan(FileIO(), table.metadata, explain=True, chunk_entries=6)
    tasks = sum(len(t) for _, t in stream)
    data_sizes = sizes[1:] if len(sizes) > 1 else sizes  # the first read: delete manifests
    assert tasks == stream.plan.funnel.tasks > 0
    assert len(data_sizes) > 1 and max(data_sizes) < 6 + 10  # one manifest past the bound
    assert stream.plan.tasks == []


def test_plan_text_streams_the_same_decisions(table: Any) -> None:
    text = run("plan", table.metadata_location, "--filter", "id > 15")
    doc = plan_files(FileIO(), table.metadata, row_filter="id > 15", explain=True).to_json()
    lines = text.splitlines()
    assert lines[0].startswith(f"snapshot      {doc['snapshot_id']}")
    f = doc["funnel"]
    assert f"data files    {f['data_files_total']} -> {f['data_files_after_partition']} " \
           f"(partition) -> {f['data_files_after_metrics']} (metrics)" in lines
    kept = [ln for ln in lines if ln.startswith("  keep ")]
    assert len(kept) == sum(1 for m in doc["manifests"] for x in m["files"] if x["kept"])


@pytest.mark.parametrize("row_filter", [None, "cat = 'c2'"])
def test_files_json_process_equals_library(table: Any, row_filter: str | None) -> None:
    args = ["files", table.metadata_location, "--json"]
    if row_filter:
        args += ["--filter", row_filter]
    streamed = json.loads(run(*args))
    rows = inspect.file_rows(FileIO(), table.metadata, table.current_snapshot())
    if row_filter:
        plan = plan_files(FileIO(), table.metadata, row_filter=row_filter)
        wanted = {p for t in plan.tasks for p in (t.file_path, *(d.path for d in t.delete_files))}
        rows = [r for r in rows if r["file_path"] in wanted]
    assert streamed == _normal(rows) and streamed


def test_empty_table_plan_and_files(tmp_path: Path) -> None:
    cat = FileSystemCatalog("c", str(tmp_path / "wh"))
    t = cat.create_table("db.empty", SCHEMA)
    doc = json.loads(run("plan", t.metadata_location, "--json"))
    assert doc["tasks"] == [] and doc["manifests"] == [] and doc["snapshot_id"] is None
    assert json.loads(run("files", t.metadata_location, "--json")) == []


def test_decisions_without_files_are_written_as_the_encoder_writes_them() -> None:
    """A manifest with no file decided is written field by field, its repeated texts encoded
    once: the same text as the json module's, escapes and all."""
    from floe.scan.explain import ManifestDecision, _decision_text, encode_compact

    decisions = [
        ManifestDecision('s3://b/a"b\\c\u00e9\n\x01.avro', "data", 0, False,
                         "partition-summary", "pruned: s = 'é' \"q\"\t\u2028"),
        ManifestDecision("m.avro", "deletes", 3, True, None, "kept"),
        ManifestDecision("m2.avro", "data", 12, False, "manifest-content",
                         "no added or existing files"),
    ]
    strings: dict[str, str] = {}
    for d in decisions * 2:
        assert _decision_text(d, strings) == encode_compact(d.to_json())
    assert "partition-summary" in strings and "m.avro" not in strings  # paths not kept


@pytest.fixture(scope="module")
def path_deletes_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tests.factories.write_path_deletes_table's table."""
    from tests.factories import write_path_deletes_table

    return write_path_deletes_table(tmp_path_factory.mktemp("wh") / "t")


@pytest.mark.parametrize("row_filter", [None, "id > 15", "id < 500", "cat = 'c0' AND id < 1250"])
def test_deletes_naming_their_file_are_found_by_path_as_one_by_one(
        path_deletes_table: Any, row_filter: str | None, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """Whole manifests kept with deletes that name their data files: tasks and explanations
    (written from the columns by the process, built by the library) are the ones the
    file-by-file path gives. The decisions on the files of the larger delete manifests are
    written from their columns too (DecidedDeletes), and their deletes that name a data file
    built only when a plan looks that file up."""
    from floe.scan.delete_index import DeleteFileIndex
    from floe.scan.explain import DecidedDeletes

    md, location = path_deletes_table
    args = ["plan", location, "--json"] + (["--filter", row_filter] if row_filter else [])
    streamed = json.loads(run(*args))
    fast = plan_files(FileIO(), md, row_filter=row_filter, explain=True, cache=None)
    with_deletes = [b for b in fast.tasks.blocks()
                    if isinstance(b, planning.TaskBlock) and b.deletes]
    assert bool(with_deletes) is (row_filter is None)  # whole manifests kept: no filter
    assert fast.explain is not None
    columnar = [Path(m.path).name for m in fast.explain.manifests
                if isinstance(m.files, DecidedDeletes)]
    assert columnar == ["d0.avro", "d2.avro"]
    monkeypatch.setattr(DeleteFileIndex, "by_path_only", property(lambda self: False))
    monkeypatch.setattr(planning, "BULK_MIN_FILES", 1 << 30)  # every file one by one
    slow = plan_files(FileIO(), md, row_filter=row_filter, explain=True, cache=None)
    assert not [b for b in slow.tasks.blocks() if isinstance(b, planning.TaskBlock)]
    assert streamed == _normal(fast.to_json()) == _normal(slow.to_json())
    got = [(x.file_path, [d.path for d in x.delete_files]) for x in fast.tasks]
    assert got == [(x.file_path, [d.path for d in x.delete_files]) for x in slow.tasks]
    deleted = {Path(p).name: [Path(d).name for d in ds] for p, ds in got if ds}
    keeps = {None: lambda n: True, "id > 15": lambda n: n * 10 + 9 > 15,
             "id < 500": lambda n: n * 10 < 500,
             "cat = 'c0' AND id < 1250": lambda n: n % 2 == 0 and n * 10 < 1250}[row_filter]
    expected = {f"f{n:04d}.parquet": [f"d{n:04d}.parquet", f"e{n:04d}.parquet"]
                for n in range(0, 120, 3) if keeps(n)}
    if keeps(120):
        expected["f0120.parquet"] = ["e0120.parquet"]
    assert deleted == expected
    assert streamed["funnel"]["delete_files_matched"] == sum(map(len, expected.values()))
    pruned = [Path(f["path"]).name for m in streamed["manifests"] for f in m["files"]
              if f["content"] == "position_deletes" and not f["kept"]]
    assert all(f["stage"] == "partition" for m in streamed["manifests"] for f in m["files"]
               if f["content"] == "position_deletes" and not f["kept"])
    assert pruned == ([] if "cat" not in (row_filter or "") else
                      [f"{x}{n:04d}.parquet" for x, ns in (("d", (123, *range(0, 120, 3))),
                                                           ("e", (*range(0, 120, 3), 120)))
                       for n in ns if n % 2])
    if row_filter is None:
        reasons = [d["reason"] for m in streamed["manifests"] for f in m["files"]
                   for d in f.get("delete_files", [])]
        assert reasons == ["names this data file, delete sequence number 2 >= 1",
                           "names this data file, delete sequence number 3 >= 1"] * 40 + [
            "names this data file, delete sequence number 3 >= 3",
            "delete sequence number 2 < data sequence number 3"]


@pytest.mark.parametrize("row_filter", ["cat = 'c0' AND id < 50", "id = 1200"])
def test_deletes_that_name_their_file_are_built_when_looked_up(
        path_deletes_table: Any, row_filter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan that keeps a few data files builds the deletes of its large delete manifests
    that name those files, not the others: f0000's two, or f0120's one."""
    from floe.scan.manifest_store import StoredEntries

    md, _ = path_deletes_table
    built: list[str] = []
    take = StoredEntries.take

    def spied(self: StoredEntries, rows: Any) -> Any:
        got = take(self, rows)
        built.extend(Path(e.data_file.file_path).name for e in got
                     if e.data_file.content != 0)
        return got

    monkeypatch.setattr(StoredEntries, "take", spied)
    plan = plan_files(FileIO(), md, row_filter=row_filter, explain=True, cache=None)
    want = ["d0000.parquet", "e0000.parquet"] if "cat" in row_filter else ["e0120.parquet"]
    assert sorted(built) == want
    assert [Path(d.path).name for t in plan.tasks for d in t.delete_files] == want
