from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from django.http import QueryDict

from explorer.errors import TaskParamsInvalid

# --- the action forms of a table's Actions page ---------------------------------------------------
# A form per task kind that has one (the kind's declaration in explorer.tasks.kinds names it;
# the page shows them in the order of the declarations), as field specs the page renders and
# :func:`task_params` turns into the kind's JSON parameters. Validation is the kind's, the same
# as the API's: these only convert form text into JSON types (an empty field is left out).


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    type: str = "text"  # text, int, snapshot, bool, ints, json, kv, choice, ref, changes
    choices: tuple[str, ...] = ()
    help: str = ""
    placeholder: str = ""


@dataclass(frozen=True)
class ActionForm:
    """A kind's form; ``kind`` and ``preview`` (a Preview button) are filled in from the
    kind's declaration (:meth:`bound`)."""

    title: str
    fields: tuple[Field, ...]
    group: str = ""
    note: str = ""
    kind: str = ""
    preview: bool = False

    def bound(self, kind: str, *, preview: bool) -> ActionForm:
        return replace(self, kind=kind, preview=preview)


_SNAP = Field("snapshot_id", "Snapshot id", "snapshot")
_REF = Field("name", "Ref", "ref")
_RETENTION = (Field("min_snapshots_to_keep", "Min snapshots to keep", "int"),
              Field("max_snapshot_age_ms", "Max snapshot age (ms)", "int"),
              Field("max_ref_age_ms", "Max ref age (ms)", "int"))
_FILTER = Field("filter", "Filter", placeholder="kind = 'click' AND amount > 10")

ROLLBACK = ActionForm("Roll back main", (
    Field("snapshot_id", "To snapshot (an ancestor)", "snapshot"),
    Field("timestamp_ms", "or to the state at (epoch ms)", "int")), group="Snapshots")

SET_CURRENT = ActionForm("Set the current snapshot", (_SNAP,), group="Snapshots")

CHERRY_PICK = ActionForm("Cherry-pick a snapshot", (_SNAP,), group="Snapshots")

BRANCH_CREATE = ActionForm("Create a branch", (
    Field("name", "Name"), Field("snapshot_id", "At snapshot (default: current)",
                                 "snapshot"), *_RETENTION), group="Branches and tags")

TAG_CREATE = ActionForm("Create a tag", (
    Field("name", "Name"), Field("snapshot_id", "At snapshot (default: current)",
                                 "snapshot"), _RETENTION[2]), group="Branches and tags")

BRANCH_REPLACE = ActionForm("Move a branch", (_REF, _SNAP), group="Branches and tags")

TAG_REPLACE = ActionForm("Move a tag", (_REF, _SNAP), group="Branches and tags")

BRANCH_FAST_FORWARD = ActionForm("Fast-forward a branch", (
    _REF, Field("to", "To ref", "ref")), group="Branches and tags")

BRANCH_RENAME = ActionForm("Rename a branch", (
    _REF, Field("new_name", "New name")), group="Branches and tags")

BRANCH_REMOVE = ActionForm("Remove a branch", (_REF,), group="Branches and tags")

TAG_REMOVE = ActionForm("Remove a tag", (_REF,), group="Branches and tags")

REF_RETENTION = ActionForm("Set a ref's retention", (_REF, *_RETENTION),
                           group="Branches and tags")

EVOLVE = ActionForm("Evolve schema, partition spec, sort order", (
    Field("changes", "Changes, applied in order", "changes",
          help="One change per row (floe evolve's sub-commands). Or give them all as a "
               "JSON list below, e.g. "
               '[{"op": "add-column", "path": "note", "type": "string"}]'),
    Field("allow_incompatible", "Allow incompatible changes", "bool")),
    group="Changes",
    note="Preview shows the new schema and the compatibility verdict before queueing.")

DELETE_ROWS = ActionForm("Delete rows by filter", (
    Field("filter", "Filter", placeholder="kind = 'click'"),
    Field("mode", "Mode", "choice", ("", "copy-on-write", "merge-on-read")),
    Field("branch", "Branch", "ref")), group="Changes",
    note="Preview lists the matching files and an estimated row count.")

EXPORT = ActionForm("Export a table state", (
    Field("snapshot_id", "Snapshot", "snapshot"),
    Field("as_of", "or as of (epoch ms or ISO-8601)"), Field("ref", "or ref", "ref"),
    _FILTER, Field("columns", "Columns (comma-separated)"),
    Field("format", "Format", "choice", ("parquet", "csv"))), group="Export")

EXPIRE_DRY_RUN = ActionForm("Expire snapshots", (
    Field("older_than_ms", "Older than (epoch ms; default: the table's max age)", "int"),
    Field("retain_last", "Retain at least", "int"),
    Field("snapshot_ids", "Snapshot ids (comma-separated)", "ints"),
    Field("clean_expired_metadata", "Also remove unused schemas and specs", "bool")),
    group="Maintenance",
    note="A dry run lists what would be removed; its page then offers a confirm step "
         "that runs exactly that plan.")

