"""Compaction: floe's local engine vs Spark + Iceberg Java ``rewrite_data_files``.

A v2 table of ``--files`` small data files of ``--rows`` rows each (default 2,000 x 5,000 =
10M rows: id, cat, v, ts) is built twice with identical contents under ``--dir``. floe
compacts one copy in a fresh process, like ``floe compact TABLE`` would (the table shows the
compaction itself: load, plan, read, write, commit; and the whole process); Spark 3.5 +
Iceberg 1.10 (``local[2]``, started the way ``tests/interop/oracle_client.py`` starts it with
the oracle's python: ``--oracle-python``, default what ``../shared/tools/iceberg-oracle/setup``
prints) runs ``CALL system.rewrite_data_files`` on the other in a warm session. Both use the
default options (target ``write.target-file-size-bytes``, 512 MB), so every file is rewritten.

Reported side by side: seconds, table rows per second, peak memory (floe: the peak RSS of
its process; Spark: the peak RSS of the JVM while the call runs, sampled every 50 ms, and
the JVM's high-water mark over the whole session), files before and after. Spark then counts
both copies: they must hold the same rows.

Usage: ``python benchmarks/maintenance_compaction.py [--files 2000] [--rows 5000]
[--no-spark]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ORACLE_DIR = HERE.parent.parent / "shared" / "tools" / "iceberg-oracle"


def _schema() -> Any:
    from floe.schema import Schema
    from floe.types import DOUBLE, LONG, STRING, TIMESTAMP, NestedField

    return Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                  NestedField(3, "v", DOUBLE), NestedField(4, "ts", TIMESTAMP))


def _rows(start: int, n: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(range(start, start + n), pa.int64())
    hashed = pc.bit_wise_and(pc.multiply(ids, 2654435761), 0xFFFFFFFF)
    return pa.table({
        "id": ids,
        "cat": pc.cast(pc.bit_wise_and(ids, 7), pa.string()),
        "v": pc.divide(pc.cast(hashed, pa.float64()), float(2 ** 32)),
        "ts": pc.cast(pc.multiply(ids, 1_000_000), pa.timestamp("us")),
    })


def build(warehouse: Path, name: str, files: int, rows: int) -> float:
    """One copy: ``files`` small files appended in one snapshot; seconds taken."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.table.writer import write_data_files

    t0 = time.perf_counter()
    table = FileSystemCatalog("bench", str(warehouse)).create_table(f"db.{name}", _schema())
    written = []
    for k in range(files):
        written += write_data_files(table.io, table.metadata, _rows(k * rows, rows), task_id=k)
    table.new_transaction().fast_append(written).commit()
    return time.perf_counter() - t0


def child(warehouse: str, name: str) -> None:
    """The CLI equivalent: load the table, compact it; print seconds and peak memory."""
    t0 = time.perf_counter()
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.maintenance.compaction import compact

    imported = time.perf_counter()
    table = FileSystemCatalog("bench", warehouse).load_table(f"db.{name}")
    result = compact(table)
    done = time.perf_counter()
    print(json.dumps({
        "seconds": done - imported, "imports": imported - t0,
        "rewritten": result.rewritten_data_files_count,
        "added": result.added_data_files_count,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _oracle_python(given: str | None) -> str | None:
    if given:
        return given
    setup = ORACLE_DIR / "setup"
    if not setup.exists():
        return None
    run = subprocess.run([str(setup)], capture_output=True, text=True, check=False)
    return run.stdout.strip().splitlines()[-1] if run.returncode == 0 else None


def _floe(warehouse: Path, name: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, __file__, "--child", str(warehouse), name],
                         capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"floe compaction failed: {run.stderr.strip()[-2000:]}")
    got: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    got["process"] = wall
    return got


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as fh:
                kids = [int(k) for k in fh.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def spark_call(client: Any, sql: str) -> tuple[list[dict[str, Any]], float, float]:
    """Run ``sql`` in the oracle's Spark: (rows, seconds, peak RSS MB of the JVM meanwhile)."""
    jvm = _jvm(client)
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            if jvm is not None:
                peak[0] = max(peak[0], _status_kb(jvm, "VmRSS"))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    rows = client.sql(sql)
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    return rows, seconds, peak[0] / 1024


def _jvm(client: Any) -> int | None:
    """The pid of the JVM under the oracle server (the process with the largest RSS)."""
    pids = _descendants(client.proc.pid)
    return max(pids, key=lambda p: _status_kb(p, "VmRSS"), default=None)


def _spark(warehouse: Path, name: str, python: str) -> tuple[dict[str, Any], Any]:
    sys.path.insert(0, str(HERE.parent / "tests" / "interop"))
    from oracle_client import OracleClient

    client = OracleClient(python, ORACLE_DIR, warehouse, warehouse / "oracle.log")
    client.sql(f"SELECT count(*) AS n FROM oracle.db.{name}")  # warm: not timed
    jvm = _jvm(client)
    (row,), seconds, peak_mb = spark_call(client,
                                          f"CALL oracle.system.rewrite_data_files(table => "
                                          f"'db.{name}')")
    return {"seconds": seconds, "rewritten": row["rewritten_data_files_count"],
            "added": row["added_data_files_count"], "peak_mb": peak_mb,
            "session_peak_mb": (_status_kb(jvm, "VmHWM") / 1024) if jvm else 0.0}, client


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=5000, help="rows per data file")
    ap.add_argument("--dir", default=str(HERE / ".cache" / "compaction"))
    ap.add_argument("--oracle-python")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("WAREHOUSE", "TABLE"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("*\n")
    warehouse = root / "wh"
    total = args.files * args.rows
    python = None if args.no_spark else _oracle_python(args.oracle_python)
    names = {"floe": "cmp_floe", **({"spark": "cmp_spark"} if python else {})}
    for name in names.values():
        secs = build(warehouse, name, args.files, args.rows)
        print(f"built {name}: {args.files} files, {total:,} rows in {secs:.1f} s", flush=True)
    results = {"floe": _floe(warehouse, names["floe"])}
    client = None
    if python:
        results["spark"], client = _spark(warehouse, names["spark"], python)
    print(f"\nrewrite_data_files on {args.files:,} files x {args.rows:,} rows = {total:,} rows "
          f"(v2, default options; {os.cpu_count()} cores)")
    print(f"{'engine':<7} {'seconds':>8} {'rows/s':>12} {'peak MB':>8} {'files':>12} "
          f"{'process s':>10}")
    for engine, r in results.items():
        process = f"{r['process']:>10.2f}" if "process" in r else f"{'':>10}"
        print(f"{engine:<7} {r['seconds']:>8.2f} {total / r['seconds']:>12,.0f} "
              f"{r['peak_mb']:>8.0f} {r['rewritten']:>5} -> {r['added']:<4} {process}")
    if "spark" in results:
        print(f"(Spark's JVM high-water mark over the session: "
              f"{results['spark']['session_peak_mb']:.0f} MB)")
    if client is not None:
        counts = client.sql([f"SELECT count(*) AS n FROM oracle.db.{n}" for n in names.values()],
                            all=True)
        client.close()
        left = {name: c[0]["n"] for name, c in zip(names.values(), counts, strict=True)}
        print(f"rows after (Spark counts): {left}")
        if set(left.values()) != {total}:
            raise SystemExit("the copies do not hold the rows they had")


if __name__ == "__main__":
    main()
