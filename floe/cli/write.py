"""``floe create``, ``append``, ``delete`` and ``overwrite`` (ARCHITECTURE.md: the ``floe``
command contract).

Each command is one commit and prints the new metadata location; ``delete --dry-run`` prints
what a real run would remove or rewrite instead (``--json``: one JSON document with the full
paths).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from floe.cli.common import TABLE_HELP, open_catalog_for_create, open_table
from floe.errors import ValidationError
from floe.io import local_path
from floe.manifest import DataFile
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, parse_sort_by
from floe.table import Table
from floe.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

if TYPE_CHECKING:  # the writing machinery is imported by the commands that write, so the
    import pyarrow as pa  # read-only `floe` commands start faster


__all__ = ["register"]


def _arrow_schema_to_iceberg(arrow_schema: pa.Schema) -> Schema:
    import pyarrow as pa

    """The Iceberg schema of an Arrow schema, ids in depth-first order (reassigned on create
    anyway); unsigned 32/64-bit integers become long."""
    next_id = [0]

    def fid() -> int:
        next_id[0] += 1
        return next_id[0]

    def convert(t: pa.DataType) -> IcebergType:
        if pa.types.is_boolean(t):
            return BOOLEAN
        if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) \
                or pa.types.is_uint8(t) or pa.types.is_uint16(t):
            return INT
        if pa.types.is_integer(t):
            return LONG
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            return FLOAT
        if pa.types.is_float64(t):
            return DOUBLE
        if pa.types.is_decimal(t):
            return DecimalType(t.precision, t.scale)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return STRING
        if pa.types.is_fixed_size_binary(t):
            return FixedType(t.byte_width)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return BINARY
        if pa.types.is_date(t):
            return DATE
        if pa.types.is_time(t):
            return TIME
        if pa.types.is_timestamp(t):
            return TIMESTAMPTZ if t.tz is not None else TIMESTAMP
        if pa.types.is_struct(t):
            return StructType(*(field(t.field(i)) for i in range(t.num_fields)))
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            eid = fid()
            return ListType(eid, convert(t.value_type), not t.value_field.nullable)
        if pa.types.is_map(t):
            kid, vid = fid(), fid()
            return MapType(kid, convert(t.key_type), vid, convert(t.item_type),
                           not t.item_field.nullable)
        raise ValidationError(f"Arrow type {t} has no Iceberg equivalent")

    def field(f: pa.Field) -> NestedField:
        i = fid()
        return NestedField(i, f.name, convert(f.type), required=not f.nullable)

    return Schema(*(field(f) for f in arrow_schema))


def cmd_create(args: argparse.Namespace) -> None:
    import pyarrow.parquet as pq

    schema = _arrow_schema_to_iceberg(pq.read_schema(local_path(args.schema_from)))
    spec = parse_partition_by(args.partition_by, schema) if args.partition_by else UNPARTITIONED
    order = parse_sort_by(args.sort_by, schema) if args.sort_by else UNSORTED_SORT_ORDER
    properties: dict[str, str] = {}
    for item in args.property or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValidationError(f"--property {item!r}: expected KEY=VALUE")
        properties[key] = value
    with open_catalog_for_create(args.table) as (catalog, ident):
        table = catalog.create_table(ident, schema, spec, order, properties, None,
                                     args.format_version)
    print(table.metadata_location)


def cmd_append(args: argparse.Namespace) -> None:
    with open_table(args.table) as table:
        _append(table, args.files)
    print(table.metadata_location)


def _append(table: Table, paths: list[str]) -> None:
    import pyarrow.parquet as pq

    from floe.table.writer import write_data_files

    io = table.io
    files: list[DataFile] = []
    written: list[str] = []
    try:
        for path in paths:
            files += write_data_files(io, table.metadata, pq.read_table(local_path(path)),
                                      written=written)
    except BaseException:
        for location in written:
            io.delete(location, missing_ok=True)
        raise
    table.new_transaction().append_files(files, owned_files=written).commit()


def cmd_delete(args: argparse.Namespace) -> None:
    from floe.table.row_level import plan_delete

    with open_table(args.table) as table:
        if args.dry_run:
            plan = plan_delete(table.io, table.metadata, args.filter, mode=args.mode,
                               branch=args.branch)
            doc = plan.to_json()
            if args.json:
                json.dump(doc, sys.stdout)
                sys.stdout.write("\n")
                return
            verb = "rewrite" if plan.mode == "copy-on-write" else "add position deletes to"
            print(f"{plan.mode} delete of {doc['row_filter']} on {plan.branch} "
                  f"(snapshot {plan.snapshot_id})")
            print(f"  remove {len(plan.removed)} data file(s) whole "
                  f"({plan.rows_in_removed_files:,} rows)")
            print(f"  {verb} {len(plan.partial)} data file(s) that may match partly "
                  f"({plan.rows_in_partial_files:,} rows)")
            print(f"  about {plan.estimated_deleted_rows:,} rows deleted (an estimate)")
            for t in plan.removed:
                print(f"  - {t.data_file.file_path}")
            for t in plan.partial:
                print(f"  ~ {t.data_file.file_path}")
            return
        table.delete_where(args.filter, mode=args.mode, branch=args.branch,
                           isolation_level=args.isolation_level)
    print(table.metadata_location)


def _read_files(paths: list[str]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(local_path(p)) for p in paths]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")


def cmd_overwrite(args: argparse.Namespace) -> None:
    if (args.filter is None) == (not args.dynamic):
        raise ValidationError("give either --filter EXPR or --dynamic")
    rows = _read_files(args.files)
    with open_table(args.table) as table:
        if args.dynamic:
            table.overwrite_partitions(rows, branch=args.branch,
                                       isolation_level=args.isolation_level)
        else:
            table.overwrite_by_filter(args.filter, rows, branch=args.branch,
                                      isolation_level=args.isolation_level)
    print(table.metadata_location)


def register(subparsers: Any) -> None:
    """Add ``create`` and ``append`` to the ``floe`` command's subparsers."""
    p = subparsers.add_parser("create", help="create an empty file-system table")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("--schema-from", required=True, metavar="FILE.parquet",
                   help="take the schema of this Parquet file")
    p.add_argument("--partition-by", metavar="SPEC", help='e.g. "day(ts), bucket(16, id)"')
    p.add_argument("--sort-by", metavar="ORDER", help='e.g. "id desc nulls last"')
    p.add_argument("--format-version", type=int, choices=(1, 2), default=2)
    p.add_argument("--property", action="append", metavar="KEY=VALUE",
                   help="table property (repeatable)")
    p.set_defaults(func=cmd_create)
    p = subparsers.add_parser("append", help="append Parquet files' rows in one commit")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("files", nargs="+", metavar="FILE.parquet")
    p.set_defaults(func=cmd_append)

    p = subparsers.add_parser("delete", help="delete the rows matching a filter (one commit)")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("--filter", required=True, help="SQL-style predicate")
    p.add_argument("--mode", choices=("copy-on-write", "merge-on-read"),
                   help="default: the table's write.delete.mode")
    _write_options(p)
    p.add_argument("--dry-run", action="store_true",
                   help="print the files a real run removes or rewrites; change nothing")
    p.add_argument("--json", action="store_true", help="with --dry-run: one JSON document")
    p.set_defaults(func=cmd_delete)

    p = subparsers.add_parser("overwrite", help="replace the rows matching a filter, or the "
                              "partitions written (--dynamic), by new rows")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("files", nargs="+", metavar="FILE.parquet")
    p.add_argument("--filter", help="rows to replace (the new rows must match it)")
    p.add_argument("--dynamic", action="store_true",
                   help="replace every partition the new rows are written to")
    _write_options(p)
    p.set_defaults(func=cmd_overwrite)


def _write_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--branch", default="main", help="branch to commit to (default: main)")
    p.add_argument("--isolation-level", choices=("serializable", "snapshot"),
                   help="conflicts to check on retry (default: the table's)")
