"""Maintenance operations explain themselves: the checks each makes before any heavy work are a
public ``check_*`` function that names the argument at fault (and is what the operation itself
runs first), and a plan with nothing to do says why, from the planner's own inputs (for
``floe compact / expire / remove-orphans --dry-run`` as for the explorer's previews)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import InvalidArgument, ValidationError
from floe.maintenance.compaction import compact
from floe.maintenance.compaction_plan import check_compaction, plan_compaction
from floe.maintenance.expire import check_expiration, expire_snapshots
from floe.maintenance.orphans import check_orphan_removal, remove_orphan_files
from floe.maintenance.partition_stats import check_partition_stats, compute_partition_stats
from floe.maintenance.rewrite_manifests import check_rewrite_manifests, rewrite_manifests
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.schema import Schema
from floe.table import Table
from floe.table.row_level import check_delete, plan_delete
from floe.types import LONG, STRING, NestedField
from tests.floe.test_cli_changes import floe

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
HOUR = 3_600_000


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "s": [f"p{i % 3}" for i in ids]})


def make(tmp_path: Path, *, partitioned: bool = True, version: int = 2, appends: int = 3,
         props: dict[str, str] | None = None) -> Table:
    catalog = FileSystemCatalog("fs", str(tmp_path / "wh"))
    spec = parse_partition_by("s", SCHEMA) if partitioned else UNPARTITIONED
    t = catalog.create_table("db.t", SCHEMA, spec=spec, format_version=version,
                             properties={"commit.manifest-merge.enabled": "false",
                                         **(props or {})})
    for k in range(appends):
        t.append(rows(range(k * 30, k * 30 + 30)))
    return t


def now() -> int:
    return int(time.time() * 1000)


# --- the checks name the argument at fault, and the operation runs the same ----------------------

Case = tuple[str, Callable[[Table], Any], Callable[[Table], Any], str, str]

AN_HOUR_AGO = int(time.time() * 1000) - HOUR  # one cutoff per case: messages name it
IN_AN_HOUR = int(time.time() * 1000) + HOUR

CASES: list[Case] = [
    ("expire older_than in the future",
     lambda t: check_expiration(t.metadata, table=t.identifier, now_ms=now(),
                                older_than_ms=IN_AN_HOUR),
     lambda t: expire_snapshots(t, older_than_ms=IN_AN_HOUR, dry_run=True),
     "older_than_ms", "in the future"),
    ("expire retain_last 0",
     lambda t: check_expiration(t.metadata, table=t.identifier, now_ms=now(), retain_last=0),
     lambda t: expire_snapshots(t, retain_last=0, dry_run=True), "retain_last", "at least 1"),
    ("expire a tagged snapshot",
     lambda t: check_expiration(t.metadata, table=t.identifier, now_ms=now(),
                                snapshot_ids=[t.snapshots()[0].snapshot_id]),
     lambda t: expire_snapshots(t, snapshot_ids=[t.snapshots()[0].snapshot_id], dry_run=True),
     "snapshot_ids", "still referenced by 'v1'"),
    ("orphans older_than in the future",
     lambda t: check_orphan_removal(t.metadata, table=t.identifier, now_ms=now(),
                                    older_than_ms=IN_AN_HOUR),
     lambda t: remove_orphan_files(t, older_than_ms=IN_AN_HOUR, dry_run=True),
     "older_than_ms", "in the future"),
    ("orphans under a day without force",  # one cutoff for both: the message names it
     lambda t: check_orphan_removal(t.metadata, table=t.identifier, now_ms=now(),
                                    older_than_ms=AN_HOUR_AGO),
     lambda t: remove_orphan_files(t, older_than_ms=AN_HOUR_AGO, dry_run=True),
     "older_than_ms", "newer than 24 hours"),
    ("orphans unknown mode",
     lambda t: check_orphan_removal(t.metadata, table=t.identifier, now_ms=now(),
                                    prefix_mismatch_mode="maybe"),
     lambda t: remove_orphan_files(t, prefix_mismatch_mode="maybe", dry_run=True),
     "prefix_mismatch_mode", "expected one of"),
    ("compaction unknown strategy",
     lambda t: check_compaction(t.metadata, strategy="shuffle"),
     lambda t: plan_compaction(t, strategy="shuffle"), "strategy", "binpack or sort"),
    ("compaction bad option",
     lambda t: check_compaction(t.metadata, options={"min-input-files": "0"}),
     lambda t: plan_compaction(t, options={"min-input-files": "0"}), "options", "must be > 0"),
    ("compaction binpack with a sort order",
     lambda t: check_compaction(t.metadata, sort_order="id"),
     lambda t: plan_compaction(t, sort_order="id"), "sort_order", "needs strategy 'sort'"),
    ("compaction sort of an unsorted table",
     lambda t: check_compaction(t.metadata, strategy="sort"),
     lambda t: plan_compaction(t, strategy="sort"), "sort_order", "unsorted"),
    ("compaction on a tag",
     lambda t: check_compaction(t.metadata, branch="v1"),
     lambda t: plan_compaction(t, branch="v1"), "branch", "tag, not a branch"),
    ("compaction filter on an unknown column",
     lambda t: check_compaction(t.metadata, filter="nope = 1"),
     lambda t: plan_compaction(t, filter="nope = 1"), "filter", "nope"),
    ("delete without a filter",
     lambda t: check_delete(t.metadata, ""),
     lambda t: plan_delete(t.io, t.metadata, ""), "row_filter", "give a filter"),
    ("delete in an unknown mode",
     lambda t: check_delete(t.metadata, "id = 1", mode="shred"),
     lambda t: plan_delete(t.io, t.metadata, "id = 1", mode="shred"), "mode", "shred"),
    ("delete on a tag",
     lambda t: check_delete(t.metadata, "id = 1", branch="v1"),
     lambda t: plan_delete(t.io, t.metadata, "id = 1", branch="v1"), "branch",
     "tag, not a branch"),
    ("manifests of a branch without snapshots",
     lambda t: check_rewrite_manifests(t.metadata, table=t.identifier, branch="nope"),
     lambda t: rewrite_manifests(t, branch="nope"), "branch", "no snapshot on 'nope'"),
    ("manifests of an unknown spec",
     lambda t: check_rewrite_manifests(t.metadata, table=t.identifier, spec_id=9),
     lambda t: rewrite_manifests(t, spec_id=9), "spec_id", "no partition spec 9"),
    ("manifests clustered by an unknown field",
     lambda t: check_rewrite_manifests(t.metadata, table=t.identifier, sort_by=["nope"]),
     lambda t: rewrite_manifests(t, sort_by=["nope"]), "sort_by", "'nope'"),
]


@pytest.fixture
def tagged(tmp_path: Path) -> Table:
    t = make(tmp_path)
    t.manage_snapshots().create_tag("v1", t.snapshots()[0].snapshot_id).commit()
    return t


@pytest.mark.parametrize(("what", "check", "operation", "argument", "needle"), CASES,
                         ids=[c[0] for c in CASES])
def test_a_check_names_the_argument_and_the_operation_makes_it_first(
        tagged: Table, what: str, check: Callable[[Table], Any],
        operation: Callable[[Table], Any], argument: str, needle: str) -> None:
    with pytest.raises(InvalidArgument) as checked:
        check(tagged)
    assert checked.value.argument == argument and needle in str(checked.value)
    with pytest.raises(InvalidArgument) as ran:
        operation(tagged)
    assert ran.value.argument == argument
    assert str(ran.value).split(" (now is")[0] == str(checked.value).split(" (now is")[0]


def test_merge_on_read_is_refused_by_the_check_on_a_v1_table(tmp_path: Path) -> None:
    t = make(tmp_path, version=1)
    with pytest.raises(InvalidArgument) as e:
        check_delete(t.metadata, "id = 1", mode="merge-on-read")
    assert e.value.argument == "mode" and "format version 1" in str(e.value)


def test_table_wide_refusals_name_no_argument(tmp_path: Path) -> None:
    t = make(tmp_path, partitioned=False, props={"gc.enabled": "false"})
    for check in (
            lambda: check_expiration(t.metadata, table=t.identifier, now_ms=now()),
            lambda: check_orphan_removal(t.metadata, table=t.identifier, now_ms=now()),
            lambda: check_partition_stats(t.metadata, table=t.identifier)):
        with pytest.raises(ValidationError) as e:
            check()
        assert not isinstance(e.value, InvalidArgument), e.value
    with pytest.raises(ValidationError, match="not partitioned"):
        compute_partition_stats(t)


# --- empty plans say why ----------------------------------------------------------------------


def test_a_compaction_with_nothing_to_combine_says_so(tmp_path: Path) -> None:
    t = make(tmp_path)
    assert compact(t, {"min-input-files": "2"}).snapshot_ids  # one file per partition now
    plan = plan_compaction(t, options={"min-input-files": "2"})
    assert plan.groups == ()
    assert plan.note == ("nothing to compact: every partition has one data file "
                         "(3 partitions); nothing to combine")
    assert compact(t).note == plan.note


def test_a_compaction_filter_that_matches_no_file_says_so(tmp_path: Path) -> None:
    t = make(tmp_path)
    assert plan_compaction(t, filter="s = 'nowhere'").note == (
        "nothing to compact: the filter s = 'nowhere' matches no data file")


def test_files_already_in_the_size_range_say_so(tmp_path: Path) -> None:
    t = make(tmp_path)
    note = plan_compaction(t, options={"target-file-size-bytes": "1000",
                                       "min-file-size-bytes": "1",
                                       "max-file-size-bytes": "100000000"}).note
    assert note == ("nothing to compact: every one of the 9 data file(s) is already between "
                    "min-file-size-bytes (1 bytes) and max-file-size-bytes (100000000 bytes) "
                    "with too few deletes to rewrite (rewrite-all=true rewrites them anyway)")


def test_too_few_files_per_partition_says_which_threshold(tmp_path: Path) -> None:
    t = make(tmp_path)
    note = plan_compaction(t, options={"min-input-files": "5"}).note
    assert note.startswith("nothing to compact: no partition has enough files to combine "
                           "(at most 3 to rewrite in one partition; a group needs "
                           "min-input-files (5) files")


def test_an_expiration_with_nothing_to_expire_says_why(tmp_path: Path) -> None:
    t = make(tmp_path)
    young = expire_snapshots(t, dry_run=True)  # the default cutoff is 5 days ago
    assert young.nothing_to_do
    assert young.note.startswith("nothing to expire: every one of the 3 snapshot(s) is newer "
                                 "than the cutoff ")
    assert "history.expire.max-snapshot-age-ms" in young.note
    kept = expire_snapshots(t, older_than_ms=now(), retain_last=3, dry_run=True)
    assert kept.nothing_to_do and kept.to_json()["note"] == kept.note
    assert kept.note.endswith("are kept: 1 as the head of a branch or tag, 2 as one of the "
                              "last 3 snapshot(s) of a branch (retain_last) or by a ref's own "
                              "retention settings")
    work = expire_snapshots(t, older_than_ms=now(), retain_last=1, dry_run=True)
    assert not work.nothing_to_do and work.expired_snapshot_ids


def test_an_orphan_removal_without_orphans_says_why(tmp_path: Path) -> None:
    t = make(tmp_path)
    young = remove_orphan_files(t, dry_run=True)  # every file is younger than 3 days
    assert young.orphan_files == () and young.listed_files > 0
    assert young.note.startswith(f"no orphan files: none of the {young.listed_files} file(s) "
                                 f"under {t.location} was last modified before the cutoff ")
    referenced = remove_orphan_files(t, older_than_ms=now(), force=True, dry_run=True)
    assert referenced.orphan_files == () and referenced.candidate_files > 0
    assert referenced.note.startswith("no orphan files: the table's metadata references every "
                                      f"one of the {referenced.candidate_files} file(s)")


def test_the_cli_dry_runs_print_the_reason(tmp_path: Path) -> None:
    t = make(tmp_path)
    location = t.location.removeprefix("file://")
    out = floe("compact", location, "--option", "min-input-files=5", "--dry-run").stdout
    assert "nothing to compact: no partition has enough files to combine" in out
    out = floe("expire", location, "--dry-run").stdout
    assert "nothing to expire: every one of the 3 snapshot(s) is newer than the cutoff" in out
    out = floe("remove-orphans", location, "--dry-run").stdout
    assert "no orphan files: none of the" in out
    doc = json.loads(floe("expire", location, "--dry-run", "--json").stdout)
    assert doc["note"].startswith("nothing to expire")
