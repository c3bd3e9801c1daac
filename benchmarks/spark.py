"""floe on Spark vs Spark + Iceberg Java, side by side on one machine (both ``local[2]``).

* **write**: ``--rows`` generated rows (id, cat, v, ts; Spark's ``range`` in 2 partitions)
  written into an empty table: PySpark 4 through the floe source (``df.write.format("floe")``)
  vs Spark 3.5 + Iceberg 1.10 ``INSERT INTO ... SELECT`` from the same expressions.
* **read**: each engine reads the table it wrote, all columns (``count(*)``, ``sum(id)``,
  ``sum(v)``, ``max(cat)``, ``max(ts)``: the Python source cannot prune columns, so Java
  reads every column too).
* **compact**: ``--files`` files of ``--rows / --files`` rows, built twice by floe;
  ``floe.spark.compaction.compact`` (floe plans and commits, Spark rewrites) vs
  ``CALL system.rewrite_data_files`` (default options: every file rewritten).

Reported: seconds, rows per second, floe / Java, and the peak memory of each engine's process
tree while the step runs (sampled every 50 ms: the PySpark JVM with its Python workers; the
oracle's JVM). For floe's reads and writes the JVM ↔ Python share is estimated by timing
floe alone on the same data in this process (``read_plan`` of the same plan; the task writer
on the same rows): the rest of the Spark time is moving Arrow batches between the JVM and
the Python workers (and Spark's own overhead).

Usage: ``python benchmarks/spark.py [--rows 10000000] [--files 2000] [--steps
write,read,compact] [--no-java] [--oracle-python PY]``; ``--rows 200000 --files 40`` runs in
about a minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "interop"))
ORACLE_DIR = HERE.parent.parent / "shared" / "tools" / "iceberg-oracle"

GENERATED = ("id", "CAST(id % 8 AS STRING) AS cat",
             "CAST((id * 2654435761) % 4294967296 AS DOUBLE) / 4294967296.0 AS v",
             "CAST(timestamp_seconds(id) AS TIMESTAMP_NTZ) AS ts")
AGGREGATE = ("count(*) AS n", "sum(id) AS ids", "sum(v) AS vs", "max(cat) AS cat",
             "max(ts) AS ts")


# -- memory --------------------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    from maintenance_compaction import _descendants as descendants

    return descendants(pid)


def _rss_kb(pid: int) -> int:
    from maintenance_compaction import _status_kb

    return _status_kb(pid, "VmRSS")


class Peak:
    """The peak summed RSS of a process tree while the block runs (MB)."""

    def __init__(self, root: int, include_root: bool = True,
                 exclude: Callable[[], set[int]] | None = None) -> None:
        self.root = root
        self.include_root = include_root
        self.exclude = exclude
        self.mb = 0.0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.is_set():
            skip = self.exclude() if self.exclude else set()
            pids = [p for p in _descendants(self.root) if p not in skip]
            if self.include_root:
                pids.append(self.root)
            self.mb = max(self.mb, sum(_rss_kb(p) for p in pids) / 1024)
            time.sleep(0.05)

    def __enter__(self) -> Peak:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# -- the engines ---------------------------------------------------------------------------------


def _schema() -> Any:
    from maintenance_compaction import _schema as schema

    return schema()


class Floe:
    def __init__(self, warehouse: Path, oracle_pids: Callable[[], set[int]]) -> None:
        from floe.catalog.filesystem import FileSystemCatalog
        from floe.spark import session

        self.catalog = FileSystemCatalog("bench", str(warehouse))
        self.spark = session("local[2]", app_name="floe-bench",
                             config={"spark.driver.memory": "2g",
                                     "spark.sql.shuffle.partitions": "2"})
        self.spark.range(10).count()  # warm the JVM
        self.exclude = oracle_pids

    def peak(self) -> Peak:
        return Peak(os.getpid(), exclude=self.exclude)

    def write(self, name: str, rows: int) -> dict[str, Any]:
        from floe.spark import write

        table = self.catalog.create_table(f"db.{name}", _schema())
        df = self.spark.range(0, rows, 1, 2).selectExpr(*GENERATED)
        write(df.limit(10), table.location)  # warm the Python workers: not timed
        table.catalog.drop_table(table.identifier, purge=True)
        table = self.catalog.create_table(f"db.{name}", _schema())
        with self.peak() as peak:
            t0 = time.perf_counter()
            write(df, table.location)
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb, "location": table.location,
                "alone": _floe_write_alone(table.location, rows)}

    def read(self, location: str) -> dict[str, Any]:
        from floe.spark import read

        read(self.spark, location).limit(1).collect()  # warm
        with self.peak() as peak:
            t0 = time.perf_counter()
            row = read(self.spark, location).selectExpr(*AGGREGATE).collect()[0]
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb, "n": row["n"],
                "alone": _floe_read_alone(location)}

    def compact(self, location: str) -> dict[str, Any]:
        from floe.catalog.filesystem import directory_table
        from floe.spark.compaction import compact

        table = directory_table(location)
        with self.peak() as peak:
            t0 = time.perf_counter()
            result = compact(table, spark=self.spark)
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb,
                "files": f"{result.rewritten_data_files_count} -> "
                         f"{result.added_data_files_count}"}


def _floe_read_alone(location: str) -> float:
    """floe's own read of the table in this process (no Spark), all columns."""
    from floe.catalog.filesystem import directory_table
    from floe.scan.readers import read_plan
    from floe.scan.planning import plan_files

    table = directory_table(location)
    t0 = time.perf_counter()
    for _ in read_plan(table.io, plan_files(table.io, table.metadata), threads=1):
        pass
    return time.perf_counter() - t0


