"""The work of each kind of task: a function from a :class:`~explorer.tasks.runtime.RunContext`
to the run's result (a small JSON document: counts, snapshot ids, metadata locations, file
lists capped with a count); each kind's declaration (:mod:`explorer.tasks.kinds`) names its
runner.

Changes open the table with :func:`explorer.tables.selectors.table_load` (a handle of their
own) and commit through floe; operations with progress reports pass ``ctx.on_progress`` (a
cancel stops them between steps), the others commit through ``ctx.commit`` (a cancel stops
them right before the commit). The confirm steps of expire and orphan removal run exactly
their dry run's plan or refuse (:class:`explorer.errors.TableChangedSinceDryRun`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
from django.conf import settings

from explorer.catalogs import LOCAL_CATALOG, catalog_call
from explorer.errors import TableChangedSinceDryRun
from explorer.models import TaskRun
from explorer.tables import selectors
from explorer.tasks.changes import (
    ManageChange,
    capped,
    compaction_engine,
    compaction_plan,
    evolve_stage,
    manage_stage,
    manifests_rewrite_args,
)
from explorer.values import CsvWriter
from floe.catalog.base import Catalog, TableIdentifier
from floe.io.parquet import schema_to_arrow
from floe.maintenance import Progress
from floe.maintenance.compaction import CompactionResult, compact
from floe.maintenance.expire import ExpireResult, expire_snapshots
from floe.maintenance.orphans import OrphanResult, remove_orphan_files
from floe.maintenance.partition_stats import compute_partition_stats
from floe.maintenance.rewrite_manifests import rewrite_manifests
from floe.metadata import TableMetadata
from floe.properties import MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT, int_property
from floe.scan import plan_files
from floe.scan.readers import read_plan
from floe.table import Table

if TYPE_CHECKING:  # the worker's side imports the kinds, which name these runners
    from explorer.tasks.runtime import RunContext

__all__ = ["Runner", "manage", "refresh_table_stats", "evolve", "delete_rows", "export",
           "expire_dry_run", "expire_confirm", "orphans_dry_run", "orphans_confirm",
           "compact_table", "rewrite_table_manifests", "compute_table_partition_stats"]

#: The work of a kind: the run's context in, its result (a small JSON document) out.
Runner = Callable[["RunContext"], dict[str, Any]]


def _table(ctx: RunContext) -> Table:
    run = ctx.run
    return selectors.table_load(catalog=run.catalog, namespace=run.namespace,
                                           name=run.table)


def _state(table: Table) -> dict[str, Any]:
    snapshot = table.current_snapshot()
    return {"metadata_location": table.metadata_location,
            "snapshot_id": snapshot.snapshot_id if snapshot is not None else None}


# --- catalog-wide ------------------------------------------------------------------------------


def refresh_table_stats(ctx: RunContext) -> dict[str, Any]:
    p = ctx.params
    return table_stats_refresh(
        catalog_name=p.get("catalog", "local"), namespace=p.get("namespace") or None,
        on_progress=ctx.on_progress)


# --- snapshot management and refs ---------------------------------------------------------------


def manage(change: ManageChange) -> Runner:
    """A ManageSnapshots change (the one validation staged too) committed behind the cancel
    guard."""

    def run(ctx: RunContext) -> dict[str, Any]:
        table = _table(ctx)
        ctx.report("committing")
        txn = table.new_transaction()
        manage_stage(txn, change=change, params=ctx.params)
        ctx.commit(txn)
        return {**_state(table), "refs": {name: ref.snapshot_id
                                          for name, ref in table.metadata.refs.items()}}

    return run


# --- evolution ----------------------------------------------------------------------------------


def evolve(ctx: RunContext) -> dict[str, Any]:
    table = _table(ctx)
    before = table.metadata
    ctx.report("committing")
    txn = table.new_transaction()
    evolve_stage(txn, changes=ctx.params["changes"],
                 allow_incompatible=ctx.params.get("allow_incompatible", False))
    ctx.commit(txn)
    md = table.metadata
    return {**_state(table), "schema_id": md.current_schema_id, "spec_id": md.default_spec_id,
            "sort_order_id": md.default_sort_order_id,
            "schema_changed": md.current_schema_id != before.current_schema_id,
            "spec_changed": md.default_spec_id != before.default_spec_id,
            "sort_order_changed": md.default_sort_order_id != before.default_sort_order_id}


# --- delete ---------------------------------------------------------------------------------------


def delete_rows(ctx: RunContext) -> dict[str, Any]:
    table = _table(ctx)
    p = ctx.params
    ctx.report("writing", detail=f"delete where {p['filter']}")
    branch = p.get("branch") or "main"
    txn = table.new_transaction()
    before = table.metadata.snapshot_by_ref(branch)
    txn.delete_where(p["filter"], mode=p.get("mode"), branch=branch)
    ctx.report("committing")
    ctx.commit(txn)
    snap = table.metadata.snapshot_by_ref(branch)
    new = snap is not None and (before is None or snap.snapshot_id != before.snapshot_id)
    summary = dict(snap.summary) if new and snap is not None else {}
    return {**_state(table), "committed": bool(txn.operations),
            "branch_snapshot_id": snap.snapshot_id if snap is not None else None,
            "summary": {k: summary[k] for k in (
                "operation", "deleted-records", "deleted-data-files", "added-data-files",
                "added-position-deletes", "added-delete-files", "total-records")
                if k in summary}}


# --- export ---------------------------------------------------------------------------------------


def export_dir(run_id: int) -> Path:
    return Path(settings.FLOE_EXPORT_DIR) / str(run_id)


def export(ctx: RunContext) -> dict[str, Any]:
    """Stream the rows of a table state into a Parquet or CSV file under the exports
    directory (a ``.part`` file renamed when complete; removed on failure or cancel)."""
    run, p = ctx.run, ctx.params
    table = selectors.table_load(catalog=run.catalog, namespace=run.namespace, name=run.table)
    ctx.report("planning")
    plan = plan_files(table.io, table.metadata, snapshot_id=p.get("snapshot_id"),
                      as_of_ms=p.get("as_of"), ref=p.get("ref"), row_filter=p.get("filter"),
                      processes=False)
    columns = p.get("columns")
    schema = plan.schema.select(*columns) if columns else plan.schema
    arrow_schema = schema_to_arrow(schema)
    fmt = p.get("format") or "parquet"
    directory = export_dir(run.pk)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{run.namespace}.{run.table}-{run.pk}.{fmt}"
    final, part = directory / name, directory / f"{name}.part"
    rows_in_files = sum(t.data_file.record_count for t in plan.tasks)
    rows = 0
    reader = read_plan(table.io, plan, columns)
    try:
        writer: Any = (pq.ParquetWriter(str(part), arrow_schema) if fmt == "parquet"
                       else CsvWriter(str(part), schema, arrow_schema))
        try:
            ctx.report("exporting", 0, rows_in_files, f"{len(plan.tasks)} data files")
            for batch in reader:
                writer.write_batch(batch)
                rows += batch.num_rows
                ctx.report("exporting", rows, max(rows, rows_in_files),
                           f"{rows:,} rows written")
        finally:
            writer.close()
        ctx.check_cancelled(fresh=True)
        os.replace(part, final)
    except BaseException:
        reader.close()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    relative = str(final.relative_to(settings.FLOE_EXPORT_DIR))
    ctx.artifact(relative)
    return {"file": name, "format": fmt, "rows": rows, "bytes": final.stat().st_size,
            "snapshot_id": plan.snapshot_id,
            "metadata_location": table.metadata_location,
            "expires_in_seconds": settings.FLOE_EXPORT_MAX_AGE}


# --- expire snapshots and orphan files: dry run, then confirm -------------------------------------


def _digest(*parts: Iterable[Any]) -> str:
    """A fingerprint of a plan: the confirm step compares it with the dry run's."""
    doc = json.dumps([sorted(map(str, p)) for p in parts], separators=(",", ":"))
    return hashlib.sha256(doc.encode()).hexdigest()


