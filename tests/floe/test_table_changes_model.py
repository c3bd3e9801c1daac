"""A hypothesis state machine applies random sequences of appends, deletes (copy-on-write and
merge-on-read), schema evolution, rollbacks, set-current, branch commits, fast-forwards,
cherry-picks and maintenance (compaction, manifest and position-delete rewrites, dangling
delete removal, snapshot expiry, orphan removal) to a small table, and after every step
compares what floe reads on ``main`` and on the branch with a plain Python model of the rows
(a multiset per snapshot) and checks that every file a kept snapshot references exists.

``TableChanges`` is also driven by tests/interop/test_table_changes_model.py, which has Spark +
Iceberg Java read a sample of the final tables.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from typing import Any, ClassVar

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from floe.catalog.filesystem import FileSystemCatalog
from floe.io import local_path
from floe.scan.readers import plan_to_table
from floe.maintenance.compaction import compact
from floe.maintenance.expire import expire_snapshots
from floe.maintenance.orphans import remove_orphan_files
from floe.reachable import reachable_files
from floe.maintenance.rewrite_deletes import remove_dangling_deletes, rewrite_position_deletes
from floe.maintenance.rewrite_manifests import rewrite_manifests
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.table import Table
from floe.table.manage_snapshots import is_ancestor
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
BRANCH = "dev"

# A row of the model: ((field id, value), ...) sorted by field id; a column a row lacks reads
# as null. Field ids are stable across renames, so renames need no change to the model.
Row = tuple[tuple[int, Any], ...]


def _value(row: Row, fid: int) -> Any:
    return dict(row).get(fid)


class TableChanges(RuleBasedStateMachine):
    """The table and its model. ``warehouse`` (a class attribute) may point the tables at a
    directory another test reads afterwards; ``finished`` collects (table, expected rows)."""

    warehouse: ClassVar[str | None] = None
    finished: ClassVar[list[tuple[str, int, dict[str, list[tuple[Any, ...]]]]]] = []
    counter: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        TableChanges.counter += 1
        self.root = TableChanges.warehouse or tempfile.mkdtemp(prefix="floe-model-")
        self.name = f"model_{TableChanges.counter}"
        self.catalog = FileSystemCatalog("model", self.root)
        self.table: Table
        self.states: dict[int | None, Counter[Row]] = {None: Counter()}
        self.next_id = 0
        self.extra: list[int] = []  # ids of added columns
        self.s_name = "s"

    # -- helpers ---------------------------------------------------------------------------

    def head(self, branch: str) -> int | None:
        ref = self.table.metadata.refs.get(branch)
        return ref.snapshot_id if ref is not None else None

    def state(self, branch: str) -> Counter[Row]:
        return self.states[self.head(branch)]

    def record(self, branch: str, rows: Counter[Row]) -> None:
        """The branch moved to a new snapshot holding ``rows``."""
        self.table.refresh()
        self.states[self.head(branch)] = rows

    def new_rows(self, n: int, s: str) -> tuple[pa.Table, list[Row]]:
        schema = self.table.schema()
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        cols: dict[str, Any] = {"id": pa.array(ids, pa.int64()), self.s_name: [s] * n}
        model = [[(1, i), (2, s)] for i in ids]
        for fid in self.extra:
            vals = [i * 10 if i % 2 else None for i in ids]
            cols[schema.find_column_name(fid) or ""] = pa.array(vals, pa.int64())
            for row, v in zip(model, vals, strict=True):
                row.append((fid, v))
        return pa.table(cols), [tuple(sorted(r)) for r in model]

    def read(self, branch: str) -> Counter[tuple[Any, ...]]:
        md = self.table.metadata
        if self.head(branch) is None:
            return Counter()
        got = plan_to_table(self.table.io, plan_files(self.table.io, md, ref=branch))
        return Counter(zip(*(got.column(f.name).to_pylist() for f in md.schema().fields),
                           strict=True))

    def expected(self, branch: str) -> Counter[tuple[Any, ...]]:
        fids = [f.field_id for f in self.table.schema().fields]
        return Counter({tuple(_value(r, f) for f in fids): n
                        for r, n in self.state(branch).items()})

    # -- rules -----------------------------------------------------------------------------

    @initialize(version=st.sampled_from([1, 2]), partitioned=st.booleans())
    def create(self, version: int, partitioned: bool) -> None:
        spec = parse_partition_by("s", SCHEMA) if partitioned else None
        kw: dict[str, Any] = {"spec": spec} if spec is not None else {}
        self.version = version
        self.table = self.catalog.create_table(
            f"db.{self.name}", SCHEMA, format_version=version,
            properties={"commit.manifest.min-count-to-merge": "3"}, **kw)

    @rule(branch=st.sampled_from(["main", BRANCH]), n=st.integers(1, 3),
          s=st.sampled_from(["a", "b"]))
    def append(self, branch: str, n: int, s: str) -> None:
        if branch == BRANCH and self.head(BRANCH) is None:
            branch = "main"
        data, rows = self.new_rows(n, s)
        before = self.state(branch)
        self.table.append(data, branch=branch)
        self.record(branch, before + Counter(rows))

    @rule(branch=st.sampled_from(["main", BRANCH]),
          mode=st.sampled_from(["copy-on-write", "merge-on-read"]),
          kind=st.sampled_from(["id", "s"]), k=st.integers(0, 12))
    def delete(self, branch: str, mode: str, kind: str, k: int) -> None:
        if self.head(branch) is None:
            return
        if self.version == 1:
            mode = "copy-on-write"
        if kind == "id":
            expr, hit = f"id < {k}", (lambda r: _value(r, 1) < k)
        else:
            s = "ab"[k % 2]
            expr, hit = f"{self.s_name} = '{s}'", (lambda r: _value(r, 2) == s)
        before = self.state(branch)
        self.table.delete_where(expr, mode=mode, branch=branch)
        self.record(branch, Counter({r: n for r, n in before.items() if not hit(r)}))

    @rule()
    def add_column(self) -> None:
        name = f"c{len(self.extra)}"
        self.table.update_schema().add_column(name, "long").commit()
        self.extra.append(self.table.schema().find_field_id(name))

    @rule()
    def rename(self) -> None:
        new = "s2" if self.s_name == "s" else "s"
        self.table.update_schema().rename_column(self.s_name, new).commit()
        self.s_name = new

    @precondition(lambda self: self.head("main") is not None)
    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        md = self.table.metadata
        ancestors = [s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id)]
        target = data.draw(st.sampled_from(ancestors))
        self.table.manage_snapshots().rollback_to(target).commit()
        self.table.refresh()
        assert self.head("main") == target

    @precondition(lambda self: len(self.table.metadata.snapshots) > 1)
    @rule(data=st.data())
    def set_current(self, data: st.DataObject) -> None:
        ids = [s.snapshot_id for s in self.table.metadata.snapshots]
        self.table.manage_snapshots().set_current(data.draw(st.sampled_from(ids))).commit()
        self.table.refresh()

    @precondition(lambda self: self.head("main") is not None)
    @rule()
    def create_or_replace_branch(self) -> None:
        builder = self.table.manage_snapshots()
        if self.head(BRANCH) is None:
            builder.create_branch(BRANCH)
        else:
            builder.replace_branch(BRANCH, self.head("main"))  # type: ignore[arg-type]
        builder.commit()
        self.table.refresh()

    @precondition(lambda self: self.head(BRANCH) is not None)
    @rule()
    def fast_forward_main(self) -> None:
        md = self.table.metadata
        dev, main = self.head(BRANCH), self.head("main")
        assert dev is not None and main is not None
        if dev == main or not is_ancestor(md, main, dev):
            return
        self.table.manage_snapshots().fast_forward("main", BRANCH).commit()
        self.table.refresh()
        assert self.head("main") == dev

    @precondition(lambda self: self.head(BRANCH) is not None)
    @rule()
    def cherry_pick_branch_head(self) -> None:
        md = self.table.metadata
        dev = self.table.snapshot_by_id(self.head(BRANCH))  # type: ignore[arg-type]
        main = self.head("main")
        assert dev is not None
        fast_forward = dev.parent_snapshot_id == main
        if str(dev.operation) != "append" and not fast_forward:
            return
        if is_ancestor(md, dev.snapshot_id) or any(
                s.summary.get("source-snapshot-id") == str(dev.snapshot_id)
                for s in md.ancestors_of(main)):  # type: ignore[arg-type]
            return
        added = self.states[dev.snapshot_id] - self.states[dev.parent_snapshot_id]
        before = self.state("main")
        self.table.manage_snapshots().cherry_pick(dev.snapshot_id).commit()
        self.record("main", self.states[dev.snapshot_id] if fast_forward else before + added)

    # -- maintenance: the rows stay, the files they need stay ---------------------------------

    def _same_rows(self, branch: str, run: Any) -> None:
        before = self.state(branch)
        run()
        self.record(branch, before)

    @precondition(lambda self: self.head("main") is not None)
    @rule(branch=st.sampled_from(["main", BRANCH]), sort=st.booleans())
    def compact(self, branch: str, sort: bool) -> None:
        if self.head(branch) is None:
            return
        self._same_rows(branch, lambda: compact(
            self.table, options={"rewrite-all": "true", "min-input-files": "1"},
            strategy="sort" if sort else None, sort_order="id desc" if sort else None,
            branch=branch))

    @precondition(lambda self: self.head("main") is not None)
    @rule(branch=st.sampled_from(["main", BRANCH]))
    def rewrite_manifests(self, branch: str) -> None:
        if self.head(branch) is not None:
            self._same_rows(branch, lambda: rewrite_manifests(self.table, branch=branch))

    @precondition(lambda self: self.version == 2 and self.head("main") is not None)
    @rule(branch=st.sampled_from(["main", BRANCH]), dangling=st.booleans())
    def rewrite_deletes(self, branch: str, dangling: bool) -> None:
        if self.head(branch) is None:
            return
        if dangling:
            self._same_rows(branch, lambda: remove_dangling_deletes(self.table, branch=branch))
        else:
            self._same_rows(branch, lambda: rewrite_position_deletes(
                self.table, options={"rewrite-all": "true"}, branch=branch))

    @precondition(lambda self: self.head("main") is not None)
    @rule(retain=st.integers(1, 3))
    def expire(self, retain: int) -> None:
        expire_snapshots(self.table, older_than_ms=int(time.time() * 1000),
                         retain_last=retain)
        self.table.refresh()

    @precondition(lambda self: self.head("main") is not None)
    @rule()
    def remove_orphans(self) -> None:
        # no other writer runs here, so files of any age may go; a planted one must
        junk = os.path.join(local_path(self.table.metadata.location), "data", "junk.parquet")
        os.makedirs(os.path.dirname(junk), exist_ok=True)
        with open(junk, "wb") as f:
            f.write(b"left by a failed job")
        os.utime(junk, (time.time() - 10, time.time() - 10))
        result = remove_orphan_files(self.table, older_than_ms=int(time.time() * 1000),
                                     force=True)
        assert [local_path(p) for p in result.orphan_files] == [junk]
        assert not os.path.exists(junk)

    # -- the invariants --------------------------------------------------------------------

    @invariant()
    def referenced_files_exist(self) -> None:
        if not hasattr(self, "table"):
            return
        t = self.table.refresh()
        reached = reachable_files(t.io, t.metadata, metadata_location=t.metadata_location)
        missing = [p for p in reached.content_files | reached.manifests
                   | reached.manifest_lists | {t.metadata_location}
                   if not os.path.exists(local_path(p))]
        assert not missing, missing

    @invariant()
    def reads_equal_the_model(self) -> None:
        if not hasattr(self, "table"):
            return
        for branch in ("main", BRANCH):
            if branch == "main" or self.head(branch) is not None:
                assert self.read(branch) == self.expected(branch), branch

    def teardown(self) -> None:
        if hasattr(self, "table"):
            fields = [f.name for f in self.table.schema().fields]
            expected = {b: sorted(self.expected(b).elements(), key=repr)
                        for b in ("main", BRANCH) if self.head(b) is not None}
            TableChanges.finished.append((self.name, len(fields), expected))


TestTableChanges = TableChanges.TestCase
TestTableChanges.settings = settings(
    max_examples=60, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
