"""A big Iceberg v2 table for browsing benchmarks and tests: many snapshots, many files.

``build_big_table(path, snapshots=10_000, files=1_000_000)`` writes a real file-system table
at ``path`` (``metadata/v<N>.metadata.json`` + ``version-hint.text``, manifests, manifest
lists) that floe and PyIceberg's ``StaticTable`` read, partitioned by ``day(ts)`` and
``bucket(16, id)``, each live entry with column sizes, value / null counts and bounds for
10 columns. **Data files are not written**: browsing metadata never opens them, and their
paths point under ``data/`` of the table.

Shape, like an append-only table with manifest merging: snapshot ``i`` appends ``files /
snapshots`` files in one new manifest; every ``merge_every``-th snapshot instead writes ONE
merged manifest holding the last ``merge_every`` snapshots' files (earlier ones EXISTING,
its own ADDED) that replaces their small manifests. So the current snapshot's manifest list
holds ``snapshots / merge_every`` merged manifests plus fewer than ``merge_every`` small
ones, every file is live, and every manifest list stays bounded (~1,000 entries at 10k).

Fast: manifests are written with fastavro from pre-built records (statistics maps come from
a pool shared across files), using the Avro schemas and key/value metadata of floe's
``ManifestWriter`` / ``ManifestListWriter`` (files identical in shape), on a process per
core. Manifest lists are Avro container files whose blocks of merged manifests are encoded
and deflated once and reused by every later list (Avro blocks are independent; all lists
share one sync marker). Only the last metadata file is written (with every snapshot, the
snapshot log, the ``main`` branch and a few tags); the metadata log names the previous 100
versions, which do not exist. A stamp file records the parameters: calling again with the
same parameters returns at once.

Usage: ``python benchmarks/big_table.py PATH [--snapshots N] [--files M] [--seed S]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import struct
import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import fastavro

from floe import avro_schemas as S
from floe.avro import encode_long
from floe.partitioning import PartitionSpec, parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, TIMESTAMP, NestedField

__all__ = ["build_big_table", "big_table_schema", "big_table_spec", "STAMP", "NAMESPACE",
           "TABLE"]

STAMP = ".big-table-stamp.json"
#: Where benchmarks put the table inside a warehouse (namespace directory, table directory).
NAMESPACE, TABLE = "bench", "big"
COLUMNS = 10
MERGE_EVERY = 10
FORMAT_VERSION = 2
#: Merged manifests per reused manifest-list block.
LIST_BLOCK = 64
_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
_SNAPSHOT_INTERVAL_MS = 3_600_000
_DAY_MS = 86_400_000
_POOL = 97  # distinct statistics variants shared across files
_TAGS = 5
_METADATA_LOG = 100


def big_table_schema() -> Schema:
    fields = [NestedField(1, "id", LONG, required=True), NestedField(2, "ts", TIMESTAMP)]
    fields += [NestedField(i, f"c{i}", LONG if i % 2 else STRING) for i in range(3, COLUMNS + 1)]
    return Schema(*fields, schema_id=0)


def big_table_spec(schema: Schema) -> PartitionSpec:
    return parse_partition_by("day(ts), bucket(16, id)", schema)


@dataclass(frozen=True)
class _Plan:
    """Everything a worker needs to write its manifests (picklable)."""

    location: str
    snapshots: int
    files: int
    merge_every: int
    seed: int
    snapshot_ids: tuple[int, ...]

    def added(self, i: int) -> int:
        """Files appended by snapshot ``i`` (0-based)."""
        base, extra = divmod(self.files, self.snapshots)
        return base + (1 if i < extra else 0)

    def first_file(self, i: int) -> int:
        base, extra = divmod(self.files, self.snapshots)
        return i * base + min(i, extra)

    def is_merge(self, i: int) -> bool:
        return (i + 1) % self.merge_every == 0

    def timestamp_ms(self, i: int) -> int:
        return _START_MS + i * _SNAPSHOT_INTERVAL_MS


_SMALL = [encode_long(i) for i in range(1 << 13)]


def _zz(n: int) -> bytes:
    return _SMALL[n] if 0 <= n < 8192 else encode_long(n)


def _str(b: bytes) -> bytes:
    return _zz(len(b)) + b


_NULL, _SOME = _zz(0), _zz(1)


def _int_map_items(items: dict[int, int]) -> bytes:
    """Items of an Iceberg ``map<int, long>`` (an Avro array of key/value records)."""
    return b"".join(_zz(k) + _zz(v) for k, v in items.items())


def _bytes_map_items(items: dict[int, bytes]) -> bytes:
    return b"".join(_zz(k) + _str(v) for k, v in items.items())


def _array(count: int, items: bytes) -> bytes:
    """An optional (non-null) Avro array of ``count`` items in one block."""
    return _SOME + _zz(count) + items + _NULL


def _stat_pool(seed: int) -> list[dict[str, Any]]:
    """Column sizes, null counts and the bounds of columns 3..10, shared by files (values,
    id and ts bounds vary per file), as dicts and as encoded Avro."""
    rnd = random.Random(seed)
    pool = []
    for _ in range(_POOL):
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for c in range(3, COLUMNS + 1):
            if c % 2:
                lo = rnd.randrange(-1_000_000, 1_000_000)
                lower[c] = struct.pack("<q", lo)
                upper[c] = struct.pack("<q", lo + rnd.randrange(10**6))
            else:
                a, b = sorted(f"{c}-{rnd.randrange(10**6):06d}" for _ in range(2))
                lower[c], upper[c] = a.encode(), b.encode()
        sizes = {c: rnd.randrange(10_000, 2_000_000) for c in range(1, COLUMNS + 1)}
        nulls = {c: (rnd.randrange(50) if c > 2 else 0) for c in range(1, COLUMNS + 1)}
        pool.append({
            "column_sizes": sizes, "null_value_counts": nulls, "lower": lower, "upper": upper,
            "enc_sizes": _array(len(sizes), _int_map_items(sizes)),
            "enc_nulls": _array(len(nulls), _int_map_items(nulls)),
            "enc_lower": _bytes_map_items(lower), "enc_upper": _bytes_map_items(upper),
        })
    return pool


@dataclass(frozen=True, slots=True)
class _File:
    n: int
    path: str
    day: int
    bucket: int
    records: int
    size: int
    id_bounds: tuple[int, int]
    ts_bounds: tuple[int, int]


def _files(plan: _Plan, i: int) -> list[_File]:
    """Snapshot ``i``'s files."""
    ts = plan.timestamp_ms(i) * 1000
    day = plan.timestamp_ms(i) // _DAY_MS
    day_str = time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
    first = plan.first_file(i)
    out = []
    for n in range(first, first + plan.added(i)):
        bucket = n % 16
        records = _records(n)
        out.append(_File(
            n, f"{plan.location}/data/ts_day={day_str}/id_bucket={bucket}/"
               f"{n:08d}-{i}-{plan.seed:04d}-00001.parquet",
            day, bucket, records, _size(n), (n * 100_000, n * 100_000 + records),
            (ts - (n % 3_600) * 1_000_000, ts)))
    return out


