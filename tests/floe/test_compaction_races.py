"""Compaction racing row-level deletes in separate processes (file-system catalog): a
merge-on-read delete and an equality delete on the partition being compacted, in both orders
forced with events, then free-running. A deleted row never comes back, the loser gets a clear
CommitConflict, and the history stays one chain."""

from __future__ import annotations

import multiprocessing as mp
import random
import time
import traceback
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict
from floe.scan.readers import plan_to_table
from floe.maintenance.compaction import compact
from floe.maintenance.compaction_plan import plan_compaction
from floe.partitioning import parse_partition_by
from floe.scan.planning import plan_files
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
PROPS = {"commit.retry.num-retries": "1000", "commit.retry.min-wait-ms": "1",
         "commit.retry.max-wait-ms": "20"}
IDS = range(60)
WAIT = 60


def _rows(ids: Any) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "s": pa.array([f"p{i % 2}" for i in ids], pa.string())})


def _make(warehouse: str) -> None:
    catalog = FileSystemCatalog("fs", warehouse)
    t = catalog.create_table("db.t", SCHEMA, spec=parse_partition_by("identity(s)", SCHEMA),
                             properties=PROPS)
    for k in range(6):
        t.append(_rows(range(k * 10, (k + 1) * 10)))


def _load(warehouse: str) -> Any:
    return FileSystemCatalog("fs", warehouse).load_table("db.t")


def _outcome(fn: Any) -> tuple[str, str]:
    try:
        fn()
        return "ok", ""
    except CommitConflict as e:
        return "CommitConflict", str(e)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which fails the test
        return type(e).__name__, traceback.format_exc()


# -- the two sides, as process targets ---------------------------------------------------------


def compactor(warehouse: str, options: dict[str, str], planned: Any, go: Any,
              out: Any) -> None:
    """Plan, tell the parent, wait, then execute the plan."""
    t = _load(warehouse)
    plan = plan_compaction(t, options=options)
    planned.set()
    if not go.wait(WAIT):
        out.put(("compactor", "timeout", ""))
        return
    out.put(("compactor", *_outcome(lambda: compact(t, plan))))


def deleter(warehouse: str, kind: str, staged: Any, go: Any, out: Any) -> None:
    """Stage the delete (plan it and write its files), tell the parent, wait, commit."""
    t = _load(warehouse)
    txn = t.new_transaction()
    if kind == "position":
        txn.delete_where("id = 3 OR id = 5", mode="merge-on-read")
    else:
        txn.delete_equal(["id"], pa.table({"id": pa.array([3, 5], pa.int64())}))
    staged.set()
    if not go.wait(WAIT):
        out.put(("deleter", "timeout", ""))
        return
    out.put(("deleter", *_outcome(txn.commit)))


def _ids(warehouse: str) -> list[int]:
    t = _load(warehouse)
    return sorted(plan_to_table(t.io, plan_files(t.io, t.metadata)).column("id").to_pylist())


def _one_chain(warehouse: str) -> None:
    md = _load(warehouse).metadata
    assert len(list(md.ancestors_of(md.current_snapshot_id))) == len(md.snapshots)


