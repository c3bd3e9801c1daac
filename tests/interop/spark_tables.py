"""The Spark-written tables the interop tests read: built once per session, in one request.

Every transform on every source type it accepts (v1 and v2), with extreme, pre-1970, negative,
NaN, null and multi-byte values; schema and partition evolution; merge-on-read position deletes,
Java-API equality deletes; gzip metadata; branches and tags; nested columns.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NS = "db"

# Columns shared by the identity / bucket / truncate tables.
ALL_TYPES = (
    "i int, l bigint, s string, dec decimal(9,2), d date, ts timestamp, ntz timestamp_ntz, "
    "b boolean, bin binary, x double"
)

# One row per edge: epoch, just before epoch, far before epoch, multi-byte strings, extremes,
# NaN / -0.0 / infinity in an unpartitioned double, and a row of nulls.
ALL_TYPES_ROWS = """
(0, 0, '', 0.00, DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00',
 TIMESTAMP_NTZ '1970-01-01 00:00:00', true, X'', 0.0D),
(1, 1, 'a', 14.20, DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.999999',
 TIMESTAMP_NTZ '1969-12-31 23:59:59.999999', false, X'00', -0.0D),
(-1, -1, 'iceberg', -0.01, DATE '1900-01-01', TIMESTAMP '1900-01-01 12:30:00',
 TIMESTAMP_NTZ '1900-01-01 12:30:00', true, X'DEADBEEF', double('NaN')),
(34, 34, '日本語テキスト', -12.34, DATE '2017-11-16', TIMESTAMP '2017-11-16 22:31:08',
 TIMESTAMP_NTZ '2017-11-16 22:31:08', NULL, X'E697A5E69CAC', double('Infinity')),
(-2147483648, -9223372036854775808, '🧊ice', 9999999.99, DATE '1969-01-01',
 TIMESTAMP '1969-01-01 00:00:00', TIMESTAMP_NTZ '1969-01-01 00:00:00', false, X'FF', -1.5D),
(2147483647, 9223372036854775807, 'é', -9999999.49, DATE '2024-02-29',
 TIMESTAMP '2024-02-29 13:45:00.123456', TIMESTAMP_NTZ '2024-02-29 13:45:00.123456', true,
 X'0102', 1.0E300D),
