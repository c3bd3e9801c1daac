"""Inclusive and strict metrics evaluators and the manifest evaluator: one table row per rule
(Java's TestInclusiveMetricsEvaluator / TestStrictMetricsEvaluator /
TestInclusiveManifestEvaluator cases), with the explanation that decided it."""

from __future__ import annotations

from typing import Any

import pytest

from floe.conversions import to_bytes
from floe.expressions import (
    In,
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    inclusive_projection,
    manifest_evaluator,
    manifest_evaluator_explain,
    parse_filter,
)
from floe.manifest import DataFile, FileContent, ManifestFile, PartitionFieldSummary
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    NestedField,
    PrimitiveType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "no_stats", INT, required=False),
    NestedField(3, "all_nulls", STRING, required=False),
    NestedField(4, "some_nulls", STRING, required=False),
    NestedField(5, "no_nulls", STRING, required=False),
    NestedField(6, "all_nans", DOUBLE, required=False),
    NestedField(7, "some_nans", FLOAT, required=False),
    NestedField(8, "no_nans", FLOAT, required=False),
    NestedField(9, "nans_and_nulls", DOUBLE, required=False),
    NestedField(10, "trunc", STRING, required=False),
)


def _b(t: PrimitiveType, v: Any) -> bytes:
    return to_bytes(t, v)


def _file(record_count: int = 50, **changes: Any) -> DataFile:
    base = DataFile(
        content=FileContent.DATA, file_path="data.parquet", file_format="PARQUET",
        partition=(), record_count=record_count, file_size_in_bytes=10,
        value_counts={1: 50, 3: 50, 4: 50, 5: 50, 6: 50, 7: 50, 8: 50, 9: 50, 10: 50},
        null_value_counts={1: 0, 3: 50, 4: 10, 5: 0, 6: 0, 7: 0, 8: 0, 9: 10, 10: 0},
        nan_value_counts={6: 50, 7: 10, 8: 0, 9: 40},
        lower_bounds={1: _b(LONG, 30), 4: _b(STRING, "bbb"), 5: _b(STRING, "abc"),
                      7: _b(FLOAT, 1.0), 8: _b(FLOAT, 1.0), 10: _b(STRING, "abc")},
        # trunc's upper bound was truncated from longer 'abc…' values and incremented
        upper_bounds={1: _b(LONG, 79), 4: _b(STRING, "eee"), 5: _b(STRING, "abz"),
                      7: _b(FLOAT, 5.0), 8: _b(FLOAT, 5.0), 10: _b(STRING, "abd")},
    )
    return base._replace(**changes)


FILE = _file()

