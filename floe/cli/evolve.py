"""``floe evolve TABLE CHANGE [CHANGE ...]``: schema, partition-spec and sort-order evolution in
one commit (ARCHITECTURE.md: the ``floe`` command contract).

Each change is a sub-command followed by its arguments; several may follow each other::

    floe evolve TABLE add-column point.z double drop-column tmp \\
        rename-column name label add-partition-field "bucket(16, id)"

Changes (``PATH`` is a dotted column name, ``TYPE`` a type such as ``long``,
``decimal(12,2)``, ``struct<x: double, y: double>``, ``list<string>``, ``map<string, long>``):

``add-column PATH TYPE [--doc TEXT] [--required] [--first | --before OTHER | --after OTHER]``,
``drop-column PATH``, ``rename-column PATH NEW``, ``promote PATH TYPE``,
``move-column PATH (--first | --before OTHER | --after OTHER)``, ``make-optional PATH``,
``require-column PATH``, ``update-doc PATH TEXT``, ``set-identifier-fields PATH[,PATH...]``,
``add-partition-field TERM [--name NAME]``, ``drop-partition-field NAME|TERM``,
``rename-partition-field NAME NEW``, ``sort-order "id desc nulls last, day(ts)"`` (or
``unsorted``).

Options anywhere after TABLE: ``--allow-incompatible`` (required columns, ``require-column``),
``--dry-run`` (print the result and the changes, commit nothing), ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from floe.cli.common import TABLE_HELP, open_table
from floe.errors import ValidationError
from floe.types import parse_type

if TYPE_CHECKING:  # only types here: read-only `floe` commands need not import them
    from floe.table.update_schema import UpdateSchema
    from floe.table.update_spec import ReplaceSortOrder, UpdateSpec

__all__ = ["register"]

_GLOBAL_FLAGS = ("--allow-incompatible", "--dry-run", "--json")


@dataclass(frozen=True)
class _Change:
    """One sub-command: how many positional arguments, which options (with a value or not),
    and which builder it feeds."""

    kind: str  # "schema", "spec" or "order"
    positional: int
    options: dict[str, bool]  # option -> takes a value
    apply: Callable[[Any, list[str], dict[str, str | None]], None]


def _move(u: UpdateSchema, path: str, opts: dict[str, str | None], required: bool) -> None:
    given = [k for k in ("--first", "--before", "--after") if k in opts]
    if len(given) > 1:
        raise ValidationError(f"move {path}: give one of --first, --before, --after")
    if not given:
        if required:
            raise ValidationError(f"move-column {path}: give --first, --before OTHER or "
                                  f"--after OTHER")
        return
    if given[0] == "--first":
        u.move_first(path)
    elif given[0] == "--before":
        u.move_before(path, str(opts["--before"]))
    else:
        u.move_after(path, str(opts["--after"]))


def _add_column(u: UpdateSchema, a: list[str], o: dict[str, str | None]) -> None:
    u.add_column(a[0], parse_type(a[1]), doc=o.get("--doc"), required="--required" in o)
    _move(u, a[0], o, required=False)


_MOVE_OPTS = {"--first": False, "--before": True, "--after": True}
CHANGES: dict[str, _Change] = {
    "add-column": _Change("schema", 2, {"--doc": True, "--required": False, **_MOVE_OPTS},
                          _add_column),
    "drop-column": _Change("schema", 1, {}, lambda u, a, o: u.drop_column(a[0])),
    "rename-column": _Change("schema", 2, {}, lambda u, a, o: u.rename_column(a[0], a[1])),
    "promote": _Change("schema", 2, {}, lambda u, a, o: u.update_column(a[0], parse_type(a[1]))),
    "move-column": _Change("schema", 1, _MOVE_OPTS,
                           lambda u, a, o: _move(u, a[0], o, required=True)),
    "make-optional": _Change("schema", 1, {}, lambda u, a, o: u.make_optional(a[0])),
    "require-column": _Change("schema", 1, {}, lambda u, a, o: u.require_column(a[0])),
    "update-doc": _Change("schema", 2, {}, lambda u, a, o: u.update_doc(a[0], a[1])),
    "set-identifier-fields": _Change(
        "schema", 1, {}, lambda u, a, o: u.set_identifier_fields(
            *[p.strip() for p in a[0].split(",") if p.strip()])),
    "add-partition-field": _Change("spec", 1, {"--name": True},
                                   lambda u, a, o: u.add_field(a[0], o.get("--name"))),
    "drop-partition-field": _Change("spec", 1, {}, lambda u, a, o: u.remove_field(a[0])),
    "rename-partition-field": _Change("spec", 2, {},
                                      lambda u, a, o: u.rename_field(a[0], a[1])),
    "sort-order": _Change("order", 1, {}, lambda u, a, o: (
        u.unsorted() if a[0].strip().lower() == "unsorted" else u.from_text(a[0]))),
}


def parse_changes(tokens: list[str]) -> list[tuple[str, list[str], dict[str, str | None]]]:
    """Split ``tokens`` into ``(sub-command, arguments, options)``; one-line errors."""
    if not tokens:
        raise ValidationError(f"no change given; changes: {', '.join(CHANGES)}")
    out: list[tuple[str, list[str], dict[str, str | None]]] = []
    i = 0
    while i < len(tokens):
        name = tokens[i]
        change = CHANGES.get(name)
        if change is None:
            raise ValidationError(f"unknown change {name!r}; changes: {', '.join(CHANGES)}")
        i += 1
        args = tokens[i:i + change.positional]
        if len(args) < change.positional or any(a in CHANGES for a in args):
            raise ValidationError(f"{name} needs {change.positional} argument(s)")
        i += change.positional
        opts: dict[str, str | None] = {}
        while i < len(tokens) and tokens[i].startswith("--"):
            opt = tokens[i]
            if opt not in change.options:
                raise ValidationError(f"{name}: unknown option {opt}")
            if change.options[opt]:
                if i + 1 >= len(tokens):
                    raise ValidationError(f"{name}: {opt} needs a value")
                opts[opt] = tokens[i + 1]
                i += 2
            else:
                opts[opt] = None
                i += 1
        out.append((name, args, opts))
    return out


def cmd_evolve(args: argparse.Namespace) -> None:
    tokens = list(args.changes)
    flags = {f for f in tokens if f in _GLOBAL_FLAGS}
    tokens = [t for t in tokens if t not in _GLOBAL_FLAGS]
    changes = parse_changes(tokens)
    with open_table(args.table) as table:
        txn = table.new_transaction()
        # staged in this order so a partition field or sort order can use a column added
        # by the same command (each builder sees the changes staged before it)
        builders: dict[str, Any] = {}
        for kind in ("schema", "spec", "order"):
            mine = [c for c in changes if CHANGES[c[0]].kind == kind]
            if not mine:
                continue
            if kind == "schema":
                b: Any = txn.update_schema(allow_incompatible="--allow-incompatible" in flags)
            elif kind == "spec":
                b = txn.update_spec()
            else:
                b = txn.replace_sort_order()
            for name, change_args, opts in mine:
                CHANGES[name].apply(b, change_args, opts)
            b.commit()
            builders[kind] = b
        if "--dry-run" in flags:
            _print_preview(builders, "--json" in flags)
            return
        txn.commit()
        if "--json" in flags:
            json.dump({"metadata_location": table.metadata_location,
                       "schema_id": table.metadata.current_schema_id,
                       "spec_id": table.metadata.default_spec_id,
                       "sort_order_id": table.metadata.default_sort_order_id}, sys.stdout)
            sys.stdout.write("\n")
        else:
            print(table.metadata_location)


def _print_preview(builders: dict[str, Any], as_json: bool) -> None:
    doc: dict[str, Any] = {}
    schema: UpdateSchema | None = builders.get("schema")
    spec: UpdateSpec | None = builders.get("spec")
    order: ReplaceSortOrder | None = builders.get("order")
    if schema is not None:
        new = schema.apply()
        doc["schema"] = new.to_json()
        doc["changes"] = [c.to_json() if hasattr(c, "to_json") else str(c)
                          for c in schema.describe_changes()]
    if spec is not None:
        doc["partition_spec"] = spec.apply().to_json()
    if order is not None:
        doc["sort_order"] = order.apply().to_json()
    if as_json:
        json.dump(doc, sys.stdout, indent=None, default=str)
        sys.stdout.write("\n")
        return
    if schema is not None:
        print(str(schema.apply()))
        for c in doc["changes"]:
            print(f"  {c}")
    if spec is not None:
        print(f"partition spec: {spec.apply()}")
    if order is not None:
        print(f"sort order: {order.apply()}")


def register(subparsers: Any) -> None:
    """Add ``evolve`` to the ``floe`` command's subparsers."""
    p = subparsers.add_parser(
        "evolve", help="schema, partition-spec and sort-order changes in one commit",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("changes", nargs=argparse.REMAINDER, metavar="CHANGE",
                   help="sub-commands with their arguments (see above)")
    p.set_defaults(func=cmd_evolve)
