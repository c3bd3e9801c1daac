"""Writers in separate processes race on one file-system table: rollback vs append, delete vs
append into the same partition (serializable and snapshot isolation), evolve vs evolve,
cherry-pick twice. Each pair is run in both orders (forced with events) and once released
together: the loser gets a clear conflict, nothing committed is lost, and main's history
stays one chain of snapshots that all exist."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict
from floe.scan.readers import plan_to_table
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
PROPS = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "20",
         "commit.retry.num-retries": "20"}
CTX = mp.get_context("forkserver")


def rows(*ids: int, s: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [s] * len(ids)})


def stage(table: Table, action: str) -> Any:
    """The change, decided against the table as loaded; returns what commits it."""
    kind, _, arg = action.partition(":")
    if kind == "append":
        return table.new_transaction().append(rows(int(arg)))
    if kind == "rollback":
        first = list(table.metadata.ancestors_of(table.metadata.current_snapshot_id))[-1]
        return table.manage_snapshots().rollback_to(first.snapshot_id)
    if kind == "delete":  # "delete:serializable" / "delete:snapshot"
        # partly matches the file (1, 2): a copy-on-write rewrite, validated per isolation
        return table.new_transaction().delete_where("id = 2", isolation_level=arg)
    if kind == "evolve":
        return table.new_transaction().update_schema().add_column(arg, "long").commit()
    if kind == "cherry-pick":
        return table.manage_snapshots().cherry_pick(table.metadata.refs["dev"].snapshot_id)
    raise AssertionError(action)


def writer(warehouse: str, action: str, ready: Any, go: Any, out: Any) -> None:
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    pending = stage(table, action)
    ready.set()
    go.wait(60)
    try:
        pending.commit()
        out.put((action, "ok", ""))
    except CommitConflict as e:
        out.put((action, "conflict", str(e)))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which fails the test
        out.put((action, type(e).__name__, str(e)))


def race(warehouse: str, first: str, second: str, order: str) -> dict[str, tuple[str, str]]:
    """Run two writers; ``order``: "first" commits first, then "second", or "together"."""
    out = CTX.Queue()
    procs, gos = [], []
    for action in (first, second):
        ready, go = CTX.Event(), CTX.Event()
        p = CTX.Process(target=writer, args=(warehouse, action, ready, go, out))
        p.start()
        assert ready.wait(60), f"{action} did not get ready"
        procs.append(p)
        gos.append(go)
    results: dict[str, tuple[str, str]] = {}
    if order == "together":
        for go in gos:
            go.set()
        for _ in procs:
            action, status, msg = out.get(timeout=120)
            results[action] = (status, msg)
    else:
        for go in gos:
            go.set()
            action, status, msg = out.get(timeout=120)
            results[action] = (status, msg)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return results


def make(tmp_path: Path, spec: str | None = None) -> tuple[str, FileSystemCatalog]:
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    kw: dict[str, Any] = {"spec": parse_partition_by(spec, SCHEMA)} if spec else {}
    t = catalog.create_table("db.t", SCHEMA, properties=PROPS, **kw)
    t.append(rows(1, 2))
    t.append(rows(3))
    return warehouse, catalog


def ids(t: Table, **kw: Any) -> list[int]:
    return sorted(plan_to_table(t.io, plan_files(t.io, t.metadata, **kw)).column("id")
                  .to_pylist())


def one_chain(t: Table) -> None:
    """Every snapshot's parent exists, and main's ancestors lead back to the first one."""
    md = t.metadata
    for snap in md.snapshots:
        assert snap.parent_snapshot_id is None or md.snapshot_by_id(snap.parent_snapshot_id)
    chain = list(md.ancestors_of(md.current_snapshot_id))
    assert chain[-1].parent_snapshot_id is None


ORDERS = ["first", "second", "together"]


@pytest.mark.parametrize("order", ORDERS)
def test_rollback_vs_append(tmp_path: Path, order: str) -> None:
    warehouse, catalog = make(tmp_path)
    first, second = ("rollback", "append:9") if order != "second" else ("append:9", "rollback")
    got = race(warehouse, first, second, order)
    t = catalog.load_table("db.t")
    one_chain(t)
    if got["rollback"][0] == "ok":
        # the rollback landed first; the append rebased onto the rolled-back state
        assert got["append:9"][0] == "ok"
        assert ids(t) == [1, 2, 9]
    else:
        # the append landed first: the rollback was decided without it and is refused
        assert got["rollback"][0] == "conflict" and "ref 'main'" in got["rollback"][1]
        assert ids(t) == [1, 2, 3, 9]
    assert order != "first" or got["rollback"][0] == "ok"
    assert order != "second" or got["rollback"][0] == "conflict"


@pytest.mark.parametrize("level", ["serializable", "snapshot"])
@pytest.mark.parametrize("order", ORDERS)
def test_delete_vs_append_into_the_same_partition(tmp_path: Path, level: str,
                                                  order: str) -> None:
    warehouse, catalog = make(tmp_path, spec="s")
    delete, append = f"delete:{level}", "append:2"  # the append adds a row the delete matches
    first, second = (delete, append) if order != "second" else (append, delete)
    got = race(warehouse, first, second, order)
    t = catalog.load_table("db.t")
    one_chain(t)
    assert got[append][0] == "ok"  # an append never conflicts
    if got[delete][0] == "ok":
        # the delete removed the row it saw; a row appended after it started survives it
        assert ids(t) == [1, 2, 3]
    else:
        assert got[delete][0] == "conflict", got
        assert level == "serializable"
        assert "found conflicting files that can contain rows matching id = 2" in got[delete][1]
        assert ids(t) == [1, 2, 2, 3]  # nothing lost, nothing half-done
    if order == "second":  # the append landed while the delete was pending
        assert got[delete][0] == ("conflict" if level == "serializable" else "ok")
    if order == "first":
        assert got[delete][0] == "ok"


@pytest.mark.parametrize("order", ORDERS)
def test_evolve_vs_evolve(tmp_path: Path, order: str) -> None:
    warehouse, catalog = make(tmp_path)
    got = race(warehouse, "evolve:x", "evolve:y", order)
    statuses = sorted(status for status, _ in got.values())
    assert statuses == ["conflict", "ok"], got
    t = catalog.load_table("db.t")
    winner = next(a for a, (status, _) in got.items() if status == "ok").split(":")[1]
    assert [f.name for f in t.schema().fields] == ["id", "s", winner]
    assert any("current schema id changed" in msg for _, msg in got.values())


@pytest.mark.parametrize("order", ORDERS)
def test_cherry_pick_twice(tmp_path: Path, order: str) -> None:
    warehouse, catalog = make(tmp_path)
    t = catalog.load_table("db.t")
    t.manage_snapshots().create_branch("dev").commit()
    t.append(rows(50), branch="dev")
    t.append(rows(4))  # main moves on: the pick makes a new snapshot
    got = _pick_twice(warehouse, order)
    assert sorted(got) == ["conflict", "ok"], got
    t = catalog.load_table("db.t")
    one_chain(t)
    assert ids(t) == [1, 2, 3, 4, 50]  # applied exactly once


def _pick_twice(warehouse: str, order: str) -> list[str]:
    """Two processes cherry-pick the same snapshot (``race`` keys results by action, so the
    two are told apart by running them as separate races of one writer each)."""
    out = CTX.Queue()
    procs, gos = [], []
    for _ in range(2):
        ready, go = CTX.Event(), CTX.Event()
        p = CTX.Process(target=writer, args=(warehouse, "cherry-pick", ready, go, out))
        p.start()
        assert ready.wait(60)
        procs.append(p)
        gos.append(go)
    statuses = []
    if order == "together":
        for go in gos:
            go.set()
        statuses = [out.get(timeout=120)[1] for _ in procs]
    else:
        for go in gos:
            go.set()
            statuses.append(out.get(timeout=120)[1])
    for p in procs:
        p.join(60)
    return statuses
