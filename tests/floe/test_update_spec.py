"""Partition spec evolution and sort-order replacement (Java ``BaseUpdatePartitionSpec`` /
``BaseReplaceSortOrder`` at Iceberg 1.10.2) on real file-system tables: field ids, names,
v1 void fields, v2 recycled fields, reuse of equivalent specs and orders, every refusal, commit
conflicts, and writing / planning / reading across two specs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, ValidationError
from floe.inspect import file_rows
from floe.scan.readers import plan_to_table
from floe.metadata import metadata_to_json
from floe.partitioning import PartitionField, PartitionSpec, parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.table.table import Table
from floe.table.transaction import Transaction
from floe.table.update_spec import ReplaceSortOrder, UpdateSpec
from floe.table.updates import (
    AddPartitionSpec,
    AddSortOrder,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    SetDefaultSortOrder,
    SetDefaultSpec,
)
from floe.transforms import UnknownTransform
from floe.types import (
    DATE, DOUBLE, INT, LONG, STRING, TIMESTAMPTZ, ListType, NestedField, StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "ts", TIMESTAMPTZ),
    NestedField(4, "x", DOUBLE),
    NestedField(5, "d", DATE),
    NestedField(6, "st", StructType(NestedField(7, "a", INT))),
    NestedField(8, "arr", ListType(9, INT)),
)
VERSIONS = [1, 2]


def make(tmp_path: Path, version: int, spec: str = "", sort: str = "",
         name: str = "t") -> Table:
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    kw: dict[str, Any] = {}
    if spec:
        kw["spec"] = parse_partition_by(spec, SCHEMA)
    if sort:
        kw["sort_order"] = parse_sort_by(sort, SCHEMA)
    return catalog.create_table(f"db.{name}", SCHEMA, format_version=version, **kw)


def fields(t: Table, spec_id: int | None = None) -> list[tuple[int, str, str, int]]:
    """(field id, name, transform, source id) of the default spec, or of ``spec_id``."""
    spec = t.spec() if spec_id is None else t.metadata.spec_by_id(spec_id)
    assert spec is not None
    return [(f.field_id, f.name, str(f.transform), f.source_id) for f in spec.fields]


def evolve(t: Table) -> UpdateSpec:
    return t.update_spec()


# -- adding fields ---------------------------------------------------------------------------

ADDS = [
    # term, explicit name, (name, transform, source id): Java's evolution default names
    ("bucket(16, id)", None, ("id_bucket_16", "bucket[16]", 1)),
    ("bucket[8](s)", None, ("s_bucket_8", "bucket[8]", 2)),
    ("truncate(4, s)", None, ("s_trunc_4", "truncate[4]", 2)),
    ("truncate(s, 10)", None, ("s_trunc_10", "truncate[10]", 2)),
    ("year(ts)", None, ("ts_year", "year", 3)),
    ("months(ts)", None, ("ts_month", "month", 3)),
    ("day(d)", None, ("d_day", "day", 5)),
    ("hour(ts)", None, ("ts_hour", "hour", 3)),
    ("id", None, ("id", "identity", 1)),
    ("st.a", None, ("st.a", "identity", 8)),
    ("bucket(16, id)", "shard", ("shard", "bucket[16]", 1)),
    ("s", "part_s", ("part_s", "identity", 2)),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("term", "name", "expected"), ADDS)
def test_add_field_to_unpartitioned(tmp_path: Path, version: int, term: str,
                                    name: str | None, expected: tuple[str, str, int]) -> None:
    t = make(tmp_path, version)
    result = evolve(t).add_field(term, name).commit()
    assert result is t
    assert fields(t) == [(1000, *expected)]
    assert t.metadata.default_spec_id == 1
    assert t.metadata.last_partition_id == 1000
    assert fields(t, 0) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_add_fields_after_existing_ones(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "bucket(16, id), day(ts)")
    evolve(t).add_field("truncate(4, s)").add_identity("d").commit()
    assert fields(t) == [
        (1000, "id_bucket", "bucket[16]", 1), (1001, "ts_day", "day", 3),
        (1002, "s_trunc_4", "truncate[4]", 2), (1003, "d", "identity", 5)]
    assert t.metadata.last_partition_id == 1003


def test_add_identity_of_a_column_with_awkward_name(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "my col(1)", LONG), NestedField(2, "n", LONG))
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    t = catalog.create_table("db.odd", schema)
    evolve(t).add_identity("my col(1)").commit()
    assert fields(t) == [(1000, "my col(1)", "identity", 1)]


def test_existing_time_field_and_a_new_finer_one_are_allowed(tmp_path: Path) -> None:
    # Java checks redundancy only among the fields added by one update
    t = make(tmp_path, 2, "day(ts)")
    evolve(t).add_field("hour(ts)").commit()
    assert fields(t) == [(1000, "ts_day", "day", 3), (1001, "ts_hour", "hour", 3)]


def test_case_insensitive_terms(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    t.update_spec(case_sensitive=False).add_field("BUCKET(4, ID)").commit()
    assert fields(t) == [(1000, "id_bucket_4", "bucket[4]", 1)]
    with pytest.raises(ValidationError, match=r"unknown column 'TS'"):
        t.update_spec().add_field("day(TS)")


# -- removing fields -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["id_bucket", "bucket(16, id)", "bucket[16](id)"])
def test_remove_in_v2_drops_the_field(tmp_path: Path, how: str) -> None:
    t = make(tmp_path, 2, "bucket(16, id), day(ts)")
    evolve(t).remove_field(how).commit()
    assert fields(t) == [(1001, "ts_day", "day", 3)]
    assert t.metadata.last_partition_id == 1001
    assert t.metadata.default_spec_id == 1


@pytest.mark.parametrize("how", ["id_bucket", "bucket(16, id)"])
def test_remove_in_v1_leaves_a_void_field(tmp_path: Path, how: str) -> None:
    t = make(tmp_path, 1, "bucket(16, id), day(ts)")
    evolve(t).remove_field(how).commit()
    assert fields(t) == [(1000, "id_bucket", "void", 1), (1001, "ts_day", "day", 3)]
    assert t.metadata.last_partition_id == 1001


@pytest.mark.parametrize("version", VERSIONS)
def test_remove_identity_field_by_column_name(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "s AS part_s, day(ts)")
    evolve(t).remove_field("s").commit()  # not a field name: the term identity(s)
    expected = [(1001, "ts_day", "day", 3)]
    if version == 1:
        expected.insert(0, (1000, "part_s", "void", 2))
    assert fields(t) == expected


def test_remove_then_add_in_v1_gets_a_new_id(tmp_path: Path) -> None:
    t = make(tmp_path, 1, "bucket(16, id)")
    evolve(t).remove_field("id_bucket").commit()
    evolve(t).add_field("bucket(16, id)").commit()
    assert fields(t) == [(1000, "id_bucket", "void", 1), (1001, "id_bucket_16", "bucket[16]", 1)]
    assert t.metadata.last_partition_id == 1001


def test_v1_void_field_gives_its_name_to_a_new_field(tmp_path: Path) -> None:
    t = make(tmp_path, 1, "bucket(16, id), day(ts)")
    evolve(t).remove_field("id_bucket").commit()
    evolve(t).add_field("bucket(8, id)", "id_bucket").commit()
    assert fields(t) == [(1000, "id_bucket_1000", "void", 1), (1001, "ts_day", "day", 3),
                         (1002, "id_bucket", "bucket[8]", 1)]


def test_v1_field_removed_and_its_name_reused_in_one_update(tmp_path: Path) -> None:
    t = make(tmp_path, 1, "bucket(16, id)")
    evolve(t).remove_field("id_bucket").add_field("bucket(8, id)", "id_bucket").commit()
    assert fields(t) == [(1000, "id_bucket_1000", "void", 1), (1001, "id_bucket", "bucket[8]", 1)]


def test_v1_rename_onto_a_void_field_renames_the_void_one(tmp_path: Path) -> None:
    t = make(tmp_path, 1, "bucket(16, id), day(ts)")
    evolve(t).remove_field("id_bucket").commit()
    evolve(t).rename_field("ts_day", "id_bucket").commit()
    assert fields(t) == [(1000, "id_bucket_1000", "void", 1), (1001, "id_bucket", "day", 3)]


# -- v2 recycling and spec reuse -------------------------------------------------------------


def test_v2_readding_a_historical_field_recycles_its_id_and_name(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id), day(ts)")
    evolve(t).remove_field("id_bucket").commit()
    evolve(t).add_field("bucket(16, id)").commit()
    assert fields(t) == [(1001, "ts_day", "day", 3), (1000, "id_bucket", "bucket[16]", 1)]
    assert t.metadata.last_partition_id == 1001
    assert t.metadata.default_spec_id == 2


def test_v2_readding_under_another_name_gets_a_new_id(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id), day(ts)")
    evolve(t).remove_field("id_bucket").commit()
    evolve(t).add_field("bucket(16, id)", "shard").commit()
    assert fields(t) == [(1001, "ts_day", "day", 3), (1002, "shard", "bucket[16]", 1)]
    assert t.metadata.last_partition_id == 1002


def test_v2_readding_by_the_historical_name_recycles(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "day(ts)")
    evolve(t).add_field("truncate(4, s)", "t4").commit()
    evolve(t).remove_field("t4").commit()
    assert t.metadata.default_spec_id == 0  # back to the spec the table was created with
    evolve(t).add_field("truncate(4, s)", "t4").commit()
    assert fields(t) == [(1000, "ts_day", "day", 3), (1001, "t4", "truncate[4]", 2)]
    assert t.metadata.default_spec_id == 1  # spec 1 again: an equivalent spec is reused
    assert len(t.metadata.partition_specs) == 2


def test_v2_drop_and_readd_returns_to_the_first_spec(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id)")
    evolve(t).remove_field("id_bucket").commit()
    assert t.spec().is_unpartitioned and t.metadata.default_spec_id == 1
    evolve(t).add_field("bucket(16, id)").commit()
    assert t.metadata.default_spec_id == 0
    assert [s.spec_id for s in t.metadata.partition_specs] == [0, 1]


def test_equivalent_spec_with_other_field_ids_is_reused(tmp_path: Path) -> None:
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    t = catalog.create_table("db.t", SCHEMA, spec=parse_partition_by("bucket(16, id) AS p",
                                                                     SCHEMA))
    evolve(t).rename_field("p", "q").commit()
    evolve(t).remove_field("q").commit()
    evolve(t).add_field("bucket(16, id)", "p2").commit()  # no historical p2: a new id, 1001
    assert fields(t) == [(1001, "p2", "bucket[16]", 1)]
    evolve(t).rename_field("p2", "p").commit()
    # same (source, transform, name) as spec 0: Java's reuseOrCreateNewSpecId picks spec 0
    assert t.metadata.default_spec_id == 0
    assert fields(t) == [(1000, "p", "bucket[16]", 1)]
    assert len(t.metadata.partition_specs) == 4
    assert t.metadata.last_partition_id == 1001


@pytest.mark.parametrize("version", VERSIONS)
def test_rename_back_reuses_the_earlier_spec(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "bucket(16, id)")
    evolve(t).rename_field("id_bucket", "shard").commit()
    assert fields(t) == [(1000, "shard", "bucket[16]", 1)]
    assert t.metadata.default_spec_id == 1
    evolve(t).rename_field("shard", "id_bucket").commit()
    assert t.metadata.default_spec_id == 0
    assert len(t.metadata.partition_specs) == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_remove_and_readd_in_one_update_is_no_change(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "bucket(16, id)")
    before = t.metadata_location
    evolve(t).remove_field("id_bucket").add_field("bucket(16, id)").commit()
    assert t.metadata_location == before  # nothing to commit, as in Java


@pytest.mark.parametrize("version", VERSIONS)
def test_remove_and_readd_with_a_name_renames(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "bucket(16, id)")
    evolve(t).remove_field("bucket(16, id)").add_field("bucket(16, id)", "shard").commit()
    assert fields(t) == [(1000, "shard", "bucket[16]", 1)]


def test_empty_update_commits_nothing(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "day(ts)")
    before = t.metadata_location
    assert evolve(t).commit() is t
    assert t.refresh().metadata_location == before


def test_rename_to_the_source_column_name_is_allowed(tmp_path: Path) -> None:
    # Java's evolution builder lets a field take its own source column's name, any transform
    t = make(tmp_path, 2, "bucket(16, id)")
    evolve(t).rename_field("id_bucket", "id").commit()
    assert fields(t) == [(1000, "id", "bucket[16]", 1)]


def test_apply_gives_the_final_spec_without_committing(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id)")
    before = t.metadata_location
    spec = evolve(t).add_field("day(ts)").apply()
    assert spec.spec_id == 1
    assert [f.name for f in spec.fields] == ["id_bucket", "ts_day"]
    assert t.refresh().metadata_location == before
    assert evolve(t).apply() == t.spec()


# -- refusals --------------------------------------------------------------------------------

REFUSALS = [
    ("unknown column", lambda u: u.add_field("bucket(16, idd)"),
     r"^unknown column 'idd'; did you mean 'id'\?$"),
    ("bucket on double", lambda u: u.add_field("bucket(16, x)"),
     r"^transform bucket\[16\] cannot be applied to 'x' of type double$"),
    ("day on string", lambda u: u.add_field("day(s)"),
     r"^transform day cannot be applied to 's' of type string$"),
    ("non-primitive", lambda u: u.add_field("st"), r"non-primitive column 'st'"),
    ("inside a list", lambda u: u.add_field("arr.element"), r"inside a list or a map"),
    ("unknown transform", lambda u: u.add_field("zorder(id)"),
     r"unknown partition transform 'zorder'"),
    ("void", lambda u: u.add_field("void(id)"), r"void partition field"),
    ("existing field", lambda u: u.add_field("bucket(16, id)"),
     r"^cannot add partition field bucket\[16\]\(id\): the spec already has it as 'id_bucket'$"),
    ("added twice", lambda u: u.add_field("day(d)").add_field("day(d)"),
     r"cannot add partition field day\(d\) twice: it was already added as 'd_day'"),
    ("name added twice", lambda u: u.add_field("day(d)", "p").add_field("s", "p"),
     r"cannot add partition field 'p' twice"),
    ("redundant time fields", lambda u: u.add_field("day(d)").add_field("year(d)"),
     r"redundant partition field year\(d\): it conflicts with day\(d\)"),
    ("name of an existing field", lambda u: u.add_field("truncate(4, s)", "ts_day"),
     r"already has a field 'ts_day' \(day\(ts\)\)"),
    ("name of another column", lambda u: u.add_field("truncate(4, s)", "x"),
     r"partition field name 'x' is the name of another column"),
    ("empty name", lambda u: u.add_field("truncate(4, s)", ""), r"must not be empty"),
    ("remove missing name", lambda u: u.remove_field("nope"),
     r"^cannot remove partition field 'nope': spec 0 of table db.t has no such field "
     r"\(fields: 'id_bucket', 'ts_day'\)$"),
    ("remove missing term", lambda u: u.remove_field("bucket(8, id)"),
     r"cannot remove partition field 'bucket\(8, id\)'.*no such field"),
    ("remove added by name", lambda u: u.add_field("day(d)").remove_field("d_day"),
     r"cannot remove partition field 'd_day': it is added in this same update"),
    ("remove added by term", lambda u: u.add_field("day(d)").remove_field("day(d)"),
     r"it is added in this same update as 'd_day'"),
    ("remove renamed", lambda u: u.rename_field("ts_day", "day").remove_field("ts_day"),
     r"cannot remove partition field 'ts_day': it is renamed in this same update"),
    ("remove renamed by term", lambda u: u.rename_field("ts_day", "day").remove_field("day(ts)"),
     r"cannot remove partition field 'ts_day': it is renamed"),
    ("rename removed", lambda u: u.remove_field("ts_day").rename_field("ts_day", "day"),
     r"cannot rename partition field 'ts_day': it is removed in this same update"),
    ("rename added", lambda u: u.add_field("day(d)").rename_field("d_day", "dd"),
     r"cannot rename partition field 'd_day': it is added in this same update"),
    ("rename missing", lambda u: u.rename_field("nope", "x2"),
     r"cannot rename partition field 'nope'.*no such field"),
    ("rename onto a field", lambda u: u.rename_field("ts_day", "id_bucket").apply(),
     r"partition field name 'id_bucket' is used twice"),
    ("rename onto a column", lambda u: u.rename_field("ts_day", "s").apply(),
     r"partition field name 's' is the name of another column"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("case", "change", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals(tmp_path: Path, version: int, case: str, change: Any, message: str) -> None:
    t = make(tmp_path, version, "bucket(16, id), day(ts)")
    before = t.metadata_location
    with pytest.raises(ValidationError, match=message):
        change(evolve(t)).commit()
    assert t.refresh().metadata_location == before


def test_unknown_transform_in_the_current_spec_is_refused(tmp_path: Path) -> None:
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    spec = PartitionSpec(PartitionField(1, 1000, UnknownTransform("zorder"), "z"))
    t = catalog.create_table("db.z", SCHEMA, spec=spec)
    with pytest.raises(ValidationError, match=r"field 'z' has the unknown transform zorder"):
        t.update_spec()


def test_error_messages_are_one_line(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id), day(ts)")
    for _, change, _ in REFUSALS:
        with pytest.raises(ValidationError) as info:
            change(evolve(t)).commit()
        assert "\n" not in str(info.value)


# -- transactions and conflicts --------------------------------------------------------------


def test_stages_into_a_transaction(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id)")
    txn = t.new_transaction()
    assert txn.update_spec().add_field("day(ts)").commit() is txn
    op = txn.operations[-1]
    assert [type(u) for u in op.updates] == [AddPartitionSpec, SetDefaultSpec]
    assert op.updates[1] == SetDefaultSpec(-1)
    assert op.requirements == [AssertDefaultSpecId(0), AssertLastAssignedPartitionId(1000)]
    assert t.refresh().spec().spec_id == 0  # nothing committed yet
    txn.set_properties({"k": "v"})
    committed = txn.commit()
    assert fields(committed) == [(1000, "id_bucket", "bucket[16]", 1), (1001, "ts_day", "day", 3)]
    assert committed.properties["k"] == "v"


def test_two_spec_updates_in_one_transaction_build_on_each_other(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    txn = t.new_transaction()
    txn.update_spec().add_field("day(ts)").commit()
    assert txn.update_spec().add_field("bucket(4, id)").apply().spec_id == 2
    txn.update_spec().add_field("bucket(4, id)").commit()
    txn.commit()
    assert fields(t) == [(1000, "ts_day", "day", 3), (1001, "id_bucket_4", "bucket[4]", 1)]
    assert [s.spec_id for s in t.metadata.partition_specs] == [0, 1, 2]
    assert t.metadata.last_partition_id == 1001


def test_partition_by_a_column_added_in_the_same_transaction(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    txn = t.new_transaction()
    txn.update_schema().add_column("region", "string").commit()
    txn.update_spec().add_identity("region").commit()
    txn.commit()
    region = t.schema().find_field("region").field_id
    assert fields(t) == [(1000, "region", "identity", region)]


def test_concurrent_spec_updates_conflict(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id)")
    catalog = t.catalog
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    u1, u2 = first.update_spec().add_field("day(ts)"), second.update_spec().add_field("d")
    u1.commit()
    winner = t.refresh().metadata_location
    with pytest.raises(CommitConflict, match="default spec id changed from 0 to 1"):
        u2.commit()
    t.refresh()
    assert t.metadata_location == winner
    assert fields(t) == [(1000, "id_bucket", "bucket[16]", 1), (1001, "ts_day", "day", 3)]
    assert len(t.metadata.partition_specs) == 2


def test_concurrent_sort_order_updates_conflict(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    txn1, txn2 = t.new_transaction(), t.new_transaction()
    txn1.replace_sort_order().asc("id").commit()
    txn2.replace_sort_order().desc("s").commit()
    txn1.commit()
    winner = t.refresh().metadata_location
    with pytest.raises(CommitConflict, match="default sort order id"):
        txn2.commit()
    assert t.refresh().metadata_location == winner
    assert [str(f) for f in t.sort_order().fields] == ["identity(1) asc nulls-first"]


# -- sort orders -----------------------------------------------------------------------------


def order_json(t: Table) -> dict[str, Any]:
    return t.sort_order().to_json()


SORTS = [
    (lambda r: r.asc("id"), [("identity", 1, "asc", "nulls-first")]),
    (lambda r: r.desc("id"), [("identity", 1, "desc", "nulls-last")]),
    (lambda r: r.asc("id", nulls_first=False), [("identity", 1, "asc", "nulls-last")]),
    (lambda r: r.desc("s", nulls_first=True), [("identity", 2, "desc", "nulls-first")]),
    (lambda r: r.asc("day(ts)").desc("bucket(4, id)"),
     [("day", 3, "asc", "nulls-first"), ("bucket[4]", 1, "desc", "nulls-last")]),
    (lambda r: r.from_text("id desc nulls last, truncate(2, s)"),
     [("identity", 1, "desc", "nulls-last"), ("truncate[2]", 2, "asc", "nulls-first")]),
    (lambda r: r.asc("st.a"), [("identity", 8, "asc", "nulls-first")]),  # ids are fresh
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("build", "expected"), SORTS)
def test_replace_sort_order(tmp_path: Path, version: int, build: Any,
                            expected: list[tuple[str, int, str, str]]) -> None:
    t = make(tmp_path, version)
    assert build(t.replace_sort_order()).commit() is t
    assert t.metadata.default_sort_order_id == 1
    assert order_json(t) == {"order-id": 1, "fields": [
        {"transform": tr, "source-id": sid, "direction": d, "null-order": n}
        for tr, sid, d, n in expected]}


def test_sort_order_ids_and_reuse(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    t.replace_sort_order().asc("id").commit()
    t.replace_sort_order().desc("id").commit()
    assert [o.order_id for o in t.metadata.sort_orders] == [0, 1, 2]
    t.replace_sort_order().asc("id").commit()
    assert t.metadata.default_sort_order_id == 1
    t.replace_sort_order().unsorted().commit()
    assert t.metadata.default_sort_order_id == 0
    assert [o.order_id for o in t.metadata.sort_orders] == [0, 1, 2]
    before = t.metadata_location
    t.replace_sort_order().commit()  # unsorted again: nothing to commit
    assert t.refresh().metadata_location == before


def test_unsorted_clears_fields_added_before(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    assert t.replace_sort_order().asc("id").unsorted().desc("s").apply().to_json() == {
        "order-id": 1, "fields": [{"transform": "identity", "source-id": 2,
                                   "direction": "desc", "null-order": "nulls-last"}]}


def test_unsorted_on_a_table_created_sorted(tmp_path: Path) -> None:
    t = make(tmp_path, 2, sort="id")
    t.replace_sort_order().commit()
    assert t.metadata.default_sort_order_id == 0
    assert [o.order_id for o in t.metadata.sort_orders] == [1, 0]


def test_sort_order_stages_into_a_transaction(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    txn = t.new_transaction()
    assert ReplaceSortOrder(txn).desc("id").commit() is txn
    op = txn.operations[-1]
    assert [type(u) for u in op.updates] == [AddSortOrder, SetDefaultSortOrder]
    assert op.requirements == [AssertDefaultSortOrderId(0)]
    assert t.refresh().metadata.default_sort_order_id == 0
    txn.commit()
    assert t.refresh().metadata.default_sort_order_id == 1


@pytest.mark.parametrize(("build", "message"), [
    (lambda r: r.asc("idd"), r"^unknown column 'idd'; did you mean 'id'\?$"),
    (lambda r: r.desc("bucket(4, x)"), r"cannot be applied to 'x' of type double"),
    (lambda r: r.asc("st"), r"non-primitive column 'st'"),
    (lambda r: r.from_text("id sideways"), r"unknown column 'id sideways'"),
])
def test_sort_order_refusals(tmp_path: Path, build: Any, message: str) -> None:
    t = make(tmp_path, 2)
    with pytest.raises(ValidationError, match=message):
        build(t.replace_sort_order()).commit()


def test_sort_case_insensitive(tmp_path: Path) -> None:
    t = make(tmp_path, 2)
    t.replace_sort_order(case_sensitive=False).from_text("ID DESC").commit()
    assert [str(f) for f in t.sort_order().fields] == ["identity(1) desc nulls-last"]


# -- writing, planning and reading across specs -----------------------------------------------

UTC = dt.timezone.utc


def batch(ids: range) -> pa.Table:
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "s": [f"s{i % 4}" for i in ids],
        "ts": pa.array([dt.datetime(2024, 1, 1 + i % 5, tzinfo=UTC) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "x": [float(i) for i in ids],
        "d": pa.array([dt.date(2024, 1, 1) for _ in ids], pa.date32()),
        "st": [{"a": i} for i in ids],
        "arr": [[i] for i in ids],
    })


def scan_ids(t: Table, row_filter: str | None) -> list[int]:
    plan = plan_files(t.io, t.metadata, row_filter=row_filter)
    return sorted(plan_to_table(t.io, plan).column("id").to_pylist())


@pytest.mark.parametrize("version", VERSIONS)
def test_appends_use_the_new_spec_and_scans_span_both(tmp_path: Path, version: int) -> None:
    t = make(tmp_path, version, "bucket(4, id)")
    t.append(batch(range(0, 20)))
    evolve(t).remove_field("id_bucket").add_field("day(ts)").add_field("s").commit()
    new_spec = t.metadata.default_spec_id
    assert new_spec == 1
    t.append(batch(range(20, 40)))

    files = file_rows(t.io, t.metadata, t.current_snapshot())
    old = [f for f in files if f["spec_id"] == 0]
    new = [f for f in files if f["spec_id"] == new_spec]
    assert len(old) + len(new) == len(files) and old and new
    assert all(set(f["partition"]) == {"id_bucket"} for f in old)
    expected_keys = {"ts_day", "s"} | ({"id_bucket"} if version == 1 else set())
    assert all(set(f["partition"]) == expected_keys for f in new)
    # 5 days x 4 strings, every combination present among ids 20..39
    assert len(new) == 20
    if version == 1:
        assert all(f["partition"]["id_bucket"] is None for f in new)

    assert scan_ids(t, None) == list(range(40))
    assert scan_ids(t, "s = 's1'") == [i for i in range(40) if i % 4 == 1]
    assert scan_ids(t, "ts >= TIMESTAMP '2024-01-04 00:00:00+00:00'") == [
        i for i in range(40) if i % 5 >= 3]
    assert scan_ids(t, "id < 25 AND s = 's2'") == [i for i in range(25) if i % 4 == 2]
    plan = plan_files(t.io, t.metadata, row_filter="ts < TIMESTAMP '2024-01-02 00:00:00+00:00'")
    # the new spec prunes by day: only the 4 files of 2024-01-01 remain among the new ones
    assert sum(1 for task in plan.tasks if task.spec_id == new_spec) == 4


def test_metadata_json_round_trips_after_evolution(tmp_path: Path) -> None:
    t = make(tmp_path, 1, "bucket(16, id)")
    evolve(t).remove_field("id_bucket").add_field("truncate(4, s)").commit()
    t.replace_sort_order().desc("id").commit()
    again = t.catalog.load_table("db.t")
    doc = metadata_to_json(again.metadata)
    assert doc["partition-specs"][-1] == {"spec-id": 1, "fields": [
        {"name": "id_bucket", "transform": "void", "source-id": 1, "field-id": 1000},
        {"name": "s_trunc_4", "transform": "truncate[4]", "source-id": 2, "field-id": 1001}]}
    assert doc["partition-spec"] == doc["partition-specs"][-1]["fields"]  # v1's copy
    assert doc["last-partition-id"] == 1001
    assert json.loads(json.dumps(doc))["default-sort-order-id"] == 1


def test_builders_from_transaction_and_table_agree(tmp_path: Path) -> None:
    t = make(tmp_path, 2, "bucket(16, id)")
    via_txn = Transaction(t).update_spec().add_field("day(ts)").apply()
    via_table = t.update_spec().add_field("day(ts)").apply()
    assert via_txn == via_table
