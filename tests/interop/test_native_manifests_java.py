"""The C decoder of manifests (floe/scan/native.py) on every manifest Iceberg Java wrote for
the Spark tables: it answers exactly what the Python decoder answers, or declines (a decimal
or uuid partition, for instance), never anything else (tests/floe/test_native_manifests.py
holds the comparison). Every manifest list Java wrote is decoded natively too, exactly as
the Python decoder decodes it (floe/avro_native.py; the partition summaries' bounds of
every partition type the Spark tables have)."""

from __future__ import annotations

import pytest
from spark_tables import SparkTable

from floe.io import FileIO
from floe.manifest import load_bytes, read_manifest_list
from floe.metadata import parse_metadata
from floe.scan import native
from tests.floe.test_native_manifest_lists import check_list
from tests.floe.test_native_manifests import check

pytestmark = [pytest.mark.interop,
              pytest.mark.skipif(not native.available(), reason="floe._native is not built")]


def test_every_java_manifest(spark_tables: dict[str, SparkTable]) -> None:
    io = FileIO()
    decoded = declined = lists = 0
    for table in spark_tables.values():
        path = table.metadata_files()[-1]
        md = parse_metadata(path.read_bytes(), str(path))
        seen: set[str] = set()
        for snap in md.snapshots:
            # every manifest list Java wrote: decoded natively, exactly as in Python
            assert check_list(load_bytes(io, snap.manifest_list), snap.manifest_list)
            lists += 1
            for m in read_manifest_list(io, snap.manifest_list):
                if m.manifest_path in seen:
                    continue
                seen.add(m.manifest_path)
                if native.decode_live_table(load_bytes(io, m.manifest_path), m) is None:
                    declined += 1
                    continue
                check(io, m)
                decoded += 1
    print(f"\n[native] {decoded} Java manifests decoded, {declined} declined; "
          f"{lists} manifest lists decoded")
    assert decoded > declined
