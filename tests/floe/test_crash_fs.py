"""Issue 3 acceptance: a writer killed with SIGKILL at random points of its commits leaves a
file-system table that loads at the old or the new state, never a broken one, and no
snapshot references a missing file."""

import multiprocessing as mp
import os
import random
import signal
import time

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.manifest import read_manifest, read_manifest_list
from floe.schema import Schema
from floe.types import LONG, NestedField

TRIALS = 60
SCHEMA = Schema(NestedField(1, "id", LONG, required=True))


def keep_committing(warehouse: str, seed: int, ready, committed) -> None:
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    ready.set()
    n = seed * 1_000_000
    while True:
        n += 1
        if n % 7 == 0 and table.current_snapshot() is not None:
            live = _live_files(table)
            table.new_transaction().delete_files(live[:1]).commit()  # overwrite-style rewrites
        else:
            table.append(pa.table({"id": pa.array([n], pa.int64())}))
        committed.set()


def _live_files(table):
    snap = table.current_snapshot()
    out = []
    for m in read_manifest_list(table.io, snap.manifest_list):
        out += [e.data_file.file_path for e in read_manifest(table.io, m, discard_deleted=True)]
    return out


def check_table(catalog):
    table = catalog.load_table("db.t")
    md = table.metadata
    for snap in md.snapshots:
        assert os.path.exists(snap.manifest_list), snap.manifest_list
        for m in read_manifest_list(table.io, snap.manifest_list):
            assert os.path.exists(m.manifest_path), m.manifest_path
            for e in read_manifest(table.io, m, discard_deleted=True):
                assert os.path.exists(e.data_file.file_path), e.data_file.file_path
    if md.current_snapshot_id is not None:
        assert len(list(md.ancestors_of(md.current_snapshot_id))) == len(md.snapshots)
    return len(md.snapshots)


@pytest.mark.slow
def test_sigkill_during_commits_never_breaks_the_table(tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    catalog.create_table("db.t", SCHEMA, properties={
        "commit.manifest.min-count-to-merge": "5",
        "write.metadata.previous-versions-max": "3",
        "write.metadata.delete-after-commit.enabled": "true",
    })
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["floe.catalog.filesystem", "floe.table.transaction", "pyarrow"])
    rng = random.Random(1234)
    seen = 0
    for trial in range(TRIALS):
        ready, committed = ctx.Event(), ctx.Event()
        child = ctx.Process(target=keep_committing, args=(warehouse, trial, ready, committed))
        child.start()
        assert ready.wait(60)
        # its first commit done (a fresh process's first is slow on a busy machine), then a
        # kill at a random point: a commit takes ~10 ms, so kills land anywhere in one
        assert committed.wait(60)
        time.sleep(rng.uniform(0.0, 0.2))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
        count = check_table(catalog)
        assert count >= seen  # never goes back
        seen = count
    assert seen >= 10  # the children did commit between kills
