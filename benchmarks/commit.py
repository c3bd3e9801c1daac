"""Commit throughput: appends per second for one writer, and throughput + retries with 2, 4
and 8 concurrent writer processes, on a local file-system table and (when it is available)
a SQLite SQL-catalog table. Prints a table. Target: >= 50 single-writer appends/s on the
local file system.

    python benchmarks/commit.py [--appends N] [--writers 1,2,4,8]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from floe.catalog.base import Catalog  # noqa: E402
from floe.catalog.filesystem import FileSystemCatalog  # noqa: E402
from floe.schema import Schema  # noqa: E402
from floe.types import LONG, NestedField  # noqa: E402

SCHEMA = Schema(NestedField(1, "writer", LONG, required=True), NestedField(2, "n", LONG))
PROPS = {"commit.retry.num-retries": "10000", "commit.retry.min-wait-ms": "1",
         "commit.retry.max-wait-ms": "50"}


def make_catalog(kind: str, root: str) -> Catalog:
    if kind == "fs":
        return FileSystemCatalog("bench", f"{root}/wh")
    from floe.catalog.sql import SqlCatalog

    return SqlCatalog("bench", f"sqlite:///{root}/catalog.db", f"{root}/wh")


def writer(kind: str, root: str, w: int, appends: int) -> tuple[int, float]:
    catalog = make_catalog(kind, root)
    table = catalog.load_table("db.t")
    retries = 0
    start = time.perf_counter()
    for n in range(appends):
        rows = pa.table({"writer": pa.array([w], pa.int64()), "n": pa.array([n], pa.int64())})
        txn = table.new_transaction().append(rows)
        txn.commit()
        retries += txn.attempts - 1
    elapsed = time.perf_counter() - start
    catalog.close()
    return retries, elapsed


def run(kind: str, writers: int, appends: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as root:
        catalog = make_catalog(kind, root)
        if kind != "fs":
            catalog.create_namespace("db")
        catalog.create_table("db.t", SCHEMA, properties=PROPS)
        start = time.perf_counter()
        if writers == 1:
            results = [writer(kind, root, 0, appends)]
        else:
            with mp.get_context("forkserver").Pool(writers) as pool:
                results = pool.starmap(writer, [(kind, root, w, appends) for w in range(writers)])
        wall = time.perf_counter() - start
        snapshots = len(catalog.load_table("db.t").snapshots())
        catalog.close()
    total = writers * appends
    assert snapshots == total, (snapshots, total)
    return {"catalog": kind, "writers": writers, "commits": total,
            "appends/s": total / wall, "retries": sum(r for r, _ in results),
            "retries/commit": sum(r for r, _ in results) / total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--appends", type=int, default=50, help="appends per writer")
    parser.add_argument("--writers", default="1,2,4,8")
    args = parser.parse_args()
    kinds = ["fs"]
    try:
        import floe.catalog.sql  # noqa: F401

        kinds.append("sql-sqlite")
    except ImportError:
        pass
    rows = []
    for kind in kinds:
        for n in (int(x) for x in args.writers.split(",")):
            try:
                rows.append(run(kind, n, args.appends))
            except Exception as e:  # a catalog that cannot run here is reported, not fatal
                print(f"{kind} x{n}: {type(e).__name__}: {e}", file=sys.stderr)
    header = f"{'catalog':<11} {'writers':>7} {'commits':>7} {'appends/s':>10} {'retries':>8} " \
             f"{'retries/commit':>14}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['catalog']:<11} {r['writers']:>7} {r['commits']:>7} {r['appends/s']:>10.1f} "
              f"{r['retries']:>8} {r['retries/commit']:>14.2f}")


if __name__ == "__main__":
    main()
