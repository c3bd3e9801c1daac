"""Reading a table with row-level deletes: floe vs DuckDB ``iceberg_scan`` vs PyIceberg.

A synthetic v2 table (``--files`` data files of ``--rows`` rows: id, cat, v, ts), then:

- snapshot A: position deletes removing every 10th row of each data file;
- snapshot B: A plus a global equality delete on ``id`` removing ids divisible by 97.

Each engine reads every column of a snapshot in a fresh process (best of ``--runs``) and
reports rows per second of rows returned (wall time in the child, imports excluded).
PyIceberg cannot apply equality deletes, so it reads snapshot A only. DuckDB runs in the
iceberg-oracle's Python (``--duckdb-python``, default: what
``../shared/tools/iceberg-oracle/setup`` prints) with the oracle's locally installed
extensions, and streams ``SELECT *`` out as Arrow record batches, like floe's reader.
The table is kept under ``--dir`` (default ``benchmarks/.cache``).

Usage: ``python benchmarks/read.py [--files 8] [--rows 1000000] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SNAP_A = 8_000_000_000_000_000_002
SNAP_B = 8_000_000_000_000_000_003


def _schema() -> Any:
    from floe.schema import Schema
    from floe.types import DOUBLE, LONG, STRING, TIMESTAMP, NestedField

    return Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                  NestedField(3, "v", DOUBLE), NestedField(4, "ts", TIMESTAMP))


def _write_file(io: Any, location: str, table: Any, schema: Any) -> int:
    from floe.io.parquet import write_parquet

    data, _ = write_parquet(table, schema)
    io.write(location, data)
    return len(data)


def ensure_table(root: Path, files: int, rows: int) -> Path:
    location = root / f"read-{files}x{rows}"
    hint = location / "metadata" / "version-hint.text"
    if hint.exists():
        return location
    import pyarrow as pa
    import pyarrow.compute as pc

    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.io.parquet import schema_to_arrow
    from floe.manifest import (
        DataFile, FileContent, FileFormat, ManifestContent, ManifestListWriter, ManifestWriter,
        read_manifest_list,
    )
    from floe.metadata import serialize_metadata
    from floe.schema import Schema
    from floe.snapshots import Snapshot, SnapshotLogEntry, SnapshotRef
    from floe.table.append import append, create_table
    from floe.types import LONG, STRING, NestedField

    t0 = time.perf_counter()
    io = FileIO()
    schema = _schema()
    create_table(io, str(location), schema)
    for f in range(files):
        ids = pa.array(range(f * rows, (f + 1) * rows), pa.int64())
        table = pa.table({
            "id": ids,
            "cat": pc.cast(pc.multiply(pc.bit_wise_and(ids, 7), 1), pa.string()),
            "v": pc.divide(pc.cast(ids, pa.float64()), 3.0),
            "ts": pc.cast(pc.multiply(ids, 1_000_000), pa.timestamp("us")),
        })
        append(io, str(location), table)
    _, md = load_table_metadata(io, str(location))
    base = md.current_snapshot()
    assert base is not None and base.manifest_list is not None
    data_manifests = read_manifest_list(io, base.manifest_list)
    data_files = []
    from floe.manifest import read_manifest

    for m in data_manifests:
        data_files += [e.data_file for e in read_manifest(io, m)]

    # position deletes: every 10th row of every data file
    pos_schema = Schema(NestedField(2147483546, "file_path", STRING, required=True),
                        NestedField(2147483545, "pos", LONG, required=True))
    pos_writer = ManifestWriter(io, str(location / "metadata" / "pos-deletes-m0.avro"),
                                md.spec(), schema, 2, SNAP_A, ManifestContent.DELETES)
    for k, df in enumerate(data_files):
        positions = pa.array(range(0, df.record_count, 10), pa.int64())
        table = pa.table({"file_path": pa.array([df.file_path] * len(positions)),
                          "pos": positions}).cast(schema_to_arrow(pos_schema))
        path = str(location / "data" / f"pos-delete-{k:04d}.parquet")
        size = _write_file(io, path, table, pos_schema)
        pos_writer.add(DataFile(FileContent.POSITION_DELETES, path, FileFormat.PARQUET, (),
                                len(positions), size, referenced_data_file=df.file_path))
    pos_manifest = pos_writer.close()

    # equality deletes on id: every id divisible by 97
    eq_schema = Schema(NestedField(1, "id", LONG, required=True))
    ids = pa.array(range(0, files * rows, 97), pa.int64())
    path = str(location / "data" / "eq-delete-0000.parquet")
    size = _write_file(io, path, pa.table({"id": ids}), eq_schema)
    eq_writer = ManifestWriter(io, str(location / "metadata" / "eq-deletes-m0.avro"),
                               md.spec(), schema, 2, SNAP_B, ManifestContent.DELETES)
    eq_writer.add(DataFile(FileContent.EQUALITY_DELETES, path, FileFormat.PARQUET, (),
                           len(ids), size, equality_ids=[1]))
    eq_manifest = eq_writer.close()

    seq = md.last_sequence_number
    list_a = str(location / "metadata" / f"snap-{SNAP_A}.avro")
    ManifestListWriter(io, list_a, 2, SNAP_A, base.snapshot_id, sequence_number=seq + 1) \
        .add_manifests([*data_manifests, pos_manifest]).close()
    list_b = str(location / "metadata" / f"snap-{SNAP_B}.avro")
    pos_done = read_manifest_list(io, list_a)[-1]
    ManifestListWriter(io, list_b, 2, SNAP_B, SNAP_A, sequence_number=seq + 2) \
        .add_manifests([*data_manifests, pos_done, eq_manifest]).close()
    ts = base.timestamp_ms
    snaps = (
        *md.snapshots,
        Snapshot(SNAP_A, base.snapshot_id, seq + 1, ts + 1, list_a,
                 {"operation": "delete"}, md.current_schema_id),
        Snapshot(SNAP_B, SNAP_A, seq + 2, ts + 2, list_b,
                 {"operation": "delete"}, md.current_schema_id),
    )
    md = dataclasses.replace(
        md, snapshots=snaps, current_snapshot_id=SNAP_B, last_sequence_number=seq + 2,
        snapshot_log=(*md.snapshot_log, SnapshotLogEntry(ts + 1, SNAP_A),
                      SnapshotLogEntry(ts + 2, SNAP_B)),
        refs={"main": SnapshotRef(SNAP_B)}, last_updated_ms=ts + 2)
    version = int(hint.read_text().strip()) + 1 if hint.exists() else max(
        int(p.name[1:].split(".")[0]) for p in (location / "metadata").glob("v*.metadata.json")
    ) + 1
    (location / "metadata" / f"v{version}.metadata.json").write_bytes(serialize_metadata(md))
    hint.write_text(str(version))
    print(f"generated {files} x {rows:,} rows with deletes in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    return location


# -- children ----------------------------------------------------------------------------------


def _child_floe(location: str, snapshot: int) -> dict[str, Any]:
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.scan.readers import read_plan
    from floe.scan import plan_files

    t = time.perf_counter()
    io = FileIO()
    _, md = load_table_metadata(io, location)
    rows = sum(b.num_rows for b in read_plan(io, plan_files(io, md, snapshot_id=snapshot)))
    return {"seconds": time.perf_counter() - t, "rows": rows}


def _child_pyiceberg(location: str, snapshot: int) -> dict[str, Any]:
    from pyiceberg.table import StaticTable

    from floe.catalog.filesystem import resolve_metadata_location
    from floe.io import FileIO

    t = time.perf_counter()
    table = StaticTable.from_metadata(resolve_metadata_location(FileIO(), location))
    rows = table.scan(snapshot_id=snapshot).to_arrow().num_rows
    return {"seconds": time.perf_counter() - t, "rows": rows}


_DUCKDB = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
import oracle
con = oracle.duckdb_connection()
t = time.perf_counter()
reader = con.execute("SELECT * FROM iceberg_scan(?, snapshot_from_id => ?)",
                     [sys.argv[1], int(sys.argv[2])]).fetch_record_batch(131072)
n = sum(b.num_rows for b in reader)
print(json.dumps({"seconds": time.perf_counter() - t, "rows": n}))
"""


