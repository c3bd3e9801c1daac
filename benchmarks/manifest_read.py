"""Manifest decoding: floe vs PyIceberg on one manifest of 100k entries with statistics.

Writes (in a temporary directory) a v2 manifest partitioned by ``day(ts), bucket(16, id)``
whose entries carry column sizes, value/null counts and bounds for 10 columns, then times
decoding it, best of 3:

- floe: ``read_manifest`` (count maps decoded on first use, the default);
- floe (eager): ``read_manifest(..., lazy_stats=False)``, every map decoded;
- PyIceberg: ``ManifestFile.fetch_manifest_entry(io, discard_deleted=False)``;
- floe -> cache table: what a plan does on a miss without floe._native: the live entries
  decoded in Python, then the persistent cache's Arrow table built from them;
- floe (native): the same table from floe._native (floe.scan.native), when it is built;
  beside it the C ceiling: the blocks inflated alone (by floe.avro.inflate: ISA-L when
  python-isal is installed, else zlib; zlib's figure is shown too), and the extension's walk of the
  inflated bytes into column buffers alone (``floe._native.decode``); the rest of
  ``floe (native)`` is Python building the Arrow table from those buffers.

Then a manifest list of ``entries / 10`` manifests (two partition summaries each, as the
benchmark tables of benchmarks/plan.py have), decoded into ``ManifestFile`` values:

- floe (Python): ``floe.avro.read_avro`` and ``floe.manifest._manifest_files``, the fallback;
- floe (native): ``floe.avro_native.decode_manifest_list`` (what ``read_manifest_list``
  uses when the extension is built), with the C walk alone beside it;
- PyIceberg: ``pyiceberg.manifest.read_manifest_list``.

Usage: ``python benchmarks/manifest_read.py [entries]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from typing import Any

from floe.io import FileIO
from floe.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestFile,
    ManifestWriter,
    read_manifest,
)
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, TIMESTAMP, NestedField

COLUMNS = 10


def _schema() -> Schema:
    fields = [NestedField(1, "id", LONG, required=True), NestedField(2, "ts", TIMESTAMP)]
    fields += [NestedField(i, f"c{i}", LONG if i % 2 else STRING) for i in range(3, COLUMNS + 1)]
    return Schema(*fields)


def write(path: str, entries: int) -> ManifestFile:
    schema = _schema()
    spec = parse_partition_by("day(ts), bucket(16, id)", schema)
    w = ManifestWriter(FileIO(), path, spec, schema, 2, snapshot_id=1)
    ids = range(1, COLUMNS + 1)
    for n in range(entries):
        w.add(DataFile(
            content=FileContent.DATA,
            file_path=f"s3://bucket/warehouse/db/t/data/ts_day=2024-01-{n % 28 + 1:02d}/"
                      f"id_bucket={n % 16}/{n:08d}-0-3f1c2d4e-00001.parquet",
            file_format=FileFormat.PARQUET,
            partition=(19723 + n % 28, n % 16),
            record_count=100_000 + n,
            file_size_in_bytes=8_000_000 + n,
            column_sizes={i: 200_000 + i * n % 977 for i in ids},
            value_counts={i: 100_000 + n for i in ids},
            null_value_counts={i: n % 7 for i in ids},
            nan_value_counts={},
            lower_bounds={i: (n * i).to_bytes(8, "little") for i in ids},
            upper_bounds={i: (n * i + 99).to_bytes(8, "little") for i in ids},
            split_offsets=[4],
            sort_order_id=0,
        ))
    written = w.close()
    return ManifestFile(path, written.manifest_length, spec.spec_id, sequence_number=1,
                        added_snapshot_id=1)


def best_of(fn: Callable[[], Any], runs: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    entries = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import ManifestFile as PyManifestFile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/manifest.avro"
        t = time.perf_counter()
        mf = write(path, entries)
        print(f"wrote {entries} entries ({mf.manifest_length / 1e6:.1f} MB) with floe in "
              f"{time.perf_counter() - t:.1f}s")
        fio, pio = FileIO(), PyArrowFileIO()
        py_mf = PyManifestFile.from_args(
            manifest_path=path, manifest_length=mf.manifest_length, partition_spec_id=0,
            content=0, sequence_number=1, min_sequence_number=1, added_snapshot_id=1)

        def floe_full() -> Any:
            out = read_manifest(fio, mf, lazy_stats=False)
            return out

        def python_table() -> Any:
            from floe.scan.manifest_store import ManifestStore, wire

            live = read_manifest(fio, mf, discard_deleted=True)
            return ManifestStore._table(mf, [wire(e) for e in live])

        rows = [
            ("floe", *best_of(lambda: read_manifest(fio, mf))),
            ("floe (eager stats)", *best_of(floe_full)),
            ("pyiceberg", *best_of(lambda: py_mf.fetch_manifest_entry(
                pio, discard_deleted=False))),
            ("floe -> cache table", *best_of(python_table)),
        ]
        from floe import avro_native
        from floe.scan import native

        if native.available():
            data = fio.read(path)
            rows.append(("floe (native)", *best_of(lambda: native.decode_live_table(data, mf))))
            # the C ceiling: what decode_live_table spends in C, apart from the rest
            from floe.avro import container_blocks

            def inflated() -> list[tuple[int, bytes]]:
                return [(count, bytes(block)) for count, block, _ in container_blocks(data)[1]]

            blocks = inflated()
            program = avro_native._program(container_blocks(data)[0]["avro.schema"].decode())
            assert program is not None
            ext = native.extension()
            assert ext is not None
            import floe.avro as avro_mod

            secs, _ = best_of(inflated)
            library = "zlib" if avro_mod._inflater()[0] is zlib.decompressobj else "ISA-L"
            rows.append((f"  inflate ({library}, C)", secs, blocks))
            if library != "zlib":
                saved = list(avro_mod._INFLATER)
                avro_mod._INFLATER[:] = [(zlib.decompressobj, zlib.error)]
                try:
                    secs, _ = best_of(inflated)
                finally:
                    avro_mod._INFLATER[:] = saved
                rows.append(("  (inflate by zlib)", secs, blocks))
            secs, _ = best_of(lambda: ext.decode(program.code, program.kind_codes, blocks))
            rows.append(("  decode walk (C)", secs, blocks))
    for name, _, out in rows:
        if name.startswith("  "):
            continue
        assert (out.num_rows if hasattr(out, "num_rows") else len(out)) == entries
    _print(rows, entries)
    lists(max(1, entries // 10))


def _print(rows: list[tuple[str, float, Any]], entries: int) -> None:
    print(f"{'engine':<20} {'entries/s':>12} {'seconds':>9} {'us/entry':>9}")
    for name, secs, _ in rows:
        print(f"{name:<20} {entries / secs:>12,.0f} {secs:>9.3f} {secs / entries * 1e6:>9.2f}")


def lists(manifests: int) -> None:
    """A manifest list of ``manifests`` entries decoded each way (best of 3)."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as py_read_manifest_list

    from floe import avro_native
    from floe.avro import container_blocks, read_avro
    from floe.manifest import ManifestListWriter, PartitionFieldSummary, _manifest_files

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/snap-1.avro"
        with ManifestListWriter(FileIO(), path, 2, 1, None, sequence_number=1) as w:
            w.add_manifests(ManifestFile(
                f"s3://bucket/warehouse/db/t/metadata/{k:08d}-m0.avro", 600_000 + k, 0,
                sequence_number=1, min_sequence_number=1, added_snapshot_id=1,
                added_files_count=1000, existing_files_count=0, deleted_files_count=0,
                added_rows_count=10**8, existing_rows_count=0, deleted_rows_count=0,
                partitions=[PartitionFieldSummary(False, False, (19723 + k // 40).to_bytes(
                    4, "little"), (19724 + k // 40).to_bytes(4, "little")),
                            PartitionFieldSummary(False, False, b"\0\0\0\0",
                                                  b"\x0f\0\0\0")])
                for k in range(manifests))
        data = FileIO().read(path)
        print(f"\nmanifest list of {manifests} manifests ({len(data) / 1e6:.2f} MB)")
        pio = PyArrowFileIO()
        rows = [
            ("floe (Python)", *best_of(lambda: _manifest_files(read_avro(data, path), path))),
            ("pyiceberg", *best_of(lambda: list(py_read_manifest_list(pio.new_input(path))))),
        ]
        if avro_native.available():
            rows.append(("floe (native)",
                         *best_of(lambda: avro_native.decode_manifest_list(data, path))))
            assert rows[-1][2] == rows[0][2]
            program = avro_native._program(
                container_blocks(data)[0]["avro.schema"].decode(), "manifest_list")
            ext = avro_native.extension()
            assert program is not None and ext is not None
            blocks = [(count, bytes(block)) for count, block, _ in container_blocks(data)[1]]
            rows.append(("  decode walk (C)", *best_of(
                lambda: ext.decode(program.code, program.kind_codes, blocks))))
        for name, _, out in rows:
            if not name.startswith("  "):
                assert len(out) == manifests
        _print(rows, manifests)


if __name__ == "__main__":
    main()
