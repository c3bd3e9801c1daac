"""Maintenance commands: ``floe expire``, ``remove-orphans``, ``compute-partition-stats``,
``compact``, ``rewrite-manifests``, ``rewrite-position-deletes``, ``remove-dangling-deletes``
(ARCHITECTURE.md: the ``floe`` command contract).

Each draws a progress bar on a terminal's stderr (none with ``--json``). ``--dry-run`` changes
nothing and lists exactly what a real run would delete or rewrite; with ``--json`` it prints
one JSON document whose file entries are full paths, as stored in the metadata. A real run
prints a short summary, or its result as one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from floe.cli.common import TABLE_HELP, ProgressBar, open_table
from floe.errors import ValidationError

__all__ = ["register"]


def _options(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValidationError(f"--option {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _run(args: argparse.Namespace, run: Callable[[Any, Any], Any],
         summary: Callable[[Any], list[str]], needs_snapshot: bool = True) -> None:
    """Open the table, run with a progress bar, print the result. A table without snapshots
    has nothing to maintain: a one-line error (orphan removal still runs: a failed first
    commit leaves files too)."""
    bar = ProgressBar(enabled=False if args.json else None)
    with open_table(args.table) as table:
        if needs_snapshot and not table.metadata.snapshots:
            raise ValidationError(f"table {table.identifier} has no snapshots: nothing to "
                                  f"{args.command.replace('-', ' ')}")
        try:
            result = run(table, bar)
        finally:
            bar.close()
    if args.json:
        json.dump(result.to_json(), sys.stdout)
        sys.stdout.write("\n")
        return
    for line in summary(result):
        print(line)


def _paths(label: str, paths: Any) -> list[str]:
    paths = list(paths)
    return [f"{label}: {len(paths)}"] + [f"  {p}" for p in paths]


# -- expiry and orphans ----------------------------------------------------------------------------


def _older_than(value: str) -> int:
    """``--older-than``: a timestamp in ms since the epoch (as Java's procedures take), or an
    age such as ``5d``, ``12h``, ``30m``, ``90s`` counted back from now."""
    import time

    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000}
    text = value.strip().lower()
    try:
        if text and text[-1] in units:
            return int(time.time() * 1000) - int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: expected milliseconds since the epoch or an age like 5d, 12h, 30m")


def cmd_expire(args: argparse.Namespace) -> None:
    from floe.maintenance.expire import expire_snapshots

    def run(table: Any, bar: Any) -> Any:
        return expire_snapshots(table, older_than_ms=args.older_than,
                                retain_last=args.retain_last,
                                snapshot_ids=args.snapshot_id or (),
                                clean_expired_metadata=args.clean_expired_metadata,
                                clean_expired_files=not args.keep_files,
                                dry_run=args.dry_run, on_progress=bar)

    def summary(r: Any) -> list[str]:
        verb = "would expire" if r.dry_run else "expired"
        lines = [f"{verb} {len(r.expired_snapshot_ids)} snapshot(s)"
                 + (f": {', '.join(map(str, r.expired_snapshot_ids))}"
                    if r.expired_snapshot_ids else "")]
        if r.removed_refs:
            lines.append(f"{'would remove' if r.dry_run else 'removed'} refs: "
                         + ", ".join(r.removed_refs))
        lines += _paths("would delete" if r.dry_run else "deleted", r.files())
        lines += [f"failed to delete {p}: {e}" for p, e in r.failed]
        lines += [f"warning: {w}" for w in r.warnings]
        if r.note:
            lines.append(r.note)
        return lines

    _run(args, run, summary)


def cmd_remove_orphans(args: argparse.Namespace) -> None:
    from floe.maintenance.orphans import remove_orphan_files

    def run(table: Any, bar: Any) -> Any:
        return remove_orphan_files(table, older_than_ms=args.older_than,
                                   location=args.location, dry_run=args.dry_run,
                                   prefix_mismatch_mode=args.prefix_mismatch_mode,
                                   equal_schemes=_options(args.equal_scheme) or None,
                                   equal_authorities=_options(args.equal_authority) or None,
                                   force=args.force, on_progress=bar)

    def summary(r: Any) -> list[str]:
        lines = [f"listed {r.listed_files} file(s) under {r.location}, "
                 f"{r.candidate_files} old enough"]
        lines += _paths("would delete" if r.dry_run else "deleted", r.orphan_files)
        if r.ignored_prefix_mismatches:
            lines += _paths("ignored (prefix mismatch)", r.ignored_prefix_mismatches)
        lines += [f"failed to delete {p}: {e}" for p, e in r.failed]
        if r.note:
            lines.append(r.note)
        return lines

    _run(args, run, summary, needs_snapshot=False)


def cmd_compute_partition_stats(args: argparse.Namespace) -> None:
    from floe.maintenance.partition_stats import (
        compute_partition_stats,
        read_partition_stats,
        unified_partition_type,
    )

    def run(table: Any, bar: Any) -> Any:
        result = compute_partition_stats(table, args.snapshot, on_progress=bar)
        if args.show and result.statistics_file is not None:
            md = table.refresh().metadata
            ptype = unified_partition_type(md)
            rows = [s.to_json(ptype)
                    for s in read_partition_stats(table.io, md, result.statistics_file)]
            return _WithRows(result, rows)
        return result

    def summary(r: Any) -> list[str]:
        rows = getattr(r, "rows", None)
        r = getattr(r, "result", r)
        if r.statistics_file is None:
            return [f"no partition statistics for snapshot {r.snapshot_id} (no files)"]
        how = ("already computed" if r.reused else
               f"incrementally from snapshot {r.incremental_from}" if r.incremental_from
               else "in full")
        lines = [f"snapshot {r.snapshot_id}: {r.statistics_file.statistics_path} ({how}"
                 + (f", {r.partitions} partition(s))" if not r.reused else ")")]
        lines += [f"warning: {w}" for w in r.warnings]
        lines += [json.dumps(row, default=str) for row in rows or ()]
        return lines

    _run(args, run, summary)


class _WithRows:
    def __init__(self, result: Any, rows: list[dict[str, Any]]) -> None:
        self.result, self.rows = result, rows

    def to_json(self) -> dict[str, Any]:
        return {**self.result.to_json(), "rows": self.rows}


# -- compaction and manifests ---------------------------------------------------------------------


def cmd_compact(args: argparse.Namespace) -> None:
    options = _options(args.option)
    if args.target_file_size is not None:
        options["target-file-size-bytes"] = str(args.target_file_size)
    strategy = "sort" if args.sort is not None else None
    sort_order = args.sort or None  # "--sort" alone: the table's sort order

    def run(table: Any, bar: Any) -> Any:
        if args.engine == "spark":
            from floe.spark.compaction import compact as spark_compact

            if args.dry_run:
                raise ValidationError("--dry-run plans without an engine: drop --engine spark")
            return spark_compact(table, options, filter=args.filter, strategy=strategy,
                                 sort_order=sort_order, branch=args.branch, on_progress=bar)
        from floe.maintenance.compaction import compact

        return compact(table, options, filter=args.filter, strategy=strategy,
                       sort_order=sort_order, branch=args.branch, dry_run=args.dry_run,
                       on_progress=bar)

    def summary(r: Any) -> list[str]:
        verb = "would rewrite" if r.dry_run else "rewrote"
        lines = [f"{verb} {r.rewritten_data_files_count} data file(s), "
                 f"{r.rewritten_bytes_count:,} bytes, in {len(r.groups)} group(s)"]
        if not r.dry_run:
            lines.append(f"added {r.added_data_files_count} data file(s); snapshots "
                         f"{', '.join(map(str, r.snapshot_ids)) or '(none)'}")
        if r.failures:
            lines.append(f"{len(r.failures)} group(s) failed: "
                         + "; ".join(str(g.error) for g in r.failures))
        if r.note:
            lines.append(r.note)
        for g in r.groups:
            lines.append(f"  group {g.global_index} {json.dumps(dict(g.partition), default=str)}: "
                         f"{len(g.rewritten_files)} file(s) -> {g.expected_output_files}")
            lines += [f"    {p}" for p in g.rewritten_files]
        return lines

    _run(args, run, summary)


def cmd_rewrite_manifests(args: argparse.Namespace) -> None:
    from floe.maintenance.rewrite_manifests import rewrite_manifests

    sort_by = [s.strip() for s in args.sort_by.split(",")] if args.sort_by else None

    def run(table: Any, bar: Any) -> Any:
        return rewrite_manifests(table, spec_id=args.spec_id, sort_by=sort_by,
                                 target_size_bytes=args.target_size, branch=args.branch,
                                 dry_run=args.dry_run, on_progress=bar)

    def summary(r: Any) -> list[str]:
        if not r.rewritten_manifests:
            return ["nothing to rewrite"]
        verb = "would rewrite" if r.dry_run else "rewrote"
        lines = _paths(f"{verb} manifests", r.rewritten_manifests)
        if not r.dry_run:
            lines += _paths("into", r.added_manifests)
        return lines

    _run(args, run, summary)


def cmd_rewrite_position_deletes(args: argparse.Namespace) -> None:
    from floe.maintenance.rewrite_deletes import rewrite_position_deletes

    def run(table: Any, bar: Any) -> Any:
        return rewrite_position_deletes(table, options=_options(args.option),
                                        filter=args.filter, branch=args.branch,
                                        dry_run=args.dry_run, on_progress=bar)

    def summary(r: Any) -> list[str]:
        return [json.dumps(r.to_json(), default=str)]

    _run(args, run, summary)


def cmd_remove_dangling_deletes(args: argparse.Namespace) -> None:
    from floe.maintenance.rewrite_deletes import remove_dangling_deletes

    def run(table: Any, bar: Any) -> Any:
        return remove_dangling_deletes(table, branch=args.branch, dry_run=args.dry_run,
                                       on_progress=bar)

    def summary(r: Any) -> list[str]:
        return [json.dumps(r.to_json(), default=str)]

    _run(args, run, summary)


def register(subparsers: Any) -> None:
    """Add the maintenance commands to the ``floe`` command's subparsers."""

    def command(name: str, func: Any, help_text: str) -> argparse.ArgumentParser:
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("table", help=TABLE_HELP)
        p.add_argument("--dry-run", action="store_true",
                       help="list what a real run would delete or rewrite; change nothing")
        p.add_argument("--json", action="store_true", help="one JSON document on stdout")
        p.set_defaults(func=func)
        parser: argparse.ArgumentParser = p
        return parser

    p = command("expire", cmd_expire,
                "expire old snapshots and delete the files only they reached")
    p.add_argument("--older-than", type=_older_than, metavar="MS|AGE",
                   help="expire snapshots older than this (ms since the epoch, or 5d / 12h); "
                        "default: history.expire.max-snapshot-age-ms (5 days)")
    p.add_argument("--retain-last", type=int, metavar="N",
                   help="keep at least N ancestors of each branch; "
                        "default: history.expire.min-snapshots-to-keep (1)")
    p.add_argument("--snapshot-id", type=int, action="append", metavar="ID",
                   help="expire this snapshot (repeatable)")
    p.add_argument("--clean-expired-metadata", action="store_true",
                   help="also remove schemas and partition specs no snapshot uses")
    p.add_argument("--keep-files", action="store_true",
                   help="commit the expiry but delete no files")

    p = command("remove-orphans", cmd_remove_orphans,
                "delete files under the table location that no metadata references")
    p.add_argument("--older-than", type=_older_than, metavar="MS|AGE",
                   help="only files last modified before this (default: 3 days ago; "
                        "under 24 hours needs --force)")
    p.add_argument("--location", help="a directory under the table location (default: all)")
    p.add_argument("--prefix-mismatch-mode", choices=("error", "ignore", "delete"),
                   default="error")
    p.add_argument("--equal-scheme", action="append", metavar="SCHEME=SCHEME",
                   help="treat these schemes as equal (s3a=s3 and s3n=s3 always)")
    p.add_argument("--equal-authority", action="append", metavar="AUTH=AUTH")
    p.add_argument("--force", action="store_true",
                   help="allow --older-than less than 24 hours ago")

    p = subparsers.add_parser("compute-partition-stats",
                              help="compute and register a snapshot's partition statistics")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    p.add_argument("--show", action="store_true", help="also print the rows")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_compute_partition_stats)

    p = command("compact", cmd_compact,
                "rewrite small files and files with many deletes (Java rewrite_data_files)")
    p.add_argument("--filter", help="only files that may hold rows matching it")
    p.add_argument("--target-file-size", type=int, metavar="BYTES")
    p.add_argument("--sort", nargs="?", const="", metavar="ORDER",
                   help="sort strategy, by the table's sort order or ORDER ('id desc, ...')")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a rewrite_data_files option, e.g. min-input-files=2 (repeatable)")
    p.add_argument("--engine", choices=("local", "spark"), default="local")
    p.add_argument("--branch", default="main")

    p = command("rewrite-manifests", cmd_rewrite_manifests,
                "cluster the manifests of a spec by partition")
    p.add_argument("--spec-id", type=int)
    p.add_argument("--sort-by", metavar="FIELD[,FIELD]", help="partition fields to cluster by")
    p.add_argument("--target-size", type=int, metavar="BYTES",
                   help="default: commit.manifest.target-size-bytes")
    p.add_argument("--branch", default="main")

    p = command("rewrite-position-deletes", cmd_rewrite_position_deletes,
                "bin-pack position delete files, dropping entries of removed data files")
    p.add_argument("--filter")
    p.add_argument("--option", action="append", metavar="KEY=VALUE")
    p.add_argument("--branch", default="main")

    p = command("remove-dangling-deletes", cmd_remove_dangling_deletes,
                "remove delete files that apply to no live data file")
    p.add_argument("--branch", default="main")
