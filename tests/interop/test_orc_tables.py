"""ORC tables written by Spark + Iceberg Java 1.10.2, read by floe without a name mapping:
the field ids come from the ``iceberg.id`` type attributes in each file's footer
(floe.io.orc). Every snapshot (appends, position deletes, equality deletes, schema
evolution with renamed, added and dropped columns, nested types, an evolved partition spec)
gives Spark's rows."""

from __future__ import annotations

from typing import Any

import pytest
from test_scan_vs_spark import _floe_rows, _multiset

from floe.catalog.filesystem import load_table_metadata
from floe.io import FileIO
from floe.io.orc import orc_types
from floe.manifest import read_manifest, read_manifest_list

NS = "db"
ORC = ("'write.format.default'='orc', 'write.delete.format.default'='orc', "
       "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read'")
TABLES = {"orc_v2": 2, "orc_v1": 1}


def _statements(name: str, fv: int) -> list[str]:
    t = f"oracle.{NS}.{name}"
    props = ORC if fv == 2 else "'write.format.default'='orc'"
    out = [
        f"CREATE TABLE {t} (id bigint, cat string, amount decimal(10,2), "
        "st struct<a: int, b: string>, tags array<string>, attrs map<string, int>, "
        f"ts timestamp) USING iceberg PARTITIONED BY (cat) "
        f"TBLPROPERTIES ('format-version'='{fv}', {props})",
        f"INSERT INTO {t} VALUES "
        "(1, 'a', 1.50, named_struct('a', 1, 'b', 'x'), array('p', 'q'), map('k', 1), "
        "TIMESTAMP '2024-01-01 10:00:00'), "
        "(2, 'a', NULL, NULL, array(), map(), NULL), "
        "(3, 'b', 3.25, named_struct('a', NULL, 'b', 'y'), NULL, NULL, "
        "TIMESTAMP '2024-02-01 00:00:00')",
        f"INSERT INTO {t} VALUES (4, 'b', 4.00, named_struct('a', 4, 'b', 'z'), "
        "array('r'), map('m', 4, 'n', 5), TIMESTAMP '2024-03-01 12:30:00')",
        f"ALTER TABLE {t} RENAME COLUMN amount TO price",
        f"ALTER TABLE {t} ADD COLUMN note string",
        f"ALTER TABLE {t} ALTER COLUMN st.a TYPE bigint",
        f"INSERT INTO {t} VALUES (5, 'c', 5.55, named_struct('a', 5000000000, 'b', 'w'), "
        "array('s'), map('o', 6), TIMESTAMP '2024-04-01 00:00:00', 'new')",
        f"ALTER TABLE {t} DROP COLUMN tags",
        f"ALTER TABLE {t} ADD PARTITION FIELD bucket(2, id)",
        f"INSERT INTO {t} VALUES (6, 'a', 6.00, NULL, map('p', 7), "
        "TIMESTAMP '2024-05-01 00:00:00', 'spec 1')",
    ]
    if fv == 2:
        out += [f"DELETE FROM {t} WHERE id = 1",
                f"UPDATE {t} SET note = 'updated' WHERE id = 4"]
    else:
        out += [f"DELETE FROM {t} WHERE cat = 'c'"]
    return out


@pytest.fixture(scope="module")
def orc_tables(oracle: Any) -> dict[str, Any]:
    oracle.sql([s for name, fv in TABLES.items() for s in _statements(name, fv)])
    oracle.equality_delete(f"{NS}.orc_v2", "id", [3])
    io = FileIO()
    out: dict[str, Any] = {}
    keys, statements = [], []
    for name in TABLES:
        location = oracle.warehouse / NS / name
        _, md = load_table_metadata(io, str(location))
        assert "schema.name-mapping.default" not in md.properties
        out[name] = {"location": location, "md": md, "versions": {}}
        for s in md.snapshots:
            keys.append((name, s.snapshot_id))
            statements.append(f"SELECT * FROM oracle.{NS}.{name} VERSION AS OF {s.snapshot_id}")
    for (name, sid), rows in zip(keys, oracle.sql(statements, all=True), strict=True):
        out[name]["versions"][sid] = rows
    return out


@pytest.mark.parametrize("name", list(TABLES))
def test_every_snapshot_of_an_orc_table_matches_spark(orc_tables: dict[str, Any],
                                                      name: str) -> None:
    t = orc_tables[name]
    assert len(t["versions"]) >= 5
    for sid, rows in t["versions"].items():
        assert _multiset(_floe_rows(t["location"], snapshot_id=sid)) == _multiset(rows), sid


def test_orc_files_carry_field_ids_and_position_deletes_are_orc(orc_tables: dict[str, Any]) -> None:
    io = FileIO()
    md = orc_tables["orc_v2"]["md"]
    formats, ids = set(), set()
    for m in read_manifest_list(io, md.current_snapshot().manifest_list):
        for e in read_manifest(io, m):
            df = e.data_file
            formats.add((int(df.content), str(df.file_format).upper()))
            if str(df.file_format).upper() == "ORC":
                path = df.file_path.removeprefix("file:")
                with open(path, "rb") as f:
                    ids |= {t.field_id for t in orc_types(f.read(), path)}
    # Spark's position deletes are ORC; the oracle tool writes equality deletes as Parquet
    assert {(0, "ORC"), (1, "ORC")} <= formats and 2 in {c for c, _ in formats}
    assert {1, 2, 3} <= ids  # id, cat, amount/price


def test_filtered_orc_scan_matches_spark(oracle: Any, orc_tables: dict[str, Any]) -> None:
    rows = oracle.sql(f"SELECT * FROM oracle.{NS}.orc_v2 WHERE price > 2 AND st.b <> 'w'")
    ours = _floe_rows(orc_tables["orc_v2"]["location"],
                      row_filter="price > 2 AND st.b <> 'w'")
    assert _multiset(ours) == _multiset(rows)
