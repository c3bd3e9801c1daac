"""The kinds of task: one declaration (:class:`KindSpec`, in :data:`KINDS`) per
:class:`explorer.models.TaskRun.Kind` naming its parameters' checks, its flags, its form, its
preview, its runner and the sentence of a finished run; and :func:`params_validate`, which
every submission goes through (pages and API alike) BEFORE anything is queued.

Parameters are a JSON object. Table kinds name their table with ``catalog`` (default
``local``), ``namespace`` (levels joined by ``.``) and ``table``; the names pass the same
checks as the pages' URLs (:class:`floe.catalog.base.TableIdentifier`: no ``..``, ``/``, ``\\``,
NUL, leading ``.`` or empty levels) and the table must exist. Unknown parameters, a missing or
mistyped one, a filter that does not bind, an unknown column, a change Java would refuse: each
is :class:`explorer.errors.TaskParamsInvalid` (400) naming the parameter. The validated
parameters (types normalised, defaults filled in) are what the run stores and executes.

Kinds and their parameters (besides the table):

==============================  ===============================================================
``refresh_table_stats``         ``catalog``, ``namespace`` (optional): totals of every table
``rollback``                    ``snapshot_id`` or ``timestamp_ms`` (an ancestor of main)
``set_current``                 ``snapshot_id``
``cherry_pick``                 ``snapshot_id``
``branch_create``               ``name``, ``snapshot_id``?, ``min_snapshots_to_keep``?,
                                ``max_snapshot_age_ms``?, ``max_ref_age_ms``?
``branch_replace``              ``name``, ``snapshot_id``
``branch_rename``               ``name``, ``new_name``
``branch_remove``               ``name``
``branch_fast_forward``         ``name``, ``to`` (a ref that descends from the branch)
``tag_create``                  ``name``, ``snapshot_id``?, ``max_ref_age_ms``?
``tag_replace``                 ``name``, ``snapshot_id``
``tag_remove``                  ``name``
``ref_retention``               ``name``, at least one of the three retention settings
``evolve``                      ``changes`` (``floe evolve``'s sub-commands as objects, see
                                :data:`explorer.tasks.changes.EVOLVE_OPS`),
                                ``allow_incompatible``?
``delete_rows``                 ``filter``, ``mode``? (copy-on-write / merge-on-read),
                                ``branch``?
``export``                      ``snapshot_id`` / ``as_of`` (ms or ISO-8601) / ``ref`` (one at
                                most), ``filter``?, ``columns``?, ``format`` (parquet / csv)
``expire_snapshots_dry_run``    ``older_than_ms``?, ``retain_last``?, ``snapshot_ids``?,
                                ``clean_expired_metadata``?
``expire_snapshots``            ``dry_run_task_id`` (the table is the dry run's)
``remove_orphan_files_dry_run`` ``older_than_ms``?, ``force``? (a cutoff under a day)
``remove_orphan_files``         ``dry_run_task_id``
``compact``                     ``filter``?, ``strategy``? (binpack / sort), ``sort_order``?,
                                ``options``? (Java's rewrite_data_files options),
                                ``branch``?, ``engine``? (auto / local / spark)
``rewrite_manifests``           ``spec_id``?, ``sort_by``?, ``target_size_bytes``?,
                                ``branch``?
``compute_partition_stats``     ``snapshot_id``? (default: the current one); partitioned tables
==============================  ===============================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from explorer.catalogs import LOCAL_CATALOG, catalog_info
from explorer.errors import TableChangedSinceDryRun, TaskParamsInvalid
from explorer.models import TaskRun
from explorer.tables import scan, selectors
from explorer.tasks import changes, forms, runners, sentences
from explorer.tasks.changes import (
    EVOLVE_OPS,
    ManageChange,
    compaction_engine,
    evolve_stage,
    manage_stage,
)
from explorer.tasks.forms import ActionForm
from explorer.tasks.runners import Runner
from explorer.tasks.sentences import Sentence
from floe.catalog.base import TableIdentifier, to_namespace
from floe.errors import CommitConflict, FloeError, InvalidArgument, NotFound, ValidationError
from floe.expressions import bind, parse_filter
from floe.maintenance.compaction_plan import check_compaction
from floe.maintenance.expire import check_expiration
from floe.maintenance.orphans import check_orphan_removal
from floe.maintenance.partition_stats import check_partition_stats
from floe.maintenance.rewrite_manifests import check_rewrite_manifests
from floe.scan import select_snapshot
from floe.table import Table
from floe.table.row_level import check_delete

__all__ = ["KINDS", "KindSpec", "Validated", "kind_get", "params_validate", "submission_catalog"]

K = TaskRun.Kind
T = TypeVar("T")
_MAX_TEXT = 4096
_REF_NAME_MAX = 255
ENGINES = ("auto", "local", "spark")
#: floe's keyword → the kind's parameter, where they differ (floe.errors.InvalidArgument).
_PARAM_OF_ARGUMENT = {"row_filter": "filter"}


@dataclass(frozen=True)
class Validated:
    """A submission that passed validation: the run's columns and normalised parameters."""

    kind: str
    params: dict[str, Any]
    catalog: str
    namespace: str = ""
    table: str = ""
    source_run: TaskRun | None = None


