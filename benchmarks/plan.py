"""Scan planning: floe ``plan_files`` vs PyIceberg ``DataScan.plan_files()``.

A synthetic v2 table per size (100k and 1M data files by default), partitioned by
``day(ts), bucket(16, id)``, each file with column sizes, value/null counts and bounds for
10 columns, ``--per-manifest`` files per manifest (appends over time: each manifest covers a
few days). Tables are generated once and kept under ``--dir`` (default
``benchmarks/.cache``); reruns reuse them.

Each measurement runs in a fresh Python process: the first plan there is *cold* (nothing
cached, for floe this includes starting its worker processes), the second one *warm*.
Timings cover planning only, not interpreter start-up or imports; the one full garbage
collection after the cold plan is timed separately (``gc s``). floe builds the task objects
of a manifest it keeps whole when they are first read (floe.scan.planning.TaskBlock):
``build s`` is the time a caller then spends reading every task of the cold plan (PyIceberg's
plan returns built objects; its time is in ``cold s``). Plans:

- full: no filter, every file;
- point: ``id = X AND ts = T`` matching one file (partition summaries let a planner open
  only the manifests whose day range holds ``T``);
- range: ``id >= A AND id < B`` matching 1% of the files: every manifest is opened and
  every file decided by its bounds (floe decides them over Arrow columns,
  floe.scan.decide).

floe is measured with its default (on fewer than 4 cores: one process), with worker
processes decoding part of the manifests (``processes=True``) — both with the persistent
manifest cache off, so "cold" is the first decode — and from its persistent cache of decoded
manifests (floe.scan.manifest_store), filled by an earlier process: what every later CLI run,
web worker or task sees. The whole-process table times ``floe plan --json`` the same ways.

``--store s3`` (issue 20): the same tables uploaded to a local S3 server (SeaweedFS, started
here from the tests' harness, on loopback), and ``floe plan --json`` on them beside the local
table, both cold (no persistent manifest cache), and PyIceberg planning the S3 table; one more
run goes through a counting proxy for the requests and bytes a plan needs. floe reaches S3
with the standard AWS environment (``AWS_ENDPOINT_URL``, keys, ``AWS_ALLOW_HTTP``), PyIceberg
with its ``s3.*`` properties.

Usage: ``python benchmarks/plan.py [--files 100000,1000000] [--per-manifest 5000]
[--dir DIR] [--no-pyiceberg] [--store local|s3] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gc
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLUMNS = 10
DAYS = 365
START_DAY = 19723  # 2024-01-01
MICROS_PER_DAY = 86_400_000_000
SNAPSHOT_ID = 7_000_000_000_000_000_001
TS_MS = 1_717_171_717_000


def _schema() -> Any:
    from floe.schema import Schema
    from floe.types import LONG, STRING, TIMESTAMP, NestedField

    fields = [NestedField(1, "id", LONG, required=True), NestedField(2, "ts", TIMESTAMP)]
    fields += [NestedField(i, f"c{i}", LONG if i % 2 else STRING) for i in range(3, COLUMNS + 1)]
    return Schema(*fields)


def _file_day(n: int, total: int) -> int:
    return START_DAY + n * DAYS // total


def _file_ts(n: int, total: int) -> int:
    return _file_day(n, total) * MICROS_PER_DAY + (n % 86_400) * 1_000_000


def _partition(n: int, total: int) -> tuple[int, int]:
    from floe.transforms import bucket_hash
    from floe.types import LONG

    return _file_day(n, total), (bucket_hash(LONG, n * 1000) & 0x7FFFFFFF) % 16


def _data_path(n: int, total: int) -> str:
    day, bucket = _partition(n, total)
    return (f"s3://bucket/warehouse/db/t/data/ts_day={dt.date.fromordinal(719163 + day)}"
            f"/id_bucket={bucket}/{n:08d}-0-3f1c2d4e-00001.parquet")


def _write_delete_manifest(args: tuple[str, int, int, int, int]) -> dict[str, Any]:
    """One delete manifest: position delete files for the data files ``every * k`` for ``k``
    in [first, first + count), each scoped to its file as Iceberg Java writes them on a v2 table
    with ``write.delete.granularity=file`` (its ``file_path`` bounds both name the data
    file), committed after the data (data sequence number 2)."""
    from floe.conversions import to_bytes
    from floe.io import FileIO
    from floe.manifest import DataFile, FileContent, FileFormat, ManifestContent, \
        ManifestWriter
    from floe.partitioning import parse_partition_by
    from floe.scan.delete_index import FILE_PATH_FIELD_ID, POS_FIELD_ID
    from floe.types import LONG, STRING

    path, first, count, total, every = args
    schema = _schema()
    spec = parse_partition_by("day(ts), bucket(16, id)", schema)
    w = ManifestWriter(FileIO(), path, spec, schema, 2, snapshot_id=SNAPSHOT_ID + 1,
                       content=ManifestContent.DELETES)
    added = 0
    for n in range(first * every, (first + count) * every, every):
        target = _data_path(n, total)
        rows = 1 + n % 50
        w.add(DataFile(
            content=FileContent.POSITION_DELETES,
            file_path=target.replace("-00001.parquet", "-00001-deletes.parquet"),
            file_format=FileFormat.PARQUET,
            partition=_partition(n, total),
            record_count=rows,
            file_size_in_bytes=1_500 + rows * 8,
            column_sizes={FILE_PATH_FIELD_ID: 120, POS_FIELD_ID: 8 * rows},
            value_counts={FILE_PATH_FIELD_ID: rows, POS_FIELD_ID: rows},
            null_value_counts={FILE_PATH_FIELD_ID: 0, POS_FIELD_ID: 0},
            lower_bounds={FILE_PATH_FIELD_ID: to_bytes(STRING, target),
                          POS_FIELD_ID: to_bytes(LONG, n % 1000)},
            upper_bounds={FILE_PATH_FIELD_ID: to_bytes(STRING, target),
                          POS_FIELD_ID: to_bytes(LONG, n % 1000 + 10 * rows)},
        ))
        added += 1
    m = w.close()
    return {"path": path, "length": m.manifest_length, "added": added,
            "rows": m.added_rows_count, "partitions": m.partitions}


def _write_manifest(args: tuple[str, int, int, int]) -> dict[str, Any]:
    """One manifest of files [first, first + count) of a table of ``total`` files."""
    from floe.conversions import to_bytes
    from floe.io import FileIO
    from floe.manifest import DataFile, FileContent, FileFormat, ManifestWriter
    from floe.partitioning import parse_partition_by
    from floe.types import LONG, STRING, TIMESTAMP

    path, first, count, total = args
    schema = _schema()
    spec = parse_partition_by("day(ts), bucket(16, id)", schema)
    w = ManifestWriter(FileIO(), path, spec, schema, 2, snapshot_id=SNAPSHOT_ID)
    ids = range(1, COLUMNS + 1)
    for n in range(first, first + count):
        lo_id = n * 1000
        ts = _file_ts(n, total)
        lower: dict[int, bytes] = {1: to_bytes(LONG, lo_id), 2: to_bytes(TIMESTAMP, ts)}
        upper: dict[int, bytes] = {1: to_bytes(LONG, lo_id + 999),
                                   2: to_bytes(TIMESTAMP, ts + 999_999)}
        for i in range(3, COLUMNS + 1):
            if i % 2:
                lower[i] = to_bytes(LONG, (n * i) % 100_000)
                upper[i] = to_bytes(LONG, (n * i) % 100_000 + 5_000)
            else:
                lower[i] = to_bytes(STRING, f"a{(n * i) % 9973:05d}")
                upper[i] = to_bytes(STRING, f"z{(n * i) % 9973:05d}")
        w.add(DataFile(
            content=FileContent.DATA,
            file_path=_data_path(n, total),
            file_format=FileFormat.PARQUET,
            partition=_partition(n, total),
            record_count=100_000 + n % 1000,
            file_size_in_bytes=8_000_000 + n % 100_000,
            column_sizes={i: 200_000 + i * n % 977 for i in ids},
            value_counts={i: 100_000 + n % 1000 for i in ids},
            null_value_counts={i: n % 7 for i in ids},
            lower_bounds=lower,
            upper_bounds=upper,
            split_offsets=[4],
            sort_order_id=0,
        ))
    m = w.close()
    return {"path": path, "length": m.manifest_length, "added": count,
            "partitions": m.partitions}


def ensure_table(root: Path, total: int, per_manifest: int, deletes: int = 0) -> Path:
    """The table of ``total`` files under ``root`` (generated on first use). With
    ``deletes``, every ``deletes``-th data file has a position delete file, committed by a
    second snapshot in delete manifests of ``per_manifest`` delete files each (as Java's
    manifest merging keeps them: few, full delete manifests)."""
    location = root / (f"plan-{total}-{per_manifest}" + (f"-d{deletes}" if deletes else ""))
    hint = location / "metadata" / "version-hint.text"
    if hint.exists():
        return location
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.manifest import ManifestContent, ManifestFile, ManifestListWriter
    from floe.metadata import serialize_metadata
    from floe.partitioning import parse_partition_by
    from floe.snapshots import Snapshot, SnapshotLogEntry, SnapshotRef
    from floe.table.append import create_table

    t0 = time.perf_counter()
    io = FileIO()
    schema = _schema()
    create_table(io, str(location), schema, spec=parse_partition_by("day(ts), bucket(16, id)",
                                                                      schema))
    (location / "metadata").mkdir(exist_ok=True)
    jobs = [(str(location / "metadata" / f"m{k:05d}.avro"), first,
             min(per_manifest, total - first), total)
            for k, first in enumerate(range(0, total, per_manifest))]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        written = list(pool.map(_write_manifest, jobs, chunksize=4))
    manifests = [ManifestFile(w["path"], w["length"], 0, sequence_number=1,
                              min_sequence_number=1, added_snapshot_id=SNAPSHOT_ID,
                              added_files_count=w["added"], existing_files_count=0,
                              deleted_files_count=0, added_rows_count=w["added"] * 100_000,
                              existing_rows_count=0, deleted_rows_count=0,
                              partitions=w["partitions"])
                 for w in written]
    mlist = str(location / "metadata" / f"snap-{SNAPSHOT_ID}-1.avro")
    ManifestListWriter(io, mlist, 2, SNAPSHOT_ID, None, sequence_number=1) \
        .add_manifests(manifests).close()
    _, md = load_table_metadata(io, str(location))
    snaps = [Snapshot(SNAPSHOT_ID, None, 1, TS_MS, mlist,
                      {"operation": "append", "added-data-files": str(total)},
                      md.current_schema_id)]
    if deletes:
        targets = (total + deletes - 1) // deletes  # data files 0, N, 2N...
        jobs = [(str(location / "metadata" / f"d{k:05d}.avro"), first,
                 min(per_manifest, targets - first), total, deletes)
                for k, first in enumerate(range(0, targets, per_manifest))]
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            written = [w for w in pool.map(_write_delete_manifest, jobs, chunksize=4)
                       if w["added"]]
        sid = SNAPSHOT_ID + 1
        manifests += [ManifestFile(w["path"], w["length"], 0, content=ManifestContent.DELETES,
                                   sequence_number=2, min_sequence_number=2,
                                   added_snapshot_id=sid, added_files_count=w["added"],
                                   existing_files_count=0, deleted_files_count=0,
                                   added_rows_count=w["rows"], existing_rows_count=0,
                                   deleted_rows_count=0, partitions=w["partitions"])
                      for w in written]
        mlist = str(location / "metadata" / f"snap-{sid}-1.avro")
        ManifestListWriter(io, mlist, 2, sid, SNAPSHOT_ID, sequence_number=2) \
            .add_manifests(manifests).close()
        added = sum(w["added"] for w in written)
        snaps.append(Snapshot(sid, SNAPSHOT_ID, 2, TS_MS + 1000, mlist,
                              {"operation": "delete", "added-delete-files": str(added),
                               "added-position-delete-files": str(added)},
                              md.current_schema_id))
    last = snaps[-1].snapshot_id
    md = dataclasses.replace(
        md, snapshots=tuple(snaps), current_snapshot_id=last,
        last_sequence_number=snaps[-1].sequence_number,
        snapshot_log=tuple(SnapshotLogEntry(s.timestamp_ms, s.snapshot_id) for s in snaps),
        refs={"main": SnapshotRef(last)}, last_updated_ms=snaps[-1].timestamp_ms)
    version = max(int(p.name[1:].split(".")[0]) for p in (location / "metadata").glob(
        "v*.metadata.json")) + 1
    (location / "metadata" / f"v{version}.metadata.json").write_bytes(serialize_metadata(md))
    hint.write_text(str(version))
    print(f"generated {total:,} files in {len(manifests)} manifests in "
          f"{time.perf_counter() - t0:.1f} s -> {location}", file=sys.stderr)
    return location


KINDS = ("full", "point", "range")


def _point(total: int) -> tuple[int, int]:
    n = total // 3 + 17
    return n * 1000, _file_ts(n, total)


def _range(total: int) -> tuple[int, int]:
    """Ids of 1% of the files, from the middle: bucket(16, id) cannot prune a range and the
    filter says nothing of ``ts``, so every manifest is opened and every file decided by its
    bounds."""
    lo = total // 2 * 1000
    return lo, lo + total // 100 * 1000


def _floe_filter(kind: str, total: int) -> str | None:
    if kind == "point":
        id_, ts = _point(total)
        when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ts)
        return f"id = {id_} AND ts = TIMESTAMP '{when.isoformat(sep=' ')}'"
    if kind == "range":
        lo, hi = _range(total)
        return f"id >= {lo} AND id < {hi}"
    return None


def _pyiceberg_filter(kind: str, total: int) -> Any:
    from pyiceberg.expressions import AlwaysTrue, And, EqualTo, GreaterThanOrEqual, LessThan

    if kind == "point":
        id_, ts = _point(total)
        when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ts)
        return And(EqualTo("id", id_), EqualTo("ts", when.isoformat()))
    if kind == "range":
        lo, hi = _range(total)
        return And(GreaterThanOrEqual("id", lo), LessThan("id", hi))
    return AlwaysTrue()


# -- children: one engine, one plan kind, cold then warm ----------------------------------------


def _child_floe(location: Path, kind: str, total: int, processes: str) -> dict[str, Any]:
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.scan import plan_files
    from floe.scan.manifests import shutdown_pool

    io = FileIO()
    _, md = load_table_metadata(io, str(location))
    row_filter = _floe_filter(kind, total)
    proc = {"auto": None, "on": True, "off": False, "cache": None}[processes]
    out: dict[str, Any] = {}
    for label in ("cold", "warm"):
        t = time.perf_counter()
        plan = plan_files(io, md, row_filter=row_filter, processes=proc)
        out[label] = time.perf_counter() - t
        out["tasks"] = len(plan.tasks)
        out["manifests_opened"] = plan.funnel.manifests_after_summaries
        if label == "cold":  # a full plan's tasks are built when first read
            t = time.perf_counter()
            for task in plan.tasks:
                task.data_file  # noqa: B018
            out["build"] = time.perf_counter() - t
        del plan
        _collect(out, label)
    shutdown_pool()
    return out


def _collect(out: dict[str, Any], label: str) -> None:
    """One full collection after the cold plan, timed on its own: a cold plan leaves millions
    of new objects, and the collector's next full pass over them would otherwise land in
    whatever is timed next."""
    if label == "cold":
        t = time.perf_counter()
        gc.collect()
        out["gc"] = time.perf_counter() - t


def _child_pyiceberg(location: Path, kind: str, total: int) -> dict[str, Any]:
    from pyiceberg.table import StaticTable

    from floe.catalog.filesystem import resolve_metadata_location
    from floe.io import FileIO

    table = StaticTable.from_metadata(resolve_metadata_location(FileIO(), str(location)))
    row_filter = _pyiceberg_filter(kind, total)
    out: dict[str, Any] = {}
    for label in ("cold", "warm"):
        t = time.perf_counter()
        tasks = list(table.scan(row_filter=row_filter).plan_files())
        out[label] = time.perf_counter() - t
        out["tasks"] = len(tasks)
        del tasks
        _collect(out, label)
    return out


def _child_pyiceberg_cli(location: Path | str, kind: str, total: int) -> None:
    """What a user's script would do: plan with PyIceberg, print the tasks as JSON (a table in
    a bucket: ``FLOE_BENCH_S3`` holds its ``s3.*`` properties)."""
    from pyiceberg.table import StaticTable

    from floe.catalog.filesystem import resolve_metadata_location
    from floe.io import FileIO

    props = json.loads(os.environ.get("FLOE_BENCH_S3", "{}"))
    metadata = resolve_metadata_location(FileIO(props), str(location))
    table = StaticTable.from_metadata(metadata, properties=props)
    row_filter = _pyiceberg_filter(kind, total)
    tasks = table.scan(row_filter=row_filter).plan_files()
    json.dump([{"file_path": t.file.file_path, "record_count": t.file.record_count,
                "delete_files": [d.file_path for d in t.delete_files]} for t in tasks],
              sys.stdout)


def _cache_dir(location: Path) -> Path:
    return location.parent / f".manifest-cache-{location.name}"


def _env(cache: Path | None) -> dict[str, str]:
    """The environment of a floe process: its persistent manifest cache at ``cache``, or
    off."""
    return {**os.environ, "FLOE_MANIFEST_CACHE": str(cache) if cache else "off"}


def _whole_process(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Wall time and peak memory of a command as a whole process, stdout discarded."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        return {"error": (err.strip().splitlines() or ["?"])[-1]}
    return {"wall": wall, "peak_mb": usage.ru_maxrss / 1024}


def _processes(location: Path, total: int, pyiceberg: bool
               ) -> list[tuple[str, str, dict[str, Any]]]:
    """``floe plan --json`` (every file with its explanation) beside PyIceberg's plan printed
    as JSON, each a fresh process including start-up and imports."""
    out = []
    cache = _cache_dir(location)
    shutil.rmtree(cache, ignore_errors=True)
    for kind in KINDS:
        argv = [sys.executable, "-m", "floe.cli", "plan", str(location), "--json"]
        row_filter = _floe_filter(kind, total)
        if row_filter is not None:
            argv += ["--filter", row_filter]
        out.append((kind, "floe plan --json", _whole_process(argv, _env(None))))
        if kind == "full":  # the full plan stores every manifest
            out.append((kind, "floe, fills cache", _whole_process(argv, _env(cache))))
        out.append((kind, "floe, from cache", _whole_process(argv, _env(cache))))
        if pyiceberg:
            out.append((kind, "pyiceberg script", _whole_process(
                [sys.executable, __file__, "--child", "pyiceberg-cli", str(location), kind,
                 str(total)])))
    return out


def _run_child(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    run = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, check=False, env=env)
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def upload_table(location: Path, io: Any, target: str) -> str:
    """The table at ``location`` copied to ``target`` (a bucket prefix): manifests as they are
    (the data files they name are fake anyway), the manifest list and the metadata rewritten
    to name their new places. Returns the metadata file's location."""
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.manifest import ManifestListWriter, read_manifest_list
    from floe.metadata import serialize_metadata

    local = FileIO()
    metadata_location, md = load_table_metadata(local, str(location))
    snap = md.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    manifests = read_manifest_list(local, snap.manifest_list)
    moved = []
    for m in manifests:
        new_path = f"{target}/metadata/{Path(m.manifest_path).name}"
        io.write(new_path, local.read(m.manifest_path), overwrite=True)
        moved.append(dataclasses.replace(m, manifest_path=new_path))
    mlist = f"{target}/metadata/{Path(snap.manifest_list).name}"
    ManifestListWriter(io, mlist, 2, snap.snapshot_id, None, sequence_number=1) \
        .add_manifests(moved).close()
    md = dataclasses.replace(md, location=target, snapshots=(
        dataclasses.replace(snap, manifest_list=mlist),), metadata_log=())
    out = f"{target}/metadata/{Path(metadata_location).name}"
    io.write(out, serialize_metadata(md), overwrite=True)
    io.write(f"{target}/metadata/version-hint.text",
             Path(metadata_location).name[1:].split(".")[0].encode(), overwrite=True)
    return out


