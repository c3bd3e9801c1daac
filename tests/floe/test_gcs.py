"""floe on Google Cloud Storage (``gs://``) against a real server: fake-gcs-server, started by
the session (tests/object_store.py), reached with PyIceberg's ``gcs.*`` properties. FileIO's
reads, ranged reads, listings, existence checks and deletes; where requests go
(``gcs.service.host``) and how they are signed (``gcs.oauth2.token``, ``anon`` unsigned and
read-only), seen by a recording proxy in front of the server; a table floe wrote read back by
the ``floe`` command through a file-system catalog whose warehouse is in the bucket.

Not tested on a server: floe WRITING to GCS. object_store writes through GCS's XML API, which
fake-gcs-server does not take (every PUT is 400 ``invalid uploadType``), and no other emulator
on the registries serves object_store's client. So the tables here are written by floe on the
local disk under their ``gs://`` names (:class:`StagedGcs`) and each file is then uploaded
through the server's JSON API; and a floe write, a create-only write (what a file-system
commit needs) or a command that writes is shown to fail in one line naming the location.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import FloeError, NotFound, StoreUnavailable, ValidationError
from floe.io import FileIO, scheme_of
from floe.io.local import LocalStore
from floe.io.store import FileInfo, Store
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.faulty_proxy import FaultyProxy
from tests.object_store import FakeGcs

pytestmark = pytest.mark.objectstore

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _root(server: FakeGcs) -> str:
    return server.location(f"gcs-{uuid.uuid4().hex[:8]}")


def _key(server: FakeGcs, location: str) -> str:
    return location.removeprefix(server.location())


# -- FileIO on the server --------------------------------------------------------------------

def test_every_read_listing_and_delete_on_gcs(fake_gcs: FakeGcs) -> None:
    io = FileIO(fake_gcs.properties())
    root = _root(fake_gcs)
    for path, data in ((f"{root}/a/one.bin", b"0123456789"), (f"{root}/a/b/two.bin", b"xy"),
                       (f"{root}/three.bin", b"")):
        fake_gcs.upload(_key(fake_gcs, path), data)
    assert io.read(f"{root}/a/one.bin") == b"0123456789"
    assert io.read_range(f"{root}/a/one.bin", 3, 4) == b"3456"
    with io.open(f"{root}/a/one.bin") as f:
        f.seek(8)
        assert f.read() == b"89"
    assert io.read(f"{root}/three.bin") == b""
    assert io.size(f"{root}/a/one.bin") == 10
    info = io.info(f"{root}/a/b/two.bin")
    assert info is not None and info.size == 2 and info.modified_ms and info.version
    assert io.list(root) == [f"{root}/a/b/two.bin", f"{root}/a/one.bin", f"{root}/three.bin"]
    assert [(f.location, f.size) for f in io.list_info(f"{root}/a")] == [
        (f"{root}/a/b/two.bin", 2), (f"{root}/a/one.bin", 10)]
    assert io.list_dir(root) == ([f"{root}/a"], [f"{root}/three.bin"])
    assert io.is_dir(f"{root}/a") and not io.is_dir(f"{root}/a/one.bin")
    assert io.exists(f"{root}/a") and io.exists(f"{root}/three.bin")
    assert not io.exists(f"{root}/nope") and io.info(f"{root}/nope") is None
    assert list(io.read_many([f"{root}/three.bin", f"{root}/a/b/two.bin"])) == [b"", b"xy"]
    io.delete(f"{root}/three.bin")
    with pytest.raises(NotFound, match="three.bin: file does not exist"):
        io.read(f"{root}/three.bin")
    with pytest.raises(NotFound, match="three.bin"):
        io.delete(f"{root}/three.bin")
    io.delete(f"{root}/three.bin", missing_ok=True)
    assert io.delete_many([f"{root}/a/one.bin", f"{root}/gone", f"{root}/a/b/two.bin"]) == []
    assert io.list(root) == []


def test_deletes_with_a_missing_object_among_them_delete_every_other(fake_gcs: FakeGcs
                                                                     ) -> None:
    """GCS has no batch delete: object_store deletes one object after another and stops at a
    missing one. floe deletes the others all the same, and the missing one is no failure
    (what expiry and orphan removal need when a file is already gone)."""
    from concurrent.futures import ThreadPoolExecutor

    io = FileIO(fake_gcs.properties())
    root = _root(fake_gcs)
    paths = [f"{root}/f{i:03d}" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: fake_gcs.upload(_key(fake_gcs, p), b"x"), paths))
    assert io.delete_many([paths[0], f"{root}/missing", *paths[1:]]) == []
    assert io.list(root) == []


def test_a_missing_object_and_a_missing_bucket(fake_gcs: FakeGcs) -> None:
    """A read of either is NotFound, one line naming the location: fake-gcs-server answers
    both 404 with no XML ``<Code>``, so floe cannot say which is missing (GCS's XML API names
    ``NoSuchBucket``). A listing of a missing bucket is a 500 there (real GCS: 404), a
    StoreUnavailable naming the location after the retries."""
    io = FileIO(fake_gcs.properties())
    missing = f"{_root(fake_gcs)}/metadata/v1.metadata.json"
    other = missing.replace(f"gs://{fake_gcs.bucket}/", "gs://no-such-bucket/")
    for location in (missing, other):
        with pytest.raises(NotFound) as info:
            io.read(location)
        assert str(info.value) == f"{location}: file does not exist"
        assert io.info(location) is None
    assert not io.exists(missing) and io.list(missing.rsplit("/", 1)[0]) == []
    assert io.list_dir(missing.rsplit("/", 1)[0]) == ([], [])
    with pytest.raises(StoreUnavailable) as failed:
        io.list(other.rsplit("/", 1)[0])
    message = str(failed.value)
    assert message.startswith("gs://no-such-bucket/") and "500" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("token", "authorization"), [("a-token", "Bearer a-token"),
                                                      ("anon", None)])
def test_gcs_service_host_is_the_endpoint_and_the_token_signs(
        fake_gcs: FakeGcs, token: str, authorization: str | None) -> None:
    """PyIceberg's ``gcs.service.host`` is where every request goes (here a proxy that records
    them in front of the server) and ``gcs.oauth2.token`` their bearer token; ``anon``
    sends none, as gcsfs reads it. The server ignores authorization: that the reads succeed
    shows the requests arrived, the proxy shows how they were signed."""
    root = _root(fake_gcs)
    fake_gcs.upload(_key(fake_gcs, f"{root}/t/v1.metadata.json"), b"{}")
    with FaultyProxy(fake_gcs.endpoint) as proxy:
        io = FileIO({"gcs.service.host": proxy.url, "gcs.oauth2.token": token})
        assert io.read(f"{root}/t/v1.metadata.json") == b"{}"
        assert io.list(f"{root}/t") == [f"{root}/t/v1.metadata.json"]
        assert not io.exists(f"{root}/t/v2.metadata.json")
    seen = proxy.requests()
    assert (seen[0][0], unquote(seen[0][1]), seen[0][2]) == (
        "GET", f"/{fake_gcs.bucket}/{_key(fake_gcs, root)}/t/v1.metadata.json", 200)
    assert {h.get("authorization") for h in proxy.headers()} == {authorization}


def test_throttling_is_retried_on_gcs(fake_gcs: FakeGcs) -> None:
    root = _root(fake_gcs)
    fake_gcs.upload(_key(fake_gcs, f"{root}/throttled"), b"ok")
    with FaultyProxy(fake_gcs.endpoint) as proxy:
        io = FileIO(fake_gcs.properties(proxy.url))
        proxy.throttle(2, method="GET")
        assert io.read(f"{root}/throttled") == b"ok"
        assert [s for m, _, s in proxy.requests("GET")] == [503, 503, 200]


def test_a_gcs_server_that_does_not_answer_fails_in_bounded_time(fake_gcs: FakeGcs) -> None:
    """``gcs.connect-timeout`` / ``gcs.request-timeout``: a paused server (it accepts
    connections and answers nothing) is a FloeError naming the location, not a hang."""
    io = FileIO({**fake_gcs.properties(), "gcs.request-timeout": "0.5",
                 "gcs.connect-timeout": "0.5"})
    location = f"{_root(fake_gcs)}/anything"
    fake_gcs.pause()
    try:
        with pytest.raises(FloeError, match=f"^{location}: "):
            io.read(location)
    finally:
        fake_gcs.resume()


def test_anon_reads_but_refuses_writes_and_deletes_before_any_request(fake_gcs: FakeGcs
                                                                       ) -> None:
    """object_store signs every GCS write and delete, asking the instance's metadata server
    for a token when ``anon`` gave none (here or anywhere off Google Cloud that fails, and
    read as the bucket's refusal): floe refuses them up front, saying why."""
    root = _root(fake_gcs)
    fake_gcs.upload(_key(fake_gcs, f"{root}/a.bin"), b"public")
    with FaultyProxy(fake_gcs.endpoint) as proxy:
        io = FileIO({"gcs.service.host": proxy.url, "gcs.oauth2.token": "anon"})
        assert io.read(f"{root}/a.bin") == b"public"
        read = len(proxy.requests())
        for call in (lambda: io.write(f"{root}/b.bin", b"1", overwrite=True),
                     lambda: io.write(f"{root}/b.bin", b"1"),
                     lambda: io.exclusive_create(f"{root}/metadata/v1.metadata.json"),
                     lambda: io.delete(f"{root}/a.bin"),
                     lambda: io.delete_many([f"{root}/a.bin"])):
            with pytest.raises(ValidationError, match=f"^{root}/.*gcs.oauth2.token is 'anon'"):
                call()
        assert len(proxy.requests()) == read
    assert FileIO(fake_gcs.properties()).read(f"{root}/a.bin") == b"public"


def test_a_write_on_gcs_fails_in_one_line_naming_the_location(fake_gcs: FakeGcs) -> None:
    """fake-gcs-server refuses object_store's PUTs (400): an overwrite, a create-only write
    and the probe of whether create-only writes are atomic each fail at once with the
    server's answer, and nothing is written."""
    io = FileIO(fake_gcs.properties())
    root = _root(fake_gcs)
    for call in (lambda: io.write(f"{root}/x.bin", b"1", overwrite=True),
                 lambda: io.write(f"{root}/x.bin", b"1"),
                 lambda: io.exclusive_create(f"{root}/metadata/v1.metadata.json")):
        with pytest.raises(FloeError) as info:
            call()
        assert not isinstance(info.value, NotFound)
        message = str(info.value)
        assert message.startswith(f"{root}/") and "400 Bad Request" in message, message
        assert "\n" not in message and fake_gcs.token not in message, message
    assert io.list(root) == []


# -- a table floe wrote, read back from the server --------------------------------------------

class StagedGcs(Store):
    """``gs://bucket/key`` kept on the local disk at ``<root>/bucket/key``: where floe writes a
    table named by gs:// locations before it is uploaded (the server takes no write of
    obstore's). Locations in and out stay gs://; the disk does the rest."""

    exclusive_create = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.disk = LocalStore()

    def path(self, location: str) -> str:
        return str(self.root / location.removeprefix("gs://"))

    def location(self, path: str) -> str:
        return "gs://" + Path(path).relative_to(self.root).as_posix()

    def open(self, location: str) -> BinaryIO:
        return self.disk.open(self.path(location))

    def read(self, location: str) -> bytes:
        return self.disk.read(self.path(location))

    def read_range(self, location: str, start: int, length: int) -> bytes:
        return self.disk.read_range(self.path(location), start, length)

    def head(self, location: str) -> FileInfo | None:
        found = self.disk.head(self.path(location))
        return None if found is None else FileInfo(location, found.size, found.modified_ms,
                                                   found.version)

    def exists(self, location: str) -> bool:
        return self.disk.exists(self.path(location))

    def is_dir(self, location: str) -> bool:
        return self.disk.is_dir(self.path(location))

    def write(self, location: str, data: bytes, overwrite: bool) -> None:
        self.disk.write(self.path(location), data, overwrite)

    def delete(self, location: str, missing_ok: bool) -> None:
        self.disk.delete(self.path(location), missing_ok)

    def delete_many(self, locations: Iterable[str]) -> builtins.list[tuple[str, Exception]]:
        return self.disk.delete_many([self.path(x) for x in locations])

    def list(self, prefix: str) -> Iterator[FileInfo]:
        for f in self.disk.list(self.path(prefix)):
            yield FileInfo(self.location(f.location), f.size, f.modified_ms, f.version)

    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        dirs, files = self.disk.list_dir(self.path(prefix))
        return [self.location(d) for d in dirs], [self.location(f) for f in files]


class StagingIO(FileIO):
    """A FileIO whose ``gs://`` locations are :class:`StagedGcs` files."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.staged = StagedGcs(root)

    def store(self, location: str) -> Store:
        return self.staged if scheme_of(location) == "gs" else super().store(location)


@dataclass(frozen=True)
class GcsTable:
    warehouse: str
    location: str
    rows: list[dict[str, Any]]  # what floe reads from the staged copy, sorted by id
    files: set[str]  # its live data and delete files
    uploaded: set[str]  # every object uploaded


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def gcs_table(fake_gcs: FakeGcs, tmp_path_factory: pytest.TempPathFactory) -> GcsTable:
    """A partitioned table floe wrote in a file-system catalog whose warehouse is in the
    bucket: four appends, a merge-on-read delete, an added column; then every file uploaded
    to the server under its gs:// name."""
    root = tmp_path_factory.mktemp("staged-gcs")
    io = StagingIO(root)
    warehouse = _root(fake_gcs)
    catalog = FileSystemCatalog("lake", warehouse, io)
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.events", SCHEMA, parse_partition_by("cat", SCHEMA),
                                 properties={"write.delete.mode": "merge-on-read"})
    for k in range(4):
        ids = range(10 * k, 10 * k + 10)
        table.append(pa.table({"id": pa.array(ids, pa.int64()),
                               "cat": [f"c{i % 3}" for i in ids]}))
    table.delete_where("id < 5")
    table.update_schema().add_column("note", STRING).commit()
    table.refresh()
    plan = plan_files(io, table.metadata)
    files = ({t.data_file.file_path for t in plan.tasks}
             | {d.path for t in plan.tasks for d in t.delete_files})
    uploaded = set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        location = io.staged.location(str(path))
        fake_gcs.upload(_key(fake_gcs, location), path.read_bytes())
        uploaded.add(location)
    return GcsTable(warehouse, table.location, _rows(plan_to_table(io, plan)), files, uploaded)