class _Reader:
    """Typed access to the raw parameters; every problem is TaskParamsInvalid naming the key.
    Keys nobody read are refused by :meth:`done`."""

    def __init__(self, raw: Any) -> None:
        if not isinstance(raw, Mapping):
            raise TaskParamsInvalid("params", "params must be a JSON object")
        self.raw = raw
        self.read: set[str] = set()
        self.out: dict[str, Any] = {}

    def _get(self, key: str, required: bool) -> Any:
        self.read.add(key)
        value = self.raw.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise TaskParamsInvalid(key, f"{key} is required")
            return None
        return value

    def text(self, key: str, *, required: bool = False, default: str | None = None,
             choices: tuple[str, ...] | None = None, max_length: int = _MAX_TEXT) -> str | None:
        value = self._get(key, required)
        if value is None:
            self.out[key] = default
            return default
        if not isinstance(value, str):
            raise TaskParamsInvalid(key, f"{key} must be a string, not {type(value).__name__}")
        value = value.strip()
        if len(value) > max_length:
            raise TaskParamsInvalid(key, f"{key} is longer than {max_length} characters")
        if choices is not None:
            value = value.lower()
            if value not in choices:
                raise TaskParamsInvalid(key, f"{key} {value!r} is not one of "
                                             f"{', '.join(choices)}")
        self.out[key] = value
        return value

    def integer(self, key: str, *, required: bool = False, minimum: int | None = None
                ) -> int | None:
        value = self._get(key, required)
        if value is None:
            self.out[key] = None
            return None
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TaskParamsInvalid(key, f"{key} must be an integer")
        try:
            number = int(value)
        except ValueError:
            raise TaskParamsInvalid(key, f"{key} {value!r} is not an integer") from None
        if minimum is not None and number < minimum:
            raise TaskParamsInvalid(key, f"{key} must be at least {minimum}, not {number}")
        self.out[key] = number
        return number

    def boolean(self, key: str, *, default: bool = False) -> bool:
        value = self._get(key, False)
        if value is None:
            value = default
        if not isinstance(value, bool):
            raise TaskParamsInvalid(key, f"{key} must be true or false")
        self.out[key] = value
        return value

    def ref_name(self, key: str, *, required: bool = True) -> str | None:
        name = self.text(key, required=required, max_length=_REF_NAME_MAX)
        if name is not None and any(ord(ch) < 32 for ch in name):
            raise TaskParamsInvalid(key, f"{key} must not contain control characters")
        return name

    def int_list(self, key: str) -> list[int]:
        value = self._get(key, False)
        if value is None:
            self.out[key] = []
            return []
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int)
                                              for v in value):
            raise TaskParamsInvalid(key, f"{key} must be a list of integers")
        self.out[key] = list(value)
        return list(value)

    def text_list(self, key: str) -> list[str] | None:
        """A list of strings, or one comma-separated string."""
        value = self._get(key, False)
        if value is None:
            self.out[key] = None
            return None
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskParamsInvalid(key, f"{key} must be a list of strings")
        items = [v.strip() for v in value if v.strip()]
        self.out[key] = items or None
        return items or None

    def done(self) -> dict[str, Any]:
        unknown = sorted(set(self.raw) - self.read)
        if unknown:
            raise TaskParamsInvalid(unknown[0], f"unknown parameter {unknown[0]!r}")
        return self.out