# Who wins, per (delete kind, order, use-starting-sequence-number): the loser's exception.
FORCED = [
    # the delete commits between the compaction's planning and its commit
    ("position", "delete first", "true", {"compactor": "CommitConflict", "deleter": "ok"}),
    ("equality", "delete first", "true", {"compactor": "ok", "deleter": "ok"}),
    ("equality", "delete first", "false", {"compactor": "CommitConflict", "deleter": "ok"}),
    # the compaction commits between the delete's planning and its commit
    ("position", "compaction first", "true", {"compactor": "ok", "deleter": "CommitConflict"}),
    ("equality", "compaction first", "true", {"compactor": "ok", "deleter": "ok"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "order", "starting", "expected"), FORCED,
                         ids=[f"{k}-{o}-seq{s}" for k, o, s, _ in FORCED])
def test_forced_orders(tmp_path: Any, kind: str, order: str, starting: str,
                       expected: dict[str, str]) -> None:
    warehouse = str(tmp_path / "wh")
    _make(warehouse)
    ctx = mp.get_context("forkserver")
    planned, staged = ctx.Event(), ctx.Event()
    go_compact, go_delete = ctx.Event(), ctx.Event()
    out = ctx.Queue()
    c = ctx.Process(target=compactor, args=(warehouse, {
        "use-starting-sequence-number": starting}, planned, go_compact, out))
    d = ctx.Process(target=deleter, args=(warehouse, kind, staged, go_delete, out))
    c.start()
    d.start()
    try:
        assert planned.wait(WAIT) and staged.wait(WAIT)
        results = {}
        first, second = ((go_delete, go_compact) if order == "delete first"
                         else (go_compact, go_delete))
        first.set()
        who, status, detail = out.get(timeout=WAIT)
        results[who] = (status, detail)
        second.set()
        who, status, detail = out.get(timeout=WAIT)
        results[who] = (status, detail)
    finally:
        c.join(WAIT)
        d.join(WAIT)
    assert {k: v[0] for k, v in results.items()} == expected, results
    ids = _ids(warehouse)
    deleted = expected["deleter"] == "ok"
    assert ids == [i for i in IDS if not (deleted and i in (3, 5))]
    for who, (status, detail) in results.items():
        if status == "CommitConflict":
            assert "\n" not in detail and (
                "cannot commit" in detail or "missing data file" in detail), detail
    _one_chain(warehouse)


# -- free-running ------------------------------------------------------------------------------


def keep_compacting(warehouse: str, stop: Any, out: Any) -> None:
    """Compact until told to stop, then once more with nothing racing it."""
    t = _load(warehouse)
    outcomes = []
    while not stop.is_set():
        outcomes.append(_outcome(lambda: compact(t, {"rewrite-all": "true"})))
    outcomes.append(_outcome(lambda: compact(t, {"rewrite-all": "true"})))
    out.put(("compactor", outcomes))


def keep_deleting(warehouse: str, seed: int, victims: list[int], out: Any) -> None:
    t = _load(warehouse)
    rng = random.Random(seed)
    done: list[tuple[int, str]] = []
    for i in victims:
        if rng.random() < 0.5:
            status = _outcome(lambda i=i: t.delete_where(f"id = {i}", mode="merge-on-read"))
        else:
            status = _outcome(lambda i=i: t.delete_equal(
                ["id"], pa.table({"id": pa.array([i], pa.int64())})))
        done.append((i, status[0]))
        time.sleep(rng.uniform(0, 0.15))
    out.put(("deleter", done))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_free_running_races_never_resurrect_a_row(tmp_path: Any, seed: int) -> None:
    warehouse = str(tmp_path / "wh")
    _make(warehouse)
    ctx = mp.get_context("forkserver")
    stop, out = ctx.Event(), ctx.Queue()
    victims = random.Random(seed).sample(list(IDS), 16)
    c = ctx.Process(target=keep_compacting, args=(warehouse, stop, out))
    d = ctx.Process(target=keep_deleting, args=(warehouse, seed, victims, out))
    c.start()
    d.start()
    results: dict[str, Any] = {}
    try:
        who, got = out.get(timeout=120)
        results[who] = got
        stop.set()
        who, got = out.get(timeout=120)
        results[who] = got
    finally:
        stop.set()
        c.join(WAIT)
        d.join(WAIT)
    deletes = results["deleter"]
    assert {s for _, s in deletes} <= {"ok", "CommitConflict"}, deletes
    compactions = results["compactor"]
    assert {s for s, _ in compactions} <= {"ok", "CommitConflict"}, compactions
    assert compactions[-1][0] == "ok"  # alone at last, it succeeds
    for status, detail in compactions:
        if status == "CommitConflict":
            assert "new delete for replaced data file" in detail or "not live" in detail, detail
    gone = {i for i, s in deletes if s == "ok"}
    assert _ids(warehouse) == [i for i in IDS if i not in gone]
    _one_chain(warehouse)
