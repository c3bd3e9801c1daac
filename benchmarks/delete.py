"""Row-level DELETE: floe copy-on-write and merge-on-read vs Spark + Iceberg Java ``DELETE FROM``.

A v2 table of ``--files`` data files of ``--rows`` rows each (default 100 x 100,000 = 10M
rows: id, cat, v, ts) is built four times with identical contents under ``--dir``; the
filter ``v < 0.01`` (v is a hash of id in [0, 1)) deletes about 1% of the rows, spread over
every file, so copy-on-write rewrites every file and merge-on-read writes position deletes
for every file. floe deletes from two copies (``write.delete.mode`` copy-on-write /
merge-on-read), Spark 3.5 + Iceberg 1.10 runs ``DELETE FROM`` on the other two, started the
way ``tests/interop/oracle_client.py`` starts it with the oracle's python (``--oracle-python``,
default: what ``../shared/tools/iceberg-oracle/setup`` prints).

floe runs in a fresh process per delete, like ``floe delete TABLE --filter ...`` would: the
table shows the delete itself (load, plan, read, write, commit) and the whole process
(interpreter start and imports included). Spark's time is the ``DELETE`` statement in a warm
session (the table was counted once before). Rows/s are table rows per second. Spark then
counts every copy: all four must hold the same number of rows.

Usage: ``python benchmarks/delete.py [--files 100] [--rows 100000] [--no-spark]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ORACLE_DIR = HERE.parent.parent / "shared" / "tools" / "iceberg-oracle"
FILTER = "v < 0.01"
MODES = ("copy-on-write", "merge-on-read")


def _schema() -> Any:
    from floe.schema import Schema
    from floe.types import DOUBLE, LONG, STRING, TIMESTAMP, NestedField

    return Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                  NestedField(3, "v", DOUBLE), NestedField(4, "ts", TIMESTAMP))


def _rows(start: int, n: int) -> Any:
    """Rows ``start .. start + n``; ``v`` is a multiplicative hash of id scaled to [0, 1)."""
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


def build(warehouse: Path, name: str, mode: str, files: int, rows: int) -> float:
    """One copy of the table: ``files`` appended in one snapshot; seconds taken."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.table.writer import write_data_files

    t0 = time.perf_counter()
    catalog = FileSystemCatalog("bench", str(warehouse))
    table = catalog.create_table(f"db.{name}", _schema(), properties={
        "write.delete.mode": mode})
    written = []
    for k in range(files):
        written += write_data_files(table.io, table.metadata, _rows(k * rows, rows), task_id=k)
    table.new_transaction().fast_append(written).commit()
    return time.perf_counter() - t0


def child(warehouse: str, name: str) -> None:
    """The CLI-equivalent: load the table, delete, commit; print the seconds it took."""
    t0 = time.perf_counter()
    from floe.catalog.filesystem import FileSystemCatalog

    imported = time.perf_counter()
    table = FileSystemCatalog("bench", warehouse).load_table(f"db.{name}")
    table.delete_where(FILTER)
    done = time.perf_counter()
    summary = table.current_snapshot().summary
    print(json.dumps({"seconds": done - imported, "imports": imported - t0,
                      "operation": summary["operation"], "summary": summary}))


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
        raise SystemExit(f"floe delete failed: {run.stderr.strip()[-2000:]}")
    got: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    got["process"] = wall
    return got


def _spark(warehouse: Path, names: list[str], python: str) -> tuple[dict[str, Any], Any]:
    sys.path.insert(0, str(HERE.parent / "tests" / "interop"))
    from oracle_client import OracleClient

    client = OracleClient(python, ORACLE_DIR, warehouse, warehouse / "oracle.log")
    out: dict[str, Any] = {}
    for name in names:
        client.sql(f"SELECT count(*) AS n FROM oracle.db.{name}")  # warm: not timed
        t0 = time.perf_counter()
        client.sql(f"DELETE FROM oracle.db.{name} WHERE {FILTER}")
        out[name] = {"seconds": time.perf_counter() - t0}
        (snap,) = client.sql(f"SELECT operation FROM oracle.db.{name}.snapshots "
                             "ORDER BY committed_at DESC LIMIT 1")
        out[name]["operation"] = snap["operation"]
    return out, client


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--rows", type=int, default=100_000, help="rows per data file")
    ap.add_argument("--dir", default=str(HERE / ".cache" / "delete"))
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
    engines = ["floe"] + (["spark"] if python else [])
    names = {(e, m): f"{e}_{m.split('-')[0]}" for e in engines for m in MODES}
    for (_, mode), name in names.items():
        secs = build(warehouse, name, mode, args.files, args.rows)
        print(f"built {name}: {args.files} files, {total:,} rows in {secs:.1f} s", flush=True)
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for mode in MODES:
        results[("floe", mode)] = _floe(warehouse, names[("floe", mode)])
    client = None
    if python:
        spark, client = _spark(warehouse, [names[("spark", m)] for m in MODES], python)
        for mode in MODES:
            results[("spark", mode)] = spark[names[("spark", mode)]]
    print(f"\nDELETE FROM t WHERE {FILTER} on {args.files} files x {args.rows:,} rows "
          f"= {total:,} rows (v2)")
    print(f"{'engine':<8} {'mode':<15} {'operation':<10} {'seconds':>8} {'rows/s':>12} "
          f"{'process s':>10}")
    for (engine, mode), r in results.items():
        process = f"{r['process']:>10.2f}" if "process" in r else f"{'':>10}"
        print(f"{engine:<8} {mode:<15} {r['operation']:<10} {r['seconds']:>8.2f} "
              f"{total / r['seconds']:>12,.0f} {process}")
    if client is not None:
        counts = client.sql([f"SELECT count(*) AS n FROM oracle.db.{n}" for n in names.values()],
                            all=True)
        client.close()
        left = {name: c[0]["n"] for name, c in zip(names.values(), counts, strict=True)}
        print(f"\nrows left (Spark counts): {left}")
        if len(set(left.values())) != 1:
            raise SystemExit("the copies disagree on the rows left")


if __name__ == "__main__":
    main()