def _invalid(key: str, exc: FloeError) -> TaskParamsInvalid:
    return TaskParamsInvalid(key, str(exc))


def _floe_check(key: str, check: Callable[[], T]) -> T:
    """Run one of floe's own checks (the one the run makes first): its refusal is a
    TaskParamsInvalid naming the argument floe names, else ``key``."""
    try:
        return check()
    except TaskParamsInvalid:
        raise
    except InvalidArgument as exc:
        raise _invalid(_PARAM_OF_ARGUMENT.get(exc.argument, exc.argument), exc) from None
    except (ValidationError, NotFound, CommitConflict) as exc:
        raise _invalid(key, exc) from None


def _now_ms() -> int:
    return int(time.time() * 1000)


# --- the table a kind works on --------------------------------------------------------------------


def _catalog(r: _Reader) -> str:
    name = r.text("catalog", default=LOCAL_CATALOG, max_length=255)
    assert name is not None
    try:
        catalog_info(name)
    except NotFound as exc:
        raise _invalid("catalog", exc) from None
    return name


def _table(r: _Reader) -> tuple[str, str, str, Table]:
    """(catalog, namespace, table, the loaded table): names checked as the pages check them,
    then the table opened (it must exist)."""
    catalog = _catalog(r)
    namespace = r.text("namespace", required=True, max_length=255)
    name = r.text("table", required=True, max_length=255)
    assert namespace is not None and name is not None
    try:
        ns = to_namespace(namespace)
    except ValidationError as exc:
        raise _invalid("namespace", exc) from None
    try:
        TableIdentifier(ns, name)
    except ValidationError as exc:
        raise _invalid("table", exc) from None
    try:
        table = selectors.table_load(catalog=catalog, namespace=namespace, name=name)
    except NotFound as exc:
        raise _invalid("table", exc) from None
    return catalog, namespace, name, table


def _snapshot(r: _Reader, table: Table, key: str = "snapshot_id", *, required: bool = True
              ) -> int | None:
    sid = r.integer(key, required=required)
    if sid is not None and table.snapshot_by_id(sid) is None:
        raise TaskParamsInvalid(key, f"snapshot {sid} does not exist in table "
                                     f"{table.identifier}")
    return sid


def _ref(r: _Reader, table: Table, key: str, *, kind: str | None = None) -> str:
    name = r.ref_name(key)
    assert name is not None
    ref = table.metadata.refs.get(name)
    if ref is None:
        raise TaskParamsInvalid(key, f"table {table.identifier} has no "
                                     f"{kind or 'branch or tag'} named {name!r}")
    if kind is not None and str(ref.ref_type) != kind:
        raise TaskParamsInvalid(key, f"{name!r} is a {ref.ref_type}, not a {kind}")
    return name


def _new_ref(r: _Reader, table: Table, key: str) -> str:
    name = r.ref_name(key)
    assert name is not None
    if name in table.metadata.refs:
        raise TaskParamsInvalid(key, f"table {table.identifier} already has a "
                                     f"{table.metadata.refs[name].ref_type} named {name!r}")
    return name


def _filter(r: _Reader, table: Table, *, required: bool = False) -> str | None:
    text = r.text("filter", required=required)
    if text is None:
        return None
    try:
        bind(table.schema(), parse_filter(text))
    except ValidationError as exc:
        raise _invalid("filter", exc) from None
    return text


# --- one parser per kind: (reader, table) -> extra checks -----------------------------------------


def _p_rollback(r: _Reader, t: Table) -> None:
    sid = _snapshot(r, t, required=False)
    ts = r.integer("timestamp_ms", minimum=0)
    if (sid is None) == (ts is None):
        raise TaskParamsInvalid("snapshot_id", "give either snapshot_id or timestamp_ms")


