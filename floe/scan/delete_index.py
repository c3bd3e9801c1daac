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
from typing import TYPE_CHECKING, Any, cast

from floe.conversions import from_bytes
from floe.errors import ValidationError
from floe.manifest import DataFile, FileContent, ManifestEntry, file_content_name
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField, PrimitiveType, StringType

if TYPE_CHECKING:
    from floe.scan.manifest_store import StoredEntries

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


#: A delete file indexed by its row (:meth:`DeleteFileIndex.add_rows`) and built when a plan
#: looks it up: the number of its delete manifest in the index (bits 32 and up) and its row.
_Row = int
_ROW_BITS = 32
_ROW_MASK = (1 << _ROW_BITS) - 1


@dataclass(slots=True)
class _Bucket:
    """Deletes of one scope, sorted by sequence number (those indexed by row as rows)."""

    seqs: list[int] = field(default_factory=list)
    #: Delete files (rows only among the deletes that name a data file)
    files: list[Any] = field(default_factory=list)

    def add(self, f: DeleteFile | _Row, seq: int) -> None:
        i = bisect_right(self.seqs, seq)
        self.seqs.insert(i, seq)
        self.files.insert(i, f)

    def at_or_after(self, seq: int) -> list[Any]:
        return self.files[bisect_left(self.seqs, seq):]

    def after(self, seq: int) -> list[Any]:
        return self.files[bisect_right(self.seqs, seq):]