def _expire_params(ctx: RunContext, md: TableMetadata) -> dict[str, Any]:
    """The dry run's parameters with its time pinned: ``older_than_ms`` as the table's default
    age works it out now, so the confirm step plans with the same cutoff."""
    p = ctx.params
    older = p.get("older_than_ms")
    if older is None:
        older = int(time.time() * 1000) - int_property(md, MAX_SNAPSHOT_AGE_MS,
                                                       MAX_SNAPSHOT_AGE_MS_DEFAULT)
    return {"older_than_ms": older, "retain_last": p.get("retain_last"),
            "snapshot_ids": list(p.get("snapshot_ids") or []),
            "clean_expired_metadata": bool(p.get("clean_expired_metadata"))}


def _expire_digest(r: ExpireResult) -> str:
    return _digest(r.expired_snapshot_ids, r.removed_refs, r.removed_schema_ids,
                   r.removed_spec_ids, r.files())


def _expire_json(r: ExpireResult) -> dict[str, Any]:
    files = r.files()
    return {
        "expired_snapshot_ids": capped(r.expired_snapshot_ids),
        "removed_refs": list(r.removed_refs),
        "removed_schema_ids": list(r.removed_schema_ids),
        "removed_spec_ids": list(r.removed_spec_ids),
        "previously_expired_snapshot_ids": list(r.previously_expired_snapshot_ids),
        "files": capped(files),
        "files_by_kind": {k: len(getattr(r, k)) for k in (
            "data_files", "position_delete_files", "equality_delete_files", "manifests",
            "manifest_lists", "statistics_files", "partition_statistics_files")},
        "warnings": list(r.warnings),
        "nothing_to_do": r.nothing_to_do, "note": r.note,
    }