def _records(n: int) -> int:
    return 50_000 + (n * 7919) % 100_000


def _size(n: int) -> int:
    return _records(n) * 80 + n % 4096


def data_file_record(f: _File, pool: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``data_file`` record of a file as fastavro would take it (for checking
    :func:`encode_data_file` against fastavro)."""
    stats = pool[f.n % _POOL]

    def kv(items: dict[int, Any]) -> list[dict[str, Any]]:
        return [{"key": k, "value": v} for k, v in items.items()]

    q = struct.Struct("<q").pack
    return {
        "content": 0, "file_path": f.path, "file_format": "PARQUET",
        "partition": {"ts_day": f.day, "id_bucket": f.bucket},
        "record_count": f.records, "file_size_in_bytes": f.size,
        "column_sizes": kv(stats["column_sizes"]),
        "value_counts": kv({c: f.records for c in range(1, COLUMNS + 1)}),
        "null_value_counts": kv(stats["null_value_counts"]), "nan_value_counts": None,
        "lower_bounds": kv({1: q(f.id_bounds[0]), 2: q(f.ts_bounds[0]), **stats["lower"]}),
        "upper_bounds": kv({1: q(f.id_bounds[1]), 2: q(f.ts_bounds[1]), **stats["upper"]}),
        "key_metadata": None, "split_offsets": [4], "equality_ids": None, "sort_order_id": 0,
        "referenced_data_file": None,
    }


_Q = struct.Struct("<q").pack
_FORMAT = _str(b"PARQUET")
_SPLITS = _array(1, _zz(4))


def encode_data_file(f: _File, pool: list[dict[str, Any]]) -> bytes:
    """The Avro binary of :func:`data_file_record` (v2 ``data_file``, field order of
    floe.avro_schemas), built from pre-encoded pool parts: fastavro's per-record union
    checks make it ~100x slower on these records."""
    stats = pool[f.n % _POOL]
    nv = _zz(f.records)
    values = b"".join(_SMALL[c] + nv for c in range(1, COLUMNS + 1))
    lower = _SMALL[1] + _str(_Q(f.id_bounds[0])) + _SMALL[2] + _str(_Q(f.ts_bounds[0]))
    upper = _SMALL[1] + _str(_Q(f.id_bounds[1])) + _SMALL[2] + _str(_Q(f.ts_bounds[1]))
    return b"".join((
        _NULL, _str(f.path.encode()), _FORMAT,
        _SOME, _zz(f.day), _SOME, _SMALL[f.bucket],
        nv, _zz(f.size),
        stats["enc_sizes"], _array(COLUMNS, values), stats["enc_nulls"], _NULL,
        _array(COLUMNS, lower + stats["enc_lower"]), _array(COLUMNS, upper + stats["enc_upper"]),
        _NULL, _SPLITS, _NULL, _SOME + _SMALL[0], _NULL,
    ))


def _manifest_metadata(schema: Schema, spec: PartitionSpec) -> dict[str, str]:
    """The key/value metadata ManifestWriter writes (spec "Manifest Metadata")."""
    compact = (",", ":")
    return {
        "schema": json.dumps(schema.to_json(), separators=compact),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps(spec.fields_to_json(), separators=compact),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(FORMAT_VERSION),
        "content": "data",
    }


def _i32(v: int) -> bytes:
    return struct.pack("<i", v)


class _Container:
    """Avro container files assembled from encoded records: the header as fastavro writes
    it (schema and metadata), then raw-deflate blocks ending with the file's sync marker."""

    def __init__(self, avro_schema: dict[str, Any], sync: bytes, level: int = 6) -> None:
        self.parsed = fastavro.parse_schema(avro_schema)
        self.sync = sync
        self.level = level

    def header(self, meta: dict[str, str]) -> bytes:
        buf = io.BytesIO()
        fastavro.writer(buf, self.parsed, [], codec="deflate", metadata=meta,
                        sync_marker=self.sync)
        return buf.getvalue()

    def block(self, encoded: list[bytes]) -> bytes:
        c = zlib.compressobj(self.level, zlib.DEFLATED, -15)
        data = c.compress(b"".join(encoded)) + c.flush()
        return _zz(len(encoded)) + _zz(len(data)) + data + self.sync

    def encode(self, record: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self.parsed, record)
        return buf.getvalue()


#: (status, snapshot id, data sequence number or None (inherited), file, encoded data_file)
_Entry = tuple[int, int, "int | None", _File, bytes]


def _write_manifest(path: str, container: _Container, header: bytes, snapshot_id: int,
                    seq: int, entries: list[_Entry]) -> dict[str, Any]:
    """Write one manifest; return its manifest-list record (raw Avro values)."""
    encoded = []
    added = existing = added_rows = existing_rows = 0
    min_seq = seq
    for status, sid, dseq, f, df in entries:
        seqs = _NULL + _NULL if dseq is None else (_SOME + _zz(dseq)) * 2
        encoded.append(_SMALL[status] + _SOME + _zz(sid) + seqs + df)
        if status == 1:
            added += 1
            added_rows += f.records
        else:
            existing += 1
            existing_rows += f.records
        if dseq is not None and dseq < min_seq:
            min_seq = dseq
    data = header + b"".join(container.block(encoded[k:k + 2000])
                             for k in range(0, len(encoded), 2000))
    with open(path, "wb") as out:
        out.write(data)
    days = [e[3].day for e in entries]
    buckets = [e[3].bucket for e in entries]
    return {
        "manifest_path": path, "manifest_length": len(data), "partition_spec_id": 0,
        "content": 0, "sequence_number": seq, "min_sequence_number": min_seq,
        "added_snapshot_id": snapshot_id, "added_files_count": added,
        "existing_files_count": existing, "deleted_files_count": 0,
        "added_rows_count": added_rows, "existing_rows_count": existing_rows,
        "deleted_rows_count": 0,
        "partitions": [
            {"contains_null": False, "contains_nan": False,
             "lower_bound": _i32(min(days)), "upper_bound": _i32(max(days))},
            {"contains_null": False, "contains_nan": False,
             "lower_bound": _i32(min(buckets)), "upper_bound": _i32(max(buckets))},
        ],
        "key_metadata": None,
    }


def manifest_avro_schema(schema: Schema, spec: PartitionSpec) -> dict[str, Any]:
    """What ManifestWriter.avro_schema() gives for this schema and spec."""
    ptype = spec.partition_type(schema)
    return S.to_avro_schema(S.manifest_entry_type(FORMAT_VERSION, ptype), "manifest_entry")


def _write_groups(plan: _Plan, groups: range) -> list[tuple[int, dict[str, Any]]]:
    """Manifests of the snapshots in ``groups`` (``merge_every`` snapshots each):
    (snapshot index, manifest-list record) for each manifest written."""
    schema = big_table_schema()
    spec = big_table_spec(schema)
    container = _Container(manifest_avro_schema(schema, spec),
                           random.Random(plan.seed * 31 + groups.start).randbytes(16), level=1)
    header = container.header(_manifest_metadata(schema, spec))
    pool = _stat_pool(plan.seed)
    mdir = os.path.join(plan.location, "metadata")
    out: list[tuple[int, dict[str, Any]]] = []
    for g in groups:
        first = g * plan.merge_every
        last = min(first + plan.merge_every, plan.snapshots)
        carried: list[_Entry] = []
        for i in range(first, last):
            sid, seq = plan.snapshot_ids[i], i + 1
            files = [(f, encode_data_file(f, pool)) for f in _files(plan, i)]
            if plan.is_merge(i):
                entries = [*carried, *((1, sid, None, f, df) for f, df in files)]
                path = os.path.join(mdir, f"merged-{i:06d}-m0.avro")
            else:
                entries = [(1, sid, None, f, df) for f, df in files]
                path = os.path.join(mdir, f"{i:06d}-{plan.seed:04d}-m0.avro")
            out.append((i, _write_manifest(path, container, header, sid, seq, entries)))
            carried += [(0, sid, seq, f, df) for f, df in files]
    return out


# --- manifest lists: Avro container files assembled from reused blocks ---------------------


def _write_lists(plan: _Plan, by_snapshot: dict[int, dict[str, Any]]) -> list[str]:
    """One manifest list per snapshot: the merged manifests so far (in reused blocks), then
    the small manifests since the last merge."""
    writer = _Container(S.to_avro_schema(S.manifest_file_type(FORMAT_VERSION), "manifest_file"),
                        random.Random(plan.seed).randbytes(16))
    mdir = os.path.join(plan.location, "metadata")
    merged: list[bytes] = []
    full_blocks: list[bytes] = []
    small: list[bytes] = []
    paths = []
    for i in range(plan.snapshots):
        record = by_snapshot.get(i)
        if record is not None:
            enc = writer.encode(record)
            if plan.is_merge(i):
                merged.append(enc)
                small = []
                if len(merged) % LIST_BLOCK == 0:
                    full_blocks.append(writer.block(merged[-LIST_BLOCK:]))
            else:
                small.append(enc)
        sid = plan.snapshot_ids[i]
        meta = {"snapshot-id": str(sid),
                "parent-snapshot-id": str(plan.snapshot_ids[i - 1]) if i else "null",
                "sequence-number": str(i + 1), "format-version": str(FORMAT_VERSION)}
        tail = merged[len(full_blocks) * LIST_BLOCK:] + small
        path = os.path.join(mdir, f"snap-{sid}-1-{plan.seed:04d}.avro")
        with open(path, "wb") as f:
            f.write(writer.header(meta))
            for b in full_blocks:
                f.write(b)
            if tail:
                f.write(writer.block(tail))
        paths.append(path)
    return paths


# --- table metadata ---------------------------------------------------------------------------


def _metadata_json(plan: _Plan, lists: list[str], schema: Schema, spec: PartitionSpec
                   ) -> dict[str, Any]:
    snapshots = []
    total_records = total_size = total_files = 0
    for i in range(plan.snapshots):
        first, count = plan.first_file(i), plan.added(i)
        records = sum(_records(n) for n in range(first, first + count))
        size = sum(_size(n) for n in range(first, first + count))
        total_records += records
        total_size += size
        total_files += count
        snapshots.append({
            "snapshot-id": plan.snapshot_ids[i],
            **({"parent-snapshot-id": plan.snapshot_ids[i - 1]} if i else {}),
            "sequence-number": i + 1,
            "timestamp-ms": plan.timestamp_ms(i),
            "manifest-list": lists[i],
            "summary": {
                "operation": "append",
                "added-data-files": str(count), "added-records": str(records),
                "added-files-size": str(size),
                "changed-partition-count": str(min(count, 16)),
                "total-records": str(total_records), "total-files-size": str(total_size),
                "total-data-files": str(total_files), "total-delete-files": "0",
                "total-position-deletes": "0", "total-equality-deletes": "0",
            },
            "schema-id": 0,
        })
    last_ms = plan.timestamp_ms(plan.snapshots - 1)
    current = plan.snapshot_ids[-1]
    refs: dict[str, Any] = {"main": {"snapshot-id": current, "type": "branch"}}
    for t in range(1, _TAGS + 1):
        i = plan.snapshots * t // (_TAGS + 1)
        refs[f"release-{t}"] = {"snapshot-id": plan.snapshot_ids[i], "type": "tag"}
    version = plan.snapshots + 1
    mdir = os.path.join(plan.location, "metadata")
    metadata_log = [
        {"metadata-file": os.path.join(mdir, f"v{v}.metadata.json"),
         "timestamp-ms": plan.timestamp_ms(v - 2) if v >= 2 else _START_MS - 1}
        for v in range(max(1, version - _METADATA_LOG), version)
    ]
    return {
        "format-version": FORMAT_VERSION,
        "table-uuid": str(uuid.UUID(int=random.Random(plan.seed).getrandbits(128), version=4)),
        "location": plan.location,
        "last-sequence-number": plan.snapshots,
        "last-updated-ms": last_ms,
        "last-column-id": schema.highest_field_id,
        "current-schema-id": 0,
        "schemas": [schema.to_json()],
        "default-spec-id": 0,
        "partition-specs": [spec.to_json()],
        "last-partition-id": spec.last_assigned_field_id,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"write.target-file-size-bytes": str(512 * 1024 * 1024),
                       "commit.manifest-merge.enabled": "true"},
        "current-snapshot-id": current,
        "refs": refs,
        "snapshots": snapshots,
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]}
                         for s in snapshots],
        "metadata-log": metadata_log,
        "statistics": [],
        "partition-statistics": [],
    }