ORPHANS_DRY_RUN = ActionForm("Remove orphan files", (
    Field("older_than_ms", "Older than (epoch ms; default: 3 days ago)", "int"),
    Field("force", "Allow a cutoff under a day", "bool"),
    Field("prefix_mismatch_mode", "Prefix mismatch", "choice",
          ("error", "ignore", "delete"))), group="Maintenance",
    note="A dry run lists the orphans; its page then offers a confirm step.")

COMPACT = ActionForm("Compact data files", (
    _FILTER, Field("strategy", "Strategy", "choice", ("binpack", "sort")),
    Field("sort_order", "Sort order (for sort)", placeholder="id DESC"),
    Field("options", "Options (key=value per line)", "kv",
          placeholder="min-input-files=2\ntarget-file-size-bytes=536870912"),
    Field("branch", "Branch", "ref"),
    Field("engine", "Engine", "choice", ("auto", "local", "spark"))),
    group="Maintenance",
    note="Preview shows the file groups, input files and bytes, and expected outputs.")

REWRITE_MANIFESTS = ActionForm("Rewrite manifests", (
    Field("spec_id", "Partition spec id", "int"),
    Field("sort_by", "Sort by (comma-separated partition fields)"),
    Field("target_size_bytes", "Target size (bytes)", "int"),
    Field("branch", "Branch", "ref")), group="Maintenance")

COMPUTE_PARTITION_STATS = ActionForm("Compute partition statistics", (
    Field("snapshot_id", "Snapshot id (empty: the current one)", "snapshot"),),
    group="Maintenance",
    note="Writes the snapshot's partition statistics file (Iceberg's, as Java writes it),"
         " from an older snapshot's file when there is one; the Partitions tab then reads"
         " it instead of the manifests.")


# --- the evolve form's change rows ----------------------------------------------------------------
# A change per row instead of typed JSON: the operation, what it acts on (a column path, a
# partition term or field, a sort order), a value (a type, a new name, a partition field's
# name), a doc, a position and whether an added column is required. Each row becomes one of
# the evolve kind's JSON change objects (explorer.tasks.changes.EVOLVE_OPS).

#: The inputs of a change row, posted as ``changes-<row>-<input>`` (rows numbered from 0;
#: inputs an operation does not use may be left out, as browsers leave out disabled ones).
CHANGE_ROW_INPUTS = ("op", "target", "value", "doc", "position", "required")
#: Rows the form shows (more are added in the browser; posted empty rows are ignored).
CHANGE_ROWS_SHOWN = 3
_CHANGE_INPUT = re.compile(r"changes-(\d{1,4})-(" + "|".join(CHANGE_ROW_INPUTS) + ")")


@dataclass(frozen=True)
class ChangeOp:
    """What the inputs of a change row mean for one operation (the placeholders the page
    shows, and the JSON field each input fills; None: the input is not used)."""

    op: str
    target: str
    target_hint: str
    value: str | None = None
    value_hint: str = ""
    doc: str | None = None
    position: bool = False
    required: bool = False


CHANGE_OPS: tuple[ChangeOp, ...] = (
    ChangeOp("add-column", "path", "column path, e.g. point.z", "type", "type, e.g. long",
             doc="doc", position=True, required=True),
    ChangeOp("drop-column", "path", "column path"),
    ChangeOp("rename-column", "path", "column path", "new_name", "new name (last part)"),
    ChangeOp("promote", "path", "column path", "type", "wider type, e.g. long"),
    ChangeOp("move-column", "path", "column path", position=True),
    ChangeOp("make-optional", "path", "column path"),
    ChangeOp("require-column", "path", "column path"),
    ChangeOp("update-doc", "path", "column path", doc="doc"),
    ChangeOp("set-identifier-fields", "paths", "column paths, comma-separated"),
    ChangeOp("add-partition-field", "term", "term, e.g. day(ts) or bucket(16, id)", "name",
             "partition field name (optional)"),
    ChangeOp("drop-partition-field", "field", "partition field name or term"),
    ChangeOp("rename-partition-field", "field", "partition field name", "new_name",
             "new name"),
    ChangeOp("sort-order", "order", "e.g. id DESC NULLS LAST, ts"),
)
CHANGE_OP_BY_NAME = {c.op: c for c in CHANGE_OPS}


def _check_change_ops() -> None:
    """Every evolve op has a row form, filling only fields the op takes (EVOLVE_OPS)."""
    from explorer.tasks.changes import EVOLVE_OPS

    assert set(CHANGE_OP_BY_NAME) == set(EVOLVE_OPS), "a row form per evolve op"
    for c in CHANGE_OPS:
        positional, options = EVOLVE_OPS[c.op]
        fields = {*positional, *options}
        used = {c.target, c.value, c.doc, "first" if c.position else None,
                "required" if c.required else None} - {None}
        assert used <= fields, (c.op, used - fields)