@pytest.fixture
def floe_env(fake_gcs: FakeGcs, gcs_table: GcsTable, tmp_path: Path) -> dict[str, str]:
    """The environment of a ``floe`` process whose catalogs file has the file-system catalog
    ``gcs`` on the table's warehouse, with PyIceberg's ``gcs.*`` properties (the token from
    an environment variable, as a real one would be)."""
    props = {**fake_gcs.properties(), "gcs.oauth2.token": "${FLOE_TEST_GCS_TOKEN}"}
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.gcs]\ntype = "filesystem"\nwarehouse = "{gcs_table.warehouse}"\n'
                      + "".join(f'"{k}" = "{v}"\n' for k, v in props.items()))
    return {**os.environ, "FLOE_CATALOGS": str(config), "FLOE_TEST_GCS_TOKEN": fake_gcs.token,
            "FLOE_MANIFEST_CACHE": "off"}


def _floe(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True,
                          text=True, timeout=120, env=env)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def test_the_floe_command_reads_a_table_on_gcs(floe_env: dict[str, str], gcs_table: GcsTable,
                                               fake_gcs: FakeGcs) -> None:
    """describe, snapshots, files, plan and scan on the server give what floe reads from the
    same table on the local disk: every row, the deleted ones gone, the added column null."""
    env, table = floe_env, "gcs:db.events"
    described = json.loads(_floe(env, "describe", table, "--json").stdout)
    assert described["location"] == gcs_table.location
    assert described["location"].startswith(fake_gcs.location())
    snapshots = json.loads(_floe(env, "snapshots", table, "--json").stdout)
    assert [s["operation"] for s in snapshots] == ["append"] * 4 + ["delete"]
    files = json.loads(_floe(env, "files", table, "--json").stdout)
    assert {f["file_path"] for f in files} == gcs_table.files
    assert {f["content"] for f in files} == {"data", "position_deletes"}
    assert gcs_table.files <= gcs_table.uploaded
    out = _floe(env, "scan", table, "--output", "-").stdout
    rows = sorted((json.loads(line) for line in out.splitlines()), key=lambda r: r["id"])
    assert rows == gcs_table.rows
    assert [r["id"] for r in rows] == list(range(5, 40))
    out = _floe(env, "scan", table, "--filter", "cat = 'c1' and id < 20", "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [7, 10, 13, 16, 19]
    plan = json.loads(_floe(env, "plan", table, "--filter", "cat = 'c1'", "--json").stdout)
    everything = json.loads(_floe(env, "plan", table, "--json").stdout)
    assert 1 <= plan["funnel"]["tasks"] < everything["funnel"]["tasks"]


def test_remove_orphans_dry_run_lists_the_bucket(floe_env: dict[str, str], gcs_table: GcsTable,
                                                 fake_gcs: FakeGcs) -> None:
    """Orphan removal lists the store: a stray object under the table is found on the server
    (a dry run: nothing is deleted)."""
    stray = f"{gcs_table.location}/data/stray-{uuid.uuid4().hex[:6]}.parquet"
    fake_gcs.upload(_key(fake_gcs, stray), b"not a table file")
    time.sleep(0.01)
    later = str(int(time.time() * 1000))  # after the stray was written, not in the future
    dry = json.loads(_floe(floe_env, "remove-orphans", "gcs:db.events", "--older-than", later,
                           "--dry-run", "--json", "--force").stdout)
    assert dry["orphan_files"] == [stray]
    assert FileIO(fake_gcs.properties()).exists(stray)


def test_a_command_that_writes_on_gcs_fails_in_one_line(floe_env: dict[str, str],
                                                        gcs_table: GcsTable, tmp_path: Path
                                                        ) -> None:
    """An append and a create fail with one line naming a location in the bucket (the server
    refuses obstore's writes); the table is as it was."""
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([100], pa.int64()), "cat": ["c9"],
                             "note": ["new"]}), rows)
    for args in (("append", "gcs:db.events", str(rows)),
                 ("create", "gcs:db.other", "--schema-from", str(rows))):
        done = _floe(floe_env, *args, ok=False)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and gcs_table.warehouse in lines[0], done.stderr
        assert "400 Bad Request" in lines[0], lines[0]
    out = _floe(floe_env, "scan", "gcs:db.events", "--output", "-").stdout
    assert len(out.splitlines()) == len(gcs_table.rows)
