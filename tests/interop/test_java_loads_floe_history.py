"""Iceberg Java loads what floe writes: every table of the demo warehouse `make run` serves
(loaded, counted, every metadata version parsed), and a commit stamped by a committer whose
clock is behind the table's history is accepted or refused exactly as Java's metadata builder
accepts or refuses it (Java fails such a commit; its table stays as it was)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.clock import ManualClock, use_clock
from floe.errors import ValidationError
from floe.scan.readers import plan_to_table
from floe.scan import plan_files
from floe.schema import Schema
from floe.types import LONG, NestedField

pytestmark = pytest.mark.interop

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))


def _tables(catalog: FileSystemCatalog) -> list[str]:
    out = []
    for ns in catalog.list_namespaces():
        out += [f"{'.'.join(ns)}.{name}" for name in
                (ident.name for ident in catalog.list_tables(ns))]
    return sorted(out)


def _metadata_files(location: str) -> list[str]:
    meta = Path(location) / "metadata"
    return sorted(str(p) for p in meta.iterdir() if p.name.endswith(".metadata.json"))


def test_java_loads_and_counts_every_demo_table(oracle: Any, demo_warehouse: Path) -> None:
    catalog = FileSystemCatalog("floe_demo", str(demo_warehouse))
    names = _tables(catalog)
    assert names == ["iot.readings", "sales.orders", "web.events", "web.sessions"]
    oracle.add_catalog("floe_demo", demo_warehouse)
    counts = oracle.sql([f"SELECT count(*) AS c FROM floe_demo.{n}" for n in names], all=True)
    for name, rows in zip(names, counts, strict=True):
        table = catalog.load_table(name)
        floe_rows = plan_to_table(table.io, plan_files(table.io, table.metadata)).num_rows
        assert rows == [{"c": floe_rows}], name
        # every version of the table, not only the current one
        paths = _metadata_files(table.location)
        assert len(paths) > 1
        assert oracle.request("java_metadata", paths=paths) == dict.fromkeys(paths), name


@pytest.fixture(scope="module")
def skew_warehouse(oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> FileSystemCatalog:
    root = tmp_path_factory.mktemp("skew")
    oracle.add_catalog("skew", root)
    return FileSystemCatalog("skew", str(root))


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


@pytest.mark.parametrize("skew_s", [5, 0, -30, -59, -61, -120, -86_400],
                         ids=lambda s: f"{s:+d}s")
def test_a_commit_from_a_clock_behind_is_handled_as_java_handles_it(
        oracle: Any, skew_warehouse: FileSystemCatalog, skew_s: int) -> None:
    name = f"db.t{abs(skew_s)}{'m' if skew_s < 0 else 'p'}"
    table = skew_warehouse.create_table(name, SCHEMA)
    table.append(_rows(1, 2))
    base, base_location = table.metadata, table.metadata_location
    head = base.current_snapshot()
    assert head is not None
    stamp = base.last_updated_ms + skew_s * 1000

    # Java: the snapshot its producer would have stamped at `stamp`, through its builder
    snapshot = {"snapshot-id": 7_000_000 + abs(skew_s), "parent-snapshot-id": head.snapshot_id,
                "sequence-number": base.last_sequence_number + 1, "timestamp-ms": stamp,
                "manifest-list": head.manifest_list, "summary": {"operation": "append"},
                "schema-id": base.current_schema_id}
    java = oracle.request("java_add_snapshot", metadata=base_location,
                          snapshot=json.dumps(snapshot))

    before = _files(table.location)
    with use_clock(ManualClock(stamp)):
        try:
            table.append(_rows(3))
            refused = None
        except ValidationError as exc:
            refused = str(exc)
    assert (refused is None) == (java["error"] is None), (refused, java)
    fresh = skew_warehouse.load_table(name)
    if refused is not None:
        assert "clock" in refused
        # nothing changed: the same metadata version, no file left behind
        assert fresh.metadata_location == base_location
        assert _files(table.location) == before
        expected = 2
    else:
        assert fresh.metadata.last_updated_ms == java["last_updated_ms"] == stamp
        expected = 3
    assert oracle.request("java_metadata", paths=[fresh.metadata_location]) == {
        fresh.metadata_location: None}
    assert oracle.sql(f"SELECT count(*) AS c FROM skew.{name}") == [{"c": expected}]


# -- last in the session: every metadata file any test left behind -----------------------------


def _session_metadata_files(root: Path) -> list[str]:
    """Every metadata file under the session's temporary directory that floe itself reads as
    valid (tests write broken ones on purpose: those are floe's to refuse)."""
    from floe.errors import FloeError
    from floe.metadata import parse_metadata

    paths = []
    for dirpath, _, names in os.walk(root):
        if os.path.basename(dirpath) != "metadata":
            continue
        for n in names:
            if not n.endswith(".metadata.json") or n.startswith("."):
                continue
            path = os.path.join(dirpath, n)
            try:
                parse_metadata(Path(path).read_bytes(), path)
            except (FloeError, OSError):
                continue
            paths.append(path)
    return sorted(paths)


@pytest.mark.last_in_session
def test_java_loads_every_metadata_file_the_session_wrote(
        oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs after every other test of the session (tests/interop/conftest.py): whatever the
    unit, explorer, interop and Spark tests committed — with floe, PyIceberg or Spark — and
    floe reads as valid, Iceberg Java loads too."""
    paths = _session_metadata_files(tmp_path_factory.getbasetemp())
    assert paths, "no metadata file in the session's temporary directory"
    refused = {}
    for i in range(0, len(paths), 2000):
        verdicts = oracle.request("java_metadata", paths=paths[i:i + 2000])
        refused.update({p: why for p, why in verdicts.items() if why is not None})
    assert not refused, (f"{len(refused)} of {len(paths)} metadata files Java refuses:\n"
                         + "\n".join(f"{p}: {why}" for p, why in sorted(refused.items())[:30]))