def _staged(kind: str, parse: Callable[[_Reader, Table], None], key: str,
            change: ManageChange) -> Callable[[_Reader, Table], None]:
    """The kind's checks, then its change staged as the run stages it, on a transaction
    that is never committed (an ancestor to roll back to, a descending branch, a snapshot
    that can be cherry-picked: floe checks them as it stages). ``key``: the parameter a
    refusal is about (floe's ManageSnapshots names no argument)."""

    def run(r: _Reader, t: Table) -> None:
        parse(r, t)
        about = key
        if kind == K.ROLLBACK and r.out.get("snapshot_id") is None:
            about = "timestamp_ms"
        _floe_check(about, lambda: manage_stage(t.new_transaction(), change=change,
                                                  params=r.out))

    return run


def _p_snapshot(r: _Reader, t: Table) -> None:
    _snapshot(r, t)


def _retention(r: _Reader, *, tag: bool = False) -> int:
    given = 0
    keys = ("max_ref_age_ms",) if tag else ("min_snapshots_to_keep", "max_snapshot_age_ms",
                                             "max_ref_age_ms")
    for key in keys:
        given += r.integer(key, minimum=1) is not None
    return given


def _p_branch_create(r: _Reader, t: Table) -> None:
    _new_ref(r, t, "name")
    _snapshot(r, t, required=False)
    _retention(r)


def _p_tag_create(r: _Reader, t: Table) -> None:
    _new_ref(r, t, "name")
    _snapshot(r, t, required=False)
    _retention(r, tag=True)


def _p_ref_replace(kind: str) -> Callable[[_Reader, Table], None]:
    def parse(r: _Reader, t: Table) -> None:
        _ref(r, t, "name", kind=kind)
        _snapshot(r, t)
    return parse


def _p_ref_remove(kind: str) -> Callable[[_Reader, Table], None]:
    def parse(r: _Reader, t: Table) -> None:
        name = _ref(r, t, "name", kind=kind)
        if name == "main":
            raise TaskParamsInvalid("name", "the main branch cannot be removed")
    return parse


def _p_branch_rename(r: _Reader, t: Table) -> None:
    if _ref(r, t, "name", kind="branch") == "main":
        raise TaskParamsInvalid("name", "the main branch cannot be renamed")
    _new_ref(r, t, "new_name")


def _p_fast_forward(r: _Reader, t: Table) -> None:
    _ref(r, t, "name", kind="branch")
    _ref(r, t, "to")


def _p_retention(r: _Reader, t: Table) -> None:
    name = _ref(r, t, "name")
    tag = str(t.metadata.refs[name].ref_type) == "tag"
    if not _retention(r, tag=tag):
        raise TaskParamsInvalid("max_ref_age_ms" if tag else "min_snapshots_to_keep",
                                "give at least one retention setting")


def _evolve_changes(r: _Reader) -> list[dict[str, Any]]:
    r.read.add("changes")
    raw = r.raw.get("changes")
    if not isinstance(raw, list) or not raw:
        raise TaskParamsInvalid("changes", "changes must be a non-empty list of changes, each "
                                           f"an object with an op: {', '.join(EVOLVE_OPS)}")
    wanted: list[dict[str, Any]] = []
    for i, change in enumerate(raw):
        where = f"changes[{i}]"
        if not isinstance(change, Mapping) or change.get("op") not in EVOLVE_OPS:
            raise TaskParamsInvalid("changes", f"{where}: an object whose op is one of "
                                               f"{', '.join(EVOLVE_OPS)}")
        positional, options = EVOLVE_OPS[change["op"]]
        unknown = sorted(set(change) - {"op", *positional, *options})
        if unknown:
            raise TaskParamsInvalid("changes", f"{where}: unknown field {unknown[0]!r} for "
                                               f"{change['op']}")
        for name in positional:
            value = change.get(name)
            ok = (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
                  ) if name == "paths" else (isinstance(value, str) and value.strip() != "")
            if not ok:
                raise TaskParamsInvalid("changes", f"{where}: {change['op']} needs {name}")
        for name in options:
            value = change.get(name)
            if value is not None and not isinstance(value, str | bool):
                raise TaskParamsInvalid("changes", f"{where}: {name} must be a string or a "
                                                   "boolean")
        wanted.append(dict(change))
    return wanted