INCLUSIVE: list[tuple[str, bool, str]] = [
    ("id < 30", False, "pruned: id < 30 but lower_bound(id) = 30"),
    ("id < 31", True, "kept: id < 31 might match"),
    ("id <= 29", False, "lower_bound(id) = 30"),
    ("id <= 30", True, "kept"),
    ("id > 79", False, "pruned: id > 79 but upper_bound(id) = 79"),
    ("id > 78", True, "kept"),
    ("id >= 80", False, "upper_bound(id) = 79"),
    ("id >= 79", True, "kept"),
    ("id = 29", False, "lower_bound(id) = 30"),
    ("id = 80", False, "upper_bound(id) = 79"),
    ("id = 50", True, "kept"),
    ("id != 30", True, "kept"),
    ("id IN (1, 2, 80)", False, "no value is within the bounds of id: [30, 79]"),
    ("id IN (1, 30)", True, "kept"),
    ("id NOT IN (30, 31)", True, "kept"),
    ("no_stats < 5", True, "kept"),
    ("no_stats IS NULL", True, "kept"),
    ("no_stats IS NOT NULL", True, "kept"),
    ("all_nulls IS NOT NULL", False, "all values of all_nulls are null"),
    ("all_nulls IS NULL", True, "kept"),
    ("all_nulls = 'a'", False, "all values of all_nulls are null"),
    ("all_nulls < 'a'", False, "all values of all_nulls are null"),
    ("all_nulls IN ('a', 'b')", False, "all values of all_nulls are null"),
    ("all_nulls STARTS WITH 'a'", False, "all values of all_nulls are null"),
    ("all_nulls NOT STARTS WITH 'a'", True, "kept"),
    ("all_nulls != 'a'", True, "kept"),
    ("no_nulls IS NULL", False, "null_value_count(no_nulls) = 0"),
    ("some_nulls IS NULL", True, "kept"),
    ("some_nulls IS NOT NULL", True, "kept"),
    ("some_nulls STARTS WITH 'a'", False, "lower_bound(some_nulls) = 'bbb'"),
    ("some_nulls STARTS WITH 'c'", True, "kept"),
    ("some_nulls STARTS WITH 'bbbb'", True, "kept"),
    ("some_nulls STARTS WITH 'f'", False, "upper_bound(some_nulls) = 'eee'"),
    ("some_nulls NOT STARTS WITH 'b'", True, "kept"),
    ("no_nulls NOT STARTS WITH 'ab'", False, "both bounds of no_nulls start with it"),
    ("no_nulls NOT STARTS WITH 'abc'", True, "kept"),
    ("all_nans IS NAN", True, "kept"),
    ("all_nans IS NOT NAN", False, "all values of all_nans are NaN"),
    ("all_nans < 1", False, "all values of all_nans are NaN"),
    ("all_nans = 1", False, "all values of all_nans are NaN"),
    ("all_nans != 1", True, "kept"),
    ("no_nans IS NAN", False, "nan_value_count(no_nans) = 0"),
    ("some_nans IS NAN", True, "kept"),
    ("some_nans IS NOT NAN", True, "kept"),
    ("some_nans > 5", False, "upper_bound(some_nans) = 5.0"),
    ("some_nans >= 5", True, "kept"),
    ("nans_and_nulls IS NAN", True, "kept"),
    ("nans_and_nulls IS NOT NAN", True, "kept"),
    ("nans_and_nulls < 1", True, "kept"),
    ("trunc STARTS WITH 'abc'", True, "kept"),
    ("trunc STARTS WITH 'abd'", True, "kept"),
    ("trunc STARTS WITH 'abe'", False, "upper_bound(trunc) = 'abd'"),
    ("trunc STARTS WITH 'abb'", False, "lower_bound(trunc) = 'abc'"),
    ("trunc = 'abczzz'", True, "kept"),
    ("trunc > 'abd'", False, "upper_bound(trunc) = 'abd'"),
    ("trunc < 'abc'", False, "lower_bound(trunc) = 'abc'"),
    ("id > 100 OR id < 10", False,
     "pruned: id > 100 but upper_bound(id) = 79; and pruned: id < 10 but lower_bound(id) = 30"),
    ("id > 100 AND no_stats = 1", False, "upper_bound(id) = 79"),
    ("id > 50 AND no_stats = 1", True, "kept: id > 50 might match; kept: no_stats = 1 might"),
    ("TRUE", True, "the filter is always true"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), INCLUSIVE, ids=[c[0] for c in INCLUSIVE])
def test_inclusive_metrics(text: str, expected: bool, reason: str) -> None:
    ev = InclusiveMetricsEvaluator(SCHEMA, parse_filter(text))
    assert ev.eval(FILE) is expected
    kept, why = ev.explain(FILE)
    assert kept is expected
    assert reason in why


def test_inclusive_empty_and_unknown_record_counts() -> None:
    ev = InclusiveMetricsEvaluator(SCHEMA, parse_filter("id > 0"))
    assert not ev.eval(_file(record_count=0))
    assert ev.explain(_file(record_count=0)) == (False, "pruned: the file has no rows")
    assert ev.eval(_file(record_count=-1))
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("id > 0"),
                                     include_empty_files=True).eval(_file(record_count=0))


def test_inclusive_without_any_statistics_keeps_the_file() -> None:
    bare = _file(value_counts=None, null_value_counts=None, nan_value_counts=None,
                 lower_bounds=None, upper_bounds=None)
    for text in ("id < 0", "all_nulls IS NOT NULL", "no_nulls IS NULL", "all_nans IS NOT NAN",
                 "some_nulls STARTS WITH 'zz'", "no_nulls NOT STARTS WITH 'ab'"):
        assert InclusiveMetricsEvaluator(SCHEMA, parse_filter(text)).eval(bare), text


