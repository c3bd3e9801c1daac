"""The delete index applies the spec's rules ("Scan Planning") exactly.

Position deletes: data seq <= delete seq, same spec id and partition values. Equality
deletes: data seq < delete seq, same partition, or the delete's spec is unpartitioned.
"""

from __future__ import annotations

from typing import Any

import pytest

from floe.conversions import to_bytes
from floe.manifest import DataFile, FileContent, ManifestEntry, ManifestEntryStatus
from floe.scan.delete_index import FILE_PATH_FIELD_ID, DeleteFileIndex, referenced_data_file
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG), NestedField(2, "cat", STRING))
PARTITIONED, UNPARTITIONED, OTHER_SPEC = 1, 0, 2


def _file(content: FileContent, path: str, partition: tuple[Any, ...], spec_id: int,
          **kw: Any) -> DataFile:
    return DataFile(content, path, "PARQUET", partition, 10, 100, spec_id=spec_id, **kw)


def _entry(df: DataFile, seq: int) -> ManifestEntry:
    return ManifestEntry(ManifestEntryStatus.ADDED, 1, seq, seq, df)


def _index(*deletes: tuple[DataFile, int]) -> DeleteFileIndex:
    index = DeleteFileIndex(SCHEMA, [UNPARTITIONED])
    for df, seq in deletes:
        index.add(_entry(df, seq), df.spec_id)
    return index


DATA = _file(FileContent.DATA, "s3://b/data/a.parquet", ("a",), PARTITIONED)


# (delete content, delete partition, delete spec, delete seq, data seq, applies)
RULES = [
    pytest.param(FileContent.POSITION_DELETES, ("a",), PARTITIONED, 5, 5, True,
                 id="pos: same seq (same commit) applies"),
    pytest.param(FileContent.POSITION_DELETES, ("a",), PARTITIONED, 6, 5, True,
                 id="pos: later delete applies"),
    pytest.param(FileContent.POSITION_DELETES, ("a",), PARTITIONED, 4, 5, False,
                 id="pos: older delete does not apply"),
    pytest.param(FileContent.POSITION_DELETES, ("b",), PARTITIONED, 6, 5, False,
                 id="pos: other partition value"),
    pytest.param(FileContent.POSITION_DELETES, ("a",), OTHER_SPEC, 6, 5, False,
                 id="pos: same values, other spec"),
    pytest.param(FileContent.POSITION_DELETES, (), UNPARTITIONED, 6, 5, False,
                 id="pos: unpartitioned position deletes are not global"),
    pytest.param(FileContent.EQUALITY_DELETES, ("a",), PARTITIONED, 5, 5, False,
                 id="eq: same seq (same commit) does not apply"),
    pytest.param(FileContent.EQUALITY_DELETES, ("a",), PARTITIONED, 6, 5, True,
                 id="eq: later delete applies"),
    pytest.param(FileContent.EQUALITY_DELETES, ("a",), PARTITIONED, 4, 5, False,
                 id="eq: older delete does not apply"),
    pytest.param(FileContent.EQUALITY_DELETES, ("b",), PARTITIONED, 6, 5, False,
                 id="eq: other partition value"),
    pytest.param(FileContent.EQUALITY_DELETES, ("a",), OTHER_SPEC, 6, 5, False,
                 id="eq: same values, other spec"),
    pytest.param(FileContent.EQUALITY_DELETES, (), UNPARTITIONED, 6, 5, True,
                 id="eq: global (unpartitioned spec) applies to every partition"),
    pytest.param(FileContent.EQUALITY_DELETES, (), UNPARTITIONED, 5, 5, False,
                 id="eq: global, same seq does not apply"),
]


@pytest.mark.parametrize(("content", "partition", "spec_id", "delete_seq", "data_seq",
                          "applies"), RULES)
