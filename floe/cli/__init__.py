"""The ``floe`` command (see ARCHITECTURE.md: a stable contract).

``--json`` prints one JSON document on stdout; errors print one line on stderr and exit
non-zero. ``TABLE`` is a table directory or a ``*.metadata.json`` file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from floe.errors import FloeError

if TYPE_CHECKING:
    from floe.io import FileIO

__all__ = ["main"]

#: The module of each command registered by a module of its own: a run imports only the
#: module of its command (all of them for help or a mistyped command), so `floe plan`
#: starts without loading what writing, evolving or maintaining tables needs.
#: tests/floe/test_cli.py checks the table against what each module registers.
COMMAND_MODULES = {
    **dict.fromkeys(("scan", "plan"), "floe.cli.scan"),
    **dict.fromkeys(("create", "append", "delete", "overwrite"), "floe.cli.write"),
    **dict.fromkeys(("rollback", "set-current", "cherry-pick", "branch", "tag"),
                    "floe.cli.manage"),
    "evolve": "floe.cli.evolve",
    **dict.fromkeys(("expire", "remove-orphans", "compute-partition-stats", "compact",
                     "rewrite-manifests", "rewrite-position-deletes",
                     "remove-dangling-deletes"), "floe.cli.maintenance"),
}
_CORE_COMMANDS = ("describe", "snapshots", "manifests", "files")


def _load(args: argparse.Namespace) -> tuple[FileIO, str, Any]:
    from floe.cli.common import load_table_state

    return load_table_state(args.table)


def _print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def _stream_json_array(items: Iterable[Any], batch: int = 1000) -> None:
    """A JSON array written as its items come, ``batch`` at a time."""
    from floe.scan.explain import encode_compact

    out = sys.stdout
    out.write("[")
    sep, chunk = "", []
    for item in items:
        chunk.append(item)
        if len(chunk) >= batch:  # one encoder call per batch (a call per item costs more)
            out.write(sep + encode_compact(chunk)[1:-1])
            sep, chunk = ",", []
    if chunk:
        out.write(sep + encode_compact(chunk)[1:-1])
    out.write("]\n")


def _print_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """A plain aligned text table of the chosen columns."""
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def cmd_describe(args: argparse.Namespace) -> None:
    from floe import inspect

    _, location, md = _load(args)
    doc = inspect.describe(md, location)
    if args.json:
        _print_json(doc)
        return
    print(f"table         {md.location}")
    print(f"metadata      {location}")
    print(f"format        v{doc['format_version']}   uuid {doc['table_uuid']}")
    print(f"current       snapshot {doc['current_snapshot_id']}   schema {doc['current_schema_id']}"
          f"   spec {doc['default_spec_id']}   sort order {doc['default_sort_order_id']}")
    print(f"snapshots     {doc['snapshot_count']}")
    print()
    print(str(md.schema()))
    for spec in md.partition_specs:
        mark = "*" if spec.spec_id == md.default_spec_id else " "
        fields = ", ".join(f"{f.name}={f.transform}({f.source_id})" for f in spec.fields)
        print(f"{mark} spec {spec.spec_id}: [{fields}]")
    for order in md.sort_orders:
        mark = "*" if order.order_id == md.default_sort_order_id else " "
        print(f"{mark} sort order {order.order_id}: {order.to_json()['fields']}")
    if doc["refs"]:
        print()
        _print_table(doc["refs"], ["name", "type", "snapshot_id"])
    if doc["properties"]:
        print()
        for k, v in sorted(doc["properties"].items()):
            print(f"{k} = {v}")


def cmd_snapshots(args: argparse.Namespace) -> None:
    from floe import inspect

    _, _, md = _load(args)
    rows = inspect.snapshot_rows(md)
    if args.json:
        _print_json(rows)
    else:
        _print_table(rows, ["snapshot_id", "parent_id", "sequence_number", "timestamp_ms",
                            "operation", "manifest_list"])


def cmd_manifests(args: argparse.Namespace) -> None:
    from floe import inspect

    io, _, md = _load(args)
    rows = inspect.manifest_rows(io, md, inspect.resolve_snapshot(md, args.snapshot))
    if args.json:
        _print_json(rows)
    else:
        _print_table(rows, ["content", "partition_spec_id", "added_files_count",
                            "existing_files_count", "deleted_files_count", "path"])


def cmd_files(args: argparse.Namespace) -> None:
    from floe import inspect

    io, _, md = _load(args)
    snapshot = inspect.resolve_snapshot(md, args.snapshot)
    rows: Iterable[dict[str, Any]] = inspect.iter_file_rows(io, md, snapshot)
    if getattr(args, "filter", None):
        from floe.scan.planning import stream_plan

        wanted = {p for _, tasks in stream_plan(io, md, snapshot_id=args.snapshot,
                                                row_filter=args.filter)
                  for t in tasks for p in (t.file_path, *(d.path for d in t.delete_files))}
        rows = (r for r in rows if r["file_path"] in wanted)
    if args.json:
        _stream_json_array(rows)
    else:
        rows = list(rows)
        for r in rows:
            r["partition"] = json.dumps(r["partition"], default=str)
        _print_table(rows, ["content", "spec_id", "partition", "record_count",
                            "file_size_in_bytes", "file_path"])


def _parser(wanted: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the module of command ``wanted`` alone when it
    names one registered by a module (of the core commands alone for a core command)."""
    from floe.cli.common import TABLE_HELP

    parser = argparse.ArgumentParser(prog="floe", description="Inspect Apache Iceberg tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    module = COMMAND_MODULES.get(wanted or "")
    if module is not None:
        importlib.import_module(module).register(sub)
        return parser

    def command(name: str, func: Any, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("table", help=TABLE_HELP)
        p.add_argument("--json", action="store_true", help="one JSON document on stdout")
        p.set_defaults(func=func)
        return p

    command("describe", cmd_describe, "format, schemas, specs, sort orders, properties, refs")
    command("snapshots", cmd_snapshots, "one row per snapshot")
    p = command("manifests", cmd_manifests, "the manifest list of a snapshot")
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    p = command("files", cmd_files, "live data and delete files of a snapshot")
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    p.add_argument("--filter", help="SQL-style predicate")
    if wanted not in _CORE_COMMANDS:
        for name in dict.fromkeys(COMMAND_MODULES.values()):
            importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = _parser(words[0] if words else None).parse_args(words)
    try:
        args.func(args)
    except FloeError as e:
        return _failed(e)
    except BrokenPipeError:
        return 0
    except OSError as e:
        return _failed(e)
    return 0


def _failed(error: BaseException) -> int:
    """The error on stderr, secrets of the configured catalogs redacted."""
    from floe.catalog.config import redact

    print(f"floe: {redact(str(error))}", file=sys.stderr)
    return 1


#: Commands that only read metadata and print it: as a program they run without the cyclic
#: garbage collector (reference counting still frees what they drop). Its passes over the
#: millions of long-lived objects of a big plan cost more than the decoding (3.5 s of a
#: 19.5 s `floe plan --json` on 1M files, benchmarks/plan.py), and freed nothing.
READ_ONLY_COMMANDS = frozenset({"describe", "snapshots", "manifests", "files", "plan"})


def program(argv: Sequence[str] | None = None) -> None:
    """The ``floe`` program (console script, ``python -m floe.cli``): :func:`main`, with the
    collector off for the read-only commands. Those end with ``os._exit`` once their output
    is flushed: they leave nothing to finish (no thread, no open write; a manifest cache
    file is renamed into place before the plan goes on), and tearing down the interpreter's
    modules and objects took about 50 ms of a 0.35 s point plan."""
    import gc

    words = list(sys.argv[1:] if argv is None else argv)
    read_only = bool(words) and words[0] in READ_ONLY_COMMANDS
    if read_only:
        gc.disable()
    code = main(words)
    if not read_only:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader gone, or a closed stream
            pass
    os._exit(code)