def test_nan_bounds_are_ignored() -> None:
    f = _file(lower_bounds={7: _b(FLOAT, float("nan"))}, upper_bounds={7: _b(FLOAT, float("nan"))})
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("some_nans > 100")).eval(f)
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("some_nans < -100")).eval(f)


def test_bounds_written_before_a_type_promotion() -> None:
    promoted = Schema(NestedField(1, "id", LONG, required=True))
    f = _file(lower_bounds={1: _b(INT, 30)}, upper_bounds={1: _b(INT, 79)})
    # an int bound under a long column is either read as the int or ignored: never wrong
    assert InclusiveMetricsEvaluator(promoted, parse_filter("id = 50")).eval(f)


def test_in_with_many_values_is_not_checked() -> None:
    ev = InclusiveMetricsEvaluator(SCHEMA, In("id", range(1000, 1201)))
    assert ev.eval(FILE)
    assert not InclusiveMetricsEvaluator(SCHEMA, In("id", range(1000, 1200))).eval(FILE)


STRICT: list[tuple[str, bool, str]] = [
    ("id < 80", True, "all rows match: id < 80 and upper_bound(id) = 79"),
    ("id < 79", False, "some rows might not match id < 79"),
    ("id <= 79", True, "upper_bound(id) = 79"),
    ("id > 29", True, "lower_bound(id) = 30"),
    ("id > 30", False, "some rows might not match"),
    ("id >= 30", True, "lower_bound(id) = 30"),
    ("id = 30", False, "some rows might not match"),
    ("id != 29", True, "lower_bound(id) = 30"),
    ("id != 80", True, "upper_bound(id) = 79"),
    ("id != 50", False, "some rows might not match"),
    ("id NOT IN (1, 2)", True, "lower_bound(id) = 30"),
    ("id NOT IN (1, 50)", False, "some rows might not match"),
    ("all_nulls IS NULL", True, "all values of all_nulls are null"),
    ("all_nulls != 'a'", True, "all values of all_nulls are null"),
    ("all_nulls NOT IN ('a', 'b')", True, "all values of all_nulls are null"),
    ("all_nulls NOT STARTS WITH 'a'", True, "all values of all_nulls are null"),
    ("all_nulls < 'a'", False, "some rows might not match"),
    ("no_nulls IS NOT NULL", True, "null_value_count(no_nulls) = 0"),
    ("some_nulls IS NOT NULL", False, "some rows might not match"),
    ("some_nulls < 'zzz'", False, "some rows might not match"),
    ("no_nulls STARTS WITH 'ab'", True, "both bounds start with it"),
    ("no_nulls STARTS WITH 'abc'", False, "some rows might not match"),
    ("some_nulls NOT STARTS WITH 'a'", True, "lower_bound(some_nulls) = 'bbb'"),
    ("some_nulls NOT STARTS WITH 'f'", True, "upper_bound(some_nulls) = 'eee'"),
    ("some_nulls NOT STARTS WITH 'c'", False, "some rows might not match"),
    ("all_nans IS NAN", True, "all values of all_nans are NaN"),
    ("all_nans != 1", True, "all values of all_nans are NaN"),
    ("no_nans IS NOT NAN", True, "nan_value_count(no_nans) = 0"),
    ("some_nans IS NOT NAN", False, "some rows might not match"),
    ("nans_and_nulls IS NOT NAN", False, "some rows might not match"),
    ("some_nans < 10", False, "some rows might not match"),
    ("no_nans < 10", True, "upper_bound(no_nans) = 5.0"),
    ("no_nans > 0", True, "lower_bound(no_nans) = 1.0"),
    ("no_stats IS NULL", False, "some rows might not match"),
    ("no_stats != 1", False, "some rows might not match"),
    ("trunc < 'abd'", False, "some rows might not match"),
    ("trunc <= 'abd'", True, "upper_bound(trunc) = 'abd'"),
    ("id < 80 AND no_nans < 10", True, "upper_bound(id) = 79; all rows match: no_nans < 10"),
    ("id < 80 OR no_stats = 1", True, "upper_bound(id) = 79"),
    ("id < 10 OR no_stats = 1", False,
     "some rows might not match id < 10; and some rows might not match no_stats = 1"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), STRICT, ids=[c[0] for c in STRICT])
