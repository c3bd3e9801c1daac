"""What a task run's progress reads as, for people: while it runs, its stage and counts (sizes in
binary units); once it finished, one sentence per kind of what happened ("Compacted 144 files
(1.2 GiB) into 36 in 12 s", "Cancelled after rewriting 3 of 36 groups", "Failed: …"). The task
pages, the API's task representation and explorer/tasks.js show the same text
(:func:`progress_text`).

A cancelled or failed run tells how far it got from its *milestone*: the last report of a stage
whose counts mean something to a person (:data:`STAGE_UNITS`; a compaction's groups, not the
files of the group it was writing), which the worker stores when the run ends
(:func:`milestone`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from explorer.units import size_text, sizes_in_text
from floe.maintenance import Progress

__all__ = ["STAGE_UNITS", "milestone", "outcome", "progress_text", "duration_text",
           "result_facts"]

#: Stages of floe's and the runners' progress reports whose counts are of something a person
#: recognises, and what they count.
STAGE_UNITS: dict[str, str] = {
    "rewriting": "groups",
    "exporting": "rows",
    "deleting files": "files",
    "listing files": "files",
    "reading manifests": "manifests",
    "reading expired manifests": "manifests",
    "reading kept manifests": "manifests",
    "reading manifest lists": "manifest lists",
    "reading data manifests": "manifests",
    "reading delete manifests": "manifests",
    "reading tables": "tables",
}

_FINISHED = ("SUCCEEDED", "FAILED", "CANCELLED")


def milestone(reports: Sequence[Progress]) -> Progress | None:
    """Of one report per stage, oldest stage first: the latest of a stage in
    :data:`STAGE_UNITS`, else the latest."""
    counted = [p for p in reports if p.stage in STAGE_UNITS]
    if counted:
        return counted[-1]
    return reports[-1] if reports else None


def duration_text(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``2 min 5 s``, ``1 h 2 min``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def _n(count: Any, noun: str, plural: str | None = None) -> str:
    number = int(count or 0)
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def _capfirst(text: str) -> str:
    return text[:1].upper() + text[1:]


def _count(doc: Any) -> int:
    """A capped list's count (``{"count": n, ...}``) or a plain list's length."""
    if isinstance(doc, Mapping):
        return int(doc.get("count") or 0)
    return len(doc or ())


# --- what each kind did -------------------------------------------------------------------------


def _ref_moved(verb: str, what: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], str]:
    def say(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
        at = (r.get("refs") or {}).get(p.get("name"))
        return f"{verb} {what} {p.get('name')}" + (f" at snapshot {at}" if at else "")
    return say


def _refresh(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    t = r.get("totals") or {}
    broken = f" ({_n(r.get('broken_tables'), 'unreadable table')})" \
        if r.get("broken_tables") else ""
    return (f"Read {_n(r.get('tables'), 'table')}{broken}: {_n(t.get('records'), 'row')} in "
            f"{_n(t.get('data_files'), 'data file')} ({size_text(t.get('files_size') or 0)})")


def _evolve(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    parts = [f"the schema (now schema {r.get('schema_id')})" if r.get("schema_changed") else "",
             f"the partition spec (now spec {r.get('spec_id')})" if r.get("spec_changed") else "",
             f"the sort order (now order {r.get('sort_order_id')})"
             if r.get("sort_order_changed") else ""]
    parts = [x for x in parts if x]
    if not parts:
        return "Changed nothing: the table already had this schema, spec and sort order"
    return "Changed " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1
                         else parts[0])


def _delete(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if not r.get("committed"):
        return f"Deleted nothing: the filter {p.get('filter')} is false for every row"
    s = r.get("summary") or {}
    rows = int(s.get("deleted-records") or 0) + int(s.get("added-position-deletes") or 0)
    files = [_n(s.get("deleted-data-files"), "data file") + " removed"
             if s.get("deleted-data-files") else "",
             _n(s.get("added-data-files"), "data file") + " written"
             if s.get("added-data-files") else "",
             _n(s.get("added-delete-files"), "delete file") + " written"
             if s.get("added-delete-files") else ""]
    files = [f for f in files if f]
    return (f"Deleted {_n(rows, 'row')} from branch {p.get('branch') or 'main'}"
            + (f" ({', '.join(files)})" if files else ""))


def _export(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Exported {_n(r.get('rows'), 'row')} to {r.get('file')} "
            f"({size_text(r.get('bytes') or 0)})")


def _failed_deletes(r: Mapping[str, Any]) -> str:
    failed = _count(r.get("failed"))
    return f"; {_n(failed, 'file')} could not be deleted" if failed else ""


def _expire_dry(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if r.get("nothing_to_do"):
        return _capfirst(r.get("note") or "nothing to expire")
    return (f"Would expire {_n(_count(r.get('expired_snapshot_ids')), 'snapshot')} and delete "
            f"{_n(r.get('files_count'), 'file')}")


def _expire(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Expired {_n(_count(r.get('expired_snapshot_ids')), 'snapshot')}, deleted "
            f"{_n(r.get('deleted_files'), 'file')}{_failed_deletes(r)}")


def _orphans_dry(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if r.get("nothing_to_do"):
        return _capfirst(r.get("note") or "no orphan files")
    return (f"Found {_n(_count(r.get('orphan_files')), 'orphan file')} among "
            f"{_n(r.get('listed_files'), 'file')} listed")


def _orphans(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"Deleted {_n(r.get('deleted_files'), 'orphan file')}{_failed_deletes(r)}")


def _compact(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    if not r.get("group_count"):
        return _capfirst(r.get("note") or "nothing to compact")
    failed = r.get("failed_data_files_count") or 0
    return (f"Compacted {_n(r.get('rewritten_data_files_count'), 'file')} "
            f"({size_text(r.get('rewritten_bytes_count') or 0)}) into "
            f"{r.get('added_data_files_count') or 0:,} on the {r.get('engine') or 'local'} "
            "engine" + (f"; {_n(failed, 'file')} could not be rewritten" if failed else ""))


def _manifests(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    rewritten = _count(r.get("rewritten_manifests"))
    if not rewritten:
        return "Nothing to rewrite: the manifests are already clustered"
    return (f"Rewrote {_n(rewritten, 'manifest')} into "
            f"{_n(_count(r.get('added_manifests')), 'manifest')}")


def _partition_stats(r: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    sid = r.get("snapshot_id")
    if sid is None:
        return "No partition statistics: the table has no snapshot"
    if r.get("reused"):
        return f"Snapshot {sid} already had partition statistics"
    if not r.get("statistics_file"):
        return f"No partition statistics for snapshot {sid}: it has no data files"
    since = r.get("incremental_from")
    return (f"Computed the partition statistics of snapshot {sid}: "
            f"{_n(r.get('partitions'), 'partition')} "
            f"({size_text(r.get('file_size_in_bytes') or 0)})"
            + (f", from those of snapshot {since}" if since else ""))


_SAY: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str]] = {
    "refresh_table_stats": _refresh,
    "rollback": lambda r, p: f"Rolled back main to snapshot {r.get('snapshot_id')}",
    "set_current": lambda r, p: f"Made snapshot {r.get('snapshot_id')} current",
    "cherry_pick": lambda r, p: (f"Cherry-picked snapshot {p.get('snapshot_id')} onto main "
                                 f"(now snapshot {r.get('snapshot_id')})"),
    "branch_create": _ref_moved("Created", "branch"),
    "branch_replace": _ref_moved("Moved", "branch"),
    "branch_rename": lambda r, p: f"Renamed branch {p.get('name')} to {p.get('new_name')}",
    "branch_remove": lambda r, p: f"Removed branch {p.get('name')}",
    "branch_fast_forward": lambda r, p: (
        f"Fast-forwarded branch {p.get('name')} to {p.get('to')} (snapshot "
        f"{(r.get('refs') or {}).get(p.get('name'))})"),
    "tag_create": _ref_moved("Created", "tag"),
    "tag_replace": _ref_moved("Moved", "tag"),
    "tag_remove": lambda r, p: f"Removed tag {p.get('name')}",
    "ref_retention": lambda r, p: f"Set the retention of {p.get('name')}",
    "evolve": _evolve,
    "delete_rows": _delete,
    "export": _export,
    "expire_snapshots_dry_run": _expire_dry,
    "expire_snapshots": _expire,
    "remove_orphan_files_dry_run": _orphans_dry,
    "remove_orphan_files": _orphans,
    "compact": _compact,
    "rewrite_manifests": _manifests,
    "compute_partition_stats": _partition_stats,
}


def _seconds(run: Any) -> float | None:
    started, finished = run.started_at, run.finished_at
    if not isinstance(started, datetime) or not isinstance(finished, datetime):
        return None
    return max(0.0, (finished - started).total_seconds())


def _cancelled(run: Any) -> str:
    stage, done, total = run.stage or "", run.progress_done or 0, run.progress_total
    if not run.started_at:
        return "Cancelled before it started"
    noun = STAGE_UNITS.get(stage)
    if noun and total:
        return f"Cancelled after {stage.split()[0]} {done:,} of {total:,} {noun}"
    if stage and stage != "starting":
        return f"Cancelled while {stage}"
    return "Cancelled"


#: The class name a stored error starts with (explorer.tasks.runtime writes "Name: message").
_ERROR_CLASS = re.compile(r"^[A-Z]\w*: ")


def outcome(run: Any) -> str | None:
    """The sentence of a finished run (None while it is queued or running)."""
    if run.state not in _FINISHED:
        return None
    if run.state == "CANCELLED":
        return _cancelled(run)
    if run.state == "FAILED":
        reason = (run.error or "").strip().splitlines()
        # the error is stored as "SomeError: what happened"; people read what happened
        said = _ERROR_CLASS.sub("", reason[0]) if reason else ""
        return sizes_in_text(f"Failed: {said}" if said else "Failed")
    say = _SAY.get(run.kind)
    text = say(run.result or {}, run.params or {}) if say else "Done"
    seconds = _seconds(run)
    return sizes_in_text(text + (f" in {duration_text(seconds)}" if seconds is not None
                                 else ""))


def progress_text(run: Any) -> str:
    """What the page shows beside the progress bar: the outcome of a finished run, else the
    stage with its counts and detail (sizes in binary units)."""
    done = outcome(run)
    if done is not None:
        return done
    if run.state == "QUEUED":
        return "queued"
    text = run.stage or ""
    if run.progress_total:
        text += f" {run.progress_done:,}/{run.progress_total:,}"
    if run.progress_detail:
        text += f" · {run.progress_detail}"
    return sizes_in_text(text)


# --- a result, field by field -------------------------------------------------------------------

#: Lists of at most this many plain values are shown in full; longer ones by their length.
_LIST_SHOWN = 8


def _is_size(key: str) -> bool:
    """Keys whose integer values are byte counts (``rewritten_bytes``, ``file_size_in_bytes``,
    ``files_size``, ``size``)."""
    key = key.lower()
    return "bytes" in key or key == "size" or key.endswith("_size")


def _fact_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if key.lower().endswith(("id", "ids")):  # snapshot ids: digits as they are
            return str(value)
        return f"{size_text(value)} ({value:,} bytes)" if _is_size(key) else f"{value:,}"
    if isinstance(value, float):
        return f"{value:,g}"
    if value is None:
        return "—"
    return sizes_in_text(str(value))


def result_facts(result: Mapping[str, Any] | None, prefix: str = "") -> list[tuple[str, str]]:
    """A run's result as (field, value) lines for people: nested fields as ``a › b``, byte
    counts in binary units with the exact count beside, long lists by their length (the
    page shows the exact JSON under them)."""
    rows: list[tuple[str, str]] = []
    for key, value in (result or {}).items():
        name = prefix + str(key).replace("_", " ")
        if isinstance(value, Mapping):
            rows += result_facts(value, name + " › ") if value else [(name, "—")]
        elif isinstance(value, (list, tuple)):
            plain = all(not isinstance(v, (Mapping, list, tuple)) for v in value)
            if plain and len(value) <= _LIST_SHOWN:
                rows.append((name, ", ".join(_fact_value(str(key), v) for v in value) or "none"))
            else:
                rows.append((name, _n(len(value), "item")))
        else:
            rows.append((name, _fact_value(str(key), value)))
    return rows
