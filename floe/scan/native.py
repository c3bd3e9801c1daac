"""The live entries of a manifest decoded by the C extension :mod:`floe._native` straight
into the table the persistent cache stores (:meth:`ManifestStore._table
<floe.scan.manifest_store.ManifestStore._table>`), about twenty times faster than the
Python decoder (:mod:`floe.avro`, :mod:`floe.manifest`), which stays the reference.

:mod:`floe.avro_native` compiles the manifest's writer schema into the program the
extension runs (the fields the cache keeps are captured into columns, every other field is
skipped). The inheritance rules of :func:`floe.manifest.read_manifest` (snapshot ids,
sequence numbers, first row ids) and the dropping of DELETED entries are applied here,
column-wise.

Anything this path does not reproduce exactly is declined (:func:`decode_live_table` returns
None) and the caller decodes in Python: partition values of types whose Python value is not
a plain int, str, bytes, bool or float (decimal, uuid, fixed, millisecond times), a union
with more than one non-null branch, a field of an unexpected type, a value beyond 64 bits or
out of its column's range, an unknown status or content. Invalid bytes raise
:class:`~floe.errors.MetadataError` as :func:`floe.avro.read_avro` does.

``FLOE_NATIVE=0`` turns this path off; without the compiled extension it is off silently.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING

from floe.avro_native import (
    K_BINARY,
    K_BOOL,
    K_DOUBLE,
    K_INT64,
    _decode,
    _Declined,
    _Program,
    available,
    extension,
)
from floe.manifest import FileFormat, ManifestFile
from floe.scan.manifest_store import columns, table_of

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["available", "decode_live_table", "extension"]

_LOWER_FORMATS = {f.value.lower() for f in FileFormat}


def _arrays(program: _Program, raw: list[tuple[int, int, bytes, bytes, bytes, bytes]]
            ) -> dict[str, pa.Array]:
    """The decoded columns as Arrow arrays (int64, double, bool, binary / string,
    list<int64>)."""
    import pyarrow as pa

    out: dict[str, pa.Array] = {}
    string_columns = {"file_path", "file_format", "referenced_data_file"} | {
        f"p{k}" for k, t in enumerate(program.partitions) if t == "string"}
    for name, kind, (length, nulls, validity, values, offsets, data) in zip(
            program.names, program.kinds, raw, strict=True):
        valid = pa.py_buffer(validity) if nulls else None
        if kind == K_INT64:
            arr = pa.Array.from_buffers(pa.int64(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_DOUBLE:
            arr = pa.Array.from_buffers(pa.float64(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_BOOL:
            arr = pa.Array.from_buffers(pa.bool_(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_BINARY:
            type_ = pa.string() if name in string_columns else pa.binary()
            arr = pa.Array.from_buffers(type_, length, [valid, pa.py_buffer(offsets),
                                                        pa.py_buffer(data)], nulls)
        else:
            child = pa.Array.from_buffers(pa.int64(), len(data) // 8,
                                          [None, pa.py_buffer(data)], 0)
            arr = pa.Array.from_buffers(pa.list_(pa.int64()), length,
                                        [valid, pa.py_buffer(offsets)], nulls,
                                        children=[child])
        out[name] = arr
    return out


def decode_live_table(data: bytes, manifest: ManifestFile) -> pa.Table | None:
    """The live entries of the manifest whose bytes are ``data``, as the table
    :meth:`ManifestStore._table <floe.scan.manifest_store.ManifestStore._table>` builds from
    what :func:`~floe.manifest.read_manifest` reads with ``discard_deleted``; None when
    declined (then decode in Python); :class:`~floe.errors.MetadataError` for invalid bytes."""
    decoded = _decode(data, manifest.manifest_path, "entry")
    if decoded is None:
        return None
    program, raw = decoded
    try:
        return _live_table(program, _arrays(program, raw), manifest)
    except _Declined:
        return None


def _live_table(program: _Program, arrays: dict[str, pa.Array], manifest: ManifestFile
                ) -> pa.Table:
    """The stored table from the decoded columns: DELETED entries dropped, values inherited
    from the manifest (floe.manifest._entries), columns typed as the store types them."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    status = arrays["status"]
    if len(status) and (pc.min(status).as_py() < 0 or pc.max(status).as_py() > 2):
        raise _Declined("an unknown status")  # the Python decoder says which
    live = pc.not_equal(status, 2)
    if pc.sum(live).as_py() != len(status):
        arrays = {name: pc.filter(arr, live) for name, arr in arrays.items()}
        status = arrays["status"]
    n = len(status)
    types = dict(columns())

    def get(name: str) -> pa.Array:
        return arrays[name] if name in arrays else pa.nulls(n, types[name])

    def cast(arr: pa.Array, type_: pa.DataType) -> pa.Array:
        try:
            return pc.cast(arr, type_)  # safe: out of range raises
        except (pa.ArrowInvalid, OverflowError):
            raise _Declined(f"values out of {type_}") from None

    def scalar(value: int) -> pa.Scalar:
        try:
            return pa.scalar(value, pa.int64())
        except (pa.ArrowInvalid, OverflowError):
            raise _Declined("a value out of int64") from None

    content = arrays.get("content")
    if content is None:
        content = pa.repeat(pa.scalar(0, pa.int64()), n)
    elif n and (pc.min(content).as_py() < 0 or pc.max(content).as_py() > 2):
        raise _Declined("an unknown content")
    sid, seq, fseq = get("snapshot_id"), get("sequence_number"), get("file_sequence_number")
    if manifest.added_snapshot_id is not None:  # "Snapshot ID Inheritance" and "Sequence..."
        sid = pc.fill_null(sid, scalar(manifest.added_snapshot_id))
        m_seq = scalar(manifest.sequence_number)
        if manifest.sequence_number == 0:
            seq, fseq = pc.fill_null(seq, m_seq), pc.fill_null(fseq, m_seq)
        else:
            added = pc.equal(status, 1)
            seq = pc.if_else(pc.and_(pc.is_null(seq), added), m_seq, seq)
            fseq = pc.if_else(pc.and_(pc.is_null(fseq), added), m_seq, fseq)
    fmt = arrays["file_format"]
    lower = pc.is_in(fmt, value_set=pa.array(sorted(_LOWER_FORMATS), pa.string()))
    if pc.any(lower).as_py():  # "parquet" read as FileFormat.PARQUET
        fmt = pc.if_else(lower, pc.utf8_upper(fmt), fmt)
    first_row_id = get("first_row_id")
    if manifest.first_row_id is not None:
        first_row_id = _first_row_ids(manifest.first_row_id, content, first_row_id,
                                      get("record_count"))
    try:
        spec_id = pa.repeat(pa.scalar(manifest.partition_spec_id, pa.int32()), n)
    except (pa.ArrowInvalid, OverflowError):
        raise _Declined("a spec id out of int32") from None
    n_parts = len(program.partitions) if n else 0
    out: dict[str, pa.Array] = {}
    for name, type_ in columns():
        if name == "partition":
            for k in range(n_parts):
                arr = arrays[f"p{k}"]
                out[f"p{k}"] = pa.nulls(n) if arr.null_count == n else arr  # as pa.array
            continue
        arr = {"status": status, "snapshot_id": sid, "sequence_number": seq,
               "file_sequence_number": fseq, "content": content, "file_format": fmt,
               "first_row_id": first_row_id, "spec_id": spec_id}.get(name)
        if arr is None:
            arr = get(name)
        out[name] = arr if arr.type == type_ else cast(arr, type_)
    return table_of(manifest, out, n_parts)


def _first_row_ids(first: int, content: pa.Array, ids: pa.Array, record_count: pa.Array
                   ) -> pa.Array:
    """"First Row ID Inheritance" as floe.manifest._entries assigns it: data files without
    one get the next ids, in order (v3 manifests only: Python ints, no overflow)."""
    import pyarrow as pa

    values = ids.to_pylist()
    contents = content.to_pylist()
    counts = record_count.to_pylist()
    need = [i for i, v in enumerate(values) if v is None and contents[i] == 0]
    if any(counts[i] is None for i in need):
        raise _Declined("a data file without a record count")
    for i, start in zip(need, accumulate((counts[i] for i in need), initial=first),
                        strict=False):
        values[i] = start
    try:
        return pa.array(values, pa.int64())
    except (pa.ArrowInvalid, OverflowError):
        raise _Declined("row ids out of int64") from None
