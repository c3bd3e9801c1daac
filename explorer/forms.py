from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from explorer.errors import TaskParamsInvalid


class TableSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, strip=True)


# --- the action forms of a table's Actions page ---------------------------------------------------
# One form per task kind, as field specs the page renders and :func:`task_params` turns into
# the kind's JSON parameters. Validation is the kind's (explorer.task_kinds), the same as the
# API's: these only convert form text into JSON types (an empty field is left out).


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    type: str = "text"  # text, int, snapshot, bool, ints, json, kv, choice, ref
    choices: tuple[str, ...] = ()
    help: str = ""
    placeholder: str = ""


@dataclass(frozen=True)
class ActionForm:
    kind: str
    title: str
    fields: tuple[Field, ...]
    preview: bool = False
    group: str = ""
    note: str = ""


_SNAP = Field("snapshot_id", "Snapshot id", "snapshot")
_REF = Field("name", "Ref", "ref")
_RETENTION = (Field("min_snapshots_to_keep", "Min snapshots to keep", "int"),
              Field("max_snapshot_age_ms", "Max snapshot age (ms)", "int"),
              Field("max_ref_age_ms", "Max ref age (ms)", "int"))
_FILTER = Field("filter", "Filter", placeholder="kind = 'click' AND amount > 10")

ACTION_FORMS: tuple[ActionForm, ...] = (
    ActionForm("rollback", "Roll back main", (
        Field("snapshot_id", "To snapshot (an ancestor)", "snapshot"),
        Field("timestamp_ms", "or to the state at (epoch ms)", "int")), group="Snapshots"),
    ActionForm("set_current", "Set the current snapshot", (_SNAP,), group="Snapshots"),
    ActionForm("cherry_pick", "Cherry-pick a snapshot", (_SNAP,), group="Snapshots"),
    ActionForm("branch_create", "Create a branch", (
        Field("name", "Name"), Field("snapshot_id", "At snapshot (default: current)",
                                     "snapshot"), *_RETENTION), group="Branches and tags"),
    ActionForm("tag_create", "Create a tag", (
        Field("name", "Name"), Field("snapshot_id", "At snapshot (default: current)",
                                     "snapshot"), _RETENTION[2]), group="Branches and tags"),
    ActionForm("branch_replace", "Move a branch", (_REF, _SNAP), group="Branches and tags"),
    ActionForm("tag_replace", "Move a tag", (_REF, _SNAP), group="Branches and tags"),
    ActionForm("branch_fast_forward", "Fast-forward a branch", (
        _REF, Field("to", "To ref", "ref")), group="Branches and tags"),
    ActionForm("branch_rename", "Rename a branch", (
        _REF, Field("new_name", "New name")), group="Branches and tags"),
    ActionForm("branch_remove", "Remove a branch", (_REF,), group="Branches and tags"),
    ActionForm("tag_remove", "Remove a tag", (_REF,), group="Branches and tags"),
    ActionForm("ref_retention", "Set a ref's retention", (_REF, *_RETENTION),
               group="Branches and tags"),
    ActionForm("evolve", "Evolve schema, partition spec, sort order", (
        Field("changes", "Changes (JSON list)", "json",
              placeholder='[{"op": "add-column", "path": "note", "type": "string"}]',
              help="floe evolve's sub-commands as objects: add-column, drop-column, "
                   "rename-column, promote, move-column, make-optional, require-column, "
                   "update-doc, set-identifier-fields, add-partition-field, "
                   "drop-partition-field, rename-partition-field, sort-order"),
        Field("allow_incompatible", "Allow incompatible changes", "bool")),
        preview=True, group="Changes",
        note="Preview shows the new schema and the compatibility verdict before queueing."),
    ActionForm("delete_rows", "Delete rows by filter", (
        Field("filter", "Filter", placeholder="kind = 'click'"),
        Field("mode", "Mode", "choice", ("", "copy-on-write", "merge-on-read")),
        Field("branch", "Branch", "ref")), preview=True, group="Changes",
        note="Preview lists the matching files and an estimated row count."),
    ActionForm("export", "Export a table state", (
        Field("snapshot_id", "Snapshot", "snapshot"),
        Field("as_of", "or as of (epoch ms or ISO-8601)"), Field("ref", "or ref", "ref"),
        _FILTER, Field("columns", "Columns (comma-separated)"),
        Field("format", "Format", "choice", ("parquet", "csv"))), group="Export"),
    ActionForm("expire_snapshots_dry_run", "Expire snapshots", (
        Field("older_than_ms", "Older than (epoch ms; default: the table's max age)", "int"),
        Field("retain_last", "Retain at least", "int"),
        Field("snapshot_ids", "Snapshot ids (comma-separated)", "ints"),
        Field("clean_expired_metadata", "Also remove unused schemas and specs", "bool")),
        group="Maintenance",
        note="A dry run lists what would be removed; its page then offers a confirm step "
             "that runs exactly that plan."),
    ActionForm("remove_orphan_files_dry_run", "Remove orphan files", (
        Field("older_than_ms", "Older than (epoch ms; default: 3 days ago)", "int"),
        Field("force", "Allow a cutoff under a day", "bool"),
        Field("prefix_mismatch_mode", "Prefix mismatch", "choice",
              ("error", "ignore", "delete"))), group="Maintenance",
        note="A dry run lists the orphans; its page then offers a confirm step."),
    ActionForm("compact", "Compact data files", (
        _FILTER, Field("strategy", "Strategy", "choice", ("binpack", "sort")),
        Field("sort_order", "Sort order (for sort)", placeholder="id DESC"),
        Field("options", "Options (key=value per line)", "kv",
              placeholder="min-input-files=2\ntarget-file-size-bytes=536870912"),
        Field("branch", "Branch", "ref"),
        Field("engine", "Engine", "choice", ("auto", "local", "spark"))),
        preview=True, group="Maintenance",
        note="Preview shows the file groups, input files and bytes, and expected outputs."),
    ActionForm("rewrite_manifests", "Rewrite manifests", (
        Field("spec_id", "Partition spec id", "int"),
        Field("sort_by", "Sort by (comma-separated partition fields)"),
        Field("target_size_bytes", "Target size (bytes)", "int"),
        Field("branch", "Branch", "ref")), group="Maintenance"),
    ActionForm("compute_partition_stats", "Compute partition statistics", (
        Field("snapshot_id", "Snapshot id (empty: the current one)", "snapshot"),),
        group="Maintenance",
        note="Writes the snapshot's partition statistics file (Iceberg's, as Java writes it),"
             " from an older snapshot's file when there is one; the Partitions tab then reads"
             " it instead of the manifests."),
)
ACTION_FORM_BY_KIND = {f.kind: f for f in ACTION_FORMS}