def _floe_write_alone(location: str, rows: int) -> float:
    """floe's task writer on the same rows in this process (no Spark), half of them per
    writer as the two Spark tasks write them; the files go to a scratch table."""
    import uuid
    from dataclasses import replace

    from floe.catalog.filesystem import directory_table
    from floe.spark.writer import TaskWriter
    from maintenance_compaction import _rows

    table = directory_table(location)
    scratch = Path(location).parent / f"scratch-{uuid.uuid4().hex[:8]}"
    md = replace(table.metadata, location=str(scratch))
    batches = [_rows(k, min(131_072, rows - k)) for k in range(0, rows, 131_072)]
    half = max(1, len(batches) // 2)
    t0 = time.perf_counter()
    for part in (batches[:half], batches[half:]):
        writer = TaskWriter(table.io, md, write_id=str(uuid.uuid4()), task_id=1,
                            target_size=512 << 20)
        for b in part:
            writer.add(b)
        writer.close()
    seconds = time.perf_counter() - t0
    shutil.rmtree(scratch, ignore_errors=True)
    return seconds


class Java:
    def __init__(self, warehouse: Path, python: str) -> None:
        from oracle_client import OracleClient

        self.client = OracleClient(python, ORACLE_DIR, warehouse, warehouse / "oracle.log")
        self.client.sql("SELECT 1 AS one")
        pids = _descendants(self.client.proc.pid)
        self.jvm = max(pids, key=_rss_kb) if pids else self.client.proc.pid

    def pids(self) -> set[int]:
        return {self.client.proc.pid, *_descendants(self.client.proc.pid)}

    def peak(self) -> Peak:
        return Peak(self.client.proc.pid)

    def write(self, name: str, rows: int) -> dict[str, Any]:
        t = f"oracle.db.{name}"
        self.client.sql([f"CREATE TABLE {t} (id bigint NOT NULL, cat string, v double, "
                         "ts timestamp_ntz) USING iceberg TBLPROPERTIES ('format-version'='2')",
                         f"INSERT INTO {t} SELECT {', '.join(GENERATED)} FROM range(0, 10, 1, 2)",
                         f"DELETE FROM {t}"])  # warm the write path: not timed
        with self.peak() as peak:
            t0 = time.perf_counter()
            self.client.sql(f"INSERT INTO {t} SELECT {', '.join(GENERATED)} "
                            f"FROM range(0, {rows}, 1, 2)")
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb}

    def read(self, name: str) -> dict[str, Any]:
        with self.peak() as peak:
            t0 = time.perf_counter()
            (row,) = self.client.sql(f"SELECT {', '.join(AGGREGATE)} FROM oracle.db.{name}")
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb, "n": row["n"]}

    def compact(self, name: str) -> dict[str, Any]:
        with self.peak() as peak:
            t0 = time.perf_counter()
            (row,) = self.client.sql(f"CALL oracle.system.rewrite_data_files(table => 'db.{name}')")
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_mb": peak.mb,
                "files": f"{row['rewritten_data_files_count']} -> "
                         f"{row['added_data_files_count']}"}

    def count(self, name: str) -> int:
        (row,) = self.client.sql(f"SELECT count(*) AS n FROM oracle.db.{name}")
        return int(row["n"])