_check_change_ops()


def change_rows(data: QueryDict) -> list[dict[str, str]]:
    """The posted change rows in row order (inputs by name, a missing one ""), empty rows
    left out."""
    rows: dict[int, dict[str, str]] = {}
    for key in data:
        m = _CHANGE_INPUT.fullmatch(key)
        if m is not None:
            row = rows.setdefault(int(m.group(1)), dict.fromkeys(CHANGE_ROW_INPUTS, ""))
            row[m.group(2)] = (data.get(key) or "").strip()
    return [rows[i] for i in sorted(rows)
            if any(rows[i][name] for name in ("op", "target", "value", "doc", "position"))]


def _row_change(i: int, row: dict[str, str]) -> dict[str, Any]:
    where = f"Change {i}"
    spec = CHANGE_OP_BY_NAME.get(row["op"])
    if spec is None:
        raise TaskParamsInvalid("changes", f"{where}: pick an operation")
    where += f" ({spec.op})"
    if not row["target"]:
        raise TaskParamsInvalid("changes", f"{where}: give the {spec.target_hint.split(',')[0]}")
    change: dict[str, Any] = {"op": spec.op}
    if spec.target == "paths":
        change["paths"] = [p.strip() for p in row["target"].split(",") if p.strip()]
    else:
        change[spec.target] = row["target"]
    if spec.value is not None and row["value"]:
        change[spec.value] = row["value"]
    elif spec.value in ("type", "new_name"):
        raise TaskParamsInvalid("changes", f"{where}: give the {spec.value_hint.split(',')[0]}")
    elif row["value"]:
        raise TaskParamsInvalid("changes", f"{where} takes no type or name")
    if spec.doc is not None and row["doc"]:
        change[spec.doc] = row["doc"]
    elif spec.op == "update-doc":
        raise TaskParamsInvalid("changes", f"{where}: give the doc")
    elif row["doc"]:
        raise TaskParamsInvalid("changes", f"{where} takes no doc")
    position = row["position"]
    if position and not spec.position:
        raise TaskParamsInvalid("changes", f"{where} takes no position")
    if position:
        word, _, column = position.partition(" ")
        word, column = word.lower(), column.strip()
        if word == "first" and not column:
            change["first"] = True
        elif word in ("after", "before") and column:
            change[word] = column
        else:
            raise TaskParamsInvalid("changes", f"{where}: position {position!r} is not "
                                               "'first', 'after COLUMN' or 'before COLUMN'")
    elif spec.op == "move-column":
        raise TaskParamsInvalid("changes", f"{where}: give the position ('first', "
                                           "'after COLUMN' or 'before COLUMN')")
    if row["required"] == "required":
        if not spec.required:
            raise TaskParamsInvalid("changes", f"{where}: only an added column can be "
                                               "required here")
        change["required"] = True
    return change


def evolve_changes(data: QueryDict) -> list[dict[str, Any]] | None:
    """The evolve form's changes: its rows, then the JSON list (either may be empty; None
    when both are)."""
    changes = [_row_change(i, row) for i, row in enumerate(change_rows(data), 1)]
    raw = (data.get("changes-json") or "").strip()
    if raw:
        try:
            more = json.loads(raw)
        except ValueError as exc:
            raise TaskParamsInvalid("changes", f"Changes as JSON: not JSON ({exc})") from None
        if not isinstance(more, list):
            raise TaskParamsInvalid("changes", "Changes as JSON: a list of changes, e.g. "
                                               '[{"op": "drop-column", "path": "note"}]')
        changes += more
    return changes or None


def form_values(form: ActionForm, data: QueryDict) -> dict[str, Any]:
    """A posted form's values by field, to show the form again as it was sent (change rows
    as a list of rows, padded to the rows shown)."""
    values: dict[str, Any] = {}
    for f in form.fields:
        if f.type == "changes":
            rows = change_rows(data)
            empty = dict.fromkeys(CHANGE_ROW_INPUTS, "")
            values[f.name] = rows + [empty] * max(0, CHANGE_ROWS_SHOWN - len(rows))
            values[f.name + "-json"] = data.get("changes-json", "")
        else:
            values[f.name] = data.get(f.name, "")
    return values


def task_params(form: ActionForm, data: QueryDict) -> dict[str, Any]:
    """The kind's JSON parameters from a posted form (empty fields left out); a field whose
    text is not of its type is TaskParamsInvalid naming it."""
    params: dict[str, Any] = {}
    for f in form.fields:
        if f.type == "bool":
            if data.get(f.name) in ("on", "true", "1"):
                params[f.name] = True
            continue
        if f.type == "changes":
            changes = evolve_changes(data)
            if changes is not None:
                params[f.name] = changes
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
