"""Previews of changes, before they are queued: what a schema / partition / sort-order change
makes of the table (with the compatibility verdict), which files a delete removes or rewrites
and how many rows it deletes (an estimate), which file groups a compaction rewrites and on
which engine, which manifests a rewrite replaces and how many it writes (its dry run), what a
compute of partition statistics would read. Nothing is written.

Each preview takes the :class:`floe.table.Table` of
:func:`explorer.tables.selectors.table_load` and the task's validated parameters
(:mod:`explorer.tasks.kinds`, whose declaration of the kind names its preview), so a preview
and the run it precedes read the same parameters the same way. Lists are capped
(:data:`LIST_CAP`) and come with counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings

from explorer.units import size_text
from floe.cli.evolve import CHANGES as EVOLVE_CHANGES
from floe.errors import ValidationError
from floe.maintenance.compaction_plan import CompactionPlan, plan_compaction
from floe.maintenance.partition_stats import plan_partition_stats
from floe.maintenance.rewrite_manifests import rewrite_manifests
from floe.table import Table
from floe.table.row_level import plan_delete
from floe.table.transaction import Transaction

if TYPE_CHECKING:
    from floe.table.manage_snapshots import ManageSnapshots

__all__ = [
    "LIST_CAP",
    "EVOLVE_OPS",
    "capped",
    "evolve_stage",
    "ManageChange",
    "rollback",
    "set_current",
    "cherry_pick",
    "branch_create",
    "branch_replace",
    "branch_rename",
    "branch_remove",
    "branch_fast_forward",
    "tag_create",
    "tag_replace",
    "tag_remove",
    "ref_retention",
    "manage_stage",
    "schema_change_preview",
    "delete_preview",
    "compaction_preview",
    "compaction_engine",
    "spark_compaction_available",
    "manifests_rewrite_args",
    "manifests_rewrite_preview",
    "partition_stats_preview",
]

#: Paths listed at most in a preview or a task result (the counts are always complete).
LIST_CAP = 200
#: Groups listed at most in a compaction preview, and input files per group.
GROUP_CAP = 100
GROUP_FILES_CAP = 20

# An evolve change is one of ``floe evolve``'s sub-commands (floe.cli.evolve.CHANGES) as a
# JSON object: {"op": "add-column", "path": "point.z", "type": "double", "after": "y"}.
# Per op: the fields that are the sub-command's arguments, in order, and the fields that are
# its options.
_MOVE = {"first": "--first", "before": "--before", "after": "--after"}
EVOLVE_OPS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "add-column": (("path", "type"), {"doc": "--doc", "required": "--required", **_MOVE}),
    "drop-column": (("path",), {}),
    "rename-column": (("path", "new_name"), {}),
    "promote": (("path", "type"), {}),
    "move-column": (("path",), _MOVE),
    "make-optional": (("path",), {}),
    "require-column": (("path",), {}),
    "update-doc": (("path", "doc"), {}),
    "set-identifier-fields": (("paths",), {}),
    "add-partition-field": (("term",), {"name": "--name"}),
    "drop-partition-field": (("field",), {}),
    "rename-partition-field": (("field", "new_name"), {}),
    "sort-order": (("order",), {}),
}
assert set(EVOLVE_OPS) == set(EVOLVE_CHANGES), "evolve ops must be floe evolve's sub-commands"


def capped(items: Sequence[Any], cap: int = LIST_CAP) -> dict[str, Any]:
    """``{"count": n, "items": first cap, "truncated": bool}`` for a list in a small JSON."""
    return {"count": len(items), "items": list(items[:cap]), "truncated": len(items) > cap}


# --- snapshots and refs ---------------------------------------------------------------------------

_BRANCH_RETENTION = ("min_snapshots_to_keep", "max_snapshot_age_ms", "max_ref_age_ms")


def _kw(p: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: p.get(k) for k in keys}


#: A snapshot-management change: what a kind stages on a transaction's ManageSnapshots from
#: its validated parameters (the kind's declaration in explorer.tasks.kinds names it).
ManageChange = Callable[["ManageSnapshots", Mapping[str, Any]], Any]


def rollback(ms: ManageSnapshots, p: Mapping[str, Any]) -> None:
    if p.get("snapshot_id") is not None:
        ms.rollback_to(p["snapshot_id"])
    else:
        ms.rollback_to_time(p["timestamp_ms"])


def set_current(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.set_current(p["snapshot_id"])


def cherry_pick(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.cherry_pick(p["snapshot_id"])


def branch_create(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.create_branch(p["name"], p.get("snapshot_id"), **_kw(p, *_BRANCH_RETENTION))


def branch_replace(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.replace_branch(p["name"], p["snapshot_id"])


def branch_rename(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.rename_branch(p["name"], p["new_name"])


def branch_remove(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.remove_branch(p["name"])


def branch_fast_forward(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.fast_forward(p["name"], p["to"])


def tag_create(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.create_tag(p["name"], p.get("snapshot_id"), **_kw(p, "max_ref_age_ms"))


def tag_replace(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.replace_tag(p["name"], p["snapshot_id"])


def tag_remove(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.remove_tag(p["name"])


def ref_retention(ms: ManageSnapshots, p: Mapping[str, Any]) -> Any:
    return ms.set_retention(p["name"], **_kw(p, *_BRANCH_RETENTION))


def manage_stage(txn: Transaction, *, change: ManageChange, params: Mapping[str, Any]) -> None:
    """Stage a snapshot-management change into ``txn``: floe checks it as it is staged
    (an ancestor to roll back to, a branch that descends, a snapshot that can be
    cherry-picked …), so staging it on a transaction that is never committed checks a
    submission exactly as its run will."""
    change(txn.manage_snapshots(), params)


# --- schema, partition spec, sort order -----------------------------------------------------------


def _cli_tokens(change: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str | None]]:
    """One JSON change as floe evolve's (sub-command, arguments, options)."""
    op = change["op"]
    positional, options = EVOLVE_OPS[op]
    args = []
    for name in positional:
        value = change[name]
        args.append(",".join(value) if isinstance(value, list) else str(value))
    opts: dict[str, str | None] = {}
    for name, flag in options.items():
        value = change.get(name)
        if value is None or value is False:
            continue
        takes_value = EVOLVE_CHANGES[op].options[flag]
        opts[flag] = str(value) if takes_value else None
    return op, args, opts