def _p_evolve(r: _Reader, t: Table) -> None:
    wanted = _evolve_changes(r)
    allow = r.boolean("allow_incompatible")
    r.out["changes"] = wanted
    try:  # staged on a transaction that is never committed: the same checks the run makes
        evolve_stage(t.new_transaction(), changes=wanted, allow_incompatible=allow)
    except ValidationError as exc:
        raise _invalid("changes", exc) from None


def _p_delete(r: _Reader, t: Table) -> None:
    text = _filter(r, t, required=True)
    mode = r.text("mode")
    branch = r.out["branch"] = r.ref_name("branch", required=False) or "main"
    chosen = _floe_check("filter", lambda: check_delete(t.metadata, text, mode=mode,
                                                        branch=branch))
    if mode is not None:  # else the table's write.delete.mode when the run starts
        r.out["mode"] = chosen


def _p_export(r: _Reader, t: Table) -> None:
    snapshot = r.integer("snapshot_id")
    as_of_raw = r._get("as_of", False)
    if isinstance(as_of_raw, bool) or (as_of_raw is not None
                                       and not isinstance(as_of_raw, int | str)):
        raise TaskParamsInvalid("as_of", "as_of must be epoch milliseconds or an ISO-8601 time")
    ref = r.ref_name("ref", required=False)
    try:
        selection = scan.selection_parse(
            snapshot=None if snapshot is None else str(snapshot),
            as_of=None if as_of_raw is None else str(as_of_raw), ref=ref)
        # resolves the state now: an unknown snapshot or ref, or a time before the table
        select_snapshot(t.metadata, selection.snapshot_id, selection.as_of_ms,
                             selection.ref)
    except (ValidationError, NotFound) as exc:
        key = "ref" if ref else "as_of" if as_of_raw is not None else "snapshot_id"
        raise _invalid(key, exc) from None
    r.out["as_of"] = selection.as_of_ms
    text = r.text("filter")
    try:
        r.out["filter"] = scan.filter_check(table=t, selection=selection, text=text or "")
    except ValidationError as exc:
        raise _invalid("filter", exc) from None
    columns = r.text_list("columns")
    try:
        r.out["columns"] = scan.columns_parse(table=t, selection=selection,
                                              text=",".join(columns or []))
    except ValidationError as exc:
        raise _invalid("columns", exc) from None
    r.text("format", default="parquet", choices=scan.EXPORT_FORMATS)


def _p_expire_dry_run(r: _Reader, t: Table) -> None:
    older = r.integer("older_than_ms", minimum=0)
    retain = r.integer("retain_last")
    ids = r.int_list("snapshot_ids")
    # floe ignores an id the table does not have (as Java does, so that a re-run finishes);
    # typed into a form it is a mistake
    unknown = [sid for sid in ids if t.snapshot_by_id(sid) is None]
    if unknown:
        raise TaskParamsInvalid("snapshot_ids", f"snapshot {unknown[0]} does not exist in "
                                                f"table {t.identifier}")
    r.boolean("clean_expired_metadata")
    _floe_check("table", lambda: check_expiration(
        t.metadata, table=t.identifier, now_ms=_now_ms(), older_than_ms=older,
        retain_last=retain, snapshot_ids=ids))


def _p_orphans_dry_run(r: _Reader, t: Table) -> None:
    older = r.integer("older_than_ms", minimum=0)
    force = r.boolean("force")
    mode = r.text("prefix_mismatch_mode", default="error")
    assert mode is not None
    _, r.out["prefix_mismatch_mode"], _, _ = _floe_check("table", lambda: check_orphan_removal(
        t.metadata, table=t.identifier, now_ms=_now_ms(), older_than_ms=older, force=force,
        prefix_mismatch_mode=mode))


def _p_compact(r: _Reader, t: Table) -> None:
    text = r.text("filter")
    strategy = r.text("strategy", default="binpack")
    order = r.text("sort_order")
    r.read.add("options")
    options = r.raw.get("options") or {}
    if not isinstance(options, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str | int | bool) for k, v in options.items()):
        raise TaskParamsInvalid("options", "options must be an object of option names to "
                                           "values (Java's rewrite_data_files options)")
    options = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    r.out["options"] = options
    branch = r.out["branch"] = r.ref_name("branch", required=False) or "main"
    r.out["strategy"], _, _ = _floe_check("options", lambda: check_compaction(
        t.metadata, filter=text, strategy=strategy or "binpack", sort_order=order,
        options=options, branch=branch))
    engine = r.text("engine", default="auto", choices=ENGINES)
    if engine == "spark":
        try:
            compaction_engine(engine="spark", input_bytes=0)
        except ValidationError as exc:
            raise _invalid("engine", exc) from None