def test_strict_metrics(text: str, expected: bool, reason: str) -> None:
    ev = StrictMetricsEvaluator(SCHEMA, parse_filter(text))
    assert ev.eval(FILE) is expected
    matched, why = ev.explain(FILE)
    assert matched is expected
    assert reason in why


SINGLE_VALUE = _file(lower_bounds={1: _b(LONG, 5)}, upper_bounds={1: _b(LONG, 5)})


@pytest.mark.parametrize(("text", "expected"), [
    ("id = 5", True), ("id IN (5, 6)", True), ("id = 6", False), ("id IN (6, 7)", False),
])
def test_strict_single_value_file(text: str, expected: bool) -> None:
    assert StrictMetricsEvaluator(SCHEMA, parse_filter(text)).eval(SINGLE_VALUE) is expected


def test_strict_empty_file_and_missing_nan_counts() -> None:
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("id = 1")).eval(_file(record_count=0))
    # without a NaN count a float column may hold NaN, which fails every comparison
    f = _file(nan_value_counts=None)
    assert not StrictMetricsEvaluator(SCHEMA, parse_filter("no_nans < 10")).eval(f)
    assert StrictMetricsEvaluator(SCHEMA, parse_filter("id < 80")).eval(f)


# -- manifest evaluator --------------------------------------------------------------------

PSCHEMA = Schema(
    NestedField(1, "id", LONG, required=False),
    NestedField(2, "s", STRING, required=False),
    NestedField(3, "f", DOUBLE, required=False),
    NestedField(4, "n", STRING, required=False),
    NestedField(5, "nan_only", DOUBLE, required=False),
    NestedField(6, "s2", STRING, required=False),
    NestedField(7, "nulls_or_nans", DOUBLE, required=False),
)
PSPEC = parse_partition_by("id, s, f, n, nan_only, s2, nulls_or_nans", PSCHEMA)
SUMMARIES = [
    PartitionFieldSummary(False, None, _b(LONG, 30), _b(LONG, 79)),
    PartitionFieldSummary(True, None, _b(STRING, "abc"), _b(STRING, "abd")),
    PartitionFieldSummary(False, True, _b(DOUBLE, 1.0), _b(DOUBLE, 2.0)),
    PartitionFieldSummary(True, None, None, None),
    PartitionFieldSummary(False, True, None, None),
    PartitionFieldSummary(False, False, _b(STRING, "abc"), _b(STRING, "abd")),
    PartitionFieldSummary(True, True, None, None),
]
MANIFEST = ManifestFile("m.avro", 100, 0, partitions=SUMMARIES)

MANIFESTS: list[tuple[str, bool, str]] = [
    ("id < 30", False, "pruned: id < 30 but partition lower_bound(id) = 30"),
    ("id <= 30", True, "kept"),
    ("id > 79", False, "partition upper_bound(id) = 79"),
    ("id >= 79", True, "kept"),
    ("id = 80", False, "partition bounds of id are [30, 79]"),
    ("id = 50", True, "kept"),
    ("id IN (1, 2)", False, "partition bounds of id are [30, 79]"),
    ("id IN (1, 50)", True, "kept"),
    ("id != 30", True, "kept"),
    ("id NOT IN (30, 31)", True, "kept"),
    ("id IS NULL", False, "no partition value of id is null"),
    ("id IS NOT NULL", True, "kept"),
    ("s IS NULL", True, "kept"),
    ("n IS NOT NULL", False, "every partition value of n is null"),
    ("n IS NULL", True, "kept"),
    ("n = 'a'", False, "every partition value of n is null or NaN"),
    ("n STARTS WITH 'a'", False, "every partition value of n is null or NaN"),
    ("f IS NAN", True, "kept"),
    ("f IS NOT NAN", True, "kept"),
    ("s2 IS NULL", False, "no partition value of s2 is null"),
    ("nan_only IS NOT NAN", False, "every partition value of nan_only is NaN"),
    ("nan_only IS NOT NULL", True, "kept"),
    ("nan_only < 1", False, "every partition value of nan_only is null or NaN"),
    ("nulls_or_nans IS NOT NULL", True, "kept"),
    ("nulls_or_nans IS NOT NAN", True, "kept"),
    ("s STARTS WITH 'ab'", True, "kept"),
    ("s STARTS WITH 'abe'", False, "partition upper_bound(s) = 'abd'"),
    ("s STARTS WITH 'aa'", False, "partition lower_bound(s) = 'abc'"),
    ("s NOT STARTS WITH 'ab'", True, "kept"),
    ("s2 NOT STARTS WITH 'ab'", False, "both partition bounds of s2 start with it"),
    ("s2 NOT STARTS WITH 'abc'", True, "kept"),
    ("id > 100 OR s IS NULL", True, "kept: s IS NULL might match"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), MANIFESTS, ids=[c[0] for c in MANIFESTS])
