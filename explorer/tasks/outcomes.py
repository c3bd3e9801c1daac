"""What a task run's progress reads as, for people: while it runs, its stage and counts (sizes in
binary units); once it finished, the sentence its kind declares for what happened
(:mod:`explorer.tasks.sentences`: "Compacted 144 files (1.2 GiB) into 36 in 12 s"), or how it
stopped ("Cancelled after rewriting 3 of 36 groups", "Failed: …"). The task
pages, the API's task representation and explorer/tasks.js show the same text
(:func:`progress_text`).

A cancelled or failed run tells how far it got from its *milestone*: the last report of a stage
whose counts mean something to a person (:data:`STAGE_UNITS`; a compaction's groups, not the
files of the group it was writing), which the worker stores when the run ends
(:func:`milestone`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from explorer.tasks.kinds import KINDS
from explorer.tasks.sentences import count_text
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
    spec = KINDS.get(run.kind)
    text = spec.say(run.result or {}, run.params or {}) if spec is not None else "Done"
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
                rows.append((name, count_text(len(value), "item")))
        else:
            rows.append((name, _fact_value(str(key), value)))
    return rows
