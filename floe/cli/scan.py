"""``floe scan`` and ``floe plan`` (see ARCHITECTURE.md, "The floe command line").

``scan`` writes the rows of a table state after deletes as Parquet, or as JSON lines on
stdout with ``--output -``; with ``--from-snapshot A [--to-snapshot B]`` it writes the rows
appended between two snapshots, and with ``--changelog`` as well the rows inserted and
deleted (:mod:`floe.scan.incremental`). ``plan --json`` prints the explained plan of
:func:`floe.scan.plan_files`.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import math
import os
import sys
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from floe.cli.common import TABLE_HELP, load_table_state
from floe.errors import ValidationError
from floe.io import FileIO, local_path
from floe.scan import plan_files
from floe.scan.explain import write_plan_json
from floe.scan.planning import stream_plan

if TYPE_CHECKING:  # reading data (pyarrow) is imported by `floe scan` itself, so the
    import pyarrow as pa  # metadata commands start faster

__all__ = ["register", "cmd_scan", "cmd_plan", "json_value"]


def register(sub: Any) -> None:
    """Add ``scan`` and ``plan`` to the ``floe`` command's subparsers."""
    p = sub.add_parser("scan", help="the rows of a table state after deletes")
    p.add_argument("table", help=TABLE_HELP)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    which.add_argument("--as-of", type=int, dest="as_of", metavar="TIMESTAMP_MS",
                       help="the snapshot current at this time (ms since the epoch)")
    which.add_argument("--ref", help="branch or tag name")
    which.add_argument("--from-snapshot", type=int, dest="from_snapshot", metavar="ID",
                       help="read what the snapshots after this one (exclusive) changed")
    p.add_argument("--to-snapshot", type=int, dest="to_snapshot", metavar="ID",
                   help="with --from-snapshot: the last snapshot of the range (default: "
                        "current)")
    p.add_argument("--changelog", action="store_true",
                   help="with --from-snapshot: the rows inserted and deleted, with "
                        "_change_type, _change_ordinal and _commit_snapshot_id (default: the "
                        "rows appended)")
    p.add_argument("--filter", help="SQL-style predicate")
    p.add_argument("--columns", help="comma-separated column names (default: all)")
    p.add_argument("--output", required=True,
                   help="Parquet file to write, or - for JSON lines on stdout")
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("plan", help="the scan plan: files kept or pruned and why")
    p.add_argument("table", help=TABLE_HELP)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    which.add_argument("--as-of", type=int, dest="as_of", metavar="TIMESTAMP_MS")
    which.add_argument("--ref", help="branch or tag name")
    p.add_argument("--filter", help="SQL-style predicate")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_plan)


def _plan(args: argparse.Namespace, explain: bool) -> tuple[FileIO, Any]:
    io, _, md = load_table_state(args.table)
    plan = plan_files(io, md, snapshot_id=args.snapshot, as_of_ms=args.as_of, ref=args.ref,
                      row_filter=args.filter, explain=explain)
    return io, plan


def _columns(args: argparse.Namespace) -> list[str] | None:
    if not args.columns:
        return None
    cols = [c.strip() for c in args.columns.split(",") if c.strip()]
    if not cols:
        raise ValidationError("--columns names no column")
    return cols


def cmd_scan(args: argparse.Namespace) -> None:
    from floe.io.parquet import schema_to_arrow
    from floe.scan.readers import read_plan
    from floe.scan.incremental import changelog, changelog_arrow_schema, plan_appends

    columns = _columns(args)
    if args.from_snapshot is None:
        if args.to_snapshot is not None or args.changelog:
            flag = "--to-snapshot" if args.to_snapshot is not None else "--changelog"
            raise ValidationError(f"{flag} needs --from-snapshot")
        io, plan = _plan(args, explain=False)
    else:
        io, _, md = load_table_state(args.table)
        if args.changelog:
            _write(changelog(io, md, args.from_snapshot, args.to_snapshot, args.filter,
                             columns), changelog_arrow_schema(md, columns), args.output)
            return
        plan = plan_appends(io, md, args.from_snapshot, args.to_snapshot, args.filter)
    schema = plan.schema.select(*columns) if columns else plan.schema
    _write(read_plan(io, plan, columns), schema_to_arrow(schema), args.output)


def _write(batches: Iterator[pa.RecordBatch], arrow_schema: pa.Schema, output: str) -> None:
    """Batches as a Parquet file (replaced atomically), or as JSON lines for ``-``."""
    import pyarrow.parquet as pq

    if output == "-":
        out = sys.stdout
        for batch in batches:
            for row in batch.to_pylist():
                out.write(json.dumps({k: json_value(v) for k, v in row.items()},
                                     ensure_ascii=False))
                out.write("\n")
        out.flush()
        return
    path = local_path(output)
    tmp = f"{path}.floe-tmp"
    try:
        with pq.ParquetWriter(tmp, arrow_schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cmd_plan(args: argparse.Namespace) -> None:
    io, _, md = load_table_state(args.table)
    stream = stream_plan(io, md, snapshot_id=args.snapshot, as_of_ms=args.as_of, ref=args.ref,
                         row_filter=args.filter, explain=True)
    if args.json:
        write_plan_json(stream, sys.stdout)
        return
    plan = stream.plan
    explain = plan.explain
    assert explain is not None
    out = sys.stdout
    out.write(f"snapshot      {plan.snapshot_id}   filter "
              f"{'(none)' if plan.row_filter is None else plan.row_filter}\n")
    done = 0

    def manifests_upto(upto: int) -> None:
        nonlocal done
        lines: list[str] = []
        while done < upto:
            m = explain.manifests[done]
            mark = "keep" if m.kept else "skip"
            lines.append(f"{mark} {m.content:<7} {m.path}  {m.reason}")
            for file in m.files:
                fmark = "  keep" if file.kept else "  skip"
                lines.append(f"{fmark} {file.path}  [{file.stage or ''}] {file.reason}")
                lines += [f"        + {d.content} {d.delete_path}"
                          for d in file.delete_files if d.applied]
            m.files = []
            done += 1
        if lines:
            out.write("\n".join(lines) + "\n")

    for m, _ in stream:
        manifests_upto(explain.position(m.manifest_path) + 1)
    manifests_upto(len(explain.manifests))
    f = plan.funnel
    out.write(f"manifests     {f.manifests_total} -> {f.manifests_after_content} (content) "
              f"-> {f.manifests_after_summaries} (partition summaries)\n"
              f"data files    {f.data_files_total} -> {f.data_files_after_partition} "
              f"(partition) -> {f.data_files_after_metrics} (metrics)\n"
              f"delete files  {f.delete_files_total} indexed, {f.delete_files_matched} "
              f"matched\n")


def json_value(v: Any) -> Any:
    """A row value as JSON: ISO dates and times, decimals as strings, bytes as base64."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return v
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # Arrow map
            return {str(json_value(k)): json_value(x) for k, x in v}
        return [json_value(x) for x in v]
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    as_py = getattr(v, "as_py", None)  # an Arrow scalar
    if callable(as_py):
        return json_value(as_py())
    return str(v)