def task_params(form: ActionForm, data: QueryDict) -> dict[str, Any]:
    """The kind's JSON parameters from a posted form (empty fields left out); a field whose
    text is not of its type is TaskParamsInvalid naming it."""
    params: dict[str, Any] = {}
    for f in form.fields:
        if f.type == "bool":
            if data.get(f.name) in ("on", "true", "1"):
                params[f.name] = True
            continue
        raw = (data.get(f.name) or "").strip()
        if not raw:
            continue
        if f.type in ("int", "snapshot"):
            try:
                params[f.name] = int(raw)
            except ValueError:
                raise TaskParamsInvalid(f.name, f"{f.label}: {raw!r} is not an integer") from None
        elif f.type == "ints":
            try:
                params[f.name] = [int(v) for v in raw.replace(" ", "").split(",") if v]
            except ValueError:
                raise TaskParamsInvalid(f.name, f"{f.label}: {raw!r} is not a list of "
                                                "integers") from None
        elif f.type == "json":
            try:
                params[f.name] = json.loads(raw)
            except ValueError as exc:
                raise TaskParamsInvalid(f.name, f"{f.label}: not JSON ({exc})") from None
        elif f.type == "kv":
            options: dict[str, str] = {}
            for line in raw.splitlines():
                if not line.strip():
                    continue
                key, sep, value = line.partition("=")
                if not sep or not key.strip():
                    raise TaskParamsInvalid(f.name, f"{f.label}: {line.strip()!r} is not "
                                                    "key=value")
                options[key.strip()] = value.strip()
            params[f.name] = options
        else:
            params[f.name] = raw
    return params