def evolve_stage(txn: Transaction, *, changes: Sequence[Mapping[str, Any]],
                 allow_incompatible: bool = False) -> dict[str, Any]:
    """Stage ``changes`` into ``txn`` the way ``floe evolve`` does (schema, then partition
    spec, then sort order, so a partition field can use a column added by the same change);
    returns the builders by kind ("schema", "spec", "order"). Invalid changes raise
    ValidationError naming the column."""
    tokens = [_cli_tokens(c) for c in changes]
    builders: dict[str, Any] = {}
    for kind in ("schema", "spec", "order"):
        mine = [t for t in tokens if EVOLVE_CHANGES[t[0]].kind == kind]
        if not mine:
            continue
        if kind == "schema":
            builder: Any = txn.update_schema(allow_incompatible=allow_incompatible)
        elif kind == "spec":
            builder = txn.update_spec()
        else:
            builder = txn.replace_sort_order()
        for op, args, opts in mine:
            EVOLVE_CHANGES[op].apply(builder, args, opts)
        builder.commit()  # stages into txn; nothing is written until txn.commit()
        builders[kind] = builder
    return builders


def schema_change_preview(*, table: Table, params: Mapping[str, Any]) -> dict[str, Any]:
    """The schema, partition spec and sort order an ``evolve``'s changes would make, each
    change in one line with whether data written before it still reads correctly
    (``compatible``), and the verdict for all of them. Invalid changes raise ValidationError
    (a change Java refuses is refused; an incompatible one only with ``allow_incompatible``)."""
    builders = evolve_stage(table.new_transaction(), changes=params["changes"],
                            allow_incompatible=params.get("allow_incompatible", False))
    out: dict[str, Any] = {
        "metadata_location": table.metadata_location,
        "current": {"schema": table.schema().to_json(), "partition_spec": table.spec().to_json(),
                    "sort_order": table.sort_order().to_json()},
        "schema": None, "partition_spec": None, "sort_order": None, "schema_changes": [],
    }
    if "schema" in builders:
        out["schema"] = builders["schema"].apply().to_json()
        out["schema_changes"] = [
            {"kind": c.kind, "column": c.column, "description": c.description,
             "compatible": c.compatible}
            for c in builders["schema"].describe_changes()]
    if "spec" in builders:
        out["partition_spec"] = builders["spec"].apply().to_json()
    if "order" in builders:
        out["sort_order"] = builders["order"].apply().to_json()
    out["compatible"] = all(c["compatible"] for c in out["schema_changes"])
    return out


# --- delete ---------------------------------------------------------------------------------------


def delete_preview(*, table: Table, params: Mapping[str, Any]) -> dict[str, Any]:
    """The files a ``delete_rows`` removes whole and those it rewrites (copy-on-write) or
    gives position deletes (merge-on-read), and an estimated row count (every row of the
    files removed whole plus half of those of the partly matching ones)."""
    plan = plan_delete(table.io, table.metadata, params["filter"], mode=params.get("mode"),
                       branch=params.get("branch") or "main")
    doc = plan.to_json()
    return {
        "metadata_location": table.metadata_location,
        "mode": doc["mode"], "branch": doc["branch"], "snapshot_id": doc["snapshot_id"],
        "filter": doc["row_filter"], "metadata_only": doc["metadata_only"],
        "matches_nothing": plan.matches_nothing,
        "removed_files": capped(doc["removed_files"]),
        "partial_files": capped(doc["partial_files"]),
        "removed_delete_files": capped(doc["removed_delete_files"]),
        "rows_in_removed_files": doc["rows_in_removed_files"],
        "rows_in_partial_files": doc["rows_in_partial_files"],
        "estimated_deleted_rows": doc["estimated_deleted_rows"],
    }