class DeleteFileIndex:
    """Delete files of a snapshot, indexed for :meth:`for_data_file`.

    ``schema`` types the bounds used to prune equality deletes; ``unpartitioned_specs`` is
    the set of spec ids whose spec has no fields (their equality deletes are global).
    """

    def __init__(self, schema: Schema, unpartitioned_specs: Iterable[int]) -> None:
        self._schema = schema
        self._unpartitioned = frozenset(unpartitioned_specs)
        self._pos: dict[tuple[int, tuple[Any, ...]], _Bucket] = {}
        #: Position deletes that name their data file, by its path: the one delete file (the
        #: common case: a bucket of one costs three objects per delete file) or its row, or a
        #: bucket of several
        self._pos_by_path: dict[str, DeleteFile | _Row | _Bucket] = {}
        #: The delete manifests of the rows (:meth:`add_rows`): entries, spec id, and the
        #: data sequence number of each row
        self._sources: list[tuple[StoredEntries, int, list[int]]] = []
        #: Columns of those delete manifests read so far, by (manifest number, name)
        self._columns: dict[tuple[int, str], list[Any]] = {}
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
                self._name(target, f, seq)
            else:
                self._pos.setdefault((spec_id, tuple(df.partition)), _Bucket()).add(f, seq)
        elif df.content == FileContent.EQUALITY_DELETES:
            if spec_id in self._unpartitioned:
                self._global_eq.add(f, seq)
            else:
                self._eq.setdefault((spec_id, tuple(df.partition)), _Bucket()).add(f, seq)
        else:
            raise ValidationError(f"{df.file_path} is a data file in a delete manifest")
        self._count += 1

    def add_rows(self, entries: StoredEntries, spec_id: int, targets: Sequence[str | None],
                 kept: Sequence[bool] | None = None) -> list[int]:
        """Index the position deletes of a delete manifest of spec ``spec_id`` that name their
        data file (``targets``: the :func:`referenced_data_file` of each entry, read from
        the columns) by their row: a delete file is built when a plan looks up the file it
        names (a plan that keeps a few files builds a few). ``kept`` says which entries to
        index (None: all). The rows of the other kept entries are returned, for :meth:`add`."""
        seqs = entries.data_file_column("sequence_number")
        base = len(self._sources) << _ROW_BITS
        self._sources.append((entries, spec_id, seqs))
        rest: list[int] = []
        for row, (target, seq) in enumerate(zip(targets, seqs, strict=True)):
            if kept is not None and not kept[row]:
                continue
            if target is None:
                rest.append(row)
                continue
            if seq is None:
                raise ValidationError(f"delete file {entries.data_file_column('file_path')[row]}"
                                      " has no data sequence number")
            self._name(target, base | row, seq)
            self._count += 1
        return rest

    def _name(self, target: str, f: DeleteFile | _Row, seq: int) -> None:
        by_path = self._pos_by_path
        named = by_path.get(target)
        if named is None:
            by_path[target] = f
            return
        if not isinstance(named, _Bucket):
            named = by_path[target] = _Bucket([self.seq_of(named)], [named])
        named.add(f, seq)

    def seq_of(self, f: DeleteFile | _Row) -> int:
        """The data sequence number of a delete file or row."""
        if isinstance(f, DeleteFile):
            return f.sequence_number
        return self._sources[f >> _ROW_BITS][2][f & _ROW_MASK]

    def _column(self, f: _Row, name: str) -> Any:
        key = (f >> _ROW_BITS, name)
        got = self._columns.get(key)
        if got is None:
            got = self._columns[key] = self._sources[key[0]][0].data_file_column(name)
        return got[f & _ROW_MASK]

    def path_of(self, f: DeleteFile | _Row) -> str:
        """The path of a delete file or row."""
        return f.path if isinstance(f, DeleteFile) else self._column(f, "file_path")

    def key_of(self, f: DeleteFile | _Row) -> tuple[str, int | None]:
        """What a plan counts a delete file by: its path and ``content_offset`` (a deletion
        vector is one blob of a Puffin file that may hold many)."""
        if isinstance(f, DeleteFile):
            return f.path, f.data_file.content_offset
        return self._column(f, "file_path"), self._column(f, "content_offset")

    def build(self, files: Sequence[DeleteFile | _Row]) -> list[DeleteFile]:
        """``files`` with the rows among them built: the rows of each delete manifest read
        together."""
        rows: dict[int, list[int]] = {}
        for f in files:
            if not isinstance(f, DeleteFile):
                rows.setdefault(f >> _ROW_BITS, []).append(f & _ROW_MASK)
        if not rows:
            return cast("list[DeleteFile]", list(files))
        built: dict[int, DeleteFile] = {}
        for source, got in rows.items():
            entries, spec_id, seqs = self._sources[source]
            base = source << _ROW_BITS
            for row, e in zip(got, entries.take(got), strict=True):
                built[base | row] = DeleteFile(e.data_file, seqs[row], spec_id)
        return [f if isinstance(f, DeleteFile) else built[f] for f in files]

    def _naming(self, path: str) -> list[DeleteFile | _Row]:
        """The delete files or rows naming ``path``, by sequence number."""
        got = self._pos_by_path.get(path)
        if got is None:
            return []
        return got.files if isinstance(got, _Bucket) else [got]

    def _named_kept(self, path: str) -> list[DeleteFile]:
        """The delete files naming ``path``, by sequence number, built and kept."""
        self.keep_named((path,))
        return cast("list[DeleteFile]", self._naming(path))

    def keep_named(self, paths: Iterable[str]) -> None:
        """Build the delete files that name any of ``paths`` together, and keep them (what a
        plan about to look up each of those data files does first)."""
        by_path = self._pos_by_path
        if not self._sources or not by_path:
            return
        wanted = [(p, got) for p in paths for got in [self._naming(p)]
                  if any(not isinstance(f, DeleteFile) for f in got)]
        built = iter(self.build([f for _, got in wanted for f in got]))
        for p, got in wanted:
            files = [next(built) for _ in got]
            value = by_path[p]
            if isinstance(value, _Bucket):
                value.files = files
            else:
                by_path[p] = files[0]

    @property
    def by_path_only(self) -> bool:
        """Whether every delete file indexed names its one data file (:func:`referenced_data_file`):
        a data file's deletes then depend on its path and sequence number alone
        (:meth:`path_rows`, :meth:`naming`), not on its partition or statistics."""
        return not (self._pos or self._eq or self._global_eq.files)

    def path_rows(self, paths: Sequence[str]) -> list[int]:
        """The positions in ``paths`` of the data files some delete file names."""
        by_path = self._pos_by_path
        return [i for i, p in enumerate(paths) if p in by_path] if by_path else []

    def naming(self, path: str, sequence_number: int) -> list[DeleteFile | _Row]:
        """The delete files naming the data file ``path`` that apply to it, as delete files or
        rows, not built (:meth:`build` builds them): what a plan that keeps whole manifests
        needs when :attr:`by_path_only`."""
        return [f for f in self._naming(path) if self.seq_of(f) >= sequence_number]

    def for_path(self, path: str, sequence_number: int) -> list[DeleteFile]:
        """:meth:`naming`, built: what :meth:`for_data_file` gives when
        :attr:`by_path_only`."""
        return self.build(self.naming(path, sequence_number))

    def explain_path(self, path: str, sequence_number: int) -> list[DeleteMatch]:
        """:meth:`explain_for` of the data file ``path`` when :attr:`by_path_only`, read
        without building the delete files."""
        return self._explain_naming(self._naming(path), sequence_number)

    def _explain_naming(self, files: Sequence[DeleteFile | _Row], sequence_number: int
                        ) -> list[DeleteMatch]:
        """The verdict on each delete file or row naming a data file (whose bounds are not
        compared, as in :meth:`for_data_file`)."""
        out: list[DeleteMatch] = []
        for f in files:  # position deletes, the only ones that name a file
            seq = self.seq_of(f)
            if seq < sequence_number:
                out.append(DeleteMatch(self.path_of(f), _POSITION, seq, False, _reason(
                    "delete sequence number {} < data sequence number {}", seq,
                    sequence_number)))
            else:
                out.append(DeleteMatch(self.path_of(f), _POSITION, seq, True, _reason(
                    "names this data file, delete sequence number {} >= {}", seq,
                    sequence_number)))
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
        out += [d for d in self._named_kept(data_file.file_path)
                if d.sequence_number >= sequence_number]
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
        bucket = self._pos.get(key)
        _explain_position(out, bucket.files if bucket else [], path, sequence_number)
        out += self._explain_naming(self._naming(path), sequence_number)
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


_POSITION = file_content_name(FileContent.POSITION_DELETES)


def _explain_position(out: list[DeleteMatch], files: Sequence[DeleteFile], path: str,
                      sequence_number: int) -> None:
    """The verdict on each position delete file of a partition (``files``) for the data file
    ``path``."""
    for d in files:
        if d.sequence_number < sequence_number:
            out.append(_match(d, False, _reason(
                "delete sequence number {} < data sequence number {}", d.sequence_number,
                sequence_number)))
        elif not _path_in_bounds(d.data_file, path):
            out.append(_match(d, False, "data file path outside the delete file's "
                              "file_path bounds"))
        else:
            out.append(_match(d, True, _reason(
                "same partition, delete sequence number {} >= {}", d.sequence_number,
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
