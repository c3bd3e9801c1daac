"""Issue 23, faults as tests: what Floe survives in its production shape, with real servers.

The PostgreSQL and Redis here are private to this module (tests/service_faults.py), so
restarting or crippling them disturbs no other test. Each fault ends with the table at its
state before or after, never corrupt, and nothing half-done:

* the disk full while writing a data file or a metadata file (a 2 MiB tmpfs: the kernel's
  ENOSPC);
* the catalog database read-only;
* PostgreSQL restarted while pages are served and a task commits;
* Redis restarted with tasks queued;
* a worker killed with SIGKILL mid-commit under PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe.errors import FloeError
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.service_faults import PrivatePostgres

pytestmark = pytest.mark.slow

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "payload", STRING))


def _rows(first: int, n: int, payload_bytes: int = 8) -> pa.Table:
    # random payloads: Parquet cannot compress them below their size
    return pa.table({
        "id": pa.array(range(first, first + n), pa.int64()),
        "payload": pa.array([os.urandom(payload_bytes // 2).hex() for _ in range(n)]),
    })


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def pg() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    yield server
    server.close()


# --- the disk full ---------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only): writes past it fail with the kernel's ENOSPC."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Take the disk's free space but ``leave`` bytes."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with (disk / "filler").open("wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _one_line_error(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text.strip(), repr(text)
    return text


def test_disk_full_while_writing_data_files_leaves_the_table_unchanged(small_disk: Path) -> None:
    catalog = FileSystemCatalog("local", str(small_disk / "warehouse"))
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 10))
    before, files = table.metadata_location, _files(small_disk)

    with pytest.raises(OSError) as failed:  # ~4 MiB of random rows on a 2 MiB disk
        table.append(_rows(100, 8000, payload_bytes=1000))

    assert "No space left on device" in _one_line_error(failed.value)
    assert catalog.load_table("db.t").metadata_location == before
    assert _files(small_disk) == files  # the partial data file is gone, no temporary left
    # the table still takes a commit once there is room
    assert catalog.load_table("db.t").append(_rows(10, 5)).metadata_location != before


def test_disk_full_while_writing_a_metadata_file_removes_what_the_commit_wrote(
        small_disk: Path) -> None:
    catalog = FileSystemCatalog("local", str(small_disk / "warehouse"))
    # a large table property makes each metadata file ~300 KB; a data file and its
    # manifests are a few KB
    table = catalog.create_table("db.t", SCHEMA, properties={"note": "x" * 300_000})
    before, files = table.metadata_location, _files(small_disk)
    _fill(small_disk, leave=128 * 1024)
    files = _files(small_disk)

    with pytest.raises(FloeError) as failed:
        table.append(_rows(0, 10))

    message = _one_line_error(failed.value)
    assert "No space left on device" in message and "db.t" in message, message
    assert catalog.load_table("db.t").metadata_location == before
    # neither the data file, nor the manifest and manifest list, nor a partial metadata file
    assert _files(small_disk) == files
    (small_disk / "filler").unlink()
    assert catalog.load_table("db.t").append(_rows(10, 5)).metadata_location != before


# --- the catalog database read-only -------------------------------------------------------------


def test_a_commit_to_a_read_only_catalog_database_fails_clearly_and_leaves_nothing(
        pg: PrivatePostgres, tmp_path: Path) -> None:
    name = f"ro_{uuid.uuid4().hex[:8]}"
    uri = pg.create_database(name)
    warehouse = tmp_path / "warehouse"
    catalog = SqlCatalog("lake", uri, str(warehouse))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 10))
    before, files = table.metadata_location, _files(warehouse)
    catalog.close()

    pg.sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    try:
        read_only = SqlCatalog("lake", uri, str(warehouse))
        try:
            stale = read_only.load_table("db.t")  # reads still work
            with pytest.raises(FloeError) as failed:
                stale.append(_rows(10, 10))
        finally:
            read_only.close()
    finally:
        pg.sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')

    message = _one_line_error(failed.value)
    assert "'lake'" in message and "read-only" in message, message
    catalog = SqlCatalog("lake", uri, str(warehouse))
    try:
        assert catalog.load_table("db.t").metadata_location == before
        # no metadata file without a pointer, no data file or manifest without a snapshot
        assert _files(warehouse) == files
    finally:
        catalog.close()