def _oracle_python(given: str | None) -> str | None:
    if given:
        return given
    if os.environ.get("FLOE_ORACLE_PY"):
        return os.environ["FLOE_ORACLE_PY"]
    setup = ORACLE_DIR / "setup"
    if not setup.exists():
        return None
    run = subprocess.run([str(setup)], capture_output=True, text=True, check=False)
    return run.stdout.strip().splitlines()[-1] if run.returncode == 0 else None


# -- the run -------------------------------------------------------------------------------------


def _line(step: str, rows: int, f: dict[str, Any], j: dict[str, Any] | None) -> str:
    ratio = f"{f['seconds'] / j['seconds']:>6.2f}x" if j else f"{'':>7}"
    java = (f"{j['seconds']:>8.2f} {rows / j['seconds']:>11,.0f} {j['peak_mb']:>8.0f}"
            if j else f"{'':>29}")
    return (f"{step:<8} {f['seconds']:>8.2f} {rows / f['seconds']:>11,.0f} "
            f"{f['peak_mb']:>8.0f}   {java}   {ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=2000, help="input files of the compaction")
    ap.add_argument("--steps", default="write,read,compact")
    ap.add_argument("--dir", default=str(HERE / ".cache" / "spark"))
    ap.add_argument("--oracle-python")
    ap.add_argument("--no-java", action="store_true")
    args = ap.parse_args()
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("*\n")
    warehouse = root / "wh"
    warehouse.mkdir()
    python = None if args.no_java else _oracle_python(args.oracle_python)
    java = Java(warehouse, python) if python else None
    floe = Floe(warehouse, java.pids if java else set)  # type: ignore[arg-type]
    results: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    if "write" in steps or "read" in steps:
        f = floe.write("w_floe", args.rows)
        j = java.write("w_java", args.rows) if java else None
        results["write"] = (f, j)
        print(f"write done: floe {f['seconds']:.1f} s"
              + (f", java {j['seconds']:.1f} s" if j else ""), flush=True)
    if "read" in steps:
        f = floe.read(results["write"][0]["location"])
        j = java.read("w_java") if java else None
        results["read"] = (f, j)
        assert f["n"] == args.rows and (j is None or j["n"] == args.rows)
    if "compact" in steps:
        from maintenance_compaction import build

        per_file = max(1, args.rows // args.files)
        for name in ("c_floe", *(("c_java",) if java else ())):
            secs = build(warehouse, name, args.files, per_file)
            print(f"built {name}: {args.files} files x {per_file} rows in {secs:.1f} s",
                  flush=True)
        f = floe.compact(str(warehouse / "db" / "c_floe"))
        j = java.compact("c_java") if java else None
        results["compact"] = (f, j)
        if java:
            counts = {java.count("c_java"), java.count("c_floe")}
            assert counts == {args.files * per_file}, counts
    print(f"\nfloe on Spark (PySpark 4, the floe source) vs Spark 3.5 + Iceberg Java; "
          f"local[2], {os.cpu_count()} cores, {args.rows:,} rows")
    print(f"{'step':<8} {'floe s':>8} {'rows/s':>11} {'peak MB':>8}   "
          f"{'java s':>8} {'rows/s':>11} {'peak MB':>8}   {'floe/java':>7}")
    for step, (f, j) in results.items():
        rows = args.files * max(1, args.rows // args.files) if step == "compact" else args.rows
        print(_line(step, rows, f, j))
    for step in ("write", "read"):
        if step in results:
            f = results[step][0]
            share = max(0.0, 1 - f["alone"] / f["seconds"])
            print(f"{step}: floe alone (no Spark) {f['alone']:.2f} s of {f['seconds']:.2f} s; "
                  f"JVM <-> Python transfer and Spark overhead ~{share:.0%}")
    if "compact" in results:
        f, j = results["compact"]
        print(f"compact files: floe {f['files']}" + (f", java {j['files']}" if j else ""))
    if java:
        java.client.close()
    floe.spark.stop()


if __name__ == "__main__":
    main()
