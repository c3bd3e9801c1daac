"""What a run of each kind did, in one sentence, from its result and its parameters
("Compacted 144 files (1.2 GiB) into 36 on the local engine"): each kind's declaration
(:mod:`explorer.tasks.kinds`) names its sentence; :func:`explorer.tasks.outcomes.outcome`
adds how long it took."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from explorer.units import size_text

__all__ = ["Sentence", "count_text"]

#: A finished run's sentence from its result and its parameters.
Sentence = Callable[[Mapping[str, Any], Mapping[str, Any]], str]


def count_text(count: Any, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``1,024 files``."""
    number = int(count or 0)
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def _capfirst(text: str) -> str:
    return text[:1].upper() + text[1:]


def _count(doc: Any) -> int:
    """A capped list's count (``{"count": n, ...}``) or a plain list's length."""
    if isinstance(doc, Mapping):
        return int(doc.get("count") or 0)
    return len(doc or ())


def ref_moved(verb: str, what: str) -> Sentence:
    def say(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
        at = (r.get("refs") or {}).get(p.get("name"))
        return f"{verb} {what} {p.get('name')}" + (f" at snapshot {at}" if at else "")
    return say


def refresh_table_stats(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    t = r.get("totals") or {}
    broken = f" ({count_text(r.get('broken_tables'), 'unreadable table')})" \
        if r.get("broken_tables") else ""
    return (f"Read {count_text(r.get('tables'), 'table')}{broken}: "
            f"{count_text(t.get('records'), 'row')} in "
            f"{count_text(t.get('data_files'), 'data file')} "
            f"({size_text(t.get('files_size') or 0)})")


def evolve(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    parts = [f"the schema (now schema {r.get('schema_id')})" if r.get("schema_changed") else "",
             f"the partition spec (now spec {r.get('spec_id')})" if r.get("spec_changed") else "",
             f"the sort order (now order {r.get('sort_order_id')})"
             if r.get("sort_order_changed") else ""]
    parts = [x for x in parts if x]
    if not parts:
        return "Changed nothing: the table already had this schema, spec and sort order"
    return "Changed " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1
                         else parts[0])


def delete_rows(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if not r.get("committed"):
        return f"Deleted nothing: the filter {p.get('filter')} is false for every row"
    s = r.get("summary") or {}
    rows = int(s.get("deleted-records") or 0) + int(s.get("added-position-deletes") or 0)
    files = [count_text(s.get("deleted-data-files"), "data file") + " removed"
             if s.get("deleted-data-files") else "",
             count_text(s.get("added-data-files"), "data file") + " written"
             if s.get("added-data-files") else "",
             count_text(s.get("added-delete-files"), "delete file") + " written"
             if s.get("added-delete-files") else ""]
    files = [f for f in files if f]
    return (f"Deleted {count_text(rows, 'row')} from branch {p.get('branch') or 'main'}"
            + (f" ({', '.join(files)})" if files else ""))


def export(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Exported {count_text(r.get('rows'), 'row')} to {r.get('file')} "
            f"({size_text(r.get('bytes') or 0)})")


def _failed_deletes(r: Mapping[str, Any]) -> str:
    failed = _count(r.get("failed"))
    return f"; {count_text(failed, 'file')} could not be deleted" if failed else ""


def expire_dry_run(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if r.get("nothing_to_do"):
        return _capfirst(r.get("note") or "nothing to expire")
    return (f"Would expire {count_text(_count(r.get('expired_snapshot_ids')), 'snapshot')} "
            "and delete "
            f"{count_text(r.get('files_count'), 'file')}")


def expire(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Expired {count_text(_count(r.get('expired_snapshot_ids')), 'snapshot')}, deleted "
            f"{count_text(r.get('deleted_files'), 'file')}{_failed_deletes(r)}")


def orphans_dry_run(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if r.get("nothing_to_do"):
        return _capfirst(r.get("note") or "no orphan files")
    return (f"Found {count_text(_count(r.get('orphan_files')), 'orphan file')} among "
            f"{count_text(r.get('listed_files'), 'file')} listed")


def orphans(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Deleted {count_text(r.get('deleted_files'), 'orphan file')}{_failed_deletes(r)}")


def compact(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if not r.get("group_count"):
        return _capfirst(r.get("note") or "nothing to compact")
    failed = r.get("failed_data_files_count") or 0
    return (f"Compacted {count_text(r.get('rewritten_data_files_count'), 'file')} "
            f"({size_text(r.get('rewritten_bytes_count') or 0)}) into "
            f"{r.get('added_data_files_count') or 0:,} on the {r.get('engine') or 'local'} "
            "engine" + (f"; {count_text(failed, 'file')} could not be rewritten" if failed else ""))


def rewrite_manifests(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    rewritten = _count(r.get("rewritten_manifests"))
    if not rewritten:
        return "Nothing to rewrite: the manifests are already clustered"
    return (f"Rewrote {count_text(rewritten, 'manifest')} into "
            f"{count_text(_count(r.get('added_manifests')), 'manifest')}")


def compute_partition_stats(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    sid = r.get("snapshot_id")
    if sid is None:
        return "No partition statistics: the table has no snapshot"
    if r.get("reused"):
        return f"Snapshot {sid} already had partition statistics"
    if not r.get("statistics_file"):
        return f"No partition statistics for snapshot {sid}: it has no data files"
    since = r.get("incremental_from")
    return (f"Computed the partition statistics of snapshot {sid}: "
            f"{count_text(r.get('partitions'), 'partition')} "
            f"({size_text(r.get('file_size_in_bytes') or 0)})"
            + (f", from those of snapshot {since}" if since else ""))


def rollback(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return f"Rolled back main to snapshot {r.get('snapshot_id')}"


def set_current(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return f"Made snapshot {r.get('snapshot_id')} current"


def cherry_pick(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Cherry-picked snapshot {p.get('snapshot_id')} onto main "
            f"(now snapshot {r.get('snapshot_id')})")


def branch_rename(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return f"Renamed branch {p.get('name')} to {p.get('new_name')}"


def ref_removed(what: str) -> Sentence:
    def say(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
        return f"Removed {what} {p.get('name')}"
    return say


def branch_fast_forward(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Fast-forwarded branch {p.get('name')} to {p.get('to')} (snapshot "
            f"{(r.get('refs') or {}).get(p.get('name'))})")


def ref_retention(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return f"Set the retention of {p.get('name')}"
