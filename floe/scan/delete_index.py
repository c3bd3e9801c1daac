"""The delete index: which delete files apply to which data file (spec "Scan Planning").

The rules, as the spec states them:

- A *position* delete file applies to a data file when the data file's data sequence number
  is less than or equal to the delete file's, and both are in the same partition (same spec
  id and equal partition values). A position delete that names a ``referenced_data_file``
  (always the case for v3 deletion vectors), or whose ``file_path`` lower and upper bounds
  are the same path (Java's file-scoped deletes on v2), applies to that file only: it is
  looked up by path, as Java's ``DeleteFileIndex`` does, not compared with every data file
  of its partition.
- An *equality* delete file applies when the data file's data sequence number is strictly
  less than the delete file's, and the delete file is in the same partition or its spec is
  unpartitioned (a "global" equality delete).

Delete files are further pruned by their own metrics, like Java's ``DeleteFileIndex``: the
``file_path`` bounds of a position delete file must include the data file's path, and the
bounds of each equality column of an equality delete must overlap the data file's bounds.
Those two are optimisations: a delete file that is kept although it matches nothing only
costs a read.

Lookups are by ``(spec id, partition tuple)``; deletes of one partition are kept sorted by
sequence number so a data file's candidates are found by bisection.
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.conversions import from_bytes
from floe.errors import ValidationError
from floe.manifest import DataFile, FileContent, ManifestEntry, file_content_name
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField, PrimitiveType, StringType

__all__ = ["DeleteFile", "DeleteFileIndex", "DeleteMatch", "FILE_PATH_FIELD_ID", "POS_FIELD_ID",
           "POSITION_DELETE_SCHEMA", "referenced_data_file"]

#: Reserved field ids of position delete files (spec "Position Delete Files").
FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545
#: Spec "Position Delete Files": the columns every position delete file has.
POSITION_DELETE_SCHEMA = Schema(
    NestedField(FILE_PATH_FIELD_ID, "file_path", STRING, required=True),
    NestedField(POS_FIELD_ID, "pos", LONG, required=True),
)

_STRING = StringType()


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """A live delete file with the data sequence number it was committed with."""

    data_file: DataFile
    sequence_number: int
    spec_id: int

    @property
    def path(self) -> str:
        return self.data_file.file_path

    @property
    def content(self) -> FileContent:
        return self.data_file.content

    @property
    def is_deletion_vector(self) -> bool:
        return str(self.data_file.file_format).upper() == "PUFFIN"


@dataclass(frozen=True, slots=True)
class DeleteMatch:
    """Why a delete file was or was not matched to a data file (for explain output)."""

    delete_path: str
    content: str
    sequence_number: int
    applied: bool
    reason: str


@dataclass(slots=True)
class _Bucket:
    """Deletes of one scope, sorted by sequence number."""

    seqs: list[int] = field(default_factory=list)
    files: list[DeleteFile] = field(default_factory=list)

    def add(self, f: DeleteFile) -> None:
        i = bisect_right(self.seqs, f.sequence_number)
        self.seqs.insert(i, f.sequence_number)
        self.files.insert(i, f)

    @classmethod
    def one(cls, f: DeleteFile) -> _Bucket:
        return cls([f.sequence_number], [f])

    @classmethod
    def of(cls, got: DeleteFile | _Bucket | None) -> _Bucket | None:
        """A bucket of a value of :attr:`DeleteFileIndex._pos_by_path`."""
        if got is None or isinstance(got, _Bucket):
            return got
        return cls.one(got)

    def at_or_after(self, seq: int) -> list[DeleteFile]:
        return self.files[bisect_left(self.seqs, seq):]

    def after(self, seq: int) -> list[DeleteFile]:
        return self.files[bisect_right(self.seqs, seq):]


def _at_or_after(got: DeleteFile | _Bucket | None, seq: int) -> list[DeleteFile]:
    """:meth:`_Bucket.at_or_after` of a value of :attr:`DeleteFileIndex._pos_by_path`."""
    if got is None:
        return []
    if isinstance(got, _Bucket):
        return got.at_or_after(seq)
    return [got] if got.sequence_number >= seq else []


class DeleteFileIndex:
    """Delete files of a snapshot, indexed for :meth:`for_data_file`.

    ``schema`` types the bounds used to prune equality deletes; ``unpartitioned_specs`` is
    the set of spec ids whose spec has no fields (their equality deletes are global).
    """

    def __init__(self, schema: Schema, unpartitioned_specs: Iterable[int]) -> None:
        self._schema = schema
        self._unpartitioned = frozenset(unpartitioned_specs)
        self._pos: dict[tuple[int, tuple[Any, ...]], _Bucket] = {}
        #: Position deletes that name their data file, by its path: the one delete file
        #: (the common case: a bucket of one costs three objects per delete file), or a
        #: bucket of several
        self._pos_by_path: dict[str, DeleteFile | _Bucket] = {}
        self._eq: dict[tuple[int, tuple[Any, ...]], _Bucket] = {}
        self._global_eq = _Bucket()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def has_deletes(self) -> bool:
        return self._count > 0

    def add(self, entry: ManifestEntry, spec_id: int, target: str | None | bool = True
            ) -> None:
        """Index one live delete entry of a delete manifest of spec ``spec_id``. ``target``
        is its :func:`referenced_data_file` when the caller has read it (True: read here)."""
        df = entry.data_file
        seq = entry.sequence_number
        if seq is None:
            raise ValidationError(f"delete file {df.file_path} has no data sequence number")
        f = DeleteFile(df, seq, spec_id)
        if df.content == FileContent.POSITION_DELETES:
            if target is True:
                target = referenced_data_file(df)
            if isinstance(target, str):
                named = self._pos_by_path.get(target)
                if named is None:
                    self._pos_by_path[target] = f
                else:
                    if not isinstance(named, _Bucket):
                        named = self._pos_by_path[target] = _Bucket.one(named)
                    named.add(f)
            else:
                self._pos.setdefault((spec_id, tuple(df.partition)), _Bucket()).add(f)
        elif df.content == FileContent.EQUALITY_DELETES:
            if spec_id in self._unpartitioned:
                self._global_eq.add(f)
            else:
                self._eq.setdefault((spec_id, tuple(df.partition)), _Bucket()).add(f)
        else:
            raise ValidationError(f"{df.file_path} is a data file in a delete manifest")
        self._count += 1

    @property
    def by_path_only(self) -> bool:
        """Whether every delete file indexed names its one data file (:func:`referenced_data_file`):
        a data file's deletes then depend on its path and sequence number alone
        (:meth:`path_rows`, :meth:`for_path`), not on its partition or statistics."""
        return not (self._pos or self._eq or self._global_eq.files)

    def path_rows(self, paths: Sequence[str]) -> list[int]:
        """The positions in ``paths`` of the data files some delete file names."""
        by_path = self._pos_by_path
        return [i for i, p in enumerate(paths) if p in by_path] if by_path else []

    def for_path(self, path: str, sequence_number: int) -> list[DeleteFile]:
        """The delete files naming the data file ``path`` that apply to it: what
        :meth:`for_data_file` gives when :attr:`by_path_only`."""
        return _at_or_after(self._pos_by_path.get(path), sequence_number)

    def explain_path(self, path: str, sequence_number: int) -> list[DeleteMatch]:
        """:meth:`explain_for` of the data file ``path`` when :attr:`by_path_only`."""
        out: list[DeleteMatch] = []
        _explain_position(out, _Bucket.of(self._pos_by_path.get(path)), "names this data file",
                          None, sequence_number)
        return out

    def for_data_file(self, data_file: DataFile, sequence_number: int, spec_id: int
                      ) -> list[DeleteFile]:
        """The delete files that apply to one data file."""
        if not self._count:
            return []
        key = (spec_id, tuple(data_file.partition))
        out: list[DeleteFile] = []
        bucket = self._pos.get(key)
        if bucket is not None:
            out += [d for d in bucket.at_or_after(sequence_number)
                    if _path_in_bounds(d.data_file, data_file.file_path)]
        out += _at_or_after(self._pos_by_path.get(data_file.file_path), sequence_number)
        eq = self._eq.get(key)
        for b in (eq, self._global_eq):
            if b is not None and b.files:
                out += [d for d in b.after(sequence_number)
                        if _may_overlap(self._schema, d.data_file, data_file)]
        return out

    def explain_for(self, data_file: DataFile, sequence_number: int, spec_id: int
                    ) -> list[DeleteMatch]:
        """Every delete file that could be considered for a data file, and the verdict."""
        out: list[DeleteMatch] = []
        key = (spec_id, tuple(data_file.partition))
        path = data_file.file_path
        _explain_position(out, self._pos.get(key), "same partition", path, sequence_number)
        _explain_position(out, _Bucket.of(self._pos_by_path.get(path)), "names this data file",
                          None, sequence_number)
        for b, scope in ((self._eq.get(key), "same partition"), (self._global_eq, "global")):
            for d in (b.files if b else []):
                if d.sequence_number <= sequence_number:
                    out.append(_match(d, False, f"{scope}, delete sequence number "
                                      f"{d.sequence_number} <= data sequence number "
                                      f"{sequence_number}"))
                elif not _may_overlap(self._schema, d.data_file, data_file):
                    out.append(_match(d, False, f"{scope}, equality column bounds do not "
                                      f"overlap the data file's"))
                else:
                    out.append(_match(d, True, f"{scope}, delete sequence number "
                                      f"{d.sequence_number} > {sequence_number}"))
        return out


def _explain_position(out: list[DeleteMatch], bucket: _Bucket | None, scope: str,
                      path: str | None, sequence_number: int) -> None:
    """The verdict on each position delete file of ``bucket`` for the data file ``path``
    (None: deletes that name the file, whose bounds are not compared, as in
    :meth:`DeleteFileIndex.for_data_file`)."""
    for d in (bucket.files if bucket else []):
        if d.sequence_number < sequence_number:
            out.append(_match(d, False, _reason(
                "delete sequence number {} < data sequence number {}", d.sequence_number,
                sequence_number)))
        elif path is not None and not _path_in_bounds(d.data_file, path):
            out.append(_match(d, False, "data file path outside the delete file's "
                              "file_path bounds"))
        else:
            out.append(_match(d, True, _reason(
                scope + ", delete sequence number {} >= {}", d.sequence_number,
                sequence_number)))


@functools.lru_cache(maxsize=4096)
def _reason(template: str, delete_seq: int, data_seq: int) -> str:
    """A verdict text (a plan writes the same few many times)."""
    return template.format(delete_seq, data_seq)


def _match(d: DeleteFile, applied: bool, reason: str) -> DeleteMatch:
    df = d.data_file
    return DeleteMatch(df.file_path, file_content_name(df.content), d.sequence_number,
                       applied, reason)


def referenced_data_file(delete: DataFile) -> str | None:
    """The one data file a position delete file (or deletion vector) applies to, or None
    when it may apply to several, and for equality deletes (Java's
    ``ContentFileUtil.referencedDataFile``): its ``referenced_data_file``, or the path its
    ``file_path`` bounds both name (what Java writes for file-scoped deletes on v2 tables,
    ``write.delete.granularity=file``)."""
    if delete.content != FileContent.POSITION_DELETES:
        return None
    if delete.referenced_data_file is not None:
        return delete.referenced_data_file
    lower = (delete.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is None or lower != (delete.upper_bounds or {}).get(FILE_PATH_FIELD_ID):
        return None
    try:
        return bytes(lower).decode()
    except UnicodeDecodeError:  # not a path: kept with its partition, where bounds compare
        return None


def _path_in_bounds(delete: DataFile, path: str) -> bool:
    """Whether a position delete file's ``file_path`` bounds admit ``path``."""
    lower = (delete.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    upper = (delete.upper_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is None or upper is None:
        return True
    encoded = path.encode()
    # bounds may be truncated: the lower one is a prefix-or-less, the upper one is greater
    return lower <= encoded and (encoded <= upper or encoded.startswith(upper))


def _may_overlap(schema: Schema, delete: DataFile, data: DataFile) -> bool:
    """Java's ``canContainEqDeletesForFile``: whether an equality delete may match any row."""
    for fid in delete.equality_ids or ():
        try:
            t = schema.find_type(fid)
        except ValidationError:
            continue
        if not isinstance(t, PrimitiveType):
            continue
        if not _column_may_overlap(t, fid, delete, data):
            return False
    return True


def _column_may_overlap(t: PrimitiveType, fid: int, delete: DataFile, data: DataFile) -> bool:
    data_nulls = _get(data.null_value_counts, fid)
    data_values = _get(data.value_counts, fid)
    delete_nulls = _get(delete.null_value_counts, fid)
    delete_values = _get(delete.value_counts, fid)
    data_all_null = data_nulls is not None and data_values is not None and \
        data_nulls == data_values
    delete_all_null = delete_nulls is not None and delete_values is not None and \
        delete_nulls == delete_values
    data_has_null = data_nulls is None or data_nulls > 0
    delete_has_null = delete_nulls is None or delete_nulls > 0
    if data_all_null and delete_all_null:
        return True
    if data_all_null:
        return delete_has_null
    if delete_all_null:
        return data_has_null
    if data_has_null and delete_has_null:
        return True  # a null key may match a null value
    bounds = (_bound(t, data.lower_bounds, fid), _bound(t, data.upper_bounds, fid),
              _bound(t, delete.lower_bounds, fid), _bound(t, delete.upper_bounds, fid))
    if any(b is None for b in bounds) or not _comparable(t):
        return True
    data_lo, data_hi, del_lo, del_hi = bounds
    try:
        return not (del_hi < data_lo or data_hi < del_lo)
    except TypeError:
        return True


def _comparable(t: PrimitiveType) -> bool:
    # floats may hold NaN (bounds exclude it), strings/binary bounds may be truncated
    # (still a valid range), uuids compare like Java only by bytes: keep it simple
    name = type(t).__name__
    return name not in ("FloatType", "DoubleType", "UUIDType")


def _get(m: Any, fid: int) -> int | None:
    if m is None:
        return None
    v = m.get(fid)
    return None if v is None else int(v)


def _bound(t: PrimitiveType, bounds: Any, fid: int) -> Any:
    raw = None if bounds is None else bounds.get(fid)
    if raw is None:
        return None
    try:
        return from_bytes(t, raw)
    except (ValidationError, ValueError):
        return None