(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(-100, -100, 'abcdefghij', 1.00, DATE '1960-06-15', TIMESTAMP '1960-06-15 05:06:07',
 TIMESTAMP_NTZ '1960-06-15 05:06:07', false, X'61626364', double('NaN'))
"""

PARTITIONINGS = {
    "identity": "i, l, s, dec, d, ts, ntz, b",
    "bucket": (
        "bucket(16, i), bucket(16, l), bucket(8, s), bucket(8, dec), bucket(4, d), "
        "bucket(4, ts), bucket(4, ntz), bucket(4, bin)"
    ),
    "truncate": "truncate(10, i), truncate(10, l), truncate(3, s), truncate(50, dec), "
    "truncate(2, bin)",
}

TIME_COLUMNS = (
    "id int, ts_y timestamp, ts_m timestamp, ts_d timestamp, ts_h timestamp, "
    "ntz_y timestamp_ntz, ntz_m timestamp_ntz, ntz_d timestamp_ntz, ntz_h timestamp_ntz, "
    "d_y date, d_m date, d_d date"
)
TIME_PARTITIONING = (
    "years(ts_y), months(ts_m), days(ts_d), hours(ts_h), years(ntz_y), months(ntz_m), "
    "days(ntz_d), hours(ntz_h), years(d_y), months(d_m), days(d_d)"
)


@dataclass
class SparkTable:
    """One Spark-written table: ``oracle.db.<name>`` stored at ``location``."""

    name: str
    location: Path
    format_version: int
    equality_deletes: bool = False
    gzip: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ident(self) -> str:
        return f"oracle.{NS}.{self.name}"

    @property
    def metadata_dir(self) -> Path:
        return self.location / "metadata"

    def metadata_files(self) -> list[Path]:
        """Every ``vN[.gz].metadata.json`` in version order (``.crc`` files ignored)."""

        def version(p: Path) -> int:
            return int(p.name.split(".")[0][1:])

        files = [
            p
            for p in self.metadata_dir.iterdir()
            if p.name.startswith("v") and p.name.endswith(".metadata.json")
        ]
        return sorted(files, key=version)


def _create(name: str, columns: str, fv: int, partitioning: str | None, props: str = "") -> str:
    part = f" PARTITIONED BY ({partitioning})" if partitioning else ""
    extra = f", {props}" if props else ""
    return (
        f"CREATE TABLE oracle.{NS}.{name} ({columns}) USING iceberg{part} "
        f"TBLPROPERTIES ('format-version'='{fv}'{extra})"
    )


def _statements() -> tuple[list[str], dict[str, SparkTable]]:
    stmts: list[str] = []
    tables: dict[str, tuple[int, dict[str, Any]]] = {}

    for fv in (1, 2):
        for kind, partitioning in PARTITIONINGS.items():
            name = f"{kind}_v{fv}"
            tables[name] = (fv, {})
            stmts += [
                _create(name, ALL_TYPES, fv, partitioning),
                f"INSERT INTO oracle.{NS}.{name} VALUES {ALL_TYPES_ROWS}",
            ]
        name = f"time_v{fv}"
        tables[name] = (fv, {})
        stmts += [
            _create(name, TIME_COLUMNS, fv, TIME_PARTITIONING),
            f"INSERT INTO oracle.{NS}.{name} "
            "SELECT i, ts, ts, ts, ts, ntz, ntz, ntz, ntz, d, d, d "
            f"FROM VALUES {ALL_TYPES_ROWS} AS v({_names(ALL_TYPES)})",
        ]
    # A copy-on-write delete of whole files (v1) and of part of a file (v2).
    stmts += [
        f"DELETE FROM oracle.{NS}.identity_v1 WHERE i = 34",
        f"DELETE FROM oracle.{NS}.truncate_v2 WHERE i = 1",
    ]

    # Schema evolution (add, rename, drop, int -> long) and partition evolution.
    for fv in (1, 2):
        name = f"evolve_v{fv}"
        tables[name] = (fv, {})
        t = f"oracle.{NS}.{name}"
        stmts += [
            _create(name, "id int, name string, price decimal(9,2), d date", fv, "bucket(4, id)"),
            f"INSERT INTO {t} VALUES (1, 'one', 1.50, DATE '2020-01-01'), "
            "(2, 'two', NULL, DATE '1965-05-05'), (-3, NULL, -2.25, NULL)",
            f"ALTER TABLE {t} ADD COLUMN extra string",
            f"ALTER TABLE {t} RENAME COLUMN name TO label",
            f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint",
            f"INSERT INTO {t} VALUES (4000000000, 'four', 4.00, DATE '2021-02-03', 'x'), "
            "(-5, 'fünf', NULL, DATE '1950-12-31', NULL)",
            f"ALTER TABLE {t} ADD PARTITION FIELD truncate(2, label)",
            f"ALTER TABLE {t} ADD PARTITION FIELD months(d)",
            f"INSERT INTO {t} VALUES (6, 'six', 6.60, DATE '1969-12-31', 'y'), "
            "(7, NULL, NULL, NULL, 'z')",
            f"ALTER TABLE {t} DROP PARTITION FIELD bucket(4, id)",
            f"ALTER TABLE {t} DROP COLUMN price",
            f"ALTER TABLE {t} WRITE ORDERED BY id DESC NULLS LAST",
            f"INSERT INTO {t} VALUES (8, 'eight', DATE '2000-02-29', NULL)",
            f"DELETE FROM {t} WHERE id = 2",
        ]
    stmts.append(f"CALL oracle.system.rewrite_manifests('{NS}.evolve_v2')")

    # Merge-on-read position deletes and updates.
    tables["mor_v2"] = (2, {})
    t = f"oracle.{NS}.mor_v2"
    stmts += [
        _create(
            "mor_v2",
            "id bigint, cat string, v double",
            2,
            "cat",
            "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
            "'write.merge.mode'='merge-on-read'",
        ),
        f"INSERT INTO {t} VALUES (1, 'a', 1.0), (2, 'a', 2.0), (3, 'b', 3.0), (4, 'b', NULL), "
        "(5, NULL, 5.0)",
        f"INSERT INTO {t} VALUES (6, 'a', 6.0), (7, 'c', 7.0)",
        f"DELETE FROM {t} WHERE id IN (2, 7)",
        f"UPDATE {t} SET v = v * 10 WHERE cat = 'b'",
        f"MERGE INTO {t} tgt USING (SELECT 1L AS id, 'a' AS cat, -1.0D AS v UNION ALL "
        "SELECT 9L, 'd', 9.0D) src ON tgt.id = src.id "
        "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT *",
    ]

    # Equality deletes (committed after this batch through the Java API).
    tables["eqdel_v2"] = (2, {})
    t = f"oracle.{NS}.eqdel_v2"
    stmts += [
        _create("eqdel_v2", "id int, cat string, d date", 2, "cat"),
        f"INSERT INTO {t} VALUES (1, 'a', DATE '2024-01-01'), (2, 'a', DATE '1969-07-20'), "
        "(3, 'b', NULL), (4, NULL, DATE '2000-01-01'), (5, 'b', DATE '2000-01-02')",
        f"INSERT INTO {t} VALUES (2, 'c', DATE '2024-01-03'), (6, 'c', NULL)",
    ]

    # Gzip-compressed metadata JSON.
    tables["gzip_v2"] = (2, {"gzip": True})
    t = f"oracle.{NS}.gzip_v2"
    stmts += [
        _create("gzip_v2", "id bigint, s string", 2, "bucket(2, id)",
                "'write.metadata.compression-codec'='gzip'"),
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
        f"INSERT INTO {t} VALUES (3, 'c')",
        f"DELETE FROM {t} WHERE id = 1",
    ]

    # Branches and tags, with writes to a branch.
    tables["refs_v2"] = (2, {})
    t = f"oracle.{NS}.refs_v2"
    stmts += [
        _create("refs_v2", "id bigint, s string", 2, None),
        f"INSERT INTO {t} VALUES (1, 'main-1')",
        f"ALTER TABLE {t} CREATE TAG first_tag RETAIN 30 DAYS",
        f"ALTER TABLE {t} CREATE BRANCH dev RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS",
        f"INSERT INTO {t}.branch_dev VALUES (2, 'dev-1')",
        f"INSERT INTO {t} VALUES (3, 'main-2')",
        f"DELETE FROM {t}.branch_dev WHERE id = 1",
    ]

    # Nested columns (struct, list, map), partitioned by a struct field.
    tables["nested_v2"] = (2, {})
    t = f"oracle.{NS}.nested_v2"
    stmts += [
        _create(
            "nested_v2",
            "id int, st struct<a: int, b: string>, arr array<int>, m map<string, double>",
            2,
            "st.a",
        ),
        f"INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'), array(1, 2, NULL), "
        "map('k', 1.0D, 'n', double('NaN'))), (2, NULL, NULL, NULL), "
        "(3, named_struct('a', NULL, 'b', 'é'), array(), map())",
    ]

    out = {
        name: SparkTable(name=name, location=Path(), format_version=fv, gzip=bool(opts.get("gzip")))
        for name, (fv, opts) in tables.items()
    }
    return stmts, out


def _names(columns: str) -> str:
    return ", ".join(re.findall(r"(?:^|,)\s*(\w+) ", columns))


def build(oracle: Any) -> dict[str, SparkTable]:
    """Create every table through the oracle; returns them by short name."""
    stmts, tables = _statements()
    t0 = time.monotonic()
    oracle.sql(stmts)
    res = oracle.equality_delete(f"{NS}.eqdel_v2", "id", [2, 5])
    tables["eqdel_v2"].equality_deletes = True
    tables["eqdel_v2"].extra["equality_delete"] = res
    for t in tables.values():
        t.location = Path(oracle.warehouse) / NS / t.name
    tables["eqdel_v2"].extra["build_seconds"] = time.monotonic() - t0
    return tables


# Known without Spark, so tests can be parametrised by table at collection time.
TABLE_NAMES: tuple[str, ...] = tuple(_statements()[1])