def expire_dry_run(ctx: RunContext) -> dict[str, Any]:
    table = _table(ctx)
    params = _expire_params(ctx, table.metadata)
    r = expire_snapshots(table, dry_run=True, on_progress=ctx.on_progress, **params)
    return {**_state(table), "params": params, "digest": _expire_digest(r),
            "files_count": len(r.files()), **_expire_json(r)}


class _PinnedCatalog:
    """The table's catalog, except that it commits only on top of one metadata file: a
    confirm step never commits over a change its dry run did not see (the catalog's own
    check-and-swap makes "still at that file" and "commit" one atomic step)."""

    def __init__(self, catalog: Catalog, location: str, dry_run_id: int) -> None:
        self._catalog = catalog
        self._location = location
        self._dry_run_id = dry_run_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)

    def _pin(self, ident: TableIdentifier, base_location: str | None) -> None:
        if base_location != self._location:
            raise TableChangedSinceDryRun(
                f"table {ident} changed since dry run {self._dry_run_id} (it planned from "
                f"{self._location}, the table is now at {base_location}); nothing was "
                "committed or deleted: run the dry run again")

    def commit_metadata(self, ident: TableIdentifier, base_location: str | None,
                        base: TableMetadata, new: TableMetadata) -> str:
        self._pin(ident, base_location)
        with catalog_call(self._catalog):
            return str(self._catalog.commit_metadata(ident, base_location, base, new))

    def commit_updates(self, ident: TableIdentifier, base_location: str, base: TableMetadata,
                       requirements: Any, updates: Any) -> tuple[str, TableMetadata]:
        """The transaction's commit (floe.catalog.base.Catalog.commit_updates), pinned."""
        self._pin(ident, base_location)
        with catalog_call(self._catalog):
            return self._catalog.commit_updates(ident, base_location, base, requirements,
                                                updates)


def _dry_run(ctx: RunContext) -> tuple[TaskRun, dict[str, Any], Table]:
    """The dry run a confirm step executes, and the table, which must still be where the dry
    run saw it."""
    dry = ctx.run.source_run
    assert dry is not None and dry.result is not None
    planned = dry.result
    table = _table(ctx)
    if table.metadata_location != planned["metadata_location"]:
        raise TableChangedSinceDryRun(
            f"table {table.identifier} changed since dry run {dry.pk} (it planned from "
            f"{planned['metadata_location']}, the table is now at {table.metadata_location}); "
            "nothing was committed or deleted: run the dry run again")
    return dry, planned, table