ORACLE_DIR = HERE.parent.parent / "shared" / "tools" / "iceberg-oracle"


def _oracle_python() -> str | None:
    setup = ORACLE_DIR / "setup"
    if not setup.exists():
        return None
    run = subprocess.run([str(setup)], capture_output=True, text=True, check=False)
    return run.stdout.strip().splitlines()[-1] if run.returncode == 0 else None


def _run(cmd: list[str], timeout: float) -> dict[str, Any]:
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"gave up after {timeout:.0f} s"}
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=str(HERE / ".cache"))
    ap.add_argument("--duckdb-python")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per engine run")
    ap.add_argument("--child", nargs="+")
    args = ap.parse_args()
    if args.child:
        engine, location, snapshot = args.child
        fn = _child_floe if engine == "floe" else _child_pyiceberg
        print(json.dumps(fn(location, int(snapshot))))
        return
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("*\n")
    location = str(ensure_table(root, args.files, args.rows))
    metadata = max((Path(location) / "metadata").glob("v*.metadata.json"),
                   key=lambda p: int(p.name[1:].split(".")[0]))
    duck = args.duckdb_python or _oracle_python()
    cases: list[tuple[str, str, list[str]]] = []
    for label, snap in (("A: position deletes", SNAP_A), ("B: position + equality", SNAP_B)):
        me = [sys.executable, __file__, "--child"]
        cases.append((label, "floe", [*me, "floe", location, str(snap)]))
        if duck:
            cases.append((label, "duckdb", [duck, "-c", _DUCKDB, str(metadata), str(snap),
                                             str(ORACLE_DIR)]))
        if snap == SNAP_A:
            cases.append((label, "pyiceberg", [*me, "pyiceberg", location, str(snap)]))
    print(f"{'snapshot':<24} {'engine':<10} {'rows':>12} {'seconds':>8} {'rows/s':>12}")
    for label, engine, cmd in cases:
        best: dict[str, Any] | None = None
        for _ in range(args.runs):
            res = _run(cmd, args.timeout)
            if "error" in res:
                best = res
                break
            if best is None or res["seconds"] < best["seconds"]:
                best = res
        assert best is not None
        if "error" in best:
            print(f"{label:<24} {engine:<10} error: {best['error']}")
        else:
            print(f"{label:<24} {engine:<10} {best['rows']:>12,} {best['seconds']:>8.2f} "
                  f"{best['rows'] / best['seconds']:>12,.0f}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main()
