"""What ``make run``'s demo warehouse adds to floe.demo's tables so that every page of the
explorer has something to show: ``web.sessions`` with nested values (struct, map, list,
boolean), position and equality deletes, a schema change, a branch that diverges from main
and a tag. Written with floe, like the rest of the demo, each commit stamped when it
happens."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import (
    BOOLEAN,
    DOUBLE,
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    StructType,
)


def session_rows(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({
        "session_id": pa.array(ids, pa.int64()),
        "country": pa.array([("DE", "FR", "JP", "US")[i % 4] for i in ids]),
        "active": pa.array([i % 3 != 0 for i in ids]),
        "device": pa.array([{"os": ("linux", "ios", "android")[i % 3], "version": 10 + i % 5}
                            for i in ids], pa.struct([pa.field("os", pa.string()),
                                                      pa.field("version", pa.int32())])),
        "tags": pa.array([[(f"k{i % 4}", i % 10)] for i in ids], pa.map_(pa.string(), pa.int32())),
        "pages": pa.array([[f"/p{j}" for j in range(i % 3 + 1)] for i in ids],
                          pa.list_(pa.string())),
        "duration_s": pa.array([float(i % 97) * 1.5 for i in ids], pa.float64()),
    })


def add_demo_changes(path: str) -> str:
    """Write ``web.sessions`` under the demo warehouse ``path``; returns its location."""
    catalog = FileSystemCatalog("local", str(Path(path)))
    schema = Schema(
        NestedField(1, "session_id", LONG, required=True),
        NestedField(2, "country", STRING, required=True),
        NestedField(3, "active", BOOLEAN),
        NestedField(4, "device", StructType(NestedField(8, "os", STRING),
                                            NestedField(9, "version", INT))),
        NestedField(5, "tags", MapType(10, STRING, 11, INT, value_required=False)),
        NestedField(6, "pages", ListType(12, STRING, element_required=False)),
        NestedField(7, "duration_s", DOUBLE),
        schema_id=0,
    )
    if ("web",) not in catalog.list_namespaces():
        catalog.create_namespace(("web",))
    table = catalog.create_table(
        "web.sessions", schema, parse_partition_by("country", schema), format_version=2,
        properties={"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
                    "commit.manifest-merge.enabled": "false"})
    table.append(session_rows(0, 40))
    table.append(session_rows(40, 30))
    first_main = table.current_snapshot()
    assert first_main is not None
    table.manage_snapshots().create_tag("v1", first_main.snapshot_id).commit()
    # A branch that diverges: more rows on "dev" only.
    table.manage_snapshots().create_branch("dev", first_main.snapshot_id).commit()
    table.append(session_rows(1000, 25), branch="dev")
    # Row-level deletes on main: position deletes, then equality deletes.
    table.delete_where("session_id < 5", mode="merge-on-read")
    table.delete_equal(["country"], pa.table({"country": ["JP"]}))
    # A schema change, then rows that have the new column.
    table.update_schema().add_column("referrer", "string").commit()
    more = session_rows(70, 20).append_column("referrer", pa.array(["search"] * 20))
    table.append(more)
    return table.location


def create_demo(path: str) -> None:
    """The whole demo warehouse of ``make run``: floe.demo's tables plus ``web.sessions``."""
    from floe.demo import create_demo_warehouse

    create_demo_warehouse(path)
    add_demo_changes(path)
