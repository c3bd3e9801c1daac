"""File scan tasks as JSON: the REST catalog's ``ScanTasks`` (``file-scan-tasks``,
``delete-files``) of server-side scan planning (rest-catalog-open-api.yaml ``FileScanTask``,
``ContentFile``, ``DataFile``, ``DeleteFile``), written by floe's served planning and read by
floe's REST client.

A file is the JSON Java's ``ContentFileParser`` writes and reads: ``content`` (``data``,
``position-deletes``, ``equality-deletes``) and ``file-format`` in lower case, ``partition`` an
array of JSON single values in the order of the file's spec, the count maps and bounds as
``{"keys": [field ids], "values": [...]}`` with each bound's Appendix D bytes as upper-case
hex. A task names its delete files by their index in the same answer's ``delete-files`` and
carries its residual as expression JSON (``true``: nothing left to test). The spec's files
have no sequence numbers: the server matched the deletes to each data file already, so the
tasks read back carry 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from floe.conversions import from_json_value, to_json_value
from floe.errors import ValidationError
from floe.expressions.base import AlwaysTrue, bind
from floe.expressions.json import expression_from_json, expression_to_json
from floe.metadata import partition_type_for
from floe.manifest import DataFile, FileContent, FileFormat
from floe.metadata import TableMetadata
from floe.scan.delete_index import DeleteFile
from floe.scan.planning import FileScanTask
from floe.schema import Schema
from floe.types import PrimitiveType, StructType

__all__ = ["content_file_from_json", "content_file_json", "file_scan_task_json",
           "scan_tasks_from_json", "scan_tasks_json"]


def scan_tasks_json(md: TableMetadata, tasks: Sequence[FileScanTask],
                    stats: set[int] | None = None) -> dict[str, Any]:
    """The spec's ``ScanTasks`` of ``tasks``: each delete file once in ``delete-files``.
    ``stats``: the field ids whose column stats are sent (None: all)."""
    deletes: list[DeleteFile] = []
    index: dict[tuple[str, int | None], int] = {}
    types: dict[int, StructType] = {}
    out_tasks = []
    for t in tasks:
        refs = []
        for d in t.delete_files:
            key = (d.path, d.data_file.content_offset)
            if key not in index:
                index[key] = len(deletes)
                deletes.append(d)
            refs.append(index[key])
        out_tasks.append(file_scan_task_json(md, t, refs, stats, types))
    return {"delete-files": [content_file_json(md, d.data_file, d.spec_id, stats, types)
                             for d in deletes],
            "file-scan-tasks": out_tasks}


def file_scan_task_json(md: TableMetadata, task: FileScanTask, refs: Sequence[int],
                        stats: set[int] | None = None,
                        types: dict[int, StructType] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "data-file": content_file_json(md, task.data_file, task.spec_id, stats, types)}
    if refs:
        out["delete-file-references"] = list(refs)
    # floe's None residual is "nothing left to test": true (an absent one would make the
    # client test the whole filter again)
    out["residual-filter"] = expression_to_json(task.residual)
    return out


_CONTENT = {FileContent.DATA: "data", FileContent.POSITION_DELETES: "position-deletes",
            FileContent.EQUALITY_DELETES: "equality-deletes"}


def content_file_json(md: TableMetadata, df: DataFile, spec_id: int,
                      stats: set[int] | None = None,
                      types: dict[int, StructType] | None = None) -> dict[str, Any]:
    """A data or delete file as the spec's ``ContentFile`` JSON (Java's
    ``ContentFileParser``). ``stats``: the field ids whose column stats are sent (None:
    all); ``types`` caches partition types by spec id."""
    types = {} if types is None else types
    ptype = types.get(spec_id)
    if ptype is None:
        spec = md.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"file {df.file_path} names partition spec {spec_id}, which "
                                  "the table does not have")
        ptype = types[spec_id] = partition_type_for(md, spec)
    partition = []
    for f, v in zip(ptype.fields, df.partition, strict=False):
        t = f.field_type
        partition.append(None if v is None or not isinstance(t, PrimitiveType)
                         else to_json_value(t, v))
    out: dict[str, Any] = {
        "spec-id": spec_id,
        "content": _CONTENT[FileContent(df.content)],
        "file-path": df.file_path,
        "file-format": str(df.file_format).lower(),
        "partition": partition,
        "file-size-in-bytes": df.file_size_in_bytes,
        "record-count": df.record_count,
    }
    for key, counts in (("column-sizes", df.column_sizes), ("value-counts", df.value_counts),
                        ("null-value-counts", df.null_value_counts),
                        ("nan-value-counts", df.nan_value_counts)):
        if counts is not None:
            out[key] = _count_map(counts, stats)
    for key, bounds in (("lower-bounds", df.lower_bounds), ("upper-bounds", df.upper_bounds)):
        if bounds is not None:
            out[key] = _bounds_map(bounds, stats)
    if df.key_metadata is not None:
        out["key-metadata"] = df.key_metadata.hex().upper()
    if df.split_offsets is not None:
        out["split-offsets"] = list(df.split_offsets)
    if df.equality_ids is not None and df.content == FileContent.EQUALITY_DELETES:
        out["equality-ids"] = list(df.equality_ids)
    if df.sort_order_id is not None:
        out["sort-order-id"] = df.sort_order_id
    if df.first_row_id is not None and df.content == FileContent.DATA:
        out["first-row-id"] = df.first_row_id
    if df.content != FileContent.DATA:
        if df.referenced_data_file is not None:
            out["referenced-data-file"] = df.referenced_data_file
        if df.content_offset is not None:
            out["content-offset"] = df.content_offset
        if df.content_size_in_bytes is not None:
            out["content-size-in-bytes"] = df.content_size_in_bytes
    return out


def _count_map(counts: Mapping[int, int], stats: set[int] | None) -> dict[str, list[int]]:
    keys = sorted(k for k in counts if stats is None or k in stats)
    return {"keys": keys, "values": [counts[k] for k in keys]}


def _bounds_map(bounds: Mapping[int, bytes], stats: set[int] | None) -> dict[str, list[Any]]:
    keys = sorted(k for k in bounds if stats is None or k in stats)
    return {"keys": keys, "values": [bytes(bounds[k]).hex().upper() for k in keys]}


# -- reading ----------------------------------------------------------------------------------

_CONTENT_OF = {name: content for content, name in _CONTENT.items()}
_CONTENT_OF.update({c.name: c for c in FileContent})  # Java 1.10 wrote the enum names


def content_file_from_json(md: TableMetadata, doc: Any,
                           types: dict[int, StructType] | None = None) -> DataFile:
    """A ``ContentFile`` JSON object read back (ValidationError naming what is wrong)."""
    if not isinstance(doc, dict):
        raise ValidationError(f"a content file must be an object, not {type(doc).__name__}")
    try:
        spec_id = doc["spec-id"]
        content = _CONTENT_OF[doc["content"]]
        spec = md.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"content file {doc.get('file-path')!r} names partition "
                                  f"spec {spec_id}, which the table does not have")
        types = {} if types is None else types
        ptype = types.get(spec_id)
        if ptype is None:
            ptype = types[spec_id] = partition_type_for(md, spec)
        raw = doc.get("partition") or []
        partition = tuple(
            None if v is None or not isinstance(f.field_type, PrimitiveType)
            else from_json_value(f.field_type, v) for f, v in zip(ptype.fields, raw,
                                                                   strict=True))
        fmt = str(doc["file-format"]).upper()
        return DataFile(
            content=content, file_path=doc["file-path"],
            file_format=FileFormat(fmt) if fmt in FileFormat.__members__ else fmt,
            partition=partition, record_count=doc["record-count"],
            file_size_in_bytes=doc["file-size-in-bytes"],
            column_sizes=_counts(doc.get("column-sizes")),
            value_counts=_counts(doc.get("value-counts")),
            null_value_counts=_counts(doc.get("null-value-counts")),
            nan_value_counts=_counts(doc.get("nan-value-counts")),
            lower_bounds=_bounds(doc.get("lower-bounds")),
            upper_bounds=_bounds(doc.get("upper-bounds")),
            key_metadata=bytes.fromhex(doc["key-metadata"]) if doc.get("key-metadata")
            else None,
            split_offsets=doc.get("split-offsets"), equality_ids=doc.get("equality-ids"),
            sort_order_id=doc.get("sort-order-id"), spec_id=spec_id,
            first_row_id=doc.get("first-row-id"),
            referenced_data_file=doc.get("referenced-data-file"),
            content_offset=doc.get("content-offset"),
            content_size_in_bytes=doc.get("content-size-in-bytes"))
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, ValidationError):
            raise
        raise ValidationError(f"content file {str(doc.get('file-path'))[:200]!r} is not the "
                              f"spec's JSON ({type(e).__name__}: {e})") from None


def _counts(doc: Any) -> dict[int, int] | None:
    if doc is None:
        return None
    return dict(zip(doc["keys"], doc["values"], strict=True))


def _bounds(doc: Any) -> dict[int, bytes] | None:
    if doc is None:
        return None
    return {k: bytes.fromhex(v) for k, v in zip(doc["keys"], doc["values"], strict=True)}


def scan_tasks_from_json(md: TableMetadata, doc: Mapping[str, Any], schema: Schema,
                         case_sensitive: bool = True) -> list[FileScanTask]:
    """The file scan tasks of a ``ScanTasks`` answer, residuals bound to ``schema``."""
    types: dict[int, StructType] = {}
    deletes = []
    for d in doc.get("delete-files") or []:
        df = content_file_from_json(md, d, types)
        deletes.append(DeleteFile(df, 0, df.spec_id))
    out = []
    for t in doc.get("file-scan-tasks") or []:
        if not isinstance(t, dict):
            raise ValidationError("a file scan task must be an object")
        df = content_file_from_json(md, t.get("data-file"), types)
        try:
            refs = tuple(deletes[i] for i in t.get("delete-file-references") or [])
        except (IndexError, TypeError):
            raise ValidationError(f"file scan task of {df.file_path!r} references a delete "
                                  "file the answer does not have") from None
        residual = None
        if "residual-filter" in t:
            expr = expression_from_json(t["residual-filter"], schema)
            bound = bind(schema, expr, case_sensitive)
            residual = None if isinstance(bound, AlwaysTrue) else bound
        out.append(FileScanTask(df, refs, residual, df.spec_id, 0))
    return out
