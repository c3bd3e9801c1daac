"""FileIO: local paths and file: URIs, atomic no-replace writes, NotFound errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from floe.errors import NotFound, ValidationError
from floe.io import FileIO, local_path


@pytest.fixture
def io() -> FileIO:
    return FileIO()


def test_write_read_size_exists_delete(io: FileIO, tmp_path: Path) -> None:
    target = str(tmp_path / "a" / "b" / "f.bin")
    assert not io.exists(target)
    io.write(target, b"hello")  # parents are created
    assert io.exists(target)
    assert io.read(target) == b"hello"
    assert io.size(target) == 5
    with io.open(target) as f:
        assert f.read(2) == b"he"
    io.delete(target)
    assert not io.exists(target)


def test_write_refuses_to_replace(io: FileIO, tmp_path: Path) -> None:
    target = str(tmp_path / "v1.metadata.json")
    io.write(target, b"first")
    with pytest.raises(FileExistsError):
        io.write(target, b"second")
    assert io.read(target) == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1.metadata.json"]  # no tmp left


def test_overwrite_replaces(io: FileIO, tmp_path: Path) -> None:
    target = str(tmp_path / "version-hint.text")
    io.write(target, b"1")
    io.write(target, b"2", overwrite=True)
    assert io.read(target) == b"2"


def test_concurrent_creators_exactly_one_wins(io: FileIO, tmp_path: Path) -> None:
    target = str(tmp_path / "v2.metadata.json")
    results: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            io.write(target, f"writer {i}".encode())
            results.append("won")
        except FileExistsError:
            results.append("lost")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("won") == 1 and results.count("lost") == 7
    assert io.read(target).startswith(b"writer ")
    assert [p.name for p in tmp_path.iterdir()] == ["v2.metadata.json"]


def test_file_uris(io: FileIO, tmp_path: Path) -> None:
    target = tmp_path / "x y.txt"
    io.write(f"file://{tmp_path}/x%20y.txt", b"uri")
    assert target.read_bytes() == b"uri"
    assert io.read(f"file:{target}") == b"uri"
    assert io.exists(f"file://localhost{target}")
    assert local_path("file:///a/b") == "/a/b"
    assert local_path("file:/a/b") == "/a/b"
    assert local_path("/a/b") == "/a/b"


def test_unsupported_schemes(io: FileIO) -> None:
    with pytest.raises(ValidationError, match="the 'hdfs' scheme is not supported"):
        io.read("hdfs://namenode/key")
    with pytest.raises(ValidationError, match="remote host"):
        local_path("file://otherhost/a")


def test_missing_files_raise_not_found_with_the_path(io: FileIO, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    for call in (io.read, io.open, io.size, io.delete):
        with pytest.raises(NotFound, match="nope.json"):
            call(missing)
    io.delete(missing, missing_ok=True)
    with pytest.raises(NotFound, match="directory"):
        io.read(str(tmp_path))


def test_list_is_recursive_sorted_and_keeps_prefix_style(io: FileIO, tmp_path: Path) -> None:
    io.write(str(tmp_path / "t" / "metadata" / "v1.metadata.json"), b"{}")
    io.write(str(tmp_path / "t" / "data" / "a.parquet"), b"x")
    (tmp_path / "t" / "metadata" / ".v2.metadata.json.abc.tmp").write_bytes(b"partial")
    base = str(tmp_path / "t")
    assert io.list(base) == [f"{base}/data/a.parquet", f"{base}/metadata/v1.metadata.json"]
    assert io.list(f"file://{base}/") == [
        f"file://{base}/data/a.parquet", f"file://{base}/metadata/v1.metadata.json"
    ]
    assert io.list(str(tmp_path / "missing")) == []