# --- compaction -----------------------------------------------------------------------------------


def spark_compaction_available() -> bool:
    """Whether ``floe.spark.compaction`` (and PySpark under it) can be imported here."""
    try:
        import floe.spark.compaction  # noqa: F401
    except ImportError:
        return False
    return True


def compaction_engine(*, engine: str, input_bytes: int) -> tuple[str, str]:
    """The engine a compaction runs on, and why: ``local`` or ``spark`` as asked; ``auto``
    is Spark when the plan's input exceeds FLOE_COMPACTION_SPARK_MIN_BYTES and Spark is
    available, else local."""
    threshold = settings.FLOE_COMPACTION_SPARK_MIN_BYTES
    if engine == "local":
        return "local", "engine local was asked for"
    if engine == "spark":
        if not spark_compaction_available():
            raise ValidationError("engine spark was asked for but floe.spark.compaction "
                                  "(PySpark) cannot be imported on this server")
        return "spark", "engine spark was asked for"
    size, limit = size_text(input_bytes), size_text(threshold)
    if input_bytes <= threshold:
        return "local", (f"the input ({size}) is at most FLOE_COMPACTION_SPARK_MIN_BYTES "
                         f"({limit})")
    if not spark_compaction_available():
        return "local", (f"the input ({size}) exceeds FLOE_COMPACTION_SPARK_MIN_BYTES "
                         f"({limit}) but Spark is not available here")
    return "spark", f"the input ({size}) exceeds FLOE_COMPACTION_SPARK_MIN_BYTES ({limit})"


def compaction_plan(*, table: Table, params: Mapping[str, Any]) -> CompactionPlan:
    """The plan of a compaction task's parameters (a preview shows it, the task runs it)."""
    return plan_compaction(
        table, filter=params.get("filter"), strategy=params.get("strategy") or "binpack",
        sort_order=params.get("sort_order"), options=params.get("options") or {},
        branch=params.get("branch") or "main")


def compaction_preview(*, table: Table, params: Mapping[str, Any]) -> dict[str, Any]:
    """The file groups a compaction would rewrite (input files and bytes, expected output
    files) and the engine it would run on."""
    plan = compaction_plan(table=table, params=params)
    doc = plan.to_json()
    engine, why = compaction_engine(engine=params.get("engine") or "auto",
                                    input_bytes=doc["rewritten_bytes"])
    groups = []
    for g in doc["groups"][:GROUP_CAP]:
        files = g.pop("input_files")
        g["input_files"] = capped([f["file_path"] for f in files], GROUP_FILES_CAP)
        groups.append(g)
    return {
        "metadata_location": table.metadata_location,
        "engine": engine, "engine_reason": why,
        **{k: doc[k] for k in ("branch", "strategy", "sort_order", "filter",
                               "starting_snapshot_id", "options", "total_group_count",
                               "rewritten_files_count", "rewritten_bytes",
                               "expected_output_files", "note")},
        "group_count": len(doc["groups"]),
        "groups": groups,
        "groups_truncated": len(doc["groups"]) > GROUP_CAP,
    }


# --- manifests and partition statistics -----------------------------------------------------------


def manifests_rewrite_args(params: Mapping[str, Any]) -> dict[str, Any]:
    """floe's rewrite_manifests arguments of a rewrite_manifests task's parameters (a preview
    plans with them, the task runs with them)."""
    return {"spec_id": params.get("spec_id"), "sort_by": params.get("sort_by"),
            "target_size_bytes": params.get("target_size_bytes"),
            "branch": params.get("branch") or "main"}


def manifests_rewrite_preview(*, table: Table, params: Mapping[str, Any]) -> dict[str, Any]:
    """The manifests a rewrite would replace and how many it would write in their place
    (manifests before and after, the entries it would cluster): the rewrite's dry run."""
    args = manifests_rewrite_args(params)
    r = rewrite_manifests(table, **args, dry_run=True)
    added = sum(r.planned.values())
    return {
        "metadata_location": table.metadata_location,
        **args,
        "manifests_before": len(r.rewritten_manifests) + r.kept_manifests,
        "manifests_after": r.kept_manifests + added,
        "rewritten_manifests": capped(r.rewritten_manifests),
        "added_manifests_count": added,
        "planned_manifests": dict(r.planned),
        "kept_manifests": r.kept_manifests,
        "entries": r.entries,
    }


def partition_stats_preview(*, table: Table, params: Mapping[str, Any]) -> dict[str, Any]:
    """Which snapshot a compute of partition statistics is for, whether it has a statistics
    file already (then nothing is done), else the ancestor's file it would start from and
    how many manifests (and the data and delete files they list) it would read."""
    plan = plan_partition_stats(table, params.get("snapshot_id")).to_json()
    return {"metadata_location": table.metadata_location, **plan,
            "stats_file_exists": plan["existing_file"] is not None}