def s3_main(args: argparse.Namespace) -> None:
    import statistics
    import tempfile

    from floe.io import FileIO
    from tests.faulty_proxy import FaultyProxy
    from tests.object_store import SeaweedFS

    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("*\n")  # generated tables never go into git
    with tempfile.TemporaryDirectory() as tmp:
        server = SeaweedFS.create(Path(tmp) / "sw", Path(tmp))
        server.start()
        try:
            props = server.s3_properties()
            io = FileIO(props)

            def env(endpoint: str) -> dict[str, str]:
                return {**_env(None), "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
                        "AWS_ACCESS_KEY_ID": server.access_key,
                        "AWS_SECRET_ACCESS_KEY": server.secret_key,
                        "AWS_REGION": server.region, "FLOE_BENCH_S3": json.dumps(props)}

            rows = []
            for total in (int(x) for x in args.files.split(",")):
                location = ensure_table(root, total, args.per_manifest, args.deletes)
                target = f"s3://{server.bucket}/{location.name}"
                upload_table(location, io, target)
                plan = [sys.executable, "-m", "floe.cli", "plan"]
                runs: dict[str, list[float]] = {"local": [], "s3": [], "pyiceberg": []}
                for _ in range(args.runs):
                    for store, where in (("local", str(location)), ("s3", target)):
                        res = _whole_process([*plan, where, "--json"], env(server.endpoint))
                        if "error" in res:
                            raise SystemExit(f"floe plan on {store}: {res['error']}")
                        runs[store].append(res["wall"])
                    if not args.no_pyiceberg:
                        res = _whole_process([sys.executable, __file__, "--child",
                                              "pyiceberg-cli", target, "full", str(total)],
                                             env(server.endpoint))
                        if "error" in res:
                            raise SystemExit(f"pyiceberg on s3: {res['error']}")
                        runs["pyiceberg"].append(res["wall"])
                with FaultyProxy(server.endpoint) as proxy:
                    _whole_process([*plan, target, "--json"], env(proxy.url))
                    requests, sent = len(proxy.requests()), proxy.state.bytes_answered
                rows.append((total, {k: statistics.median(v) for k, v in runs.items() if v},
                             requests, sent))
        finally:
            server.stop()
    print()
    print(f"floe plan --json, whole process, cold (no persistent manifest cache), median of "
          f"{args.runs}; S3 = SeaweedFS on loopback")
    print(f"{'files':>9}  {'local s':>8}  {'S3 s':>8}  {'S3/local':>8}  {'PyIceberg S3 s':>14}  "
          f"{'floe faster':>11}  {'requests':>8}  {'MB read':>8}")
    for total, med, requests, sent in rows:
        py = med.get("pyiceberg")
        print(f"{total:>9,}  {med['local']:>8.2f}  {med['s3']:>8.2f}  "
              f"{med['s3'] / med['local']:>8.2f}  "
              f"{py if py is not None else float('nan'):>14.2f}  "
              f"{(py / med['s3']) if py else float('nan'):>10.1f}x  {requests:>8}  "
              f"{sent / 1e6:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="100000,1000000")
    ap.add_argument("--per-manifest", type=int, default=5000)
    ap.add_argument("--deletes", type=int, default=0,
                    help="a position delete file for every N-th data file (0: none)")
    ap.add_argument("--dir", default=str(HERE / ".cache"))
    ap.add_argument("--no-pyiceberg", action="store_true")
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--store", choices=("local", "s3"), default="local")
    ap.add_argument("--runs", type=int, default=3, help="--store s3: runs per measurement")
    args = ap.parse_args()
    if args.store == "s3" and not args.child:
        s3_main(args)
        return
    if args.child:
        engine, location, kind, total, *rest = args.child
        if engine == "pyiceberg-cli":
            _child_pyiceberg_cli(location if "://" in location else Path(location), kind,
                                 int(total))
            return
        if engine == "floe":
            res = _child_floe(Path(location), kind, int(total), rest[0])
        else:
            res = _child_pyiceberg(Path(location), kind, int(total))
        print(json.dumps(res))
        return
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("*\n")  # generated tables never go into git
    rows = []
    whole = []
    for total in (int(x) for x in args.files.split(",")):
        location = ensure_table(root, total, args.per_manifest, args.deletes)
        for kind, name, res in _processes(location, total, not args.no_pyiceberg):
            whole.append((total, kind, name, res))
            print(f"  {total:>9,} {kind:<5} {name:<17} {res}", file=sys.stderr)
        engines = [("floe", "auto"), ("floe (+ workers)", "on"), ("floe, from cache", "cache")]
        if not args.no_pyiceberg:
            engines.append(("pyiceberg", ""))
        for kind in KINDS:
            for name, mode in engines:
                engine = "floe" if name.startswith("floe") else "pyiceberg"
                res = _run_child(engine, str(location), kind, str(total), mode,
                                 env=_env(_cache_dir(location) if mode == "cache" else None))
                rows.append((total, kind, name, res))
                print(f"  {total:>9,} {kind:<5} {name:<17} {_fmt(res)}", file=sys.stderr)
    print()
    print(f"{'files':>9}  {'plan':<5}  {'engine':<17}  {'cold s':>8}  {'build s':>8}  "
          f"{'warm s':>8}  {'gc s':>6}  {'tasks':>9}  {'files/s cold':>12}  "
          f"{'manifests opened':>16}")
    for total, kind, name, res in rows:
        if "error" in res:
            print(f"{total:>9,}  {kind:<5}  {name:<17}  error: {res['error']}")
            continue
        build = f"{res['build']:>8.2f}" if "build" in res else f"{'-':>8}"
        print(f"{total:>9,}  {kind:<5}  {name:<17}  {res['cold']:>8.2f}  {build}  "
              f"{res['warm']:>8.2f}  {res['gc']:>6.2f}  {res['tasks']:>9,}  "
              f"{total / res['cold']:>12,.0f}  {res.get('manifests_opened', ''):>16}")
    print()
    print("Whole process (start-up, imports, plan, JSON on stdout):")
    print(f"{'files':>9}  {'plan':<5}  {'command':<17}  {'wall s':>8}  {'peak MB':>8}")
    for total, kind, name, res in whole:
        if "error" in res:
            print(f"{total:>9,}  {kind:<5}  {name:<17}  error: {res['error']}")
            continue
        print(f"{total:>9,}  {kind:<5}  {name:<17}  {res['wall']:>8.2f}  {res['peak_mb']:>8.0f}")


def _fmt(res: dict[str, Any]) -> str:
    if "error" in res:
        return f"error: {res['error']}"
    return f"cold {res['cold']:.2f}s warm {res['warm']:.2f}s tasks {res['tasks']}"


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main()
