"""A process compacting a file-system table, killed with SIGKILL at random points (planning,
reading, writing, committing), never breaks the table: it loads at the old or the new state,
every file a snapshot references exists, the rows are unchanged, and compacting again in the
parent finishes the job."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.scan.readers import plan_to_table
from floe.maintenance.compaction import compact
from floe.maintenance.compaction_plan import plan_compaction
from floe.manifest import read_manifest, read_manifest_list
from floe.partitioning import parse_partition_by
from floe.scan.planning import plan_files
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

TRIALS = 50
SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
OPTIONS = {"min-input-files": "2"}


def _rows(ids: Any) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "s": pa.array([f"p{i % 2}" for i in ids], pa.string())})


def keep_compacting(warehouse: str, seed: int, ready: Any) -> None:
    """Compact over and over (every file, every time), some runs with partial progress."""
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    rng = random.Random(seed)
    ready.set()
    while True:
        compact(table, {"rewrite-all": "true",
                        "partial-progress.enabled": rng.choice(["true", "false"]),
                        "partial-progress.max-commits": "2"})


def _bag(table: Any) -> Counter[tuple[Any, ...]]:
    md = table.refresh().metadata
    got = plan_to_table(table.io, plan_files(table.io, md, cache=None))
    return Counter(zip(got.column("id").to_pylist(), got.column("s").to_pylist(), strict=True))


class FileCheck:
    """Every file any snapshot references must exist; manifests are immutable, so each is
    read once and its files are checked again at every call."""

    def __init__(self) -> None:
        self.files_of: dict[str, list[str]] = {}

    def __call__(self, table: Any) -> None:
        md = table.refresh().metadata
        for snap in md.snapshots:
            assert os.path.exists(snap.manifest_list), snap.manifest_list
            if snap.manifest_list not in self.files_of:
                paths = []
                for m in read_manifest_list(table.io, snap.manifest_list):
                    paths.append(m.manifest_path)
                    paths += [e.data_file.file_path
                              for e in read_manifest(table.io, m, discard_deleted=True)]
                self.files_of[snap.manifest_list] = paths
            for path in self.files_of[snap.manifest_list]:
                assert os.path.exists(path), path
        assert len(list(md.ancestors_of(md.current_snapshot_id))) == len(md.snapshots)


@pytest.mark.slow
def test_sigkill_during_compaction_never_breaks_the_table(tmp_path: Any) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    table = catalog.create_table(
        "db.t", SCHEMA, spec=parse_partition_by("identity(s)", SCHEMA),
        properties={"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"})
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["floe.maintenance.compaction", "pyarrow"])
    rng = random.Random(4321)
    next_id = 0
    compactions_seen = 0
    check_files = FileCheck()
    for trial in range(TRIALS):
        # fresh small files and a merge-on-read delete, so there is always work to kill
        for _ in range(2):
            table.append(_rows(range(next_id, next_id + 6)))
            next_id += 6
        table.delete_where(f"id = {next_id - 3}", mode="merge-on-read")
        expected = _bag(table)
        location = table.metadata_location
        ready = ctx.Event()
        child = ctx.Process(target=keep_compacting, args=(warehouse, trial, ready))
        child.start()
        assert ready.wait(60)
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
        check_files(table)
        assert _bag(table) == expected
        if table.metadata_location != location:
            compactions_seen += 1
        # the parent finishes the job: afterwards nothing is left to compact
        compact(table, OPTIONS)
        assert plan_compaction(table, options=OPTIONS).groups == ()
        assert _bag(table) == expected
        check_files(table)
    assert compactions_seen >= 5  # the children did commit between kills