def _refuse_changed_plan(dry: TaskRun, what: str) -> TableChangedSinceDryRun:
    return TableChangedSinceDryRun(
        f"the {what} changed since dry run {dry.pk} although the table did not (time has "
        "passed, or files changed on disk); nothing was committed or deleted: run the dry "
        "run again")


def _deleting_exactly(ctx: RunContext, dry: TaskRun, count: int, what: str
                      ) -> Callable[[Progress], None]:
    """Progress callback of a confirm's real run: before the first file is deleted, the run
    must be about to delete as many files as its dry run listed."""

    def on_progress(progress: Progress) -> None:
        if progress.stage == "deleting files" and progress.done == 0 \
                and progress.total != count:
            raise _refuse_changed_plan(dry, what)
        ctx.on_progress(progress)

    return on_progress


def expire_confirm(ctx: RunContext) -> dict[str, Any]:
    dry, planned, table = _dry_run(ctx)
    params = planned["params"]
    check = expire_snapshots(table, dry_run=True, on_progress=ctx.on_progress, **params)
    if _expire_digest(check) != planned["digest"]:
        raise _refuse_changed_plan(dry, "expiration plan")
    # the table's own FileIO (a REST catalog's storage config for it, its confinement)
    pinned = Table(_PinnedCatalog(table.catalog, table.metadata_location, dry.pk),  # type: ignore[arg-type]
                   table.identifier, table.metadata, table.metadata_location, table.io)
    r = expire_snapshots(pinned, on_progress=_deleting_exactly(
        ctx, dry, planned["files_count"], "expiration plan"), **params)
    return {**_state(pinned), "dry_run_task_id": dry.pk, "committed": r.committed,
            "deleted_files": r.deleted_files, "failed": capped([f"{p}: {e}" for p, e in r.failed]),
            **_expire_json(r)}


def _orphans_json(r: OrphanResult) -> dict[str, Any]:
    return {"location": r.location, "older_than_ms": r.older_than_ms,
            "listed_files": r.listed_files, "candidate_files": r.candidate_files,
            "orphan_files": capped(r.orphan_files),
            "ignored_prefix_mismatches": capped(r.ignored_prefix_mismatches),
            "nothing_to_do": not r.orphan_files, "note": r.note}


def orphans_dry_run(ctx: RunContext) -> dict[str, Any]:
    table = _table(ctx)
    p = ctx.params
    r = remove_orphan_files(table, older_than_ms=p.get("older_than_ms"), dry_run=True,
                            force=bool(p.get("force")),
                            prefix_mismatch_mode=p.get("prefix_mismatch_mode") or "error",
                            on_progress=ctx.on_progress)
    params = {"older_than_ms": r.older_than_ms, "force": bool(p.get("force")),
              "prefix_mismatch_mode": p.get("prefix_mismatch_mode") or "error"}
    return {**_state(table), "params": params, "digest": _digest(r.orphan_files),
            "files_count": len(r.orphan_files), **_orphans_json(r)}


def orphans_confirm(ctx: RunContext) -> dict[str, Any]:
    dry, planned, table = _dry_run(ctx)
    params = planned["params"]
    check = remove_orphan_files(table, dry_run=True, on_progress=ctx.on_progress, **params)
    if _digest(check.orphan_files) != planned["digest"]:
        raise _refuse_changed_plan(dry, "list of orphan files")
    location = table.metadata_location
    exactly = _deleting_exactly(ctx, dry, planned["files_count"], "list of orphan files")

    def on_progress(progress: Progress) -> None:
        if progress.stage == "deleting files" and progress.done == 0:
            now, _ = selectors.table_pointer(catalog=ctx.run.catalog,
                                             namespace=ctx.run.namespace, name=ctx.run.table)
            if now != location:
                raise TableChangedSinceDryRun(
                    f"table {table.identifier} changed while its orphan files were listed "
                    f"(from {location} to {now}); nothing was deleted: run the dry run again")
        exactly(progress)

    r = remove_orphan_files(table, on_progress=on_progress, **params)
    return {**_state(table), "dry_run_task_id": dry.pk, "deleted_files": r.deleted_files,
            "failed": capped([f"{p}: {e}" for p, e in r.failed]), **_orphans_json(r)}


# --- compaction and manifests ---------------------------------------------------------------------