def _p_rewrite_manifests(r: _Reader, t: Table) -> None:
    spec_id = r.integer("spec_id", minimum=0)
    sort_by = r.text_list("sort_by")
    target = r.integer("target_size_bytes", minimum=1)
    branch = r.out["branch"] = r.ref_name("branch", required=False) or "main"
    _floe_check("branch", lambda: check_rewrite_manifests(
        t.metadata, table=t.identifier, spec_id=spec_id, sort_by=sort_by,
        target_size_bytes=target, branch=branch))


def _p_partition_stats(r: _Reader, t: Table) -> None:
    sid = _snapshot(r, t, required=False)
    _floe_check("table", lambda: check_partition_stats(t.metadata, table=t.identifier,
                                                       snapshot_id=sid))


# --- kinds ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindSpec:
    """Everything the explorer knows about a kind of task, declared once in :data:`KINDS`.

    ``parse``: its parameters' checks (:func:`params_validate`; None for the kinds validated
    apart: the catalog-wide refresh and the confirm steps); ``runner``: its work in a worker
    (:mod:`explorer.tasks.runners`); ``say``: the sentence of a finished run
    (:mod:`explorer.tasks.sentences`); ``form``: its form on a table's Actions page
    (:mod:`explorer.tasks.forms`; None: it has none); ``preview``: what a submission would do,
    nothing queued (:mod:`explorer.tasks.changes`; None: it has none).

    ``changes_table``: runs are recorded in the audit trail; ``retry_on_conflict``: a
    CommitConflict runs it again (kinds that plan afresh on every run; a rollback must not
    be retried over a commit it did not see); ``expensive_read``: counted by the rate limit;
    ``dry_run_of``: a confirm kind executes a dry run of that kind; ``table_scoped``: it acts
    on one table.
    """

    kind: str
    parse: Callable[[_Reader, Table], None] | None
    runner: Runner
    say: Sentence
    form: ActionForm | None = None
    preview: Callable[..., dict[str, Any]] | None = None
    changes_table: bool = True
    retry_on_conflict: bool = False
    expensive_read: bool = False
    dry_run_of: str | None = None
    table_scoped: bool = True

    def __post_init__(self) -> None:
        if self.form is not None:  # the page's form knows its kind and whether it previews
            object.__setattr__(self, "form",
                               self.form.bound(self.kind, preview=self.preview is not None))

    @property
    def label(self) -> str:
        return str(K(self.kind).label)


def _managed(kind: str, parse: Callable[[_Reader, Table], None], key: str,
             change: ManageChange, say: Sentence, form: ActionForm) -> KindSpec:
    """A snapshot-management kind: validation stages its change on a transaction that is
    never committed (``key``: the parameter a refusal is about), its run commits it."""
    return KindSpec(kind, _staged(kind, parse, key, change), runners.manage(change), say, form)