def test_rules(content: FileContent, partition: tuple[Any, ...], spec_id: int,
               delete_seq: int, data_seq: int, applies: bool) -> None:
    kw = {"equality_ids": [1]} if content == FileContent.EQUALITY_DELETES else {}
    delete = _file(content, "s3://b/data/del.parquet", partition, spec_id, **kw)
    index = _index((delete, delete_seq))
    got = index.for_data_file(DATA, data_seq, PARTITIONED)
    assert [d.path for d in got] == (["s3://b/data/del.parquet"] if applies else [])
    explained = index.explain_for(DATA, data_seq, PARTITIONED)
    assert [m.applied for m in explained if m.applied] == ([True] if applies else [])


def test_many_deletes_sorted_by_sequence_number() -> None:
    deletes = [(_file(FileContent.POSITION_DELETES, f"d{s}", ("a",), PARTITIONED), s)
               for s in (9, 3, 7, 5, 1)]
    index = _index(*deletes)
    assert [d.sequence_number for d in index.for_data_file(DATA, 5, PARTITIONED)] == [5, 7, 9]


def test_referenced_data_file_limits_a_position_delete() -> None:
    other = _file(FileContent.POSITION_DELETES, "d1", ("a",), PARTITIONED,
                  referenced_data_file="s3://b/data/other.parquet")
    mine = _file(FileContent.POSITION_DELETES, "d2", ("a",), PARTITIONED,
                 referenced_data_file=DATA.file_path)
    index = _index((other, 6), (mine, 6))
    assert [d.path for d in index.for_data_file(DATA, 5, PARTITIONED)] == ["d2"]
    # named by path, a delete applies whatever its file_path bounds say (Java compares
    # bounds only for deletes of a partition), and its explanation says so
    odd = _file(FileContent.POSITION_DELETES, "d3", ("a",), PARTITIONED,
                referenced_data_file=DATA.file_path,
                lower_bounds={FILE_PATH_FIELD_ID: b"s3://b/data/x"},
                upper_bounds={FILE_PATH_FIELD_ID: b"s3://b/data/z"})
    index = _index((odd, 6))
    assert [d.path for d in index.for_data_file(DATA, 5, PARTITIONED)] == ["d3"]
    assert [m.applied for m in index.explain_for(DATA, 5, PARTITIONED)] == [True]


def test_equal_file_path_bounds_scope_a_position_delete_to_that_file() -> None:
    """Java's file-scoped deletes on v2 (``write.delete.granularity=file``) name their one
    data file by equal ``file_path`` bounds: looked up by path (Java's DeleteFileIndex), a
    delete is never compared with, nor listed for, the other files of its partition."""
    def scoped(name: str, target: str) -> DataFile:
        return _file(FileContent.POSITION_DELETES, name, ("a",), PARTITIONED,
                     lower_bounds={FILE_PATH_FIELD_ID: target.encode()},
                     upper_bounds={FILE_PATH_FIELD_ID: target.encode()})

    other_path = "s3://b/data/other.parquet"
    other = _file(FileContent.DATA, other_path, ("a",), PARTITIONED)
    index = _index((scoped("d-mine", DATA.file_path), 6), (scoped("d-other", other_path), 6),
                   (scoped("d-old", DATA.file_path), 4))
    assert [d.path for d in index.for_data_file(DATA, 5, PARTITIONED)] == ["d-mine"]
    assert [d.path for d in index.for_data_file(other, 5, PARTITIONED)] == ["d-other"]
    assert [(m.delete_path, m.applied, m.reason)
            for m in index.explain_for(DATA, 5, PARTITIONED)] == [
        ("d-old", False, "delete sequence number 4 < data sequence number 5"),
        ("d-mine", True, "names this data file, delete sequence number 6 >= 5")]
    # by path alone (a full plan's lookup), a path named by one delete file or by several
    assert index.by_path_only
    assert [d.path for d in index.for_path(DATA.file_path, 5)] == ["d-mine"]
    assert [d.path for d in index.for_path(DATA.file_path, 3)] == ["d-old", "d-mine"]
    assert [d.path for d in index.for_path(other_path, 6)] == ["d-other"]
    assert index.for_path(other_path, 7) == [] == index.for_path("s3://b/data/none", 1)
    assert index.explain_path(DATA.file_path, 5) == index.explain_for(DATA, 5, PARTITIONED)
    assert [(m.delete_path, m.applied) for m in index.explain_path(other_path, 7)] == [
        ("d-other", False)]
    assert index.explain_path("s3://b/data/none", 1) == []
    assert referenced_data_file(scoped("d", DATA.file_path)) == DATA.file_path
    # bounds of several files, or not a path at all: kept with the partition
    wide = _file(FileContent.POSITION_DELETES, "d", ("a",), PARTITIONED,
                 lower_bounds={FILE_PATH_FIELD_ID: b"s3://b/data/a"},
                 upper_bounds={FILE_PATH_FIELD_ID: b"s3://b/data/z"})
    assert referenced_data_file(wide) is None
    assert referenced_data_file(_file(
        FileContent.POSITION_DELETES, "d", ("a",), PARTITIONED,
        lower_bounds={FILE_PATH_FIELD_ID: b"\xff"},
        upper_bounds={FILE_PATH_FIELD_ID: b"\xff"})) is None
    assert [d.path for d in _index((wide, 6)).for_data_file(DATA, 5, PARTITIONED)] == ["d"]