def test_manifest_evaluator(text: str, expected: bool, reason: str) -> None:
    partition_filter = inclusive_projection(PSCHEMA, PSPEC)(parse_filter(text))
    assert manifest_evaluator(PSPEC, PSCHEMA, partition_filter)(MANIFEST) is expected
    kept, why = manifest_evaluator_explain(PSPEC, PSCHEMA, partition_filter)(MANIFEST)
    assert kept is expected
    assert reason in why


def test_manifest_without_usable_summaries_is_kept() -> None:
    partition_filter = inclusive_projection(PSCHEMA, PSPEC)(parse_filter("id < 0"))
    evaluate = manifest_evaluator(PSPEC, PSCHEMA, partition_filter)
    assert evaluate(ManifestFile("m.avro", 1, 0, partitions=None))
    assert evaluate(ManifestFile("m.avro", 1, 0, partitions=SUMMARIES[:2]))
    assert not evaluate(MANIFEST)
    big = In("id", range(1000, 1201))
    assert manifest_evaluator(PSPEC, PSCHEMA, big)(MANIFEST)


def test_manifest_filter_through_a_transform() -> None:
    schema = Schema(NestedField(1, "ts", LONG, required=False))
    spec = parse_partition_by("truncate(10, ts)", schema)
    summaries = [PartitionFieldSummary(False, None, _b(LONG, 100), _b(LONG, 200))]
    m = ManifestFile("m.avro", 1, 0, partitions=summaries)
    project = inclusive_projection(schema, spec)
    assert manifest_evaluator(spec, schema, project(parse_filter("ts >= 209")))(m)
    assert not manifest_evaluator(spec, schema, project(parse_filter("ts >= 210")))(m)
    kept, why = manifest_evaluator_explain(spec, schema, project(parse_filter("ts < 100")))(m)
    assert (kept, why) == (
        False, "pruned: ts_trunc <= 90 but partition lower_bound(ts_trunc) = 100")


@pytest.mark.parametrize("memo", [None, 1])
def test_one_evaluator_over_many_manifests_answers_as_fresh_ones(
        memo: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest leaf remembers its answer per distinct summary of its field: over manifests
    that repeat and mix these summaries, one evaluator answers each as a new evaluator does
    (with the memory full after one summary too)."""
    import random

    from floe.expressions import metrics

    if memo is not None:
        monkeypatch.setattr(metrics, "SUMMARY_MEMO", memo)
    rng = random.Random(24)
    manifests = []
    for _ in range(60):
        parts = list(SUMMARIES)
        for _ in range(3):  # swap summaries between fields of the same type
            i, j = rng.choice([(1, 3), (1, 5), (3, 5), (2, 4), (2, 6), (4, 6)])
            parts[i], parts[j] = parts[j], parts[i]
        if rng.random() < 0.3:
            parts[0] = PartitionFieldSummary(False, False, _b(LONG, rng.randint(0, 90)),
                                             _b(LONG, 90))
        manifests.append(ManifestFile("m.avro", 1, 0, partitions=parts))
    for text, _, _ in MANIFESTS:
        partition_filter = inclusive_projection(PSCHEMA, PSPEC)(parse_filter(text))
        one = manifest_evaluator_explain(PSPEC, PSCHEMA, partition_filter)
        plain = manifest_evaluator(PSPEC, PSCHEMA, partition_filter)
        for m in manifests:
            fresh = manifest_evaluator_explain(PSPEC, PSCHEMA, partition_filter)(m)
            assert one(m) == fresh, (text, m.partitions)
            assert plain(m) is fresh[0], (text, m.partitions)
