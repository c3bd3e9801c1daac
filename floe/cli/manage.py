"""``floe rollback``, ``set-current``, ``cherry-pick``, ``branch`` and ``tag`` (ARCHITECTURE.md:
the ``floe`` command contract). Each command is one commit through
:class:`floe.table.manage_snapshots.ManageSnapshots` and prints the new metadata location.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from floe.cli.common import TABLE_HELP, open_table
from floe.errors import ValidationError

if TYPE_CHECKING:  # only a type here: read-only `floe` commands need not import it
    from floe.table.manage_snapshots import ManageSnapshots

__all__ = ["register"]


def _commit(args: argparse.Namespace, build: Any) -> None:
    with open_table(args.table) as table:
        builder: ManageSnapshots = table.manage_snapshots()
        build(builder)
        builder.commit()
        print(table.metadata_location)


def cmd_rollback(args: argparse.Namespace) -> None:
    if args.to_snapshot is not None:
        _commit(args, lambda b: b.rollback_to(args.to_snapshot))
    else:
        _commit(args, lambda b: b.rollback_to_time(args.to_timestamp))


def cmd_set_current(args: argparse.Namespace) -> None:
    _commit(args, lambda b: b.set_current(args.snapshot_id))


def cmd_cherry_pick(args: argparse.Namespace) -> None:
    if (args.snapshot_id is None) == (args.wap_id is None):
        raise ValidationError("give either a snapshot id or --wap-id")
    if args.wap_id is not None:
        _commit(args, lambda b: b.publish_wap(args.wap_id))
    else:
        _commit(args, lambda b: b.cherry_pick(args.snapshot_id))


def _retention(args: argparse.Namespace, *, branch: bool) -> dict[str, int]:
    out: dict[str, int] = {}
    if branch and args.min_snapshots_to_keep is not None:
        out["min_snapshots_to_keep"] = args.min_snapshots_to_keep
    if branch and args.max_snapshot_age_ms is not None:
        out["max_snapshot_age_ms"] = args.max_snapshot_age_ms
    if args.max_ref_age_ms is not None:
        out["max_ref_age_ms"] = args.max_ref_age_ms
    return out


def cmd_branch(args: argparse.Namespace) -> None:
    retention = _retention(args, branch=True)
    actions = [a for a in (args.remove, args.rename, args.fast_forward) if a]
    if len(actions) > 1:
        raise ValidationError("give at most one of --remove, --rename and --fast-forward")

    def build(b: ManageSnapshots) -> None:
        name = args.name
        if args.remove:
            b.remove_branch(name)
        elif args.rename:
            b.rename_branch(name, args.rename)
            name = args.rename
        elif args.fast_forward:
            b.fast_forward(name, args.fast_forward)
        elif name in b.start.refs:
            if args.snapshot is None and not retention:
                raise ValidationError(
                    f"branch {name!r} already exists: give --snapshot to move it, retention "
                    f"options to change them, or --remove / --rename / --fast-forward")
            if args.snapshot is not None:
                b.replace_branch(name, args.snapshot)
        else:
            b.create_branch(name, args.snapshot, **retention)
            return
        if retention and not args.remove:
            b.set_retention(name, **retention)

    _commit(args, build)


def cmd_tag(args: argparse.Namespace) -> None:
    retention = _retention(args, branch=False)

    def build(b: ManageSnapshots) -> None:
        if args.remove:
            b.remove_tag(args.name)
        elif args.name in b.start.refs:
            if args.snapshot is None and not retention:
                raise ValidationError(f"tag {args.name!r} already exists: give --snapshot to "
                                      f"move it, --max-ref-age-ms, or --remove")
            if args.snapshot is not None:
                b.replace_tag(args.name, args.snapshot)
            if retention:
                b.set_retention(args.name, **retention)
        else:
            b.create_tag(args.name, args.snapshot, **retention)

    _commit(args, build)


def register(subparsers: Any) -> None:
    """Add the snapshot-management commands to the ``floe`` command's subparsers."""
    p = subparsers.add_parser("rollback", help="make an ancestor of the current snapshot "
                              "current again")
    p.add_argument("table", help=TABLE_HELP)
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-snapshot", type=int, metavar="ID")
    to.add_argument("--to-timestamp", type=int, metavar="MS",
                    help="the newest ancestor committed at or before this time (ms)")
    p.set_defaults(func=cmd_rollback)

    p = subparsers.add_parser("set-current", help="make any snapshot current")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("snapshot_id", type=int, metavar="ID")
    p.set_defaults(func=cmd_set_current)

    p = subparsers.add_parser("cherry-pick", help="apply another snapshot's changes to main")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("snapshot_id", type=int, nargs="?", metavar="ID")
    p.add_argument("--wap-id", help="publish the snapshot staged with this wap.id")
    p.set_defaults(func=cmd_cherry_pick)

    for kind, func in (("branch", cmd_branch), ("tag", cmd_tag)):
        p = subparsers.add_parser(kind, help=f"create, move, or remove a {kind}"
                                  + (", rename or fast-forward it" if kind == "branch" else ""))
        p.add_argument("table", help=TABLE_HELP)
        p.add_argument("name")
        p.add_argument("--snapshot", type=int, metavar="ID",
                       help="snapshot to point at (default: the current one)")
        p.add_argument("--remove", action="store_true")
        if kind == "branch":
            p.add_argument("--rename", metavar="NEW")
            p.add_argument("--fast-forward", metavar="TO",
                           help="move to the head of ref TO, which must descend from it")
            p.add_argument("--min-snapshots-to-keep", type=int, metavar="N")
            p.add_argument("--max-snapshot-age-ms", type=int, metavar="MS")
        p.add_argument("--max-ref-age-ms", type=int, metavar="MS")
        p.set_defaults(func=func)
