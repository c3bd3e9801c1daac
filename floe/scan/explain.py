"""Explaining a scan plan: every manifest and file, kept or pruned, by which stage and why.

Stages, in planning order: ``manifest-content`` (a manifest with no live files),
``partition-summary`` (the manifest list's partition field summaries), ``partition`` (a
file's partition tuple against the filter projected through its spec), ``metrics`` (a
file's column bounds and counts). Reasons come from the evaluators' explain variants.

The JSON form (:func:`plan_to_json`) is what ``floe plan --json`` prints and what the
explorer's plan page reads; keys are snake_case.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from floe.scan.delete_index import DeleteMatch

if TYPE_CHECKING:
    from floe.scan.planning import FileScanTask, PlanStream, ScanPlan

__all__ = ["Funnel", "FileDecision", "ManifestDecision", "PlanExplain", "plan_to_json",
           "write_plan_json", "encode_compact"]


@dataclass(slots=True)
class Funnel:
    """Counts at each planning stage. ``data_files_in_snapshot`` comes from the manifest
    list's counts (None counts as 0: v1 lists may lack them); ``data_files_total`` counts
    the live files of the manifests that were opened."""

    manifests_total: int = 0
    manifests_after_content: int = 0
    manifests_after_summaries: int = 0
    data_files_in_snapshot: int = 0
    data_files_total: int = 0
    data_files_after_partition: int = 0
    data_files_after_metrics: int = 0
    delete_manifests_total: int = 0
    delete_manifests_kept: int = 0
    delete_files_total: int = 0
    delete_files_matched: int = 0
    tasks: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]


@dataclass(slots=True)
class FileDecision:
    path: str
    content: str
    kept: bool
    stage: str | None
    reason: str
    delete_files: list[DeleteMatch] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "content": self.content, "kept": self.kept,
                               "stage": self.stage, "reason": self.reason}
        if self.content == "data" and self.kept:
            out["delete_files"] = [
                {"path": d.delete_path, "content": d.content,
                 "sequence_number": d.sequence_number, "applied": d.applied,
                 "reason": d.reason}
                for d in self.delete_files
            ]
        return out


@dataclass(slots=True)
class ManifestDecision:
    path: str
    content: str
    spec_id: int
    kept: bool
    stage: str | None
    reason: str
    files: list[FileDecision] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "content": self.content, "spec_id": self.spec_id,
                "kept": self.kept, "stage": self.stage, "reason": self.reason,
                "files": [f.to_json() for f in self.files]}


@dataclass(slots=True)
class PlanExplain:
    snapshot_selection: str
    manifests: list[ManifestDecision] = field(default_factory=list)
    _by_path: dict[str, int] = field(default_factory=dict)

    def add(self, decision: ManifestDecision) -> None:
        self._by_path[decision.path] = len(self.manifests)
        self.manifests.append(decision)

    def manifest(self, path: str) -> ManifestDecision:
        return self.manifests[self._by_path[path]]

    def position(self, path: str) -> int:
        """Where the decision on this manifest is in :attr:`manifests`."""
        return self._by_path[path]


def plan_to_json(plan: ScanPlan) -> dict[str, Any]:
    """The plan as one JSON document: selection, funnel, tasks, explain records."""
    out: dict[str, Any] = {
        "snapshot_id": plan.snapshot_id,
        "schema_id": plan.schema.schema_id,
        "filter": None if plan.row_filter is None else str(plan.row_filter),
        "funnel": plan.funnel.to_json(),
        "tasks": [task_json(t) for t in plan.tasks],
    }
    if plan.explain is not None:
        out["snapshot_selection"] = plan.explain.snapshot_selection
        out["manifests"] = [m.to_json() for m in plan.explain.manifests]
    return out


def task_json(t: FileScanTask) -> dict[str, Any]:
    return {"file_path": t.data_file.file_path, "spec_id": t.spec_id,
            "sequence_number": t.sequence_number, "record_count": t.data_file.record_count,
            "residual": None if t.residual is None else str(t.residual),
            "delete_files": [d.path for d in t.delete_files]}


#: Compact output goes through the json module's C encoder (``indent`` would disable it).
encode_compact = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False).encode


def write_plan_json(stream: PlanStream, out: IO[str]) -> None:
    """Write :func:`plan_to_json`'s document for a :class:`~floe.scan.planning.PlanStream`
    while the plan is produced: tasks as they come, each manifest's explanation once its
    files are decided (then dropped; spooled to a temporary file until the tasks are
    written), the funnel last. Memory stays bounded whatever the number of files."""
    plan = stream.plan
    explain = plan.explain
    head = encode_compact({"snapshot_id": plan.snapshot_id, "schema_id": plan.schema.schema_id,
                    "filter": None if plan.row_filter is None else str(plan.row_filter)})
    out.write(head[:-1] + ',"tasks":[')
    spool = tempfile.TemporaryFile("w+", encoding="utf-8") if explain is not None else None
    sep = ""
    done = 0  # explanations written to the spool

    def flush_explanations(upto: int) -> None:
        nonlocal done
        assert explain is not None and spool is not None
        parts = []
        while done < upto:
            decision = explain.manifests[done]
            parts.append(encode_compact(decision.to_json()))
            decision.files = []
            done += 1
        if parts:
            spool.write(("," if spool.tell() else "") + ",".join(parts))

    try:
        for m, tasks in stream:
            if tasks:
                # one encoder call per manifest's tasks (a call per task costs more than
                # the encoding): the list's brackets dropped
                out.write(sep + encode_compact([task_json(t) for t in tasks])[1:-1])
                sep = ","
            if explain is not None:
                flush_explanations(explain.position(m.manifest_path) + 1)
        out.write("]")
        if explain is not None and spool is not None:
            flush_explanations(len(explain.manifests))
            out.write(',"snapshot_selection":' + encode_compact(explain.snapshot_selection)
                      + ',"manifests":[')
            spool.seek(0)
            shutil.copyfileobj(spool, out)
            out.write("]")
    finally:
        if spool is not None:
            spool.close()
    out.write(',"funnel":' + encode_compact(plan.funnel.to_json()) + "}\n")
