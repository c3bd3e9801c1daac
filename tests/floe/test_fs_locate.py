"""Locating a table's current metadata file in a directory (spec "File System Tables")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from floe.catalog.filesystem import load_table_metadata, resolve_metadata_location
from floe.errors import MetadataError, NotFound
from floe.io import FileIO

UUID_A = "0b1d2e3f-4a5b-4c6d-8e9f-a0b1c2d3e4f5"
UUID_B = "ffffffff-4a5b-4c6d-8e9f-a0b1c2d3e4f5"


def _doc(marker: int) -> bytes:
    return json.dumps({
        "format-version": 2, "table-uuid": UUID_A, "location": "/t",
        "last-sequence-number": 0, "last-updated-ms": marker, "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0,
                     "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999, "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {}, "current-snapshot-id": -1,
    }).encode()


def make_table(root: Path, files: dict[str, bytes | str]) -> Path:
    meta = root / "tbl" / "metadata"
    meta.mkdir(parents=True)
    for name, content in files.items():
        (meta / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return root / "tbl"


@pytest.fixture
def io() -> FileIO:
    return FileIO()


def resolved_name(io: FileIO, table: Path | str) -> str:
    return resolve_metadata_location(io, str(table)).rsplit("/", 1)[-1]


def test_hint_pointing_at_latest(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {"v1.metadata.json": _doc(1), "v2.metadata.json": _doc(2),
                              "version-hint.text": "2"})
    assert resolved_name(io, t) == "v2.metadata.json"


def test_stale_hint_probes_upward(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {"v1.metadata.json": _doc(1), "v2.metadata.json": _doc(2),
                              "v3.metadata.json": _doc(3), "version-hint.text": "1\n"})
    assert resolved_name(io, t) == "v3.metadata.json"
    location, md = load_table_metadata(io, str(t))
    assert location.endswith("/metadata/v3.metadata.json") and md.last_updated_ms == 3


@pytest.mark.parametrize("hint", [None, "", "garbage", "-1", "9"])
def test_missing_or_invalid_hint_falls_back_to_scan(
    io: FileIO, tmp_path: Path, hint: str | None
) -> None:
    files: dict[str, bytes | str] = {"v1.metadata.json": _doc(1), "v10.metadata.json": _doc(10),
                                     "v2.metadata.json": _doc(2)}
    if hint is not None:
        files["version-hint.text"] = hint
    t = make_table(tmp_path, files)
    assert resolved_name(io, t) == "v10.metadata.json"  # numeric, not lexicographic


def test_crc_and_temporary_side_files_are_ignored(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {
        "v1.metadata.json": _doc(1), ".v1.metadata.json.crc": b"crc",
        ".v2.metadata.json.crc": b"crc", "v2.metadata.json.crc": b"crc",
        ".version-hint.text.crc": b"crc",
        "snap-1-1-abc.avro": b"", "abc-m0.avro": b"",
    })
    assert resolved_name(io, t) == "v1.metadata.json"


def test_gzip_metadata_names(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {
        "v1.metadata.json": _doc(1),
        "v2.gz.metadata.json": gzip.compress(_doc(2)),
        "v3.metadata.json.gz": gzip.compress(_doc(3)),
        "version-hint.text": "2",
    })
    assert resolved_name(io, t) == "v3.metadata.json.gz"
    _, md = load_table_metadata(io, str(t))
    assert md.last_updated_ms == 3
    t2 = make_table(tmp_path / "other", {"v4.gz.metadata.json": gzip.compress(_doc(4))})
    _, md = load_table_metadata(io, str(t2))
    assert md.last_updated_ms == 4


def test_metastore_names_pick_highest_sequence(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {
        f"00000-{UUID_B}.metadata.json": _doc(0),
        f"00002-{UUID_A}.metadata.json": _doc(2),
        f"00001-{UUID_B}.metadata.json": _doc(1),
        f".00002-{UUID_A}.metadata.json.crc": b"crc",
    })
    assert resolved_name(io, t) == f"00002-{UUID_A}.metadata.json"


def test_metadata_file_argument_is_returned_as_is(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {"v1.metadata.json": _doc(1), "v2.metadata.json": _doc(2)})
    path = str(t / "metadata" / "v1.metadata.json")
    assert resolve_metadata_location(io, path) == path
    uri = f"file://{path}"
    assert resolve_metadata_location(io, uri) == uri


def test_metadata_directory_argument(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {"v1.metadata.json": _doc(1), "v2.metadata.json": _doc(2)})
    assert resolved_name(io, t / "metadata") == "v2.metadata.json"
    assert resolved_name(io, f"file://{t}") == "v2.metadata.json"


def test_clear_not_found_errors(io: FileIO, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no such file or directory"):
        resolve_metadata_location(io, str(tmp_path / "missing"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotFound, match="not an Iceberg table directory"):
        resolve_metadata_location(io, str(tmp_path / "plain"))
    t = make_table(tmp_path, {"version-hint.text": "3", ".v3.metadata.json.crc": b""})
    with pytest.raises(NotFound, match="no table metadata found"):
        resolve_metadata_location(io, str(t))


def test_broken_latest_file_is_a_metadata_error(io: FileIO, tmp_path: Path) -> None:
    t = make_table(tmp_path, {"v1.metadata.json": _doc(1), "v2.metadata.json": b"{\"format"})
    with pytest.raises(MetadataError, match="v2.metadata.json: malformed JSON"):
        load_table_metadata(io, str(t))


@pytest.mark.parametrize(("files", "expected"), [
    ({"v1.metadata.json": "{}", "version-hint.text": "1"}, True),   # the hint's file: no listing
    ({"v1.metadata.json": "{}", "version-hint.text": "7"}, True),   # a stale hint: listed
    ({f"00003-{UUID_A}.metadata.json": "{}"}, True),                # metastore names, no hint
    ({"version-hint.text": "1"}, False),                            # a hint and nothing else
    ({"snap-1.avro": "x", "v1.metadata.json.crc": "x"}, False),
])
def test_is_table_dir(io: FileIO, tmp_path: Path, files: dict[str, str], expected: bool,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    from floe.catalog import filesystem

    t = make_table(tmp_path, dict(files))
    listed: list[str] = []
    real = filesystem._scan
    monkeypatch.setattr(filesystem, "_scan",
                        lambda io_, d: listed.append(d) or real(io_, d))  # type: ignore[func-returns-value]
    assert filesystem.is_table_dir(io, str(t)) is expected
    assert filesystem.is_table_dir(io, str(tmp_path / "nowhere")) is False
    hinted = files.get("version-hint.text") == "1" and "v1.metadata.json" in files
    assert (listed == []) is hinted


def test_is_table_dir_when_the_hint_may_not_be_read(tmp_path: Path) -> None:
    """An io that refuses to read (the explorer's, for a table outside its warehouse) still
    answers from the listing, which it allows."""
    from floe.catalog.filesystem import is_table_dir
    from floe.errors import FloeError

    class Refusing(FileIO):
        def open(self, location: str) -> Any:
            raise FloeError(f"{location}: not read")

    t = make_table(tmp_path, {"v1.metadata.json": "{}", "version-hint.text": "1"})
    assert is_table_dir(Refusing(), str(t)) is True
    empty = make_table(tmp_path / "e", {"version-hint.text": "1"})
    assert is_table_dir(Refusing(), str(empty)) is False
