"""Expire snapshots and orphan-file removal killed with SIGKILL at random points: the table
loads at the old or the new state, every file a remaining snapshot references exists, and
running the operation again finishes the job (every file it should delete is gone, no other
file is). Compaction trials live in their own file."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_expire import disk_files, reach, snapshot_files

from floe.catalog.filesystem import FileSystemCatalog
from floe.maintenance.expire import expire_snapshots
from floe.maintenance.orphans import remove_orphan_files
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

pytestmark = pytest.mark.slow

TRIALS = 50
SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
DAY = 86_400_000


def _expire_child(warehouse: str, older_than: int, die_after: int | None, ready: Any) -> None:
    """Expire; with ``die_after``, the process SIGKILLs itself once that many files of the
    cleanup are deleted (a crash inside the cleanup however fast the machine is)."""
    if die_after is not None:
        import threading

        import floe.reachable

        real, lock, done = floe.reachable.delete_file, threading.Lock(), [0]

        def delete_then_die(io: Any, path: str) -> None:
            real(io, path)
            with lock:
                done[0] += 1
                if done[0] >= die_after:
                    os.kill(os.getpid(), signal.SIGKILL)

        floe.reachable.delete_file = delete_then_die  # type: ignore[assignment]
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    ready.set()
    expire_snapshots(table, older_than_ms=older_than, retain_last=1)


def _orphans_child(warehouse: str, ready: Any) -> None:
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    ready.set()
    remove_orphan_files(table)


def _context() -> Any:
    ctx = mp.get_context("forkserver")
    # this module too: the children unpickle their target from it
    ctx.set_forkserver_preload(["floe.catalog.filesystem", "floe.maintenance.expire",
                                "floe.maintenance.orphans", "pyarrow", __name__])
    return ctx


def _run_child(ctx: Any, target: Any, args: tuple[Any, ...], delay: float | None) -> float:
    """Start ``target`` in a child; SIGKILL it ``delay`` seconds after it is ready (None:
    let it finish, or kill itself). Returns how long it ran after being ready."""
    ready = ctx.Event()
    child = ctx.Process(target=target, args=(*args, ready))
    child.start()
    assert ready.wait(60)
    t0 = time.monotonic()
    if delay is None:
        child.join()
        assert child.exitcode in (0, -signal.SIGKILL)
    else:
        time.sleep(delay)
        child.kill()  # SIGKILL (also fine when it already finished)
        child.join()
        assert child.exitcode in (0, -signal.SIGKILL)
    return time.monotonic() - t0


def _check_table(catalog: FileSystemCatalog) -> set[int]:
    """Loads; every file of every snapshot (and statistics file) exists."""
    t = catalog.load_table("db.t")
    for snap in t.metadata.snapshots:
        for path in snapshot_files(t, snap):
            assert os.path.exists(path), path
    return {s.snapshot_id for s in t.metadata.snapshots}


def _grow(t: Any, rng: random.Random, n: int) -> None:
    """A few appends, then a row-level delete of most rows (so that expiring leaves data,
    delete, manifest and manifest-list files to delete)."""
    for i in range(n):
        first = 1000 * (len(t.metadata.snapshots) + i)
        t.append(pa.table({"id": pa.array(range(first, first + 6), pa.int64()),
                           "s": [f"p{i}" for i in range(3)] * 2}))
    ids = sorted(_ids(t))
    t.delete_where(f"id < {ids[-4]}", mode=rng.choice(["merge-on-read", "copy-on-write"]))


def _ids(t: Any) -> list[int]:
    from floe.scan.readers import plan_to_table
    from floe.scan import plan_files

    return plan_to_table(t.io, plan_files(t.io, t.metadata)).column("id").to_pylist()


def test_sigkill_during_expire_snapshots(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    t = catalog.create_table("db.t", SCHEMA, spec=parse_partition_by("s", SCHEMA), properties={
        "commit.manifest.min-count-to-merge": "4",
        "write.metadata.previous-versions-max": "50",
    })
    ctx = _context()
    rng = random.Random(4321)
    outcomes: Counter[str] = Counter()
    runtime = 0.2
    for trial in range(TRIALS + 1):
        t = catalog.load_table("db.t")
        _grow(t, rng, rng.randint(2, 3))
        t.refresh()
        older_than = t.metadata.snapshots[-1].timestamp_ms
        before_reach = reach(t)
        before_disk = disk_files(t)
        plan = expire_snapshots(t, older_than_ms=older_than, retain_last=1, dry_run=True)
        assert plan.files()
        before_location = t.metadata_location
        # the first run is not killed: it measures how long a run takes. Then a kill at a
        # random time (on a busy machine most land before the commit), and every third
        # trial a crash after a random number of the cleanup's deletes
        die_after = rng.randint(1, len(plan.files()) - 1) \
            if trial % 3 == 0 and trial and len(plan.files()) > 1 else None
        took = _run_child(ctx, _expire_child, (warehouse, older_than, die_after),
                          None if trial == 0 or die_after else rng.uniform(0.0, 1.2 * runtime))
        runtime = took if trial == 0 else runtime
        remaining = _check_table(catalog)
        t = catalog.load_table("db.t")
        if t.metadata_location == before_location:
            assert remaining == set(before_reach) and trial > 0
            outcomes["before the commit"] += 1
        else:
            assert remaining == set(before_reach) - set(plan.expired_snapshot_ids)
            left = [p for p in plan.files() if os.path.exists(p)]
            outcomes["during the cleanup" if left else "finished"] += 1
        # running it again finishes the job, and deletes nothing else
        expire_snapshots(t, older_than_ms=older_than, retain_last=1)
        t.refresh()
        assert {s.snapshot_id for s in t.metadata.snapshots} == \
            set(before_reach) - set(plan.expired_snapshot_ids)
        assert not [p for p in plan.files() if os.path.exists(p)]
        new_metadata = {p for p in disk_files(t) - before_disk if p.endswith(".metadata.json")}
        assert disk_files(t) == (before_disk - set(plan.files())) | new_metadata
        _check_table(catalog)
    assert outcomes["before the commit"] >= 3 and outcomes["during the cleanup"] >= 3, outcomes


def test_sigkill_during_orphan_removal(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    t = catalog.create_table("db.t", SCHEMA, spec=parse_partition_by("s", SCHEMA))
    rng = random.Random(99)
    _grow(t, rng, 5)
    old = (time.time() * 1000 - 10 * DAY) / 1000
    for p in Path(t.location).rglob("*"):
        os.utime(p, (old, old))
    ctx = _context()
    outcomes: Counter[str] = Counter()
    runtime = 0.1
    for trial in range(TRIALS + 1):
        planted = set()
        for i in range(150):
            d = Path(t.location) / "data" / f"s=p{i % 3}" / ("deep/er" if i % 5 == 0 else "")
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"orphan-{trial}-{i}.parquet"
            path.write_bytes(b"x")
            os.utime(path, (old, old))
            planted.add(str(path))
        before_disk = disk_files(t)
        before_location = t.metadata_location
        took = _run_child(ctx, _orphans_child, (warehouse,),
                          None if trial == 0 else rng.uniform(0.0, runtime))
        runtime = took if trial == 0 else runtime
        _check_table(catalog)
        assert catalog.load_table("db.t").metadata_location == before_location
        left = {p for p in planted if os.path.exists(p)}
        outcomes["none deleted" if left == planted else "some deleted" if left else "all"] += 1
        assert disk_files(t) == before_disk - (planted - left)
        result = remove_orphan_files(catalog.load_table("db.t"))
        assert set(result.orphan_files) == left
        assert disk_files(t) == before_disk - planted
        _check_table(catalog)
    assert outcomes["none deleted"] >= 3 and outcomes["some deleted"] >= 3, outcomes
