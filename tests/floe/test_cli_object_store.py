"""The ``floe`` command on a table in a bucket (SeaweedFS, signatures checked), named by its
location and reached with the standard AWS environment (the endpoint, keys and region every
AWS tool reads): every kind of command, as a real process. Each change is one commit; the
dry runs list what the real runs then do; a wrong secret is one line naming the location.
Then tables in an Azure container (Azurite) through file-system and SQL catalogs configured
with PyIceberg's ``adls.*`` properties."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.object_store import Azurite, SeaweedFS, obstore_azure

pytestmark = pytest.mark.objectstore

Floe = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run(seaweedfs: SeaweedFS) -> Floe:
    env = {**os.environ, "AWS_ENDPOINT_URL": seaweedfs.endpoint,
           "AWS_ACCESS_KEY_ID": seaweedfs.access_key,
           "AWS_SECRET_ACCESS_KEY": seaweedfs.secret_key, "AWS_REGION": seaweedfs.region,
           "FLOE_MANIFEST_CACHE": "off"}

    def floe(*args: str, ok: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True,
                              text=True, timeout=120, env={**env, **extra})
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    return floe


def test_every_kind_of_command_on_a_table_in_a_bucket(run: Floe, seaweedfs: SeaweedFS,
                                                       tmp_path: Path) -> None:
    floe = run
    table = f"s3://{seaweedfs.bucket}/cli-{uuid.uuid4().hex[:8]}/events"
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(20), pa.int64()),
                             "kind": [("a", "b")[i % 2] for i in range(20)]}), rows)
    more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array(range(20, 30), pa.int64()),
                             "kind": ["a"] * 10}), more)
    floe("create", table, "--schema-from", str(rows), "--partition-by", "kind")
    floe("append", table, str(rows))
    floe("append", table, str(more))
    floe("delete", table, "--filter", "id < 3", "--mode", "merge-on-read")
    floe("evolve", table, "add-column", "note", "string")
    described = json.loads(floe("describe", table, "--json").stdout)
    assert described["location"] == table
    snapshots = json.loads(floe("snapshots", table, "--json").stdout)
    assert [s["operation"] for s in snapshots] == ["append", "append", "delete"]
    assert json.loads(floe("manifests", table, "--json").stdout)
    files = json.loads(floe("files", table, "--json").stdout)
    assert {f["content"] for f in files} == {"data", "position_deletes"}
    assert all(f["file_path"].startswith(table + "/") for f in files)
    plan = json.loads(floe("plan", table, "--filter", "kind = 'b'", "--json").stdout)
    assert plan["funnel"]["tasks"] >= 1
    out = floe("scan", table, "--filter", "id >= 25", "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [25, 26, 27, 28, 29]

    dry = json.loads(floe("compact", table, "--dry-run", "--json",
                          "--option", "min-input-files=2").stdout)
    assert dry["dry_run"] and dry["groups"]
    floe("compact", table, "--option", "min-input-files=2")
    later = int(time.time() * 1000) + 1
    expire_dry = json.loads(floe("expire", table, "--older-than", str(later), "--retain-last",
                                 "1", "--dry-run", "--json").stdout)
    expired = json.loads(floe("expire", table, "--older-than", str(later), "--retain-last",
                              "1", "--json").stdout)
    assert sorted(expired["expired_snapshot_ids"]) == sorted(
        expire_dry["expired_snapshot_ids"]) and expired["failed"] == []
    orphans = json.loads(floe("remove-orphans", table, "--older-than", str(later),
                              "--dry-run", "--json", "--force").stdout)
    assert orphans["orphan_files"] == []  # expiry deleted what it expired, nothing stray
    out = floe("scan", table, "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == list(range(3, 30))


def test_a_wrong_secret_is_one_line_naming_the_location(run: Floe, seaweedfs: SeaweedFS
                                                        ) -> None:
    floe = run
    secret = "wrong-" + uuid.uuid4().hex
    table = f"s3://{seaweedfs.bucket}/nowhere/t"
    done = floe("describe", table, ok=False, AWS_SECRET_ACCESS_KEY=secret)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and table.split("/t")[0] in lines[0], done.stderr
    assert secret not in done.stderr


# -- Azure (Azurite): a table in a container, through a configured catalog -------------------

@pytest.fixture
def azure_catalogs(azurite: Azurite, tmp_path: Path) -> dict[str, str]:
    """The environment of a ``floe`` process whose catalogs file has a file-system catalog
    ``fs`` and a SQL catalog ``sql`` (SQLite), both with warehouses in Azurite's container
    (``abfss://…``) and PyIceberg's ``adls.*`` properties; the account key comes from an
    environment variable, as a real one would."""
    root = azurite.location(f"cli-{uuid.uuid4().hex[:8]}")
    props = "".join(f'"{k}" = "{v}"\n' for k, v in azurite.properties().items()
                    if k != "adls.account-key")
    props += '"adls.account-key" = "${FLOE_TEST_AZURE_KEY}"\n'
    config = tmp_path / "catalogs.toml"
    config.write_text(
        f'[catalogs.fs]\ntype = "filesystem"\nwarehouse = "{root}/fs"\n{props}\n'
        f'[catalogs.sql]\ntype = "sql"\nuri = "sqlite:///{tmp_path / "cat.db"}"\n'
        f'warehouse = "{root}/sql"\n{props}')
    return {**os.environ, "FLOE_CATALOGS": str(config),
            "FLOE_TEST_AZURE_KEY": azurite.account_key, "FLOE_MANIFEST_CACHE": "off"}


def _floe(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True,
                          text=True, timeout=120, env=env)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("catalog", ["fs", "sql"])
def test_a_table_in_an_azure_container_through_a_catalog(
        azure_catalogs: dict[str, str], azurite: Azurite, tmp_path: Path, catalog: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Create, append, read, expire and remove orphans on a table whose warehouse is
    ``abfss://…``: every file it writes is in the container (seen by a client of its own),
    the file-system catalog commits by a conditional create, and remove-orphans finds a
    stray file by listing the container."""
    import obstore

    from floe.catalog.config import load_catalog
    from floe.io import FileIO

    env = azure_catalogs
    if catalog == "sql":
        monkeypatch.setenv("FLOE_TEST_AZURE_KEY", azurite.account_key)
        load_catalog("sql", env["FLOE_CATALOGS"]).create_namespace(("db",))
    table = f"{catalog}:db.events"
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()),
                             "kind": [("a", "b")[i % 2] for i in range(10)]}), rows)
    _floe(env, "create", table, "--schema-from", str(rows), "--partition-by", "kind")
    _floe(env, "append", table, str(rows))
    _floe(env, "append", table, str(rows))
    described = json.loads(_floe(env, "describe", table, "--json").stdout)
    location = described["location"]
    assert location.startswith(azurite.location()) and described["snapshot_count"] == 2
    files = json.loads(_floe(env, "files", table, "--json").stdout)
    assert len(files) == 4 and all(f["file_path"].startswith(location + "/data/")
                                   for f in files)
    out = _floe(env, "scan", table, "--filter", "kind = 'b'", "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == sorted(
        [1, 3, 5, 7, 9] * 2)

    # what the container holds, listed by obstore itself, not through floe
    key = location.split(".dfs.core.windows.net/", 1)[1]
    listed = {m["path"] for m in obstore.list(obstore_azure(azurite), prefix=key).collect()}
    assert {f["file_path"].split(".net/", 1)[1] for f in files} <= listed
    assert f"{key}/metadata/" in {p[:len(key) + 10] for p in listed}
    if catalog == "fs":  # commits by If-None-Match: *, which Azurite honours
        assert FileIO(azurite.properties()).exclusive_create(f"{location}/metadata/x")

    stray = f"{location}/data/stray-{uuid.uuid4().hex[:6]}.parquet"
    FileIO(azurite.properties()).write(stray, b"not a table file")
    later = int(time.time() * 1000) + 1000
    time.sleep(1.1)  # a cutoff in the past (expire refuses one in the future), after the files
    expired = json.loads(_floe(env, "expire", table, "--older-than", str(later),
                               "--retain-last", "1", "--json").stdout)
    assert len(expired["expired_snapshot_ids"]) == 1 and expired["failed"] == []
    dry = json.loads(_floe(env, "remove-orphans", table, "--older-than", str(later),
                           "--dry-run", "--json", "--force").stdout)
    assert dry["orphan_files"] == [stray]
    _floe(env, "remove-orphans", table, "--older-than", str(later), "--force")
    assert not FileIO(azurite.properties()).exists(stray)
    out = _floe(env, "scan", table, "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == sorted(
        list(range(10)) * 2)


def test_a_wrong_azure_key_is_one_line_naming_the_container(
        azure_catalogs: dict[str, str], azurite: Azurite, tmp_path: Path) -> None:
    secret = base64.b64encode(f"wrong-{uuid.uuid4().hex}".encode()).decode()
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), rows)
    done = _floe({**azure_catalogs, "FLOE_TEST_AZURE_KEY": secret}, "create", "fs:db.t",
                 "--schema-from", str(rows), ok=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{azurite.container}@{azurite.account}" in lines[0], done.stderr
    assert "credentials" in lines[0] or "access denied" in lines[0], lines[0]
    assert secret not in done.stderr