#: The kinds, in the order a table's Actions page shows their forms.
_DECLARED = (
    KindSpec(K.REFRESH_TABLE_STATS, None, runners.refresh_table_stats,
             sentences.refresh_table_stats, changes_table=False, table_scoped=False),
    _managed(K.ROLLBACK, _p_rollback, "snapshot_id", changes.rollback,
             sentences.rollback, forms.ROLLBACK),
    _managed(K.SET_CURRENT, _p_snapshot, "snapshot_id", changes.set_current,
             sentences.set_current, forms.SET_CURRENT),
    _managed(K.CHERRY_PICK, _p_snapshot, "snapshot_id", changes.cherry_pick,
             sentences.cherry_pick, forms.CHERRY_PICK),
    _managed(K.BRANCH_CREATE, _p_branch_create, "snapshot_id", changes.branch_create,
             sentences.ref_moved("Created", "branch"), forms.BRANCH_CREATE),
    _managed(K.TAG_CREATE, _p_tag_create, "snapshot_id", changes.tag_create,
             sentences.ref_moved("Created", "tag"), forms.TAG_CREATE),
    _managed(K.BRANCH_REPLACE, _p_ref_replace("branch"), "snapshot_id", changes.branch_replace,
             sentences.ref_moved("Moved", "branch"), forms.BRANCH_REPLACE),
    _managed(K.TAG_REPLACE, _p_ref_replace("tag"), "snapshot_id", changes.tag_replace,
             sentences.ref_moved("Moved", "tag"), forms.TAG_REPLACE),
    _managed(K.BRANCH_FAST_FORWARD, _p_fast_forward, "to", changes.branch_fast_forward,
             sentences.branch_fast_forward, forms.BRANCH_FAST_FORWARD),
    _managed(K.BRANCH_RENAME, _p_branch_rename, "new_name", changes.branch_rename,
             sentences.branch_rename, forms.BRANCH_RENAME),
    _managed(K.BRANCH_REMOVE, _p_ref_remove("branch"), "name", changes.branch_remove,
             sentences.ref_removed("branch"), forms.BRANCH_REMOVE),
    _managed(K.TAG_REMOVE, _p_ref_remove("tag"), "name", changes.tag_remove,
             sentences.ref_removed("tag"), forms.TAG_REMOVE),
    _managed(K.REF_RETENTION, _p_retention, "name", changes.ref_retention,
             sentences.ref_retention, forms.REF_RETENTION),
    KindSpec(K.EVOLVE, _p_evolve, runners.evolve, sentences.evolve, forms.EVOLVE,
             preview=changes.schema_change_preview),
    KindSpec(K.DELETE_ROWS, _p_delete, runners.delete_rows, sentences.delete_rows,
             forms.DELETE_ROWS, preview=changes.delete_preview, retry_on_conflict=True),
    KindSpec(K.EXPORT, _p_export, runners.export, sentences.export, forms.EXPORT,
             changes_table=False, expensive_read=True),
    KindSpec(K.EXPIRE_DRY_RUN, _p_expire_dry_run, runners.expire_dry_run,
             sentences.expire_dry_run, forms.EXPIRE_DRY_RUN, changes_table=False),
    KindSpec(K.EXPIRE, None, runners.expire_confirm, sentences.expire,
             dry_run_of=K.EXPIRE_DRY_RUN),
    KindSpec(K.ORPHANS_DRY_RUN, _p_orphans_dry_run, runners.orphans_dry_run,
             sentences.orphans_dry_run, forms.ORPHANS_DRY_RUN, changes_table=False),
    KindSpec(K.ORPHANS, None, runners.orphans_confirm, sentences.orphans,
             dry_run_of=K.ORPHANS_DRY_RUN),
    KindSpec(K.COMPACT, _p_compact, runners.compact_table, sentences.compact, forms.COMPACT,
             preview=changes.compaction_preview, retry_on_conflict=True),
    KindSpec(K.REWRITE_MANIFESTS, _p_rewrite_manifests, runners.rewrite_table_manifests,
             sentences.rewrite_manifests, forms.REWRITE_MANIFESTS,
             preview=changes.manifests_rewrite_preview, retry_on_conflict=True),
    KindSpec(K.COMPUTE_PARTITION_STATS, _p_partition_stats,
             runners.compute_table_partition_stats, sentences.compute_partition_stats,
             forms.COMPUTE_PARTITION_STATS, preview=changes.partition_stats_preview,
             retry_on_conflict=True),
)
KINDS: dict[str, KindSpec] = {s.kind: s for s in _DECLARED}
assert len(KINDS) == len(_DECLARED) and set(KINDS) == set(K.values), \
    "every TaskRun.Kind needs exactly one KindSpec"


def action_forms() -> tuple[ActionForm, ...]:
    """The forms of a table's Actions page, in the order of the declarations."""
    return tuple(s.form for s in KINDS.values() if s.form is not None)


def kind_get(kind: Any) -> KindSpec:
    if not isinstance(kind, str) or kind not in KINDS:
        raise TaskParamsInvalid("kind", f"unknown kind {kind!r}; kinds: {', '.join(K.values)}")
    return KINDS[kind]