# --- entry point ------------------------------------------------------------------------------


def _chunks(n: int, parts: int) -> Iterator[range]:
    step = max(1, -(-n // parts))
    for start in range(0, n, step):
        yield range(start, min(n, start + step))


def build_big_table(path: str, snapshots: int = 10_000, files: int = 1_000_000, *,
                    seed: int = 0, merge_every: int = MERGE_EVERY,
                    workers: int | None = None, timings: dict[str, float] | None = None) -> str:
    """Write the table at ``path`` (a table directory) and return its metadata location.

    Data files are NOT written (browsing metadata never opens them). Returns at once when
    ``path`` holds a table built with the same parameters (a stamp file records them).
    ``timings``, when given, receives the seconds of each step.
    """
    if snapshots < 1 or files < snapshots:
        raise ValueError("need at least one snapshot and at least one file per snapshot")
    location = os.path.abspath(path)
    params = {"snapshots": snapshots, "files": files, "seed": seed, "merge_every": merge_every,
              "format": 1}
    stamp = os.path.join(location, STAMP)
    version = snapshots + 1
    metadata_location = os.path.join(location, "metadata", f"v{version}.metadata.json")
    try:
        with open(stamp) as f:
            if json.load(f) == params and os.path.exists(metadata_location):
                return metadata_location
    except (OSError, ValueError):
        pass
    if os.path.exists(location):
        shutil.rmtree(location)
    os.makedirs(os.path.join(location, "metadata"))
    t = timings if timings is not None else {}

    rnd = random.Random(seed)
    ids: set[int] = set()
    while len(ids) < snapshots:
        ids.add(rnd.getrandbits(62) + 1)
    order = sorted(ids)
    rnd.shuffle(order)
    plan = _Plan(location, snapshots, files, merge_every, seed, tuple(order))

    t0 = time.perf_counter()
    groups = -(-snapshots // merge_every)
    n_workers = workers or os.cpu_count() or 1
    by_snapshot: dict[int, dict[str, Any]] = {}
    if n_workers > 1 and groups > 1:
        with ProcessPoolExecutor(n_workers) as pool:
            chunks = list(_chunks(groups, n_workers * 8))
            for result in pool.map(_write_groups, [plan] * len(chunks), chunks):
                by_snapshot.update(result)
    else:
        by_snapshot.update(_write_groups(plan, range(groups)))
    t["manifests"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    lists = _write_lists(plan, by_snapshot)
    t["manifest_lists"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    schema = big_table_schema()
    md = _metadata_json(plan, lists, schema, big_table_spec(schema))
    with open(metadata_location, "w") as f:
        json.dump(md, f, separators=(",", ":"))
    with open(os.path.join(location, "metadata", "version-hint.text"), "w") as f:
        f.write(str(version))
    with open(stamp, "w") as f:
        json.dump(params, f)
    t["metadata"] = time.perf_counter() - t0
    return metadata_location


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("path", help="table directory to write (e.g. WAREHOUSE/bench/big)")
    p.add_argument("--snapshots", type=int, default=10_000)
    p.add_argument("--files", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--merge-every", type=int, default=MERGE_EVERY)
    args = p.parse_args(argv)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    location = build_big_table(args.path, args.snapshots, args.files, seed=args.seed,
                               merge_every=args.merge_every, timings=timings)
    total = time.perf_counter() - t0
    if not timings:
        print(f"{location}: already built with these parameters ({total:.2f} s)")
        return 0
    print(f"{args.snapshots:,} snapshots, {args.files:,} files -> {location}")
    for step, seconds in timings.items():
        print(f"  {step:<16} {seconds:8.2f} s")
    print(f"  {'total':<16} {total:8.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