@pytest.mark.parametrize(("lower", "upper", "applies"), [
    ("s3://b/data/a.parquet", "s3://b/data/a.parquet", True),
    ("s3://b/data/0", "s3://b/data/z", True),
    ("s3://b/data/b", "s3://b/data/z", False),
    ("s3://b/data/0", "s3://b/data/0", False),
])
def test_position_delete_pruned_by_file_path_bounds(lower: str, upper: str,
                                                    applies: bool) -> None:
    delete = _file(FileContent.POSITION_DELETES, "d", ("a",), PARTITIONED,
                   lower_bounds={FILE_PATH_FIELD_ID: lower.encode()},
                   upper_bounds={FILE_PATH_FIELD_ID: upper.encode()})
    assert bool(_index((delete, 6)).for_data_file(DATA, 5, PARTITIONED)) is applies


def _stats(lo: int | None, hi: int | None, nulls: int, values: int) -> dict[str, Any]:
    return {
        "value_counts": {1: values}, "null_value_counts": {1: nulls},
        "lower_bounds": {} if lo is None else {1: to_bytes(LONG, lo)},
        "upper_bounds": {} if hi is None else {1: to_bytes(LONG, hi)},
    }


# (data stats, delete stats, applies): an equality delete whose key range cannot meet the
# data file's values is pruned; null keys meet null values
EQ_METRICS = [
    pytest.param((1, 10, 0, 5), (5, 20, 0, 2), True, id="ranges overlap"),
    pytest.param((1, 10, 0, 5), (11, 20, 0, 2), False, id="delete above data"),
    pytest.param((1, 10, 0, 5), (-5, 0, 0, 2), False, id="delete below data"),
    pytest.param((1, 10, 2, 5), (11, 20, 1, 2), True, id="both have nulls"),
    pytest.param((None, None, 5, 5), (11, 20, 0, 2), False, id="data all null, no null key"),
    pytest.param((None, None, 5, 5), (None, None, 2, 2), True, id="all null both sides"),
    pytest.param((1, 10, 0, 5), (None, None, 2, 2), False, id="null keys, no null values"),
]


@pytest.mark.parametrize(("data", "delete", "applies"), EQ_METRICS)
def test_equality_delete_pruned_by_metrics(data: tuple[Any, ...], delete: tuple[Any, ...],
                                           applies: bool) -> None:
    data_file = _file(FileContent.DATA, "x", ("a",), PARTITIONED, **_stats(*data))
    delete_file = _file(FileContent.EQUALITY_DELETES, "d", ("a",), PARTITIONED,
                        equality_ids=[1], **_stats(*delete))
    assert bool(_index((delete_file, 6)).for_data_file(data_file, 5, PARTITIONED)) is applies