def _refresh_stats(raw: Any) -> Validated:
    r = _Reader(raw)
    catalog = _catalog(r)
    namespace = r.text("namespace", max_length=255)
    if namespace is not None:
        try:
            to_namespace(namespace)
        except ValidationError as exc:
            raise _invalid("namespace", exc) from None
    return Validated(K.REFRESH_TABLE_STATS, r.done(), catalog, namespace or "")


def _confirm(spec: KindSpec, raw: Any) -> Validated:
    """A confirm step: the dry run it executes must be a finished dry run of the right kind,
    not confirmed yet, on a table still at the metadata file it planned from."""
    r = _Reader(raw)
    run_id = r.integer("dry_run_task_id", required=True)
    for key in ("catalog", "namespace", "table"):  # optional, but must match when given
        r.text(key, max_length=255)
    params = r.done()
    dry = TaskRun.objects.filter(pk=run_id).first()
    if dry is None or dry.kind != spec.dry_run_of:
        raise TaskParamsInvalid("dry_run_task_id", f"task run {run_id} is not a "
                                                   f"{spec.dry_run_of} run")
    if dry.state != TaskRun.State.SUCCEEDED or not dry.result:
        raise TaskParamsInvalid("dry_run_task_id", f"dry run {run_id} has not succeeded "
                                                   f"(it is {dry.state})")
    for key in ("catalog", "namespace", "table"):
        if params[key] is not None and params[key] != getattr(dry, key):
            raise TaskParamsInvalid(key, f"dry run {run_id} is for "
                                         f"{dry.catalog}:{dry.identifier}, not this {key}")
    if dry.result.get("nothing_to_do"):
        raise TaskParamsInvalid("dry_run_task_id", f"dry run {run_id} found nothing to do "
                                                   f"({dry.result.get('note') or 'empty plan'})"
                                                   ": there is nothing to confirm")
    taken = dry.confirmations.exclude(state__in=(TaskRun.State.FAILED, TaskRun.State.CANCELLED))
    if taken.exists():
        raise TaskParamsInvalid("dry_run_task_id", f"dry run {run_id} was already confirmed "
                                                   f"(task run {taken.first().pk})")  # type: ignore[union-attr]
    table = selectors.table_load(catalog=dry.catalog, namespace=dry.namespace, name=dry.table)
    planned = dry.result.get("metadata_location")
    if table.metadata_location != planned:
        raise TableChangedSinceDryRun(
            f"table {dry.identifier} changed since dry run {run_id} (it planned from "
            f"{planned}, the table is now at {table.metadata_location}); run the dry run "
            "again")
    return Validated(spec.kind, {"dry_run_task_id": run_id}, dry.catalog, dry.namespace,
                     dry.table, source_run=dry)


def submission_catalog(*, kind: str, params: Any) -> str:
    """The catalog a submission acts on, known before anything else is checked (so that a
    user without a role there learns nothing more about it): ``catalog`` (default
    ``local``), or for a confirm step its dry run's."""
    spec = kind_get(kind)
    if not isinstance(params, Mapping):
        return LOCAL_CATALOG
    if spec.dry_run_of is not None:
        dry = TaskRun.objects.filter(pk=params.get("dry_run_task_id")).values_list(
            "catalog", flat=True).first() if isinstance(params.get("dry_run_task_id"), int) \
            else None
        return dry or LOCAL_CATALOG
    catalog = params.get("catalog")
    return catalog if isinstance(catalog, str) and catalog.strip() else LOCAL_CATALOG


def params_validate(*, kind: Any, params: Any) -> Validated:
    """Check a submission; TaskParamsInvalid (400) naming the parameter, or (for a confirm
    whose table moved) TableChangedSinceDryRun (409)."""
    spec = kind_get(kind)
    if params is None:
        params = {}
    if spec.kind == K.REFRESH_TABLE_STATS:
        return _refresh_stats(params)
    if spec.dry_run_of is not None:
        return _confirm(spec, params)
    r = _Reader(params)
    catalog, namespace, name, table = _table(r)
    assert spec.parse is not None
    spec.parse(r, table)
    return Validated(spec.kind, r.done(), catalog, namespace, name)
