"""libFuzzer (through atheris) on the C extension floe/_native.c, built with clang's
coverage instrumentation and AddressSanitizer by scripts/fuzz-native.sh, which runs this.

Each input is one of (its first byte chooses):

- the records of a manifest block, decoded by the program of a real manifest's writer schema
  (v2, ``day(ts), bucket(16, id)``, statistics maps, split offsets);
- the records of a manifest-list block with the program of a v2 manifest list's schema,
  and then the whole list decoded both ways: the extension must refuse it
  (MetadataError), decline it, or answer exactly what the Python decoder answers;
- a statistics map column read by ``map_get`` (int or bytes values), and the same bytes
  decoded whole by ``decode_map``, which must refuse them or answer exactly what the Python
  decoder answers;
- a byte string scanned by ``json_escapes``, checked against a plain Python scan.

The seeds are the real blocks; libFuzzer mutates them. A crash, a sanitizer report, an
exception other than the extension's own refusals, or a differing answer stops the run
with the input that caused it.

Usage (what fuzz-native.sh does): ``python scripts/fuzz_native.py EXTENSION.so
[libFuzzer flags] CORPUS_DIR``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

import atheris  # type: ignore[import-not-found]

# the instrumented extension is floe._native for this process
_spec = importlib.util.spec_from_file_location("floe._native", sys.argv.pop(1))
assert _spec is not None and _spec.loader is not None
_ext = importlib.util.module_from_spec(_spec)
sys.modules["floe._native"] = _ext
_spec.loader.exec_module(_ext)

from floe import avro_native  # noqa: E402
from floe.avro import (  # noqa: E402
    _decode_bytes_map,
    _decode_int_map,
    container_blocks,
    encode_long,
    read_header,
    read_long,
)
from floe.errors import MetadataError  # noqa: E402

assert avro_native.extension() is _ext

REFUSED = (_ext.Truncated, _ext.Corrupt, _ext.Unsupported)


def _seeds() -> tuple[dict[str, object], list[bytes]]:
    """The programs and the seed inputs (one per target)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    from manifest_read import write  # a manifest with statistics for 10 columns

    from floe.io import FileIO
    from floe.manifest import ManifestContent, ManifestFile, ManifestListWriter, \
        PartitionFieldSummary

    with tempfile.TemporaryDirectory() as tmp:
        write(f"{tmp}/m.avro", 40)
        with open(f"{tmp}/m.avro", "rb") as f:
            manifest = f.read()
        with ManifestListWriter(FileIO(), f"{tmp}/l.avro", 2, 1, None,
                                sequence_number=1, codec="null") as w:
            w.add_manifests(ManifestFile(
                f"s3://b/m{k}.avro", 100 + k, 0, ManifestContent(k % 2), 1, 1, 1, k, 0, 0,
                10 * k, 0, 0,
                [PartitionFieldSummary(False, k % 3 == 0, b"\1\0\0\0", None)] * (k % 3),
                b"key" if k == 1 else None) for k in range(6))
        with open(f"{tmp}/l.avro", "rb") as f:
            listing = f.read()
    meta, blocks_ = container_blocks(manifest)
    blocks = list(blocks_)
    entry = avro_native._program(meta["avro.schema"].decode(), "entry")
    list_meta, list_blocks_ = container_blocks(listing)
    list_blocks = list(list_blocks_)
    manifest_list = avro_native._program(list_meta["avro.schema"].decode(), "manifest_list")
    assert entry is not None and manifest_list is not None
    count, block, _ = blocks[0]
    list_count, list_block, _ = list_blocks[0]
    _, sync, pos = read_header(listing)
    n, p = read_long(listing, pos)
    size, p = read_long(listing, p)
    raw = _ext.decode(entry.code, entry.kind_codes, [(count, bytes(block))])
    names = entry.names
    stats_map = raw[names.index("value_counts")]
    bounds_map = raw[names.index("lower_bounds")]
    programs = {"entry": entry, "list": manifest_list, "list_header": listing[:pos],
                "sync": sync}
    seeds = [
        b"\0" + bytes([min(count, 255)]) + bytes(block),
        b"\1" + bytes([list_count]) + bytes(list_block),
        b"\2" + stats_map[5],
        b"\3" + bounds_map[5],
        b"\4" + b'a "quoted" \\ path/\x01with control',
    ]
    assert (n, size) == (list_count, len(list_block))
    return programs, seeds


PROGRAMS, SEEDS = _seeds()


def _python_list(data: bytes) -> str:
    from floe.avro import read_avro
    from floe.manifest import _manifest_files

    return repr(_manifest_files(read_avro(data, "l"), "l"))


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    target, rest = data[0] % 5, data[1:]
    if target in (0, 1):
        program = PROGRAMS["entry" if target == 0 else "list"]
        count, block = rest[0], rest[1:]
        try:
            _ext.decode(program.code, program.kind_codes, [(count, block)])  # type: ignore[attr-defined]
        except REFUSED:
            pass
        if target == 1:  # the whole list, both ways
            listing = b"".join([PROGRAMS["list_header"], encode_long(count),  # type: ignore[list-item]
                                encode_long(len(block)), block, PROGRAMS["sync"]])
            try:
                got = avro_native.decode_manifest_list(listing, "l")
            except MetadataError:
                return
            if got is not None:
                try:
                    want = _python_list(listing)
                except MetadataError:
                    raise AssertionError("native decoded a list Python refuses") from None
                assert repr(got) == want, (got, want)
    elif target in (2, 3):
        offsets = b"\0\0\0\0" + len(rest).to_bytes(4, "little")
        try:
            _ext.map_get(offsets, rest, None, 0, 1, 3, target == 3)
        except REFUSED:
            pass
        try:  # the whole map: exactly what the Python decoder reads, or refused
            got = _ext.decode_map(rest, target == 3)
        except REFUSED:
            return
        want = (_decode_bytes_map if target == 3 else _decode_int_map)(rest)
        assert got == want and list(got) == list(want), (got, want)
    else:
        want = 2 if any(b < 0x20 for b in rest) else 1 if any(b in b'"\\' for b in rest) else 0
        assert _ext.json_escapes(rest) == want


if __name__ == "__main__":
    corpus = sys.argv[-1]
    if os.path.isdir(corpus) and not os.listdir(corpus):
        for i, seed in enumerate(SEEDS):
            with open(os.path.join(corpus, f"seed-{i}"), "wb") as f:
                f.write(seed)
    for seed in SEEDS:  # the seeds themselves pass
        test_one_input(seed)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