def _compaction_json(r: CompactionResult) -> dict[str, Any]:
    return {
        "snapshot_ids": list(r.snapshot_ids),
        "group_count": len(r.groups),
        "rewritten_data_files_count": r.rewritten_data_files_count,
        "added_data_files_count": r.added_data_files_count,
        "rewritten_bytes_count": r.rewritten_bytes_count,
        "failed_data_files_count": r.failed_data_files_count,
        "removed_delete_files_count": r.removed_delete_files_count,
        "failures": capped([f"group {g.global_index}: {g.error}" for g in r.failures]),
        "note": r.note,
    }


def compact_table(ctx: RunContext) -> dict[str, Any]:
    """Plan afresh, pick the engine by the plan's input bytes, run the plan."""
    table = _table(ctx)
    ctx.report("planning")
    plan = compaction_plan(table=table, params=ctx.params)
    input_bytes = sum(g.input_size for g in plan.groups)
    engine, why = compaction_engine(engine=ctx.params.get("engine") or "auto",
                                    input_bytes=input_bytes)
    if engine == "spark":
        from floe.spark.compaction import compact as spark_compact

        result = spark_compact(table, plan, master=settings.FLOE_SPARK_MASTER,
                               on_progress=ctx.on_progress)
    else:
        result = compact(table, plan, on_progress=ctx.on_progress)
    return {**_state(table), "engine": engine, "engine_reason": why, **_compaction_json(result)}


def rewrite_table_manifests(ctx: RunContext) -> dict[str, Any]:
    table = _table(ctx)
    r = rewrite_manifests(table, **manifests_rewrite_args(ctx.params),
                          on_progress=ctx.on_progress)
    return {**_state(table), "snapshot_id": r.snapshot_id, "entries": r.entries,
            "rewritten_manifests": capped(r.rewritten_manifests),
            "added_manifests": capped(r.added_manifests)}


def compute_table_partition_stats(ctx: RunContext) -> dict[str, Any]:
    """Java's PartitionStatsHandler through floe: the snapshot's partition statistics file,
    computed incrementally from an ancestor's file when there is one, registered in one
    commit (nothing is written when the snapshot has one already)."""
    table = _table(ctx)
    r = compute_partition_stats(table, ctx.params.get("snapshot_id"),
                                on_progress=ctx.on_progress)
    f = r.statistics_file
    return {**_state(table), "snapshot_id": r.snapshot_id, "partitions": r.partitions,
            "statistics_file": f.statistics_path if f is not None else None,
            "file_size_in_bytes": f.file_size_in_bytes if f is not None else None,
            "incremental_from": r.incremental_from, "reused": r.reused,
            "committed": r.committed, "warnings": list(r.warnings)}


# --- work of the refresh_table_stats task ---------------------------------------------------------

# Broken tables named in a task result, at most (the result is a JSON column).
MAX_LISTED_ERRORS = 100


def table_stats_refresh(
    *, catalog_name: str = LOCAL_CATALOG, namespace: str | None = None,
    on_progress: Callable[[Progress], None] = lambda _: None,
) -> dict[str, Any]:
    """Read the current metadata of every table (or every table of one namespace) and total
    their snapshot summaries. Reads only; changes no table."""
    catalog = selectors.catalog_get(name=catalog_name)
    refs = selectors.catalog_table_refs(catalog=catalog.name, namespace=namespace)
    totals = {"data_files": 0, "delete_files": 0, "records": 0, "files_size": 0}
    broken: list[dict[str, str]] = []
    broken_count = 0
    for done, ref in enumerate(refs, start=1):
        (row,) = selectors.table_rows(refs=[ref])
        if row.error is not None:
            broken_count += 1
            if len(broken) < MAX_LISTED_ERRORS:
                broken.append({"table": row.identifier, "error": row.error})
        else:
            for key in totals:
                totals[key] += getattr(row, key) or 0
        on_progress(Progress("reading tables", done, len(refs), ref.identifier))
    return {
        "catalog": catalog.name,
        "namespace": namespace,
        "tables": len(refs),
        "broken_tables": broken_count,
        "totals": totals,
        "errors": broken,
    }
